/* SPDX-License-Identifier: Apache-2.0 */
/* Key agreement, key derivation and mask expansion. Every mask is the
 * ChaCha20 keystream under a 32-byte key derived by BLAKE2b from the full
 * X25519 shared secret (or the full self-mask seed): the masks range over
 * the whole keystream space, unlike an expansion seeded with a 32-bit fold
 * of the secret, whose 2^32 possible masks a server could try one by one. */
#include "config.h"
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

void secagg_keystream(const uint8_t key[32], uint32_t block, uint8_t *out, size_t len)
{
	static const uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES];
	memset(out, 0, len);
	crypto_stream_chacha20_ietf_xor_ic(out, out, len, nonce, block, key);
}

void secagg_prg_add(uint64_t *acc, uint64_t n, uint32_t bits, const uint8_t key[32], int sign)
{
	/* 1024 elements a chunk: 1024 ceil(bits/8) bytes, a whole number of
	 * 64-byte blocks. */
	enum { CHUNK = 1024 };
	const uint32_t nb = secagg_ring_bytes(bits);
	uint8_t ks[CHUNK * 8];
	uint64_t e[CHUNK];
	uint32_t block = 0;
	for (uint64_t i = 0; i < n; i += CHUNK) {
		const uint64_t m = n - i < CHUNK ? n - i : CHUNK;
		const size_t bytes = (size_t)CHUNK * nb;
		secagg_keystream(key, block, ks, bytes);
		block += (uint32_t)(bytes / 64);
		secagg_ring_unpack(bits, ks, m, e);
		if (sign > 0)
			for (uint64_t j = 0; j < m; j++)
				acc[i + j] += e[j];
		else
			for (uint64_t j = 0; j < m; j++)
				acc[i + j] -= e[j];
	}
	sodium_memzero(ks, sizeof ks);
}

void secagg_commit(uint8_t out[32], uint32_t round, uint32_t id, const uint8_t b[32])
{
	uint8_t who[32] = {0};
	for (int i = 0; i < 4; i++)
		who[i] = (uint8_t)(id >> (8 * i));
	/* H(label, round, b, id): the id as a second "public key" */
	secagg_kdf(out, "fedrun-secagg-commit", round, b, who, who);
}

int secagg_pair_mask(uint64_t *acc, const struct secagg_params *p, uint32_t u, uint32_t v,
		     const uint8_t sk[32], const uint8_t pk_other[32], const uint8_t pk_u[32],
		     const uint8_t pk_v[32], int sign)
{
	uint8_t shared[32], key[32];
	int rc = secagg_agree(shared, sk, pk_other);
	if (rc < 0)
		return rc;
	secagg_kdf(key, "fedrun-secagg-pair-mask", p->round, shared, pk_u, pk_v);
	secagg_prg_add(acc, p->dim, p->bits, key, sign * secagg_pair_sign(u, v));
	sodium_memzero(shared, sizeof shared);
	sodium_memzero(key, sizeof key);
	return 0;
}

void secagg_self_mask(uint64_t *acc, const struct secagg_params *p, const uint8_t b[32], int sign)
{
	uint8_t key[32];
	secagg_kdf(key, "fedrun-secagg-self-mask", p->round, b, NULL, NULL);
	secagg_prg_add(acc, p->dim, p->bits, key, sign);
	sodium_memzero(key, sizeof key);
}
