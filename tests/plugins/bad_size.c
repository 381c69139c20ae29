/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin: declares a descriptor smaller than ABI 1.0's. */
#include "common.h"

static const struct fedrun_aggregator_ops ops = {.size = sizeof ops, .create = t_create, .destroy = t_destroy, .aggregate = t_aggregate};
static const struct fedrun_plugin desc = {.abi_major = FEDRUN_ABI_MAJOR, .abi_minor = 0, .size = 16,
	.kind = FEDRUN_KIND_AGGREGATOR, .name = "bad_size", .version = "0", .summary = "test", .ops = &ops};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
