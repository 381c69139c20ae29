/* SPDX-License-Identifier: Apache-2.0 */
/* Fully connected layer y = x w^T + b (PyTorch's nn.Linear layout) on the
 * CPU backend: the bias is broadcast into y and one sgemm adds the product;
 * the backward pass is two sgemms and a column sum. */
#include "config.h"
#include <limits.h>
#include "fedrun/error.h"
#include "cpu.h"

static int linear_check(const char *op, uint32_t N, uint32_t in, uint32_t out)
{
	if (N > INT_MAX || in > INT_MAX || out > INT_MAX)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: dimension beyond INT_MAX (N=%u, in=%u, out=%u)", op, N, in,
				    out);
	return 0;
}

int nn_cpu_linear_forward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
			  const float *w, const float *b, float *y)
{
	int rc = linear_check("linear_forward", N, in, out);
	if (rc)
		return rc;
	if (!N || !out)
		return 0;
	if (!y || (in && (!x || !w)))
		return fedrun_error(FEDRUN_EINVAL, "linear_forward: NULL array");
	nn_cpu_rows_fill(ctx, N, out, out, b, y); /* (N,out) */
	/* y (N,out) += x (N,in) . w^T (in,out) */
	return nn_cpu_gemm_mt(ctx, false, true, (int)N, (int)out, (int)in, 1.0f, x,
			      in ? (int)in : 1, w, in ? (int)in : 1, 1.0f, y, (int)out);
}

int nn_cpu_linear_backward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
			   const float *w, const float *dy, float *dx, float *dw, float *db)
{
	int rc = linear_check("linear_backward", N, in, out);
	if (rc)
		return rc;
	if (!N)
		return 0;
	if ((out && !dy) || (dx && in && out && !w) || (dw && in && out && !x))
		return fedrun_error(FEDRUN_EINVAL, "linear_backward: NULL array");
	int ldi = in ? (int)in : 1, ldo = out ? (int)out : 1;
	if (dx && (rc = nn_cpu_gemm_mt(ctx, false, false, (int)N, (int)in, (int)out, 1.0f, dy, ldo,
				       w, ldi, 0.0f, dx, ldi))) /* dx (N,in) = dy (N,out) . w */
		return rc;
	if (dw && (rc = nn_cpu_gemm_mt(ctx, true, false, (int)out, (int)in, (int)N, 1.0f, dy, ldo,
				       x, ldi, 1.0f, dw, ldi))) /* dw (out,in) += dy^T . x (N,in) */
		return rc;
	if (db)
		nn_cpu_colsum_acc(ctx, N, out, out, dy, db);
	return 0;
}
