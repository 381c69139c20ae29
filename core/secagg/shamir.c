/* SPDX-License-Identifier: Apache-2.0 */
/* Shamir's t-of-n secret sharing (Shamir 1979, "How to share a secret")
 * over GF(p), p = 2^256 + 297, on GMP: how a client's secrets survive its
 * dropping out (Bonawitz et al. 2017, sec. 3, "Handling dropped users"). */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "fedrun/error.h"
#include "internal.h"

/* 2^256 + 297: the smallest prime above 2^256 (tests/test_secagg.c checks
 * both). */
static const char prime_hex[] = "10000000000000000000000000000000000000000000000000000000000000129";

int secagg_shamir_init(struct secagg_shamir *s)
{
	memset(s, 0, sizeof *s);
	mpz_init_set_str(s->p, prime_hex, 16);
	mpz_inits(s->tmp, s->acc, NULL);
	return 0;
}

/* Overwrites every limb v has allocated (not only those of its current
 * value: a smaller value leaves a larger one's high limbs behind), then
 * sets it to 0. mpz_set_ui(v, 0) alone leaves the limbs as they were.
 * GMP's own scratch space inside mpz_mul and mpz_mod is not reached:
 * secrets may stay there until it is reused. */
static void wipe(mpz_t v)
{
	sodium_memzero(v->_mp_d, (size_t)v->_mp_alloc * sizeof *v->_mp_d);
	v->_mp_size = 0;
}

static void forget_lambda(struct secagg_shamir *s)
{
	for (uint32_t i = 0; i < s->nl; i++)
		mpz_clear(s->lambda[i]);
	free(s->lambda);
	free(s->lx);
	s->lambda = NULL;
	s->lx = NULL;
	s->nl = 0;
}

void secagg_shamir_fini(struct secagg_shamir *s)
{
	forget_lambda(s);
	wipe(s->tmp);
	wipe(s->acc);
	mpz_clears(s->p, s->tmp, s->acc, NULL);
}

static void to_bytes(const mpz_t v, uint8_t *out, size_t n)
{
	size_t count = 0;
	memset(out, 0, n);
	uint8_t buf[SECAGG_SHARE_BYTES + 8];
	mpz_export(buf, &count, 1, 1, 1, 0, v); /* big-endian */
	memcpy(out + n - count, buf, count);
	sodium_memzero(buf, sizeof buf);
}

int secagg_shamir_split(struct secagg_shamir *s, const uint8_t secret[32], uint32_t t,
			const uint32_t *xs, uint32_t n, struct secagg_rand *r,
			uint8_t (*shares)[SECAGG_SHARE_BYTES])
{
	if (t < 1 || t > n)
		return fedrun_error(FEDRUN_EINVAL, "secagg: cannot split a secret %u of %u ways", t,
				    n);
	mpz_t *a = malloc((size_t)t * sizeof *a);
	if (!a)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	/* a_0 = the secret; a_1 .. a_{t-1} uniform in GF(p): 48 random bytes
	 * reduced modulo p (a bias below 2^-120). */
	mpz_init(a[0]);
	mpz_import(a[0], 32, 1, 1, 1, 0, secret);
	uint8_t rnd[48];
	for (uint32_t i = 1; i < t; i++) {
		secagg_rand_bytes(r, rnd, sizeof rnd);
		mpz_init(a[i]);
		mpz_import(a[i], sizeof rnd, 1, 1, 1, 0, rnd);
		mpz_mod(a[i], a[i], s->p);
	}
	sodium_memzero(rnd, sizeof rnd);
	for (uint32_t j = 0; j < n; j++) { /* Horner: f(x) = a_0 + x (a_1 + x (...)) */
		mpz_set(s->acc, a[t - 1]);
		for (uint32_t i = t - 1; i-- > 0;) {
			mpz_mul_ui(s->acc, s->acc, xs[j]);
			mpz_add(s->acc, s->acc, a[i]);
			mpz_mod(s->acc, s->acc, s->p);
		}
		to_bytes(s->acc, shares[j], SECAGG_SHARE_BYTES);
	}
	/* GMP's limbs of the coefficients are overwritten before they go. */
	for (uint32_t i = 0; i < t; i++) {
		wipe(a[i]);
		mpz_clear(a[i]);
	}
	wipe(s->acc);
	free(a);
	return 0;
}

