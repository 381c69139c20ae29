/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the aggregator plugins (fedatt, fedopt, fednova, median, trimmed_mean,
 * krum, meritfed), each loaded from its .so and driven through its ops with a
 * fake host; every result is checked against a direct computation written
 * here, in double, independently of the plugins' code. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "fedrun/fedrun.h"

#ifndef TOP_BUILDDIR
#define TOP_BUILDDIR "."
#endif

#define MAXC 16 /* clients in a test world */

/* ---- the fake host ------------------------------------------------------ */

struct metric_rec {
	char name[32];
	int64_t client;
	char tensor[FEDRUN_NAME_MAX];
	double value;
};

static struct {
	struct metric_rec *m;
	size_t n, cap;
	/* The target's loss for meritfed: f(x) = Σ_tensors ||x − a||². */
	const struct fedrun_layout *layout;
	const float *a;
	int calls, grad_calls;
	int64_t client;
	enum fedrun_split split;
	int fail_with; /* loss_grad returns this when not 0 */
} fake;

static void fake_log(void *ctx, enum fedrun_log_level level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

static int fake_error(void *ctx, int code, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	(void)ctx;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return fedrun_error(code, "%s", buf);
}

static int fake_metric(void *ctx, const char *name, int64_t client, const char *tensor,
		       double value)
{
	(void)ctx;
	if (fake.n == fake.cap) {
		fake.cap = fake.cap ? 2 * fake.cap : 256;
		fake.m = realloc(fake.m, fake.cap * sizeof *fake.m);
		ck_assert_ptr_nonnull(fake.m);
	}
	struct metric_rec *r = &fake.m[fake.n++];
	snprintf(r->name, sizeof r->name, "%s", name);
	r->client = client;
	snprintf(r->tensor, sizeof r->tensor, "%s", tensor ? tensor : "");
	r->value = value;
	return 0;
}

static int fake_loss_grad(void *ctx, int64_t client, enum fedrun_split split, const float *params,
			  float *grad, double *loss)
{
	(void)ctx;
	if (fake.fail_with)
		return fedrun_error(fake.fail_with, "fake: no such split");
	fake.calls++;
	fake.grad_calls += grad != NULL;
	fake.client = client;
	fake.split = split;
	const struct fedrun_layout *l = fake.layout;
	double s = 0;
	if (grad)
		memset(grad, 0, l->total * sizeof *grad);
	for (uint32_t i = 0; i < l->n; i++)
		for (uint64_t e = l->t[i].offset; e < l->t[i].offset + l->t[i].numel; e++) {
			double d = (double)params[e] - fake.a[e];
			s += d * d;
			if (grad)
				grad[e] = (float)(2 * d);
		}
	*loss = s;
	return 0;
}

static uint32_t fake_threads(void *ctx)
{
	(void)ctx;
	return 1;
}

static uint64_t fake_seed(void *ctx)
{
	(void)ctx;
	return 42;
}

static struct fedrun_host host = {
    .size = sizeof(struct fedrun_host),
    .abi_minor = FEDRUN_ABI_MINOR,
    .ctx = NULL,
    .log = fake_log,
    .error = fake_error,
    .metric = fake_metric,
    .loss_grad = fake_loss_grad,
    .threads = fake_threads,
    .seed = fake_seed,
};

/* The value of metric `name` for (client, tensor); NAN when absent. */
static double metric(const char *name, int64_t client, const char *tensor)
{
	for (size_t i = 0; i < fake.n; i++)
		if (strcmp(fake.m[i].name, name) == 0 && fake.m[i].client == client &&
		    strcmp(fake.m[i].tensor, tensor ? tensor : "") == 0)
			return fake.m[i].value;
	return NAN;
}

static size_t metric_count(const char *name)
{
	size_t c = 0;
	for (size_t i = 0; i < fake.n; i++)
		c += strcmp(fake.m[i].name, name) == 0;
	return c;
}

static void metrics_clear(void)
{
	fake.n = 0;
}

/* ---- loading ------------------------------------------------------------ */

static struct fedrun_registry *reg;

static void setup(void)
{
	memset(&fake, 0, sizeof fake);
	ck_assert_int_eq(fedrun_registry_create(NULL, &reg), 0);
}

static void teardown(void)
{
	fedrun_registry_destroy(reg);
	free(fake.m);
	memset(&fake, 0, sizeof fake);
}

/* Plugin `index` of plugins/FILE.so, which must be called `name`. */
static const struct fedrun_aggregator_ops *load_from(const char *file, uint32_t index,
						     const char *name)
{
	char path[4096];
	const char *top = getenv("top_builddir");
	snprintf(path, sizeof path, "%s/plugins/.libs/%s.so", top ? top : TOP_BUILDDIR, file);
	const struct fedrun_plugin *const *p;
	uint32_t n;
	int rc = fedrun_registry_open(reg, path, &p, &n);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	ck_assert_uint_gt(n, index); /* fedavg.so also holds fedprox */
	ck_assert_str_eq(p[index]->name, name);
	ck_assert_uint_eq(p[index]->kind, FEDRUN_KIND_AGGREGATOR);
	const struct fedrun_aggregator_ops *ops = p[index]->ops;
	ck_assert_uint_ge(ops->size, sizeof *ops);
	return ops;
}

static const struct fedrun_aggregator_ops *load(const char *name)
{
	return load_from(name, 0, name);
}

static void *create(const struct fedrun_aggregator_ops *ops, const char *config,
		    const struct fedrun_layout *l)
{
	json_error_t jerr;
	json_t *c = json_loads(config, 0, &jerr);
	ck_assert_msg(c != NULL, "bad test JSON %s: %s", config, jerr.text);
	void *st = NULL;
	int rc = ops->create(&host, c, l, &st);
	ck_assert_msg(rc == 0, "create(%s): %s", config, fedrun_error_message());
	json_decref(c);
	return st;
}

/* create() must refuse `config` with FEDRUN_ECONFIG and a message naming
 * "aggregator.<key>". */
static void refuse(const struct fedrun_aggregator_ops *ops, const char *config, const char *key,
		   const struct fedrun_layout *l)
{
	json_t *c = json_loads(config, 0, NULL);
	ck_assert_ptr_nonnull(c);
	void *st = NULL;
	fedrun_error_clear();
	int rc = ops->create(&host, c, l, &st);
	json_decref(c);
	ck_assert_msg(rc == FEDRUN_ECONFIG, "%s: got %d (%s)", config, rc, fedrun_error_message());
	char want[64];
	snprintf(want, sizeof want, "aggregator.%s", key);
	ck_assert_msg(strstr(fedrun_error_message(), want), "%s: message '%s' does not name %s",
		      config, fedrun_error_message(), want);
}

/* ---- test worlds: a layout, θ and n clients' updates --------------------- */

struct world {
	struct fedrun_layout l;
	uint32_t n;
	float *theta;
	float *delta[MAXC];
	const float *tp[MAXC][8];
	struct fedrun_update u[MAXC];
	struct fedrun_round_info round;
	uint64_t rng;
};

static void add(struct world *w, const char *name, uint32_t ndim, uint64_t d0, uint64_t d1,
		uint64_t d2)
{
	uint64_t shape[3] = {d0, d1, d2};
	ck_assert_int_eq(fedrun_layout_add(&w->l, name, ndim, shape), 0);
}

/* xorshift64*: the test's own numbers, uniform in (-1, 1). */
static double rnd(struct world *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	uint64_t x = w->rng * UINT64_C(2685821657736338717);
	return ((double)(x >> 11) + 0.5) * 0x1.0p-52 - 1.0;
}

/* After the tensors are added: arenas for θ and n updates, every tensor
 * sent, n_k = 10 (k + 1). */
static void world_init(struct world *w, uint32_t n)
{
	ck_assert_uint_le(n, MAXC);
	ck_assert_uint_le(w->l.n, 8); /* tp has 8 columns */
	w->n = n;
	w->theta = fedrun_arena_alloc(w->l.total);
	for (uint32_t k = 0; k < n; k++) {
		w->delta[k] = fedrun_arena_alloc(w->l.total);
		for (uint32_t i = 0; i < w->l.n; i++)
			w->tp[k][i] = w->delta[k] + w->l.t[i].offset;
		w->u[k] = (struct fedrun_update){
		    .client = k, .n_samples = 10 * (k + 1), .train_loss = 1.0, .tensor = w->tp[k]};
	}
	w->round = (struct fedrun_round_info){.size = sizeof w->round, .round = 1, .rounds = 10,
					      .num_clients = 2 * MAXC, .seed = 7, .layout = &w->l};
	if (!w->rng)
		w->rng = 88172645463325252ull;
}

static void world_fini(struct world *w)
{
	fedrun_arena_free(w->theta);
	for (uint32_t k = 0; k < w->n; k++)
		fedrun_arena_free(w->delta[k]);
	fedrun_layout_fini(&w->l);
}

/* Fills θ (scale ts) and each update k (scale ds * (1 + k / 2)). */
static void world_random(struct world *w, double ts, double ds)
{
	for (uint32_t i = 0; i < w->l.n; i++) {
		const struct fedrun_tensor_info *t = &w->l.t[i];
		for (uint64_t e = 0; e < t->numel; e++) {
			w->theta[t->offset + e] = (float)(ts * rnd(w));
			for (uint32_t k = 0; k < w->n; k++)
				w->delta[k][t->offset + e] = (float)(ds * (1 + 0.5 * k) * rnd(w));
		}
	}
}

static const float *sent(const struct world *w, uint32_t k, uint32_t i)
{
	return w->u[k].tensor[i];
}

static void assert_close(double got, double want, double tol, const char *what)
{
	ck_assert_msg(fabs(got - want) <= tol * (1 + fabs(want)), "%s: got %.10g, want %.10g", what,
		      got, want);
}

/* ---- fedatt ------------------------------------------------------------- */

/* Eqs. 2-4 of the FedAtt paper, per tensor over the senders, Frobenius
 * distance; want[] receives θ_{t+1} and alpha[k][i] the attention. */
static void ref_fedatt(const struct world *w, double eps, double *want, double alpha[][8])
{
	for (uint64_t e = 0; e < w->l.total; e++)
		want[e] = w->theta[e];
	for (uint32_t i = 0; i < w->l.n; i++) {
		const struct fedrun_tensor_info *t = &w->l.t[i];
		double s[MAXC], z = 0;
		for (uint32_t k = 0; k < w->n; k++) {
			s[k] = 0;
			if (!sent(w, k, i))
				continue;
			for (uint64_t e = 0; e < t->numel; e++)
				s[k] += (double)sent(w, k, i)[e] * sent(w, k, i)[e];
			s[k] = sqrt(s[k]);
			z += exp(s[k]);
		}
		for (uint32_t k = 0; k < w->n; k++) {
			alpha[k][i] = sent(w, k, i) ? exp(s[k]) / z : NAN;
			if (!sent(w, k, i))
				continue;
			for (uint64_t e = 0; e < t->numel; e++)
				want[t->offset + e] += eps * alpha[k][i] * sent(w, k, i)[e];
		}
	}
}

START_TEST(fedatt_frobenius_matches_eqs_2_to_4)
{
	const struct fedrun_aggregator_ops *ops = load("fedatt");
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "emb", 2, 7, 5, 0);
	add(&w, "gru.0.w_ih", 2, 3, 9, 0);
	add(&w, "bias", 1, 6, 0, 0);
	world_init(&w, 4);
	world_random(&w, 1.0, 0.4);
	/* Client 1 sends no "emb"; nobody sends "bias". */
	w.tp[1][0] = NULL;
	for (uint32_t k = 0; k < w.n; k++)
		w.tp[k][2] = NULL;

	double *want = malloc(w.l.total * sizeof *want), alpha[MAXC][8];
	ref_fedatt(&w, 0.7, want, alpha);
	float *bias_before = malloc(6 * sizeof(float));
	memcpy(bias_before, w.theta + w.l.t[2].offset, 6 * sizeof(float));

	void *st = create(ops, "{\"plugin\": \"fedatt\", \"epsilon\": 0.7}", &w.l);
	int rc = ops->aggregate(st, &w.round, w.u, w.n, w.theta);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	for (uint64_t e = 0; e < w.l.total; e++)
		assert_close(w.theta[e], want[e], 1e-5, "theta");
	/* The tensor nobody sent is untouched, bit for bit. */
	ck_assert_mem_eq(bias_before, w.theta + w.l.t[2].offset, 6 * sizeof(float));
	for (uint32_t i = 0; i < 2; i++)
		for (uint32_t k = 0; k < w.n; k++) {
			double got = metric("fedatt.alpha", k, w.l.t[i].name);
			if (isnan(alpha[k][i]))
				ck_assert_msg(isnan(got), "alpha for an unsent tensor");
			else
				assert_close(got, alpha[k][i], 1e-9, "alpha");
		}
	ck_assert_uint_eq(metric_count("fedatt.alpha"), 3 + 4);
	ck_assert(!isnan(metric("fedatt.step_norm", -1, NULL)));
	ops->destroy(st);
	free(want);
	free(bias_before);
	world_fini(&w);
}
END_TEST

