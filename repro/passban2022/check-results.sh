#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks that a results.md of repro/passban2022 has every table, each row
# with a number in every column (CI runs it on the --quick reproduction).
# Usage: check-results.sh RESULTS.md
set -eu
[ $# -eq 1 ] || { echo "usage: check-results.sh RESULTS.md" >&2; exit 2; }
awk '
/^## / { section = substr($0, 4) }
/^\| / && !/^\|---/ {
	n = split($0, c, "|")
	if (c[2] ~ /^ (model|rounds|selector|optimizer state, clock) $/) { # a header
		if (c[3] == " cli ") cols[section] = n; else delete cols[section]
		next
	}
	if (!(section in cols)) next
	rows[section]++
	for (i = 3; i < n; i++)
		if (c[i] !~ /^ [0-9]+\.[0-9] \([0-9]+\.[0-9]\) $/) {
			printf "%s: row \"%s\": cell %d is \"%s\", not \"BLEU (chrF)\"\n", section, c[2], i - 2, c[i]
			bad = 1
		}
}
END {
	split("Table 2: centralized baselines|Table 4: federated|Table 5: rounds|Table 6: what is pulled|Optimizer state and schedule clock", want, "|")
	split("8 6 3 4 4", nrows, " ")
	for (k = 1; k <= 5; k++)
		if (rows[want[k]] != nrows[k]) {
			printf "%s: %d rows, expected %d\n", want[k], rows[want[k]], nrows[k]
			bad = 1
		}
	exit bad
}' "$1"
grep -Eq '^\| dp_less \| [0-9]+ \| [0-9.]+% \| [0-9]+ \| [0-9.]+% \| [0-9]+ \| [0-9.]+% \|$' "$1" ||
	{ echo "no traffic row for dp_less"; exit 1; }
echo "$1: every table has its rows, with numbers"
