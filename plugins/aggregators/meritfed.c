/* SPDX-License-Identifier: Apache-2.0 */
/* meritfed: aggregation weights chosen each round for one target client
 * (Tupitsa, Horváth, Takáč, Gorbunov 2024, "Federated Learning Can Find
 * Friends That Are Advantageous", arXiv:2402.05050; as presented in
 * Gorbunov's 2024 slides), optionally through a server optimizer (MeritOpt). */
#include "config.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/plugin.h"
#include "fedrun/rng.h"
#include "fedrun/vec.h"
#include "common.h"
#include "srvopt.h"

/* The slides write the update as x^{k+1} = x^k − γ Σ_i w_i g_i^k with g_i a
 * client's (stochastic) gradient; fedrun's clients send Δ_i = θ_i − θ_t,
 * which points the other way, so here
 *     x(w) = θ_t + γ Σ_i w_i Δ_i,
 * the weights solve (approximately, by mirror descent)
 *     w^{k+1} ≈ argmin_{w ∈ simplex} φ(w) = f_target(x(w))
 * ("Key novelty" slide), and ∇φ(w)_i = γ ⟨∇f_target(x(w)), Δ_i⟩. */

enum meritfed_variant { MERITFED_FIRST, MERITFED_ZEROTH };
enum meritfed_optimizer { MERITFED_NONE, MERITFED_SGD, MERITFED_ADAM };

struct meritfed_cfg {
	int64_t target;
	int64_t md_steps;
	double md_lr, server_lr;
	int variant, split, optimizer;
	double momentum, beta1, beta2, tau;
	bool warm_start;
	int64_t max_clients;
	int64_t zo_directions;
	double zo_radius;
};

#define OPT_(key, type, field, flags, lo, hi, def, defs, choices)                                  \
	{                                                                                          \
		key, FEDRUN_OPT_##type, offsetof(struct meritfed_cfg, field), flags, lo, hi, def,  \
		    defs, choices                                                                  \
	}
static const struct fedrun_opt meritfed_opts[] = {
    OPT_("target", INT, target, 0, 0, INT32_MAX, 0, NULL, NULL),
    OPT_("md_steps", INT, md_steps, 0, 0, 100000, 10, NULL, NULL),
    OPT_("md_lr", NUMBER, md_lr, FEDRUN_OPT_MIN_OPEN, 0, INFINITY, 1.0, NULL, NULL),
    OPT_("server_lr", NUMBER, server_lr, FEDRUN_OPT_MIN_OPEN, 0, INFINITY, 1.0, NULL, NULL),
    OPT_("variant", CHOICE, variant, 0, 0, 0, 0, "first", "first|zeroth"),
    OPT_("split", CHOICE, split, 0, 0, 0, 0, "valid", "valid|train"),
    OPT_("optimizer", CHOICE, optimizer, 0, 0, 0, 0, "none", "none|sgd|adam"),
    OPT_("momentum", NUMBER, momentum, FEDRUN_OPT_MAX_OPEN, 0, 1, 0.9, NULL, NULL),
    OPT_("beta1", NUMBER, beta1, FEDRUN_OPT_MAX_OPEN, 0, 1, 0.9, NULL, NULL),
    OPT_("beta2", NUMBER, beta2, FEDRUN_OPT_MAX_OPEN, 0, 1, 0.999, NULL, NULL),
    OPT_("tau", NUMBER, tau, FEDRUN_OPT_MIN_OPEN, 0, INFINITY, 1e-8, NULL, NULL),
    OPT_("warm_start", BOOL, warm_start, 0, 0, 0, 0, NULL, NULL),
    OPT_("max_clients", INT, max_clients, 0, 1, 10000000, 1024, NULL, NULL),
    OPT_("zo_directions", INT, zo_directions, 0, 1, 100000, 4, NULL, NULL),
    OPT_("zo_radius", NUMBER, zo_radius, FEDRUN_OPT_MIN_OPEN, 0, 1, 0.01, NULL, NULL),
    FEDRUN_OPT_END_};
#undef OPT_

struct meritfed {
	struct aggr_base base;
	struct meritfed_cfg cfg;
	struct srvopt opt; /* OptStep of MeritOpt; plain SGD (η = γ) for "none" */
	float *x;	   /* candidate point x(w) */
	float *grad;	   /* ∇f_target(x) */
	float *d;	   /* D(w): the weighted update, per tensor */
	float *jac;	   /* ∂x/∂D, element-wise (first-order only) */
	double *tw;	   /* per tensor: W_j, the weight of the clients that sent it */
	double *work;	   /* 3 * wcap doubles: g, u, perturbed w */
	uint32_t wcap;
	double *warm; /* weight per client id (max_clients), 0 = not seen */
	struct fedrun_state_blob blobs[4];
	uint32_t nblobs;
};

