/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin: an ops table declared shorter than ABI 1.0's. */
#include "common.h"

static const struct fedrun_aggregator_ops ops = {.size = 8, .create = t_create, .destroy = t_destroy, .aggregate = t_aggregate};
static const struct fedrun_plugin desc =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "short_ops", "0", "test", &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
