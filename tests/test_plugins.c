/* SPDX-License-Identifier: Apache-2.0 */
/* The first plugins through their ops: fedavg against a direct computation,
 * the noise of gaussian and laplace against their distributions, the
 * selectors, and the meanest model. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/fedrun.h"
#include "fakehost.h"

static struct fedrun_registry *reg;

static void teardown(void)
{
	fedrun_registry_destroy(reg);
	reg = NULL;
}

static json_t *cfg(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(j);
	return j;
}

static void two_tensor_layout(struct fedrun_layout *l, uint64_t n0, uint64_t n1)
{
	fedrun_layout_init(l);
	ck_assert_int_eq(fedrun_layout_add(l, "encoder.w", 1, &n0), 0);
	ck_assert_int_eq(fedrun_layout_add(l, "decoder.w", 1, &n1), 0);
}

/* fedavg with sample weights over partial updates: tensor 0 from all three
 * clients, tensor 1 from clients 0 and 2 only. */
static void check_fedavg(const char *config, int uniform)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_plugin *p = fakehost_plugin(&reg, FEDRUN_KIND_AGGREGATOR, "fedavg");
	const struct fedrun_aggregator_ops *ops = p->ops;
	struct fedrun_layout l;
	two_tensor_layout(&l, 7, 3);
	json_t *c = cfg(config);
	void *st;
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), 0);

	const uint64_t n[3] = {10, 30, 60};
	float *delta[3], *theta = fedrun_arena_alloc(l.total), *expect = fedrun_arena_alloc(l.total);
	const float *tens[3][2];
	struct fedrun_update u[3];
	struct fedrun_rng r;
	fedrun_rng_init(&r, 3, FEDRUN_RNG_PLUGIN, 0, 0);
	for (uint64_t i = 0; i < l.total; i++)
		theta[i] = expect[i] = (float)fedrun_rng_normal(&r);
	for (int k = 0; k < 3; k++) {
		delta[k] = fedrun_arena_alloc(l.total);
		for (uint64_t i = 0; i < l.total; i++)
			delta[k][i] = (float)fedrun_rng_normal(&r);
		tens[k][0] = delta[k] + l.t[0].offset;
		tens[k][1] = k == 1 ? NULL : delta[k] + l.t[1].offset;
		u[k] = (struct fedrun_update){.client = (uint32_t)k * 2, .n_samples = n[k],
					      .tensor = tens[k]};
	}
	/* Direct computation: θ + Σ_k w_k Δ_k with w_k = n_k / Σ n over senders. */
	for (uint32_t t = 0; t < 2; t++) {
		double tot = 0;
		for (int k = 0; k < 3; k++)
			if (tens[k][t])
				tot += uniform ? 1 : (double)n[k];
		for (uint64_t i = 0; i < l.t[t].numel; i++) {
			double s = theta[l.t[t].offset + i];
			for (int k = 0; k < 3; k++)
				if (tens[k][t])
					s += (uniform ? 1 : (double)n[k]) / tot * tens[k][t][i];
			expect[l.t[t].offset + i] = (float)s;
		}
	}
	struct fedrun_round_info ri = {.size = sizeof ri, .round = 1, .rounds = 1, .num_clients = 6,
				       .seed = 1, .layout = &l};
	ck_assert_int_eq(ops->aggregate(st, &ri, u, 3, theta), 0);
	for (uint32_t t = 0; t < 2; t++)
		for (uint64_t i = 0; i < l.t[t].numel; i++)
			ck_assert_float_eq_tol(theta[l.t[t].offset + i], expect[l.t[t].offset + i], 1e-6f);
	ck_assert_double_eq_tol(fakehost_metric(&fh, "fedavg.weight", 2, NULL),
				uniform ? 1.0 / 3 : 0.3, 1e-12);
	ops->destroy(st);
	json_decref(c);
	for (int k = 0; k < 3; k++)
		fedrun_arena_free(delta[k]);
	fedrun_arena_free(theta);
	fedrun_arena_free(expect);
	fedrun_layout_fini(&l);
}

START_TEST(test_fedavg_samples)
{
	check_fedavg("{\"plugin\": \"fedavg\"}", 0);
}
END_TEST

START_TEST(test_fedavg_uniform)
{
	check_fedavg("{\"plugin\": \"fedavg\", \"weights\": \"uniform\"}", 1);
}
END_TEST

START_TEST(test_fedavg_bad_config)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_aggregator_ops *ops =
		fakehost_plugin(&reg, FEDRUN_KIND_AGGREGATOR, "fedavg")->ops;
	struct fedrun_layout l;
	two_tensor_layout(&l, 2, 2);
	void *st;
	json_t *c = cfg("{\"weights\": \"equal\"}");
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "aggregator.weights: expected one of {samples,uniform,steps}, got \"equal\"");
	json_decref(c);
	fedrun_layout_fini(&l);
}
END_TEST

