/* SPDX-License-Identifier: Apache-2.0 */
/* The Transformer network (plugins/models/transformer/net.c): layout and
 * initialisation, a finite-difference check of the whole model's loss
 * gradient (post- and pre-norm, every tying, padding in source and target,
 * fused and unfused projections, with and without dropout), gradient
 * accumulation, and incremental decoding against the full forward pass
 * with beam reordering. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "nn_testutil.h"
#include "net.h"
#include "beam.h"

static struct tfm_cfg tiny(uint32_t D, uint32_t H, int pre, int tie)
{
	struct tfm_cfg c = {.vocab = 11,
			    .enc_layers = 2,
			    .dec_layers = 2,
			    .dim = D,
			    .heads = H,
			    .ffn = 12,
			    .dropout = 0.0f,
			    .attn_dropout = 0.0f,
			    .relu_dropout = 0.0f,
			    .label_smoothing = 0.1f,
			    .tie = tie,
			    .pre_norm = pre,
			    .pad_id = 0,
			    .bos_id = 2,
			    .eos_id = 3};
	return c;
}

/* A model with initialised parameters and a work object. */
struct net {
	struct tfm_cfg c;
	struct fedrun_layout *l;
	struct tfm_work *w;
	float *p, *g;
};

static void net_make(struct net *n, const struct tfm_cfg *c, uint64_t seed)
{
	n->c = *c;
	ck_assert_int_eq(tfm_layout(c, &n->l), 0);
	n->p = fedrun_arena_alloc(n->l->total);
	n->g = fedrun_arena_alloc(n->l->total);
	ck_assert_ptr_nonnull(n->p);
	ck_assert_ptr_nonnull(n->g);
	ck_assert_int_eq(tfm_init(c, n->l, seed, n->p), 0);
	ck_assert_int_eq(tfm_work_create(c, n->l, fedrun_backend_cpu(), &n->w), 0);
}

static void net_free(struct net *n)
{
	tfm_work_destroy(n->w);
	fedrun_arena_free(n->p);
	fedrun_arena_free(n->g);
	tfm_layout_free(n->l);
}

/* A batch of 3 pairs with padding on both sides: source lengths 5, 3, 1
 * (Ts 5), target lengths 6, 4, 2 (Tt 6), random tokens >= 4. */
struct pairs {
	struct tfm_batch b;
	int32_t src[15], sl[3], ti[18], to[18], tl[3];
};

static void pairs_make(struct pairs *q, uint32_t V, uint64_t seed)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, 0, 0);
	const int32_t sl[3] = {5, 3, 1}, tl[3] = {6, 4, 2};
	for (int b = 0; b < 3; b++) {
		q->sl[b] = sl[b];
		q->tl[b] = tl[b];
		for (int t = 0; t < 5; t++)
			q->src[b * 5 + t] =
			    t < sl[b] ? 4 + (int32_t)fedrun_rng_below(&r, V - 4) : 0;
		/* y1 .. yn eos: n = tl - 1 */
		int32_t y[6];
		for (int t = 0; t < 6; t++)
			y[t] = t < tl[b] - 1 ? 4 + (int32_t)fedrun_rng_below(&r, V - 4) : 3;
		for (int t = 0; t < 6; t++) {
			q->ti[b * 6 + t] = t == 0 ? 2 : t < tl[b] ? y[t - 1] : 0;
			q->to[b * 6 + t] = t < tl[b] ? y[t] : -1;
		}
	}
	q->b = (struct tfm_batch){.B = 3,
				  .Ts = 5,
				  .Tt = 6,
				  .src = q->src,
				  .src_len = q->sl,
				  .tgt_in = q->ti,
				  .tgt_out = q->to,
				  .tgt_len = q->tl};
}

/* Mean loss per target token, in double; rng (copied, so that every call
 * draws the same dropout masks) may be NULL. */
static double mean_loss(struct net *n, const struct tfm_batch *b, const struct fedrun_rng *rng,
			float *grad)
{
	struct fedrun_rng r;
	if (rng)
		r = *rng;
	double ls = 0.0;
	uint64_t nt = 0;
	int rc = tfm_forward_backward(n->w, n->p, b, rng ? &r : NULL, grad, &ls, NULL, &nt);
	ck_assert_msg(rc == 0, "tfm_forward_backward: %s", fedrun_error_message());
	ck_assert_uint_gt(nt, 0);
	return ls / (double)nt;
}

/* Normwise error max_i |fd_i - g_i| / max_i |g_i| over every tensor entry
 * (not the alignment padding), fd by central differences with step h. */
