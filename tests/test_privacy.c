/* SPDX-License-Identifier: Apache-2.0 */
/* Differential privacy: the RDP accountant against published and closed-form
 * figures, ChaCha20 against RFC 8439, the secure noise's distributions,
 * clipping, and the gaussian and laplace plugins through their ops
 * (accounting, central noise, checkpointed state, bad configurations). */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/fedrun.h"
#include "fedrun/csprng.h"
#include "fedrun/rdp.h"
#include "fakehost.h"
#include "../plugins/privacy/noise.h"

static struct fedrun_registry *reg;

static void teardown(void)
{
	fedrun_registry_destroy(reg);
	reg = NULL;
}

static json_t *cfg(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);
	ck_assert_msg(j != NULL, "bad test JSON: %s", err.text);
	return j;
}

/* ---- the accountant ---------------------------------------------------- */

/* The DP-SGD MNIST setting of Abadi et al. 2016 and TensorFlow Privacy's
 * tutorial: batch 150 of 60000, noise multiplier 1.3, 6000 steps. */
START_TEST(test_rdp_mnist)
{
	size_t n;
	const double *orders = fedrun_rdp_default_orders(&n);
	ck_assert_uint_eq(n, 72);
	double *rdp = calloc(n, sizeof *rdp), eps, order;
	ck_assert_int_eq(fedrun_rdp_sgm(150.0 / 60000, 1.3, 6000, orders, n, rdp), 0);
	ck_assert_int_eq(fedrun_rdp_to_eps(orders, rdp, n, 1e-5, FEDRUN_RDP_CLASSIC, &eps, &order),
			 0);
	ck_assert_double_eq_tol(eps, 0.9419, 5e-5);
	ck_assert_double_eq(order, 19);
	ck_assert_int_eq(fedrun_rdp_to_eps(orders, rdp, n, 1e-5, FEDRUN_RDP_IMPROVED, &eps, &order),
			 0);
	ck_assert_double_eq_tol(eps, 0.7242, 5e-5);
	ck_assert_double_eq(order, 19);
	free(rdp);
}
END_TEST

/* q = 1 is the Gaussian mechanism: RDP(α) = α/(2z²) per step (Mironov
 * 2017, proposition 7), at integer and fractional orders alike. */
START_TEST(test_rdp_q1_closed_form)
{
	const double orders[] = {1.25, 1.5, 2, 3.5, 19, 64, 512};
	const double zs[] = {0.3, 1.0, 4.0};
	double rdp[7];
	for (size_t k = 0; k < 3; k++) {
		ck_assert_int_eq(fedrun_rdp_sgm(1.0, zs[k], 7, orders, 7, rdp), 0);
		for (size_t i = 0; i < 7; i++)
			ck_assert_double_eq_tol(rdp[i], 7 * orders[i] / (2 * zs[k] * zs[k]),
						1e-12 * rdp[i]);
	}
	/* The classic conversion at one order is then exact arithmetic. */
	double eps, order;
	const double one[] = {10};
	ck_assert_int_eq(fedrun_rdp_sgm(1.0, 2.0, 1, one, 1, rdp), 0);
	ck_assert_int_eq(fedrun_rdp_to_eps(one, rdp, 1, 1e-5, FEDRUN_RDP_CLASSIC, &eps, &order), 0);
	ck_assert_double_eq_tol(eps, 10 / 8.0 + log(1e5) / 9, 1e-12);
	ck_assert_int_eq(fedrun_rdp_to_eps(one, rdp, 1, 1e-5, FEDRUN_RDP_IMPROVED, &eps, &order),
			 0);
	ck_assert_double_eq_tol(eps, 10 / 8.0 + log(0.9) - (log(1e-5) + log(10)) / 9, 1e-12);
	/* q = 0: nothing is released. */
	ck_assert_int_eq(fedrun_rdp_sgm(0.0, 1.0, 100, one, 1, rdp), 0);
	ck_assert_double_eq(rdp[0], 0);
	/* A multiplier so small that 1/z² overflows is refused with a message
	 * naming it, not turned into a NaN divergence. */
	const double frac[] = {2.25};
	ck_assert_int_eq(fedrun_rdp_sgm(0.05, 1e-160, 1, frac, 1, rdp), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "noise multiplier 1e-160 is too small"), "%s",
		      fedrun_error_message());
}
END_TEST

/* One step's RDP against log(∫ μ0 (μ/μ0)^α)/(α − 1) integrated numerically
 * with mpmath at 40 digits (μ0 = N(0, z²), μ = (1−q)μ0 + q N(1, z²)):
 * an independent check of both series. */
