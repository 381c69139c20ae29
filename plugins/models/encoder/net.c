/* SPDX-License-Identifier: Apache-2.0 */
/* BERT and DistilBERT (Hugging Face's BertModel, DistilBertModel and their
 * heads) as calls of the backend vtable: layout, initialisation, forward and
 * backward over a batch. See net.h for the architecture and conventions.
 *
 * How a pass is organised (as the transformer's net.c, whose post-norm
 * encoder layer is this layer): every sublayer sits in a residual block
 *     r = x + Dropout(Sublayer(x)),  n = LayerNorm(r)
 * (DistilBERT has no dropout on the attention block's output), and the
 * backward pass carries one gradient buffer g down the stack: the layer
 * norm turns dL/dn into dL/dr in place, the sublayer's last linear reads
 * it, and the sublayer's first linear ADDS its input gradient into g
 * (sgemm with beta 1), so that the residual and the sublayer paths meet
 * without an extra pass.
 *
 * Every linear map is "lin_fwd / lin_bwd" over a group of P maps that share
 * their input (P = 3: the q, k, v projections, one fused (N,3D) product
 * when the three weights, and the three biases, are adjacent in the arena),
 * with an optional LoRA adapter on each part (Hu et al. 2021, eq. 3):
 *     y = x W^T + b + s (x A^T) B^T,  s = alpha / r,
 * whose backward pass is
 *     dB += s dy^T u,  du = s dy B,  dA += du^T x,  dx += du A,
 * with u = x A^T (N,r) kept from the forward pass.
 *
 * Freezing: a gradient pointer is NULL for a tensor whose trainable flag is
 * 0, and the ops skip it; the backward pass stops at the lowest layer that
 * has a trainable tensor (that layer's input gradient is not formed).
 *
 * The masked-LM logits (labelled positions x vocab) are the largest array:
 * only the labelled positions are gathered and go through the head, the
 * output layer in chunks of ENC_OUT_CHUNK rows, each chunk's logits turned
 * into their gradient in place and consumed by the two products of the
 * tied decoder's backward pass before the next chunk. */
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

/* Rows of the masked-LM output layer per chunk. */
#ifndef ENC_OUT_CHUNK
#define ENC_OUT_CHUNK 512
#endif

/* ---- configuration --------------------------------------------------------- */

int enc_cfg_check(const struct enc_cfg *c)
{
	if (!c)
		return fedrun_error(FEDRUN_EINVAL, "encoder: NULL configuration");
	if (c->arch != ENC_BERT && c->arch != ENC_DISTILBERT)
		return fedrun_error(
		    FEDRUN_EINVAL, "encoder: arch %d is neither BERT nor DistilBERT", (int)c->arch);
	if (c->task < ENC_TASK_BASE || c->task > ENC_TASK_MLM)
		return fedrun_error(FEDRUN_EINVAL, "encoder: task %d unknown", (int)c->task);
	if (!c->vocab || !c->max_pos || !c->dim || !c->layers || !c->heads || !c->ffn)
		return fedrun_error(FEDRUN_EINVAL,
				    "encoder: vocab %u, max_pos %u, dim %u, layers %u, heads %u, "
				    "ffn %u: each must be >= 1",
				    c->vocab, c->max_pos, c->dim, c->layers, c->heads, c->ffn);
	if (c->dim % c->heads)
		return fedrun_error(FEDRUN_EINVAL, "encoder: dim %u is not a multiple of heads %u",
				    c->dim, c->heads);
	if (c->layers > 1000 || c->dim > 65536 || c->ffn > 1048576 || c->vocab > 16777216 ||
	    c->max_pos > 1048576 || c->type_vocab > 65536 || c->labels > 1048576 ||
	    c->lora_r > 65536)
		return fedrun_error(FEDRUN_EINVAL, "encoder: dimensions too large");
	if (c->arch == ENC_BERT && !c->type_vocab)
		return fedrun_error(FEDRUN_EINVAL, "encoder: BERT needs type_vocab >= 1");
	if (c->arch == ENC_DISTILBERT && c->type_vocab)
		return fedrun_error(FEDRUN_EINVAL,
				    "encoder: DistilBERT has no token types (type_vocab %u, "
				    "expected 0)",
				    c->type_vocab);
	if ((c->task == ENC_TASK_CLASSIFY || c->task == ENC_TASK_TAG) && c->labels < 2)
		return fedrun_error(FEDRUN_EINVAL, "encoder: labels %u: a %s head needs >= 2",
				    c->labels, c->task == ENC_TASK_TAG ? "tag" : "classify");
	if (!(c->ln_eps > 0.0f) || !isfinite(c->ln_eps))
		return fedrun_error(FEDRUN_EINVAL, "encoder: ln_eps %g must be > 0",
				    (double)c->ln_eps);
	if (c->act != FEDRUN_ACT_GELU_ERF && c->act != FEDRUN_ACT_GELU && c->act != FEDRUN_ACT_RELU)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "encoder: activation %d is none of gelu (erf), gelu_new (tanh), "
		    "relu",
		    c->act);
	const float p[] = {c->dropout, c->attn_dropout, c->cls_dropout};
	const char *pn[] = {"dropout", "attention dropout", "classifier dropout"};
	for (int i = 0; i < 3; i++)
		if (!(p[i] >= 0.0f && p[i] < 1.0f))
			return fedrun_error(FEDRUN_EINVAL, "encoder: %s = %g outside [0, 1)", pn[i],
					    (double)p[i]);
	if (c->pad_id < 0 || (uint32_t)c->pad_id >= c->vocab)
		return fedrun_error(FEDRUN_EINVAL, "encoder: pad id %d outside [0, vocab %u)",
				    c->pad_id, c->vocab);
	if (!(c->init_range >= 0.0f) || !isfinite(c->init_range))
		return fedrun_error(FEDRUN_EINVAL, "encoder: init_range %g must be >= 0",
				    (double)c->init_range);
	if (c->lora_r) {
		if (!c->lora_targets || (c->lora_targets & ~0x3fu))
			return fedrun_error(FEDRUN_EINVAL,
					    "encoder: LoRA targets 0x%x: none, or unknown bits "
					    "(q, k, v, o, ffn1, ffn2: 0x3f)",
					    c->lora_targets);
		if (!isfinite(c->lora_alpha) || c->lora_alpha == 0.0f)
			return fedrun_error(FEDRUN_EINVAL,
					    "encoder: lora_alpha %g must be finite and nonzero",
					    (double)c->lora_alpha);
	}
	return 0;
}

/* ---- names of the tensors ---------------------------------------------------- */

/* The parts of a layer, in arena order; LoRA's target bits follow the
 * first six. */
enum { P_Q, P_K, P_V, P_O, P_F1, P_F2, P_LN1, P_LN2, P_N };

static const char *const bert_part[P_N] = {"attention.self.query",	 "attention.self.key",
					   "attention.self.value",	 "attention.output.dense",
					   "intermediate.dense",	 "output.dense",
					   "attention.output.LayerNorm", "output.LayerNorm"};
static const char *const distil_part[P_N] = {
    "attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin",
    "ffn.lin1",	       "ffn.lin2",	  "sa_layer_norm",   "output_layer_norm"};

/* The base model's prefix in the task model's state_dict. */
static const char *base_prefix(const struct enc_cfg *c)
{
	if (c->task == ENC_TASK_BASE)
		return "";
	return c->arch == ENC_BERT ? "bert." : "distilbert.";
}

static int has_pooler(const struct enc_cfg *c)
{
	return c->arch == ENC_BERT && (c->task == ENC_TASK_BASE || c->task == ENC_TASK_CLASSIFY);
}

/* "PREFIX(embeddings|encoder.layer.N|transformer.layer.N)." into buf. */
static void layer_prefix(const struct enc_cfg *c, int layer, char *buf, size_t n)
{
	if (layer < 0)
		snprintf(buf, n, "%sembeddings.", base_prefix(c));
	else
		snprintf(buf, n, "%s%s.layer.%d.", base_prefix(c),
			 c->arch == ENC_BERT ? "encoder" : "transformer", layer);
}

static int add_t(struct fedrun_layout *l, const char *a, const char *b, const char *s,
		 uint64_t rows, uint64_t cols)
{
	char name[FEDRUN_NAME_MAX];
	int n = snprintf(name, sizeof name, "%s%s%s", a, b, s);
	if (n < 0 || (size_t)n >= sizeof name)
		return fedrun_error(FEDRUN_EINVAL, "encoder: tensor name %s%s%s too long", a, b, s);
	uint64_t shape[2] = {rows, cols};
	return fedrun_layout_add(l, name, cols ? 2 : 1, shape);
}

