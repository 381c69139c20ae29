#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# repro/common.sh's command line of every repro/*/run.sh: parse_args (values,
# flags, the script's extra_arg, a missing value, an unknown argument, the
# --help text), want and check_only; judge's verdicts.
set -eu
top=$(cd "${top_srcdir:-.}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# shellcheck disable=SC2034 # used by common.sh
prog=t
# shellcheck source=../repro/common.sh
. "$top/repro/common.sh"
fail() {
	echo "repro_common: $*" >&2
	exit 1
}
spec='--quick:quick --out=out --pretrain-rounds=prounds'

quick=0 out='' prounds=''
parse_args "$spec" --out "a b" --quick --pretrain-rounds 3
[ "$quick" = 1 ] && [ "$out" = "a b" ] && [ "$prounds" = 3 ] || fail "parsed quick=$quick out=$out prounds=$prounds"
quick=0
parse_args "$spec" --out '$(false)*'
[ "$quick" = 0 ] && [ "$out" = '$(false)*' ] || fail "a value with shell characters: out=$out"

# A missing value, an unknown argument, an option's prefix: each dies
# with its message, in a subshell (die exits).
expect_die() { # MESSAGE ARGS...
	m=$1
	shift
	if (parse_args "$spec" "$@") 2>err; then fail "parse_args $* succeeded"; fi
	grep -q "$m" err || fail "parse_args $*: $(cat err)"
}
expect_die "t: --out needs a value" --quick --out
expect_die "t: unknown argument --bogus (see --help)" --bogus
expect_die "t: unknown argument --qu (see --help)" --qu
expect_die "t: unknown argument out (see --help)" out x

# The script's own arguments: extra_arg takes --set VALUE (2) and --one (0).
sets=''
extra_arg() {
	case $1 in
	--set) sets="$sets $2" && return 2 ;;
	--one) sets="$sets one" && return 0 ;;
	esac
	return 1
}
parse_args "$spec" --set x --one --set y --quick
[ "$sets" = " x one y" ] || fail "extra_arg: sets='$sets'"
expect_die "unknown argument --two" --set x --two
unset -f extra_arg

# --help: the opening comment without the licence and shellcheck lines.
cat >script <<'SH'
#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2034
# Says what it does.
#   --out DIR   where
set -eu
SH
h=$(sh -c '. "$1/repro/common.sh"; parse_args "" --help' script "$top")
[ "$h" = "$(printf 'Says what it does.\n  --out DIR   where')" ] || fail "--help printed: $h"

only=q1,q3
want q1 && want q3 || fail "want: q1 and q3 are in $only"
! want q && ! want q31 || fail "want: a prefix counts"
check_only "q1 q2 q3"
only=q1,q9
(check_only "q1 q2 q3") 2>err && fail "check_only accepted q9"
grep -q -- "--only: unknown stage q9 (stages: q1 q2 q3)" err || fail "check_only: $(cat err)"
# t_interval: mean ± t(0.975, n - 1) s / sqrt(n), by hand: 1 2 3 is mean 2,
# s 1, t(2) 4.303, half-width 4.303 / sqrt(3) = 2.484338; 0 2 is mean 1,
# s sqrt(2), t(1) 12.706, half-width 12.706; one number has no interval.
[ "$(printf '1\n2\n3\n' | t_interval)" = "2.000000 -0.484338 4.484338 3" ] ||
	fail "t_interval 1 2 3: $(printf '1\n2\n3\n' | t_interval)"
[ "$(printf '0\n2\n' | t_interval)" = "1.000000 -11.706000 13.706000 2" ] ||
	fail "t_interval 0 2: $(printf '0\n2\n' | t_interval)"
[ "$(echo -2.5 | t_interval)" = "-2.500000 - - 1" ] || fail "t_interval -2.5: $(echo -2.5 | t_interval)"
[ -z "$(t_interval </dev/null)" ] || fail "t_interval of nothing: $(t_interval </dev/null)"

# judge: the verdict from paired_bs's -b lines (written here: fields METRIC
# A B DIFF LO HI MEAN A_LO A_HI B_LO B_HI BETTER), at each side of its bounds.
bs() { # LO HI BETTER
	printf 'bleu\t30.00\t29.00\t1.00\t%s\t%s\t1.00\t0\t0\t0\t0\t%s\n' "$1" "$2" "$3" >bs.tsv
	printf 'chrf\t50.00\t49.00\t1.00\t0.10\t1.90\t1.00\t0\t0\t0\t0\tA\n' >>bs.tsv
}
verdict() { # KIND MARGIN WHY COPY [BS]
	judge "- t" "$1" "$2" 30.00 29.00 "$3" "$4" "${5:-bs.tsv}" "not kept" | sed 's/^- t: \*\*\([a-z ]*\)\*\*.*/\1/'
}
bs 0.20 1.80 A
[ "$(verdict higher 0 "" "")" = reproduced ] || fail "judge: A above B with [0.20, 1.80]: $(verdict higher 0 "" "")"
bs -2.50 -0.20 B
[ "$(verdict higher 0 "" "")" = contradicted ] || fail "judge: [-2.50, -0.20] is not contradicted"
[ "$(verdict close 1.5 "" "")" = inconclusive ] || fail "judge: within 1.5 with [-2.50, -0.20] is not inconclusive"
bs -1.40 0.30 neither
[ "$(verdict higher 0 "" "")" = inconclusive ] || fail "judge: [-1.40, 0.30] is not inconclusive"
[ "$(verdict close 1.5 "" "")" = reproduced ] || fail "judge: within 1.5 with [-1.40, 0.30] is not reproduced"
bs -3.00 -1.60 B
[ "$(verdict close 1.5 "" "")" = contradicted ] || fail "judge: within 1.5 with [-3.00, -1.60] is not contradicted"
[ "$(verdict higher 0 "BLEU 0" "")" = "not judged" ] || fail "judge: a reason not to judge is ignored"
[ "$(verdict higher 0 "" 31)" = "not judged" ] || fail "judge: both below copying the source (31) is judged"
[ "$(verdict higher 0 "" 29.5)" = contradicted ] || fail "judge: one above copying the source (29.5) is not judged"
[ "$(verdict higher 0 "" "" /dev/null)" = inconclusive ] || fail "judge: no interval is not inconclusive"
judge "- t" higher 0 30.00 29.00 "" "" /dev/null "not kept" | grep -q '^- t: \*\*inconclusive\*\* (not kept: no interval; test BLEU 30.00 against 29.00, difference +1.00)$' ||
	fail "judge without an interval: $(judge "- t" higher 0 30.00 29.00 "" "" /dev/null "not kept")"
echo "repro/common.sh: parse_args, want, check_only, t_interval and judge behave"
