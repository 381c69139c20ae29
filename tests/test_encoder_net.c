/* SPDX-License-Identifier: Apache-2.0 */
/* The encoder network (plugins/models/encoder/net.c): the Hugging Face
 * layout and initialisation, the forward pass against a direct
 * double-precision computation of BERT and DistilBERT with every head and
 * LoRA, finite-difference checks of every tensor's gradient (both
 * architectures, every head, LoRA on several targets, padding, token
 * types, dropout), the trainable mask (frozen gradients untouched, the
 * rest equal to the unmasked run's, the frozen layers' backward skipped),
 * dropout's determinism, bf16 against fp32, argument errors, and the same
 * bits on the "tagged" backend (no host access to device memory). */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/params.h"
#include "nn_testutil.h"
#include "net.h"

static struct enc_cfg tiny(enum enc_arch arch, enum enc_task task)
{
	struct enc_cfg c = {.arch = arch,
			    .task = task,
			    .vocab = 13,
			    .max_pos = 7,
			    .type_vocab = arch == ENC_BERT ? 2 : 0,
			    .dim = 8,
			    .heads = 2,
			    .ffn = 12,
			    .layers = 2,
			    .labels = task == ENC_TASK_CLASSIFY || task == ENC_TASK_TAG ? 3 : 0,
			    .ln_eps = 1e-12f,
			    .act = FEDRUN_ACT_GELU_ERF,
			    .pad_id = 0,
			    .init_range = 0.02f};
	return c;
}

/* A model with initialised parameters and a work object. */
struct net {
	struct enc_cfg c;
	struct fedrun_layout *l;
	struct enc_work *w;
	float *p, *g;
};

static void net_make(struct net *n, const struct enc_cfg *c, uint64_t seed)
{
	n->c = *c;
	ck_assert_int_eq(enc_layout(c, &n->l), 0);
	n->p = fedrun_arena_alloc(n->l->total);
	n->g = fedrun_arena_alloc(n->l->total);
	ck_assert_ptr_nonnull(n->p);
	ck_assert_ptr_nonnull(n->g);
	ck_assert_int_eq(enc_init(c, n->l, seed, n->p), 0);
	int rc = enc_work_create(c, n->l, fedrun_backend_cpu(), &n->w);
	ck_assert_msg(rc == 0, "enc_work_create: %s", fedrun_error_message());
}

static void net_free(struct net *n)
{
	enc_work_destroy(n->w);
	fedrun_arena_free(n->p);
	fedrun_arena_free(n->g);
	enc_layout_free(n->l);
}

/* Parameters at a generic point: every tensor (LoRA B and the pad row
 * included) gets random values of the size of a trained model's, so that
 * the checks do not pass by a zero or a one. */
static void net_randomize(struct net *n, uint64_t seed)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, 7, 0);
	for (uint32_t t = 0; t < n->l->n; t++) {
		const struct fedrun_tensor_info *ti = &n->l->t[t];
		const int ln =
		    strstr(ti->name, "LayerNorm.weight") || strstr(ti->name, "layer_norm.weight");
		for (uint64_t j = 0; j < ti->numel; j++) {
			double u = 2.0 * fedrun_rng_uniform(&r) - 1.0;
			n->p[ti->offset + j] = (float)(ln ? 1.0 + 0.3 * u : 0.5 * u);
		}
	}
}

/* A batch of 3 rows of T 5, lengths 5, 3, 1, random tokens, token types
 * (BERT), and labels of the task: CLASSIFY one a row, TAG on most real
 * positions, MLM on most real positions (the rest -1). */
struct rows {
	struct enc_batch b;
	int32_t ids[15], len[3], types[15], labels[15];
};

static void rows_make(struct rows *q, const struct enc_cfg *c, uint64_t seed)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, 0, 0);
	const int32_t len[3] = {5, 3, 1};
	for (int b = 0; b < 3; b++) {
		q->len[b] = len[b];
		for (int t = 0; t < 5; t++) {
			const int i = b * 5 + t, real = t < len[b];
			q->ids[i] =
			    real ? 1 + (int32_t)fedrun_rng_below(&r, c->vocab - 1) : c->pad_id;
			q->types[i] = real && t >= 2 ? 1 : 0;
			const int lab = real && (t != 1 || b == 2);
			if (c->task == ENC_TASK_TAG)
				q->labels[i] = lab ? (int32_t)fedrun_rng_below(&r, c->labels) : -1;
			else if (c->task == ENC_TASK_MLM)
				q->labels[i] = lab ? (int32_t)fedrun_rng_below(&r, c->vocab) : -1;
			else
				q->labels[i] = -1;
		}
		if (c->task == ENC_TASK_CLASSIFY)
			q->labels[b] = (int32_t)fedrun_rng_below(&r, c->labels);
	}
	q->b = (struct enc_batch){.B = 3,
				  .T = 5,
				  .ids = q->ids,
				  .len = q->len,
				  .type_ids = c->arch == ENC_BERT ? q->types : NULL,
				  .labels = c->task == ENC_TASK_BASE ? NULL : q->labels};
}

/* ---- a direct double-precision computation -------------------------------- */