static double fd_error(struct net *n, const struct tfm_batch *b, const struct fedrun_rng *rng,
		       const float *g, double h)
{
	double emax = 0.0, gmax = 0.0;
	for (uint32_t t = 0; t < n->l->n; t++) {
		const struct fedrun_tensor_info *ti = &n->l->t[t];
		for (uint64_t j = 0; j < ti->numel; j++) {
			float *p = n->p + ti->offset + j;
			const float v = *p;
			const float hi = (float)(v + h), lo = (float)(v - h);
			*p = hi;
			double lp = mean_loss(n, b, rng, NULL);
			*p = lo;
			double lm = mean_loss(n, b, rng, NULL);
			*p = v;
			double fd = (lp - lm) / ((double)hi - (double)lo);
			double gi = g[ti->offset + j];
			double e = fabs(fd - gi);
			emax = e > emax ? e : emax;
			gmax = fabs(gi) > gmax ? fabs(gi) : gmax;
		}
	}
	return emax / gmax;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Configurations of the gradient check: D 8 has adjacent q, k, v weights
 * (one fused sgemm), D 6 does not (one sgemm per part). */
static const struct {
	uint32_t D, H;
	int pre, tie, dropout, relu;
} grad_cases[] = {
    {8, 2, 0, TFM_TIE_ALL, 0, 0},     {8, 2, 1, TFM_TIE_ALL, 0, 0},
    {8, 2, 0, TFM_TIE_NONE, 0, 0},    {8, 2, 1, TFM_TIE_NONE, 0, 0},
    {6, 3, 0, TFM_TIE_DECODER, 0, 0}, {6, 3, 1, TFM_TIE_DECODER, 0, 0},
    {8, 2, 0, TFM_TIE_ALL, 1, 0},     {8, 4, 1, TFM_TIE_NONE, 1, 0},
    {8, 2, 0, TFM_TIE_ALL, 0, 1},     {8, 2, 1, TFM_TIE_NONE, 1, 1},
};

/* Step and tolerance of the check. The loss is a float computation
 * (rounding ~1e-7 relative, the loss ~2.4, summed in double), so the
 * rounding share of a central difference is ~1e-7 / h and its truncation
 * error O(h^2). Observed normwise errors (NN_TEST_VERBOSE=1), largest over
 * the cases: 1.6e-3 at h = 1e-2 (truncation), 1.5e-4 at h = 3e-3, 4.4e-4
 * at h = 1e-3 (rounding). With h = 3e-3 the tolerance 2e-3 leaves a
 * factor 13, while one entry off by 2% of the largest entry gives 2e-2
 * (checked below), and a missing or doubled term far more.
 *
 * Most cases use GELU: with ReLU and random points some hidden unit's
 * input lies within 1e-3 of the kink (seen: 7.6e-4), and differences
 * across it err by up to 1e-2 whatever the gradient. The ReLU cases move
 * every unit away from the kink (fc1 biases +-2.5), which tests the
 * gating in both states. */
#define FD_STEP 3e-3
#define FD_TOL 2e-3

START_TEST(test_fd_whole_model)
{
	struct tfm_cfg c =
	    tiny(grad_cases[_i].D, grad_cases[_i].H, grad_cases[_i].pre, grad_cases[_i].tie);
	c.activation = grad_cases[_i].relu ? FEDRUN_ACT_RELU : FEDRUN_ACT_GELU;
	if (grad_cases[_i].dropout) {
		c.dropout = 0.2f;
		c.attn_dropout = 0.25f;
		c.relu_dropout = 0.3f;
	}
	struct net n;
	net_make(&n, &c, 7 + _i);
	/* random layer-norm parameters and biases, so that their gradients
	 * are checked at a generic point and not only at 1 and 0 */
	struct fedrun_rng r;
	fedrun_rng_init(&r, 99, FEDRUN_RNG_DATA, 1, _i);
	for (uint32_t t = 0; t < n.l->n; t++) {
		const struct fedrun_tensor_info *ti = &n.l->t[t];
		if (ti->ndim == 1)
			for (uint64_t j = 0; j < ti->numel; j++)
				n.p[ti->offset + j] += (float)(0.4 * fedrun_rng_uniform(&r) - 0.2);
		/* ReLU: units biased well on (even) or off (odd), so that no
		 * difference quotient straddles the kink at 0 */
		if (grad_cases[_i].relu && ends_with(ti->name, "fc1.bias"))
			for (uint64_t j = 0; j < ti->numel; j++)
				n.p[ti->offset + j] = j % 2 ? -2.5f : 2.5f;
	}
	struct pairs q;
	pairs_make(&q, c.vocab, 3 + _i);
	struct fedrun_rng drop, *dr = NULL;
	if (grad_cases[_i].dropout) {
		fedrun_rng_init(&drop, 5, FEDRUN_RNG_DROPOUT, 0, _i);
		dr = &drop;
	}
	memset(n.g, 0, n.l->total * sizeof *n.g);
	mean_loss(&n, &q.b, dr, n.g);
	TU_ASSERT_ERR(fd_error(&n, &q.b, dr, n.g, FD_STEP), FD_TOL, "whole-model gradient");
	if (_i == 0) {
		/* the check can fail: one entry off by 2% of the largest */
		uint64_t arg = 0;
		for (uint64_t j = 0; j < n.l->total; j++)
			arg = fabsf(n.g[j]) > fabsf(n.g[arg]) ? j : arg;
		int64_t k = fedrun_layout_find(n.l, "decoder.layers.1.ffn.fc1.weight");
		ck_assert_int_ge(k, 0);
		n.g[n.l->t[k].offset + 5] += 0.02f * fabsf(n.g[arg]);
		double e = fd_error(&n, &q.b, dr, n.g, FD_STEP);
		ck_assert_msg(e > FD_TOL, "a perturbed gradient passed (error %g)", e);
	}
	net_free(&n);
}
END_TEST

struct bf16_ctx {
	struct net *n32, *n16;
	const struct tfm_batch *b;
};

static double bf16_loss(void *ctx, int bf16)
{
	const struct bf16_ctx *x = ctx;
	struct net *n = bf16 ? x->n16 : x->n32;
	return mean_loss(n, x->b, NULL, n->g);
}

/* Precision bf16 against FP32: the whole model's loss and gradient from a
 * bf16 context (tfm_cfg.precision) and from an FP32 one at the same
 * parameters, before and after each of three SGD steps along the FP32
 * gradient, post-norm (_i 0) and pre-norm (_i 1). Bounds: TU_BF16_BOUND
 * (nn_testutil.h) over the products in sequence. Forward, per encoder
 * layer 6 (the fused q/k/v projection, Q K^T, the weights times V, the
 * output projection, fc1, fc2), per decoder layer 11 (self-attention's 4,
 * cross-attention's 5: q, the fused k/v, Q K^T, weights times V, output;
 * fc1, fc2), and the output projection: S_f = 2 6 + 2 11 + 1 = 35 (the
 * residual sums and layer norms do not amplify a relative error); the
 * loss gets 6u sqrt(35) = 0.139. The gradient adds the two backward
 * products of each: S = 3 S_f = 105, 6u sqrt(105) = 0.240. Measured
 * (NN_TEST_VERBOSE=1; amx_bf16 and avx512_bf16 alike): loss 6.6e-6 to
 * 1.0e-3, gradient 4.3e-3 to 5.3e-2 (the largest at the initialisation).
 * Both errors must also be above 0: the bf16 context really rounded. */
START_TEST(test_bf16_against_fp32)
{
	const char *isa = fedrun_backend_cpu_bf16_isa();
	if (!isa) {
		printf("SKIP: transformer bf16 against fp32: %s\n", fedrun_error_message());
		return;
	}
	struct tfm_cfg c = tiny(16, 4, _i, TFM_TIE_ALL);
	c.ffn = 32;
	struct net n32, n16;
	net_make(&n32, &c, 7);
	c.precision = FEDRUN_PRECISION_BF16;
	net_make(&n16, &c, 7);
	const uint64_t total = n32.l->total;
	struct pairs q;
	pairs_make(&q, c.vocab, 5);
	const double S_f = 2 * 6 + 2 * 11 + 1;
	struct bf16_ctx x = {&n32, &n16, &q.b};
	const struct tu_bf16_pair pair = {n32.p, n32.g, n16.p, n16.g, total, bf16_loss, &x};
	tu_bf16_steps(&pair, isa, _i, S_f, 3 * S_f);
	net_free(&n32);
	net_free(&n16);
}
END_TEST

/* Gradients add up over calls; the loss sums are consistent. */
START_TEST(test_accumulates)
{
	struct tfm_cfg c = tiny(8, 2, 0, TFM_TIE_ALL);
	struct net n;
	net_make(&n, &c, 1);
	struct pairs q;
	pairs_make(&q, c.vocab, 1);
	float *g1 = tu_zeros(n.l->total);
	double l1, n1, l2, n2;
	uint64_t t1, t2;
	memset(n.g, 0, n.l->total * sizeof *n.g);
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, g1, &l1, &n1, &t1), 0);
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, n.g, &l2, &n2, &t2), 0);
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, n.g, NULL, NULL, NULL), 0);
	ck_assert_uint_eq(t1, 12); /* 6 + 4 + 2 target tokens */
	ck_assert_uint_eq(t1, t2);
	ck_assert(l1 == l2 && n1 == n2);
	ck_assert(l1 > n1 * 0.5 && n1 > 0.0);
	double e = 0.0, m = 0.0;
	for (uint64_t j = 0; j < n.l->total; j++) {
		e = fmax(e, fabs((double)n.g[j] - 2.0 * g1[j]));
		m = fmax(m, fabs((double)g1[j]));
	}
	ck_assert(m > 0.0);
	ck_assert_msg(e <= 1e-6 * m, "second pass did not add: %g", e);
	/* evaluation gives the same sums without touching a gradient */
	double l3, n3;
	uint64_t t3;
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, NULL, &l3, &n3, &t3), 0);
	ck_assert(l3 == l1 && n3 == n1 && t3 == t1);
	free(g1);
	net_free(&n);
}
END_TEST

