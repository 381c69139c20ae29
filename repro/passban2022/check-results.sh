#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputes a results.md of repro/passban2022 and its table*.tsv from the
# raw files next to it (the run directories' metrics.csv, eval_matrix.tsv
# and .complete, or a collected directory's metrics/*.csv.gz and
# matrices/*.tsv; settings, times.tsv, overlap.tsv) with results.sh into a
# temporary directory, and fails, showing the diff, when anything differs;
# then checks that every table has its rows, each with a number in every
# column, and that every goal has a verdict (CI runs it on the --quick
# reproduction).
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
}' "$md"
grep -Eq '^\| dp_less \| [0-9]+ \| [0-9.]+% \| [0-9]+ \| [0-9.]+% \| [0-9]+ \| [0-9.]+% \|$' "$md" ||
	{ echo "no traffic row for dp_less"; exit 1; }
# the four goals, each with its verdict ("not judged" on figures that mean
# nothing, such as --quick's)
n=$(grep -c '\*\*\(met\|missed\|not judged\)\*\* (' "$md" || :)
[ "$n" -eq 4 ] || { echo "check-results.sh: $n goals with a verdict, expected 4" >&2; exit 1; }
echo "check-results.sh: $md recomputes from the runs; every table has its rows, with numbers, and every goal its verdict"