static void meritfed_destroy(void *state)
{
	struct meritfed *mf = state;
	if (!mf)
		return;
	srvopt_fini(&mf->opt);
	aggr_base_fini(&mf->base);
	fedrun_arena_free(mf->x);
	fedrun_arena_free(mf->grad);
	fedrun_arena_free(mf->d);
	fedrun_arena_free(mf->jac);
	free(mf->tw);
	free(mf->work);
	free(mf->warm);
	free(mf);
}

static int meritfed_create(const struct fedrun_host *host, json_t *config,
			   const struct fedrun_layout *layout, void **state)
{
	struct meritfed *mf = calloc(1, sizeof *mf);
	if (!mf)
		return fedrun_error(FEDRUN_ENOMEM, "meritfed: out of memory");
	int rc = fedrun_opts_parse(meritfed_opts, config, AGGR_PATH, &mf->cfg);
	if (rc < 0) {
		free(mf);
		return rc;
	}
	if (!host || !host->loss_grad) {
		free(mf);
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "meritfed: the model cannot evaluate a client's loss "
				    "(the host has no loss_grad), which meritfed needs");
	}
	uint32_t nclients, per_round; /* checked again each round */
	if (aggr_run_clients(host, &nclients, &per_round)) {
		if (mf->cfg.target >= nclients)
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "aggregator.target: client %lld does not exist (the run has "
					  "%u clients)",
					  (long long)mf->cfg.target, nclients);
		/* The warm-start table has a slot per client id: a run with more
		 * clients failed in its first round, so validate refuses it. */
		else if (mf->cfg.warm_start && nclients > mf->cfg.max_clients)
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "aggregator.max_clients: %lld, but the run has %u clients "
					  "(the warm-start table keeps one weight per client)",
					  (long long)mf->cfg.max_clients, nclients);
		if (rc < 0) {
			free(mf);
			return rc;
		}
	}
	rc = aggr_base_init(&mf->base, "meritfed", host, layout);
	if (rc < 0) {
		free(mf);
		return rc;
	}
	const struct meritfed_cfg *c = &mf->cfg;
	/* "none" is the slides' MeritFed step x + γ Σ w_i Δ_i; "sgd" adds
	 * server momentum; "adam" is Kingma and Ba's (bias-corrected, v_0 = 0). */
	struct srvopt_cfg oc = {
	    .method = c->optimizer == MERITFED_ADAM ? SRVOPT_ADAM : SRVOPT_SGD,
	    .lr = c->server_lr,
	    .momentum = c->optimizer == MERITFED_SGD ? c->momentum : 0,
	    .beta1 = c->beta1,
	    .beta2 = c->beta2,
	    .tau = c->tau,
	    .v0 = 0,
	    .bias_correction = true,
	};
	rc = srvopt_init(&mf->opt, &oc, layout->total);
	if (rc < 0)
		goto fail;
	uint64_t total = layout->total;
	mf->x = fedrun_arena_alloc(total);
	mf->grad = fedrun_arena_alloc(total);
	mf->d = fedrun_arena_alloc(total);
	mf->jac = c->variant == MERITFED_FIRST ? fedrun_arena_alloc(total) : NULL;
	mf->tw = calloc(layout->n, sizeof *mf->tw);
	if (!mf->x || !mf->grad || !mf->d || (c->variant == MERITFED_FIRST && !mf->jac) ||
	    !mf->tw) {
		rc = fedrun_error(FEDRUN_ENOMEM, "meritfed: out of memory for %llu parameters",
				  (unsigned long long)total);
		goto fail;
	}
	memcpy(mf->blobs, mf->opt.blobs, mf->opt.nblobs * sizeof *mf->blobs);
	mf->nblobs = mf->opt.nblobs;
	if (c->warm_start) {
		mf->warm = calloc((size_t)c->max_clients, sizeof *mf->warm);
		if (!mf->warm) {
			rc = fedrun_error(FEDRUN_ENOMEM, "meritfed: out of memory");
			goto fail;
		}
		mf->blobs[mf->nblobs++] = (struct fedrun_state_blob){
		    "weights", mf->warm, (uint64_t)c->max_clients * sizeof *mf->warm};
	}
	*state = mf;
	return 0;
fail:
	meritfed_destroy(mf);
	return rc;
}