/* Shape (out, in) of part p of a layer. */
static void part_shape(const struct enc_cfg *c, int p, uint64_t *out, uint64_t *in)
{
	*out = p == P_F1 ? c->ffn : c->dim;
	*in = p == P_F2 ? c->ffn : c->dim;
}

static int add_layer(const struct enc_cfg *c, struct fedrun_layout *l, int i)
{
	const char *const *nm = c->arch == ENC_BERT ? bert_part : distil_part;
	const uint64_t D = c->dim;
	char p[96];
	layer_prefix(c, i, p, sizeof p);
	int rc = 0;
	/* q, k, v weights adjacent, then their biases: the fused (3D,D)
	 * projection (see net.h) */
	for (int k = P_Q; k <= P_V && rc == 0; k++)
		rc = add_t(l, p, nm[k], ".weight", D, D);
	for (int k = P_Q; k <= P_V && rc == 0; k++)
		rc = add_t(l, p, nm[k], ".bias", D, 0);
	for (int k = P_O; k <= P_F2 && rc == 0; k++) {
		uint64_t out, in;
		part_shape(c, k, &out, &in);
		rc = add_t(l, p, nm[k], ".weight", out, in);
		if (rc == 0)
			rc = add_t(l, p, nm[k], ".bias", out, 0);
		/* the attention block's layer norm follows its output
		 * projection, the block's after lin2 / output.dense */
		if (rc == 0 && k == P_O) {
			rc = add_t(l, p, nm[P_LN1], ".weight", D, 0);
			if (rc == 0)
				rc = add_t(l, p, nm[P_LN1], ".bias", D, 0);
		}
	}
	if (rc == 0)
		rc = add_t(l, p, nm[P_LN2], ".weight", D, 0);
	if (rc == 0)
		rc = add_t(l, p, nm[P_LN2], ".bias", D, 0);
	for (int k = P_Q; k <= P_F2 && rc == 0 && c->lora_r; k++) {
		if (!(c->lora_targets & (1u << k)))
			continue;
		uint64_t out, in;
		part_shape(c, k, &out, &in);
		rc = add_t(l, p, nm[k], ".lora_A.weight", c->lora_r, in);
		if (rc == 0)
			rc = add_t(l, p, nm[k], ".lora_B.weight", out, c->lora_r);
	}
	return rc;
}

static int build_layout(const struct enc_cfg *c, struct fedrun_layout *l)
{
	const uint64_t D = c->dim, V = c->vocab;
	char p[96];
	layer_prefix(c, -1, p, sizeof p);
	int rc = add_t(l, p, "word_embeddings", ".weight", V, D);
	if (rc == 0)
		rc = add_t(l, p, "position_embeddings", ".weight", c->max_pos, D);
	if (rc == 0 && c->arch == ENC_BERT)
		rc = add_t(l, p, "token_type_embeddings", ".weight", c->type_vocab, D);
	if (rc == 0)
		rc = add_t(l, p, "LayerNorm", ".weight", D, 0);
	if (rc == 0)
		rc = add_t(l, p, "LayerNorm", ".bias", D, 0);
	for (uint32_t i = 0; i < c->layers && rc == 0; i++)
		rc = add_layer(c, l, (int)i);
	snprintf(p, sizeof p, "%spooler.dense", base_prefix(c));
	if (rc == 0 && has_pooler(c)) {
		rc = add_t(l, p, "", ".weight", D, D);
		if (rc == 0)
			rc = add_t(l, p, "", ".bias", D, 0);
	}
	const int bert = c->arch == ENC_BERT;
	switch (c->task) {
	case ENC_TASK_BASE:
		break;
	case ENC_TASK_CLASSIFY:
		if (rc == 0 && !bert)
			rc = add_t(l, "pre_classifier", "", ".weight", D, D);
		if (rc == 0 && !bert)
			rc = add_t(l, "pre_classifier", "", ".bias", D, 0);
		/* fall through */
	case ENC_TASK_TAG:
		if (rc == 0)
			rc = add_t(l, "classifier", "", ".weight", c->labels, D);
		if (rc == 0)
			rc = add_t(l, "classifier", "", ".bias", c->labels, 0);
		break;
	case ENC_TASK_MLM: {
		const char *t = bert ? "cls.predictions.transform.dense" : "vocab_transform";
		const char *n = bert ? "cls.predictions.transform.LayerNorm" : "vocab_layer_norm";
		if (rc == 0)
			rc = add_t(l, t, "", ".weight", D, D);
		if (rc == 0)
			rc = add_t(l, t, "", ".bias", D, 0);
		if (rc == 0)
			rc = add_t(l, n, "", ".weight", D, 0);
		if (rc == 0)
			rc = add_t(l, n, "", ".bias", D, 0);
		if (rc == 0)
			rc = add_t(l, bert ? "cls.predictions.bias" : "vocab_projector.bias", "",
				   "", V, 0);
		break;
	}
	}
	return rc;
}

int enc_layout(const struct enc_cfg *c, struct fedrun_layout **out)
{
	CHECK(enc_cfg_check(c));
	struct fedrun_layout *l;
	CHECK(mdev_layout_new(&l, out, "enc_layout"));
	return mdev_layout_done(l, build_layout(c, l), out);
}

void enc_layout_free(struct fedrun_layout *l)
{
	mdev_layout_free(l);
}

int enc_tensor_layer(const struct enc_cfg *c, const struct fedrun_layout *l, uint32_t i)
{
	if (!c || !l || i >= l->n)
		return (int)(c ? c->layers : 0);
	const char *name = l->t[i].name, *s = strstr(name, ".layer.");
	const char *pre = base_prefix(c);
	const size_t np = strlen(pre);
	if (s && strncmp(name, pre, np) == 0)
		return (int)strtol(s + 7, NULL, 10);
	if (strncmp(name, pre, np) == 0 && strncmp(name + np, "embeddings.", 11) == 0)
		return -1;
	return (int)c->layers;
}

/* ---- offsets of the tensors ------------------------------------------------- */

/* Tensor indices (-1: absent) of a linear map and its LoRA adapter. */
struct lin_t {
	int32_t w, b, a, bb; /* weight, bias, lora_A, lora_B */
};

struct ln_t {
	int32_t g, b;
};

struct layer_t {
	struct lin_t p[6]; /* P_Q .. P_F2 */
	struct ln_t ln1, ln2;
};

struct offs {
	int32_t wemb, pemb, temb; /* temb -1 for DistilBERT */
	struct ln_t eln;
	struct layer_t *L;
	struct lin_t pool, pre, cls, mt; /* each w -1 when absent */
	struct ln_t mln;
	int32_t mbias;
};

static int find_t(const struct fedrun_layout *l, const char *a, const char *b, const char *s,
		  uint64_t numel, int32_t *out)
{
	char name[FEDRUN_NAME_MAX];
	snprintf(name, sizeof name, "%s%s%s", a, b, s);
	int64_t i;
	CHECK(mdev_layout_find(l, "encoder", name, numel, &i));
	*out = (int32_t)i;
	return 0;
}

static int find_lin(const struct fedrun_layout *l, const char *a, const char *b, uint64_t out,
		    uint64_t in, struct lin_t *o)
{
	o->a = o->bb = -1;
	CHECK(find_t(l, a, b, ".weight", out * in, &o->w));
	return find_t(l, a, b, ".bias", out, &o->b);
}

static int find_ln(const struct fedrun_layout *l, const char *a, const char *b, uint64_t D,
		   struct ln_t *o)
{
	CHECK(find_t(l, a, b, ".weight", D, &o->g));
	return find_t(l, a, b, ".bias", D, &o->b);
}

static void offs_free(struct offs *o)
{
	free(o->L);
	o->L = NULL;
}

