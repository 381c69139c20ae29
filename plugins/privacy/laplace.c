/* SPDX-License-Identifier: Apache-2.0 */
/* laplace: the Laplace mechanism on each client's update, as FedNMT (Wang et
 * al. 2021, section 2.4 and algorithm 1) adds Lap(σ/ε): σ is the L1
 * sensitivity, which clipping each update to L1 norm σ enforces, and ε the
 * budget of one release. The privacy spent is reported per round and, by
 * basic composition, in total; see fedrun-privacy(7). */
#include <stddef.h>
#include <stdlib.h>
#include <fedrun/fedrun.h>
#include "noise.h"

struct laplace {
	const struct fedrun_host *host;
	double sigma, epsilon;
	bool clip;
	int noise;
	uint64_t rounds; /* rounds accounted, checkpointed */
	struct fedrun_state_blob blob;
};

/* clang-format off */
static const struct fedrun_opt laplace_spec[] = {
    {"sigma", FEDRUN_OPT_NUMBER, offsetof(struct laplace, sigma),
     FEDRUN_OPT_REQUIRED | FEDRUN_OPT_MIN_OPEN, 0, 1e6, 0, NULL, NULL},
    /* At least 1e-6, so that the noise's scale sigma / epsilon stays
     * finite (5e-324 made every update infinite in round 1). */
    {"epsilon", FEDRUN_OPT_NUMBER, offsetof(struct laplace, epsilon),
     FEDRUN_OPT_REQUIRED, 1e-6, 1e6, 0, NULL, NULL},
    {"clip", FEDRUN_OPT_BOOL, offsetof(struct laplace, clip), 0, 0, 0, 1, NULL, NULL},
    {"noise", FEDRUN_OPT_CHOICE, offsetof(struct laplace, noise), 0, 0, 0, 0, "secure",
     NOISE_CHOICES},
    FEDRUN_OPT_END_,
};
/* clang-format on */

static void laplace_describe(const struct laplace *st)
{
	const struct fedrun_host *h = st->host;
	h->log(h->ctx, FEDRUN_LOG_INFO, "privacy laplace: Lap(0, %g) on each entry, %s; noise %s",
	       st->sigma / st->epsilon,
	       st->clip ? "updates clipped to L1 norm sigma, epsilon accounted per round"
			: "no clipping: no differential privacy guarantee, nothing accounted",
	       noise_name(st->noise));
}

static int laplace_create(const struct fedrun_host *host, json_t *config,
			  const struct fedrun_layout *layout, void **state)
{
	(void)layout;
	struct laplace *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	int rc = fedrun_opts_parse(laplace_spec, config, "privacy", st);
	if (rc < 0) {
		free(st);
		return rc;
	}
	st->blob = (struct fedrun_state_blob){"rounds", &st->rounds, sizeof st->rounds};
	laplace_describe(st);
	if (st->noise == NOISE_REPRODUCIBLE)
		host->log(
		    host->ctx, FEDRUN_LOG_WARN,
		    "privacy laplace: noise \"reproducible\" is derived from the seed: anyone "
		    "who knows it can subtract the noise, so it protects nothing (for "
		    "experiments only)");
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
	const struct fedrun_layout *l = round->layout;
	int rc;
	/* Clipping to L1 norm σ makes σ the sensitivity the noise assumes. */
	if (st->clip && (rc = noise_clip(l, mask, delta, true, st->sigma, client)) < 0)
		return rc;
	struct noise_src src;
	if ((rc = noise_src_init(&src, st->noise, round, client)) < 0)
		return rc;
	noise_add(&src, l, mask, delta, true, st->sigma / st->epsilon);
	noise_src_fini(&src);
	return 0;
}

/* Accounting, once per round on the server. */
static int laplace_apply_server(void *state, const struct fedrun_round_info *round, uint32_t n,
				float *delta)
{
	(void)n;
	(void)delta;
	struct laplace *st = state;
	const struct fedrun_host *h = st->host;
	if (!st->clip)
		return 0;
	if (st->rounds + 1 != round->round)
		return fedrun_error(FEDRUN_ESTATE,
				    "privacy laplace: the accountant holds %llu rounds but this is "
				    "round %u (a checkpoint from another run?)",
				    (unsigned long long)st->rounds, round->round);
	st->rounds++;
	/* The Laplace mechanism with L1 sensitivity Δ and scale b is
	 * (Δ/b)-DP (Dwork and Roth 2014, theorem 3.6); basic composition
	 * (their theorem 3.16) adds the rounds a client takes part in. */
	double scale = st->sigma / st->epsilon, eps_round = st->sigma / scale;
	int rc = h->metric(h->ctx, "privacy.epsilon_round", -1, NULL, eps_round);
	if (rc == 0)
		rc = h->metric(h->ctx, "privacy.epsilon", -1, NULL, eps_round * (double)st->rounds);
	return rc;
}

static int laplace_state(void *state, const struct fedrun_state_blob **blobs, uint32_t *n)
{
	struct laplace *st = state;
	*blobs = &st->blob;
	*n = 1;
	return 0;
}

static const struct fedrun_privacy_ops laplace_ops = {
    .size = sizeof(struct fedrun_privacy_ops),
    .create = laplace_create,
    .destroy = laplace_destroy,
    .apply = laplace_apply,
    .apply_server = laplace_apply_server,
    .state = laplace_state,
};

static const struct fedrun_plugin laplace_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_PRIVACY, "laplace", "2.0.0",
    "clip each update to L1 norm sigma, add Lap(0, sigma/epsilon); epsilon per round and in total",
    &laplace_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &laplace_plugin : NULL;
}
