/* SPDX-License-Identifier: Apache-2.0 */
/* The encoder-decoder Transformer (Vaswani et al. 2017) as calls of the
 * backend vtable: layout, initialisation, forward and backward over a
 * batch, incremental decoding. See net.h for the architecture and the
 * conventions.
 *
 * How a pass is organised. Every sublayer (self-attention, cross-attention,
 * feed-forward) sits in a "block" with its residual connection and layer
 * norm (sec. 3.1 and 5.4 of Vaswani et al.):
 *   post-norm:  sub = x,      r = x + Dropout(Sublayer(sub)),  out = LN(r)
 *   pre-norm:   sub = LN(x),  r = x + Dropout(Sublayer(sub)),  out = r
 * A block keeps r, the layer norm's output n (post: the block's output;
 * pre: the sublayer's input) and the layer norm's statistics. The backward
 * pass carries ONE gradient buffer g down each stack: g holds dL/d(block
 * output); the post-norm layer norm turns it into dL/dr in place; the
 * sublayer's last linear reads it (through dropout); the sublayer's first
 * linear then ADDS its input gradient into g (sgemm with beta = 1: the
 * residual path and the sublayer path meet without an extra pass), or, in
 * pre-norm, writes it into a scratch that the block's layer norm
 * backpropagates before it is added to g.
 *
 * The largest arrays are the logits (target tokens x vocab). Only the
 * target positions that have a target go through the output layer
 * (padding rows are gathered out first), in chunks of OUT_CHUNK rows: a
 * chunk's logits are computed by one sgemm, turned into their own gradient
 * in place by label_smoothed_xent and consumed by the two sgemms of the
 * output projection's backward pass while they are still in the cache;
 * one chunk's worth exists.
 *
 * Almost all the time of a training pass is spent in sgemm (measured: 88%
 * on the "small" preset, one thread); the rest is kept to single passes:
 * one fused (N,3D) projection for self-attention and (N,2D) for the
 * cross-attention keys and values, biases broadcast into the output that
 * the sgemm then accumulates into (beta = 1), residual sums written once,
 * activation gradients added by the sgemm that produces them.
 *
 * Memory. Parameters, gradients, activations and the decoding caches are
 * device memory, touched only by backend ops; the batch's token ids,
 * lengths and targets are built on the host and cross in one to_device per
 * pass (one per decoding step: the step's tokens and key lengths); the
 * losses come back through the ops' host scalars and the decoder's logits
 * through one to_host per decoding step. The table has no element-wise sum
 * or bias broadcast: a sum y += a x is prox_grad with mu = a and an anchor
 * of zeros (y + a (x - 0), the same bits as y + a x), a bias broadcast over
 * rows is embedding_forward with all ids 0, column sums are linear_backward
 * with only db, and rows are moved with copy. Each keeps the bits of the
 * host loops it replaces. */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "net.h"
#include "../device.h"

#define CHECK(call)                                                                                \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ < 0)                                                                       \
			return rc_;                                                                \
	} while (0)

/* ---- offsets of the tensors in the arena ---------------------------------- */

struct ln_off {
	uint64_t g, b; /* gain (weight), bias */
};

struct attn_off {
	uint64_t w[3], b[3]; /* q, k, v projections */
	uint64_t wo, bo;     /* output projection */
	struct ln_off ln;    /* the block's layer norm */
};

struct ffn_off {
	uint64_t w1, b1, w2, b2;
	struct ln_off ln;
};

struct enc_off {
	struct attn_off sa;
	struct ffn_off ff;
};

struct dec_off {
	struct attn_off sa, ca;
	struct ffn_off ff;
};

struct net_off {
	uint64_t emb_src, emb_tgt, out; /* may coincide (tying) */
	struct ln_off enc_norm, dec_norm;
	struct enc_off *enc;
	struct dec_off *dec;
};

/* ---- activations ----------------------------------------------------------- */

/* One residual block's saved activations (see the comment at the top). */
struct blk {
	const float *x;	  /* block input (borrowed) */
	const float *sub; /* sublayer input: x or n */
	float *r;	  /* (N,D) x + Dropout(sublayer) */
	float *n;	  /* (N,D) LN(r) (post) or LN(x) (pre) */
	float *ln;	  /* (2N) layer-norm mean and rstd */
	uint8_t *mask;	  /* (N,D) dropout mask of the sublayer output, or NULL */
	int drop;	  /* dropout applied in this pass */
};

struct enc_act {
	struct blk sa, ff;
	float *qkv, *a, *ac; /* (N,3D), (N,D), attention cache */
	float *h;	     /* (N,F) activation output (after dropout) */
	float *hpre;	     /* (N,F) its input (GELU only; ReLU needs none) */
	uint8_t *hmask;
};

struct dec_act {
	struct blk sa, ca, ff;
	float *qkv, *a, *ac;
	float *q, *kv, *c, *cc; /* (Nt,D), (Ns,2D), (Nt,D), cross-attention cache */
	float *h, *hpre;
	uint8_t *hmask;
};

/* Decoding state made by tfm_encode. */
struct dec_state {
	int ready;
	uint32_t B, Ts, beam, rows, steps, next_t;
	const float *params;
	int32_t *src_len; /* (B), then src (B,Ts): one to_device */
	int32_t *src;
	int32_t *tokens; /* (rows), then klen (rows): one to_device per step */
	int32_t *klen;	 /* (rows) t + 1 */
	float *logits;	 /* (rows,V) */
	float **ckv;	 /* per layer (B Ts, 2D) cross-attention keys | values */
	float **kv;	 /* per layer (rows, steps, 2D) self-attention cache */
	float *spare;	 /* (rows, steps, 2D) for reordering */
	float *x, *qkv, *a, *ac, *q, *c, *cc, *h, *hpre, *fin, *finln;
	struct blk sa, ca, ff;
	float *mem;   /* the arena all of the above live in, kept between */
	uint64_t cap; /* encodes while it is large enough (floats) */
};

struct tfm_work {
	struct tfm_cfg c;
	struct fedrun_layout layout;
	struct mdev_net dv; /* the backend (prow: 3D floats) */
	struct net_off off;
	uint32_t D, H, F, V, dh;
	float emb_scale; /* sqrt(D), sec. 3.4 */

	/* training activations, sized by what the largest batches seen so far
	 * need, each quantity on its own: source and target tokens (B Ts,
	 * B Tt) and the attention caches' floats. Taking the largest B and the
	 * longest T separately would multiply a batch of many short pairs by
	 * the length of one long pair (evaluation sees both). */
	uint64_t capNs, capNt, capAss, capAtt, capAts;
	int32_t *ids;	     /* a batch's ids: src, tgt_in, src_len, tgt_len, targets */
	float *xs, *xt;	     /* (Ns,D), (Nt,D) embedded inputs */
	uint8_t *ms, *mt;    /* their dropout masks */
	struct enc_act *enc; /* per encoder layer */
	struct dec_act *dec; /* per decoder layer */
	float *enc_fin, *enc_fln, *dec_fin, *dec_fln; /* pre-norm final norms */
	const float *enc_out, *dec_out;
	float *hc;		/* (Nt,D) gathered decoder outputs */
	float *logits;		/* (Nt,V) */
	float *gs, *gt;		/* (Ns,D), (Nt,D) gradient carried down each stack */
	float *tmp;		/* (maxN,D) dropout outputs / gradients */
	float *dz;		/* (maxN,max(D,F)) */
	float *dqkv;		/* (maxN,3D) */
	float *dq, *dkv;	/* (Nt,D), (Ns,2D) */
	float *dn;		/* (maxN,D) pre-norm sublayer-input gradient */
	int drop, adrop, hdrop; /* dropouts active in this pass */
	struct fedrun_rng *rng;

	struct dec_state ds;
};

/* ---- configuration and layout --------------------------------------------- */

int tfm_cfg_check(const struct tfm_cfg *c)
{
	if (!c)
		return fedrun_error(FEDRUN_EINVAL, "transformer: NULL configuration");
	if (!c->vocab || !c->enc_layers || !c->dec_layers || !c->dim || !c->heads || !c->ffn)
		return fedrun_error(FEDRUN_EINVAL,
				    "transformer: vocab %u, layers %u+%u, dim %u, heads %u, ffn "
				    "%u: each must be >= 1",
				    c->vocab, c->enc_layers, c->dec_layers, c->dim, c->heads,
				    c->ffn);
	if (c->dim % c->heads)
		return fedrun_error(FEDRUN_EINVAL,
				    "transformer: dim %u is not a multiple of heads %u", c->dim,
				    c->heads);
	if (c->enc_layers > 1000 || c->dec_layers > 1000 || c->dim > 65536 || c->ffn > 1048576 ||
	    c->vocab > 16777216)
		return fedrun_error(FEDRUN_EINVAL, "transformer: dimensions too large");
	const float p[] = {c->dropout, c->attn_dropout, c->relu_dropout};
	const char *pn[] = {"dropout", "attention_dropout", "relu_dropout"};
	for (int i = 0; i < 3; i++)
		if (!(p[i] >= 0.0f && p[i] < 1.0f))
			return fedrun_error(FEDRUN_EINVAL, "transformer: %s = %g outside [0, 1)",
					    pn[i], (double)p[i]);
	if (!(c->label_smoothing >= 0.0f && c->label_smoothing <= 1.0f))
		return fedrun_error(FEDRUN_EINVAL,
				    "transformer: label_smoothing = %g outside [0, 1]",
				    (double)c->label_smoothing);
	if (c->activation != FEDRUN_ACT_RELU && c->activation != FEDRUN_ACT_GELU)
		return fedrun_error(FEDRUN_EINVAL,
				    "transformer: activation %d is neither ReLU nor GELU",
				    c->activation);
	if (c->tie != TFM_TIE_NONE && c->tie != TFM_TIE_DECODER && c->tie != TFM_TIE_ALL)
		return fedrun_error(FEDRUN_EINVAL, "transformer: tie = %d unknown", c->tie);
	const int32_t id[] = {c->pad_id, c->bos_id, c->eos_id};
	const char *idn[] = {"pad", "bos", "eos"};
	for (int i = 0; i < 3; i++)
		if (id[i] < 0 || (uint32_t)id[i] >= c->vocab)
			return fedrun_error(FEDRUN_EINVAL,
					    "transformer: %s id %d outside [0, vocab %u)", idn[i],
					    id[i], c->vocab);
	return 0;
}