static int resolve(const struct enc_cfg *c, const struct fedrun_layout *l, struct offs *o)
{
	const uint64_t D = c->dim, V = c->vocab;
	const char *const *nm = c->arch == ENC_BERT ? bert_part : distil_part;
	memset(o, 0, sizeof *o);
	o->L = calloc(c->layers, sizeof *o->L);
	if (!o->L)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	struct lin_t none = {-1, -1, -1, -1};
	o->pool = o->pre = o->cls = o->mt = none;
	o->temb = o->mbias = -1;
	o->mln.g = o->mln.b = -1;
	char p[96];
	layer_prefix(c, -1, p, sizeof p);
	int rc = find_t(l, p, "word_embeddings", ".weight", V * D, &o->wemb);
	if (rc == 0)
		rc = find_t(l, p, "position_embeddings", ".weight", (uint64_t)c->max_pos * D,
			    &o->pemb);
	if (rc == 0 && c->arch == ENC_BERT)
		rc = find_t(l, p, "token_type_embeddings", ".weight", (uint64_t)c->type_vocab * D,
			    &o->temb);
	if (rc == 0)
		rc = find_ln(l, p, "LayerNorm", D, &o->eln);
	for (uint32_t i = 0; i < c->layers && rc == 0; i++) {
		struct layer_t *L = &o->L[i];
		layer_prefix(c, (int)i, p, sizeof p);
		for (int k = P_Q; k <= P_F2 && rc == 0; k++) {
			uint64_t out, in;
			part_shape(c, k, &out, &in);
			rc = find_lin(l, p, nm[k], out, in, &L->p[k]);
			if (rc == 0 && c->lora_r && (c->lora_targets & (1u << k))) {
				rc = find_t(l, p, nm[k], ".lora_A.weight", c->lora_r * in,
					    &L->p[k].a);
				if (rc == 0)
					rc = find_t(l, p, nm[k], ".lora_B.weight", out * c->lora_r,
						    &L->p[k].bb);
			}
		}
		if (rc == 0)
			rc = find_ln(l, p, nm[P_LN1], D, &L->ln1);
		if (rc == 0)
			rc = find_ln(l, p, nm[P_LN2], D, &L->ln2);
	}
	snprintf(p, sizeof p, "%spooler.dense", base_prefix(c));
	if (rc == 0 && has_pooler(c))
		rc = find_lin(l, p, "", D, D, &o->pool);
	const int bert = c->arch == ENC_BERT;
	if (rc == 0 && c->task == ENC_TASK_CLASSIFY && !bert)
		rc = find_lin(l, "pre_classifier", "", D, D, &o->pre);
	if (rc == 0 && (c->task == ENC_TASK_CLASSIFY || c->task == ENC_TASK_TAG))
		rc = find_lin(l, "classifier", "", c->labels, D, &o->cls);
	if (rc == 0 && c->task == ENC_TASK_MLM) {
		rc = find_lin(l, bert ? "cls.predictions.transform.dense" : "vocab_transform", "",
			      D, D, &o->mt);
		if (rc == 0)
			rc = find_ln(
			    l, bert ? "cls.predictions.transform.LayerNorm" : "vocab_layer_norm",
			    "", D, &o->mln);
		if (rc == 0)
			rc = find_t(l, bert ? "cls.predictions.bias" : "vocab_projector.bias", "",
				    "", V, &o->mbias);
	}
	if (rc < 0)
		offs_free(o);
	return rc;
}

/* ---- initialisation --------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

int enc_init(const struct enc_cfg *c, const struct fedrun_layout *l, uint64_t seed, float *params)
{
	CHECK(enc_cfg_check(c));
	if (!l || !params)
		return fedrun_error(FEDRUN_EINVAL, "enc_init: NULL layout or params");
	struct offs o;
	CHECK(resolve(c, l, &o)); /* the layout must be the cfg's */
	offs_free(&o);
	memset(params, 0, l->total * sizeof *params);
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		float *p = params + t->offset;
		struct fedrun_rng r;
		fedrun_rng_init(&r, seed, FEDRUN_RNG_INIT, 0, i);
		if (ends_with(t->name, "lora_B.weight"))
			continue; /* B = 0: the adapted model starts as the base */
		if (ends_with(t->name, "lora_A.weight")) {
			/* PEFT: kaiming_uniform_(a = sqrt 5), bound
			 * sqrt(6 / ((1 + a^2) fan_in)) = 1 / sqrt(fan_in) */
			const double a = 1.0 / sqrt((double)t->shape[1]);
			for (uint64_t j = 0; j < t->numel; j++)
				p[j] = (float)(a * (2.0 * fedrun_rng_uniform(&r) - 1.0));
			continue;
		}
		if (t->ndim == 2) { /* nn.Linear and nn.Embedding weights */
			for (uint64_t j = 0; j < t->numel; j++)
				p[j] = (float)(c->init_range * fedrun_rng_normal(&r));
			if (ends_with(t->name, "word_embeddings.weight"))
				memset(p + (uint64_t)c->pad_id * c->dim, 0, c->dim * sizeof *p);
			continue;
		}
		if (ends_with(t->name, "LayerNorm.weight") ||
		    ends_with(t->name, "layer_norm.weight"))
			for (uint64_t j = 0; j < t->numel; j++)
				p[j] = 1.0f;
		/* biases (cls.predictions.bias, vocab_projector.bias too) stay 0 */
	}
	return 0;
}

/* ---- work objects ----------------------------------------------------------- */

/* One layer's saved activations. */
struct lact {
	const float *x;	      /* (N,D) input (borrowed) */
	float *qkv, *ac, *a;  /* (N,3D), attention cache, (N,D) heads' output */
	float *r1, *n1, *ln1; /* (N,D) x + Dropout(attn), its LN, LN stats (2N) */
	uint8_t *m1;	      /* (N,D) dropout mask (BERT), or NULL */
	float *hpre, *h;      /* (N,F) act input and output */
	float *r2, *n2, *ln2; /* (N,D) n1 + Dropout(ffn), LN, stats */
	uint8_t *m2;
	float *u[6]; /* (N,r) LoRA x A^T of each adapted part, or NULL */
};

struct enc_work {
	struct enc_cfg c;
	struct fedrun_layout layout;
	struct mdev_net dv; /* the backend (prow: 3 max(D,F) floats) */
	struct offs off;
	uint32_t D, H, F, V, dh, NL; /* NL: layers */
	float lora_s;		     /* alpha / r */

	/* activations, sized for capN tokens and capA floats of attention
	 * cache (the largest batch seen) */
	uint64_t capN, capA;
	int32_t *ids;	      /* device: the staged ids (see send_batch) */
	float *e0, *en, *eln; /* (N,D) embedding sum, its LN (dropout in place), stats */
	uint8_t *em;
	struct lact *la;
	float *hc, *hp, *hq, *hd, *hln; /* head: (N,D) each, stats (2N) */
	uint8_t *hm;
	float *logits; /* (N, labels) or (min(N, ENC_OUT_CHUNK), V) */
	float *g, *tmp, *dz, *dqkv, *du, *dh2;
	int drop, adrop, cdrop;
	struct fedrun_rng *rng;
	const uint8_t *train; /* trainable mask of this pass, NULL: all */
};

static uint64_t attn_floats(const struct enc_work *w, uint32_t B, uint32_t T)
{
	struct fedrun_attn_dims d = {
	    .batch = B, .heads = w->H, .tq = T, .tk = T, .dh = w->dh, .dropout = w->c.attn_dropout};
	return w->dv.be->attn_cache_floats(w->dv.ctx, &d);
}

static void carve_work(struct enc_work *w, struct mdev_carve *k)
{
	const uint64_t N = w->capN, D = w->D, F = w->F, r = w->c.lora_r;
	const int dm = w->c.dropout > 0, cm = w->c.cls_dropout > 0;
	w->ids = (int32_t *)mdev_take(k, 8 * N + 8);
	w->e0 = mdev_take(k, N * D);
	w->en = mdev_take(k, N * D);
	w->eln = mdev_take(k, 2 * N);
	w->em = dm ? mdev_take_bytes(k, N * D) : NULL;
	for (uint32_t l = 0; l < w->NL; l++) {
		struct lact *e = &w->la[l];
		e->qkv = mdev_take(k, N * 3 * D);
		e->ac = mdev_take(k, w->capA);
		e->a = mdev_take(k, N * D);
		e->r1 = mdev_take(k, N * D);
		e->n1 = mdev_take(k, N * D);
		e->ln1 = mdev_take(k, 2 * N);
		e->m1 = dm && w->c.arch == ENC_BERT ? mdev_take_bytes(k, N * D) : NULL;
		e->hpre = mdev_take(k, N * F);
		e->h = mdev_take(k, N * F);
		e->r2 = mdev_take(k, N * D);
		e->n2 = mdev_take(k, N * D);
		e->ln2 = mdev_take(k, 2 * N);
		e->m2 = dm ? mdev_take_bytes(k, N * D) : NULL;
		for (int p = 0; p < 6; p++)
			e->u[p] = w->off.L[l].p[p].a >= 0 ? mdev_take(k, N * r) : NULL;
	}
	w->hc = mdev_take(k, N * D);
	w->hp = mdev_take(k, N * D);
	w->hq = mdev_take(k, N * D);
	w->hd = mdev_take(k, N * D);
	w->hln = mdev_take(k, 2 * N);
	w->hm = (dm || cm) ? mdev_take_bytes(k, N * D) : NULL;
	if (w->c.task == ENC_TASK_MLM)
		w->logits = mdev_take(k, (N < ENC_OUT_CHUNK ? N : ENC_OUT_CHUNK) * w->V);
	else
		w->logits = mdev_take(k, N * (w->c.labels ? w->c.labels : 1));
	w->g = mdev_take(k, N * D);
	w->tmp = mdev_take(k, N * D);
	w->dz = mdev_take(k, N * (F > D ? F : D));
	w->dqkv = mdev_take(k, N * 3 * D);
	w->du = mdev_take(k, N * (r ? r : 1));
	w->dh2 = mdev_take(k, N * D);
}

