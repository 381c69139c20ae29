#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every symbol libfedrun exports (fedrun_*, core/Makefile.inc's
# -export-symbols-regex) is in debian/libfedrun0.symbols, and every symbol
# there is exported: dpkg-gensymbols otherwise adds the new ones with the
# Debian revision as their version, which lintian refuses
# (symbols-file-contains-current-version-with-debian-revision), and that is
# only seen once the packages are built. Skipped (77) in a tree without
# debian/ or without a shared libfedrun.
set -u
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
sym="$srcdir/debian/libfedrun0.symbols"
lib=$(ls "$builddir"/core/.libs/libfedrun.so.*.*.* 2>/dev/null | head -n 1)
[ -f "$sym" ] || { echo "no $sym (not a git checkout)"; exit 77; }
[ -n "$lib" ] || { echo "no shared libfedrun under $builddir/core/.libs"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "no nm"; exit 77; }
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ && $3 ~ /^fedrun_/ { print $3 }' |
	LC_ALL=C sort -u >"$work/exported"
awk '/^ fedrun_/ { sub(/@.*/, "", $1); print $1 }' "$sym" | LC_ALL=C sort -u >"$work/listed"
[ -s "$work/exported" ] || { echo "FAIL: no fedrun_ symbol exported by $lib"; exit 1; }
fail=0
missing=$(LC_ALL=C comm -23 "$work/exported" "$work/listed")
extra=$(LC_ALL=C comm -13 "$work/exported" "$work/listed")
[ -z "$missing" ] || { printf 'FAIL: exported but not in %s:\n%s\n' "$sym" "$missing"; fail=1; }
[ -z "$extra" ] || { printf 'FAIL: in %s but not exported:\n%s\n' "$sym" "$extra"; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "$(wc -l <"$work/exported") exported symbols, all in debian/libfedrun0.symbols"
