/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gru_lm: training speed of the gru-lm plugin, in tokens per second,
 * called through its ops as the engine calls them (one backend context per
 * worker, BLAS on one thread, one client per worker thread), and the
 * machine's single-thread sgemm speed measured in the same run, to say what
 * fraction of it training reaches. bench/gru_lm.sh runs it beside PyTorch.
 *
 * Usage: bench/gru_lm [--workers N] [--windows N] [--vocab V] [--hidden H]
 *                     [--layers L] [--batch B] [--bptt T] [--dropout P]
 *                     [--backend NAME] [--precision fp32|bf16|tf32]
 * --precision is the model option "precision" (fedrun-models(7)): with
 * bf16 the backend context's matrix products take bf16 operands with FP32
 * sums (on the CPU through oneDNN; the plugin declares its parameters to
 * the backend as in a run); the line "bf16_isa X" then says which kernels
 * ran (fedrun_backend_cpu_bf16_isa(): amx_bf16 or avx512_bf16). The sgemm
 * ceiling printed is FP32's either way (bench/dnnl_gemm measures bf16's).
 * With --backend other than cpu (model.backend; e.g. cuda) each worker
 * trains all its windows in one train() call, as a client's round does, so
 * that parameters cross to the device and back once; the figure is that
 * call's tokens over its time, and the sgemm ceiling is not measured here
 * (bench/backend_gemm measures the device's).
 * (FEDRUN_PLUGIN_PATH must name the plugin directory, as for fedrun). The
 * text is random words (uniform over V - 2 types), so that the vocabulary
 * is exactly V; speed does not depend on what the words are. */
#include "config.h"
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "fedrun/fedrun.h"

static double now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

static void no_log(void *ctx, enum fedrun_log_level l, const char *fmt, ...)
{
}

static int no_metric(void *ctx, const char *name, int64_t client, const char *tensor, double v)
{
	return 0;
}

static uint32_t one(void *ctx)
{
	return 1;
}

static uint64_t seed(void *ctx)
{
	return 1;
}

struct cfg {
	uint32_t workers, windows, vocab, hidden, layers, batch, bptt;
	double dropout;
	const char *precision; /* the model option: fp32, bf16 or tf32 */
};

/* ---- sgemm: the machine's matrix-product speed ------------------------- */

struct gemm_job {
	int n, reps;
	double gflops;
};

/* Best of reps n x n x n products on this thread. */
static void *gemm_thread(void *p)
{
	struct gemm_job *j = p;
	const struct fedrun_backend_ops *be = fedrun_backend_cpu();
	uint64_t nn = (uint64_t)j->n * j->n;
	float *a = fedrun_arena_alloc(nn), *b = fedrun_arena_alloc(nn), *c = fedrun_arena_alloc(nn);
	for (uint64_t i = 0; a && b && i < nn; i++) {
		a[i] = (float)(i % 7) * 0.1f;
		b[i] = (float)(i % 5) * 0.1f;
	}
	j->gflops = 0;
	for (int r = 0; a && b && c && r < j->reps; r++) {
		double t0 = now();
		be->sgemm(NULL, false, false, j->n, j->n, j->n, 1.0f, a, j->n, b, j->n, 0.0f, c,
			  j->n);
		double g = 2.0 * j->n * (double)nn / (now() - t0) / 1e9;
		if (g > j->gflops)
			j->gflops = g;
	}
	fedrun_arena_free(a);
	fedrun_arena_free(b);
	fedrun_arena_free(c);
	return NULL;
}

/* Aggregate GFLOP/s of `threads` single-threaded sgemms running at once. */
static double sgemm_gflops(uint32_t threads)
{
	pthread_t t[64];
	struct gemm_job j[64];
	double sum = 0;
	for (uint32_t i = 0; i < threads; i++) {
		j[i] = (struct gemm_job){.n = 1024, .reps = 8};
		pthread_create(&t[i], NULL, gemm_thread, &j[i]);
	}
	for (uint32_t i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sum += j[i].gflops;
	}
	return sum;
}

/* ---- training ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct train_job {
	const struct fedrun_model_ops *ops;
	void *model;
	uint32_t client, windows, batch;
	uint64_t n;
	const float *init;
	bool one_call;	 /* all windows in one train() call (a device backend) */
	double secs;	 /* median time of one window (or of the one call) */
	uint64_t tokens; /* tokens of one window */
	int rc;
};

