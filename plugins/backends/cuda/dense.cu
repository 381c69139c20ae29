/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend's matrix products (cuBLAS: FP32, TF32 or BF16) and element-wise
 * layers: linear, embedding, dropout, activations, positional encoding, and
 * the local optimizer. Kernels are built with --fmad=false, so each float
 * operation rounds as the CPU backend's does where the formula is the same
 * (the optimizer's updates, dropout's scaling); transcendental functions
 * (expf, tanhf) are CUDA's, within an ulp or two of glibc's. */
#include <cub/device/device_radix_sort.cuh>
#include <math.h>
#include "fedrun/plugin.h"
#include "internal.cuh"

/* ---- matrix products ---------------------------------------------------- */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the
 * operands and the m, n roles, keep the transposition flags. */

/* ---- bf16 operands ---- */

/* nb x nh matrices of r rows of c floats, matrix (b, h) from src + b sb +
 * h sh with row stride ld, to bf16 (round to nearest even) at dst + (b nh
 * + h) ds with row stride dld. Block (32, 8): x over the columns, y over
 * the rows; z over the matrices. No division per element. */
__global__ void to_bf16(int nmat, int nh, int r, int c, const float *__restrict__ src,
			int64_t sb, int64_t sh, int64_t ld, __nv_bfloat16 *__restrict__ dst,
			int64_t dld, int64_t ds)
{
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= c)
		return;
	for (int q = blockIdx.z; q < nmat; q += gridDim.z) {
		const float *s = src + (int64_t)(q / nh) * sb + (int64_t)(q % nh) * sh + j;
		__nv_bfloat16 *d = dst + (int64_t)q * ds + j;
		for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < r;
		     i += gridDim.y * blockDim.y)
			d[(int64_t)i * dld] = __float2bfloat16_rn(s[(int64_t)i * ld]);
	}
}

/* A stored matrix operand of a product (rows of cols floats, row stride
 * ld), nb x nh of them (strides sb, sh), in bf16: *out, row stride *dld,
 * one matrix every *ds elements. Rows are padded to 8 elements (16 bytes),
 * as tensor cores like them. Converted into the context's buffer `slot`,
 * valid until the next product; a single matrix inside the declared
 * parameters is kept as a copy (struct cu_wcopy) and converted again only
 * after a write. */
static int bf16_operand(struct cu_ctx *c, const char *op, int slot, const float *x, int rows,
			int cols, int ld, int64_t sb, int64_t sh, int nb, int nh,
			const __nv_bfloat16 **out, int *dld, int64_t *ds)
{
	*dld = (cols + 7) / 8 * 8;
	*ds = (int64_t)rows * *dld;
	__nv_bfloat16 *dst;
	struct cu_wcopy *w = NULL;
	const bool param = nb == 1 && nh == 1 && c->pn && x >= c->pp &&
			   x + (int64_t)(rows - 1) * ld + cols <= c->pp + c->pn;
	if (param) {
		for (uint32_t i = 0; i < c->nw && !w; i++) {
			struct cu_wcopy *e = &c->w[i];
			if (e->ptr == x && e->rows == rows && e->cols == cols && e->ld == ld)
				w = e;
		}
		if (w && w->valid) {
			*out = w->data;
			return 0;
		}
		if (!w) {
			if (c->nw == c->capw) {
				uint32_t cap = c->capw ? 2 * c->capw : 16;
				struct cu_wcopy *g =
				    (struct cu_wcopy *)realloc(c->w, cap * sizeof *g);
				if (!g)
					return fedrun_error(FEDRUN_ENOMEM,
							    "cuda backend %s: parameter copies", op);
				c->w = g;
				c->capw = cap;
			}
			struct cu_wcopy e = {x, rows, cols, ld, *dld, false, NULL};
			CU_TRY(op, cudaMalloc((void **)&e.data, (uint64_t)*ds * 2));
			w = &c->w[c->nw++];
			*w = e;
		}
		dst = w->data;
	} else {
		int rc = cu_grow(c, (void **)&c->bf[slot], &c->bf_bytes[slot],
				 (uint64_t)nb * nh * *ds * 2, op);
		if (rc < 0)
			return rc;
		dst = c->bf[slot];
	}
	const int nmat = nb * nh, gy = rows / 8 + 1;
	const dim3 grid((cols + 31) / 32, gy > 65535 ? 65535 : gy, nmat > 65535 ? 65535 : nmat);
	to_bf16<<<grid, dim3(32, 8), 0, c->stream>>>(nmat, nh, rows, cols, x, sb, sh, ld, dst,
						     *dld, *ds);
	CU_LAUNCHED(op);
	if (w)
		w->valid = true;
	*out = dst;
	return 0;
}

