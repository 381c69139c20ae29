/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the domain expert's gate (plugins/models/transformer/expert.c,
 * FedNMT sec. 2.5): λ ∈ (0, 1) and its derivative, the mixture's
 * log-probability against the direct formula and its limits (λ → 1 gives
 * the global model, λ → 0 the private one), the gate NLL's gradient against
 * central finite differences in double precision, and the Adam fit, which
 * must lower the NLL and move λ toward the better model. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "fedrun/error.h"
#include "../plugins/models/transformer/expert.h"

/* A reproducible uniform in [-1, 1) (splitmix64's finaliser). */
static double unif(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ULL);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (double)(x >> 11) / 4503599627370496.0 - 1.0;
}

enum { NS = 7, DIM = 5, MAXT = 6 };

/* A toy data set: NS sentences, DIM features (the last a constant 1), up
 * to MAXT tokens, log-probabilities of two "models"; with `global_better`
 * the global model puts more mass on the targets of the first half of the
 * sentences (whose feature 0 is positive) and less on the others. */
struct toy {
	double x[NS * DIM];
	uint32_t ntok[NS];
	double lg[NS * MAXT], lp[NS * MAXT];
	struct tfm_gate_data d;
};

static void toy_init(struct toy *t, uint64_t seed)
{
	uint64_t s = seed;
	uint32_t k = 0;
	for (uint32_t i = 0; i < NS; i++) {
		for (uint32_t j = 0; j + 1 < DIM; j++)
			t->x[i * DIM + j] = unif(&s);
		t->x[i * DIM] = i < NS / 2 ? 0.5 + 0.5 * fabs(unif(&s)) : -0.5 - 0.5 * fabs(unif(&s));
		t->x[i * DIM + DIM - 1] = 1.0;
		t->ntok[i] = 1 + (uint32_t)((unif(&s) + 1.0) * 0.5 * (MAXT - 1));
		for (uint32_t q = 0; q < t->ntok[i]; q++, k++) {
			double good = -0.1 - 0.2 * fabs(unif(&s)), bad = -3.0 - fabs(unif(&s));
			t->lg[k] = i < NS / 2 ? good : bad;
			t->lp[k] = i < NS / 2 ? bad : good;
		}
	}
	t->d = (struct tfm_gate_data){
	    .n = NS, .dim = DIM, .x = t->x, .ntok = t->ntok, .lg = t->lg, .lp = t->lp};
}

START_TEST(test_lambda_range)
{
	const double zs[] = {-800, -40, -3, -1e-9, 0, 1e-9, 0.5, 3, 40, 800};
	for (size_t i = 0; i < sizeof zs / sizeof zs[0]; i++) {
		double l = tfm_gate_lambda(zs[i]), ll, lr;
		tfm_gate_log_lambda(zs[i], &ll, &lr);
		ck_assert(l >= 0.0 && l <= 1.0);
		ck_assert(isfinite(ll) && isfinite(lr) && ll <= 0 && lr <= 0);
		/* the rescaled tanh of sec. 2.5 */
		if (fabs(zs[i]) < 20) {
			ck_assert(l > 0.0 && l < 1.0);
			ck_assert_double_eq_tol(l, (1.0 + tanh(zs[i])) / 2.0, 1e-15);
			ck_assert_double_eq_tol(ll, log(l), 1e-13);
			ck_assert_double_eq_tol(lr, log(1.0 - l), 1e-13);
		}
	}
	ck_assert_double_eq(tfm_gate_lambda(0.0), 0.5);
	/* log λ stays exact far in the tail, where λ itself underflows */
	double ll, lr;
	tfm_gate_log_lambda(-800, &ll, &lr);
	ck_assert_double_eq_tol(ll, -1600.0, 1e-9);
	ck_assert_double_eq_tol(lr, 0.0, 1e-300);
}
END_TEST

