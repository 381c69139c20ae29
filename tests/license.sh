#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The licence (issue 36): every source file of the tree says
# "SPDX-License-Identifier: Apache-2.0" in its first 3 lines (a generated
# table may add " AND <licence>"); LICENSE is the Apache License 2.0 as
# Debian ships it, byte for byte, where /usr/share/common-licenses/Apache-2.0
# exists; NOTICE is there; debian/copyright, where the tree has it (a git
# checkout, not the tarball), names no "unknown" licence.
#
# Source files: .c .h .cc .cu .cuh .map .sh .awk .py .inc .am .ac .in and
# manual pages .1 .5 .7, plus tools/fedrun-plot, .ci/run and debian/rules.
# Not source, so not checked: test fixtures and data (tests/data,
# tests/fuzz/corpus*, tests/fuzz/regress, and json, tsv, csv, txt, po, ...),
# documentation (.md), and what autotools or a build make (Makefile.in,
# config.h.in, config.h, fedrun_dirs.h, m4/, build-aux/, build trees).
set -u
export LC_ALL=C
top=${top_srcdir:-${srcdir:-.}}
fail=0
n=0

spdx='SPDX-License-Identifier: Apache-2\.0( AND [A-Za-z0-9.+-]+)*( \*/)?$'
check() { # FILE: fails the test when its first 3 lines lack the SPDX line
	n=$((n + 1))
	head -n 3 "$1" | grep -Eq "$spdx" ||
		{ echo "FAIL: $1 has no 'SPDX-License-Identifier: Apache-2.0' in its first 3 lines"; fail=1; }
}

# Build trees inside the source tree (distcheck's _build/sub, a build/ of
# one's own) are recognised by their config.status and skipped.
builds=$(find "$top" -mindepth 2 -name config.status -type f 2>/dev/null | sed 's|/config\.status$||')
files=$(find "$top" \( -name .git -o -name autom4te.cache -o -name build-aux -o -name m4 \
	-o -name .libs -o -name .deps -o -path "$top/debian" -o -path "$top/tests/data" \
	-o -path "$top/tests/fuzz/corpus*" -o -path "$top/tests/fuzz/regress" \) -prune -o \
	-type f \( -name '*.[ch]' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' -o -name '*.map' \
	-o -name '*.sh' -o -name '*.awk' -o -name '*.py' -o -name '*.inc' -o -name '*.am' \
	-o -name '*.ac' -o -name '*.in' -o -name '*.[157]' \) \
	! -name Makefile.in ! -name config.h.in ! -name config.h ! -name fedrun_dirs.h -print)
# File names have no white space (checked here too, so that a new one does
# not slip through the loop below unchecked).
if printf '%s\n' "$files" | grep -q '[[:space:]]'; then
	echo "FAIL: a source file name has white space:"
	printf '%s\n' "$files" | grep '[[:space:]]'
	fail=1
fi
for f in $files "$top/tools/fedrun-plot" "$top/.ci/run" "$top/debian/rules"; do
	[ -f "$f" ] || continue
	skip=0
	for b in $builds; do
		case $f in "$b"/*) skip=1 ;; esac
	done
	[ $skip = 1 ] || check "$f"
done
[ $n -gt 0 ] || { echo "FAIL: no source files found under $top"; fail=1; }

[ -f "$top/LICENSE" ] || { echo "FAIL: no LICENSE in $top"; fail=1; }
[ -f "$top/NOTICE" ] || { echo "FAIL: no NOTICE in $top"; fail=1; }
debian_license=/usr/share/common-licenses/Apache-2.0
compared="not compared: $debian_license is not installed"
if [ -f "$debian_license" ] && [ -f "$top/LICENSE" ]; then
	cmp -s "$top/LICENSE" "$debian_license" && compared="identical to $debian_license" ||
		{ echo "FAIL: LICENSE differs from $debian_license"; fail=1; }
fi

if [ -f "$top/debian/copyright" ]; then
	bad=$(grep -in 'unknown' "$top/debian/copyright")
	[ -z "$bad" ] || { printf 'FAIL: debian/copyright says "unknown":\n%s\n' "$bad"; fail=1; }
	grep -q '^License: Apache-2\.0$' "$top/debian/copyright" ||
		{ echo "FAIL: debian/copyright has no 'License: Apache-2.0' paragraph"; fail=1; }
fi

[ $fail -eq 0 ] || exit 1
echo "$n source files have the SPDX line; LICENSE is $compared"
