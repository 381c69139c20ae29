/* SPDX-License-Identifier: Apache-2.0 */
/* random: each client sends a random subset of its tensors, drawn from the
 * stream (seed, FEDRUN_RNG_SELECT, round, client): either a given fraction of
 * them (at least one), or per group as many as the median rule of dp_greater
 * sends, the random baseline of Passban et al. 2022 (section 5.4). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>
#include "common.h"

enum { RANDOM_COUNT_FRACTION, RANDOM_COUNT_MEDIAN };

struct random_cfg {
	double fraction;
	int count;
	json_t *groups; /* read again by selgroups_init */
};

struct random_sel {
	const struct fedrun_host *host;
	double fraction;
	int count;
	struct selgroups groups; /* count "median" */
};

static const struct fedrun_opt random_spec[] = {
    {"fraction", FEDRUN_OPT_NUMBER, offsetof(struct random_cfg, fraction), FEDRUN_OPT_MIN_OPEN, 0,
     1, 0.5, NULL, NULL},
    {"count", FEDRUN_OPT_CHOICE, offsetof(struct random_cfg, count), 0, 0, 0, 0, "fraction",
     "fraction|median"},
    {"groups", FEDRUN_OPT_ARRAY, offsetof(struct random_cfg, groups), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    FEDRUN_OPT_END_,
};

static void random_destroy(void *state)
{
	struct random_sel *st = state;
	if (!st)
		return;
	selgroups_fini(&st->groups);
	free(st);
}

static int random_create(const struct fedrun_host *host, json_t *config,
			 const struct fedrun_layout *layout, void **state)
{
	struct random_cfg cfg = {0};
	int rc = fedrun_opts_parse(random_spec, config, "selector", &cfg);
	if (rc < 0)
		return rc;
	struct random_sel *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	st->fraction = cfg.fraction;
	st->count = cfg.count;
	/* Groups are checked in either mode, so that a typo is never silently
	 * ignored; their default is written only where they are used. */
	rc = selgroups_init(&st->groups, config, "selector", "groups",
			    cfg.count == RANDOM_COUNT_MEDIAN, layout);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

/* How many of n tensors travel: round(fraction * n), at least 1. */
static uint32_t random_count(double fraction, uint32_t n)
{
	uint32_t m = (uint32_t)floor(fraction * n + 0.5);
	return m < 1 ? 1 : m > n ? n : m;
}

/* As many of a group's m tensors as dp_greater sends with the median
 * threshold when the norms are distinct: the tensors at or above the median
 * (the mean of the two middle norms for even m), ⌈m/2⌉. */
static uint32_t random_median_count(uint32_t m)
{
	return (m + 1) / 2;
}

static int random_select(void *state, const struct fedrun_round_info *round, uint32_t client,
			 const float *before, const float *after, uint8_t *mask)
{
	struct random_sel *st = state;
	uint32_t n = round->layout->n;
	if (st->count == RANDOM_COUNT_MEDIAN && st->groups.start[st->groups.n] != n)
		return fedrun_error(FEDRUN_EINVAL,
				    "random: the round's layout (%u tensors) is not the "
				    "one the selector was created with (%u tensors)",
				    n, st->groups.start[st->groups.n]);
	uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
	if (!idx)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, round->seed, FEDRUN_RNG_SELECT, round->round, client);
	memset(mask, 0, n);
	if (st->count == RANDOM_COUNT_FRACTION) {
		uint32_t m = random_count(st->fraction, n);
		for (uint32_t i = 0; i < n; i++)
			idx[i] = i;
		fedrun_rng_shuffle_u32(&rng, idx, n);
		for (uint32_t i = 0; i < m; i++)
			mask[idx[i]] = 1;
	} else {
		/* One stream, consumed group after group in group order. */
		const struct selgroups *g = &st->groups;
		for (uint32_t k = 0; k < g->n; k++) {
			uint32_t m = g->start[k + 1] - g->start[k];
			memcpy(idx, g->member + g->start[k], m * sizeof *idx);
			fedrun_rng_shuffle_u32(&rng, idx, m);
			for (uint32_t i = 0; i < random_median_count(m); i++)
				mask[idx[i]] = 1;
		}
	}
	free(idx);
	return selgroups_report(st->host, round->layout, client, mask);
}

static const struct fedrun_selector_ops random_ops = {
    .size = sizeof(struct fedrun_selector_ops),
    .create = random_create,
    .destroy = random_destroy,
    .select = random_select,
};

static const struct fedrun_plugin random_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_SELECTOR, "random", "1.1.0",
    "send a random fraction of the tensors, or as many per group as dp_greater", &random_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &random_plugin : NULL;
}