/* Activations for B rows of T tokens (kept while large enough: the
 * tokens and the attention cache grow each on its own). */
static int reserve(struct enc_work *w, uint32_t B, uint32_t T)
{
	const uint64_t N = (uint64_t)B * T, a = attn_floats(w, B, T);
	if (N <= w->capN && a <= w->capA && w->dv.mem)
		return 0;
	w->capN = N > w->capN ? N : w->capN;
	w->capA = a > w->capA ? a : w->capA;
	struct mdev_carve k = {NULL, 0};
	carve_work(w, &k);
	if (w->dv.mem)
		w->dv.be->free_mem(w->dv.ctx, w->dv.mem);
	w->dv.mem = NULL;
	int rc = w->dv.be->alloc(w->dv.ctx, k.n * sizeof(float), (void **)&w->dv.mem);
	if (rc < 0) {
		w->capN = w->capA = 0;
		return fedrun_error_wrap(
		    rc, "encoder: activations for %llu tokens: ", (unsigned long long)N);
	}
	k.base = w->dv.mem;
	k.n = 0;
	carve_work(w, &k);
	return 0;
}

void enc_work_destroy(struct enc_work *w)
{
	if (!w)
		return;
	mdev_net_close(&w->dv);
	free(w->la);
	offs_free(&w->off);
	fedrun_layout_fini(&w->layout);
	free(w);
}

int enc_work_create_cfg(const struct enc_cfg *c, const struct fedrun_layout *l,
			const struct fedrun_backend_ops *be,
			const struct fedrun_backend_ctx_cfg *ctx_cfg, struct enc_work **out)
{
	CHECK(enc_cfg_check(c));
	if (!l || !be || !out)
		return fedrun_error(FEDRUN_EINVAL, "enc_work_create: NULL argument");
	if (!FEDRUN_BACKEND_HAS(be, softmax_xent_db) || !FEDRUN_BACKEND_HAS(be, prox_grad))
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "encoder: backend %s lacks the Transformer layers, "
				    "softmax_xent_db or prox_grad",
				    be->name ? be->name : "?");
	struct enc_work *w = calloc(1, sizeof *w);
	if (!w)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	fedrun_layout_init(&w->layout);
	w->c = *c;
	w->D = c->dim, w->H = c->heads, w->F = c->ffn, w->V = c->vocab, w->NL = c->layers;
	w->dh = c->dim / c->heads;
	w->lora_s = c->lora_r ? c->lora_alpha / (float)c->lora_r : 0.0f;
	int rc = fedrun_layout_copy(&w->layout, l);
	if (rc == 0)
		rc = resolve(c, &w->layout, &w->off);
	if (rc == 0 && !(w->la = calloc(c->layers, sizeof *w->la)))
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0)
		rc = mdev_net_open(&w->dv, be, ctx_cfg,
				   3 * (uint64_t)(c->ffn > c->dim ? c->ffn : c->dim));
	if (rc < 0) {
		enc_work_destroy(w);
		return rc;
	}
	*out = w;
	return 0;
}

int enc_work_create(const struct enc_cfg *c, const struct fedrun_layout *l,
		    const struct fedrun_backend_ops *be, struct enc_work **out)
{
	if (!c)
		return enc_cfg_check(c);
	struct fedrun_backend_ctx_cfg cfg =
	    mdev_ctx_cfg(c->device, !c->nondeterministic, c->precision);
	return enc_work_create_cfg(c, l, be, &cfg, out);
}

void *enc_work_ctx(const struct enc_work *w)
{
	return w->dv.ctx;
}

int enc_work_to_device(struct enc_work *w, void *dst, const void *src, uint64_t bytes)
{
	return mdev_net_to_device(&w->dv, dst, src, bytes);
}

int enc_work_to_host(struct enc_work *w, void *dst, const void *src, uint64_t bytes)
{
	return mdev_net_to_host(&w->dv, dst, src, bytes);
}

void enc_work_xfer(const struct enc_work *w, uint64_t *h2d, uint64_t *d2h)
{
	*h2d = w->dv.xfer.h2d;
	*d2h = w->dv.xfer.d2h;
}

void enc_work_xfer_add(struct enc_work *w, uint64_t h2d, uint64_t d2h)
{
	w->dv.xfer.h2d += h2d;
	w->dv.xfer.d2h += d2h;
}

int enc_work_axpy(struct enc_work *w, uint64_t n, float a, const float *x, float *y)
{
	return mdev_net_add(&w->dv, n, a, x, y);
}

/* ---- tensors of a pass -------------------------------------------------------- */

static const float *pt(const struct enc_work *w, const float *P, int32_t i)
{
	return i < 0 ? NULL : P + w->layout.t[i].offset;
}

/* The gradient of tensor i, or NULL: absent, frozen, or no gradient. */
static float *gt(const struct enc_work *w, float *G, int32_t i)
{
	if (!G || i < 0 || (w->train && !w->train[i]))
		return NULL;
	return G + w->layout.t[i].offset;
}

static int lin_trainable(const struct enc_work *w, const struct lin_t *l)
{
	const int32_t t[4] = {l->w, l->b, l->a, l->bb};
	for (int i = 0; i < 4; i++)
		if (t[i] >= 0 && (!w->train || w->train[t[i]]))
			return 1;
	return 0;
}

/* ---- linear maps (with LoRA) ----------------------------------------------- */

/* y (N, np out) = [x W_p^T + b_p (+ s (x A_p^T) B_p^T)]_p for the np maps
 * l[p] of input x (N,in); u[p] (N,r) receives x A_p^T. One linear op when
 * the weights and biases are adjacent (the fused q, k, v), else the bias
 * rows and one product per part. */
static int lin_fwd(struct enc_work *w, const float *P, const struct lin_t *l, int np, uint64_t N,
		   uint64_t in, uint64_t out, const float *x, float *y, float *const *u)
{
	const uint64_t ld = np * out;
	const float *W0 = pt(w, P, l[0].w), *b0 = pt(w, P, l[0].b);
	int fw = 1, fb = 1;
	for (int p = 1; p < np; p++) {
		fw &= pt(w, P, l[p].w) == W0 + p * out * in;
		fb &= pt(w, P, l[p].b) == b0 + p * out;
	}
	if (fw && fb) {
		CHECK(w->dv.be->linear_forward(w->dv.ctx, (uint32_t)N, (uint32_t)in, (uint32_t)ld,
					       x, W0, b0, y));
	} else {
		for (int p = 0; p < np; p++)
			CHECK(w->dv.be->copy(w->dv.ctx, w->dv.prow + p * out, pt(w, P, l[p].b),
					     out * sizeof(float)));
		CHECK(mdev_net_bcast(&w->dv, N, ld, w->dv.prow, y));
		if (fw)
			CHECK(mdev_net_mm(&w->dv, false, true, N, ld, in, 1.0f, x, in, W0, in, 1.0f,
					  y, ld));
		else
			for (int p = 0; p < np; p++)
				CHECK(mdev_net_mm(&w->dv, false, true, N, out, in, 1.0f, x, in,
						  pt(w, P, l[p].w), in, 1.0f, y + p * out, ld));
	}
	const uint64_t r = w->c.lora_r;
	for (int p = 0; p < np; p++) {
		if (l[p].a < 0)
			continue;
		CHECK(mdev_net_mm(&w->dv, false, true, N, r, in, 1.0f, x, in, pt(w, P, l[p].a), in,
				  0.0f, u[p], r));
		CHECK(mdev_net_mm(&w->dv, false, true, N, out, r, w->lora_s, u[p], r,
				  pt(w, P, l[p].bb), r, 1.0f, y + p * out, ld));
	}
	return 0;
}

/* Backward of lin_fwd for dy (N, np out): dx (N,in) = dy . [W_p] + the
 * adapters' share (+ beta dx; dx NULL: skipped), and the gradients of the
 * trainable tensors. */