/* The loss sums against the logits: row loss (1 - eps) nll + eps mean_j
 * (-log p_j) over the target positions (Szegedy et al. 2016, sec. 7);
 * padding rows count for nothing, and a batch with no target at all gives
 * zeros and no gradient. */
START_TEST(test_loss_from_logits)
{
	struct tfm_cfg c = tiny(8, 2, 1, TFM_TIE_DECODER);
	struct net n;
	net_make(&n, &c, 3);
	struct pairs q;
	pairs_make(&q, c.vocab, 2);
	const uint32_t V = c.vocab, N = q.b.B * q.b.Tt;
	float *logits = malloc(sizeof(float) * N * V);
	double ls, nl, want_ls = 0.0, want_nl = 0.0;
	uint64_t nt, want_nt = 0;
	ck_assert_int_eq(tfm_forward_logits(n.w, n.p, &q.b, logits), 0);
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, NULL, &ls, &nl, &nt), 0);
	for (uint32_t i = 0; i < N; i++) {
		if (q.to[i] < 0)
			continue;
		const float *l = logits + (uint64_t)i * V;
		double m = l[0], z = 0.0, mean = 0.0;
		for (uint32_t j = 1; j < V; j++)
			m = fmax(m, l[j]);
		for (uint32_t j = 0; j < V; j++)
			z += exp(l[j] - m);
		z = m + log(z);
		for (uint32_t j = 0; j < V; j++)
			mean += (z - l[j]) / V;
		double nll = z - l[q.to[i]];
		want_nl += nll;
		want_ls += (1.0 - c.label_smoothing) * nll + c.label_smoothing * mean;
		want_nt++;
	}
	ck_assert_uint_eq(nt, want_nt);
	TU_ASSERT_ERR(fabs(ls - want_ls) / want_ls, 1e-5, "loss sum");
	TU_ASSERT_ERR(fabs(nl - want_nl) / want_nl, 1e-5, "nll sum");
	/* no target at all */
	for (uint32_t i = 0; i < N; i++)
		q.to[i] = -1;
	memset(n.g, 0, n.l->total * sizeof *n.g);
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, n.g, &ls, &nl, &nt), 0);
	ck_assert(ls == 0.0 && nl == 0.0 && nt == 0);
	for (uint64_t j = 0; j < n.l->total; j++)
		ck_assert(n.g[j] == 0.0f);
	free(logits);
	net_free(&n);
}
END_TEST

