/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the nn test programs: random arrays drawn from a fixed
 * fedrun_rng stream, float/double copies, and the error measures the tests
 * state their tolerances in. */
#ifndef FEDRUN_TESTS_NN_TESTUTIL_H
#define FEDRUN_TESTS_NN_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/rng.h"

/* Asserts that the error `expr` is below `tol`. With NN_TEST_VERBOSE set in
 * the environment, also prints every error measured, which is how the
 * tolerances in the tests were calibrated. Used inside START_TEST (_i). */
#define TU_ASSERT_ERR(expr, tol, what)                                                             \
	do {                                                                                       \
		double e_ = (expr);                                                                \
		if (getenv("NN_TEST_VERBOSE"))                                                     \
			printf("%s[%d] %s: error %.3g (tolerance %.3g)\n", __func__, _i, (what),   \
			       e_, (double)(tol));                                                 \
		ck_assert_msg(e_ < (tol), "%s: error %g, tolerance %g", (what), e_,                \
			      (double)(tol));                                                      \
	} while (0)

/* A float array with uniform values in [lo, hi). Never NULL (tests abort
 * through check's ck_assert on a NULL anyway). */
static inline float *tu_rand(struct fedrun_rng *r, uint64_t n, double lo, double hi)
{
	float *v = malloc((n ? n : 1) * sizeof *v);
	for (uint64_t i = 0; v && i < n; i++)
		v[i] = (float)(lo + (hi - lo) * fedrun_rng_uniform(r));
	return v;
}

/* A double copy of a float array (exact). */
static inline double *tu_dbl(const float *v, uint64_t n)
{
	double *d = malloc((n ? n : 1) * sizeof *d);
	for (uint64_t i = 0; d && i < n; i++)
		d[i] = v ? v[i] : 0.0;
	return d;
}

static inline float *tu_zeros(uint64_t n)
{
	return calloc(n ? n : 1, sizeof(float));
}

static inline double *tu_dzeros(uint64_t n)
{
	return calloc(n ? n : 1, sizeof(double));
}

static inline float *tu_fill(uint64_t n, float value)
{
	float *v = malloc((n ? n : 1) * sizeof *v);
	for (uint64_t i = 0; v && i < n; i++)
		v[i] = value;
	return v;
}

/* Normwise error of a float result against a double oracle:
 * max_i |a_i - r_i| / max(max_i |r_i|, floor). An entry that is NaN makes
 * the error infinite. */
static inline double tu_err(const float *a, const double *r, uint64_t n, double floor)
{
	double m = floor, e = 0.0;
	for (uint64_t i = 0; i < n; i++)
		m = fabs(r[i]) > m ? fabs(r[i]) : m;
	for (uint64_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - r[i]);
		if (isnan(d))
			return INFINITY;
		e = d > e ? d : e;
	}
	return e / m;
}

/* The same for two double arrays. */
static inline double tu_err_d(const double *a, const double *r, uint64_t n, double floor)
{
	double m = floor, e = 0.0;
	for (uint64_t i = 0; i < n; i++)
		m = fabs(r[i]) > m ? fabs(r[i]) : m;
	for (uint64_t i = 0; i < n; i++) {
		double d = fabs(a[i] - r[i]);
		if (isnan(d))
			return INFINITY;
		e = d > e ? d : e;
	}
	return e / m;
}

/* Relative L2 error ||a - r|| / ||r|| of two float arrays (r nonzero). */
static inline double tu_rel_l2(const float *a, const float *r, uint64_t n)
{
	double e = 0.0, m = 0.0;
	for (uint64_t i = 0; i < n; i++) {
		double d = (double)a[i] - (double)r[i];
		e += d * d;
		m += (double)r[i] * (double)r[i];
	}
	return isnan(e) ? INFINITY : sqrt(e / m);
}

