/* SPDX-License-Identifier: Apache-2.0 */
/* Secure aggregation (core/secagg/): Shamir sharing, quantisation, the
 * protocol's sum against the plain sum, dropouts at every stage up to and
 * past the threshold, a malicious server's requests, tampered shares, the
 * uniformity of what the server sees of one client, and SecAgg+'s graph.
 * Secrets come from the deterministic test streams, so every failure
 * replays. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gmp.h>
#include <sodium.h>
#include "fedrun/fedrun.h"
#include "secagg/internal.h"

/* ---- a round in one process -------------------------------------------- */

/* A round in one process: its clients (secrets from the test streams of
 * `seed`) and the server. */
struct harness {
	struct secagg_params p;
	struct secagg_client **c;
	struct secagg_server *s;
	uint64_t bytes_up[5], bytes_down[5]; /* per stage */
};

/* Sees (and may change) every message: the server's to client u
 * (to_client) and client u's to the server. */
typedef void (*hook_fn)(void *ctx, uint32_t stage, uint32_t u, bool to_client, uint8_t *msg,
			size_t len);

static bool alive_at(const uint32_t *drop, uint32_t u, uint32_t stage)
{
	return !drop || drop[u] == 0 || drop[u] > stage;
}

static void h_open(struct harness *h, const struct secagg_params *p, uint64_t seed)
{
	memset(h, 0, sizeof *h);
	h->p = *p;
	h->c = calloc(p->n, sizeof *h->c);
	ck_assert_ptr_nonnull(h->c);
	ck_assert_int_eq(secagg_server_create(p, &h->s), 0);
	for (uint32_t u = 0; u < p->n; u++)
		ck_assert_int_eq(secagg_client_create_insecure_test(p, u, seed, &h->c[u]), 0);
}

static void h_close(struct harness *h)
{
	for (uint32_t u = 0; u < h->p.n; u++)
		secagg_client_destroy(h->c[u]);
	free(h->c);
	secagg_server_destroy(h->s);
}

/* One stage: each client still there (client u vanishes at stage drop[u]
 * and sends nothing from then on; drop NULL: nobody does) gets the
 * server's message and answers; then the server closes the stage. */
static int h_stage(struct harness *h, uint32_t stage, uint64_t *const *x, const uint32_t *drop,
		   hook_fn hook, void *ctx)
{
	int rc = 0;
	for (uint32_t u = 0; u < h->p.n && rc == 0; u++) {
		if (!alive_at(drop, u, stage))
			continue;
		void *in = NULL, *out = NULL;
		size_t in_len = 0, out_len = 0;
		if (stage > SECAGG_ADVERTISE &&
		    (rc = secagg_server_message(h->s, u, &in, &in_len)) < 0)
			break;
		if (hook && in)
			hook(ctx, stage, u, true, in, in_len);
		switch (stage) {
		case SECAGG_ADVERTISE:
			rc = secagg_client_advertise(h->c[u], &out, &out_len);
			break;
		case SECAGG_SHARE:
			rc = secagg_client_share(h->c[u], in, in_len, &out, &out_len);
			break;
		case SECAGG_MASKED: {
			/* the client masks a copy in place: x stays the input */
			uint64_t *y = malloc(h->p.dim * sizeof *y);
			ck_assert_ptr_nonnull(y);
			memcpy(y, x[u], h->p.dim * sizeof *y);
			rc = secagg_client_mask(h->c[u], in, in_len, y, &out, &out_len);
			free(y);
			break;
		}
		default:
			rc = secagg_client_unmask(h->c[u], in, in_len, &out, &out_len);
			break;
		}
		if (rc == 0 && hook)
			hook(ctx, stage, u, false, out, out_len);
		if (rc == 0)
			rc = secagg_server_receive(h->s, out, out_len);
		h->bytes_down[stage] += in_len;
		h->bytes_up[stage] += out_len;
		free(in);
		free(out);
	}
	return rc == 0 ? secagg_server_close(h->s) : rc;
}

/* The stages from..to. */
static int h_stages(struct harness *h, uint32_t from, uint32_t to, uint64_t *const *x,
		    const uint32_t *drop, hook_fn hook, void *ctx)
{
	int rc = 0;
	for (uint32_t stage = from; stage <= to && rc == 0; stage++)
		rc = h_stage(h, stage, x, drop, hook, ctx);
	return rc;
}

/* A whole round; *sum gets the unmasked sum, *st (unless NULL) the bytes. */
static int run_round(const struct secagg_params *p, uint64_t seed, uint64_t *const *x,
		     const uint32_t *drop, uint64_t *sum, struct harness *st)
{
	struct harness h;
	h_open(&h, p, seed);
	int rc = h_stages(&h, SECAGG_ADVERTISE, SECAGG_UNMASK, x, drop, NULL, NULL);
	if (rc == 0)
		rc = secagg_server_sum(h.s, sum);
	if (st) {
		memcpy(st->bytes_up, h.bytes_up, sizeof h.bytes_up);
		memcpy(st->bytes_down, h.bytes_down, sizeof h.bytes_down);
	}
	h_close(&h);
	return rc;
}

static uint64_t **random_inputs(const struct secagg_params *p, uint64_t seed)
{
	struct secagg_rand r;
	secagg_rand_init_insecure_test(&r, seed, 999999);
	uint64_t **x = calloc(p->n, sizeof *x);
	ck_assert_ptr_nonnull(x);
	for (uint32_t u = 0; u < p->n; u++) {
		x[u] = malloc(p->dim * sizeof **x);
		ck_assert_ptr_nonnull(x[u]);
		secagg_rand_bytes(&r, x[u], p->dim * sizeof **x);
		for (uint64_t i = 0; i < p->dim; i++)
			x[u][i] &= secagg_ring_mask(p->bits);
	}
	return x;
}

static void free_inputs(const struct secagg_params *p, uint64_t **x)
{
	for (uint32_t u = 0; u < p->n; u++)
		free(x[u]);
	free(x);
}

