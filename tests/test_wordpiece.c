/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the WordPiece tokenizer (plugins/models/encoder/wordpiece.h):
 * every string and setting of tests/data/hf/tokenizer/cases.jsonl (made
 * with transformers' own BertTokenizer) gives the same tokens and ids; the
 * per-word variant marks each word's first piece; a vocab.txt reads as
 * transformers' load_vocab reads it; bad files get a clear error. */
#include "config.h"
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/error.h"
#include "wordpiece.h"

#define TOK_DIR HF_DATA_DIR "/tokenizer"

#define ck_msg(what)                                                                               \
	ck_assert_msg(strstr(fedrun_error_message(), (what)) != NULL,                              \
		      "message \"%s\" lacks \"%s\"", fedrun_error_message(), (what))

static struct wp_tokenizer *load(const struct wp_options *o)
{
	struct wp_tokenizer *t = NULL;
	int rc = wp_load(TOK_DIR "/vocab.txt", o, &t);
	ck_assert_msg(rc == 0, "wp_load: %s", fedrun_error_message());
	return t;
}

static void options_of(json_t *s, struct wp_options *o)
{
	json_t *sa = json_object_get(s, "strip_accents");
	wp_options_default(o);
	o->lowercase = json_is_true(json_object_get(s, "do_lower_case"));
	o->strip_accents = json_is_null(sa) ? -1 : json_is_true(sa);
	o->tokenize_chinese_chars = json_is_true(json_object_get(s, "tokenize_chinese_chars"));
	o->max_chars_per_word = (int)json_integer_value(json_object_get(s, "max_input_chars_per_word"));
}

START_TEST(fixtures)
{
	FILE *fp = fopen(TOK_DIR "/cases.jsonl", "r");
	char line[1 << 16];
	size_t cases = 0, settings = 0;
	char last[64] = "";
	struct wp_tokenizer *t = NULL;

	ck_assert_ptr_nonnull(fp);
	while (fgets(line, sizeof(line), fp)) {
		json_error_t jerr;
		json_t *c = json_loads(line, JSON_ALLOW_NUL, &jerr);
		const char *setting, *in;
		json_t *toks, *ids;
		int32_t got[512];
		size_t n = 0;

		ck_assert_msg(c != NULL, "cases.jsonl: %s", jerr.text);
		setting = json_string_value(json_object_get(c, "setting"));
		in = json_string_value(json_object_get(c, "input"));
		toks = json_object_get(c, "tokens");
		ids = json_object_get(c, "ids");
		if (strcmp(setting, last) != 0) {
			struct wp_options o;
			options_of(json_object_get(c, "settings"), &o);
			wp_free(t);
			t = load(&o);
			snprintf(last, sizeof(last), "%s", setting);
			settings++;
		}
		ck_assert_int_eq(wp_encode(t, in, json_string_length(json_object_get(c, "input")), got, 512, &n), 0);
		ck_assert_msg(n == json_array_size(ids), "%s %s: %zu ids, expected %zu", setting,
			      line, n, json_array_size(ids));
		for (size_t i = 0; i < n; i++) {
			ck_assert_msg(got[i] == json_integer_value(json_array_get(ids, i)),
				      "%s: id %zu is %d: %s", setting, i, got[i], line);
			ck_assert_str_eq(wp_token(t, got[i]),
					 json_string_value(json_array_get(toks, i)));
		}
		json_decref(c);
		cases++;
	}
	fclose(fp);
	wp_free(t);
	ck_assert_uint_eq(settings, 5);
	ck_assert_uint_ge(cases, 290);
}
END_TEST

/* The per-word variant: each word on its own, first[] its first piece. */
START_TEST(words)
{
	struct wp_tokenizer *t = load(NULL);
	const char *const w[] = {"Unaffable", "\x01\x02", "café!", "hello", "中文"};
	const char *all = "Unaffable \x01\x02 café! hello 中文";
	int32_t ids[16], first[5], whole[16];
	size_t n, nw;

	ck_assert_int_eq(wp_encode_words(t, w, 5, ids, first, 16, &n), 0);
	/* un ##aff ##able | (none) | cafe ! | hello | 中 文 */
	ck_assert_uint_eq(n, 8);
	ck_assert_int_eq(first[0], 0);
	ck_assert_int_eq(first[1], -1);
	ck_assert_int_eq(first[2], 3);
	ck_assert_int_eq(first[3], 5);
	ck_assert_int_eq(first[4], 6);
	ck_assert_str_eq(wp_token(t, ids[1]), "##aff");
	ck_assert_str_eq(wp_token(t, ids[3]), "cafe");
	ck_assert_str_eq(wp_token(t, ids[4]), "!");
	ck_assert_str_eq(wp_token(t, ids[7]), "文");
	ck_assert_int_eq(wp_encode(t, all, strlen(all), whole, 16, &nw), 0);
	ck_assert_uint_eq(nw, n);
	ck_assert_mem_eq(whole, ids, n * sizeof(*ids));
	/* cut at max: the count is still the total, first[] -1 past the cut */
	ck_assert_int_eq(wp_encode_words(t, w, 5, ids, first, 4, &n), 0);
	ck_assert_uint_eq(n, 8);
	ck_assert_int_eq(first[2], 3);
	ck_assert_int_eq(first[3], -1);
	wp_free(t);
}
END_TEST

static char *write_tmp(const char *data, size_t n)
{
	static char path[64];
	int fd;
	snprintf(path, sizeof(path), "/tmp/test_wordpiece.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
	close(fd);
	return path;
}

/* load_vocab: universal newlines, nothing else stripped, the last of a
 * duplicated token wins, the earlier id then has no token. */
START_TEST(vocab_lines)
{
	static const char v[] = "[PAD]\r\n[UNK]\rab\n\n ##c \nab\n\xef\xbb\xbfx\nlast";
	char *path = write_tmp(v, sizeof(v) - 1);
	struct wp_tokenizer *t = NULL;

	ck_assert_int_eq(wp_load(path, NULL, &t), 0);
	unlink(path);
	ck_assert_uint_eq(wp_size(t), 8);
	ck_assert_int_eq(wp_id(t, "[PAD]"), 0);
	ck_assert_int_eq(wp_id(t, "[UNK]"), 1);
	ck_assert_int_eq(wp_id(t, "ab"), 5);
	ck_assert_str_eq(wp_token(t, 2), "[UNK]"); /* the shadowed first "ab" */
	ck_assert_int_eq(wp_id(t, ""), 3);
	ck_assert_int_eq(wp_id(t, " ##c "), 4);
	ck_assert_int_eq(wp_id(t, "\xef\xbb\xbfx"), 6);
	ck_assert_int_eq(wp_id(t, "last"), 7);
	ck_assert_str_eq(wp_token(t, 8), "[UNK]");
	ck_assert_str_eq(wp_token(t, -1), "[UNK]");
	wp_free(t);
}
END_TEST

START_TEST(vocab_errors)
{
	struct wp_tokenizer *t = NULL;
	char *path;

	ck_assert_int_eq(wp_load("/nonexistent/vocab.txt", NULL, &t), FEDRUN_ENOENT);
	ck_assert_ptr_null(t);
	path = write_tmp("[UNK]\na\n\xc3\x28\n", 10);
	ck_assert_int_eq(wp_load(path, NULL, &t), FEDRUN_EINVAL);
	ck_msg(":3: invalid UTF-8");
	ck_msg(path);
	unlink(path);
	path = write_tmp("[UNK]\na\0b\n", 10);
	ck_assert_int_eq(wp_load(path, NULL, &t), FEDRUN_EINVAL);
	ck_msg(":2: a NUL byte");
	unlink(path);
	path = write_tmp("[PAD]\n[CLS]\n", 12);
	ck_assert_int_eq(wp_load(path, NULL, &t), FEDRUN_EINVAL);
	ck_msg("no [UNK]");
	unlink(path);
	path = write_tmp("", 0);
	ck_assert_int_eq(wp_load(path, NULL, &t), FEDRUN_EINVAL);
	ck_msg("no [UNK]");
	unlink(path);
	ck_assert_ptr_null(t);
}
END_TEST

START_TEST(bad_text)
{
	struct wp_tokenizer *t = load(NULL);
	int32_t ids[4];
	size_t n;
	ck_assert_int_eq(wp_encode(t, "ok \xff", 4, ids, 4, &n), FEDRUN_EINVAL);
	ck_msg("invalid UTF-8");
	wp_free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wordpiece");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, fixtures);
	tcase_add_test(tc, words);
	tcase_add_test(tc, vocab_lines);
	tcase_add_test(tc, vocab_errors);
	tcase_add_test(tc, bad_text);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
