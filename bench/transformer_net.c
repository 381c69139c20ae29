/* bench/transformer_net: training speed of the Transformer network alone
 * (plugins/models/transformer/net.c), in target tokens per second: one
 * forward and backward pass per batch (tfm_forward_backward, gradients
 * into a zeroed arena; no optimizer step), on random token sequences, so
 * that the figure can be put beside PyTorch's nn.Transformer doing the
 * same work.
 *
 * Usage: bench/transformer_net [--vocab V] [--dim D] [--layers L] [--heads H]
 *            [--ffn F] [--batch B] [--len T] [--steps N] [--warmup N]
 *            [--threads N] [--dropout P] [--pre-norm] [--tie all|decoder|none]
 *            [--ew-threads N] [--no-tune] [--decode K]
 * Defaults: the "small" preset of the issue (vocabulary 8000, dim 256, 3+3
 * layers, 4 heads, ffn 1024, batches of 64 pairs of 20 source and 20
 * target tokens, dropout 0.1, label smoothing 0.1, tie all), BLAS and
 * OpenMP threads = --threads (default 2; --ew-threads sets the element-wise
 * kernels' threads apart).
 * Prints one line "transformer_net: X target tokens/s ..." (the median of
 * the per-step rates, and the mean).
 *
 * --decode K measures decoding instead: tfm_encode of --batch sentences of
 * --len tokens, then --len steps of tfm_decode_step on batch x K rows
 * (argmax token per row; with K > 1 every step also reorders the cache,
 * each row taking the next row of its sentence as parent, as a beam
 * search would), and prints the sentences per second (median over
 * --steps repetitions). No early stop: every sentence runs --len steps.
 *
 * Two process-wide settings matter as much as the code, and both are read
 * when the libraries load, so the program sets them and re-executes
 * itself unless they are set already (or --no-tune is given):
 *   - OMP_WAIT_POLICY=passive: otherwise the OpenMP threads of the
 *     element-wise kernels spin after each parallel region and take the
 *     cores from OpenBLAS's threads (measured: 2 threads 2600 -> 5600
 *     tokens/s);
 *   - OPENBLAS_CORETYPE=SkylakeX when the CPU has AVX-512 (F, BW, DQ, VL):
 *     OpenBLAS 0.3.21 does not know recent AMD cores and falls back to its
 *     Haswell kernels, at half the sgemm speed.
 * The line printed says which settings were in force; a comparison with
 * PyTorch must run it under the same environment. */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "fedrun/error.h"
#include "net.h"

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

static void usage(void)
{
	fprintf(stderr, "usage: bench/transformer_net [--vocab V] [--dim D] [--layers L] "
			"[--heads H] [--ffn F] [--batch B] [--len T] [--steps N] [--warmup N] "
			"[--threads N] [--dropout P] [--pre-norm] [--tie all|decoder|none] "
			"[--ew-threads N] [--no-tune] [--decode K]\n");
}

/* Decoding speed (see --decode at the top). */
static int bench_decode(struct tfm_work *w, const float *p, const struct tfm_cfg *c, unsigned B,
			unsigned T, const int32_t *src, const int32_t *sl, unsigned beam,
			unsigned reps, unsigned warmup, unsigned threads)
{
	const unsigned R = B * beam;
	float *lp = malloc(sizeof(float) * R * c->vocab);
	int32_t *tok = malloc(sizeof(int32_t) * R), *par = malloc(sizeof(int32_t) * R);
	double *rate = malloc(sizeof(double) * reps);
	if (!lp || !tok || !par || !rate)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (unsigned r = 0; r < R; r++)
		par[r] = (int32_t)(r / beam * beam + (r + 1) % beam);
	int rc = 0;
	for (unsigned s = 0; s < warmup + reps && rc == 0; s++) {
		double t0 = now();
		rc = tfm_encode(w, p, B, T, src, sl, beam, T);
		for (unsigned r = 0; r < R; r++)
			tok[r] = c->bos_id;
		for (unsigned t = 0; t < T && rc == 0; t++) {
			rc = tfm_decode_step(w, p, t, tok, t && beam > 1 ? par : NULL, lp);
			for (unsigned r = 0; r < R && rc == 0; r++) {
				const float *l = lp + (uint64_t)r * c->vocab;
				float m = l[0];
#pragma omp simd reduction(max : m)
				for (uint32_t j = 1; j < c->vocab; j++)
					m = l[j] > m ? l[j] : m;
				uint32_t best = 0;
				while (best + 1 < c->vocab && l[best] != m)
					best++;
				tok[r] = (int32_t)best;
			}
		}
		if (s >= warmup)
			rate[s - warmup] = B / (now() - t0);
	}
	if (rc == 0) {
		qsort(rate, reps, sizeof *rate, cmp_double);
		printf("transformer_net: %.1f sentences/s decoding (median of %u runs; beam %u, "
		       "%u sentences x %u source tokens, %u steps each; vocab %u, dim %u, layers "
		       "%u+%u, heads %u, ffn %u, threads %u, OMP_WAIT_POLICY=%s, "
		       "OPENBLAS_CORETYPE=%s)\n",
		       rate[reps / 2], reps, beam, B, T, T, c->vocab, c->dim, c->enc_layers,
		       c->dec_layers, c->heads, c->ffn, threads,
		       getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "(unset)",
		       getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
	}
	free(lp);
	free(tok);
	free(par);
	free(rate);
	return rc;
}

static int has_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
	return 0;
#endif
}