/* The plain sum of the inputs that the server should see. */
static void plain_sum(const struct secagg_params *p, uint64_t *const *x, const uint32_t *drop,
		      uint64_t *out)
{
	memset(out, 0, p->dim * sizeof *out);
	for (uint32_t u = 0; u < p->n; u++)
		if (alive_at(drop, u, SECAGG_MASKED))
			for (uint64_t i = 0; i < p->dim; i++)
				out[i] += x[u][i];
	for (uint64_t i = 0; i < p->dim; i++)
		out[i] &= secagg_ring_mask(p->bits);
}

static struct secagg_params complete(uint32_t n, uint32_t t, uint32_t bits, uint64_t dim)
{
	return (struct secagg_params){.n = n,
				      .threshold = t,
				      .num_shares = n,
				      .graph = SECAGG_COMPLETE,
				      .bits = bits,
				      .dim = dim,
				      .round = 1,
				      .seed = 7};
}

static struct secagg_params sparse(uint32_t n, uint32_t shares, uint32_t t, uint32_t bits,
				   uint64_t dim)
{
	return (struct secagg_params){.n = n,
				      .threshold = t,
				      .num_shares = shares,
				      .graph = SECAGG_SPARSE,
				      .bits = bits,
				      .dim = dim,
				      .round = 1,
				      .seed = 7};
}

/* ---- Shamir --------------------------------------------------------------- */

START_TEST(test_prime)
{
	/* p = 2^256 + 297 is prime, and the smallest prime above 2^256: the
	 * 32-byte secrets are exactly the field elements below 2^256. */
	mpz_t p, q;
	mpz_inits(p, q, NULL);
	struct secagg_shamir sh;
	secagg_shamir_init(&sh);
	mpz_ui_pow_ui(q, 2, 256);
	mpz_add_ui(p, q, 297);
	ck_assert_int_eq(mpz_cmp(p, sh.p), 0);
	ck_assert_int_gt(mpz_probab_prime_p(sh.p, 40), 0);
	for (unsigned d = 1; d < 297; d += 2) {
		mpz_add_ui(p, q, d);
		ck_assert_msg(mpz_probab_prime_p(p, 40) == 0, "2^256 + %u is prime", d);
	}
	secagg_shamir_fini(&sh);
	mpz_clears(p, q, NULL);
}
END_TEST

START_TEST(test_shamir)
{
	enum { N = 7, T = 4 };
	struct secagg_shamir sh;
	struct secagg_rand r;
	secagg_shamir_init(&sh);
	secagg_rand_init_insecure_test(&r, 1, 1);
	uint8_t secret[32], got[32], shares[N][SECAGG_SHARE_BYTES];
	uint32_t xs[N] = {3, 1, 9, 12, 5, 100, 77};
	for (int trial = 0; trial < 3; trial++) {
		secagg_rand_bytes(&r, secret, 32);
		if (trial == 1)
			memset(secret, 0xff, 32); /* the largest secret */
		ck_assert_int_eq(secagg_shamir_split(&sh, secret, T, xs, N, &r, shares), 0);
		/* every subset of T shares (in any order) gives the secret back */
		unsigned ok = 0;
		for (unsigned m = 0; m < (1u << N); m++) {
			if (__builtin_popcount(m) != T)
				continue;
			uint32_t sx[T];
			uint8_t ss[T][SECAGG_SHARE_BYTES];
			for (unsigned i = 0, k = 0; i < N; i++)
				if (m & (1u << i)) {
					unsigned at =
					    (k + trial) % T; /* another order each trial */
					sx[at] = xs[i];
					memcpy(ss[at], shares[i], SECAGG_SHARE_BYTES);
					k++;
				}
			ck_assert_int_eq(
			    secagg_shamir_combine(&sh, T, sx, (const uint8_t(*)[33])ss, T, got), 0);
			ck_assert_mem_eq(got, secret, 32);
			ok++;
		}
		ck_assert_uint_eq(ok, 35); /* C(7, 4) */
		/* T - 1 shares: refused as too few, and interpolating them as if
		 * the threshold were T - 1 gives something else (or nothing) */
		ck_assert_int_eq(
		    secagg_shamir_combine(&sh, T, xs, (const uint8_t(*)[33])shares, T - 1, got),
		    FEDRUN_EINVAL);
		ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "cannot recover"));
		int rc =
		    secagg_shamir_combine(&sh, T - 1, xs, (const uint8_t(*)[33])shares, T - 1, got);
		ck_assert(rc < 0 || memcmp(got, secret, 32) != 0);
		/* one changed share among T: not the secret */
		shares[0][20] ^= 1;
		rc = secagg_shamir_combine(&sh, T, xs, (const uint8_t(*)[33])shares, T, got);
		ck_assert(rc < 0 || memcmp(got, secret, 32) != 0);
	}
	/* two shares at one point */
	uint32_t dup[T] = {1, 2, 2, 3};
	ck_assert_int_eq(secagg_shamir_combine(&sh, T, dup, (const uint8_t(*)[33])shares, T, got),
			 FEDRUN_EINVAL);
	secagg_shamir_fini(&sh);
}
END_TEST

/* ---- quantisation --------------------------------------------------------- */