static int lin_bwd(struct enc_work *w, const float *P, float *G, const struct lin_t *l, int np,
		   uint64_t N, uint64_t in, uint64_t out, const float *x, const float *dy,
		   float *dx, float beta, float *const *u)
{
	const uint64_t ld = np * out, r = w->c.lora_r;
	const float *W0 = pt(w, P, l[0].w);
	int fw = 1, allw = 1, allb = 1, anyb = 0, fb = 1;
	float *dW0 = gt(w, G, l[0].w), *db0 = gt(w, G, l[0].b);
	for (int p = 0; p < np; p++) {
		fw &= pt(w, P, l[p].w) == W0 + p * out * in;
		allw &= gt(w, G, l[p].w) != NULL;
		allb &= gt(w, G, l[p].b) != NULL;
		anyb |= gt(w, G, l[p].b) != NULL;
		fb &= pt(w, P, l[p].b) == pt(w, P, l[0].b) + p * out;
	}
	if (dx) {
		if (fw)
			CHECK(mdev_net_mm(&w->dv, false, false, N, in, ld, 1.0f, dy, ld, W0, in,
					  beta, dx, in));
		else
			for (int p = 0; p < np; p++)
				CHECK(mdev_net_mm(&w->dv, false, false, N, in, out, 1.0f,
						  dy + p * out, ld, pt(w, P, l[p].w), in,
						  p ? 1.0f : beta, dx, in));
	}
	for (int p = 0; p < np; p++) {
		if (l[p].a < 0)
			continue;
		float *dA = gt(w, G, l[p].a), *dB = gt(w, G, l[p].bb);
		if (dB)
			CHECK(mdev_net_mm(&w->dv, true, false, out, r, N, w->lora_s, dy + p * out,
					  ld, u[p], r, 1.0f, dB, r));
		if (!dA && !dx)
			continue;
		CHECK(mdev_net_mm(&w->dv, false, false, N, r, out, w->lora_s, dy + p * out, ld,
				  pt(w, P, l[p].bb), r, 0.0f, w->du, r));
		if (dA)
			CHECK(mdev_net_mm(&w->dv, true, false, r, in, N, 1.0f, w->du, r, x, in,
					  1.0f, dA, in));
		if (dx)
			CHECK(mdev_net_mm(&w->dv, false, false, N, in, r, 1.0f, w->du, r,
					  pt(w, P, l[p].a), in, 1.0f, dx, in));
	}
	if (fw && allw)
		CHECK(mdev_net_mm(&w->dv, true, false, ld, in, N, 1.0f, dy, ld, x, in, 1.0f, dW0,
				  in));
	else
		for (int p = 0; p < np; p++) {
			float *dW = gt(w, G, l[p].w);
			if (dW)
				CHECK(mdev_net_mm(&w->dv, true, false, out, in, N, 1.0f,
						  dy + p * out, ld, x, in, 1.0f, dW, in));
		}
	if (!anyb)
		return 0;
	/* bias gradients: column sums of dy (linear_backward with only db) */
	if (fb && allb)
		return w->dv.be->linear_backward(w->dv.ctx, (uint32_t)N, (uint32_t)in, (uint32_t)ld,
						 NULL, NULL, dy, NULL, NULL, db0);
	CHECK(w->dv.be->zero(w->dv.ctx, w->dv.prow, ld * sizeof(float)));
	CHECK(w->dv.be->linear_backward(w->dv.ctx, (uint32_t)N, (uint32_t)in, (uint32_t)ld, NULL,
					NULL, dy, NULL, NULL, w->dv.prow));
	for (int p = 0; p < np; p++) {
		float *db = gt(w, G, l[p].b);
		if (db)
			CHECK(mdev_net_add(&w->dv, out, 1.0f, w->dv.prow + p * out, db));
	}
	return 0;
}

static int ln_fwd(struct enc_work *w, const float *P, const struct ln_t *n, uint64_t N,
		  const float *x, float *y, float *cache)
{
	return w->dv.be->layernorm_forward(w->dv.ctx, (uint32_t)N, w->D, w->c.ln_eps, x,
					   pt(w, P, n->g), pt(w, P, n->b), y, cache);
}

/* g (N,D) = dL/dy in, dL/dx out (dx NULL: only the parameters'). */
static int ln_bwd(struct enc_work *w, const float *P, float *G, const struct ln_t *n, uint64_t N,
		  const float *x, const float *cache, const float *dy, float *dx)
{
	float *dg = gt(w, G, n->g), *db = gt(w, G, n->b);
	if (!dx && !dg && !db)
		return 0;
	return w->dv.be->layernorm_backward(w->dv.ctx, (uint32_t)N, w->D, x, pt(w, P, n->g), cache,
					    dy, dx, dg, db);
}

/* ---- the stack -------------------------------------------------------------- */

/* The batch on the device (send_batch). */
struct dev_batch {
	uint32_t B, T;
	uint64_t N;
	const int32_t *ids, *pos, *types, *len, *cls; /* (N), (N), (N), (B), (B) */
	const int32_t *labels;			      /* CLASSIFY (B), TAG (N) */
	const int32_t *row, *tg;		      /* MLM: (nc) positions and targets */
	uint64_t nc;				      /* labelled rows / positions */
	const int32_t *hrow;			      /* host copy of row (MLM) */
};

static struct fedrun_attn_dims adims(const struct enc_work *w, const struct dev_batch *d)
{
	struct fedrun_attn_dims a = {.batch = d->B,
				     .heads = w->H,
				     .tq = d->T,
				     .tk = d->T,
				     .dh = w->dh,
				     .ldq = 3 * w->D,
				     .ldk = 3 * w->D,
				     .ldv = 3 * w->D,
				     .scale = 0.0f, /* 1 / sqrt(dh) */
				     .dropout = w->adrop ? w->c.attn_dropout : 0.0f};
	return a;
}

static void set_drop(struct enc_work *w, struct fedrun_rng *rng)
{
	w->rng = rng;
	w->drop = rng && w->c.dropout > 0.0f;
	w->adrop = rng && w->c.attn_dropout > 0.0f;
	w->cdrop = rng && w->c.cls_dropout > 0.0f;
}

/* en (N,D) = Dropout(LN(word[ids] + pos[0..T-1] (+ type[types]))). */
static int embed_fwd(struct enc_work *w, const float *P, const struct dev_batch *d)
{
	const uint64_t N = d->N, D = w->D;
	const struct offs *o = &w->off;
	CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)N, w->V, w->D, d->ids,
					  pt(w, P, o->wemb), w->e0));
	CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)N, w->c.max_pos, w->D, d->pos,
					  pt(w, P, o->pemb), w->tmp));
	CHECK(mdev_net_add(&w->dv, N * D, 1.0f, w->tmp, w->e0));
	if (o->temb >= 0) {
		CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)N, w->c.type_vocab, w->D,
						  d->types, pt(w, P, o->temb), w->tmp));
		CHECK(mdev_net_add(&w->dv, N * D, 1.0f, w->tmp, w->e0));
	}
	CHECK(ln_fwd(w, P, &o->eln, N, w->e0, w->en, w->eln));
	if (w->drop)
		CHECK(w->dv.be->dropout_forward(w->dv.ctx, N * D, w->c.dropout, w->rng, w->en,
						w->en, w->em));
	return 0;
}

/* g (N,D) = dL/d(en), consumed. */
static int embed_bwd(struct enc_work *w, const float *P, float *G, const struct dev_batch *d)
{
	const uint64_t N = d->N, D = w->D;
	const struct offs *o = &w->off;
	float *g = w->g;
	if (w->drop)
		CHECK(w->dv.be->dropout_backward(w->dv.ctx, N * D, w->c.dropout, w->em, g, g));
	float *dwe = gt(w, G, o->wemb), *dpe = gt(w, G, o->pemb), *dte = gt(w, G, o->temb);
	CHECK(ln_bwd(w, P, G, &o->eln, N, w->e0, w->eln, g, (dwe || dpe || dte) ? g : NULL));
	if (dwe)
		CHECK(w->dv.be->embedding_backward(w->dv.ctx, (uint32_t)N, w->V, w->D, d->ids, g,
						   dwe));
	if (dpe)
		CHECK(w->dv.be->embedding_backward(w->dv.ctx, (uint32_t)N, w->c.max_pos, w->D,
						   d->pos, g, dpe));
	if (dte)
		CHECK(w->dv.be->embedding_backward(w->dv.ctx, (uint32_t)N, w->c.type_vocab, w->D,
						   d->types, g, dte));
	return 0;
}