START_TEST(test_rdp_against_integration)
{
	/* clang-format off */
	static const struct {
		double q, z, alpha, rdp;
	} ref[] = {
		{0.0025, 1.3, 1.25, 3.14667669467461e-6}, {0.0025, 1.3, 2.5, 6.31338811088879e-6},
		{0.0025, 1.3, 4.5, 1.14226063621357e-5},  {0.0025, 1.3, 19, 5.03772661486288e-5},
		{0.3, 0.8, 1.25, 0.129125490762826},      {0.3, 0.8, 1.5, 0.172219595844838},
		{0.3, 0.8, 2.25, 0.376056822898662},      {0.3, 0.8, 4.5, 1.98131401651822},
		{0.3, 0.8, 19, 13.5728898176575},         {0.01, 0.5, 1.5, 0.00262989120816127},
		{0.01, 0.5, 2.5, 0.0147712782117204},     {0.01, 0.5, 7, 8.62730145404084},
		{0.9, 2.0, 1.25, 0.127418296810806},      {0.9, 2.0, 2.5, 0.261353140737471},
	};
	/* clang-format on */
	for (size_t i = 0; i < sizeof ref / sizeof *ref; i++) {
		double r;
		ck_assert_int_eq(fedrun_rdp_sgm(ref[i].q, ref[i].z, 1, &ref[i].alpha, 1, &r), 0);
		ck_assert_msg(fabs(r - ref[i].rdp) <= 1e-9 * ref[i].rdp + 1e-14,
			      "q %g z %g order %g: %.15g, want %.15g", ref[i].q, ref[i].z,
			      ref[i].alpha, r, ref[i].rdp);
	}
}
END_TEST

static double eps_of(double q, double z, uint64_t steps, double delta, enum fedrun_rdp_conversion c)
{
	size_t n;
	const double *orders = fedrun_rdp_default_orders(&n);
	double rdp[128], eps, order;
	ck_assert_int_eq(fedrun_rdp_sgm(q, z, steps, orders, n, rdp), 0);
	ck_assert_int_eq(fedrun_rdp_to_eps(orders, rdp, n, delta, c, &eps, &order), 0);
	return eps;
}

