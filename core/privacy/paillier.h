/* SPDX-License-Identifier: Apache-2.0 */
/* Paillier's additively homomorphic encryption (Paillier 1999) on GMP, for
 * the federated vocabulary (fedvocab.c). g = n + 1 and the short-exponent
 * randomizer of Damgard, Jurik and Nielsen (2010, sec. 4.1): E(m; a) =
 * (1 + m n) h_n^a mod n^2 with h_n = h^n mod n^2 public and a of ceil(k/2)
 * bits, h_n^a from a fixed-base table (struct paillier_enc); decryption by
 * the Chinese remainder theorem over p^2 and q^2. Internal to libfedrun;
 * built only when configure found GMP. */
#ifndef FEDRUN_PAILLIER_H
#define FEDRUN_PAILLIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gmp.h>

/* The smallest modulus paillier_keygen accepts: 2048 bits (112-bit security,
 * NIST SP 800-57 part 1, table 2). The largest: 8192 bits, the largest
 * size whose key and protocol complete within a minute on one core (about
 * 20 s; 12288 bits took 87 s and 16384 bits more than five minutes, as
 * fedrun-privacy(7), Cost, records). */
#define PAILLIER_MIN_BITS 2048u
#define PAILLIER_MAX_BITS 8192u

/* The public key: what the key holder publishes (n and h_n). */
struct paillier_pub {
	uint32_t bits; /* of n, exactly */
	mpz_t n, n2;   /* n = p q and n^2 */
	mpz_t hn;      /* h^n mod n^2 for h = -x^2 mod n, x random in Z*_n */
};

/* What encrypting under a public key needs beyond it: the fixed-base table
 * of h_n (DJN's randomizer), built once per key by whoever encrypts.
 * table[i 255 + j - 1] = h_n^(j 2^(8 i)) mod n^2 for i < windows and j in
 * 1 .. 255 (j = 0 is 1, not stored), so h_n^a is one product per nonzero
 * byte of a: at most `windows` multiplications modulo n^2. Read-only once
 * built: threads may encrypt with one table at once. */
struct paillier_enc {
	const struct paillier_pub *pub; /* borrowed; outlives the table */
	uint32_t alpha_bits;		/* ceil(bits / 2): a in [0, 2^alpha_bits) */
	uint32_t windows;		/* ceil(alpha_bits / 8) */
	mpz_t *table;			/* windows x 255 */
};

/* The secret key, with what CRT decryption needs. */
struct paillier_priv {
	mpz_t p, q, p2, q2;
	mpz_t hp, hq; /* L_p(g^(p-1) mod p^2)^-1 mod p, and the same for q */
	mpz_t qinv;   /* q^-1 mod p */
};

/* A way to stop a long computation (a key generation, a table): fn(arg)
 * is asked between steps, from any thread, and returns true when the caller
 * wants the work given up (a signal came). A NULL struct or fn: never. */
struct paillier_stop {
	bool (*fn)(void *arg);
	void *arg;
};
bool paillier_stopped(const struct paillier_stop *stop);

/* A key pair with an n of exactly `bits` bits (even, 2048 .. 8192), primes
 * from getrandom(2). Both structs are initialised here; release them with
 * _fini. FEDRUN_EINVAL for a smaller, larger or odd size, FEDRUN_EIO when the
 * system's random source fails, FEDRUN_EINTERRUPTED (both structs released)
 * when `stop` says so: it is asked before each primality test, a few
 * milliseconds apart at 2048 bits, well under a second at 8192. `what`
 * prefixes the messages. */
int paillier_keygen(uint32_t bits, const char *what, const struct paillier_stop *stop,
		    struct paillier_pub *pub, struct paillier_priv *priv);
/* The same for any size from 256 bits, a multiple of 16: for the tests
 * only, which need many keys quickly. Nothing outside tests/ may call it. */
int paillier_keygen_unchecked(uint32_t bits, const char *what, const struct paillier_stop *stop,
			      struct paillier_pub *pub, struct paillier_priv *priv);
void paillier_pub_fini(struct paillier_pub *pub);
/* Bytes of an exported public key: n (bits/8), then h_n (2 bits/8),
 * big-endian, fixed width. */
