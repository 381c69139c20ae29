/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun check-aggregator`: loads one aggregator plugin and runs it through
 * its ops on synthetic updates (five tensors of varied shapes, one of them
 * big enough for the plugins' parallel loops, drawn from a fixed seed), the
 * ops called as the engine calls them (core/engine/engine.c, run_round):
 * create and configure_clients, then begin, accumulate (on one OpenMP
 * thread) and finish for a streaming aggregator, aggregate otherwise. Each
 * check gets a fresh instance, so a stateful rule (a server optimizer) is
 * always in its first round. It prints one line per property:
 * PASS/FAIL/SKIP for the properties of the FedAvg family, INFO for what it
 * only reports (which weighting, which metrics). */
#include "config.h"
#ifdef _OPENMP
#include <omp.h>
#endif
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/fedrun.h"
#include "fedrun/pipeline.h"
#include "commands.h"
#include "cmd_check_aggregator.h"

#define NCLIENTS 6	/* the most updates a check aggregates */
#define NTENSORS 5
#define SEED 20240917u	/* the synthetic data's */
#define THREADS_DEFAULT 4
#define METRICS_MAX 16
/* Tolerance of a result against its value computed in double: 4 units in
 * the last place of a float, relative to |θ_t| + |the step|. */
#define TOL 0x1p-21

static const char *const tensor_names[NTENSORS] = {"enc.weight", "enc.bias", "dec.weight",
						   "scale", "big"};
static const uint32_t tensor_ndim[NTENSORS] = {2, 1, 3, 1, 2};
static const uint64_t tensor_shape[NTENSORS][3] = {{24, 16}, {16}, {3, 5, 7}, {1}, {320, 256}};
/* Client k's samples and local steps (in different proportions, so that the
 * weighting can be told). */
static const uint64_t client_samples[NCLIENTS] = {10, 30, 20, 50, 40, 60};
static const uint64_t client_steps[NCLIENTS] = {3, 5, 4, 9, 2, 7};

struct chk {
	const struct fedrun_plugin *desc;
	const struct fedrun_aggregator_ops *ops;
	struct fedrun_host host;
	json_t *config;	  /* the aggregator section */
	struct fedrun_layout l;
	float *theta;	  /* θ_t */
	float *delta[NCLIENTS]; /* client k's Δ_k */
	float *bad;	  /* a copy of a Δ with one non-finite value */
	float *out[4];	  /* results */
	double *want;	  /* an expected result, in double */
	bool streams;
	uint32_t threads;	  /* --threads */
	uint32_t cur_threads; /* what host->threads says now */
	uint32_t clients;	  /* what host->clients says: the updates of the check */
	char metrics[METRICS_MAX][64];
	uint32_t nmetrics;
	uint32_t pass, fail, skip;
};

/* One round's updates: client k is update k, sending the tensors that
 * tens[k] does not leave NULL. */
struct round {
	uint32_t n;
	const float *tens[NCLIENTS][NTENSORS];
	struct fedrun_update u[NCLIENTS];
	struct fedrun_round_info info;
};

/* Keeps the names of the metrics reported (the INFO line about them). */
static int h_metric(void *ctx, const char *name, int64_t client, const char *tensor, double v)
{
	struct chk *c = ctx;
	(void)client;
	(void)tensor;
	(void)v;
	for (uint32_t i = 0; i < c->nmetrics; i++)
		if (!strcmp(c->metrics[i], name))
			return 0;
	if (c->nmetrics < METRICS_MAX)
		snprintf(c->metrics[c->nmetrics++], sizeof c->metrics[0], "%s", name);
	return 0;
}

static uint32_t h_threads(void *ctx)
{
	return ((struct chk *)ctx)->cur_threads;
}

static uint64_t h_seed(void *ctx)
{
	(void)ctx;
	return SEED;
}

static const char *h_run_dir(void *ctx)
{
	(void)ctx;
	return NULL;
}

static bool h_false(void *ctx)
{
	(void)ctx;
	return false;
}

static uint32_t h_clients(void *ctx, uint32_t *per_round)
{
	struct chk *c = ctx;
	if (per_round)
		*per_round = c->clients;
	return c->clients;
}

static void set_threads(struct chk *c, uint32_t t)
{
	c->cur_threads = t;
#ifdef _OPENMP
	omp_set_num_threads((int)t);
#endif
}

static void report(struct chk *c, const char *status, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void report(struct chk *c, const char *status, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%-4s  %s: ", status, name);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	fflush(stdout);
	c->pass += status[0] == 'P';
	c->fail += status[0] == 'F';
	c->skip += status[0] == 'S';
}

/* The last error message, shortened for a report line. */
static const char *last_error(char *buf, size_t len)
{
	const char *m = fedrun_error_message();
	snprintf(buf, len, "%s", *m ? m : "(no message)");
	return buf;
}

/* n updates of clients 0..n-1, each sending every tensor of its own Δ. */
static void round_init(const struct chk *c, struct round *r, uint32_t n)
{
	memset(r, 0, sizeof *r);
	r->n = n;
	for (uint32_t k = 0; k < n; k++) {
		for (uint32_t i = 0; i < NTENSORS; i++)
			r->tens[k][i] = c->delta[k] + c->l.t[i].offset;
		r->u[k] = (struct fedrun_update){.client = k, .n_samples = client_samples[k],
						 .train_loss = 1.0, .tensor = r->tens[k]};
	}
	r->info = (struct fedrun_round_info){
		.size = sizeof r->info, .round = 1, .rounds = 1, .num_clients = n, .seed = SEED,
		.layout = &c->l, .sampled = n, .fraction = 1.0, .direction = FEDRUN_PULL,
		.num_trainable = n, .client_steps = client_steps};
}

/* Every client k sends the tensors i with (k + i) % 3 != 0: each tensor has
 * senders, no two clients the same set. */
static void round_mixed(const struct chk *c, struct round *r)
{
	round_init(c, r, NCLIENTS);
	for (uint32_t k = 0; k < NCLIENTS; k++)
		for (uint32_t i = 0; i < NTENSORS; i++)
			if ((k + i) % 3 == 0)
				r->tens[k][i] = NULL;
}

enum how { HOW_ENGINE, HOW_AGGREGATE };

/* One round with a fresh instance, params set to θ_t first. HOW_ENGINE:
 * as the engine runs a round of these few clients (a streaming aggregator
 * gets begin, accumulate with at most `chunk` updates a call (0: all of
 * them, as the engine's chunk of at least 8 clients does), and finish);
 * HOW_AGGREGATE: aggregate() with every update (what the engine calls for
 * a non-streaming aggregator, or with a server-side attack). */
static int run_round(struct chk *c, struct round *r, enum how how, uint32_t chunk,
		     uint32_t threads, float *params)
{
	void *st = NULL;
	memcpy(params, c->theta, c->l.total * sizeof *params);
	c->clients = r->n;
	set_threads(c, threads);
	int rc = c->ops->create(&c->host, c->config, &c->l, &st);
	if (rc < 0)
		return fedrun_error_wrap(rc, "create: ");
	if (c->ops->size >= offsetof(struct fedrun_aggregator_ops, configure_clients) + sizeof(void *) &&
	    c->ops->configure_clients) {
		struct fedrun_client_hints hints = {.size = sizeof hints};
		if ((rc = c->ops->configure_clients(st, &hints)) < 0) {
			c->ops->destroy(st);
			return fedrun_error_wrap(rc, "configure_clients: ");
		}
	}
	if (c->streams && how == HOW_ENGINE) {
		if (chunk == 0)
			chunk = r->n;
		rc = c->ops->begin(st, &r->info);
		for (uint32_t base = 0; rc >= 0 && base < r->n; base += chunk) {
			uint32_t n = r->n - base < chunk ? r->n - base : chunk;
			/* the updates of the call, their local steps beside them */
			r->info.client_steps = client_steps + base;
			set_threads(c, 1);
			rc = c->ops->accumulate(st, &r->info, r->u + base, n);
			set_threads(c, threads);
		}
		r->info.client_steps = client_steps;
		if (rc >= 0)
			rc = c->ops->finish(st, &r->info, params);
	} else {
		rc = c->ops->aggregate(st, &r->info, r->u, r->n, params);
	}
	c->ops->destroy(st);
	return rc;
}

/* want = θ_t + Σ_k p_k Δ_k / Σ_k p_k per tensor over the senders in r. */
static void weighted_mean(const struct chk *c, const struct round *r, const double *p)
{
	for (uint32_t i = 0; i < NTENSORS; i++) {
		const struct fedrun_tensor_info *t = &c->l.t[i];
		double tot = 0;
		for (uint32_t k = 0; k < r->n; k++)
			tot += r->tens[k][i] ? p[k] : 0;
		for (uint64_t j = 0; j < t->numel; j++) {
			double s = 0;
			for (uint32_t k = 0; k < r->n; k++)
				s += r->tens[k][i] ? p[k] * r->tens[k][i][j] : 0;
			c->want[t->offset + j] = c->theta[t->offset + j] + (tot > 0 ? s / tot : 0);
		}
	}
}

/* Whether got is want within TOL in the tensors of `mask` (bit i: tensor
 * i); if not, where it is furthest off goes into why. */
static bool near(const struct chk *c, const float *got, uint32_t mask, char *why, size_t len)
{
	double worst = 1;
	uint32_t wi = 0;
	uint64_t wj = 0;
	for (uint32_t i = 0; i < NTENSORS; i++) {
		if (!(mask >> i & 1))
			continue;
		const struct fedrun_tensor_info *t = &c->l.t[i];
		for (uint64_t j = 0; j < t->numel; j++) {
			double g = got[t->offset + j], w = c->want[t->offset + j];
			double th = c->theta[t->offset + j];
			double tol = TOL * (fabs(th) + fabs(w - th));
			/* how many tolerances off (a NaN is infinitely off) */
			double off = isfinite(g) ? fabs(g - w) / tol : INFINITY;
			if (off > worst) {
				worst = off;
				wi = i;
				wj = j;
			}
		}
	}
	if (worst <= 1)
		return true;
	const struct fedrun_tensor_info *t = &c->l.t[wi];
	snprintf(why, len, "tensor %s element %" PRIu64 ": got %.9g, want %.9g (theta_t %.9g)",
		 t->name, wj, got[t->offset + wj], c->want[t->offset + wj],
		 c->theta[t->offset + wj]);
	return false;
}

/* Whether a and b hold the same bits; if not, the first difference. */
static bool same_bits(const struct chk *c, const float *a, const float *b, char *why, size_t len)
{
	for (uint32_t i = 0; i < NTENSORS; i++) {
		const struct fedrun_tensor_info *t = &c->l.t[i];
		for (uint64_t j = 0; j < t->numel; j++)
			if (memcmp(a + t->offset + j, b + t->offset + j, sizeof *a)) {
				snprintf(why, len, "tensor %s element %" PRIu64 ": %a and %a", t->name,
					 j, a[t->offset + j], b[t->offset + j]);
				return false;
			}
	}
	return true;
}

#define ALL_TENSORS ((1u << NTENSORS) - 1)

static void check_single(struct chk *c)
{
	struct round r;
	char why[512];
	round_init(c, &r, 1);
	if (run_round(c, &r, HOW_ENGINE, 0, c->threads, c->out[0]) < 0) {
		report(c, "FAIL", "single", "one client's round refused: %s", last_error(why, sizeof why));
		return;
	}
	double p = 1;
	weighted_mean(c, &r, &p);
	if (near(c, c->out[0], ALL_TENSORS, why, sizeof why))
		report(c, "PASS", "single", "one client: theta_t + its update");
	else
		report(c, "FAIL", "single", "one client: not theta_t + its update: %s", why);
}

static void check_identical(struct chk *c)
{
	struct round r;
	char why[512];
	const uint32_t n = 5;
	round_init(c, &r, n);
	for (uint32_t k = 1; k < n; k++)
		memcpy(r.tens[k], r.tens[0], sizeof r.tens[0]);
	if (run_round(c, &r, HOW_ENGINE, 0, c->threads, c->out[0]) < 0) {
		report(c, "FAIL", "identical", "refused: %s", last_error(why, sizeof why));
		return;
	}
	double p[NCLIENTS] = {1, 1, 1, 1, 1, 1};
	weighted_mean(c, &r, p);
	if (near(c, c->out[0], ALL_TENSORS, why, sizeof why))
		report(c, "PASS", "identical", "%u clients sending the same update: theta_t + it", n);
	else
		report(c, "FAIL", "identical", "%u clients sending the same update: %s", n, why);
}

/* Client 0 sends everything, client 1 enc.weight and big, client 2
 * enc.weight: enc.bias, dec.weight and scale come from client 0 alone. */
static void check_partial(struct chk *c)
{
	struct round r;
	char why[512];
	round_init(c, &r, 3);
	for (uint32_t i = 1; i < NTENSORS; i++) {
		if (i != 4)
			r.tens[1][i] = NULL;
		r.tens[2][i] = NULL;
	}
	if (run_round(c, &r, HOW_ENGINE, 0, c->threads, c->out[0]) < 0) {
		report(c, "FAIL", "partial", "a round of partial updates refused: %s",
		       last_error(why, sizeof why));
		return;
	}
	double p[NCLIENTS] = {1, 1, 1};
	weighted_mean(c, &r, p);
	const uint32_t alone = 1u << 1 | 1u << 2 | 1u << 3;
	if (near(c, c->out[0], alone, why, sizeof why))
		report(c, "PASS", "partial",
		       "a tensor one client of 3 sent (the others' updates lack it): theta_t + "
		       "that client's");
	else
		report(c, "FAIL", "partial",
		       "a tensor one client of 3 sent is not theta_t + that client's (not "
		       "renormalised over the senders?): %s",
		       why);
}

static void check_unsent(struct chk *c)
{
	struct round r;
	char why[512];
	round_init(c, &r, 3);
	for (uint32_t k = 0; k < 3; k++)
		r.tens[k][2] = NULL;
	if (run_round(c, &r, HOW_ENGINE, 0, c->threads, c->out[0]) < 0) {
		report(c, "FAIL", "unsent", "a round with a tensor nobody sent refused: %s",
		       last_error(why, sizeof why));
		return;
	}
	const struct fedrun_tensor_info *t = &c->l.t[2];
	for (uint64_t j = 0; j < t->numel; j++)
		if (memcmp(c->out[0] + t->offset + j, c->theta + t->offset + j, sizeof(float))) {
			report(c, "FAIL", "unsent",
			       "tensor %s, sent by no client, moved: element %" PRIu64 " %a, was %a",
			       t->name, j, c->out[0][t->offset + j], c->theta[t->offset + j]);
			return;
		}
	report(c, "PASS", "unsent", "a tensor no client sent keeps theta_t, bit for bit");
}

static void check_nonfinite(struct chk *c)
{
	static const struct {
		const char *what;
		uint32_t tensor;
		uint64_t elem;
	} cases[] = {{"NaN", 4, 12345}, {"+Inf", 1, 3}, {"-Inf", 3, 0}};
	const float vals[] = {NAN, INFINITY, -INFINITY};
	char first[512] = "";
	for (uint32_t q = 0; q < sizeof cases / sizeof *cases; q++) {
		struct round r;
		round_init(c, &r, 3);
		memcpy(c->bad, c->delta[1], c->l.total * sizeof *c->bad);
		const struct fedrun_tensor_info *t = &c->l.t[cases[q].tensor];
		c->bad[t->offset + cases[q].elem] = vals[q];
		for (uint32_t i = 0; i < NTENSORS; i++)
			r.tens[1][i] = c->bad + c->l.t[i].offset;
		if (run_round(c, &r, HOW_ENGINE, 0, c->threads, c->out[0]) >= 0) {
			bool finite = fedrun_vec_finite(c->l.total, c->out[0], NULL);
			report(c, "FAIL", "nonfinite",
			       "a %s in client 1's tensor %s was accepted (the model %s)",
			       cases[q].what, t->name,
			       finite ? "stayed finite" : "got non-finite values");
			return;
		}
		if (q == 0)
			last_error(first, sizeof first);
	}
	report(c, "PASS", "nonfinite", "a NaN, +Inf or -Inf in an update is refused (\"%s\")", first);
}

static void check_stream(struct chk *c)
{
	struct round r;
	char why[512];
	if (!c->streams) {
		report(c, "SKIP", "stream",
		       "no streaming ops (begin, accumulate, finish): the host buffers each round");
		return;
	}
	static const uint32_t chunks[] = {0, 4, 1};
	round_mixed(c, &r);
	if (run_round(c, &r, HOW_AGGREGATE, 0, c->threads, c->out[0]) < 0) {
		report(c, "FAIL", "stream", "aggregate() refused a round: %s", last_error(why, sizeof why));
		return;
	}
	for (uint32_t q = 0; q < sizeof chunks / sizeof *chunks; q++) {
		round_mixed(c, &r);
		if (run_round(c, &r, HOW_ENGINE, chunks[q], c->threads, c->out[1]) < 0) {
			report(c, "FAIL", "stream", "streaming refused a round: %s",
			       last_error(why, sizeof why));
			return;
		}
		if (!same_bits(c, c->out[0], c->out[1], why, sizeof why)) {
			report(c, "FAIL", "stream",
			       "aggregate() and begin, accumulate of %u updates a call, finish differ: %s",
			       chunks[q] ? chunks[q] : NCLIENTS, why);
			return;
		}
	}
	report(c, "PASS", "stream",
	       "aggregate() equals begin, accumulate, finish, with %u, 4 + 2 and 1 update a call, "
	       "bit for bit",
	       NCLIENTS);
}

static void check_threads(struct chk *c)
{
	struct round r;
	char why[512];
#ifndef _OPENMP
	report(c, "SKIP", "threads", "fedrun was built without OpenMP: one thread only");
	return;
#endif
	if (c->threads < 2) {
		report(c, "SKIP", "threads", "--threads 1: nothing to compare");
		return;
	}
	/* whole updates: a rule that needs them (krum) is checked too */
	round_init(c, &r, NCLIENTS);
	if (run_round(c, &r, HOW_ENGINE, 0, 1, c->out[0]) < 0) {
		report(c, "FAIL", "threads", "refused a round: %s", last_error(why, sizeof why));
		return;
	}
	round_init(c, &r, NCLIENTS);
	if (run_round(c, &r, HOW_ENGINE, 0, c->threads, c->out[1]) < 0) {
		report(c, "FAIL", "threads", "refused a round with %u threads: %s", c->threads,
		       last_error(why, sizeof why));
		return;
	}
	if (same_bits(c, c->out[0], c->out[1], why, sizeof why))
		report(c, "PASS", "threads", "1 and %u threads give the same bits", c->threads);
	else
		report(c, "FAIL", "threads", "1 and %u threads differ: %s", c->threads, why);
}

/* Which weighted mean the plugin computes, if any (reported, not judged). */
static void info_weighted(struct chk *c)
{
	struct round r;
	char why[512], first[512] = "";
	round_init(c, &r, 4);
	if (run_round(c, &r, HOW_ENGINE, 0, c->threads, c->out[0]) < 0) {
		report(c, "INFO", "weighted", "refused a round of 4 clients: %s",
		       last_error(why, sizeof why));
		return;
	}
	static const char *const names[] = {"sum n_k Delta_k / sum n_k (weighted by samples)",
					    "the plain mean of the updates (uniform weights)",
					    "sum s_k Delta_k / sum s_k (weighted by local steps)"};
	double p[3][NCLIENTS];
	for (uint32_t k = 0; k < 4; k++) {
		p[0][k] = (double)client_samples[k];
		p[1][k] = 1;
		p[2][k] = (double)client_steps[k];
	}
	for (uint32_t w = 0; w < 3; w++) {
		weighted_mean(c, &r, p[w]);
		if (near(c, c->out[0], ALL_TENSORS, w ? why : first, sizeof why)) {
			report(c, "INFO", "weighted", "4 clients of unequal samples: theta_t + %s",
			       names[w]);
			return;
		}
	}
	report(c, "INFO", "weighted",
	       "4 clients of unequal samples: not a mean weighted by samples, uniformly or by "
	       "steps (against the samples-weighted one: %s)",
	       first);
}

static void info_metrics(struct chk *c)
{
	char list[METRICS_MAX * 66] = "", step[96];
	size_t at = 0;
	snprintf(step, sizeof step, "%s.step_norm", c->desc->name);
	bool has_step = false;
	for (uint32_t i = 0; i < c->nmetrics; i++) {
		at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "",
				       c->metrics[i]);
		has_step |= !strcmp(c->metrics[i], step);
	}
	if (c->nmetrics == 0)
		report(c, "INFO", "metrics", "none reported (no %s)", step);
	else
		report(c, "INFO", "metrics", "%s%s%s", list, has_step ? "" : "; no ",
		       has_step ? "" : step);
}

/* The synthetic data: θ_t uniform in [-1, 1) (never 0: -0 and +0 differ in
 * bits), each Δ_k normal with standard deviation 1e-3. */
static int make_data(struct chk *c)
{
	fedrun_layout_init(&c->l);
	for (uint32_t i = 0; i < NTENSORS; i++) {
		int rc = fedrun_layout_add(&c->l, tensor_names[i], tensor_ndim[i], tensor_shape[i]);
		if (rc < 0)
			return rc;
	}
	uint64_t total = c->l.total;
	bool ok = (c->theta = fedrun_arena_alloc(total)) && (c->bad = fedrun_arena_alloc(total)) &&
		  (c->want = calloc(total, sizeof *c->want));
	for (uint32_t k = 0; ok && k < NCLIENTS; k++)
		ok = (c->delta[k] = fedrun_arena_alloc(total)) != NULL;
	for (uint32_t q = 0; ok && q < sizeof c->out / sizeof *c->out; q++)
		ok = (c->out[q] = fedrun_arena_alloc(total)) != NULL;
	if (!ok)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for %" PRIu64 " parameters", total);
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, SEED, 0, 0, 0);
	for (uint32_t i = 0; i < NTENSORS; i++) {
		const struct fedrun_tensor_info *t = &c->l.t[i];
		for (uint64_t j = 0; j < t->numel; j++) {
			float x = (float)(2 * fedrun_rng_uniform(&rng) - 1);
			c->theta[t->offset + j] = x != 0 ? x : 0.5f;
			for (uint32_t k = 0; k < NCLIENTS; k++)
				c->delta[k][t->offset + j] = (float)(1e-3 * fedrun_rng_normal(&rng));
		}
	}
	return 0;
}

static void free_data(struct chk *c)
{
	fedrun_arena_free(c->theta);
	fedrun_arena_free(c->bad);
	for (uint32_t k = 0; k < NCLIENTS; k++)
		fedrun_arena_free(c->delta[k]);
	for (uint32_t q = 0; q < sizeof c->out / sizeof *c->out; q++)
		fedrun_arena_free(c->out[q]);
	free(c->want);
	fedrun_layout_fini(&c->l);
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"Usage: fedrun check-aggregator [OPTIONS] NAME|FILE.so\n"
		"Runs an aggregator plugin on synthetic updates and reports, one line each,\n"
		"the properties of federated averaging it has (PASS, FAIL or SKIP) and, as INFO,\n"
		"its weighting and metrics.\n"
		"\n"
		"  -t, --threads N        threads to compare with one (default %d)\n"
		"  -s, --set KEY=VALUE    an option of the plugin, as in the pipeline's\n"
		"                         aggregator section (repeatable)\n"
		"      --allow-plugin-paths  load FILE.so (runs its code)\n"
		"  -h, --help             this help\n"
		"\n"
		"Exit status: 0 every property checked holds, 1 one fails (or the plugin\n"
		"cannot run here), 2 usage or a bad option, 3 the plugin could not be loaded.\n"
		"See fedrun-check-aggregator(1).\n",
		THREADS_DEFAULT);
}

/* The plugin: a name in the search path, or (with a '/' or ending in
 * ".so") a file, whose first aggregator is checked. */
static int load(struct fedrun_registry *reg, const char *arg, bool allow_paths,
		const struct fedrun_plugin **desc, const char **file)
{
	size_t len = strlen(arg);
	if (!strchr(arg, '/') && !(len > 3 && !strcmp(arg + len - 3, ".so")))
		return fedrun_registry_find(reg, FEDRUN_KIND_AGGREGATOR, arg, NULL, desc, file);
	if (!allow_paths)
		return fedrun_error(FEDRUN_EPLUGIN,
				    "%s: a plugin file is loaded only with --allow-plugin-paths "
				    "(loading a plugin runs its code)",
				    arg);
	const struct fedrun_plugin *const *list;
	uint32_t n;
	int rc = fedrun_registry_open(reg, arg, &list, &n);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < n; i++)
		if (list[i]->kind == FEDRUN_KIND_AGGREGATOR) {
			*desc = list[i];
			*file = arg;
			return 0;
		}
	return fedrun_error(FEDRUN_EPLUGIN, "%s: the file holds no aggregator plugin", arg);
}

int fedrun_cmd_check_aggregator(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"threads", required_argument, NULL, 't'},
		{"set", required_argument, NULL, 's'},
		{"allow-plugin-paths", no_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	struct chk c = {.threads = THREADS_DEFAULT};
	const char **sets = calloc((size_t)argc + 1, sizeof *sets);
	int nsets = 0, opt, status = 0;
	bool allow_paths = false;
	if (!sets) {
		fprintf(stderr, "fedrun check-aggregator: out of memory\n");
		return 1;
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, "t:s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 't': {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (end == optarg || *end || n < 1 || n > 1024) {
				fprintf(stderr,
					"fedrun check-aggregator: --threads: expected an integer in "
					"[1, 1024], got '%s'\n",
					optarg);
				free(sets);
				return 2;
			}
			c.threads = (uint32_t)n;
			break;
		}
		case 's': sets[nsets++] = optarg; break;
		case 'P': allow_paths = true; break;
		case 'h': usage(stdout); free(sets); return 0;
		default: usage(stderr); free(sets); return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fedrun check-aggregator: %s\n",
			optind == argc ? "missing the plugin (a name or a file)"
				       : "expected one plugin, got more arguments");
		usage(stderr);
		free(sets);
		return 2;
	}
	const char *arg = argv[optind], *file = NULL;

	/* The aggregator section, {"plugin": NAME} and the --set keys, under
	 * the pipeline's "aggregator" so that the values parse as for --set of
	 * fedrun run. */
	json_t *root = json_object();
	int rc = root ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (int i = 0; rc == 0 && i < nsets; i++) {
		if (!strchr(sets[i], '=') || sets[i][0] == '=') {
			rc = fedrun_error(FEDRUN_EINVAL, "--set %s: expected KEY=VALUE", sets[i]);
			break;
		}
		const char *pre = strncmp(sets[i], "aggregator.", 11) ? "aggregator." : "";
		size_t lp = strlen(pre), ls = strlen(sets[i]);
		char *a = malloc(lp + ls + 1);
		if (!a) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		memcpy(a, pre, lp);
		memcpy(a + lp, sets[i], ls + 1);
		rc = fedrun_pipeline_set(root, a);
		free(a);
	}
	if (rc < 0) {
		fprintf(stderr, "fedrun check-aggregator: %s\n", fedrun_error_message());
		json_decref(root);
		free(sets);
		return 2;
	}
	free(sets);
	c.config = json_object_get(root, "aggregator");
	if (!c.config) {
		c.config = json_object();
		json_object_set_new(root, "aggregator", c.config);
	}

	struct fedrun_registry *reg = NULL;
	if ((rc = fedrun_registry_create(NULL, &reg)) == 0)
		rc = load(reg, arg, allow_paths, &c.desc, &file);
	if (rc < 0) {
		fprintf(stderr, "fedrun check-aggregator: %s\n", fedrun_error_message());
		status = 3;
		goto out;
	}
	c.ops = c.desc->ops;
	c.streams = FEDRUN_AGGREGATOR_STREAMS(c.ops);
	json_object_set_new(c.config, "plugin", json_string(c.desc->name));
	c.host = (struct fedrun_host){
		.size = sizeof c.host, .abi_minor = FEDRUN_ABI_MINOR, .ctx = &c, .log = fedrun_cli_log,
		.error = fedrun_cli_error, .metric = h_metric, .loss_grad = NULL, .threads = h_threads,
		.seed = h_seed, .run_dir = h_run_dir, .resuming = h_false, .clients = h_clients,
		.overwrite = h_false, .interrupted = h_false};
	if ((rc = make_data(&c)) < 0) {
		fprintf(stderr, "fedrun check-aggregator: %s\n", fedrun_error_message());
		status = 1;
		goto out;
	}
	/* As in a run: one BLAS thread, the plugins' loops on OpenMP threads. */
	if (fedrun_backend_cpu_set_blas_threads(1) < 0)
		fedrun_error_clear();

	/* Options the plugin refuses are a usage error; a plugin that cannot
	 * run without a model (meritfed asks it for losses) fails here. */
	{
		void *st = NULL;
		c.clients = NCLIENTS;
		set_threads(&c, c.threads);
		if ((rc = c.ops->create(&c.host, c.config, &c.l, &st)) < 0) {
			fprintf(stderr, "fedrun check-aggregator: aggregator '%s': %s\n", c.desc->name,
				fedrun_error_message());
			status = rc == FEDRUN_ECONFIG || rc == FEDRUN_EINVAL ? 2 : 1;
			goto out;
		}
		c.ops->destroy(st);
	}
	printf("aggregator %s %s (%s, plugin ABI %u.%u), %s; %u tensors, %" PRIu64
	       " floats, up to %u clients\n",
	       c.desc->name, c.desc->version, file ? file : "?", c.desc->abi_major,
	       c.desc->abi_minor, c.streams ? "streaming" : "not streaming", c.l.n,
	       fedrun_layout_numel(&c.l), NCLIENTS);
	check_single(&c);
	check_identical(&c);
	check_partial(&c);
	check_unsent(&c);
	check_nonfinite(&c);
	check_stream(&c);
	check_threads(&c);
	info_weighted(&c);
	info_metrics(&c);
	printf("%s: %u passed, %u failed, %u skipped\n", c.desc->name, c.pass, c.fail, c.skip);
	status = c.fail ? 1 : 0;
out:
	free_data(&c);
	fedrun_registry_destroy(reg);
	json_decref(root);
	return status;
}
