/* SPDX-License-Identifier: Apache-2.0 */
/* fedopt: adaptive server optimizers on the pseudo-gradient (Reddi, Charles,
 * Zaheer, Garrett, Rush, Konečný, Kumar, McMahan 2021, "Adaptive Federated
 * Optimization", Algorithm 2: FedAdam, FedYogi, FedAdagrad) and server
 * momentum (FedAvgM, Hsu, Qi, Brown 2019). The moments are plugin state that
 * the host checkpoints through the `state` op. */
#include "config.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/plugin.h"
#include "fedrun/vec.h"
#include "common.h"
#include "srvopt.h"

enum fedopt_method { FEDOPT_ADAM, FEDOPT_YOGI, FEDOPT_ADAGRAD, FEDOPT_AVGM };

struct fedopt_cfg {
	int method;
	double lr, beta1, beta2, tau, momentum, v0;
	bool bias_correction;
	int weights;
};

static const struct fedrun_opt fedopt_opts[] = {
    {"method", FEDRUN_OPT_CHOICE, offsetof(struct fedopt_cfg, method), 0, 0, 0, 0, "adam",
     "adam|yogi|adagrad|avgm"},
    /* Default depends on the method: see fedopt_create. */
    {"lr", FEDRUN_OPT_NUMBER, offsetof(struct fedopt_cfg, lr),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_MIN_OPEN, 0, 10, 0, NULL, NULL},
    {"beta1", FEDRUN_OPT_NUMBER, offsetof(struct fedopt_cfg, beta1), FEDRUN_OPT_MAX_OPEN, 0, 1, 0.9,
     NULL, NULL},
    {"beta2", FEDRUN_OPT_NUMBER, offsetof(struct fedopt_cfg, beta2), FEDRUN_OPT_MAX_OPEN, 0, 1,
     0.99, NULL, NULL},
    {"tau", FEDRUN_OPT_NUMBER, offsetof(struct fedopt_cfg, tau), FEDRUN_OPT_MIN_OPEN, 0, INFINITY,
     1e-3, NULL, NULL},
    {"momentum", FEDRUN_OPT_NUMBER, offsetof(struct fedopt_cfg, momentum), FEDRUN_OPT_MAX_OPEN, 0,
     1, 0.9, NULL, NULL},
    /* Default τ²: see fedopt_create. */
    {"v0", FEDRUN_OPT_NUMBER, offsetof(struct fedopt_cfg, v0), FEDRUN_OPT_OPTIONAL, 0, INFINITY, 0,
     NULL, NULL},
    {"bias_correction", FEDRUN_OPT_BOOL, offsetof(struct fedopt_cfg, bias_correction), 0, 0, 0, 0,
     NULL, NULL},
    {"weights", FEDRUN_OPT_CHOICE, offsetof(struct fedopt_cfg, weights), 0, 0, 0, 0, "samples",
     AGGR_WEIGHTS_CHOICES},
    FEDRUN_OPT_END_};

struct fedopt {
	struct aggr_base base;
	struct fedopt_cfg cfg;
	struct srvopt opt;
	float *pg; /* one tensor's pseudo-gradient (max_numel floats) */
	struct aggr_sum sum; /* streaming (ABI 1.3): Σ_k p_k Δ_k */
};

static int fedopt_create(const struct fedrun_host *host, json_t *config,
			 const struct fedrun_layout *layout, void **state)
{
	struct fedopt *fo = calloc(1, sizeof *fo);
	if (!fo)
		return fedrun_error(FEDRUN_ENOMEM, "fedopt: out of memory");
	fo->cfg.lr = NAN;
	fo->cfg.v0 = NAN;
	int rc = fedrun_opts_parse(fedopt_opts, config, AGGR_PATH, &fo->cfg);
	if (rc < 0)
		goto free_fo;
	const struct fedopt_cfg *c = &fo->cfg;
	/* FedAvgM moves by whole averaged updates (η = 1 is FedAvg); the
	 * adaptive rules move each coordinate by about η, so a small η. */
	if (isnan(fo->cfg.lr)) {
		fo->cfg.lr = c->method == FEDOPT_AVGM ? 1.0 : 0.01;
		json_object_set_new(config, "lr", json_real(fo->cfg.lr));
	}
	/* Algorithm 2 asks for v_{−1} ≥ τ². */
	if (isnan(fo->cfg.v0) && c->method != FEDOPT_AVGM) {
		fo->cfg.v0 = c->tau * c->tau;
		json_object_set_new(config, "v0", json_real(fo->cfg.v0));
	}
	static const enum srvopt_method methods[] = {[FEDOPT_ADAM] = SRVOPT_ADAM,
						     [FEDOPT_YOGI] = SRVOPT_YOGI,
						     [FEDOPT_ADAGRAD] = SRVOPT_ADAGRAD,
						     [FEDOPT_AVGM] = SRVOPT_SGD};
	struct srvopt_cfg oc = {
	    .method = methods[c->method],
	    .lr = c->lr,
	    .momentum = c->method == FEDOPT_AVGM ? c->momentum : 0,
	    .beta1 = c->beta1,
	    .beta2 = c->beta2,
	    .tau = c->tau,
	    .v0 = c->method == FEDOPT_AVGM ? 0 : c->v0,
	    .bias_correction = c->bias_correction,
	};
	rc = aggr_base_init(&fo->base, "fedopt", host, layout);
	if (rc < 0)
		goto free_fo;
	rc = srvopt_init(&fo->opt, &oc, layout->total);
	if (rc < 0)
		goto fini_base;
	rc = aggr_sum_init(&fo->sum, layout, c->weights);
	if (rc < 0)
		goto fini_opt;
	fo->pg = fedrun_arena_alloc(fo->base.max_numel);
	if (!fo->pg) {
		rc = fedrun_error(FEDRUN_ENOMEM, "fedopt: out of memory");
		goto fini_sum;
	}
	*state = fo;
	return 0;
fini_sum:
	aggr_sum_fini(&fo->sum);
fini_opt:
	srvopt_fini(&fo->opt);
fini_base:
	aggr_base_fini(&fo->base);
free_fo:
	free(fo);
	return rc;
}

