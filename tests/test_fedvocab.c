/* SPDX-License-Identifier: Apache-2.0 */
/* The federated vocabulary: Paillier (round trip, homomorphic operations,
 * re-randomisation, serialisation), the protocol's order against the
 * plaintext order on random tables, its refusals, and what its transcript
 * may not hold. Small keys (512 bits) through the internal entry points;
 * one run with the public API's 2048-bit default. */
#include "config.h"
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/fedrun.h"
#include "fedrun/fedvocab.h"
#include "privacy/fedvocab_internal.h"
#include "privacy/paillier.h"

#define TEST_BITS 512u

/* ---- Paillier ---------------------------------------------------------- */

static struct paillier_pub pub;
static struct paillier_priv priv;
static struct paillier_enc enc;

static void key_setup(void)
{
	ck_assert_int_eq(paillier_keygen_unchecked(TEST_BITS, "test", NULL, &pub, &priv), 0);
	ck_assert_uint_eq(mpz_sizeinbase(pub.n, 2), TEST_BITS);
	ck_assert_int_eq(paillier_enc_init(&enc, &pub, 0, NULL), 0);
}

static void key_teardown(void)
{
	paillier_enc_fini(&enc);
	paillier_pub_fini(&pub);
	paillier_priv_fini(&priv);
}

START_TEST(test_roundtrip)
{
	mpz_t m, c, d;
	mpz_inits(m, c, d, NULL);
	for (int i = 0; i < 20; i++) {
		if (i == 0)
			mpz_set_ui(m, 0);
		else if (i == 1)
			mpz_sub_ui(m, pub.n, 1);
		else
			ck_assert_int_eq(paillier_random_below(m, pub.n), 0);
		ck_assert_int_eq(paillier_encrypt(&enc, m, c), 0);
		ck_assert_int_ne(mpz_cmp(c, m), 0);
		paillier_decrypt(&pub, &priv, c, d);
		ck_assert_int_eq(mpz_cmp(m, d), 0);
	}
	/* plaintexts outside [0, n) are refused */
	ck_assert_int_eq(paillier_encrypt(&enc, pub.n, c), FEDRUN_EINVAL);
	mpz_clears(m, c, d, NULL);
}
END_TEST

/* The key is DJN's admissible kind: p, q = 3 (mod 4), gcd(p-1, q-1) = 2,
 * and h = -x^2 outside the squares: mod n, h_n^((p-1)(q-1)/4) =
 * (-1)^(n (p-1)(q-1)/4) (x^2)^(n (p-1)(q-1)/4) = -1, since the exponent is
 * odd and the squares' order (p-1)(q-1)/4 divides it. (For random primes
 * the exponent is mostly even and the power 1.) */
START_TEST(test_admissible)
{
	mpz_t pm, qm, t, e;
	mpz_inits(pm, qm, t, e, NULL);
	ck_assert_uint_eq(mpz_fdiv_ui(priv.p, 4), 3);
	ck_assert_uint_eq(mpz_fdiv_ui(priv.q, 4), 3);
	mpz_sub_ui(pm, priv.p, 1);
	mpz_sub_ui(qm, priv.q, 1);
	mpz_gcd(t, pm, qm);
	ck_assert_int_eq(mpz_cmp_ui(t, 2), 0);
	mpz_mul(e, pm, qm);
	mpz_divexact_ui(e, e, 4);
	mpz_powm(t, pub.hn, e, pub.n2);
	mpz_mod(t, t, pub.n);
	mpz_add_ui(t, t, 1);
	ck_assert_msg(mpz_cmp(t, pub.n) == 0, "h_n^(phi/4) is not -1 mod n: h is a square");
	mpz_clears(pm, qm, t, e, NULL);
}
END_TEST

/* The fixed-base table gives (1 + m n) h_n^a mod n^2 exactly, against
 * mpz_powm, for m = 0, n - 1 and random m and a (a = 0, 1 and 2^k/2 - 1
 * among them), and decrypts to m; the public key survives its export. */
