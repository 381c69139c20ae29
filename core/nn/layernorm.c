/* SPDX-License-Identifier: Apache-2.0 */
/* Layer normalization over the last dimension on the CPU backend (Ba et al.
 * 2016, sec. 3; the biased variance, as PyTorch's nn.LayerNorm). Forward:
 * each row is read from L1 three times (sum, squared deviations, output),
 * one pass over memory. Backward: the parameter gradients are column sums,
 * taken block by block of columns over all rows in row order (so the bits do
 * not depend on the thread count), then dx row by row. */
#include "config.h"
#include <math.h>
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"
#include "fastmath.h"
#include "lanes.h"

/* Columns per block of the parameter-gradient sums, and rows summed in
 * float before joining the double total (as core/nn/bias.c). */
#define LN_COL_BLOCK 64
#define LN_COL_RUN 32

static int ln_check(const char *op, uint32_t N, uint32_t D, const void *x, const void *cache)
{
	if (N && !D)
		return fedrun_error(FEDRUN_EINVAL, "%s: D = 0", op);
	if (N && (!x || !cache))
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL x or cache", op);
	return 0;
}

/* One row: statistics into *mean, *rstd and the normalized output. */
NN_SIMD_CLONES
static void ln_row(uint32_t D, float eps, const float *restrict x, const float *gain,
		   const float *bias, float *restrict y, float *mean, float *rstd)
{
	const float m = nn_lanes_sum(D, x) / (float)D;
	const float var = nn_lanes_sqdev(D, x, m) / (float)D;
	const float r = 1.0f / sqrtf(var + eps);
	*mean = m;
	*rstd = r;
	if (gain && bias) {
#pragma omp simd
		for (uint32_t j = 0; j < D; j++)
			y[j] = (x[j] - m) * r * gain[j] + bias[j];
	} else if (gain) {
#pragma omp simd
		for (uint32_t j = 0; j < D; j++)
			y[j] = (x[j] - m) * r * gain[j];
	} else if (bias) {
#pragma omp simd
		for (uint32_t j = 0; j < D; j++)
			y[j] = (x[j] - m) * r + bias[j];
	} else {
#pragma omp simd
		for (uint32_t j = 0; j < D; j++)
			y[j] = (x[j] - m) * r;
	}
}

int nn_cpu_layernorm_forward(void *ctx, uint32_t N, uint32_t D, float eps, const float *x,
			     const float *gain, const float *bias, float *y, float *cache)
{
	int rc = ln_check("layernorm_forward", N, D, x, cache);
	if (rc)
		return rc;
	if (!(eps >= 0.0f) || isinf(eps))
		return fedrun_error(FEDRUN_EINVAL, "layernorm_forward: eps = %g", (double)eps);
	if (N && !y)
		return fedrun_error(FEDRUN_EINVAL, "layernorm_forward: NULL y");
	float *mean = cache, *rstd = cache + N;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)N * D >= NN_PAR_MIN)
	for (uint32_t i = 0; i < N; i++)
		ln_row(D, eps, x + (uint64_t)i * D, gain, bias, y + (uint64_t)i * D, &mean[i],
		       &rstd[i]);
	return 0;
}

/* dx of one row: with xhat = (x - m) r and g = gain dy,
 *   dx = r (g - mean(g) - xhat mean(g xhat)),
 * the layer-norm Jacobian applied to g. dx may be dy: every dy[j] is read
 * (first loop) before dx[j] is written (second). */