/* Sets the environment described at the top and re-executes; returns only
 * when nothing was changed or exec failed. */
static void tune(char **argv)
{
	int changed = 0;
	if (!getenv("OMP_WAIT_POLICY")) {
		setenv("OMP_WAIT_POLICY", "passive", 1);
		changed = 1;
	}
	if (!getenv("OPENBLAS_CORETYPE") && has_avx512()) {
		setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
		changed = 1;
	}
	if (changed)
		execv("/proc/self/exe", argv);
}

int main(int argc, char **argv)
{
	int no_tune = 0;
	for (int i = 1; i < argc; i++)
		no_tune |= !strcmp(argv[i], "--no-tune");
	if (!no_tune)
		tune(argv);
	struct tfm_cfg c = {.vocab = 8000,
			    .enc_layers = 3,
			    .dec_layers = 3,
			    .dim = 256,
			    .heads = 4,
			    .ffn = 1024,
			    .dropout = 0.1f,
			    .label_smoothing = 0.1f,
			    .tie = TFM_TIE_ALL,
			    .pre_norm = 0,
			    .pad_id = 0,
			    .bos_id = 2,
			    .eos_id = 3};
	unsigned B = 64, T = 20, steps = 10, warmup = 2, threads = 2, ew_threads = 0, beam = 0;
	static const struct option opts[] = {{"vocab", 1, 0, 'v'},
					     {"dim", 1, 0, 'd'},
					     {"layers", 1, 0, 'l'},
					     {"heads", 1, 0, 'h'},
					     {"ffn", 1, 0, 'f'},
					     {"batch", 1, 0, 'b'},
					     {"len", 1, 0, 't'},
					     {"steps", 1, 0, 's'},
					     {"warmup", 1, 0, 'w'},
					     {"threads", 1, 0, 'j'},
					     {"dropout", 1, 0, 'p'},
					     {"pre-norm", 0, 0, 'n'},
					     {"tie", 1, 0, 'y'},
					     {"no-tune", 0, 0, 'u'},
					     {"ew-threads", 1, 0, 'e'},
					     {"decode", 1, 0, 'k'},
					     {0, 0, 0, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'v':
			c.vocab = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			c.dim = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'l':
			c.enc_layers = c.dec_layers = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'h':
			c.heads = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'f':
			c.ffn = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			B = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			T = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 's':
			steps = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			warmup = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'j':
			threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'p':
			c.dropout = strtof(optarg, NULL);
			break;
		case 'n':
			c.pre_norm = 1;
			break;
		case 'u':
			break;
		case 'k':
			beam = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'e':
			ew_threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'y':
			c.tie = !strcmp(optarg, "none")	     ? TFM_TIE_NONE
				: !strcmp(optarg, "decoder") ? TFM_TIE_DECODER
							     : TFM_TIE_ALL;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!B || T < 2 || !steps || !threads || c.vocab < 5) {
		usage();
		return 2;
	}
	fedrun_backend_cpu_set_blas_threads(threads);
#ifdef _OPENMP
	omp_set_num_threads((int)threads);
#endif
	struct fedrun_layout *l = NULL;
	struct tfm_work *w = NULL;
	int rc = tfm_layout(&c, &l);
	float *p = rc == 0 ? fedrun_arena_alloc(l->total) : NULL;
	float *g = rc == 0 ? fedrun_arena_alloc(l->total) : NULL;
	if (rc == 0 && (!p || !g))
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0)
		rc = tfm_init(&c, l, 1, p);
	struct fedrun_backend_ctx_cfg cc = {.size = sizeof cc,
					    .threads = ew_threads ? ew_threads : threads};
	if (rc == 0)
		rc = tfm_work_create_cfg(&c, l, fedrun_backend_cpu(), &cc, &w);
	if (rc < 0) {
		fprintf(stderr, "bench/transformer_net: %s\n", fedrun_error_message());
		return 1;
	}
	/* random pairs of exactly T tokens each side: src y1..yT; tgt_in
	 * bos y1..y(T-1), tgt_out y1..y(T-1) eos */
	int32_t *src = malloc(sizeof(int32_t) * B * T), *ti = malloc(sizeof(int32_t) * B * T);
	int32_t *to = malloc(sizeof(int32_t) * B * T), *sl = malloc(sizeof(int32_t) * B);
	int32_t *tl = malloc(sizeof(int32_t) * B);
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1, FEDRUN_RNG_DATA, 0, 0);
	for (unsigned b = 0; b < B; b++) {
		sl[b] = tl[b] = (int32_t)T;
		for (unsigned t = 0; t < T; t++) {
			src[b * T + t] = 4 + (int32_t)fedrun_rng_below(&r, c.vocab - 4);
			to[b * T + t] =
			    t + 1 < T ? 4 + (int32_t)fedrun_rng_below(&r, c.vocab - 4) : c.eos_id;
			ti[b * T + t] = t ? to[b * T + t - 1] : c.bos_id;
		}
	}
	if (beam) {
		rc = bench_decode(w, p, &c, B, T, src, sl, beam, steps, warmup, threads);
		if (rc < 0)
			fprintf(stderr, "bench/transformer_net: %s\n", fedrun_error_message());
		steps = 0;
	}
	struct tfm_batch batch = {.B = B,
				  .Ts = T,
				  .Tt = T,
				  .src = src,
				  .src_len = sl,
				  .tgt_in = ti,
				  .tgt_out = to,
				  .tgt_len = tl};
	double *rate = malloc(sizeof(double) * (steps ? steps : 1)), total = 0.0, loss = 0.0;
	uint64_t ntok = 0;
	struct fedrun_rng drop;
	fedrun_rng_init(&drop, 1, FEDRUN_RNG_DROPOUT, 0, 0);
	for (unsigned s = 0; steps && s < warmup + steps && rc == 0; s++) {
		double t0 = now();
		memset(g, 0, l->total * sizeof *g);
		rc = tfm_forward_backward(w, p, &batch, &drop, g, &loss, NULL, &ntok);
		double dt = now() - t0;
		if (s >= warmup) {
			rate[s - warmup] = (double)ntok / dt;
			total += dt;
		}
	}
	if (rc < 0 && !beam)
		fprintf(stderr, "bench/transformer_net: %s\n", fedrun_error_message());
	if (rc == 0 && steps) {
		qsort(rate, steps, sizeof *rate, cmp_double);
		printf("transformer_net: %.0f target tokens/s (median of %u steps; mean %.0f; "
		       "vocab %u, dim %u, layers %u+%u, heads %u, ffn %u, batch %u x %u+%u, "
		       "%s-norm, dropout %g, threads %u, OMP_WAIT_POLICY=%s, OPENBLAS_CORETYPE=%s; "
		       "last loss %.3f)\n",
		       rate[steps / 2], steps, (double)ntok * steps / total, c.vocab, c.dim,
		       c.enc_layers, c.dec_layers, c.heads, c.ffn, B, T, T,
		       c.pre_norm ? "pre" : "post", (double)c.dropout, threads,
		       getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "(unset)",
		       getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)",
		       loss / (double)ntok);
	}
	free(rate);
	free(src);
	free(ti);
	free(to);
	free(sl);
	free(tl);
	tfm_work_destroy(w);
	fedrun_arena_free(p);
	fedrun_arena_free(g);
	tfm_layout_free(l);
	return rc < 0;
}
