/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the CPU backend: its execution context, the helpers the
 * kernels share, and the ops each file of core/nn defines for the table in
 * backend_cpu.c. Names here have no fedrun_ prefix, so libfedrun does not
 * export them. */
#ifndef FEDRUN_NN_CPU_H
#define FEDRUN_NN_CPU_H

#include <stdint.h>
#include "fedrun/backend.h"

#ifdef _OPENMP
#include <omp.h>
#endif

struct nn_bf16;

struct nn_cpu_ctx {
	uint32_t threads;     /* OpenMP threads of the element-wise kernels; 0 = all */
	uint32_t precision;   /* enum fedrun_precision of the products */
	struct nn_bf16 *bf16; /* precision bf16: bf16.c's state */
};

/* ---- the blocks of a large product (gemm.c, bf16.c) ----
 * Products large enough to share among threads are cut into blocks of
 * NN_GEMM_BLOCK rows or columns of C (along the longer side, rows when
 * m >= n): the number of blocks, fixed by the shape alone, or 1 when the
 * product stays whole. */
#define NN_GEMM_BLOCK 128
#define NN_GEMM_PAR_MIN ((uint64_t)1 << 21) /* multiply-adds; smaller stays whole */
static inline int nn_gemm_blocks(int m, int n, int k)
{
	const int len = m >= n ? m : n;
	if (k <= 0 || len < 2 * NN_GEMM_BLOCK ||
	    (uint64_t)m * (uint64_t)n * (uint64_t)k < NN_GEMM_PAR_MIN)
		return 1;
	return len / NN_GEMM_BLOCK + (len % NN_GEMM_BLOCK != 0); /* no overflow near INT_MAX */
}

/* ---- bf16.c: the products of a bf16 context (oneDNN) ---- */
/* Fails, naming what is missing, where bf16 products cannot run. */
int nn_bf16_create(struct nn_cpu_ctx *c);
void nn_bf16_destroy(struct nn_cpu_ctx *c);
/* declare_params: the range whose bf16 copies c may keep */
void nn_bf16_declare(struct nn_cpu_ctx *c, const float *p, uint64_t n);
/* bytes at dst were written through c: forget the copies if they overlap */
void nn_bf16_written(struct nn_cpu_ctx *c, const void *dst, uint64_t bytes);
/* The product of nn_cpu_gemm (spread false: on the calling thread) or
 * nn_cpu_gemm_mt (spread: blocks over the context's threads) in bf16. */
int nn_bf16_gemm(const void *ctx, bool spread, bool ta, bool tb, int m, int n, int k, float alpha,
		 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);

static inline bool nn_cpu_bf16(const void *ctx)
{
	const struct nn_cpu_ctx *c = ctx;
	return c && c->precision == FEDRUN_PRECISION_BF16;
}

/* Element counts below which a kernel stays on one thread: a parallel
 * region costs a few microseconds, as much as a few thousand exp calls. */
#define NN_PAR_MIN 8192

/* Threads for a `num_threads()` clause (always >= 1). A context of
 * threads 0 takes the calling thread's OpenMP default, except inside a
 * parallel region (the transformer's decoding and the GRU's evaluation run
 * a model per OpenMP thread), where the default is the outer team's size:
 * there it runs on the calling thread alone, so that a libgomp allowing
 * nested teams does not start threads x threads of them. */
static inline int nn_cpu_threads(const void *ctx)
{
	const struct nn_cpu_ctx *c = ctx;
	if (c && c->threads)
		return (int)c->threads;
#ifdef _OPENMP
	return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
	return 1;
#endif
}

/* ---- bias.c: row broadcast and column sums, shared by linear and GRU ---- */
/* Each of the rows rows of y (row stride ld) = b (cols), or 0 if b is NULL. */
void nn_cpu_rows_fill(const void *ctx, uint64_t rows, uint32_t cols, uint64_t ld, const float *b,
		      float *y);
/* acc (cols) += sum over rows of x (row stride ld); fixed summation order,
 * so the result does not depend on the thread count: each column sums runs
 * of NN_COLSUM_RUN rows in float (from 0, row order), the runs in double
 * (from 0, run order), and adds that rounded to float. */
#define NN_COLSUM_RUN 32
void nn_cpu_colsum_acc(const void *ctx, uint64_t rows, uint32_t cols, uint64_t ld, const float *x,
		       float *acc);