START_TEST(test_fixed_base)
{
	ck_assert_uint_eq(enc.alpha_bits, TEST_BITS / 2);
	ck_assert_uint_eq(enc.windows, TEST_BITS / 16);
	mpz_t m, a, c, want, t, d, top;
	mpz_inits(m, a, c, want, t, d, top, NULL);
	mpz_setbit(top, enc.alpha_bits);
	for (int i = 0; i < 24; i++) {
		if (i % 3 == 0)
			mpz_set_ui(m, 0);
		else if (i % 3 == 1)
			mpz_sub_ui(m, pub.n, 1);
		else
			ck_assert_int_eq(paillier_random_below(m, pub.n), 0);
		if (i < 3)
			mpz_set_ui(a, (unsigned long)i % 2);
		else if (i < 6)
			mpz_sub_ui(a, top, 1);
		else
			ck_assert_int_eq(paillier_random_below(a, top), 0);
		ck_assert_int_eq(paillier_encrypt_alpha(&enc, m, a, c), 0);
		mpz_powm(want, pub.hn, a, pub.n2);
		mpz_mul(t, m, pub.n);
		mpz_add_ui(t, t, 1);
		mpz_mul(want, want, t);
		mpz_mod(want, want, pub.n2);
		ck_assert_msg(mpz_cmp(c, want) == 0, "case %d: the table's h_n^a is wrong", i);
		paillier_decrypt(&pub, &priv, c, d);
		ck_assert_int_eq(mpz_cmp(d, m), 0);
		/* and the random path decrypts too */
		ck_assert_int_eq(paillier_encrypt(&enc, m, c), 0);
		paillier_decrypt(&pub, &priv, c, d);
		ck_assert_int_eq(mpz_cmp(d, m), 0);
	}
	/* exponents of more than alpha_bits bits are refused */
	ck_assert_int_eq(paillier_encrypt_alpha(&enc, m, top, c), FEDRUN_EINVAL);
	/* h_n is an n-th power: h_n^(phi(n)) = 1 mod n^2 (phi = (p-1)(q-1)) */
	mpz_sub_ui(t, priv.p, 1);
	mpz_sub_ui(d, priv.q, 1);
	mpz_mul(t, t, d);
	mpz_powm(d, pub.hn, t, pub.n2);
	ck_assert_int_eq(mpz_cmp_ui(d, 1), 0);
	/* export, import */
	uint8_t *buf = malloc(paillier_pub_bytes(TEST_BITS));
	paillier_pub_export(&pub, buf);
	struct paillier_pub p2;
	ck_assert_int_eq(paillier_pub_import(buf, TEST_BITS, "t", &p2), 0);
	ck_assert_int_eq(mpz_cmp(p2.n, pub.n), 0);
	ck_assert_int_eq(mpz_cmp(p2.hn, pub.hn), 0);
	paillier_pub_fini(&p2);
	memset(buf + TEST_BITS / 8, 0, 2 * TEST_BITS / 8); /* h_n = 0 */
	ck_assert_int_eq(paillier_pub_import(buf, TEST_BITS, "t", &p2), FEDRUN_EFORMAT);
	free(buf);
	mpz_clears(m, a, c, want, t, d, top, NULL);
}
END_TEST

