/* SPDX-License-Identifier: Apache-2.0 */
/* Parallel, deterministic vector kernels (see fedrun/vec.h). Reductions sum
 * blocks of BLOCK elements each into their own slot, then add the slots in
 * order: the same bits whatever the thread count. */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/vec.h"

#define BLOCK 4096
/* Below this, a parallel region costs more than it saves. */
#define PAR_MIN (1u << 16)

void fedrun_vec_axpy(uint64_t n, float a, const float *x, float *y)
{
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
	for (uint64_t i = 0; i < n; i++)
		y[i] += a * x[i];
}

void fedrun_vec_scale(uint64_t n, float a, float *x)
{
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
	for (uint64_t i = 0; i < n; i++)
		x[i] *= a;
}

void fedrun_vec_sub(uint64_t n, const float *a, const float *b, float *out)
{
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
	for (uint64_t i = 0; i < n; i++)
		out[i] = a[i] - b[i];
}

void fedrun_vec_wsum(uint64_t n, uint32_t k, const float *const *x, const float *w,
		     float *y)
{
	uint64_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t lo = b * BLOCK, len = n - lo < BLOCK ? n - lo : BLOCK;
		float acc[BLOCK];
		memcpy(acc, y + lo, len * sizeof *acc);
		for (uint32_t j = 0; j < k; j++) {
			if (!x[j])
				continue;
			const float *xj = x[j] + lo;
			float wj = w[j];
#pragma omp simd
			for (uint64_t i = 0; i < len; i++)
				acc[i] += wj * xj[i];
		}
		memcpy(y + lo, acc, len * sizeof *acc);
	}
}

void fedrun_vec_wsum_d(uint64_t n, uint32_t k, const float *const *x, const double *w,
		       double *y)
{
	uint64_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t lo = b * BLOCK, len = n - lo < BLOCK ? n - lo : BLOCK;
		double *acc = y + lo; /* a block stays in cache across the k updates */
		for (uint32_t j = 0; j < k; j++) {
			if (!x[j])
				continue;
			const float *xj = x[j] + lo;
			double wj = w[j];
#pragma omp simd
			for (uint64_t i = 0; i < len; i++)
				acc[i] += wj * (double)xj[i];
		}
	}
}

/* Sums f over blocks deterministically. */
#define BLOCKED_REDUCE(n, EXPR)                                                  \
	do {                                                                     \
		uint64_t nb_ = ((n) + BLOCK - 1) / BLOCK;                        \
		double stack_[64], *part_ = nb_ <= 64 ? stack_ : malloc(nb_ * sizeof(double)); \
		if (!part_) { /* no memory: fall back to one serial pass */    \
			double s_ = 0;                                           \
			for (uint64_t i = 0; i < (n); i++)                       \
				s_ += (EXPR);                                    \
			return s_;                                               \
		}                                                                \
		_Pragma("omp parallel for schedule(static) if ((n) >= PAR_MIN)") \
		for (uint64_t b_ = 0; b_ < nb_; b_++) {                          \
			uint64_t lo_ = b_ * BLOCK, hi_ = lo_ + BLOCK < (n) ? lo_ + BLOCK : (n); \
			double s_ = 0;                                           \
			for (uint64_t i = lo_; i < hi_; i++)                     \
				s_ += (EXPR);                                    \
			part_[b_] = s_;                                          \
		}                                                                \
		double total_ = 0;                                               \
		for (uint64_t b_ = 0; b_ < nb_; b_++)                            \
			total_ += part_[b_];                                     \
		if (part_ != stack_)                                             \
			free(part_);                                             \
		return total_;                                                   \
	} while (0)

double fedrun_vec_dot(uint64_t n, const float *x, const float *y)
{
	BLOCKED_REDUCE(n, (double)x[i] * y[i]);
}

static double sumsq(uint64_t n, const float *x)
{
	BLOCKED_REDUCE(n, (double)x[i] * x[i]);
}

static double sumsq_diff(uint64_t n, const float *x, const float *y)
{
	BLOCKED_REDUCE(n, ((double)x[i] - y[i]) * ((double)x[i] - y[i]));
}

double fedrun_vec_asum(uint64_t n, const float *x)
{
	BLOCKED_REDUCE(n, fabs((double)x[i]));
}

double fedrun_vec_nrm2(uint64_t n, const float *x)
{
	return sqrt(sumsq(n, x));
}

double fedrun_vec_dist2(uint64_t n, const float *x, const float *y)
{
	return sqrt(sumsq_diff(n, x, y));
}

bool fedrun_vec_finite(uint64_t n, const float *x, uint64_t *bad)
{
	for (uint64_t i = 0; i < n; i++) {
		if (!isfinite(x[i])) {
			if (bad)
				*bad = i;
			return false;
		}
	}
	return true;
}