START_TEST(test_quant)
{
	struct secagg_quant q;
	/* bound on Σ w = 1000, clip 2, 32 bits: scale is the largest power of
	 * two with 2 · 1000 · scale <= 2^31 - 1, i.e. 2^20 */
	ck_assert_int_eq(secagg_quant_init(&q, 32, 2.0, 1000), 0);
	ck_assert(q.scale == ldexp(1, 20));
	ck_assert(secagg_quant_bound(&q) == ldexp(1, -21));
	enum { N = 5, D = 4000 };
	const uint64_t w[N] = {100, 1, 250, 349, 300}; /* Σ = 1000: the bound itself */
	float x[N][D];
	uint64_t e[D], sum[D] = {0};
	struct secagg_rand r;
	secagg_rand_init_insecure_test(&r, 2, 2);
	for (int k = 0; k < N; k++)
		for (int i = 0; i < D; i++) {
			uint32_t v;
			secagg_rand_bytes(&r, &v, sizeof v);
			x[k][i] = (float)(4.4 * (v / 4294967296.0) - 2.2); /* some beyond clip */
		}
	for (int i = 0; i < D; i += 97)
		for (int k = 0; k < N; k++)
			x[k][i] = k % 2 ? 2.0f : -2.0f; /* clip exactly: no wrap at the edge */
	for (int k = 0; k < N; k++) {
		secagg_quant_encode(&q, w[k], x[k], D, e);
		for (int i = 0; i < D; i++)
			sum[i] += e[i];
	}
	double worst = 0;
	for (int i = 0; i < D; i++) {
		double want = 0, tot = 0;
		for (int k = 0; k < N; k++) {
			double v = x[k][i] > 2 ? 2 : x[k][i] < -2 ? -2 : x[k][i];
			want += (double)w[k] * v;
			tot += (double)w[k];
		}
		double err = fabs(secagg_quant_decode(&q, sum[i]) / tot - want / tot);
		worst = err > worst ? err : worst;
		ck_assert_msg(err <= secagg_quant_bound(&q),
			      "element %d: error %g above the bound %g", i, err,
			      secagg_quant_bound(&q));
	}
	/* the bound is not loose by orders of magnitude */
	ck_assert_msg(worst > secagg_quant_bound(&q) / 8, "worst error %g", worst);
	/* integers (and multiples of 1/scale) quantise exactly */
	float ints[6] = {-2, -1, 0, 1, 2, 0.5f};
	uint64_t ie[6];
	secagg_quant_encode(&q, 3, ints, 6, ie);
	for (int i = 0; i < 6; i++)
		ck_assert(secagg_quant_decode(&q, ie[i]) == 3.0 * ints[i]);
	/* refusals */
	ck_assert_int_eq(secagg_quant_init(&q, 7, 1, 1), FEDRUN_EINVAL);
	ck_assert_int_eq(secagg_quant_init(&q, 65, 1, 1), FEDRUN_EINVAL);
	ck_assert_int_eq(secagg_quant_init(&q, 32, 0, 1), FEDRUN_EINVAL);
	ck_assert_int_eq(secagg_quant_init(&q, 32, NAN, 1), FEDRUN_EINVAL);
	ck_assert_int_eq(secagg_quant_init(&q, 16, 1, 1u << 15), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "raise bits"));
	/* 2^15 - 1 = 32767 over 1.5 · 30000: scale 1/2, a step of 2 wider than clip */
	ck_assert_int_eq(secagg_quant_init(&q, 16, 1.5, 30000), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "round to 0"));
	/* 64 bits: the full ring */
	ck_assert_int_eq(secagg_quant_init(&q, 64, 1, 1), 0);
	float m1 = -1;
	secagg_quant_encode(&q, 1, &m1, 1, ie);
	ck_assert(secagg_quant_decode(&q, ie[0]) == -1.0);
	/* a single +clip at 64 bits, weight 1: 2^63 · clip would not fit */
	float p1 = 1;
	secagg_quant_encode(&q, 1, &p1, 1, ie);
	ck_assert_msg(fabs(secagg_quant_decode(&q, ie[0]) - 1.0) <= secagg_quant_bound(&q),
		      "+1 decodes as %g", secagg_quant_decode(&q, ie[0]));
	/* every sender at +clip (and at -clip) with a power-of-two total weight
	 * decodes as ±clip: the sum stays below 2^(bits-1), where a scale of
	 * (2^(bits-1) - 1) / (clip W) rounded in double would reach it */
	const uint32_t wide[] = {55, 60, 64};
	const uint64_t pw[] = {1, 2, 32, 1024};
	for (size_t b = 0; b < sizeof wide / sizeof *wide; b++)
		for (size_t j = 0; j < sizeof pw / sizeof *pw; j++)
			for (int sign = -1; sign <= 1; sign += 2) {
				ck_assert_int_eq(secagg_quant_init(&q, wide[b], 1, pw[j]), 0);
				float c = (float)sign;
				uint64_t one, tot = 0;
				secagg_quant_encode(&q, 1, &c, 1, &one);
				for (uint64_t k = 0; k < pw[j]; k++)
					tot += one;
				double mean = secagg_quant_decode(&q, tot) / (double)pw[j];
				ck_assert_msg(fabs(mean - sign) <= secagg_quant_bound(&q),
					      "bits %u, W %llu: all at %d decode as %g", wide[b],
					      (unsigned long long)pw[j], sign, mean);
			}
	/* rounding carries past clip · scale: clip = 2 - 2^-14 at 16 bits, W 2
	 * (clip · 2^13 = 16383.5 rounds to 16384, twice that is 2^15) */
	const double cb = 2 - ldexp(1, -14);
	ck_assert_int_eq(secagg_quant_init(&q, 16, cb, 2), 0);
	float fc = (float)cb;
	ck_assert(fc == cb);
	secagg_quant_encode(&q, 1, &fc, 1, ie);
	double mean = secagg_quant_decode(&q, 2 * ie[0]) / 2;
	ck_assert_msg(fabs(mean - cb) <= secagg_quant_bound(&q), "+clip decodes as %g", mean);
}
END_TEST

START_TEST(test_pack)
{
	for (uint32_t bits = SECAGG_MIN_BITS; bits <= SECAGG_MAX_BITS; bits += 7) {
		uint64_t x[33], y[33];
		uint8_t buf[33 * 8];
		for (int i = 0; i < 33; i++)
			x[i] = (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)) & secagg_ring_mask(bits);
		secagg_ring_pack(bits, x, 33, buf);
		secagg_ring_unpack(bits, buf, 33, y);
		ck_assert_mem_eq(x, y, sizeof x);
	}
}
END_TEST

/* ---- the protocol's sum ----------------------------------------------------- */

START_TEST(test_sum_exact)
{
	/* complete (SecAgg) and sparse (SecAgg+) graphs, several ring sizes:
	 * the unmasked sum is the plain sum, bit for bit */
	const struct secagg_params ps[] = {
	    complete(10, 6, 32, 1000), complete(5, 3, 8, 3000),	   complete(3, 2, 64, 1025),
	    sparse(30, 7, 5, 32, 500), sparse(40, 11, 6, 20, 300),
	};
	for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
		uint64_t **x = random_inputs(&ps[k], k);
		uint64_t *got = malloc(ps[k].dim * sizeof *got),
			 *want = malloc(ps[k].dim * sizeof *want);
		struct harness st;
		ck_assert_int_eq(run_round(&ps[k], 100 + k, x, NULL, got, &st), 0);
		plain_sum(&ps[k], x, NULL, want);
		ck_assert_mem_eq(got, want, ps[k].dim * sizeof *got);
		/* the masked inputs are the inputs' size plus headers */
		ck_assert_uint_eq(st.bytes_up[SECAGG_MASKED],
				  ps[k].n * (SECAGG_HEADER_BYTES + secagg_input_bytes(&ps[k])));
		free(got);
		free(want);
		free_inputs(&ps[k], x);
	}
}
END_TEST