/* op(A) (m,k) and op(B) (k,n) as stored: A (m,k) or (k,m), B (k,n) or (n,k) */
#define A_ROWS (ta ? k : m)
#define A_COLS (ta ? m : k)
#define B_ROWS (tb ? n : k)
#define B_COLS (tb ? k : n)

int cu_gemm(struct cu_ctx *c, const char *op, bool ta, bool tb, int m, int n, int k, float alpha,
	    const float *a, int lda, const float *b, int ldb, float beta, float *cm, int ldc)
{
	if (m == 0 || n == 0)
		return 0;
	const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	const cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	/* (k == 0: C = beta C, which FP32 computes alike) */
	if (c->precision != FEDRUN_PRECISION_BF16 || k == 0) {
		CU_BLAS(op, cublasSgemm(c->blas, ob, oa, n, m, k, &alpha, b, ldb, a, lda, &beta,
					cm, ldc));
		return 0;
	}
	const __nv_bfloat16 *a16, *b16;
	int la, lb;
	int64_t sa, sb;
	int rc = bf16_operand(c, op, 0, a, A_ROWS, A_COLS, lda, 0, 0, 1, 1, &a16, &la, &sa);
	if (rc == 0)
		rc = bf16_operand(c, op, 1, b, B_ROWS, B_COLS, ldb, 0, 0, 1, 1, &b16, &lb, &sb);
	if (rc < 0)
		return rc;
	CU_BLAS(op, cublasGemmEx(c->blas, ob, oa, n, m, k, &alpha, b16, CUDA_R_16BF, lb, a16,
				 CUDA_R_16BF, la, &beta, cm, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
				 CUBLAS_GEMM_DEFAULT));
	return 0;
}