/* D(w) per tensor: D_j = Σ_{i sent j} w_i Δ_i^j / W_j with W_j = Σ_{i sent
 * j} w_i, the same per-tensor renormalisation as fedopt; when every client
 * sends every tensor, W_j = 1 and D = Σ_i w_i Δ_i exactly. A tensor nobody
 * sent is marked W_j = 0 and never moves; a W_j <= 0, which only a
 * zeroth-order probe far off the simplex can make, gives D_j = 0. */
static void meritfed_build_d(struct meritfed *mf, const struct fedrun_update *updates, uint32_t n,
			     const double *w)
{
	const struct fedrun_layout *l = &mf->base.layout;
	for (uint32_t j = 0; j < l->n; j++)
		mf->tw[j] = aggr_weighted_mean(&mf->base, updates, n, j, w,
					       mf->d + l->t[j].offset);
}

/* x = OptStep(θ, D) on every tensor that someone sent (the others keep θ,
 * already in mf->x); jac (may be NULL) receives ∂x/∂D. */
static void meritfed_candidate(struct meritfed *mf, const struct fedrun_update *updates, uint32_t n,
			       const float *params, bool with_jac)
{
	const struct fedrun_layout *l = &mf->base.layout;
	for (uint32_t j = 0; j < l->n; j++) {
		const struct fedrun_tensor_info *t = &l->t[j];
		if (aggr_senders(updates, n, j, mf->base.src) == 0)
			continue;
		srvopt_candidate(&mf->opt, t->offset, t->numel, params + t->offset,
				 mf->d + t->offset, mf->x + t->offset,
				 with_jac ? mf->jac + t->offset : NULL);
	}
}

/* The target's loss (and gradient) at mf->x. */
static int meritfed_loss(struct meritfed *mf, bool with_grad, double *loss)
{
	const struct fedrun_host *h = mf->base.host;
	const struct meritfed_cfg *c = &mf->cfg;
	enum fedrun_split split = c->split == 0 ? FEDRUN_SPLIT_VALID : FEDRUN_SPLIT_TRAIN;
	const char *sname = c->split == 0 ? "valid" : "train";
	int rc = h->loss_grad(h->ctx, c->target, split, mf->x, with_grad ? mf->grad : NULL, loss);
	if (rc == FEDRUN_ENOENT)
		return fedrun_error(FEDRUN_ECONFIG,
				    "aggregator.split: the target client %lld has no '%s' split "
				    "(use \"train\")",
				    (long long)c->target, sname);
	if (rc < 0)
		return fedrun_error_wrap(rc, "meritfed: loss of target client %lld on '%s': ",
					 (long long)c->target, sname);
	if (!isfinite(*loss))
		return fedrun_error(FEDRUN_ENUMERIC,
				    "meritfed: the target's loss is not finite at the candidate "
				    "point (an update too large for server_lr?)");
	return 0;
}

/* First-order ∇φ(w): with x = OptStep(θ, D(w)) and J = ∂x/∂D,
 * ∂φ/∂w_i = Σ_{j sent by i} ⟨∇f_j ⊙ J_j, Δ_i^j − D_j⟩ / W_j,
 * which for "none" and whole updates is γ ⟨∇f(x), Δ_i⟩ minus a constant
 * common to every i (mirror descent on the simplex ignores such a shift). */
static int meritfed_grad_first(struct meritfed *mf, const struct fedrun_update *updates, uint32_t n,
			       const float *params, const double *w, double *g, double *loss)
{
	const struct fedrun_layout *l = &mf->base.layout;
	meritfed_build_d(mf, updates, n, w);
	meritfed_candidate(mf, updates, n, params, true);
	int rc = meritfed_loss(mf, true, loss);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < n; i++)
		g[i] = 0;
	for (uint32_t j = 0; j < l->n; j++) {
		const struct fedrun_tensor_info *t = &l->t[j];
		if (!(mf->tw[j] > 1e-12))
			continue;
		float *gt = mf->grad + t->offset;
		const float *jac = mf->jac + t->offset;
		for (uint64_t e = 0; e < t->numel; e++)
			gt[e] *= jac[e];
		double c = fedrun_vec_dot(t->numel, gt, mf->d + t->offset);
		for (uint32_t i = 0; i < n; i++) {
			const float *delta = updates[i].tensor[j];
			if (delta)
				g[i] += (fedrun_vec_dot(t->numel, gt, delta) - c) / mf->tw[j];
		}
	}
	return 0;
}

/* φ at the weights wp (a loss evaluation without gradient). */
static int meritfed_phi(struct meritfed *mf, const struct fedrun_update *updates, uint32_t n,
			const float *params, const double *wp, double *phi)
{
	meritfed_build_d(mf, updates, n, wp);
	meritfed_candidate(mf, updates, n, params, false);
	return meritfed_loss(mf, false, phi);
}

