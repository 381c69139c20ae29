#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The layers of core/ (README.md, Layout): from the objects of libfedrun,
# an edge A -> B for each function or datum A uses that B defines; tsort(1)
# must order the files (no two call each other in a loop), and each edge
# must go from a folder to one before it in the layer order. The engine's
# header is private to core/engine/.
set -u
# The library's objects, from the libtool objects make lists
# ($FEDRUN_CORE_OBJECTS: core_libfedrun_la_OBJECTS).
objs=
for lo in ${FEDRUN_CORE_OBJECTS-}; do
	lo="$top_builddir/$lo"
	[ -f "$lo" ] || { echo "FAIL: $lo is not built"; exit 1; }
	o=$(sed -n "s/^pic_object='\(.*\)'$/\1/p" "$lo")
	[ "$o" = none ] && o=$(sed -n "s/^non_pic_object='\(.*\)'$/\1/p" "$lo")
	objs="$objs $(dirname "$lo")/$o"
done
[ -n "$objs" ] || { echo "SKIP: FEDRUN_CORE_OBJECTS is empty (run me from make check)"; exit 77; }
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT
for o in $objs; do
	name=${o#"$top_builddir"/}
	nm -P --defined-only "$o" | awk -v f="$name" '$2 ~ /^[TDBR]$/ { print $1, f }'
done | sort -u >"$work/defs"
for o in $objs; do
	name=${o#"$top_builddir"/}
	nm -P --undefined-only "$o" | awk -v f="$name" '{ print $1, f }'
done | sort -u >"$work/uses"
# "user definer" pairs, self-edges dropped.
join "$work/uses" "$work/defs" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$work/edges"
n=$(wc -l <"$work/edges")
[ "$n" -gt 20 ] || { echo "FAIL: only $n call edges found: the check is not reading the objects"; exit 1; }
if ! tsort "$work/edges" >/dev/null 2>"$work/loop"; then
	echo "FAIL: files of core/ call each other in a loop:"
	cat "$work/loop"
	exit 1
fi
# Folders call only the folders before them in this order (README.md,
# Layout).
order="util io pipeline plugin nn score text privacy secagg run engine"
rank() { i=0; for f in $order; do [ "$f" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo 99; }
while read -r user definer; do
	u=$(echo "$user" | cut -d/ -f2) d=$(echo "$definer" | cut -d/ -f2)
	[ "$u" = "$d" ] && continue
	[ "$(rank "$d")" -lt "$(rank "$u")" ] ||
		{ echo "FAIL: $user calls $definer: core/$u may call only folders before it ($order)"; exit 1; }
done <"$work/edges"
# Nothing outside core/engine/ includes the engine's header.
bad=$(grep -rl '"engine/engine.h"\|"engine\.h"' "$top_srcdir/core" --include='*.[ch]' |
	grep -v "/core/engine/" || true)
[ -z "$bad" ] || { echo "FAIL: outside core/engine/, these include engine.h: $bad"; exit 1; }
echo "core/: $(wc -l <"$work/defs") functions and data in $(echo "$objs" | wc -w) files, $n call edges, no loop"