/* Padding is invisible: other tokens in the padded positions of source
 * and target leave the loss and the gradient unchanged (the masks hide
 * padded keys exactly), while a change in a real token does not. */
START_TEST(test_padding_invisible)
{
	struct tfm_cfg c = tiny(8, 2, _i, TFM_TIE_ALL);
	struct net n;
	net_make(&n, &c, 9);
	struct pairs q;
	pairs_make(&q, c.vocab, 4);
	float *g0 = tu_zeros(n.l->total);
	double l0 = mean_loss(&n, &q.b, NULL, g0);
	for (int b = 0; b < 3; b++) {
		for (int t = q.sl[b]; t < 5; t++)
			q.src[b * 5 + t] = 5 + t;
		for (int t = q.tl[b]; t < 6; t++)
			q.ti[b * 6 + t] = 4 + t;
	}
	memset(n.g, 0, n.l->total * sizeof *n.g);
	double l1 = mean_loss(&n, &q.b, NULL, n.g);
	ck_assert_msg(l0 == l1, "loss %.17g became %.17g", l0, l1);
	double e = 0.0, m = 0.0;
	for (uint64_t j = 0; j < n.l->total; j++) {
		e = fmax(e, fabs((double)n.g[j] - g0[j]));
		m = fmax(m, fabs((double)g0[j]));
	}
	/* the embedding rows of the pad tokens get no gradient either way;
	 * the rest may differ by the rounding of other summation orders */
	ck_assert_msg(e <= 1e-6 * m, "gradient changed by %g (max %g)", e, m);
	q.src[1 * 5 + 2] = 4 + (q.src[1 * 5 + 2] - 3) % 7; /* a real token */
	ck_assert(mean_loss(&n, &q.b, NULL, NULL) != l0);
	free(g0);
	net_free(&n);
}
END_TEST

/* Dropout draws from the stream: the same state gives the same loss, a
 * different one another; NULL switches it off. */
