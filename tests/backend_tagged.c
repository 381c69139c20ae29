/* SPDX-License-Identifier: Apache-2.0 */
/* "tagged": a checking backend for the models' tests (built for make check,
 * never installed). It is the CPU backend, except that device memory is
 * handed out as TAGGED pointers: the address from the CPU backend's alloc
 * with bit 62 set, which no x86-64 address has (not canonical), so host
 * code that reads or writes device memory crashes (SIGSEGV) where on the
 * CPU backend it would silently work. Every op checks that each argument
 * the backend.h contract calls device memory carries the tag (the members
 * of struct fedrun_gru_weights and fedrun_gru_grads, ids, targets, key_len
 * and dropout masks included) and that host memory (loss, count, step,
 * rng, dims, the host side of to_device and to_host) does not; it refuses
 * a wrong one with FEDRUN_EINVAL naming the op and the argument, else it
 * removes the tags and calls the CPU op. Results are the CPU backend's,
 * bit for bit.
 *
 * A host pointer given to free_mem, which cannot return an error, traps:
 * the point of this backend is to make such bugs loud. With the
 * environment variable FEDRUN_TAGGED_NO_DEVICE set, ctx_create fails as a
 * GPU backend on a machine without its GPU would (the models' error tests). */
#include "config.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "fedrun/backend.h"
#include "fedrun/error.h"
#include "fedrun/plugin.h"

/* x86-64: bit 62 makes any user address non-canonical. AArch64 ignores the
 * top byte of addresses (TBI), so there bit 55, which points into the
 * kernel's half, does it. */
#if defined(__aarch64__)
#define TAG (UINT64_C(1) << 55)
#else
#define TAG (UINT64_C(1) << 62)
#endif
#define CTX_MAGIC 0x74616767u /* "tagg" */

/* A context: the CPU backend's, behind a magic number, so that an op given
 * a context of another backend (or none) is refused. */
struct tagged_ctx {
	uint32_t magic;
	void *cpu;
};

static const struct fedrun_backend_ops *cpu(void)
{
	return fedrun_backend_cpu();
}

static bool is_tagged(const void *p)
{
	return ((uintptr_t)p & TAG) != 0;
}

static void *tag(void *p)
{
	return (void *)((uintptr_t)p | TAG);
}

/* The pointer without its tag, as the type it had. */
#define UT(p) ((__typeof__(p))((uintptr_t)(p) & ~TAG))

static int refuse(const char *op, const char *arg, const void *p, bool want_device)
{
	return fedrun_error(
	    FEDRUN_EINVAL,
	    want_device ? "tagged backend: %s: %s is host memory (%p), device memory "
			  "(from alloc) required"
			: "tagged backend: %s: %s is device memory (%p), host memory required",
	    op, arg, p);
}

/* An argument that must be device memory (or NULL, which the CPU op
 * judges), or host memory. */
#define DEV(arg)                                                                                   \
	do {                                                                                       \
		if ((arg) && !is_tagged(arg))                                                      \
			return refuse(OP, #arg, (arg), true);                                      \
	} while (0)
#define HOST(arg)                                                                                  \
	do {                                                                                       \
		if ((arg) && is_tagged(arg))                                                       \
			return refuse(OP, #arg, (arg), false);                                     \
	} while (0)
/* The CPU context of ctx, or a refusal. */
#define CTX(ctx, out)                                                                              \
	do {                                                                                       \
		const struct tagged_ctx *c_ = (ctx);                                               \
		if (!c_ || is_tagged(c_) || c_->magic != CTX_MAGIC)                                \
			return fedrun_error(FEDRUN_EINVAL,                                         \
					    "tagged backend: %s: ctx is not a context of this "    \
					    "backend (%p)",                                        \
					    OP, (const void *)c_);                                 \
		(out) = c_->cpu;                                                                   \
	} while (0)

/* ---- contexts and memory ---- */

static int t_ctx_create(const struct fedrun_backend_ctx_cfg *cfg, void **ctx)
{
	if (!ctx)
		return fedrun_error(FEDRUN_EINVAL, "tagged backend: NULL ctx pointer");
	if (getenv("FEDRUN_TAGGED_NO_DEVICE"))
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "tagged backend: no device (FEDRUN_TAGGED_NO_DEVICE is set)");
	struct tagged_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return fedrun_error(FEDRUN_ENOMEM, "tagged backend: context");
	int rc = cpu()->ctx_create(cfg, &c->cpu);
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->magic = CTX_MAGIC;
	*ctx = c;
	return 0;
}

static void t_ctx_destroy(void *ctx)
{
	struct tagged_ctx *c = ctx;
	if (!c)
		return;
	if (c->magic != CTX_MAGIC)
		__builtin_trap();
	cpu()->ctx_destroy(c->cpu);
	c->magic = 0;
	free(c);
}

#define OP "alloc"
static int t_alloc(void *ctx, uint64_t bytes, void **p)
{
	void *cc;
	CTX(ctx, cc);
	if (!p)
		return fedrun_error(FEDRUN_EINVAL, "tagged backend: alloc: NULL result pointer");
	HOST(p);
	void *q = NULL;
	int rc = cpu()->alloc(cc, bytes, &q);
	if (rc < 0)
		return rc;
	if (is_tagged(q)) { /* not an x86-64 user-space address */
		cpu()->free_mem(cc, q);
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "tagged backend: address %p has bit 62 set", q);
	}
	*p = tag(q);
	return 0;
}
#undef OP

