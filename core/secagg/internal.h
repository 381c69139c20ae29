/* SPDX-License-Identifier: Apache-2.0 */
/* The parts of secure aggregation that the client and the server share:
 * randomness, ring packing, Shamir sharing, the neighbour graph, key
 * derivation and mask expansion, and the messages' byte layout. Internal
 * to core/secagg/ (and its test). */
#ifndef FEDRUN_SECAGG_INTERNAL_H
#define FEDRUN_SECAGG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gmp.h>
#include "secagg.h"

/* ---- rand.c: where secrets come from ------------------------------------ */

/* libsodium's sodium_init, once; FEDRUN_EUNSUPPORTED when it fails. */
int secagg_sodium_init(void);

struct secagg_rand {
	bool insecure;	 /* a test's deterministic stream */
	uint8_t key[32]; /* insecure: the stream's key */
	uint64_t counter;
};

/* The operating system's CSPRNG (randombytes_buf). */
int secagg_rand_init(struct secagg_rand *r);
/* A deterministic stream of (seed, stream): INSECURE, tests only. */
void secagg_rand_init_insecure_test(struct secagg_rand *r, uint64_t seed, uint64_t stream);
void secagg_rand_bytes(struct secagg_rand *r, void *out, size_t n);
void secagg_rand_fini(struct secagg_rand *r);

/* ---- ring.c: elements of Z_{2^bits} on the wire ------------------------- */

static inline uint64_t secagg_ring_mask(uint32_t bits)
{
	return bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
}

static inline uint32_t secagg_ring_bytes(uint32_t bits)
{
	return (bits + 7) / 8;
}

/* n elements as ceil(bits/8) little-endian bytes each, and back (masked). */
void secagg_ring_pack(uint32_t bits, const uint64_t *x, uint64_t n, uint8_t *out);
void secagg_ring_unpack(uint32_t bits, const uint8_t *in, uint64_t n, uint64_t *x);

/* ---- shamir.c: t-of-n sharing of 32-byte secrets ------------------------ */

/* Shares live in GF(p), p = 2^256 + 297 (the smallest prime above 2^256,
 * so that every 32-byte secret is a field element): 33 bytes each. */
#define SECAGG_SHARE_BYTES 33u

struct secagg_shamir {
	mpz_t p;
	/* The Lagrange coefficients at 0 of the last set of points combined:
	 * a round with the same survivors reuses them for every secret. */
	uint32_t nl;
	uint32_t *lx;
	mpz_t *lambda;
	mpz_t tmp, acc;
};

int secagg_shamir_init(struct secagg_shamir *s);
void secagg_shamir_fini(struct secagg_shamir *s);
/* Shamir (1979): a random polynomial f of degree t-1 over GF(p) with
 * f(0) = secret (32 bytes, big-endian); shares[i] = f(xs[i]) for the n
 * distinct points xs[i] in [1, 2^32). */
int secagg_shamir_split(struct secagg_shamir *s, const uint8_t secret[32], uint32_t t,
			const uint32_t *xs, uint32_t n, struct secagg_rand *r,
			uint8_t (*shares)[SECAGG_SHARE_BYTES]);
/* f(0) by Lagrange interpolation from the first t of the n shares (points
 * distinct); FEDRUN_EINVAL when n < t, and when f(0) is not a 32-byte value
 * (the shares are not of one secret). */
int secagg_shamir_combine(struct secagg_shamir *s, uint32_t t, const uint32_t *xs,
			  const uint8_t (*shares)[SECAGG_SHARE_BYTES], uint32_t n,
			  uint8_t secret[32]);

/* ---- graph.c: who shares with whom -------------------------------------- */

struct secagg_graph {
	uint32_t n;
	uint32_t half; /* sparse: neighbours on each side of the ring */
	bool complete;
	uint32_t *perm; /* sparse: place on the ring -> client */
	uint32_t *pos;	/* sparse: client -> place */
};

int secagg_graph_init(struct secagg_graph *g, const struct secagg_params *p);
void secagg_graph_fini(struct secagg_graph *g);
/* Whether u and v (u != v) are neighbours. */
bool secagg_graph_linked(const struct secagg_graph *g, uint32_t u, uint32_t v);
/* u's neighbours, ascending, into out (room for degree entries); returns
 * how many. */
uint32_t secagg_graph_neighbours(const struct secagg_graph *g, uint32_t u, uint32_t *out);
uint32_t secagg_graph_degree(const struct secagg_graph *g);

/* ---- prg.c: key agreement, key derivation, masks ------------------------ */

/* Whether pk is an X25519 key outside the small subgroup (one inside it
 * agrees with any key on the identity: a secret everyone knows). */
bool secagg_key_ok(const uint8_t pk[32]);
/* X25519 (RFC 7748) of our secret and their public key; FEDRUN_EINVAL for
 * a public key of small order (an all-zero secret). */