START_TEST(test_sum_floats)
{
	/* float updates through quantisation and the protocol: the weighted
	 * mean is plain FedAvg's within the documented bound */
	enum { N = 12, D = 2000 };
	struct secagg_params p = sparse(N, 7, 5, 32, D);
	const uint64_t w[N] = {5, 10, 1, 7, 30, 2, 2, 9, 11, 3, 4, 16};
	uint64_t W = 0;
	for (int k = 0; k < N; k++)
		W += w[k];
	struct secagg_quant q;
	ck_assert_int_eq(secagg_quant_init(&q, 32, 0.5, W), 0);
	uint64_t **x = calloc(N, sizeof *x);
	float *f = malloc((size_t)N * D * sizeof *f);
	struct secagg_rand r;
	secagg_rand_init_insecure_test(&r, 3, 3);
	for (int k = 0; k < N; k++) {
		x[k] = malloc(D * sizeof **x);
		for (int i = 0; i < D; i++) {
			int32_t v;
			secagg_rand_bytes(&r, &v, sizeof v);
			f[k * D + i] = (float)(v / 4294967296.0); /* within ±0.5 */
		}
		secagg_quant_encode(&q, w[k], f + (size_t)k * D, D, x[k]);
	}
	uint64_t *got = malloc(D * sizeof *got);
	ck_assert_int_eq(run_round(&p, 5, x, NULL, got, NULL), 0);
	for (int i = 0; i < D; i++) {
		double want = 0;
		for (int k = 0; k < N; k++)
			want += (double)w[k] * f[k * D + i];
		double mean = secagg_quant_decode(&q, got[i]) / (double)W;
		ck_assert_msg(fabs(mean - want / (double)W) <= secagg_quant_bound(&q),
			      "element %d: %.9g vs %.9g", i, mean, want / (double)W);
	}
	for (int k = 0; k < N; k++)
		free(x[k]);
	free(x);
	free(f);
	free(got);
}
END_TEST

/* ---- dropouts ----------------------------------------------------------------- */

/* why: what the failure must say (succeeds false) */
static void check_dropout(const struct secagg_params *p, const uint32_t *victims, uint32_t nv,
			  uint32_t stage, bool succeeds, const char *why)
{
	uint64_t **x = random_inputs(p, stage * 10 + nv);
	uint32_t *drop = calloc(p->n, sizeof *drop);
	for (uint32_t i = 0; i < nv; i++)
		drop[victims[i]] = stage;
	uint64_t *got = malloc(p->dim * sizeof *got), *want = malloc(p->dim * sizeof *want);
	memset(got, 0xab, p->dim * sizeof *got);
	fedrun_error_clear();
	int rc = run_round(p, 77 + stage, x, drop, got, NULL);
	if (succeeds) {
		ck_assert_msg(rc == 0, "%u dropped at stage %u: %s", nv, stage,
			      fedrun_error_message());
		plain_sum(p, x, drop, want);
		ck_assert_mem_eq(got, want, p->dim * sizeof *got);
		/* clients that dropped before sending their masked input are not
		 * in the sum; those that dropped after are */
		plain_sum(p, x, NULL, want);
		if (stage <= SECAGG_MASKED && nv > 0)
			ck_assert(memcmp(got, want, p->dim * sizeof *got) != 0);
		else
			ck_assert_mem_eq(got, want, p->dim * sizeof *got);
	} else {
		ck_assert_msg(rc < 0, "%u dropped at stage %u, and the round succeeded", nv, stage);
		const char *m = fedrun_error_message();
		ck_assert_msg(strstr(m, why), "stage %u: %s (expected: %s)", stage, m, why);
		/* nothing was written into the sum */
		for (uint64_t i = 0; i < p->dim; i++)
			ck_assert_uint_eq(got[i], 0xababababababababull);
	}
	free(got);
	free(want);
	free(drop);
	free_inputs(p, x);
}

START_TEST(test_dropout_complete)
{
	/* n = 9, t = 6: up to 3 may vanish at any stage; a 4th fails the round */
	struct secagg_params p = complete(9, 6, 32, 300);
	const uint32_t victims[] = {8, 0, 4, 5};
	static const char *const name[] = {"", "advertise keys", "share keys", "masked input",
					   "unmasking"};
	for (uint32_t stage = SECAGG_ADVERTISE; stage <= SECAGG_UNMASK; stage++) {
		for (uint32_t nv = 0; nv <= 3; nv++)
			check_dropout(&p, victims, nv, stage, true, NULL);
		/* the server counts who took part and fails the round itself */
		char why[160];
		snprintf(why, sizeof why,
			 "round 1: only 5 of 9 clients took part in the %s stage, fewer than the "
			 "threshold 6 (at most 3 may drop out): the round fails",
			 name[stage]);
		check_dropout(&p, victims, 4, stage, false, why);
	}
}
END_TEST