static void t_free_mem(void *ctx, void *p)
{
	struct tagged_ctx *c = ctx;
	if (!c || c->magic != CTX_MAGIC || (p && !is_tagged(p)))
		__builtin_trap(); /* a host pointer or a foreign context: a model's bug */
	if (p)
		cpu()->free_mem(c->cpu, UT(p));
}

#define OP "zero"
static int t_zero(void *ctx, void *p, uint64_t bytes)
{
	void *cc;
	CTX(ctx, cc);
	DEV(p);
	return cpu()->zero(cc, UT(p), bytes);
}
#undef OP

#define OP "copy"
static int t_copy(void *ctx, void *dst, const void *src, uint64_t bytes)
{
	void *cc;
	CTX(ctx, cc);
	DEV(dst);
	DEV(src);
	return cpu()->copy(cc, UT(dst), UT(src), bytes);
}
#undef OP

#define OP "to_device"
static int t_to_device(void *ctx, void *dst, const void *host_src, uint64_t bytes)
{
	void *cc;
	CTX(ctx, cc);
	DEV(dst);
	HOST(host_src);
	return cpu()->to_device(cc, UT(dst), host_src, bytes);
}
#undef OP

#define OP "to_host"
static int t_to_host(void *ctx, void *host_dst, const void *src, uint64_t bytes)
{
	void *cc;
	CTX(ctx, cc);
	HOST(host_dst);
	DEV(src);
	return cpu()->to_host(cc, host_dst, UT(src), bytes);
}
#undef OP

/* ---- matrix products ---- */

#define OP "sgemm"
static int t_sgemm(void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
		   const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	void *cc;
	CTX(ctx, cc);
	DEV(a);
	DEV(b);
	DEV(c);
	return cpu()->sgemm(cc, trans_a, trans_b, m, n, k, alpha, UT(a), lda, UT(b), ldb, beta,
			    UT(c), ldc);
}
#undef OP

#define OP "sgemm_strided_batched"
static int t_sgemm_strided_batched(void *ctx, bool trans_a, bool trans_b, int m, int n, int k,
				   float alpha, const float *a, int lda, int64_t stride_a,
				   const float *b, int ldb, int64_t stride_b, float beta, float *c,
				   int ldc, int64_t stride_c, int batch)
{
	void *cc;
	CTX(ctx, cc);
	DEV(a);
	DEV(b);
	DEV(c);
	return cpu()->sgemm_strided_batched(cc, trans_a, trans_b, m, n, k, alpha, UT(a), lda,
					    stride_a, UT(b), ldb, stride_b, beta, UT(c), ldc,
					    stride_c, batch);
}
#undef OP

#define OP "linear_forward"
static int t_linear_forward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
			    const float *w, const float *b, float *y)
{
	void *cc;
	CTX(ctx, cc);
	DEV(x);
	DEV(w);
	DEV(b);
	DEV(y);
	return cpu()->linear_forward(cc, N, in, out, UT(x), UT(w), UT(b), UT(y));
}
#undef OP

#define OP "linear_backward"
static int t_linear_backward(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
			     const float *w, const float *dy, float *dx, float *dw, float *db)
{
	void *cc;
	CTX(ctx, cc);
	DEV(x);
	DEV(w);
	DEV(dy);
	DEV(dx);
	DEV(dw);
	DEV(db);
	return cpu()->linear_backward(cc, N, in, out, UT(x), UT(w), UT(dy), UT(dx), UT(dw), UT(db));
}
#undef OP

/* ---- layers ---- */

