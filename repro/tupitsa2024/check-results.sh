#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputes a results.md of repro/tupitsa2024 from the raw files next to it
# (the runs' metrics.csv and pipeline.json, settings, times.tsv; for the
# mean-estimation stages, whose run directories results/ does not keep,
# their curves/ and table-*.tsv) with results.sh into a temporary
# directory, and fails, showing the diff, when results.md, a table-*.tsv
# or a file of curves/ differs; then checks that results.md has every
# table of the stages it reports (at least one), each row with numbers,
# and the verdicts on their goals (CI runs it on the --quick reproduction).
# Two things the committed results do not hold are taken from the
# results.md checked, and named on stderr: the lowres corpus's sizes
# (training pairs, dev and test sentences, the dev references'
# characters) where the corpus is not there (TUPITSA2024_CORPUS of
# results.sh), and a standard deviation over seeds that results.sh gives
# as "(?)" (the Byzantine runs'), which matches any number in brackets.
# Usage: repro/tupitsa2024/check-results.sh [RESULTS.md...]
#   (default repro/tupitsa2024/results/results.md and
#   repro/tupitsa2024/results-h100-lowres/results.md)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ]; then
	[ $# -gt 0 ] || set -- "$here/results/results.md" "$here/results-h100-lowres/results.md"
	for md; do "$here/check-results.sh" "$md" || exit 1; done
	exit 0
fi
md=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -e "$md" ] || { echo "check-results.sh: $md: missing" >&2; exit 1; }
dir=$(cd "$(dirname "$md")" && pwd)
# the corpus's sizes as $md gives them, for results.sh where the corpus
# is not there
c=$(sed -n 's/^(\([0-9]*\) training pairs; dev and test \([0-9]*\) and \([0-9]*\)),.*/\1 \2 \3/p' "$md" | head -n 1)
ch=$(sed -n 's|^/ ln 2 / its \([0-9]*\) characters),.*|\1|p' "$md" | head -n 1)
if ! TUPITSA2024_CORPUS="$c${ch:+ $ch}" TUPITSA2024_FIGURES=0 "$here/results.sh" "$dir" "$tmp/r" >/dev/null 2>"$tmp/notes"; then
	cat "$tmp/notes" >&2
	echo "check-results.sh: results.sh $dir failed" >&2
	exit 1
fi
# "(?)" in what results.sh wrote: a number no committed file gives, which
# $md's line may have in its place; such lines are compared around it
: >"$tmp/md"
awk -v out="$tmp/md" -v nf="$tmp/nwild" '
function wild(line, pat,    n, p, i) {
	n = split(pat, p, /\(\?\)/)
	if (substr(line, 1, length(p[1])) != p[1]) return 0
	line = substr(line, length(p[1]) + 1)
	for (i = 2; i <= n; i++) {
		if (!match(line, /^\([0-9.e+-]+\)/)) return 0
		line = substr(line, RLENGTH + 1)
		if (substr(line, 1, length(p[i])) != p[i]) return 0
		line = substr(line, length(p[i]) + 1)
	}
	nw += n - 1
	return line == ""
}
NR == FNR { re[FNR] = $0; next }
{ print (((FNR in re) && index(re[FNR], "(?)") && wild($0, re[FNR])) ? re[FNR] : $0) > out }
END { print nw + 0 > nf }' "$tmp/r/results.md" "$md"
if ! diff -u "$tmp/md" "$tmp/r/results.md"; then
	echo "check-results.sh: $md differs from what the runs give (results.sh $dir)" >&2
	exit 1
fi
for t in "$dir"/table-*.tsv; do
	[ -e "$t" ] || continue
	diff -u "$t" "$tmp/r/${t##*/}" || {
		echo "check-results.sh: $t differs from what the runs give" >&2
		exit 1
	}
done
if [ -d "$dir/curves" ] && ! diff -r -u "$dir/curves" "$tmp/r/curves"; then
	echo "check-results.sh: $dir/curves differs from what the runs give" >&2
	exit 1
