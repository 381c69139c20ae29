#!/bin/sh
# Checks that a results.md of repro/ji2019 has every table, each with its
# rows and a number in every cell (CI runs it on the --quick reproduction);
# the model-size table only when it is there (the sizes stage is not in the
# default run).
# Usage: check-results.sh RESULTS.md
set -eu
[ $# -eq 1 ] || { echo "usage: check-results.sh RESULTS.md" >&2; exit 2; }
awk '
function num(s) { return s ~ /^ [+-]?[0-9]+(\.[0-9]+)?( ± [0-9]+(\.[0-9]+)? \([0-9]+\))? $/ }
/^## / { section = substr($0, 4); hdr = 0; next }
/^\|---/ { hdr = 1; next }
/^\| / && hdr {
	n = split($0, c, "|")
	rows[section]++
	first = 3
	if (section == "Attention weights") first = 4 # norm, tensor
	if (section == "Attention and local steps") { first = 4; if (c[3] !~ /^ [0-9]+ of [0-9]+ $/) first = 3 }
	for (i = first; i < n; i++)
		if (!num(c[i])) {
			printf "%s: row \"%s\": cell %d is \"%s\", not a number\n", section, c[2], i - 1, c[i]
			bad = 1
		}
}
END {
	split("Table II: iid|Non-iid|Table III: randomisation β⋅N(0, σ²), σ = 1|Table III: DP-FedAvg|Attention weights|Attention and local steps", want, "|")
	split("10 4 5 3 12 5", nrows, " ")
	if ("Model size (Table IV)" in rows) { want[7] = "Model size (Table IV)"; nrows[7] = 3 }
	for (k = 1; k in want; k++)
		if (rows[want[k]] != nrows[k]) {
			printf "%s: %d rows, expected %d\n", want[k], rows[want[k]], nrows[k]
			bad = 1
		}
	exit bad
}' "$1"
if grep -q '\*\*not measured\*\*' "$1"; then
	echo "Goals: a goal is not measured"
	exit 1
fi
want=24
grep -q '^## Model size (Table IV)$' "$1" && want=26
n=$(grep -oE '\*\*(lower|not lower|mixed)\*\* \(test perplexity difference [+-][0-9]' "$1" | wc -l)
[ "$n" -eq "$want" ] || { echo "Goals: $n measured comparisons, expected $want"; exit 1; }
grep -q '^with backend \*\*[A-Za-z0-9_-]*\*\* on ' "$1" || { echo "no backend line"; exit 1; }
echo "$1: every table has its rows, with numbers"