/* Adds noise to a zero update of N entries and checks mean, variance and
 * (for Laplace) the mean absolute value against the distribution, within
 * five standard errors. */
static void check_noise(const char *name, const char *config, double var, double kurt_excess,
			double mean_abs)
{
	enum { N = 100000 };
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_privacy_ops *ops = fakehost_plugin(&reg, FEDRUN_KIND_PRIVACY, name)->ops;
	struct fedrun_layout l;
	two_tensor_layout(&l, N, 5);
	json_t *c = cfg(config);
	void *st;
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), 0);
	float *d = fedrun_arena_alloc(l.total), *d2 = fedrun_arena_alloc(l.total);
	const uint8_t mask[2] = {1, 0};
	struct fedrun_round_info ri = {.size = sizeof ri, .round = 3, .rounds = 5, .num_clients = 9,
				       .seed = 11, .layout = &l};
	ck_assert_int_eq(ops->apply(st, &ri, 4, mask, d), 0);
	double s = 0, s2 = 0, sa = 0;
	for (int i = 0; i < N; i++) {
		s += d[i];
		s2 += (double)d[i] * d[i];
		sa += fabs(d[i]);
	}
	double m = s / N, v = s2 / N - m * m;
	ck_assert_msg(fabs(m) < 5 * sqrt(var / N), "%s: mean %g", name, m);
	ck_assert_msg(fabs(v - var) < 5 * var * sqrt((2 + kurt_excess) / N), "%s: variance %g, want %g",
		      name, v, var);
	if (mean_abs > 0) /* E|X| = b for Laplace(0, b); sd of |X| is b */
		ck_assert_msg(fabs(sa / N - mean_abs) < 5 * mean_abs / sqrt(N), "%s: E|x| %g", name, sa / N);
	/* Unsent tensors are untouched; the noise is reproducible per
	 * (seed, round, client) and differs between clients. */
	for (uint64_t i = 0; i < 5; i++)
		ck_assert(d[l.t[1].offset + i] == 0.0f);
	ck_assert_int_eq(ops->apply(st, &ri, 4, mask, d2), 0);
	ck_assert_mem_eq(d, d2, N * sizeof(float));
	memset(d2, 0, l.total * sizeof(float));
	ck_assert_int_eq(ops->apply(st, &ri, 5, mask, d2), 0);
	ck_assert(memcmp(d, d2, N * sizeof(float)) != 0);
	ops->destroy(st);
	json_decref(c);
	fedrun_arena_free(d);
	fedrun_arena_free(d2);
	fedrun_layout_fini(&l);
}

START_TEST(test_gaussian_noise)
{
	/* β·N(0, σ²): variance β²σ². */
	check_noise("gaussian",
		    "{\"mode\": \"fedatt\", \"sigma\": 0.5, \"beta\": 2.0, \"noise\": \"reproducible\"}",
		    1.0, 0, 0);
}
END_TEST

START_TEST(test_laplace_noise)
{
	/* Lap(0, b) with b = σ/ε = 0.25: variance 2b², E|x| = b. */
	check_noise("laplace",
		    "{\"sigma\": 0.5, \"epsilon\": 2.0, \"clip\": false, \"noise\": \"reproducible\"}",
		    2 * 0.25 * 0.25, 3, 0.25);
}
END_TEST

START_TEST(test_privacy_bad_config)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_privacy_ops *ops = fakehost_plugin(&reg, FEDRUN_KIND_PRIVACY, "laplace")->ops;
	struct fedrun_layout l;
	two_tensor_layout(&l, 2, 2);
	void *st;
	json_t *c = cfg("{\"sigma\": 1, \"epsilon\": 0}");
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "privacy.epsilon: expected a number in [1e-06, 1000000], got 0");
	json_decref(c);
	c = cfg("{\"sigma\": 1}");
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "privacy.epsilon: required key is missing");
	json_decref(c);
	fedrun_layout_fini(&l);
}
END_TEST