/* A = U diag(s) Vᵀ with Householder reflections U, V: its singular values
 * are s, known before any numerical method touches A. */
static void known_matrix(struct world *w, uint64_t r, uint64_t c, const double *s, float *out)
{
	double *u = malloc(r * sizeof *u), *v = malloc(c * sizeof *v);
	double uu = 0, vv = 0;
	for (uint64_t i = 0; i < r; i++) {
		u[i] = rnd(w);
		uu += u[i] * u[i];
	}
	for (uint64_t j = 0; j < c; j++) {
		v[j] = rnd(w);
		vv += v[j] * v[j];
	}
	uint64_t k = r < c ? r : c;
	for (uint64_t i = 0; i < r; i++)
		for (uint64_t j = 0; j < c; j++) {
			/* Σ_l U[i][l] s_l V[j][l], U = I − 2uuᵀ/uᵀu. */
			double a = 0;
			for (uint64_t l = 0; l < k; l++) {
				double ui = (i == l) - 2 * u[i] * u[l] / uu;
				double vj = (j == l) - 2 * v[j] * v[l] / vv;
				a += ui * s[l] * vj;
			}
			out[i * c + j] = (float)a;
		}
	free(u);
	free(v);
}

/* With client 0 sending A and client 1 zero, log(α_0 / α_1) = ||A||_2. */
static double spectral_via_fedatt(const struct fedrun_aggregator_ops *ops, struct world *w,
				  const char *tensor)
{
	void *st = create(ops, "{\"norm\": \"spectral\"}", &w->l);
	metrics_clear();
	int rc = ops->aggregate(st, &w->round, w->u, w->n, w->theta);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	ops->destroy(st);
	return log(metric("fedatt.alpha", 0, tensor) / metric("fedatt.alpha", 1, tensor));
}

START_TEST(fedatt_spectral_norm_of_known_matrices)
{
	const struct fedrun_aggregator_ops *ops = load("fedatt");
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "w", 2, 2, 2, 0);
	add(&w, "b", 1, 2, 0, 0);
	add(&w, "big", 2, 40, 25, 0);
	add(&w, "conv", 3, 6, 4, 2); /* read as 6 x 8 */
	add(&w, "wide", 2, 3, 40, 0);
	world_init(&w, 2);
	/* [[3, 0], [4, 5]]: AᵀA = [[25, 20], [20, 25]], σ = √45 and √5. */
	const float a[4] = {3, 0, 4, 5};
	memcpy(w.delta[0] + w.l.t[0].offset, a, sizeof a);
	/* A vector: its Euclidean norm, 5. */
	w.delta[0][w.l.t[1].offset] = 3;
	w.delta[0][w.l.t[1].offset + 1] = -4;
	/* Two top singular values 1e-3 apart, hard for power iteration. */
	double s[25];
	for (int l = 0; l < 25; l++)
		s[l] = l == 0 ? 5.0 : l == 1 ? 4.999 : 4.0 - 0.15 * l;
	known_matrix(&w, 40, 25, s, w.delta[0] + w.l.t[2].offset);
	double s2[6] = {2.5, 2.0, 1.0, 0.5, 0.25, 0.0};
	known_matrix(&w, 6, 8, s2, w.delta[0] + w.l.t[3].offset);
	/* Wider than tall: the estimate must use the last β (it is exact only
	 * from the k x (k + 1) bidiagonal after 3 steps). */
	double s3[3] = {2.0, 1.9, 0.5};
	known_matrix(&w, 3, 40, s3, w.delta[0] + w.l.t[4].offset);

	double fro = 0;
	for (int l = 0; l < 25; l++)
		fro += s[l] * s[l];
	assert_close(spectral_via_fedatt(ops, &w, "w"), sqrt(45.0), 1e-9, "sigma [[3,0],[4,5]]");
	assert_close(spectral_via_fedatt(ops, &w, "b"), 5.0, 1e-9, "vector norm");
	/* float entries perturb the singular values by ~1e-7 relative. */
	assert_close(spectral_via_fedatt(ops, &w, "big"), 5.0, 1e-5, "sigma of U S Vᵀ");
	assert_close(spectral_via_fedatt(ops, &w, "conv"), 2.5, 1e-5, "sigma of a 3-D tensor");
	assert_close(spectral_via_fedatt(ops, &w, "wide"), 2.0, 1e-5, "sigma of a wide matrix");
	ck_assert_msg(sqrt(fro) > 5.5, "the test matrix must tell Frobenius from spectral");
	world_fini(&w);
}
END_TEST

START_TEST(fedatt_noise_is_eq_6_and_reproducible)
{
	const struct fedrun_aggregator_ops *ops = load("fedatt");
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "x", 1, 20000, 0, 0);
	world_init(&w, 2);
	world_random(&w, 1.0, 0.01);
	double *want = malloc(w.l.total * sizeof *want), alpha[MAXC][8];
	ref_fedatt(&w, 1.0, want, alpha);
	float *start = malloc(w.l.total * sizeof *start);
	memcpy(start, w.theta, w.l.total * sizeof *start);

	void *st = create(ops, "{\"beta\": 0.5, \"sigma\": 2.0}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	double sum = 0, sum2 = 0;
	for (uint64_t e = 0; e < 20000; e++) {
		double z = w.theta[e] - want[e];
		sum += z;
		sum2 += z * z;
	}
	double mean = sum / 20000, sd = sqrt(sum2 / 20000 - mean * mean);
	/* β σ = 1: the standard error of the mean is 0.007, of sd 0.005. */
	ck_assert_msg(fabs(mean) < 0.04, "noise mean %g", mean);
	ck_assert_msg(fabs(sd - 1.0) < 0.03, "noise sd %g, want beta*sigma = 1", sd);

	/* Same seed and round: the same bits. Next round: other noise. */
	float *first = malloc(w.l.total * sizeof *first);
	memcpy(first, w.theta, w.l.total * sizeof *first);
	memcpy(w.theta, start, w.l.total * sizeof *start);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	ck_assert_mem_eq(first, w.theta, w.l.total * sizeof *first);
	memcpy(w.theta, start, w.l.total * sizeof *start);
	w.round.round = 2;
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	ck_assert(memcmp(first, w.theta, w.l.total * sizeof *first) != 0);
	ops->destroy(st);
	free(want);
	free(start);
	free(first);
	world_fini(&w);
}
END_TEST

/* ---- fedopt ------------------------------------------------------------- */

enum { ADAM, YOGI, ADAGRAD, AVGM };

struct ref_opt {
	int method;
	double lr, b1, b2, tau, mu;
	bool bc, uniform;
	double *m, *v, *x;
	uint64_t t;
};

/* One round of Algorithm 2 of Reddi et al. (and FedAvgM), element by element
 * in double. */
static void ref_fedopt_round(struct ref_opt *r, const struct world *w)
{
	r->t++;
	for (uint32_t i = 0; i < w->l.n; i++) {
		const struct fedrun_tensor_info *t = &w->l.t[i];
		double total = 0;
		for (uint32_t k = 0; k < w->n; k++)
			if (sent(w, k, i))
				total += r->uniform ? 1.0 : (double)w->u[k].n_samples;
		if (total == 0)
			continue;
		for (uint64_t e = t->offset; e < t->offset + t->numel; e++) {
			double d = 0;
			for (uint32_t k = 0; k < w->n; k++)
				if (sent(w, k, i))
					d += (r->uniform ? 1.0 : (double)w->u[k].n_samples) /
					     total * sent(w, k, i)[e - t->offset];
			if (r->method == AVGM) {
				r->m[e] = r->mu * r->m[e] + d;
				r->x[e] += r->lr * r->m[e];
				continue;
			}
			r->m[e] = r->b1 * r->m[e] + (1 - r->b1) * d;
			if (r->method == ADAM)
				r->v[e] = r->b2 * r->v[e] + (1 - r->b2) * d * d;
			else if (r->method == YOGI)
				r->v[e] -= (1 - r->b2) * d * d * (r->v[e] > d * d ? 1 : -1);
			else
				r->v[e] += d * d;
			double mh = r->m[e], vh = r->v[e];
			if (r->bc) {
				mh /= 1 - pow(r->b1, (double)r->t);
				if (r->method != ADAGRAD)
					vh /= 1 - pow(r->b2, (double)r->t);
			}
			r->x[e] += r->lr * mh / (sqrt(vh) + r->tau);
		}
	}
}

static void check_fedopt(const char *config, struct ref_opt r)
{
	const struct fedrun_aggregator_ops *ops = load("fedopt");
	struct world w = {0};
	metrics_clear();
	fedrun_layout_init(&w.l);
	add(&w, "a", 2, 4, 6, 0);
	add(&w, "b", 1, 5, 0, 0);
	add(&w, "c", 3, 2, 2, 3);
	world_init(&w, 3);
	world_random(&w, 1.0, 0.3);
	r.m = calloc(w.l.total, sizeof(double));
	r.v = calloc(w.l.total, sizeof(double));
	r.x = malloc(w.l.total * sizeof(double));
	for (uint64_t e = 0; e < w.l.total; e++) {
		r.x[e] = w.theta[e];
		r.v[e] = r.method == AVGM ? 0 : r.tau * r.tau; /* v_{−1} = τ² */
	}
	void *st = create(ops, config, &w.l);
	for (int round = 1; round <= 3; round++) {
		w.round.round = round;
		/* New updates each round; round 2 lacks client 2's "a", round 3
		 * has no "b" at all. */
		world_random(&w, 0.0, 0.3 * round);
		for (uint64_t e = 0; e < w.l.total; e++)
			w.theta[e] = (float)r.x[e];
		for (uint32_t k = 0; k < w.n; k++)
			for (uint32_t i = 0; i < w.l.n; i++)
				w.tp[k][i] = w.delta[k] + w.l.t[i].offset;
		if (round == 2)
			w.tp[2][0] = NULL;
		if (round == 3)
			for (uint32_t k = 0; k < w.n; k++)
				w.tp[k][1] = NULL;
		ref_fedopt_round(&r, &w);
		int rc = ops->aggregate(st, &w.round, w.u, w.n, w.theta);
		ck_assert_msg(rc == 0, "%s", fedrun_error_message());
		for (uint32_t i = 0; i < w.l.n; i++)
			for (uint64_t e = w.l.t[i].offset; e < w.l.t[i].offset + w.l.t[i].numel;
			     e++) {
				char what[256];
				snprintf(what, sizeof what, "%s round %d tensor %s", config, round,
					 w.l.t[i].name);
				assert_close(w.theta[e], r.x[e], 2e-5, what);
			}
	}
	ck_assert_uint_eq(metric_count("fedopt.update_norm"), 3);
	ops->destroy(st);
	free(r.m);
	free(r.v);
	free(r.x);
	world_fini(&w);
}

