#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputes a results.md of repro/lin2022 from the raw files next to it
# (the runs' metrics.csv and .complete, settings, times.tsv, and data/ or
# baselines.tsv) with results.sh into a temporary directory, and fails,
# showing the diff, when anything differs; then checks that every table
# cell of a stage that ran is a number and that every finding has a
# verdict (CI runs it on the --quick reproduction).
# Usage: repro/lin2022/check-results.sh [RESULTS.md]
#   (default repro/lin2022/results/results.md)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=check-results.sh
top=$(cd "$here/../.." && pwd)
# shellcheck source=../common.sh
. "$top/repro/common.sh"
results_arg "$here/results/results.md" "$@"
LIN2022_FIGURES=0 "$here/results.sh" "$dir" "$tmp" >/dev/null
same_files "$dir" "$tmp" "$(basename "$md")" || exit 1
# a cell "mean ± sd [min, max]" (sd "-" for one seed), a count, bytes or a ratio
awk '
function num(s) { return s ~ /^ [+-]?[0-9]+(\.[0-9]+)?( ± ([0-9]+(\.[0-9]+)?|-) \[[+-]?[0-9.]+, [+-]?[0-9.]+\])? $/ }
/^## / { section = substr($0, 4); hdr = 0; next }
/^$/ { hdr = 0 }
/^\|---/ { hdr = 1; next }
/^\| / && hdr {
	n = split($0, c, "|"); rows++
	for (i = (section == "Trivial baselines" ? 4 : 3); i < n; i++)
		if (!num(c[i]) && !(c[i] == " - " && section ~ /^Q3/)) {
			printf "%s: row \"%s\": cell %d is \"%s\", not a number\n", section, c[2], i - 1, c[i]; bad = 1
		}
}
/^- .*: \*\*not measured\*\*/ { print "not measured: " $0; bad = 1 }
END { if (!rows) { print "no table"; bad = 1 } exit bad }' "$md" || exit 1
n=$(grep -c '^- .*: \*\*\(reproduced\|contradicted\|inconclusive[^*]*\)\*\*' "$md" || :)
[ "$n" -gt 0 ] || { echo "check-results.sh: no finding with a verdict" >&2; exit 1; }
echo "check-results.sh: $md recomputes from the runs ($n findings)"
