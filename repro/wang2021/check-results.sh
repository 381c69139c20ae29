#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks that a results.md of repro/wang2021 has Table 1 and Table 2, each
# row with "BLEU (chrF)" numbers in every column, and the domain-expert rows
# (CI runs it on the --quick reproduction).
# Usage: check-results.sh RESULTS.md
set -eu
[ $# -eq 1 ] || { echo "usage: check-results.sh RESULTS.md" >&2; exit 2; }
awk '
/^## / { section = substr($0, 4); sub(/:.*/, "", section) }
/^\| / && !/^\|---/ {
	n = split($0, c, "|")
	if (c[2] == " system ") { cols[section] = n; next }
	if (!(section in cols)) next
	rows[section]++
	if (n != cols[section]) { printf "%s: row \"%s\" has %d cells, the header %d\n", section, c[2], n, cols[section]; bad = 1 }
	for (i = 3; i < n; i++)
		if (c[i] !~ /^ [0-9]+\.[0-9]+ \([0-9]+\.[0-9]+\) $/) {
			printf "%s: row \"%s\": cell %d is \"%s\", not \"BLEU (chrF)\"\n", section, c[2], i - 2, c[i]
			bad = 1
		}
}
END {
	if (rows["Table 1"] != ROWS1) { printf "Table 1: %d rows, expected %d\n", rows["Table 1"], ROWS1; bad = 1 }
	if (rows["Table 2"] != 4) { printf "Table 2: %d rows, expected 4\n", rows["Table 2"]; bad = 1 }
	if (cols["Table 1"] < 4) { print "Table 1: no column of numbers"; bad = 1 }
	exit bad
}' ROWS1="${ROWS1:-9}" "$1"
echo "$1: Tables 1 and 2 have their rows, with numbers"