START_TEST(test_dropout_stream)
{
	struct tfm_cfg c = tiny(8, 2, 0, TFM_TIE_ALL);
	c.dropout = 0.3f;
	struct net n;
	net_make(&n, &c, 1);
	struct pairs q;
	pairs_make(&q, c.vocab, 1);
	struct fedrun_rng a, b;
	fedrun_rng_init(&a, 1, FEDRUN_RNG_DROPOUT, 0, 0);
	fedrun_rng_init(&b, 2, FEDRUN_RNG_DROPOUT, 0, 0);
	double la = mean_loss(&n, &q.b, &a, NULL), la2 = mean_loss(&n, &q.b, &a, NULL);
	double lb = mean_loss(&n, &q.b, &b, NULL), l0 = mean_loss(&n, &q.b, NULL, NULL);
	ck_assert(la == la2);
	ck_assert(la != lb && la != l0 && lb != l0);
	/* the stream advances */
	struct fedrun_rng a2 = a;
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, &a2, NULL, NULL, NULL, NULL), 0);
	ck_assert(memcmp(&a2.ctr, &a.ctr, sizeof a.ctr) != 0);
	net_free(&n);
}
END_TEST

static void log_softmax_d(const float *l, uint32_t V, double *out)
{
	double m = l[0], s = 0.0;
	for (uint32_t j = 1; j < V; j++)
		m = fmax(m, l[j]);
	for (uint32_t j = 0; j < V; j++)
		s += exp(l[j] - m);
	for (uint32_t j = 0; j < V; j++)
		out[j] = l[j] - m - log(s);
}

/* Teacher-forced incremental decoding equals the full forward pass. Two
 * sentences (source lengths 4 and 2, Ts 4), beam 3: 6 rows, each with its
 * own target sequence. From step 1 on, parent maps every row to a random
 * row of its sentence (repeats allowed, as beam search does); the row then
 * follows the sequence of the row it copied, and its log-probabilities
 * must equal the log softmax of the full pass's logits for that sequence.
 * With reorder = 0 the parents are withheld (NULL), which must fail. */
static double decode_error(int pre, int tie, int reorder)
{
	struct tfm_cfg c = tiny(16, 4, pre, tie);
	c.enc_layers = 2;
	c.dec_layers = 3;
	struct net n;
	net_make(&n, &c, 11);
	enum { S = 2, BEAM = 3, R = S * BEAM, TS = 4, T = 6 };
	const uint32_t V = c.vocab;
	int32_t src[S * TS], sl[S] = {4, 2};
	int32_t rsrc[R * TS], rsl[R], ti[R * T], tl[R];
	struct fedrun_rng r;
	fedrun_rng_init(&r, 4, FEDRUN_RNG_DATA, 0, 0);
	for (int s = 0; s < S; s++)
		for (int t = 0; t < TS; t++)
			src[s * TS + t] = t < sl[s] ? 4 + (int32_t)fedrun_rng_below(&r, V - 4) : 0;
	for (int k = 0; k < R; k++) {
		memcpy(rsrc + k * TS, src + k / BEAM * TS, sizeof(int32_t) * TS);
		rsl[k] = sl[k / BEAM];
		tl[k] = T;
		for (int t = 0; t < T; t++)
			ti[k * T + t] = t ? 3 + (int32_t)fedrun_rng_below(&r, V - 3) : c.bos_id;
	}
	struct tfm_batch b = {.B = R,
			      .Ts = TS,
			      .Tt = T,
			      .src = rsrc,
			      .src_len = rsl,
			      .tgt_in = ti,
			      .tgt_out = NULL,
			      .tgt_len = tl};
	float *logits = malloc(sizeof(float) * R * T * V);
	float *lp = malloc(sizeof(float) * (R + S) * V);
	double *ref = malloc(sizeof(double) * V);
	ck_assert_int_eq(tfm_forward_logits(n.w, n.p, &b, logits), 0);
	/* a larger decoding first, abandoned after two steps: the state of
	 * the next one reuses its memory and must not depend on it */
	int32_t big[R + S];
	for (int k = 0; k < R + S; k++)
		big[k] = 5 + k % 4;
	ck_assert_int_eq(tfm_encode(n.w, n.p, S, TS, src, sl, BEAM + 1, T + 3), 0);
	ck_assert_int_eq(tfm_decode_step(n.w, n.p, 0, big, NULL, lp), 0);
	ck_assert_int_eq(tfm_decode_step(n.w, n.p, 1, big, NULL, lp), 0);
	ck_assert_int_eq(tfm_encode(n.w, n.p, S, TS, src, sl, BEAM, T), 0);
	int32_t which[R], tok[R], parent[R], nw[R];
	for (int k = 0; k < R; k++)
		which[k] = k;
	double err = 0.0;
	for (uint32_t t = 0; t < T; t++) {
		if (t) {
			for (int k = 0; k < R; k++) {
				parent[k] = k / BEAM * BEAM + (int32_t)fedrun_rng_below(&r, BEAM);
				nw[k] = which[parent[k]];
			}
			memcpy(which, nw, sizeof which);
		}
		for (int k = 0; k < R; k++)
			tok[k] = ti[which[k] * T + t];
		int rc = tfm_decode_step(n.w, n.p, t, tok, t && reorder ? parent : NULL, lp);
		ck_assert_msg(rc == 0, "tfm_decode_step: %s", fedrun_error_message());
		for (int k = 0; k < R; k++) {
			log_softmax_d(logits + ((uint64_t)which[k] * T + t) * V, V, ref);
			for (uint32_t j = 0; j < V; j++)
				err = fmax(err, fabs(lp[k * V + j] - ref[j]));
		}
	}
	free(logits);
	free(lp);
	free(ref);
	net_free(&n);
	return err;
}