START_TEST(test_dropout_sparse)
{
	/* n = 24, 7 shares, t = 5: two clients of any neighbourhood may
	 * vanish; three neighbours of one client are too many at the stages
	 * where its secrets are needed */
	struct secagg_params p = sparse(24, 7, 5, 32, 200);
	struct secagg_graph g;
	ck_assert_int_eq(secagg_graph_init(&g, &p), 0);
	uint32_t nb[6];
	ck_assert_uint_eq(secagg_graph_neighbours(&g, 3, nb), 6);
	secagg_graph_fini(&g);
	/* 3 of client 3's neighbours dropped: 4 of its 7 left, below 5; the
	 * round fails where client 3 (or the server, at unmasking) sees it */
	static const char *const why[] = {
	    "",
	    "client 3: only 3 of its 6 neighbours advertised keys, too few for the threshold 5",
	    "client 3: shares from only 3 of its neighbours, too few for the threshold 5",
	    "client 3: only 4 of its neighbourhood survived, fewer than the threshold 5: refused",
	    "round 1: client 3's self-mask seed has 4 of the 5 shares it needs (too many of its "
	    "neighbours dropped out): the round fails"};
	for (uint32_t stage = SECAGG_ADVERTISE; stage <= SECAGG_UNMASK; stage++) {
		check_dropout(&p, nb, 2, stage, true, NULL);
		check_dropout(&p, nb, 3, stage, false, why[stage]);
	}
}
END_TEST

/* ---- a malicious server ------------------------------------------------------- */

/* An unmasking request as a malicious server writes it. */
static void *request(const struct secagg_params *p, const uint32_t *alive, uint32_t na,
		     const uint32_t *dropped, uint32_t nd, size_t *len)
{
	struct secagg_wbuf w = {0};
	void *msg;
	secagg_wb_header(&w, SECAGG_UNMASK, p->round, SECAGG_SERVER);
	secagg_wb_u32(&w, na);
	for (uint32_t i = 0; i < na; i++)
		secagg_wb_u32(&w, alive[i]);
	secagg_wb_u32(&w, nd);
	for (uint32_t i = 0; i < nd; i++)
		secagg_wb_u32(&w, dropped[i]);
	ck_assert_int_eq(secagg_wb_finish(&w, &msg, len), 0);
	return msg;
}

START_TEST(test_malicious_server)
{
	struct secagg_params p = complete(5, 3, 16, 64);
	uint64_t **x = random_inputs(&p, 4);
	struct harness h;
	h_open(&h, &p, 9);
	ck_assert_int_eq(h_stages(&h, SECAGG_ADVERTISE, SECAGG_MASKED, x, NULL, NULL, NULL), 0);
	struct secagg_client **c = h.c;
	void *out = NULL;
	size_t len, out_len = 0;
	/* client 0 asked for client 2's self-mask share and its mask-key share
	 * in one request: refused, nothing revealed, and no second chance */
	const uint32_t alive[] = {0, 1, 2, 3}, dropped[] = {2, 4};
	void *req = request(&p, alive, 4, dropped, 2, &len);
	ck_assert_int_eq(secagg_client_unmask(c[0], req, len, &out, &out_len), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(),
			     "both the self-mask share and the mask-key share of client 2"),
		      "%s", fedrun_error_message());
	ck_assert_ptr_null(out);
	free(req);
	const uint32_t honest_alive[] = {0, 1, 2, 3, 4};
	req = request(&p, honest_alive, 5, NULL, 0, &len);
	ck_assert_int_eq(secagg_client_unmask(c[0], req, len, &out, &out_len), FEDRUN_ESTATE);
	ck_assert_ptr_null(out);
	/* client 1 answers an honest request once; a second request naming
	 * client 2 as dropped (to get the other share) is refused */
	ck_assert_int_eq(secagg_client_unmask(c[1], req, len, &out, &out_len), 0);
	ck_assert_ptr_nonnull(out);
	free(out);
	out = NULL;
	free(req);
	const uint32_t alive2[] = {1, 3, 4}, dropped2[] = {2};
	req = request(&p, alive2, 3, dropped2, 1, &len);
	ck_assert_int_eq(secagg_client_unmask(c[1], req, len, &out, &out_len), FEDRUN_ESTATE);
	ck_assert_ptr_null(out);
	/* client 3: a request that names it dropped, or leaves it out */
	free(req);
	const uint32_t alive3[] = {1, 2, 4}, dropped3[] = {3};
	req = request(&p, alive3, 3, dropped3, 1, &len);
	ck_assert_int_eq(secagg_client_unmask(c[3], req, len, &out, &out_len), FEDRUN_EINVAL);
	ck_assert_ptr_null(out);
	free(req);
	const uint32_t others[] = {1, 2, 3};
	req = request(&p, others, 3, NULL, 0, &len);
	ck_assert_int_eq(secagg_client_unmask(c[4], req, len, &out, &out_len), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "leaves it out"));
	ck_assert_ptr_null(out);
	/* client 2: a request for fewer survivors than the threshold */
	free(req);
	const uint32_t alive4[] = {2, 1};
	req = request(&p, alive4, 2, NULL, 0, &len);
	ck_assert_int_eq(secagg_client_unmask(c[2], req, len, &out, &out_len), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "fewer than the threshold"));
	ck_assert_ptr_null(out);
	free(req);
	h_close(&h);
	free_inputs(&p, x);
}
END_TEST

/* ---- keys of small order, messages not from the server --------------------- */

/* An X25519 point of order 8 (RFC 7748's curve; its agreement with any
 * key is all zeros) written over client `victim`'s c key: in its own
 * advertise message (to the server) or in the server's keys message to
 * client 0 (where client `victim` is its first neighbour entry). */
static const uint8_t order8[32] = {0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3,
				   0xfa, 0xf1, 0x9f, 0xc4, 0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32,
				   0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00};

struct badkey {
	bool at_server; /* in the advertise message, else in the keys message */
	bool done;
};

static void badkey_hook(void *ctx, uint32_t stage, uint32_t u, bool to_client, uint8_t *msg,
			size_t len)
{
	struct badkey *b = ctx;
	if (b->at_server && stage == SECAGG_ADVERTISE && u == 1 && !to_client) {
		ck_assert_uint_ge(len, SECAGG_HEADER_BYTES + 64);
		memcpy(msg + SECAGG_HEADER_BYTES, order8, 32);
		b->done = true;
	}
	/* count, then (id, c key, s key) each: client 0's first neighbour is 1 */
	if (!b->at_server && stage == SECAGG_SHARE && u == 0 && to_client) {
		ck_assert_uint_ge(len, SECAGG_HEADER_BYTES + 8 + 64);
		ck_assert_uint_eq(msg[SECAGG_HEADER_BYTES + 4], 1);
		memcpy(msg + SECAGG_HEADER_BYTES + 8, order8, 32);
		b->done = true;
	}
}

