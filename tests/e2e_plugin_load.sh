#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Loading plugins (core/plugin/registry.c): a plugin file is loaded once per
# process, however many registries search the plugin path (fedrun's own,
# the backends' and the transport's each search it) and however many
# spellings of its directory the path holds: the dynamic linker's log
# (LD_DEBUG=files) shows one dlopen of fedavg.so, where it showed one per
# registry and spelling. A plugin directory that everyone may write to
# (anyone can put code there) is used with a warning naming it, once per
# directory; one of mode 0755 gives none. Within a directory the file
# named after the plugin is searched first and files named for another
# kind last (fedrun-plugin(7), SEARCH PATH): a search for an aggregator
# loads neither backend_*.so nor files that sort before its own.
. "$top_srcdir/tests/lib.sh"
P=$FEDRUN_PLUGIN_PATH
# opens LOG: how many times the dynamic linker's log says fedavg.so was
# dlopened
opens() {
	grep -c 'opening file=.*/fedavg\.so' "$1"
}

# On the "tagged" backend (a test plugin in tests/.libs) the backends'
# registry searches the whole path after fedrun's own found the model
# and the aggregator there.
FEDRUN_PLUGIN_PATH="$P:$top_builddir/tests/.libs" LD_DEBUG=files \
	"$FEDRUN" validate -b tagged "$top_srcdir/examples/quickstart.json" >out 2>log ||
	{ grep -v '^ *[0-9]*:' log; die "validate on the tagged backend failed"; }
grep -q ": valid" out || die "validate on the tagged backend: $(cat out)"
n=$(opens log)
[ "$n" -eq 1 ] || die "validate on the tagged backend dlopened fedavg.so $n times, not once"

# The plugin directory twice in the path, spelled two ways: its plugins
# are listed twice (the second time shadowed), but loaded once.
FEDRUN_PLUGIN_PATH="$P:$P/" LD_DEBUG=files "$FEDRUN" plugins >out 2>log ||
	{ grep -v '^ *[0-9]*:' log; die "fedrun plugins failed"; }
n=$(opens log)
[ "$n" -eq 1 ] || die "fedrun plugins with the directory twice dlopened fedavg.so $n times, not once"
grep -q "^fedavg .*(shadowed)" out || die "the second fedavg is not marked shadowed: $(grep fedavg out)"

# A world-writable directory (0777, no sticky bit) that holds a copy of
# fedavg.so, first in the path (twice), then as the directory of a file a
# pipeline names: one warning line naming it and the danger. The same copy
# in a 0755 directory: none.
mkdir ww safe
cp "$P/fedavg.so" ww/
cp "$P/fedavg.so" safe/
chmod 0777 ww
chmod 0755 safe
toy=$top_srcdir/examples/toy-fedavg.json
warning="plugin directory '$work/ww' is writable by everyone (mode 0777): anyone can place code there"
# (validate on the tagged backend: two registries search the path)
tagged=$top_builddir/tests/.libs
for path in "$work/ww:$P:$tagged" "$work/ww:$work/ww/:$P:$tagged"; do
	FEDRUN_PLUGIN_PATH="$path" "$FEDRUN" validate -b tagged "$top_srcdir/examples/quickstart.json" \
		>out 2>err || { cat err; die "validate with $path failed"; }
	n=$(grep -c "warning: $warning" err)
	[ "$n" -eq 1 ] || { cat err; die "FEDRUN_PLUGIN_PATH=$path: $n warnings about ww, not 1"; }
done
FEDRUN_PLUGIN_PATH="$work/safe:$P" "$FEDRUN" validate "$toy" >out 2>err ||
	{ cat err; die "validate with the 0755 directory failed"; }
! grep -q "writable by everyone" err || { cat err; die "a warning about a 0755 directory"; }
sed 's|"plugin": "fedavg"|"plugin": "fedavg", "path": "'"$work"'/ww/fedavg.so"|' "$toy" >named.json
grep -q '"path"' named.json || die "named.json names no plugin file"
"$FEDRUN" validate --allow-plugin-paths named.json >out 2>err ||
	{ cat err; die "validate of a pipeline naming ww/fedavg.so failed"; }
n=$(grep -c "warning: $warning" err)
[ "$n" -eq 1 ] || { cat err; die "a named file in ww: $n warnings, not 1"; }
# The search order within a directory. so/ holds fedavg.so twice more:
# as aaa.so (sorts first) and as backend_zz.so (named for another kind);
# fedavg is taken from fedavg.so, and the validation of a FedAvg pipeline
# dlopens neither copy. `fedrun plugins` marks the other two shadowed.
# fedprox (in fedavg.so, no fedprox.so) is found there, before
# backend_zz.so. With fedavg.so gone, aaa.so's is taken, then (aaa.so gone
# too) backend_zz.so's: files named for another kind are still searched.
mkdir so
for f in aaa fedavg backend_zz; do cp "$P/fedavg.so" "so/$f.so"; done
for f in "$P"/*.so; do
	case $(basename "$f") in fedavg.so) ;; *) ln -s "$f" so/ ;; esac
done
FEDRUN_PLUGIN_PATH=$work/so LD_DEBUG=files "$FEDRUN" validate "$toy" >out 2>log ||
	{ grep -v '^ *[0-9]*:' log; die "validate from so/ failed"; }
grep -q 'opening file=.*/so/fedavg\.so' log || die "so/fedavg.so was not loaded"
! grep -q 'opening file=.*/so/\(aaa\|backend_zz\)\.so' log ||
	die "the search for fedavg loaded aaa.so or backend_zz.so: $(grep -o 'opening file=[^ ]*' log)"
FEDRUN_PLUGIN_PATH=$work/so "$FEDRUN" plugins >out || die "fedrun plugins from so/ failed"
grep -q "^fedavg .*/so/fedavg\.so\$" out || die "so/fedavg.so's fedavg is shadowed: $(grep '^fedavg' out)"
[ "$(grep -c '^fedavg .*(shadowed)' out)" -eq 2 ] || die "not two shadowed fedavg: $(grep '^fedavg' out)"
sed 's|"plugin": "fedavg"|"plugin": "fedprox", "mu": 0.01|' "$toy" >prox.json
FEDRUN_PLUGIN_PATH=$work/so LD_DEBUG=files "$FEDRUN" validate prox.json >out 2>log ||
	{ grep -v '^ *[0-9]*:' log; die "validate of fedprox from so/ failed"; }
! grep -q 'opening file=.*/so/backend_zz\.so' log || die "the search for fedprox loaded backend_zz.so"
for gone in fedavg aaa; do
	rm "so/$gone.so"
	FEDRUN_PLUGIN_PATH=$work/so LD_DEBUG=files "$FEDRUN" validate "$toy" >out 2>log ||
		{ grep -v '^ *[0-9]*:' log; die "validate without so/$gone.so failed"; }
	want=aaa
	[ $gone = aaa ] && want=backend_zz
	grep -q "opening file=.*/so/$want\\.so" log || die "without so/$gone.so, so/$want.so was not loaded"
done
exit 0
