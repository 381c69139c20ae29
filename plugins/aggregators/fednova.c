/* SPDX-License-Identifier: Apache-2.0 */
/* fednova: federated normalized averaging (Wang, Liu, Liang, Joshi, Poor
 * 2020, "Tackling the Objective Inconsistency Problem in Heterogeneous
 * Federated Optimization", NeurIPS; the authors' code is github JYWa/FedNova,
 * distoptim/FedNova.py). Client i's local solver makes τ_i steps whose
 * accumulated gradients G_i are combined by a vector a_i, Δ_i = −η G_i a_i;
 * the paper's generalized update rule (sec. 4) is
 *     x_{t+1} − x_t = −τ_eff Σ_i p_i η d_i,   d_i = G_i a_i / ||a_i||_1,
 * and FedNova (sec. 5) takes τ_eff = Σ_i p_i ||a_i||_1, p_i = n_i / Σ n:
 *     x_{t+1} = x_t + (Σ_i p_i ||a_i||_1) Σ_i p_i Δ_i / ||a_i||_1.
 * ||a_i||_1 by the local solver (sec. 5, "FedNova"; the same recurrences as
 * FedNova.py's local_normalizing_vec):
 *   SGD (a_i = 1_{τ_i}, the "vanilla" case):   τ_i;
 *   SGD with momentum ρ (the buffer zeroed at the start of the round):
 *       [τ_i − ρ (1 − ρ^τ_i) / (1 − ρ)] / (1 − ρ);
 *   proximal SGD, FedProx's μ with local rate η:  [1 − (1 − ημ)^τ_i] / (ημ).
 * With every τ_i equal the rule is FedAvg (the normalisers cancel), and this
 * code gives FedAvg's bits then (see fednova_finish). τ_i is the host's
 * count of each client's optimizer updates, round->client_steps (ABI 1.5).
 * Optional server momentum as FedNova.py's gmf: v ← β v + D, x ← x + v,
 * D the step above. */
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

struct fednova_cfg {
	int weights;	    /* AGGR_WEIGHTS_SAMPLES or _UNIFORM */
	double momentum;    /* ρ of the clients' SGD */
	double prox_mu;	    /* μ of the clients' proximal term */
	double local_lr;    /* η of the clients' SGD (with prox_mu) */
	double server_momentum; /* β */
};

static const struct fedrun_opt fednova_opts[] = {
    {"weights", FEDRUN_OPT_CHOICE, offsetof(struct fednova_cfg, weights), 0, 0, 0, 0, "samples",
     "samples|uniform"},
    {"momentum", FEDRUN_OPT_NUMBER, offsetof(struct fednova_cfg, momentum), FEDRUN_OPT_MAX_OPEN, 0,
     1, 0, NULL, NULL},
    {"prox_mu", FEDRUN_OPT_NUMBER, offsetof(struct fednova_cfg, prox_mu), 0, 0, 1e6, 0, NULL,
     NULL},
    {"local_lr", FEDRUN_OPT_NUMBER, offsetof(struct fednova_cfg, local_lr),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_MIN_OPEN, 0, 1e6, 0, NULL, NULL},
    {"server_momentum", FEDRUN_OPT_NUMBER, offsetof(struct fednova_cfg, server_momentum),
     FEDRUN_OPT_MAX_OPEN, 0, 1, 0, NULL, NULL},
    FEDRUN_OPT_END_};

struct fednova {
	struct aggr_base base;
	struct fednova_cfg cfg;
	struct srvopt opt;	/* server momentum; used when server_momentum > 0 */
	struct aggr_sum sum;	/* Σ_k p_k (A_ref / A_k) Δ_k per element */
	double *ptot;		/* per tensor: Σ p_k over its senders */
	double *rtot;		/* per tensor: Σ p_k (A_k / A_ref) over its senders */
	double aref;		/* A of the round's first update */
	double *scale;		/* scratch: A_ref / A_k for one call's updates */
	uint32_t scap;
	float *d;		/* one tensor's step (max_numel), with server momentum */
};

