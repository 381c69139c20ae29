/* SPDX-License-Identifier: Apache-2.0 */
/* The domain expert's gate (FedNMT sec. 2.5), λ(x) = (1 + tanh(θ·x)) / 2,
 * its mixture of two models' token log-probabilities, the mixture's NLL
 * and gradient, and the Adam fit of θ; see expert.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "expert.h"

double tfm_gate_z(const double *theta, const double *x, uint32_t n)
{
	double z = 0.0;
	for (uint32_t j = 0; j < n; j++)
		z += theta[j] * x[j];
	return z;
}

/* σ(u) without overflow for either sign of u. */
static double sigmoid(double u)
{
	if (u >= 0.0)
		return 1.0 / (1.0 + exp(-u));
	const double e = exp(u);
	return e / (1.0 + e);
}

/* log(1 + e^u) without overflow or cancellation. */
static double softplus(double u)
{
	return u > 0.0 ? u + log1p(exp(-u)) : log1p(exp(u));
}

double tfm_gate_lambda(double z)
{
	/* (1 + tanh z) / 2 = σ(2z); the σ form keeps the digits of a λ near 0,
	 * which 1 + tanh z would lose. */
	return sigmoid(2.0 * z);
}

void tfm_gate_log_lambda(double z, double *log_lam, double *log_rest)
{
	*log_lam = -softplus(-2.0 * z);
	*log_rest = -softplus(2.0 * z);
}

void tfm_gate_dlambda(const double *theta, const double *x, uint32_t n, double *out)
{
	const double lam = tfm_gate_lambda(tfm_gate_z(theta, x, n));
	const double k = 2.0 * lam * (1.0 - lam);
	for (uint32_t j = 0; j < n; j++)
		out[j] = k * x[j];
}

double tfm_mix_logprob(double log_lam, double log_rest, double lg, double lp)
{
	const double a = log_lam + lg, b = log_rest + lp;
	const double m = a > b ? a : b, s = a > b ? b : a;
	if (m == -INFINITY)
		return -INFINITY;
	return m + log1p(exp(s - m));
}

int tfm_gate_nll(const struct tfm_gate_data *d, const double *theta, double *nll, double *grad,
		 double *lam_mean)
{
	if (!d || !theta || !nll || (d->n && (!d->x || !d->ntok || !d->lg || !d->lp)) || !d->dim)
		return fedrun_error(FEDRUN_EINVAL, "expert gate: NULL data or theta, or dim 0");
	if (grad)
		memset(grad, 0, d->dim * sizeof *grad);
	double sum = 0.0, lsum = 0.0;
	uint64_t k = 0;
	for (uint32_t i = 0; i < d->n; i++) {
		const double *x = d->x + (uint64_t)i * d->dim;
		const double z = tfm_gate_z(theta, x, d->dim), lam = tfm_gate_lambda(z);
		double ll, lr;
		tfm_gate_log_lambda(z, &ll, &lr);
		double dz = 0.0; /* d(sum of the sentence's log p_mix)/dz */
		for (uint32_t t = 0; t < d->ntok[i]; t++, k++) {
			const double lm = tfm_mix_logprob(ll, lr, d->lg[k], d->lp[k]);
			if (lm == -INFINITY)
				return fedrun_error(FEDRUN_ENUMERIC,
						    "expert gate: sentence %u, token %u has "
						    "probability 0 under both models",
						    i, t);
			sum += lm;
			dz += 2.0 * (exp(ll + d->lg[k] - lm) - lam);
		}
		lsum += lam * d->ntok[i];
		if (grad)
			for (uint32_t j = 0; j < d->dim; j++)
				grad[j] -= dz * x[j];
	}
	*nll = k ? -sum / (double)k : 0.0;
	if (lam_mean)
		*lam_mean = k ? lsum / (double)k : 0.0;
	if (grad && k)
		for (uint32_t j = 0; j < d->dim; j++)
			grad[j] /= (double)k;
	return 0;
}

void tfm_adam_step(struct tfm_adam *a, uint32_t n, const double *grad, double *theta)
{
	a->t++;
	const double c1 = 1.0 - pow(a->beta1, (double)a->t), c2 = 1.0 - pow(a->beta2, (double)a->t);
	for (uint32_t j = 0; j < n; j++) {
		a->m[j] = a->beta1 * a->m[j] + (1.0 - a->beta1) * grad[j];
		a->v[j] = a->beta2 * a->v[j] + (1.0 - a->beta2) * grad[j] * grad[j];
		theta[j] -= a->lr * (a->m[j] / c1) / (sqrt(a->v[j] / c2) + a->eps);
	}
}

int tfm_gate_fit(const struct tfm_gate_data *d, uint32_t steps, double lr, double *theta,
		 double *nll_start, double *nll_end)
{
	if (!d || !d->dim || !(lr >= 0.0))
		return fedrun_error(FEDRUN_EINVAL, "expert gate: no data, dim 0 or bad lr %g", lr);
	double *buf = calloc(3 * (size_t)d->dim, sizeof *buf);
	if (!buf)
		return fedrun_error(FEDRUN_ENOMEM, "expert gate: out of memory (%u features)",
				    d->dim);
	struct tfm_adam a = {.lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
			     .m = buf + d->dim, .v = buf + 2 * (size_t)d->dim};
	double nll = 0.0;
	int rc = tfm_gate_nll(d, theta, &nll, buf, NULL);
	if (rc == 0 && nll_start)
		*nll_start = nll;
	for (uint32_t s = 0; s < steps && rc == 0; s++) {
		tfm_adam_step(&a, d->dim, buf, theta);
		rc = tfm_gate_nll(d, theta, &nll, buf, NULL);
	}
	if (rc == 0 && nll_end)
		*nll_end = nll;
	free(buf);
	return rc;
}
