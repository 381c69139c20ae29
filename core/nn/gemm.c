/* SPDX-License-Identifier: Apache-2.0 */
/* Matrix products of the CPU backend: thin, checked wrappers over
 * cblas_sgemm (row-major), which every other kernel uses for its products.
 * Any CBLAS works; OpenBLAS is the default. */
#include "config.h"
#include <cblas.h>
#include <limits.h>
#include <stddef.h>
#include "fedrun/error.h"
#include "cpu.h"

static void sgemm1(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float *a,
		   int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	if (m == 0 || n == 0)
		return;
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
		    ldc);
}

int nn_cpu_gemm(const void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
		const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	if (nn_cpu_bf16(ctx))
		return nn_bf16_gemm(ctx, false, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
				    beta, c, ldc);
	sgemm1(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	return 0;
}

/* Products large enough to share among threads are cut into blocks of
 * NN_GEMM_BLOCK rows or columns of C (along the longer side), one serial BLAS
 * call each, spread over the context's OpenMP threads. The blocks depend on
 * the shape alone, never on the thread count, and each element of C is
 * computed by one call over all of k, so every thread count gives the same
 * bits; OpenBLAS's own threads (off in runs: engine.c) would not. A block
 * of 128 re-packs the other operand once per 128 rows or columns, under 1%
 * of the block's multiply-adds. */

int nn_cpu_gemm_mt(const void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
		   const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	if (nn_cpu_bf16(ctx)) /* the same blocks, bf16.c */
		return nn_bf16_gemm(ctx, true, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
				    beta, c, ldc);
	if (m == 0 || n == 0)
		return 0;
	const int nb = nn_gemm_blocks(m, n, k);
	if (nb == 1) {
		sgemm1(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
		return 0;
	}
	bool rows = m >= n;
	int len = rows ? m : n;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
	for (int i = 0; i < nb; i++) {
		ptrdiff_t o = (ptrdiff_t)i * NN_GEMM_BLOCK;
		int w = len - (int)o < NN_GEMM_BLOCK ? len - (int)o : NN_GEMM_BLOCK;
		if (rows) /* C rows o..o+w: op(A) rows, that is A's rows or columns */
			sgemm1(trans_a, trans_b, w, n, k, alpha, trans_a ? a + o : a + o * lda, lda,
			       b, ldb, beta, c + o * ldc, ldc);
		else /* C columns o..o+w: op(B) columns */
			sgemm1(trans_a, trans_b, m, w, k, alpha, a, lda,
			       trans_b ? b + o * ldb : b + o, ldb, beta, c + o, ldc);
	}
	return 0;
}

static int max1(int v)
{
	return v > 1 ? v : 1;
}

/* The argument checks of cblas_sgemm, reported instead of printed (the
 * reference CBLAS prints and some builds exit). */
static int gemm_check(const char *op, bool ta, bool tb, int m, int n, int k, const float *a,
		      int lda, const float *b, int ldb, const float *c, int ldc)
{
	if (m < 0 || n < 0 || k < 0)
		return fedrun_error(FEDRUN_EINVAL, "%s: negative dimension (m=%d, n=%d, k=%d)", op,
				    m, n, k);
	int need_a = max1(ta ? m : k), need_b = max1(tb ? k : n), need_c = max1(n);
	if (lda < need_a)
		return fedrun_error(FEDRUN_EINVAL, "%s: lda=%d, need at least %d", op, lda, need_a);
	if (ldb < need_b)
		return fedrun_error(FEDRUN_EINVAL, "%s: ldb=%d, need at least %d", op, ldb, need_b);
	if (ldc < need_c)
		return fedrun_error(FEDRUN_EINVAL, "%s: ldc=%d, need at least %d", op, ldc, need_c);
	if (m && n && (!c || (k && (!a || !b))))
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL matrix", op);
	return 0;
}

int nn_cpu_sgemm(void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
		 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	int rc = gemm_check("sgemm", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
	if (rc)
		return rc;
	return nn_cpu_gemm_mt(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int nn_cpu_sgemm_strided_batched(void *ctx, bool trans_a, bool trans_b, int m, int n, int k,
				 float alpha, const float *a, int lda, int64_t stride_a,
				 const float *b, int ldb, int64_t stride_b, float beta, float *c,
				 int ldc, int64_t stride_c, int batch)
{
	static const char op[] = "sgemm_strided_batched";
	int rc = gemm_check(op, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
	if (rc)
		return rc;
	if (batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0)
		return fedrun_error(FEDRUN_EINVAL, "%s: negative batch or stride", op);
	/* One serial BLAS call per problem, in order: OpenBLAS 0.3.21 has no
	 * batched sgemm. The attention's products are small (sequence by head
	 * width); they are not spread over the context's threads yet. */
	if (m == 0 || n == 0)
		return 0;
	for (int i = 0; i < batch && rc == 0; i++)
		rc =
		    nn_cpu_gemm(ctx, trans_a, trans_b, m, n, k, alpha, a ? a + i * stride_a : NULL,
				lda, b ? b + i * stride_b : NULL, ldb, beta, c + i * stride_c, ldc);
	return rc;
}