START_TEST(test_homomorphic)
{
	mpz_t sum, m, c, acc, d, k;
	mpz_inits(sum, m, c, acc, d, k, NULL);
	ck_assert_int_eq(paillier_encrypt(&enc, sum, acc), 0); /* E(0) */
	for (unsigned long i = 1; i <= 30; i++) {
		mpz_set_ui(m, i * 1000003ul);
		mpz_add(sum, sum, m);
		ck_assert_int_eq(paillier_encrypt(&enc, m, c), 0);
		paillier_add(&pub, acc, acc, c);
	}
	paillier_decrypt(&pub, &priv, acc, d);
	ck_assert_int_eq(mpz_cmp(d, sum), 0);
	/* + k, * k */
	mpz_set_ui(k, 77);
	paillier_add_plain(&pub, c, acc, k);
	paillier_decrypt(&pub, &priv, c, d);
	mpz_add_ui(m, sum, 77);
	ck_assert_int_eq(mpz_cmp(d, m), 0);
	paillier_mul_plain(&pub, c, acc, k);
	paillier_decrypt(&pub, &priv, c, d);
	mpz_mul_ui(m, sum, 77);
	ck_assert_int_eq(mpz_cmp(d, m), 0);
	/* -x is n - x; x + (-x) = 0 */
	paillier_neg(&pub, c, acc);
	paillier_decrypt(&pub, &priv, c, d);
	mpz_sub(m, pub.n, sum);
	ck_assert_int_eq(mpz_cmp(d, m), 0);
	paillier_add(&pub, c, c, acc);
	paillier_decrypt(&pub, &priv, c, d);
	ck_assert_int_eq(mpz_sgn(d), 0);
	mpz_clears(sum, m, c, acc, d, k, NULL);
}
END_TEST

START_TEST(test_rerandomize)
{
	mpz_t m, c, c2, d;
	mpz_inits(m, c, c2, d, NULL);
	mpz_set_ui(m, 12345);
	ck_assert_int_eq(paillier_encrypt(&enc, m, c), 0);
	ck_assert_int_eq(paillier_rerandomize(&enc, c2, c), 0);
	ck_assert_int_ne(mpz_cmp(c, c2), 0);
	paillier_decrypt(&pub, &priv, c2, d);
	ck_assert_int_eq(mpz_cmp(d, m), 0);
	/* two encryptions of one plaintext differ too */
	ck_assert_int_eq(paillier_encrypt(&enc, m, c2), 0);
	ck_assert_int_ne(mpz_cmp(c, c2), 0);
	mpz_clears(m, c, c2, d, NULL);
}
END_TEST

START_TEST(test_serialise)
{
	size_t len = paillier_ct_bytes(&pub);
	ck_assert_uint_eq(len, 2 * TEST_BITS / 8);
	uint8_t *buf = malloc(len);
	mpz_t m, c, c2;
	mpz_inits(m, c, c2, NULL);
	mpz_set_ui(m, 9);
	ck_assert_int_eq(paillier_encrypt(&enc, m, c), 0);
	paillier_ct_export(&pub, c, buf);
	ck_assert_int_eq(paillier_ct_import(&pub, buf, "t", c2), 0);
	ck_assert_int_eq(mpz_cmp(c, c2), 0);
	/* 0, n^2 - 1's multiples of n and values >= n^2 are no ciphertexts */
	memset(buf, 0, len);
	ck_assert_int_eq(paillier_ct_import(&pub, buf, "t", c2), FEDRUN_EFORMAT);
	paillier_ct_export(&pub, pub.n, buf);
	ck_assert_int_eq(paillier_ct_import(&pub, buf, "t", c2), FEDRUN_EFORMAT);
	memset(buf, 0xff, len);
	ck_assert_int_eq(paillier_ct_import(&pub, buf, "t", c2), FEDRUN_EFORMAT);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "not a Paillier ciphertext"));
	mpz_clears(m, c, c2, NULL);
	free(buf);
}
END_TEST

START_TEST(test_small_keys_refused)
{
	struct paillier_pub p2;
	struct paillier_priv k2;
	ck_assert_int_eq(paillier_keygen(1024, "test", NULL, &p2, &k2), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "at least 2048"));
	ck_assert_int_eq(paillier_keygen_unchecked(520, "test", NULL, &p2, &k2), FEDRUN_EINVAL);
	/* the public API: no way below 2048 */
	struct fedrun_fedvocab_entry e = {"a", 1};
	struct fedrun_fedvocab_party pt = {&e, 1};
	struct fedrun_fedvocab_opts o;
	fedrun_fedvocab_opts_init(&o);
	o.key_bits = 1024;
	char **w = NULL;
	uint64_t n = 0;
	ck_assert_int_eq(fedrun_fedvocab_order(&pt, 1, &o, &w, &n, NULL), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "1024 bits is too small") &&
			  strstr(fedrun_error_message(), "2048"),
		      "%s", fedrun_error_message());
	ck_assert_ptr_null(w);
}
END_TEST