static int fednova_create(const struct fedrun_host *host, json_t *config,
			  const struct fedrun_layout *layout, void **state)
{
	struct fednova *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "fednova: out of memory");
	st->cfg.local_lr = NAN;
	int rc = fedrun_opts_parse(fednova_opts, config, AGGR_PATH, &st->cfg);
	if (rc < 0)
		goto free_st;
	const struct fednova_cfg *c = &st->cfg;
	if (c->momentum > 0 && c->prox_mu > 0) {
		rc = fedrun_error(FEDRUN_ECONFIG,
				  "aggregator.momentum and aggregator.prox_mu: FedNova's "
				  "normaliser is given for local momentum or a proximal term, "
				  "not both; set one of them to 0");
		goto free_st;
	}
	if (c->prox_mu > 0) {
		if (isnan(c->local_lr)) {
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "aggregator.local_lr: required with aggregator.prox_mu "
					  "(the clients' clients.optimizer.lr: the normaliser "
					  "depends on eta * mu)");
			goto free_st;
		}
		if (!(c->local_lr * c->prox_mu < 1)) {
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "aggregator.local_lr: local_lr * prox_mu is %g; the "
					  "proximal step shrinks only below 1",
					  c->local_lr * c->prox_mu);
			goto free_st;
		}
	}
	rc = aggr_base_init(&st->base, "fednova", host, layout);
	if (rc < 0)
		goto free_st;
	struct srvopt_cfg oc = {.method = SRVOPT_SGD, .lr = 1, .momentum = c->server_momentum};
	if (c->server_momentum > 0 && (rc = srvopt_init(&st->opt, &oc, layout->total)) < 0)
		goto fini_base;
	rc = aggr_sum_init(&st->sum, layout, c->weights);
	if (rc < 0)
		goto fini_opt;
	st->ptot = calloc(layout->n ? layout->n : 1, sizeof *st->ptot);
	st->rtot = calloc(layout->n ? layout->n : 1, sizeof *st->rtot);
	st->d = c->server_momentum > 0 ? fedrun_arena_alloc(st->base.max_numel) : NULL;
	if (!st->ptot || !st->rtot || (c->server_momentum > 0 && !st->d)) {
		rc = fedrun_error(FEDRUN_ENOMEM, "fednova: out of memory");
		goto fini_sum;
	}
	*state = st;
	return 0;
fini_sum:
	free(st->ptot);
	free(st->rtot);
	aggr_sum_fini(&st->sum);
fini_opt:
	srvopt_fini(&st->opt);
fini_base:
	aggr_base_fini(&st->base);
free_st:
	free(st);
	return rc;
}

static void fednova_destroy(void *state)
{
	struct fednova *st = state;
	if (!st)
		return;
	srvopt_fini(&st->opt);
	aggr_base_fini(&st->base);
	aggr_sum_fini(&st->sum);
	free(st->ptot);
	free(st->rtot);
	free(st->scale);
	fedrun_arena_free(st->d);
	free(st);
}

/* With prox_mu, the clients train FedProx's objective (the engine passes μ
 * to the model), so the normaliser and the local solver agree. */
static int fednova_configure_clients(void *state, struct fedrun_client_hints *hints)
{
	hints->prox_mu = ((struct fednova *)state)->cfg.prox_mu;
	return 0;
}

/* ||a_i||_1 of a client that made tau local steps (see the top). */
static double a_norm(const struct fednova_cfg *c, uint64_t tau)
{
	const double t = (double)tau;
	if (c->momentum > 0) {
		const double r = c->momentum;
		return (t - r * (1 - pow(r, t)) / (1 - r)) / (1 - r);
	}
	if (c->prox_mu > 0) {
		const double em = c->local_lr * c->prox_mu;
		return (1 - pow(1 - em, t)) / em;
	}
	return t;
}

static int fednova_begin(void *state, const struct fedrun_round_info *round)
{
	struct fednova *st = state;
	const struct fedrun_layout *l = &st->base.layout;
	int rc = aggr_check_layout("fednova", l->n, l->total, round);
	if (rc < 0)
		return rc;
	aggr_sum_begin(&st->sum);
	memset(st->ptot, 0, l->n * sizeof *st->ptot);
	memset(st->rtot, 0, l->n * sizeof *st->rtot);
	st->aref = 0;
	return 0;
}

static int fednova_accumulate(void *state, const struct fedrun_round_info *round,
			      const struct fedrun_update *u, uint32_t n)
{
	struct fednova *st = state;
	const struct fedrun_layout *l = &st->base.layout;
	int rc = aggr_check_finite("fednova", l, round, u, n);
	if (rc < 0)
		return rc;
	if (round->size < offsetof(struct fedrun_round_info, client_steps) +
			      sizeof round->client_steps ||
	    !round->client_steps)
		return fedrun_error(FEDRUN_EINVAL,
				    "fednova: the host does not report the clients' local "
				    "steps (plugin ABI 1.5, round_info.client_steps)");
	if (n > st->scap) {
		double *p = realloc(st->scale, (size_t)n * sizeof *p);
		if (!p)
			return fedrun_error(FEDRUN_ENOMEM, "fednova: out of memory for %u updates", n);
		st->scale = p;
		st->scap = n;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint64_t tau = round->client_steps[k];
		if (tau == 0)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "fednova: round %u, client %u made 0 local steps: the model does "
			    "not report its local steps (it must advance "
			    "fedrun_train_args.optim_step once per optimizer update), so its "
			    "update cannot be normalised",
			    round->round, u[k].client);
		double a = a_norm(&st->cfg, tau);
		if (st->aref == 0)
			st->aref = a; /* the first update of the round, whatever the cut */
		st->scale[k] = st->aref / a;
		double p = st->cfg.weights == AGGR_WEIGHTS_UNIFORM ? 1.0 : (double)u[k].n_samples;
		for (uint32_t i = 0; i < l->n; i++) {
			if (!u[k].tensor[i])
				continue;
			st->ptot[i] += p;
			st->rtot[i] += p * (a / st->aref);
		}
		if ((rc = aggr_metric(&st->base, "fednova.a_norm", u[k].client, NULL, a)) < 0)
			return rc;
	}
	return aggr_sum_add_scaled(&st->sum, l, round, u, n, st->scale);
}

