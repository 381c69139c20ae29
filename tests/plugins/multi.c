/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin file holding two valid plugins (enumeration by index), and,
 * as "half_bad", a valid plugin followed by a broken one. */
#include "common.h"

static const struct fedrun_aggregator_ops ops = {.size = sizeof ops, .create = t_create, .destroy = t_destroy, .aggregate = t_aggregate};
static const struct fedrun_aggregator_ops broken = {.size = sizeof broken, .create = t_create, .aggregate = t_aggregate};
static const struct fedrun_plugin first =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, PREFIX "one", "1.2.3", "first of two", &ops);
static const struct fedrun_plugin second =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, PREFIX "two", "1.2.3", "second of two", BROKEN ? &broken : &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &first : index == 1 ? &second : NULL;
}