int cu_gemm_batched(struct cu_ctx *c, const char *op, bool ta, bool tb, int m, int n, int k,
		    float alpha, const float *a, int lda, int64_t sa, const float *b, int ldb,
		    int64_t sb, float beta, float *cm, int ldc, int64_t sc, int batch)
{
	if (m == 0 || n == 0 || batch == 0)
		return 0;
	const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	const cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (c->precision != FEDRUN_PRECISION_BF16 || k == 0) {
		CU_BLAS(op, cublasSgemmStridedBatched(c->blas, ob, oa, n, m, k, &alpha, b, ldb, sb,
						      a, lda, sa, &beta, cm, ldc, sc, batch));
		return 0;
	}
	/* an operand with stride 0, the same for every problem, is
	 * converted once */
	const __nv_bfloat16 *a16, *b16;
	int la, lb;
	int64_t da, db;
	int rc = bf16_operand(c, op, 0, a, A_ROWS, A_COLS, lda, sa, 0, sa ? batch : 1, 1, &a16,
			      &la, &da);
	if (rc == 0)
		rc = bf16_operand(c, op, 1, b, B_ROWS, B_COLS, ldb, sb, 0, sb ? batch : 1, 1, &b16,
				  &lb, &db);
	if (rc < 0)
		return rc;
	CU_BLAS(op, cublasGemmStridedBatchedEx(c->blas, ob, oa, n, m, k, &alpha, b16, CUDA_R_16BF,
					       lb, sb ? db : 0, a16, CUDA_R_16BF, la,
					       sa ? da : 0, &beta, cm, CUDA_R_32F, ldc, sc, batch,
					       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

/* ptr[0][i], ptr[1][i], ptr[2][i]: A, B, C of problem i = b nh + h */
template <typename T>
__global__ void head_ptrs(int nb, int nh, const T *a, int64_t sab, int64_t sah, const T *b,
			  int64_t sbb, int64_t sbh, const float *c, int64_t scb, int64_t sch,
			  const void **ptr)
{
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	const int n = nb * nh;
	if (i >= n)
		return;
	const int64_t bi = i / nh, hi = i % nh;
	ptr[i] = a + bi * sab + hi * sah;
	ptr[n + i] = b + bi * sbb + hi * sbh;
	ptr[2 * n + i] = c + bi * scb + hi * sch;
}

int cu_gemm_heads(struct cu_ctx *c, const char *op, bool ta, bool tb, int m, int n, int k,
		  float alpha, const float *a, int lda, int64_t sab, int64_t sah, const float *b,
		  int ldb, int64_t sbb, int64_t sbh, float beta, float *cm, int ldc, int64_t scb,
		  int64_t sch, int nb, int nh)
{
	const int cnt = nb * nh;
	if (m == 0 || n == 0 || cnt == 0)
		return 0;
	const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	const cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	/* queued calls may still read the old arrays: cu_grow waits */
	int rc = cu_grow(c, (void **)&c->ptrs, &c->ptrs_bytes, (uint64_t)cnt * 3 * sizeof(void *),
			 op);
	if (rc < 0)
		return rc;
	const void *const *pa = c->ptrs, *const *pb = c->ptrs + cnt;
	void *const *pc = (void *const *)(c->ptrs + 2 * cnt);
	if (c->precision != FEDRUN_PRECISION_BF16 || k == 0) {
		head_ptrs<<<cu_blocks(cnt, 256), 256, 0, c->stream>>>(
		    nb, nh, a, sab, sah, b, sbb, sbh, cm, scb, sch, c->ptrs);
		CU_LAUNCHED(op);
		/* column-major view: C^T = op(B)^T op(A)^T, as cu_gemm */
		CU_BLAS(op, cublasSgemmBatched(c->blas, ob, oa, n, m, k, &alpha,
					       (const float *const *)pb, ldb,
					       (const float *const *)pa, lda, &beta,
					       (float *const *)pc, ldc, cnt));
		return 0;
	}
	/* every problem's A and B converted, dense, problem i at i da, i db */
	const __nv_bfloat16 *a16, *b16;
	int la, lb;
	int64_t da, db;
	rc = bf16_operand(c, op, 0, a, A_ROWS, A_COLS, lda, sab, sah, nb, nh, &a16, &la, &da);
	if (rc == 0)
		rc = bf16_operand(c, op, 1, b, B_ROWS, B_COLS, ldb, sbb, sbh, nb, nh, &b16, &lb,
				  &db);
	if (rc < 0)
		return rc;
	head_ptrs<<<cu_blocks(cnt, 256), 256, 0, c->stream>>>(nb, nh, a16, nh * da, da, b16,
							      nh * db, db, cm, scb, sch, c->ptrs);
	CU_LAUNCHED(op);
	CU_BLAS(op, cublasGemmBatchedEx(c->blas, ob, oa, n, m, k, &alpha, pb, CUDA_R_16BF, lb, pa,
					CUDA_R_16BF, la, &beta, pc, CUDA_R_32F, ldc, cnt,
					CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

#undef A_ROWS
#undef A_COLS
#undef B_ROWS
#undef B_COLS

static int gemm_check(const char *op, bool ta, bool tb, int m, int n, int k, const float *a,
		      int lda, const float *b, int ldb, const float *c, int ldc)
{
	if (m < 0 || n < 0 || k < 0)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: negative size %d x %d x %d",
				    op, m, n, k);
	if (lda < (ta ? m : k) || ldb < (tb ? k : n) || ldc < n || lda < 1 || ldb < 1 ||
	    ldc < 1)
		return fedrun_error(FEDRUN_EINVAL,
				    "cuda backend %s: leading dimension too small (lda %d, ldb %d, "
				    "ldc %d for %d x %d x %d)",
				    op, lda, ldb, ldc, m, n, k);
	if (m && n && (!c || (k && (!a || !b))))
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL matrix", op);
	return 0;
}

extern "C" int cu_sgemm(void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
			const float *a, int lda, const float *b, int ldb, float beta, float *c,
			int ldc)
{
	struct cu_ctx *cx = cu_enter(ctx, "sgemm");
	if (!cx)
		return FEDRUN_EINVAL;
	int rc = gemm_check("sgemm", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
	if (rc < 0)
		return rc;
	return cu_gemm(cx, "sgemm", trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
		       ldc);
}

extern "C" int cu_sgemm_strided_batched(void *ctx, bool trans_a, bool trans_b, int m, int n,
					int k, float alpha, const float *a, int lda,
					int64_t stride_a, const float *b, int ldb, int64_t stride_b,
					float beta, float *c, int ldc, int64_t stride_c, int batch)
{
	struct cu_ctx *cx = cu_enter(ctx, "sgemm_strided_batched");
	if (!cx)
		return FEDRUN_EINVAL;
	if (batch < 0)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend sgemm_strided_batched: batch %d",
				    batch);
	int rc = gemm_check("sgemm_strided_batched", trans_a, trans_b, m, n, k, a, lda, b, ldb,
			    c, ldc);
	if (rc < 0)
		return rc;
	return cu_gemm_batched(cx, "sgemm_strided_batched", trans_a, trans_b, m, n, k, alpha, a,
			       lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
}

/* ---- column sums -------------------------------------------------------- */

/* Stage 1: part[s][j] = sum of rows [s R, (s+1) R) of column j, rows in
 * order; block (32, 8): the 8 thread rows take every 8th row, then add up
 * in order. Stage 2: out[j] += scale-free sum of the parts in order. */
#define COL_TX 32
#define COL_TY 8
__global__ void colsum_part(uint32_t N, uint32_t D, const float *__restrict__ x, uint64_t ld,
			    uint32_t R, float *__restrict__ part)
{
	__shared__ float acc[COL_TY][COL_TX];
	const uint32_t j = blockIdx.x * COL_TX + threadIdx.x;
	const uint64_t r0 = (uint64_t)blockIdx.y * R;
	uint64_t r1 = r0 + R;
	if (r1 > N)
		r1 = N;
	float s = 0.0f;
	if (j < D)
		for (uint64_t r = r0 + threadIdx.y; r < r1; r += COL_TY)
			s += x[r * ld + j];
	acc[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y == 0 && j < D) {
		float t = 0.0f;
		for (int q = 0; q < COL_TY; q++)
			t += acc[q][threadIdx.x];
		part[(uint64_t)blockIdx.y * D + j] = t;
	}
}

__global__ void colsum_finish(uint32_t S, uint32_t D, const float *__restrict__ part,
			      float *__restrict__ out)
{
	const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= D)
		return;
	float t = 0.0f;
	for (uint32_t s = 0; s < S; s++)
		t += part[(uint64_t)s * D + j];
	out[j] += t;
}

/* Rows per slice: enough slices to fill the GPU when D is narrow; a
 * function of the shape only, so the sums are too. */
static uint32_t colsum_rows(uint32_t N, uint32_t D)
{
	uint32_t R = 64;
	const uint64_t cols = (D + COL_TX - 1) / COL_TX;
	while (cols * ((N + R - 1) / R) > 4096 && R < (1u << 20))
		R *= 2;
	return R;
}

uint64_t cu_colsum_bytes(uint32_t N, uint32_t D)
{
	const uint32_t R = colsum_rows(N, D);
	return (uint64_t)((N + R - 1) / R) * D * sizeof(float);
}

int cu_colsum_acc(struct cu_ctx *c, const char *op, uint32_t N, uint32_t D, const float *x,
		  uint64_t ld, float *out, float *part)
{
	if (!N || !D)
		return 0;
	const uint32_t R = colsum_rows(N, D), S = (N + R - 1) / R;
	const uint32_t cols = (D + COL_TX - 1) / COL_TX;
	if (!part && !(part = (float *)cu_scratch(c, cu_colsum_bytes(N, D), op)))
		return FEDRUN_ENOMEM;
	colsum_part<<<dim3(cols, S), dim3(COL_TX, COL_TY), 0, c->stream>>>(N, D, x, ld, R, part);
	colsum_finish<<<cu_blocks(D, 256), 256, 0, c->stream>>>(S, D, part, out);
	CU_LAUNCHED(op);
	return 0;
}

/* ---- linear ------------------------------------------------------------- */

__global__ void bias_rows(uint32_t N, uint32_t D, const float *__restrict__ b, float *y)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < (uint64_t)N * D)
		y[i] += b[i % D];
}

extern "C" int cu_linear_forward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
				 const float *w, const float *b, float *y)
{
	const char *op = "linear_forward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (N && out && (!y || (in && (!x || !w))))
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL x, w or y", op);
	int rc = cu_gemm(c, op, false, true, (int)N, (int)out, (int)in, 1.0f, x, (int)in, w,
			 (int)in, 0.0f, y, (int)out);
	if (rc < 0 || !b || !N || !out)
		return rc;
	bias_rows<<<cu_blocks((uint64_t)N * out, 256), 256, 0, c->stream>>>(N, out, b, y);
	CU_LAUNCHED(op);
	return 0;
}

extern "C" int cu_linear_backward(void *ctx, uint32_t N, uint32_t in, uint32_t out,
				  const float *x, const float *w, const float *dy, float *dx,
				  float *dw, float *db)
{
	const char *op = "linear_backward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (N && out && !dy)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL dy", op);
	if ((dx && !w) || (dw && !x))
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL w or x", op);
	int rc = 0;
	if (dx && N && in)
		rc = cu_gemm(c, op, false, false, (int)N, (int)in, (int)out, 1.0f, dy, (int)out, w,
			     (int)in, 0.0f, dx, (int)in);
	if (rc == 0 && dw && N)
		rc = cu_gemm(c, op, true, false, (int)out, (int)in, (int)N, 1.0f, dy, (int)out, x,
			     (int)in, 1.0f, dw, (int)in);
	if (rc == 0 && db)
		rc = cu_colsum_acc(c, op, N, out, dy, out, db, NULL);
	return rc;
}

/* ---- embedding ---------------------------------------------------------- */

/* Threads of a block that handles one row of D floats: whole warps, at
 * most 256. */
static unsigned row_threads(uint32_t D)
{
	return D < 256 ? 32 * ((D + 31) / 32) : 256;
}

__global__ void embed_gather(uint32_t N, uint32_t V, uint32_t D, const int32_t *__restrict__ ids,
			     const float *__restrict__ w, float *__restrict__ out,
			     int *__restrict__ bad)
{
	const uint32_t i = blockIdx.x;
	const int32_t id = ids[i];
	if (id < 0 || (uint32_t)id >= V) {
		if (threadIdx.x == 0)
			atomicCAS(bad, -1, (int)i);
		return;
	}
	for (uint32_t d = threadIdx.x; d < D; d += blockDim.x)
		out[(uint64_t)i * D + d] = w[(uint64_t)id * D + d];
}

__global__ void iota_u32(uint32_t n, uint32_t *v)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] = i;
}

