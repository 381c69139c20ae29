#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The committed Passban et al. 2022 reproduction (repro/passban2022/results)
# recomputes: results.md and table*.tsv are what results.sh makes of the
# runs' metrics/*.csv.gz and matrices/*.tsv, settings, times.tsv and
# overlap.tsv there; check-results.sh fails when one number changes, in
# results.md or in a raw file; and the goal code says "not judged" on
# figures that mean nothing (every BLEU 0, as in a --quick run, or a run
# whose validation loss did not fall).
# shellcheck source=tests/checks.sh
. "${srcdir:-.}/tests/checks.sh"
check=${srcdir:-.}/repro/passban2022/check-results.sh
results=${srcdir:-.}/repro/passban2022/results.sh
cp -R "${srcdir:-.}/repro/passban2022/results" "$tmp/r"
chmod -R u+w "$tmp/r"
check "the committed results recompute" "$check" "$tmp/r/results.md"

cp -R "$tmp/r" "$tmp/a"
check "a table cell of results.md changed" \
	perturb "$tmp/a/results.md" 's/^| generic | 18\.3 (37\.8) |/| generic | 18.4 (37.8) |/'
check "... fails check-results.sh" fails "$check" "$tmp/a/results.md"

cp -R "$tmp/r" "$tmp/b"
check "a goal's verdict in results.md changed" \
	perturb "$tmp/b/results.md" 's/^  \*\*missed\*\* (server 23\.44,/  **met** (server 23.44,/'
check "... fails check-results.sh" fails "$check" "$tmp/b/results.md"

cp -R "$tmp/r" "$tmp/c"
check "a tensor count pulled in metrics/dp-less.csv.gz changed" \
	perturb "$tmp/c/metrics/dp-less.csv.gz" 's/^2,0,,selector\.sent,,63,/2,0,,selector.sent,,64,/'
check "... fails check-results.sh" fails "$check" "$tmp/c/results.md"

cp -R "$tmp/r" "$tmp/d"
check "the server's cli BLEU in matrices/federated.tsv changed" \
	perturb "$tmp/d/matrices/federated.tsv" '/^# bleu on test/,/^$/s/^server	20\.0388	/server	21.0388	/'
check "... fails check-results.sh" fails "$check" "$tmp/d/results.md"

cp -R "$tmp/r" "$tmp/e"
check "a run's metrics removed" rm "$tmp/e/metrics/random.csv.gz"
check "... fails check-results.sh" fails "$check" "$tmp/e/results.md"

cp -R "$tmp/r" "$tmp/f"
check "a committed table*.tsv changed" \
	perturb "$tmp/f/table6.tsv" 's/^dp_less	19\.3588	/dp_less	19.3589	/'
check "... fails check-results.sh" fails "$check" "$tmp/f/results.md"

# not judged: every BLEU of every eval matrix 0 (what --quick gives), then
# a federated run whose last validation loss is above round 0's.
cp -R "$tmp/r" "$tmp/z"
zero_bleu() {
	for f in "$tmp/z"/matrices/*.tsv; do
		awk -F'\t' -v OFS='\t' '/^# / { b = ($0 == "# bleu on test") }
		b && !/^# / && $1 != "model" && NF > 1 { for (i = 2; i <= NF; i++) $i = 0 }
		{ print }' "$f" >"$f.new" && mv "$f.new" "$f" || return 1
	done
	sed -n '/^# bleu on test/,/^$/p' "$tmp/z/matrices/federated.tsv" | grep -q '^server	0	0	0	0	0	0$'
}
check "every BLEU of the matrices set to 0" zero_bleu
check "results.sh on all-zero BLEU" env PASSBAN2022_FIGURES=0 "$results" "$tmp/z" "$tmp/z" >/dev/null
check "... judges no goal: four \"not judged\", for BLEU 0" \
	test "$(grep -c '\*\*not judged\*\* (BLEU 0\.00 on every domain for ' "$tmp/z/results.md")" -eq 4
check "... and no \"met (gap 0.00)\"" fails grep -q 'gap 0\.00' "$tmp/z/results.md"
check "... and check-results.sh takes it" "$check" "$tmp/z/results.md"

cp -R "$tmp/r" "$tmp/y"
check "the federated server's last validation loss raised above round 0's" \
	perturb "$tmp/y/metrics/federated.csv.gz" 's/^5,,valid,loss,,3\.6763789219830141,/5,,valid,loss,,4.5,/'
check "results.sh on a run that did not learn" env PASSBAN2022_FIGURES=0 "$results" "$tmp/y" "$tmp/y2" >/dev/null
check "... judges no goal: four \"not judged\", did not learn" \
	test "$(grep -c '\*\*not judged\*\* (did not learn: federated \[' "$tmp/y2/results.md")" -eq 4
check "... fails check-results.sh on the committed results.md" fails "$check" "$tmp/y/results.md"
checks_done repro_passban2022_results
