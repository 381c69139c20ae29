/* SPDX-License-Identifier: Apache-2.0 */
/* Whole-model gradient check of gru-lm and the transformer on a backend
 * (default "cuda") against the CPU backend: the same model, data and
 * parameters created twice, once with model.backend "cpu" and once with
 * the backend under test, through the plugin interface the engine uses.
 *
 *  - loss_grad (the whole model's loss and gradient on a client's training
 *    split, forward and backward through every layer): the losses agree to
 *    1e-5 relative and the gradients to 1e-4 in relative L2 norm,
 *    ||g - g_cpu|| / ||g_cpu||, and 1e-3 of max |g_cpu| element-wise;
 *  - train (3 local steps of SGD with momentum, global-norm clipping and
 *    dropout, whose masks both backends draw from the same stream): the
 *    parameters after the steps agree to 1e-3 of the update's norm,
 *    ||q - q_cpu|| / ||q_cpu - p||, with the same mean training loss to
 *    1e-5 relative.
 * The CPU backend's own gradients are checked against finite differences
 * and double-precision references in test_gru_lm and test_transformer;
 * this test carries that check over to the device.
 *
 * Usage: test_gpu_models [BACKEND]. Exits 77 (SKIP) when the backend is
 * not installed or has no device (ctx_create fails), 1 on a mismatch. With
 * the "tagged" test backend (the CPU backend behind untouchable device
 * pointers) every figure must be exactly 0: make check runs it that way,
 * which keeps this test's own plumbing honest on machines without a GPU. */
#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/fedrun.h"
#include "fakehost.h"

#define EXIT_SKIP 77

static const char *backend;
static bool exact; /* the backend under test is the CPU's arithmetic */
static int failures;
static char dir[64];

static void check(const char *what, double err, double tol)
{
	bool ok = exact ? err == 0.0 : err <= tol;
	printf("  %-44s %.3g (%s %.0e)  %s\n", what, err, exact ? "exactly" : "tolerance",
	       exact ? 0.0 : tol, ok ? "PASS" : "FAIL");
	if (!ok)
		failures++;
}

static double nrm2_diff(uint64_t n, const float *a, const float *b)
{
	double s = 0;
	for (uint64_t i = 0; i < n; i++) {
		double d = (double)a[i] - b[i];
		s += d * d;
	}
	return sqrt(s);
}

static double nrm2(uint64_t n, const float *a)
{
	double s = 0;
	for (uint64_t i = 0; i < n; i++)
		s += (double)a[i] * a[i];
	return sqrt(s);
}

static double max_abs_diff(uint64_t n, const float *a, const float *b, double *amax)
{
	double m = 0, am = 0;
	for (uint64_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);
		m = d > m ? d : m;
		am = fabs(a[i]) > am ? fabs(a[i]) : am;
	}
	*amax = am;
	return m;
}

/* A model of `plugin` from model_json with "backend" set to be, and data. */
static int create(struct fedrun_registry *reg, struct fakehost *fh, const char *plugin,
		  const char *model_json, const char *data_json, const char *be,
		  const struct fedrun_model_ops **ops, void **m)
{
	const struct fedrun_plugin *p;
	int rc = fedrun_registry_find(reg, FEDRUN_KIND_MODEL, plugin, NULL, &p, NULL);
	if (rc < 0)
		return rc;
	*ops = p->ops;
	json_error_t err;
	json_t *mc = json_loads(model_json, 0, &err), *dc = json_loads(data_json, 0, &err);
	if (!mc || !dc) {
		fprintf(stderr, "bad JSON in the test: %s\n", err.text);
		exit(1);
	}
	json_object_set_new(mc, "backend", json_string(be));
	*m = NULL;
	rc = (*ops)->create(&fh->host, mc, dc, m);
	json_decref(mc);
	json_decref(dc);
	return rc;
}

/* Returns 0 when both models could be compared (the mismatches are
 * counted in failures), else 1. */