static int add2(struct fedrun_layout *l, const char *name, uint64_t rows, uint64_t cols)
{
	uint64_t shape[2] = {rows, cols};
	return fedrun_layout_add(l, name, cols ? 2 : 1, shape);
}

/* name = prefix + suffix, added with shape (rows, cols) (cols 0: a vector) */
static int addp(struct fedrun_layout *l, const char *prefix, const char *suffix, uint64_t rows,
		uint64_t cols)
{
	char name[FEDRUN_NAME_MAX];
	int n = snprintf(name, sizeof name, "%s%s", prefix, suffix);
	if (n < 0 || (size_t)n >= sizeof name)
		return fedrun_error(FEDRUN_EINVAL, "transformer: tensor name %s%s too long", prefix,
				    suffix);
	return add2(l, name, rows, cols);
}

/* q, k, v weights adjacent, then their biases adjacent, so that the arena
 * holds the fused (3D,D) in-projection (see net.h). */
static int add_attn(struct fedrun_layout *l, const char *p, uint64_t D)
{
	static const char *const w[] = {"q_proj.weight", "k_proj.weight", "v_proj.weight"};
	static const char *const b[] = {"q_proj.bias", "k_proj.bias", "v_proj.bias"};
	int rc = 0;
	for (int i = 0; i < 3 && rc == 0; i++)
		rc = addp(l, p, w[i], D, D);
	for (int i = 0; i < 3 && rc == 0; i++)
		rc = addp(l, p, b[i], D, 0);
	if (rc == 0)
		rc = addp(l, p, "out_proj.weight", D, D);
	if (rc == 0)
		rc = addp(l, p, "out_proj.bias", D, 0);
	return rc;
}

static int add_ln(struct fedrun_layout *l, const char *p, uint64_t D)
{
	int rc = addp(l, p, ".weight", D, 0);
	return rc ? rc : addp(l, p, ".bias", D, 0);
}

static int add_ffn(struct fedrun_layout *l, const char *p, uint64_t D, uint64_t F)
{
	int rc = addp(l, p, "fc1.weight", F, D);
	if (rc == 0)
		rc = addp(l, p, "fc1.bias", F, 0);
	if (rc == 0)
		rc = addp(l, p, "fc2.weight", D, F);
	if (rc == 0)
		rc = addp(l, p, "fc2.bias", D, 0);
	return rc;
}

/* One layer's tensors, in arena order: self-attention and its norm,
 * (decoder: encoder-decoder attention and its norm,) feed-forward and its
 * norm, all under STACK.layers.I. */
static int add_layer(struct fedrun_layout *l, const char *stack, uint32_t i, int cross, uint64_t D,
		     uint64_t F)
{
	char p[96];
	snprintf(p, sizeof p, "%s.layers.%u.self_attn.", stack, i);
	int rc = add_attn(l, p, D);
	snprintf(p, sizeof p, "%s.layers.%u.self_attn_norm", stack, i);
	if (rc == 0)
		rc = add_ln(l, p, D);
	snprintf(p, sizeof p, "%s.layers.%u.cross_attn.", stack, i);
	if (rc == 0 && cross)
		rc = add_attn(l, p, D);
	snprintf(p, sizeof p, "%s.layers.%u.cross_attn_norm", stack, i);
	if (rc == 0 && cross)
		rc = add_ln(l, p, D);
	snprintf(p, sizeof p, "%s.layers.%u.ffn.", stack, i);
	if (rc == 0)
		rc = add_ffn(l, p, D, F);
	snprintf(p, sizeof p, "%s.layers.%u.ffn_norm", stack, i);
	if (rc == 0)
		rc = add_ln(l, p, D);
	return rc;
}

static int build_layout(const struct tfm_cfg *c, struct fedrun_layout *l)
{
	const uint64_t D = c->dim, F = c->ffn, V = c->vocab;
	int rc = 0;
	if (c->tie != TFM_TIE_ALL)
		rc = add2(l, "encoder.embed.weight", V, D);
	for (uint32_t i = 0; i < c->enc_layers && rc == 0; i++)
		rc = add_layer(l, "encoder", i, 0, D, F);
	if (rc == 0 && c->pre_norm)
		rc = add_ln(l, "encoder.norm", D);
	if (rc == 0)
		rc = add2(l, "decoder.embed.weight", V, D);
	for (uint32_t i = 0; i < c->dec_layers && rc == 0; i++)
		rc = add_layer(l, "decoder", i, 1, D, F);
	if (rc == 0 && c->pre_norm)
		rc = add_ln(l, "decoder.norm", D);
	if (rc == 0 && c->tie == TFM_TIE_NONE)
		rc = add2(l, "decoder.output.weight", V, D);
	return rc;
}

int tfm_layout(const struct tfm_cfg *c, struct fedrun_layout **out)
{
	CHECK(tfm_cfg_check(c));
	struct fedrun_layout *l;
	CHECK(mdev_layout_new(&l, out, "tfm_layout"));
	return mdev_layout_done(l, build_layout(c, l), out);
}

void tfm_layout_free(struct fedrun_layout *l)
{
	mdev_layout_free(l);
}

/* Offset of tensor prefix+suffix, which must have numel floats. */
static int find(const struct fedrun_layout *l, const char *prefix, const char *suffix,
		uint64_t numel, uint64_t *off)
{
	char name[FEDRUN_NAME_MAX];
	snprintf(name, sizeof name, "%s%s", prefix, suffix);
	int64_t i;
	CHECK(mdev_layout_find(l, "transformer", name, numel, &i));
	*off = l->t[i].offset;
	return 0;
}

static int find_ln(const struct fedrun_layout *l, const char *p, uint64_t D, struct ln_off *o)
{
	CHECK(find(l, p, ".weight", D, &o->g));
	return find(l, p, ".bias", D, &o->b);
}

static int find_attn(const struct fedrun_layout *l, const char *p, const char *norm, uint64_t D,
		     struct attn_off *o)
{
	static const char *const w[] = {"q_proj.weight", "k_proj.weight", "v_proj.weight"};
	static const char *const b[] = {"q_proj.bias", "k_proj.bias", "v_proj.bias"};
	for (int i = 0; i < 3; i++) {
		CHECK(find(l, p, w[i], D * D, &o->w[i]));
		CHECK(find(l, p, b[i], D, &o->b[i]));
	}
	CHECK(find(l, p, "out_proj.weight", D * D, &o->wo));
	CHECK(find(l, p, "out_proj.bias", D, &o->bo));
	return find_ln(l, norm, D, &o->ln);
}

static int find_ffn(const struct fedrun_layout *l, const char *p, const char *norm, uint64_t D,
		    uint64_t F, struct ffn_off *o)
{
	CHECK(find(l, p, "fc1.weight", F * D, &o->w1));
	CHECK(find(l, p, "fc1.bias", F, &o->b1));
	CHECK(find(l, p, "fc2.weight", D * F, &o->w2));
	CHECK(find(l, p, "fc2.bias", D, &o->b2));
	return find_ln(l, norm, D, &o->ln);
}

static void off_free(struct net_off *o)
{
	free(o->enc);
	free(o->dec);
	o->enc = NULL;
	o->dec = NULL;
}

/* Resolves every tensor of cfg c in layout l by name. */
static int resolve(const struct tfm_cfg *c, const struct fedrun_layout *l, struct net_off *o)
{
	const uint64_t D = c->dim, F = c->ffn, V = c->vocab;
	memset(o, 0, sizeof *o);
	o->enc = calloc(c->enc_layers, sizeof *o->enc);
	o->dec = calloc(c->dec_layers, sizeof *o->dec);
	if (!o->enc || !o->dec) {
		off_free(o);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	char p[96], q[96];
	int rc = find(l, "decoder.embed.weight", "", V * D, &o->emb_tgt);
	if (rc == 0)
		o->emb_src = o->out = o->emb_tgt;
	if (rc == 0 && c->tie != TFM_TIE_ALL)
		rc = find(l, "encoder.embed.weight", "", V * D, &o->emb_src);
	if (rc == 0 && c->tie == TFM_TIE_NONE)
		rc = find(l, "decoder.output.weight", "", V * D, &o->out);
	for (uint32_t i = 0; i < c->enc_layers && rc == 0; i++) {
		snprintf(p, sizeof p, "encoder.layers.%u.self_attn.", i);
		snprintf(q, sizeof q, "encoder.layers.%u.self_attn_norm", i);
		rc = find_attn(l, p, q, D, &o->enc[i].sa);
		snprintf(p, sizeof p, "encoder.layers.%u.ffn.", i);
		snprintf(q, sizeof q, "encoder.layers.%u.ffn_norm", i);
		if (rc == 0)
			rc = find_ffn(l, p, q, D, F, &o->enc[i].ff);
	}
	for (uint32_t i = 0; i < c->dec_layers && rc == 0; i++) {
		snprintf(p, sizeof p, "decoder.layers.%u.self_attn.", i);
		snprintf(q, sizeof q, "decoder.layers.%u.self_attn_norm", i);
		rc = find_attn(l, p, q, D, &o->dec[i].sa);
		snprintf(p, sizeof p, "decoder.layers.%u.cross_attn.", i);
		snprintf(q, sizeof q, "decoder.layers.%u.cross_attn_norm", i);
		if (rc == 0)
			rc = find_attn(l, p, q, D, &o->dec[i].ca);
		snprintf(p, sizeof p, "decoder.layers.%u.ffn.", i);
		snprintf(q, sizeof q, "decoder.layers.%u.ffn_norm", i);
		if (rc == 0)
			rc = find_ffn(l, p, q, D, F, &o->dec[i].ff);
	}
	if (rc == 0 && c->pre_norm)
		rc = find_ln(l, "encoder.norm", D, &o->enc_norm);
	if (rc == 0 && c->pre_norm)
		rc = find_ln(l, "decoder.norm", D, &o->dec_norm);
	if (rc < 0)
		off_free(o);
	return rc;
}

/* ---- initialisation -------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

int tfm_init(const struct tfm_cfg *c, const struct fedrun_layout *l, uint64_t seed, float *params)
{
	CHECK(tfm_cfg_check(c));
	if (!l || !params)
		return fedrun_error(FEDRUN_EINVAL, "tfm_init: NULL layout or params");
	struct net_off o;
	CHECK(resolve(c, l, &o)); /* the layout must be the cfg's */
	off_free(&o);
	const double D = c->dim, F = c->ffn;
	memset(params, 0, l->total * sizeof *params);
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		float *p = params + t->offset;
		struct fedrun_rng r;
		fedrun_rng_init(&r, seed, FEDRUN_RNG_INIT, 0, i);
		double a = 0.0; /* Xavier-uniform bound, 0: not a block matrix */
		if (ends_with(t->name, "embed.weight") || ends_with(t->name, "output.weight")) {
			/* fairseq's Embedding: N(0, D^-1/2), padding row 0 */
			const double sd = 1.0 / sqrt(D);
			for (uint64_t j = 0; j < t->numel; j++)
				p[j] = (float)(sd * fedrun_rng_normal(&r));
			if (!ends_with(t->name, "output.weight"))
				memset(p + (uint64_t)c->pad_id * c->dim, 0, c->dim * sizeof *p);
			continue;
		}
		if (ends_with(t->name, "q_proj.weight") || ends_with(t->name, "k_proj.weight") ||
		    ends_with(t->name, "v_proj.weight"))
			a = sqrt(6.0 / (4.0 * D)); /* the fused (3D,D) matrix */
		else if (ends_with(t->name, "out_proj.weight"))
			a = sqrt(6.0 / (2.0 * D));
		else if (ends_with(t->name, "fc1.weight") || ends_with(t->name, "fc2.weight"))
			a = sqrt(6.0 / (D + F));
		if (a > 0.0) {
			/* Glorot and Bengio 2010, eq. 16 */
			for (uint64_t j = 0; j < t->numel; j++)
				p[j] = (float)(a * (2.0 * fedrun_rng_uniform(&r) - 1.0));
		} else if (ends_with(t->name, "norm.weight")) {
			for (uint64_t j = 0; j < t->numel; j++)
				p[j] = 1.0f; /* layer-norm gain */
		}			     /* biases stay 0 */
	}
	return 0;
}

