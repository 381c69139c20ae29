/* SPDX-License-Identifier: Apache-2.0 */
/* gru-lm's network over one truncated-BPTT window, forward and backward,
 * as calls of the backend vtable: embedding, dropout, GRU layers, dropout,
 * the decoder (tied to the embedding or its own matrix) and softmax
 * cross-entropy, whose gradient is written over the logits in place so that
 * the largest array of the model, (T*B,V), exists once. Also the per-thread
 * scratch that holds a window's activations and the device copies of the
 * model's arrays (gru_lm.h says which memory is where). */
#include <stdlib.h>
#include <string.h>
#include "gru_lm.h"

#define CHECK(call)                                                                                \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ < 0)                                                                       \
			return rc_;                                                                \
	} while (0)

static void free_buffers(const struct gru_lm *m, struct gru_lm_worker *w)
{
	const struct fedrun_backend_ops *be = m->be;
	free(w->in_u);
	free(w->tgt_u);
	free(w->hids);
	void *bufs[] = {w->ids, w->emb, w->mask_emb, w->logits, w->da, w->db};
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		if (bufs[i])
			be->free_mem(w->ctx, bufs[i]);
	for (uint32_t l = 0; l < GRU_LM_MAX_LAYERS; l++) {
		void *lb[] = {w->y[l], w->yd[l], w->mask[l], w->cache[l], w->h0[l]};
		for (size_t i = 0; i < sizeof lb / sizeof lb[0]; i++)
			if (lb[i])
				be->free_mem(w->ctx, lb[i]);
		w->y[l] = w->yd[l] = w->cache[l] = w->h0[l] = NULL;
		w->mask[l] = NULL;
	}
	w->in_u = w->tgt_u = NULL;
	w->hids = w->ids = NULL;
	w->emb = w->logits = w->da = w->db = NULL;
	w->mask_emb = NULL;
	w->cap_tb = 0;
	w->cap_b = 0;
}

void gru_lm_worker_destroy(void *model, void *worker)
{
	struct gru_lm *m = model;
	struct gru_lm_worker *w = worker;
	if (!w)
		return;
	free_buffers(m, w);
	void *arrays[] = {w->params, w->grad, w->state, w->anchor};
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
		if (arrays[i])
			m->be->free_mem(w->ctx, arrays[i]);
	if (w->ctx)
		m->be->ctx_destroy(w->ctx);
	free(w);
}

/* The engine runs one client per worker thread with BLAS on one thread, so
 * each context's element-wise kernels get one thread too (backend.h). */
int gru_lm_worker_create(void *model, void **worker)
{
	struct gru_lm *m = model;
	struct gru_lm_worker *w = calloc(1, sizeof *w);
	if (!w)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	struct fedrun_backend_ctx_cfg cfg = mdev_ctx_cfg(m->device, m->deterministic, m->precision);
	int rc = m->be->ctx_create(&cfg, &w->ctx);
	if (rc < 0) {
		w->ctx = NULL;
		rc = fedrun_error_wrap(rc, "model.backend \"%s\": ", m->backend);
	}
	if (rc == 0)
		rc = m->be->alloc(w->ctx, m->layout.total * sizeof(float), (void **)&w->grad);
	if (rc == 0)
		rc = m->be->alloc(w->ctx, m->layout.total * sizeof(float), (void **)&w->params);
	if (rc == 0)
		rc = mdev_declare_params(m->be, w->ctx, w->params, m->layout.total);
	w->grad_zero = true; /* alloc zero-fills */
	if (rc < 0) {
		gru_lm_worker_destroy(m, w);
		return rc;
	}
	*worker = w;
	return 0;
}