/* ---- the protocol against the plaintext order -------------------------- */

/* The protocol's words are want[0 .. k), in that order; frees them. */
static void expect_words(char **w, uint64_t n, const char *const *want, uint64_t k)
{
	ck_assert_uint_eq(n, k);
	for (uint64_t i = 0; i < k; i++)
		ck_assert_str_eq(w[i], want[i]);
	fedrun_fedvocab_words_free(w, n);
}

struct table {
	uint32_t np, nw;
	char **words;			 /* nw candidate words */
	struct fedrun_fedvocab_entry *e; /* np x nw, the first n[p] used */
	struct fedrun_fedvocab_party *pt;
	uint64_t *total; /* per candidate word */
};

static void table_free(struct table *t)
{
	for (uint32_t i = 0; i < t->nw; i++)
		free(t->words[i]);
	free(t->words);
	free(t->e);
	free(t->pt);
	free(t->total);
}

/* np parties over nw words; party p sees word i with probability 1/2 and
 * a count from 1 to max_count (small: many ties). */
static void table_random(struct table *t, struct fedrun_rng *g, uint32_t np, uint32_t nw,
			 uint64_t max_count)
{
	t->np = np;
	t->nw = nw;
	t->words = calloc(nw, sizeof *t->words);
	t->e = calloc((size_t)np * nw, sizeof *t->e);
	t->pt = calloc(np, sizeof *t->pt);
	t->total = calloc(nw, sizeof *t->total);
	for (uint32_t i = 0; i < nw; i++) {
		char buf[32];
		/* mixed case and lengths, so byte order matters ("B" < "a") */
		snprintf(buf, sizeof buf, "%c%u", "aBcD"[i % 4], (unsigned)fedrun_rng_below(g, 50));
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "_%u", i);
		t->words[i] = strdup(buf);
	}
	for (uint32_t p = 0; p < np; p++) {
		t->pt[p].entries = t->e + (size_t)p * nw;
		for (uint32_t i = 0; i < nw; i++) {
			/* a word one party only has: i % 7 == 0 goes to party i % np */
			bool has = i % 7 == 0 ? p == i % np : fedrun_rng_below(g, 2) == 0;
			if (!has)
				continue;
			uint64_t c = 1 + fedrun_rng_below(g, max_count);
			t->e[(size_t)p * nw + t->pt[p].n++] =
			    (struct fedrun_fedvocab_entry){t->words[i], c};
			t->total[i] += c;
		}
	}
}

static const struct table *sort_table;

static int cmp_plain(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct table *t = sort_table;
	if (t->total[x] != t->total[y])
		return t->total[x] > t->total[y] ? -1 : 1;
	return strcmp(t->words[x], t->words[y]);
}

/* The plaintext order: words with total >= min_count, by total descending,
 * then strcmp. *n gets how many. */
static uint32_t *plain_order(const struct table *t, uint64_t min_count, uint32_t *n)
{
	uint32_t *idx = calloc(t->nw, sizeof *idx), k = 0;
	for (uint32_t i = 0; i < t->nw; i++)
		if (t->total[i] > 0 && t->total[i] >= min_count)
			idx[k++] = i;
	sort_table = t;
	qsort(idx, k, sizeof *idx, cmp_plain);
	*n = k;
	return idx;
}