/* Zeroth-order ∇φ(w) from loss values only: the two-point estimator on the
 * unit sphere (Shamir 2017, JMLR 18(52); Nesterov and Spokoiny 2017, FoCM
 * 17) restricted to the simplex's tangent space {u : Σ u_i = 0}, of
 * dimension n − 1, as in gradient-free mirror descent on the simplex
 * (Gasnikov, Lagunovskaya, Usmanova, Fedorenko 2016, Autom. Remote Control
 * 77(11)):
 *     g = (n − 1)/K Σ_{k=1..K} [φ(w + τ u_k) − φ(w − τ u_k)] / (2τ) u_k,
 * u_k uniform on the unit sphere of that space. E g is the tangent part of
 * ∇φ up to O(τ²), and the normal part is what the simplex's mirror step
 * ignores anyway. With n = 2 the space is a line and g is exact for a
 * quadratic φ. The probes w ± τu may leave the simplex: x(w) is affine in
 * w, so φ is defined there. */
static int meritfed_grad_zeroth(struct meritfed *mf, const struct fedrun_update *updates,
				uint32_t n, const float *params, const double *w, double *g,
				struct fedrun_rng *rng, double *loss)
{
	double *u = mf->work + mf->wcap, *wp = mf->work + 2 * (uint64_t)mf->wcap;
	const double tau = mf->cfg.zo_radius;
	const uint64_t K = (uint64_t)mf->cfg.zo_directions;
	for (uint32_t i = 0; i < n; i++)
		g[i] = 0;
	*loss = 0;
	for (uint64_t k = 0; k < K; k++) {
		double norm;
		do {
			double mean = 0;
			for (uint32_t i = 0; i < n; i++)
				mean += u[i] = fedrun_rng_normal(rng);
			mean /= n;
			norm = 0;
			for (uint32_t i = 0; i < n; i++) {
				u[i] -= mean;
				norm += u[i] * u[i];
			}
			norm = sqrt(norm);
		} while (!(norm > 1e-12));
		double phi[2];
		for (int side = 0; side < 2; side++) {
			double sgn = side ? -1.0 : 1.0;
			for (uint32_t i = 0; i < n; i++)
				wp[i] = w[i] + sgn * tau * u[i] / norm;
			int rc = meritfed_phi(mf, updates, n, params, wp, &phi[side]);
			if (rc < 0)
				return rc;
		}
		double coef = (double)(n - 1) * (phi[0] - phi[1]) / (2 * tau) / (double)K;
		for (uint32_t i = 0; i < n; i++)
			g[i] += coef * u[i] / norm;
		*loss += 0.5 * (phi[0] + phi[1]) / (double)K;
	}
	return 0;
}

/* The slides' mirror descent step with the KL divergence:
 * w ← w ⊙ exp(−η ∇φ(w)) / Σ_i w_i exp(−η ∇φ(w)_i), in logs so that large
 * η g cannot overflow. */
static int meritfed_md_step(uint32_t n, double *w, const double *g, double eta)
{
	double zmax = -INFINITY;
	for (uint32_t i = 0; i < n; i++)
		if (!isfinite(g[i]))
			return fedrun_error(FEDRUN_ENUMERIC,
					    "meritfed: the gradient of the target's loss with "
					    "respect to the weights is not finite");
	for (uint32_t i = 0; i < n; i++) {
		w[i] = log(w[i]) - eta * g[i];
		if (w[i] > zmax)
			zmax = w[i];
	}
	double z = 0;
	for (uint32_t i = 0; i < n; i++)
		z += w[i] = exp(w[i] - zmax);
	for (uint32_t i = 0; i < n; i++)
		w[i] /= z;
	return 0;
}

static int meritfed_reserve(struct meritfed *mf, uint32_t n)
{
	if (n <= mf->wcap)
		return 0;
	double *work = realloc(mf->work, 3 * (size_t)n * sizeof *work);
	if (!work)
		return fedrun_error(FEDRUN_ENOMEM, "meritfed: out of memory for %u clients", n);
	mf->work = work;
	mf->wcap = n;
	return 0;
}

/* Starting weights: uniform, or with warm_start the last weights each
 * client had (1/n for one never seen), renormalised over this round's
 * clients. */