/* One layer (net.h): attention block, feed-forward block; *out = n2. */
static int layer_fwd(struct enc_work *w, const float *P, uint32_t l, const struct dev_batch *d,
		     const float *x)
{
	struct lact *e = &w->la[l];
	const struct layer_t *o = &w->off.L[l];
	const uint64_t N = d->N, D = w->D, F = w->F;
	e->x = x;
	CHECK(lin_fwd(w, P, o->p, 3, N, D, D, x, e->qkv, e->u));
	struct fedrun_attn_dims ad = adims(w, d);
	CHECK(w->dv.be->attn_forward(w->dv.ctx, &ad, e->qkv, e->qkv + D, e->qkv + 2 * D, d->len,
				     w->rng, e->a, e->ac));
	CHECK(lin_fwd(w, P, &o->p[P_O], 1, N, D, D, e->a, e->r1, e->u + P_O));
	if (w->drop && e->m1)
		CHECK(w->dv.be->dropout_forward(w->dv.ctx, N * D, w->c.dropout, w->rng, e->r1,
						e->r1, e->m1));
	CHECK(mdev_net_add(&w->dv, N * D, 1.0f, x, e->r1));
	CHECK(ln_fwd(w, P, &o->ln1, N, e->r1, e->n1, e->ln1));
	CHECK(lin_fwd(w, P, &o->p[P_F1], 1, N, D, F, e->n1, e->hpre, e->u + P_F1));
	CHECK(w->dv.be->act_forward(w->dv.ctx, (enum fedrun_act)w->c.act, N * F, e->hpre, e->h));
	CHECK(lin_fwd(w, P, &o->p[P_F2], 1, N, F, D, e->h, e->r2, e->u + P_F2));
	if (w->drop)
		CHECK(w->dv.be->dropout_forward(w->dv.ctx, N * D, w->c.dropout, w->rng, e->r2,
						e->r2, e->m2));
	CHECK(mdev_net_add(&w->dv, N * D, 1.0f, e->n1, e->r2));
	return ln_fwd(w, P, &o->ln2, N, e->r2, e->n2, e->ln2);
}

/* w->g (N,D) = dL/d(n2) in; dL/dx out when want_dx. */
static int layer_bwd(struct enc_work *w, const float *P, float *G, uint32_t l,
		     const struct dev_batch *d, int want_dx)
{
	struct lact *e = &w->la[l];
	const struct layer_t *o = &w->off.L[l];
	const uint64_t N = d->N, D = w->D, F = w->F;
	float *g = w->g;
	CHECK(ln_bwd(w, P, G, &o->ln2, N, e->r2, e->ln2, g, g));
	const float *dy = g;
	if (w->drop) {
		CHECK(w->dv.be->dropout_backward(w->dv.ctx, N * D, w->c.dropout, e->m2, g, w->tmp));
		dy = w->tmp;
	}
	CHECK(lin_bwd(w, P, G, &o->p[P_F2], 1, N, F, D, e->h, dy, w->dz, 0.0f, e->u + P_F2));
	CHECK(w->dv.be->act_backward(w->dv.ctx, (enum fedrun_act)w->c.act, N * F, e->hpre, w->dz,
				     w->dz));
	CHECK(lin_bwd(w, P, G, &o->p[P_F1], 1, N, D, F, e->n1, w->dz, g, 1.0f, e->u + P_F1));
	CHECK(ln_bwd(w, P, G, &o->ln1, N, e->r1, e->ln1, g, g));
	dy = g;
	if (w->drop && e->m1) {
		CHECK(w->dv.be->dropout_backward(w->dv.ctx, N * D, w->c.dropout, e->m1, g, w->tmp));
		dy = w->tmp;
	}
	CHECK(lin_bwd(w, P, G, &o->p[P_O], 1, N, D, D, e->a, dy, w->dz, 0.0f, e->u + P_O));
	struct fedrun_attn_dims ad = adims(w, d);
	float *dq = w->dqkv;
	CHECK(w->dv.be->attn_backward(w->dv.ctx, &ad, e->qkv, e->qkv + D, e->qkv + 2 * D, d->len,
				      e->ac, w->dz, dq, dq + D, dq + 2 * D));
	return lin_bwd(w, P, G, o->p, 3, N, D, D, e->x, w->dqkv, want_dx ? g : NULL, 1.0f, e->u);
}

/* ---- batches ---------------------------------------------------------------- */

static int check_batch(const struct enc_work *w, const struct enc_batch *b, int labels)
{
	if (!w || !b)
		return fedrun_error(FEDRUN_EINVAL, "encoder: NULL work or batch");
	if (!b->B || !b->T || b->T > w->c.max_pos || (uint64_t)b->B * b->T > (1u << 24))
		return fedrun_error(FEDRUN_EINVAL,
				    "encoder: batch of %u rows x %u tokens: each must be >= 1, "
				    "tokens <= max_pos %u (and not huge)",
				    b->B, b->T, w->c.max_pos);
	if (!b->ids || !b->len)
		return fedrun_error(FEDRUN_EINVAL, "encoder: NULL ids or len");
	const uint64_t N = (uint64_t)b->B * b->T;
	for (uint64_t i = 0; i < N; i++)
		if (b->ids[i] < 0 || (uint32_t)b->ids[i] >= w->V)
			return fedrun_error(FEDRUN_EINVAL,
					    "encoder: ids[%llu] (row %llu, position %llu) = %d "
					    "outside [0, vocab %u)",
					    (unsigned long long)i, (unsigned long long)(i / b->T),
					    (unsigned long long)(i % b->T), b->ids[i], w->V);
	for (uint32_t i = 0; i < b->B; i++)
		if (b->len[i] < 1 || (uint32_t)b->len[i] > b->T)
			return fedrun_error(FEDRUN_EINVAL, "encoder: len[%u] = %d outside [1, %u]",
					    i, b->len[i], b->T);
	if (b->type_ids && !w->c.type_vocab)
		return fedrun_error(FEDRUN_EINVAL,
				    "encoder: token types given to DistilBERT, which has none");
	for (uint64_t i = 0; b->type_ids && i < N; i++)
		if (b->type_ids[i] < 0 || (uint32_t)b->type_ids[i] >= w->c.type_vocab)
			return fedrun_error(FEDRUN_EINVAL,
					    "encoder: type_ids[%llu] = %d outside [0, type_vocab "
					    "%u)",
					    (unsigned long long)i, b->type_ids[i], w->c.type_vocab);
	if (!labels)
		return 0;
	if (!b->labels)
		return fedrun_error(FEDRUN_EINVAL, "encoder: NULL labels");
	const enum enc_task task = w->c.task;
	if (task == ENC_TASK_CLASSIFY) {
		for (uint32_t i = 0; i < b->B; i++)
			if (b->labels[i] < 0 || (uint32_t)b->labels[i] >= w->c.labels)
				return fedrun_error(FEDRUN_EINVAL,
						    "encoder: labels[%u] = %d outside [0, labels "
						    "%u)",
						    i, b->labels[i], w->c.labels);
		return 0;
	}
	const uint32_t K = task == ENC_TASK_TAG ? w->c.labels : w->V;
	for (uint64_t i = 0; i < N; i++) {
		const int32_t y = b->labels[i];
		if (y >= 0 && (uint32_t)y >= K)
			return fedrun_error(FEDRUN_EINVAL,
					    "encoder: labels[%llu] (row %llu, position %llu) = %d "
					    "outside [0, %s %u) (negative: ignored)",
					    (unsigned long long)i, (unsigned long long)(i / b->T),
					    (unsigned long long)(i % b->T), y,
					    task == ENC_TASK_TAG ? "labels" : "vocab", K);
		if (y >= 0 && (int32_t)(i % b->T) >= b->len[i / b->T])
			return fedrun_error(FEDRUN_EINVAL,
					    "encoder: labels[%llu] = %d at padding (row %llu, "
					    "position %llu >= len %d); padding must be < 0",
					    (unsigned long long)i, y,
					    (unsigned long long)(i / b->T),
					    (unsigned long long)(i % b->T), b->len[i / b->T]);
	}
	return 0;
}

/* The batch's ids on the device in one to_device: ids (N), positions
 * (N), token types (N), len (B), the rows' first positions (B), then
 * CLASSIFY's labels (B), TAG's (N), or MLM's labelled positions and their
 * targets (nc each). */
static int send_batch(struct enc_work *w, const struct enc_batch *b, int labels,
		      struct dev_batch *d)
{
	const uint64_t B = b->B, T = b->T, N = B * T;
	int32_t *h = mdev_stage(&w->dv.hbuf, &w->dv.hcap, 8 * N + 8);
	if (!h)
		return FEDRUN_ENOMEM;
	memcpy(h, b->ids, N * sizeof *h);
	for (uint64_t i = 0; i < N; i++) {
		h[N + i] = (int32_t)(i % T);
		h[2 * N + i] = b->type_ids ? b->type_ids[i] : 0;
	}
	memcpy(h + 3 * N, b->len, B * sizeof *h);
	for (uint64_t i = 0; i < B; i++)
		h[3 * N + B + i] = (int32_t)(i * T);
	uint64_t n = 3 * N + 2 * B, nc = 0;
	const int32_t *dv = w->ids;
	*d = (struct dev_batch){.B = b->B,
				.T = b->T,
				.N = N,
				.ids = dv,
				.pos = dv + N,
				.types = dv + 2 * N,
				.len = dv + 3 * N,
				.cls = dv + 3 * N + B};
	if (labels && w->c.task == ENC_TASK_CLASSIFY) {
		memcpy(h + n, b->labels, B * sizeof *h);
		d->labels = dv + n;
		n += B;
		nc = B;
	} else if (labels && w->c.task == ENC_TASK_TAG) {
		memcpy(h + n, b->labels, N * sizeof *h);
		d->labels = dv + n;
		n += N;
		for (uint64_t i = 0; i < N; i++)
			nc += b->labels[i] >= 0;
	} else if (labels && w->c.task == ENC_TASK_MLM) {
		for (uint64_t i = 0; i < N; i++)
			nc += b->labels[i] >= 0;
		int32_t *row = h + n, *tg = row + nc;
		uint64_t k = 0;
		for (uint64_t i = 0; i < N; i++)
			if (b->labels[i] >= 0) {
				row[k] = (int32_t)i;
				tg[k++] = b->labels[i];
			}
		d->row = dv + n;
		d->tg = dv + n + nc;
		d->hrow = row;
		n += 2 * nc;
	}
	d->nc = nc;
	return enc_work_to_device(w, w->ids, h, n * sizeof *h);
}

