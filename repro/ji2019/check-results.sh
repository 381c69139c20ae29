#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputes a results.md of repro/ji2019 from what its directory keeps,
# with results.sh into a temporary directory, and fails, showing the diff,
# when anything differs: from the run directories (the runs' metrics.csv,
# .complete and pipeline.json, settings, times.tsv, dp-calibration.tsv),
# whose TSV tables must recompute too; or, where the directory keeps no run
# (the committed results/ and results-h100/), from the TSV tables,
# times.tsv and the figures' .dat files there, so that one number changed
# in results.md or in one of those fails.
#
# Then checks that results.md has the table of every stage that ran, each
# with its rows and a number in every cell, and a verdict for each of those
# stages' goals (CI runs it on the --quick reproduction). The stages that
# did not run are those results.md names in its "Stages not run" line; the
# model-size table is checked when it is there (the sizes stage is not in
# the default run), and at least one stage must have run. A cell may read
# "not kept" (it needs a run's metrics.csv, which the directory does not
# keep) and a goal "not judged" (a run did not learn) or "not kept"; cells
# "not run" and goals "not measured" only in a directory that keeps no run
# and whose results.md says that runs are missing from the stages that ran.
# Usage: check-results.sh [RESULTS.md]  (default repro/ji2019/results/results.md)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=check-results.sh
top=$(cd "$here/../.." && pwd)
# shellcheck source=../common.sh
. "$top/repro/common.sh"
results_arg "$here/results/results.md" "$@"
# The unigram baseline's corpus: the runs' copy of the splits (OUT/data),
# else for a full-size directory data/brown/out where it is built, so that
# a kept unigram.tsv is computed again (JI2019_CORPUS given wins); else
# the kept unigram.tsv is taken as it is.
corpus=''
if [ ! -e "$dir/data/train.txt" ] && grep -q '^quick=0$' "$dir/settings" 2>/dev/null; then
	corpus=${JI2019_CORPUS:-}
	[ -n "$corpus" ] || [ ! -e "$top/data/brown/out/stats.tsv" ] || corpus=$top/data/brown/out
fi
JI2019_CORPUS=$corpus JI2019_FIGURES=0 "$here/results.sh" "$dir" "$tmp" >/dev/null
same_files "$dir" "$tmp" "$(basename "$md")" || exit 1
if [ -e "$tmp/unigram.tsv" ]; then
	same_files "$dir" "$tmp" unigram.tsv || exit 1
elif [ -e "$dir/unigram.tsv" ]; then
	echo "check-results.sh: $dir/unigram.tsv taken as kept (no corpus here to compute it: build data/brown/out)"
fi
if grep -q '\*\*not comparable\*\*' "$md"; then
	echo "the unigram baseline's targets are not the runs' test tokens"
	exit 1
