/* SPDX-License-Identifier: Apache-2.0 */
/* Where secure aggregation's secrets come from: the operating system's
 * CSPRNG through libsodium, or, for tests only, a deterministic stream
 * (so that a test can replay a round and its failures). */
#include "config.h"
#include <string.h>
#include <sodium.h>
#include "fedrun/error.h"
#include "internal.h"

int secagg_sodium_init(void)
{
	/* sodium_init is thread-safe and returns 1 once initialised. */
	if (sodium_init() < 0)
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "secure aggregation: libsodium failed to initialise");
	return 0;
}

int secagg_rand_init(struct secagg_rand *r)
{
	memset(r, 0, sizeof *r);
	return secagg_sodium_init();
}

void secagg_rand_init_insecure_test(struct secagg_rand *r, uint64_t seed, uint64_t stream)
{
	memset(r, 0, sizeof *r);
	r->insecure = true;
	uint8_t in[16];
	for (int i = 0; i < 8; i++) {
		in[i] = (uint8_t)(seed >> (8 * i));
		in[8 + i] = (uint8_t)(stream >> (8 * i));
	}
	crypto_generichash(r->key, sizeof r->key, in, sizeof in, (const uint8_t *)"secagg-test",
			   11);
}

void secagg_rand_bytes(struct secagg_rand *r, void *out, size_t n)
{
	if (!r->insecure) {
		randombytes_buf(out, n);
		return;
	}
	/* Each draw: a fresh seed from (key, counter), expanded by libsodium's
	 * deterministic generator (ChaCha20). */
	uint8_t ctr[8], seed[randombytes_SEEDBYTES];
	for (int i = 0; i < 8; i++)
		ctr[i] = (uint8_t)(r->counter >> (8 * i));
	r->counter++;
	crypto_generichash(seed, sizeof seed, ctr, sizeof ctr, r->key, sizeof r->key);
	randombytes_buf_deterministic(out, n, seed);
	sodium_memzero(seed, sizeof seed);
}

void secagg_rand_fini(struct secagg_rand *r)
{
	sodium_memzero(r, sizeof *r);
}