size_t paillier_pub_bytes(uint32_t bits);
void paillier_pub_export(const struct paillier_pub *pub, uint8_t *buf);
/* Initialises pub from paillier_pub_bytes(bits) bytes; FEDRUN_EFORMAT naming
 * `what` when they hold no such key (n not odd of exactly `bits` bits, h_n
 * not a unit below n^2). */
int paillier_pub_import(const uint8_t *buf, uint32_t bits, const char *what,
			struct paillier_pub *pub);

/* Builds enc's table for pub (borrowed: it must outlive enc), with up to
 * `threads` OpenMP threads (0: the default); release with
 * paillier_enc_fini. FEDRUN_ENOMEM, FEDRUN_EINTERRUPTED when `stop` says so
 * (asked once per window; nothing to release then). */
int paillier_enc_init(struct paillier_enc *enc, const struct paillier_pub *pub, uint32_t threads,
		      const struct paillier_stop *stop);
void paillier_enc_fini(struct paillier_enc *enc);
/* Bytes the table's limbs take (for the record; GMP's headers aside). */
size_t paillier_enc_table_bytes(const struct paillier_enc *enc);
/* Overwrites every limb of the secret key before freeing it. */
void paillier_priv_fini(struct paillier_priv *priv);
/* Overwrites x's limbs, then clears it: for secrets and plaintexts. */
void paillier_mpz_wipe(mpz_t x);

/* c = E(m) = (1 + m n) h_n^a mod n^2 for a fresh a uniform in
 * [0, 2^alpha_bits) from getrandom(2); m in [0, n) (FEDRUN_EINVAL
 * otherwise). c must be initialised. Thread-safe (own temporaries). */
int paillier_encrypt(const struct paillier_enc *enc, const mpz_t m, mpz_t c);
/* The same with a given a in [0, 2^alpha_bits) (FEDRUN_EINVAL otherwise):
 * for the tests, which check it against mpz_powm. */
int paillier_encrypt_alpha(const struct paillier_enc *enc, const mpz_t m, const mpz_t alpha,
			   mpz_t c);
/* out = h_n^a mod n^2 for a fresh a, as in paillier_encrypt. */
int paillier_random_hna(const struct paillier_enc *enc, mpz_t out);
/* m = D(c), in [0, n). */
void paillier_decrypt(const struct paillier_pub *pub, const struct paillier_priv *priv,
		      const mpz_t c, mpz_t m);
/* m = D(c) mod p: half of paillier_decrypt's work, for a key holder that
 * needs only residues (see holder_rank in fedvocab.c). */
void paillier_decrypt_mod_p(const struct paillier_priv *priv, const mpz_t c, mpz_t m);
/* c = E(D(a) + D(b)): a b mod n^2. c may alias a or b. */
void paillier_add(const struct paillier_pub *pub, mpz_t c, const mpz_t a, const mpz_t b);
/* c = E(D(a) + k) for a plaintext k in [0, n): a (1 + k n) mod n^2. */
void paillier_add_plain(const struct paillier_pub *pub, mpz_t c, const mpz_t a, const mpz_t k);
/* c = E(k D(a)) for a plaintext k >= 0: a^k mod n^2. */
void paillier_mul_plain(const struct paillier_pub *pub, mpz_t c, const mpz_t a, const mpz_t k);
/* c = E(-D(a) mod n): a^-1 mod n^2. */
void paillier_neg(const struct paillier_pub *pub, mpz_t c, const mpz_t a);
/* c = a h_n^r mod n^2 for a fresh short r: the same plaintext, a
 * ciphertext that cannot be linked to a. c may alias a. */
int paillier_rerandomize(const struct paillier_enc *enc, mpz_t c, const mpz_t a);

/* A uniform integer in [0, bound) from getrandom(2) (rejection sampling, no
 * bias); bound > 0. */
int paillier_random_below(mpz_t out, const mpz_t bound);

/* Bytes of a serialised ciphertext: fixed width, big-endian, so that the
 * length says nothing of the value. */
size_t paillier_ct_bytes(const struct paillier_pub *pub);
void paillier_ct_export(const struct paillier_pub *pub, const mpz_t c, uint8_t *buf);
/* FEDRUN_EFORMAT naming `what` when the bytes are no ciphertext (not in
 * [1, n^2) or not prime to n). */
int paillier_ct_import(const struct paillier_pub *pub, const uint8_t *buf, const char *what,
		       mpz_t c);

#endif