/* Row s of the ids sorted stably: when s starts a run of equal ids, add
 * that run's rows of dout, in their original order, to dw's row. */
__global__ void embed_runs(uint32_t N, uint32_t V, uint32_t D, const int32_t *__restrict__ sid,
			   const uint32_t *__restrict__ perm, const float *__restrict__ dout,
			   float *__restrict__ dw)
{
	const uint32_t s = blockIdx.x;
	const int32_t id = sid[s];
	if ((s > 0 && sid[s - 1] == id) || id < 0 || (uint32_t)id >= V)
		return;
	uint32_t e = s + 1;
	while (e < N && sid[e] == id)
		e++;
	for (uint32_t d = threadIdx.x; d < D; d += blockDim.x) {
		float acc = 0.0f;
		for (uint32_t r = s; r < e; r++)
			acc += dout[(uint64_t)perm[r] * D + d];
		dw[(uint64_t)id * D + d] += acc;
	}
}

__global__ void embed_atomic(uint32_t N, uint32_t V, uint32_t D, const int32_t *__restrict__ ids,
			     const float *__restrict__ dout, float *__restrict__ dw)
{
	const uint32_t i = blockIdx.x;
	const int32_t id = ids[i];
	if (id < 0 || (uint32_t)id >= V)
		return;
	for (uint32_t d = threadIdx.x; d < D; d += blockDim.x)
		atomicAdd(&dw[(uint64_t)id * D + d], dout[(uint64_t)i * D + d]);
}