START_TEST(test_selectors)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	fedrun_layout_init(&l);
	for (int i = 0; i < 10; i++) {
		char name[16];
		uint64_t n = (uint64_t)i + 1;
		snprintf(name, sizeof name, "t%d", i);
		fedrun_layout_add(&l, name, 1, &n);
	}
	struct fedrun_round_info ri = {.size = sizeof ri, .round = 2, .rounds = 5, .num_clients = 9,
				       .seed = 5, .layout = &l};
	uint8_t mask[10], mask2[10];
	const struct fedrun_selector_ops *all = fakehost_plugin(&reg, FEDRUN_KIND_SELECTOR, "all")->ops;
	json_t *c = cfg("{}");
	void *st;
	ck_assert_int_eq(all->create(&fh.host, c, &l, &st), 0);
	memset(mask, 0, sizeof mask);
	ck_assert_int_eq(all->select(st, &ri, 0, NULL, NULL, mask), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(mask[i], 1);
	all->destroy(st);
	json_decref(c);

	const struct fedrun_selector_ops *rnd = fakehost_plugin(&reg, FEDRUN_KIND_SELECTOR, "random")->ops;
	c = cfg("{\"fraction\": 0.3}");
	ck_assert_int_eq(rnd->create(&fh.host, c, &l, &st), 0);
	int differs = 0;
	for (uint32_t client = 0; client < 20; client++) {
		ck_assert_int_eq(rnd->select(st, &ri, client, NULL, NULL, mask), 0);
		int sent = 0;
		for (int i = 0; i < 10; i++)
			sent += mask[i];
		ck_assert_int_eq(sent, 3);
		ck_assert_int_eq(rnd->select(st, &ri, client, NULL, NULL, mask2), 0);
		ck_assert_mem_eq(mask, mask2, 10);
		ck_assert_int_eq(rnd->select(st, &ri, client + 100, NULL, NULL, mask2), 0);
		differs += memcmp(mask, mask2, 10) != 0;
	}
	ck_assert_int_gt(differs, 10);
	rnd->destroy(st);
	json_decref(c);
	fedrun_layout_fini(&l);
}
END_TEST

START_TEST(test_meanest_quadratic)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_model_ops *ops = fakehost_plugin(&reg, FEDRUN_KIND_MODEL, "meanest")->ops;
	json_t *mc = cfg("{\"problem\": \"quadratic\", \"dim\": 2, \"init\": 1}");
	json_t *dc = cfg("{\"groups\": [{\"clients\": 2, \"mean\": [3, -1]}, {\"clients\": 1, \"mean\": 0}]}");
	void *m;
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), 0);
	ck_assert_uint_eq(ops->num_clients(m), 3);
	const struct fedrun_layout *l = ops->layout(m);
	ck_assert_uint_eq(l->n, 1);
	float x[16];
	ck_assert_int_eq(ops->init_params(m, 1, x), 0);
	ck_assert(x[0] == 1.0f && x[1] == 1.0f);
	/* One SGD step on (x − a)²: x − lr·2(x − a). */
	struct fedrun_optim_cfg oc = {.kind = FEDRUN_OPTIM_SGD, .lr = 0.25};
	uint64_t step = 0;
	struct fedrun_train_args a = {.size = sizeof a, .round = 1, .client = 1, .seed = 1, .epochs = 1,
				      .batch = 1, .optim = &oc, .optim_step = &step};
	struct fedrun_train_stats stats;
	ck_assert_int_eq(ops->train(m, NULL, &a, x, &stats), 0);
	ck_assert_float_eq_tol(x[0], 1 - 0.25f * 2 * (1 - 3), 1e-6f);
	ck_assert_float_eq_tol(x[1], 1 - 0.25f * 2 * (1 + 1), 1e-6f);
	ck_assert_double_eq_tol(stats.loss, 4 + 4, 1e-9);
	/* Global objective: mean over clients of ||x − a_k||². */
	struct fedrun_eval ev;
	x[0] = 0;
	x[1] = 0;
	ck_assert_int_eq(ops->evaluate(m, NULL, x, FEDRUN_SPLIT_VALID, FEDRUN_ALL_CLIENTS, &ev), 0);
	ck_assert_str_eq(ev.m[0].name, "loss");
	ck_assert_double_eq_tol(ev.m[0].value, (10 + 10 + 0) / 3.0, 1e-9);
	double loss;
	float g[2];
	x[0] = 1;
	ck_assert_int_eq(ops->loss_grad(m, NULL, x, FEDRUN_SPLIT_VALID, 2, g, &loss), 0);
	ck_assert_double_eq_tol(loss, 1.0, 1e-9);
	ck_assert_float_eq_tol(g[0], 2.0f, 1e-7f);
	ops->destroy(m);
	json_decref(mc);
	json_decref(dc);
}
END_TEST

