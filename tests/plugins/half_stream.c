/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin: an aggregator with accumulate but without begin and finish
 * (ABI 1.3 streaming ops come all three or none). */
#include "common.h"

static int t_accumulate(void *s, const struct fedrun_round_info *r, const struct fedrun_update *u,
			uint32_t n)
{
	return 0;
}

static const struct fedrun_aggregator_ops ops = {.size = sizeof ops, .create = t_create,
						 .destroy = t_destroy, .aggregate = t_aggregate,
						 .accumulate = t_accumulate};
static const struct fedrun_plugin desc =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "half_stream", "0", "test", &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
