#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks that a results.md of repro/tupitsa2024 has every table of the
# stages it reports (at least one), each row with numbers, and the verdicts
# on their goals (CI runs it on the --quick reproduction).
# Usage: check-results.sh RESULTS.md
set -eu
[ $# -eq 1 ] || { echo "usage: check-results.sh RESULTS.md" >&2; exit 2; }
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
}' "$1"
# The low-resource translation section, when the lowres stage ran: its
# three methods with a number in every cell (one row per method and seed;
# the vocabulary control's rows, when there, complete too), with several
# seeds their mean (sd) over seeds, the bits per character per method (a
# number or "-" for a round a method did not evaluate, at least one
# number; unless results.sh said the dev set was not there), MeritFed's weights per round with one per language, and the
# verdict on the goal.
if grep -q '^## Low-resource translation with helper languages$' "$1"; then
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
	{
		n = split($0, c, "|")
		ctl = c[2] ~ /\(control\) $/
		if (t == "m") { if (!ctl) rows++; seeds[c[3]] = 1 } else if (t == "s") srows += !ctl
		else if (t == "w") { wrows++; if (n - 3 != nw) bad = 1 }
		else if (t == "b") { brows += !ctl; nb = 0 }
		for (i = 3; i < n; i++) {
			if (t == "b" && i > 3 && c[i] == " - ") continue
			if (t == "b" && i > 3) nb++
			if (t == "s" && i > 3 ? !numsd(c[i]) : !num(c[i])) { printf "Low-resource translation: row \"%s\": cell %d is \"%s\"\n", c[2], i - 2, c[i]; bad = 1 }
		}
		if (t == "b" && !nb) { printf "Low-resource translation: row \"%s\" of bits per character: no number\n", c[2]; bad = 1 }
	}
	END {
		for (s in seeds) ns++
		if (rows != 3 * ns) { printf "Low-resource translation: %d method rows, expected 3 for each of %d seed(s)\n", rows, ns; bad = 1 }
		if (ns > 1 && srows != 3) { printf "Low-resource translation: %d rows of means over seeds, expected 3\n", srows; bad = 1 }
		if (wrows < 1 || nw < 2) { print "Low-resource translation: no weights per language"; bad = 1 }
		if (brows != 3 && !nobpc) { printf "Low-resource translation: %d rows of bits per character (the control aside), expected 3\n", brows; bad = 1 }
		exit bad
	}' "$1"
	grep -Eq "^  and FedAvg on the target's test chrF: \*\*(met|missed)\*\*" "$1" ||
		{ echo "$1: no verdict on the low-resource goal"; exit 1; }
fi
if grep -q '^## The 150-client problem$' "$1"; then
	grep -Eq '^- MeritFed within 1.25x the ideal.s error on the 150-client problem: \*\*(met|missed)\*\*' "$1" ||
		{ echo "$1: no verdict on the 1.25x goal"; exit 1; }
fi
echo "$1: every table has its rows, with numbers"
