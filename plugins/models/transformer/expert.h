/* SPDX-License-Identifier: Apache-2.0 */
/* The domain expert's gate (FedNMT paper, sec. 2.5): a client translates
 * with the token-level mixture of the global model M_G and its private
 * model M_P,
 *     p(y | x) = λ(x) p_G(y | x) + (1 − λ(x)) p_P(y | x),
 * whose weight λ(x) is a learned function of the source sentence. The
 * paper writes λ(x) = tanh(θ·x), which can be negative; we use the rescaled
 * tanh of the same family
 *     λ(x) = (1 + tanh(θ·x)) / 2 = σ(2 θ·x) ∈ (0, 1),
 * so that the mixture is always a distribution. x holds a sentence's
 * features (the caller's business; the transformer uses the mean of M_G's
 * source token embeddings and a constant 1 as bias). θ is fitted by
 * minimising the mixture's NLL with Adam, both models frozen: only the
 * per-token log-probabilities of the two models enter, so the gate works on
 * plain host arrays and knows nothing of the network. Everything is double
 * precision; the functions are pure (no globals), hence thread-safe. */
#ifndef FEDRUN_TFM_EXPERT_H
#define FEDRUN_TFM_EXPERT_H

#include <stdint.h>

/* z = θ·x over n features. */
double tfm_gate_z(const double *theta, const double *x, uint32_t n);
/* λ = (1 + tanh z) / 2. */
double tfm_gate_lambda(double z);
/* log λ and log(1 − λ), accurate for every finite z (through softplus:
 * λ = σ(2z), log σ(u) = −log(1 + e^−u)). */
void tfm_gate_log_lambda(double z, double *log_lam, double *log_rest);
/* dλ/dθ (n) = (1 − tanh² z) / 2 · x = 2 λ (1 − λ) x, z = θ·x. */
void tfm_gate_dlambda(const double *theta, const double *x, uint32_t n, double *out);
/* log(λ e^lg + (1 − λ) e^lp) from log λ, log(1 − λ) and the two models'
 * log-probabilities lg, lp (<= 0, −INFINITY allowed), by logsumexp. */
double tfm_mix_logprob(double log_lam, double log_rest, double lg, double lp);

/* What the gate is fitted on or evaluated over: n sentences of dim
 * features each, x (n, dim) row-major; sentence i has ntok[i] target
 * tokens, whose log-probabilities under M_G and M_P are lg and lp, one
 * after another in sentence order (sum of ntok entries). All borrowed. */
struct tfm_gate_data {
	uint32_t n, dim;
	const double *x;
	const uint32_t *ntok;
	const double *lg, *lp;
};

/* The mixture's NLL per token, −(1/N) sum_i sum_t log p_mix, N = sum of
 * ntok (0 when N = 0), into *nll; with grad (dim) not NULL its gradient
 * with respect to θ: d log p_mix / dz = 2 (r − λ), r = λ p_G / p_mix (the
 * posterior of the global component), so that no difference of
 * probabilities is formed. *lam_mean (may be NULL): the mean of λ over the
 * tokens. FEDRUN_EINVAL on bad arguments, FEDRUN_ENUMERIC when a token has
 * −INFINITY under both models. */
int tfm_gate_nll(const struct tfm_gate_data *d, const double *theta, double *nll, double *grad,
		 double *lam_mean);

/* Adam (Kingma and Ba 2015, Algorithm 1) on n doubles; m and v (n each)
 * start zeroed with t = 0, and step advances t. */
struct tfm_adam {
	double lr, beta1, beta2, eps;
	uint64_t t;
	double *m, *v;
};
void tfm_adam_step(struct tfm_adam *a, uint32_t n, const double *grad, double *theta);

/* Fits θ (d->dim, its starting value on entry) with `steps` full-batch
 * Adam steps of learning rate lr on the gate NLL. *nll_start and *nll_end
 * (may be NULL): the NLL before the first and after the last step. 0 or a
 * negative FEDRUN_E*. */
int tfm_gate_fit(const struct tfm_gate_data *d, uint32_t steps, double lr, double *theta,
		 double *nll_start, double *nll_end);

#endif
