/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin: an aggregator without its required aggregate op. */
#include "common.h"

static const struct fedrun_aggregator_ops ops = {.size = sizeof ops, .create = t_create, .destroy = t_destroy};
static const struct fedrun_plugin desc =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "bad_ops", "0", "test", &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