static void *train_thread(void *p)
{
	struct train_job *j = p;
#ifdef _OPENMP
	omp_set_num_threads(1);
#endif
	struct fedrun_optim_cfg oc = {
	    .kind = FEDRUN_OPTIM_SGD, .lr = 1.0, .momentum = 0.5, .clip_norm = 0.25};
	float *params = fedrun_arena_alloc(j->n), *state = fedrun_arena_alloc(j->n);
	void *w = NULL;
	if (!params || !state || (j->rc = j->ops->worker_create(j->model, &w)) < 0) {
		j->rc = j->rc ? j->rc : FEDRUN_ENOMEM;
		goto out;
	}
	memcpy(params, j->init, j->n * sizeof(float));
	uint64_t step = 0;
	struct fedrun_train_args a = {.size = sizeof a,
				      .round = 1,
				      .client = j->client,
				      .seed = 1,
				      .steps = 2,
				      .batch = j->batch,
				      .optim = &oc,
				      .optim_state = state,
				      .optim_step = &step};
	struct fedrun_train_stats st;
	/* Warm-up: buffers allocated, pages touched, caches filled. */
	if ((j->rc = j->ops->train(j->model, w, &a, params, &st)) < 0)
		goto out;
	/* Then one window per call, each timed: the median window is robust
	 * to other processes taking the core for a while, which a total over
	 * all windows is not (the development machine is shared). */
	double *dt = calloc(j->windows, sizeof *dt);
	if (!dt) {
		j->rc = FEDRUN_ENOMEM;
		goto out;
	}
	if (j->one_call) {
		/* On a device: every window in one call, as a client's round
		 * runs, so that the parameters cross to the device and back once
		 * and not once per window. */
		a.steps = j->windows;
		double t0 = now();
		j->rc = j->ops->train(j->model, w, &a, params, &st);
		j->secs = now() - t0;
		j->tokens = st.samples;
		free(dt);
		goto out;
	}
	a.steps = 1;
	for (uint32_t k = 0; k < j->windows && j->rc == 0; k++) {
		double t0 = now();
		j->rc = j->ops->train(j->model, w, &a, params, &st);
		dt[k] = now() - t0;
		j->tokens = st.samples;
	}
	qsort(dt, j->windows, sizeof *dt, cmp_double);
	j->secs = dt[j->windows / 2];
	free(dt);
out:
	if (w)
		j->ops->worker_destroy(j->model, w);
	fedrun_arena_free(params);
	fedrun_arena_free(state);
	return NULL;
}

/* Writes a corpus of random words w0 .. w{V-3}, enough for every worker's
 * client to have more than `windows` windows. */
static int write_corpus(const char *path, const struct cfg *c)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		return -1;
	uint64_t need = (uint64_t)c->workers * c->batch * c->bptt * (c->windows + 4) * 2;
	if (need < (uint64_t)c->vocab * 30)
		need = (uint64_t)c->vocab * 30; /* every type seen */
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1, FEDRUN_RNG_DATA, 0, 0);
	for (uint64_t t = 0; t < need;) {
		uint64_t len = 5 + fedrun_rng_below(&r, 25);
		for (uint64_t i = 0; i < len; i++)
			fprintf(fp, "%sw%llu", i ? " " : "",
				(unsigned long long)fedrun_rng_below(&r, c->vocab - 2));
		fputc('\n', fp);
		t += len + 1;
	}
	return fclose(fp);
}

/* Matrix-product FLOPs of one token, forward and backward: per GRU layer
 * 6H(I + H) forward (input and recurrent products) and twice that backward
 * (input and weight gradients of each); the decoder 2HV forward and 4HV
 * backward. Element-wise work (gates, softmax, optimizer) is not counted. */
static double flops_per_token(const struct cfg *c)
{
	double f = 0, H = c->hidden;
	for (uint32_t l = 0; l < c->layers; l++)
		f += 18.0 * H * (H + H); /* embed = hidden here */
	return f + 6.0 * H * c->vocab;
}