int gru_lm_worker_reserve(const struct gru_lm *m, struct gru_lm_worker *w, uint64_t tb, uint32_t b)
{
	if (tb <= w->cap_tb && b <= w->cap_b)
		return 0;
	/* Grow to cover both the old and the new shape. */
	if (tb < w->cap_tb)
		tb = w->cap_tb;
	if (b < w->cap_b)
		b = w->cap_b;
	free_buffers(m, w);
	const struct fedrun_backend_ops *be = m->be;
	const uint64_t D = m->D, H = m->H, V = m->V, wide = D > H ? D : H;
	struct fedrun_gru_dims dims = {
	    .steps = (uint32_t)(tb / b), .batch = b, .input = (uint32_t)wide, .hidden = m->H};
	/* The cache is a function of T*B and H (I does not enter it): ask for
	 * the worst split of tb into steps and batch. */
	uint64_t c1 = be->gru_cache_floats(w->ctx, &dims);
	dims.steps = (uint32_t)tb;
	dims.batch = 1;
	uint64_t c2 = be->gru_cache_floats(w->ctx, &dims);
	dims.steps = 1;
	dims.batch = (uint32_t)tb;
	uint64_t c3 = be->gru_cache_floats(w->ctx, &dims);
	w->cache_floats = c1 > c2 ? c1 : c2;
	w->cache_floats = w->cache_floats > c3 ? w->cache_floats : c3;
	int rc = 0;
#define ALLOC(ptr, bytes)                                                                          \
	do {                                                                                       \
		if (rc == 0)                                                                       \
			rc = be->alloc(w->ctx, (bytes), (void **)&(ptr));                          \
	} while (0)
	w->in_u = malloc(tb * sizeof(uint32_t));
	w->tgt_u = malloc(tb * sizeof(uint32_t));
	w->hids = malloc(2 * tb * sizeof(int32_t));
	if (!w->in_u || !w->tgt_u || !w->hids)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	ALLOC(w->ids, 2 * tb * sizeof(int32_t));
	ALLOC(w->emb, tb * D * sizeof(float));
	ALLOC(w->logits, tb * V * sizeof(float));
	ALLOC(w->da, tb * wide * sizeof(float));
	ALLOC(w->db, tb * wide * sizeof(float));
	if (m->dropout > 0)
		ALLOC(w->mask_emb, tb * D);
	for (uint32_t l = 0; l < m->L; l++) {
		ALLOC(w->y[l], tb * H * sizeof(float));
		ALLOC(w->cache[l], w->cache_floats * sizeof(float));
		ALLOC(w->h0[l], (uint64_t)b * H * sizeof(float));
		if (m->dropout > 0) {
			ALLOC(w->yd[l], tb * H * sizeof(float));
			ALLOC(w->mask[l], tb * H);
		}
	}
#undef ALLOC
	if (rc < 0) {
		free_buffers(m, w);
		return rc;
	}
	w->cap_tb = tb;
	w->cap_b = b;
	return 0;
}

/* Forward through the GRU stack from x0 (T,B,D); returns the top output
 * (after dropout) and keeps each layer's output for backward. */
static int stack_forward(const struct gru_lm *m, struct gru_lm_worker *w, const float *params,
			 const struct gru_lm_pass *p, const float **top)
{
	const struct fedrun_backend_ops *be = m->be;
	const uint64_t tbh = (uint64_t)p->T * p->B * m->H;
	const float *x = w->emb;
	for (uint32_t l = 0; l < m->L; l++) {
		const uint64_t *o = m->off_gru[l];
		struct fedrun_gru_dims d = {p->T, p->B, l ? m->H : m->D, m->H};
		struct fedrun_gru_weights gw = {params + o[0], params + o[1], params + o[2],
						params + o[3]};
		CHECK(be->gru_forward(w->ctx, &d, &gw, x, p->fresh ? NULL : w->h0[l], w->y[l],
				      w->cache[l]));
		if (p->dropout > 0) {
			CHECK(be->dropout_forward(w->ctx, tbh, p->dropout, p->rng, w->y[l],
						  w->yd[l], w->mask[l]));
			x = w->yd[l];
		} else {
			x = w->y[l];
		}
	}
	*top = x;
	return 0;
}

/* Backward through the GRU stack from dtop (T,B,H), the gradient of the
 * top output after dropout (overwritten); leaves dL/d(embedded input) in
 * *demb (one of w->da, w->db). */
static int stack_backward(const struct gru_lm *m, struct gru_lm_worker *w, const float *params,
			  float *grad, const struct gru_lm_pass *p, float *dtop, float **demb)
{
	const struct fedrun_backend_ops *be = m->be;
	const uint64_t tbh = (uint64_t)p->T * p->B * m->H;
	float *dy = dtop, *dx = dtop == w->da ? w->db : w->da;
	for (uint32_t l = m->L; l-- > 0;) {
		const uint64_t *o = m->off_gru[l];
		struct fedrun_gru_dims d = {p->T, p->B, l ? m->H : m->D, m->H};
		struct fedrun_gru_weights gw = {params + o[0], params + o[1], params + o[2],
						params + o[3]};
		struct fedrun_gru_grads gg = {grad + o[0], grad + o[1], grad + o[2], grad + o[3]};
		if (p->dropout > 0)
			CHECK(be->dropout_backward(w->ctx, tbh, p->dropout, w->mask[l], dy, dy));
		const float *x = l ? (p->dropout > 0 ? w->yd[l - 1] : w->y[l - 1]) : w->emb;
		CHECK(be->gru_backward(w->ctx, &d, &gw, x, p->fresh ? NULL : w->h0[l], w->y[l],
				       w->cache[l], dy, NULL, dx, NULL, &gg));
		float *t = dy;
		dy = dx;
		dx = t;
	}
	*demb = dy;
	return 0;
}

/* The state for the next window: each layer's output at the last step. */
static int carry_state(const struct gru_lm *m, struct gru_lm_worker *w, const struct gru_lm_pass *p)
{
	const uint64_t bh = (uint64_t)p->B * m->H;
	for (uint32_t l = 0; l < m->L; l++)
		CHECK(m->be->copy(w->ctx, w->h0[l], w->y[l] + (uint64_t)(p->T - 1) * bh,
				  bh * sizeof(float)));
	return 0;
}

