/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the gru-lm model plugin, loaded as the engine loads it.
 *
 * Gradient: the plugin's loss_grad (float, the backend's CPU ops) against
 * central differences of a DOUBLE reference of the whole model built from
 * the reference ops of core/nn/ref.h: embedding, two GRU layers, decoder
 * (tied and untied), softmax cross-entropy, over several truncated-BPTT
 * windows with the hidden state carried from one to the next. With
 * h = 1e-5 in double the numerical gradient is exact to about 1e-10, so the
 * tolerance, 1e-5 normwise (largest error over largest entry, for the whole
 * arena and for each tensor), only has to cover the float rounding of the
 * plugin through the recurrence and the sums over windows (observed up to
 * 2.2e-7), while a wrong term (a state not carried, a tied gradient counted
 * once, a mis-scaled window, a gradient leaking into the previous window)
 * shows as 1e-2 or more.
 *
 * Learning: text drawn from a known Markov chain over words and <eos>; the
 * model must reach a validation perplexity within 5% of exp(H), H the
 * chain's entropy rate, the best any model can do. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/fedrun.h"
#include "../core/nn/ref.h"
#include "fakehost.h"
#include "nn_testutil.h"

static struct fedrun_registry *reg;

static void teardown(void)
{
	fedrun_registry_destroy(reg);
	reg = NULL;
}

static const struct fedrun_model_ops *ops(void)
{
	const struct fedrun_plugin *p = fakehost_plugin(&reg, FEDRUN_KIND_MODEL, "gru-lm");
	return p->ops;
}

/* A scratch directory for the test's corpus files. */
static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_gru_lm.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	const char *names[] = {"train.txt", "valid.txt", "test.txt"};
	char path[128];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* Writes `sentences` sentences of words w0..w{nw-1} drawn from a fixed
 * stream (lengths 1 to 6) into dir/name. */
static void write_random_corpus(const char *name, uint32_t sentences, uint32_t nw, uint32_t seed)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, 0, 0);
	for (uint32_t s = 0; s < sentences; s++) {
		uint64_t len = 1 + fedrun_rng_below(&r, 6);
		for (uint64_t i = 0; i < len; i++)
			fprintf(fp, "%sw%u", i ? " " : "", (unsigned)fedrun_rng_below(&r, nw));
		fputc('\n', fp);
	}
	fclose(fp);
}

/* Creates the model from a model section (JSON text) and a data section
 * with dir's train.txt (and valid.txt when `valid`), `clients` iid
 * clients. */
static void *create(struct fakehost *fh, const char *model_json, bool valid, uint32_t clients,
		    json_t **model_cfg)
{
	char data[512];
	snprintf(data, sizeof data,
		 "{\"train\": \"%s/train.txt\", %s%s%s \"partition\": {\"clients\": %u}}", dir,
		 valid ? "\"valid\": \"" : "", valid ? dir : "", valid ? "/valid.txt\"," : "",
		 clients);
	json_error_t err;
	json_t *mc = json_loads(model_json, 0, &err), *dc = json_loads(data, 0, &err);
	ck_assert_msg(mc && dc, "bad JSON in the test: %s", err.text);
	void *m = NULL;
	int rc = ops()->create(&fh->host, mc, dc, &m);
	ck_assert_msg(rc == 0, "create: %s", fedrun_error_message());
	if (model_cfg)
		*model_cfg = mc;
	else
		json_decref(mc);
	json_decref(dc);
	return m;
}

/* ---- the double reference of the whole model ---------------------------- */

struct ref_model {
	const struct fedrun_layout *l;
	uint32_t V, D, H, L;
	uint32_t batch, bptt;
	struct fedrun_stream s;
	double *theta; /* the parameters, in double */
};

static const double *tensor(const struct ref_model *r, const char *name)
{
	int64_t i = fedrun_layout_find(r->l, name);
	return i < 0 ? NULL : r->theta + r->l->t[i].offset;
}

/* Mean NLL per predicted token over every window. Window w starts from
 * the state states[w] (L layers of (B,H)), which the first call, with
 * record set, writes: truncated BPTT takes the state entering a window as
 * a constant, so the gradient it computes is the derivative with the
 * recorded states held fixed. */