fi
awk '
function num(s) { return s ~ /^ -?[0-9.]+(e[-+][0-9]+)? $/ }
function numsd(s) { return s ~ /^ -?[0-9.]+(e[-+][0-9]+)? \([0-9.]+(e[-+][0-9]+)?\) $/ }
/^## / { section = substr($0, 4); seen[section] = 1 }
/^\| method / { next }
/^\| / && !/^\|---/ {
	if (section !~ /^(The 150-client problem|The target.s validation sample|Byzantine clients)$/) next
	n = split($0, c, "|")
	rows[section]++
	if (section == "Byzantine clients") {
		for (i = 3; i < n; i++)
			if (c[2] ~ /ratio/ ? !num(c[i]) : c[2] ~ /share/ ? c[i] !~ /^ [0-9.]+\/[0-9.]+ $/ : !numsd(c[i])) {
				printf "%s: row \"%s\": cell %d is \"%s\"\n", section, c[2], i - 2, c[i]
				bad = 1
			}
	} else if (!numsd(c[3]) || !num(c[4]) || !num(c[5])) {
		printf "%s: row \"%s\" lacks numbers: %s\n", section, c[2], $0
		bad = 1
	}
}
END {
	split("The 150-client problem|The target\x27s validation sample|Byzantine clients", want, "|")
	split("6 3 7", nrows, " ")
	for (k = 1; k <= 3; k++)
		if (want[k] in seen && rows[want[k]] != nrows[k]) {
			printf "%s: %d rows, expected %d\n", want[k], rows[want[k]], nrows[k]
			bad = 1
		}
	if (!(want[1] in seen) && !(want[2] in seen) && !(want[3] in seen) &&
		!("Low-resource translation with helper languages" in seen)) {
		print "no section of any stage"
		bad = 1
	}
	exit bad
}' "$md"
# The low-resource translation section, when the lowres stage ran: its
# three methods with a number in every cell (one row per method and seed;
# the vocabulary control's rows, when there, complete too), with several
# seeds their mean (sd) over seeds, the bits per character per method (a
# number or "-" for a round a method did not evaluate, at least one
# number; unless results.sh said the dev set was not there), the test
# set's bits per method (a number or "-" for a seed whose run did not end;
# the mean a number), MeritFed's weights per round with one per language,
# and the verdict on the goal.
if grep -q '^## Low-resource translation with helper languages$' "$md"; then
	awk '
	function num(s) { return s ~ /^ -?[0-9.]+ $/ }
	function numsd(s) { return s ~ /^ -?[0-9.]+ \(([0-9.]+|-)\) $/ }
	/^## / { on = ($0 == "## Low-resource translation with helper languages") }
	on && /^\(No bits per character: / { nobpc = 1 }
	!on || !/^\| / || /^\|---/ { next }
	/^\| method / { t = "m"; next }
	/^\| mean over seeds / { t = "s"; next }
	/^\| round / { t = "w"; nw = split($0, h, "|") - 3; next }
	/^\| bits per character / { t = "b"; next }
	/^\| test set, bits / { t = "t"; next }
	/^\| MeritFed − method / { t = "p"; next }
	# the paired bootstrap: seed, metric, both scores, the difference, its
	# interval and what it says
	t == "p" {
		if ($0 !~ /^\| MeritFed − [^|]* \| [0-9]+ \| (BLEU|chrF) \| [0-9.]+ \| [0-9.]+ \| [+-][0-9.]+ \| \[[+-][0-9.]+, [+-][0-9.]+\] \| (MeritFed higher|MeritFed lower|no significant difference) \|$/) {
			printf "Low-resource translation: a paired bootstrap row is not one: %s\n", $0; bad = 1
		}
		next
	}
	{
		n = split($0, c, "|")
		ctl = c[2] ~ /\(control\) $/
		# the copy-source baseline: its scores, or "not kept", and "-"
		if (c[2] == " copy the source (English) ") {
			cp[t]++
			for (i = 3; i < n; i++) if (!num(c[i]) && c[i] != " - " && c[i] != " not kept ") {
				printf "Low-resource translation: row \"%s\": cell %d is \"%s\"\n", c[2], i - 2, c[i]; bad = 1
			}
			next
		}
		if (t == "m") { if (!ctl) rows++; seeds[c[3]] = 1 } else if (t == "s") srows += !ctl
		else if (t == "w") { wrows++; if (n - 3 != nw) bad = 1 }
		else if (t == "b") { brows += !ctl; nb = 0 }
		else if (t == "t") trows += !ctl
		for (i = 3; i < n; i++) {
			if (t == "b" && i > 3 && c[i] == " - ") continue
			if (t == "t" && i > 3 && i < n - 1 && c[i] == " - ") continue
			if (t == "b" && i > 3) nb++
			if (t == "s" && i > 3 ? !numsd(c[i]) : !num(c[i])) { printf "Low-resource translation: row \"%s\": cell %d is \"%s\"\n", c[2], i - 2, c[i]; bad = 1 }
		}
		if (t == "b" && !nb) { printf "Low-resource translation: row \"%s\" of bits per character: no number\n", c[2]; bad = 1 }
	}
	END {
		for (s in seeds) ns++
		if (rows != 3 * ns) { printf "Low-resource translation: %d method rows, expected 3 for each of %d seed(s)\n", rows, ns; bad = 1 }
		if (ns > 1 && srows != 3) { printf "Low-resource translation: %d rows of means over seeds, expected 3\n", srows; bad = 1 }
		if (cp["m"] != 1 || (ns > 1 && cp["s"] != 1)) { print "Low-resource translation: no copy-source row"; bad = 1 }
		if (wrows < 1 || nw < 2) { print "Low-resource translation: no weights per language"; bad = 1 }
		if (trows != 3) { printf "Low-resource translation: %d rows of test-set bits (the control aside), expected 3\n", trows; bad = 1 }
		if (brows != 3 && !nobpc) { printf "Low-resource translation: %d rows of bits per character (the control aside), expected 3\n", brows; bad = 1 }
		exit bad
	}' "$md"
	# the verdicts with the intervals they rest on
	iv='(difference [+-][0-9.]+, 95% t interval over [0-9]+ seeds \[[+-][0-9.]+, [+-][0-9.]+\]|difference [+-][0-9.]+)'
	grep -Eq "^  on the target's test chrF: (\*\*(reproduced|contradicted|inconclusive|inconclusive \(one seed\))\*\*: against the target alone \($iv\), against FedAvg \($iv\)|\*\*not (judged|measured)\*\*)" "$md" ||
		{ echo "$md: no verdict on the low-resource goal"; exit 1; }
	nb=$(grep -Ec "^  - [^:]*: \*\*(reproduced|contradicted|inconclusive|inconclusive \(one seed\))\*\* \($iv\)\.$" "$md")
	want_b=2
	grep -q '^| Icelandic alone, shared vocabulary (control) | [0-9]' "$md" && want_b=3
	[ "$nb" -eq "$want_b" ] || { echo "$md: $nb verdicts on the test-set bits, expected $want_b"; exit 1; }
	if grep -q '\*\*do not match\*\*' "$md"; then
		echo "$md: kept translations do not score the runs' metrics"
		exit 1
	fi
fi
if grep -q '^## The 150-client problem$' "$md"; then
	grep -Eq '^- MeritFed within 1.25x the ideal.s error on the 150-client problem: \*\*(met|missed|not judged)\*\*' "$md" ||
		{ echo "$md: no verdict on the 1.25x goal"; exit 1; }
fi
# (the notes on standard deviations that were not kept are counted below)
sed '/: runs not kept, and no table of them: /d
	/ is not there: /{ s/^results\.sh: /check-results.sh: not recomputed: /; s/, from TUPITSA2024_CORPUS$/, taken from results.md/; }' "$tmp/notes" >&2
n=$(cat "$tmp/nwild")
[ "$n" = 0 ] || echo "check-results.sh: not recomputed: $n standard deviations, of runs not kept, taken from $md" >&2
echo "check-results.sh: $md recomputes from the runs; every table has its rows, with numbers"