int gru_lm_send(const struct gru_lm *m, struct gru_lm_worker *w, float *dst, const float *src,
		uint64_t n)
{
	return mdev_to_device(m->be, w->ctx, &w->xfer, dst, src, n * sizeof(float));
}

/* A window's forward pass up to the logits (N,V) in w->logits: sends the
 * ids and targets, embeds (and drops), runs the GRU stack; *top is its
 * output, which backward needs. */
static int window_forward(const struct gru_lm *m, struct gru_lm_worker *w, const float *params,
			  const struct gru_lm_pass *p, const float **top)
{
	const struct fedrun_backend_ops *be = m->be;
	const uint32_t N = p->T * p->B;
	/* The window's ids and targets, in one copy: in (N) then tgt (N). */
	for (uint32_t i = 0; i < N; i++) {
		w->hids[i] = (int32_t)w->in_u[i];
		w->hids[N + i] = (int32_t)w->tgt_u[i];
	}
	CHECK(mdev_to_device(be, w->ctx, &w->xfer, w->ids, w->hids,
			     2 * (uint64_t)N * sizeof(int32_t)));
	/* emb (T,B,D) = E[in], dropped in place */
	CHECK(be->embedding_forward(w->ctx, N, m->V, m->D, w->ids, params + m->off_emb, w->emb));
	if (p->dropout > 0)
		CHECK(be->dropout_forward(w->ctx, (uint64_t)N * m->D, p->dropout, p->rng, w->emb,
					  w->emb, w->mask_emb));
	CHECK(stack_forward(m, w, params, p, top));
	/* logits (N,V) = top (N,H) . dec_w^T + dec_b; the loss's gradient
	 * then replaces them */
	return be->linear_forward(w->ctx, N, m->H, m->V, *top, params + m->off_dec_w,
				  params + m->off_dec_b, w->logits);
}

int gru_lm_next_logits(const struct gru_lm *m, struct gru_lm_worker *w, const float *params,
		       const struct gru_lm_pass *p, float *logits)
{
	const float *top;
	CHECK(window_forward(m, w, params, p, &top));
	CHECK(carry_state(m, w, p));
	const uint64_t last = (uint64_t)(p->T * p->B - 1) * m->V;
	return mdev_to_host(m->be, w->ctx, &w->xfer, logits, w->logits + last,
			    (uint64_t)m->V * sizeof(float));
}

int gru_lm_window(const struct gru_lm *m, struct gru_lm_worker *w, const float *params,
		  const struct gru_lm_pass *p, double *loss, uint64_t *count)
{
	const struct fedrun_backend_ops *be = m->be;
	const uint32_t N = p->T * p->B;
	const float *dec_w = params + m->off_dec_w;
	const bool fused = p->train && FEDRUN_BACKEND_HAS(be, softmax_xent_db);
	/* The unfused path has no device op to scale the loss's gradient by. */
	if (p->train && !fused && p->grad_scale != 1.0f)
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "gru-lm: backend %s has no softmax_xent_db op, which the "
				    "gradient of a split's loss (loss_grad) needs",
				    be->name ? be->name : m->backend);
	const float *top;
	CHECK(window_forward(m, w, params, p, &top));
	const int32_t *in = w->ids, *tgt = w->ids + N;
	float *grad = w->grad, *dlogits = w->logits;
	if (p->train)
		w->grad_zero = false;
	/* Training: the loss's gradient (times grad_scale) and d dec_b += its
	 * column sums in the same pass over the logits, where the backend
	 * has the fused op; otherwise summed in a pass of its own (grad_scale
	 * is then 1, checked above). */
	if (fused)
		CHECK(be->softmax_xent_db(w->ctx, N, m->V, w->logits, tgt, p->grad_scale, loss,
					  count, dlogits, grad + m->off_dec_b));
	else
		CHECK(be->softmax_xent(w->ctx, N, m->V, w->logits, tgt, loss, count,
				       p->train ? dlogits : NULL));
	if (!p->train)
		return carry_state(m, w, p);
	/* dtop (N,H) = dlogits . dec_w; d dec_w += dlogits^T top (the
	 * embedding's gradient when tied); d dec_b += column sums unless
	 * already added */
	CHECK(be->linear_backward(w->ctx, N, m->H, m->V, top, dec_w, dlogits, w->da,
				  grad + m->off_dec_w, fused ? NULL : grad + m->off_dec_b));
	float *demb = NULL; /* set by stack_backward (GCC -O1 cannot tell) */
	CHECK(stack_backward(m, w, params, grad, p, w->da, &demb));
	if (p->dropout > 0)
		CHECK(be->dropout_backward(w->ctx, (uint64_t)N * m->D, p->dropout, w->mask_emb,
					   demb, demb));
	CHECK(be->embedding_backward(w->ctx, N, m->V, m->D, in, demb, grad + m->off_emb));
	return carry_state(m, w, p);
}
