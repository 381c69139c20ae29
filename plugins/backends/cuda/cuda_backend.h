/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend's ops, one function per member of struct
 * fedrun_backend_ops (fedrun/backend.h, which specifies each of them), as
 * the .cu files define them and backend_cuda.c gathers them into the table.
 * Plain C declarations, so that the table is built by the C compiler. */
#ifndef FEDRUN_CUDA_BACKEND_H
#define FEDRUN_CUDA_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include "fedrun/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* contexts and memory (context.cu) */
int cu_ctx_create(const struct fedrun_backend_ctx_cfg *cfg, void **ctx);
void cu_ctx_destroy(void *ctx);
int cu_alloc(void *ctx, uint64_t bytes, void **p);
void cu_free_mem(void *ctx, void *p);
int cu_zero(void *ctx, void *p, uint64_t bytes);
int cu_copy(void *ctx, void *dst, const void *src, uint64_t bytes);
int cu_to_device(void *ctx, void *dst, const void *host_src, uint64_t bytes);
int cu_to_host(void *ctx, void *host_dst, const void *src, uint64_t bytes);
int cu_declare_params(void *ctx, const float *p, uint64_t n);

/* matrix products and dense layers (dense.cu) */
int cu_sgemm(void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
	     const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
int cu_sgemm_strided_batched(void *ctx, bool trans_a, bool trans_b, int m, int n, int k,
			     float alpha, const float *a, int lda, int64_t stride_a,
			     const float *b, int ldb, int64_t stride_b, float beta, float *c,
			     int ldc, int64_t stride_c, int batch);
int cu_linear_forward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
		      const float *w, const float *b, float *y);
int cu_linear_backward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
		       const float *w, const float *dy, float *dx, float *dw, float *db);
int cu_embedding_forward(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
			 const float *w, float *out);
int cu_embedding_backward(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
			  const float *dout, float *dw);
int cu_dropout_forward(void *ctx, uint64_t n, float p, struct fedrun_rng *rng, const float *x,
		       float *y, uint8_t *mask);
int cu_dropout_backward(void *ctx, uint64_t n, float p, const uint8_t *mask, const float *dy,
			float *dx);
int cu_act_forward(void *ctx, enum fedrun_act act, uint64_t n, const float *x, float *y);
int cu_act_backward(void *ctx, enum fedrun_act act, uint64_t n, const float *x, const float *dy,
		    float *dx);
int cu_posenc_forward(void *ctx, uint32_t B, uint32_t T, uint32_t D, uint32_t pos0, float scale,
		      const float *x, float *y);
int cu_posenc_backward(void *ctx, uint32_t B, uint32_t T, uint32_t D, float scale,
		       const float *dy, float *dx);
int cu_optim_step(void *ctx, const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
		  float *params, float *grad, float *state, uint64_t *step, bool zero_grad);
int cu_prox_grad(void *ctx, uint64_t n, float mu, const float *params, const float *anchor,
		 float *grad);

/* losses and layer normalization (rows.cu) */
int cu_softmax_xent(void *ctx, uint32_t N, uint32_t V, const float *logits,
		    const int32_t *targets, double *loss, uint64_t *count, float *dlogits);
int cu_softmax_xent_db(void *ctx, uint32_t N, uint32_t V, const float *logits,
		       const int32_t *targets, float scale, double *loss, uint64_t *count,
		       float *dlogits, float *db);
int cu_label_smoothed_xent(void *ctx, uint32_t N, uint32_t V, float eps, const float *logits,
			   const int32_t *targets, double *loss, double *nll, uint64_t *count,
			   float *dlogits);
int cu_layernorm_forward(void *ctx, uint32_t N, uint32_t D, float eps, const float *x,
			 const float *gain, const float *bias, float *y, float *cache);
int cu_layernorm_backward(void *ctx, uint32_t N, uint32_t D, const float *x, const float *gain,
			  const float *cache, const float *dy, float *dx, float *dgain,
			  float *dbias);

/* the GRU (gru.cu) */
uint64_t cu_gru_cache_floats(void *ctx, const struct fedrun_gru_dims *d);
int cu_gru_forward(void *ctx, const struct fedrun_gru_dims *d, const struct fedrun_gru_weights *w,
		   const float *x, const float *h0, float *y, float *cache);
int cu_gru_backward(void *ctx, const struct fedrun_gru_dims *d,
		    const struct fedrun_gru_weights *w, const float *x, const float *h0,
		    const float *y, float *cache, const float *dy, const float *dhT, float *dx,
		    float *dh0, const struct fedrun_gru_grads *g);

/* attention (attention.cu) */
uint64_t cu_attn_cache_floats(void *ctx, const struct fedrun_attn_dims *d);
int cu_attn_forward(void *ctx, const struct fedrun_attn_dims *d, const float *q, const float *k,
		    const float *v, const int32_t *key_len, struct fedrun_rng *rng, float *out,
		    float *cache);
int cu_attn_backward(void *ctx, const struct fedrun_attn_dims *d, const float *q, const float *k,
		     const float *v, const int32_t *key_len, const float *cache,
		     const float *dout, float *dq, float *dk, float *dv);

#ifdef __cplusplus
}
#endif
#endif