static void check_order(const struct table *t, uint64_t min_count, uint32_t key_holder,
			uint32_t threads)
{
	struct fedrun_fedvocab_opts o;
	fedrun_fedvocab_opts_init(&o);
	o.key_bits = TEST_BITS;
	o.threads = threads;
	o.min_count = min_count;
	o.key_holder = key_holder;
	char **w;
	uint64_t n;
	int rc = fedvocab_order_min_bits(t->pt, t->np, &o, 256, &w, &n, NULL);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	uint32_t k;
	uint32_t *want = plain_order(t, min_count, &k);
	ck_assert_uint_eq(n, k);
	for (uint32_t i = 0; i < k; i++)
		ck_assert_msg(strcmp(w[i], t->words[want[i]]) == 0,
			      "position %u: got %s, want %s (total %llu)", i, w[i],
			      t->words[want[i]], (unsigned long long)t->total[want[i]]);
	free(want);
	fedrun_fedvocab_words_free(w, n);
}

START_TEST(test_order_random)
{
	struct fedrun_rng g;
	fedrun_rng_init(&g, 20240614, FEDRUN_RNG_DATA, (uint32_t)_i, 0);
	const uint64_t mins[] = {0, 1, 2, 3, 6};
	for (int rep = 0; rep < 3; rep++) {
		struct table t = {0};
		uint32_t np = 1 + (uint32_t)fedrun_rng_below(&g, 5);
		table_random(&t, &g, np, 10 + (uint32_t)fedrun_rng_below(&g, 40),
			     rep == 2 ? 1000000 : 4);
		/* 1 to 3 threads: the order may not depend on them */
		check_order(&t, mins[fedrun_rng_below(&g, 5)], (uint32_t)fedrun_rng_below(&g, np),
			    1 + (uint32_t)(rep + _i) % 3);
		table_free(&t);
	}
}
END_TEST

/* Totals exactly at min_count stay; one below goes. */
START_TEST(test_min_count_edge)
{
	struct fedrun_fedvocab_entry a[] = {{"x", 2}, {"y", 1}, {"z", 5}};
	struct fedrun_fedvocab_entry b[] = {{"y", 1}, {"w", 2}, {"v", 1}};
	struct fedrun_fedvocab_party pt[] = {{a, 3}, {b, 3}};
	struct fedrun_fedvocab_opts o;
	fedrun_fedvocab_opts_init(&o);
	o.key_bits = TEST_BITS;
	o.min_count = 2;
	char **w;
	uint64_t n;
	ck_assert_int_eq(fedvocab_order_min_bits(pt, 2, &o, 256, &w, &n, NULL), 0);
	expect_words(w, n, (const char *const[]){"z", "w", "x", "y"}, 4);
	/* a caller built before opts.threads: the field is not read */
	o.size = offsetof(struct fedrun_fedvocab_opts, threads);
	o.threads = 1000000;
	ck_assert_int_eq(fedvocab_order_min_bits(pt, 2, &o, 256, &w, &n, NULL), 0);
	expect_words(w, n, (const char *const[]){"z", "w", "x", "y"}, 4);
	o.size = sizeof o;
	o.threads = 0;
	/* above every total: nothing left */
	o.min_count = 6;
	ck_assert_int_eq(fedvocab_order_min_bits(pt, 2, &o, 256, &w, &n, NULL), 0);
	expect_words(w, n, NULL, 0);
}
END_TEST

START_TEST(test_bad_input)
{
	struct fedrun_fedvocab_entry dup[] = {{"a", 1}, {"b", 1}, {"a", 2}};
	struct fedrun_fedvocab_entry zero[] = {{"a", 0}};
	struct fedrun_fedvocab_party pt[] = {{dup, 3}, {zero, 1}};
	struct fedrun_fedvocab_opts o;
	fedrun_fedvocab_opts_init(&o);
	o.key_bits = TEST_BITS;
	char **w = NULL;
	uint64_t n;
	ck_assert_int_eq(fedvocab_order_min_bits(pt, 1, &o, 256, &w, &n, NULL), FEDRUN_EINVAL);
	ck_assert_str_eq(fedrun_error_message(),
			 "federated vocabulary: party 0 lists the word 'a' twice");
	ck_assert_int_eq(fedvocab_order_min_bits(pt + 1, 1, &o, 256, &w, &n, NULL), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "party 0, entry 0: a count of 0"));
	o.key_holder = 2;
	ck_assert_int_eq(fedvocab_order_min_bits(pt, 2, &o, 256, &w, &n, NULL), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "key_holder 2 is not a party"));
	ck_assert_int_eq(fedrun_fedvocab_order(pt, 0, NULL, &w, &n, NULL), FEDRUN_EINVAL);
	ck_assert_ptr_null(w);
}
END_TEST