/* The embeddings and every layer; the last hidden states in *out. With
 * hidden (host), each stage's output copied there. */
static int stack_fwd(struct enc_work *w, const float *P, const struct dev_batch *d, float *hidden,
		     const float **out)
{
	const uint64_t ND = d->N * w->D;
	CHECK(embed_fwd(w, P, d));
	if (hidden)
		CHECK(enc_work_to_host(w, hidden, w->en, ND * sizeof(float)));
	const float *x = w->en;
	for (uint32_t l = 0; l < w->NL; l++) {
		CHECK(layer_fwd(w, P, l, d, x));
		x = w->la[l].n2;
		if (hidden)
			CHECK(enc_work_to_host(w, hidden + (l + 1) * ND, x, ND * sizeof(float)));
	}
	*out = x;
	return 0;
}

/* ---- heads ------------------------------------------------------------------- */

static int argmax_rows(const float *x, uint64_t rows, uint64_t K, int32_t *out, uint64_t ldo)
{
	for (uint64_t i = 0; i < rows; i++) {
		const float *r = x + i * K;
		uint64_t a = 0;
		for (uint64_t j = 1; j < K; j++)
			a = r[j] > r[a] ? j : a;
		out[i * ldo] = (int32_t)a;
	}
	return 0;
}

/* BERT's pooler over h0 (B,D): hp = h0 Wp^T + bp, hq = tanh(hp). */
static int pooler_fwd(struct enc_work *w, const float *P, uint64_t B)
{
	CHECK(lin_fwd(w, P, &w->off.pool, 1, B, w->D, w->D, w->hc, w->hp, NULL));
	return w->dv.be->act_forward(w->dv.ctx, FEDRUN_ACT_TANH, B * w->D, w->hp, w->hq);
}

/* The classify head on h (N,D): h0 = the rows' first positions into hc,
 * BERT: pooler, dropout; DistilBERT: pre_classifier, ReLU, dropout; then
 * the classifier: logits (B, labels). */
static int classify_fwd(struct enc_work *w, const float *P, const struct dev_batch *d,
			const float *h)
{
	const uint64_t B = d->B, D = w->D;
	CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)B, (uint32_t)d->N, w->D, d->cls, h,
					  w->hc));
	if (w->c.arch == ENC_BERT) {
		CHECK(pooler_fwd(w, P, B));
	} else {
		CHECK(lin_fwd(w, P, &w->off.pre, 1, B, D, D, w->hc, w->hp, NULL));
		CHECK(w->dv.be->act_forward(w->dv.ctx, FEDRUN_ACT_RELU, B * D, w->hp, w->hq));
	}
	const float *z = w->hq;
	if (w->cdrop) {
		CHECK(w->dv.be->dropout_forward(w->dv.ctx, B * D, w->c.cls_dropout, w->rng, w->hq,
						w->hd, w->hm));
		z = w->hd;
	}
	return lin_fwd(w, P, &w->off.cls, 1, B, D, w->c.labels, z, w->logits, NULL);
}

/* dlogits in w->logits (B, labels); w->g (N,D) = dL/dh when below. */
static int classify_bwd(struct enc_work *w, const float *P, float *G, const struct dev_batch *d,
			int below)
{
	const uint64_t B = d->B, D = w->D;
	const struct lin_t *first = w->c.arch == ENC_BERT ? &w->off.pool : &w->off.pre;
	const int need = below || lin_trainable(w, first);
	const float *z = w->cdrop ? w->hd : w->hq;
	CHECK(lin_bwd(w, P, G, &w->off.cls, 1, B, D, w->c.labels, z, w->logits,
		      need ? w->dh2 : NULL, 0.0f, NULL));
	if (!need)
		return 0;
	if (w->cdrop)
		CHECK(w->dv.be->dropout_backward(w->dv.ctx, B * D, w->c.cls_dropout, w->hm, w->dh2,
						 w->dh2));
	CHECK(w->dv.be->act_backward(w->dv.ctx,
				     w->c.arch == ENC_BERT ? FEDRUN_ACT_TANH : FEDRUN_ACT_RELU,
				     B * D, w->hp, w->dh2, w->dh2));
	CHECK(
	    lin_bwd(w, P, G, first, 1, B, D, D, w->hc, w->dh2, below ? w->tmp : NULL, 0.0f, NULL));
	if (!below)
		return 0;
	CHECK(w->dv.be->zero(w->dv.ctx, w->g, d->N * D * sizeof(float)));
	return w->dv.be->embedding_backward(w->dv.ctx, (uint32_t)B, (uint32_t)d->N, w->D, d->cls,
					    w->tmp, w->g);
}

/* The tag head: dropout (into hd), classifier on every position. */
static int tag_fwd(struct enc_work *w, const float *P, const struct dev_batch *d, const float *h)
{
	const uint64_t N = d->N, D = w->D;
	const float *z = h;
	if (w->cdrop) {
		CHECK(w->dv.be->dropout_forward(w->dv.ctx, N * D, w->c.cls_dropout, w->rng, h,
						w->hd, w->hm));
		z = w->hd;
	}
	return lin_fwd(w, P, &w->off.cls, 1, N, D, w->c.labels, z, w->logits, NULL);
}

static int tag_bwd(struct enc_work *w, const float *P, float *G, const struct dev_batch *d,
		   const float *h, int below)
{
	const uint64_t N = d->N, D = w->D;
	const float *z = w->cdrop ? w->hd : h;
	CHECK(lin_bwd(w, P, G, &w->off.cls, 1, N, D, w->c.labels, z, w->logits, below ? w->g : NULL,
		      0.0f, NULL));
	if (below && w->cdrop)
		CHECK(w->dv.be->dropout_backward(w->dv.ctx, N * D, w->c.cls_dropout, w->hm, w->g,
						 w->g));
	return 0;
}

/* The MLM transform of x (n,D): hp = dense, hq = act, hd = LN (stats hln). */
static int mlm_transform(struct enc_work *w, const float *P, uint64_t n, const float *x)
{
	CHECK(lin_fwd(w, P, &w->off.mt, 1, n, w->D, w->D, x, w->hp, NULL));
	CHECK(w->dv.be->act_forward(w->dv.ctx, (enum fedrun_act)w->c.act, n * w->D, w->hp, w->hq));
	return ln_fwd(w, P, &w->off.mln, n, w->hq, w->hd, w->hln);
}

/* logits (n,V) of rows t (n,D): t E^T + bias, E the word embeddings. */
static int mlm_logits(struct enc_work *w, const float *P, uint64_t n, const float *t)
{
	return w->dv.be->linear_forward(w->dv.ctx, (uint32_t)n, w->D, w->V, t,
					pt(w, P, w->off.wemb), pt(w, P, w->off.mbias), w->logits);
}

/* ---- passes -------------------------------------------------------------- */

/* The lowest layer with a trainable tensor (-1: the embeddings; NL: the
 * head alone; NL + 1: nothing trainable). */
static int lowest_trainable(const struct enc_work *w)
{
	int lo = (int)w->NL + 1;
	for (uint32_t i = 0; i < w->layout.n; i++)
		if (!w->train || w->train[i]) {
			int l = enc_tensor_layer(&w->c, &w->layout, i);
			lo = l < lo ? l : lo;
		}
	/* the MLM decoder is the word embeddings: trainable through the head */
	return lo;
}