static int compare(struct fedrun_registry *reg, const char *plugin, const char *model_json,
		   const char *data_json, uint32_t batch)
{
	struct fakehost fa, fb;
	fakehost_init(&fa, 7);
	fakehost_init(&fb, 7);
	const struct fedrun_model_ops *ops;
	void *ma, *mb;
	printf("%s on %s against cpu\n", plugin, backend);
	if (create(reg, &fa, plugin, model_json, data_json, "cpu", &ops, &ma) < 0) {
		printf("FAIL: %s on cpu: %s\n", plugin, fedrun_error_message());
		return 1;
	}
	int rc = create(reg, &fb, plugin, model_json, data_json, backend, &ops, &mb);
	if (rc < 0) {
		printf("FAIL: %s on %s: %s\n", plugin, backend, fedrun_error_message());
		ops->destroy(ma);
		return 1;
	}
	const uint64_t n = ops->layout(ma)->total;
	float *p = fedrun_arena_alloc(n), *ga = fedrun_arena_alloc(n), *gb = fedrun_arena_alloc(n);
	float *qa = fedrun_arena_alloc(n), *qb = fedrun_arena_alloc(n);
	void *wa = NULL, *wb = NULL;
	int result = 1;
	if (!p || !ga || !gb || !qa || !qb || ops->init_params(ma, 3, p) < 0)
		goto out;
	double la = 0, lb = 0;
	if (ops->loss_grad(ma, NULL, p, FEDRUN_SPLIT_TRAIN, 0, ga, &la) < 0 ||
	    ops->loss_grad(mb, NULL, p, FEDRUN_SPLIT_TRAIN, 0, gb, &lb) < 0) {
		printf("FAIL: loss_grad: %s\n", fedrun_error_message());
		goto out;
	}
	double gmax, gnorm = nrm2(n, ga);
	double emax = max_abs_diff(n, gb, ga, &gmax);
	printf("  %" PRIu64 " parameters; loss %.9g (cpu) %.9g (%s); |g_cpu| %.4g\n", n, la, lb,
	       backend, gnorm);
	if (!(gnorm > 0)) {
		printf("FAIL: the CPU gradient is zero: nothing is compared\n");
		goto out;
	}
	check("loss_grad: loss, relative", fabs(lb - la) / fabs(la), 1e-5);
	check("loss_grad: gradient, relative L2", nrm2_diff(n, gb, ga) / gnorm, 1e-4);
	check("loss_grad: gradient, max abs / max |g_cpu|", emax / gmax, 1e-3);

	/* three local steps with dropout, momentum and clipping */
	struct fedrun_optim_cfg oc = {
	    .kind = FEDRUN_OPTIM_SGD, .lr = 0.5, .momentum = 0.9, .clip_norm = 1.0};
	uint64_t sa = 0, sb = 0;
	float *state_a = fedrun_arena_alloc(n), *state_b = fedrun_arena_alloc(n);
	struct fedrun_train_args a = {.size = sizeof a,
				      .round = 1,
				      .client = 0,
				      .seed = 11,
				      .steps = 3,
				      .batch = batch,
				      .optim = &oc,
				      .optim_state = state_a,
				      .optim_step = &sa};
	struct fedrun_train_args b = a;
	b.optim_state = state_b;
	b.optim_step = &sb;
	struct fedrun_train_stats sta, stb;
	memcpy(qa, p, n * sizeof *p);
	memcpy(qb, p, n * sizeof *p);
	if (!state_a || !state_b || ops->worker_create(ma, &wa) < 0 ||
	    ops->worker_create(mb, &wb) < 0 || ops->train(ma, wa, &a, qa, &sta) < 0 ||
	    ops->train(mb, wb, &b, qb, &stb) < 0) {
		printf("FAIL: train: %s\n", fedrun_error_message());
		fedrun_arena_free(state_a);
		fedrun_arena_free(state_b);
		goto out;
	}
	double upd = nrm2_diff(n, qa, p);
	printf("  train: 3 steps, loss %.9g (cpu) %.9g (%s); update norm %.4g\n", sta.loss,
	       stb.loss, backend, upd);
	check("train: mean loss, relative", fabs(stb.loss - sta.loss) / fabs(sta.loss), 1e-5);
	check("train: parameters, L2 / update L2", nrm2_diff(n, qb, qa) / upd, 1e-3);
	check("train: optimizer state, relative L2",
	      nrm2_diff(n, state_b, state_a) / nrm2(n, state_a), 1e-3);
	if (sa != sb || sa != 3) {
		printf("FAIL: optimizer steps %" PRIu64 " (cpu) %" PRIu64 "\n", sa, sb);
		failures++;
	}
	fedrun_arena_free(state_a);
	fedrun_arena_free(state_b);
	result = 0;
out:
	if (wa)
		ops->worker_destroy(ma, wa);
	if (wb)
		ops->worker_destroy(mb, wb);
	fedrun_arena_free(p);
	fedrun_arena_free(ga);
	fedrun_arena_free(gb);
	fedrun_arena_free(qa);
	fedrun_arena_free(qb);
	ops->destroy(ma);
	ops->destroy(mb);
	return result;
}

