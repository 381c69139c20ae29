/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the transformer's words tokenizer (plugins/models/transformer/
 * tok.c), compiled in:
 *  - "whitespace" splitting: tokens are the runs of non-blank characters;
 *  - "punctuation" splitting: every ASCII punctuation character a token,
 *    tokens glued to the previous one carry the joiner U+FFED; the counts of
 *    a built vocabulary are those of a direct count of the expected tokens;
 *    encoding then decoding gives the text back with white space runs made
 *    one space; a vocabulary saved and loaded encodes to the same ids;
 *  - unknown words spelled in characters: the vocabulary holds each
 *    word's characters (glued ones with the joiner), an unknown word
 *    encodes to them and decodes back to itself, a character never seen
 *    is <unk>; a capped vocabulary spells the words it cut;
 *  - the federated vocabulary (characters counted too) splits the same
 *    way, and equals the one built in the clear. */
#include "config.h"
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/fedrun.h"
#include "tok.h"

#define J "\xef\xbf\xad" /* the joiner, U+FFED */

static const char *const lines[] = {
    "Open file...",
    "Don't  save (yet)!",
    "a_b c%s --help",
    "Öffnen: \"Datei\"",
};
#define NLINES (sizeof lines / sizeof lines[0])

/* The words of t's vocabulary, one a line, in id order (its file with the
 * count column cut off); free it. */
static char *vocab_words(const struct tfm_tok *t)
{
	char path[] = "/tmp/test_tok.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(tfm_tok_words_save(t, path), 0);
	FILE *fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	size_t cap = 4096, len = 0;
	char *out = malloc(cap), line[256];
	ck_assert_ptr_nonnull(out);
	while (fgets(line, sizeof line, fp)) {
		line[strcspn(line, "\t\n")] = 0;
		size_t l = strlen(line);
		ck_assert_uint_lt(len + l + 2, cap);
		memcpy(out + len, line, l);
		len += l;
		out[len++] = '\n';
	}
	out[len] = 0;
	fclose(fp);
	unlink(path);
	return out;
}

/* Decodes `text` encoded by t. */
static char *round_trip(const struct tfm_tok *t, const char *text)
{
	int32_t *ids;
	uint32_t n;
	char *out;
	ck_assert_int_eq(tfm_tok_encode(t, text, strlen(text), &ids, &n), 0);
	ck_assert_int_eq(tfm_tok_decode(t, ids, n, &out), 0);
	free(ids);
	return out;
}