/* ---- gemm.c ---- */
int nn_cpu_sgemm(void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
		 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
int nn_cpu_sgemm_strided_batched(void *ctx, bool trans_a, bool trans_b, int m, int n, int k,
				 float alpha, const float *a, int lda, int64_t stride_a,
				 const float *b, int ldb, int64_t stride_b, float beta, float *c,
				 int ldc, int64_t stride_c, int batch);
/* Unchecked sgemm, on the context's threads in blocks that depend on the
 * shape only (the same bits on any number of threads), for callers whose
 * dimensions are known to be valid. In a bf16 context the product is
 * bf16's (bf16.c); 0 or a FEDRUN_E* code (only a bf16 product can fail). */
int nn_cpu_gemm_mt(const void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
		   const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
    __attribute__((warn_unused_result));
/* The same on the calling thread alone. */
int nn_cpu_gemm(const void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
		const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
    __attribute__((warn_unused_result));

/* ---- linear.c ---- */
int nn_cpu_linear_forward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
			  const float *w, const float *b, float *y);
int nn_cpu_linear_backward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
			   const float *w, const float *dy, float *dx, float *dw, float *db);

/* ---- embedding.c ---- */
int nn_cpu_embedding_forward(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
			     const float *w, float *out);
int nn_cpu_embedding_backward(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
			      const float *dout, float *dw);

/* ---- gru.c ---- */
uint64_t nn_cpu_gru_cache_floats(void *ctx, const struct fedrun_gru_dims *d);
int nn_cpu_gru_forward(void *ctx, const struct fedrun_gru_dims *d,
		       const struct fedrun_gru_weights *w, const float *x, const float *h0,
		       float *y, float *cache);
int nn_cpu_gru_backward(void *ctx, const struct fedrun_gru_dims *d,
			const struct fedrun_gru_weights *w, const float *x, const float *h0,
			const float *y, float *cache, const float *dy, const float *dhT, float *dx,
			float *dh0, const struct fedrun_gru_grads *g);

/* ---- dropout.c ---- */
int nn_cpu_dropout_forward(void *ctx, uint64_t n, float p, struct fedrun_rng *rng, const float *x,
			   float *y, uint8_t *mask);
int nn_cpu_dropout_backward(void *ctx, uint64_t n, float p, const uint8_t *mask, const float *dy,
			    float *dx);
/* Draws only the mask of dropout_forward (same stream contract), for the
 * attention weights. */
int nn_cpu_dropout_mask(void *ctx, uint64_t n, float p, struct fedrun_rng *rng, uint8_t *mask);

/* ---- xent.c ---- */
int nn_cpu_softmax_xent(void *ctx, uint32_t N, uint32_t V, const float *logits,
			const int32_t *targets, double *loss, uint64_t *count, float *dlogits);
int nn_cpu_softmax_xent_db(void *ctx, uint32_t N, uint32_t V, const float *logits,
			   const int32_t *targets, float scale, double *loss, uint64_t *count,
			   float *dlogits, float *db);

/* ---- act.c ---- */
int nn_cpu_act_forward(void *ctx, enum fedrun_act act, uint64_t n, const float *x, float *y);
int nn_cpu_act_backward(void *ctx, enum fedrun_act act, uint64_t n, const float *x, const float *dy,
			float *dx);

/* ---- layernorm.c ---- */
int nn_cpu_layernorm_forward(void *ctx, uint32_t N, uint32_t D, float eps, const float *x,
			     const float *gain, const float *bias, float *y, float *cache);
int nn_cpu_layernorm_backward(void *ctx, uint32_t N, uint32_t D, const float *x, const float *gain,
			      const float *cache, const float *dy, float *dx, float *dgain,
			      float *dbias);

/* ---- attention.c ---- */
uint64_t nn_cpu_attn_cache_floats(void *ctx, const struct fedrun_attn_dims *d);
int nn_cpu_attn_forward(void *ctx, const struct fedrun_attn_dims *d, const float *q, const float *k,
			const float *v, const int32_t *key_len, struct fedrun_rng *rng, float *out,
			float *cache);
int nn_cpu_attn_backward(void *ctx, const struct fedrun_attn_dims *d, const float *q,
			 const float *k, const float *v, const int32_t *key_len, const float *cache,
			 const float *dout, float *dq, float *dk, float *dv);

/* ---- posenc.c ---- */
int nn_cpu_posenc_forward(void *ctx, uint32_t B, uint32_t T, uint32_t D, uint32_t pos0, float scale,
			  const float *x, float *y);
int nn_cpu_posenc_backward(void *ctx, uint32_t B, uint32_t T, uint32_t D, float scale,
			   const float *dy, float *dx);

/* ---- ls_xent.c ---- */
int nn_cpu_label_smoothed_xent(void *ctx, uint32_t N, uint32_t V, float eps, const float *logits,
			       const int32_t *targets, double *loss, double *nll, uint64_t *count,
			       float *dlogits);

#endif
