#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make check: each fuzz target, built without libFuzzer, replays its seeds
# and every input that once failed (under AddressSanitizer in CI's
# sanitizer stage), so a fixed defect stays fixed without clang.
. "$top_srcdir/tests/lib.sh"
for t in safetensors pipeline text bleu translate; do
	dirs="$top_srcdir/tests/fuzz/corpus/$t"
	[ -d "$top_srcdir/tests/fuzz/regress/$t" ] && dirs="$dirs $top_srcdir/tests/fuzz/regress/$t"
	# shellcheck disable=SC2086
	"$top_builddir/tests/fuzz/regress_$t" $dirs >out 2>err || { cat err; die "regress_$t failed"; }
	grep -q ": [1-9][0-9]* inputs" out || die "regress_$t ran no input"
done
echo "fuzz regressions: every seed and saved input replayed"