static double ref_loss(const struct ref_model *r, double *states, bool record)
{
	struct fedrun_bptt it;
	ck_assert_int_eq(fedrun_bptt_init(&it, &r->s, r->batch, r->bptt), 0);
	const uint32_t B = r->batch, N = r->bptt * B;
	uint32_t *in = malloc(N * sizeof *in), *tg = malloc(N * sizeof *tg);
	int32_t *ids = malloc(N * sizeof *ids), *tgt = malloc(N * sizeof *tgt);
	double *emb = malloc((size_t)N * r->D * sizeof(double));
	double *y[8], *h[8];
	for (uint32_t l = 0; l < r->L; l++) {
		y[l] = malloc((size_t)N * r->H * sizeof(double));
		h[l] = calloc((size_t)B * r->H, sizeof(double));
	}
	double *logits = malloc((size_t)N * r->V * sizeof(double));
	const double *dec_w = tensor(r, "decoder.weight");
	if (!dec_w)
		dec_w = tensor(r, "embedding.weight"); /* tied */
	double sum = 0;
	uint64_t total = 0;
	for (uint64_t w = 0; w < it.windows; w++) {
		uint32_t T = fedrun_bptt_window(&it, w, in, tg);
		for (uint32_t i = 0; i < T * B; i++) {
			ids[i] = (int32_t)in[i];
			tgt[i] = (int32_t)tg[i];
		}
		nn_ref_embedding_forward(T * B, r->D, ids, tensor(r, "embedding.weight"), emb);
		const double *x = emb;
		for (uint32_t l = 0; l < r->L; l++) {
			char n[4][32];
			snprintf(n[0], sizeof n[0], "gru.%u.w_ih", l);
			snprintf(n[1], sizeof n[1], "gru.%u.w_hh", l);
			snprintf(n[2], sizeof n[2], "gru.%u.b_ih", l);
			snprintf(n[3], sizeof n[3], "gru.%u.b_hh", l);
			struct nn_ref_gru_weights gw = {tensor(r, n[0]), tensor(r, n[1]),
							tensor(r, n[2]), tensor(r, n[3])};
			struct fedrun_gru_dims d = {T, B, l ? r->H : r->D, r->H};
			size_t bh = (size_t)B * r->H;
			double *st = states + (w * r->L + l) * bh;
			if (record)
				memcpy(st, h[l], bh * sizeof(double)); /* zeros at w = 0 */
			nn_ref_gru_forward(&d, &gw, x, w ? st : NULL, y[l]);
			memcpy(h[l], y[l] + (size_t)(T - 1) * bh, bh * sizeof(double));
			x = y[l];
		}
		nn_ref_linear_forward(T * B, r->H, r->V, x, dec_w, tensor(r, "decoder.bias"),
				      logits);
		uint64_t cnt;
		double lw = nn_ref_softmax_xent(T * B, r->V, logits, tgt, &cnt, NULL);
		sum += lw * (double)cnt;
		total += cnt;
	}
	for (uint32_t l = 0; l < r->L; l++) {
		free(y[l]);
		free(h[l]);
	}
	free(in);
	free(tg);
	free(ids);
	free(tgt);
	free(emb);
	free(logits);
	return sum / (double)total;
}