int main(int argc, char **argv)
{
	struct cfg c = {.workers = 1,
			.windows = 40,
			.vocab = 10000,
			.hidden = 300,
			.layers = 1,
			.batch = 20,
			.bptt = 35,
			.dropout = 0.2,
			.precision = "fp32"};
	static const struct option opts[] = {{"workers", required_argument, NULL, 'w'},
					     {"windows", required_argument, NULL, 'n'},
					     {"vocab", required_argument, NULL, 'v'},
					     {"hidden", required_argument, NULL, 'H'},
					     {"layers", required_argument, NULL, 'l'},
					     {"batch", required_argument, NULL, 'b'},
					     {"bptt", required_argument, NULL, 't'},
					     {"dropout", required_argument, NULL, 'd'},
					     {"backend", required_argument, NULL, 'B'},
					     {"precision", required_argument, NULL, 'P'},
					     {NULL, 0, NULL, 0}};
	const char *backend = "cpu";
	int o;
	while ((o = getopt_long(argc, argv, "w:n:v:H:l:b:t:d:", opts, NULL)) != -1) {
		switch (o) {
		case 'w':
			c.workers = (uint32_t)atoi(optarg);
			break;
		case 'n':
			c.windows = (uint32_t)atoi(optarg);
			break;
		case 'v':
			c.vocab = (uint32_t)atoi(optarg);
			break;
		case 'H':
			c.hidden = (uint32_t)atoi(optarg);
			break;
		case 'l':
			c.layers = (uint32_t)atoi(optarg);
			break;
		case 'b':
			c.batch = (uint32_t)atoi(optarg);
			break;
		case 't':
			c.bptt = (uint32_t)atoi(optarg);
			break;
		case 'd':
			c.dropout = atof(optarg);
			break;
		case 'B':
			backend = optarg;
			break;
		case 'P':
			if (strcmp(optarg, "fp32") && strcmp(optarg, "bf16") && strcmp(optarg, "tf32")) {
				fprintf(stderr, "gru_lm: --precision: expected fp32, bf16 or tf32, "
						"got '%s'\n",
					optarg);
				return 2;
			}
			c.precision = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: %s [--workers N] [--windows N] [--vocab V] [--hidden H] "
				"[--layers L] [--batch B] [--bptt T] [--dropout P] [--backend NAME] "
				"[--precision fp32|bf16|tf32]\n",
				argv[0]);
			return 2;
		}
	}
	if (c.workers < 1 || c.workers > 64 || c.vocab < 3 || c.windows < 1) {
		fprintf(stderr, "gru_lm: bad arguments\n");
		return 2;
	}
	/* The engine's layout: BLAS on one thread, parallelism from workers. */
	fedrun_backend_cpu_set_blas_threads(1);
	char dir[] = "/tmp/bench_gru_lm.XXXXXX", path[64];
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof path, "%s/train.txt", dir);
	if (write_corpus(path, &c) != 0) {
		fprintf(stderr, "gru_lm: cannot write %s\n", path);
		return 1;
	}
	struct fedrun_registry *reg;
	const struct fedrun_plugin *p;
	if (fedrun_registry_create(NULL, &reg) < 0 ||
	    fedrun_registry_find(reg, FEDRUN_KIND_MODEL, "gru-lm", NULL, &p, NULL) < 0) {
		fprintf(stderr, "gru_lm: %s\n", fedrun_error_message());
		return 1;
	}
	const struct fedrun_model_ops *ops = p->ops;
	struct fedrun_host host = {
	    .size = sizeof host, .log = no_log, .metric = no_metric, .threads = one, .seed = seed};
	json_t *mc = json_pack("{s:i, s:i, s:i, s:b, s:f, s:i, s:b}", "embed", (int)c.hidden,
			       "hidden", (int)c.hidden, "layers", (int)c.layers, "tied", 1,
			       "dropout", c.dropout, "bptt", (int)c.bptt, "speed_metric", 0);
	json_object_set_new(mc, "backend", json_string(backend));
	json_object_set_new(mc, "precision", json_string(c.precision));
	json_t *dc = json_pack("{s:s, s:{s:i}, s:{s:i}}", "train", path, "partition", "clients",
			       (int)c.workers, "vocab", "size", (int)c.vocab);
	void *model;
	if (ops->create(&host, mc, dc, &model) < 0) {
		fprintf(stderr, "gru_lm: %s\n", fedrun_error_message());
		return 1;
	}
	const struct fedrun_layout *l = ops->layout(model);
	float *init = fedrun_arena_alloc(l->total);
	ops->init_params(model, 1, init);

	struct train_job jobs[64];
	pthread_t tids[64];
	for (uint32_t i = 0; i < c.workers; i++) {
		jobs[i] = (struct train_job){.ops = ops,
					     .model = model,
					     .client = i,
					     .windows = c.windows,
					     .batch = c.batch,
					     .n = l->total,
					     .init = init,
					     .one_call = strcmp(backend, "cpu") != 0};
		pthread_create(&tids[i], NULL, train_thread, &jobs[i]);
	}
	double tps = 0;
	for (uint32_t i = 0; i < c.workers; i++) {
		pthread_join(tids[i], NULL);
		if (jobs[i].rc < 0) {
			fprintf(stderr, "gru_lm: training: %s\n", fedrun_error_message());
			return 1;
		}
		tps += (double)jobs[i].tokens / jobs[i].secs;
	}
	const double fpt = flops_per_token(&c);
	printf("gru-lm training: vocab %u, embed = hidden %u, %u layer(s), tied, batch %u, "
	       "bptt %u, dropout %g, %u worker(s), %u windows each, backend %s\n",
	       c.vocab, c.hidden, c.layers, c.batch, c.bptt, c.dropout, c.workers, c.windows,
	       backend);
	printf("precision %s\n", c.precision);
	if (strcmp(c.precision, "bf16") == 0 && strcmp(backend, "cpu") == 0) {
		const char *isa = fedrun_backend_cpu_bf16_isa();
		printf("bf16_isa %s\n", isa ? isa : "none");
	}
	printf("tokens_per_s %.1f\n", tps);
	printf("mflop_per_token %.3f\n", fpt / 1e6);
	printf("train_gflops %.2f\n", tps * fpt / 1e9);
	if (strcmp(backend, "cpu") == 0) {
		/* the CPU's own ceiling; a device's is bench/backend_gemm */
		double peak = sgemm_gflops(c.workers);
		printf("sgemm_gflops %.2f\n", peak);
		printf("fraction_of_sgemm %.3f\n", tps * fpt / 1e9 / peak);
	}
	ops->destroy(model);
	fedrun_arena_free(init);
	json_decref(mc);
	json_decref(dc);
	fedrun_registry_destroy(reg);
	unlink(path);
	rmdir(dir);
	return 0;
}
