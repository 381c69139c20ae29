/* SPDX-License-Identifier: Apache-2.0 */
/* bench/transformer: training and decoding speed of the transformer network
 * (plugins/models/transformer/net.c, beam.c) on random data, to be put
 * beside PyTorch's nn.Transformer doing the same work in the same run
 * (bench/transformer_torch.py; bench/transformer.sh runs both).
 *
 * Usage: bench/transformer [--mode train|greedy|beam|sgemm] [--workers W]
 *            [--threads T] [--steps N] [--warmup N] [--vocab V] [--dim D]
 *            [--layers L] [--heads H] [--ffn F] [--batch B] [--len T]
 *            [--dropout P] [--label-smoothing E] [--beam K] [--max-len N]
 *            [--sentences S] [--backend NAME] [--precision fp32|bf16|tf32]
 * Defaults: the "small" preset of issue 5 (vocabulary 8000, dim 256, 3+3
 * layers, 4 heads, ffn 1024, post-norm, one embedding matrix for source,
 * target and output), batches of 64 pairs of 20 source and 20 target
 * tokens, dropout 0.1 (also on the attention weights and the feed-forward
 * hidden units, as PyTorch's layers apply their one dropout), label
 * smoothing 0.1.
 *
 * Data (the same construction as the peer's): special ids pad 0, bos 2,
 * eos 3; a source sentence is len-1 words drawn uniformly from [4, vocab)
 * then eos; a target likewise, tgt_in = bos y1 .. y(len-1) and tgt_out =
 * y1 .. y(len-1) eos: B x len target tokens per batch, no padding.
 *
 * --mode train: W workers (threads), each training its own model as the
 * engine trains one client per worker: tfm_forward_backward with dropout
 * into a zero gradient, then fedrun_optim_step_zero with Adam (lr 5e-4,
 * betas 0.9 and 0.98, eps 1e-9), which also zeroes the gradient. With one
 * worker, its kernels run on T threads (the matrix products in blocks of
 * one OpenBLAS thread each, as in a run: the same bits on any T); with
 * more, on one thread each. 8 batches are generated and cycled. Each step is
 * timed; a worker's rate is B x len over its median step time (after
 * --warmup untimed steps), and the figure is the sum over the workers.
 * Prints "tokens_per_s X", "last_loss L" (label-smoothed, per token, of
 * worker 0's last step) and "mflop_per_token M" (the matrix-product work
 * of a training step per target token, see mflop_per_token()).
 *
 * --mode sgemm: prints "sgemm_gflops G", the best of 8 products 1024^3 on
 * one OpenBLAS thread; with a device backend, of 8 products 8192^3 there.
 *
 * --precision fp32|bf16|tf32 (the model option "precision",
 * fedrun-models(7); --mode train): the precision of the backend context's
 * matrix products (struct fedrun_backend_ctx_cfg.precision); the parameters
 * are declared to the backend (declare_params) as the model plugin declares
 * them, so that bf16 copies are made once per step. With bf16 on the CPU,
 * "bf16_isa X" says which kernels ran (fedrun_backend_cpu_bf16_isa():
 * amx_bf16 or avx512_bf16; DNNL_MAX_CPU_ISA caps it).
 *
 * --backend NAME (fedrun_backend_find: cpu, cuda): where the network runs.
 * Parameters, gradient and optimizer state are in the backend's memory and
 * the step is its optim_step; each timed step ends with a to_host of one
 * float, which waits for the device's queue.
 *
 * --mode greedy / beam: one model (tfm_init seed 1, untrained) on T
 * threads decodes --sentences random source sentences in batches of
 * --batch: tfm_encode, then tfm_greedy or tfm_beam_search (beam K, length
 * penalty 1) over tfm_decode_step. Every sentence decodes exactly
 * --max-len steps (max_len = N tokens, eos included): the step callback
 * sets eos's log-probability to -inf before the last step, and at the
 * last step the search allows only eos. The figure is sentences per
 * second from the median time of one batch (encoder included; every
 * batch of every repetition timed, after one untimed batch). Prints
 * "sentences_per_s X".
 *
 * OMP_WAIT_POLICY=passive is set (and the program re-executed) unless
 * OMP_WAIT_POLICY is set already, as bench/transformer_net does: spinning
 * OpenMP threads take the cores from OpenBLAS's. bench/transformer.sh runs
 * the peer under the same environment. */