/* Checks loss_grad of a 2-layer model (tied or not) against the reference. */
static void check_gradient(bool tied)
{
	const int _i = 0; /* TU_ASSERT_ERR names the iteration */
	make_dir();
	write_random_corpus("train.txt", 24, 9, 7);
	struct fakehost fh;
	fakehost_init(&fh, 3);
	char mj[256];
	snprintf(mj, sizeof mj,
		 "{\"embed\": 5, \"hidden\": %d, \"layers\": 2, \"tied\": %s, \"dropout\": 0, "
		 "\"bptt\": 4, \"eval_batch\": 3, \"init_range\": 0.5}",
		 tied ? 5 : 6, tied ? "true" : "false");
	void *m = create(&fh, mj, false, 1, NULL);
	const struct fedrun_layout *l = ops()->layout(m);
	ck_assert_int_eq(fedrun_layout_find(l, "decoder.weight") >= 0, !tied);
	float *p = fedrun_arena_alloc(l->total), *g = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(ops()->init_params(m, 11, p), 0);
	double loss;
	ck_assert_int_eq(ops()->loss_grad(m, NULL, p, FEDRUN_SPLIT_TRAIN, 0, g, &loss), 0);

	/* The same data as the plugin sees: the data section read again. */
	struct ref_model r = {.l = l, .D = 5, .H = tied ? 5 : 6, .L = 2, .batch = 3, .bptt = 4};
	json_t *dc =
	    json_pack("{s:s+, s:{s:i}}", "train", dir, "/train.txt", "partition", "clients", 1);
	struct fedrun_textdata *td;
	ck_assert_int_eq(fedrun_textdata_from_json(dc, "data", 3, &td), 0);
	r.V = fedrun_vocab_size(fedrun_textdata_vocab(td));
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, 0, &r.s), 0);
	struct fedrun_bptt it;
	fedrun_bptt_init(&it, &r.s, 3, 4);
	ck_assert_uint_ge(it.windows, 3); /* the carried state matters */

	r.theta = tu_dbl(p, l->total);
	double *states = tu_dzeros(it.windows * r.L * r.batch * r.H);
	double ref = ref_loss(&r, states, true);
	TU_ASSERT_ERR(fabs(loss - ref) / ref, 1e-6, "loss");
	double *fd = tu_dzeros(l->total);
	const double h = 1e-5;
	for (uint32_t t = 0; t < l->n; t++)
		for (uint64_t i = l->t[t].offset; i < l->t[t].offset + l->t[t].numel; i++) {
			double keep = r.theta[i];
			r.theta[i] = keep + h;
			double lp = ref_loss(&r, states, false);
			r.theta[i] = keep - h;
			double lm = ref_loss(&r, states, false);
			r.theta[i] = keep;
			fd[i] = (lp - lm) / (2 * h);
		}
	TU_ASSERT_ERR(tu_err(g, fd, l->total, 1e-12), 1e-5, tied ? "tied" : "untied");
	/* Per tensor too, so that a small tensor's error is not hidden by a
	 * large one's scale. */
	for (uint32_t t = 0; t < l->n; t++) {
		uint64_t o = l->t[t].offset;
		TU_ASSERT_ERR(tu_err(g + o, fd + o, l->t[t].numel, 1e-3), 1e-5, l->t[t].name);
	}
	free(fd);
	free(states);
	free(r.theta);
	fedrun_textdata_destroy(td);
	json_decref(dc);
	fedrun_arena_free(p);
	fedrun_arena_free(g);
	ops()->destroy(m);
	remove_dir();
}

START_TEST(gradient_tied)
{
	check_gradient(true);
}
END_TEST

START_TEST(gradient_untied)
{
	check_gradient(false);
}
END_TEST

/* ---- training ------------------------------------------------------------ */

static struct fedrun_optim_cfg sgd(double lr, double momentum)
{
	return (struct fedrun_optim_cfg){.kind = FEDRUN_OPTIM_SGD, .lr = lr, .momentum = momentum};
}

/* One training step over a stream that is exactly one window is one SGD
 * step along loss_grad's gradient; with FedProx the step also pulls towards
 * the anchor by mu (w - anchor). */