#define OP "embedding_forward"
static int t_embedding_forward(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
			       const float *w, float *out)
{
	void *cc;
	CTX(ctx, cc);
	DEV(ids);
	DEV(w);
	DEV(out);
	return cpu()->embedding_forward(cc, N, V, D, UT(ids), UT(w), UT(out));
}
#undef OP

#define OP "embedding_backward"
static int t_embedding_backward(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
				const float *dout, float *dw)
{
	void *cc;
	CTX(ctx, cc);
	DEV(ids);
	DEV(dout);
	DEV(dw);
	return cpu()->embedding_backward(cc, N, V, D, UT(ids), UT(dout), UT(dw));
}
#undef OP

static uint64_t t_gru_cache_floats(void *ctx, const struct fedrun_gru_dims *d)
{
	const struct tagged_ctx *c = ctx;
	if (!c || c->magic != CTX_MAGIC || is_tagged(d))
		return 0; /* no room: the forward pass that follows refuses */
	return cpu()->gru_cache_floats(c->cpu, d);
}

/* The weights (and gradients) of a GRU layer, checked member by member and
 * untagged into *u. */
static int gru_weights(const char *OP, const struct fedrun_gru_weights *w,
		       struct fedrun_gru_weights *u)
{
	if (!w)
		return fedrun_error(FEDRUN_EINVAL, "tagged backend: %s: NULL weights", OP);
	HOST(w);
	DEV(w->w_ih);
	DEV(w->w_hh);
	DEV(w->b_ih);
	DEV(w->b_hh);
	*u = (struct fedrun_gru_weights){UT(w->w_ih), UT(w->w_hh), UT(w->b_ih), UT(w->b_hh)};
	return 0;
}

static int gru_grads(const char *OP, const struct fedrun_gru_grads *g, struct fedrun_gru_grads *u)
{
	if (!g)
		return fedrun_error(FEDRUN_EINVAL, "tagged backend: %s: NULL gradients", OP);
	HOST(g);
	DEV(g->w_ih);
	DEV(g->w_hh);
	DEV(g->b_ih);
	DEV(g->b_hh);
	*u = (struct fedrun_gru_grads){UT(g->w_ih), UT(g->w_hh), UT(g->b_ih), UT(g->b_hh)};
	return 0;
}

#define OP "gru_forward"
static int t_gru_forward(void *ctx, const struct fedrun_gru_dims *d,
			 const struct fedrun_gru_weights *w, const float *x, const float *h0,
			 float *y, float *cache)
{
	void *cc;
	CTX(ctx, cc);
	HOST(d);
	struct fedrun_gru_weights uw;
	int rc = gru_weights(OP, w, &uw);
	if (rc < 0)
		return rc;
	DEV(x);
	DEV(h0);
	DEV(y);
	DEV(cache);
	return cpu()->gru_forward(cc, d, &uw, UT(x), UT(h0), UT(y), UT(cache));
}
#undef OP

#define OP "gru_backward"
static int t_gru_backward(void *ctx, const struct fedrun_gru_dims *d,
			  const struct fedrun_gru_weights *w, const float *x, const float *h0,
			  const float *y, float *cache, const float *dy, const float *dhT,
			  float *dx, float *dh0, const struct fedrun_gru_grads *g)
{
	void *cc;
	CTX(ctx, cc);
	HOST(d);
	struct fedrun_gru_weights uw;
	struct fedrun_gru_grads ug;
	int rc = gru_weights(OP, w, &uw);
	if (rc == 0)
		rc = gru_grads(OP, g, &ug);
	if (rc < 0)
		return rc;
	DEV(x);
	DEV(h0);
	DEV(y);
	DEV(cache);
	DEV(dy);
	DEV(dhT);
	DEV(dx);
	DEV(dh0);
	return cpu()->gru_backward(cc, d, &uw, UT(x), UT(h0), UT(y), UT(cache), UT(dy), UT(dhT),
				   UT(dx), UT(dh0), &ug);
}
#undef OP

#define OP "dropout_forward"
static int t_dropout_forward(void *ctx, uint64_t n, float p, struct fedrun_rng *rng, const float *x,
			     float *y, uint8_t *mask)
{
	void *cc;
	CTX(ctx, cc);
	HOST(rng);
	DEV(x);
	DEV(y);
	DEV(mask);
	return cpu()->dropout_forward(cc, n, p, rng, UT(x), UT(y), UT(mask));
}
#undef OP

#define OP "dropout_backward"
static int t_dropout_backward(void *ctx, uint64_t n, float p, const uint8_t *mask, const float *dy,
			      float *dx)
{
	void *cc;
	CTX(ctx, cc);
	DEV(mask);
	DEV(dy);
	DEV(dx);
	return cpu()->dropout_backward(cc, n, p, UT(mask), UT(dy), UT(dx));
}
#undef OP

