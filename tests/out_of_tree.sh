#!/bin/sh
# The SDK: install fedrun into a staging directory, build the example
# aggregator in examples/plugins/ against it with pkg-config alone, and run a
# pipeline with the installed fedrun and the new plugin.
. "$top_srcdir/tests/lib.sh"
command -v cc >/dev/null || { echo "no C compiler"; exit 77; }
stage="$work/stage"
$MAKE -s -C "$top_builddir" install DESTDIR="$stage" >install.log 2>&1 || { tail install.log; die "make install failed"; }
pc="$top_builddir/fedrun.pc"
libdir=$(pkg-config --variable=libdir "$pc")
bindir=$(pkg-config --variable=exec_prefix "$pc")/bin
plugindir=$(pkg-config --variable=plugindir "$pc")
[ -f "$stage$libdir/pkgconfig/fedrun.pc" ] || die "fedrun.pc not installed"
[ -f "$stage$(pkg-config --variable=includedir "$pc")/fedrun/plugin.h" ] || die "headers not installed"
[ -f "$stage$plugindir/fedavg.so" ] || die "plugins not installed in plugindir"
export PKG_CONFIG_PATH="$stage$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
cp "$top_srcdir/examples/plugins/normclip.c" "$top_srcdir/examples/plugins/normclip.json" .
# The two-line build of examples/plugins/README.md.
cc -shared -fPIC $(pkg-config --cflags fedrun) -o normclip.so normclip.c $(pkg-config --libs fedrun) ||
	die "the example plugin does not build against the installed SDK"
export LD_LIBRARY_PATH="$stage$libdir" FEDRUN_PLUGIN_PATH="$stage$plugindir"
FEDRUN="$stage$bindir/fedrun"
"$FEDRUN" plugins > plugins.txt || die "fedrun plugins failed"
grep -q "^fedavg .*aggregator" plugins.txt || die "installed plugins not listed"
run_ok normclip.json
x=$(metric runs/normclip-toy/metrics.jsonl x0 valid)
# Nine clients at 1 and one at 1000: plain averaging goes to 100.9; with
# every update bounded the outlier's pull is small.
awk -v x="$x" 'BEGIN { exit !(x > 1 && x < 10) }' || die "normclip result x = $x"
grep -q '"metric":"normclip.norm"' runs/normclip-toy/metrics.jsonl || die "plugin metric missing"
echo "out-of-tree plugin built with pkg-config and run: x = $x"