START_TEST(test_decode_matches_forward)
{
	static const int cases[][2] = {{0, TFM_TIE_ALL}, {1, TFM_TIE_NONE}, {0, TFM_TIE_DECODER}};
	double e = decode_error(cases[_i][0], cases[_i][1], 1);
	/* observed about 1e-6 (float rounding in other summation orders) */
	TU_ASSERT_ERR(e, 1e-5, "decode step vs full forward");
	if (_i == 0) {
		double bad = decode_error(cases[_i][0], cases[_i][1], 0);
		ck_assert_msg(bad > 1e-3, "decoding without reordering matched (%g)", bad);
	}
}
END_TEST

/* Beam search over the real network equals exhaustive search (issue 5): a
 * tiny model with a vocabulary of 5 (pad 0, bos 2, eos 3 and two words)
 * and max_len 4 has 1 + 4 + 16 + 64 = 85 hypotheses (every token but eos
 * before the last position, eos forced at the fourth); a beam of 64 holds
 * every live prefix, so the search must return the hypothesis that scores
 * best over all 85. The exhaustive side scores each one with the FULL
 * forward pass (tfm_forward_logits, log softmax in double), independently
 * of the incremental decoder and the search; loop i picks the seed and the
 * length penalty (0, 1, 0.6). */
struct step_ud {
	struct tfm_work *w;
	const float *p;
};

static int net_step(void *ud, uint32_t t, const int32_t *tokens, const int32_t *parent,
		    float *logprobs)
{
	struct step_ud *u = ud;
	return tfm_decode_step(u->w, u->p, t, tokens, parent, logprobs);
}

START_TEST(test_beam_exhaustive)
{
	const double alphas[3] = {0.0, 1.0, 0.6};
	const double alpha = alphas[_i % 3];
	struct tfm_cfg c = tiny(16, 4, _i % 2, TFM_TIE_ALL);
	c.vocab = 5;
	c.bos_id = 2;
	c.eos_id = 3;
	struct net n;
	net_make(&n, &c, 100 + (uint64_t)_i);
	const uint32_t V = 5, L = 4, Ts = 3;
	const int32_t src[3] = {1, 4, 4}, sl[1] = {3};

	/* Exhaustive: every sequence of L - 1 or fewer non-eos tokens, then
	 * eos. Sequence k of length m: its digits in base 4 over {0,1,2,4}. */
	const int32_t alpha4[4] = {0, 1, 2, 4};
	double best_score = -INFINITY, best_lp = 0.0;
	int32_t best[4] = {0};
	uint32_t best_len = 0;
	float logits[4 * 5];
	for (uint32_t m = 0; m < L; m++) {
		uint32_t count = 1;
		for (uint32_t j = 0; j < m; j++)
			count *= 4;
		for (uint32_t k = 0; k < count; k++) {
			int32_t y[4], ti[4], to[4], tl[1] = {(int32_t)m + 1};
			uint32_t code = k;
			for (uint32_t j = 0; j < m; j++, code /= 4)
				y[j] = alpha4[code % 4];
			y[m] = 3;
			ti[0] = 2;
			for (uint32_t j = 0; j <= m; j++) {
				if (j > 0)
					ti[j] = y[j - 1];
				to[j] = y[j];
			}
			struct tfm_batch b = {.B = 1,
					      .Ts = Ts,
					      .Tt = m + 1,
					      .src = src,
					      .src_len = sl,
					      .tgt_in = ti,
					      .tgt_out = to,
					      .tgt_len = tl};
			ck_assert_int_eq(tfm_forward_logits(n.w, n.p, &b, logits), 0);
			double lp = 0.0, row[5];
			for (uint32_t j = 0; j <= m; j++) {
				log_softmax_d(logits + j * V, V, row);
				lp += row[y[j]];
			}
			double score = lp / pow((double)(m + 1), alpha);
			if (score > best_score) {
				best_score = score;
				best_lp = lp;
				best_len = m + 1;
				memcpy(best, y, sizeof y);
			}
		}
	}

	const uint32_t beam = 64, ml[1] = {L};
	ck_assert_int_eq(tfm_encode(n.w, n.p, 1, Ts, src, sl, beam, L), 0);
	struct step_ud u = {n.w, n.p};
	struct tfm_search_opts o = {.beam = beam, .len_penalty = alpha};
	struct tfm_hyp h;
	ck_assert_int_eq(tfm_beam_search(&o, 1, ml, V, 2, 3, net_step, &u, &h), 0);
	ck_assert_uint_eq(h.len, best_len);
	for (uint32_t j = 0; j < best_len; j++)
		ck_assert_int_eq(h.tokens[j], best[j]);
	/* float incremental decoding against the double log softmax of the
	 * float full pass: observed differences near 1e-6 */
	ck_assert_double_eq_tol(h.score, best_score, 1e-4);
	ck_assert_double_eq_tol(h.logprob, best_lp, 1e-4);
	tfm_hyp_free(&h, 1);
	net_free(&n);
}
END_TEST