extern "C" int cu_embedding_forward(void *ctx, uint32_t N, uint32_t V, uint32_t D,
				    const int32_t *ids, const float *w, float *out)
{
	const char *op = "embedding_forward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!N || !D)
		return 0;
	if (!ids || !w || !out)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL argument", op);
	int *flag = (int *)cu_scratch(c, sizeof(int), op);
	if (!flag)
		return FEDRUN_ENOMEM;
	CU_TRY(op, cudaMemsetAsync(flag, 0xff, sizeof(int), c->stream));
	embed_gather<<<N, row_threads(D), 0, c->stream>>>(N, V, D, ids, w, out, flag);
	CU_LAUNCHED(op);
	/* an id outside [0, V) is found on the device */
	int bad, rc = cu_read_flag(c, op, flag, &bad);
	if (rc == 0 && bad >= 0)
		rc = fedrun_error(FEDRUN_EINVAL, "cuda backend %s: ids[%d] outside [0, %u)", op, bad,
				  V);
	return rc;
}

extern "C" int cu_embedding_backward(void *ctx, uint32_t N, uint32_t V, uint32_t D,
				     const int32_t *ids, const float *dout, float *dw)
{
	const char *op = "embedding_backward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!N || !D)
		return 0;
	if (!ids || !dout || !dw)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL argument", op);
	const unsigned th = row_threads(D);
	if (!c->deterministic) {
		embed_atomic<<<N, th, 0, c->stream>>>(N, V, D, ids, dout, dw);
		CU_LAUNCHED(op);
		return 0;
	}
	/* Deterministic: a stable radix sort of (id, row) (CUB), then one
	 * block per run of equal ids adds the run's rows in row order. */
	size_t tmp = 0;
	if (cub::DeviceRadixSort::SortPairs(NULL, tmp, (const int32_t *)NULL, (int32_t *)NULL,
					    (const uint32_t *)NULL, (uint32_t *)NULL, (int)N, 0,
					    32, c->stream) != cudaSuccess)
		return fedrun_error(FEDRUN_EIO, "cuda backend %s: CUB sort size", op);
	const uint64_t a = ((uint64_t)N * 4 + 255) / 256 * 256;
	char *s = (char *)cu_scratch(c, 3 * a + tmp, op);
	if (!s)
		return FEDRUN_ENOMEM;
	int32_t *sid = (int32_t *)s;
	uint32_t *rows = (uint32_t *)(s + a), *perm = (uint32_t *)(s + 2 * a);
	iota_u32<<<cu_blocks(N, 256), 256, 0, c->stream>>>(N, rows);
	CU_TRY(op, cub::DeviceRadixSort::SortPairs(s + 3 * a, tmp, ids, sid, rows, perm, (int)N,
						   0, 32, c->stream));
	embed_runs<<<N, th, 0, c->stream>>>(N, V, D, sid, perm, dout, dw);
	CU_LAUNCHED(op);
	return 0;
}

