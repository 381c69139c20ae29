/* random: each client sends a random subset of its tensors, a given
 * fraction of them (at least one), drawn from the stream
 * (seed, FEDRUN_RNG_SELECT, round, client): the random baseline of Passban
 * et al. 2022. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>

struct random_sel {
	double fraction;
	uint64_t seed;
};

static const struct fedrun_opt random_spec[] = {
	{"fraction", FEDRUN_OPT_NUMBER, offsetof(struct random_sel, fraction), FEDRUN_OPT_MIN_OPEN,
	 0, 1, 0.5, NULL, NULL},
	FEDRUN_OPT_END_,
};

static int random_create(const struct fedrun_host *host, json_t *config,
			 const struct fedrun_layout *layout, void **state)
{
	struct random_sel *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = fedrun_opts_parse(random_spec, config, "selector", st);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void random_destroy(void *state)
{
	free(state);
}

/* How many of n tensors travel: round(fraction * n), at least 1. */
static uint32_t random_count(double fraction, uint32_t n)
{
	uint32_t m = (uint32_t)floor(fraction * n + 0.5);
	return m < 1 ? 1 : m > n ? n : m;
}

static int random_select(void *state, const struct fedrun_round_info *round, uint32_t client,
			 const float *before, const float *after, uint8_t *mask)
{
	struct random_sel *st = state;
	uint32_t n = round->layout->n, m = random_count(st->fraction, n);
	uint32_t *idx = malloc(n * sizeof *idx);
	if (!idx)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		idx[i] = i;
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, round->seed, FEDRUN_RNG_SELECT, round->round, client);
	fedrun_rng_shuffle_u32(&rng, idx, n);
	memset(mask, 0, n);
	for (uint32_t i = 0; i < m; i++)
		mask[idx[i]] = 1;
	free(idx);
	return 0;
}

static const struct fedrun_selector_ops random_ops = {
	.size = sizeof(struct fedrun_selector_ops),
	.create = random_create,
	.destroy = random_destroy,
	.select = random_select,
};

static const struct fedrun_plugin random_plugin = FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_SELECTOR, "random", "1.0.0", "send a random fraction of the tensors",
	&random_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &random_plugin : NULL;
}
