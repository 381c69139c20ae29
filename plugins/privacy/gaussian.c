/* gaussian: adds β·N(0, σ²) to each entry of an update (eq. 6 of the FedAtt
 * paper, Ji et al. 2019). Clipping and accounting come with the differential
 * privacy work; until then this is randomisation, not a DP guarantee. */
#include <stddef.h>
#include <stdlib.h>
#include <fedrun/fedrun.h>
#include "noise.h"

struct gaussian {
	double sigma, beta;
};

static const struct fedrun_opt gaussian_spec[] = {
	{"sigma", FEDRUN_OPT_NUMBER, offsetof(struct gaussian, sigma), FEDRUN_OPT_REQUIRED, 0, 1e6,
	 0, NULL, NULL},
	{"beta", FEDRUN_OPT_NUMBER, offsetof(struct gaussian, beta), 0, 0, 1e6, 1.0, NULL, NULL},
	FEDRUN_OPT_END_,
};

static int gaussian_create(const struct fedrun_host *host, json_t *config,
			   const struct fedrun_layout *layout, void **state)
{
	struct gaussian *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = fedrun_opts_parse(gaussian_spec, config, "privacy", st);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void gaussian_destroy(void *state)
{
	free(state);
}

static double gaussian_draw(struct fedrun_rng *rng, double scale)
{
	return scale * fedrun_rng_normal(rng);
}

static int gaussian_apply(void *state, const struct fedrun_round_info *round, uint32_t client,
			  const uint8_t *mask, float *delta)
{
	struct gaussian *st = state;
	noise_add(round, client, mask, delta, gaussian_draw, st->beta * st->sigma);
	return 0;
}

static const struct fedrun_privacy_ops gaussian_ops = {
	.size = sizeof(struct fedrun_privacy_ops),
	.create = gaussian_create,
	.destroy = gaussian_destroy,
	.apply = gaussian_apply,
};

static const struct fedrun_plugin gaussian_plugin = FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_PRIVACY, "gaussian", "1.0.0", "add beta*N(0, sigma^2) to each update entry",
	&gaussian_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &gaussian_plugin : NULL;
}