/* λ_i = Π_{j≠i} x_j / (x_j − x_i) mod p: the Lagrange basis at 0 for the
 * points xs[0 .. t), kept for the next call with the same points. */
static int lambda_for(struct secagg_shamir *s, const uint32_t *xs, uint32_t t)
{
	if (s->nl == t && memcmp(s->lx, xs, (size_t)t * sizeof *xs) == 0)
		return 0;
	forget_lambda(s);
	s->lx = malloc((size_t)t * sizeof *s->lx);
	s->lambda = malloc((size_t)t * sizeof *s->lambda);
	if (!s->lx || !s->lambda) {
		free(s->lx);
		free(s->lambda);
		s->lx = NULL;
		s->lambda = NULL;
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	memcpy(s->lx, xs, (size_t)t * sizeof *xs);
	mpz_t num, den;
	mpz_inits(num, den, NULL);
	for (uint32_t i = 0; i < t; i++) {
		mpz_set_ui(num, 1);
		mpz_set_ui(den, 1);
		for (uint32_t j = 0; j < t; j++) {
			if (j == i)
				continue;
			mpz_mul_ui(num, num, xs[j]);
			mpz_mod(num, num, s->p);
			mpz_mul_si(den, den, (long)xs[j] - (long)xs[i]);
			mpz_mod(den, den, s->p);
		}
		mpz_init(s->lambda[i]);
		if (!mpz_invert(den, den, s->p)) { /* two equal points */
			for (uint32_t k = 0; k <= i; k++)
				mpz_clear(s->lambda[k]);
			s->nl = 0;
			mpz_clears(num, den, NULL);
			free(s->lx);
			free(s->lambda);
			s->lx = NULL;
			s->lambda = NULL;
			return fedrun_error(FEDRUN_EINVAL,
					    "secagg: two shares of one secret at the same point %u",
					    xs[i]);
		}
		mpz_mul(s->lambda[i], num, den);
		mpz_mod(s->lambda[i], s->lambda[i], s->p);
	}
	s->nl = t;
	mpz_clears(num, den, NULL);
	return 0;
}

int secagg_shamir_combine(struct secagg_shamir *s, uint32_t t, const uint32_t *xs,
			  const uint8_t (*shares)[SECAGG_SHARE_BYTES], uint32_t n,
			  uint8_t secret[32])
{
	if (t < 1 || n < t)
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: %u shares cannot recover a secret shared %u of n", n,
				    t);
	int rc = lambda_for(s, xs, t);
	if (rc < 0)
		return rc;
	mpz_set_ui(s->acc, 0);
	for (uint32_t i = 0; i < t; i++) {
		mpz_import(s->tmp, SECAGG_SHARE_BYTES, 1, 1, 1, 0, shares[i]);
		if (mpz_cmp(s->tmp, s->p) >= 0) {
			wipe(s->tmp);
			wipe(s->acc);
			return fedrun_error(FEDRUN_EINVAL, "secagg: a share outside the field");
		}
		mpz_addmul(s->acc, s->tmp, s->lambda[i]);
	}
	mpz_mod(s->acc, s->acc, s->p);
	wipe(s->tmp);
	if (mpz_sizeinbase(s->acc, 2) > 256) {
		wipe(s->acc);
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: the shares do not interpolate to a 32-byte secret (corrupt shares)");
	}
	to_bytes(s->acc, secret, 32);
	wipe(s->acc);
	return 0;
}