START_TEST(train_step_is_loss_grad_step)
{
	make_dir();
	write_random_corpus("train.txt", 6, 5, 9);
	struct fakehost fh;
	fakehost_init(&fh, 5);
	/* bptt 1000: the whole stream is one window for batch 2 */
	void *m = create(&fh,
			 "{\"embed\": 4, \"hidden\": 4, \"dropout\": 0, \"bptt\": 1000, "
			 "\"eval_batch\": 2}",
			 false, 1, NULL);
	const struct fedrun_layout *l = ops()->layout(m);
	uint64_t n = l->total;
	float *p = fedrun_arena_alloc(n), *g = fedrun_arena_alloc(n), *q = fedrun_arena_alloc(n);
	float *anchor = fedrun_arena_alloc(n);
	ops()->init_params(m, 1, p);
	double loss;
	ck_assert_int_eq(ops()->loss_grad(m, NULL, p, FEDRUN_SPLIT_TRAIN, 0, g, &loss), 0);
	ck_assert(fedrun_vec_nrm2(n, g) > 0);

	struct fedrun_optim_cfg oc = sgd(0.5, 0);
	uint64_t step = 0;
	struct fedrun_train_args a = {.size = sizeof a,
				      .round = 1,
				      .client = 0,
				      .seed = 1,
				      .steps = 1,
				      .batch = 2,
				      .optim = &oc,
				      .optim_step = &step};
	struct fedrun_train_stats st;
	void *w;
	ck_assert_int_eq(ops()->worker_create(m, &w), 0);
	memcpy(q, p, n * sizeof *q);
	ck_assert_int_eq(ops()->train(m, w, &a, q, &st), 0);
	ck_assert_uint_eq(step, 1);
	ck_assert_double_eq_tol(st.loss, loss, 1e-12);
	ck_assert_uint_gt(st.samples, 0);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_float_eq_tol(q[i], p[i] - 0.5f * g[i], 1e-6f);

	/* FedProx: anchor = p + 0.1, so w - anchor = -0.1 everywhere. The
	 * worker's gradient arena is left holding loss_grad's gradient first:
	 * training must not take it for the zeros its own steps leave. */
	ck_assert_int_eq(ops()->loss_grad(m, w, p, FEDRUN_SPLIT_TRAIN, 0, g, &loss), 0);
	for (uint64_t i = 0; i < n; i++)
		anchor[i] = p[i] + 0.1f;
	a.prox_mu = 0.2;
	a.prox_anchor = anchor;
	memcpy(q, p, n * sizeof *q);
	ck_assert_int_eq(ops()->train(m, w, &a, q, &st), 0);
	for (uint32_t t = 0; t < l->n; t++)
		for (uint64_t i = l->t[t].offset; i < l->t[t].offset + l->t[t].numel; i++)
			ck_assert_float_eq_tol(q[i], p[i] - 0.5f * (g[i] + 0.2f * -0.1f), 1e-6f);
	/* The speed metric is reported for the client. */
	ck_assert(fakehost_metric(&fh, "gru_lm.tokens_per_s", 0, NULL) > 0);
	ops()->worker_destroy(m, w);
	fedrun_arena_free(p);
	fedrun_arena_free(g);
	fedrun_arena_free(q);
	fedrun_arena_free(anchor);
	ops()->destroy(m);
	remove_dir();
}
END_TEST

/* Precision bf16 against FP32: the whole model's loss and gradient from a
 * bf16 context (model.precision "bf16") and from an FP32 one, at the same
 * parameters, before and after each of three SGD steps along the FP32
 * gradient (the parameters changed in place, as a step changes them, so a
 * bf16 weight copy kept past its step would show). Bounds: TU_BF16_BOUND
 * (nn_testutil.h) over the products in sequence. Forward: each of the L
 * layers' input product (all steps at once) and its recurrent product at
 * each of the T = bptt steps (the state's update h = (1-z) n + z h' is a
 * convex combination, so an error carried from a step does not grow),
 * then the decoder: S_f = L (1 + T) + 1 = 11 for L = 2, T = 4; the loss
 * (cross-entropy of the logits, whose relative sensitivity to them is
 * <= 1 at logits O(1)) gets 6u sqrt(11) = 0.078. The gradient adds the
 * two backward products of each: S = 3 S_f = 33, 6u sqrt(33) = 0.135.
 * Measured (NN_TEST_VERBOSE=1; amx_bf16 and avx512_bf16 alike): loss
 * 2.8e-6 to 8.3e-6, gradient 1.1e-3 to 1.5e-3. Both errors must also be
 * above 0: the bf16 context really rounded. */