int secagg_agree(uint8_t out[32], const uint8_t sk[32], const uint8_t pk[32]);
/* A 32-byte key: BLAKE2b-256 of a label, the round, a secret and the two
 * public keys that made it (in ascending byte order, so that both ends
 * derive the same key); pk_a, pk_b may be NULL. */
void secagg_kdf(uint8_t out[32], const char *label, uint32_t round, const uint8_t secret[32],
		const uint8_t *pk_a, const uint8_t *pk_b);
/* len bytes (a multiple of 64) of the ChaCha20 keystream (RFC 8439,
 * the IETF variant, nonce 0) under key from block `block` on. */
void secagg_keystream(const uint8_t key[32], uint32_t block, uint8_t *out, size_t len);

/* ---- wire.c: messages --------------------------------------------------- */

/* Every message: "FSA1", stage, round, sender (UINT32_MAX: the server),
 * each a little-endian u32 after the magic. */
#define SECAGG_HEADER_BYTES 16u
#define SECAGG_SERVER UINT32_MAX

struct secagg_wbuf {
	uint8_t *p;
	size_t len, cap;
	bool nomem;
};

void secagg_wb_header(struct secagg_wbuf *w, uint32_t stage, uint32_t round, uint32_t sender);
void secagg_wb_u32(struct secagg_wbuf *w, uint32_t v);
void secagg_wb_bytes(struct secagg_wbuf *w, const void *p, size_t n);
/* Room for n more bytes, returned for the caller to fill (NULL: no memory). */
uint8_t *secagg_wb_reserve(struct secagg_wbuf *w, size_t n);
/* Hands the buffer over (*msg, *len), or frees it and fails on ENOMEM. */
int secagg_wb_finish(struct secagg_wbuf *w, void **msg, size_t *len);

struct secagg_rbuf {
	const uint8_t *p;
	size_t len, pos;
	bool bad; /* read past the end */
};

/* Reads a header; FEDRUN_EINVAL unless it is one of `stage` and `round`
 * (what names the message in errors). *sender gets its sender. */
int secagg_rb_header(struct secagg_rbuf *r, const void *msg, size_t len, uint32_t stage,
		     uint32_t round, uint32_t *sender, const char *what);
uint32_t secagg_rb_u32(struct secagg_rbuf *r);
const uint8_t *secagg_rb_bytes(struct secagg_rbuf *r, size_t n);
/* FEDRUN_EINVAL unless everything was read and nothing more is there. */
int secagg_rb_end(const struct secagg_rbuf *r, const char *what);

/* An encrypted pair of shares: a 24-byte nonce, then XChaCha20-Poly1305
 * of from, to (u32 each) and the s^SK and b shares, with its 16-byte tag. */
#define SECAGG_PT_BYTES (8u + 2u * SECAGG_SHARE_BYTES)
#define SECAGG_CT_BYTES (24u + SECAGG_PT_BYTES + 16u)

/* Which share an unmasking answer carries. */
enum { SECAGG_SHARE_B = 0, SECAGG_SHARE_SK = 1 };

/* The commitment to a self-mask seed (sent with the shares; the server
 * checks a reconstructed seed against it). */
void secagg_commit(uint8_t out[32], uint32_t round, uint32_t id, const uint8_t b[32]);
/* The pairwise mask sign of u's input for the pair (u, v): +1 when u < v,
 * -1 otherwise (Bonawitz et al. 2017, sec. 3: the two cancel in a sum). */
static inline int secagg_pair_sign(uint32_t u, uint32_t v)
{
	return u < v ? 1 : -1;
}
/* The masks of an input, added in one pass over it: each the ChaCha20
 * keystream (RFC 8439) under a 32-byte key, read as ceil(bits/8)-byte
 * little-endian elements, with a sign (+1 or -1). */
struct secagg_masks {
	uint32_t n, cap;
	uint8_t (*key)[32];
	int8_t *sign;
};

/* u's mask for the pair (u, v): sign(u, v) · PRG(s_{u,v}), s_{u,v} from
 * X25519 of `sk` (either end's s^SK) and the other end's public key,
 * derived with both public keys; `sign` multiplies it once more (the
 * server removes it with -1). */
int secagg_masks_pair(struct secagg_masks *m, const struct secagg_params *p, uint32_t u, uint32_t v,
		      const uint8_t sk[32], const uint8_t pk_other[32], const uint8_t pk_u[32],
		      const uint8_t pk_v[32], int sign);
/* sign · PRG(b): the self-mask of Bonawitz et al. 2017, sec. 3. */
int secagg_masks_self(struct secagg_masks *m, const struct secagg_params *p, const uint8_t b[32],
		      int sign);
/* acc[i] += Σ_j sign_j PRG(key_j)[i] modulo 2^bits for i < n: chunk by
 * chunk, every mask of a chunk while it is in cache. */
void secagg_masks_apply(const struct secagg_masks *m, uint64_t *acc, uint64_t n, uint32_t bits);
/* Wipes the keys and frees them. */
void secagg_masks_fini(struct secagg_masks *m);

#endif