START_TEST(test_layout)
{
	static const int ties[] = {TFM_TIE_NONE, TFM_TIE_DECODER, TFM_TIE_ALL};
	for (int pre = 0; pre < 2; pre++)
		for (int k = 0; k < 3; k++) {
			struct tfm_cfg c = tiny(16, 4, pre, ties[k]);
			struct fedrun_layout *l;
			ck_assert_int_eq(tfm_layout(&c, &l), 0);
			/* 16 tensors per encoder layer, 26 per decoder layer */
			uint32_t want = 2 * 16 + 2 * 26 + 1 + (pre ? 4 : 0) +
					(ties[k] == TFM_TIE_NONE) + (ties[k] != TFM_TIE_ALL);
			ck_assert_uint_eq(l->n, want);
			for (uint32_t i = 0; i < l->n; i++)
				ck_assert_msg(strncmp(l->t[i].name, "encoder.", 8) == 0 ||
						  strncmp(l->t[i].name, "decoder.", 8) == 0,
					      "%s", l->t[i].name);
			ck_assert_int_eq(fedrun_layout_find(l, "encoder.embed.weight") >= 0,
					 ties[k] != TFM_TIE_ALL);
			ck_assert_int_eq(fedrun_layout_find(l, "decoder.output.weight") >= 0,
					 ties[k] == TFM_TIE_NONE);
			ck_assert_int_eq(fedrun_layout_find(l, "encoder.norm.weight") >= 0, pre);
			/* q, k, v adjacent (D 16: no alignment padding) */
			const char *blocks[] = {"encoder.layers.1.self_attn.",
						"decoder.layers.0.cross_attn."};
			for (int j = 0; j < 2; j++) {
				char a[128], b2[128];
				snprintf(a, sizeof a, "%sq_proj.weight", blocks[j]);
				snprintf(b2, sizeof b2, "%sv_proj.weight", blocks[j]);
				int64_t qi = fedrun_layout_find(l, a),
					vi = fedrun_layout_find(l, b2);
				ck_assert(qi >= 0 && vi >= 0);
				ck_assert_uint_eq(l->t[vi].offset, l->t[qi].offset + 2 * 16 * 16);
				snprintf(a, sizeof a, "%sq_proj.bias", blocks[j]);
				snprintf(b2, sizeof b2, "%sv_proj.bias", blocks[j]);
				qi = fedrun_layout_find(l, a), vi = fedrun_layout_find(l, b2);
				ck_assert_uint_eq(l->t[vi].offset, l->t[qi].offset + 2 * 16);
			}
			tfm_layout_free(l);
		}
}
END_TEST