/* ---- work objects ------------------------------------------------------------ */

/* Rows of the output layer per chunk (see tfm_forward_backward). */
#ifndef OUT_CHUNK
#define OUT_CHUNK 512
#endif

static uint64_t attn_floats(const struct tfm_work *w, uint32_t B, uint32_t tq, uint32_t tk, float p)
{
	struct fedrun_attn_dims d = {
	    .batch = B, .heads = w->H, .tq = tq, .tk = tk, .dh = w->dh, .dropout = p};
	return w->dv.be->attn_cache_floats(w->dv.ctx, &d);
}

static void carve_blk(struct mdev_carve *k, struct blk *b, uint64_t N, uint64_t D, int mask)
{
	b->r = mdev_take(k, N * D);
	b->n = mdev_take(k, N * D);
	b->ln = mdev_take(k, 2 * N);
	b->mask = mask ? mdev_take_bytes(k, N * D) : NULL;
}

/* The training arena for the capacities cap*. */
static void carve_train(struct tfm_work *w, struct mdev_carve *k)
{
	const uint64_t Ns = w->capNs, Nt = w->capNt;
	const uint64_t N = Ns > Nt ? Ns : Nt, D = w->D, F = w->F, V = w->V;
	const int dm = w->c.dropout > 0, hm = w->c.relu_dropout > 0;
	const int gelu = w->c.activation != FEDRUN_ACT_RELU;
	/* src (Ns), tgt_in (Nt), src_len and tgt_len (B each, B <= Ns, Nt),
	 * targets and their rows (<= Nt each), every row's target (Nt) */
	w->ids = (int32_t *)mdev_take(k, Ns + 4 * Nt + 2 * (Ns < Nt ? Ns : Nt));
	w->xs = mdev_take(k, Ns * D);
	w->xt = mdev_take(k, Nt * D);
	w->ms = dm ? mdev_take_bytes(k, Ns * D) : NULL;
	w->mt = dm ? mdev_take_bytes(k, Nt * D) : NULL;
	for (uint32_t l = 0; l < w->c.enc_layers; l++) {
		struct enc_act *e = &w->enc[l];
		carve_blk(k, &e->sa, Ns, D, dm);
		carve_blk(k, &e->ff, Ns, D, dm);
		e->qkv = mdev_take(k, Ns * 3 * D);
		e->a = mdev_take(k, Ns * D);
		e->ac = mdev_take(k, w->capAss);
		e->h = mdev_take(k, Ns * F);
		e->hpre = gelu ? mdev_take(k, Ns * F) : NULL;
		e->hmask = hm ? mdev_take_bytes(k, Ns * F) : NULL;
	}
	for (uint32_t l = 0; l < w->c.dec_layers; l++) {
		struct dec_act *e = &w->dec[l];
		carve_blk(k, &e->sa, Nt, D, dm);
		carve_blk(k, &e->ca, Nt, D, dm);
		carve_blk(k, &e->ff, Nt, D, dm);
		e->qkv = mdev_take(k, Nt * 3 * D);
		e->a = mdev_take(k, Nt * D);
		e->ac = mdev_take(k, w->capAtt);
		e->q = mdev_take(k, Nt * D);
		e->kv = mdev_take(k, Ns * 2 * D);
		e->c = mdev_take(k, Nt * D);
		e->cc = mdev_take(k, w->capAts);
		e->h = mdev_take(k, Nt * F);
		e->hpre = gelu ? mdev_take(k, Nt * F) : NULL;
		e->hmask = hm ? mdev_take_bytes(k, Nt * F) : NULL;
	}
	if (w->c.pre_norm) {
		w->enc_fin = mdev_take(k, Ns * D);
		w->enc_fln = mdev_take(k, 2 * Ns);
		w->dec_fin = mdev_take(k, Nt * D);
		w->dec_fln = mdev_take(k, 2 * Nt);
	}
	w->hc = mdev_take(k, Nt * D);
	w->logits = mdev_take(k, (Nt < OUT_CHUNK ? Nt : OUT_CHUNK) * V);
	w->gs = mdev_take(k, Ns * D);
	w->gt = mdev_take(k, Nt * D);
	w->tmp = mdev_take(k, N * D);
	w->dz = mdev_take(k, N * (F > D ? F : D));
	w->dqkv = mdev_take(k, N * 3 * D);
	w->dq = mdev_take(k, Nt * D);
	w->dkv = mdev_take(k, Ns * 2 * D);
	w->dn = mdev_take(k, N * D);
}

static int reserve_train(struct tfm_work *w, uint32_t B, uint32_t Ts, uint32_t Tt)
{
	const float ap = w->c.attn_dropout;
	const uint64_t ns = (uint64_t)B * Ts, nt = (uint64_t)B * Tt;
	const uint64_t ass = attn_floats(w, B, Ts, Ts, ap), att = attn_floats(w, B, Tt, Tt, ap);
	const uint64_t ats = attn_floats(w, B, Tt, Ts, ap);
	if (ns <= w->capNs && nt <= w->capNt && ass <= w->capAss && att <= w->capAtt &&
	    ats <= w->capAts && w->dv.mem)
		return 0;
#define GROW_(cap, v) ((cap) = (v) > (cap) ? (v) : (cap))
	GROW_(w->capNs, ns);
	GROW_(w->capNt, nt);
	GROW_(w->capAss, ass);
	GROW_(w->capAtt, att);
	GROW_(w->capAts, ats);
#undef GROW_
	struct mdev_carve k = {NULL, 0};
	carve_train(w, &k);
	if (w->dv.mem)
		w->dv.be->free_mem(w->dv.ctx, w->dv.mem);
	w->dv.mem = NULL;
	int rc = w->dv.be->alloc(w->dv.ctx, k.n * sizeof(float), (void **)&w->dv.mem);
	if (rc < 0) {
		w->capNs = w->capNt = w->capAss = w->capAtt = w->capAts = 0;
		return fedrun_error_wrap(rc, "transformer: activations for %u x (%u, %u): ", B, Ts,
					 Tt);
	}
	k.base = w->dv.mem;
	k.n = 0;
	carve_train(w, &k);
	return 0;
}

static void dec_state_free(struct tfm_work *w)
{
	struct dec_state *s = &w->ds;
	if (s->mem)
		w->dv.be->free_mem(w->dv.ctx, s->mem);
	free(s->ckv);
	free(s->kv);
	memset(s, 0, sizeof *s);
}

void tfm_work_destroy(struct tfm_work *w)
{
	if (!w)
		return;
	if (w->dv.be && w->dv.ctx)
		dec_state_free(w);
	mdev_net_close(&w->dv);
	free(w->enc);
	free(w->dec);
	off_free(&w->off);
	fedrun_layout_fini(&w->layout);
	free(w);
}

int tfm_work_create_cfg(const struct tfm_cfg *c, const struct fedrun_layout *l,
			const struct fedrun_backend_ops *be,
			const struct fedrun_backend_ctx_cfg *ctx_cfg, struct tfm_work **out)
{
	CHECK(tfm_cfg_check(c));
	if (!l || !be || !out)
		return fedrun_error(FEDRUN_EINVAL, "tfm_work_create: NULL argument");
	if (!FEDRUN_BACKEND_HAS(be, label_smoothed_xent))
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "transformer: backend %s has no Transformer layers",
				    be->name ? be->name : "?");
	if (!FEDRUN_BACKEND_HAS(be, prox_grad))
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "transformer: backend %s has no prox_grad op (the network's "
				    "element-wise sums)",
				    be->name ? be->name : "?");
	struct tfm_work *w = calloc(1, sizeof *w);
	if (!w)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	fedrun_layout_init(&w->layout);
	w->c = *c;
	w->D = c->dim, w->H = c->heads, w->F = c->ffn, w->V = c->vocab;
	w->dh = c->dim / c->heads;
	w->emb_scale = sqrtf((float)c->dim);
	int rc = fedrun_layout_copy(&w->layout, l);
	if (rc == 0)
		rc = resolve(c, &w->layout, &w->off);
	if (rc == 0) {
		w->enc = calloc(c->enc_layers, sizeof *w->enc);
		w->dec = calloc(c->dec_layers, sizeof *w->dec);
		if (!w->enc || !w->dec)
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	if (rc == 0)
		rc = mdev_net_open(&w->dv, be, ctx_cfg, 3 * (uint64_t)c->dim);
	if (rc < 0) {
		tfm_work_destroy(w);
		return rc;
	}
	*out = w;
	return 0;
}

int tfm_work_create(const struct tfm_cfg *c, const struct fedrun_layout *l,
		    const struct fedrun_backend_ops *be, struct tfm_work **out)
{
	struct fedrun_backend_ctx_cfg cfg =
	    mdev_ctx_cfg(c->device, !c->nondeterministic, c->precision);
	return tfm_work_create_cfg(c, l, be, &cfg, out);
}