START_TEST(test_whitespace)
{
	struct tfm_tok *t;
	ck_assert_int_eq(tfm_tok_words_train(lines, NLINES, 0, 1, TFM_SPLIT_WHITESPACE, 0, &t), 0);
	/* 4 specials + 10: Open file... Don't save (yet)! a_b c%s --help Öffnen:
	 * "Datei" */
	ck_assert_uint_eq(tfm_tok_size(t), 4 + 10);
	int32_t *ids;
	uint32_t n;
	const char *s = "file... (yet)! zzz";
	ck_assert_int_eq(tfm_tok_encode(t, s, strlen(s), &ids, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_ne(ids[0], tfm_tok_unk(t));
	ck_assert_int_ne(ids[1], tfm_tok_unk(t));
	ck_assert_int_eq(ids[2], tfm_tok_unk(t));
	free(ids);
	tfm_tok_destroy(t);
}
END_TEST

/* Each line's tokens under punctuation splitting, as the vocabulary spells
 * them. */
static const char *const want_tokens[] = {
    "Open", "file", J ".", J ".", J ".",				     /* line 0 */
    "Don", J "'", J "t", "save", "(", J "yet", J ")", J "!",		     /* line 1 */
    "a_b", "c", J "%", J "s", "-", J "-", J "help",			     /* line 2 */
    "Öffnen", J ":", "\"", J "Datei", J "\"",				     /* line 3 */
};
#define NWANT (sizeof want_tokens / sizeof want_tokens[0])

START_TEST(test_punctuation)
{
	struct tfm_tok *t;
	ck_assert_int_eq(tfm_tok_words_train(lines, NLINES, 0, 1, TFM_SPLIT_PUNCT, 0, &t), 0);
	/* the distinct tokens, each with its direct count */
	uint32_t distinct = 0;
	for (size_t i = 0; i < NWANT; i++) {
		size_t first = 0;
		while (strcmp(want_tokens[first], want_tokens[i]))
			first++;
		distinct += first == i;
	}
	ck_assert_uint_eq(tfm_tok_size(t), 4 + distinct);
	/* by count: the glued "." (3 times) first, then the others (once
	 * each) in byte order, '"' (0x22) first */
	char *v = vocab_words(t);
	const char *head = "<unk>\n<eos>\n<pad>\n<bos>\n" J ".\n\"\n";
	ck_assert_msg(!strncmp(v, head, strlen(head)), "%s", v);
	free(v);
	/* encoding the lines gives exactly the expected tokens, in order */
	size_t k = 0;
	for (size_t l = 0; l < NLINES; l++) {
		int32_t *ids;
		uint32_t n;
		ck_assert_int_eq(tfm_tok_encode(t, lines[l], strlen(lines[l]), &ids, &n), 0);
		for (uint32_t i = 0; i < n; i++, k++) {
			ck_assert_uint_lt(k, NWANT);
			char *w;
			ck_assert_int_eq(tfm_tok_decode(t, &ids[i], 1, &w), 0);
			/* a token alone decodes without its joiner */
			const char *bare = strncmp(want_tokens[k], J, 3) ? want_tokens[k]
									 : want_tokens[k] + 3;
			ck_assert_str_eq(w, bare);
			free(w);
			ck_assert_int_ne(ids[i], tfm_tok_unk(t));
		}
		free(ids);
	}
	ck_assert_uint_eq(k, NWANT);
	/* round trips: the text back, white space runs made one space */
	for (size_t l = 0; l < NLINES; l++) {
		char *back = round_trip(t, lines[l]);
		const char *want = l == 1 ? "Don't save (yet)!" : lines[l];
		ck_assert_str_eq(back, want);
		free(back);
	}
	/* an unknown token is <unk>, written apart */
	char *back = round_trip(t, "Open zzz...");
	ck_assert_str_eq(back, "Open <unk>...");
	free(back);
	/* saved and loaded with the same splitting: the same ids */
	char path[] = "/tmp/test_tok.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(tfm_tok_words_save(t, path), 0);
	struct tfm_tok *u;
	ck_assert_int_eq(tfm_tok_words_load(path, TFM_SPLIT_PUNCT, 0, &u), 0);
	unlink(path);
	for (size_t l = 0; l < NLINES; l++) {
		int32_t *a, *b;
		uint32_t na, nb;
		ck_assert_int_eq(tfm_tok_encode(t, lines[l], strlen(lines[l]), &a, &na), 0);
		ck_assert_int_eq(tfm_tok_encode(u, lines[l], strlen(lines[l]), &b, &nb), 0);
		ck_assert_uint_eq(na, nb);
		ck_assert_mem_eq(a, b, na * sizeof *a);
		free(a);
		free(b);
	}
	tfm_tok_destroy(u);
	tfm_tok_destroy(t);
}
END_TEST

START_TEST(test_characters)
{
	struct tfm_tok *t;
	ck_assert_int_eq(tfm_tok_words_train(lines, NLINES, 0, 1, TFM_SPLIT_PUNCT, 1, &t), 0);
	char *v = vocab_words(t);
	/* "Open": the word, its first character alone and the rest glued */
	ck_assert_ptr_nonnull(strstr(v, "\nOpen\n"));
	ck_assert_ptr_nonnull(strstr(v, "\nO\n"));
	ck_assert_ptr_nonnull(strstr(v, "\n" J "p\n"));
	/* "Öffnen": a two-byte character, whole */
	ck_assert_ptr_nonnull(strstr(v, "\n\xc3\x96\n"));
	/* a glued word's first character is glued: "yet" in "(yet" */
	ck_assert_ptr_nonnull(strstr(v, "\n" J "y\n"));
	free(v);
	/* "sen" is no word here: spelled s, e, n (each seen in a word), and
	 * decodes back */
	int32_t *ids;
	uint32_t n;
	const char *s = "sen (sen)";
	ck_assert_int_eq(tfm_tok_encode(t, s, strlen(s), &ids, &n), 0);
	/* s ￭e ￭n ( ￭s ￭e ￭n ￭) */
	ck_assert_uint_eq(n, 8);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_int_ne(ids[i], tfm_tok_unk(t));
	free(ids);
	char *back = round_trip(t, s);
	ck_assert_str_eq(back, s);
	free(back);
	/* a known word stays one token */
	ck_assert_int_eq(tfm_tok_encode(t, "Open", 4, &ids, &n), 0);
	ck_assert_uint_eq(n, 1);
	free(ids);
	/* a character never seen: <unk> in the spelling ("Oz": O, <unk>) */
	ck_assert_int_eq(tfm_tok_encode(t, "Oz", 2, &ids, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_ne(ids[0], tfm_tok_unk(t));
	ck_assert_int_eq(ids[1], tfm_tok_unk(t));
	free(ids);
	tfm_tok_destroy(t);
	/* capped at 4 + 40 entries: the characters (frequent) stay and
	 * spell the words that were cut; the text comes back whole */
	ck_assert_int_eq(tfm_tok_words_train(lines, NLINES, 44, 1, TFM_SPLIT_PUNCT, 1, &t), 0);
	ck_assert_uint_eq(tfm_tok_size(t), 44);
	back = round_trip(t, "Open save");
	ck_assert_str_eq(back, "Open save");
	free(back);
	tfm_tok_destroy(t);
}
END_TEST

/* The federated protocol counts the same tokens: its vocabulary has the
 * plaintext one's words in the same order. */
START_TEST(test_federated_split)
{
	struct tfm_tok *plain, *fed;
	ck_assert_int_eq(tfm_tok_words_train(lines, NLINES, 0, 1, TFM_SPLIT_PUNCT, 1, &plain), 0);
	const char *const *parts[2] = {lines, lines + 2};
	uint64_t n[2] = {2, NLINES - 2};
	struct tfm_tok_fed f = {.max_size = 0,
				.min_count = 1,
				.key_bits = 2048,
				.key_holder = 0,
				.threads = 1,
				.split = TFM_SPLIT_PUNCT,
				.chars = 1};
	ck_assert_msg(tfm_tok_words_train_federated(parts, n, 2, &f, &fed) == 0, "%s",
		      fedrun_error_message());
	char *a = vocab_words(plain), *b = vocab_words(fed);
	ck_assert_str_eq(a, b);
	ck_assert_ptr_nonnull(strstr(a, "\n" J "-\n")); /* glued and */
	ck_assert_ptr_nonnull(strstr(a, "\n-\n"));	   /* apart */
	free(a);
	free(b);
	tfm_tok_destroy(fed);
	tfm_tok_destroy(plain);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tok");
	TCase *tc = tcase_create("words");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_whitespace);
	tcase_add_test(tc, test_punctuation);
	tcase_add_test(tc, test_characters);
#ifdef HAVE_GMP
	tcase_add_test(tc, test_federated_split);
#endif
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
