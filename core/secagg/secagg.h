/* SPDX-License-Identifier: Apache-2.0 */
/* Secure aggregation: the server learns the sum of a round's inputs and
 * nothing else about any one of them, even when clients drop out mid-round.
 * SecAgg (Bonawitz et al. 2017, "Practical Secure Aggregation for
 * Privacy-Preserving Machine Learning", CCS, Fig. 4: its semi-honest
 * protocol) and SecAgg+ (Bell et al. 2020, "Secure Single-Server
 * Aggregation with (Poly)Logarithmic Overhead", CCS, sec. 3, Alg. 2: the
 * same rounds over a sparse neighbour graph). Four stages, each a message
 * from every surviving client to the server and one back:
 *
 *   ADVERTISE  client -> server: two X25519 public keys (c_u^PK for the
 *              shares' encryption, s_u^PK for the pairwise masks)
 *   SHARE      server -> client: its neighbours' keys; client -> server:
 *              Shamir shares of s_u^SK and of the self-mask seed b_u,
 *              one XChaCha20-Poly1305 ciphertext per neighbour
 *   MASKED     server -> client: the ciphertexts addressed to it; client
 *              -> server: y_u = x_u + PRG(b_u) + sum of pairwise masks
 *   UNMASK     server -> client: which neighbours survived and which
 *              dropped; client -> server: a b share of each survivor, an
 *              s^SK share of each dropped client (never both of one)
 *
 * Internal to libfedrun (the engine runs it; nothing here is exported).
 * Every message is a serialized buffer (malloc'd, freed by the caller), so
 * a transport can later carry the same bytes. Clients are numbered 0 ..
 * n - 1 within a round. */
#ifndef FEDRUN_SECAGG_H
#define FEDRUN_SECAGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The ring Z_{2^bits} of the inputs. */
#define SECAGG_MIN_BITS 8u
#define SECAGG_MAX_BITS 64u

enum secagg_graph_kind {
	SECAGG_COMPLETE = 0, /* SecAgg: every client is every other's neighbour */
	SECAGG_SPARSE = 1    /* SecAgg+: a Harary graph on a public random permutation */
};

/* The stages, in order (what a message's header names). */
enum secagg_stage {
	SECAGG_ADVERTISE = 1,
	SECAGG_SHARE = 2,
	SECAGG_MASKED = 3,
	SECAGG_UNMASK = 4,
	SECAGG_DONE = 5
};

/* What every party of a round agrees on before it starts (public). */
struct secagg_params {
	uint32_t n;	     /* clients of the round: ids 0 .. n-1 */
	uint32_t threshold;  /* t: shares that recover a secret */
	uint32_t num_shares; /* shares of each secret, the owner's own included
				(its neighbours + 1); n for the complete graph */
	uint32_t graph;	     /* enum secagg_graph_kind */
	uint32_t bits;	     /* k of the ring Z_{2^k} */
	uint64_t dim;	     /* ring elements of an input */
	uint32_t round;	     /* binds keys, masks and messages to the round */
	uint64_t seed;	     /* public: draws the sparse graph */
};

/* Checks params: n >= 2, bits in [8, 64], dim >= 1, num_shares odd in
 * [3, n] for a sparse graph and n for the complete one, threshold in
 * (num_shares / 2, num_shares] (with half or less, a server that tells
 * two halves of a neighbourhood different survivor sets would get t
 * shares of both secrets of a client; Bonawitz et al. 2017 likewise
 * require the threshold above n/2). Returns 0 or FEDRUN_EINVAL naming the
 * value. */
int secagg_params_check(const struct secagg_params *p);

/* SecAgg+'s default num_shares for a round of n clients: 2 ceil(log2 n)
 * neighbours and self (Bell et al. 2020, sec. 3: a neighbourhood of
 * O(log n) clients suffices), odd, at most n (n - 1 when n is even). */
uint32_t secagg_default_shares(uint32_t n);

/* Bytes of one packed input: dim elements of ceil(bits / 8) bytes. */
uint64_t secagg_input_bytes(const struct secagg_params *p);

/* ---- quantisation (ring.c) --------------------------------------------- */

/* Fixed point on the ring: a float x becomes round(clamp(x, -clip, clip) ·
 * scale), times the client's integer weight w, modulo 2^bits. scale is the
 * largest power of two with cap · wmax <= 2^(bits-1) - 1, cap =
 * round(clip · scale) the largest |round(x · scale)| of a clamped x and wmax
 * a bound on the sum of the round's weights: a sum of weighted inputs of
 * total weight at most wmax lies in [-cap · wmax, cap · wmax] and never
 * wraps (checked in integers). A power of two so that integers (and any
 * float that is a multiple of 1/scale) quantise exactly. */
