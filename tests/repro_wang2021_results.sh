#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The committed FedNMT reproduction (repro/wang2021/results/en-de and
# en-zh_CN) recomputes: results.md, the tables and the vocabulary's table
# are what results.sh makes of the scores, metrics, settings, times.tsv,
# sizes and overlap files there; check-results.sh fails when one number
# changes, in results.md or in a raw file; the goals are not judged on
# all-zero BLEU, on a run that did not converge, or in a --quick run; and
# (where fedrun is at hand) a reference that the scores do not match fails.
. "${srcdir:-.}/tests/checks.sh"
check=${srcdir:-.}/repro/wang2021/check-results.sh
results=${srcdir:-.}/repro/wang2021/results.sh
cp -R "${srcdir:-.}/repro/wang2021/results" "$tmp/r"
chmod -R u+w "$tmp/r"
check "the committed results recompute" "$check" "$tmp/r/en-de/results.md" "$tmp/r/en-zh_CN/results.md"

fresh() { # NAME: a copy of the committed en-de (or, NAME zh, en-zh_CN) results
	rm -rf "${tmp:?}/$1"
	cp -R "$tmp/r/en-${2:-de}" "$tmp/$1"
}
fresh a
check "a Table 1 cell of results.md changed" perturb "$tmp/a/results.md" 's/^| FedNMT | 1\.76 (1\.83) |$/| FedNMT | 1.77 (1.83) |/'
check "... fails check-results.sh" fails "$check" "$tmp/a/results.md"

fresh b zh_CN
check "a goal's verdict in results.md changed" \
	perturb "$tmp/b/results.md" '/^- en-zh_CN: FedNMT+WA above FedNMT:/s/\*\*inconclusive (difference within ±1\.0)\*\*/**reproduced**/'
check "... fails check-results.sh" fails "$check" "$tmp/b/results.md"

fresh c
check "a BLEU in a scores.tsv changed" perturb "$tmp/c/scores/de-wa.tsv" 's/^test	uncased	1\.04	2\.85$/test	uncased	1.05	2.85/'
check "... fails check-results.sh" fails "$check" "$tmp/c/results.md"

fresh d zh_CN
check "an expert's lambda in a metrics.csv changed" \
	perturb "$tmp/d/metrics/zh_CN-fednmt.csv.gz" 's/^2,0,test,expert\.lambda,,0\.0542/2,0,test,expert.lambda,,0.0642/'
check "... fails check-results.sh" fails "$check" "$tmp/d/results.md"

fresh e
check "a stage's seconds in times.tsv changed" perturb "$tmp/e/times.tsv" 's/^de-central	409$/de-central	410/'
check "... fails check-results.sh" fails "$check" "$tmp/e/results.md"

fresh f
check "a translation removed from a hypothesis file" perturb "$tmp/f/scores/de-central-hyp-test.txt.gz" '$d'
check "... fails check-results.sh" fails "$check" "$tmp/f/results.md"

# goals_not_judged DIR N WHY: results.sh of DIR has N goals not judged for
# WHY and no goal judged.
goals_not_judged() {
	WANG2021_FIGURES=0 "$results" "$1" "$1.out" >/dev/null &&
		[ "$(grep -c "^- en-.*: \*\*not judged\*\* (.*$3" "$1.out/results.md")" -eq "$2" ] &&
		! grep -q '^- en-.*: \*\*\(reproduced\|contradicted\|inconclusive\)' "$1.out/results.md"
}
fresh z
check "every BLEU of the scores set to 0.00" \
	perturb "$tmp/z/scores/de-wa.tsv" 's/^\(test	[a-z]*\)	[0-9.]*	/\1	0.00	/'
for f in "$tmp"/z/scores/*.tsv; do sed -i 's/^\(test	[a-z]*\)	[0-9.]*	/\1	0.00	/' "$f"; done
check "... gives every goal \"not judged\" (all-zero BLEU)" goals_not_judged "$tmp/z" 8 "BLEU 0.00 for both"
check "... and fails check-results.sh" fails "$check" "$tmp/z/results.md"

fresh n
check "FedNMT's last dev loss above its round-0 loss" \
	perturb "$tmp/n/metrics/de-fednmt.csv.gz" 's/^2,,valid,loss,,5\.93[0-9]*,/2,,valid,loss,,9.9,/'
check "... gives the 3 goals on FedNMT \"not judged\" (did not converge)" \
	sh -c 'WANG2021_FIGURES=0 "$1" "$2" "$2.out" >/dev/null &&
		[ "$(grep -c "^- en-de: .*\*\*not judged\*\* (de-fednmt did not converge: dev loss 9.900 at round 2, not below 9.665 at round 0;" "$2.out/results.md")" -eq 3 ]' \
	sh "$results" "$tmp/n"
check "... and fails check-results.sh" fails "$check" "$tmp/n/results.md"

fresh q
check "settings of a --quick run" perturb "$tmp/q/settings" 's/^quick=0$/quick=1/'
check "... gives every goal \"not judged\"" goals_not_judged "$tmp/q" 8 "a --quick run"
check "... whose results.md, remade in place, passes check-results.sh" \
	sh -c 'WANG2021_FIGURES=0 "$1" "$2" >/dev/null && "$3" "$2/results.md" >/dev/null' sh "$results" "$tmp/q" "$check"

if [ -n "${FEDRUN:-}" ] && [ -x "$FEDRUN" ]; then
	fresh s
	mkdir -p "$tmp/s/data-de/joint"
	check "references added (the centralised model's translations)" \
		cp "$tmp/s/scores/de-central-hyp-test.txt.gz" "$tmp/s/data-de/joint/test.de.gz"
	check "... that the scores do not match fail check-results.sh" fails "$check" "$tmp/s/results.md"
fi
checks_done repro_wang2021_results
