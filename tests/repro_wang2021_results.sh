#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The committed FedNMT reproduction (repro/wang2021/results/en-de and
# en-zh_CN) recomputes: results.md, the tables and the vocabulary's table
# are what results.sh makes of the scores, metrics, settings, times.tsv,
# sizes and overlap files, translations, sources and references there;
# check-results.sh fails when one number changes, in results.md or in a raw
# file, a reference or a source line; Tables 1 and 2 have the copy-source
# baseline; the goals are judged by the paired bootstrap's interval, and a
# changed translation changes an interval and a verdict; they are not
# judged on all-zero BLEU, on a run that did not converge, in a --quick
# run, or below copying the source. Needs fedrun (fedrun bleu).
if [ -z "${FEDRUN:-}" ]; then
	# the build tree's (make check runs in it; distcheck's source tree has none)
	FEDRUN=fedrun
	[ ! -x "${srcdir:-.}/fedrun" ] || FEDRUN=${srcdir:-.}/fedrun
	[ ! -x ./fedrun ] || FEDRUN=$PWD/fedrun
fi
command -v "$FEDRUN" >/dev/null 2>&1 || {
	echo "repro_wang2021_results: no fedrun (build it, or set FEDRUN): skipped"
	exit 77
}
export FEDRUN
. "${srcdir:-.}/tests/checks.sh"
check=${srcdir:-.}/repro/wang2021/check-results.sh
results=${srcdir:-.}/repro/wang2021/results.sh
cp -R "${srcdir:-.}/repro/wang2021/results" "$tmp/r"
chmod -R u+w "$tmp/r"
check "the committed results recompute" "$check" "$tmp/r/en-de/results.md" "$tmp/r/en-zh_CN/results.md"
recompute_only repro_wang2021_results

fresh() { # NAME: a copy of the committed en-de (or, NAME zh, en-zh_CN) results
	rm -rf "${tmp:?}/$1"
	cp -R "$tmp/r/en-${2:-de}" "$tmp/$1"
}
fresh a
check "a Table 1 cell of results.md changed" perturb "$tmp/a/results.md" 's/^| FedNMT | 1\.76 (1\.83) |$/| FedNMT | 1.77 (1.83) |/'
check "... fails check-results.sh" fails "$check" "$tmp/a/results.md"

fresh b zh_CN
check "a goal's verdict in results.md changed" \
	perturb "$tmp/b/results.md" '/^- en-zh_CN: FedNMT+WA above FedNMT:/s/\*\*not judged\*\*/**reproduced**/'
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

# The copy-source baseline: the English sources scored against the
# references, the first row of Tables 1 and 2.
copy_rows() { # MD ROW: ROW twice in MD, right under a table's header each time
	[ "$(grep -c -x -F "$2" "$1")" -eq 2 ] &&
		[ "$(grep -B 1 -x -F "$2" "$1" | grep -c -x -F '|---|---:|')" -eq 2 ]
}
check "en-de: the copy-source row in Tables 1 and 2" copy_rows "$tmp/r/en-de/results.md" '| copy the source | 15.03 (26.05) |'
check "en-zh_CN: the copy-source row in Tables 1 and 2" copy_rows "$tmp/r/en-zh_CN/results.md" '| copy the source | 8.07 (17.16) |'
fresh g
check "the copy-source row removed from results.md" perturb "$tmp/g/results.md" '/^| copy the source |/d'
check "... fails check-results.sh" fails "$check" "$tmp/g/results.md"

fresh h
check "a reference line changed" perturb "$tmp/h/data-de/joint/test.de.gz" '3s/^Ordner %s existiert bereits$/Ordner existiert bereits/'
check "... fails check-results.sh" fails "$check" "$tmp/h/results.md"
fresh i zh_CN
check "a Chinese reference line changed" perturb "$tmp/i/data-zh_CN/joint/test.zh_CN.gz" '2s/%s/%d/'
check "... fails check-results.sh" fails "$check" "$tmp/i/results.md"
fresh j
check "a source line changed (to its reference)" perturb "$tmp/j/data-de/joint/test.en.gz" '1s/^Switch to application 2$/Zu Anwendung 2 wechseln/'
check "... fails check-results.sh (the copy baseline changes)" fails "$check" "$tmp/j/results.md"
fresh k
check "a source line removed" perturb "$tmp/k/data-de/joint/test.en.gz" '$d'
check "... fails check-results.sh" fails "$check" "$tmp/k/results.md"