/* ---- device memory ------------------------------------------------------------ */

void *tfm_work_ctx(const struct tfm_work *w)
{
	return w->dv.ctx;
}

int tfm_work_to_device(struct tfm_work *w, void *dst, const void *src, uint64_t bytes)
{
	return mdev_net_to_device(&w->dv, dst, src, bytes);
}

int tfm_work_to_host(struct tfm_work *w, void *dst, const void *src, uint64_t bytes)
{
	return mdev_net_to_host(&w->dv, dst, src, bytes);
}

void tfm_work_xfer(const struct tfm_work *w, uint64_t *h2d, uint64_t *d2h)
{
	*h2d = w->dv.xfer.h2d;
	*d2h = w->dv.xfer.d2h;
}

void tfm_work_xfer_add(struct tfm_work *w, uint64_t h2d, uint64_t d2h)
{
	w->dv.xfer.h2d += h2d;
	w->dv.xfer.d2h += d2h;
}

int tfm_work_axpy(struct tfm_work *w, uint64_t n, float a, const float *x, float *y)
{
	return mdev_net_add(&w->dv, n, a, x, y);
}

/* Every row of y (N, P D) = [b_0 | b_1 | ...]: embedding_forward of row 0
 * of that one-row table, N times (copies, as memcpy of each b_p would
 * be). Biases that are not adjacent are gathered into w->dv.prow first. */
static int bcast_rows(struct tfm_work *w, uint64_t N, uint32_t P, uint64_t D, const float *const *b,
		      float *y)
{
	const float *row = b[0];
	for (uint32_t p = 1; p < P && row; p++)
		if (b[p] != b[0] + p * D)
			row = NULL;
	if (!row) {
		for (uint32_t p = 0; p < P; p++)
			CHECK(
			    w->dv.be->copy(w->dv.ctx, w->dv.prow + p * D, b[p], D * sizeof(float)));
		row = w->dv.prow;
	}
	return mdev_net_bcast(&w->dv, N, P * D, row, y);
}

/* ---- building blocks --------------------------------------------------------- */

/* y (N, P D) = [b_0 | b_1 | ...] on every row, then y += x . [W_0; W_1;
 * ...]^T: P projections of x (N,in) with weights W_p (D,in), side by side
 * (the fused in-projection of multi-head attention when P = 3 or 2). One
 * linear op (the bias rows, then one sgemm with beta 1) when the W_p and
 * the b_p are adjacent in memory; one sgemm when the W_p are. */
static int proj_fwd(struct tfm_work *w, uint64_t N, uint64_t in, uint32_t P, uint64_t D,
		    const float *x, const float *const *W, const float *const *b, float *y)
{
	const uint64_t ld = P * D;
	int fused = 1, badj = 1;
	for (uint32_t p = 1; p < P; p++) {
		fused &= W[p] == W[0] + p * D * in;
		badj &= b[p] == b[0] + p * D;
	}
	if (fused && badj)
		return w->dv.be->linear_forward(w->dv.ctx, (uint32_t)N, (uint32_t)in, (uint32_t)ld,
						x, W[0], b[0], y);
	CHECK(bcast_rows(w, N, P, D, b, y));
	if (fused)
		return mdev_net_mm(&w->dv, false, true, N, ld, in, 1.0f, x, in, W[0], in, 1.0f, y,
				   ld);
	for (uint32_t p = 0; p < P; p++)
		CHECK(mdev_net_mm(&w->dv, false, true, N, D, in, 1.0f, x, in, W[p], in, 1.0f,
				  y + p * D, ld));
	return 0;
}

/* Backward of proj_fwd for dy (N, P D): dx (N,in) = dy . [W_p] + beta dx
 * (dx NULL: skipped); dW_p += dy_p^T x; db_p += column sums of dy_p. */
static int proj_bwd(struct tfm_work *w, uint64_t N, uint64_t in, uint32_t P, uint64_t D,
		    const float *x, const float *const *W, const float *dy, float *dx, float beta,
		    float *const *dW, float *const *db)
{
	const uint64_t ld = P * D;
	int fused = 1;
	for (uint32_t p = 1; p < P; p++)
		fused &= W[p] == W[0] + p * D * in && dW[p] == dW[0] + p * D * in;
	if (dx) {
		if (fused)
			CHECK(mdev_net_mm(&w->dv, false, false, N, in, ld, 1.0f, dy, ld, W[0], in,
					  beta, dx, in));
		else
			for (uint32_t p = 0; p < P; p++)
				CHECK(mdev_net_mm(&w->dv, false, false, N, in, D, 1.0f, dy + p * D,
						  ld, W[p], in, p ? 1.0f : beta, dx, in));
	}
	if (fused)
		CHECK(mdev_net_mm(&w->dv, true, false, ld, in, N, 1.0f, dy, ld, x, in, 1.0f, dW[0],
				  in));
	else
		for (uint32_t p = 0; p < P; p++)
			CHECK(mdev_net_mm(&w->dv, true, false, D, in, N, 1.0f, dy + p * D, ld, x,
					  in, 1.0f, dW[p], in));
	/* bias gradients: the column sums of dy, linear_backward with only db
	 * (rows in order, in float over runs of rows joined in double); with
	 * the db_p apart, summed into w->dv.prow and added to each */
	int badj = 1;
	for (uint32_t p = 1; p < P; p++)
		badj &= db[p] == db[0] + p * D;
	if (badj)
		return w->dv.be->linear_backward(w->dv.ctx, (uint32_t)N, (uint32_t)in, (uint32_t)ld,
						 NULL, NULL, dy, NULL, NULL, db[0]);
	CHECK(w->dv.be->zero(w->dv.ctx, w->dv.prow, ld * sizeof(float)));
	CHECK(w->dv.be->linear_backward(w->dv.ctx, (uint32_t)N, (uint32_t)in, (uint32_t)ld, NULL,
					NULL, dy, NULL, NULL, w->dv.prow));
	for (uint32_t p = 0; p < P; p++)
		CHECK(mdev_net_add(&w->dv, D, 1.0f, w->dv.prow + p * D, db[p]));
	return 0;
}

/* Start of a residual block on input x (N,D); sets k->sub. */
static int blk_begin(struct tfm_work *w, struct blk *k, uint64_t N, const float *x,
		     const struct ln_off *ln, const float *P)
{
	k->x = x;
	k->sub = x;
	if (w->c.pre_norm) {
		CHECK(w->dv.be->layernorm_forward(w->dv.ctx, (uint32_t)N, w->D, TFM_LN_EPS, x,
						  P + ln->g, P + ln->b, k->n, k->ln));
		k->sub = k->n;
	}
	return 0;
}

/* End of a residual block: r = x + Dropout(z Wo^T + bo) for the sublayer's
 * last hidden values z (N,K); post-norm: n = LN(r). *out: the block's
 * output. */
static int blk_end(struct tfm_work *w, struct blk *k, uint64_t N, uint64_t K, const float *z,
		   uint64_t wo, uint64_t bo, const struct ln_off *ln, const float *P,
		   const float **out)
{
	const uint64_t D = w->D;
	const float *b = P + bo;
	if (k->drop) {
		/* r = o + x, o = Dropout(z Wo^T + bo) made in r */
		CHECK(proj_fwd(w, N, K, 1, D, z, (const float *const[]){P + wo}, &b, k->r));
		CHECK(w->dv.be->dropout_forward(w->dv.ctx, N * D, w->c.dropout, w->rng, k->r, k->r,
						k->mask));
		CHECK(mdev_net_add(&w->dv, N * D, 1.0f, k->x, k->r));
	} else {
		/* r = (bo + x) + z Wo^T */
		CHECK(bcast_rows(w, N, 1, D, &b, k->r));
		CHECK(mdev_net_add(&w->dv, N * D, 1.0f, k->x, k->r));
		CHECK(mdev_net_mm(&w->dv, false, true, N, D, K, 1.0f, z, K, P + wo, K, 1.0f, k->r,
				  D));
	}
	if (w->c.pre_norm) {
		*out = k->r;
		return 0;
	}
	CHECK(w->dv.be->layernorm_forward(w->dv.ctx, (uint32_t)N, w->D, TFM_LN_EPS, k->r, P + ln->g,
					  P + ln->b, k->n, k->ln));
	*out = k->n;
	return 0;
}

/* Backward of blk_end: g (N,D) holds dL/d(block output); on return it holds
 * dL/dr (the residual path's share of dL/dx), and dz (N,K) = dL/dz. */
static int blk_end_bwd(struct tfm_work *w, struct blk *k, uint64_t N, uint64_t K, const float *z,
		       uint64_t wo, uint64_t bo, const struct ln_off *ln, const float *P, float *G,
		       float *g, float *dz)
{
	const uint64_t D = w->D;
	if (!w->c.pre_norm)
		CHECK(w->dv.be->layernorm_backward(w->dv.ctx, (uint32_t)N, w->D, k->r, P + ln->g,
						   k->ln, g, g, G + ln->g, G + ln->b));
	const float *d = g;
	if (k->drop) {
		CHECK(
		    w->dv.be->dropout_backward(w->dv.ctx, N * D, w->c.dropout, k->mask, g, w->tmp));
		d = w->tmp;
	}
	float *dwo = G + wo, *dbo = G + bo;
	return proj_bwd(w, N, K, 1, D, z, (const float *const[]){P + wo}, d, dz, 0.0f, &dwo, &dbo);
}

/* Where the sublayer's first linear puts dL/d(sublayer input), and with
 * which beta: post-norm adds it into g (the sublayer input is x), pre-norm
 * writes it to w->dn for blk_begin_bwd. */
static float *sub_target(struct tfm_work *w, float *g, float *beta)
{
	*beta = w->c.pre_norm ? 0.0f : 1.0f;
	return w->c.pre_norm ? w->dn : g;
}

/* Backward of blk_begin: pre-norm: g += LN backward of w->dn. */
static int blk_begin_bwd(struct tfm_work *w, struct blk *k, uint64_t N, const struct ln_off *ln,
			 const float *P, float *G, float *g)
{
	if (!w->c.pre_norm)
		return 0;
	CHECK(w->dv.be->layernorm_backward(w->dv.ctx, (uint32_t)N, w->D, k->x, P + ln->g, k->ln,
					   w->dn, w->dn, G + ln->g, G + ln->b));
	return mdev_net_add(&w->dv, N * w->D, 1.0f, w->dn, g);
}

