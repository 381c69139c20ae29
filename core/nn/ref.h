/* SPDX-License-Identifier: Apache-2.0 */
/* Plain reference versions of the backend ops: naive loops in double
 * precision, written for clarity, not speed. They are the oracle of the
 * tests (tests/test_nn_ops.c compares each CPU op with them, and
 * tests/test_nn_grad.c differentiates them numerically), compiled into the
 * test programs only. Conventions follow fedrun/backend.h: parameter
 * gradients accumulate, activation gradients are written. */
#ifndef FEDRUN_NN_REF_H
#define FEDRUN_NN_REF_H

#include <stdbool.h>
#include <stdint.h>
#include "fedrun/backend.h"
#include "fedrun/rng.h"

struct nn_ref_gru_weights {
	const double *w_ih, *w_hh, *b_ih, *b_hh; /* (3H,I) (3H,H) (3H) (3H); biases may be NULL */
};
struct nn_ref_gru_grads {
	double *w_ih, *w_hh, *b_ih, *b_hh; /* accumulated; NULL to skip */
};

/* C (m,n) = alpha op(A) op(B) + beta C, row-major; beta == 0 ignores C. */
void nn_ref_gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double *a,
		 int lda, const double *b, int ldb, double beta, double *c, int ldc);

void nn_ref_linear_forward(uint32_t N, uint32_t in, uint32_t out, const double *x, const double *w,
			   const double *b, double *y);
void nn_ref_linear_backward(uint32_t N, uint32_t in, uint32_t out, const double *x, const double *w,
			    const double *dy, double *dx, double *dw, double *db);

void nn_ref_embedding_forward(uint32_t N, uint32_t D, const int32_t *ids, const double *w,
			      double *out);
void nn_ref_embedding_backward(uint32_t N, uint32_t D, const int32_t *ids, const double *dout,
			       double *dw);

/* h0 may be NULL (zeros); y (T,B,H). */
void nn_ref_gru_forward(const struct fedrun_gru_dims *d, const struct nn_ref_gru_weights *w,
			const double *x, const double *h0, double *y);
/* Runs the forward again itself, then backpropagates through time. dy and
 * dhT may be NULL (zero), dx and dh0 NULL (skip). Returns 0 or
 * FEDRUN_ENOMEM. */
int nn_ref_gru_backward(const struct fedrun_gru_dims *d, const struct nn_ref_gru_weights *w,
			const double *x, const double *h0, const double *dy, const double *dhT,
			double *dx, double *dh0, const struct nn_ref_gru_grads *g);

/* Draws the mask with n sequential fedrun_rng_u32 calls after emptying the
 * stream's buffer: the definition in fedrun/backend.h. */
void nn_ref_dropout_forward(uint64_t n, double p, struct fedrun_rng *rng, const double *x,
			    double *y, uint8_t *mask);
void nn_ref_dropout_backward(uint64_t n, double p, const uint8_t *mask, const double *dy,
			     double *dx);

/* Returns the mean loss; dlogits may be NULL; count may be NULL. */
double nn_ref_softmax_xent(uint32_t N, uint32_t V, const double *logits, const int32_t *targets,
			   uint64_t *count, double *dlogits);
/* The same with dlogits (not NULL) times scale, and db (V) += its column
 * sums (db may be NULL). */
double nn_ref_softmax_xent_db(uint32_t N, uint32_t V, const double *logits, const int32_t *targets,
			      double scale, uint64_t *count, double *dlogits, double *db);

void nn_ref_act_forward(enum fedrun_act act, uint64_t n, const double *x, double *y);
void nn_ref_act_backward(enum fedrun_act act, uint64_t n, const double *x, const double *dy,
			 double *dx);

/* Layer norm (biased variance); gain, bias may be NULL (1, 0); mean and
 * rstd (N) may be NULL. */
void nn_ref_layernorm_forward(uint32_t N, uint32_t D, double eps, const double *x,
			      const double *gain, const double *bias, double *y, double *mean,
			      double *rstd);
/* Recomputes the statistics and applies the full (D,D) Jacobian of each
 * row; dx written (NULL to skip), dgain and dbias accumulated (NULL to
 * skip). */
void nn_ref_layernorm_backward(uint32_t N, uint32_t D, double eps, const double *x,
			       const double *gain, const double *dy, double *dx, double *dgain,
			       double *dbias);

/* Attention with the masks spelled out as -infinity scores. mask (B,H,Tq,Tk)
 * is the dropout mask to apply with d->dropout (NULL: none). probs
 * (B,H,Tq,Tk) receives P before dropout (NULL to skip). Strides as in
 * struct fedrun_attn_dims; only columns [0, D) of dq, dk, dv rows are
 * written. Backward recomputes the forward. */
void nn_ref_attn_forward(const struct fedrun_attn_dims *d, const double *q, const double *k,
			 const double *v, const int32_t *key_len, const uint8_t *mask, double *out,
			 double *probs);
void nn_ref_attn_backward(const struct fedrun_attn_dims *d, const double *q, const double *k,
			  const double *v, const int32_t *key_len, const uint8_t *mask,
			  const double *dout, double *dq, double *dk, double *dv);

/* y (B,T,D) = scale x + PE(pos0 + t), x NULL meaning zeros. */
void nn_ref_posenc_forward(uint32_t B, uint32_t T, uint32_t D, uint32_t pos0, double scale,
			   const double *x, double *y);

/* Label-smoothed cross-entropy from its definition -sum_j q_j log p_j;
 * returns the mean loss, *nll the mean NLL (either may be NULL), dlogits
 * (NULL to skip). */
double nn_ref_label_smoothed_xent(uint32_t N, uint32_t V, double eps, const double *logits,
				  const int32_t *targets, double *nll, uint64_t *count,
				  double *dlogits);

#endif