START_TEST(fedopt_adam_three_rounds)
{
	check_fedopt(
	    "{\"method\": \"adam\", \"lr\": 0.05, \"beta1\": 0.9, \"beta2\": 0.99, "
	    "\"tau\": 0.001}",
	    (struct ref_opt){.method = ADAM, .lr = 0.05, .b1 = 0.9, .b2 = 0.99, .tau = 0.001});
	check_fedopt("{\"method\": \"adam\", \"lr\": 0.05, \"bias_correction\": true, "
		     "\"weights\": \"uniform\"}",
		     (struct ref_opt){.method = ADAM,
				      .lr = 0.05,
				      .b1 = 0.9,
				      .b2 = 0.99,
				      .tau = 0.001,
				      .bc = true,
				      .uniform = true});
}
END_TEST

START_TEST(fedopt_yogi_three_rounds)
{
	check_fedopt(
	    "{\"method\": \"yogi\", \"lr\": 0.03, \"beta2\": 0.9, \"tau\": 0.01}",
	    (struct ref_opt){.method = YOGI, .lr = 0.03, .b1 = 0.9, .b2 = 0.9, .tau = 0.01});
}
END_TEST

START_TEST(fedopt_adagrad_three_rounds)
{
	check_fedopt(
	    "{\"method\": \"adagrad\", \"lr\": 0.1, \"beta1\": 0.5}",
	    (struct ref_opt){.method = ADAGRAD, .lr = 0.1, .b1 = 0.5, .b2 = 0.99, .tau = 0.001});
}
END_TEST

START_TEST(fedopt_avgm_three_rounds)
{
	check_fedopt("{\"method\": \"avgm\", \"momentum\": 0.8}",
		     (struct ref_opt){.method = AVGM, .lr = 1.0, .mu = 0.8});
	check_fedopt("{\"method\": \"avgm\", \"lr\": 0.5, \"momentum\": 0}",
		     (struct ref_opt){.method = AVGM, .lr = 0.5, .mu = 0});
}
END_TEST

/* The moments survive a checkpoint: blobs copied from one instance into a
 * fresh one give the same next round, bit for bit. */
START_TEST(fedopt_state_blobs_resume)
{
	const struct fedrun_aggregator_ops *ops = load("fedopt");
	ck_assert_ptr_nonnull(ops->state);
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "a", 2, 8, 3, 0);
	add(&w, "b", 1, 3, 0, 0);
	world_init(&w, 2);
	const char *cfg = "{\"method\": \"yogi\", \"bias_correction\": true}";
	void *st = create(ops, cfg, &w.l);
	for (int r = 1; r <= 2; r++) {
		world_random(&w, 0.5, 0.2);
		w.round.round = r;
		ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	}
	const struct fedrun_state_blob *b1, *b2;
	uint32_t n1, n2;
	ck_assert_int_eq(ops->state(st, &b1, &n1), 0);
	ck_assert_uint_eq(n1, 3);
	ck_assert_str_eq(b1[0].name, "m");
	ck_assert_str_eq(b1[1].name, "v");
	ck_assert_str_eq(b1[2].name, "step");
	ck_assert_uint_eq(b1[0].bytes, w.l.total * sizeof(float));
	ck_assert_uint_eq(*(const uint64_t *)b1[2].data, 2);

	void *resumed = create(ops, cfg, &w.l);
	ck_assert_int_eq(ops->state(resumed, &b2, &n2), 0);
	ck_assert_uint_eq(n2, n1);
	for (uint32_t i = 0; i < n1; i++) {
		ck_assert_uint_eq(b2[i].bytes, b1[i].bytes);
		memcpy(b2[i].data, b1[i].data, b1[i].bytes);
	}
	world_random(&w, 0.5, 0.2);
	float *other = fedrun_arena_alloc(w.l.total);
	memcpy(other, w.theta, w.l.total * sizeof *other);
	w.round.round = 3;
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	ck_assert_int_eq(ops->aggregate(resumed, &w.round, w.u, w.n, other), 0);
	ck_assert_mem_eq(other, w.theta, w.l.total * sizeof *other);
	ops->destroy(st);
	ops->destroy(resumed);
	fedrun_arena_free(other);
	world_fini(&w);
}
END_TEST

START_TEST(fedopt_zero_samples_is_refused)
{
	const struct fedrun_aggregator_ops *ops = load("fedopt");
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "a", 1, 4, 0, 0);
	world_init(&w, 2);
	world_random(&w, 1, 1);
	w.u[0].n_samples = w.u[1].n_samples = 0;
	void *st = create(ops, "{}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "aggregator.weights"));
	ops->destroy(st);
	/* Uniform weights do not need sample counts. */
	st = create(ops, "{\"weights\": \"uniform\"}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	ops->destroy(st);
	world_fini(&w);
}
END_TEST

/* ---- median and trimmed mean ---------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sort-based statistics of the senders' values at each coordinate. */
static double ref_stat(const struct world *w, uint32_t i, uint64_t e, double trim, bool median)
{
	double v[MAXC];
	uint32_t m = 0;
	for (uint32_t k = 0; k < w->n; k++)
		if (sent(w, k, i))
			v[m++] = sent(w, k, i)[e];
	if (m == 0)
		return 0; /* nobody sent the tensor: it keeps its value */
	qsort(v, m, sizeof *v, cmp_double);
	if (median)
		return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
	uint32_t b = (uint32_t)floor(trim * m + 1e-9), keep = m - 2 * b;
	double s = 0;
	for (uint32_t j = b; j < b + keep; j++)
		s += v[j];
	return s / keep;
}

static void check_coordwise(const char *plugin, const char *config, double trim, bool median,
			    uint32_t n)
{
	const struct fedrun_aggregator_ops *ops = load(plugin);
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "a", 2, 30, 20, 0);
	add(&w, "b", 1, 7, 0, 0);
	add(&w, "c", 1, 5, 0, 0);
	world_init(&w, n);
	world_random(&w, 1.0, 1.0);
	/* Ties: round some values to a coarse grid. */
	for (uint32_t k = 0; k < n; k++)
		for (uint64_t e = 0; e < w.l.total; e += 3)
			w.delta[k][e] = roundf(w.delta[k][e] * 2) / 2;
	w.tp[0][1] = NULL; /* "b" from n − 1 clients */
	for (uint32_t k = 0; k < n; k++)
		w.tp[k][2] = NULL; /* "c" from nobody */
	double *want = malloc(w.l.total * sizeof *want);
	for (uint32_t i = 0; i < w.l.n; i++)
		for (uint64_t e = 0; e < w.l.t[i].numel; e++)
			want[w.l.t[i].offset + e] = w.theta[w.l.t[i].offset + e] +
						    (i == 2 ? 0 : ref_stat(&w, i, e, trim, median));
	void *st = create(ops, config, &w.l);
	int rc = ops->aggregate(st, &w.round, w.u, w.n, w.theta);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	for (uint32_t i = 0; i < w.l.n; i++)
		for (uint64_t e = w.l.t[i].offset; e < w.l.t[i].offset + w.l.t[i].numel; e++)
			assert_close(w.theta[e], want[e], 1e-6, config);
	ops->destroy(st);
	free(want);
	world_fini(&w);
}

START_TEST(median_constructed)
{
	const struct fedrun_aggregator_ops *ops = load("median");
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "x", 1, 2, 0, 0);
	world_init(&w, 5);
	/* Coordinate 0: one wild client; coordinate 1: from four clients. */
	const float v0[5] = {1, 100, -3, 2, 5}, v1[5] = {9, 4, -1, 0, 7};
	for (uint32_t k = 0; k < 5; k++) {
		w.delta[k][0] = v0[k];
		w.delta[k][1] = v1[k];
	}
	void *st = create(ops, "{}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	ck_assert_float_eq(w.theta[0], 2.0f);
	ck_assert_float_eq(w.theta[1], 4.0f);
	/* Without client 4 (value 5, 7): medians of four values. */
	memset(w.theta, 0, 2 * sizeof(float));
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, 4, w.theta), 0);
	ck_assert_float_eq(w.theta[0], 1.5f); /* {-3, 1, 2, 100} */
	ck_assert_float_eq(w.theta[1], 2.0f); /* {-1, 0, 4, 9} */
	ops->destroy(st);
	world_fini(&w);
}
END_TEST

START_TEST(median_random_with_ties_and_partial)
{
	check_coordwise("median", "{}", 0, true, 7);
	check_coordwise("median", "{}", 0, true, 6);
	check_coordwise("median", "{}", 0, true, 1);
}
END_TEST

