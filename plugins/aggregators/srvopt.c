/* SPDX-License-Identifier: Apache-2.0 */
/* Server optimizer steps (see srvopt.h). One element at a time in double,
 * stored in float; the loops are element-wise, so the result does not depend
 * on the number of threads. */
#include "config.h"
#include <math.h>
#include <string.h>
#include "fedrun/error.h"
#include "srvopt.h"

#define PAR_MIN (1u << 16)

int srvopt_init(struct srvopt *o, const struct srvopt_cfg *cfg, uint64_t n)
{
	memset(o, 0, sizeof *o);
	o->cfg = *cfg;
	o->n = n;
	bool adaptive = cfg->method != SRVOPT_SGD;
	if (adaptive || cfg->momentum > 0) {
		o->m = fedrun_arena_alloc(n);
		if (!o->m)
			goto nomem;
		o->blobs[o->nblobs++] = (struct fedrun_state_blob){"m", o->m, n * sizeof(float)};
	}
	if (adaptive) {
		o->v = fedrun_arena_alloc(n);
		if (!o->v)
			goto nomem;
		for (uint64_t i = 0; i < n; i++)
			o->v[i] = (float)cfg->v0;
		o->blobs[o->nblobs++] = (struct fedrun_state_blob){"v", o->v, n * sizeof(float)};
	}
	o->blobs[o->nblobs++] = (struct fedrun_state_blob){"step", &o->step, sizeof o->step};
	return 0;
nomem:
	srvopt_fini(o);
	return fedrun_error(FEDRUN_ENOMEM, "server optimizer: out of memory for %llu moments",
			    (unsigned long long)n);
}

void srvopt_fini(struct srvopt *o)
{
	fedrun_arena_free(o->m);
	fedrun_arena_free(o->v);
	o->m = o->v = NULL;
	o->nblobs = 0;
}

/* Bias corrections of step t: 1 − β^t, or 1 when off. Adagrad's v has no
 * decay, so nothing to correct there. */
static void corrections(const struct srvopt_cfg *c, uint64_t t, double *c1, double *c2)
{
	*c1 = *c2 = 1;
	if (!c->bias_correction || c->method == SRVOPT_SGD)
		return;
	*c1 = 1 - pow(c->beta1, (double)t);
	if (c->method != SRVOPT_ADAGRAD)
		*c2 = 1 - pow(c->beta2, (double)t);
}

struct elem {
	double m, v; /* new moments */
	double dx;   /* x_new − x */
	double jac;  /* ∂x_new / ∂d */
};

/* The rules of Algorithm 2 of Reddi et al. (lines "m_t", "v_t", "x_{t+1}")
 * and FedAvgM, for one element with old moments m0, v0 and direction d. */
static inline struct elem step_elem(const struct srvopt_cfg *c, double c1, double c2, double m0,
				    double v0, double d)
{
	struct elem e;
	if (c->method == SRVOPT_SGD) {
		e.m = c->momentum * m0 + d; /* FedAvgM: v ← β v + Δ */
		e.v = 0;
		e.dx = c->lr * e.m;
		e.jac = c->lr;
		return e;
	}
	double dvdd; /* ∂v/∂d, for the Jacobian */
	e.m = c->beta1 * m0 + (1 - c->beta1) * d;
	switch (c->method) {
	case SRVOPT_ADAM: /* v ← β2 v + (1 − β2) Δ² */
		e.v = c->beta2 * v0 + (1 - c->beta2) * d * d;
		dvdd = 2 * (1 - c->beta2) * d;
		break;
	case SRVOPT_YOGI: { /* v ← v − (1 − β2) Δ² sign(v − Δ²) */
		double diff = v0 - d * d;
		double sgn = (diff > 0) - (diff < 0);
		e.v = v0 - (1 - c->beta2) * d * d * sgn;
		dvdd = -2 * (1 - c->beta2) * d * sgn;
		break;
	}
	default: /* Adagrad: v ← v + Δ² */
		e.v = v0 + d * d;
		dvdd = 2 * d;
		break;
	}
	double mh = e.m / c1, s = sqrt(e.v / c2), den = s + c->tau;
	e.dx = c->lr * mh / den; /* x ← x + η m / (√v + τ) */
	double dsdd = s > 0 ? dvdd / (2 * c2 * s) : 0;
	e.jac = c->lr * ((1 - c->beta1) / c1 / den - mh * dsdd / (den * den));
	return e;
}

void srvopt_apply(struct srvopt *o, uint64_t off, uint64_t len, float *x, const float *d)
{
	const struct srvopt_cfg *c = &o->cfg;
	double c1, c2;
	corrections(c, o->step + 1, &c1, &c2);
	float *m = o->m ? o->m + off : NULL, *v = o->v ? o->v + off : NULL;
#pragma omp parallel for schedule(static) if (len >= PAR_MIN)
	for (uint64_t i = 0; i < len; i++) {
		struct elem e = step_elem(c, c1, c2, m ? m[i] : 0, v ? v[i] : 0, d[i]);
		if (m)
			m[i] = (float)e.m;
		if (v)
			v[i] = (float)e.v;
		x[i] = (float)(x[i] + e.dx);
	}
}

void srvopt_end_round(struct srvopt *o)
{
	o->step++;
}

void srvopt_candidate(const struct srvopt *o, uint64_t off, uint64_t len, const float *x,
		      const float *d, float *out, float *jac)
{
	const struct srvopt_cfg *c = &o->cfg;
	double c1, c2;
	corrections(c, o->step + 1, &c1, &c2);
	const float *m = o->m ? o->m + off : NULL, *v = o->v ? o->v + off : NULL;
#pragma omp parallel for schedule(static) if (len >= PAR_MIN)
	for (uint64_t i = 0; i < len; i++) {
		struct elem e = step_elem(c, c1, c2, m ? m[i] : 0, v ? v[i] : 0, d[i]);
		out[i] = (float)(x[i] + e.dx);
		if (jac)
			jac[i] = (float)e.jac;
	}
}