static int meritfed_start(struct meritfed *mf, const struct fedrun_update *updates, uint32_t n,
			  double *w)
{
	double z = 0;
	for (uint32_t i = 0; i < n; i++) {
		w[i] = 1.0 / n;
		if (!mf->warm)
			continue;
		if (updates[i].client >= (uint64_t)mf->cfg.max_clients)
			return fedrun_error(FEDRUN_ECONFIG,
					    "aggregator.max_clients: client %u does not fit the "
					    "warm-start table of %lld clients",
					    updates[i].client, (long long)mf->cfg.max_clients);
		if (mf->warm[updates[i].client] > 0)
			w[i] = mf->warm[updates[i].client];
		z += w[i];
	}
	if (mf->warm)
		for (uint32_t i = 0; i < n; i++)
			w[i] /= z;
	return 0;
}

static int meritfed_aggregate(void *state, const struct fedrun_round_info *round,
			      const struct fedrun_update *updates, uint32_t n, float *params)
{
	struct meritfed *mf = state;
	const struct meritfed_cfg *c = &mf->cfg;
	const struct fedrun_layout *l = &mf->base.layout;
	int rc = aggr_begin(&mf->base, round, updates, n, params);
	if (rc < 0)
		return rc;
	if (round && round->num_clients && c->target >= round->num_clients)
		return fedrun_error(FEDRUN_ECONFIG,
				    "aggregator.target: client %lld does not exist (the run has "
				    "%u clients)",
				    (long long)c->target, round->num_clients);
	rc = meritfed_reserve(mf, n);
	if (rc < 0)
		return rc;
	/* base.val holds w; work holds g, then the zeroth-order scratch. */
	double *w = mf->base.val, *g = mf->work;
	rc = meritfed_start(mf, updates, n, w);
	if (rc < 0)
		return rc;

	memcpy(mf->x, params, l->total * sizeof *params);
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, round ? round->seed : 0, FEDRUN_RNG_AGGREGATE,
			round ? round->round : 0, 0);
	double loss_first = NAN, loss_last = NAN;
	for (int64_t s = 0; n > 1 && s < c->md_steps; s++) {
		double loss;
		if (c->variant == MERITFED_FIRST)
			rc = meritfed_grad_first(mf, updates, n, params, w, g, &loss);
		else
			rc = meritfed_grad_zeroth(mf, updates, n, params, w, g, &rng, &loss);
		if (rc < 0)
			return rc;
		if (s == 0)
			loss_first = loss;
		loss_last = loss;
		rc = meritfed_md_step(n, w, g, c->md_lr);
		if (rc < 0)
			return rc;
	}

	/* x^{k+1} = OptStep(x^k, Σ_i w_i^{k+1} Δ_i, γ) (MeritOpt slide). */
	meritfed_build_d(mf, updates, n, w);
	for (uint32_t j = 0; j < l->n; j++) {
		const struct fedrun_tensor_info *t = &l->t[j];
		if (aggr_senders(updates, n, j, mf->base.src) == 0)
			continue;
		srvopt_apply(&mf->opt, t->offset, t->numel, params + t->offset, mf->d + t->offset);
	}
	srvopt_end_round(&mf->opt);

	for (uint32_t i = 0; i < n; i++) {
		rc = aggr_metric(&mf->base, "meritfed.weight", updates[i].client, NULL, w[i]);
		if (rc < 0)
			return rc;
		/* A floor keeps "0 = never seen" apart from an underflow. */
		if (mf->warm)
			mf->warm[updates[i].client] = w[i] > 1e-300 ? w[i] : 1e-300;
	}
	if (!isnan(loss_first)) {
		rc = aggr_metric(&mf->base, "meritfed.loss_first", c->target, NULL, loss_first);
		if (rc == 0)
			rc = aggr_metric(&mf->base, "meritfed.loss_last", c->target, NULL,
					 loss_last);
		if (rc < 0)
			return rc;
	}
	return aggr_end(&mf->base, params);
}

static int meritfed_state(void *state, const struct fedrun_state_blob **blobs, uint32_t *n)
{
	struct meritfed *mf = state;
	*blobs = mf->blobs;
	*n = mf->nblobs;
	return 0;
}

static const struct fedrun_aggregator_ops meritfed_ops = {
    .size = sizeof(struct fedrun_aggregator_ops),
    .create = meritfed_create,
    .destroy = meritfed_destroy,
    .aggregate = meritfed_aggregate,
    .state = meritfed_state,
};

static const struct fedrun_plugin meritfed_plugin = {
    .abi_major = FEDRUN_ABI_MAJOR,
    .abi_minor = FEDRUN_ABI_MINOR,
    .size = sizeof(struct fedrun_plugin),
    .kind = FEDRUN_KIND_AGGREGATOR,
    .name = "meritfed",
    .version = "1.0.0",
    .summary = "weights for a target client by mirror descent (MeritFed, MeritOpt)",
    .ops = &meritfed_ops,
};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &meritfed_plugin : NULL;
}