START_TEST(trimmed_mean_constructed)
{
	const struct fedrun_aggregator_ops *ops = load("trimmed_mean");
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "x", 1, 1, 0, 0);
	world_init(&w, 5);
	const float v0[5] = {1, 100, -30, 2, 6};
	for (uint32_t k = 0; k < 5; k++)
		w.delta[k][0] = v0[k];
	/* β = 0.2 of 5: drop -30 and 100, mean of {1, 2, 6} = 3. */
	void *st = create(ops, "{\"trim\": 0.2}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	ck_assert_float_eq_tol(w.theta[0], 3.0f, 1e-6f);
	ops->destroy(st);
	/* β = 0: the plain mean, 15.8. */
	w.theta[0] = 0;
	st = create(ops, "{\"trim\": 0}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	ck_assert_float_eq_tol(w.theta[0], 15.8f, 1e-5f);
	ops->destroy(st);
	world_fini(&w);
}
END_TEST

START_TEST(trimmed_mean_random_with_ties_and_partial)
{
	check_coordwise("trimmed_mean", "{\"trim\": 0.2}", 0.2, false, 9);
	check_coordwise("trimmed_mean", "{\"trim\": 0.3}", 0.3, false, 10);
	check_coordwise("trimmed_mean", "{\"trim\": 0.49}", 0.49, false, 8);
	check_coordwise("trimmed_mean", "{}", 0.1, false, 12); /* default 0.1 */
}
END_TEST

/* ---- krum --------------------------------------------------------------- */

START_TEST(krum_and_multi_krum)
{
	const struct fedrun_aggregator_ops *ops = load("krum");
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "a", 1, 3, 0, 0);
	add(&w, "b", 1, 2, 0, 0);
	world_init(&w, 7);
	/* Five honest updates near (1, 1, 1, 1, 1), two Byzantine far off. */
	world_random(&w, 1.0, 0.1);
	for (uint32_t k = 0; k < 7; k++)
		for (uint32_t i = 0; i < 2; i++)
			for (uint64_t e = 0; e < w.l.t[i].numel; e++)
				w.delta[k][w.l.t[i].offset + e] += k == 2 ? -20 : k == 5 ? 30 : 1;
	/* Scores with f = 2: n − f − 2 = 3 nearest neighbours. */
	double d[7][7], score[7];
	for (uint32_t a = 0; a < 7; a++)
		for (uint32_t b = 0; b < 7; b++) {
			d[a][b] = 0;
			for (uint32_t i = 0; i < 2; i++)
				for (uint64_t e = 0; e < w.l.t[i].numel; e++) {
					double x = (double)w.tp[a][i][e] - w.tp[b][i][e];
					d[a][b] += x * x;
				}
		}
	int order[7];
	for (uint32_t a = 0; a < 7; a++) {
		double row[6];
		int len = 0;
		for (uint32_t b = 0; b < 7; b++)
			if (b != a)
				row[len++] = d[a][b];
		qsort(row, 6, sizeof *row, cmp_double);
		score[a] = row[0] + row[1] + row[2];
		order[a] = a;
	}
	for (int a = 1; a < 7; a++) /* by score */
		for (int b = a; b > 0 && score[order[b - 1]] > score[order[b]]; b--) {
			int t = order[b];
			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	ck_assert(order[0] != 2 && order[0] != 5);

	float *start = malloc(w.l.total * sizeof *start);
	memcpy(start, w.theta, w.l.total * sizeof *start);
	void *st = create(ops, "{\"f\": 2}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	for (uint32_t i = 0; i < 2; i++)
		for (uint64_t e = w.l.t[i].offset; e < w.l.t[i].offset + w.l.t[i].numel; e++)
			assert_close(w.theta[e], (double)start[e] + w.delta[order[0]][e], 1e-6,
				     "krum");
	for (uint32_t a = 0; a < 7; a++) {
		assert_close(metric("krum.score", a, NULL), score[a], 1e-9, "krum.score");
		ck_assert_int_eq((int)metric("krum.selected", a, NULL), (int)a == order[0]);
	}
	ops->destroy(st);

	/* Multi-Krum, m = 4: the mean of the four best. */
	memcpy(w.theta, start, w.l.total * sizeof *start);
	metrics_clear();
	st = create(ops, "{\"f\": 2, \"m\": 4}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	for (uint32_t i = 0; i < 2; i++)
		for (uint64_t e = w.l.t[i].offset; e < w.l.t[i].offset + w.l.t[i].numel; e++) {
			double mean = 0;
			for (int r = 0; r < 4; r++)
				mean += w.delta[order[r]][e] / 4.0;
			assert_close(w.theta[e], start[e] + mean, 1e-6, "multi-krum");
		}
	double selected = 0;
	for (uint32_t a = 0; a < 7; a++)
		selected += metric("krum.selected", a, NULL);
	ck_assert_int_eq((int)selected, 4);
	ck_assert_int_eq((int)metric("krum.selected", 2, NULL), 0);
	ck_assert_int_eq((int)metric("krum.selected", 5, NULL), 0);

	/* A partial update is refused with a reason; so is n < 2f + 3. */
	w.tp[3][1] = NULL;
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_EUNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "whole updates"));
	w.tp[3][1] = w.delta[3] + w.l.t[1].offset;
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, 6, w.theta), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "2f + 3"));
	ops->destroy(st);
	st = create(ops, "{\"m\": 8}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "aggregator.m"));
	ops->destroy(st);
	free(start);
	world_fini(&w);
}
END_TEST

/* ---- meritfed ----------------------------------------------------------- */

/* Target a = (1, ..., 1), θ = 0: client 0 (the good one) moves half-way to
 * a, client 1 (the bad one) away from it, client 2 (if any) at random. */
static void meritfed_world(struct world *w, uint32_t n, float **a)
{
	fedrun_layout_init(&w->l);
	add(w, "emb", 2, 3, 4, 0);
	add(w, "out", 1, 5, 0, 0);
	world_init(w, n);
	*a = fedrun_arena_alloc(w->l.total);
	for (uint32_t i = 0; i < w->l.n; i++)
		for (uint64_t e = w->l.t[i].offset; e < w->l.t[i].offset + w->l.t[i].numel; e++) {
			(*a)[e] = 1;
			w->delta[0][e] = (float)(0.5 + 0.1 * rnd(w));
			w->delta[1][e] = (float)(-1.0 + 0.1 * rnd(w));
			if (n > 2)
				w->delta[2][e] = (float)(0.5 * rnd(w));
		}
	fake.layout = &w->l;
	fake.a = *a;
}

/* f(θ + γ Σ w_i Δ_i) and its gradient with respect to w, in double. */
static double ref_phi(const struct world *w, const float *a, const double *wt, double gamma,
		      double *g)
{
	double f = 0;
	for (uint32_t k = 0; k < w->n; k++)
		if (g)
			g[k] = 0;
	for (uint32_t i = 0; i < w->l.n; i++)
		for (uint64_t e = w->l.t[i].offset; e < w->l.t[i].offset + w->l.t[i].numel; e++) {
			double x = w->theta[e];
			for (uint32_t k = 0; k < w->n; k++)
				x += gamma * wt[k] * w->delta[k][e];
			f += (x - a[e]) * (x - a[e]);
			for (uint32_t k = 0; k < w->n && g; k++)
				g[k] += gamma * 2 * (x - a[e]) * w->delta[k][e];
		}
	return f;
}

START_TEST(meritfed_one_md_step_matches_direct_computation)
{
	const struct fedrun_aggregator_ops *ops = load("meritfed");
	struct world w = {0};
	float *a;
	meritfed_world(&w, 2, &a);
	const double gamma = 0.5, eta = 0.05;
	/* The slides' mirror descent step from w = (1/2, 1/2). */
	double wt[2] = {0.5, 0.5}, g[2];
	ref_phi(&w, a, wt, gamma, g);
	double z = wt[0] * exp(-eta * g[0]) + wt[1] * exp(-eta * g[1]);
	double w1[2] = {wt[0] * exp(-eta * g[0]) / z, wt[1] * exp(-eta * g[1]) / z};
	ck_assert_msg(w1[0] > 0.5, "the good client must gain weight (g = %g, %g)", g[0], g[1]);
	double *want = malloc(w.l.total * sizeof *want);
	for (uint64_t e = 0; e < w.l.total; e++)
		want[e] = w.theta[e] + gamma * (w1[0] * w.delta[0][e] + w1[1] * w.delta[1][e]);

	double phi0 = ref_phi(&w, a, wt, gamma, NULL);
	void *st = create(ops, "{\"md_steps\": 1, \"md_lr\": 0.05, \"server_lr\": 0.5}", &w.l);
	int rc = ops->aggregate(st, &w.round, w.u, w.n, w.theta);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	assert_close(metric("meritfed.weight", 0, NULL), w1[0], 1e-6, "weight 0");
	assert_close(metric("meritfed.weight", 1, NULL), w1[1], 1e-6, "weight 1");
	for (uint64_t e = 0; e < w.l.total; e++)
		assert_close(w.theta[e], want[e], 1e-5, "theta");
	/* One gradient at the target, on its validation split. */
	ck_assert_int_eq(fake.grad_calls, 1);
	ck_assert_int_eq(fake.client, 0);
	ck_assert_int_eq(fake.split, FEDRUN_SPLIT_VALID);
	assert_close(metric("meritfed.loss_first", 0, NULL), phi0, 1e-5, "loss_first");
	ops->destroy(st);

	/* split "train" reaches the host as such; a missing split is named. */
	st = create(ops, "{\"md_steps\": 1, \"split\": \"train\", \"target\": 1}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	ck_assert_int_eq(fake.split, FEDRUN_SPLIT_TRAIN);
	ck_assert_int_eq(fake.client, 1);
	fake.fail_with = FEDRUN_ENOENT;
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_ECONFIG);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "aggregator.split"));
	fake.fail_with = 0;
	ops->destroy(st);
	free(want);
	fedrun_arena_free(a);
	world_fini(&w);
}
END_TEST

static void run_rounds(const struct fedrun_aggregator_ops *ops, void *st, struct world *w,
		       int rounds, float *theta0)
{
	for (int r = 1; r <= rounds; r++) {
		memcpy(w->theta, theta0, w->l.total * sizeof(float));
		w->round.round = r;
		metrics_clear();
		int rc = ops->aggregate(st, &w->round, w->u, w->n, w->theta);
		ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	}
}

static void check_finds_friend(const char *config)
{
	const struct fedrun_aggregator_ops *ops = load("meritfed");
	struct world w = {0};
	float *a;
	meritfed_world(&w, 3, &a);
	float *theta0 = fedrun_arena_alloc(w.l.total);
	memcpy(theta0, w.theta, w.l.total * sizeof *theta0);
	double uniform[3] = {1.0 / 3, 1.0 / 3, 1.0 / 3};
	double f_uniform = ref_phi(&w, a, uniform, 1.0, NULL);

	void *st = create(ops, config, &w.l);
	run_rounds(ops, st, &w, 1, theta0);
	double w0 = metric("meritfed.weight", 0, NULL), w1 = metric("meritfed.weight", 1, NULL),
	       w2 = metric("meritfed.weight", 2, NULL);
	ck_assert_msg(w0 > 0.9 && w1 < 0.02, "%s: weights %g %g %g", config, w0, w1, w2);
	assert_close(w0 + w1 + w2, 1.0, 1e-12, "weights sum");
	double f = 0;
	for (uint64_t e = 0; e < w.l.total; e++)
		f += ((double)w.theta[e] - a[e]) * ((double)w.theta[e] - a[e]);
	ck_assert_msg(f < 0.5 * f_uniform, "%s: loss %g, uniform weights give %g", config, f,
		      f_uniform);
	ck_assert_msg(metric("meritfed.loss_last", 0, NULL) <
			  metric("meritfed.loss_first", 0, NULL),
		      "%s: mirror descent did not lower the loss", config);
	ops->destroy(st);
	fedrun_arena_free(theta0);
	fedrun_arena_free(a);
	world_fini(&w);
}

START_TEST(meritfed_weights_move_to_the_good_client)
{
	check_finds_friend("{\"md_steps\": 30, \"md_lr\": 0.1}");
	check_finds_friend("{\"md_steps\": 30, \"md_lr\": 0.1, \"variant\": \"zeroth\"}");
	check_finds_friend("{\"md_steps\": 30, \"md_lr\": 0.1, \"optimizer\": \"sgd\", "
			   "\"momentum\": 0.5}");
}
END_TEST

/* With two clients the simplex's tangent space is a line, so the two-point
 * estimate of a quadratic φ is exact: zeroth-order equals first-order. */
START_TEST(meritfed_zeroth_equals_first_for_two_clients)
{
	const struct fedrun_aggregator_ops *ops = load("meritfed");
	struct world w = {0};
	float *a;
	meritfed_world(&w, 2, &a);
	float *theta0 = fedrun_arena_alloc(w.l.total);
	memcpy(theta0, w.theta, w.l.total * sizeof *theta0);
	void *first = create(ops, "{\"md_steps\": 3, \"md_lr\": 0.02}", &w.l);
	run_rounds(ops, first, &w, 1, theta0);
	double wf = metric("meritfed.weight", 0, NULL);
	int calls_first = fake.calls;
	fake.calls = 0;
	void *zeroth = create(ops,
			      "{\"md_steps\": 3, \"md_lr\": 0.02, \"variant\": \"zeroth\", "
			      "\"zo_directions\": 2, \"zo_radius\": 0.05}",
			      &w.l);
	run_rounds(ops, zeroth, &w, 1, theta0);
	double wz = metric("meritfed.weight", 0, NULL);
	assert_close(wz, wf, 1e-4, "zeroth-order weight");
	ck_assert(wf > 0.5 && wf < 0.99);
	ck_assert_int_eq(calls_first, 3);
	ck_assert_int_eq(fake.calls, 3 * 2 * 2); /* steps x directions x two points */
	ck_assert_int_eq(fake.grad_calls, 3);	 /* only the first-order ones */
	ops->destroy(first);
	ops->destroy(zeroth);
	fedrun_arena_free(theta0);
	fedrun_arena_free(a);
	world_fini(&w);
}
END_TEST

/* MeritOpt with Adam: φ(w) = f(Adam step from the current moments with
 * D = Σ w_i Δ_i); its gradient is checked by central differences of the
 * test's own Adam step, over two rounds so that the moments are not zero. */
