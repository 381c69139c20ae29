/* SPDX-License-Identifier: Apache-2.0 */
/* trimmed_mean: the coordinate-wise β-trimmed mean of the clients' updates
 * (Yin, Chen, Ramchandran, Bartlett 2018, "Byzantine-Robust Distributed
 * Learning: Towards Optimal Statistical Rates", Definition 2). */
#include "config.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/plugin.h"
#include "common.h"
#include "coordwise.h"

struct trimmed_mean_cfg {
	double trim;
};

static const struct fedrun_opt trimmed_mean_opts[] = {
    {"trim", FEDRUN_OPT_NUMBER, offsetof(struct trimmed_mean_cfg, trim), FEDRUN_OPT_MAX_OPEN, 0,
     0.5, 0.1, NULL, NULL},
    FEDRUN_OPT_END_};

struct trimmed_mean {
	struct aggr_base base;
	struct trimmed_mean_cfg cfg;
};

static int trimmed_mean_create(const struct fedrun_host *host, json_t *config,
			       const struct fedrun_layout *layout, void **state)
{
	struct trimmed_mean *tm = calloc(1, sizeof *tm);
	if (!tm)
		return fedrun_error(FEDRUN_ENOMEM, "trimmed_mean: out of memory");
	int rc = fedrun_opts_parse(trimmed_mean_opts, config, AGGR_PATH, &tm->cfg);
	if (rc == 0)
		rc = aggr_base_init(&tm->base, "trimmed_mean", host, layout);
	if (rc < 0) {
		free(tm);
		return rc;
	}
	*state = tm;
	return 0;
}

static void trimmed_mean_destroy(void *state)
{
	struct trimmed_mean *tm = state;
	if (!tm)
		return;
	aggr_base_fini(&tm->base);
	free(tm);
}

/* Drops the b = ⌊β m⌋ smallest and b largest of the m values and averages
 * the m − 2b >= 1 left (β < 1/2). */
static double trimmed_mean_stat(float *v, uint32_t m, const void *arg)
{
	const struct trimmed_mean_cfg *c = arg;
	/* The 1e-9 keeps 0.29 * 100 (28.999...) at 29. */
	uint32_t b = (uint32_t)floor(c->trim * m + 1e-9);
	if (2 * b >= m) /* β within 1e-9 of 1/2 */
		b = (m - 1) / 2;
	uint32_t keep = m - 2 * b;
	if (b > 0) {
		/* v[0..b) the b smallest; then, in the rest, v[b..b+keep) the
		 * keep smallest: ranks b to m − b − 1. */
		coordwise_select(v, m, b);
		coordwise_select(v + b, m - b, keep - 1);
	}
	double s = 0;
	for (uint32_t k = b; k < b + keep; k++)
		s += v[k];
	return s / keep;
}

static int trimmed_mean_aggregate(void *state, const struct fedrun_round_info *round,
				  const struct fedrun_update *updates, uint32_t n, float *params)
{
	struct trimmed_mean *tm = state;
	int rc = aggr_begin(&tm->base, round, updates, n, params);
	if (rc < 0)
		return rc;
	rc = coordwise_apply(&tm->base, updates, n, params, trimmed_mean_stat, &tm->cfg);
	if (rc < 0)
		return rc;
	return aggr_end(&tm->base, params);
}

static const struct fedrun_aggregator_ops trimmed_mean_ops = {
    .size = sizeof(struct fedrun_aggregator_ops),
    .create = trimmed_mean_create,
    .destroy = trimmed_mean_destroy,
    .aggregate = trimmed_mean_aggregate,
    .state = NULL,
};

static const struct fedrun_plugin trimmed_mean_plugin = {
    .abi_major = FEDRUN_ABI_MAJOR,
    .abi_minor = FEDRUN_ABI_MINOR,
    .size = sizeof(struct fedrun_plugin),
    .kind = FEDRUN_KIND_AGGREGATOR,
    .name = "trimmed_mean",
    .version = "1.0.0",
    .summary = "coordinate-wise trimmed mean of the updates (Yin et al. 2018)",
    .ops = &trimmed_mean_ops,
};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &trimmed_mean_plugin : NULL;
}