/* ---- the transcript ---------------------------------------------------- */

static bool has_bytes(const uint8_t *hay, size_t n, const uint8_t *needle, size_t k)
{
	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(hay + i, needle, k) == 0)
			return true;
	return false;
}

/* Whether the 8-byte little- or big-endian form of v is anywhere in the
 * transcript's byte strings. */
static bool transcript_has(const struct fedrun_fedvocab_transcript *tr, uint64_t v)
{
	uint8_t le[8], be[8];
	for (int i = 0; i < 8; i++) {
		le[i] = (uint8_t)(v >> (8 * i));
		be[7 - i] = le[i];
	}
	size_t np = (size_t)tr->n_parties * tr->n_union * tr->ct_len;
	size_t nm = (size_t)tr->n_masked * tr->ct_len;
	return has_bytes(tr->party_ct, np, le, 8) || has_bytes(tr->party_ct, np, be, 8) ||
	       has_bytes(tr->masked_ct, nm, le, 8) || has_bytes(tr->masked_ct, nm, be, 8) ||
	       has_bytes(tr->pubkey, tr->pubkey_len, le, 8) ||
	       has_bytes(tr->pubkey, tr->pubkey_len, be, 8);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* 40 words with distinct totals of distinctive bytes in 3 parties: the
 * server's transcript holds no count or total in the clear, the ciphertexts
 * it forwards are none of those it received, the ranks come back shuffled
 * (not in the union's order) and are the dense ranks 0 .. 39, whatever the
 * totals' scale: the key holder's answer carries the order, nothing else. */
START_TEST(test_transcript)
{
	enum { NW = 40, NP = 3 };
	char words[NW][16];
	struct fedrun_fedvocab_entry e[NP][NW];
	struct fedrun_fedvocab_party pt[NP];
	uint64_t ranks[2][NW + 1];
	for (int scale = 0; scale < 2; scale++) {
		for (int p = 0; p < NP; p++) {
			pt[p].entries = e[p];
			pt[p].n = NW;
		}
		for (int i = 0; i < NW; i++) {
			snprintf(words[i], sizeof words[i], "w%02d", i);
			for (int p = 0; p < NP; p++)
				e[p][i] = (struct fedrun_fedvocab_entry){
				    words[i],
				    (0x0123456789ull + 0x1000193ull * (uint64_t)(i * NP + p)) *
					(scale ? 1000 : 1)};
		}
		struct fedrun_fedvocab_opts o;
		fedrun_fedvocab_opts_init(&o);
		o.key_bits = TEST_BITS;
		o.min_count = 2;
		struct fedrun_fedvocab_transcript tr;
		char **w;
		uint64_t n;
		ck_assert_int_eq(fedvocab_order_min_bits(pt, NP, &o, 256, &w, &n, &tr), 0);
		ck_assert_uint_eq(n, NW);
		ck_assert_uint_eq(tr.n_union, NW);
		ck_assert_uint_eq(tr.n_masked, NW + 1); /* with the min_count threshold */
		ck_assert_uint_eq(tr.ct_len, 2 * TEST_BITS / 8);
		for (int i = 0; i < NW; i++) {
			uint64_t total = 0;
			for (int p = 0; p < NP; p++) {
				ck_assert(!transcript_has(&tr, e[p][i].count));
				total += e[p][i].count;
			}
			ck_assert(!transcript_has(&tr, total));
		}
		/* a self-test of the search: the modulus's own bytes are found */
		uint64_t head = 0;
		for (int i = 0; i < 8; i++)
			head = head << 8 | tr.pubkey[i];
		ck_assert(transcript_has(&tr, head));
		for (uint64_t m = 0; m < tr.n_masked; m++)
			for (uint64_t k = 0; k < (uint64_t)NP * NW; k++)
				ck_assert(memcmp(tr.masked_ct + m * tr.ct_len,
						 tr.party_ct + k * tr.ct_len, tr.ct_len) != 0);
		/* ranks: 0 .. NW (distinct totals and the threshold, which is
		 * below every total, so rank NW), not in the union's order */
		memcpy(ranks[scale], tr.ranks, sizeof ranks[scale]);
		bool in_union_order = true;
		for (int i = 1; i < NW; i++)
			in_union_order &= tr.ranks[i] == tr.ranks[i - 1] - 1;
		ck_assert(!in_union_order);
		qsort(ranks[scale], NW + 1, sizeof ranks[scale][0], cmp_u64);
		for (int i = 0; i < NW + 1; i++)
			ck_assert_uint_eq(ranks[scale][i], (uint64_t)i);
		fedrun_fedvocab_transcript_fini(&tr);
		fedrun_fedvocab_words_free(w, n);
	}
	ck_assert(memcmp(ranks[0], ranks[1], sizeof ranks[0]) == 0);
}
END_TEST

/* The public API with its default 2048-bit key. */
START_TEST(test_public_2048)
{
	struct fedrun_fedvocab_entry a[] = {{"the", 7}, {"cat", 2}};
	struct fedrun_fedvocab_entry b[] = {{"a", 2}, {"the", 1}, {"dog", 3}};
	struct fedrun_fedvocab_party pt[] = {{a, 2}, {b, 3}};
	struct fedrun_fedvocab_transcript tr;
	char **w;
	uint64_t n;
	ck_assert_int_eq(fedrun_fedvocab_order(pt, 2, NULL, &w, &n, &tr), 0);
	ck_assert_uint_eq(tr.key_bits, 2048);
	ck_assert_uint_eq(tr.pubkey_len, 3 * 256); /* n, h_n */
	expect_words(w, n, (const char *const[]){"the", "dog", "a", "cat"}, 4);
	fedrun_fedvocab_transcript_fini(&tr);
}
END_TEST

/* opts.interrupted, asked from the OpenMP threads too: it answers true
 * from its `after`-th call on, and counts the calls. */
struct stop_after {
	unsigned calls, after;
};

static bool stop_after(void *arg)
{
	struct stop_after *s = arg;
	return __atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED) >= s->after;
}

/* A caller that asks to stop gets FEDRUN_EINTERRUPTED and nothing else,
 * wherever the run is: in the prime search (the first call), the
 * encryption table, the parties' encryptions, the server's masking or the
 * key holder's decryptions (later calls). */
START_TEST(test_interrupted)
{
	struct paillier_pub p2;
	struct paillier_priv k2;
	struct stop_after now = {0, 0};
	struct paillier_stop stop = {stop_after, &now};
	ck_assert_int_eq(paillier_keygen_unchecked(TEST_BITS, "test", &stop, &p2, &k2),
			 FEDRUN_EINTERRUPTED);
	ck_assert_str_eq(fedrun_error_message(),
			 "test: interrupted while making a Paillier key of 512 bits");
	ck_assert_int_eq(paillier_keygen_unchecked(TEST_BITS, "test", NULL, &p2, &k2), 0);
	struct paillier_enc e2;
	ck_assert_int_eq(paillier_enc_init(&e2, &p2, 2, &stop), FEDRUN_EINTERRUPTED);
	ck_assert_ptr_null(e2.table);
	paillier_pub_fini(&p2);
	paillier_priv_fini(&k2);
	struct fedrun_fedvocab_entry a[] = {{"the", 7}, {"cat", 2}, {"sat", 1}};
	struct fedrun_fedvocab_entry b[] = {{"a", 2}, {"the", 1}, {"dog", 3}};
	struct fedrun_fedvocab_party pt[] = {{a, 3}, {b, 3}};
	struct fedrun_fedvocab_opts o;
	fedrun_fedvocab_opts_init(&o);
	o.key_bits = TEST_BITS;
	o.min_count = 2;
	o.threads = 2;
	struct stop_after never = {0, UINT32_MAX};
	o.interrupted = stop_after;
	o.interrupted_arg = &never;
	char **w;
	uint64_t n;
	ck_assert_int_eq(fedvocab_order_min_bits(pt, 2, &o, 256, &w, &n, NULL), 0);
	fedrun_fedvocab_words_free(w, n);
	/* the key, the table's 32 windows, each party's 5 words, the 6 masked
	 * values and their ranks */
	ck_assert_uint_gt(never.calls, 32 + 2 * 5 + 6 + 6);
	/* How many calls the prime search makes varies from key to key; what
	 * may not vary: a run that was once told to stop stops, and one that
	 * never was does not. Up to twice the calls of a whole run, so that
	 * some stop in the protocol's last steps and some finish. */
	unsigned stopped = 0, finished = 0;
	for (unsigned after = 0; after < 2 * never.calls; after += 1 + after / 8) {
		struct stop_after s = {0, after};
		o.interrupted_arg = &s;
		w = NULL;
		int rc = fedvocab_order_min_bits(pt, 2, &o, 256, &w, &n, NULL);
		if (s.calls > after) {
			ck_assert_msg(rc == FEDRUN_EINTERRUPTED, "stop after %u calls of %u: %d %s",
				      after, s.calls, rc, fedrun_error_message());
			ck_assert_ptr_null(w);
			ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "interrupted"));
			stopped++;
		} else {
			ck_assert_msg(rc == 0, "%s", fedrun_error_message());
			expect_words(w, n, (const char *const[]){"the", "dog", "a", "cat"}, 4);
			finished++;
		}
	}
	ck_assert_uint_gt(stopped, 0);
	ck_assert_uint_gt(finished, 0);
}
END_TEST