struct ref_adam {
	double b1, b2, tau, gamma;
	double *m, *v;
	uint64_t t;
};

static double ref_adam_phi(const struct world *w, const float *a, const struct ref_adam *r,
			   const double *wt, double *x_out)
{
	double f = 0, c1 = 1 - pow(r->b1, (double)(r->t + 1)),
	       c2 = 1 - pow(r->b2, (double)(r->t + 1));
	for (uint32_t i = 0; i < w->l.n; i++)
		for (uint64_t e = w->l.t[i].offset; e < w->l.t[i].offset + w->l.t[i].numel; e++) {
			double d = 0;
			for (uint32_t k = 0; k < w->n; k++)
				d += wt[k] * w->delta[k][e];
			double m = r->b1 * r->m[e] + (1 - r->b1) * d;
			double v = r->b2 * r->v[e] + (1 - r->b2) * d * d;
			double x = w->theta[e] + r->gamma * (m / c1) / (sqrt(v / c2) + r->tau);
			if (x_out)
				x_out[e] = x;
			f += (x - a[e]) * (x - a[e]);
		}
	return f;
}

static void ref_adam_commit(const struct world *w, struct ref_adam *r, const double *wt)
{
	for (uint64_t e = 0; e < w->l.total; e++) {
		double d = 0;
		for (uint32_t k = 0; k < w->n; k++)
			d += wt[k] * w->delta[k][e];
		r->m[e] = r->b1 * r->m[e] + (1 - r->b1) * d;
		r->v[e] = r->b2 * r->v[e] + (1 - r->b2) * d * d;
	}
	r->t++;
}

START_TEST(meritfed_adam_gradient_matches_finite_differences)
{
	const struct fedrun_aggregator_ops *ops = load("meritfed");
	struct world w = {0};
	float *a;
	meritfed_world(&w, 3, &a);
	struct ref_adam r = {.b1 = 0.8, .b2 = 0.9, .tau = 0.5, .gamma = 0.3};
	r.m = calloc(w.l.total, sizeof(double));
	r.v = calloc(w.l.total, sizeof(double));
	double *x = calloc(w.l.total, sizeof *x); /* padding stays 0 */
	const double eta = 0.5;
	void *st = create(ops,
			  "{\"md_steps\": 1, \"md_lr\": 0.5, \"server_lr\": 0.3, \"optimizer\": "
			  "\"adam\", \"beta1\": 0.8, \"beta2\": 0.9, \"tau\": 0.5}",
			  &w.l);
	for (int round = 1; round <= 2; round++) {
		double wt[3] = {1.0 / 3, 1.0 / 3, 1.0 / 3}, g[3];
		for (uint32_t k = 0; k < 3; k++) {
			const double h = 1e-6;
			double wp[3], wm[3];
			memcpy(wp, wt, sizeof wp);
			memcpy(wm, wt, sizeof wm);
			wp[k] += h;
			wm[k] -= h;
			g[k] = (ref_adam_phi(&w, a, &r, wp, NULL) -
				ref_adam_phi(&w, a, &r, wm, NULL)) /
			       (2 * h);
		}
		double z = 0;
		for (uint32_t k = 0; k < 3; k++)
			z += wt[k] * exp(-eta * g[k]);
		for (uint32_t k = 0; k < 3; k++)
			wt[k] = wt[k] * exp(-eta * g[k]) / z;
		ref_adam_phi(&w, a, &r, wt, x);
		ref_adam_commit(&w, &r, wt);

		w.round.round = round;
		metrics_clear();
		int rc = ops->aggregate(st, &w.round, w.u, w.n, w.theta);
		ck_assert_msg(rc == 0, "%s", fedrun_error_message());
		for (uint32_t k = 0; k < 3; k++)
			assert_close(metric("meritfed.weight", k, NULL), wt[k], 1e-4,
				     "adam weight");
		for (uint64_t e = 0; e < w.l.total; e++) {
			assert_close(w.theta[e], x[e], 1e-4, "adam theta");
			w.theta[e] = (float)x[e]; /* both sides continue from the same θ */
		}
	}
	ops->destroy(st);
	free(r.m);
	free(r.v);
	free(x);
	fedrun_arena_free(a);
	world_fini(&w);
}
END_TEST

START_TEST(meritfed_warm_start_and_state)
{
	const struct fedrun_aggregator_ops *ops = load("meritfed");
	struct world w = {0};
	float *a;
	meritfed_world(&w, 3, &a);
	float *theta0 = fedrun_arena_alloc(w.l.total);
	memcpy(theta0, w.theta, w.l.total * sizeof *theta0);
	const char *cold = "{\"md_steps\": 2, \"md_lr\": 0.05}";
	const char *warm = "{\"md_steps\": 2, \"md_lr\": 0.05, \"warm_start\": true, "
			   "\"max_clients\": 8}";
	void *c = create(ops, cold, &w.l), *h = create(ops, warm, &w.l);
	run_rounds(ops, c, &w, 1, theta0);
	double c1 = metric("meritfed.weight", 0, NULL);
	run_rounds(ops, h, &w, 1, theta0);
	assert_close(metric("meritfed.weight", 0, NULL), c1, 1e-12, "first round alike");
	/* Round 2 on the same updates: cold restarts at 1/3, warm goes on. */
	run_rounds(ops, c, &w, 1, theta0);
	ck_assert(metric("meritfed.weight", 0, NULL) == c1);
	run_rounds(ops, h, &w, 1, theta0);
	double h2 = metric("meritfed.weight", 0, NULL);
	ck_assert_msg(h2 > c1 + 1e-3, "warm start: %g after %g", h2, c1);

	const struct fedrun_state_blob *b;
	uint32_t nb;
	ck_assert_int_eq(ops->state(h, &b, &nb), 0);
	ck_assert_uint_eq(nb, 2); /* step, weights */
	ck_assert_str_eq(b[nb - 1].name, "weights");
	ck_assert_uint_eq(b[nb - 1].bytes, 8 * sizeof(double));
	assert_close(((const double *)b[nb - 1].data)[0], h2, 1e-12, "stored weight");
	ck_assert_int_eq(ops->state(c, &b, &nb), 0);
	ck_assert_uint_eq(nb, 1); /* step only */

	/* A client id beyond max_clients is named. */
	w.u[2].client = 9;
	ck_assert_int_eq(ops->aggregate(h, &w.round, w.u, w.n, w.theta), FEDRUN_ECONFIG);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "aggregator.max_clients"));
	ops->destroy(c);
	ops->destroy(h);
	fedrun_arena_free(theta0);
	fedrun_arena_free(a);
	world_fini(&w);
}
END_TEST

/* Several rounds of several mirror descent steps with warm start, against
 * the slides' equations computed here in double: in each round, from the
 * weights each client ended its last round with (1/n for a new client),
 * renormalised over the round's clients, T steps of
 * w ← w ⊙ exp(−η ∇φ(w)) / Σ w_i exp(−η ∇φ(w)_i), φ(w) = f(θ + γ Σ_i w_i Δ_i),
 * then θ ← θ + γ Σ_i w_i Δ_i; the updates change every round and θ carries
 * over. */
static double ref_phi_of(const struct world *w, const float *a, const uint32_t *who, uint32_t m,
			 const double *wt, double gamma, double *g, double *x_out)
{
	double f = 0;
	for (uint32_t k = 0; k < m && g; k++)
		g[k] = 0;
	for (uint32_t i = 0; i < w->l.n; i++)
		for (uint64_t e = w->l.t[i].offset; e < w->l.t[i].offset + w->l.t[i].numel; e++) {
			double x = w->theta[e];
			for (uint32_t k = 0; k < m; k++)
				x += gamma * wt[k] * w->delta[who[k]][e];
			if (x_out)
				x_out[e] = x;
			f += (x - a[e]) * (x - a[e]);
			for (uint32_t k = 0; k < m && g; k++)
				g[k] += gamma * 2 * (x - a[e]) * w->delta[who[k]][e];
		}
	return f;
}

START_TEST(meritfed_warm_rounds_match_direct_computation)
{
	const struct fedrun_aggregator_ops *ops = load("meritfed");
	struct world w = {0};
	float *a;
	meritfed_world(&w, 3, &a);
	const double gamma = 0.7, eta = 0.3;
	const int T = 5;
	void *st = create(ops,
			  "{\"md_steps\": 5, \"md_lr\": 0.3, \"server_lr\": 0.7, \"warm_start\": "
			  "true, \"max_clients\": 8}",
			  &w.l);
	double warm[3] = {0, 0, 0}; /* 0: not seen yet */
	double *x = calloc(w.l.total, sizeof *x);
	for (int round = 1; round <= 3; round++) {
		for (uint32_t k = 0; k < 3; k++)
			for (uint32_t i = 0; i < w.l.n; i++)
				for (uint64_t e = w.l.t[i].offset;
				     e < w.l.t[i].offset + w.l.t[i].numel; e++)
					w.delta[k][e] += (float)(0.2 * rnd(&w));
		/* Client 2 joins in round 2 (a new client starts at 1/n), client 1
		 * sits out round 3. */
		uint32_t who[3] = {0, 1, 2}, m = round == 2 ? 3 : 2;
		if (round == 3)
			who[1] = 2;
		double wt[3], g[3], z = 0, phi_first = NAN, phi_last = NAN;
		for (uint32_t k = 0; k < m; k++)
			z += wt[k] = warm[who[k]] > 0 ? warm[who[k]] : 1.0 / m;
		for (uint32_t k = 0; k < m; k++)
			wt[k] /= z;
		for (int s = 0; s < T; s++) {
			phi_last = ref_phi_of(&w, a, who, m, wt, gamma, g, NULL);
			if (s == 0)
				phi_first = phi_last;
			z = 0;
			for (uint32_t k = 0; k < m; k++)
				z += wt[k] * exp(-eta * g[k]);
			for (uint32_t k = 0; k < m; k++)
				wt[k] = wt[k] * exp(-eta * g[k]) / z;
		}
		ref_phi_of(&w, a, who, m, wt, gamma, NULL, x);

		struct fedrun_update u[3];
		for (uint32_t k = 0; k < m; k++)
			u[k] = w.u[who[k]];
		w.round.round = (uint32_t)round;
		metrics_clear();
		int rc = ops->aggregate(st, &w.round, u, m, w.theta);
		ck_assert_msg(rc == 0, "%s", fedrun_error_message());
		for (uint32_t k = 0; k < m; k++) {
			assert_close(metric("meritfed.weight", who[k], NULL), wt[k], 1e-5,
				     "weight");
			warm[who[k]] = wt[k];
		}
		ck_assert(isnan(metric("meritfed.weight", 1, NULL)) == (round == 3));
		assert_close(metric("meritfed.loss_first", 0, NULL), phi_first, 1e-5, "loss_first");
		assert_close(metric("meritfed.loss_last", 0, NULL), phi_last, 1e-5, "loss_last");
		for (uint32_t i = 0; i < w.l.n; i++)
			for (uint64_t e = w.l.t[i].offset; e < w.l.t[i].offset + w.l.t[i].numel;
			     e++) {
				assert_close(w.theta[e], x[e], 1e-5, "theta");
				w.theta[e] = (float)x[e]; /* both sides go on from the same θ */
			}
	}
	ops->destroy(st);
	free(x);
	fedrun_arena_free(a);
	world_fini(&w);
}
END_TEST