/* ---- dropout ------------------------------------------------------------ */

/* One thread per group of four elements: one Philox block gives their four
 * words (FEDRUN_DROPOUT_THRESHOLD's rule). */
__global__ void dropout_fwd(uint64_t n, struct cu_drop d, float scale, const float *x, float *y,
			    uint8_t *mask)
{
	const uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	const uint64_t i0 = 4 * g;
	if (i0 >= n)
		return;
	uint4 w = cu_philox(d.base + g, d.c2, d.c3, d.k0, d.k1);
	uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
	for (int q = 0; q < 4; q++) {
		uint64_t i = i0 + q;
		if (i < n) {
			uint8_t keep = u[q] >= d.thr;
			mask[i] = keep;
			y[i] = keep ? x[i] * scale : 0.0f;
		}
	}
}

__global__ void dropout_bwd(uint64_t n, float scale, const uint8_t *mask, const float *dy,
			    float *dx)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}

extern "C" int cu_dropout_forward(void *ctx, uint64_t n, float p, struct fedrun_rng *rng,
				  const float *x, float *y, uint8_t *mask)
{
	const char *op = "dropout_forward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!(p >= 0.0f && p < 1.0f))
		return fedrun_error(FEDRUN_EINVAL, "dropout_forward: p = %g outside [0, 1)",
				    (double)p);
	if (n && (!rng || !x || !y || !mask))
		return fedrun_error(FEDRUN_EINVAL, "dropout_forward: NULL argument");
	if (!n)
		return 0;
	struct cu_drop d = cu_drop_take(rng, n, p);
	dropout_fwd<<<cu_blocks((n + 3) / 4, 256), 256, 0, c->stream>>>(n, d, 1.0f / (1.0f - p),
									  x, y, mask);
	CU_LAUNCHED(op);
	return 0;
}

extern "C" int cu_dropout_backward(void *ctx, uint64_t n, float p, const uint8_t *mask,
				   const float *dy, float *dx)
{
	const char *op = "dropout_backward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!(p >= 0.0f && p < 1.0f))
		return fedrun_error(FEDRUN_EINVAL, "dropout_backward: p = %g outside [0, 1)",
				    (double)p);
	if (n && (!mask || !dy || !dx))
		return fedrun_error(FEDRUN_EINVAL, "dropout_backward: NULL argument");
	if (!n)
		return 0;
	dropout_bwd<<<cu_blocks(n, 256), 256, 0, c->stream>>>(n, 1.0f / (1.0f - p), mask, dy, dx);
	CU_LAUNCHED(op);
	return 0;
}

/* ---- activations -------------------------------------------------------- */

__device__ __forceinline__ float act_f(int act, float x)
{
	switch (act) {
	case FEDRUN_ACT_RELU: return x > 0.0f ? x : 0.0f;
	case FEDRUN_ACT_GELU: {
		/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
		float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
		return 0.5f * x * (1.0f + tanhf(u));
	}
	case FEDRUN_ACT_GELU_ERF: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
	case FEDRUN_ACT_TANH: return tanhf(x);
	default: return 1.0f / (1.0f + expf(-x));
	}
}

__device__ __forceinline__ float act_df(int act, float x)
{
	switch (act) {
	case FEDRUN_ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
	case FEDRUN_ACT_GELU: {
		const float k = 0.7978845608028654f;
		float u = k * (x + 0.044715f * x * x * x);
		float t = tanhf(u);
		return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k *
						 (1.0f + 3.0f * 0.044715f * x * x);
	}
	case FEDRUN_ACT_GELU_ERF:
		return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) +
		       x * 0.3989422804014327f * expf(-0.5f * x * x);
	case FEDRUN_ACT_TANH: {
		float t = tanhf(x);
		return 1.0f - t * t;
	}
	default: {
		float s = 1.0f / (1.0f + expf(-x));
		return s * (1.0f - s);
	}
	}
}

__global__ void act_fwd(int act, uint64_t n, const float *x, float *y)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = act_f(act, x[i]);
}

__global__ void act_bwd(int act, uint64_t n, const float *x, const float *dy, float *dx)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dx[i] = dy[i] * act_df(act, x[i]);
}

static int act_check(const char *op, enum fedrun_act act)
{
	if ((unsigned)act > FEDRUN_ACT_LAST)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: unknown activation %d", op,
				    (int)act);
	return 0;
}

extern "C" int cu_act_forward(void *ctx, enum fedrun_act act, uint64_t n, const float *x,
			      float *y)
{
	const char *op = "act_forward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	int rc = act_check(op, act);
	if (rc < 0 || !n)
		return rc;
	if (!x || !y)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL argument", op);
	act_fwd<<<cu_blocks(n, 256), 256, 0, c->stream>>>((int)act, n, x, y);
	CU_LAUNCHED(op);
	return 0;
}