START_TEST(test_init)
{
	struct tfm_cfg c = tiny(64, 4, 0, TFM_TIE_NONE);
	c.vocab = 500;
	c.ffn = 128;
	struct fedrun_layout *l;
	ck_assert_int_eq(tfm_layout(&c, &l), 0);
	float *a = fedrun_arena_alloc(l->total), *b = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(tfm_init(&c, l, 5, a), 0);
	ck_assert_int_eq(tfm_init(&c, l, 5, b), 0);
	ck_assert(memcmp(a, b, l->total * sizeof *a) == 0);
	ck_assert_int_eq(tfm_init(&c, l, 6, b), 0);
	ck_assert(memcmp(a, b, l->total * sizeof *a) != 0);
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		const float *p = a + t->offset;
		double s = 0.0, s2 = 0.0, mx = 0.0;
		for (uint64_t j = 0; j < t->numel; j++) {
			s += p[j];
			s2 += (double)p[j] * p[j];
			mx = fmax(mx, fabs(p[j]));
		}
		double mean = s / t->numel, sd = sqrt(s2 / t->numel - mean * mean);
		const char *nm = t->name;
		if (strstr(nm, "norm.weight"))
			ck_assert(mean == 1.0 && sd == 0.0);
		else if (t->ndim == 1)
			ck_assert_msg(mx == 0.0, "%s", nm);
		else if (strstr(nm, "embed") || strstr(nm, "output")) {
			/* N(0, 1/8), pad row 0 */
			ck_assert_msg(fabs(sd - 0.125) < 0.01, "%s: sd %g", nm, sd);
			if (strstr(nm, "embed"))
				for (uint32_t j = 0; j < c.dim; j++)
					ck_assert(p[(uint64_t)c.pad_id * c.dim + j] == 0.0f);
		} else {
			double bound = strstr(nm, "out_proj") ? sqrt(6.0 / 128)
				       : strstr(nm, "fc")     ? sqrt(6.0 / 192)
							      : sqrt(6.0 / 256);
			ck_assert_msg(mx <= bound && mx > 0.9 * bound, "%s: max %g", nm, mx);
			/* uniform: sd = bound / sqrt(3) */
			ck_assert_msg(fabs(sd - bound / sqrt(3.0)) < 0.05 * bound, "%s: sd %g", nm,
				      sd);
		}
	}
	fedrun_arena_free(a);
	fedrun_arena_free(b);
	tfm_layout_free(l);
}
END_TEST

START_TEST(test_bad_input)
{
	struct tfm_cfg c = tiny(8, 2, 0, TFM_TIE_ALL);
	struct fedrun_layout *l;
	struct tfm_cfg bad = c;
	bad.heads = 3;
	ck_assert_int_eq(tfm_layout(&bad, &l), FEDRUN_EINVAL);
	ck_assert(strstr(fedrun_error_message(), "heads"));
	bad = c;
	bad.dropout = 1.0f;
	ck_assert_int_eq(tfm_layout(&bad, &l), FEDRUN_EINVAL);
	bad = c;
	bad.pad_id = 11;
	ck_assert_int_eq(tfm_layout(&bad, &l), FEDRUN_EINVAL);
	struct net n;
	net_make(&n, &c, 1);
	/* a layout of another configuration */
	struct tfm_work *w2;
	struct tfm_cfg other = tiny(8, 2, 1, TFM_TIE_ALL);
	ck_assert_int_eq(tfm_work_create(&other, n.l, fedrun_backend_cpu(), &w2), FEDRUN_EINVAL);
	ck_assert(strstr(fedrun_error_message(), "norm"));
	struct pairs q;
	pairs_make(&q, c.vocab, 1);
	q.src[3] = 11;
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, NULL, NULL, NULL, NULL),
			 FEDRUN_EINVAL);
	ck_assert(strstr(fedrun_error_message(), "src[3]"));
	pairs_make(&q, c.vocab, 1);
	q.tl[1] = 7;
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, NULL, NULL, NULL, NULL),
			 FEDRUN_EINVAL);
	pairs_make(&q, c.vocab, 1);
	q.to[0] = 11;
	ck_assert_int_eq(tfm_forward_backward(n.w, n.p, &q.b, NULL, NULL, NULL, NULL, NULL),
			 FEDRUN_EINVAL);
	/* decoding: steps in order, parents within the sentence */
	float lp[2 * 11];
	int32_t tok[2] = {2, 2}, par[2] = {1, 0};
	ck_assert_int_eq(tfm_decode_step(n.w, n.p, 0, tok, NULL, lp), FEDRUN_ESTATE);
	ck_assert_int_eq(tfm_encode(n.w, n.p, 2, 5, q.src, q.sl, 1, 4), 0);
	ck_assert_int_eq(tfm_decode_step(n.w, n.p, 1, tok, NULL, lp), FEDRUN_EINVAL);
	ck_assert_int_eq(tfm_decode_step(n.w, n.p, 0, tok, NULL, lp), 0);
	ck_assert_int_eq(tfm_decode_step(n.w, n.p, 1, tok, par, lp), FEDRUN_EINVAL);
	ck_assert(strstr(fedrun_error_message(), "parent"));
	net_free(&n);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("transformer_net");
	TCase *tc = tcase_create("net");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_layout);
	tcase_add_loop_test(tc, test_beam_exhaustive, 0, 6);
	tcase_add_test(tc, test_init);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_accumulates);
	tcase_add_loop_test(tc, test_bf16_against_fp32, 0, 2);
	tcase_add_test(tc, test_dropout_stream);
	tcase_add_test(tc, test_loss_from_logits);
	tcase_add_loop_test(tc, test_padding_invisible, 0, 2);
	tcase_add_loop_test(tc, test_decode_matches_forward, 0, 3);
	tcase_add_loop_test(tc, test_fd_whole_model, 0,
			    (int)(sizeof grad_cases / sizeof grad_cases[0]));
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