# Goals by the paired bootstrap. rescored DIR NAME: DIR/scores/NAME.tsv
# from its translations, as run.sh scores them, so that only the goals
# can tell a changed translation.
rescored() {
	gzip -dc "$1/scores/$2-hyp-test.txt.gz" >"$tmp/hyp" && gzip -dc "$1/data-de/joint/test.de.gz" >"$tmp/ref" &&
		{
			printf 'split\tcase\tbleu\tchrf\n'
			printf 'test\tuncased\t%s\n' "$("$FEDRUN" bleu -l -b -w 2 "$tmp/ref" "$tmp/hyp" | paste -s -)"
			printf 'test\tcased\t%s\n' "$("$FEDRUN" bleu -b -w 2 "$tmp/ref" "$tmp/hyp" | paste -s -)"
		} >"$1/scores/$2.tsv"
}
dev1="FedNMT+WA+DE above FedNMT+WA, developer"
check "en-de: a goal below copying the source is not judged, with its interval" \
	sh -c 'grep -q -F -e "- en-de: $2: **not judged** (below copying the source: the systems did not learn to translate; copying the source scores test BLEU 15.03; test BLEU 1.14 against 1.04, difference +0.10, 95% interval [-0.01, 0.29]; chrF 2.66 against 2.85" "$1"' \
	sh "$tmp/r/en-de/results.md" "$dev1"
fresh t
# (the first 40 of FedNMT+WA+DE's developer expert's translations replaced
# by their references)
gzip -dc "$tmp/t/data-de/joint/test.de.gz" | head -n 40 >"$tmp/t40"
gzip -dc "$tmp/t/scores/de-wa-de-1-hyp-test.txt.gz" | tail -n +41 | cat "$tmp/t40" - | gzip -n >"$tmp/t.gz"
check "an expert's first 40 test translations set to their references" \
	sh -c '! gzip -dc "$1" | cmp -s - "$2"' sh "$tmp/t/scores/de-wa-de-1-hyp-test.txt.gz" "$tmp/t.gz"
mv "$tmp/t.gz" "$tmp/t/scores/de-wa-de-1-hyp-test.txt.gz"
check "... and its scores.tsv scored again" rescored "$tmp/t" de-wa-de-1
check "... changes the goal's interval" \
	sh -c 'WANG2021_FIGURES=0 "$1" "$2" "$2.out" >/dev/null &&
		[ "$(grep -F -e "- en-de: $4: **" "$2.out/results.md")" != "$(grep -F -e "- en-de: $4: **" "$3")" ]' \
	sh "$results" "$tmp/t" "$tmp/r/en-de/results.md" "$dev1"
check "... and fails check-results.sh" fails "$check" "$tmp/t/results.md"
# without the sources (no copy baseline) the goals are judged: the
# committed translations' intervals, then the changed one's
rm "$tmp/t/data-de/joint/test.en.gz"
fresh u
rm "$tmp/u/data-de/joint/test.en.gz"
check "without the sources, the goals judged by their intervals" \
	sh -c 'WANG2021_FIGURES=0 "$1" "$2" "$2.out" >/dev/null &&
		grep -q -F -e "- en-de: FedNMT above party developer alone: **reproduced** (test BLEU 1.76 against 0.65, difference +1.11, 95% interval [0.40, 1.84];" "$2.out/results.md" &&
		grep -q -F -e "- en-de: FedNMT+WA above FedNMT: **contradicted** (test BLEU 1.04 against 1.76, difference -0.72, 95% interval [-1.13, -0.25];" "$2.out/results.md" &&
		grep -q -F -e "- en-de: FedNMT+WA competitive with data-centralised training: **contradicted** (test BLEU 1.04 against 3.65, difference -2.61, 95% interval [-3.72, -1.67];" "$2.out/results.md" &&
		grep -q -F -e "- en-de: $3: **inconclusive** (test BLEU 1.14 against 1.04, difference +0.10, 95% interval [-0.01, 0.29];" "$2.out/results.md" &&
		[ "$(grep -c "^| copy the source | no sources |$" "$2.out/results.md")" -eq 2 ]' \
	sh "$results" "$tmp/u" "$dev1"
check "... and the changed translations turn \"$dev1\" reproduced" \
	sh -c 'WANG2021_FIGURES=0 "$1" "$2" "$2.out2" >/dev/null &&
		grep -q -F -e "- en-de: $3: **reproduced** (" "$2.out2/results.md"' \
	sh "$results" "$tmp/t" "$dev1"
fresh v zh_CN
rm -r "$tmp/v/data-zh_CN"
check "without references, every goal inconclusive with no interval" \
	sh -c 'WANG2021_FIGURES=0 "$1" "$2" "$2.out" >/dev/null &&
		[ "$(grep -c "^- en-zh_CN: .*: \*\*inconclusive\*\* (no references committed: no interval; test BLEU [0-9.]* against [0-9.]*, difference [-+][0-9.]*)$" "$2.out/results.md")" -eq 8 ] &&
		[ "$(grep -c "^| copy the source | no references |$" "$2.out/results.md")" -eq 2 ]' \
	sh "$results" "$tmp/v"
fresh w zh_CN
check "a goal's interval in results.md changed" \
	perturb "$tmp/w/results.md" '/^- en-zh_CN: FedNMT above party developer alone:/s/95% interval \[0\.64, 1\.78\]/95% interval [0.64, 1.79]/'
check "... fails check-results.sh" fails "$check" "$tmp/w/results.md"
checks_done repro_wang2021_results