#define OP "softmax_xent"
static int t_softmax_xent(void *ctx, uint32_t N, uint32_t V, const float *logits,
			  const int32_t *targets, double *loss, uint64_t *count, float *dlogits)
{
	void *cc;
	CTX(ctx, cc);
	DEV(logits);
	DEV(targets);
	HOST(loss);
	HOST(count);
	DEV(dlogits);
	return cpu()->softmax_xent(cc, N, V, UT(logits), UT(targets), loss, count, UT(dlogits));
}
#undef OP

#define OP "act_forward"
static int t_act_forward(void *ctx, enum fedrun_act act, uint64_t n, const float *x, float *y)
{
	void *cc;
	CTX(ctx, cc);
	DEV(x);
	DEV(y);
	return cpu()->act_forward(cc, act, n, UT(x), UT(y));
}
#undef OP

#define OP "act_backward"
static int t_act_backward(void *ctx, enum fedrun_act act, uint64_t n, const float *x,
			  const float *dy, float *dx)
{
	void *cc;
	CTX(ctx, cc);
	DEV(x);
	DEV(dy);
	DEV(dx);
	return cpu()->act_backward(cc, act, n, UT(x), UT(dy), UT(dx));
}
#undef OP

/* ---- Transformer layers ---- */

#define OP "layernorm_forward"
static int t_layernorm_forward(void *ctx, uint32_t N, uint32_t D, float eps, const float *x,
			       const float *gain, const float *bias, float *y, float *cache)
{
	void *cc;
	CTX(ctx, cc);
	DEV(x);
	DEV(gain);
	DEV(bias);
	DEV(y);
	DEV(cache);
	return cpu()->layernorm_forward(cc, N, D, eps, UT(x), UT(gain), UT(bias), UT(y), UT(cache));
}
#undef OP

#define OP "layernorm_backward"
static int t_layernorm_backward(void *ctx, uint32_t N, uint32_t D, const float *x,
				const float *gain, const float *cache, const float *dy, float *dx,
				float *dgain, float *dbias)
{
	void *cc;
	CTX(ctx, cc);
	DEV(x);
	DEV(gain);
	DEV(cache);
	DEV(dy);
	DEV(dx);
	DEV(dgain);
	DEV(dbias);
	return cpu()->layernorm_backward(cc, N, D, UT(x), UT(gain), UT(cache), UT(dy), UT(dx),
					 UT(dgain), UT(dbias));
}
#undef OP

static uint64_t t_attn_cache_floats(void *ctx, const struct fedrun_attn_dims *d)
{
	const struct tagged_ctx *c = ctx;
	if (!c || c->magic != CTX_MAGIC || is_tagged(d))
		return 0;
	return cpu()->attn_cache_floats(c->cpu, d);
}

#define OP "attn_forward"
static int t_attn_forward(void *ctx, const struct fedrun_attn_dims *d, const float *q,
			  const float *k, const float *v, const int32_t *key_len,
			  struct fedrun_rng *rng, float *out, float *cache)
{
	void *cc;
	CTX(ctx, cc);
	HOST(d);
	DEV(q);
	DEV(k);
	DEV(v);
	DEV(key_len);
	HOST(rng);
	DEV(out);
	DEV(cache);
	return cpu()->attn_forward(cc, d, UT(q), UT(k), UT(v), UT(key_len), rng, UT(out),
				   UT(cache));
}
#undef OP

#define OP "attn_backward"
static int t_attn_backward(void *ctx, const struct fedrun_attn_dims *d, const float *q,
			   const float *k, const float *v, const int32_t *key_len,
			   const float *cache, const float *dout, float *dq, float *dk, float *dv)
{
	void *cc;
	CTX(ctx, cc);
	HOST(d);
	DEV(q);
	DEV(k);
	DEV(v);
	DEV(key_len);
	DEV(cache);
	DEV(dout);
	DEV(dq);
	DEV(dk);
	DEV(dv);
	return cpu()->attn_backward(cc, d, UT(q), UT(k), UT(v), UT(key_len), UT(cache), UT(dout),
				    UT(dq), UT(dk), UT(dv));
}
#undef OP

#define OP "posenc_forward"
static int t_posenc_forward(void *ctx, uint32_t B, uint32_t T, uint32_t D, uint32_t pos0,
			    float scale, const float *x, float *y)
{
	void *cc;
	CTX(ctx, cc);
	DEV(x);
	DEV(y);
	return cpu()->posenc_forward(cc, B, T, D, pos0, scale, UT(x), UT(y));
}
#undef OP