static const float *tensor(const struct net *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The tensor of that name (asserted present), or NULL for "?" + name
 * when it is absent. */
static const float *tensor(const struct net *n, const char *fmt, ...)
{
	char name[FEDRUN_NAME_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	const int opt = name[0] == '?';
	int64_t i = fedrun_layout_find(n->l, name + opt);
	if (i < 0 && opt)
		return NULL;
	ck_assert_msg(i >= 0, "no tensor %s", name);
	return n->p + n->l->t[i].offset;
}

/* y (rows,out) = x (rows,in) W^T + b (+ s (x A^T) B^T when A) */
static void d_linear(const double *x, int rows, int in, int out, const float *W, const float *b,
		     const float *A, const float *Bm, int r, double s, double *y)
{
	for (int i = 0; i < rows; i++)
		for (int o = 0; o < out; o++) {
			double acc = b ? b[o] : 0.0;
			for (int k = 0; k < in; k++)
				acc += x[i * in + k] * W[o * in + k];
			for (int j = 0; A && j < r; j++) {
				double u = 0.0;
				for (int k = 0; k < in; k++)
					u += x[i * in + k] * A[j * in + k];
				acc += s * u * Bm[o * r + j];
			}
			y[i * out + o] = acc;
		}
}

static void d_layernorm(double *x, int rows, int D, double eps, const float *g, const float *b)
{
	for (int i = 0; i < rows; i++) {
		double m = 0.0, v = 0.0;
		for (int k = 0; k < D; k++)
			m += x[i * D + k] / D;
		for (int k = 0; k < D; k++)
			v += (x[i * D + k] - m) * (x[i * D + k] - m) / D;
		for (int k = 0; k < D; k++)
			x[i * D + k] = (x[i * D + k] - m) / sqrt(v + eps) * g[k] + b[k];
	}
}

static double d_act(int act, double x)
{
	switch (act) {
	case FEDRUN_ACT_GELU_ERF:
		return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case FEDRUN_ACT_GELU:
		return 0.5 * x *
		       (1.0 +
			tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
	case FEDRUN_ACT_TANH:
		return tanh(x);
	default:
		return x > 0 ? x : 0.0;
	}
}

/* A linear map of layer prefix p and part name m, with its LoRA. */
static void d_part(const struct net *n, const char *p, const char *m, const double *x, int rows,
		   int in, int out, double *y)
{
	const float *A = tensor(n, "?%s%s.lora_A.weight", p, m);
	const float *Bm = tensor(n, "?%s%s.lora_B.weight", p, m);
	const double s = n->c.lora_r ? n->c.lora_alpha / n->c.lora_r : 0.0;
	d_linear(x, rows, in, out, tensor(n, "%s%s.weight", p, m), tensor(n, "%s%s.bias", p, m), A,
		 Bm, (int)n->c.lora_r, s, y);
}

/* Row b of the batch through the model as modeling_bert.py /
 * modeling_distilbert.py write it: hidden (L+1, T, D), pooled (D) (BERT
 * with a pooler), logits of the head (T or 1, K). */
static void d_row(const struct net *n, const struct enc_batch *q, int b, double *hidden,
		  double *pooled, double *logits)
{
	const struct enc_cfg *c = &n->c;
	const int T = (int)q->T, D = (int)c->dim, F = (int)c->ffn, H = (int)c->heads, dh = D / H,
		  len = q->len[b], bert = c->arch == ENC_BERT;
	const char *pre = c->task == ENC_TASK_BASE ? "" : bert ? "bert." : "distilbert.";
	char p[128];
	double *x = calloc((size_t)T * D, sizeof *x), *qkv[3], *ctx = calloc((size_t)T * D, 8),
	       *t1 = calloc((size_t)T * D, 8), *hf = calloc((size_t)T * F, 8);
	for (int k = 0; k < 3; k++)
		qkv[k] = calloc((size_t)T * D, sizeof(double));
	const float *we = tensor(n, "%sembeddings.word_embeddings.weight", pre),
		    *pe = tensor(n, "%sembeddings.position_embeddings.weight", pre),
		    *te = bert ? tensor(n, "%sembeddings.token_type_embeddings.weight", pre) : NULL;
	for (int t = 0; t < T; t++) {
		const int id = q->ids[b * T + t], ty = q->type_ids ? q->type_ids[b * T + t] : 0;
		for (int k = 0; k < D; k++)
			x[t * D + k] = (double)we[id * D + k] + pe[t * D + k] +
				       (te ? (double)te[ty * D + k] : 0.0);
	}
	d_layernorm(x, T, D, c->ln_eps, tensor(n, "%sembeddings.LayerNorm.weight", pre),
		    tensor(n, "%sembeddings.LayerNorm.bias", pre));
	memcpy(hidden, x, sizeof(double) * T * D);
	static const char *const bn[] = {"attention.self.query",
					 "attention.self.key",
					 "attention.self.value",
					 "attention.output.dense",
					 "attention.output.LayerNorm",
					 "intermediate.dense",
					 "output.dense",
					 "output.LayerNorm"};
	static const char *const dn[] = {"attention.q_lin",   "attention.k_lin",  "attention.v_lin",
					 "attention.out_lin", "sa_layer_norm",	  "ffn.lin1",
					 "ffn.lin2",	      "output_layer_norm"};
	const char *const *nm = bert ? bn : dn;
	for (int l = 0; l < (int)c->layers; l++) {
		snprintf(p, sizeof p, "%s%s.layer.%d.", pre, bert ? "encoder" : "transformer", l);
		for (int k = 0; k < 3; k++)
			d_part(n, p, nm[k], x, T, D, D, qkv[k]);
		for (int h = 0; h < H; h++)
			for (int i = 0; i < T; i++) {
				double sc[16], m = -INFINITY, z = 0.0;
				for (int j = 0; j < len; j++) {
					double s = 0.0;
					for (int k = 0; k < dh; k++)
						s += qkv[0][i * D + h * dh + k] *
						     qkv[1][j * D + h * dh + k];
					sc[j] = s / sqrt((double)dh);
					m = fmax(m, sc[j]);
				}
				for (int j = 0; j < len; j++)
					z += (sc[j] = exp(sc[j] - m));
				for (int k = 0; k < dh; k++) {
					double a = 0.0;
					for (int j = 0; j < len; j++)
						a += sc[j] / z * qkv[2][j * D + h * dh + k];
					ctx[i * D + h * dh + k] = a;
				}
			}
		d_part(n, p, nm[3], ctx, T, D, D, t1);
		for (int k = 0; k < T * D; k++)
			x[k] += t1[k];
		d_layernorm(x, T, D, c->ln_eps, tensor(n, "%s%s.weight", p, nm[4]),
			    tensor(n, "%s%s.bias", p, nm[4]));
		d_part(n, p, nm[5], x, T, D, F, hf);
		for (int k = 0; k < T * F; k++)
			hf[k] = d_act(c->act, hf[k]);
		d_part(n, p, nm[6], hf, T, F, D, t1);
		for (int k = 0; k < T * D; k++)
			x[k] += t1[k];
		d_layernorm(x, T, D, c->ln_eps, tensor(n, "%s%s.weight", p, nm[7]),
			    tensor(n, "%s%s.bias", p, nm[7]));
		memcpy(hidden + (size_t)(l + 1) * T * D, x, sizeof(double) * T * D);
	}
	double h0[64], z[64];
	if (bert && tensor(n, "?%spooler.dense.weight", pre)) {
		snprintf(p, sizeof p, "%spooler.", pre);
		d_part(n, p, "dense", x, 1, D, D, h0);
		for (int k = 0; k < D; k++)
			pooled[k] = tanh(h0[k]);
	}
	switch (c->task) {
	case ENC_TASK_CLASSIFY:
		if (bert) {
			memcpy(z, pooled, sizeof(double) * D);
		} else {
			d_part(n, "", "pre_classifier", x, 1, D, D, z);
			for (int k = 0; k < D; k++)
				z[k] = d_act(FEDRUN_ACT_RELU, z[k]);
		}
		d_part(n, "", "classifier", z, 1, D, (int)c->labels, logits);
		break;
	case ENC_TASK_TAG:
		d_part(n, "", "classifier", x, T, D, (int)c->labels, logits);
		break;
	case ENC_TASK_MLM: {
		const char *tn = bert ? "cls.predictions.transform.dense" : "vocab_transform";
		double *tr = calloc((size_t)T * D, sizeof *tr);
		d_part(n, "", tn, x, T, D, D, tr);
		for (int k = 0; k < T * D; k++)
			tr[k] = d_act(c->act, tr[k]);
		d_layernorm(tr, T, D, c->ln_eps,
			    bert ? tensor(n, "cls.predictions.transform.LayerNorm.weight")
				 : tensor(n, "vocab_layer_norm.weight"),
			    bert ? tensor(n, "cls.predictions.transform.LayerNorm.bias")
				 : tensor(n, "vocab_layer_norm.bias"));
		d_linear(tr, T, D, (int)c->vocab, we,
			 bert ? tensor(n, "cls.predictions.bias")
			      : tensor(n, "vocab_projector.bias"),
			 NULL, NULL, 0, 0.0, logits);
		free(tr);
		break;
	}
	default:
		break;
	}
	free(x);
	free(ctx);
	free(t1);
	free(hf);
	for (int k = 0; k < 3; k++)
		free(qkv[k]);
}

/* Cross-entropy -log softmax(l)[y] of one row of K logits. */
static double d_xent(const double *l, int K, int y)
{
	double m = l[0], z = 0.0;
	for (int j = 1; j < K; j++)
		m = fmax(m, l[j]);
	for (int j = 0; j < K; j++)
		z += exp(l[j] - m);
	return m + log(z) - l[y];
}

/* ---- layout and initialisation -------------------------------------------- */

START_TEST(test_layout)
{
	/* BERT classify: Hugging Face's names and shapes, q/k/v adjacent */
	struct enc_cfg c = tiny(ENC_BERT, ENC_TASK_CLASSIFY);
	c.dim = 16;
	c.heads = 4;
	struct fedrun_layout *l;
	ck_assert_int_eq(enc_layout(&c, &l), 0);
	const char *want[] = {"bert.embeddings.word_embeddings.weight",
			      "bert.embeddings.position_embeddings.weight",
			      "bert.embeddings.token_type_embeddings.weight",
			      "bert.embeddings.LayerNorm.weight",
			      "bert.embeddings.LayerNorm.bias",
			      "bert.encoder.layer.0.attention.self.query.weight",
			      "bert.encoder.layer.0.attention.self.key.weight",
			      "bert.encoder.layer.0.attention.self.value.weight",
			      "bert.encoder.layer.0.attention.self.query.bias",
			      "bert.encoder.layer.0.attention.self.key.bias",
			      "bert.encoder.layer.0.attention.self.value.bias",
			      "bert.encoder.layer.0.attention.output.dense.weight",
			      "bert.encoder.layer.0.attention.output.dense.bias",
			      "bert.encoder.layer.0.attention.output.LayerNorm.weight",
			      "bert.encoder.layer.0.attention.output.LayerNorm.bias",
			      "bert.encoder.layer.0.intermediate.dense.weight",
			      "bert.encoder.layer.0.intermediate.dense.bias",
			      "bert.encoder.layer.0.output.dense.weight",
			      "bert.encoder.layer.0.output.dense.bias",
			      "bert.encoder.layer.0.output.LayerNorm.weight",
			      "bert.encoder.layer.0.output.LayerNorm.bias"};
	for (uint32_t i = 0; i < sizeof want / sizeof want[0]; i++)
		ck_assert_str_eq(l->t[i].name, want[i]);
	ck_assert_uint_eq(l->n, 5 + 2 * 16 + 2 + 2);
	ck_assert_str_eq(l->t[l->n - 4].name, "bert.pooler.dense.weight");
	ck_assert_str_eq(l->t[l->n - 2].name, "classifier.weight");
	ck_assert_uint_eq(l->t[l->n - 2].shape[0], 3);
	ck_assert_uint_eq(l->t[l->n - 2].shape[1], 16);
	ck_assert_uint_eq(l->t[15].shape[0], 12); /* intermediate (ffn, dim) */
	ck_assert_uint_eq(l->t[15].shape[1], 16);
	ck_assert_uint_eq(l->t[6].offset, l->t[5].offset + 256); /* fused q, k, v */
	ck_assert_int_eq(enc_tensor_layer(&c, l, 0), -1);
	ck_assert_int_eq(enc_tensor_layer(&c, l, 5), 0);
	ck_assert_int_eq(enc_tensor_layer(&c, l, 20), 0);
	ck_assert_int_eq(enc_tensor_layer(&c, l, 21), 1);
	ck_assert_int_eq(enc_tensor_layer(&c, l, l->n - 1), 2);
	enc_layout_free(l);
	/* DistilBERT MLM with LoRA on q and ffn2, three layers */
	c = tiny(ENC_DISTILBERT, ENC_TASK_MLM);
	c.layers = 3;
	c.lora_r = 2;
	c.lora_alpha = 4;
	c.lora_targets = ENC_LORA_Q | ENC_LORA_FFN2;
	ck_assert_int_eq(enc_layout(&c, &l), 0);
	ck_assert_str_eq(l->t[0].name, "distilbert.embeddings.word_embeddings.weight");
	ck_assert_str_eq(l->t[3].name, "distilbert.embeddings.LayerNorm.bias");
	ck_assert_str_eq(l->t[4].name, "distilbert.transformer.layer.0.attention.q_lin.weight");
	ck_assert_str_eq(l->t[20].name,
			 "distilbert.transformer.layer.0.attention.q_lin.lora_A.weight");
	ck_assert_uint_eq(l->t[20].shape[0], 2);
	ck_assert_uint_eq(l->t[20].shape[1], 8);
	ck_assert_str_eq(l->t[23].name, "distilbert.transformer.layer.0.ffn.lin2.lora_B.weight");
	ck_assert_uint_eq(l->t[23].shape[0], 8);
	ck_assert_uint_eq(l->t[23].shape[1], 2);
	ck_assert_int_eq(enc_tensor_layer(&c, l, 23), 0);
	ck_assert_int_eq(enc_tensor_layer(&c, l, 24), 1);
	ck_assert_int_ge(fedrun_layout_find(l, "distilbert.transformer.layer.2.sa_layer_norm.bias"),
			 0);
	const char *mlm[] = {"vocab_transform.weight", "vocab_transform.bias",
			     "vocab_layer_norm.weight", "vocab_layer_norm.bias",
			     "vocab_projector.bias"};
	for (int i = 0; i < 5; i++) {
		ck_assert_str_eq(l->t[l->n - 5 + i].name, mlm[i]);
		ck_assert_int_eq(enc_tensor_layer(&c, l, l->n - 5 + i), 3);
	}
	ck_assert_int_lt(fedrun_layout_find(l, "distilbert.pooler.dense.weight"), 0);
	enc_layout_free(l);
	/* BERT base: no prefix, the pooler; MLM: no pooler */
	c = tiny(ENC_BERT, ENC_TASK_BASE);
	ck_assert_int_eq(enc_layout(&c, &l), 0);
	ck_assert_str_eq(l->t[0].name, "embeddings.word_embeddings.weight");
	ck_assert_str_eq(l->t[l->n - 1].name, "pooler.dense.bias");
	ck_assert_int_eq(enc_tensor_layer(&c, l, 7), 0);
	enc_layout_free(l);
	c = tiny(ENC_BERT, ENC_TASK_MLM);
	ck_assert_int_eq(enc_layout(&c, &l), 0);
	ck_assert_int_lt(fedrun_layout_find(l, "bert.pooler.dense.weight"), 0);
	ck_assert_int_ge(fedrun_layout_find(l, "cls.predictions.transform.LayerNorm.bias"), 0);
	ck_assert_int_ge(fedrun_layout_find(l, "cls.predictions.bias"), 0);
	ck_assert_int_lt(fedrun_layout_find(l, "cls.predictions.decoder.weight"), 0);
	enc_layout_free(l);
}
END_TEST

/* enc_init: N(0, init_range) weights, the pad row 0, LayerNorm 1 and 0,
 * biases 0, LoRA A within 1/sqrt(in) and B 0; deterministic in the seed. */
START_TEST(test_init)
{
	struct enc_cfg c = tiny(ENC_BERT, ENC_TASK_MLM);
	c.vocab = 200;
	c.dim = 32;
	c.ffn = 64;
	c.lora_r = 4;
	c.lora_alpha = 8;
	c.lora_targets = ENC_LORA_V | ENC_LORA_FFN1;
	struct net n, m;
	net_make(&n, &c, 5);
	net_make(&m, &c, 5);
	ck_assert_int_eq(memcmp(n.p, m.p, n.l->total * sizeof *n.p), 0);
	ck_assert_int_eq(enc_init(&c, m.l, 6, m.p), 0);
	ck_assert_int_ne(memcmp(n.p, m.p, n.l->total * sizeof *n.p), 0);
	const float *we = tensor(&n, "bert.embeddings.word_embeddings.weight");
	double s = 0.0, s2 = 0.0;
	for (uint32_t j = 0; j < c.vocab * c.dim; j++) {
		s += we[j];
		s2 += (double)we[j] * we[j];
	}
	for (uint32_t k = 0; k < c.dim; k++)
		ck_assert(we[k] == 0.0f); /* pad_id 0 */
	const double sd = sqrt(s2 / ((c.vocab - 1) * c.dim));
	ck_assert_msg(fabs(sd - 0.02) < 0.002, "embedding sd %g", sd);
	ck_assert(fabs(s / (c.vocab * c.dim)) < 0.002);
	const float *g = tensor(&n, "bert.encoder.layer.1.output.LayerNorm.weight"),
		    *b = tensor(&n, "bert.encoder.layer.1.output.LayerNorm.bias"),
		    *qb = tensor(&n, "bert.encoder.layer.0.attention.self.query.bias"),
		    *A = tensor(&n, "bert.encoder.layer.0.intermediate.dense.lora_A.weight"),
		    *B = tensor(&n, "bert.encoder.layer.0.intermediate.dense.lora_B.weight"),
		    *mb = tensor(&n, "cls.predictions.bias");
	double amax = 0.0;
	for (uint32_t k = 0; k < c.dim; k++)
		ck_assert(g[k] == 1.0f && b[k] == 0.0f && qb[k] == 0.0f);
	for (uint32_t k = 0; k < c.lora_r * c.dim; k++)
		amax = fmax(amax, fabs(A[k]));
	ck_assert(amax <= 1.0 / sqrt(32.0) && amax > 0.8 / sqrt(32.0));
	for (uint32_t k = 0; k < c.ffn * c.lora_r; k++)
		ck_assert(B[k] == 0.0f);
	for (uint32_t k = 0; k < c.vocab; k++)
		ck_assert(mb[k] == 0.0f);
	net_free(&n);
	net_free(&m);
}
END_TEST

/* ---- the forward pass against the double computation ---------------------- */

static const struct {
	enum enc_arch arch;
	enum enc_task task;
	uint32_t lora; /* targets (rank 2) */
	int act;
} fwd_cases[] = {
    {ENC_BERT, ENC_TASK_BASE, 0, FEDRUN_ACT_GELU_ERF},
    {ENC_BERT, ENC_TASK_CLASSIFY, 0, FEDRUN_ACT_GELU_ERF},
    {ENC_BERT, ENC_TASK_TAG, ENC_LORA_Q | ENC_LORA_V, FEDRUN_ACT_GELU},
    {ENC_BERT, ENC_TASK_MLM, 0x3f, FEDRUN_ACT_GELU_ERF},
    {ENC_DISTILBERT, ENC_TASK_BASE, 0, FEDRUN_ACT_GELU_ERF},
    {ENC_DISTILBERT, ENC_TASK_CLASSIFY, ENC_LORA_K | ENC_LORA_O, FEDRUN_ACT_RELU},
    {ENC_DISTILBERT, ENC_TASK_TAG, 0, FEDRUN_ACT_GELU_ERF},
    {ENC_DISTILBERT, ENC_TASK_MLM, ENC_LORA_FFN1 | ENC_LORA_FFN2, FEDRUN_ACT_GELU_ERF},
};

static struct enc_cfg case_cfg(enum enc_arch arch, enum enc_task task, uint32_t lora, int act)
{
	struct enc_cfg c = tiny(arch, task);
	c.layers = 2;
	c.act = act;
	if (lora) {
		c.lora_r = 2;
		c.lora_alpha = 3.0f;
		c.lora_targets = lora;
	}
	return c;
}

/* Hidden states (real positions), the pooler output, the logits (real
 * positions) and the loss sum and count of enc_forward_backward, each
 * against the double computation: normwise errors below 1e-5 (float
 * rounding of O(1) values through ~20 operations; measured up to ~1e-6). */
START_TEST(test_forward_reference)
{
	struct enc_cfg c =
	    case_cfg(fwd_cases[_i].arch, fwd_cases[_i].task, fwd_cases[_i].lora, fwd_cases[_i].act);
	struct net n;
	net_make(&n, &c, 3 + _i);
	net_randomize(&n, 11 + _i);
	struct rows q;
	rows_make(&q, &c, 5 + _i);
	const uint32_t B = 3, T = 5, D = c.dim, L = c.layers;
	const uint32_t K = c.task == ENC_TASK_MLM ? c.vocab : c.labels;
	const int pool = c.arch == ENC_BERT && c.task <= ENC_TASK_CLASSIFY;
	const uint32_t lrows = c.task == ENC_TASK_CLASSIFY ? 1 : T;
	float *hid = tu_zeros((L + 1) * B * T * D), *pooled = tu_zeros(B * D),
	      *logits = tu_zeros(B * T * (K ? K : 1));
	int rc = enc_forward(n.w, n.p, &q.b, hid, pool ? pooled : NULL, c.task ? logits : NULL);
	ck_assert_msg(rc == 0, "enc_forward: %s", fedrun_error_message());
	double *rh = tu_dzeros((L + 1) * T * D), *rp = tu_dzeros(D), *rl = tu_dzeros(T * (K + 1));
	double want_loss = 0.0;
	uint64_t want_n = 0;
	for (uint32_t b = 0; b < B; b++) {
		d_row(&n, &q.b, (int)b, rh, rp, rl);
		const uint32_t len = (uint32_t)q.len[b];
		for (uint32_t s = 0; s <= L; s++) {
			float *h = hid + ((uint64_t)(s * B + b) * T) * D;
			TU_ASSERT_ERR(tu_err(h, rh + (uint64_t)s * T * D, len * D, 1.0), 1e-5,
				      "hidden states");
		}
		if (pool)
			TU_ASSERT_ERR(tu_err(pooled + b * D, rp, D, 1.0), 1e-5, "pooler output");
		if (!c.task)
			continue;
		const uint32_t nr = c.task == ENC_TASK_CLASSIFY ? 1 : len;
		TU_ASSERT_ERR(tu_err(logits + (uint64_t)b * lrows * K, rl, nr * K, 1.0), 1e-5,
			      "logits");
		for (uint32_t t = 0; t < nr; t++) {
			const int32_t y =
			    c.task == ENC_TASK_CLASSIFY ? q.labels[b] : q.labels[b * T + t];
			if (y < 0)
				continue;
			want_loss += d_xent(rl + t * K, (int)K, y);
			want_n++;
		}
	}
	if (c.task) {
		double ls = 0.0;
		uint64_t cnt = 0;
		int32_t pred[15];
		rc = enc_forward_backward(n.w, n.p, &q.b, NULL, NULL, NULL, &ls, &cnt, pred);
		ck_assert_msg(rc == 0, "enc_forward_backward: %s", fedrun_error_message());
		ck_assert_uint_eq(cnt, want_n);
		TU_ASSERT_ERR(fabs(ls - want_loss) / want_loss, 1e-5, "loss sum");
		/* pred: the argmax of the logits, -1 where unlabelled */
		const uint32_t np = c.task == ENC_TASK_CLASSIFY ? B : B * T;
		for (uint32_t i = 0; i < np; i++) {
			const int32_t y = q.labels[i];
			if (c.task != ENC_TASK_CLASSIFY && y < 0) {
				ck_assert_int_eq(pred[i], -1);
				continue;
			}
			const float *l = logits + (uint64_t)i * K;
			uint32_t a = 0;
			for (uint32_t j = 1; j < K; j++)
				a = l[j] > l[a] ? j : a;
			ck_assert_int_eq(pred[i], (int32_t)a);
		}
	}
	free(hid);
	free(pooled);
	free(logits);
	free(rh);
	free(rp);
	free(rl);
	net_free(&n);
}
END_TEST

/* ---- gradients ---------------------------------------------------------------- */

/* Mean loss over the labelled rows or positions, in double; rng (copied,
 * so that every call draws the same dropout masks) may be NULL. */
static double mean_loss(struct net *n, const struct enc_batch *b, const struct fedrun_rng *rng,
			float *grad, const uint8_t *trainable)
{
	struct fedrun_rng r;
	if (rng)
		r = *rng;
	double ls = 0.0;
	uint64_t cnt = 0;
	int rc =
	    enc_forward_backward(n->w, n->p, b, rng ? &r : NULL, grad, trainable, &ls, &cnt, NULL);
	ck_assert_msg(rc == 0, "enc_forward_backward: %s", fedrun_error_message());
	ck_assert_uint_gt(cnt, 0);
	return ls / (double)cnt;
}

/* Central differences of every entry of every tensor against g: returns
 * the normwise error max |fd - g| / max |g| over the model and writes into
 * *worst the largest per-tensor error max_j |fd_j - g_j| / max(max_j
 * |g_j|, 0.05 max |g|) (the floor: a tensor whose gradient is far below
 * the largest one is judged at the scale of the rounding noise of the
 * differences, ~1e-4 absolute) and into *which its name. */
static double fd_error(struct net *n, const struct enc_batch *b, const struct fedrun_rng *rng,
		       const float *g, double h, double *worst, const char **which)
{
	double emax = 0.0, gmax = 0.0;
	double *fd = tu_dzeros(n->l->total);
	for (uint32_t t = 0; t < n->l->n; t++) {
		const struct fedrun_tensor_info *ti = &n->l->t[t];
		for (uint64_t j = 0; j < ti->numel; j++) {
			float *p = n->p + ti->offset + j;
			const float v = *p, hi = (float)(v + h), lo = (float)(v - h);
			*p = hi;
			double lp = mean_loss(n, b, rng, NULL, NULL);
			*p = lo;
			double lm = mean_loss(n, b, rng, NULL, NULL);
			*p = v;
			fd[ti->offset + j] = (lp - lm) / ((double)hi - (double)lo);
			emax = fmax(emax, fabs(fd[ti->offset + j] - g[ti->offset + j]));
			gmax = fmax(gmax, fabs(g[ti->offset + j]));
		}
	}
	*worst = 0.0;
	*which = "";
	for (uint32_t t = 0; t < n->l->n; t++) {
		const struct fedrun_tensor_info *ti = &n->l->t[t];
		double e = 0.0, m = 0.05 * gmax;
		for (uint64_t j = 0; j < ti->numel; j++) {
			e = fmax(e, fabs(fd[ti->offset + j] - g[ti->offset + j]));
			m = fmax(m, fabs(g[ti->offset + j]));
		}
		if (e / m > *worst) {
			*worst = e / m;
			*which = ti->name;
		}
	}
	free(fd);
	return emax / gmax;
}

/* The gradient-check cases: every head of both architectures; LoRA on
 * several targets; dropout (hidden, attention, classifier); dim 16 (the
 * fused q/k/v weights and biases: one linear op), 8 (fused weights,
 * biases apart) and 6 (three products). */
static const struct {
	enum enc_arch arch;
	enum enc_task task;
	uint32_t lora, D, H;
	int dropout;
} grad_cases[] = {
    {ENC_BERT, ENC_TASK_CLASSIFY, 0, 8, 2, 0},
    {ENC_BERT, ENC_TASK_TAG, 0, 8, 2, 0},
    {ENC_BERT, ENC_TASK_MLM, 0, 8, 2, 0},
    {ENC_DISTILBERT, ENC_TASK_CLASSIFY, 0, 8, 2, 0},
    {ENC_DISTILBERT, ENC_TASK_TAG, 0, 8, 2, 0},
    {ENC_DISTILBERT, ENC_TASK_MLM, 0, 8, 2, 0},
    {ENC_BERT, ENC_TASK_CLASSIFY, ENC_LORA_Q | ENC_LORA_V | ENC_LORA_FFN1, 16, 4, 0},
    {ENC_DISTILBERT, ENC_TASK_TAG, ENC_LORA_K | ENC_LORA_O | ENC_LORA_FFN2, 6, 3, 0},
    {ENC_BERT, ENC_TASK_MLM, 0x3f, 6, 2, 0},
    {ENC_DISTILBERT, ENC_TASK_CLASSIFY, 0x3f, 8, 2, 1},
    {ENC_BERT, ENC_TASK_TAG, 0, 16, 2, 1},
    {ENC_BERT, ENC_TASK_CLASSIFY, ENC_LORA_Q, 8, 4, 1},
    {ENC_DISTILBERT, ENC_TASK_MLM, ENC_LORA_V | ENC_LORA_FFN1, 8, 2, 1},
};

static struct enc_cfg grad_cfg(int i)
{
	struct enc_cfg c = case_cfg(grad_cases[i].arch, grad_cases[i].task, grad_cases[i].lora,
				    FEDRUN_ACT_GELU_ERF);
	c.dim = grad_cases[i].D;
	c.heads = grad_cases[i].H;
	if (grad_cases[i].dropout) {
		c.dropout = 0.2f;
		c.attn_dropout = 0.25f;
		c.cls_dropout = 0.3f;
	}
	return c;
}

/* Step and tolerances of the check. The loss is a float computation
 * (rounding ~1e-7 relative, summed in double), so a central difference
 * errs by ~1e-7 / h from rounding and O(h^2) from truncation. Measured
 * (NN_TEST_VERBOSE=1), largest over the cases, whole model / worst
 * tensor: h = 1e-3: 3.1e-4 / 4.4e-3 (rounding); h = 2e-3: 4.3e-4 /
 * 2.2e-3; h = 3e-3: 9.8e-4 / 1.5e-3 (truncation, the MLM head). At
 * h = 2e-3 the tolerances leave a factor 4.5 or more, while one entry off
 * by 2% of the largest gives 2e-2 (checked below) and a missing or
 * doubled term far more. */
#define FD_STEP 2e-3
#define FD_TOL 2e-3
#define FD_TOL_TENSOR 1e-2

START_TEST(test_fd_gradient)
{
	struct enc_cfg c = grad_cfg(_i);
	struct net n;
	net_make(&n, &c, 7 + _i);
	net_randomize(&n, 40 + _i);
	struct rows q;
	rows_make(&q, &c, 3 + _i);
	struct fedrun_rng drop, *dr = NULL;
	if (grad_cases[_i].dropout) {
		fedrun_rng_init(&drop, 5, FEDRUN_RNG_DROPOUT, 0, _i);
		dr = &drop;
	}
	memset(n.g, 0, n.l->total * sizeof *n.g);
	mean_loss(&n, &q.b, dr, n.g, NULL);
	double worst;
	const char *which;
	TU_ASSERT_ERR(fd_error(&n, &q.b, dr, n.g, FD_STEP, &worst, &which), FD_TOL,
		      "whole-model gradient");
	TU_ASSERT_ERR(worst, FD_TOL_TENSOR, which);
	/* every tensor gets a gradient (none is left out by mistake), but
	 * the pad row and the rows of tokens absent from the batch */
	for (uint32_t t = 0; t < n.l->n; t++) {
		const struct fedrun_tensor_info *ti = &n.l->t[t];
		double m = 0.0;
		for (uint64_t j = 0; j < ti->numel; j++)
			m = fmax(m, fabs(n.g[ti->offset + j]));
		ck_assert_msg(m > 0.0, "%s has no gradient", ti->name);
	}
	if (_i == 0) {
		/* the check can fail: one entry off by 2% of the largest */
		uint64_t arg = 0;
		for (uint64_t j = 0; j < n.l->total; j++)
			arg = fabsf(n.g[j]) > fabsf(n.g[arg]) ? j : arg;
		int64_t k = fedrun_layout_find(n.l, "bert.encoder.layer.0.attention.self.key.bias");
		ck_assert_int_ge(k, 0);
		n.g[n.l->t[k].offset + 1] += 0.02f * fabsf(n.g[arg]);
		double e = fd_error(&n, &q.b, dr, n.g, FD_STEP, &worst, &which);
		ck_assert_msg(e > FD_TOL || worst > FD_TOL_TENSOR, "a perturbed gradient passed");
	}
	net_free(&n);
}
END_TEST

/* The backend of the tests, with attn_backward and embedding_backward
 * counted: how many layers and embeddings a backward pass went through. */
static struct fedrun_backend_ops counting;
static int n_attn_bwd, n_emb_bwd;

static int count_attn_bwd(void *ctx, const struct fedrun_attn_dims *d, const float *q,
			  const float *k, const float *v, const int32_t *key_len,
			  const float *cache, const float *dout, float *dq, float *dk, float *dv)
{
	n_attn_bwd++;
	return fedrun_backend_cpu()->attn_backward(ctx, d, q, k, v, key_len, cache, dout, dq, dk,
						   dv);
}

static int count_emb_bwd(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
			 const float *dout, float *dw)
{
	n_emb_bwd++;
	return fedrun_backend_cpu()->embedding_backward(ctx, N, V, D, ids, dout, dw);
}

/* The trainable mask. Cases: (0) embeddings and layers 0, 1 of 3 frozen;
 * (1) LoRA adapters and the head only; (2) the head alone; (3) a layer's
 * LayerNorms and a q weight frozen in the middle; (4) MLM with the word
 * embeddings (the tied decoder) frozen. Frozen gradients keep their
 * values bit for bit; the trainable ones equal the unmasked run's (the
 * products differ in shape, so to rounding: 1e-6 normwise); the backward
 * pass goes through the layers from the top to the lowest trainable one
 * only (attn_backward calls) and touches the embeddings only when they are
 * trainable (embedding_backward calls). */
START_TEST(test_trainable_mask)
{
	struct enc_cfg c =
	    case_cfg(ENC_BERT, _i == 4 ? ENC_TASK_MLM : ENC_TASK_CLASSIFY,
		     _i == 1 ? ENC_LORA_Q | ENC_LORA_V | ENC_LORA_FFN2 : 0, FEDRUN_ACT_GELU_ERF);
	c.layers = 3;
	c.dim = 16;
	c.heads = 4;
	struct net n;
	counting = *fedrun_backend_cpu();
	counting.attn_backward = count_attn_bwd;
	counting.embedding_backward = count_emb_bwd;
	n.c = c;
	ck_assert_int_eq(enc_layout(&c, &n.l), 0);
	n.p = fedrun_arena_alloc(n.l->total);
	n.g = fedrun_arena_alloc(n.l->total);
	ck_assert_int_eq(enc_init(&c, n.l, 3, n.p), 0);
	ck_assert_int_eq(enc_work_create(&c, n.l, &counting, &n.w), 0);
	net_randomize(&n, 8);
	struct rows q;
	rows_make(&q, &c, 9);
	uint8_t *tr = calloc(n.l->n, 1);
	int want_attn = 3, want_emb = 0;
	for (uint32_t t = 0; t < n.l->n; t++) {
		const char *name = n.l->t[t].name;
		const int layer = enc_tensor_layer(&c, n.l, t);
		switch (_i) {
		case 0:
			tr[t] = layer >= 2;
			want_attn = 1;
			break;
		case 1:
			tr[t] = strstr(name, "lora_") || layer == 3;
			break;
		case 2:
			tr[t] = layer == 3;
			want_attn = 0;
			break;
		case 3:
			tr[t] = !(layer == 1 && strstr(name, "LayerNorm")) &&
				!strstr(name, "layer.1.attention.self.query.weight");
			want_emb = 3;
			break;
		default:
			tr[t] = !strstr(name, "word_embeddings");
			want_emb = 2; /* positions and types */
			break;
		}
	}
	want_emb += _i != 2; /* the head's gradient into the hidden states' rows */
	const uint64_t total = n.l->total;
	float *full = tu_zeros(total);
	n_attn_bwd = n_emb_bwd = 0;
	const double l0 = mean_loss(&n, &q.b, NULL, full, NULL);
	ck_assert_int_eq(n_attn_bwd, 3);
	ck_assert_int_eq(n_emb_bwd, 4); /* word, position, type, and the head's */
	for (uint32_t t = 0; t < n.l->n; t++)
		for (uint64_t j = 0; j < n.l->t[t].numel; j++)
			n.g[n.l->t[t].offset + j] = tr[t] ? 0.0f : 7.0f;
	n_attn_bwd = n_emb_bwd = 0;
	const double l1 = mean_loss(&n, &q.b, NULL, n.g, tr);
	ck_assert(l0 == l1);
	ck_assert_int_eq(n_attn_bwd, want_attn);
	ck_assert_int_eq(n_emb_bwd, want_emb);
	double e = 0.0, m = 0.0;
	for (uint32_t t = 0; t < n.l->n; t++) {
		const struct fedrun_tensor_info *ti = &n.l->t[t];
		for (uint64_t j = 0; j < ti->numel; j++) {
			const float a = n.g[ti->offset + j], r = full[ti->offset + j];
			if (!tr[t]) {
				ck_assert_msg(a == 7.0f, "frozen %s[%llu] changed to %g", ti->name,
					      (unsigned long long)j, (double)a);
				continue;
			}
			e = fmax(e, fabs((double)a - r));
			m = fmax(m, fabs((double)r));
		}
	}
	ck_assert(m > 0.0);
	TU_ASSERT_ERR(e / m, 1e-6, "masked gradient against the unmasked");
	/* nothing trainable: the loss, and no gradient work at all */
	memset(tr, 0, n.l->n);
	n_attn_bwd = n_emb_bwd = 0;
	ck_assert(mean_loss(&n, &q.b, NULL, n.g, tr) == l0);
	ck_assert_int_eq(n_attn_bwd + n_emb_bwd, 0);
	free(tr);
	free(full);
	net_free(&n);
}
END_TEST

/* Gradients add up over calls; the loss sums agree; evaluation (grad
 * NULL) gives the same sums; a batch without labelled positions gives
 * zeros and leaves the gradient alone. */
START_TEST(test_accumulates)
{
	struct enc_cfg c = case_cfg(ENC_DISTILBERT, ENC_TASK_TAG, ENC_LORA_Q, FEDRUN_ACT_GELU_ERF);
	struct net n;
	net_make(&n, &c, 1);
	net_randomize(&n, 2);
	struct rows q;
	rows_make(&q, &c, 1);
	float *g1 = tu_zeros(n.l->total);
	double l1, l2, l3;
	uint64_t t1, t2, t3;
	memset(n.g, 0, n.l->total * sizeof *n.g);
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, NULL, g1, NULL, &l1, &t1, NULL), 0);
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, NULL, n.g, NULL, &l2, &t2, NULL), 0);
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, NULL, n.g, NULL, NULL, NULL, NULL),
			 0);
	ck_assert_uint_eq(t1, 7); /* 5 + 3 + 1 real positions, one unlabelled in rows 0, 1 */
	ck_assert(t1 == t2 && l1 == l2 && l1 > 0.0);
	double e = 0.0, m = 0.0;
	for (uint64_t j = 0; j < n.l->total; j++) {
		e = fmax(e, fabs((double)n.g[j] - 2.0 * g1[j]));
		m = fmax(m, fabs((double)g1[j]));
	}
	ck_assert(m > 0.0);
	ck_assert_msg(e <= 1e-6 * m, "second pass did not add: %g", e);
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, NULL, NULL, NULL, &l3, &t3, NULL), 0);
	ck_assert(l3 == l1 && t3 == t1);
	/* padding is invisible: other tokens after len change nothing */
	for (int b = 0; b < 3; b++)
		for (int t = q.len[b]; t < 5; t++)
			q.ids[b * 5 + t] = 3 + t;
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, NULL, NULL, NULL, &l3, &t3, NULL), 0);
	ck_assert_msg(l3 == l1, "padding changed the loss: %.17g, %.17g", l3, l1);
	for (int i = 0; i < 15; i++)
		q.labels[i] = -1;
	memcpy(g1, n.g, n.l->total * sizeof *g1);
	int32_t pred[15];
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, NULL, n.g, NULL, &l3, &t3, pred), 0);
	ck_assert(l3 == 0.0 && t3 == 0);
	ck_assert_int_eq(memcmp(g1, n.g, n.l->total * sizeof *g1), 0);
	for (int i = 0; i < 15; i++)
		ck_assert_int_eq(pred[i], -1);
	free(g1);
	net_free(&n);
}
END_TEST