int enc_forward_backward(struct enc_work *w, const float *params, const struct enc_batch *b,
			 struct fedrun_rng *rng, float *grad, const uint8_t *trainable,
			 double *loss_sum, uint64_t *count, int32_t *pred)
{
	if (!w)
		return fedrun_error(FEDRUN_EINVAL, "encoder: NULL work");
	if (w->c.task == ENC_TASK_BASE)
		return fedrun_error(FEDRUN_EINVAL,
				    "encoder: enc_forward_backward needs a task head (the model "
				    "is the base encoder)");
	CHECK(check_batch(w, b, 1));
	if (!params)
		return fedrun_error(FEDRUN_EINVAL, "encoder: NULL params");
	const uint64_t N = (uint64_t)b->B * b->T, D = w->D;
	CHECK(reserve(w, b->B, b->T));
	struct dev_batch d;
	CHECK(send_batch(w, b, 1, &d));
	w->train = trainable;
	set_drop(w, rng);
	if (loss_sum)
		*loss_sum = 0.0;
	if (count)
		*count = d.nc;
	if (pred)
		for (uint64_t i = 0; i < (w->c.task == ENC_TASK_CLASSIFY ? b->B : N); i++)
			pred[i] = -1;
	const float *h;
	CHECK(stack_fwd(w, params, &d, NULL, &h));
	const int lo = grad ? lowest_trainable(w) : (int)w->NL + 1;
	const int below = lo < (int)w->NL;
	const float *P = params;
	float *G = lo <= (int)w->NL ? grad : NULL;
	const uint64_t nc = d.nc;
	if (!nc)
		return 0;
	double loss = 0.0;
	uint64_t cnt = 0;
	if (w->c.task == ENC_TASK_CLASSIFY || w->c.task == ENC_TASK_TAG) {
		const uint64_t rows = w->c.task == ENC_TASK_CLASSIFY ? b->B : N, K = w->c.labels;
		if (w->c.task == ENC_TASK_CLASSIFY)
			CHECK(classify_fwd(w, P, &d, h));
		else
			CHECK(tag_fwd(w, P, &d, h));
		if (pred) {
			float *hl = malloc(rows * K * sizeof *hl);
			if (!hl)
				return fedrun_error(FEDRUN_ENOMEM, "out of memory");
			int rc = enc_work_to_host(w, hl, w->logits, rows * K * sizeof *hl);
			if (rc == 0)
				argmax_rows(hl, rows, K, pred, 1);
			free(hl);
			CHECK(rc);
			for (uint64_t i = 0; w->c.task == ENC_TASK_TAG && i < N; i++)
				if (b->labels[i] < 0)
					pred[i] = -1;
		}
		CHECK(w->dv.be->softmax_xent(w->dv.ctx, (uint32_t)rows, (uint32_t)K, w->logits,
					     d.labels, &loss, &cnt, G ? w->logits : NULL));
		if (loss_sum)
			*loss_sum = loss * (double)cnt;
		if (!G)
			return 0;
		if (w->c.task == ENC_TASK_CLASSIFY)
			CHECK(classify_bwd(w, P, G, &d, below));
		else
			CHECK(tag_bwd(w, P, G, &d, h, below));
	} else {
		/* MLM: the labelled positions hc (nc,D), their transform, the
		 * tied output layer chunk by chunk */
		CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)nc, (uint32_t)N, w->D, d.row,
						  h, w->hc));
		CHECK(mlm_transform(w, P, nc, w->hc));
		const int tbelow = below || lin_trainable(w, &w->off.mt) ||
				   gt(w, G, w->off.mln.g) || gt(w, G, w->off.mln.b);
		float *dE = gt(w, G, w->off.wemb), *db = gt(w, G, w->off.mbias);
		float *hl = NULL;
		if (pred && !(hl = malloc(ENC_OUT_CHUNK * (uint64_t)w->V * sizeof *hl)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		const float *E = pt(w, P, w->off.wemb);
		double lsum = 0.0;
		int rc = 0;
		for (uint64_t r0 = 0; r0 < nc && rc == 0; r0 += ENC_OUT_CHUNK) {
			const uint64_t n = nc - r0 < ENC_OUT_CHUNK ? nc - r0 : ENC_OUT_CHUNK;
			const float *t = w->hd + r0 * D;
			rc = mlm_logits(w, P, n, t);
			if (rc == 0 && hl) {
				rc = enc_work_to_host(w, hl, w->logits, n * w->V * sizeof *hl);
				for (uint64_t i = 0; rc == 0 && i < n; i++)
					argmax_rows(hl + i * w->V, 1, w->V, pred + d.hrow[r0 + i],
						    1);
			}
			double l = 0.0;
			uint64_t k = 0;
			const float s = (float)((double)n / (double)nc);
			if (rc == 0)
				rc = w->dv.be->softmax_xent_db(w->dv.ctx, (uint32_t)n, w->V,
							       w->logits, d.tg + r0, s, &l, &k,
							       G ? w->logits : NULL, db);
			lsum += l * (double)k;
			if (rc == 0 && G && tbelow)
				rc = mdev_net_mm(&w->dv, false, false, n, D, w->V, 1.0f, w->logits,
						 w->V, E, D, 0.0f, w->dh2 + r0 * D, D);
			if (rc == 0 && dE)
				rc = mdev_net_mm(&w->dv, true, false, w->V, D, n, 1.0f, w->logits,
						 w->V, t, D, 1.0f, dE, D);
		}
		free(hl);
		CHECK(rc);
		if (loss_sum)
			*loss_sum = lsum;
		if (!G || !tbelow)
			return 0;
		/* back through the transform: LN, act, dense */
		CHECK(ln_bwd(w, P, G, &w->off.mln, nc, w->hq, w->hln, w->dh2, w->dh2));
		CHECK(w->dv.be->act_backward(w->dv.ctx, (enum fedrun_act)w->c.act, nc * D, w->hp,
					     w->dh2, w->dh2));
		CHECK(lin_bwd(w, P, G, &w->off.mt, 1, nc, D, D, w->hc, w->dh2,
			      below ? w->tmp : NULL, 0.0f, NULL));
		if (below) {
			CHECK(w->dv.be->zero(w->dv.ctx, w->g, N * D * sizeof(float)));
			CHECK(w->dv.be->embedding_backward(w->dv.ctx, (uint32_t)nc, (uint32_t)N,
							   w->D, d.row, w->tmp, w->g));
		}
	}
	if (!below)
		return 0;
	for (uint32_t l = w->NL; l-- > (uint32_t)(lo < 0 ? 0 : lo);)
		CHECK(layer_bwd(w, P, G, l, &d, (int)l > lo));
	return lo < 0 ? embed_bwd(w, P, G, &d) : 0;
}

int enc_forward(struct enc_work *w, const float *params, const struct enc_batch *b, float *hidden,
		float *pooled, float *logits)
{
	CHECK(check_batch(w, b, 0));
	if (!params)
		return fedrun_error(FEDRUN_EINVAL, "encoder: NULL params");
	if (pooled && !has_pooler(&w->c))
		return fedrun_error(FEDRUN_EINVAL,
				    "encoder: no pooler output (BERT's base or classify models "
				    "only)");
	if (logits && w->c.task == ENC_TASK_BASE)
		return fedrun_error(FEDRUN_EINVAL, "encoder: the base model has no logits");
	const uint64_t N = (uint64_t)b->B * b->T, B = b->B, D = w->D;
	CHECK(reserve(w, b->B, b->T));
	struct dev_batch d;
	CHECK(send_batch(w, b, 0, &d));
	w->train = NULL;
	set_drop(w, NULL);
	const float *P = params, *h;
	CHECK(stack_fwd(w, P, &d, hidden, &h));
	if (pooled) {
		CHECK(w->dv.be->embedding_forward(w->dv.ctx, (uint32_t)B, (uint32_t)N, w->D, d.cls,
						  h, w->hc));
		CHECK(pooler_fwd(w, P, B));
		CHECK(enc_work_to_host(w, pooled, w->hq, B * D * sizeof(float)));
	}
	if (!logits)
		return 0;
	switch (w->c.task) {
	case ENC_TASK_CLASSIFY:
		CHECK(classify_fwd(w, P, &d, h));
		return enc_work_to_host(w, logits, w->logits, B * w->c.labels * sizeof(float));
	case ENC_TASK_TAG:
		CHECK(tag_fwd(w, P, &d, h));
		return enc_work_to_host(w, logits, w->logits, N * w->c.labels * sizeof(float));
	case ENC_TASK_MLM:
		CHECK(mlm_transform(w, P, N, h));
		for (uint64_t r0 = 0; r0 < N; r0 += ENC_OUT_CHUNK) {
			const uint64_t n = N - r0 < ENC_OUT_CHUNK ? N - r0 : ENC_OUT_CHUNK;
			CHECK(mlm_logits(w, P, n, w->hd + r0 * D));
			CHECK(enc_work_to_host(w, logits + r0 * w->V, w->logits,
					       n * w->V * sizeof(float)));
		}
		return 0;
	default:
		return 0;
	}
}