static void fedopt_destroy(void *state)
{
	struct fedopt *fo = state;
	if (!fo)
		return;
	srvopt_fini(&fo->opt);
	aggr_base_fini(&fo->base);
	aggr_sum_fini(&fo->sum);
	fedrun_arena_free(fo->pg);
	free(fo);
}

static int fedopt_begin(void *state, const struct fedrun_round_info *round)
{
	struct fedopt *fo = state;
	const struct fedrun_layout *l = &fo->base.layout;
	int rc = aggr_check_layout("fedopt", l->n, l->total, round);
	if (rc < 0)
		return rc;
	aggr_sum_begin(&fo->sum);
	return 0;
}

static int fedopt_accumulate(void *state, const struct fedrun_round_info *round,
			     const struct fedrun_update *updates, uint32_t n)
{
	struct fedopt *fo = state;
	int rc = aggr_check_finite("fedopt", &fo->base.layout, round, updates, n);
	return rc < 0 ? rc : aggr_sum_add(&fo->sum, &fo->base.layout, round, updates, n);
}

static int fedopt_finish(void *state, const struct fedrun_round_info *round, float *params)
{
	struct fedopt *fo = state;
	const struct fedrun_layout *l = &fo->base.layout;
	if (fo->sum.n == 0)
		return fedrun_error(FEDRUN_EINVAL, "fedopt: round %u: no updates to aggregate",
				    round->round);
	memcpy(fo->base.before, params, l->total * sizeof *params); /* θ_t, for the step norm */

	/* Δ = Σ_k p_k Δ_k / Σ_k p_k over the clients that sent the tensor
	 * (FedOpt, Algorithm 1 of the FedNLP slides, line 9), p_k = n_k or 1. */
	double pg2 = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		/* A tensor nobody sent: neither it nor its moments move. */
		if (fo->sum.senders[i] == 0)
			continue;
		double total = aggr_sum_mean(&fo->sum, l, i, fo->pg);
		if (!(total > 1e-12))
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "fedopt: tensor %s: the clients that sent it report "
			    "0 training samples (use aggregator.weights \"uniform\")",
			    t->name);
		double nrm = fedrun_vec_nrm2(t->numel, fo->pg);
		pg2 += nrm * nrm;
		srvopt_apply(&fo->opt, t->offset, t->numel, params + t->offset, fo->pg);
	}
	srvopt_end_round(&fo->opt);
	int rc = aggr_metric(&fo->base, "fedopt.update_norm", -1, NULL, sqrt(pg2));
	if (rc < 0)
		return rc;
	return aggr_end(&fo->base, params);
}

static const struct fedrun_aggregator_ops fedopt_ops;

static int fedopt_aggregate(void *state, const struct fedrun_round_info *round,
			    const struct fedrun_update *updates, uint32_t n, float *params)
{
	return fedrun_aggregate_stream(&fedopt_ops, state, round, updates, n, params);
}

static int fedopt_state(void *state, const struct fedrun_state_blob **blobs, uint32_t *n)
{
	struct fedopt *fo = state;
	*blobs = fo->opt.blobs;
	*n = fo->opt.nblobs;
	return 0;
}

static const struct fedrun_aggregator_ops fedopt_ops = {
    .size = sizeof(struct fedrun_aggregator_ops),
    .create = fedopt_create,
    .destroy = fedopt_destroy,
    .aggregate = fedopt_aggregate,
    .state = fedopt_state,
    .begin = fedopt_begin,
    .accumulate = fedopt_accumulate,
    .finish = fedopt_finish,
};

static const struct fedrun_plugin fedopt_plugin = {
    .abi_major = FEDRUN_ABI_MAJOR,
    .abi_minor = FEDRUN_ABI_MINOR,
    .size = sizeof(struct fedrun_plugin),
    .kind = FEDRUN_KIND_AGGREGATOR,
    .name = "fedopt",
    .version = "1.0.0",
    .summary = "FedAdam, FedYogi, FedAdagrad (Reddi et al. 2021) and FedAvgM server steps",
    .ops = &fedopt_ops,
};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &fedopt_plugin : NULL;
}
