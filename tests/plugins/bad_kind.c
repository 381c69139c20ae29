/* Test plugin: a kind this host does not know. */
#include "common.h"

static const struct fedrun_aggregator_ops ops = {sizeof ops, t_create, t_destroy, t_aggregate, NULL};
static const struct fedrun_plugin desc = FEDRUN_PLUGIN_INIT(42, "bad_kind", "0", "test", &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
