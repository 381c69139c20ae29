#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The committed Passban et al. 2022 reproduction (repro/passban2022/results)
# recomputes: results.md and table*.tsv are what results.sh makes of the
# runs' metrics/*.csv.gz and matrices/*.tsv, settings, times.tsv and
# overlap.tsv there; check-results.sh fails when one number changes, in
# results.md or in a raw file; the goal code says "not judged" on figures
# that mean nothing (every BLEU 0, as in a --quick run, or a run whose
# validation loss did not fall); and, on translations and test sets added
# to a copy of the committed results (which kept none), results.sh gives
# the copy baseline and the paired bootstrap intervals, and check-results.sh
# fails when a kept translation or an interval changes.
# shellcheck source=tests/checks.sh
. "${srcdir:-.}/tests/checks.sh"
check=${srcdir:-.}/repro/passban2022/check-results.sh
results=${srcdir:-.}/repro/passban2022/results.sh
cp -R "${srcdir:-.}/repro/passban2022/results" "$tmp/r"
chmod -R u+w "$tmp/r"
check "the committed results recompute" "$check" "$tmp/r/results.md"
recompute_only repro_passban2022_results

cp -R "$tmp/r" "$tmp/a"
check "a table cell of results.md changed" \
	perturb "$tmp/a/results.md" 's/^| generic | 18\.3 (37\.8) |/| generic | 18.4 (37.8) |/'
check "... fails check-results.sh" fails "$check" "$tmp/a/results.md"

cp -R "$tmp/r" "$tmp/b"
check "a goal's verdict in results.md changed" \
	perturb "$tmp/b/results.md" 's/pooled: \*\*inconclusive\*\* (translations not kept: no interval; test BLEU 23\.44 /pooled: **reproduced** (translations not kept: no interval; test BLEU 23.44 /'
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
	test "$(grep -c '^- .*\*\*not judged\*\* (BLEU 0\.00 on every domain for ' "$tmp/z/results.md")" -eq 4
check "... nor any domain" \
	test "$(grep -c '^  - .*\*\*not judged\*\* (BLEU 0\.00 on every domain for ' "$tmp/z/results.md")" -eq 10
check "... and no \"reproduced\" or \"contradicted\"" \
	fails grep -q '^ *- .*\*\*\(reproduced\|contradicted\)\*\*' "$tmp/z/results.md"
check "... and check-results.sh takes it" "$check" "$tmp/z/results.md"

cp -R "$tmp/r" "$tmp/y"
check "the federated server's last validation loss raised above round 0's" \
	perturb "$tmp/y/metrics/federated.csv.gz" 's/^5,,valid,loss,,3\.6763789219830141,/5,,valid,loss,,4.5,/'
check "results.sh on a run that did not learn" env PASSBAN2022_FIGURES=0 "$results" "$tmp/y" "$tmp/y2" >/dev/null
check "... judges no goal: four \"not judged\", did not learn" \
	test "$(grep -c '^- .*\*\*not judged\*\* (did not learn: federated \[' "$tmp/y2/results.md")" -eq 4
check "... fails check-results.sh on the committed results.md" fails "$check" "$tmp/y/results.md"

# Kept translations, made up: each domain's test set of 60 sentences (the
# sources are the references' words in reverse order, so copying scores
# little), and the translations of the models the goals compare, each the
# references with some words replaced, more for a worse model (a share
# per model, the words chosen by position). The matrices' BLEU are not
# those of these translations: results.md says so.
cp -R "$tmp/r" "$tmp/k"
fixture() {
	mkdir -p "$tmp/k/test" || return 1
	n=0
	for d in cli git packaging gnome office; do
		n=$((n + 1))
		awk -v d=$n 'BEGIN { for (i = 1; i <= 60; i++) { l = ""
			for (k = 1; k <= 6 + i % 5; k++) l = l (k > 1 ? " " : "") "w" (i * 7 + k * d) % 53
			print l } }' >"$tmp/k/ref" || return 1
		gzip -nc "$tmp/k/ref" >"$tmp/k/test/$d.de.gz"
		awk '{ l = $NF; for (k = NF - 1; k >= 1; k--) l = l " " $k; print l }' "$tmp/k/ref" |
			gzip -n >"$tmp/k/test/$d.en.gz"
		for m in federated/server:30 combined/server:20 alone/server:60 federated/$d:10 \
			dp-less/server:50 dp-greater/server:40; do
			mkdir -p "$tmp/k/hyps/${m%:*}"
			awk -v q=${m#*:} '{ for (k = 1; k <= NF; k++) if ((NR * 31 + k * 17) % 100 < q) $k = "x"; print }' \
				"$tmp/k/ref" | gzip -n >"$tmp/k/hyps/${m%:*}/$d.txt.gz"
		done
	done
	rm "$tmp/k/ref"
}
check "test sets and translations added to the results" fixture
check "results.sh on kept translations" env PASSBAN2022_FIGURES=0 "$results" "$tmp/k" >/dev/null
check "... gives the copy baseline in every table" \
	test "$(grep -Ec '^\| copy the source( \| [0-9]+\.[0-9] \([0-9]+\.[0-9]\)){6} \|$' "$tmp/k/results.md")" -eq 5
check "... and 12 intervals, 1000 resamples each" \
	test "$(grep -c '95% interval \[.*; paired bootstrap, 1000 resamples' "$tmp/k/results.md")" -eq 12
check "... says the translations do not give the matrices' BLEU" \
	grep -q '^`fedrun bleu`, these do not give the BLEU of their eval matrix: alone/server on cli (' "$tmp/k/results.md"
check "... and check-results.sh takes it" "$check" "$tmp/k/results.md"
cp -R "$tmp/k" "$tmp/k1"
check "a word added to a kept translation" \
	perturb "$tmp/k1/hyps/federated/server/git.txt.gz" '3s/$/ w1/'
check "... fails check-results.sh" fails "$check" "$tmp/k1/results.md"
cp -R "$tmp/k" "$tmp/k2"
check "an interval in results.md changed" \
	perturb "$tmp/k2/results.md" '/^  - gnome: /s/95% interval \[\([-0-9.]*\), /95% interval [\1 0, /'
check "... fails check-results.sh" fails "$check" "$tmp/k2/results.md"
cp -R "$tmp/k" "$tmp/k3"
check "a reference of the test set changed" perturb "$tmp/k3/test/office.de.gz" '5s/^w[0-9]* /y /'
check "... fails check-results.sh" fails "$check" "$tmp/k3/results.md"
checks_done repro_passban2022_results