START_TEST(bf16_against_fp32)
{
	const char *isa = fedrun_backend_cpu_bf16_isa();
	if (!isa) {
		printf("SKIP: gru-lm bf16 against fp32: %s\n", fedrun_error_message());
		return;
	}
	make_dir();
	write_random_corpus("train.txt", 60, 40, 13);
	struct fakehost fh;
	fakehost_init(&fh, 3);
#define MJ(prec)                                                                                   \
	"{\"embed\": 32, \"hidden\": 32, \"layers\": 2, \"dropout\": 0, \"bptt\": 4, "           \
	"\"eval_batch\": 4, \"precision\": \"" prec "\"}"
	const char *j32 = MJ("fp32"), *j16 = MJ("bf16");
#undef MJ
	void *m32 = create(&fh, j32, false, 1, NULL), *m16 = create(&fh, j16, false, 1, NULL);
	const struct fedrun_layout *l = ops()->layout(m32);
	ck_assert_uint_eq(ops()->layout(m16)->total, l->total);
	float *p = fedrun_arena_alloc(l->total), *g32 = fedrun_arena_alloc(l->total),
	      *g16 = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(ops()->init_params(m32, 11, p), 0);
	const double S_f = 2 * (1 + 4) + 1, S = 3 * S_f;
	for (int step = 0; step <= 3; step++) {
		double l32, l16;
		ck_assert_int_eq(ops()->loss_grad(m32, NULL, p, FEDRUN_SPLIT_TRAIN, 0, g32, &l32), 0);
		ck_assert_int_eq(ops()->loss_grad(m16, NULL, p, FEDRUN_SPLIT_TRAIN, 0, g16, &l16), 0);
		char what[64];
		snprintf(what, sizeof what, "%s, step %d", isa, step);
		tu_bf16_check(what, _i, l16, l32, g16, g32, l->total, S_f, S);
		for (uint64_t i = 0; i < l->total; i++)
			p[i] -= 1.0f * g32[i];
	}
	fedrun_arena_free(p);
	fedrun_arena_free(g32);
	fedrun_arena_free(g16);
	ops()->destroy(m32);
	ops()->destroy(m16);
	remove_dir();
}
END_TEST

/* Dropout masks are a function of (seed, round, client): the same call
 * gives the same bits, another round other bits. */
START_TEST(dropout_is_seeded)
{
	make_dir();
	write_random_corpus("train.txt", 60, 8, 2);
	struct fakehost fh;
	fakehost_init(&fh, 5);
	void *m = create(
	    &fh, "{\"embed\": 8, \"hidden\": 8, \"layers\": 2, \"dropout\": 0.3, \"bptt\": 5}",
	    false, 2, NULL);
	uint64_t n = ops()->layout(m)->total;
	float *p = fedrun_arena_alloc(n), *q[3];
	ops()->init_params(m, 1, p);
	struct fedrun_optim_cfg oc = sgd(0.3, 0.5);
	float *state = fedrun_arena_alloc(n);
	for (int k = 0; k < 3; k++) {
		q[k] = fedrun_arena_alloc(n);
		memcpy(q[k], p, n * sizeof(float));
		memset(state, 0, n * sizeof(float));
		uint64_t step = 0;
		struct fedrun_train_args a = {.size = sizeof a,
					      .round = k == 2 ? 2 : 1,
					      .client = 1,
					      .seed = 4,
					      .epochs = 2,
					      .batch = 3,
					      .optim = &oc,
					      .optim_state = state,
					      .optim_step = &step};
		struct fedrun_train_stats st;
		ck_assert_int_eq(ops()->train(m, NULL, &a, q[k], &st), 0);
		ck_assert(isfinite(st.loss) && st.loss > 0);
	}
	ck_assert_mem_eq(q[0], q[1], n * sizeof(float));
	ck_assert(memcmp(q[0], q[2], n * sizeof(float)) != 0);
	for (int k = 0; k < 3; k++)
		fedrun_arena_free(q[k]);
	fedrun_arena_free(p);
	fedrun_arena_free(state);
	ops()->destroy(m);
	remove_dir();
}
END_TEST

/* ---- learning a Markov chain --------------------------------------------- */

#define MC_WORDS 8
#define MC_EOS MC_WORDS /* state index of <eos> */

/* P[i][j]: from word i to (i + 1) mod 8 with 0.5, to (3i + 2) mod 8 with
 * 0.3 (never the same word: 2i = -1 mod 8 has no solution), to <eos> with
 * 0.2; from <eos> to w0..w3 with 0.25 each. */
