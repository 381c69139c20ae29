/* SPDX-License-Identifier: Apache-2.0 */
/* median: the coordinate-wise median of the clients' updates (Yin, Chen,
 * Ramchandran, Bartlett 2018, "Byzantine-Robust Distributed Learning:
 * Towards Optimal Statistical Rates", Definition 1). */
#include "config.h"
#include <stdlib.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/plugin.h"
#include "common.h"
#include "coordwise.h"

static const struct fedrun_opt median_opts[] = {FEDRUN_OPT_END_};

static int median_create(const struct fedrun_host *host, json_t *config,
			 const struct fedrun_layout *layout, void **state)
{
	/* No options, but an unknown key is still an error. */
	char unused;
	int rc = fedrun_opts_parse(median_opts, config, AGGR_PATH, &unused);
	if (rc < 0)
		return rc;
	struct aggr_base *b = calloc(1, sizeof *b);
	if (!b)
		return fedrun_error(FEDRUN_ENOMEM, "median: out of memory");
	rc = aggr_base_init(b, "median", host, layout);
	if (rc < 0) {
		free(b);
		return rc;
	}
	*state = b;
	return 0;
}

static void median_destroy(void *state)
{
	if (!state)
		return;
	aggr_base_fini(state);
	free(state);
}

/* Of an even count, the mean of the two middle values. */
static double median_stat(float *v, uint32_t m, const void *arg)
{
	(void)arg;
	float hi = coordwise_select(v, m, m / 2);
	if (m % 2)
		return hi;
	/* v[0..m/2) now holds the m/2 smallest: the lower middle is their
	 * largest. */
	float lo = v[0];
	for (uint32_t k = 1; k < m / 2; k++)
		if (v[k] > lo)
			lo = v[k];
	return 0.5 * ((double)lo + hi);
}

static int median_aggregate(void *state, const struct fedrun_round_info *round,
			    const struct fedrun_update *updates, uint32_t n, float *params)
{
	struct aggr_base *b = state;
	int rc = aggr_begin(b, round, updates, n, params);
	if (rc < 0)
		return rc;
	rc = coordwise_apply(b, updates, n, params, median_stat, NULL);
	if (rc < 0)
		return rc;
	return aggr_end(b, params);
}

static const struct fedrun_aggregator_ops median_ops = {
    .size = sizeof(struct fedrun_aggregator_ops),
    .create = median_create,
    .destroy = median_destroy,
    .aggregate = median_aggregate,
    .state = NULL,
};

static const struct fedrun_plugin median_plugin = {
    .abi_major = FEDRUN_ABI_MAJOR,
    .abi_minor = FEDRUN_ABI_MINOR,
    .size = sizeof(struct fedrun_plugin),
    .kind = FEDRUN_KIND_AGGREGATOR,
    .name = "median",
    .version = "1.0.0",
    .summary = "coordinate-wise median of the updates (Yin et al. 2018)",
    .ops = &median_ops,
};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &median_plugin : NULL;
}