#define OP "posenc_backward"
static int t_posenc_backward(void *ctx, uint32_t B, uint32_t T, uint32_t D, float scale,
			     const float *dy, float *dx)
{
	void *cc;
	CTX(ctx, cc);
	DEV(dy);
	DEV(dx);
	return cpu()->posenc_backward(cc, B, T, D, scale, UT(dy), UT(dx));
}
#undef OP

#define OP "label_smoothed_xent"
static int t_label_smoothed_xent(void *ctx, uint32_t N, uint32_t V, float eps, const float *logits,
				 const int32_t *targets, double *loss, double *nll, uint64_t *count,
				 float *dlogits)
{
	void *cc;
	CTX(ctx, cc);
	DEV(logits);
	DEV(targets);
	HOST(loss);
	HOST(nll);
	HOST(count);
	DEV(dlogits);
	return cpu()->label_smoothed_xent(cc, N, V, eps, UT(logits), UT(targets), loss, nll, count,
					  UT(dlogits));
}
#undef OP

#define OP "softmax_xent_db"
static int t_softmax_xent_db(void *ctx, uint32_t N, uint32_t V, const float *logits,
			     const int32_t *targets, float scale, double *loss, uint64_t *count,
			     float *dlogits, float *db)
{
	void *cc;
	CTX(ctx, cc);
	DEV(logits);
	DEV(targets);
	HOST(loss);
	HOST(count);
	DEV(dlogits);
	DEV(db);
	return cpu()->softmax_xent_db(cc, N, V, UT(logits), UT(targets), scale, loss, count,
				      UT(dlogits), UT(db));
}
#undef OP

/* ---- the local optimizer ---- */

#define OP "optim_step"
static int t_optim_step(void *ctx, const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
			float *params, float *grad, float *state, uint64_t *step, bool zero_grad)
{
	void *cc;
	CTX(ctx, cc);
	HOST(cfg);
	DEV(params);
	DEV(grad);
	DEV(state);
	HOST(step);
	return cpu()->optim_step(cc, cfg, lr, n, UT(params), UT(grad), UT(state), step, zero_grad);
}
#undef OP

#define OP "prox_grad"
static int t_prox_grad(void *ctx, uint64_t n, float mu, const float *params, const float *anchor,
		       float *grad)
{
	void *cc;
	CTX(ctx, cc);
	DEV(params);
	DEV(anchor);
	DEV(grad);
	return cpu()->prox_grad(cc, n, mu, UT(params), UT(anchor), UT(grad));
}
#undef OP

static const struct fedrun_backend_ops tagged_ops = {
    .size = sizeof(struct fedrun_backend_ops),
    .name = "tagged",
    .ctx_create = t_ctx_create,
    .ctx_destroy = t_ctx_destroy,
    .alloc = t_alloc,
    .free_mem = t_free_mem,
    .zero = t_zero,
    .copy = t_copy,
    .to_device = t_to_device,
    .to_host = t_to_host,
    .sgemm = t_sgemm,
    .sgemm_strided_batched = t_sgemm_strided_batched,
    .linear_forward = t_linear_forward,
    .linear_backward = t_linear_backward,
    .embedding_forward = t_embedding_forward,
    .embedding_backward = t_embedding_backward,
    .gru_cache_floats = t_gru_cache_floats,
    .gru_forward = t_gru_forward,
    .gru_backward = t_gru_backward,
    .dropout_forward = t_dropout_forward,
    .dropout_backward = t_dropout_backward,
    .softmax_xent = t_softmax_xent,
    .act_forward = t_act_forward,
    .act_backward = t_act_backward,
    .layernorm_forward = t_layernorm_forward,
    .layernorm_backward = t_layernorm_backward,
    .attn_cache_floats = t_attn_cache_floats,
    .attn_forward = t_attn_forward,
    .attn_backward = t_attn_backward,
    .posenc_forward = t_posenc_forward,
    .posenc_backward = t_posenc_backward,
    .label_smoothed_xent = t_label_smoothed_xent,
    .softmax_xent_db = t_softmax_xent_db,
    .optim_step = t_optim_step,
    .prox_grad = t_prox_grad,
};

static const struct fedrun_plugin tagged_plugin =
    FEDRUN_PLUGIN_INIT(FEDRUN_KIND_BACKEND, "tagged", "1.0.0",
		       "test backend: the CPU one behind tagged device pointers", &tagged_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &tagged_plugin : NULL;
}