static void mc_matrix(double P[MC_WORDS + 1][MC_WORDS + 1])
{
	memset(P, 0, sizeof(double) * (MC_WORDS + 1) * (MC_WORDS + 1));
	for (int i = 0; i < MC_WORDS; i++) {
		P[i][(i + 1) % MC_WORDS] += 0.5;
		P[i][(3 * i + 2) % MC_WORDS] += 0.3;
		P[i][MC_EOS] += 0.2;
	}
	for (int j = 0; j < 4; j++)
		P[MC_EOS][j] = 0.25;
}

/* Entropy rate sum_i pi_i H(P_i), pi the stationary distribution. */
static double mc_entropy_rate(double P[MC_WORDS + 1][MC_WORDS + 1])
{
	const int S = MC_WORDS + 1;
	double pi[MC_WORDS + 1], nx[MC_WORDS + 1];
	for (int i = 0; i < S; i++)
		pi[i] = 1.0 / S;
	for (int it = 0; it < 10000; it++) {
		memset(nx, 0, sizeof nx);
		for (int i = 0; i < S; i++)
			for (int j = 0; j < S; j++)
				nx[j] += pi[i] * P[i][j];
		memcpy(pi, nx, sizeof pi);
	}
	double h = 0;
	for (int i = 0; i < S; i++)
		for (int j = 0; j < S; j++)
			if (P[i][j] > 0)
				h -= pi[i] * P[i][j] * log(P[i][j]);
	return h;
}

static void mc_write(const char *name, double P[MC_WORDS + 1][MC_WORDS + 1], uint32_t sentences,
		     uint32_t seed)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, 0, 0);
	int state = MC_EOS;
	for (uint32_t s = 0; s < sentences;) {
		double u = fedrun_rng_uniform(&r), c = 0;
		int next = MC_EOS;
		for (int j = 0; j <= MC_WORDS; j++) {
			c += P[state][j];
			if (u < c) {
				next = j;
				break;
			}
		}
		if (next == MC_EOS) {
			fputc('\n', fp);
			s++;
		} else {
			fprintf(fp, "%sw%d", state == MC_EOS ? "" : " ", next);
		}
		state = next;
	}
	fclose(fp);
}

START_TEST(learns_markov_chain)
{
	double P[MC_WORDS + 1][MC_WORDS + 1];
	mc_matrix(P);
	const double best = exp(mc_entropy_rate(P));
	make_dir();
	mc_write("train.txt", P, 5000, 1);
	mc_write("valid.txt", P, 2000, 2);
	struct fakehost fh;
	fakehost_init(&fh, 1);
	void *m = create(&fh,
			 "{\"embed\": 16, \"hidden\": 16, \"dropout\": 0, \"bptt\": 10, "
			 "\"eval_batch\": 10}",
			 true, 1, NULL);
	uint64_t n = ops()->layout(m)->total;
	float *p = fedrun_arena_alloc(n), *state = fedrun_arena_alloc(n);
	ops()->init_params(m, 1, p);
	struct fedrun_eval ev;
	ck_assert_int_eq(ops()->evaluate(m, NULL, p, FEDRUN_SPLIT_VALID, FEDRUN_ALL_CLIENTS, &ev),
			 0);
	ck_assert_str_eq(ev.m[0].name, "loss");
	ck_assert_str_eq(ev.m[1].name, "ppl");
	double ppl0 = ev.m[1].value;
	ck_assert_double_eq_tol(ppl0, exp(ev.m[0].value), 1e-9 * ppl0);

	struct fedrun_optim_cfg oc = sgd(1.0, 0.5);
	oc.clip_norm = 1.0;
	uint64_t step = 0;
	struct fedrun_train_args a = {.size = sizeof a,
				      .round = 1,
				      .client = 0,
				      .seed = 1,
				      .epochs = 10,
				      .batch = 20,
				      .optim = &oc,
				      .optim_state = state,
				      .optim_step = &step};
	struct fedrun_train_stats st;
	void *w;
	ck_assert_int_eq(ops()->worker_create(m, &w), 0);
	ck_assert_int_eq(ops()->train(m, w, &a, p, &st), 0);
	ck_assert_int_eq(ops()->evaluate(m, w, p, FEDRUN_SPLIT_VALID, FEDRUN_ALL_CLIENTS, &ev), 0);
	double ppl = ev.m[1].value;
	if (getenv("NN_TEST_VERBOSE"))
		printf("markov chain: exp(H) = %.4f, perplexity %.4f before, %.4f after\n", best,
		       ppl0, ppl);
	ck_assert_msg(ppl < 1.05 * best, "perplexity %g, exp(H) = %g", ppl, best);
	ck_assert_msg(ppl > 0.97 * best, "perplexity %g below exp(H) = %g", ppl, best);
	/* The server's valid file is not any one client's. */
	ck_assert_int_eq(ops()->evaluate(m, w, p, FEDRUN_SPLIT_VALID, 0, &ev), FEDRUN_ENOENT);
	ck_assert_int_eq(ops()->evaluate(m, w, p, FEDRUN_SPLIT_TEST, FEDRUN_ALL_CLIENTS, &ev),
			 FEDRUN_ENOENT);
	ops()->worker_destroy(m, w);
	fedrun_arena_free(p);
	fedrun_arena_free(state);
	ops()->destroy(m);
	remove_dir();
}
END_TEST