#include "config.h"
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "fedrun/error.h"
#include "fedrun/optim.h"
#include "beam.h"
#include "net.h"

enum { MODE_TRAIN, MODE_GREEDY, MODE_BEAM, MODE_SGEMM };
enum { NBATCH = 8 };

struct opts {
	struct tfm_cfg c;
	int mode;
	unsigned workers, threads, steps, warmup, batch, len, beam, max_len, sentences;
	const struct fedrun_backend_ops *be; /* --backend: cpu by default */
	const char *backend;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A sentence of len tokens: len-1 words from [4, vocab), then eos. */
static void sentence(struct fedrun_rng *r, const struct tfm_cfg *c, unsigned len, int32_t *out)
{
	for (unsigned t = 0; t + 1 < len; t++)
		out[t] = 4 + (int32_t)fedrun_rng_below(r, c->vocab - 4);
	out[len - 1] = c->eos_id;
}

/* Matrix-product work of one training step per target token, in MFLOP:
 * 3 x the forward products (backward: one product for the input gradient
 * and one for the weight gradient of each forward product), counting
 * 2 m n k per (m,k)x(k,n) product. Per pair of Ts source and Tt target
 * tokens, D = dim, F = ffn, V = vocab: each encoder layer Ts (4 D^2 + 2 D F)
 * x 2 (q, k, v, out, fc1, fc2) plus 4 Ts^2 D (scores and weighted values);
 * each decoder layer Tt (6 D^2 + 2 D F) x 2 (self q, k, v, out; cross q,
 * out; fc1, fc2), Ts 2 D^2 x 2 (cross k, v of the memory), 4 Tt^2 D + 4 Tt Ts
 * D (self and cross attention; the causal mask is not used to skip work);
 * the output layer 2 Tt D V. Element-wise work is not counted. */
static double mflop_per_token(const struct opts *o)
{
	const double D = o->c.dim, F = o->c.ffn, V = o->c.vocab, Ts = o->len, Tt = o->len;
	double enc = o->c.enc_layers * (Ts * (4 * D * D + 2 * D * F) * 2 + 4 * Ts * Ts * D);
	double dec = o->c.dec_layers * (Tt * (6 * D * D + 2 * D * F) * 2 + Ts * 2 * D * D * 2 +
					4 * Tt * Tt * D + 4 * Tt * Ts * D);
	return 3 * (enc + dec + 2 * Tt * D * V) / Tt / 1e6;
}

/* On a device backend: best of 8 products 8192 x 8192 x 8192 (after one
 * untimed), each waited for, in GFLOP/s: the device's FP32 GEMM ceiling
 * (bench/backend_gemm measures more shapes). */
static int device_sgemm_gflops(const struct opts *o)
{
	const int n = 8192;
	const uint64_t nn = (uint64_t)n * n;
	const struct fedrun_backend_ops *be = o->be;
	void *ctx = NULL;
	float *h = fedrun_arena_alloc(nn), *a = NULL, *b = NULL, *c = NULL, probe;
	double best = 0.0;
	int rc = h ? be->ctx_create(NULL, &ctx) : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0)
		rc = be->alloc(ctx, nn * 4, (void **)&a);
	if (rc == 0)
		rc = be->alloc(ctx, nn * 4, (void **)&b);
	if (rc == 0)
		rc = be->alloc(ctx, nn * 4, (void **)&c);
	for (uint64_t i = 0; rc == 0 && i < nn; i++)
		h[i] = (float)(i % 7) * 0.1f;
	if (rc == 0)
		rc = be->to_device(ctx, a, h, nn * 4);
	if (rc == 0)
		rc = be->to_device(ctx, b, h, nn * 4);
	for (int r = 0; rc == 0 && r < 9; r++) {
		double t0 = now();
		rc = be->sgemm(ctx, false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
		if (rc == 0)
			rc = be->to_host(ctx, &probe, c, sizeof probe);
		double g = 2.0 * n * (double)nn / (now() - t0) / 1e9;
		if (r)
			best = g > best ? g : best;
	}
	if (rc == 0)
		printf("sgemm_gflops %.1f\n", best);
	if (ctx) {
		be->free_mem(ctx, a);
		be->free_mem(ctx, b);
		be->free_mem(ctx, c);
		be->ctx_destroy(ctx);
	}
	fedrun_arena_free(h);
	return rc;
}

/* Best of 8 products 1024 x 1024 x 1024 on one BLAS thread, in GFLOP/s:
 * the machine's sgemm speed on one core, for the fraction that training
 * reaches. */
static int device_sgemm_gflops(const struct opts *o);
static int sgemm_gflops(const struct opts *o)
{
	if (o->be != fedrun_backend_cpu())
		return device_sgemm_gflops(o);
	const int n = 1024;
	const uint64_t nn = (uint64_t)n * n;
	float *a = fedrun_arena_alloc(nn), *b = fedrun_arena_alloc(nn), *c = fedrun_arena_alloc(nn);
	double best = 0.0;
	if (!a || !b || !c) {
		fedrun_arena_free(a);
		fedrun_arena_free(b);
		fedrun_arena_free(c);
		return fedrun_error(FEDRUN_ENOMEM, "bench/transformer: out of memory");
	}
	for (uint64_t i = 0; i < nn; i++) {
		a[i] = (float)(i % 7) * 0.1f;
		b[i] = (float)(i % 5) * 0.1f;
	}
	fedrun_backend_cpu_set_blas_threads(1);
	struct fedrun_backend_ctx_cfg cc = {.size = sizeof cc, .threads = 1};
	void *ctx = NULL;
	if (fedrun_backend_cpu()->ctx_create(&cc, &ctx) < 0) {
		fedrun_arena_free(a);
		fedrun_arena_free(b);
		fedrun_arena_free(c);
		return -1;
	}
	for (int r = 0; r < 8; r++) {
		double t0 = now();
		fedrun_backend_cpu()->sgemm(ctx, false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
					    n);
		double g = 2.0 * n * (double)nn / (now() - t0) / 1e9;
		best = g > best ? g : best;
	}
	printf("sgemm_gflops %.1f\n", best);
	fedrun_backend_cpu()->ctx_destroy(ctx);
	fedrun_arena_free(a);
	fedrun_arena_free(b);
	fedrun_arena_free(c);
	return 0;
}

/* ---- training ---------------------------------------------------------- */

struct train_job {
	const struct opts *o;
	const struct fedrun_layout *l;
	const struct tfm_batch *batches;
	unsigned index, threads;
	double rate, loss;
	int rc;
	char err[256];
};

static void *train_thread(void *arg)
{
	struct train_job *j = arg;
	const struct opts *o = j->o;
	const uint64_t n = j->l->total;
	const struct fedrun_optim_cfg oc = {
	    .kind = FEDRUN_OPTIM_ADAM, .lr = 5e-4, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-9};
	const uint64_t ns = fedrun_optim_state_floats(&oc, n);
	float *p = fedrun_arena_alloc(n), *dp = NULL, *dg = NULL, *dst = NULL, probe;
	double *dt = malloc(sizeof(double) * o->steps);
	const struct fedrun_backend_ops *be = o->be;
	struct tfm_work *w = NULL;
	struct fedrun_backend_ctx_cfg cc = {
	    .size = sizeof cc, .threads = j->threads, .precision = o->c.precision};
	uint64_t step = 0;
	int rc = 0;
#ifdef _OPENMP
	omp_set_num_threads((int)j->threads);
#endif
	if (!p || !dt)
		rc = fedrun_error(FEDRUN_ENOMEM, "bench/transformer: out of memory");
	if (rc == 0)
		rc = tfm_init(&o->c, j->l, 1 + j->index, p);
	if (rc == 0)
		rc = tfm_work_create_cfg(&o->c, j->l, be, &cc, &w);
	/* parameters, gradient and Adam's moments in the backend's memory */
	void *ctx = w ? tfm_work_ctx(w) : NULL;
	if (rc == 0)
		rc = be->alloc(ctx, n * 4, (void **)&dp);
	if (rc == 0)
		rc = be->alloc(ctx, n * 4, (void **)&dg);
	if (rc == 0)
		rc = be->alloc(ctx, (ns ? ns : 1) * 4, (void **)&dst);
	if (rc == 0)
		rc = be->to_device(ctx, dp, p, n * 4);
	if (rc == 0 && FEDRUN_BACKEND_HAS(be, declare_params)) /* as the model plugin */
		rc = be->declare_params(ctx, dp, n);
	struct fedrun_rng drop;
	fedrun_rng_init(&drop, 1, FEDRUN_RNG_DROPOUT, 0, j->index);
	for (unsigned s = 0; rc == 0 && s < o->warmup + o->steps; s++) {
		const struct tfm_batch *b = &j->batches[s % NBATCH];
		double loss = 0.0;
		uint64_t ntok = 0;
		double t0 = now();
		rc = tfm_forward_backward(w, dp, b, &drop, dg, &loss, NULL, &ntok);
		if (rc == 0)
			rc = be->optim_step(ctx, &oc, oc.lr, n, dp, dg, dst, &step, true);
		/* waits for the step's work (a device queues it) */
		if (rc == 0)
			rc = be->to_host(ctx, &probe, dp, sizeof probe);
		double t1 = now();
		if (rc == 0 && s >= o->warmup)
			dt[s - o->warmup] = t1 - t0;
		j->loss = ntok ? loss / (double)ntok : 0.0;
	}
	if (rc == 0)
		j->rate = (double)o->batch * o->len / median(dt, o->steps);
	else
		snprintf(j->err, sizeof j->err, "%s", fedrun_error_message());
	j->rc = rc;
	if (ctx) {
		be->free_mem(ctx, dp);
		be->free_mem(ctx, dg);
		be->free_mem(ctx, dst);
	}
	tfm_work_destroy(w);
	fedrun_arena_free(p);
	free(dt);
	return NULL;
}

static int train(const struct opts *o)
{
	const unsigned B = o->batch, T = o->len;
	struct fedrun_layout *l = NULL;
	int rc = tfm_layout(&o->c, &l);
	if (rc < 0)
		return rc;
	int32_t *ids = malloc(sizeof(int32_t) * NBATCH * (3 * B * T + 2 * B));
	struct tfm_batch bt[NBATCH];
	if (!ids) {
		tfm_layout_free(l);
		return fedrun_error(FEDRUN_ENOMEM, "bench/transformer: out of memory");
	}
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1, FEDRUN_RNG_DATA, 0, 0);
	for (unsigned k = 0; k < NBATCH; k++) {
		int32_t *src = ids + (size_t)k * (3 * B * T + 2 * B), *ti = src + B * T;
		int32_t *to = ti + B * T, *sl = to + B * T, *tl = sl + B;
		for (unsigned b = 0; b < B; b++) {
			sentence(&r, &o->c, T, src + b * T);
			sentence(&r, &o->c, T, to + b * T);
			ti[b * T] = o->c.bos_id;
			memcpy(ti + b * T + 1, to + b * T, sizeof(int32_t) * (T - 1));
			sl[b] = tl[b] = (int32_t)T;
		}
		bt[k] = (struct tfm_batch){.B = B,
					   .Ts = T,
					   .Tt = T,
					   .src = src,
					   .src_len = sl,
					   .tgt_in = ti,
					   .tgt_out = to,
					   .tgt_len = tl};
	}
	const unsigned W = o->workers, th = W > 1 ? 1 : o->threads;
	fedrun_backend_cpu_set_blas_threads(1); /* as the engine sets it */
	struct train_job *jobs = calloc(W, sizeof *jobs);
	pthread_t *tids = calloc(W, sizeof *tids);
	if (!jobs || !tids)
		rc = fedrun_error(FEDRUN_ENOMEM, "bench/transformer: out of memory");
	unsigned started = 0;
	for (unsigned i = 0; rc == 0 && i < W; i++) {
		jobs[i] =
		    (struct train_job){.o = o, .l = l, .batches = bt, .index = i, .threads = th};
		if (pthread_create(&tids[i], NULL, train_thread, &jobs[i]))
			rc = fedrun_error(FEDRUN_EIO, "bench/transformer: cannot start a thread");
		else
			started++;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	double total = 0.0;
	for (unsigned i = 0; rc == 0 && i < W; i++) {
		if (jobs[i].rc < 0)
			rc = fedrun_error(jobs[i].rc, "worker %u: %s", i, jobs[i].err);
		total += jobs[i].rate;
	}
	if (rc == 0) {
		if (o->c.precision == FEDRUN_PRECISION_BF16 && o->be == fedrun_backend_cpu()) {
			const char *isa = fedrun_backend_cpu_bf16_isa();
			printf("bf16_isa %s\n", isa ? isa : "none");
		}
		printf("tokens_per_s %.1f\n", total);
		printf("last_loss %.3f\n", jobs[0].loss);
		printf("mflop_per_token %.3f\n", mflop_per_token(o));
	}
	free(jobs);
	free(tids);
	free(ids);
	tfm_layout_free(l);
	return rc;
}

/* ---- decoding ---------------------------------------------------------- */

struct step_ud {
	struct tfm_work *w;
	const float *p;
	uint32_t V, rows, last;
	int32_t eos;
};

/* tfm_decode_step, with eos forbidden before the last step (max_len - 1),
 * so that every sentence runs max_len steps. */
static int step(void *ud, uint32_t t, const int32_t *tokens, const int32_t *parent, float *logprobs)
{
	struct step_ud *u = ud;
	int rc = tfm_decode_step(u->w, u->p, t, tokens, parent, logprobs);
	if (rc == 0 && t < u->last)
		for (uint32_t r = 0; r < u->rows; r++)
			logprobs[(uint64_t)r * u->V + u->eos] = -INFINITY;
	return rc;
}

static int decode(const struct opts *o)
{
	const unsigned B = o->batch, T = o->len, K = o->mode == MODE_BEAM ? o->beam : 1;
	const unsigned nb = (o->sentences + B - 1) / B, N = o->max_len;
	struct fedrun_layout *l = NULL;
	struct tfm_work *w = NULL;
	float *p = NULL;
	int32_t *src = malloc(sizeof(int32_t) * nb * B * T), *sl = malloc(sizeof(int32_t) * B);
	uint32_t *ml = malloc(sizeof(uint32_t) * B);
	struct tfm_hyp *best = calloc(B, sizeof *best);
	const unsigned nt = nb * o->steps;
	double *dt = malloc(sizeof(double) * nt);
	int rc = 0;
	if (!src || !sl || !ml || !best || !dt)
		rc = fedrun_error(FEDRUN_ENOMEM, "bench/transformer: out of memory");
	if (rc == 0)
		rc = tfm_layout(&o->c, &l);
	if (rc == 0 && !(p = fedrun_arena_alloc(l->total)))
		rc = fedrun_error(FEDRUN_ENOMEM, "bench/transformer: out of memory");
	if (rc == 0)
		rc = tfm_init(&o->c, l, 1, p);
	struct fedrun_backend_ctx_cfg cc = {.size = sizeof cc, .threads = o->threads};
	fedrun_backend_cpu_set_blas_threads(o->threads);
#ifdef _OPENMP
	omp_set_num_threads((int)o->threads);
#endif
	if (rc == 0)
		rc = tfm_work_create_cfg(&o->c, l, o->be, &cc, &w);
	float *dp = NULL;
	if (rc == 0)
		rc = o->be->alloc(tfm_work_ctx(w), l->total * 4, (void **)&dp);
	if (rc == 0)
		rc = o->be->to_device(tfm_work_ctx(w), dp, p, l->total * 4);
	if (rc == 0) {
		struct fedrun_rng r;
		fedrun_rng_init(&r, 2, FEDRUN_RNG_DATA, 0, 0);
		for (unsigned s = 0; s < nb * B; s++)
			sentence(&r, &o->c, T, src + (size_t)s * T);
		for (unsigned b = 0; b < B; b++) {
			sl[b] = (int32_t)T;
			ml[b] = N;
		}
	}
	struct step_ud u = {
	    .w = w, .p = dp, .V = o->c.vocab, .rows = B * K, .last = N - 1, .eos = o->c.eos_id};
	const struct tfm_search_opts so = {.beam = K, .len_penalty = 1.0};
	/* run 0 is the untimed warm-up (batch 0), then every batch o->steps times */
	for (unsigned s = 0; rc == 0 && s <= nt; s++) {
		const int32_t *bsrc = src + (size_t)(s ? (s - 1) % nb : 0) * B * T;
		double t0 = now();
		rc = tfm_encode(w, dp, B, T, bsrc, sl, K, N);
		if (rc == 0)
			rc = K == 1 ? tfm_greedy(B, ml, o->c.vocab, o->c.bos_id, o->c.eos_id, step,
						 &u, best)
				    : tfm_beam_search(&so, B, ml, o->c.vocab, o->c.bos_id,
						      o->c.eos_id, step, &u, best);
		double t1 = now();
		for (unsigned b = 0; rc == 0 && b < B; b++)
			if (best[b].len != N || best[b].tokens[N - 1] != o->c.eos_id)
				rc = fedrun_error(FEDRUN_EINVAL,
						  "bench/transformer: sentence %u decoded %u "
						  "tokens, not %u",
						  b, best[b].len, N);
		tfm_hyp_free(best, B);
		if (s)
			dt[s - 1] = t1 - t0;
	}
	if (rc == 0)
		printf("sentences_per_s %.2f\n", B / median(dt, nt));
	if (dp)
		o->be->free_mem(tfm_work_ctx(w), dp);
	tfm_work_destroy(w);
	fedrun_arena_free(p);
	tfm_layout_free(l);
	free(src);
	free(sl);
	free(ml);
	free(best);
	free(dt);
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench/transformer [--mode train|greedy|beam|sgemm] [--workers W] "
			"[--threads T] [--steps N] [--warmup N] [--vocab V] [--dim D] [--layers L] "
			"[--heads H] [--ffn F] [--batch B] [--len T] [--dropout P] "
			"[--label-smoothing E] [--beam K] [--max-len N] [--sentences S] "
			"[--backend NAME] [--precision fp32|bf16|tf32]\n");
}