extern "C" int cu_act_backward(void *ctx, enum fedrun_act act, uint64_t n, const float *x,
			       const float *dy, float *dx)
{
	const char *op = "act_backward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	int rc = act_check(op, act);
	if (rc < 0 || !n)
		return rc;
	if (!x || !dy || !dx)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL argument", op);
	act_bwd<<<cu_blocks(n, 256), 256, 0, c->stream>>>((int)act, n, x, dy, dx);
	CU_LAUNCHED(op);
	return 0;
}

/* ---- positional encoding (Vaswani et al. 2017, sec. 3.5) ---------------- */

/* PE(p, 2i) = sin(p / 10000^(2i/D)), PE(p, 2i+1) = cos(...), in double as
 * the CPU backend computes it, then rounded to float. */
__global__ void posenc_fwd(uint32_t B, uint32_t T, uint32_t D, uint32_t pos0, float scale,
			   const float *x, float *y)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	const uint64_t n = (uint64_t)B * T * D;
	if (i >= n)
		return;
	const uint32_t col = (uint32_t)(i % D);
	const uint32_t t = (uint32_t)((i / D) % T);
	const double freq = pow(10000.0, -(2.0 * (col / 2)) / (double)D);
	const double a = ((double)pos0 + t) * freq;
	const float pe = (float)(col % 2 ? cos(a) : sin(a));
	y[i] = x ? scale * x[i] + pe : pe;
}

__global__ void scale_copy(uint64_t n, float scale, const float *x, float *y)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = scale * x[i];
}

extern "C" int cu_posenc_forward(void *ctx, uint32_t B, uint32_t T, uint32_t D, uint32_t pos0,
				 float scale, const float *x, float *y)
{
	const char *op = "posenc_forward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!isfinite(scale))
		return fedrun_error(FEDRUN_EINVAL, "posenc_forward: scale = %g", (double)scale);
	const uint64_t n = (uint64_t)B * T * D;
	if (!n)
		return 0;
	if (!y)
		return fedrun_error(FEDRUN_EINVAL, "posenc_forward: NULL y");
	posenc_fwd<<<cu_blocks(n, 256), 256, 0, c->stream>>>(B, T, D, pos0, scale, x, y);
	CU_LAUNCHED(op);
	return 0;
}

extern "C" int cu_posenc_backward(void *ctx, uint32_t B, uint32_t T, uint32_t D, float scale,
				  const float *dy, float *dx)
{
	const char *op = "posenc_backward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!isfinite(scale))
		return fedrun_error(FEDRUN_EINVAL, "posenc_backward: scale = %g", (double)scale);
	const uint64_t n = (uint64_t)B * T * D;
	if (!n)
		return 0;
	if (!dy || !dx)
		return fedrun_error(FEDRUN_EINVAL, "posenc_backward: NULL dy or dx");
	scale_copy<<<cu_blocks(n, 256), 256, 0, c->stream>>>(n, scale, dy, dx);
	CU_LAUNCHED(op);
	return 0;
}

/* ---- the local optimizer (fedrun/optim.h) ------------------------------- */

/* The squared L2 norm in double, in a fixed order: per block of 256
 * threads a grid-stride partial, then the blocks' partials in order. */
#define NORM_BLOCKS 512
__global__ void sumsq_part(uint64_t n, const float *__restrict__ g, double *__restrict__ part)
{
	double s = 0.0;
	for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (uint64_t)gridDim.x * blockDim.x) {
		double v = g[i];
		s += v * v;
	}
	s = cu_block_sum(s);
	if (threadIdx.x == 0)
		part[blockIdx.x] = s;
}

/* The clipping factor of PyTorch's clip_grad_norm_: max / (norm + 1e-6)
 * when the norm exceeds max, else 1. */
__global__ void clip_factor(uint32_t nb, const double *__restrict__ part, double max_norm,
			    float *__restrict__ factor)
{
	double s = 0.0;
	for (uint32_t b = threadIdx.x; b < nb; b += blockDim.x)
		s += part[b];
	s = cu_block_sum(s);
	if (threadIdx.x == 0) {
		double norm = sqrt(s);
		*factor = max_norm > 0 && norm > max_norm ? (float)(max_norm / (norm + 1e-6)) : 1.0f;
	}
}

/* SGD with momentum (PyTorch's convention): v <- mu v + (g + wd p),
 * p <- p - lr v (Nesterov: g + mu v); the first step sets v = g. */
