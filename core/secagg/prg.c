/* SPDX-License-Identifier: Apache-2.0 */
/* Key agreement, key derivation and mask expansion. Every mask is the
 * ChaCha20 keystream under a 32-byte key derived by BLAKE2b from the full
 * X25519 shared secret (or the full self-mask seed): the masks range over
 * the whole keystream space, unlike an expansion seeded with a 32-bit fold
 * of the secret, whose 2^32 possible masks a server could try one by one. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "fedrun/error.h"
#include "internal.h"

int secagg_agree(uint8_t out[32], const uint8_t sk[32], const uint8_t pk[32])
{
	/* libsodium refuses a public key whose product is the identity. */
	if (crypto_scalarmult(out, sk, pk) != 0)
		return fedrun_error(FEDRUN_EINVAL, "secagg: a public key of small order");
	return 0;
}

bool secagg_key_ok(const uint8_t pk[32])
{
	/* crypto_scalarmult clamps the scalar to a multiple of 8, so a point
	 * of order 1, 2, 4 or 8 (the whole small subgroup) gives the
	 * identity, which it refuses; any other key gives a point. */
	static const uint8_t probe[32] = {9};
	uint8_t out[32];
	const bool ok = crypto_scalarmult(out, probe, pk) == 0;
	sodium_memzero(out, sizeof out);
	return ok;
}

void secagg_kdf(uint8_t out[32], const char *label, uint32_t round, const uint8_t secret[32],
		const uint8_t *pk_a, const uint8_t *pk_b)
{
	crypto_generichash_state st;
	uint8_t r[4] = {(uint8_t)round, (uint8_t)(round >> 8), (uint8_t)(round >> 16),
			(uint8_t)(round >> 24)};
	crypto_generichash_init(&st, NULL, 0, 32);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label) + 1);
	crypto_generichash_update(&st, r, sizeof r);
	crypto_generichash_update(&st, secret, 32);
	if (pk_a && pk_b) {
		const bool swap = memcmp(pk_a, pk_b, 32) > 0;
		crypto_generichash_update(&st, swap ? pk_b : pk_a, 32);
		crypto_generichash_update(&st, swap ? pk_a : pk_b, 32);
	}
	crypto_generichash_final(&st, out, 32);
	sodium_memzero(&st, sizeof st);
}

/* The keystream is ChaCha20 over zeros: libsodium's only ChaCha20 call that
 * takes an initial block counter encrypts a message. */
enum { CHUNK = 1024 };		       /* elements a chunk */
static const uint8_t zeros[CHUNK * 8]; /* the largest chunk: 8-byte elements */

void secagg_keystream(const uint8_t key[32], uint32_t block, uint8_t *out, size_t len)
{
	static const uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES];
	crypto_stream_chacha20_ietf_xor_ic(out, zeros, len, nonce, block, key);
}

/* acc[j] += or -= the m little-endian words of type T at ks. */
#define PRG_WORDS(T)                                                                               \
	static void add_##T(uint64_t *acc, const uint8_t *ks, uint64_t m, int sign)                \
	{                                                                                          \
		T v;                                                                               \
		if (sign > 0)                                                                      \
			for (uint64_t j = 0; j < m; j++) {                                         \
				memcpy(&v, ks + j * sizeof v, sizeof v);                           \
				acc[j] += v;                                                       \
			}                                                                          \
		else                                                                               \
			for (uint64_t j = 0; j < m; j++) {                                         \
				memcpy(&v, ks + j * sizeof v, sizeof v);                           \
				acc[j] -= v;                                                       \
			}                                                                          \
	}
PRG_WORDS(uint32_t)
PRG_WORDS(uint64_t)

