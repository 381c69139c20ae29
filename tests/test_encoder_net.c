/* SPDX-License-Identifier: Apache-2.0 */
/* The encoder network (plugins/models/encoder/net.c): the Hugging Face
 * layout and initialisation, the forward pass against a direct
 * double-precision computation of BERT and DistilBERT with every head and
 * LoRA, finite-difference checks of every tensor's gradient (both
 * architectures, every head, LoRA on several targets, padding, token
 * types, dropout), the trainable mask (frozen gradients untouched, the
 * rest equal to the unmasked run's, the frozen layers' backward skipped),
 * dropout's determinism, bf16 against fp32 and argument errors. */
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
		const int ln = strstr(ti->name, "LayerNorm.weight") || strstr(ti->name,
									      "layer_norm.weight");
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
			q->ids[i] = real ? 1 + (int32_t)fedrun_rng_below(&r, c->vocab - 1) : c->pad_id;
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
		return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
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
	const int T = (int)q->T, D = (int)c->dim, F = (int)c->ffn, H = (int)c->heads,
		  dh = D / H, len = q->len[b], bert = c->arch == ENC_BERT;
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
	static const char *const bn[] = {"attention.self.query", "attention.self.key",
					 "attention.self.value", "attention.output.dense",
					 "attention.output.LayerNorm", "intermediate.dense",
					 "output.dense", "output.LayerNorm"};
	static const char *const dn[] = {"attention.q_lin", "attention.k_lin", "attention.v_lin",
					 "attention.out_lin", "sa_layer_norm", "ffn.lin1",
					 "ffn.lin2", "output_layer_norm"};
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
			 bert ? tensor(n, "cls.predictions.bias") : tensor(n, "vocab_projector.bias"),
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
	int rc = enc_forward(n.w, n.p, &q.b, hid, pool ? pooled : NULL,
			     c.task ? logits : NULL);
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
			const int32_t y = c.task == ENC_TASK_CLASSIFY ? q.labels[b]
								       : q.labels[b * T + t];
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

static Suite *suite(void)
{
	Suite *s = suite_create("encoder_net");
	TCase *tc = tcase_create("net");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_init);
	tcase_add_loop_test(tc, test_forward_reference, 0,
			    (int)(sizeof fwd_cases / sizeof fwd_cases[0]));
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