START_TEST(test_small_order_keys)
{
	/* the point is of order 8: 8 P is the identity, P is not */
	uint8_t out[32], eight[32] = {8};
	ck_assert_int_ne(crypto_scalarmult(out, eight, order8), 0);
	ck_assert(!secagg_key_ok(order8));
	const uint8_t zero[32] = {0};
	ck_assert(!secagg_key_ok(zero));
	uint8_t sk[32] = {1, 2, 3}, pk[32];
	crypto_scalarmult_base(pk, sk);
	ck_assert(secagg_key_ok(pk));
	for (int at_server = 1; at_server >= 0; at_server--) {
		struct secagg_params p = complete(4, 3, 16, 8);
		uint64_t **x = random_inputs(&p, 8);
		struct harness h;
		struct badkey b = {.at_server = at_server};
		h_open(&h, &p, 12);
		fedrun_error_clear();
		ck_assert_int_eq(h_stages(&h, SECAGG_ADVERTISE, SECAGG_SHARE, x, NULL, badkey_hook, &b),
				 FEDRUN_EINVAL);
		ck_assert(b.done);
		ck_assert_msg(strstr(fedrun_error_message(),
				     at_server ? "client 1 advertised a public key of small order"
					       : "client 0: client 1's keys: a public key of small "
						 "order: refused"),
			      "%s", fedrun_error_message());
		h_close(&h);
		free_inputs(&p, x);
	}
}
END_TEST

START_TEST(test_sender_not_server)
{
	/* the server's keys message to client 0, its sender changed to client
	 * 2 (as if a client's message were relayed as the server's): refused */
	struct secagg_params p = complete(3, 2, 16, 8);
	uint64_t **x = random_inputs(&p, 9);
	struct harness h;
	h_open(&h, &p, 13);
	ck_assert_int_eq(h_stages(&h, SECAGG_ADVERTISE, SECAGG_ADVERTISE, x, NULL, NULL, NULL), 0);
	void *in = NULL, *out = NULL;
	size_t il = 0, ol = 0;
	ck_assert_int_eq(secagg_server_message(h.s, 0, &in, &il), 0);
	ck_assert_uint_ge(il, SECAGG_HEADER_BYTES);
	uint8_t *m = in;
	m[SECAGG_HEADER_BYTES - 4] = 2; /* the sender, little-endian */
	m[SECAGG_HEADER_BYTES - 3] = m[SECAGG_HEADER_BYTES - 2] = m[SECAGG_HEADER_BYTES - 1] = 0;
	ck_assert_int_eq(secagg_client_share(h.c[0], in, il, &out, &ol), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "sent by client 2, not the server: refused"),
		      "%s", fedrun_error_message());
	ck_assert_ptr_null(out);
	free(in);
	h_close(&h);
	free_inputs(&p, x);
}
END_TEST

/* ---- tampering ---------------------------------------------------------------- */

/* Flips one bit of a message: the server's to client 2 at the masked
 * input stage (a ciphertext's body, past its sender and nonce), or client
 * 0's answer at unmasking (a byte of the share of client `owner`). */
struct tamper {
	uint32_t owner;
	bool done;
};

static void tamper_ct(void *ctx, uint32_t stage, uint32_t u, bool to_client, uint8_t *msg,
		      size_t len)
{
	struct tamper *t = ctx;
	if (stage == SECAGG_MASKED && u == 2 && to_client) {
		const size_t at = SECAGG_HEADER_BYTES + 4 + 4 + 24 + 10;
		ck_assert_uint_gt(len, at);
		msg[at] ^= 0x10;
		t->done = true;
	}
}

static void tamper_share(void *ctx, uint32_t stage, uint32_t u, bool to_client, uint8_t *msg,
			 size_t len)
{
	struct tamper *t = ctx;
	if (stage != SECAGG_UNMASK || u != 0 || to_client)
		return;
	/* count, then (owner u32, kind u32, share) each */
	const uint32_t count = msg[SECAGG_HEADER_BYTES];
	for (uint32_t i = 0; i < count; i++) {
		uint8_t *e = msg + SECAGG_HEADER_BYTES + 4 + i * (8 + SECAGG_SHARE_BYTES);
		ck_assert_uint_le((size_t)(e - msg) + 8 + SECAGG_SHARE_BYTES, len);
		if (e[0] == t->owner) {
			e[8 + 30] ^= 1;
			t->done = true;
		}
	}
}

START_TEST(test_tampered_ciphertext)
{
	/* a server that changes one bit of the shares it routes: the client
	 * refuses them at unmasking (XChaCha20-Poly1305), revealing nothing */
	struct secagg_params p = complete(4, 3, 16, 32);
	uint64_t **x = random_inputs(&p, 5);
	struct harness h;
	struct tamper t = {0};
	h_open(&h, &p, 1);
	ck_assert_int_eq(h_stages(&h, SECAGG_ADVERTISE, SECAGG_MASKED, x, NULL, tamper_ct, &t), 0);
	ck_assert(t.done);
	void *in, *out = NULL;
	size_t il, ol;
	ck_assert_int_eq(secagg_server_message(h.s, 2, &in, &il), 0);
	ck_assert_int_eq(secagg_client_unmask(h.c[2], in, il, &out, &ol), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "do not authenticate"));
	ck_assert_ptr_null(out);
	free(in);
	/* the untouched clients answer */
	ck_assert_int_eq(secagg_server_message(h.s, 1, &in, &il), 0);
	ck_assert_int_eq(secagg_client_unmask(h.c[1], in, il, &out, &ol), 0);
	free(in);
	free(out);
	h_close(&h);
	free_inputs(&p, x);
}
END_TEST

