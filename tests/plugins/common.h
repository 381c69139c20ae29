/* SPDX-License-Identifier: Apache-2.0 */
/* Test-only plugins that break one loader rule each. A valid aggregator ops
 * table to start from. */
#ifndef TEST_PLUGINS_COMMON_H
#define TEST_PLUGINS_COMMON_H

#include <fedrun/fedrun.h>

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);

static inline int t_create(const struct fedrun_host *h, json_t *c, const struct fedrun_layout *l, void **s)
{
	*s = NULL;
	return 0;
}

static inline void t_destroy(void *s)
{
}

static inline int t_aggregate(void *s, const struct fedrun_round_info *r, const struct fedrun_update *u,
		       uint32_t n, float *p)
{
	return 0;
}

#endif