static struct fedrun_attn_dims adims(const struct tfm_work *w, uint32_t B, uint32_t tq, uint32_t tk,
				     uint32_t ldq, uint32_t ldkv, int causal, int drop)
{
	struct fedrun_attn_dims d = {.batch = B,
				     .heads = w->H,
				     .tq = tq,
				     .tk = tk,
				     .dh = w->dh,
				     .ldq = ldq,
				     .ldk = ldkv,
				     .ldv = ldkv,
				     .causal = (uint32_t)causal,
				     .scale = 0.0f, /* 1/sqrt(dh), eq. 1 */
				     .dropout = drop ? w->c.attn_dropout : 0.0f};
	return d;
}

static void qkv_ptrs(const float *P, const struct attn_off *a, int first, int n, const float **W,
		     const float **b)
{
	for (int i = 0; i < n; i++) {
		W[i] = P + a->w[first + i];
		b[i] = P + a->b[first + i];
	}
}

static void qkv_grads(float *G, const struct attn_off *a, int first, int n, float **W, float **b)
{
	for (int i = 0; i < n; i++) {
		W[i] = G + a->w[first + i];
		b[i] = G + a->b[first + i];
	}
}

/* Self-attention block (sec. 3.2.2): qkv = sub [Wq; Wk; Wv]^T + b, heads
 * attend (eq. 1), the output projection and the residual. B sequences of
 * T positions; key_len (B) or NULL; causal for the decoder (sec. 3.2.3). */
static int self_attn_fwd(struct tfm_work *w, const float *P, const struct attn_off *o,
			 struct blk *k, float *qkv, float *a, float *ac, uint32_t B, uint32_t T,
			 const int32_t *key_len, int causal, const float *x, const float **out)
{
	const uint64_t N = (uint64_t)B * T, D = w->D;
	CHECK(blk_begin(w, k, N, x, &o->ln, P));
	const float *W[3], *b[3];
	qkv_ptrs(P, o, 0, 3, W, b);
	CHECK(proj_fwd(w, N, D, 3, D, k->sub, W, b, qkv));
	struct fedrun_attn_dims d = adims(w, B, T, T, 3 * w->D, 3 * w->D, causal, w->adrop);
	CHECK(w->dv.be->attn_forward(w->dv.ctx, &d, qkv, qkv + D, qkv + 2 * D, key_len, w->rng, a,
				     ac));
	return blk_end(w, k, N, D, a, o->wo, o->bo, &o->ln, P, out);
}

static int self_attn_bwd(struct tfm_work *w, const float *P, float *G, const struct attn_off *o,
			 struct blk *k, const float *qkv, const float *a, const float *ac,
			 uint32_t B, uint32_t T, const int32_t *key_len, int causal, float *g)
{
	const uint64_t N = (uint64_t)B * T, D = w->D;
	CHECK(blk_end_bwd(w, k, N, D, a, o->wo, o->bo, &o->ln, P, G, g, w->dz));
	struct fedrun_attn_dims d = adims(w, B, T, T, 3 * w->D, 3 * w->D, causal, w->adrop);
	float *dqkv = w->dqkv;
	CHECK(w->dv.be->attn_backward(w->dv.ctx, &d, qkv, qkv + D, qkv + 2 * D, key_len, ac, w->dz,
				      dqkv, dqkv + D, dqkv + 2 * D));
	const float *W[3], *b[3];
	float *dW[3], *db[3], beta;
	qkv_ptrs(P, o, 0, 3, W, b);
	qkv_grads(G, o, 0, 3, dW, db);
	float *dsub = sub_target(w, g, &beta);
	CHECK(proj_bwd(w, N, D, 3, D, k->sub, W, dqkv, dsub, beta, dW, db));
	return blk_begin_bwd(w, k, N, &o->ln, P, G, g);
}

/* Position-wise feed-forward block (sec. 3.3, eq. 2) with dropout on the
 * hidden units (fairseq's activation dropout). ReLU is applied in place
 * (hpre NULL); GELU keeps its input in hpre for the backward pass. */
static int ffn_fwd(struct tfm_work *w, const float *P, const struct ffn_off *o, struct blk *k,
		   float *h, float *hpre, uint8_t *hmask, uint64_t N, const float *x,
		   const float **out)
{
	const uint64_t D = w->D, F = w->F;
	CHECK(blk_begin(w, k, N, x, &o->ln, P));
	const float *W = P + o->w1, *b = P + o->b1;
	float *pre = hpre ? hpre : h;
	CHECK(proj_fwd(w, N, D, 1, F, k->sub, &W, &b, pre));
	CHECK(w->dv.be->act_forward(w->dv.ctx, (enum fedrun_act)w->c.activation, N * F, pre, h));
	if (w->hdrop)
		CHECK(w->dv.be->dropout_forward(w->dv.ctx, N * F, w->c.relu_dropout, w->rng, h, h,
						hmask));
	return blk_end(w, k, N, F, h, o->w2, o->b2, &o->ln, P, out);
}

static int ffn_bwd(struct tfm_work *w, const float *P, float *G, const struct ffn_off *o,
		   struct blk *k, const float *h, const float *hpre, const uint8_t *hmask,
		   uint64_t N, float *g)
{
	const uint64_t D = w->D, F = w->F;
	float *dh = w->dz;
	CHECK(blk_end_bwd(w, k, N, F, h, o->w2, o->b2, &o->ln, P, G, g, dh));
	if (w->hdrop)
		CHECK(
		    w->dv.be->dropout_backward(w->dv.ctx, N * F, w->c.relu_dropout, hmask, dh, dh));
	/* ReLU: h, its output after dropout, is > 0 exactly where the ReLU
	 * passed a kept unit, and dh is already 0 on dropped ones, so it
	 * gates the gradient as the ReLU's input would. */
	CHECK(w->dv.be->act_backward(w->dv.ctx, (enum fedrun_act)w->c.activation, N * F,
				     hpre ? hpre : h, dh, dh));
	const float *W = P + o->w1;
	float *dW = G + o->w1, *db = G + o->b1, beta;
	float *dsub = sub_target(w, g, &beta);
	CHECK(proj_bwd(w, N, D, 1, F, k->sub, &W, dh, dsub, beta, &dW, &db));
	return blk_begin_bwd(w, k, N, &o->ln, P, G, g);
}

/* Encoder-decoder attention block (sec. 3.2.3): queries from the decoder,
 * keys and values from the encoder output e (B,Ts,D), one fused (2D,D)
 * projection. */
static int cross_attn_fwd(struct tfm_work *w, const float *P, const struct attn_off *o,
			  struct dec_act *e, uint32_t B, uint32_t Tt, uint32_t Ts, const float *enc,
			  const int32_t *src_len, const float *x, const float **out)
{
	const uint64_t Nt = (uint64_t)B * Tt, Ns = (uint64_t)B * Ts, D = w->D;
	struct blk *k = &e->ca;
	CHECK(blk_begin(w, k, Nt, x, &o->ln, P));
	const float *W[3], *b[3];
	qkv_ptrs(P, o, 0, 3, W, b);
	CHECK(proj_fwd(w, Nt, D, 1, D, k->sub, W, b, e->q));
	CHECK(proj_fwd(w, Ns, D, 2, D, enc, W + 1, b + 1, e->kv));
	struct fedrun_attn_dims d = adims(w, B, Tt, Ts, 0, 2 * w->D, 0, w->adrop);
	CHECK(w->dv.be->attn_forward(w->dv.ctx, &d, e->q, e->kv, e->kv + D, src_len, w->rng, e->c,
				     e->cc));
	return blk_end(w, k, Nt, D, e->c, o->wo, o->bo, &o->ln, P, out);
}

/* denc (Ns,D) = (first ? 0 : denc) + the gradient through K and V. */
static int cross_attn_bwd(struct tfm_work *w, const float *P, float *G, const struct attn_off *o,
			  struct dec_act *e, uint32_t B, uint32_t Tt, uint32_t Ts, const float *enc,
			  const int32_t *src_len, float *g, float *denc, int first)
{
	const uint64_t Nt = (uint64_t)B * Tt, Ns = (uint64_t)B * Ts, D = w->D;
	struct blk *k = &e->ca;
	CHECK(blk_end_bwd(w, k, Nt, D, e->c, o->wo, o->bo, &o->ln, P, G, g, w->dz));
	struct fedrun_attn_dims d = adims(w, B, Tt, Ts, 0, 2 * w->D, 0, w->adrop);
	CHECK(w->dv.be->attn_backward(w->dv.ctx, &d, e->q, e->kv, e->kv + D, src_len, e->cc, w->dz,
				      w->dq, w->dkv, w->dkv + D));
	const float *W[3], *b[3];
	float *dW[3], *db[3], beta;
	qkv_ptrs(P, o, 0, 3, W, b);
	qkv_grads(G, o, 0, 3, dW, db);
	CHECK(proj_bwd(w, Ns, D, 2, D, enc, W + 1, w->dkv, denc, first ? 0.0f : 1.0f, dW + 1,
		       db + 1));
	float *dsub = sub_target(w, g, &beta);
	CHECK(proj_bwd(w, Nt, D, 1, D, k->sub, W, w->dq, dsub, beta, dW, db));
	return blk_begin_bwd(w, k, Nt, &o->ln, P, G, g);
}

/* x (B,T,D) = sqrt(D) E[ids] + PE (sec. 3.4, 3.5), then dropout. */
static int embed_fwd(struct tfm_work *w, uint32_t B, uint32_t T, const int32_t *ids, const float *E,
		     float *x, uint8_t *mask)
{
	const uint64_t N = (uint64_t)B * T;
	CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)N, w->V, w->D, ids, E, x));
	CHECK(w->dv.be->posenc_forward(w->dv.ctx, B, T, w->D, 0, w->emb_scale, x, x));
	if (w->drop)
		CHECK(w->dv.be->dropout_forward(w->dv.ctx, N * w->D, w->c.dropout, w->rng, x, x,
						mask));
	return 0;
}