static uint32_t two_threads(void *ctx)
{
	return 2;
}

/* The server's evaluation runs its row groups on the run's threads: the
 * same bits with 1 or 2 threads, and per client (always one thread). */
START_TEST(evaluation_groups)
{
	make_dir();
	write_random_corpus("train.txt", 300, 20, 5);
	struct fakehost fh;
	fakehost_init(&fh, 1);
	void *m = create(&fh, "{\"embed\": 12, \"hidden\": 12, \"eval_groups\": 3, \"eval_batch\": 7}",
			 false, 1, NULL);
	uint64_t n = ops()->layout(m)->total;
	float *p = fedrun_arena_alloc(n);
	ops()->init_params(m, 2, p);
	struct fedrun_eval one, two, client;
	ck_assert_int_eq(ops()->evaluate(m, NULL, p, FEDRUN_SPLIT_TRAIN, FEDRUN_ALL_CLIENTS, &one), 0);
	fh.host.threads = two_threads;
	ck_assert_int_eq(ops()->evaluate(m, NULL, p, FEDRUN_SPLIT_TRAIN, FEDRUN_ALL_CLIENTS, &two), 0);
	ck_assert_int_eq(ops()->evaluate(m, NULL, p, FEDRUN_SPLIT_TRAIN, 0, &client), 0);
	ck_assert_uint_eq(one.n, 3);
	for (uint32_t i = 0; i < one.n; i++) {
		ck_assert_str_eq(one.m[i].name, two.m[i].name);
		ck_assert_mem_eq(&one.m[i].value, &two.m[i].value, sizeof(double));
		ck_assert_mem_eq(&one.m[i].value, &client.m[i].value, sizeof(double));
	}
	/* loss_grad's loss is the same mean over the same groups. */
	double loss;
	ck_assert_int_eq(ops()->loss_grad(m, NULL, p, FEDRUN_SPLIT_TRAIN, 0, NULL, &loss), 0);
	ck_assert_double_eq_tol(loss, one.m[0].value, 1e-12);
	fedrun_arena_free(p);
	ops()->destroy(m);
	remove_dir();
}
END_TEST

/* ---- configuration -------------------------------------------------------- */

