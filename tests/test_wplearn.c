/* SPDX-License-Identifier: Apache-2.0 */
/* The WordPiece vocabulary learner (plugins/models/encoder/wplearn.c):
 * a hand-checked case, and on random corpora the same vocabulary, entry
 * for entry, as a direct implementation written here from the definition
 * (recount every pair of every word before each merge, take the most
 * frequent, ties to the smaller pair of symbol ids). */
#include "config.h"
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/rng.h"
#include "wplearn.h"

static const char *const specials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

/* ---- the direct implementation ---- */

struct naive {
	char *sym[4096];
	uint32_t n;
};

static uint32_t naive_id(struct naive *v, const char *s)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (strcmp(v->sym[i], s) == 0)
			return i;
	v->sym[v->n] = strdup(s);
	return v->n++;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void naive_learn(const char **words, const uint64_t *counts, uint32_t nw, uint32_t size,
			uint64_t min_freq, struct naive *v)
{
	v->n = 0;
	for (uint32_t i = 0; i < 5; i++)
		naive_id(v, specials[i]);
	const char **sorted = malloc(nw * sizeof *sorted);
	memcpy(sorted, words, nw * sizeof *sorted);
	qsort(sorted, nw, sizeof *sorted, cmp);
	uint32_t *seq[256], len[256];
	uint64_t cnt[256];
	for (uint32_t i = 0; i < nw; i++) {
		for (uint32_t j = 0; j < nw; j++)
			if (strcmp(words[j], sorted[i]) == 0)
				cnt[i] = counts[j];
		len[i] = 0;
		seq[i] = malloc(64 * sizeof **seq);
		for (const char *c = sorted[i]; *c; c++) {
			char buf[4] = "##";
			buf[2] = *c, buf[3] = 0;
			char one[2] = {*c, 0};
			seq[i][len[i]++] = naive_id(v, c == sorted[i] ? one : buf);
		}
	}
	while (v->n < size) {
		uint64_t best = 0;
		uint32_t ba = 0, bb = 0;
		for (uint32_t a = 0; a < v->n; a++)
			for (uint32_t b = 0; b < v->n; b++) {
				uint64_t c = 0;
				for (uint32_t i = 0; i < nw; i++)
					for (uint32_t k = 0; k + 1 < len[i]; k++)
						if (seq[i][k] == a && seq[i][k + 1] == b)
							c += cnt[i]; /* every adjacent pair */
				if (c > best)
					best = c, ba = a, bb = b;
			}
		if (best == 0 || best < min_freq)
			break;
		char m[128];
		snprintf(m, sizeof m, "%s%s", v->sym[ba], v->sym[bb] + 2);
		uint32_t c = naive_id(v, m);
		for (uint32_t i = 0; i < nw; i++) {
			uint32_t j = 0;
			for (uint32_t k = 0; k < len[i]; k++)
				if (k + 1 < len[i] && seq[i][k] == ba && seq[i][k + 1] == bb)
					seq[i][j++] = c, k++;
				else
					seq[i][j++] = seq[i][k];
			len[i] = j;
		}
	}
	for (uint32_t i = 0; i < nw; i++)
		free(seq[i]);
	free(sorted);
}

/* ---- tests ---- */

static void check_same(const char **words, const uint64_t *counts, uint32_t nw, uint32_t size)
{
	struct wpl_opts o = {.vocab_size = size, .min_frequency = 1, .specials = specials,
			     .n_specials = 5};
	char **vocab;
	uint32_t n;
	ck_assert_int_eq(wpl_learn(words, counts, nw, &o, &vocab, &n), 0);
	struct naive v;
	naive_learn(words, counts, nw, size, 1, &v);
	ck_assert_uint_eq(n, v.n);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_str_eq(vocab[i], v.sym[i]);
	for (uint32_t i = 0; i < v.n; i++)
		free(v.sym[i]);
	wpl_free(vocab, n);
}

/* low x5, lower x2, newest x6, widest x3 (Sennrich et al. 2016, sec.
 * 3.1's example, without the end-of-word mark). Characters in order of
 * first sight in the sorted words (low, lower, newest, widest): l ##o ##w
 * ##e ##r n ##s ##t w ##i ##d. Pair counts: (##e,##s) 9, (##s,##t) 9,
 * (l,##o) 7, (##o,##w) 7, (n,##e) 6, (##e,##w) 8 (newest 6 + lower 2),
 * (##w,##e) 8 (lower 2, newest 6), ... The largest is 9: (##e,##s) and
 * (##s,##t); ties go to the smaller pair of ids: ##e (8) < ##s (11), so
 * "##es" first; then (##es,##t) 9 gives "##est". */
START_TEST(test_hand)
{
	const char *w[] = {"newest", "low", "widest", "lower"};
	const uint64_t c[] = {6, 5, 3, 2};
	struct wpl_opts o = {.vocab_size = 18, .min_frequency = 1, .specials = specials,
			     .n_specials = 5};
	char **vocab;
	uint32_t n;
	ck_assert_int_eq(wpl_learn(w, c, 4, &o, &vocab, &n), 0);
	const char *want[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "l",   "##o", "##w",
			      "##e",   "##r",   "n",	 "##s",	  "##t",    "w",   "##i", "##d",
			      "##es",  "##est"};
	ck_assert_uint_eq(n, 18);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_str_eq(vocab[i], want[i]);
	wpl_free(vocab, n);
	/* too small for the characters: refused, naming the need */
	o.vocab_size = 10;
	ck_assert_int_eq(wpl_learn(w, c, 4, &o, &vocab, &n), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "11 characters"));
}
END_TEST

START_TEST(test_random)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, 7, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	const char *words[64];
	char buf[64][16];
	uint64_t counts[64];
	uint32_t nw = 0;
	while (nw < 40) {
		uint32_t len = 1 + (uint32_t)fedrun_rng_below(&r, 8);
		for (uint32_t k = 0; k < len; k++)
			buf[nw][k] = (char)('a' + fedrun_rng_below(&r, 4 + (uint32_t)_i % 4));
		buf[nw][len] = 0;
		bool dup = false;
		for (uint32_t j = 0; j < nw; j++)
			dup |= strcmp(buf[j], buf[nw]) == 0;
		if (dup)
			continue;
		words[nw] = buf[nw];
		counts[nw] = 1 + fedrun_rng_below(&r, 20);
		nw++;
	}
	check_same(words, counts, nw, 60 + 10 * (uint32_t)_i);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("wplearn");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_hand);
	tcase_add_loop_test(tc, test_random, 0, 12);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
