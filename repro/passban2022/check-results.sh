#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputes a results.md of repro/passban2022 and its table*.tsv from the
# raw files next to it (the run directories' metrics.csv, eval_matrix.tsv
# and .complete, or a collected directory's metrics/*.csv.gz and
# matrices/*.tsv; settings, times.tsv, overlap.tsv) with results.sh into a
# temporary directory, and fails, showing the diff, when anything differs;
# then checks that every table has its rows, each with a number in every
# column ("not kept" allowed in the row "copy the source"), and that every
# goal has a verdict, every goal on each domain a verdict per domain (CI
# runs it on the --quick reproduction, which keeps its translations: there
# it also checks that the copy row and the intervals are there).
# Usage: repro/passban2022/check-results.sh [RESULTS.md]
#   (default repro/passban2022/results/results.md)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=check-results.sh
top=$(cd "$here/../.." && pwd)
# shellcheck source=../common.sh
. "$top/repro/common.sh"
results_arg "$here/results/results.md" "$@"
PASSBAN2022_FIGURES=0 "$here/results.sh" "$dir" "$tmp" >/dev/null
same_files "$dir" "$tmp" "$(basename "$md")" table2.tsv table4.tsv table5.tsv table6.tsv \
	table-optim.tsv || exit 1
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
	if (c[2] ~ /, half the parameters $/) matched++
	for (i = 3; i < n; i++)
		if (c[i] !~ /^ [0-9]+\.[0-9] \([0-9]+\.[0-9]\) $/ && !(c[2] == " copy the source " && c[i] == " not kept ")) {
			printf "%s: row \"%s\": cell %d is \"%s\", not \"BLEU (chrF)\"\n", section, c[2], i - 2, c[i]
			bad = 1
		}
}
END {
	split("Table 2: centralized baselines|Table 4: federated|Table 5: rounds|Table 6: what is pulled|Optimizer state and schedule clock", want, "|")
	# (run.sh --matched adds two rows to Table 6)
	split("9 7 4 " (matched ? 7 : 5) " 5", nrows, " ")
	for (k = 1; k <= 5; k++)
		if (rows[want[k]] != nrows[k]) {
			printf "%s: %d rows, expected %d\n", want[k], rows[want[k]], nrows[k]
			bad = 1
		}
	exit bad
}' "$md"
grep -Eq '^\| dp_less \| [0-9]+ \| [0-9.]+% \| [0-9]+ \| [0-9.]+% \| [0-9]+ \| [0-9.]+% \|$' "$md" ||
	{ echo "no traffic row for dp_less"; exit 1; }
# the four goals, each with its verdict ("not judged" on figures that mean
# nothing, such as --quick's), two of them with one per domain
v='\*\*\(reproduced\|contradicted\|inconclusive\|not judged\)\*\* ('
# (a fifth with run.sh --matched)
ngoals=4
! grep -q '^| dp_less, half the parameters |' "$md" || ngoals=5
n=$(grep -c "^- .*: $v" "$md" || :)
[ "$n" -eq $ngoals ] || { echo "check-results.sh: $n goals with a verdict, expected $ngoals" >&2; exit 1; }
n=$(grep -c "^  - [a-z]*: $v" "$md" || :)
[ "$n" -eq 10 ] || { echo "check-results.sh: $n per-domain verdicts, expected 10" >&2; exit 1; }
# translations kept: the copy row has numbers and every goal an interval
if ! grep -q '^Translations: not kept' "$md"; then
	grep -Eq '^\| copy the source( \| [0-9]+\.[0-9] \([0-9]+\.[0-9]\))+ \|$' "$md" ||
		{ echo "check-results.sh: translations kept, but no copy baseline" >&2; exit 1; }
	n=$(grep -c "$v.*95% interval \[" "$md" || :)
	[ "$n" -eq $((ngoals + 8)) ] ||
		{ echo "check-results.sh: translations kept, but $n intervals, expected $((ngoals + 8))" >&2; exit 1; }
fi
echo "check-results.sh: $md recomputes from the runs; every table has its rows, with numbers, and every goal its verdict"