/* Consumes g (B,T,D). */
static int embed_bwd(struct tfm_work *w, uint32_t B, uint32_t T, const int32_t *ids,
		     const uint8_t *mask, float *g, float *dE)
{
	const uint64_t N = (uint64_t)B * T;
	if (w->drop)
		CHECK(w->dv.be->dropout_backward(w->dv.ctx, N * w->D, w->c.dropout, mask, g, g));
	CHECK(w->dv.be->posenc_backward(w->dv.ctx, B, T, w->D, w->emb_scale, g, g));
	return w->dv.be->embedding_backward(w->dv.ctx, (uint32_t)N, w->V, w->D, ids, g, dE);
}

/* ---- the encoder and decoder stacks ------------------------------------------ */

static void set_drop(struct tfm_work *w, struct fedrun_rng *rng)
{
	w->rng = rng;
	w->drop = rng && w->c.dropout > 0.0f;
	w->adrop = rng && w->c.attn_dropout > 0.0f;
	w->hdrop = rng && w->c.relu_dropout > 0.0f;
	for (uint32_t l = 0; l < w->c.enc_layers; l++)
		w->enc[l].sa.drop = w->enc[l].ff.drop = w->drop;
	for (uint32_t l = 0; l < w->c.dec_layers; l++)
		w->dec[l].sa.drop = w->dec[l].ca.drop = w->dec[l].ff.drop = w->drop;
}

static int encoder_fwd(struct tfm_work *w, const float *P, uint32_t B, uint32_t Ts,
		       const int32_t *src, const int32_t *src_len)
{
	const uint64_t Ns = (uint64_t)B * Ts;
	CHECK(embed_fwd(w, B, Ts, src, P + w->off.emb_src, w->xs, w->ms));
	const float *x = w->xs;
	for (uint32_t l = 0; l < w->c.enc_layers; l++) {
		struct enc_act *e = &w->enc[l];
		const struct enc_off *o = &w->off.enc[l];
		CHECK(self_attn_fwd(w, P, &o->sa, &e->sa, e->qkv, e->a, e->ac, B, Ts, src_len, 0, x,
				    &x));
		CHECK(ffn_fwd(w, P, &o->ff, &e->ff, e->h, e->hpre, e->hmask, Ns, x, &x));
	}
	if (w->c.pre_norm) {
		CHECK(w->dv.be->layernorm_forward(w->dv.ctx, (uint32_t)Ns, w->D, TFM_LN_EPS, x,
						  P + w->off.enc_norm.g, P + w->off.enc_norm.b,
						  w->enc_fin, w->enc_fln));
		x = w->enc_fin;
	}
	w->enc_out = x;
	return 0;
}

/* The encoder's input: the last layer's output (before the final norm). */
static const float *enc_last(const struct tfm_work *w)
{
	const struct enc_act *e = &w->enc[w->c.enc_layers - 1];
	return w->c.pre_norm ? e->ff.r : e->ff.n;
}

static const float *dec_last(const struct tfm_work *w)
{
	const struct dec_act *e = &w->dec[w->c.dec_layers - 1];
	return w->c.pre_norm ? e->ff.r : e->ff.n;
}

/* g = w->gs holds dL/d(encoder output); consumed. */
static int encoder_bwd(struct tfm_work *w, const float *P, float *G, uint32_t B, uint32_t Ts,
		       const int32_t *src, const int32_t *src_len)
{
	const uint64_t Ns = (uint64_t)B * Ts;
	float *g = w->gs;
	if (w->c.pre_norm)
		CHECK(w->dv.be->layernorm_backward(w->dv.ctx, (uint32_t)Ns, w->D, enc_last(w),
						   P + w->off.enc_norm.g, w->enc_fln, g, g,
						   G + w->off.enc_norm.g, G + w->off.enc_norm.b));
	for (uint32_t l = w->c.enc_layers; l-- > 0;) {
		struct enc_act *e = &w->enc[l];
		const struct enc_off *o = &w->off.enc[l];
		CHECK(ffn_bwd(w, P, G, &o->ff, &e->ff, e->h, e->hpre, e->hmask, Ns, g));
		CHECK(self_attn_bwd(w, P, G, &o->sa, &e->sa, e->qkv, e->a, e->ac, B, Ts, src_len, 0,
				    g));
	}
	return embed_bwd(w, B, Ts, src, w->ms, g, G + w->off.emb_src);
}

static int decoder_fwd(struct tfm_work *w, const float *P, const struct tfm_batch *b)
{
	const uint64_t Nt = (uint64_t)b->B * b->Tt;
	CHECK(embed_fwd(w, b->B, b->Tt, b->tgt_in, P + w->off.emb_tgt, w->xt, w->mt));
	const float *x = w->xt;
	for (uint32_t l = 0; l < w->c.dec_layers; l++) {
		struct dec_act *e = &w->dec[l];
		const struct dec_off *o = &w->off.dec[l];
		CHECK(self_attn_fwd(w, P, &o->sa, &e->sa, e->qkv, e->a, e->ac, b->B, b->Tt,
				    b->tgt_len, 1, x, &x));
		CHECK(cross_attn_fwd(w, P, &o->ca, e, b->B, b->Tt, b->Ts, w->enc_out, b->src_len, x,
				     &x));
		CHECK(ffn_fwd(w, P, &o->ff, &e->ff, e->h, e->hpre, e->hmask, Nt, x, &x));
	}
	if (w->c.pre_norm) {
		CHECK(w->dv.be->layernorm_forward(w->dv.ctx, (uint32_t)Nt, w->D, TFM_LN_EPS, x,
						  P + w->off.dec_norm.g, P + w->off.dec_norm.b,
						  w->dec_fin, w->dec_fln));
		x = w->dec_fin;
	}
	w->dec_out = x;
	return 0;
}

/* g = w->gt holds dL/d(decoder output); consumed. Leaves dL/d(encoder
 * output) in w->gs. */
static int decoder_bwd(struct tfm_work *w, const float *P, float *G, const struct tfm_batch *b)
{
	const uint64_t Nt = (uint64_t)b->B * b->Tt;
	float *g = w->gt;
	if (w->c.pre_norm)
		CHECK(w->dv.be->layernorm_backward(w->dv.ctx, (uint32_t)Nt, w->D, dec_last(w),
						   P + w->off.dec_norm.g, w->dec_fln, g, g,
						   G + w->off.dec_norm.g, G + w->off.dec_norm.b));
	for (uint32_t l = w->c.dec_layers; l-- > 0;) {
		struct dec_act *e = &w->dec[l];
		const struct dec_off *o = &w->off.dec[l];
		CHECK(ffn_bwd(w, P, G, &o->ff, &e->ff, e->h, e->hpre, e->hmask, Nt, g));
		CHECK(cross_attn_bwd(w, P, G, &o->ca, e, b->B, b->Tt, b->Ts, w->enc_out, b->src_len,
				     g, w->gs, l == w->c.dec_layers - 1));
		CHECK(self_attn_bwd(w, P, G, &o->sa, &e->sa, e->qkv, e->a, e->ac, b->B, b->Tt,
				    b->tgt_len, 1, g));
	}
	return embed_bwd(w, b->B, b->Tt, b->tgt_in, w->mt, g, G + w->off.emb_tgt);
}

/* ---- passes ------------------------------------------------------------------ */

static int check_ids(const char *what, const int32_t *ids, uint64_t n, uint32_t V, int neg_ok)
{
	if (!ids)
		return fedrun_error(FEDRUN_EINVAL, "transformer: NULL %s", what);
	for (uint64_t i = 0; i < n; i++)
		if ((ids[i] < 0 && !neg_ok) || (ids[i] >= 0 && (uint32_t)ids[i] >= V))
			return fedrun_error(FEDRUN_EINVAL,
					    "transformer: %s[%llu] = %d outside [0, vocab %u)",
					    what, (unsigned long long)i, ids[i], V);
	return 0;
}

static int check_lens(const char *what, const int32_t *len, uint32_t B, uint32_t T)
{
	if (!len)
		return fedrun_error(FEDRUN_EINVAL, "transformer: NULL %s", what);
	for (uint32_t i = 0; i < B; i++)
		if (len[i] < 0 || (uint32_t)len[i] > T)
			return fedrun_error(FEDRUN_EINVAL,
					    "transformer: %s[%u] = %d outside [0, %u]", what, i,
					    len[i], T);
	return 0;
}

static int check_batch(const struct tfm_work *w, const struct tfm_batch *b, int need_out)
{
	if (!w || !b)
		return fedrun_error(FEDRUN_EINVAL, "transformer: NULL work or batch");
	if (!b->B || !b->Ts || !b->Tt)
		return fedrun_error(FEDRUN_EINVAL, "transformer: empty batch (B %u, Ts %u, Tt %u)",
				    b->B, b->Ts, b->Tt);
	if ((uint64_t)b->B * (b->Ts > b->Tt ? b->Ts : b->Tt) > (1u << 24))
		return fedrun_error(FEDRUN_EINVAL, "transformer: batch of %u x %u too large", b->B,
				    b->Ts > b->Tt ? b->Ts : b->Tt);
	const uint64_t Ns = (uint64_t)b->B * b->Ts, Nt = (uint64_t)b->B * b->Tt;
	CHECK(check_ids("src", b->src, Ns, w->V, 0));
	CHECK(check_ids("tgt_in", b->tgt_in, Nt, w->V, 0));
	if (need_out)
		CHECK(check_ids("tgt_out", b->tgt_out, Nt, w->V, 1));
	CHECK(check_lens("src_len", b->src_len, b->B, b->Ts));
	return check_lens("tgt_len", b->tgt_len, b->B, b->Tt);
}

/* Where a batch's ids are on the device (send_batch). */
struct dev_batch {
	struct tfm_batch b; /* device view: src, tgt_in, src_len, tgt_len */
	const int32_t *tg;  /* (nc) the targets, in row order */
	const int32_t *row; /* (nc) the rows they are at */
	const int32_t *pos; /* (Nt) each row's index in tg, or nc (no target) */
	uint64_t nc;
};

/* The batch's ids on the device, in one to_device: src (Ns), tgt_in (Nt),
 * src_len (B), tgt_len (B), then with `targets` the nc targets (the
 * non-negative entries of tgt_out, in row order) and, when some rows have
 * none, the rows they are at (nc) and, with `scatter`, every row's index
 * among them (Nt; nc for a row without one). */