__global__ void sgd_step(uint64_t n, const float *__restrict__ factor, float flr, float wd,
			 float mu, int nesterov, int first, int zero, float *__restrict__ p,
			 float *__restrict__ grad, float *__restrict__ state)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const float c = factor ? *factor : 1.0f;
	float g = grad[i] * c + wd * p[i];
	if (zero)
		grad[i] = 0.0f;
	if (mu > 0) {
		float v = first ? g : mu * state[i] + g;
		state[i] = v;
		g = nesterov ? g + mu * v : v;
	}
	p[i] -= flr * g;
}

/* Adam (Kingma and Ba 2015, Algorithm 1); AdamW decouples the weight decay
 * (Loshchilov and Hutter 2019). The same float operations as core/nn. */
__global__ void adam_step(uint64_t n, const float *__restrict__ factor, float flr, float wd,
			  float b1, float b2, float eps, float c1, float c2, int decoupled,
			  int zero, float *__restrict__ p, float *__restrict__ grad,
			  float *__restrict__ m, float *__restrict__ v)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const float c = factor ? *factor : 1.0f;
	float g = grad[i] * c;
	if (zero)
		grad[i] = 0.0f;
	float pi = p[i];
	if (decoupled)
		pi -= flr * wd * pi;
	else
		g += wd * pi;
	float mi = b1 * m[i] + (1 - b1) * g;
	float vi = b2 * v[i] + (1 - b2) * g * g;
	m[i] = mi;
	v[i] = vi;
	float mhat = mi / c1, vhat = vi / c2;
	p[i] = pi - flr * mhat / (sqrtf(vhat) + eps);
}

extern "C" int cu_optim_step(void *ctx, const struct fedrun_optim_cfg *cfg, double lr,
			     uint64_t n, float *params, float *grad, float *state, uint64_t *step,
			     bool zero_grad)
{
	const char *op = "optim_step";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!cfg || !step || (n && (!params || !grad)))
		return fedrun_error(FEDRUN_EINVAL, "cuda backend optim_step: NULL argument");
	const bool need_state = cfg->kind != FEDRUN_OPTIM_SGD || cfg->momentum > 0;
	if (n && need_state && !state)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend optim_step: NULL state");
	if (cfg->kind != FEDRUN_OPTIM_SGD && cfg->kind != FEDRUN_OPTIM_ADAM &&
	    cfg->kind != FEDRUN_OPTIM_ADAMW)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend optim_step: optimizer kind %d",
				    (int)cfg->kind);
	const uint64_t t = ++*step;
	if (!n)
		return 0;
	float *factor = NULL;
	if (cfg->clip_norm > 0) {
		char *s = (char *)cu_scratch(c, NORM_BLOCKS * sizeof(double) + 256, op);
		if (!s)
			return FEDRUN_ENOMEM;
		double *part = (double *)s;
		factor = (float *)(s + NORM_BLOCKS * sizeof(double));
		uint32_t nb = cu_blocks(n, 256);
		nb = nb > NORM_BLOCKS ? NORM_BLOCKS : nb;
		sumsq_part<<<nb, 256, 0, c->stream>>>(n, grad, part);
		clip_factor<<<1, 256, 0, c->stream>>>(nb, part, cfg->clip_norm, factor);
	}
	const float flr = (float)lr, wd = (float)cfg->weight_decay;
	const unsigned nb = cu_blocks(n, 256);
	if (cfg->kind == FEDRUN_OPTIM_SGD) {
		sgd_step<<<nb, 256, 0, c->stream>>>(n, factor, flr, wd, (float)cfg->momentum,
						    cfg->nesterov, t == 1, zero_grad, params, grad,
						    state);
	} else {
		const float c1 = (float)(1.0 - pow(cfg->beta1, (double)t));
		const float c2 = (float)(1.0 - pow(cfg->beta2, (double)t));
		adam_step<<<nb, 256, 0, c->stream>>>(
		    n, factor, flr, wd, (float)cfg->beta1, (float)cfg->beta2, (float)cfg->eps, c1, c2,
		    cfg->kind == FEDRUN_OPTIM_ADAMW, zero_grad, params, grad, state, state + n);
	}
	CU_LAUNCHED(op);
	cu_params_written(c, params, n * sizeof *params);
	return 0;
}

__global__ void prox_kernel(uint64_t n, float mu, const float *p, const float *a, float *g)
{
	const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g[i] += mu * (p[i] - a[i]);
}

extern "C" int cu_prox_grad(void *ctx, uint64_t n, float mu, const float *params,
			    const float *anchor, float *grad)
{
	const char *op = "prox_grad";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!n)
		return 0;
	if (!params || !anchor || !grad)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend prox_grad: NULL argument");
	prox_kernel<<<cu_blocks(n, 256), 256, 0, c->stream>>>(n, mu, params, anchor, grad);
	CU_LAUNCHED(op);
	return 0;
}