START_TEST(test_rdp_monotone)
{
	size_t n;
	const double *orders = fedrun_rdp_default_orders(&n);
	double a[128], b[128];
	/* RDP grows with the order, the sampling rate and the steps, and
	 * falls with the noise. */
	ck_assert_int_eq(fedrun_rdp_sgm(0.01, 1.1, 1, orders, n, a), 0);
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(a[i] >= a[i - 1], "order %g: %g < %g", orders[i], a[i], a[i - 1]);
	ck_assert_int_eq(fedrun_rdp_sgm(0.02, 1.1, 1, orders, n, b), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert(b[i] > a[i]);
	ck_assert_int_eq(fedrun_rdp_sgm(0.01, 1.2, 1, orders, n, b), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert(b[i] < a[i]);
	/* Subsampling only helps: q < 1 never exceeds the Gaussian mechanism. */
	ck_assert_int_eq(fedrun_rdp_sgm(1.0, 1.1, 1, orders, n, b), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert(a[i] <= b[i]);
	/* ε grows with rounds, falls with δ and with the noise; the improved
	 * conversion is never worse than the classic one. */
	double prev = 0;
	for (uint64_t t = 1; t <= 64; t *= 2) {
		double e = eps_of(0.05, 1.0, t, 1e-5, FEDRUN_RDP_IMPROVED);
		ck_assert_msg(e > prev, "%llu steps: eps %g <= %g", (unsigned long long)t, e, prev);
		ck_assert(e <= eps_of(0.05, 1.0, t, 1e-5, FEDRUN_RDP_CLASSIC));
		prev = e;
	}
	ck_assert(eps_of(0.05, 1.0, 100, 1e-3, FEDRUN_RDP_IMPROVED) <
		  eps_of(0.05, 1.0, 100, 1e-6, FEDRUN_RDP_IMPROVED));
	ck_assert(eps_of(0.05, 2.0, 100, 1e-5, FEDRUN_RDP_IMPROVED) <
		  eps_of(0.05, 1.0, 100, 1e-5, FEDRUN_RDP_IMPROVED));
}
END_TEST

START_TEST(test_rdp_bad_arguments)
{
	const double ok[] = {2}, bad[] = {1};
	double r[1] = {0}, eps, order;
	ck_assert_int_eq(fedrun_rdp_sgm(1.5, 1, 1, ok, 1, r), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_rdp_sgm(-0.1, 1, 1, ok, 1, r), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_rdp_sgm(0.1, 0, 1, ok, 1, r), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_rdp_sgm(0.1, NAN, 1, ok, 1, r), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_rdp_sgm(0.1, 1, 1, bad, 1, r), FEDRUN_EINVAL);
	ck_assert_str_eq(fedrun_error_message(), "RDP: order 1 is not above 1");
	ck_assert_int_eq(fedrun_rdp_to_eps(ok, r, 1, 0, FEDRUN_RDP_CLASSIC, &eps, &order),
			 FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_rdp_to_eps(ok, r, 1, 1, FEDRUN_RDP_CLASSIC, &eps, &order),
			 FEDRUN_EINVAL);
	r[0] = -1;
	ck_assert_int_eq(fedrun_rdp_to_eps(ok, r, 1, 1e-5, FEDRUN_RDP_IMPROVED, &eps, &order),
			 FEDRUN_EINVAL);
	/* A tiny divergence: δ alone covers it (improved), ε = 0. */
	r[0] = 1e-12;
	ck_assert_int_eq(fedrun_rdp_to_eps(ok, r, 1, 1e-5, FEDRUN_RDP_IMPROVED, &eps, &order), 0);
	ck_assert_double_eq(eps, 0);
}
END_TEST

/* ---- ChaCha20 and the secure source ------------------------------------ */

/* RFC 8439 section 2.3.2: the block function's test vector. */
START_TEST(test_chacha20_rfc8439)
{
	uint32_t key[8], out[16];
	for (int i = 0; i < 8; i++)
		key[i] = (uint32_t)(4 * i) | (uint32_t)(4 * i + 1) << 8 |
			 (uint32_t)(4 * i + 2) << 16 | (uint32_t)(4 * i + 3) << 24;
	const uint32_t nonce[3] = {0x09000000, 0x4a000000, 0x00000000};
	static const uint32_t want[16] = {0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3,
					  0xc7f4d1c7, 0x0368c033, 0x9aaa2204, 0x4e6cd4c3,
					  0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9,
					  0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2};
	fedrun_chacha20_block(key, 1, nonce, out);
	ck_assert_mem_eq(out, want, sizeof want);

	/* The same through the byte interface of the stream. */
	uint8_t kb[32], nb[12] = {0, 0, 0, 9, 0, 0, 0, 0x4a, 0, 0, 0, 0};
	for (int i = 0; i < 32; i++)
		kb[i] = (uint8_t)i;
	struct fedrun_csprng g;
	fedrun_csprng_init_key(&g, kb, nb, 1);
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(fedrun_csprng_u32(&g), want[i]);

	/* Appendix A.1, test vector 1: zero key, nonce and counter. */
	static const uint8_t zero[32];
	static const uint32_t want0[4] = {0xade0b876, 0x903df1a0, 0xe56a5d40, 0x28bd8653};
	fedrun_csprng_init_key(&g, zero, zero, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(fedrun_csprng_u32(&g), want0[i]);

	/* After block 2^32 − 1 the counter carries into nonce word 0. */
	fedrun_csprng_init_key(&g, kb, zero, UINT32_MAX);
	for (int i = 0; i < 16; i++)
		fedrun_csprng_u32(&g);
	const uint32_t carried[3] = {1, 0, 0};
	fedrun_chacha20_block(g.key, 0, carried, out);
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(fedrun_csprng_u32(&g), out[i]);
	fedrun_csprng_fini(&g);
	ck_assert_uint_eq(g.key[0] | g.buf[3], 0);
}
END_TEST

/* Mean, variance (and E|x| for Laplace) of N draws within five standard
 * errors: var_se uses the kurtosis excess (0 normal, 3 Laplace). */
static void check_moments(const double *x, size_t n, double var, double kurt_excess,
			  double mean_abs, const char *what)
{
	double s = 0, s2 = 0, sa = 0;
	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
		sa += fabs(x[i]);
	}
	double m = s / n, v = s2 / n - m * m;
	ck_assert_msg(fabs(m) < 5 * sqrt(var / n), "%s: mean %g", what, m);
	ck_assert_msg(fabs(v - var) < 5 * var * sqrt((2 + kurt_excess) / n),
		      "%s: variance %g, want %g", what, v, var);
	if (mean_abs > 0)
		ck_assert_msg(fabs(sa / n - mean_abs) < 5 * mean_abs / sqrt(n),
			      "%s: E|x| %g, want %g", what, sa / n, mean_abs);
}

START_TEST(test_csprng_distributions)
{
	enum { N = 100000 };
	double *x = malloc(N * sizeof *x);
	struct fedrun_csprng g;
	ck_assert_int_eq(fedrun_csprng_init(&g), 0);
	for (int i = 0; i < N; i++)
		x[i] = 3 * fedrun_csprng_normal(&g);
	check_moments(x, N, 9, 0, 0, "normal");
	for (int i = 0; i < N; i++)
		x[i] = fedrun_csprng_laplace(&g, 0.5);
	check_moments(x, N, 2 * 0.25, 3, 0.5, "laplace");
	/* Uniform: mean 1/2, variance 1/12, strictly inside (0, 1). */
	double s = 0;
	for (int i = 0; i < N; i++) {
		double u = fedrun_csprng_uniform(&g);
		ck_assert(u > 0 && u < 1);
		s += u;
	}
	ck_assert_double_eq_tol(s / N, 0.5, 5 * sqrt(1.0 / 12 / N));
	fedrun_csprng_fini(&g);
	/* Two streams get two keys. */
	struct fedrun_csprng a, b;
	ck_assert_int_eq(fedrun_csprng_init(&a), 0);
	ck_assert_int_eq(fedrun_csprng_init(&b), 0);
	ck_assert(fedrun_csprng_u64(&a) != fedrun_csprng_u64(&b) ||
		  fedrun_csprng_u64(&a) != fedrun_csprng_u64(&b));
	free(x);
}
END_TEST

/* ---- clipping ---------------------------------------------------------- */

static void layout2(struct fedrun_layout *l, uint64_t n0, uint64_t n1)
{
	fedrun_layout_init(l);
	ck_assert_int_eq(fedrun_layout_add(l, "encoder.w", 1, &n0), 0);
	ck_assert_int_eq(fedrun_layout_add(l, "decoder.w", 1, &n1), 0);
}

static void fill(const struct fedrun_layout *l, float *d, uint32_t seed, double scale)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_PLUGIN, 0, 0);
	for (uint32_t i = 0; i < l->n; i++)
		for (uint64_t j = 0; j < l->t[i].numel; j++)
			d[l->t[i].offset + j] = (float)(scale * fedrun_rng_normal(&r));
}

/* The clipped norm is at most the bound and within 1e-6 of it, over many
 * sizes and seeds (float rounding would otherwise overshoot now and then);
 * unsent tensors and small updates are untouched. */
START_TEST(test_clip_exact)
{
	for (int l1 = 0; l1 < 2; l1++) {
		for (uint32_t seed = 1; seed <= 50; seed++) {
			struct fedrun_layout l;
			layout2(&l, 37 * seed, 5);
			float *d = fedrun_arena_alloc(l.total), *orig = fedrun_arena_alloc(l.total);
			fill(&l, d, seed, 3.0);
			memcpy(orig, d, l.total * sizeof *d);
			const uint8_t mask[2] = {1, 0};
			double bound = 0.1 + seed * 0.37;
			ck_assert_int_eq(noise_clip(&l, mask, d, l1, bound, 0), 0);
			double norm = noise_norm(&l, mask, d, l1);
			ck_assert_msg(norm <= bound && norm >= bound * (1 - 1e-6),
				      "L%d seed %u: norm %.12g, bound %.12g", l1 ? 1 : 2, seed,
				      norm, bound);
			ck_assert_mem_eq(d + l.t[1].offset, orig + l.t[1].offset,
					 5 * sizeof(float));
			/* Within the bound: unchanged. */
			memcpy(d, orig, l.total * sizeof *d);
			double big = 2 * noise_norm(&l, mask, d, l1);
			ck_assert_int_eq(noise_clip(&l, mask, d, l1, big, 0), 0);
			ck_assert_mem_eq(d, orig, l.total * sizeof *d);
			fedrun_arena_free(d);
			fedrun_arena_free(orig);
			fedrun_layout_fini(&l);
		}
	}
	/* A non-finite update cannot be clipped. */
	struct fedrun_layout l;
	layout2(&l, 3, 3);
	float *d = fedrun_arena_alloc(l.total);
	d[1] = INFINITY;
	const uint8_t mask[2] = {1, 1};
	ck_assert_int_eq(noise_clip(&l, mask, d, false, 1, 7), FEDRUN_ENUMERIC);
	fedrun_arena_free(d);
	fedrun_layout_fini(&l);
}
END_TEST

/* ---- the plugins ------------------------------------------------------- */

struct inst {
	struct fakehost fh;
	const struct fedrun_privacy_ops *ops;
	void *st;
	json_t *config;
};

static int inst_create(struct inst *in, const char *plugin, const char *config,
		       const struct fedrun_layout *l)
{
	fakehost_init(&in->fh, 1);
	in->ops = fakehost_plugin(&reg, FEDRUN_KIND_PRIVACY, plugin)->ops;
	in->config = cfg(config);
	in->st = NULL;
	return in->ops->create(&in->fh.host, in->config, l, &in->st);
}

static void inst_destroy(struct inst *in)
{
	if (in->st)
		in->ops->destroy(in->st);
	json_decref(in->config);
}

static struct fedrun_round_info round_info(const struct fedrun_layout *l, uint32_t round,
					   uint32_t sampled, uint32_t clients, double fraction)
{
	return (struct fedrun_round_info){.size = sizeof(struct fedrun_round_info),
					  .round = round,
					  .rounds = 100,
					  .num_clients = clients,
					  .seed = 11,
					  .layout = l,
					  .sampled = sampled,
					  .fraction = fraction};
}

/* Central mode: clients clip to exactly C and add nothing. */
START_TEST(test_gaussian_central_clips)
{
	struct fedrun_layout l;
	layout2(&l, 1000, 24);
	struct inst in;
	ck_assert_int_eq(
	    inst_create(&in, "gaussian",
			"{\"mode\": \"central\", \"clip\": 0.75, \"noise_multiplier\": 1.1}", &l),
	    0);
	float *d = fedrun_arena_alloc(l.total), *orig = fedrun_arena_alloc(l.total);
	fill(&l, d, 3, 1.0);
	memcpy(orig, d, l.total * sizeof *d);
	const uint8_t all[2] = {1, 1};
	struct fedrun_round_info ri = round_info(&l, 1, 10, 100, 0.1);
	ck_assert_int_eq(in.ops->apply(in.st, &ri, 4, all, d), 0);
	double norm = noise_norm(&l, all, d, false);
	ck_assert(norm <= 0.75 && norm >= 0.75 * (1 - 1e-6));
	/* the direction is kept */
	double f = d[0] / orig[0];
	for (uint64_t i = 0; i < l.total; i++)
		ck_assert_double_eq_tol(d[i], orig[i] * f, 1e-6);
	/* An update already within C is sent as it is. */
	fedrun_vec_scale(l.total, 0.5f, d);
	memcpy(orig, d, l.total * sizeof *d);
	ck_assert_int_eq(in.ops->apply(in.st, &ri, 4, all, d), 0);
	ck_assert_mem_eq(d, orig, l.total * sizeof *d);
	/* The resolved section records the defaults: secure noise, δ = 1e-5. */
	ck_assert_str_eq(json_string_value(json_object_get(in.config, "noise")), "secure");
	ck_assert_double_eq(json_number_value(json_object_get(in.config, "delta")), 1e-5);
	/* A partial update does not fit the central analysis. */
	const uint8_t part[2] = {1, 0};
	ck_assert_int_eq(in.ops->apply(in.st, &ri, 4, part, d), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "privacy.mode: \"central\" needs every tensor of every update (selector "
			 "\"all\"), but client 4 does not send 'decoder.w'");
	inst_destroy(&in);
	fedrun_arena_free(d);
	fedrun_arena_free(orig);
	fedrun_layout_fini(&l);
}
END_TEST

/* Central mode: the server adds N(0, (zC/m)²) to the mean of m updates,
 * over every entry, and accounts the round as the sampled Gaussian
 * mechanism at q = m/K. */
START_TEST(test_gaussian_central_noise)
{
	enum { N = 100000 };
	struct fedrun_layout l;
	layout2(&l, N - 7, 7);
	struct inst in;
	ck_assert_int_eq(
	    inst_create(&in, "gaussian",
			"{\"mode\": \"central\", \"clip\": 2, \"noise_multiplier\": 1.5}", &l),
	    0);
	float *d = fedrun_arena_alloc(l.total);
	struct fedrun_round_info ri = round_info(&l, 1, 4, 40, 0.1);
	ck_assert_int_eq(in.ops->apply_server(in.st, &ri, 4, d), 0);
	double *x = malloc(N * sizeof *x);
	size_t k = 0;
	for (uint32_t i = 0; i < l.n; i++)
		for (uint64_t j = 0; j < l.t[i].numel; j++)
			x[k++] = d[l.t[i].offset + j];
	ck_assert_uint_eq(k, N);
	check_moments(x, N, (1.5 * 2 / 4) * (1.5 * 2 / 4), 0, 0, "central noise");
	ck_assert_double_eq_tol(fakehost_metric(&in.fh, "privacy.noise_std", -1, NULL), 0.75,
				1e-15);
	ck_assert_double_eq(fakehost_metric(&in.fh, "privacy.q", -1, NULL), 0.1);
	/* privacy.epsilon is the accountant's figure for one round. */
	size_t n;
	const double *orders = fedrun_rdp_default_orders(&n);
	double rdp[128], eps, order, eps_c, order_c;
	ck_assert_int_eq(fedrun_rdp_sgm(0.1, 1.5, 1, orders, n, rdp), 0);
	fedrun_rdp_to_eps(orders, rdp, n, 1e-5, FEDRUN_RDP_IMPROVED, &eps, &order);
	fedrun_rdp_to_eps(orders, rdp, n, 1e-5, FEDRUN_RDP_CLASSIC, &eps_c, &order_c);
	ck_assert_double_eq(fakehost_metric(&in.fh, "privacy.epsilon", -1, NULL), eps);
	ck_assert_double_eq(fakehost_metric(&in.fh, "privacy.order", -1, NULL), order);
	ck_assert_double_eq(fakehost_metric(&in.fh, "privacy.epsilon_classic", -1, NULL), eps_c);
	ck_assert_double_eq(fakehost_metric(&in.fh, "privacy.order_classic", -1, NULL), order_c);
	ck_assert_double_eq(fakehost_metric(&in.fh, "privacy.delta", -1, NULL), 1e-5);
	/* Padding stays zero. */
	for (uint64_t j = l.t[0].numel; j < l.t[1].offset; j++)
		ck_assert(d[j] == 0.0f);
	inst_destroy(&in);
	free(x);
	fedrun_arena_free(d);
	fedrun_layout_fini(&l);
}
END_TEST

/* Evaluation-only clients (round_info.num_trainable, ABI 1.1) do not dilute
 * the sampling rate: 4 of the 8 clients with data is q = 0.5, although
 * the data has 40 clients. */
START_TEST(test_gaussian_central_q_trainable)
{
	struct fedrun_layout l;
	layout2(&l, 10, 3);
	struct inst in;
	ck_assert_int_eq(inst_create(&in, "gaussian",
				     "{\"mode\": \"central\", \"clip\": 1, \"noise_multiplier\": 1}", &l),
			 0);
	float *d = fedrun_arena_alloc(l.total);
	struct fedrun_round_info ri = round_info(&l, 1, 4, 40, 0.1);
	ri.num_trainable = 8;
	ck_assert_int_eq(in.ops->apply_server(in.st, &ri, 4, d), 0);
	ck_assert_double_eq(fakehost_metric(&in.fh, "privacy.q", -1, NULL), 0.5);
	inst_destroy(&in);
	fedrun_arena_free(d);
	fedrun_layout_fini(&l);
}
END_TEST

/* The accountant across rounds, and through its checkpointed state: a
 * fresh instance given the blobs continues exactly. A round out of order
 * is refused. */
START_TEST(test_gaussian_accountant_state)
{
	struct fedrun_layout l;
	layout2(&l, 10, 3);
	const char *config = "{\"mode\": \"central\", \"clip\": 1, \"noise_multiplier\": 0.9, "
			     "\"delta\": 1e-4, \"noise\": \"reproducible\"}";
	struct inst a, b;
	ck_assert_int_eq(inst_create(&a, "gaussian", config, &l), 0);
	ck_assert_int_eq(inst_create(&b, "gaussian", config, &l), 0);
	float *d = fedrun_arena_alloc(l.total);
	double prev = 0;
	for (uint32_t t = 1; t <= 5; t++) {
		struct fedrun_round_info ri = round_info(&l, t, 5, 50, 0.1);
		ck_assert_int_eq(a.ops->apply_server(a.st, &ri, 5, d), 0);
		double e = fakehost_metric(&a.fh, "privacy.epsilon", -1, NULL);
		ck_assert_msg(e > prev, "round %u: epsilon %g after %g", t, e, prev);
		prev = e;
	}
	size_t n;
	const double *orders = fedrun_rdp_default_orders(&n);
	double rdp[128], eps, order;
	ck_assert_int_eq(fedrun_rdp_sgm(0.1, 0.9, 5, orders, n, rdp), 0);
	fedrun_rdp_to_eps(orders, rdp, n, 1e-4, FEDRUN_RDP_IMPROVED, &eps, &order);
	ck_assert_double_eq_tol(prev, eps, 1e-12 * eps);

	const struct fedrun_state_blob *ba, *bb;
	uint32_t na, nb;
	ck_assert_int_eq(a.ops->state(a.st, &ba, &na), 0);
	ck_assert_int_eq(b.ops->state(b.st, &bb, &nb), 0);
	ck_assert_uint_eq(na, nb);
	for (uint32_t i = 0; i < na; i++) {
		ck_assert_str_eq(ba[i].name, bb[i].name);
		ck_assert_uint_eq(ba[i].bytes, bb[i].bytes);
		memcpy(bb[i].data, ba[i].data, ba[i].bytes);
	}
	struct fedrun_round_info r6 = round_info(&l, 6, 5, 50, 0.1);
	float *d2 = fedrun_arena_alloc(l.total);
	memset(d, 0, l.total * sizeof *d);
	ck_assert_int_eq(a.ops->apply_server(a.st, &r6, 5, d), 0);
	ck_assert_int_eq(b.ops->apply_server(b.st, &r6, 5, d2), 0);
	ck_assert_double_eq(fakehost_metric(&a.fh, "privacy.epsilon", -1, NULL),
			    fakehost_metric(&b.fh, "privacy.epsilon", -1, NULL));
	ck_assert_double_eq(fakehost_metric(&a.fh, "privacy.epsilon_classic", -1, NULL),
			    fakehost_metric(&b.fh, "privacy.epsilon_classic", -1, NULL));
	/* reproducible noise: the same server stream in both */
	ck_assert_mem_eq(d, d2, l.total * sizeof *d);
	/* Round 8 after round 6 means the state is not this run's. */
	struct fedrun_round_info r8 = round_info(&l, 8, 5, 50, 0.1);
	ck_assert_int_eq(a.ops->apply_server(a.st, &r8, 5, d), FEDRUN_ESTATE);
	inst_destroy(&a);
	inst_destroy(&b);
	fedrun_arena_free(d);
	fedrun_arena_free(d2);
	fedrun_layout_fini(&l);
}
END_TEST

/* Local mode: each client clips and adds N(0, (zC)²) from the secure
 * source; each round is accounted as the Gaussian mechanism (q = 1), the
 * bound of a client that takes part in every round. */
START_TEST(test_gaussian_local)
{
	enum { N = 100000 };
	struct fedrun_layout l;
	layout2(&l, N, 9);
	struct inst in;
	ck_assert_int_eq(
	    inst_create(&in, "gaussian",
			"{\"mode\": \"local\", \"clip\": 0.5, \"noise_multiplier\": 2}", &l),
	    0);
	float *d = fedrun_arena_alloc(l.total), *d2 = fedrun_arena_alloc(l.total);
	const uint8_t mask[2] = {1, 0};
	struct fedrun_round_info ri = round_info(&l, 1, 3, 30, 0.1);
	ck_assert_int_eq(in.ops->apply(in.st, &ri, 2, mask, d), 0);
	double *x = malloc(N * sizeof *x);
	for (int i = 0; i < N; i++)
		x[i] = d[i];
	check_moments(x, N, 1.0, 0, 0, "local noise");
	for (uint64_t i = 0; i < 9; i++)
		ck_assert(d[l.t[1].offset + i] == 0.0f);
	/* Secure noise: the same (round, client) gets other noise. */
	ck_assert_int_eq(in.ops->apply(in.st, &ri, 2, mask, d2), 0);
	ck_assert(memcmp(d, d2, N * sizeof *d) != 0);
	/* The server leaves the aggregate alone and accounts α/(2z²) a round. */
	memset(d, 0, l.total * sizeof *d);
	for (uint32_t t = 1; t <= 3; t++) {
		ri.round = t;
		ck_assert_int_eq(in.ops->apply_server(in.st, &ri, 3, d), 0);
	}
	for (uint64_t i = 0; i < l.total; i++)
		ck_assert(d[i] == 0.0f);
	size_t n;
	const double *orders = fedrun_rdp_default_orders(&n);
	double rdp[128], eps, order;
	for (size_t i = 0; i < n; i++)
		rdp[i] = 3 * orders[i] / (2 * 2.0 * 2.0);
	fedrun_rdp_to_eps(orders, rdp, n, 1e-5, FEDRUN_RDP_IMPROVED, &eps, &order);
	ck_assert_double_eq_tol(fakehost_metric(&in.fh, "privacy.epsilon", -1, NULL), eps, 1e-12);
	ck_assert_double_eq(fakehost_metric(&in.fh, "privacy.q", -1, NULL), 1);
	inst_destroy(&in);
	free(x);
	fedrun_arena_free(d);
	fedrun_arena_free(d2);
	fedrun_layout_fini(&l);
}
END_TEST

/* laplace: clipped to L1 norm σ, noise Lap(σ/ε) from the secure source,
 * ε per round and by basic composition in total. */
START_TEST(test_laplace_accounting)
{
	enum { N = 100000 };
	struct fedrun_layout l;
	layout2(&l, N, 4);
	struct inst in;
	ck_assert_int_eq(inst_create(&in, "laplace", "{\"sigma\": 0.2, \"epsilon\": 0.5}", &l), 0);
	ck_assert_int_eq(json_is_true(json_object_get(in.config, "clip")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(in.config, "noise")), "secure");
	float *d = fedrun_arena_alloc(l.total);
	const uint8_t mask[2] = {1, 1};
	struct fedrun_round_info ri = round_info(&l, 1, 3, 30, 0.1);
	ck_assert_int_eq(in.ops->apply(in.st, &ri, 0, mask, d), 0);
	double *x = malloc(N * sizeof *x);
	for (int i = 0; i < N; i++)
		x[i] = d[i];
	check_moments(x, N, 2 * 0.4 * 0.4, 3, 0.4, "laplace noise");
	for (uint32_t t = 1; t <= 4; t++) {
		ri.round = t;
		ck_assert_int_eq(in.ops->apply_server(in.st, &ri, 3, d), 0);
		ck_assert_double_eq_tol(fakehost_metric(&in.fh, "privacy.epsilon_round", -1, NULL),
					0.5, 1e-15);
		ck_assert_double_eq_tol(fakehost_metric(&in.fh, "privacy.epsilon", -1, NULL),
					0.5 * t, 1e-14);
	}
	/* The rounds survive a checkpoint. */
	const struct fedrun_state_blob *b;
	uint32_t nb;
	ck_assert_int_eq(in.ops->state(in.st, &b, &nb), 0);
	ck_assert_uint_eq(nb, 1);
	ck_assert_uint_eq(b[0].bytes, 8);
	uint64_t rounds;
	memcpy(&rounds, b[0].data, 8);
	ck_assert_uint_eq(rounds, 4);
	inst_destroy(&in);

	/* Without clipping nothing is accounted: there is no guarantee. */
	ck_assert_int_eq(
	    inst_create(&in, "laplace", "{\"sigma\": 0.2, \"epsilon\": 0.5, \"clip\": false}", &l),
	    0);
	ck_assert_int_eq(in.ops->apply_server(in.st, &ri, 3, d), 0);
	ck_assert_uint_eq(in.fh.nmetrics, 0);
	inst_destroy(&in);
	free(x);
	fedrun_arena_free(d);
	fedrun_layout_fini(&l);
}
END_TEST

/* With clipping, a large update leaves the client with L1 norm σ plus the
 * noise: with reproducible noise the noise can be subtracted again. */
START_TEST(test_laplace_clips)
{
	struct fedrun_layout l;
	layout2(&l, 200, 3);
	struct inst in;
	ck_assert_int_eq(
	    inst_create(&in, "laplace",
			"{\"sigma\": 1.5, \"epsilon\": 1000, \"noise\": \"reproducible\"}", &l),
	    0);
	float *d = fedrun_arena_alloc(l.total), *z = fedrun_arena_alloc(l.total);
	fill(&l, d, 9, 2.0);
	const uint8_t mask[2] = {1, 1};
	struct fedrun_round_info ri = round_info(&l, 2, 3, 30, 0.1);
	ck_assert_int_eq(in.ops->apply(in.st, &ri, 5, mask, d), 0);
	ck_assert_int_eq(in.ops->apply(in.st, &ri, 5, mask, z), 0); /* the noise alone */
	fedrun_vec_sub(l.total, d, z, d);
	ck_assert_double_eq_tol(noise_norm(&l, mask, d, true), 1.5, 1e-5);
	inst_destroy(&in);
	fedrun_arena_free(d);
	fedrun_arena_free(z);
	fedrun_layout_fini(&l);
}
END_TEST

/* Every combination that makes no sense is refused with a message that
 * names the key. */
START_TEST(test_bad_configs)
{
	static const struct {
		const char *plugin, *config, *message;
	} bad[] = {
	    {"gaussian", "{\"sigma\": 0.001}",
	     "privacy.mode: required key is missing (\"central\" or \"local\" for DP-FedAvg with "
	     "clipping and accounting, \"fedatt\" for FedAtt's randomisation, which is not "
	     "differentially private)"},
	    {"gaussian", "{\"mode\": \"global\"}",
	     "privacy.mode: expected one of {local,central,fedatt}, got \"global\""},
	    {"gaussian", "{\"mode\": \"central\", \"noise_multiplier\": 1}",
	     "privacy.clip: required key is missing"},
	    {"gaussian", "{\"mode\": \"local\", \"clip\": 1}",
	     "privacy.noise_multiplier: required key is missing"},
	    {"gaussian", "{\"mode\": \"central\", \"clip\": 0, \"noise_multiplier\": 1}",
	     "privacy.clip: expected a number in (0, 1000000], got 0"},
	    {"gaussian", "{\"mode\": \"central\", \"clip\": 1, \"noise_multiplier\": 0}",
	     "privacy.noise_multiplier: expected a number in [1e-06, 1000000], got 0"},
	    {"gaussian",
	     "{\"mode\": \"central\", \"clip\": 1, \"noise_multiplier\": 1, \"delta\": 1}",
	     "privacy.delta: expected a number in (0, 1), got 1"},
	    {"gaussian",
	     "{\"mode\": \"central\", \"clip\": 1, \"noise_multiplier\": 1, \"sigma\": 1}",
	     "privacy.sigma: not used with mode \"central\" (mode \"fedatt\" takes sigma and beta; "
	     "here the noise is noise_multiplier × clip)"},
	    {"gaussian",
	     "{\"mode\": \"local\", \"clip\": 1, \"noise_multiplier\": 1, \"beta\": 0.1}",
	     "privacy.beta: not used with mode \"local\" (mode \"fedatt\" takes sigma and beta; "
	     "here "
	     "the noise is noise_multiplier × clip)"},
	    {"gaussian", "{\"mode\": \"fedatt\", \"sigma\": 1, \"clip\": 1}",
	     "privacy.clip: not used with mode \"fedatt\" (only modes \"local\" and \"central\" "
	     "clip "
	     "and account)"},
	    {"gaussian", "{\"mode\": \"fedatt\", \"sigma\": 1, \"delta\": 1e-5}",
	     "privacy.delta: not used with mode \"fedatt\" (only modes \"local\" and \"central\" "
	     "clip and account)"},
	    {"gaussian", "{\"mode\": \"fedatt\"}", "privacy.sigma: required key is missing"},
	    {"gaussian", "{\"mode\": \"fedatt\", \"sigma\": 1, \"noise\": \"fast\"}",
	     "privacy.noise: expected one of {secure,reproducible}, got \"fast\""},
	    {"gaussian",
	     "{\"mode\": \"central\", \"clip\": 1, \"noise_multiplier\": 1, \"epsilon\": 1}",
	     "privacy.epsilon: unknown key (known: mode, clip, noise_multiplier, delta, noise)"},
	    {"gaussian", "[1]", "privacy: expected an object, got [1]"},
	    {"laplace", "{\"sigma\": 0, \"epsilon\": 1}",
	     "privacy.sigma: expected a number in (0, 1000000], got 0"},
	    {"laplace", "{\"sigma\": 1, \"epsilon\": 1, \"clip\": 1}",
	     "privacy.clip: expected true or false, got 1"},
	    {"laplace", "{\"sigma\": 1, \"epsilon\": 1, \"delta\": 1e-5}",
	     "privacy.delta: unknown key (known: sigma, epsilon, clip, noise)"},
	};
	struct fedrun_layout l;
	layout2(&l, 2, 2);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct inst in;
		ck_assert_int_eq(inst_create(&in, bad[i].plugin, bad[i].config, &l),
				 FEDRUN_ECONFIG);
		ck_assert_str_eq(fedrun_error_message(), bad[i].message);
		ck_assert_ptr_null(in.st);
		inst_destroy(&in);
	}
	fedrun_layout_fini(&l);
}
END_TEST

static Suite *privacy_suite(void)
{
	Suite *s = suite_create("privacy");
	TCase *tc = tcase_create("accountant");
	tcase_add_test(tc, test_rdp_mnist);
	tcase_add_test(tc, test_rdp_q1_closed_form);
	tcase_add_test(tc, test_rdp_against_integration);
	tcase_add_test(tc, test_rdp_monotone);
	tcase_add_test(tc, test_rdp_bad_arguments);
	suite_add_tcase(s, tc);
	tc = tcase_create("noise");
	tcase_add_test(tc, test_chacha20_rfc8439);
	tcase_add_test(tc, test_csprng_distributions);
	tcase_add_test(tc, test_clip_exact);
	suite_add_tcase(s, tc);
	tc = tcase_create("plugins");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_gaussian_central_clips);
	tcase_add_test(tc, test_gaussian_central_noise);
	tcase_add_test(tc, test_gaussian_central_q_trainable);
	tcase_add_test(tc, test_gaussian_accountant_state);
	tcase_add_test(tc, test_gaussian_local);
	tcase_add_test(tc, test_laplace_accounting);
	tcase_add_test(tc, test_laplace_clips);
	tcase_add_test(tc, test_bad_configs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(privacy_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