START_TEST(test_tampered_share)
{
	/* a share changed on its way back to the server (client 1's self-mask
	 * seed, or the mask key of client 4, which dropped before its masked
	 * input): the reconstructed secret fails its check against the
	 * commitment or public key, and the round fails without a sum */
	for (int which = 0; which < 2; which++) {
		struct secagg_params p = complete(5, 3, 16, 32);
		uint64_t **x = random_inputs(&p, 6);
		uint32_t drop[5] = {0};
		if (which == 1)
			drop[4] = SECAGG_MASKED;
		struct harness h;
		struct tamper t = {.owner = which ? 4 : 1};
		h_open(&h, &p, 3);
		ck_assert_int_eq(
		    h_stages(&h, SECAGG_ADVERTISE, SECAGG_UNMASK, x, drop, tamper_share, &t), 0);
		ck_assert(t.done);
		uint64_t got[32];
		memset(got, 0xab, sizeof got);
		ck_assert_int_eq(secagg_server_sum(h.s, got), FEDRUN_EINVAL);
		const char *msg = fedrun_error_message();
		ck_assert_msg(strstr(msg, which ? "does not match its public key"
						: "does not match its commitment") ||
				  strstr(msg, "32-byte secret"),
			      "%s", msg);
		for (int i = 0; i < 32; i++)
			ck_assert_uint_eq(got[i], 0xababababababababull);
		h_close(&h);
		free_inputs(&p, x);
	}
}
END_TEST

/* ---- what the server sees of one client -------------------------------------- */

/* Pearson's chi-square of counts against a uniform expectation. */
static double chi2_uniform(const uint64_t *count, unsigned buckets, uint64_t total)
{
	double e = (double)total / buckets, x = 0;
	for (unsigned i = 0; i < buckets; i++)
		x += ((double)count[i] - e) * ((double)count[i] - e) / e;
	return x;
}

/* The upper alpha quantile of chi-square with k degrees of freedom
 * (Wilson and Hilferty 1931): k (1 − 2/(9k) + z sqrt(2/(9k)))^3, z the
 * standard normal's upper quantile. */
static double chi2_critical(double k, double z)
{
	double a = 2.0 / (9.0 * k);
	return k * pow(1 - a + z * sqrt(a), 3);
}

/* Keeps client 0's masked input as the server receives it. */
struct capture {
	uint8_t msg[256];
	size_t len;
};

static void capture(void *ctx, uint32_t stage, uint32_t u, bool to_client, uint8_t *msg, size_t len)
{
	struct capture *c = ctx;
	if (stage == SECAGG_MASKED && u == 0 && !to_client) {
		ck_assert_uint_le(len, sizeof c->msg);
		memcpy(c->msg, msg, len);
		c->len = len;
	}
}

START_TEST(test_uniform)
{
	/* Client 0's masked input over 400 rounds (fresh keys each round),
	 * its input fixed and far from uniform (a ramp of small values): the
	 * bytes the server sees pass a chi-square test of uniformity over the
	 * 256 values at significance 0.001 (critical value about 330.5 with
	 * 255 degrees of freedom), while the same test rejects the unmasked
	 * input (the control that shows the test can fail). And no two
	 * consecutive rounds agree on more than a few elements. */
	enum { ROUNDS = 400, D = 64, N = 3 };
	const double crit = chi2_critical(255, 3.0902); /* z of 0.999 */
	ck_assert(crit > 325 && crit < 336);
	uint64_t masked[256] = {0}, plain[256] = {0};
	uint8_t prev[D];
	uint64_t *x[N];
	for (int u = 0; u < N; u++) {
		x[u] = malloc(D * sizeof **x);
		for (int i = 0; i < D; i++)
			x[u][i] = (uint64_t)(i % 8);
	}
	struct capture cap = {0};
	for (uint32_t r = 1; r <= ROUNDS; r++) {
		struct secagg_params p = complete(N, 2, 8, D);
		p.round = r;
		struct harness h;
		h_open(&h, &p, 1000 + r);
		ck_assert_int_eq(
		    h_stages(&h, SECAGG_ADVERTISE, SECAGG_MASKED, x, NULL, capture, &cap), 0);
		ck_assert_uint_eq(cap.len, SECAGG_HEADER_BYTES + D);
		const uint8_t *y = cap.msg + SECAGG_HEADER_BYTES;
		for (int i = 0; i < D; i++) {
			masked[y[i]]++;
			plain[x[0][i]]++;
		}
		if (r > 1) {
			int same = 0;
			for (int i = 0; i < D; i++)
				same += y[i] == prev[i];
			ck_assert_msg(same <= 4,
				      "round %u: %d of %d elements as in the round before", r, same,
				      D);
		}
		memcpy(prev, y, D);
		h_close(&h);
	}
	const double xm = chi2_uniform(masked, 256, (uint64_t)ROUNDS * D);
	const double xp = chi2_uniform(plain, 256, (uint64_t)ROUNDS * D);
	ck_assert_msg(xm < crit, "masked: chi-square %.1f >= %.1f", xm, crit);
	ck_assert_msg(xp >= crit, "unmasked: chi-square %.1f < %.1f", xp, crit);
	for (int u = 0; u < N; u++)
		free(x[u]);
}
END_TEST

/* ---- SecAgg+'s graph ---------------------------------------------------------- */

START_TEST(test_graph)
{
	const uint32_t ns[] = {5, 16, 100, 1000, 4096};
	for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
		const uint32_t n = ns[k], shares = secagg_default_shares(n);
		struct secagg_params p = sparse(n, shares, shares / 2 + 1, 32, 1);
		ck_assert_int_eq(secagg_params_check(&p), 0);
		struct secagg_graph g;
		ck_assert_int_eq(secagg_graph_init(&g, &p), 0);
		const double lg = log2((double)n);
		/* degree 2 ceil(log2 n) (or n - 1 in small rounds): O(log n) */
		ck_assert_uint_eq(secagg_graph_degree(&g), shares - 1);
		ck_assert(secagg_graph_degree(&g) <= 2 * ceil(lg));
		ck_assert(n < 64 || secagg_graph_degree(&g) >= 2 * lg);
		uint32_t *nb = malloc(n * sizeof *nb);
		uint64_t edges = 0;
		for (uint32_t u = 0; u < n; u++) {
			uint32_t d = secagg_graph_neighbours(&g, u, nb);
			ck_assert_uint_eq(d, shares - 1);
			for (uint32_t i = 0; i < d; i++) {
				ck_assert(secagg_graph_linked(&g, u, nb[i]));
				ck_assert(secagg_graph_linked(&g, nb[i], u)); /* symmetric */
				ck_assert(i == 0 || nb[i - 1] < nb[i]);	      /* sorted, distinct */
				ck_assert_uint_ne(nb[i], u);
			}
			edges += d;
		}
		ck_assert_uint_eq(edges, (uint64_t)n * (shares - 1));
		/* the permutation is the round's: another round, another graph */
		if (n >= 100) {
			struct secagg_graph h;
			p.round = 2;
			ck_assert_int_eq(secagg_graph_init(&h, &p), 0);
			uint32_t differ = 0;
			for (uint32_t u = 1; u < n; u++)
				differ +=
				    secagg_graph_linked(&g, 0, u) != secagg_graph_linked(&h, 0, u);
			ck_assert_uint_gt(differ, 0);
			secagg_graph_fini(&h);
		}
		free(nb);
		secagg_graph_fini(&g);
	}
	ck_assert_uint_eq(secagg_default_shares(4), 3);
	ck_assert_uint_eq(secagg_default_shares(3), 3);
	ck_assert_uint_eq(secagg_default_shares(1024), 21);
}
END_TEST