struct secagg_quant {
	uint32_t bits;
	double clip;
	uint64_t wmax;
	double scale;
	int64_t cap; /* round(clip · scale): no |encoded value| / w exceeds it */
};

/* Sets up q; FEDRUN_EINVAL when bits is out of range, clip not positive
 * and finite, wmax 0 or at least 2^(bits-1), or the scale leaves clip
 * below one step (every value would round to 0). */
int secagg_quant_init(struct secagg_quant *q, uint32_t bits, double clip, uint64_t wmax);
/* out[i] = w · round(clamp(x[i])) mod 2^bits for i < n (x finite). */
void secagg_quant_encode(const struct secagg_quant *q, uint64_t w, const float *x, uint64_t n,
			 uint64_t *out);
/* A ring sum as a real number: its value in [-2^(bits-1), 2^(bits-1))
 * divided by scale. */
double secagg_quant_decode(const struct secagg_quant *q, uint64_t s);
/* The quantisation error's bound on a weighted mean Σ w_k x_k / Σ w_k of
 * inputs inside [-clip, clip]: 1 / (2 scale) (each rounding is at most
 * half a step, and a weighted mean of errors is at most their largest). */
double secagg_quant_bound(const struct secagg_quant *q);

/* ---- a client ------------------------------------------------------------ */

struct secagg_client;

/* A client `id` of a round; its secrets come from the operating system's
 * CSPRNG (libsodium's randombytes). */
int secagg_client_create(const struct secagg_params *p, uint32_t id, struct secagg_client **out);
/* The same with every secret drawn from a deterministic stream of `seed`:
 * INSECURE, for tests that must reproduce a round, never for a run. */
int secagg_client_create_insecure_test(const struct secagg_params *p, uint32_t id, uint64_t seed,
				       struct secagg_client **out);
/* Wipes the client's secrets and frees it (NULL is fine). */
void secagg_client_destroy(struct secagg_client *c);

/* Each stage takes the server's message (none for the first) and makes the
 * client's own (*msg, *len: malloc'd). A call out of order, a malformed
 * message or one that breaks the protocol's rules is refused with
 * FEDRUN_EINVAL (or FEDRUN_ESTATE) and a message; the client then answers
 * nothing more this round. */
int secagg_client_advertise(struct secagg_client *c, void **msg, size_t *len);
int secagg_client_share(struct secagg_client *c, const void *keys, size_t keys_len, void **msg,
			size_t *len);
/* x: dim ring elements, the input; the masks are added to it in place
 * (it holds the masked input on return, and is not to be reused). */
int secagg_client_mask(struct secagg_client *c, const void *cts, size_t cts_len, uint64_t *x,
		       void **msg, size_t *len);
/* Answers one unmasking request, at most once a round: a request that
 * names a client as both survivor and dropped, names anyone outside the
 * neighbours whose shares it holds, leaves the client itself out or comes
 * a second time is refused, and nothing is revealed. */
int secagg_client_unmask(struct secagg_client *c, const void *req, size_t req_len, void **msg,
			 size_t *len);

/* ---- the server ---------------------------------------------------------- */

struct secagg_server;

int secagg_server_create(const struct secagg_params *p, struct secagg_server **out);
void secagg_server_destroy(struct secagg_server *s);

/* Takes one client message of the current stage (a masked input is added
 * to the running sum at once: memory does not grow with the clients).
 * A message of another stage, from a client that may not send it, a
 * second one from the same client or a malformed one is refused. */
int secagg_server_receive(struct secagg_server *s, const void *msg, size_t len);
/* Ends the current stage: the clients that sent nothing are dropped; fewer
 * than threshold survivors fail the round with a message naming the
 * stage. */
int secagg_server_close(struct secagg_server *s);
/* The server's message to client u for the stage that follows the one
 * just closed (its neighbours' keys, the ciphertexts addressed to it, the
 * unmasking request); FEDRUN_EINVAL when u did not survive that stage. */
int secagg_server_message(struct secagg_server *s, uint32_t u, void **msg, size_t *len);
/* After the unmasking stage is closed: reconstructs the survivors'
 * self-mask seeds and the dropped clients' mask keys, removes every mask
 * and writes the sum of the survivors' inputs modulo 2^bits into
 * out[0 .. dim). A secret with fewer than threshold shares, or whose
 * reconstruction does not match what its owner committed to, fails the
 * round: never a wrong sum. */
int secagg_server_sum(struct secagg_server *s, uint64_t *out);
/* The stage the server expects messages of (enum secagg_stage). */
int secagg_server_stage(const struct secagg_server *s);
/* Whether client u's input is in the sum (it survived MASKED); valid once
 * that stage is closed. */
bool secagg_server_included(const struct secagg_server *s, uint32_t u);

#endif
