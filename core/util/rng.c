/* SPDX-License-Identifier: Apache-2.0 */
/* Philox4x32-10 counter-based generator (Salmon, Moraes, Dror, Shaw 2011,
 * "Parallel random numbers: as easy as 1, 2, 3") and the distributions fedrun
 * draws from it. A stream's key mixes the seed and the purpose; its counter
 * holds the round, the client and the block index. */
#include "config.h"
#include <math.h>
#include <string.h>
#include "fedrun/rng.h"

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
	uint64_t p = (uint64_t)a * b;
	*hi = (uint32_t)(p >> 32);
	*lo = (uint32_t)p;
}

void fedrun_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];
	for (int i = 0; i < 10; i++) {
		uint32_t hi0, lo0, hi1, lo1;
		mulhilo(PHILOX_M0, c0, &hi0, &lo0);
		mulhilo(PHILOX_M1, c2, &hi1, &lo1);
		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

/* splitmix64 finaliser: a bijective mix used to derive keys. */
static uint64_t mix64(uint64_t z)
{
	z += UINT64_C(0x9E3779B97F4A7C15);
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

void fedrun_rng_init(struct fedrun_rng *r, uint64_t seed, uint32_t purpose,
		     uint32_t round, uint32_t client)
{
	memset(r, 0, sizeof *r);
	uint64_t k = mix64(seed ^ mix64(purpose));
	r->key[0] = (uint32_t)k;
	r->key[1] = (uint32_t)(k >> 32);
	r->ctr[2] = round;
	r->ctr[3] = client;
	r->pos = 4;
}

uint32_t fedrun_rng_u32(struct fedrun_rng *r)
{
	if (r->pos >= 4) {
		fedrun_philox4x32(r->key, r->ctr, r->buf);
		if (++r->ctr[0] == 0)
			++r->ctr[1];
		r->pos = 0;
	}
	return r->buf[r->pos++];
}

uint64_t fedrun_rng_u64(struct fedrun_rng *r)
{
	uint64_t hi = fedrun_rng_u32(r);
	return hi << 32 | fedrun_rng_u32(r);
}

double fedrun_rng_uniform(struct fedrun_rng *r)
{
	/* 53 random bits, shifted by half a step: never 0, never 1. */
	return ((double)(fedrun_rng_u64(r) >> 11) + 0.5) * 0x1.0p-53;
}

uint64_t fedrun_rng_below(struct fedrun_rng *r, uint64_t n)
{
	/* Rejection: accept x below the largest multiple of n. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;
	do
		x = fedrun_rng_u64(r);
	while (x >= limit);
	return x % n;
}

double fedrun_rng_normal(struct fedrun_rng *r)
{
	if (r->have_spare) {
		r->have_spare = 0;
		return r->spare;
	}
	/* Box-Muller: exact for uniform inputs in (0, 1). */
	double u1 = fedrun_rng_uniform(r), u2 = fedrun_rng_uniform(r);
	double rad = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
	r->spare = rad * sin(th);
	r->have_spare = 1;
	return rad * cos(th);
}

double fedrun_rng_laplace(struct fedrun_rng *r, double b)
{
	/* Inverse CDF on u in (-1/2, 1/2). */
	double u = fedrun_rng_uniform(r) - 0.5;
	return u < 0 ? b * log1p(2.0 * u) : -b * log1p(-2.0 * u);
}

double fedrun_rng_gamma(struct fedrun_rng *r, double shape)
{
	if (shape < 1.0) {
		/* Boost: Gamma(a) = Gamma(a + 1) * U^(1/a). */
		double u = fedrun_rng_uniform(r);
		return fedrun_rng_gamma(r, shape + 1.0) * pow(u, 1.0 / shape);
	}
	double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x, v;
		do {
			x = fedrun_rng_normal(r);
			v = 1.0 + c * x;
		} while (v <= 0.0);
		v = v * v * v;
		double u = fedrun_rng_uniform(r);
		if (u < 1.0 - 0.0331 * x * x * x * x)
			return d * v;
		if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
			return d * v;
	}
}

void fedrun_rng_shuffle_u32(struct fedrun_rng *r, uint32_t *v, uint64_t n)
{
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = fedrun_rng_below(r, i);
		uint32_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}
