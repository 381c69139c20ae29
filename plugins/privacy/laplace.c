/* laplace: adds Lap(0, σ/ε) to each entry of an update, as FedNMT (Wang et
 * al. 2021, section 3.3) does: σ is the sensitivity, ε the privacy budget.
 * Clipping to the sensitivity and accounting come with the differential
 * privacy work. */
#include <stddef.h>
#include <stdlib.h>
#include <fedrun/fedrun.h>
#include "noise.h"

struct laplace {
	double sigma, epsilon;
};

static const struct fedrun_opt laplace_spec[] = {
	{"sigma", FEDRUN_OPT_NUMBER, offsetof(struct laplace, sigma), FEDRUN_OPT_REQUIRED, 0, 1e6,
	 0, NULL, NULL},
	{"epsilon", FEDRUN_OPT_NUMBER, offsetof(struct laplace, epsilon),
	 FEDRUN_OPT_REQUIRED | FEDRUN_OPT_MIN_OPEN, 0, 1e6, 0, NULL, NULL},
	FEDRUN_OPT_END_,
};

static int laplace_create(const struct fedrun_host *host, json_t *config,
			  const struct fedrun_layout *layout, void **state)
{
	struct laplace *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = fedrun_opts_parse(laplace_spec, config, "privacy", st);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void laplace_destroy(void *state)
{
	free(state);
}

static int laplace_apply(void *state, const struct fedrun_round_info *round, uint32_t client,
			 const uint8_t *mask, float *delta)
{
	struct laplace *st = state;
	noise_add(round, client, mask, delta, fedrun_rng_laplace, st->sigma / st->epsilon);
	return 0;
}

static const struct fedrun_privacy_ops laplace_ops = {
	.size = sizeof(struct fedrun_privacy_ops),
	.create = laplace_create,
	.destroy = laplace_destroy,
	.apply = laplace_apply,
};

static const struct fedrun_plugin laplace_plugin = FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_PRIVACY, "laplace", "1.0.0", "add Lap(0, sigma/epsilon) to each update entry",
	&laplace_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &laplace_plugin : NULL;
}
