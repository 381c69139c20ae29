#!/bin/sh
# The SDK, against an installed fedrun (run by `make installcheck`): build
# the example aggregators of examples/plugins/ with pkg-config alone, run
# normclip's pipeline with the installed fedrun and the new plugin, and
# fedrun check-aggregator on both. With a staged
# install (DESTDIR), paths are taken under DESTDIR.
. "$top_srcdir/tests/lib.sh"
command -v cc >/dev/null || { echo "no C compiler"; exit 77; }
stage="${DESTDIR:-}"
[ -f "$FEDRUN_PC" ] || die "fedrun.pc is not installed at $FEDRUN_PC"
export PKG_CONFIG_PATH="$(dirname "$FEDRUN_PC")"
[ -n "$stage" ] && export PKG_CONFIG_SYSROOT_DIR="$stage"
libdir=$(pkg-config --variable=libdir fedrun)
bindir=$(pkg-config --variable=exec_prefix fedrun)/bin
plugindir=$(pkg-config --variable=plugindir fedrun)
includedir=$(pkg-config --variable=includedir fedrun)
[ -f "$stage$includedir/fedrun/plugin.h" ] || die "headers not installed in $stage$includedir/fedrun"
[ -f "$stage$plugindir/fedavg.so" ] || die "plugins not installed in $stage$plugindir"
cp "$top_srcdir/examples/plugins/normclip.c" "$top_srcdir/examples/plugins/normclip.json" \
	"$top_srcdir/examples/plugins/streamavg.c" .
# The two-line build of examples/plugins/README.md.
for p in normclip streamavg; do
	cc -shared -fPIC $(pkg-config --cflags fedrun) -o $p.so $p.c $(pkg-config --libs fedrun) ||
		die "the example plugin $p.c does not build against the installed SDK"
done
if [ -n "$stage" ]; then
	export LD_LIBRARY_PATH="$stage$libdir" FEDRUN_PLUGIN_PATH="$stage$plugindir"
else
	unset FEDRUN_PLUGIN_PATH # the compiled-in plugin directory must do
fi
FEDRUN="$stage$bindir/fedrun"
"$FEDRUN" plugins > plugins.txt || die "fedrun plugins failed"
grep -q "^fedavg .*aggregator" plugins.txt || { cat plugins.txt; die "installed plugins not listed"; }
run_ok --allow-plugin-paths normclip.json
x=$(metric runs/normclip-toy/metrics.jsonl x0 valid)
# Nine clients at 1 and one at 1000: plain averaging goes to 100.9; with
# every update bounded the outlier's pull is small.
awk -v x="$x" 'BEGIN { exit !(x > 1 && x < 10) }' || die "normclip result x = $x"
grep -q '"metric":"normclip.norm"' runs/normclip-toy/metrics.jsonl || die "plugin metric missing"
# Both examples keep the conventions the installed fedrun checks.
for p in normclip streamavg; do
	"$FEDRUN" check-aggregator --allow-plugin-paths ./$p.so >check.txt 2>&1 ||
		{ cat check.txt; die "fedrun check-aggregator fails the example $p"; }
done
echo "out-of-tree plugin built with pkg-config and run by the installed fedrun: x = $x"
