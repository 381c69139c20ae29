#!/bin/sh
# Every example pipeline validates.
. "$top_srcdir/tests/lib.sh"
n=0
for f in "$top_srcdir"/examples/*.json; do
	"$FEDRUN" validate "$f" >/dev/null 2>err || { cat err; die "$f does not validate"; }
	n=$((n + 1))
done
[ $n -gt 0 ] || die "no examples found"
echo "$n example pipelines validate"