/* Dropout draws from the stream: the same state gives the same bits (loss
 * and gradient), another state another loss; NULL switches it off (the
 * loss of enc_forward's logits); the stream advances. */
START_TEST(test_dropout_stream)
{
	struct enc_cfg c =
	    case_cfg(_i ? ENC_DISTILBERT : ENC_BERT, ENC_TASK_CLASSIFY, 0, FEDRUN_ACT_GELU_ERF);
	c.dropout = 0.3f;
	c.attn_dropout = 0.2f;
	c.cls_dropout = 0.4f;
	struct net n;
	net_make(&n, &c, 1);
	net_randomize(&n, 3);
	struct rows q;
	rows_make(&q, &c, 1);
	const uint64_t total = n.l->total;
	float *g2 = tu_zeros(total);
	struct fedrun_rng a, b, a0;
	fedrun_rng_init(&a, 1, FEDRUN_RNG_DROPOUT, 0, 0);
	fedrun_rng_init(&b, 2, FEDRUN_RNG_DROPOUT, 0, 0);
	a0 = a;
	memset(n.g, 0, total * sizeof *n.g);
	double la, la2, lb, l0;
	uint64_t k;
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, &a, n.g, NULL, &la, &k, NULL), 0);
	ck_assert(memcmp(&a, &a0, sizeof a) != 0);
	a = a0;
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, &a, g2, NULL, &la2, &k, NULL), 0);
	ck_assert(la == la2);
	ck_assert_int_eq(memcmp(n.g, g2, total * sizeof *g2), 0);
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, &b, NULL, NULL, &lb, &k, NULL), 0);
	ck_assert(lb != la);
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, NULL, NULL, NULL, &l0, &k, NULL), 0);
	ck_assert(l0 != la);
	float logits[9];
	ck_assert_int_eq(enc_forward(n.w, n.p, &q.b, NULL, NULL, logits), 0);
	double want = 0.0;
	for (int r = 0; r < 3; r++) {
		double l[3] = {logits[3 * r], logits[3 * r + 1], logits[3 * r + 2]};
		want += d_xent(l, 3, q.labels[r]);
	}
	TU_ASSERT_ERR(fabs(l0 - want) / want, 1e-6, "loss without dropout");
	free(g2);
	net_free(&n);
}
END_TEST