/* Per tensor, over its senders, with A_k = ||a_k||_1 and A_ref the first
 * update's: acc = Σ p_k (A_ref / A_k) Δ_k, so
 *     Σ_k p_k Δ_k / A_k / Σ p_k  ·  τ_eff = (acc / P) · (R / P),
 * P = Σ p_k, R = Σ p_k A_k / A_ref (τ_eff / A_ref). When every A_k is the
 * same, A_ref / A_k and A_k / A_ref are exactly 1, acc and P are FedAvg's
 * sums and R / P is exactly 1: θ_t + acc / P, FedAvg's bits. */
static int fednova_finish(void *state, const struct fedrun_round_info *round, float *params)
{
	struct fednova *st = state;
	const struct fedrun_layout *l = &st->base.layout;
	if (st->sum.n == 0)
		return fedrun_error(FEDRUN_EINVAL, "fednova: round %u: no updates to aggregate",
				    round->round);
	double pall = 0, rall = 0;
	for (uint32_t i = 0; i < l->n; i++)
		if (st->ptot[i] > pall) {
			pall = st->ptot[i];
			rall = st->rtot[i];
		}
	if (!(pall > 0))
		return fedrun_error(FEDRUN_EINVAL,
				    "fednova: every client reports 0 training samples (use "
				    "aggregator.weights \"uniform\")");
	/* τ_eff of the tensors every sender sent (the largest P). */
	int rc = aggr_metric(&st->base, "fednova.tau_eff", -1, NULL, rall / pall * st->aref);
	if (rc < 0)
		return rc;
	memcpy(st->base.before, params, l->total * sizeof *params); /* for the step norm */
	for (uint32_t i = 0; i < l->n; i++) {
		const double p = st->ptot[i];
		if (p == 0)
			continue; /* nobody (with samples) sent this tensor: it keeps its value */
		const double f = st->rtot[i] / p;
		const double *acc = st->sum.acc + l->t[i].offset;
		float *x = params + l->t[i].offset;
		const uint64_t numel = l->t[i].numel;
		if (st->d) {
			for (uint64_t j = 0; j < numel; j++)
				st->d[j] = (float)(acc[j] / p * f);
			srvopt_apply(&st->opt, l->t[i].offset, numel, x, st->d);
			continue;
		}
#pragma omp parallel for schedule(static) if (numel >= (1u << 16))
		for (uint64_t j = 0; j < numel; j++)
			x[j] = (float)((double)x[j] + acc[j] / p * f);
	}
	if (st->d)
		srvopt_end_round(&st->opt);
	return aggr_end(&st->base, params);
}

static const struct fedrun_aggregator_ops fednova_ops;

static int fednova_aggregate(void *state, const struct fedrun_round_info *round,
			     const struct fedrun_update *u, uint32_t n, float *params)
{
	return fedrun_aggregate_stream(&fednova_ops, state, round, u, n, params);
}

static int fednova_state(void *state, const struct fedrun_state_blob **blobs, uint32_t *n)
{
	struct fednova *st = state;
	*blobs = st->opt.blobs;
	*n = st->cfg.server_momentum > 0 ? st->opt.nblobs : 0;
	return 0;
}

static const struct fedrun_aggregator_ops fednova_ops = {
    .size = sizeof(struct fedrun_aggregator_ops),
    .create = fednova_create,
    .destroy = fednova_destroy,
    .aggregate = fednova_aggregate,
    .configure_clients = fednova_configure_clients,
    .state = fednova_state,
    .begin = fednova_begin,
    .accumulate = fednova_accumulate,
    .finish = fednova_finish,
};

static const struct fedrun_plugin fednova_plugin =
    FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "fednova", "1.0.0",
		       "FedNova: updates normalised by the clients' local steps (Wang et al. 2020)",
		       &fednova_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &fednova_plugin : NULL;
}