/* One client, or md_steps 0: no evaluation, weights 1 or uniform. */
START_TEST(meritfed_trivial_rounds_evaluate_nothing)
{
	const struct fedrun_aggregator_ops *ops = load("meritfed");
	struct world w = {0};
	float *a;
	meritfed_world(&w, 3, &a);
	float *theta0 = fedrun_arena_alloc(w.l.total);
	memcpy(theta0, w.theta, w.l.total * sizeof *theta0);
	void *st = create(ops, "{\"server_lr\": 0.5}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, &w.u[1], 1, w.theta), 0);
	ck_assert_int_eq(fake.calls, 0);
	ck_assert_double_eq(metric("meritfed.weight", 1, NULL), 1.0);
	ck_assert(isnan(metric("meritfed.loss_first", 0, NULL)));
	for (uint64_t e = 0; e < w.l.total; e++)
		assert_close(w.theta[e], theta0[e] + 0.5 * w.delta[1][e], 1e-6, "one client");
	ops->destroy(st);
	st = create(ops, "{\"md_steps\": 0}", &w.l);
	run_rounds(ops, st, &w, 1, theta0);
	ck_assert_int_eq(fake.calls, 0);
	for (uint32_t k = 0; k < 3; k++)
		assert_close(metric("meritfed.weight", k, NULL), 1.0 / 3, 1e-12, "uniform");
	ops->destroy(st);
	fedrun_arena_free(theta0);
	fedrun_arena_free(a);
	world_fini(&w);
}
END_TEST

START_TEST(meritfed_needs_loss_grad_and_a_real_target)
{
	const struct fedrun_aggregator_ops *ops = load("meritfed");
	struct world w = {0};
	float *a;
	meritfed_world(&w, 2, &a);
	struct fedrun_host saved = host;
	host.loss_grad = NULL;
	json_t *c = json_object();
	void *st = NULL;
	ck_assert_int_eq(ops->create(&host, c, &w.l, &st), FEDRUN_EUNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "loss_grad"));
	json_decref(c);
	host = saved;
	st = create(ops, "{\"target\": 40}", &w.l);
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_ECONFIG);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "aggregator.target"));
	ops->destroy(st);
	fedrun_arena_free(a);
	world_fini(&w);
}
END_TEST

/* ---- common to all ------------------------------------------------------ */

static const char *const all_plugins[] = {"fedatt",	  "fedopt", "median",
					  "trimmed_mean", "krum",   "meritfed"};

START_TEST(bad_configs_name_their_key)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "x", 1, 4, 0, 0);
	for (size_t p = 0; p < sizeof all_plugins / sizeof *all_plugins; p++)
		refuse(load(all_plugins[p]), "{\"plugin\": \"x\", \"epsilonn\": 1}", "epsilonn",
		       &w.l);
	const struct fedrun_aggregator_ops *ops = load("fedatt");
	refuse(ops, "{\"epsilon\": 0}", "epsilon", &w.l);
	refuse(ops, "{\"epsilon\": \"big\"}", "epsilon", &w.l);
	refuse(ops, "{\"epsilon\": 1e18}", "epsilon", &w.l); /* (0, 2]: beyond, it diverges */
	refuse(ops, "{\"epsilon\": 2.01}", "epsilon", &w.l);
	refuse(ops, "{\"norm\": \"l1\"}", "norm", &w.l);
	refuse(ops, "{\"beta\": 1.5}", "beta", &w.l);
	refuse(ops, "{\"sigma\": -1}", "sigma", &w.l);
	ops = load("fedopt");
	refuse(ops, "{\"method\": \"sgd\"}", "method", &w.l);
	refuse(ops, "{\"beta1\": 1.0}", "beta1", &w.l);
	refuse(ops, "{\"beta2\": -0.1}", "beta2", &w.l);
	refuse(ops, "{\"tau\": 0}", "tau", &w.l);
	refuse(ops, "{\"lr\": 0}", "lr", &w.l);
	refuse(ops, "{\"lr\": 1e18}", "lr", &w.l);
	refuse(ops, "{\"momentum\": 1}", "momentum", &w.l);
	refuse(ops, "{\"v0\": -1}", "v0", &w.l);
	refuse(ops, "{\"weights\": \"tokens\"}", "weights", &w.l);
	refuse(ops, "{\"bias_correction\": 1}", "bias_correction", &w.l);
	ops = load("trimmed_mean");
	refuse(ops, "{\"trim\": 0.5}", "trim", &w.l);
	refuse(ops, "{\"trim\": -0.1}", "trim", &w.l);
	ops = load("krum");
	refuse(ops, "{\"f\": -1}", "f", &w.l);
	refuse(ops, "{\"f\": 1.5}", "f", &w.l);
	refuse(ops, "{\"m\": 0}", "m", &w.l);
	ops = load("meritfed");
	refuse(ops, "{\"target\": -1}", "target", &w.l);
	refuse(ops, "{\"md_steps\": -1}", "md_steps", &w.l);
	refuse(ops, "{\"md_lr\": 0}", "md_lr", &w.l);
	refuse(ops, "{\"server_lr\": -1}", "server_lr", &w.l);
	refuse(ops, "{\"variant\": \"second\"}", "variant", &w.l);
	refuse(ops, "{\"split\": \"test\"}", "split", &w.l);
	refuse(ops, "{\"optimizer\": \"lamb\"}", "optimizer", &w.l);
	refuse(ops, "{\"zo_radius\": 2}", "zo_radius", &w.l);
	refuse(ops, "{\"zo_directions\": 0}", "zo_directions", &w.l);
	refuse(ops, "{\"max_clients\": 0}", "max_clients", &w.l);
	fedrun_layout_fini(&w.l);
}
END_TEST

/* Defaults are written back into the section (the resolved pipeline). */
START_TEST(defaults_are_resolved)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "x", 1, 4, 0, 0);
	const struct fedrun_aggregator_ops *ops = load("fedopt");
	json_t *c = json_pack("{s:s}", "method", "avgm");
	void *st = NULL;
	ck_assert_int_eq(ops->create(&host, c, &w.l, &st), 0);
	ck_assert_double_eq(json_real_value(json_object_get(c, "lr")), 1.0);
	ck_assert_double_eq(json_real_value(json_object_get(c, "momentum")), 0.9);
	ck_assert_str_eq(json_string_value(json_object_get(c, "weights")), "samples");
	ops->destroy(st);
	json_decref(c);
	c = json_object();
	ck_assert_int_eq(ops->create(&host, c, &w.l, &st), 0);
	ck_assert_double_eq(json_real_value(json_object_get(c, "lr")), 0.01);
	ck_assert_double_eq_tol(json_real_value(json_object_get(c, "v0")), 1e-6, 1e-18);
	ops->destroy(st);
	json_decref(c);
	fedrun_layout_fini(&w.l);
}
END_TEST

START_TEST(non_finite_update_is_refused)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "emb", 1, 4, 0, 0);
	add(&w, "out", 1, 4, 0, 0);
	world_init(&w, 5);
	world_random(&w, 1, 1);
	float *a = fedrun_arena_alloc(w.l.total);
	fake.layout = &w.l;
	fake.a = a;
	w.delta[3][w.l.t[1].offset + 2] = NAN;
	/* fedavg too, though it is not in all_plugins (its options differ) */
	for (size_t p = 0; p <= sizeof all_plugins / sizeof *all_plugins; p++) {
		const char *name = p < sizeof all_plugins / sizeof *all_plugins ? all_plugins[p]
										: "fedavg";
		const struct fedrun_aggregator_ops *ops = load(name);
		void *st = create(ops, "{}", &w.l);
		ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_ENUMERIC);
		const char *msg = fedrun_error_message();
		ck_assert_msg(strstr(msg, "client 3") && strstr(msg, "out"), "%s: %s", name, msg);
		ops->destroy(st);
	}
	fedrun_arena_free(a);
	world_fini(&w);
}
END_TEST

/* Results do not depend on the number of threads: tensors big enough for the
 * parallel paths, run with 1 and 2 threads, give the same bits. */
START_TEST(results_do_not_depend_on_threads)
{
#ifndef _OPENMP
	ck_assert_msg(1, "built without OpenMP: one thread only");
#else
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "big", 2, 400, 300, 0);
	world_init(&w, 3);
	world_random(&w, 1, 0.01);
	float *a = fedrun_arena_alloc(w.l.total);
	fake.layout = &w.l;
	fake.a = a;
	float *start = fedrun_arena_alloc(w.l.total), *one = fedrun_arena_alloc(w.l.total);
	memcpy(start, w.theta, w.l.total * sizeof *start);
	const char *cases[][2] = {{"fedatt", "{\"norm\": \"spectral\"}"},
				  {"fedopt", "{}"},
				  {"median", "{}"},
				  {"trimmed_mean", "{\"trim\": 0.34}"},
				  {"krum", "{\"m\": 2}"},
				  {"meritfed", "{\"md_steps\": 2}"}};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct fedrun_aggregator_ops *ops = load(cases[c][0]);
		for (int threads = 1; threads <= 2; threads++) {
			omp_set_num_threads(threads);
			void *st = create(ops, cases[c][1], &w.l);
			memcpy(w.theta, start, w.l.total * sizeof *start);
			ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
			if (threads == 1)
				memcpy(one, w.theta, w.l.total * sizeof *one);
			else
				ck_assert_msg(memcmp(one, w.theta, w.l.total * sizeof *one) == 0,
					      "%s differs with 2 threads", cases[c][0]);
			ops->destroy(st);
		}
	}
	fedrun_arena_free(start);
	fedrun_arena_free(one);
	fedrun_arena_free(a);
	world_fini(&w);
#endif
}
END_TEST

/* ---- streaming (ABI 1.3) ------------------------------------------------ */

/* FedAvg in double, per tensor over its senders: θ_t + Σ_k p_k Δ_k / Σ_k p_k. */
static void ref_fedavg(const struct world *w, bool uniform, double *want)
{
	for (uint64_t e = 0; e < w->l.total; e++)
		want[e] = w->theta[e];
	for (uint32_t i = 0; i < w->l.n; i++) {
		const struct fedrun_tensor_info *t = &w->l.t[i];
		double tot = 0;
		for (uint32_t k = 0; k < w->n; k++)
			if (sent(w, k, i))
				tot += uniform ? 1.0 : (double)w->u[k].n_samples;
		for (uint32_t k = 0; k < w->n && tot > 0; k++) {
			if (!sent(w, k, i))
				continue;
			double p = (uniform ? 1.0 : (double)w->u[k].n_samples) / tot;
			for (uint64_t e = 0; e < t->numel; e++)
				want[t->offset + e] += p * sent(w, k, i)[e];
		}
	}
}

/* The streaming aggregators give the same bits whether the round's updates
 * arrive in one aggregate() call or in accumulate() calls of any sizes,
 * and fedavg's result is the direct computation; the aggregators whose rule
 * needs every update at once do not declare the streaming ops. */