struct bf16_ctx {
	struct net *n32, *n16;
	const struct enc_batch *b;
};

static double bf16_loss(void *ctx, int bf16)
{
	const struct bf16_ctx *x = ctx;
	struct net *n = bf16 ? x->n16 : x->n32;
	return mean_loss(n, x->b, NULL, n->g, NULL);
}

/* Precision bf16 against fp32: loss and gradient of a bf16 context and of
 * an FP32 one at the same parameters, before and after three SGD steps
 * along the FP32 gradient; BERT classify (_i 0) and DistilBERT MLM with
 * LoRA (_i 1). Bounds TU_BF16_BOUND (nn_testutil.h) over the products in
 * sequence: per layer 6 (the q/k/v projection, Q K^T, the weights times
 * V, the output projection, ffn1, ffn2; LoRA's two small products run
 * beside these, not after them), the head 2 (pooler and classifier;
 * transform and decoder): S_f = 2 6 + 2 = 14, the gradient S = 3 S_f. */
START_TEST(test_bf16_against_fp32)
{
	const char *isa = fedrun_backend_cpu_bf16_isa();
	if (!isa) {
		printf("SKIP: encoder bf16 against fp32: %s\n", fedrun_error_message());
		return;
	}
	struct enc_cfg c =
	    case_cfg(_i ? ENC_DISTILBERT : ENC_BERT, _i ? ENC_TASK_MLM : ENC_TASK_CLASSIFY,
		     _i ? ENC_LORA_Q | ENC_LORA_FFN2 : 0, FEDRUN_ACT_GELU_ERF);
	c.dim = 16;
	c.heads = 4;
	c.ffn = 32;
	c.init_range = 0.2f;
	struct net n32, n16;
	net_make(&n32, &c, 7);
	c.precision = FEDRUN_PRECISION_BF16;
	net_make(&n16, &c, 7);
	const uint64_t total = n32.l->total;
	struct rows q;
	rows_make(&q, &c, 5);
	struct bf16_ctx x = {&n32, &n16, &q.b};
	const struct tu_bf16_pair pair = {n32.p, n32.g, n16.p, n16.g, total, bf16_loss, &x};
	tu_bf16_steps(&pair, isa, _i, 2 * 6 + 2, 3 * (2 * 6 + 2));
	net_free(&n32);
	net_free(&n16);
}
END_TEST