START_TEST(test_dlambda)
{
	uint64_t s = 3;
	double th[DIM], x[DIM], g[DIM];
	for (int j = 0; j < DIM; j++) {
		th[j] = unif(&s);
		x[j] = unif(&s);
	}
	tfm_gate_dlambda(th, x, DIM, g);
	const double h = 1e-6;
	for (int j = 0; j < DIM; j++) {
		double keep = th[j];
		th[j] = keep + h;
		double up = tfm_gate_lambda(tfm_gate_z(th, x, DIM));
		th[j] = keep - h;
		double dn = tfm_gate_lambda(tfm_gate_z(th, x, DIM));
		th[j] = keep;
		/* and (1 - tanh^2)/2 x, the paper's form */
		double z = tfm_gate_z(th, x, DIM);
		ck_assert_double_eq_tol(g[j], (up - dn) / (2 * h), 1e-9);
		ck_assert_double_eq_tol(g[j], (1.0 - tanh(z) * tanh(z)) / 2.0 * x[j], 1e-14);
	}
}
END_TEST

START_TEST(test_mix_logprob)
{
	const double lgs[] = {-0.1, -2.5, -30.0, -INFINITY}, lps[] = {-0.7, -1e-3, -700.0};
	const double zs[] = {-2, -0.3, 0, 0.4, 1.7};
	for (size_t a = 0; a < 4; a++)
		for (size_t b = 0; b < 3; b++)
			for (size_t c = 0; c < 5; c++) {
				double ll, lr, lam = tfm_gate_lambda(zs[c]);
				tfm_gate_log_lambda(zs[c], &ll, &lr);
				double want = log(lam * exp(lgs[a]) + (1 - lam) * exp(lps[b]));
				double got = tfm_mix_logprob(ll, lr, lgs[a], lps[b]);
				ck_assert_double_eq_tol(got, want, 1e-12 * (1 + fabs(want)));
			}
	/* λ -> 1: the global model; λ -> 0: the private one; λ = 1/2 */
	double ll, lr;
	tfm_gate_log_lambda(60, &ll, &lr);
	ck_assert_double_eq_tol(tfm_mix_logprob(ll, lr, -1.25, -0.5), -1.25, 1e-12);
	tfm_gate_log_lambda(-60, &ll, &lr);
	ck_assert_double_eq_tol(tfm_mix_logprob(ll, lr, -1.25, -0.5), -0.5, 1e-12);
	tfm_gate_log_lambda(0, &ll, &lr);
	ck_assert_double_eq_tol(tfm_mix_logprob(ll, lr, -1.0, -1.0), -1.0, 1e-15);
	ck_assert(tfm_mix_logprob(ll, lr, -INFINITY, -INFINITY) == -INFINITY);
	/* far-apart log-probabilities: no overflow, no loss of the larger */
	ck_assert_double_eq_tol(tfm_mix_logprob(ll, lr, -1e5, -2.0), -2.0 + log(0.5), 1e-12);
}
END_TEST

/* The gradient of the gate NLL against central differences, at random θ. */
START_TEST(test_grad_fd)
{
	struct toy t;
	toy_init(&t, 11 + (uint64_t)_i);
	uint64_t s = 100 + (uint64_t)_i;
	double th[DIM], g[DIM], nll, lam;
	for (int j = 0; j < DIM; j++)
		th[j] = 1.5 * unif(&s);
	ck_assert_int_eq(tfm_gate_nll(&t.d, th, &nll, g, &lam), 0);
	ck_assert(nll > 0 && lam > 0 && lam < 1);
	const double h = 1e-5;
	for (int j = 0; j < DIM; j++) {
		double keep = th[j], up, dn;
		th[j] = keep + h;
		ck_assert_int_eq(tfm_gate_nll(&t.d, th, &up, NULL, NULL), 0);
		th[j] = keep - h;
		ck_assert_int_eq(tfm_gate_nll(&t.d, th, &dn, NULL, NULL), 0);
		th[j] = keep;
		const double fd = (up - dn) / (2 * h);
		ck_assert_msg(fabs(g[j] - fd) <= 1e-8 * (1 + fabs(fd)),
			      "theta[%d]: analytic %.12g, finite differences %.12g", j, g[j], fd);
	}
}
END_TEST

