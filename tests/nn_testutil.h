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

#endif