/* On the "tagged" backend (tests/backend_tagged.c: the CPU backend behind
 * tagged device pointers, so that host code touching device memory
 * crashes and an op given host memory fails): parameters and gradient in
 * its device memory, the same bits as on the CPU backend for the loss,
 * the gradient (dropout, LoRA, a trainable mask), pred, the hidden states,
 * the pooler output and the logits. (_i 0) BERT MLM with LoRA, (1)
 * DistilBERT tag, (2) BERT classify with its embeddings frozen. */
START_TEST(test_tagged_backend)
{
	const enum enc_task task[] = {ENC_TASK_MLM, ENC_TASK_TAG, ENC_TASK_CLASSIFY};
	struct enc_cfg c = case_cfg(_i == 1 ? ENC_DISTILBERT : ENC_BERT, task[_i],
				    _i == 0 ? ENC_LORA_Q | ENC_LORA_FFN1 : 0, FEDRUN_ACT_GELU_ERF);
	c.dim = 16;
	c.heads = 4;
	c.dropout = 0.1f;
	c.attn_dropout = 0.1f;
	c.cls_dropout = 0.2f;
	ck_assert_int_eq(setenv("FEDRUN_PLUGIN_PATH", PLUGIN_DIR ":" TAGGED_DIR, 1), 0);
	const struct fedrun_backend_ops *be;
	ck_assert_int_eq(fedrun_backend_find("tagged", &be), 0);
	struct net n;
	net_make(&n, &c, 2);
	net_randomize(&n, 4);
	struct rows q;
	rows_make(&q, &c, 6);
	const uint64_t total = n.l->total, bytes = total * sizeof(float);
	uint8_t *tr = calloc(n.l->n, 1);
	for (uint32_t t = 0; t < n.l->n; t++)
		tr[t] = _i != 2 || enc_tensor_layer(&c, n.l, t) >= 0;
	struct enc_work *w;
	ck_assert_int_eq(enc_work_create(&c, n.l, be, &w), 0);
	void *ctx = enc_work_ctx(w);
	float *dp, *dg;
	ck_assert_int_eq(be->alloc(ctx, bytes, (void **)&dp), 0);
	ck_assert_int_eq(be->alloc(ctx, bytes, (void **)&dg), 0);
	ck_assert_int_eq(enc_work_to_device(w, dp, n.p, bytes), 0);
	struct fedrun_rng r0, r1;
	fedrun_rng_init(&r0, 3, FEDRUN_RNG_DROPOUT, 0, 0);
	r1 = r0;
	double l0, l1;
	uint64_t k0, k1;
	int32_t p0[15], p1[15];
	memset(n.g, 0, bytes);
	ck_assert_int_eq(enc_forward_backward(n.w, n.p, &q.b, &r0, n.g, tr, &l0, &k0, p0), 0);
	int rc = enc_forward_backward(w, dp, &q.b, &r1, dg, tr, &l1, &k1, p1);
	ck_assert_msg(rc == 0, "tagged: %s", fedrun_error_message());
	ck_assert(l0 == l1 && k0 == k1);
	ck_assert_int_eq(memcmp(p0, p1, sizeof(int32_t) * (_i == 2 ? 3 : 15)), 0);
	float *g1 = tu_zeros(total);
	ck_assert_int_eq(enc_work_to_host(w, g1, dg, bytes), 0);
	ck_assert_int_eq(memcmp(g1, n.g, bytes), 0);
	const uint64_t nh = (c.layers + 1) * 15 * c.dim, nl = 15 * c.vocab;
	float *h0 = tu_zeros(nh), *h1 = tu_zeros(nh), *o0 = tu_zeros(nl), *o1 = tu_zeros(nl),
	      pool0[48], pool1[48];
	float *pool = _i == 2 ? pool0 : NULL;
	ck_assert_int_eq(enc_forward(n.w, n.p, &q.b, h0, pool, o0), 0);
	ck_assert_int_eq(enc_forward(w, dp, &q.b, h1, pool ? pool1 : NULL, o1), 0);
	ck_assert_int_eq(memcmp(h0, h1, nh * sizeof *h0), 0);
	ck_assert_int_eq(memcmp(o0, o1, nl * sizeof *o0), 0);
	if (pool)
		ck_assert_int_eq(memcmp(pool0, pool1, sizeof pool0), 0);
	/* the byte counts: the parameters in, the batches' ids in; the
	 * gradient and the hidden states (and the logits) out; then axpy on
	 * the device: g1 += 0.5 g1 */
	uint64_t h2d, d2h;
	enc_work_xfer(w, &h2d, &d2h);
	ck_assert_uint_gt(h2d, bytes);
	ck_assert_uint_gt(d2h, bytes + nh * sizeof(float));
	enc_work_xfer_add(w, 3, 4);
	uint64_t h2d2, d2h2;
	enc_work_xfer(w, &h2d2, &d2h2);
	ck_assert(h2d2 == h2d + 3 && d2h2 == d2h + 4);
	ck_assert_int_eq(enc_work_axpy(w, total, 0.5f, dg, dg), 0);
	float *g2 = tu_zeros(total);
	ck_assert_int_eq(enc_work_to_host(w, g2, dg, bytes), 0);
	for (uint64_t j = 0; j < total; j++)
		ck_assert(g2[j] == g1[j] + 0.5f * g1[j]);
	free(g2);
	be->free_mem(ctx, dp);
	be->free_mem(ctx, dg);
	enc_work_destroy(w);
	free(tr);
	free(g1);
	free(h0);
	free(h1);
	free(o0);
	free(o1);
	net_free(&n);
}
END_TEST