START_TEST(streaming_does_not_depend_on_the_cut)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "emb", 2, 70, 33, 0);
	add(&w, "bias", 1, 5, 0, 0);
	add(&w, "out", 2, 300, 250, 0); /* past the kernels' parallel threshold */
	world_init(&w, 13);
	world_random(&w, 1, 0.1);
	w.tp[4][0] = NULL;
	w.tp[9][0] = NULL;
	for (uint32_t k = 0; k < w.n; k++)
		w.tp[k][1] = k % 3 == 0 ? w.tp[k][1] : NULL;
	float *start = fedrun_arena_alloc(w.l.total), *once = fedrun_arena_alloc(w.l.total);
	double *want = malloc(w.l.total * sizeof *want);
	memcpy(start, w.theta, w.l.total * sizeof *start);
	const char *cases[][2] = {{"fedavg", "{}"},
				  {"fedavg", "{\"weights\": \"uniform\"}"},
				  {"fedopt", "{\"method\": \"adam\", \"lr\": 0.05}"},
				  {"fedopt", "{\"method\": \"avgm\", \"weights\": \"uniform\"}"}};
	const uint32_t cuts[][5] = {{1}, {5}, {4, 1, 8}, {12, 1}};
	const size_t ncut[] = {1, 1, 3, 2};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct fedrun_aggregator_ops *ops = load(cases[c][0]);
		ck_assert_msg(FEDRUN_AGGREGATOR_STREAMS(ops), "%s does not stream", cases[c][0]);
		void *st = create(ops, cases[c][1], &w.l);
		memcpy(w.theta, start, w.l.total * sizeof *start);
		ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
		memcpy(once, w.theta, w.l.total * sizeof *once);
		ops->destroy(st);
		if (c < 2) {
			memcpy(w.theta, start, w.l.total * sizeof *start);
			ref_fedavg(&w, c == 1, want);
			for (uint64_t e = 0; e < w.l.total; e++)
				assert_close(once[e], want[e], 1e-6, cases[c][1]);
		}
		for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
			st = create(ops, cases[c][1], &w.l); /* fedopt's moments start afresh */
			memcpy(w.theta, start, w.l.total * sizeof *start);
			ck_assert_int_eq(ops->begin(st, &w.round), 0);
			uint32_t at = 0;
			for (size_t j = 0; at < w.n; j = j + 1 < ncut[k] ? j + 1 : j) {
				uint32_t len = cuts[k][j] < w.n - at ? cuts[k][j] : w.n - at;
				ck_assert_int_eq(ops->accumulate(st, &w.round, w.u + at, len), 0);
				at += len;
			}
			ck_assert_int_eq(ops->finish(st, &w.round, w.theta), 0);
			ck_assert_msg(memcmp(once, w.theta, w.l.total * sizeof *once) == 0,
				      "%s %s: cut %zu differs from one aggregate()", cases[c][0],
				      cases[c][1], k);
			ops->destroy(st);
		}
	}
	const char *buffered[] = {"fedatt", "median", "trimmed_mean", "krum", "meritfed"};
	for (size_t p = 0; p < sizeof buffered / sizeof *buffered; p++)
		ck_assert_msg(!FEDRUN_AGGREGATOR_STREAMS(load(buffered[p])), "%s streams", buffered[p]);
	free(want);
	fedrun_arena_free(start);
	fedrun_arena_free(once);
	world_fini(&w);
}
END_TEST

/* fedavg's weights are reported per client, n_k / n over the whole round,
 * after the last accumulate. */
START_TEST(fedavg_streaming_reports_weights)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "a", 1, 6, 0, 0);
	world_init(&w, 4);
	world_random(&w, 1, 0.1);
	const struct fedrun_aggregator_ops *ops = load("fedavg");
	void *st = create(ops, "{}", &w.l);
	metrics_clear();
	ck_assert_int_eq(ops->begin(st, &w.round), 0);
	ck_assert_int_eq(ops->accumulate(st, &w.round, w.u, 3), 0);
	ck_assert_int_eq(ops->accumulate(st, &w.round, w.u + 3, 1), 0);
	ck_assert_uint_eq(metric_count("fedavg.weight"), 0);
	ck_assert_int_eq(ops->finish(st, &w.round, w.theta), 0);
	ck_assert_uint_eq(metric_count("fedavg.weight"), 4);
	for (uint32_t k = 0; k < 4; k++) /* n_k = 10 (k + 1): n = 100 */
		assert_close(metric("fedavg.weight", k, NULL), (k + 1) / 10.0, 1e-12, "weight");
	/* A round with no update is refused at finish. */
	ck_assert_int_eq(ops->begin(st, &w.round), 0);
	ck_assert_int_eq(ops->finish(st, &w.round, w.theta), FEDRUN_EINVAL);
	ops->destroy(st);
	world_fini(&w);
}
END_TEST

/* FedNMT's weighted average (Wang et al. 2021, eqs. 2 and 3):
 * Z^t = Z^{t-1} + Σ_n N_n ΔΘ_n / Σ_n N_n, N_n the local steps of party n,
 * per tensor over its senders, computed directly here. The steps come with
 * each call (round_info.client_steps, parallel to that call's updates), so
 * a cut round sees the same weights; fedavg reports N_n / Σ N; a host that
 * does not report steps is refused. */
START_TEST(fedavg_steps_weights_are_fednmt_eq_3)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "emb", 2, 7, 5, 0);
	add(&w, "bias", 1, 9, 0, 0);
	world_init(&w, 5);
	world_random(&w, 1, 0.1);
	w.tp[3][1] = NULL; /* client 3 did not send "bias" */
	const uint64_t steps[5] = {3, 40, 7, 1, 12};
	float *start = fedrun_arena_alloc(w.l.total);
	memcpy(start, w.theta, w.l.total * sizeof *start);
	double *want = calloc(w.l.total, sizeof *want); /* padding stays 0 */
	ck_assert_ptr_nonnull(want);
	for (uint32_t i = 0; i < w.l.n; i++) {
		const struct fedrun_tensor_info *t = &w.l.t[i];
		double tot = 0;
		for (uint32_t k = 0; k < w.n; k++)
			tot += sent(&w, k, i) ? (double)steps[k] : 0;
		for (uint64_t e = 0; e < t->numel; e++) {
			double z = w.theta[t->offset + e];
			for (uint32_t k = 0; k < w.n; k++)
				if (sent(&w, k, i))
					z += (double)steps[k] / tot * sent(&w, k, i)[e];
			want[t->offset + e] = z;
		}
	}
	const char *configs[] = {"{\"weights\": \"steps\"}",
				 "{\"weights\": \"steps\", \"mu\": 0.1}"};
	const char *names[] = {"fedavg", "fedprox"};
	for (size_t c = 0; c < 2; c++) {
		const struct fedrun_aggregator_ops *ops = load_from("fedavg", (uint32_t)c, names[c]);
		void *st = create(ops, configs[c], &w.l);
		/* One aggregate() call: client_steps covers the whole round. */
		memcpy(w.theta, start, w.l.total * sizeof *start);
		w.round.client_steps = steps;
		metrics_clear();
		ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
		for (uint64_t e = 0; e < w.l.total; e++)
			assert_close(w.theta[e], want[e], 1e-6, names[c]);
		for (uint32_t k = 0; k < w.n; k++)
			assert_close(metric("fedavg.weight", k, NULL), steps[k] / 63.0, 1e-12,
				     "weight");
		/* Cut into calls of 2 and 3: each call's steps are its slice. */
		float *once = fedrun_arena_alloc(w.l.total);
		memcpy(once, w.theta, w.l.total * sizeof *once);
		memcpy(w.theta, start, w.l.total * sizeof *start);
		ck_assert_int_eq(ops->begin(st, &w.round), 0);
		w.round.client_steps = steps;
		ck_assert_int_eq(ops->accumulate(st, &w.round, w.u, 2), 0);
		w.round.client_steps = steps + 2;
		ck_assert_int_eq(ops->accumulate(st, &w.round, w.u + 2, 3), 0);
		w.round.client_steps = NULL;
		ck_assert_int_eq(ops->finish(st, &w.round, w.theta), 0);
		ck_assert(memcmp(once, w.theta, w.l.total * sizeof *once) == 0);
		fedrun_arena_free(once);
		/* A host without client_steps (NULL, or an ABI 1.4 round_info). */
		fedrun_error_clear();
		ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_EINVAL);
		ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "local steps"));
		w.round.client_steps = steps;
		w.round.size = offsetof(struct fedrun_round_info, client_steps);
		ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_EINVAL);
		w.round.size = sizeof w.round;
		ops->destroy(st);
	}
	/* fedopt avgm with momentum 0 and lr 1 is a plain step: eq. 3 again. */
	const struct fedrun_aggregator_ops *ops = load("fedopt");
	void *st = create(ops, "{\"method\": \"avgm\", \"lr\": 1, \"momentum\": 0, "
			       "\"weights\": \"steps\"}",
			  &w.l);
	memcpy(w.theta, start, w.l.total * sizeof *start);
	w.round.client_steps = steps;
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
	for (uint64_t e = 0; e < w.l.total; e++)
		assert_close(w.theta[e], want[e], 1e-6, "fedopt avgm");
	ops->destroy(st);
	free(want);
	fedrun_arena_free(start);
	world_fini(&w);
}
END_TEST

/* ---- fednova ------------------------------------------------------------ */

/* ||a||_1 of the local solver, by the recurrences of a_i (Wang et al.
 * 2020, sec. 5; FedNova.py's local_normalizing_vec), not the closed forms
 * the plugin uses: momentum ρ: c ← ρ c + 1, A += c per step; proximal
 * ημ: A ← (1 − ημ) A + 1 per step; plain SGD: A += 1. */
static double ref_a_norm(uint64_t tau, double rho, double etamu)
{
	double a = 0, c = 0;
	for (uint64_t s = 0; s < tau; s++) {
		if (rho > 0) {
			c = rho * c + 1;
			a += c;
		} else if (etamu > 0) {
			a = (1 - etamu) * a + 1;
		} else {
			a += 1;
		}
	}
	return a;
}

/* x + τ_eff Σ_k p_k Δ_k / A_k per tensor over its senders, p_k = n_k / Σ n
 * (or 1/m), τ_eff = Σ_k p_k A_k: the paper's FedNova update. */
static void ref_fednova(const struct world *w, const uint64_t *steps, double rho, double etamu,
			bool uniform, double *want)
{
	for (uint64_t e = 0; e < w->l.total; e++)
		want[e] = w->theta[e];
	for (uint32_t i = 0; i < w->l.n; i++) {
		const struct fedrun_tensor_info *t = &w->l.t[i];
		double tot = 0, tau_eff = 0;
		for (uint32_t k = 0; k < w->n; k++)
			if (sent(w, k, i))
				tot += uniform ? 1.0 : (double)w->u[k].n_samples;
		for (uint32_t k = 0; k < w->n; k++)
			if (sent(w, k, i))
				tau_eff += (uniform ? 1.0 : (double)w->u[k].n_samples) / tot *
					   ref_a_norm(steps[k], rho, etamu);
		for (uint32_t k = 0; k < w->n; k++) {
			if (!sent(w, k, i))
				continue;
			double p = (uniform ? 1.0 : (double)w->u[k].n_samples) / tot;
			double a = ref_a_norm(steps[k], rho, etamu);
			for (uint64_t e = 0; e < t->numel; e++)
				want[t->offset + e] += tau_eff * p / a * sent(w, k, i)[e];
		}
	}
}

/* One round of `config` over w (θ from start) in one aggregate() and in
 * accumulate() calls of sizes 2, 1, 3, ...: the same bits; θ_{t+1} in
 * w->theta. */
static void fednova_round(struct world *w, const char *config, const float *start)
{
	const struct fedrun_aggregator_ops *ops = load("fednova");
	ck_assert(FEDRUN_AGGREGATOR_STREAMS(ops));
	void *st = create(ops, config, &w->l);
	memcpy(w->theta, start, w->l.total * sizeof *start);
	ck_assert_msg(ops->aggregate(st, &w->round, w->u, w->n, w->theta) == 0, "%s: %s", config,
		      fedrun_error_message());
	ops->destroy(st);
	float *once = fedrun_arena_alloc(w->l.total);
	memcpy(once, w->theta, w->l.total * sizeof *once);
	st = create(ops, config, &w->l);
	memcpy(w->theta, start, w->l.total * sizeof *start);
	ck_assert_int_eq(ops->begin(st, &w->round), 0);
	const uint64_t *all = w->round.client_steps;
	for (uint32_t at = 0, len = 2; at < w->n; at += len, len = len % 3 + 1) {
		len = len < w->n - at ? len : w->n - at;
		w->round.client_steps = all + at;
		ck_assert_int_eq(ops->accumulate(st, &w->round, w->u + at, len), 0);
	}
	w->round.client_steps = all;
	ck_assert_int_eq(ops->finish(st, &w->round, w->theta), 0);
	ops->destroy(st);
	ck_assert_msg(memcmp(once, w->theta, w->l.total * sizeof *once) == 0,
		      "%s: streaming differs from aggregate()", config);
	fedrun_arena_free(once);
}