static void write_corpus(const char *name, uint32_t sentences, uint32_t seed)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *fp = fopen(path, "w");
	if (!fp) {
		perror(path);
		exit(1);
	}
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, 0, 0);
	for (uint32_t s = 0; s < sentences; s++) {
		uint64_t len = 2 + fedrun_rng_below(&r, 9);
		for (uint64_t i = 0; i < len; i++)
			fprintf(fp, "%sw%u", i ? " " : "", (unsigned)fedrun_rng_below(&r, 40));
		fputc('\n', fp);
	}
	fclose(fp);
}

int main(int argc, char **argv)
{
	backend = argc > 1 ? argv[1] : "cuda";
	exact = strcmp(backend, "tagged") == 0 || strcmp(backend, "cpu") == 0;
	/* No such backend here (configure without --with-cuda), or no device
	 * for it: nothing to compare. */
	const struct fedrun_backend_ops *be;
	void *probe = NULL;
	int frc = fedrun_backend_find(backend, &be);
	if (frc == 0)
		frc = be->ctx_create(NULL, &probe);
	if (frc < 0) {
		printf("SKIP: backend '%s': %s\n", backend, fedrun_error_message());
		return frc == FEDRUN_ENOENT || frc == FEDRUN_EUNSUPPORTED ? EXIT_SKIP : 1;
	}
	be->ctx_destroy(probe);
	struct fedrun_registry *reg;
	if (fedrun_registry_create(NULL, &reg) < 0) {
		printf("FAIL: registry: %s\n", fedrun_error_message());
		return 1;
	}
	snprintf(dir, sizeof dir, "/tmp/test_gpu_models.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	write_corpus("train.txt", 300, 1);
	char data[256];
	snprintf(data, sizeof data, "{\"train\": \"%s/train.txt\", \"partition\": {\"clients\": 2}}",
		 dir);
	int rc = compare(reg, "gru-lm",
			 "{\"embed\": 24, \"hidden\": 40, \"layers\": 2, \"dropout\": 0.2, "
			 "\"bptt\": 12, \"eval_batch\": 4, \"tied\": false}",
			 data, 4);
	int rc2 = compare(reg, "transformer",
			  "{\"preset\": \"tiny\", \"dropout\": 0.1, \"label_smoothing\": 0.1, "
			  "\"tokenizer\": {\"type\": \"words\"}}",
			  "{\"synthetic\": {\"task\": \"reverse\", \"clients\": 2, \"vocab\": 30, "
			  "\"min_len\": 2, \"max_len\": 12, \"train\": 200, \"valid\": 10, "
			  "\"test\": 10}}",
			  256);
	char path[128];
	snprintf(path, sizeof path, "%s/train.txt", dir);
	unlink(path);
	rmdir(dir);
	fedrun_registry_destroy(reg);
	if (rc || rc2 || failures) {
		printf("FAIL: %d mismatch%s\n", failures, failures == 1 ? "" : "es");
		return 1;
	}
	printf("PASS\n");
	return 0;
}
