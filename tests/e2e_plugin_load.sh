#!/bin/sh
# Loading plugins (core/plugin/registry.c): a plugin file is loaded once per
# process, however many registries search the plugin path (fedrun's own,
# the backends' and the transport's each search it) and however many
# spellings of its directory the path holds: the dynamic linker's log
# (LD_DEBUG=files) shows one dlopen of fedavg.so, where it showed one per
# registry and spelling.
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
exit 0
