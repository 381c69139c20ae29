#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks that a results.md of repro/ji2019 has the table of every stage that
# ran, each with its rows and a number in every cell, and a verdict for
# each of those stages' goals (CI runs it on the --quick reproduction). The
# stages that did not run are those results.md names in its "Stages not
# run" line; the model-size table is checked when it is there (the sizes
# stage is not in the default run), and at least one stage must have run.
# Usage: check-results.sh RESULTS.md
set -eu
[ $# -eq 1 ] || { echo "usage: check-results.sh RESULTS.md" >&2; exit 2; }
# the stages that did not run, as results.sh names them
skip=" $(sed -n 's/^Stages not run (no section here): \(.*\)\.$/\1/p' "$1" | tr -d ',') "
has() { case $skip in *" $1 "*) return 1 ;; esac; }
t2=0 al=0 ni=0 t3=0
has table2 && t2=1
has alpha && al=1
has noniid && ni=1
has table3 && t3=1
awk -v t2=$t2 -v al=$al -v ni=$ni -v t3=$t3 '
function iid_fedavg_cell(i, n) { return section == "Attention and local steps" && c[2] == " iid " && i == n - 1 }
function num(s) { return s ~ /^ [+-]?[0-9]+(\.[0-9]+)?( ± [0-9]+(\.[0-9]+)? \([0-9]+\))? $/ }
/^## / { section = substr($0, 4); hdr = 0; next }
/^\|---/ { hdr = 1; next }
/^\| / && hdr {
	n = split($0, c, "|")
	rows[section]++
	if (section == "Attention and local steps" && c[2] == " iid ") iid = 1
	first = 3
	if (section == "Attention weights") first = 4 # norm, tensor
	if (section == "Attention and local steps") { first = 4; if (c[3] !~ /^ [0-9]+ of [0-9]+ $/) first = 3 }
	for (i = first; i < n; i++)
		if (!num(c[i])) {
			# the iid depth under FedAvg needs the FedAvg run, which the
			# alpha stage alone does not make
			if (iid_fedavg_cell(i, n) && c[i] == " not run " && !t2 && !t3) continue
			printf "%s: row \"%s\": cell %d is \"%s\", not a number\n", section, c[2], i - 1, c[i]
			bad = 1
		}
}
function expect(sec, n) { if (n) { want[++nw] = sec; nrows[nw] = n } else if (sec in rows) {
	printf "%s: a section of a stage that did not run\n", sec; bad = 1 } }
END {
	expect("Table II: iid", 10 * t2)
	expect("Non-iid", 4 * ni)
	# β = 0 is a row (runs of Table II, which the table3 stage makes)
	expect("Table III: randomisation β⋅N(0, σ²), σ = 1", 5 * t3)
	expect("Table III: DP-FedAvg", 3 * t3)
	expect("Attention weights", 12 * al)
	# the iid row is there when FedAtt (frobenius, ε = 1) ran iid, which
	# table2, alpha and table3 make (and compare, not a stage of its own)
	if ((t2 || al || t3) && !iid) { print "Attention and local steps: no iid row"; bad = 1 }
	expect("Attention and local steps", iid + 4 * ni)
	# small is a row of Table II
	if ("Model size (Table IV)" in rows) expect("Model size (Table IV)", 2 + t2)
	if (nw == 0) { print "no table of any stage"; bad = 1 }
	for (k = 1; k <= nw; k++)
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
# the goals' comparisons: 16 of Table II (six FedAtt runs against FedAvg
# and FedSGD, four against the server-step control), one a partition and
# one a noise level, one a larger preset
want=$((16 * t2 + 4 * ni + 4 * t3))
if grep -q '^## Model size (Table IV)$' "$1"; then
	want=$((want + 2))
elif [ "$skip" != "  " ] && has sizes; then
	# a results.md with the line names every stage it has no section of
	echo "Model size (Table IV): no section, and sizes is not named as not run"
	exit 1
fi
n=$(grep -oE '\*\*(lower|not lower|mixed)\*\* \(test perplexity difference [+-][0-9]' "$1" | wc -l)
[ "$n" -eq "$want" ] || { echo "Goals: $n measured comparisons, expected $want"; exit 1; }
grep -q '^with backend \*\*[A-Za-z0-9_-]*\*\* on ' "$1" || { echo "no backend line"; exit 1; }
echo "$1: every table has its rows, with numbers"
