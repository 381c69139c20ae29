/* SPDX-License-Identifier: Apache-2.0 */
/* ChaCha20 (RFC 8439) as a keystream generator keyed from getrandom(2), and
 * the uniform, Gaussian and Laplace draws privacy noise is built from (see
 * fedrun/csprng.h). */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/random.h>
#include "fedrun/csprng.h"
#include "fedrun/error.h"

static inline uint32_t rotl32(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

/* The quarter round of RFC 8439 section 2.1, one line per step pair. */
/* clang-format off */
#define QR(a, b, c, d)                                                          \
	do {                                                                    \
		a += b; d ^= a; d = rotl32(d, 16);                              \
		c += d; b ^= c; b = rotl32(b, 12);                              \
		a += b; d ^= a; d = rotl32(d, 8);                               \
		c += d; b ^= c; b = rotl32(b, 7);                               \
	} while (0)
/* clang-format on */

void fedrun_chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
			   uint32_t out[16])
{
	/* "expand 32-byte k", key, counter, nonce (section 2.3). */
	/* clang-format off */
	uint32_t s[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574,
			  key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
			  counter, nonce[0], nonce[1], nonce[2]};
	/* clang-format on */
	uint32_t x[16];
	memcpy(x, s, sizeof x);
	for (int i = 0; i < 10; i++) { /* 20 rounds: column then diagonal */
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++)
		out[i] = x[i] + s[i];
}

int fedrun_getrandom(void *buf, size_t n)
{
	unsigned char *p = buf;
	while (n > 0) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return fedrun_error(FEDRUN_EIO, "getrandom: %s", strerror(errno));
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

static uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void fedrun_csprng_init_key(struct fedrun_csprng *g, const uint8_t key[32], const uint8_t nonce[12],
			    uint32_t counter)
{
	memset(g, 0, sizeof *g);
	for (int i = 0; i < 8; i++)
		g->key[i] = load_le32(key + 4 * i);
	for (int i = 0; i < 3; i++)
		g->nonce[i] = load_le32(nonce + 4 * i);
	g->counter = counter;
	g->pos = 16;
}

int fedrun_csprng_init(struct fedrun_csprng *g)
{
	uint8_t key[32];
	static const uint8_t zero[12];
	int rc = fedrun_getrandom(key, sizeof key);
	if (rc < 0)
		return rc;
	fedrun_csprng_init_key(g, key, zero, 0);
	volatile uint8_t *k = key;
	for (size_t i = 0; i < sizeof key; i++)
		k[i] = 0;
	return 0;
}

void fedrun_csprng_fini(struct fedrun_csprng *g)
{
	/* volatile, so that the compiler cannot drop the stores as dead */
	volatile unsigned char *p = (volatile unsigned char *)g;
	for (size_t i = 0; i < sizeof *g; i++)
		p[i] = 0;
}

uint32_t fedrun_csprng_u32(struct fedrun_csprng *g)
{
	if (g->pos >= 16) {
		fedrun_chacha20_block(g->key, g->counter, g->nonce, g->buf);
		if (++g->counter == 0)
			g->nonce[0]++;
		g->pos = 0;
	}
	return g->buf[g->pos++];
}

uint64_t fedrun_csprng_u64(struct fedrun_csprng *g)
{
	uint64_t lo = fedrun_csprng_u32(g);
	return lo | (uint64_t)fedrun_csprng_u32(g) << 32;
}

double fedrun_csprng_uniform(struct fedrun_csprng *g)
{
	/* (k + 1/2)·2^-53 for a 53-bit k: never 0, never 1. */
	return ((double)(fedrun_csprng_u64(g) >> 11) + 0.5) * 0x1p-53;
}

double fedrun_csprng_normal(struct fedrun_csprng *g)
{
	if (g->have_spare) {
		g->have_spare = 0;
		return g->spare;
	}
	double r = sqrt(-2 * log(fedrun_csprng_uniform(g)));
	double t = 2 * M_PI * fedrun_csprng_uniform(g);
	g->spare = r * sin(t);
	g->have_spare = 1;
	return r * cos(t);
}

double fedrun_csprng_laplace(struct fedrun_csprng *g, double b)
{
	uint64_t x = fedrun_csprng_u64(g);
	/* 53 bits for the exponential, one of the 11 others for the sign */
	double u = ((double)(x >> 11) + 0.5) * 0x1p-53;
	double e = -log(u);
	return (x & 1) ? -b * e : b * e;
}