static int num(const char *name, const char *s, unsigned lo, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < lo || v > 1000000) {
		fprintf(stderr, "bench/transformer: --%s: expected an integer >= %u, got '%s'\n",
			name, lo, s);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	if (!getenv("OMP_WAIT_POLICY")) {
		setenv("OMP_WAIT_POLICY", "passive", 1);
		execv("/proc/self/exe", argv);
	}
	struct opts o = {.c = {.vocab = 8000,
			       .enc_layers = 3,
			       .dec_layers = 3,
			       .dim = 256,
			       .heads = 4,
			       .ffn = 1024,
			       .dropout = 0.1f,
			       .attn_dropout = 0.1f,
			       .relu_dropout = 0.1f,
			       .label_smoothing = 0.1f,
			       .tie = TFM_TIE_ALL,
			       .pre_norm = 0,
			       .pad_id = 0,
			       .bos_id = 2,
			       .eos_id = 3},
			 .mode = MODE_TRAIN,
			 .workers = 1,
			 .threads = 1,
			 .steps = 20,
			 .warmup = 3,
			 .batch = 64,
			 .len = 20,
			 .beam = 4,
			 .max_len = 30,
			 .sentences = 256,
			 .backend = "cpu"};
	static const struct option lo[] = {
	    {"mode", 1, 0, 'm'},    {"workers", 1, 0, 'W'},	    {"threads", 1, 0, 'j'},
	    {"steps", 1, 0, 's'},   {"warmup", 1, 0, 'w'},	    {"vocab", 1, 0, 'v'},
	    {"dim", 1, 0, 'd'},	    {"layers", 1, 0, 'l'},	    {"heads", 1, 0, 'h'},
	    {"ffn", 1, 0, 'f'},	    {"batch", 1, 0, 'b'},	    {"len", 1, 0, 't'},
	    {"dropout", 1, 0, 'p'}, {"label-smoothing", 1, 0, 'e'}, {"beam", 1, 0, 'k'},
	    {"max-len", 1, 0, 'n'}, {"sentences", 1, 0, 'S'},	    {"backend", 1, 0, 'B'},
	    {"precision", 1, 0, 'P'}, {0, 0, 0, 0}};
	int ch, bad = 0;
	unsigned u;
	while (!bad && (ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'm':
			if (!strcmp(optarg, "train"))
				o.mode = MODE_TRAIN;
			else if (!strcmp(optarg, "greedy"))
				o.mode = MODE_GREEDY;
			else if (!strcmp(optarg, "beam"))
				o.mode = MODE_BEAM;
			else if (!strcmp(optarg, "sgemm"))
				o.mode = MODE_SGEMM;
			else {
				fprintf(stderr,
					"bench/transformer: --mode: expected train, greedy, "
					"beam or sgemm, got '%s'\n",
					optarg);
				bad = 1;
			}
			break;
		case 'W':
			bad = num("workers", optarg, 1, &o.workers) < 0;
			break;
		case 'j':
			bad = num("threads", optarg, 1, &o.threads) < 0;
			break;
		case 's':
			bad = num("steps", optarg, 1, &o.steps) < 0;
			break;
		case 'w':
			bad = num("warmup", optarg, 0, &o.warmup) < 0;
			break;
		case 'v':
			bad = num("vocab", optarg, 5, &o.c.vocab) < 0;
			break;
		case 'd':
			bad = num("dim", optarg, 1, &o.c.dim) < 0;
			break;
		case 'l':
			bad = num("layers", optarg, 1, &u) < 0;
			o.c.enc_layers = o.c.dec_layers = u;
			break;
		case 'h':
			bad = num("heads", optarg, 1, &o.c.heads) < 0;
			break;
		case 'f':
			bad = num("ffn", optarg, 1, &o.c.ffn) < 0;
			break;
		case 'b':
			bad = num("batch", optarg, 1, &o.batch) < 0;
			break;
		case 't':
			bad = num("len", optarg, 2, &o.len) < 0;
			break;
		case 'k':
			bad = num("beam", optarg, 1, &o.beam) < 0;
			break;
		case 'n':
			bad = num("max-len", optarg, 2, &o.max_len) < 0;
			break;
		case 'S':
			bad = num("sentences", optarg, 1, &o.sentences) < 0;
			break;
		case 'B':
			o.backend = optarg;
			break;
		case 'P':
			if (!strcmp(optarg, "fp32"))
				o.c.precision = FEDRUN_PRECISION_FP32;
			else if (!strcmp(optarg, "bf16"))
				o.c.precision = FEDRUN_PRECISION_BF16;
			else if (!strcmp(optarg, "tf32"))
				o.c.precision = FEDRUN_PRECISION_TF32;
			else {
				fprintf(stderr, "bench/transformer: --precision: expected fp32, bf16 "
						"or tf32, got '%s'\n",
					optarg);
				bad = 1;
			}
			break;
		case 'p':
		case 'e': {
			char *end;
			float v = strtof(optarg, &end);
			if (*optarg == '\0' || *end != '\0' || !(v >= 0.0f && v < 1.0f)) {
				fprintf(stderr,
					"bench/transformer: --%s: expected a number in "
					"[0, 1), got '%s'\n",
					ch == 'p' ? "dropout" : "label-smoothing", optarg);
				bad = 1;
			} else if (ch == 'p')
				o.c.dropout = o.c.attn_dropout = o.c.relu_dropout = v;
			else
				o.c.label_smoothing = v;
			break;
		}
		default:
			bad = 1;
		}
	}
	if (bad || optind < argc) {
		usage();
		return 2;
	}
	if (fedrun_backend_find(o.backend, &o.be) < 0) {
		fprintf(stderr, "bench/transformer: --backend %s: %s\n", o.backend,
			fedrun_error_message());
		return 1;
	}
	int rc = o.mode == MODE_TRAIN	? train(&o)
		 : o.mode == MODE_SGEMM ? sgemm_gflops(&o)
					: decode(&o);
	if (rc < 0) {
		fprintf(stderr, "bench/transformer: %s\n", fedrun_error_message());
		return 1;
	}
	return 0;
}
