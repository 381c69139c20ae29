/* SPDX-License-Identifier: Apache-2.0 */
/* fedatt: layer-wise attentive aggregation (Ji, Pan, Long, Li, Jiang, Huang
 * 2019, "Learning Private Neural Language Modeling with Attentive
 * Aggregation", Algorithm 3), with the optional server noise of its eq. 6. */
#include "config.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/plugin.h"
#include "fedrun/rng.h"
#include "fedrun/vec.h"
#include "common.h"
#include "spectral.h"

enum fedatt_norm { FEDATT_FROBENIUS = 0, FEDATT_SPECTRAL = 1 };

struct fedatt_cfg {
	double epsilon;
	int norm;
	double beta, sigma;
};

static const struct fedrun_opt fedatt_opts[] = {
    /* (0, 2]: the step moves the server a fraction epsilon of the way to
     * the attention-weighted average of the clients (eq. 4); beyond 2 it
     * overshoots by more than it covers and diverges. */
    {"epsilon", FEDRUN_OPT_NUMBER, offsetof(struct fedatt_cfg, epsilon), FEDRUN_OPT_MIN_OPEN, 0, 2,
     1.0, NULL, NULL},
    {"norm", FEDRUN_OPT_CHOICE, offsetof(struct fedatt_cfg, norm), 0, 0, 0, 0, "frobenius",
     "frobenius|spectral"},
    {"beta", FEDRUN_OPT_NUMBER, offsetof(struct fedatt_cfg, beta), 0, 0, 1, 0, NULL, NULL},
    {"sigma", FEDRUN_OPT_NUMBER, offsetof(struct fedatt_cfg, sigma), 0, 0, INFINITY, 1.0, NULL,
     NULL},
    FEDRUN_OPT_END_};

struct fedatt {
	struct aggr_base base;
	struct fedatt_cfg cfg;
};

static int fedatt_create(const struct fedrun_host *host, json_t *config,
			 const struct fedrun_layout *layout, void **state)
{
	struct fedatt *fa = calloc(1, sizeof *fa);
	if (!fa)
		return fedrun_error(FEDRUN_ENOMEM, "fedatt: out of memory");
	int rc = fedrun_opts_parse(fedatt_opts, config, AGGR_PATH, &fa->cfg);
	if (rc < 0) {
		free(fa);
		return rc;
	}
	rc = aggr_base_init(&fa->base, "fedatt", host, layout);
	if (rc < 0) {
		free(fa);
		return rc;
	}
	*state = fa;
	return 0;
}

static void fedatt_destroy(void *state)
{
	struct fedatt *fa = state;
	if (!fa)
		return;
	aggr_base_fini(&fa->base);
	free(fa);
}

/* s_k = ||w − w_k||_p of Algorithm 3, line 8: with w_k = w + Δ_k it is the
 * norm of the update itself. "spectral" is ord=2 of the authors' code: the
 * largest singular value of a matrix, the Euclidean norm of a vector; a
 * tensor of 3 or 4 dimensions is read as the matrix shape[0] x (the rest),
 * where the authors' scipy call would refuse it. */
static int fedatt_distance(const struct fedatt *fa, const struct fedrun_tensor_info *t,
			   const float *delta, double *s)
{
	if (fa->cfg.norm == FEDATT_FROBENIUS || t->ndim == 1) {
		*s = fedrun_vec_nrm2(t->numel, delta);
		return 0;
	}
	return fedatt_spectral_norm(t->shape[0], t->numel / t->shape[0], delta, s, NULL);
}

static int fedatt_aggregate(void *state, const struct fedrun_round_info *round,
			    const struct fedrun_update *updates, uint32_t n, float *params)
{
	struct fedatt *fa = state;
	const struct fedrun_layout *l = &fa->base.layout;
	int rc = aggr_begin(&fa->base, round, updates, n, params);
	if (rc < 0)
		return rc;

	const float **src = fa->base.src;
	float *w = fa->base.w;
	double *s = fa->base.val;
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		/* A tensor no client sent keeps its value. */
		if (aggr_senders(updates, n, i, src) == 0)
			continue;
		double smax = -INFINITY;
		for (uint32_t k = 0; k < n; k++) {
			if (!src[k])
				continue;
			rc = fedatt_distance(fa, t, src[k], &s[k]);
			if (rc < 0)
				return rc;
			if (s[k] > smax)
				smax = s[k];
		}
		/* α_k = softmax over the senders of s_k (eq. 2), shifted by the
		 * largest s so that exp cannot overflow. A larger distance gets
		 * a larger weight, as in the paper and its code. */
		double z = 0;
		for (uint32_t k = 0; k < n; k++)
			if (src[k])
				z += exp(s[k] - smax);
		for (uint32_t k = 0; k < n; k++) {
			if (!src[k]) {
				w[k] = 0;
				continue;
			}
			double alpha = exp(s[k] - smax) / z;
			rc = aggr_metric(&fa->base, "fedatt.alpha", updates[k].client, t->name,
					 alpha);
			if (rc < 0)
				return rc;
			/* θ_{t+1} = θ_t − ε Σ_k α_k (θ_t − θ_k) (eq. 4) =
			 * θ_t + ε Σ_k α_k Δ_k. */
			w[k] = (float)(fa->cfg.epsilon * alpha);
		}
		float *theta = params + t->offset;
		fedrun_vec_wsum(t->numel, n, src, w, theta);

		/* Eq. 6 with the authors' code: β·N(0, σ²) added once to the new
		 * parameters. One stream per (round, tensor), so the noise is
		 * reproducible and independent of the other tensors. */
		if (fa->cfg.beta > 0 && fa->cfg.sigma > 0) {
			struct fedrun_rng rng;
			fedrun_rng_init(&rng, round ? round->seed : 0, FEDRUN_RNG_AGGREGATE,
					round ? round->round : 0, i);
			const double scale = fa->cfg.beta * fa->cfg.sigma;
			for (uint64_t j = 0; j < t->numel; j++)
				theta[j] += (float)(scale * fedrun_rng_normal(&rng));
		}
	}
	return aggr_end(&fa->base, params);
}

static const struct fedrun_aggregator_ops fedatt_ops = {
    .size = sizeof(struct fedrun_aggregator_ops),
    .create = fedatt_create,
    .destroy = fedatt_destroy,
    .aggregate = fedatt_aggregate,
    .state = NULL,
};

static const struct fedrun_plugin fedatt_plugin = {
    .abi_major = FEDRUN_ABI_MAJOR,
    .abi_minor = FEDRUN_ABI_MINOR,
    .size = sizeof(struct fedrun_plugin),
    .kind = FEDRUN_KIND_AGGREGATOR,
    .name = "fedatt",
    .version = "1.0.0",
    .summary = "layer-wise attentive aggregation (Ji et al. 2019, Algorithm 3)",
    .ops = &fedatt_ops,
};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &fedatt_plugin : NULL;
}
