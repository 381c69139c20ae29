/* SPDX-License-Identifier: Apache-2.0 */
/* A cryptographically secure random source for privacy noise: the ChaCha20
 * block function (RFC 8439) run as a keystream generator, each stream keyed
 * from the kernel's getrandom(2). Unlike fedrun_rng (fedrun/rng.h), whose
 * numbers anyone who knows the seed can recompute, nothing about this
 * stream's output is predictable, so runs that use it are not repeatable. */
#ifndef FEDRUN_CSPRNG_H
#define FEDRUN_CSPRNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Caller-owned; initialise with fedrun_csprng_init (or _init_key for tests)
 * and wipe with fedrun_csprng_fini. One stream per thread: not shareable. */
struct fedrun_csprng {
	uint32_t key[8];
	uint32_t counter;  /* block counter, RFC 8439 word 12 */
	uint32_t nonce[3]; /* words 13..15; nonce[0] takes the counter's carry */
	uint32_t buf[16];  /* the current keystream block */
	uint32_t pos;	   /* next unused word of buf; 16 = empty */
	uint32_t have_spare;
	double spare; /* second Box-Muller normal */
};

/* Fills buf with n bytes from getrandom(2) (retrying on EINTR and short
 * reads). Returns 0 or FEDRUN_EIO naming the error. */
int fedrun_getrandom(void *buf, size_t n);

/* A new stream under a fresh 256-bit key from getrandom(2), nonce and
 * counter 0. Returns 0 or FEDRUN_EIO. */
int fedrun_csprng_init(struct fedrun_csprng *g);
/* A stream under a given key, nonce and initial block counter (byte order
 * as in RFC 8439): for test vectors, never for privacy. */
void fedrun_csprng_init_key(struct fedrun_csprng *g, const uint8_t key[32], const uint8_t nonce[12],
			    uint32_t counter);
/* Wipes the key and buffered output. */
void fedrun_csprng_fini(struct fedrun_csprng *g);

/* The next 32 keystream bits (little-endian words of the RFC's byte
 * stream). After 2^32 blocks the counter carries into nonce[0], as in
 * the original ChaCha's 64-bit counter, so a stream never repeats. */
uint32_t fedrun_csprng_u32(struct fedrun_csprng *g);
uint64_t fedrun_csprng_u64(struct fedrun_csprng *g);
/* Uniform in the open interval (0, 1), 53-bit resolution. */
double fedrun_csprng_uniform(struct fedrun_csprng *g);
/* Standard normal N(0, 1) (Box-Muller, both values used). */
double fedrun_csprng_normal(struct fedrun_csprng *g);
/* Laplace(0, b): density exp(−|x|/b)/(2b), as a random sign times b times
 * an Exp(1) variate. */
double fedrun_csprng_laplace(struct fedrun_csprng *g, double b);

/* The RFC 8439 section 2.3 block function: 16 words of keystream for
 * (key, counter, nonce), little-endian words as in the RFC's test vectors. */
void fedrun_chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
			   uint32_t out[16]);

#ifdef __cplusplus
}
#endif
#endif
