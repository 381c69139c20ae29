/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin: refused for its ABI version. */
#include "common.h"

static const struct fedrun_aggregator_ops ops = {.size = sizeof ops, .create = t_create, .destroy = t_destroy, .aggregate = t_aggregate};
static const struct fedrun_plugin desc = {.abi_major = 2, .abi_minor = 0, .size = sizeof desc,
	.kind = FEDRUN_KIND_AGGREGATOR, .name = "bad_major", .version = "0", .summary = "test", .ops = &ops};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