NN_SIMD_CLONES
static void ln_row_dx(uint32_t D, const float *x, const float *gain, float m, float r,
		      const float *dy, float *dx)
{
	const uint32_t nm = D - D % NN_LANES;
	float l1[NN_LANES] = {0}, l2[NN_LANES] = {0};
	for (uint32_t j0 = 0; j0 < nm; j0 += NN_LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < NN_LANES; q++) {
			uint32_t j = j0 + q;
			float g = gain ? gain[j] * dy[j] : dy[j];
			l1[q] += g;
			l2[q] += g * ((x[j] - m) * r);
		}
	}
	float t1 = 0.0f, t2 = 0.0f;
	for (uint32_t j = nm; j < D; j++) {
		float g = gain ? gain[j] * dy[j] : dy[j];
		t1 += g;
		t2 += g * ((x[j] - m) * r);
	}
	const float a = nn_lanes_fold(l1, t1) / (float)D;
	const float c = nn_lanes_fold(l2, t2) / (float)D;
#pragma omp simd
	for (uint32_t j = 0; j < D; j++) {
		float g = gain ? gain[j] * dy[j] : dy[j];
		dx[j] = r * (g - a - (x[j] - m) * r * c);
	}
}

/* Column sums of dy * xhat (into sg) and dy (into sb) for the len columns
 * starting at x, dy, over all N rows in order; either sum may be NULL. */
NN_SIMD_CLONES
static void ln_cols(uint32_t N, uint32_t D, uint32_t len, const float *x, const float *dy,
		    const float *mean, const float *rstd, double *sg, double *sb)
{
	float fg[LN_COL_BLOCK], fb[LN_COL_BLOCK];
	for (uint32_t r0 = 0; r0 < N; r0 += LN_COL_RUN) {
		uint32_t r1 = N - r0 < LN_COL_RUN ? N : r0 + LN_COL_RUN;
		for (uint32_t j = 0; j < len; j++)
			fg[j] = fb[j] = 0.0f;
		for (uint32_t i = r0; i < r1; i++) {
			const float *xr = x + (uint64_t)i * D, *dr = dy + (uint64_t)i * D;
			const float m = mean[i], r = rstd[i];
#pragma omp simd
			for (uint32_t j = 0; j < len; j++) {
				fg[j] += dr[j] * ((xr[j] - m) * r);
				fb[j] += dr[j];
			}
		}
		for (uint32_t j = 0; sg && j < len; j++)
			sg[j] += fg[j];
		for (uint32_t j = 0; sb && j < len; j++)
			sb[j] += fb[j];
	}
}

int nn_cpu_layernorm_backward(void *ctx, uint32_t N, uint32_t D, const float *x, const float *gain,
			      const float *cache, const float *dy, float *dx, float *dgain,
			      float *dbias)
{
	int rc = ln_check("layernorm_backward", N, D, x, cache);
	if (rc)
		return rc;
	if (N && !dy)
		return fedrun_error(FEDRUN_EINVAL, "layernorm_backward: NULL dy");
	if (!N)
		return 0;
	const float *mean = cache, *rstd = cache + N;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
	const int par = (uint64_t)N * D >= NN_PAR_MIN;
	/* Parameter gradients first: they read dy, which dx may overwrite. */
	if (dgain || dbias) {
		const uint32_t nb = (D + LN_COL_BLOCK - 1) / LN_COL_BLOCK;
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
		for (uint32_t blk = 0; blk < nb; blk++) {
			uint32_t c0 = blk * LN_COL_BLOCK;
			uint32_t len = D - c0 < LN_COL_BLOCK ? D - c0 : LN_COL_BLOCK;
			double sg[LN_COL_BLOCK] = {0}, sb[LN_COL_BLOCK] = {0};
			ln_cols(N, D, len, x + c0, dy + c0, mean, rstd, dgain ? sg : NULL,
				dbias ? sb : NULL);
			for (uint32_t j = 0; dgain && j < len; j++)
				dgain[c0 + j] += (float)sg[j];
			for (uint32_t j = 0; dbias && j < len; j++)
				dbias[c0 + j] += (float)sb[j];
		}
	}
	if (dx) {
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
		for (uint32_t i = 0; i < N; i++)
			ln_row_dx(D, x + (uint64_t)i * D, gain, mean[i], rstd[i],
				  dy + (uint64_t)i * D, dx + (uint64_t)i * D);
	}
	return 0;
}