/* The NLL equals the direct per-token formula. */
START_TEST(test_nll_direct)
{
	struct toy t;
	toy_init(&t, 5);
	double th[DIM] = {0.3, -0.2, 0.1, 0.7, -0.4}, nll, lm;
	ck_assert_int_eq(tfm_gate_nll(&t.d, th, &nll, NULL, &lm), 0);
	double sum = 0, ls = 0;
	uint32_t k = 0;
	for (uint32_t i = 0; i < NS; i++) {
		double lam = (1 + tanh(tfm_gate_z(th, t.x + i * DIM, DIM))) / 2;
		for (uint32_t q = 0; q < t.ntok[i]; q++, k++) {
			sum -= log(lam * exp(t.lg[k]) + (1 - lam) * exp(t.lp[k]));
			ls += lam;
		}
	}
	ck_assert_double_eq_tol(nll, sum / k, 1e-13);
	ck_assert_double_eq_tol(lm, ls / k, 1e-14);
}
END_TEST

/* θ = 0 gives λ = 1/2; fitting lowers the NLL below both models' own and
 * gives each sentence λ toward its better model. */
START_TEST(test_fit)
{
	struct toy t;
	toy_init(&t, 17);
	double th[DIM] = {0}, n0, n1, lm;
	ck_assert_int_eq(tfm_gate_fit(&t.d, 0, 0.1, th, &n0, &n1), 0);
	ck_assert_double_eq(n0, n1);
	ck_assert_int_eq(tfm_gate_nll(&t.d, th, &n1, NULL, &lm), 0);
	ck_assert_double_eq(lm, 0.5);
	ck_assert_int_eq(tfm_gate_fit(&t.d, 300, 0.1, th, &n0, &n1), 0);
	ck_assert(n1 < n0);
	double ng = 0, np = 0;
	uint32_t k = 0;
	for (uint32_t i = 0; i < NS; i++)
		for (uint32_t q = 0; q < t.ntok[i]; q++, k++) {
			ng -= t.lg[k];
			np -= t.lp[k];
		}
	ck_assert(n1 < ng / k && n1 < np / k);
	for (uint32_t i = 0; i < NS; i++) {
		double lam = tfm_gate_lambda(tfm_gate_z(th, t.x + i * DIM, DIM));
		ck_assert_msg(i < NS / 2 ? lam > 0.9 : lam < 0.1, "sentence %u: lambda %g", i, lam);
	}
}
END_TEST

START_TEST(test_errors)
{
	double th[DIM] = {0}, nll;
	struct tfm_gate_data d = {.n = 1, .dim = DIM};
	ck_assert_int_eq(tfm_gate_nll(&d, th, &nll, NULL, NULL), FEDRUN_EINVAL);
	ck_assert_int_eq(tfm_gate_nll(NULL, th, &nll, NULL, NULL), FEDRUN_EINVAL);
	double x[DIM] = {0}, lg = -INFINITY, lp = -INFINITY;
	uint32_t nt = 1;
	d = (struct tfm_gate_data){.n = 1, .dim = DIM, .x = x, .ntok = &nt, .lg = &lg, .lp = &lp};
	ck_assert_int_eq(tfm_gate_nll(&d, th, &nll, NULL, NULL), FEDRUN_ENUMERIC);
	ck_assert_int_eq(tfm_gate_fit(&d, 1, -1.0, th, NULL, NULL), FEDRUN_EINVAL);
	/* no sentences: NLL 0, no error */
	d.n = 0;
	ck_assert_int_eq(tfm_gate_nll(&d, th, &nll, NULL, NULL), 0);
	ck_assert_double_eq(nll, 0.0);
}
END_TEST

static Suite *expert_suite(void)
{
	Suite *s = suite_create("expert");
	TCase *tc = tcase_create("gate");
	tcase_add_test(tc, test_lambda_range);
	tcase_add_test(tc, test_dlambda);
	tcase_add_test(tc, test_mix_logprob);
	tcase_add_loop_test(tc, test_grad_fd, 0, 8);
	tcase_add_test(tc, test_nll_direct);
	tcase_add_test(tc, test_fit);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(expert_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
