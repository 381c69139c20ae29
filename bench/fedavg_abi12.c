/* SPDX-License-Identifier: Apache-2.0 */
/* bench/aggregate's peer: fedavg as a plugin built for ABI 1.2 would be,
 * its ops table ending before the streaming ops, so the host holds a whole
 * round's updates for aggregate(). The same code as plugins/fedavg.so: its
 * source is included here with its entry point renamed. */
#define fedrun_plugin_entry fedavg_entry
#include "../plugins/aggregators/fedavg.c"
#undef fedrun_plugin_entry

static const struct fedrun_aggregator_ops abi12_ops = {
	.size = offsetof(struct fedrun_aggregator_ops, begin),
	.create = fedavg_create,
	.destroy = fedavg_destroy,
	.aggregate = fedavg_aggregate,
};

static const struct fedrun_plugin abi12_plugin = {
	.abi_major = FEDRUN_ABI_MAJOR, .abi_minor = 2, .size = sizeof(struct fedrun_plugin),
	.kind = FEDRUN_KIND_AGGREGATOR, .name = "fedavg_abi12", .version = "1.0.0",
	.summary = "fedavg without the streaming ops (an ABI 1.2 table), for bench/aggregate",
	.ops = &abi12_ops};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &abi12_plugin : NULL;
}