START_TEST(test_sparse_round)
{
	/* SecAgg+ with the default neighbourhood at 300 clients: the sum is
	 * exact, and each client sends shares to its 2 ceil(log2 n) = 18
	 * neighbours only (the complete graph would send 299) */
	struct secagg_params p = sparse(300, secagg_default_shares(300), 0, 32, 16);
	p.threshold = p.num_shares / 2 + 1;
	ck_assert_uint_eq(p.num_shares, 19);
	uint64_t **x = random_inputs(&p, 8);
	uint64_t got[16], want[16];
	struct harness st;
	ck_assert_int_eq(run_round(&p, 8, x, NULL, got, &st), 0);
	plain_sum(&p, x, NULL, want);
	ck_assert_mem_eq(got, want, sizeof got);
	ck_assert_uint_eq(st.bytes_up[SECAGG_SHARE],
			  300 * (SECAGG_HEADER_BYTES + 32 + 4 + 18 * (4 + SECAGG_CT_BYTES)));
	free_inputs(&p, x);
}
END_TEST

/* ---- refusals ------------------------------------------------------------------ */

START_TEST(test_refusals)
{
	struct secagg_params p = complete(5, 3, 32, 8);
	ck_assert_int_eq(secagg_params_check(&p), 0);
	p.threshold = 2; /* half of 5, rounded down: too low */
	ck_assert_int_eq(secagg_params_check(&p), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "more than half"));
	p.threshold = 6;
	ck_assert_int_eq(secagg_params_check(&p), FEDRUN_EINVAL);
	p = complete(5, 3, 32, 8);
	p.num_shares = 4;
	ck_assert_int_eq(secagg_params_check(&p), FEDRUN_EINVAL);
	p = sparse(10, 4, 3, 32, 8);
	ck_assert_int_eq(secagg_params_check(&p), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "odd"));
	p = sparse(10, 11, 6, 32, 8);
	ck_assert_int_eq(secagg_params_check(&p), FEDRUN_EINVAL);
	p = complete(5, 3, 4, 8);
	ck_assert_int_eq(secagg_params_check(&p), FEDRUN_EINVAL);
	p = complete(1, 1, 32, 8);
	ck_assert_int_eq(secagg_params_check(&p), FEDRUN_EINVAL);

	/* messages out of turn, twice, from a dropped client, of another round */
	p = complete(3, 2, 16, 4);
	struct secagg_client *c[3];
	struct secagg_server *s;
	ck_assert_int_eq(secagg_server_create(&p, &s), 0);
	void *m[3], *in;
	size_t ml[3], il;
	for (uint32_t u = 0; u < 3; u++) {
		ck_assert_int_eq(secagg_client_create_insecure_test(&p, u, 4, &c[u]), 0);
		ck_assert_int_eq(secagg_client_advertise(c[u], &m[u], &ml[u]), 0);
	}
	ck_assert_int_eq(secagg_client_advertise(c[0], &in, &il), FEDRUN_ESTATE); /* twice */
	ck_assert_int_eq(secagg_server_receive(s, m[0], ml[0]), 0);
	ck_assert_int_eq(secagg_server_receive(s, m[0], ml[0]), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "twice"));
	ck_assert_int_eq(secagg_server_receive(s, m[1], ml[1] - 1), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "truncated"));
	ck_assert_int_eq(secagg_server_receive(s, m[1], ml[1]), 0);
	ck_assert_int_eq(secagg_server_close(s), 0);
	/* client 2 advertised too late: dropped */
	ck_assert_int_eq(secagg_server_receive(s, m[2], ml[2]), FEDRUN_EINVAL);
	ck_assert_int_eq(secagg_server_message(s, 2, &in, &il), FEDRUN_EINVAL);
	ck_assert_int_eq(secagg_server_message(s, 1, &in, &il), 0);
	((uint8_t *)in)[8] ^= 1; /* another round */
	ck_assert_int_eq(secagg_client_share(c[1], in, il, &m[2], &ml[2]), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "round"));
	free(in);
	for (uint32_t u = 0; u < 3; u++) {
		free(m[u]);
		secagg_client_destroy(c[u]);
	}
	secagg_server_destroy(s);
}
END_TEST

static Suite *secagg_suite(void)
{
	Suite *s = suite_create("secagg");
	TCase *tc = tcase_create("parts");
	tcase_add_test(tc, test_prime);
	tcase_add_test(tc, test_shamir);
	tcase_add_test(tc, test_quant);
	tcase_add_test(tc, test_pack);
	tcase_add_test(tc, test_graph);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	tc = tcase_create("protocol");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sum_exact);
	tcase_add_test(tc, test_sum_floats);
	tcase_add_test(tc, test_dropout_complete);
	tcase_add_test(tc, test_dropout_sparse);
	tcase_add_test(tc, test_malicious_server);
	tcase_add_test(tc, test_small_order_keys);
	tcase_add_test(tc, test_sender_not_server);
	tcase_add_test(tc, test_tampered_ciphertext);
	tcase_add_test(tc, test_tampered_share);
	tcase_add_test(tc, test_uniform);
	tcase_add_test(tc, test_sparse_round);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(secagg_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