START_TEST(test_fedprox)
{
	/* The fedprox aggregator asks for the proximal term; the model's
	 * local steps then follow w <- w − lr(∇f(w) + μ(w − w_t)). */
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_aggregator_ops *agg =
		fakehost_plugin(&reg, FEDRUN_KIND_AGGREGATOR, "fedprox")->ops;
	struct fedrun_layout l;
	two_tensor_layout(&l, 1, 1);
	json_t *c = cfg("{\"mu\": 2.0}");
	void *st;
	ck_assert_int_eq(agg->create(&fh.host, c, &l, &st), 0);
	struct fedrun_client_hints h = {.size = sizeof h};
	ck_assert_int_eq(agg->configure_clients(st, &h), 0);
	ck_assert(h.prox_mu == 2.0);
	agg->destroy(st);
	json_decref(c);
	c = cfg("{}");
	ck_assert_int_eq(agg->create(&fh.host, c, &l, &st), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "aggregator.mu: required key is missing");
	json_decref(c);
	fedrun_layout_fini(&l);

	const struct fedrun_model_ops *ops = fakehost_plugin(&reg, FEDRUN_KIND_MODEL, "meanest")->ops;
	json_t *mc = cfg("{\"problem\": \"quadratic\", \"init\": 1}");
	json_t *dc = cfg("{\"groups\": [{\"clients\": 1, \"mean\": 3}]}");
	void *m;
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), 0);
	float x[16] = {1}, anchor[16] = {1};
	struct fedrun_optim_cfg oc = {.kind = FEDRUN_OPTIM_SGD, .lr = 0.1};
	uint64_t step = 0;
	struct fedrun_train_args a = {.size = sizeof a, .round = 1, .client = 0, .seed = 1, .epochs = 3,
				      .batch = 1, .optim = &oc, .optim_step = &step, .prox_mu = h.prox_mu,
				      .prox_anchor = anchor};
	struct fedrun_train_stats stats;
	ck_assert_int_eq(ops->train(m, NULL, &a, x, &stats), 0);
	double w = 1;
	for (int i = 0; i < 3; i++)
		w -= 0.1 * (2 * (w - 3) + 2.0 * (w - 1));
	ck_assert_float_eq_tol(x[0], (float)w, 1e-6f);
	ops->destroy(m);
	json_decref(mc);
	json_decref(dc);
}
END_TEST

START_TEST(test_meanest_gaussian_sgd)
{
	/* Client-side SGD on ||x − ξ||² over its 2000 samples converges to the
	 * sample mean, within a few standard errors of μ. */
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_model_ops *ops = fakehost_plugin(&reg, FEDRUN_KIND_MODEL, "meanest")->ops;
	json_t *mc = cfg("{\"problem\": \"gaussian\", \"dim\": 3}");
	json_t *dc = cfg("{\"groups\": [{\"clients\": 1, \"mean\": [1, 2, 3], \"samples\": 2000}]}");
	void *m;
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), 0);
	ck_assert_uint_eq(ops->client_size(m, 0), 2000);
	float x[16] = {0};
	struct fedrun_optim_cfg oc = {.kind = FEDRUN_OPTIM_SGD, .lr = 0.05};
	uint64_t step = 0;
	struct fedrun_train_args a = {.size = sizeof a, .round = 1, .client = 0, .seed = 1, .epochs = 3,
				      .batch = 50, .optim = &oc, .optim_step = &step};
	struct fedrun_train_stats stats;
	ck_assert_int_eq(ops->train(m, NULL, &a, x, &stats), 0);
	ck_assert_uint_eq(step, 3 * 40);
	for (int i = 0; i < 3; i++)
		ck_assert_float_eq_tol(x[i], (float)(i + 1), 5 * 1 / sqrtf(50));
	struct fedrun_eval ev;
	ck_assert_int_eq(ops->evaluate(m, NULL, x, FEDRUN_SPLIT_VALID, 0, &ev), 0);
	ck_assert_str_eq(ev.m[1].name, "err");
	ck_assert_double_lt(ev.m[1].value, 0.2);
	ops->destroy(m);
	json_decref(mc);
	json_decref(dc);
}
END_TEST

START_TEST(test_meanest_bad_data)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_model_ops *ops = fakehost_plugin(&reg, FEDRUN_KIND_MODEL, "meanest")->ops;
	json_t *mc = cfg("{\"dim\": 2}");
	json_t *dc = cfg("{\"groups\": [{\"clients\": 2, \"mean\": [3, -1, 4]}]}");
	void *m;
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "data.groups[0].mean: expected a number or an array of 2 numbers (model.dim), got [3,-1,4]");
	json_decref(dc);
	dc = cfg("{\"groups\": [{\"clients\": 0, \"mean\": 1}]}");
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "data.groups[0].clients: expected an integer in [1, 100000000], got 0");
	json_decref(dc);
	json_decref(mc);
}
END_TEST

static Suite *plugins_suite(void)
{
	Suite *s = suite_create("plugins");
	TCase *tc = tcase_create("plugins");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fedavg_samples);
	tcase_add_test(tc, test_fedavg_uniform);
	tcase_add_test(tc, test_fedavg_bad_config);
	tcase_add_test(tc, test_gaussian_noise);
	tcase_add_test(tc, test_laplace_noise);
	tcase_add_test(tc, test_privacy_bad_config);
	tcase_add_test(tc, test_selectors);
	tcase_add_test(tc, test_meanest_quadratic);
	tcase_add_test(tc, test_meanest_gaussian_sgd);
	tcase_add_test(tc, test_fedprox);
	tcase_add_test(tc, test_meanest_bad_data);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(plugins_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