/* Keys over 8192 bits take minutes to make: refused at once, by the key
 * generation and by the public API, naming the size and the limit. */
START_TEST(test_large_keys_refused)
{
	struct paillier_pub p2;
	struct paillier_priv k2;
	ck_assert_int_eq(paillier_keygen(16384, "test", NULL, &p2, &k2), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "to 8192"), "%s", fedrun_error_message());
	struct fedrun_fedvocab_entry e = {"a", 1};
	struct fedrun_fedvocab_party pt = {&e, 1};
	struct fedrun_fedvocab_opts o;
	fedrun_fedvocab_opts_init(&o);
	o.key_bits = 16384;
	char **w = NULL;
	uint64_t n = 0;
	ck_assert_int_eq(fedrun_fedvocab_order(&pt, 1, &o, &w, &n, NULL), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "16384 bits is too large") &&
			  strstr(fedrun_error_message(), "at most 8192"),
		      "%s", fedrun_error_message());
	ck_assert_ptr_null(w);
}
END_TEST

static Suite *fedvocab_suite(void)
{
	Suite *s = suite_create("fedvocab");
	TCase *tc = tcase_create("paillier");
	tcase_add_checked_fixture(tc, key_setup, key_teardown);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_admissible);
	tcase_add_test(tc, test_fixed_base);
	tcase_add_test(tc, test_homomorphic);
	tcase_add_test(tc, test_rerandomize);
	tcase_add_test(tc, test_serialise);
	tcase_add_test(tc, test_small_keys_refused);
	tcase_add_test(tc, test_large_keys_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("protocol");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_order_random, 0, 4);
	tcase_add_test(tc, test_min_count_edge);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_transcript);
	tcase_add_test(tc, test_public_2048);
	tcase_add_test(tc, test_interrupted);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fedvocab_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
