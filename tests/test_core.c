/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of libfedrun's foundations: errors, RNG, layout, options,
 * vector kernels, optimizers, safetensors and messages. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/fedrun.h"
#include "../core/engine/message.h"

static char tmpdir[256];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/fedrun-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* ---- errors ---- */

START_TEST(test_error_message)
{
	ck_assert_int_eq(fedrun_error(FEDRUN_EINVAL, "bad %d", 3), FEDRUN_EINVAL);
	ck_assert_str_eq(fedrun_error_message(), "bad 3");
	ck_assert_int_eq(fedrun_error_wrap(FEDRUN_EINVAL, "ctx: "), FEDRUN_EINVAL);
	ck_assert_str_eq(fedrun_error_message(), "ctx: bad 3");
	ck_assert_str_eq(fedrun_err_name(FEDRUN_ENOMEM), "FEDRUN_ENOMEM");
	ck_assert_str_eq(fedrun_strerror(FEDRUN_EABI), "plugin ABI mismatch");
	ck_assert_str_eq(fedrun_strerror(-999), "unknown error");
	fedrun_error_clear();
	ck_assert_str_eq(fedrun_error_message(), "");
}
END_TEST

/* ---- RNG ---- */

START_TEST(test_philox_kat)
{
	/* Known-answer vectors of Random123 (kat_vectors, philox4x32 10 rounds). */
	uint32_t out[4];
	const uint32_t k0[2] = {0, 0}, c0[4] = {0, 0, 0, 0};
	fedrun_philox4x32(k0, c0, out);
	ck_assert_uint_eq(out[0], 0x6627e8d5);
	ck_assert_uint_eq(out[1], 0xe169c58d);
	ck_assert_uint_eq(out[2], 0xbc57ac4c);
	ck_assert_uint_eq(out[3], 0x9b00dbd8);
	const uint32_t k1[2] = {0xffffffff, 0xffffffff};
	const uint32_t c1[4] = {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
	fedrun_philox4x32(k1, c1, out);
	ck_assert_uint_eq(out[0], 0x408f276d);
	ck_assert_uint_eq(out[1], 0x41c83b0e);
	ck_assert_uint_eq(out[2], 0xa20bc7c6);
	ck_assert_uint_eq(out[3], 0x6d5451fd);
	const uint32_t k2[2] = {0xa4093822, 0x299f31d0};
	const uint32_t c2[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
	fedrun_philox4x32(k2, c2, out);
	ck_assert_uint_eq(out[0], 0xd16cfe09);
	ck_assert_uint_eq(out[1], 0x94fdcceb);
	ck_assert_uint_eq(out[2], 0x5001e420);
	ck_assert_uint_eq(out[3], 0x24126ea1);
}
END_TEST

START_TEST(test_rng_streams)
{
	struct fedrun_rng a, b, c;
	fedrun_rng_init(&a, 7, FEDRUN_RNG_DATA, 3, 5);
	fedrun_rng_init(&b, 7, FEDRUN_RNG_DATA, 3, 5);
	fedrun_rng_init(&c, 7, FEDRUN_RNG_DATA, 3, 6);
	int differ = 0;
	for (int i = 0; i < 100; i++) {
		uint32_t x = fedrun_rng_u32(&a), y = fedrun_rng_u32(&b), z = fedrun_rng_u32(&c);
		ck_assert_uint_eq(x, y);
		differ += x != z;
	}
	ck_assert_int_gt(differ, 95);
	for (int i = 0; i < 10000; i++) {
		double u = fedrun_rng_uniform(&a);
		ck_assert(u > 0 && u < 1);
		ck_assert_uint_lt(fedrun_rng_below(&a, 7), 7);
	}
}
END_TEST

/* Mean and variance of n draws must lie within 5 standard errors. */
static void check_moments(double (*draw)(struct fedrun_rng *, double), double param,
			  double mean, double var, double kurt_excess)
{
	const int n = 100000;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 42, FEDRUN_RNG_PRIVACY, 1, 2);
	double s = 0, s2 = 0;
	for (int i = 0; i < n; i++) {
		double x = draw(&r, param);
		s += x;
		s2 += x * x;
	}
	double m = s / n, v = s2 / n - m * m;
	double se_mean = sqrt(var / n), se_var = var * sqrt((2.0 + kurt_excess) / n);
	ck_assert_msg(fabs(m - mean) < 5 * se_mean, "mean %g, expected %g", m, mean);
	ck_assert_msg(fabs(v - var) < 5 * se_var, "variance %g, expected %g", v, var);
}

static double draw_normal(struct fedrun_rng *r, double s)
{
	return s * fedrun_rng_normal(r);
}

static double draw_gamma(struct fedrun_rng *r, double k)
{
	return fedrun_rng_gamma(r, k);
}

START_TEST(test_rng_distributions)
{
	check_moments(draw_normal, 2.0, 0, 4.0, 0);
	check_moments(fedrun_rng_laplace, 0.5, 0, 2 * 0.25, 3);
	check_moments(draw_gamma, 3.0, 3.0, 3.0, 2.0);
	check_moments(draw_gamma, 0.3, 0.3, 0.3, 20.0);
}
END_TEST

/* ---- layout ---- */

START_TEST(test_layout)
{
	struct fedrun_layout l;
	fedrun_layout_init(&l);
	uint64_t s1[2] = {3, 5}, s2[1] = {17};
	ck_assert_int_eq(fedrun_layout_add(&l, "a.weight", 2, s1), 0);
	ck_assert_int_eq(fedrun_layout_add(&l, "a.bias", 1, s2), 0);
	ck_assert_int_eq(fedrun_layout_add(&l, "a.bias", 1, s2), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_layout_add(&l, "", 1, s2), FEDRUN_EINVAL);
	uint64_t zero[1] = {0};
	ck_assert_int_eq(fedrun_layout_add(&l, "z", 1, zero), FEDRUN_EINVAL);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_uint_eq(l.t[0].offset, 0);
	ck_assert_uint_eq(l.t[1].offset, 16); /* aligned */
	ck_assert_uint_eq(l.total, 48);
	ck_assert_uint_eq(fedrun_layout_numel(&l), 32);
	ck_assert_int_eq(fedrun_layout_find(&l, "a.bias"), 1);
	ck_assert_int_eq(fedrun_layout_find(&l, "nope"), -1);
	fedrun_layout_fini(&l);
}
END_TEST

/* ---- options ---- */

struct opt_out {
	double lr;
	int64_t n;
	bool flag;
	int norm;
	const char *name;
};

static const struct fedrun_opt spec[] = {
	{"lr", FEDRUN_OPT_NUMBER, offsetof(struct opt_out, lr), FEDRUN_OPT_MIN_OPEN, 0, 1, 0.5, NULL, NULL},
	{"n", FEDRUN_OPT_INT, offsetof(struct opt_out, n), 0, 1, 10, 3, NULL, NULL},
	{"flag", FEDRUN_OPT_BOOL, offsetof(struct opt_out, flag), 0, 0, 0, 1, NULL, NULL},
	{"norm", FEDRUN_OPT_CHOICE, offsetof(struct opt_out, norm), 0, 0, 0, 0, "frobenius", "frobenius|spectral"},
	{"name", FEDRUN_OPT_STRING, offsetof(struct opt_out, name), FEDRUN_OPT_REQUIRED, 0, 0, 0, NULL, NULL},
	FEDRUN_OPT_END_,
};

static int parse(const char *text, struct opt_out *out)
{
	json_t *j = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(j);
	int rc = fedrun_opts_parse(spec, j, "agg", out);
	json_decref(j);
	return rc;
}

START_TEST(test_opts)
{
	struct opt_out o;
	ck_assert_int_eq(parse("{\"name\": \"x\"}", &o), 0);
	ck_assert(o.lr == 0.5 && o.n == 3 && o.flag && o.norm == 0);
	ck_assert_int_eq(parse("{\"name\": \"x\", \"norm\": \"spectral\", \"n\": 10, \"lr\": 1}", &o), 0);
	ck_assert(o.norm == 1 && o.n == 10 && o.lr == 1);

	ck_assert_int_eq(parse("{\"name\": \"x\", \"lr\": 0}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "agg.lr: expected a number in (0, 1], got 0");
	ck_assert_int_eq(parse("{\"name\": \"x\", \"lr\": \"half\"}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "agg.lr: expected a number in (0, 1], got \"half\"");
	ck_assert_int_eq(parse("{\"name\": \"x\", \"n\": 2.5}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "agg.n: expected an integer in [1, 10], got 2.5");
	ck_assert_int_eq(parse("{\"name\": \"x\", \"norm\": \"l1\"}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "agg.norm: expected one of {frobenius,spectral}, got \"l1\"");
	ck_assert_int_eq(parse("{\"name\": \"x\", \"flag\": 1}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "agg.flag: expected true or false, got 1");
	ck_assert_int_eq(parse("{}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(), "agg.name: required key is missing");
	ck_assert_int_eq(parse("{\"name\": \"x\", \"lrr\": 1}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "agg.lrr: unknown key; did you mean 'lr'? (known: lr, n, flag, norm, name)");
	/* nothing near: no suggestion */
	ck_assert_int_eq(parse("{\"name\": \"x\", \"momentum\": 1}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "agg.momentum: unknown key (known: lr, n, flag, norm, name)");
	/* a transposition is one edit; case is ignored */
	ck_assert_int_eq(parse("{\"name\": \"x\", \"nrom\": \"spectral\"}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "agg.nrom: unknown key; did you mean 'norm'? (known: lr, n, flag, norm, name)");
	ck_assert_int_eq(parse("{\"name\": \"x\", \"norm\": \"Spectal\"}", &o), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "agg.norm: expected one of {frobenius,spectral}, got \"Spectal\"; did you mean "
			 "\"spectral\"?");
	ck_assert_int_eq(parse("[1]", &o), FEDRUN_ECONFIG);
}
END_TEST

START_TEST(test_opts_defaults_written)
{
	json_t *j = json_loads("{\"name\": \"x\", \"plugin\": \"p\"}", 0, NULL);
	struct opt_out o;
	ck_assert_int_eq(fedrun_opts_parse(spec, j, "agg", &o), 0);
	ck_assert(json_real_value(json_object_get(j, "lr")) == 0.5);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "n")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(j, "norm")), "frobenius");
	json_decref(j);
}
END_TEST

/* PATH: resolved against the base directory and written back; a missing
 * file is an error, unless FEDRUN_OPT_UNREAD leaves the check to the
 * caller. */
START_TEST(test_opts_path)
{
	struct path_out {
		const char *checked, *unread;
	} o = {0};
	static const struct fedrun_opt pspec[] = {
	    {"checked", FEDRUN_OPT_PATH, offsetof(struct path_out, checked), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
	     NULL, NULL},
	    {"unread", FEDRUN_OPT_PATH, offsetof(struct path_out, unread),
	     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_UNREAD, 0, 0, 0, NULL, NULL},
	    FEDRUN_OPT_END_,
	};
	fedrun_opts_set_base_dir("/nonexistent-dir");
	json_t *j = json_loads("{\"unread\": \"gone.model\"}", 0, NULL);
	ck_assert_int_eq(fedrun_opts_parse(pspec, j, "s", &o), 0);
	ck_assert_str_eq(o.unread, "/nonexistent-dir/gone.model");
	ck_assert_str_eq(json_string_value(json_object_get(j, "unread")), "/nonexistent-dir/gone.model");
	json_decref(j);
	j = json_loads("{\"checked\": \"gone.model\"}", 0, NULL);
	ck_assert_int_eq(fedrun_opts_parse(pspec, j, "s", &o), FEDRUN_ENOENT);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(),
				     "s.checked: cannot read file '/nonexistent-dir/gone.model'"));
	json_decref(j);
	j = json_loads("{\"unread\": \"\"}", 0, NULL);
	ck_assert_int_eq(fedrun_opts_parse(pspec, j, "s", &o), FEDRUN_ECONFIG);
	json_decref(j);
	fedrun_opts_set_base_dir(NULL);
}
END_TEST

/* ---- vector kernels ---- */

START_TEST(test_vec)
{
	const uint64_t n = 100003; /* odd, several blocks */
	float *x = fedrun_arena_alloc(n), *y = fedrun_arena_alloc(n), *z = fedrun_arena_alloc(n);
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1, FEDRUN_RNG_PLUGIN, 0, 0);
	for (uint64_t i = 0; i < n; i++) {
		x[i] = (float)fedrun_rng_normal(&r);
		y[i] = (float)fedrun_rng_normal(&r);
		z[i] = y[i];
	}
	double dot = 0, nx = 0, d2 = 0, as = 0;
	for (uint64_t i = 0; i < n; i++) {
		dot += (double)x[i] * y[i];
		nx += (double)x[i] * x[i];
		d2 += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
		as += fabs(x[i]);
	}
	ck_assert_double_eq_tol(fedrun_vec_dot(n, x, y), dot, 1e-9 * n);
	ck_assert_double_eq_tol(fedrun_vec_nrm2(n, x), sqrt(nx), 1e-9 * n);
	ck_assert_double_eq_tol(fedrun_vec_dist2(n, x, y), sqrt(d2), 1e-9 * n);
	ck_assert_double_eq_tol(fedrun_vec_asum(n, x), as, 1e-9 * n);

	const float *xs[3] = {x, NULL, y};
	const float w[3] = {0.25f, 100.0f, -0.5f};
	fedrun_vec_wsum(n, 3, xs, w, z);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_float_eq_tol(z[i], y[i] + 0.25f * x[i] - 0.5f * y[i], 1e-5f);
	float *yo = fedrun_arena_alloc(n);
	memcpy(yo, y, n * sizeof *y);
	fedrun_vec_axpy(n, 2.0f, x, y); /* y + 2x */
	fedrun_vec_scale(n, 0.5f, y);   /* y/2 + x */
	fedrun_vec_sub(n, y, x, y);     /* y/2 */
	for (uint64_t i = 0; i < n; i++)
		ck_assert_float_eq_tol(y[i], 0.5f * yo[i], 1e-5f);
	fedrun_arena_free(yo);
	uint64_t bad = 0;
	ck_assert(fedrun_vec_finite(n, x, &bad));
	x[777] = NAN;
	ck_assert(!fedrun_vec_finite(n, x, &bad));
	ck_assert_uint_eq(bad, 777);
	fedrun_arena_free(x);
	fedrun_arena_free(y);
	fedrun_arena_free(z);
}
END_TEST

/* ---- optimizers ---- */

START_TEST(test_optim_sgd_momentum)
{
	/* PyTorch's SGD: v1 = g1; v2 = mu v1 + g2; p -= lr v. */
	struct fedrun_optim_cfg cfg = {.kind = FEDRUN_OPTIM_SGD, .lr = 0.1, .momentum = 0.9};
	float p[1] = {1.0f}, g[1], st[1] = {0};
	uint64_t step = 0;
	ck_assert_uint_eq(fedrun_optim_state_floats(&cfg, 1), 1);
	g[0] = 2.0f;
	fedrun_optim_step(&cfg, cfg.lr, 1, p, g, st, &step);
	ck_assert_float_eq_tol(p[0], 1.0f - 0.1f * 2.0f, 1e-7f);
	g[0] = 1.0f;
	fedrun_optim_step(&cfg, cfg.lr, 1, p, g, st, &step);
	ck_assert_float_eq_tol(p[0], 0.8f - 0.1f * (0.9f * 2.0f + 1.0f), 1e-6f);
	ck_assert_uint_eq(step, 2);
}
END_TEST

START_TEST(test_optim_adam)
{
	/* Adam's first step moves each parameter by lr·sign(g) (bias-corrected). */
	struct fedrun_optim_cfg cfg = {.kind = FEDRUN_OPTIM_ADAM, .lr = 0.01, .beta1 = 0.9,
				       .beta2 = 0.999, .eps = 1e-8};
	float p[2] = {1.0f, -1.0f}, g[2] = {3.0f, -0.5f}, st[4] = {0};
	uint64_t step = 0;
	fedrun_optim_step(&cfg, cfg.lr, 2, p, g, st, &step);
	ck_assert_float_eq_tol(p[0], 0.99f, 1e-6f);
	ck_assert_float_eq_tol(p[1], -0.99f, 1e-6f);
	float big[3] = {3, 4, 0};
	ck_assert_double_eq_tol(fedrun_clip_grad_norm(3, big, 1.0), 5.0, 1e-9);
	ck_assert_float_eq_tol(big[0], 0.6f, 1e-5f);
}
END_TEST

/* Clipping inside fedrun_optim_step (folded into the update) and
 * fedrun_optim_step_zero move the
 * parameters exactly as clipping the gradient first with
 * fedrun_clip_grad_norm and stepping without clipping, for SGD with and
 * without Nesterov momentum and for Adam(W), over several blocks of the
 * norm's partial sums and a ragged tail; and the norm is the L2 norm. */
START_TEST(test_optim_clip_fused)
{
	const uint64_t n = 3 * 4096 + 21;
	enum fedrun_optimizer_kind kinds[] = {FEDRUN_OPTIM_SGD, FEDRUN_OPTIM_SGD, FEDRUN_OPTIM_ADAMW};
	float *p1 = malloc(n * sizeof *p1), *p2 = malloc(n * sizeof *p2);
	float *g = malloc(n * sizeof *g), *g2 = malloc(n * sizeof *g2);
	float *s1 = calloc(2 * n, sizeof *s1), *s2 = calloc(2 * n, sizeof *s2);
	float *p3 = malloc(n * sizeof *p3), *s3 = calloc(n, sizeof *s3);
	ck_assert(p1 && p2 && g && g2 && s1 && s2 && p3 && s3);
	for (int k = 0; k < 3; k++) {
		struct fedrun_optim_cfg cfg = {.kind = kinds[k], .lr = 0.05, .momentum = 0.5,
					       .nesterov = k == 1, .beta1 = 0.9, .beta2 = 0.999,
					       .eps = 1e-8, .weight_decay = 0.01, .clip_norm = 0.25};
		struct fedrun_optim_cfg plain = cfg;
		plain.clip_norm = 0;
		uint64_t st1 = 0, st2 = 0;
		for (uint64_t i = 0; i < n; i++)
			p1[i] = p2[i] = p3[i] = (float)sin(0.37 * (double)i);
		memset(s1, 0, 2 * n * sizeof *s1);
		memset(s2, 0, 2 * n * sizeof *s2);
		for (int step = 0; step < 3; step++) {
			double want = 0;
			for (uint64_t i = 0; i < n; i++) {
				/* step 2 is below the threshold: no clipping */
				g[i] = (float)cos(0.11 * (double)i + step) *
				       (step == 2 ? 1e-4f : 0.03f);
				want += (double)g[i] * g[i];
			}
			memcpy(g2, g, n * sizeof *g);
			/* fedrun_optim_step_zero on steps 0 and 2: the same
			 * update, and the gradient left all zeros */
			if (step == 1) {
				fedrun_optim_step(&cfg, cfg.lr, n, p1, g, s1, &st1);
			} else {
				fedrun_optim_step_zero(&cfg, cfg.lr, n, p1, g, s1, &st1);
				for (uint64_t i = 0; i < n; i++)
					ck_assert(g[i] == 0.0f && !signbit(g[i]));
			}
			double norm = fedrun_clip_grad_norm(n, g2, cfg.clip_norm);
			ck_assert_double_eq_tol(norm, sqrt(want), 1e-12 * sqrt(want));
			if (step < 2)
				ck_assert_double_gt(norm, cfg.clip_norm);
			fedrun_optim_step(&plain, plain.lr, n, p2, g2, s2, &st2);
			ck_assert_int_eq(memcmp(p1, p2, n * sizeof *p1), 0);
			ck_assert_int_eq(memcmp(s1, s2, 2 * n * sizeof *s1), 0);
			if (k == 0) /* SGD's rule, element by element, in float */
				for (uint64_t i = 0; i < n; i++) {
					float gi = g2[i] + (float)cfg.weight_decay * p3[i];
					s3[i] = step ? (float)cfg.momentum * s3[i] + gi : gi;
					p3[i] -= (float)cfg.lr * s3[i];
					ck_assert(p3[i] == p1[i] && s3[i] == s1[i]);
				}
		}
	}
	free(p1);
	free(p2);
	free(g);
	free(g2);
	free(s1);
	free(s2);
	free(p3);
	free(s3);
}
END_TEST

/* ---- safetensors ---- */

START_TEST(test_safetensors_roundtrip)
{
	make_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/m.safetensors", tmpdir);
	struct fedrun_layout l;
	fedrun_layout_init(&l);
	uint64_t s1[2] = {2, 3}, s2[1] = {5};
	fedrun_layout_add(&l, "w", 2, s1);
	fedrun_layout_add(&l, "b", 1, s2);
	float *a = fedrun_arena_alloc(l.total), *b = fedrun_arena_alloc(l.total);
	for (uint64_t i = 0; i < l.total; i++)
		a[i] = (float)i * 0.5f;
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	ck_assert_int_eq(fedrun_st_add_layout(&f, &l, a), 0);
	uint8_t blob[3] = {1, 2, 3};
	uint64_t three = 3;
	ck_assert_int_eq(fedrun_st_add(&f, "__blob", FEDRUN_U8, 1, &three, blob), 0);
	ck_assert_int_eq(fedrun_st_meta_set(&f, "k", "v"), 0);
	ck_assert_int_eq(fedrun_st_write(&f, path), 0);
	fedrun_st_fini(&f);

	struct fedrun_st_file g;
	ck_assert_int_eq(fedrun_st_read(&g, path), 0);
	ck_assert_str_eq(fedrun_st_meta_get(&g, "k"), "v");
	ck_assert_int_eq(fedrun_st_load_layout(&g, &l, b, "__"), 0);
	for (uint32_t t = 0; t < l.n; t++)
		ck_assert_mem_eq(a + l.t[t].offset, b + l.t[t].offset, l.t[t].numel * 4);
	ck_assert_int_eq(fedrun_st_load_layout(&g, &l, b, NULL), FEDRUN_EFORMAT);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "__blob"));
	fedrun_st_fini(&g);

	/* A model with another shape is refused by name. */
	struct fedrun_layout l2;
	fedrun_layout_init(&l2);
	uint64_t s3[2] = {3, 2};
	fedrun_layout_add(&l2, "w", 2, s3);
	ck_assert_int_eq(fedrun_st_read(&g, path), 0);
	ck_assert_int_eq(fedrun_st_load_layout(&g, &l2, b, "__"), FEDRUN_EFORMAT);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "tensor 'w'"));
	fedrun_st_fini(&g);
	fedrun_layout_fini(&l2);

	/* A name used twice, or "__metadata__", is refused when written (the
	 * header's hash table finds it: adding stays constant time), and no
	 * file is left. */
	char dup[512];
	snprintf(dup, sizeof dup, "%s/dup.safetensors", tmpdir);
	const char *twice[] = {"b", "__metadata__"};
	for (int k = 0; k < 2; k++) {
		fedrun_st_init(&f);
		ck_assert_int_eq(fedrun_st_add_layout(&f, &l, a), 0);
		ck_assert_int_eq(fedrun_st_add(&f, twice[k], FEDRUN_U8, 1, &three, blob), 0);
		ck_assert_int_eq(fedrun_st_write(&f, dup), FEDRUN_EINVAL);
		ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "name used twice"));
		ck_assert_int_ne(access(dup, F_OK), 0);
		fedrun_st_fini(&f);
	}

	/* Header is 8-aligned and data follows: check the file format by hand. */
	char *buf;
	size_t n;
	ck_assert_int_eq(fedrun_read_file(path, &buf, &n), 0);
	uint64_t hlen;
	memcpy(&hlen, buf, 8);
	ck_assert_uint_eq(hlen % 8, 0);
	ck_assert_uint_eq(n, 8 + hlen + 11 * 4 + 3);
	ck_assert(buf[8] == '{');
	free(buf);
	fedrun_arena_free(a);
	fedrun_arena_free(b);
	fedrun_layout_fini(&l);
	remove_tmpdir();
}
END_TEST

START_TEST(test_safetensors_damaged)
{
	make_tmpdir();
	char path[512], bad[512];
	snprintf(path, sizeof path, "%s/m.safetensors", tmpdir);
	snprintf(bad, sizeof bad, "%s/bad.safetensors", tmpdir);
	float data[64];
	for (int i = 0; i < 64; i++)
		data[i] = (float)i;
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	uint64_t shape[1] = {64};
	fedrun_st_add(&f, "x", FEDRUN_F32, 1, shape, data);
	ck_assert_int_eq(fedrun_st_meta_set(&f, "fedrun.round", "3"), 0);
	ck_assert_int_eq(fedrun_st_write(&f, path), 0);
	fedrun_st_fini(&f);
	char *buf;
	size_t n;
	ck_assert_int_eq(fedrun_read_file(path, &buf, &n), 0);
	ck_assert_int_eq(fedrun_st_read(&f, path), 0);
	ck_assert_int_eq(fedrun_st_checksum_kind(&f), FEDRUN_ST_CHECKSUM_FULL);
	fedrun_st_fini(&f);

	/* The checksum covers the header: a round number, a shape or an
	 * offset changed in place is caught; a damaged checksum entry is not
	 * a way around it (its key: no checksum, which the reader reports;
	 * its value: refused). Each edit overwrites strlen(to) bytes from where
	 * `from` is found. */
	struct {
		const char *from, *to, *msg;
		int kind;
	} edits[] = {
	    {"\"fedrun.round\":\"3\"", "\"fedrun.round\":\"9\"", "checksum mismatch", -1},
	    {"\"shape\":[64]", "\"shape\":[16]", "bytes for", -1},
	    {"\"fedrun.checksum\"", "\"fedrun.checksuM\"", NULL, FEDRUN_ST_CHECKSUM_NONE},
	    /* the whole entry: 18 + 21 bytes ("h2:" and 16 digits, quoted) */
	    {"\"fedrun.checksum\":\"h2:", "\"fedrun.checksum\":[1,2,3,4,5,6,7,8,9,0]", "not a string",
	     -1},
	    {"\"fedrun.checksum\":\"h2:", "\"fedrun.checksum\":\"h3:", "malformed", -1},
	};
	for (size_t e = 0; e < sizeof edits / sizeof *edits; e++) {
		char *copy = malloc(n);
		memcpy(copy, buf, n);
		char *at = NULL;
		for (size_t i = 0; !at && i + strlen(edits[e].from) <= n; i++)
			if (memcmp(copy + i, edits[e].from, strlen(edits[e].from)) == 0)
				at = copy + i;
		ck_assert_msg(at != NULL, "edit %zu: '%s' not in the header", e, edits[e].from);
		ck_assert_uint_le(strlen(edits[e].from), strlen(edits[e].to)); /* overwritten */
		memcpy(at, edits[e].to, strlen(edits[e].to));
		ck_assert_int_eq(fedrun_write_file_atomic(bad, copy, n), 0);
		free(copy);
		int rc = fedrun_st_read(&f, bad);
		if (edits[e].msg) {
			ck_assert_msg(rc == FEDRUN_EFORMAT, "edit %zu accepted", e);
			ck_assert_msg(strstr(fedrun_error_message(), edits[e].msg) != NULL, "edit %zu: %s",
				      e, fedrun_error_message());
		} else {
			ck_assert_int_eq(rc, 0);
			ck_assert_int_eq(fedrun_st_checksum_kind(&f), edits[e].kind);
			fedrun_st_fini(&f);
		}
	}

	/* Every truncation is refused. */
	for (size_t cut = 0; cut < n; cut += 7) {
		ck_assert_int_eq(fedrun_write_file_atomic(bad, buf, cut), 0);
		ck_assert_int_eq(fedrun_st_read(&f, bad), FEDRUN_EFORMAT);
		ck_assert_ptr_nonnull(strstr(fedrun_error_message(), bad));
	}
	/* A flipped bit in the data is caught by the checksum, and the
	 * message does not give the sum that would re-seal the file: no
	 * "h2:" but the file's own. */
	buf[n - 5] ^= 0x10;
	ck_assert_int_eq(fedrun_write_file_atomic(bad, buf, n), 0);
	ck_assert_int_eq(fedrun_st_read(&f, bad), FEDRUN_EFORMAT);
	const char *cmsg = fedrun_error_message(), *h2 = strstr(cmsg, "h2:");
	ck_assert_ptr_nonnull(strstr(cmsg, "checksum"));
	ck_assert_msg(h2 && !strstr(h2 + 3, "h2:"), "more than one checksum in: %s", cmsg);
	buf[n - 5] ^= 0x10;
	/* A damaged header. */
	buf[10] = '#';
	ck_assert_int_eq(fedrun_write_file_atomic(bad, buf, n), 0);
	ck_assert_int_eq(fedrun_st_read(&f, bad), FEDRUN_EFORMAT);
	/* Garbage and a missing file. */
	ck_assert_int_eq(fedrun_write_file_atomic(bad, "not a model at all", 18), 0);
	ck_assert_int_eq(fedrun_st_read(&f, bad), FEDRUN_EFORMAT);
	snprintf(bad, sizeof bad, "%s/none.safetensors", tmpdir);
	ck_assert_int_eq(fedrun_st_read(&f, bad), FEDRUN_ENOENT);
	free(buf);
	remove_tmpdir();
}
END_TEST

/* A file as Hugging Face's safetensors writes it, made here byte by byte:
 * {"format":"pt"} metadata and no fedrun checksum, F16, BF16, F32, I64 and
 * BOOL tensors, the header listing them in another order than their data,
 * padded with spaces. Read, its floats converted exactly; a bad range is
 * still refused. */
static size_t hf_file(char *out, const char *hdr, const unsigned char *data, size_t n)
{
	size_t hl = strlen(hdr);
	for (int b = 0; b < 8; b++)
		out[b] = (char)(hl >> (8 * b));
	memcpy(out + 8, hdr, hl);
	memcpy(out + 8 + hl, data, n);
	return 8 + hl + n;
}

START_TEST(test_safetensors_hf)
{
	make_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/model.safetensors", tmpdir);
	/* data: h (F16 x4, 8 bytes) at 0, b (BF16 x2) at 8, f (F32 x1) at 12,
	 * ids (I64 1x2) at 16, mask (BOOL x3) at 32 */
	unsigned char data[35] = {
	    0x00, 0x3c, 0x01, 0x00, 0x00, 0x7c, 0x01, 0xfe, /* 1, 2^-24, inf, -nan */
	    0x80, 0x3f, 0x49, 0xc0,			    /* 1, -3.140625 */
	    0x00, 0x00, 0x00, 0x40,			    /* 2 */
	    7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1};
	const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},"
			  "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]},"
			  "\"f\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[12,16]},"
			  "\"h\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,8]},"
			  "\"ids\":{\"dtype\":\"I64\",\"shape\":[1,2],\"data_offsets\":[16,32]},"
			  "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[32,35]}}   ";
	char buf[1024];
	size_t n = hf_file(buf, hdr, data, sizeof data);
	ck_assert_int_eq(fedrun_write_file_atomic(path, buf, n), 0);
	struct fedrun_st_file f;
	ck_assert_msg(fedrun_st_read(&f, path) == 0, "%s", fedrun_error_message());
	ck_assert_str_eq(fedrun_st_meta_get(&f, "format"), "pt");
	ck_assert_int_eq(fedrun_st_checksum_kind(&f), FEDRUN_ST_CHECKSUM_NONE);
	const struct fedrun_st_tensor *h = fedrun_st_find(&f, "h"), *b = fedrun_st_find(&f, "b"),
				      *x = fedrun_st_find(&f, "f"), *ids = fedrun_st_find(&f, "ids"),
				      *mask = fedrun_st_find(&f, "mask");
	ck_assert(h && b && x && ids && mask);
	ck_assert_int_eq(h->dtype, FEDRUN_F16);
	ck_assert_int_eq(b->dtype, FEDRUN_BF16);
	ck_assert_int_eq(ids->dtype, FEDRUN_I64);
	ck_assert_int_eq(mask->dtype, FEDRUN_BOOL);
	ck_assert_uint_eq(x->ndim, 0);
	ck_assert_uint_eq(mask->bytes, 3);
	float v[4];
	ck_assert_int_eq(fedrun_st_to_f32(h, v), 0);
	ck_assert(v[0] == 1.0f && v[1] == ldexpf(1.0f, -24) && isinf(v[2]) && v[2] > 0);
	ck_assert(isnan(v[3]) && signbit(v[3]));
	ck_assert_int_eq(fedrun_st_to_f32(b, v), 0);
	ck_assert(v[0] == 1.0f && v[1] == -3.140625f);
	ck_assert_int_eq(fedrun_st_to_f32(x, v), 0);
	ck_assert(v[0] == 2.0f);
	ck_assert_int_eq(fedrun_st_to_f32(ids, v), FEDRUN_EFORMAT);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "'ids': dtype I64"));
	int64_t id;
	memcpy(&id, (const char *)ids->data + 8, 8);
	ck_assert_int_eq(id, 9);
	fedrun_st_fini(&f);

	/* Written by fedrun in F16 and BF16, read back the same. */
	char mine[512];
	snprintf(mine, sizeof mine, "%s/half.safetensors", tmpdir);
	fedrun_st_init(&f);
	uint64_t four = 4, two = 2;
	ck_assert_int_eq(fedrun_st_add(&f, "h", FEDRUN_F16, 1, &four, data), 0);
	ck_assert_int_eq(fedrun_st_add(&f, "b", FEDRUN_BF16, 1, &two, data + 8), 0);
	ck_assert_int_eq(fedrun_st_write(&f, mine), 0);
	fedrun_st_fini(&f);
	ck_assert_int_eq(fedrun_st_read(&f, mine), 0);
	ck_assert_int_eq(fedrun_st_checksum_kind(&f), FEDRUN_ST_CHECKSUM_FULL);
	ck_assert_mem_eq(fedrun_st_find(&f, "h")->data, data, 8);
	ck_assert_mem_eq(fedrun_st_find(&f, "b")->data, data + 8, 4);
	fedrun_st_fini(&f);

	/* Header sanity holds for these files too: overlapping ranges, a
	 * range past the data, a BOOL of the wrong size, an unknown dtype. */
	struct {
		const char *from, *to, *msg;
	} bad[] = {
	    {"\"data_offsets\":[8,12]", "\"data_offsets\":[6,10]", "overlaps"},
	    {"\"data_offsets\":[32,35]", "\"data_offsets\":[32,36]", "outside"},
	    {"\"shape\":[3]", "\"shape\":[4]", "bytes for"},
	    {"\"BF16\"", "\"BF17\"", "unsupported dtype BF17"},
	};
	for (size_t e = 0; e < sizeof bad / sizeof *bad; e++) {
		n = hf_file(buf, hdr, data, sizeof data);
		char *at = strstr(buf + 8, bad[e].from);
		ck_assert_ptr_nonnull(at);
		ck_assert_uint_eq(strlen(bad[e].from), strlen(bad[e].to));
		memcpy(at, bad[e].to, strlen(bad[e].to));
		ck_assert_int_eq(fedrun_write_file_atomic(path, buf, n), 0);
		ck_assert_int_eq(fedrun_st_read(&f, path), FEDRUN_EFORMAT);
		ck_assert_msg(strstr(fedrun_error_message(), bad[e].msg) != NULL, "edit %zu: %s", e,
			      fedrun_error_message());
	}
	remove_tmpdir();
}
END_TEST

/* Every F16 and BF16 bit pattern against the value its fields give:
 * (-1)^s 2^(e-15) (1 + m/1024), subnormals 2^-14 (m/1024), infinities,
 * and NaNs with their payload in the float's top fraction bits. */
START_TEST(test_half_floats)
{
	for (uint32_t u = 0; u < 65536; u++) {
		uint16_t h = (uint16_t)u;
		int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
		float got = fedrun_f16_to_f32(h), want;
		uint32_t gb;
		memcpy(&gb, &got, 4);
		if (e == 0x1f) {
			ck_assert_msg(m ? isnan(got) : isinf(got), "f16 %04x", u);
			ck_assert_uint_eq(gb & 0x7fffff, (uint32_t)m << 13);
		} else {
			want = e ? ldexpf(1.0f + (float)m / 1024, e - 15) : ldexpf((float)m / 1024, -14);
			want = s ? -want : want;
			ck_assert_msg(got == want, "f16 %04x: %a, want %a", u, got, want);
		}
		ck_assert_int_eq(!!signbit(got), s);
		uint32_t want_b = u << 16;
		got = fedrun_bf16_to_f32(h);
		memcpy(&gb, &got, 4);
		ck_assert_uint_eq(gb, want_b);
	}
	ck_assert_str_eq(fedrun_dtype_name(FEDRUN_BF16), "BF16");
	ck_assert_uint_eq(fedrun_dtype_size(FEDRUN_BOOL), 1);
}
END_TEST

/* ---- messages ---- */

START_TEST(test_messages)
{
	struct fedrun_layout l;
	fedrun_layout_init(&l);
	uint64_t s1[1] = {5}, s2[2] = {3, 3}, s3[1] = {1};
	fedrun_layout_add(&l, "a", 1, s1);
	fedrun_layout_add(&l, "b", 2, s2);
	fedrun_layout_add(&l, "c", 1, s3);
	float *arena = fedrun_arena_alloc(l.total);
	for (uint64_t i = 0; i < l.total; i++)
		arena[i] = (float)i;
	const uint8_t mask[3] = {1, 0, 1};
	void *buf;
	size_t len;
	ck_assert_int_eq(msg_encode(MSG_PULL, 4, 9, 123, 0.5, &l, arena, mask, &buf, &len), 0);
	/* Header, two indices padded to 8, 6 floats: counted bytes are exact. */
	ck_assert_uint_eq(len, 48 + 8 + 6 * 4);
	const float *tens[3];
	struct msg_view v = {.tensor = tens};
	ck_assert_int_eq(msg_decode(buf, len, &l, &v), 0);
	ck_assert_uint_eq(v.client, 9);
	ck_assert_uint_eq(v.round, 4);
	ck_assert_uint_eq(v.n_samples, 123);
	ck_assert_ptr_null(tens[1]);
	ck_assert_mem_eq(tens[0], arena + l.t[0].offset, 5 * 4);
	ck_assert_mem_eq(tens[2], arena + l.t[2].offset, 4);
	ck_assert_int_eq(msg_decode(buf, len - 1, &l, &v), FEDRUN_EFORMAT);
	ck_assert_int_eq(msg_decode(buf, 10, &l, &v), FEDRUN_EFORMAT);
	((char *)buf)[0] = 'X';
	ck_assert_int_eq(msg_decode(buf, len, &l, &v), FEDRUN_EFORMAT);
	free(buf);
	fedrun_arena_free(arena);
	fedrun_layout_fini(&l);
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_error_message);
	tcase_add_test(tc, test_philox_kat);
	tcase_add_test(tc, test_rng_streams);
	tcase_add_test(tc, test_rng_distributions);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_opts);
	tcase_add_test(tc, test_opts_defaults_written);
	tcase_add_test(tc, test_opts_path);
	tcase_add_test(tc, test_vec);
	tcase_add_test(tc, test_optim_sgd_momentum);
	tcase_add_test(tc, test_optim_adam);
	tcase_add_test(tc, test_optim_clip_fused);
	tcase_add_test(tc, test_safetensors_roundtrip);
	tcase_add_test(tc, test_safetensors_damaged);
	tcase_add_test(tc, test_safetensors_hf);
	tcase_add_test(tc, test_half_floats);
	tcase_add_test(tc, test_messages);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(core_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
