/* SPDX-License-Identifier: Apache-2.0 */
/* Counter-based random streams (Philox4x32-10, Salmon et al. 2011).
 * Every stream is a pure function of (seed, purpose, round, client): no state
 * is shared between clients or threads, so results do not depend on the
 * order in which work is scheduled. */
#ifndef FEDRUN_RNG_H
#define FEDRUN_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Purposes name what a stream is for, so that two uses never share numbers.
 * Plugins use FEDRUN_RNG_PLUGIN + k for their own streams. */
enum fedrun_rng_purpose {
	FEDRUN_RNG_INIT = 1,      /* model initialisation */
	FEDRUN_RNG_SAMPLE = 2,    /* client sampling each round */
	FEDRUN_RNG_DATA = 3,      /* data generation and partitioning */
	FEDRUN_RNG_SHUFFLE = 4,   /* local batch order */
	FEDRUN_RNG_DROPOUT = 5,
	FEDRUN_RNG_SELECT = 6,    /* tensor selectors */
	FEDRUN_RNG_PRIVACY = 7,   /* reproducible privacy noise */
	FEDRUN_RNG_AGGREGATE = 8, /* server-side randomness */
	FEDRUN_RNG_ATTACK = 9,
	FEDRUN_RNG_BOOTSTRAP = 10, /* BLEU and chrF bootstrap resamples */
	FEDRUN_RNG_PLUGIN = 1024
};

/* Caller-owned; initialise with fedrun_rng_init. Plain data: copy freely. */
struct fedrun_rng {
	uint32_t key[2];
	uint32_t ctr[4]; /* ctr[0..1]: block index, ctr[2]: round, ctr[3]: client */
	uint32_t buf[4];
	uint32_t pos;    /* next unused word of buf; 4 = empty */
	uint32_t have_spare;
	double spare;    /* second Box-Muller normal */
};

void fedrun_rng_init(struct fedrun_rng *r, uint64_t seed, uint32_t purpose,
		     uint32_t round, uint32_t client);
uint32_t fedrun_rng_u32(struct fedrun_rng *r);
uint64_t fedrun_rng_u64(struct fedrun_rng *r);
/* Uniform in the open interval (0, 1), 53-bit resolution. */
double fedrun_rng_uniform(struct fedrun_rng *r);
/* Uniform integer in [0, n), without modulo bias; n >= 1. */
uint64_t fedrun_rng_below(struct fedrun_rng *r, uint64_t n);
/* Standard normal N(0, 1). */
double fedrun_rng_normal(struct fedrun_rng *r);
/* Laplace(0, b): density exp(-|x|/b) / (2b). */
double fedrun_rng_laplace(struct fedrun_rng *r, double b);
/* Gamma(shape, 1), shape > 0 (Marsaglia and Tsang 2000). */
double fedrun_rng_gamma(struct fedrun_rng *r, double shape);
/* In-place Fisher-Yates shuffle of n uint32 values. */
void fedrun_rng_shuffle_u32(struct fedrun_rng *r, uint32_t *v, uint64_t n);

/* The raw Philox4x32-10 block function, exposed for tests. */
void fedrun_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]);

#ifdef __cplusplus
}
#endif
#endif