/* The error a bf16 context may add to a result that passes through S
 * matrix products in sequence, relative to the FP32 context's (normwise,
 * L2). bf16 has 8 significant bits: rounding an operand to nearest errs
 * by a relative |d| <= u = 2^-8. A product's term a_k b_k then carries
 * (1 + d_a)(1 + d_b), a relative error of at most 2u + u^2 ~ 2u; the FP32
 * sums add 2^-24, negligible. The terms' errors d_k are independent and
 * of mean zero (round to nearest of data not on bf16's grid), so the
 * error sum_k a_k b_k d_k of an entry c of C has variance <= (2u)^2
 * sum_k (a_k b_k)^2, which for a sum of incoherent terms (weights of random
 * sign, as a model has at and near its initialisation) is (2u)^2 E[c^2]:
 * a product's relative rms error is <= 2u. To first order the errors of
 * the S products on the path (forward, and the two backward products dX
 * and dW of each for a gradient) are independent and add in quadrature,
 * each reaching the result with a sensitivity <= 1 (layer norm, the gates'
 * sigmoids and tanh have Jacobians of norm <= 1, and the initialisation
 * keeps activations O(1), so no stage amplifies a relative error): the
 * relative rms error is <= 2u sqrt(S). With lambda = 3 standard deviations
 * of headroom (Hoeffding: a deviation beyond them has probability
 * <= 2 exp(-4.5) per entry, far less for a norm over many entries) the
 * bound is 6u sqrt(S). A broken bf16 path (operands lost or zeroed, a
 * stale weight copy) errs by O(1). */
#define TU_BF16_BOUND(S) (6.0 * 0x1p-8 * sqrt((double)(S)))

/* Asserts that a bf16 context's loss and gradient (l16, g16) differ from
 * the FP32 context's (l32, g32) by less than TU_BF16_BOUND of S_f (the
 * loss: the forward products) and of S (the gradient), and by more than 0
 * (the bf16 context really rounded); `what` names the case. */
static inline void tu_bf16_check(const char *what, int _i, double l16, double l32, const float *g16,
				 const float *g32, uint64_t n, double S_f, double S)
{
	char name[128];
	const double el = fabs(l16 - l32) / fabs(l32), eg = tu_rel_l2(g16, g32, n);
	snprintf(name, sizeof name, "%s: loss", what);
	TU_ASSERT_ERR(el, TU_BF16_BOUND(S_f), name);
	ck_assert_msg(el > 0, "%s: the bf16 loss equals the FP32 one", name);
	snprintf(name, sizeof name, "%s: gradient", what);
	TU_ASSERT_ERR(eg, TU_BF16_BOUND(S), name);
	ck_assert_msg(eg > 0, "%s: the bf16 gradient equals the FP32 one", name);
}

/* The two networks of a bf16-against-FP32 test, to tu_bf16_steps: their
 * parameters and gradients (total floats each), and a loss callback that
 * fills the gradient of the FP32 network (bf16 0) or of the bf16 one. */
struct tu_bf16_pair {
	float *p32, *g32, *p16, *g16;
	uint64_t total;
	double (*loss)(void *ctx, int bf16);
	void *ctx;
};

/* The steps of that test: four times, the FP32 parameters copied to the
 * bf16 network, both losses and gradients from zero, tu_bf16_check (case
 * _i, "ISA, step K"), then an SGD step of 0.5 along the FP32 gradient, so
 * that the later checks are at other points than the initialisation. */
static inline void tu_bf16_steps(const struct tu_bf16_pair *q, const char *isa, int _i, double S_f,
				 double S)
{
	for (int step = 0; step <= 3; step++) {
		memset(q->g32, 0, q->total * sizeof *q->g32);
		memset(q->g16, 0, q->total * sizeof *q->g16);
		memcpy(q->p16, q->p32, q->total * sizeof *q->p16);
		const double l32 = q->loss(q->ctx, 0), l16 = q->loss(q->ctx, 1);
		char what[64];
		snprintf(what, sizeof what, "%s, step %d", isa, step);
		tu_bf16_check(what, _i, l16, l32, q->g16, q->g32, q->total, S_f, S);
		for (uint64_t j = 0; j < q->total; j++)
			q->p32[j] -= 0.5f * q->g32[j];
	}
}

#endif
