#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The SDK, against an installed fedrun (run by `make installcheck`): build
# the example aggregators of the installed examples (FEDRUN_DOCDIR/examples/
# plugins) with pkg-config alone, run normclip's pipeline with the installed
# fedrun and the new plugin, and fedrun check-aggregator on both; the
# installed examples are every examples/*.json, and the quickstart's and a
# toy pipeline validate and run where they are installed; the aggregator
# `fedrun new` writes builds with its Makefile's pkg-config line and passes
# check-aggregator. With a staged install (DESTDIR), paths are taken under
# DESTDIR.
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
ex="$stage${FEDRUN_DOCDIR:?FEDRUN_DOCDIR: the installed documentation directory}/examples"
for f in "$top_srcdir"/examples/*.json; do
	[ -f "$ex/${f##*/}" ] || die "examples/${f##*/} is not installed in $ex (examples/Makefile.inc)"
done
for f in README.txt data/toy-english/train.txt plugins/README.md plugins/normclip.c plugins/streamavg.c \
	plugins/fednova.c python/fednova.py python/fednova.json; do
	[ -f "$ex/$f" ] || die "examples/$f is not installed in $ex"
done
cp "$ex/plugins/normclip.c" "$ex/plugins/normclip.json" "$ex/plugins/streamavg.c" .
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

# The installed examples where they are: the quickstart finds its corpus,
# a toy pipeline runs, and its run directory is in the working directory,
# nothing written beside the examples (read-only in a package).
before=$(find "$ex" | sort | cksum)
"$FEDRUN" validate "$ex/quickstart.json" >out 2>err || { cat err; die "the installed quickstart does not validate"; }
"$FEDRUN" -q --set rounds=2 "$ex/toy-fedavg.json" >out 2>err ||
	{ cat err; die "the installed toy-fedavg.json does not run"; }
[ -f runs/toy-fedavg/final.safetensors ] || die "the installed toy-fedavg.json wrote no model in runs/"
[ "$(find "$ex" | sort | cksum)" = "$before" ] || die "running an installed example wrote beside it"

# fedrun new's aggregator, built by its own Makefile with pkg-config.
"$FEDRUN" new aggregator myagg >out 2>err || { cat err; die "the installed fedrun new failed"; }
(cd myagg && ${MAKE:-make} PKG_CONFIG=pkg-config) >build.log 2>&1 ||
	{ cat build.log; die "fedrun new's aggregator does not build against the installed SDK"; }
(cd myagg && "$FEDRUN" -q --allow-plugin-paths myagg-test.json) >out 2>err ||
	{ cat err; die "fedrun new's test pipeline failed with the installed fedrun"; }
"$FEDRUN" check-aggregator --allow-plugin-paths ./myagg/myagg.so >check.txt 2>&1 ||
	{ cat check.txt; die "fedrun check-aggregator fails fedrun new's aggregator"; }
echo "installed examples run in place; fedrun new's aggregator builds with pkg-config"