/* Unequal τ_k and n_k, a tensor one client did not send: the update is the
 * paper's (vanilla, momentum, proximal; sample and uniform weights), and
 * streaming gives aggregate()'s bits. */
START_TEST(fednova_matches_direct_computation)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "emb", 2, 7, 5, 0);
	add(&w, "bias", 1, 9, 0, 0);
	world_init(&w, 5);
	world_random(&w, 1, 0.1);
	w.tp[3][1] = NULL; /* client 3 did not send "bias" */
	const uint64_t steps[5] = {3, 40, 7, 1, 12};
	w.round.client_steps = steps;
	float *start = fedrun_arena_alloc(w.l.total);
	memcpy(start, w.theta, w.l.total * sizeof *start);
	double *want = malloc(w.l.total * sizeof *want);
	const struct {
		const char *config;
		double rho, etamu;
		bool uniform;
	} cases[] = {
	    {"{}", 0, 0, false},
	    {"{\"weights\": \"uniform\"}", 0, 0, true},
	    {"{\"momentum\": 0.9}", 0.9, 0, false},
	    {"{\"prox_mu\": 0.5, \"local_lr\": 0.1}", 0, 0.05, false},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		metrics_clear();
		fednova_round(&w, cases[c].config, start);
		memcpy(w.theta, start, w.l.total * sizeof *start);
		ref_fednova(&w, steps, cases[c].rho, cases[c].etamu, cases[c].uniform, want);
		fednova_round(&w, cases[c].config, start);
		for (uint32_t i = 0; i < w.l.n; i++)
			for (uint64_t e = 0; e < w.l.t[i].numel; e++) {
				uint64_t j = w.l.t[i].offset + e;
				assert_close(w.theta[j], want[j], 1e-6, cases[c].config);
			}
		/* It is not FedAvg: the steps are unequal. */
		double most = 0, nova0[35];
		for (uint64_t e = 0; e < w.l.t[0].numel; e++)
			nova0[e] = w.theta[e];
		memcpy(w.theta, start, w.l.total * sizeof *start);
		ref_fedavg(&w, cases[c].uniform, want);
		for (uint64_t e = 0; e < w.l.t[0].numel; e++)
			most = fmax(most, fabs(want[e] - nova0[e]));
		ck_assert(most > 1e-3);
		assert_close(metric("fednova.a_norm", 1, NULL),
			     ref_a_norm(40, cases[c].rho, cases[c].etamu), 1e-12, "a_norm");
	}
	fedrun_arena_free(start);
	free(want);
	world_fini(&w);
}
END_TEST

/* Every client made the same number of steps: the normalisers cancel and
 * FedNova is FedAvg (Wang et al. 2020, sec. 5), here to the bit, in every
 * normalisation and with either weights. */
START_TEST(fednova_equal_steps_is_fedavg_bitwise)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "emb", 2, 70, 33, 0);
	add(&w, "out", 2, 300, 250, 0); /* past the parallel threshold */
	world_init(&w, 6);
	world_random(&w, 1, 0.1);
	w.tp[2][0] = NULL;
	const uint64_t steps[6] = {13, 13, 13, 13, 13, 13};
	w.round.client_steps = steps;
	float *start = fedrun_arena_alloc(w.l.total), *avg = fedrun_arena_alloc(w.l.total);
	memcpy(start, w.theta, w.l.total * sizeof *start);
	const char *cases[][2] = {{"{}", "{}"},
				  {"{\"momentum\": 0.9}", "{}"},
				  {"{\"prox_mu\": 0.01, \"local_lr\": 0.3}", "{}"},
				  {"{\"weights\": \"uniform\"}", "{\"weights\": \"uniform\"}"}};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct fedrun_aggregator_ops *ops = load("fedavg");
		void *st = create(ops, cases[c][1], &w.l);
		memcpy(w.theta, start, w.l.total * sizeof *start);
		ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
		ops->destroy(st);
		memcpy(avg, w.theta, w.l.total * sizeof *avg);
		fednova_round(&w, cases[c][0], start);
		ck_assert_msg(memcmp(avg, w.theta, w.l.total * sizeof *avg) == 0,
			      "fednova %s is not fedavg's bits", cases[c][0]);
	}
	fedrun_arena_free(start);
	fedrun_arena_free(avg);
	world_fini(&w);
}
END_TEST

/* server_momentum β (FedNova.py's gmf): v ← β v + D, x ← x + v over two
 * rounds, D the FedNova step; v is the state blob "m". */
START_TEST(fednova_server_momentum_two_rounds)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "x", 1, 11, 0, 0);
	world_init(&w, 3);
	world_random(&w, 1, 0.1);
	const uint64_t steps[3] = {2, 9, 5};
	w.round.client_steps = steps;
	double *d = malloc(w.l.total * sizeof *d), *v = calloc(w.l.total, sizeof *v);
	double *x = malloc(w.l.total * sizeof *x);
	for (uint64_t e = 0; e < w.l.total; e++)
		x[e] = w.theta[e];
	const struct fedrun_aggregator_ops *ops = load("fednova");
	void *st = create(ops, "{\"server_momentum\": 0.5}", &w.l);
	for (int t = 0; t < 2; t++) {
		ref_fednova(&w, steps, 0, 0, false, d); /* θ + D */
		for (uint64_t e = 0; e < w.l.total; e++) {
			v[e] = 0.5 * v[e] + (d[e] - w.theta[e]);
			x[e] += v[e];
		}
		ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), 0);
		for (uint64_t e = 0; e < w.l.total; e++)
			assert_close(w.theta[e], x[e], 1e-5, "server momentum");
	}
	const struct fedrun_state_blob *blobs;
	uint32_t nb = 0;
	ck_assert_int_eq(ops->state(st, &blobs, &nb), 0);
	ck_assert_uint_ge(nb, 1);
	ck_assert_str_eq(blobs[0].name, "m");
	for (uint64_t e = 0; e < w.l.total; e++)
		assert_close(((const float *)blobs[0].data)[e], v[e], 1e-5, "blob m");
	ops->destroy(st);
	/* Without server momentum there is no state. */
	st = create(ops, "{}", &w.l);
	ck_assert_int_eq(ops->state(st, &blobs, &nb), 0);
	ck_assert_uint_eq(nb, 0);
	ops->destroy(st);
	free(d);
	free(v);
	free(x);
	world_fini(&w);
}
END_TEST

/* A model that does not count its steps (0), a host without client_steps,
 * and bad options are refused with messages naming them. */
START_TEST(fednova_refusals)
{
	struct world w = {0};
	fedrun_layout_init(&w.l);
	add(&w, "x", 1, 4, 0, 0);
	world_init(&w, 3);
	world_random(&w, 1, 0.1);
	const struct fedrun_aggregator_ops *ops = load("fednova");
	void *st = create(ops, "{}", &w.l);
	fedrun_error_clear();
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "local steps"));
	const uint64_t steps[3] = {4, 0, 2};
	w.round.client_steps = steps;
	ck_assert_int_eq(ops->aggregate(st, &w.round, w.u, w.n, w.theta), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "client 1 made 0 local steps") &&
			  strstr(fedrun_error_message(), "does not report its local steps"),
		      "%s", fedrun_error_message());
	ops->destroy(st);
	refuse(ops, "{\"weights\": \"steps\"}", "weights", &w.l);
	refuse(ops, "{\"momentum\": 1}", "momentum", &w.l);
	refuse(ops, "{\"momentum\": -0.1}", "momentum", &w.l);
	refuse(ops, "{\"prox_mu\": -1}", "prox_mu", &w.l);
	refuse(ops, "{\"prox_mu\": 0.1}", "local_lr", &w.l);
	refuse(ops, "{\"prox_mu\": 10, \"local_lr\": 0.1}", "local_lr", &w.l);
	refuse(ops, "{\"prox_mu\": 0.1, \"local_lr\": 0.1, \"momentum\": 0.9}", "momentum", &w.l);
	refuse(ops, "{\"server_momentum\": 1}", "server_momentum", &w.l);
	refuse(ops, "{\"mu\": 1}", "mu", &w.l);
	/* prox_mu reaches the clients as FedProx's. */
	st = create(ops, "{\"prox_mu\": 0.25, \"local_lr\": 0.1}", &w.l);
	struct fedrun_client_hints h = {.size = sizeof h};
	ck_assert_int_eq(ops->configure_clients(st, &h), 0);
	ck_assert_double_eq(h.prox_mu, 0.25);
	ops->destroy(st);
	world_fini(&w);
}
END_TEST

static Suite *aggregators_suite(void)
{
	Suite *s = suite_create("aggregators");
	TCase *tc = tcase_create("fedatt");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, fedatt_frobenius_matches_eqs_2_to_4);
	tcase_add_test(tc, fedatt_spectral_norm_of_known_matrices);
	tcase_add_test(tc, fedatt_noise_is_eq_6_and_reproducible);
	suite_add_tcase(s, tc);

	tc = tcase_create("fedopt");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, fedopt_adam_three_rounds);
	tcase_add_test(tc, fedopt_yogi_three_rounds);
	tcase_add_test(tc, fedopt_adagrad_three_rounds);
	tcase_add_test(tc, fedopt_avgm_three_rounds);
	tcase_add_test(tc, fedopt_state_blobs_resume);
	tcase_add_test(tc, fedopt_zero_samples_is_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("robust");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, median_constructed);
	tcase_add_test(tc, median_random_with_ties_and_partial);
	tcase_add_test(tc, trimmed_mean_constructed);
	tcase_add_test(tc, trimmed_mean_random_with_ties_and_partial);
	tcase_add_test(tc, krum_and_multi_krum);
	suite_add_tcase(s, tc);

	tc = tcase_create("meritfed");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, meritfed_one_md_step_matches_direct_computation);
	tcase_add_test(tc, meritfed_weights_move_to_the_good_client);
	tcase_add_test(tc, meritfed_zeroth_equals_first_for_two_clients);
	tcase_add_test(tc, meritfed_adam_gradient_matches_finite_differences);
	tcase_add_test(tc, meritfed_warm_start_and_state);
	tcase_add_test(tc, meritfed_warm_rounds_match_direct_computation);
	tcase_add_test(tc, meritfed_trivial_rounds_evaluate_nothing);
	tcase_add_test(tc, meritfed_needs_loss_grad_and_a_real_target);
	suite_add_tcase(s, tc);

	tc = tcase_create("common");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bad_configs_name_their_key);
	tcase_add_test(tc, defaults_are_resolved);
	tcase_add_test(tc, non_finite_update_is_refused);
	tcase_add_test(tc, results_do_not_depend_on_threads);
	suite_add_tcase(s, tc);

	tc = tcase_create("stream");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, streaming_does_not_depend_on_the_cut);
	tcase_add_test(tc, fedavg_streaming_reports_weights);
	tcase_add_test(tc, fedavg_steps_weights_are_fednmt_eq_3);
	suite_add_tcase(s, tc);

	tc = tcase_create("fednova");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, fednova_matches_direct_computation);
	tcase_add_test(tc, fednova_equal_steps_is_fedavg_bitwise);
	tcase_add_test(tc, fednova_server_momentum_two_rounds);
	tcase_add_test(tc, fednova_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(aggregators_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