fi
# the tables results.sh writes from the runs (none where there is no run:
# there they are what results.md is made from)
runs=''
for f in "$dir"/*/.complete; do [ ! -e "$f" ] || runs=1; done
if [ -n "$runs" ]; then
	for t in table2.tsv noniid.tsv gain.tsv table3-beta.tsv table4.tsv alpha.tsv alpha-steps.tsv; do
		[ -e "$tmp/$t" ] || [ -e "$dir/$t" ] || continue
		same_files "$dir" "$tmp" "$t" || exit 1
	done
fi
set -- "$md"
# the stages that did not run, as results.sh names them
skip=" $(sed -n 's/^Stages not run (no section here): \(.*\)\.$/\1/p' "$1" | tr -d ',') "
has() { case $skip in *" $1 "*) return 1 ;; esac; }
t2=0 al=0 ni=0 t3=0 part=0
has table2 && t2=1
has alpha && al=1
has noniid && ni=1
has table3 && t3=1
# runs missing from stages that ran (their cells "not run", their goals
# "not measured"): allowed in the record of a grid cut short whose runs
# were not kept (results-h100/), not where the runs are here (a stage of
# the --quick reproduction that lost a run fails)
if [ -z "$runs" ] && grep -q '^Runs missing from the stages that ran read "not run"' "$1"; then
	part=1
fi
awk -v t2=$t2 -v al=$al -v ni=$ni -v t3=$t3 -v part=$part '
function iid_fedavg_cell(i, n) { return section == "Attention and local steps" && c[2] == " iid " && i == n - 1 }
# a number (nan or inf where a run diverged: its goals say "not judged"),
# "mean ± sd (n)", "mean (mean of n)", or "not kept"
function num(s,   x) {
	x = "[+-]?([0-9]+(\\.[0-9]+)?|nan|inf)"
	return s ~ ("^ " x "( ± " x " \\([0-9]+\\)| \\(mean of [0-9]+\\))? $") || s == " not kept "
}
/^## / { section = substr($0, 4); hdr = 0; next }
/^\|---/ { hdr = 1; next }
# the unigram baseline: a row of each perplexity table, its cells numbers,
# "-" (no such figure) or "not kept"
/^\| unigram baseline \|/ && hdr {
	n = split($0, c, "|")
	ug[section]++
	for (i = 3; i < n; i++)
		if (!num(c[i]) && c[i] != " - ") {
			printf "%s: row \"unigram baseline\": cell %d is \"%s\", not a number\n", section, i - 1, c[i]
			bad = 1
		}
	next
}
/^\| / && hdr {
	n = split($0, c, "|")
	rows[section]++
	if (section == "Attention and local steps" && c[2] == " iid ") iid = 1
	if (section == "Attention weights" && !(c[2] in norm)) { norm[c[2]] = 1; norms++ }
	first = 3
	if (section == "Attention weights") first = 4 # norm, tensor
	if (section == "Attention and local steps") { first = 4; if (c[3] !~ /^ ([0-9]+ of [0-9]+|not kept) $/) first = 3 }
	for (i = first; i < n; i++)
		if (!num(c[i])) {
			if (c[i] == " not run " && part) continue
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
	# six tensors a norm whose FedAtt run there is (both, but for a Table II
	# cut short)
	if (al && !norms) { print "Attention weights: no row"; bad = 1 }
	expect("Attention weights", 6 * norms * al)
	# the iid row is there when FedAtt (frobenius, ε = 1) ran iid, which
	# table2, alpha and table3 make (and compare, not a stage of its own)
	if ((t2 || al || t3) && !iid) { print "Attention and local steps: no iid row"; bad = 1 }
	expect("Attention and local steps", iid + 4 * ni)
	# small is a row of Table II
	if ("Model size (Table IV)" in rows) expect("Model size (Table IV)", 2 + t2)
	if (nw == 0) { print "no table of any stage"; bad = 1 }
	for (k = 1; k <= nw; k++) {
		if (rows[want[k]] != nrows[k]) {
			printf "%s: %d rows, expected %d\n", want[k], rows[want[k]], nrows[k]
			bad = 1
		}
		if (want[k] !~ /^Attention/ && ug[want[k]] != 1) {
			printf "%s: %d unigram baseline rows, expected 1\n", want[k], ug[want[k]]
			bad = 1
		}
	}
	exit bad
}' "$1"
if [ $part = 0 ] && grep -q '\*\*not measured\*\*' "$1"; then
	echo "Goals: a goal is not measured"
	exit 1
fi
# the goals' comparisons: 16 of Table II (six FedAtt runs against FedAvg
# and FedSGD, four against the server-step control), one a partition and
# one a noise level, one a larger preset; each with a verdict, "not judged"
# or "not kept" (and "not measured" where runs are missing)
want=$((16 * t2 + 4 * ni + 4 * t3))
if grep -q '^## Model size (Table IV)$' "$1"; then
	want=$((want + 2))
elif [ "$skip" != "  " ] && has sizes; then
	# a results.md with the line names every stage it has no section of
	echo "Model size (Table IV): no section, and sizes is not named as not run"
	exit 1
fi
# (reproduced, contradicted and inconclusive with the interval they rest
# on, inconclusive (one seed) with its difference)
iv='95% t interval over [0-9]+ seeds \[[+-][0-9.]+, [+-][0-9.]+\]'
n=$(grep -oE "\\*\\*(reproduced|contradicted|inconclusive)\\*\\* \\(test perplexity difference [+-][0-9.]+, $iv|\\*\\*inconclusive \\(one seed\\)\\*\\* \\(test perplexity difference [+-][0-9]|\\*\\*not (judged|kept)\\*\\* \\(|\\*\\*not measured\\*\\*" "$1" | wc -l)
[ "$n" -eq "$want" ] || { echo "Goals: $n comparisons with a verdict, expected $want"; exit 1; }
grep -q '^with backend \*\*[A-Za-z0-9_-]*\*\* on ' "$1" || { echo "no backend line"; exit 1; }
echo "check-results.sh: $1 recomputes from $dir, and every table has its rows, with numbers"
