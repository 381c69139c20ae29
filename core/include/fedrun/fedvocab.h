/* SPDX-License-Identifier: Apache-2.0 */
/* The federated vocabulary of FedNMT (Wang et al. 2021, sec. 2.3): parties
 * that each hold (word, count) pairs learn the order of the joint vocabulary
 * by total count, while the counts stay under Paillier homomorphic
 * encryption. The protocol's roles (parties, key holder, server) run in one
 * process, each touching only what it would receive; fedrun-privacy(7),
 * FEDERATED VOCABULARY, gives the protocol and what each role learns.
 * Needs GMP: without it (configure --without-gmp) every call fails with
 * FEDRUN_EUNSUPPORTED. */
#ifndef FEDRUN_FEDVOCAB_H
#define FEDRUN_FEDVOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One word a party saw (a NUL-terminated byte string, borrowed) and how
 * many times (at least 1). */
struct fedrun_fedvocab_entry {
	const char *word;
	uint64_t count;
};

/* A party's local table: n entries, no word twice (borrowed). */
struct fedrun_fedvocab_party {
	const struct fedrun_fedvocab_entry *entries;
	uint64_t n;
};

/* Caller-owned; fill with fedrun_fedvocab_opts_init, then change fields. */
struct fedrun_fedvocab_opts {
	size_t size;	     /* sizeof the struct as the caller was built */
	uint32_t key_bits;   /* Paillier modulus bits: 2048 (default) .. 8192,
				a multiple of 16; other sizes are refused
				(larger keys take minutes to make) */
	uint32_t key_holder; /* the party that makes the key pair; default 0 */
	uint64_t min_count;  /* words whose total is below it are left out;
				0 or 1 (default): none */
	uint32_t threads;    /* OpenMP threads for the encryptions, the masking
				and the decryptions; 0 (default): OpenMP's
				default (omp_get_max_threads); at most 1024
				are used. The result does not depend on it. */
	/* Asked between the steps of the key generation (before each
	 * primality test) and of the protocol (per word), from the OpenMP
	 * threads too, so it must be thread-safe: when it returns true, the
	 * run gives up, frees what it made and returns FEDRUN_EINTERRUPTED.
	 * For a caller that stops on a signal (fedrun passes the host's
	 * interrupted, ABI 1.8). NULL (default): never. */
	bool (*interrupted)(void *arg);
	void *interrupted_arg;
};

void fedrun_fedvocab_opts_init(struct fedrun_fedvocab_opts *opts);

/* What the server received during one run of the protocol, for audits and
 * tests (fedrun_fedvocab_order fills it when asked; caller-owned struct,
 * arrays owned by it: release with fedrun_fedvocab_transcript_fini).
 * Ciphertexts are ct_len bytes each, big-endian, fixed width. */
struct fedrun_fedvocab_transcript {
	uint32_t key_bits;
	size_t pubkey_len; /* the published key: n (key_bits/8 bytes), then
			      h_n = h^n mod n^2 (2 key_bits/8), big-endian */
	uint8_t *pubkey;
	size_t ct_len;
	uint32_t n_parties;
	uint64_t n_union;   /* words of the public union */
	uint8_t *party_ct;  /* n_parties x n_union ciphertexts: party p's
			       count of union word w at (p n_union + w) ct_len */
	uint64_t n_masked;  /* n_union, plus 1 when min_count > 1 */
	uint8_t *masked_ct; /* n_masked ciphertexts the server sent the key
			       holder (masked, re-randomised, shuffled) */
	uint64_t *ranks;    /* n_masked dense ranks the key holder sent back
			       (0: the largest), in the shuffled order */
};

void fedrun_fedvocab_transcript_fini(struct fedrun_fedvocab_transcript *tr);

/* Runs the protocol among n_parties >= 1 parties. *words_out gets the words
 * of the union whose total count is at least opts->min_count, ordered by
 * total count descending and ties by byte order (strcmp): the order the
 * plaintext totals give. *words_out is a new array of *n_out new strings
 * (free with fedrun_fedvocab_words_free). opts NULL: the defaults. tr may
 * be NULL; otherwise it is filled (its old contents are not freed).
 * Errors: FEDRUN_EINVAL naming the party and word (a duplicate word, a count
 * of 0, a key holder that is no party, a key under 2048 or over 8192 bits),
 * FEDRUN_EUNSUPPORTED without GMP, FEDRUN_EIO when getrandom(2) fails,
 * FEDRUN_EINTERRUPTED when opts->interrupted says so, FEDRUN_ENOMEM. */
int fedrun_fedvocab_order(const struct fedrun_fedvocab_party *parties, uint32_t n_parties,
			  const struct fedrun_fedvocab_opts *opts, char ***words_out,
			  uint64_t *n_out, struct fedrun_fedvocab_transcript *tr);

void fedrun_fedvocab_words_free(char **words, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
