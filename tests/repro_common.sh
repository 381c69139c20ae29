#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# repro/common.sh's command line of every repro/*/run.sh: parse_args (values,
# flags, the script's extra_arg, a missing value, an unknown argument, the
# --help text), want and check_only.
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
echo "repro/common.sh: parse_args, want and check_only behave"
