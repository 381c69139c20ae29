/* Test plugin: an ops table declared shorter than ABI 1.0's. */
#include "common.h"

static const struct fedrun_aggregator_ops ops = {8, t_create, t_destroy, t_aggregate, NULL};
static const struct fedrun_plugin desc =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "short_ops", "0", "test", &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
