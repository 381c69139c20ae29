/* SPDX-License-Identifier: Apache-2.0 */
/* Element-wise activations on the CPU backend, forward and backward (the
 * backward recomputes f'(x) from the forward's input). GELU is the tanh
 * approximation of Hendrycks and Gimpel (2016, sec. 2), as in GPT-2:
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); GELU_ERF the exact
 * x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), as BERT (PyTorch's F.gelu). */
#include <math.h>
#include "config.h"
#include "fedrun/error.h"
#include "cpu.h"
#include "fastmath.h"

#define GELU_C 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f
#define SQRT1_2 0.70710678118654752f  /* 1 / sqrt(2) */
#define INV_SQRT_2PI 0.3989422804014327f /* 1 / sqrt(2 pi) */
#define ACT_CHUNK 4096 /* elements per unit of parallel work */

static int act_check(const char *op, enum fedrun_act act, uint64_t n, const void *a, const void *b,
		     const void *c)
{
	if ((unsigned)act > FEDRUN_ACT_LAST)
		return fedrun_error(FEDRUN_EINVAL, "%s: unknown activation %d", op, (int)act);
	if (n && (!a || !b || !c))
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL array", op);
	return 0;
}

/* y = f(x) over len elements; y may be x. */
NN_SIMD_CLONES
static void act_fwd_chunk(enum fedrun_act act, uint32_t len, const float *x, float *y)
{
	switch (act) {
	case FEDRUN_ACT_RELU:
#pragma omp simd
		for (uint32_t i = 0; i < len; i++)
			y[i] = x[i] > 0.0f ? x[i] : 0.0f;
		break;
	case FEDRUN_ACT_GELU:
#pragma omp simd
		for (uint32_t i = 0; i < len; i++) {
			float v = x[i];
			y[i] = 0.5f * v * (1.0f + nn_tanhf(GELU_C * (v + GELU_A * v * v * v)));
		}
		break;
	case FEDRUN_ACT_GELU_ERF:
		for (uint32_t i = 0; i < len; i++)
			y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * SQRT1_2));
		break;
	case FEDRUN_ACT_TANH:
#pragma omp simd
		for (uint32_t i = 0; i < len; i++)
			y[i] = nn_tanhf(x[i]);
		break;
	case FEDRUN_ACT_SIGMOID:
#pragma omp simd
		for (uint32_t i = 0; i < len; i++)
			y[i] = nn_sigmoidf(x[i]);
		break;
	}
}

/* dx = dy f'(x) over len elements; dx may be dy. */
NN_SIMD_CLONES
static void act_bwd_chunk(enum fedrun_act act, uint32_t len, const float *x, const float *dy,
			  float *dx)
{
	switch (act) {
	case FEDRUN_ACT_RELU:
#pragma omp simd
		for (uint32_t i = 0; i < len; i++)
			dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
		break;
	case FEDRUN_ACT_GELU:
		/* d/dx = 0.5 (1 + th) + 0.5 x (1 - th^2) sqrt(2/pi) (1 + 3 a x^2) */
#pragma omp simd
		for (uint32_t i = 0; i < len; i++) {
			float v = x[i];
			float th = nn_tanhf(GELU_C * (v + GELU_A * v * v * v));
			float du = GELU_C * (1.0f + 3.0f * GELU_A * v * v);
			dx[i] = dy[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
		}
		break;
	case FEDRUN_ACT_GELU_ERF:
		/* d/dx = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
		for (uint32_t i = 0; i < len; i++) {
			float v = x[i];
			dx[i] = dy[i] * (0.5f * (1.0f + erff(v * SQRT1_2)) +
					 v * INV_SQRT_2PI * expf(-0.5f * v * v));
		}
		break;
	case FEDRUN_ACT_TANH:
#pragma omp simd
		for (uint32_t i = 0; i < len; i++) {
			float th = nn_tanhf(x[i]);
			dx[i] = dy[i] * (1.0f - th * th);
		}
		break;
	case FEDRUN_ACT_SIGMOID:
#pragma omp simd
		for (uint32_t i = 0; i < len; i++) {
			float s = nn_sigmoidf(x[i]);
			dx[i] = dy[i] * s * (1.0f - s);
		}
		break;
	}
}

int nn_cpu_act_forward(void *ctx, enum fedrun_act act, uint64_t n, const float *x, float *y)
{
	int rc = act_check("act_forward", act, n, x, y, y);
	if (rc)
		return rc;
	const uint64_t nch = (n + ACT_CHUNK - 1) / ACT_CHUNK;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if (n >= NN_PAR_MIN)
	for (uint64_t c = 0; c < nch; c++) {
		uint64_t i0 = c * ACT_CHUNK;
		act_fwd_chunk(act, n - i0 < ACT_CHUNK ? (uint32_t)(n - i0) : ACT_CHUNK, x + i0,
			      y + i0);
	}
	return 0;
}

int nn_cpu_act_backward(void *ctx, enum fedrun_act act, uint64_t n, const float *x, const float *dy,
			float *dx)
{
	int rc = act_check("act_backward", act, n, x, dy, dx);
	if (rc)
		return rc;
	const uint64_t nch = (n + ACT_CHUNK - 1) / ACT_CHUNK;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if (n >= NN_PAR_MIN)
	for (uint64_t c = 0; c < nch; c++) {
		uint64_t i0 = c * ACT_CHUNK;
		act_bwd_chunk(act, n - i0 < ACT_CHUNK ? (uint32_t)(n - i0) : ACT_CHUNK, x + i0,
			      dy + i0, dx + i0);
	}
	return 0;
}