static int send_batch(struct tfm_work *w, const struct tfm_batch *b, bool targets, bool scatter,
		      struct dev_batch *d)
{
	const uint64_t Ns = (uint64_t)b->B * b->Ts, Nt = (uint64_t)b->B * b->Tt, B = b->B;
	int32_t *h = mdev_stage(&w->dv.hbuf, &w->dv.hcap, Ns + 4 * Nt + 2 * B);
	if (!h)
		return FEDRUN_ENOMEM;
	memcpy(h, b->src, Ns * sizeof *h);
	memcpy(h + Ns, b->tgt_in, Nt * sizeof *h);
	memcpy(h + Ns + Nt, b->src_len, B * sizeof *h);
	memcpy(h + Ns + Nt + B, b->tgt_len, B * sizeof *h);
	const uint64_t base = Ns + Nt + 2 * B;
	uint64_t nc = 0;
	for (uint64_t i = 0; targets && i < Nt; i++)
		nc += b->tgt_out[i] >= 0;
	int32_t *tg = h + base, *row = tg + nc, *pos = row + nc;
	uint64_t n = base;
	if (targets) {
		uint64_t k = 0;
		for (uint64_t i = 0; i < Nt; i++) {
			if (b->tgt_out[i] < 0) {
				pos[i] = (int32_t)nc;
				continue;
			}
			pos[i] = (int32_t)k;
			row[k] = (int32_t)i;
			tg[k++] = b->tgt_out[i];
		}
		n += nc;
		if (nc < Nt)
			n += nc + (scatter ? Nt : 0);
	}
	CHECK(tfm_work_to_device(w, w->ids, h, n * sizeof *h));
	const int32_t *dv = w->ids;
	d->b = (struct tfm_batch){.B = b->B,
				  .Ts = b->Ts,
				  .Tt = b->Tt,
				  .src = dv,
				  .tgt_in = dv + Ns,
				  .src_len = dv + Ns + Nt,
				  .tgt_len = dv + Ns + Nt + B};
	d->tg = dv + base;
	d->row = dv + base + nc;
	d->pos = dv + base + 2 * nc;
	d->nc = nc;
	return 0;
}

/* tfm_forward_backward, and with tok_nll (nc doubles, host) every target
 * token's own nll, -log p(target), by the loss op on its row alone (the
 * same row value the chunk's sum adds up), in row order. */
static int forward_pass(struct tfm_work *w, const float *params, const struct tfm_batch *b,
			struct fedrun_rng *rng, float *grad, double *loss_sum, double *nll_sum,
			uint64_t *ntok, double *tok_nll)
{
	CHECK(check_batch(w, b, 1));
	if (!params)
		return fedrun_error(FEDRUN_EINVAL, "transformer: NULL params");
	CHECK(reserve_train(w, b->B, b->Ts, b->Tt));
	const uint64_t Nt = (uint64_t)b->B * b->Tt, D = w->D, V = w->V;
	const float *P = params;
	struct dev_batch d;
	CHECK(send_batch(w, b, true, grad != NULL, &d));
	const uint64_t nc = d.nc;
	const int32_t *tg = d.tg;
	set_drop(w, rng);
	CHECK(encoder_fwd(w, P, d.b.B, d.b.Ts, d.b.src, d.b.src_len));
	CHECK(decoder_fwd(w, P, &d.b));
	/* the rows that have a target; padding rows skip the output layer */
	if (loss_sum)
		*loss_sum = 0.0;
	if (nll_sum)
		*nll_sum = 0.0;
	if (ntok)
		*ntok = nc;
	if (!nc)
		return 0;
	const float *h = w->dec_out;
	if (nc < Nt) { /* hc (nc,D) = the rows of h that have a target */
		CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)nc, (uint32_t)Nt, w->D,
						  d.row, h, w->hc));
		h = w->hc;
	}
	/* The output layer, chunk by chunk of OUT_CHUNK rows, so that a
	 * chunk's logits stay in the cache between the four passes over them:
	 * logits (n,V) = h E_out^T (sec. 3.4: the pre-softmax linear map),
	 * the loss, which writes its gradient over them, dh (n,D) = dlogits
	 * E_out and dE_out += dlogits^T h. The loss op scales the gradient by
	 * 1 / (the chunk's count); the sgemms' alpha rescales it to 1 / nc. */
	const float *Wout = P + w->off.out;
	float *G = grad;
	float *dh = nc < Nt ? w->tmp : w->gt;
	double lsum = 0.0, nsum = 0.0;
	for (uint64_t r0 = 0; r0 < nc; r0 += OUT_CHUNK) {
		const uint64_t n = nc - r0 < OUT_CHUNK ? nc - r0 : OUT_CHUNK;
		CHECK(mdev_net_mm(&w->dv, false, true, n, V, D, 1.0f, h + r0 * D, D, Wout, D, 0.0f,
				  w->logits, V));
		double loss = 0.0, nll = 0.0;
		uint64_t cnt = 0;
		CHECK(w->dv.be->label_smoothed_xent(w->dv.ctx, (uint32_t)n, w->V,
						    w->c.label_smoothing, w->logits, tg + r0, &loss,
						    &nll, &cnt, grad ? w->logits : NULL));
		lsum += loss * (double)cnt;
		nsum += nll * (double)cnt;
		for (uint64_t i = 0; tok_nll && i < n; i++)
			CHECK(w->dv.be->label_smoothed_xent(w->dv.ctx, 1, w->V, 0.0f,
							    w->logits + i * V, tg + r0 + i, NULL,
							    tok_nll + r0 + i, NULL, NULL));
		if (!grad)
			continue;
		const float k = (float)((double)cnt / (double)nc);
		CHECK(mdev_net_mm(&w->dv, false, false, n, D, V, k, w->logits, V, Wout, D, 0.0f,
				  dh + r0 * D, D));
		CHECK(mdev_net_mm(&w->dv, true, false, V, D, n, k, w->logits, V, h + r0 * D, D,
				  1.0f, G + w->off.out, D));
	}
	if (loss_sum)
		*loss_sum = lsum;
	if (nll_sum)
		*nll_sum = nsum;
	if (!grad)
		return 0;
	if (nc < Nt) {
		/* gt (Nt,D): row i = dh row pos[i], the zero row nc of dh for
		 * the rows without a target */
		CHECK(w->dv.be->zero(w->dv.ctx, dh + nc * D, D * sizeof *dh));
		CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)Nt, (uint32_t)nc + 1, w->D,
						  d.pos, dh, w->gt));
	}
	CHECK(decoder_bwd(w, P, G, &d.b));
	return encoder_bwd(w, P, G, d.b.B, d.b.Ts, d.b.src, d.b.src_len);
}

int tfm_forward_backward(struct tfm_work *w, const float *params, const struct tfm_batch *b,
			 struct fedrun_rng *rng, float *grad, double *loss_sum, double *nll_sum,
			 uint64_t *ntok)
{
	return forward_pass(w, params, b, rng, grad, loss_sum, nll_sum, ntok, NULL);
}

int tfm_forward_token_nll(struct tfm_work *w, const float *params, const struct tfm_batch *b,
			  double *tok_nll, double *nll_sum, uint64_t *ntok)
{
	if (!tok_nll)
		return fedrun_error(FEDRUN_EINVAL, "transformer: NULL tok_nll");
	return forward_pass(w, params, b, NULL, NULL, NULL, nll_sum, ntok, tok_nll);
}

int tfm_forward_logits(struct tfm_work *w, const float *params, const struct tfm_batch *b,
		       float *logits)
{
	CHECK(check_batch(w, b, 0));
	if (!params || !logits)
		return fedrun_error(FEDRUN_EINVAL, "transformer: NULL params or logits");
	CHECK(reserve_train(w, b->B, b->Ts, b->Tt));
	struct dev_batch d;
	CHECK(send_batch(w, b, false, false, &d));
	set_drop(w, NULL);
	CHECK(encoder_fwd(w, params, d.b.B, d.b.Ts, d.b.src, d.b.src_len));
	CHECK(decoder_fwd(w, params, &d.b));
	const uint64_t Nt = (uint64_t)b->B * b->Tt, D = w->D, bytes = Nt * w->V * sizeof(float);
	/* all of them at once, then to the caller's host array */
	float *dl = NULL;
	CHECK(w->dv.be->alloc(w->dv.ctx, bytes, (void **)&dl));
	int rc = mdev_net_mm(&w->dv, false, true, Nt, w->V, D, 1.0f, w->dec_out, D,
			     params + w->off.out, D, 0.0f, dl, w->V);
	if (rc == 0)
		rc = tfm_work_to_host(w, logits, dl, bytes);
	w->dv.be->free_mem(w->dv.ctx, dl);
	return rc;
}

/* ---- incremental decoding ------------------------------------------------------ */

static void carve_dec(struct tfm_work *w, struct mdev_carve *k)
{
	struct dec_state *s = &w->ds;
	const uint64_t R = s->rows, D = w->D, M = s->steps;
	s->src_len = (int32_t *)mdev_take(k, s->B + (uint64_t)s->B * s->Ts);
	s->src = s->src_len ? s->src_len + s->B : NULL;
	s->tokens = (int32_t *)mdev_take(k, 2 * R);
	s->klen = s->tokens ? s->tokens + R : NULL;
	for (uint32_t l = 0; l < w->c.dec_layers; l++) {
		s->ckv[l] = mdev_take(k, (uint64_t)s->B * s->Ts * 2 * D);
		s->kv[l] = mdev_take(k, R * M * 2 * D);
	}
	s->spare = mdev_take(k, R * M * 2 * D);
	s->x = mdev_take(k, R * D);
	s->qkv = mdev_take(k, R * 3 * D);
	s->a = mdev_take(k, R * D);
	s->ac = mdev_take(k, attn_floats(w, s->rows, 1, s->steps, 0.0f));
	s->q = mdev_take(k, R * D);
	s->c = mdev_take(k, R * D);
	s->cc = mdev_take(k, attn_floats(w, s->B, s->beam, s->Ts, 0.0f));
	s->h = mdev_take(k, R * w->F);
	s->hpre = w->c.activation != FEDRUN_ACT_RELU ? mdev_take(k, R * w->F) : NULL;
	s->fin = mdev_take(k, R * D);
	s->finln = mdev_take(k, 2 * R);
	s->logits = mdev_take(k, R * w->V);
	carve_blk(k, &s->sa, R, D, 0);
	carve_blk(k, &s->ca, R, D, 0);
	carve_blk(k, &s->ff, R, D, 0);
}