/* Bad arguments: FEDRUN_EINVAL with a message naming what is wrong. */
static void expect_einval(int rc, const char *what)
{
	ck_assert_msg(rc == FEDRUN_EINVAL, "%s: rc %d", what, rc);
	ck_assert_msg(strstr(fedrun_error_message(), what), "message \"%s\" lacks \"%s\"",
		      fedrun_error_message(), what);
}

START_TEST(test_bad_input)
{
	struct enc_cfg c = case_cfg(ENC_BERT, ENC_TASK_TAG, 0, FEDRUN_ACT_GELU_ERF);
	struct net n;
	net_make(&n, &c, 1);
	struct rows q;
	rows_make(&q, &c, 1);
	float *g = n.g;
	double ls;
	uint64_t k;
#define FB(b) enc_forward_backward(n.w, n.p, (b), NULL, g, NULL, &ls, &k, NULL)
	ck_assert_int_eq(FB(&q.b), 0);
	struct rows r = q;
	r.b.ids = r.ids, r.b.len = r.len, r.b.type_ids = r.types, r.b.labels = r.labels;
	r.ids[7] = 13;
	expect_einval(FB(&r.b), "ids[7]");
	r.ids[7] = -1;
	expect_einval(FB(&r.b), "ids[7]");
	r.ids[7] = 1;
	r.len[1] = 0;
	expect_einval(FB(&r.b), "len[1] = 0");
	r.len[1] = 6;
	expect_einval(FB(&r.b), "len[1] = 6");
	r.len[1] = 3;
	r.labels[2] = 3;
	expect_einval(FB(&r.b), "labels[2] (row 0, position 2) = 3");
	r.labels[2] = 0;
	r.labels[9] = 1; /* row 1, position 4 >= len 3 */
	expect_einval(FB(&r.b), "padding");
	r.labels[9] = -1;
	r.types[3] = 2;
	expect_einval(FB(&r.b), "type_ids[3]");
	r.types[3] = 1;
	ck_assert_int_eq(FB(&r.b), 0);
	r.b.T = 8; /* > max_pos 7 */
	expect_einval(FB(&r.b), "max_pos");
	r.b.T = 5;
	r.b.labels = NULL;
	expect_einval(FB(&r.b), "labels");
	expect_einval(enc_forward(n.w, n.p, &q.b, NULL, g, NULL), "pooler");
	net_free(&n);
	/* classify labels, DistilBERT token types, the base model */
	c = case_cfg(ENC_DISTILBERT, ENC_TASK_CLASSIFY, 0, FEDRUN_ACT_GELU_ERF);
	net_make(&n, &c, 1);
	rows_make(&q, &c, 1);
	g = n.g;
	q.labels[1] = 3;
	expect_einval(FB(&q.b), "labels[1] = 3");
	q.labels[1] = 0;
	q.b.type_ids = q.types;
	expect_einval(FB(&q.b), "token types");
	net_free(&n);
	c = case_cfg(ENC_BERT, ENC_TASK_BASE, 0, FEDRUN_ACT_GELU_ERF);
	net_make(&n, &c, 1);
	rows_make(&q, &c, 1);
	g = n.g;
	expect_einval(FB(&q.b), "task head");
	net_free(&n);
#undef FB
	/* configurations */
	struct fedrun_layout *l;
	c = case_cfg(ENC_BERT, ENC_TASK_CLASSIFY, 0, FEDRUN_ACT_GELU_ERF);
	c.labels = 1;
	expect_einval(enc_layout(&c, &l), "labels 1");
	c = case_cfg(ENC_BERT, ENC_TASK_CLASSIFY, 0, FEDRUN_ACT_GELU_ERF);
	c.dim = 9;
	expect_einval(enc_layout(&c, &l), "multiple of heads");
	c.dim = 8;
	c.act = FEDRUN_ACT_SIGMOID;
	expect_einval(enc_layout(&c, &l), "activation");
	c.act = FEDRUN_ACT_GELU_ERF;
	c.lora_r = 2;
	expect_einval(enc_layout(&c, &l), "LoRA targets");
	c.lora_r = 0;
	c.dropout = 1.0f;
	expect_einval(enc_layout(&c, &l), "dropout");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("encoder_net");
	TCase *tc = tcase_create("net");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_init);
	tcase_add_loop_test(tc, test_forward_reference, 0,
			    (int)(sizeof fwd_cases / sizeof fwd_cases[0]));
	tcase_add_loop_test(tc, test_fd_gradient, 0,
			    (int)(sizeof grad_cases / sizeof grad_cases[0]));
	tcase_add_loop_test(tc, test_trainable_mask, 0, 5);
	tcase_add_test(tc, test_accumulates);
	tcase_add_loop_test(tc, test_dropout_stream, 0, 2);
	tcase_add_loop_test(tc, test_bf16_against_fp32, 0, 2);
	tcase_add_test(tc, test_bad_input);
	tcase_add_loop_test(tc, test_tagged_backend, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
