/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin: a kind this host does not know. */
#include "common.h"

static const struct fedrun_aggregator_ops ops = {.size = sizeof ops, .create = t_create, .destroy = t_destroy, .aggregate = t_aggregate};
static const struct fedrun_plugin desc = FEDRUN_PLUGIN_INIT(42, "bad_kind", "0", "test", &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