int tfm_encode(struct tfm_work *w, const float *params, uint32_t B, uint32_t Ts, const int32_t *src,
	       const int32_t *src_len, uint32_t beam, uint32_t max_steps)
{
	if (!w || !params)
		return fedrun_error(FEDRUN_EINVAL, "tfm_encode: NULL work or params");
	if (!B || !Ts || !beam || !max_steps || (uint64_t)B * beam > (1u << 24) ||
	    max_steps > (1u << 20))
		return fedrun_error(FEDRUN_EINVAL,
				    "tfm_encode: B %u, Ts %u, beam %u, max_steps %u: each must "
				    "be >= 1 (and not huge)",
				    B, Ts, beam, max_steps);
	CHECK(check_ids("src", src, (uint64_t)B * Ts, w->V, 0));
	CHECK(check_lens("src_len", src_len, B, Ts));
	struct dec_state *s = &w->ds;
	s->ready = 0;
	CHECK(reserve_train(w, B, Ts, 1));
	if (!s->ckv)
		s->ckv = calloc(w->c.dec_layers, sizeof *s->ckv);
	if (!s->kv)
		s->kv = calloc(w->c.dec_layers, sizeof *s->kv);
	if (!s->ckv || !s->kv)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	s->B = B, s->Ts = Ts, s->beam = beam, s->rows = B * beam, s->steps = max_steps;
	s->next_t = 0;
	struct mdev_carve k = {NULL, 0};
	carve_dec(w, &k);
	if (k.n > s->cap) {
		if (s->mem)
			w->dv.be->free_mem(w->dv.ctx, s->mem);
		s->mem = NULL;
		s->cap = 0;
		int rc = w->dv.be->alloc(w->dv.ctx, k.n * sizeof(float), (void **)&s->mem);
		if (rc < 0)
			return fedrun_error_wrap(
			    rc, "tfm_encode: decoding state for %u rows x %u steps: ", B * beam,
			    max_steps);
		s->cap = k.n;
	}
	k.base = s->mem;
	k.n = 0;
	carve_dec(w, &k);
	/* src_len (B) then src (B,Ts), in one to_device */
	const uint64_t Ns = (uint64_t)B * Ts;
	int32_t *h = mdev_stage(&w->dv.hbuf, &w->dv.hcap, B + Ns);
	if (!h)
		return FEDRUN_ENOMEM;
	memcpy(h, src_len, B * sizeof *h);
	memcpy(h + B, src, Ns * sizeof *h);
	CHECK(tfm_work_to_device(w, s->src_len, h, (B + Ns) * sizeof *h));
	set_drop(w, NULL);
	int rc = encoder_fwd(w, params, B, Ts, s->src, s->src_len);
	/* each decoder layer's cross-attention keys and values, once */
	for (uint32_t l = 0; l < w->c.dec_layers && rc == 0; l++) {
		const struct attn_off *o = &w->off.dec[l].ca;
		const float *W[2] = {params + o->w[1], params + o->w[2]};
		const float *b[2] = {params + o->b[1], params + o->b[2]};
		rc = proj_fwd(w, Ns, w->D, 2, w->D, w->enc_out, W, b, s->ckv[l]);
	}
	if (rc < 0)
		return rc;
	s->params = params;
	s->ready = 1;
	return 0;
}

/* Checks parent (host); *identity when every row continues itself. */
static int check_parent(const struct dec_state *s, const int32_t *parent, int *identity)
{
	*identity = 1;
	for (uint32_t r = 0; r < s->rows; r++) {
		if (parent[r] < 0 || (uint32_t)parent[r] >= s->rows ||
		    (uint32_t)parent[r] / s->beam != r / s->beam)
			return fedrun_error(FEDRUN_EINVAL,
					    "tfm_decode_step: parent[%u] = %d is not a row of "
					    "sentence %u (rows %u..%u)",
					    r, parent[r], r / s->beam, r / s->beam * s->beam,
					    r / s->beam * s->beam + s->beam - 1);
		*identity &= (uint32_t)parent[r] == r;
	}
	return 0;
}

/* Row r of every layer's cache becomes row parent[r] of the previous step
 * (positions [0, t)): one copy per row, into the spare cache. */
static int reorder(struct tfm_work *w, uint32_t t, const int32_t *parent)
{
	struct dec_state *s = &w->ds;
	const uint64_t row = (uint64_t)s->steps * 2 * w->D, used = (uint64_t)t * 2 * w->D;
	for (uint32_t l = 0; l < w->c.dec_layers; l++) {
		float *old = s->kv[l], *neu = s->spare;
		for (uint32_t r = 0; r < s->rows; r++)
			CHECK(w->dv.be->copy(w->dv.ctx, neu + r * row,
					     old + (uint64_t)parent[r] * row, used * sizeof *neu));
		s->kv[l] = neu;
		s->spare = old;
	}
	return 0;
}

/* In-place log softmax of each row of x (R,V): l - (m + log sum e^(l-m)),
 * the sum in double over float exponentials. */
static void log_softmax_rows(uint64_t R, uint64_t V, float *x)
{
	for (uint64_t r = 0; r < R; r++) {
		float *l = x + r * V;
		float m = l[0];
#pragma omp simd reduction(max : m)
		for (uint64_t j = 1; j < V; j++)
			m = l[j] > m ? l[j] : m;
		double s = 0.0;
		for (uint64_t j = 0; j < V; j++)
			s += (double)expf(l[j] - m);
		const float lz = m + (float)log(s);
#pragma omp simd
		for (uint64_t j = 0; j < V; j++)
			l[j] -= lz;
	}
}

int tfm_decode_step(struct tfm_work *w, const float *params, uint32_t t, const int32_t *tokens,
		    const int32_t *parent, float *logprobs)
{
	if (!w || !w->ds.ready)
		return fedrun_error(FEDRUN_ESTATE, "tfm_decode_step: no tfm_encode before");
	struct dec_state *s = &w->ds;
	if (params != s->params)
		return fedrun_error(FEDRUN_EINVAL,
				    "tfm_decode_step: params differ from tfm_encode's");
	if (t >= s->steps || (t && t != s->next_t))
		return fedrun_error(FEDRUN_EINVAL,
				    "tfm_decode_step: step %u (expected %u, at most %u steps)", t,
				    s->next_t, s->steps);
	if (!logprobs)
		return fedrun_error(FEDRUN_EINVAL, "tfm_decode_step: NULL logprobs");
	CHECK(check_ids("tokens", tokens, s->rows, w->V, 0));
	int identity = 1;
	if (t && parent)
		CHECK(check_parent(s, parent, &identity));
	if (!identity)
		CHECK(reorder(w, t, parent));
	const float *P = params;
	const uint64_t R = s->rows, D = w->D, M = s->steps;
	set_drop(w, NULL);
	s->sa.drop = s->ca.drop = s->ff.drop = 0;
	/* the step's tokens and every row's key count t + 1, in one to_device */
	int32_t *hs = mdev_stage(&w->dv.hbuf, &w->dv.hcap, 2 * R);
	if (!hs)
		return FEDRUN_ENOMEM;
	memcpy(hs, tokens, R * sizeof *hs);
	for (uint64_t r = 0; r < R; r++)
		hs[R + r] = (int32_t)t + 1;
	CHECK(tfm_work_to_device(w, s->tokens, hs, 2 * R * sizeof *hs));
	/* the token at position t, scaled, plus PE(t) (sec. 3.4, 3.5) */
	CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)R, w->V, w->D, s->tokens,
					  P + w->off.emb_tgt, s->x));
	CHECK(
	    w->dv.be->posenc_forward(w->dv.ctx, (uint32_t)R, 1, w->D, t, w->emb_scale, s->x, s->x));
	const float *x = s->x;
	for (uint32_t l = 0; l < w->c.dec_layers; l++) {
		const struct dec_off *o = &w->off.dec[l];
		/* self-attention over the cached positions 0..t (sec. 3.2.3) */
		CHECK(blk_begin(w, &s->sa, R, x, &o->sa.ln, P));
		const float *W[3], *b[3];
		qkv_ptrs(P, &o->sa, 0, 3, W, b);
		CHECK(proj_fwd(w, R, D, 3, D, s->sa.sub, W, b, s->qkv));
		/* this step's keys and values into each row's cache, position t */
		float *kv = s->kv[l];
		for (uint64_t r = 0; r < R; r++)
			CHECK(w->dv.be->copy(w->dv.ctx, kv + (r * M + t) * 2 * D,
					     s->qkv + r * 3 * D + D, 2 * D * sizeof *kv));
		struct fedrun_attn_dims d =
		    adims(w, (uint32_t)R, 1, (uint32_t)M, 3 * w->D, 2 * w->D, 0, 0);
		CHECK(w->dv.be->attn_forward(w->dv.ctx, &d, s->qkv, kv, kv + D, s->klen, NULL, s->a,
					     s->ac));
		CHECK(blk_end(w, &s->sa, R, D, s->a, o->sa.wo, o->sa.bo, &o->sa.ln, P, &x));
		/* cross-attention: the beam rows of sentence i are its queries */
		CHECK(blk_begin(w, &s->ca, R, x, &o->ca.ln, P));
		qkv_ptrs(P, &o->ca, 0, 1, W, b);
		CHECK(proj_fwd(w, R, D, 1, D, s->ca.sub, W, b, s->q));
		d = adims(w, s->B, s->beam, s->Ts, 0, 2 * w->D, 0, 0);
		CHECK(w->dv.be->attn_forward(w->dv.ctx, &d, s->q, s->ckv[l], s->ckv[l] + D,
					     s->src_len, NULL, s->c, s->cc));
		CHECK(blk_end(w, &s->ca, R, D, s->c, o->ca.wo, o->ca.bo, &o->ca.ln, P, &x));
		CHECK(ffn_fwd(w, P, &o->ff, &s->ff, s->h, s->hpre, NULL, R, x, &x));
	}
	if (w->c.pre_norm) {
		CHECK(w->dv.be->layernorm_forward(w->dv.ctx, (uint32_t)R, w->D, TFM_LN_EPS, x,
						  P + w->off.dec_norm.g, P + w->off.dec_norm.b,
						  s->fin, s->finln));
		x = s->fin;
	}
	/* the logits on the device, then to the host for the log softmax and
	 * the search */
	CHECK(mdev_net_mm(&w->dv, false, true, R, w->V, D, 1.0f, x, D, P + w->off.out, D, 0.0f,
			  s->logits, w->V));
	CHECK(tfm_work_to_host(w, logprobs, s->logits, R * w->V * sizeof *logprobs));
	log_softmax_rows(R, w->V, logprobs);
	s->next_t = t + 1;
	return 0;
}