void secagg_masks_apply(const struct secagg_masks *m, uint64_t *acc, uint64_t n, uint32_t bits)
{
	/* CHUNK elements a chunk: CHUNK ceil(bits/8) bytes, a whole number of
	 * 64-byte blocks. Elements of 4 and 8 bytes (bits 25 to 32 and 57 to
	 * 64) are added as native words on a little-endian host, the others
	 * unpacked; bits above `bits` go when the sum is read (acc is summed
	 * modulo 2^64, of which 2^bits is a divisor). */
	const uint32_t nb = secagg_ring_bytes(bits);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const bool native = nb == 4 || nb == 8;
#else
	const bool native = false;
#endif
	const size_t bytes = (size_t)CHUNK * nb;
	uint8_t ks[CHUNK * 8];
	uint64_t e[CHUNK];
	for (uint64_t i = 0; i < n; i += CHUNK) {
		const uint64_t c = n - i < CHUNK ? n - i : CHUNK;
		const uint32_t block = (uint32_t)(i / CHUNK * (bytes / 64));
		for (uint32_t k = 0; k < m->n; k++) {
			secagg_keystream(m->key[k], block, ks, bytes);
			if (native && nb == 4) {
				add_uint32_t(acc + i, ks, c, m->sign[k]);
			} else if (native && nb == 8) {
				add_uint64_t(acc + i, ks, c, m->sign[k]);
			} else {
				secagg_ring_unpack(bits, ks, c, e);
				for (uint64_t j = 0; j < c; j++)
					acc[i + j] += m->sign[k] > 0 ? e[j] : -e[j];
			}
		}
	}
	sodium_memzero(ks, sizeof ks);
}

static int masks_add(struct secagg_masks *m, const uint8_t key[32], int sign)
{
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 16;
		uint8_t(*k)[32] = malloc((size_t)cap * 32);
		int8_t *s = realloc(m->sign, cap);
		if (!k || !s) {
			free(k);
			if (s)
				m->sign = s;
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		if (m->n) { /* moved by hand, so that the old copy is wiped */
			memcpy(k, m->key, (size_t)m->n * 32);
			sodium_memzero(m->key, (size_t)m->n * 32);
		}
		free(m->key);
		m->key = k;
		m->sign = s;
		m->cap = cap;
	}
	memcpy(m->key[m->n], key, 32);
	m->sign[m->n++] = (int8_t)sign;
	return 0;
}

void secagg_masks_fini(struct secagg_masks *m)
{
	if (m->key)
		sodium_memzero(m->key, (size_t)m->n * 32);
	free(m->key);
	free(m->sign);
	memset(m, 0, sizeof *m);
}

void secagg_commit(uint8_t out[32], uint32_t round, uint32_t id, const uint8_t b[32])
{
	uint8_t who[32] = {0};
	for (int i = 0; i < 4; i++)
		who[i] = (uint8_t)(id >> (8 * i));
	/* H(label, round, b, id): the id as a second "public key" */
	secagg_kdf(out, "fedrun-secagg-commit", round, b, who, who);
}

int secagg_masks_pair(struct secagg_masks *m, const struct secagg_params *p, uint32_t u, uint32_t v,
		      const uint8_t sk[32], const uint8_t pk_other[32], const uint8_t pk_u[32],
		      const uint8_t pk_v[32], int sign)
{
	uint8_t shared[32], key[32];
	int rc = secagg_agree(shared, sk, pk_other);
	if (rc < 0)
		return rc;
	secagg_kdf(key, "fedrun-secagg-pair-mask", p->round, shared, pk_u, pk_v);
	rc = masks_add(m, key, sign * secagg_pair_sign(u, v));
	sodium_memzero(shared, sizeof shared);
	sodium_memzero(key, sizeof key);
	return rc;
}

int secagg_masks_self(struct secagg_masks *m, const struct secagg_params *p, const uint8_t b[32],
		      int sign)
{
	uint8_t key[32];
	secagg_kdf(key, "fedrun-secagg-self-mask", p->round, b, NULL, NULL);
	int rc = masks_add(m, key, sign);
	sodium_memzero(key, sizeof key);
	return rc;
}