START_TEST(layout_names_and_presets)
{
	make_dir();
	write_random_corpus("train.txt", 20, 6, 3);
	struct fakehost fh;
	fakehost_init(&fh, 1);
	json_t *mc;
	void *m = create(&fh, "{\"embed\": 4, \"hidden\": 6, \"layers\": 2, \"tied\": false}",
			 false, 2, &mc);
	const struct fedrun_layout *l = ops()->layout(m);
	const char *want[] = {"embedding.weight", "gru.0.w_ih",	    "gru.0.w_hh",  "gru.0.b_ih",
			      "gru.0.b_hh",	  "gru.1.w_ih",	    "gru.1.w_hh",  "gru.1.b_ih",
			      "gru.1.b_hh",	  "decoder.weight", "decoder.bias"};
	ck_assert_uint_eq(l->n, sizeof want / sizeof want[0]);
	for (uint32_t i = 0; i < l->n; i++)
		ck_assert_str_eq(l->t[i].name, want[i]);
	uint32_t V = (uint32_t)l->t[0].shape[0];
	ck_assert_uint_eq(V, 8); /* w0..w5, <unk>, <eos> */
	ck_assert_uint_eq(l->t[1].shape[0], 18);
	ck_assert_uint_eq(l->t[1].shape[1], 4);
	ck_assert_uint_eq(l->t[5].shape[1], 6);
	ck_assert_uint_eq(l->t[9].shape[1], 6);
	ck_assert_uint_eq(l->t[10].numel, V);
	/* The preset's dropout was written back; the given sizes kept. */
	ck_assert_double_eq(json_real_value(json_object_get(mc, "dropout")), 0.2);
	ck_assert_int_eq(json_integer_value(json_object_get(mc, "embed")), 4);
	ck_assert_uint_eq(ops()->num_clients(m), 2);
	ck_assert(ops()->client_size(m, 0) > 0 && ops()->client_size(m, 1) > 0);
	json_decref(mc);
	ops()->destroy(m);

	m = create(&fh, "{\"preset\": \"medium\"}", false, 1, &mc);
	ck_assert_int_eq(json_integer_value(json_object_get(mc, "embed")), 650);
	ck_assert_int_eq(json_integer_value(json_object_get(mc, "hidden")), 650);
	ck_assert_double_eq(json_real_value(json_object_get(mc, "dropout")), 0.5);
	ck_assert(json_is_true(json_object_get(mc, "tied")));
	ck_assert_uint_eq(ops()->layout(m)->n, 6);
	json_decref(mc);
	ops()->destroy(m);
	remove_dir();
}
END_TEST

static int try_create(const char *model_json, const char *data_json, const char *needle)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	json_t *mc = json_loads(model_json, 0, NULL),
	       *dc = data_json ? json_loads(data_json, 0, NULL) : NULL;
	void *m = NULL;
	int rc = ops()->create(&fh.host, mc, dc, &m);
	if (rc == 0)
		ops()->destroy(m);
	else
		ck_assert_msg(strstr(fedrun_error_message(), needle), "message '%s' lacks '%s'",
			      fedrun_error_message(), needle);
	json_decref(mc);
	json_decref(dc);
	return rc;
}

START_TEST(refusals)
{
	make_dir();
	write_random_corpus("train.txt", 20, 6, 3);
	char data[256];
	snprintf(data, sizeof data,
		 "{\"train\": \"%s/train.txt\", \"partition\": {\"clients\": 2}}", dir);
	ck_assert_int_eq(try_create("{\"embed\": 4, \"hidden\": 6}", data, "must equal hidden"),
			 FEDRUN_ECONFIG);
	ck_assert_int_eq(try_create("{\"embed\": 4, \"hiden\": 6}", data, "hiden"), FEDRUN_ECONFIG);
	ck_assert_int_eq(try_create("{\"dropout\": 1}", data, "model.dropout"), FEDRUN_ECONFIG);
	ck_assert_int_eq(try_create("{\"preset\": \"huge\"}", data, "model.preset"),
			 FEDRUN_ECONFIG);
	ck_assert_int_eq(try_create("{\"layers\": 9}", data, "model.layers"), FEDRUN_ECONFIG);
	ck_assert_int_eq(try_create("{}", NULL, "data"), FEDRUN_ECONFIG);
	ck_assert_int_lt(try_create("{}",
				    "{\"train\": \"/nonexistent/x.txt\", \"partition\": "
				    "{\"clients\": 1}}",
				    "/nonexistent/x.txt"),
			 0);
	ck_assert_int_eq(try_create("{\"embed\": 4, \"hidden\": 4}", data, ""), 0);
	remove_dir();
}
END_TEST

static Suite *gru_lm_suite(void)
{
	Suite *s = suite_create("gru_lm");
	TCase *tc = tcase_create("model");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, gradient_tied);
	tcase_add_test(tc, gradient_untied);
	tcase_add_test(tc, train_step_is_loss_grad_step);
	tcase_add_test(tc, bf16_against_fp32);
	tcase_add_test(tc, dropout_is_seeded);
	tcase_add_test(tc, learns_markov_chain);
	tcase_add_test(tc, evaluation_groups);
	tcase_add_test(tc, layout_names_and_presets);
	tcase_add_test(tc, refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gru_lm_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
