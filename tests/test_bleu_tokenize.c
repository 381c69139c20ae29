/* SPDX-License-Identifier: Apache-2.0 */
/* sacreBLEU's tokenizers at their edges: the expected strings are what
 * sacreBLEU 2.6.0's rules give in Python (re for 13a, regex for intl,
 * str.lower/rstrip/split for the rest), including multi-byte characters,
 * Unicode whitespace, final sigma and strict UTF-8. */
#include "config.h"
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"

struct tok_case {
	const char *in;
	const char *t13a, *intl, *none; /* mixed case */
};

static const struct tok_case cases[] = {
    {"", "", "", ""},
    {"   ", "", "", ""},
    {"Hello, world!", "Hello , world !", "Hello , world !", "Hello, world!"},
    {"The end.", "The end .", "The end .", "The end."},
    /* decimal and thousands separators stay inside numbers */
    {"3.14 and 1,000", "3.14 and 1,000", "3.14 and 1,000", "3.14 and 1,000"},
    /* 13a splits a dash after a digit only; intl splits \p{P} next to
     * non-numbers */
    {"1990-2000", "1990 - 2000", "1990-2000", "1990-2000"},
    {"a-b", "a-b", "a - b", "a-b"},
    {"1.-2", "1 . -2", "1 . - 2", "1.-2"},
    /* 13a's language-independent part */
    {"x<skipped>y", "xy", "x < skipped > y", "x<skipped>y"},
    {"a-\nb", "ab", "a - b", "a-\nb"},
    {"line1\nline2", "line1 line2", "line1 line2", "line1\nline2"},
    {"&quot;hi&quot; &amp; &lt;b&gt;", "\" hi \" & < b >",
     "& quot ; hi & quot ; & amp ; & lt ; b & gt ;", "&quot;hi&quot; &amp; &lt;b&gt;"},
    /* replacements run one after the other, never twice */
    {"&amp;quot;", "& quot ;", "& amp ; quot ;", "&amp;quot;"},
    {"it's", "it's", "it ' s", "it's"},
    {"e.g. U.S.A.", "e . g . U . S . A .", "e . g . U . S . A .", "e.g. U.S.A."},
    {"(hi)", "( hi )", "( hi )", "(hi)"},
    /* mteval-v14's quirk: a number keeps a final period in intl */
    {"end 2019.", "end 2019 .", "end 2019.", "end 2019."},
    /* non-ASCII punctuation: only intl knows it */
    {"»%s«: Ist", "» % s« : Ist", "» % s « : Ist", "»%s«: Ist"},
    {"x…y", "x…y", "x … y", "x…y"},
    {"a→b", "a→b", "a → b", "a→b"},
    {"$5", "$ 5", "$ 5", "$5"},
    /* Unicode whitespace splits (and is stripped) as in str.split() */
    {"a\xc2\xa0"
     "b",
     "a b", "a b",
     "a\xc2\xa0"
     "b"},
    {"tab\there", "tab here", "tab here", "tab\there"},
    {"trail \xe3\x80\x80", "trail", "trail", "trail"},
    /* [0-9] is ASCII in 13a; \p{N} covers Arabic-Indic digits */
    {"٣.٤", "٣ . ٤", "٣.٤", "٣.٤"},
    {"...", ". . .", ". . .", "..."},
    {"a..b", "a . . b", "a . . b", "a..b"},
    {",,", ", ,", ", ,", ",,"},
    {"5,", "5 ,", "5,", "5,"},
    {".5", ". 5", ".5", ".5"},
    {"a.b.c", "a . b . c", "a . b . c", "a.b.c"},
    /* U+20C1 SAUDI RIYAL SIGN is \p{S} from Unicode 17 on, the data of
     * the regex release the tables were generated from */
    {"10\xe2\x83\x81", "10\xe2\x83\x81", "10 \xe2\x83\x81", "10\xe2\x83\x81"},
};

static void check_tok(enum fedrun_bleu_tokenizer tok, bool lower, const char *in, const char *want)
{
	char *out = NULL;
	ck_assert_msg(fedrun_bleu_tokenize(tok, lower, in, &out) == 0, "%s: %s", in,
		      fedrun_error_message());
	ck_assert_msg(!strcmp(out, want), "tok %s of \"%s\": got \"%s\", want \"%s\"",
		      fedrun_bleu_tokenizer_name(tok), in, out, want);
	free(out);
}

START_TEST(test_table)
{
	const struct tok_case *c = &cases[_i];
	check_tok(FEDRUN_BLEU_TOK_13A, false, c->in, c->t13a);
	check_tok(FEDRUN_BLEU_TOK_INTL, false, c->in, c->intl);
	check_tok(FEDRUN_BLEU_TOK_NONE, false, c->in, c->none);
}
END_TEST

/* str.lower(): full mappings, and sigma's final form by context. */
START_TEST(test_lowercase)
{
	check_tok(FEDRUN_BLEU_TOK_13A, true, "Hello, World!", "hello , world !");
	check_tok(FEDRUN_BLEU_TOK_NONE, true, "ΣΑΣ ΟΔΥΣΣΕΥΣ", "σας οδυσσευς");
	check_tok(FEDRUN_BLEU_TOK_NONE, true, "Σ", "σ");
	check_tok(FEDRUN_BLEU_TOK_NONE, true, "AΣb", "aσb");
	/* case-ignorable characters are skipped when looking around */
	check_tok(FEDRUN_BLEU_TOK_NONE, true, "A.Σ", "a.ς");
	/* U+0130 lowercases to two code points: i and a combining dot */
	check_tok(FEDRUN_BLEU_TOK_NONE, true, "İstanbul", "i\xcc\x87stanbul");
	check_tok(FEDRUN_BLEU_TOK_INTL, true, "ÄÖÜ ẞ", "äöü ß");
}
END_TEST

/* What BLEU sees: a segment and its exact copy match fully under every
 * tokenizer, multi-byte text included. */
START_TEST(test_exact_match_every_tokenizer)
{
	const char *seg = "»%s«: Größe → 3,5 cm; \"ok\" (ja) …";
	const char *refs[] = {seg};
	for (int t = 0; t < 3; t++) {
		struct fedrun_bleu_opts o;
		struct fedrun_bleu_score s;
		fedrun_bleu_opts_init(&o);
		o.tokenize = (enum fedrun_bleu_tokenizer)t;
		ck_assert_int_eq(fedrun_bleu_sentence_score(&o, seg, 1, refs, &s), 0);
		ck_assert_double_eq_tol(s.score, 100.0, 1e-9);
		ck_assert_int_eq(s.counts[0], s.totals[0]);
	}
}
END_TEST

START_TEST(test_tokenizer_names)
{
	enum fedrun_bleu_tokenizer t;
	ck_assert_int_eq(fedrun_bleu_tokenizer_parse("intl", &t), 0);
	ck_assert_int_eq(t, FEDRUN_BLEU_TOK_INTL);
	ck_assert_str_eq(fedrun_bleu_tokenizer_name(FEDRUN_BLEU_TOK_13A), "13a");
	ck_assert_int_eq(fedrun_bleu_tokenizer_parse("zh", &t), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "'zh'"));
	ck_assert_ptr_null(fedrun_bleu_tokenizer_name((enum fedrun_bleu_tokenizer)7));
	enum fedrun_bleu_smooth sm;
	ck_assert_int_eq(fedrun_bleu_smooth_parse("add-k", &sm), 0);
	ck_assert_int_eq(sm, FEDRUN_BLEU_SMOOTH_ADD_K);
	ck_assert_int_eq(fedrun_bleu_smooth_parse("addk", &sm), FEDRUN_EINVAL);
}
END_TEST

/* Strict UTF-8, as Python's codec: these are all refused. */
START_TEST(test_invalid_utf8)
{
	static const char *const bad[] = {
	    "\xff",		/* never a lead byte */
	    "ok\xc3",		/* truncated */
	    "\xc0\xaf",		/* overlong '/' */
	    "\xe0\x80\xaf",	/* overlong, three bytes */
	    "\xed\xa0\x80",	/* surrogate U+D800 */
	    "\xf4\x90\x80\x80", /* above U+10FFFF */
	    "\xe2\x82",		/* truncated euro sign */
	    "a\x80",		/* lone continuation byte */
	};
	static const size_t at[] = {0, 2, 0, 0, 0, 0, 0, 1};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		size_t off = 99;
		char *out = NULL;
		ck_assert(!fedrun_utf8_valid(bad[k], strlen(bad[k]), &off));
		ck_assert_uint_eq(off, at[k]);
		ck_assert_int_eq(fedrun_bleu_tokenize(FEDRUN_BLEU_TOK_13A, false, bad[k], &out),
				 FEDRUN_EINVAL);
		ck_assert_ptr_null(out);
	}
	ck_assert(fedrun_utf8_valid("\xf0\x9f\x98\x80 \xe2\x82\xac", 8, NULL));
	ck_assert(fedrun_utf8_valid("", 0, NULL));
}
END_TEST

/* rstrip removes Unicode whitespace (U+3000, U+00A0, U+2028), not other
 * characters that merely end in the same bytes. */
START_TEST(test_rstrip)
{
	const char *s = "x \xe3\x80\x80\xc2\xa0\xe2\x80\xa8\r\n";
	ck_assert_uint_eq(fedrun_utf8_rstrip(s, strlen(s)), 1);
	const char *t = "\xe2\x82\xac"; /* euro sign: not whitespace */
	ck_assert_uint_eq(fedrun_utf8_rstrip(t, strlen(t)), 3);
	ck_assert_uint_eq(fedrun_utf8_rstrip("   ", 3), 0);
	ck_assert_uint_eq(fedrun_utf8_rstrip("", 0), 0);
	/* U+200B ZERO WIDTH SPACE is not whitespace to Python */
	const char *z = "a\xe2\x80\x8b";
	ck_assert_uint_eq(fedrun_utf8_rstrip(z, strlen(z)), 4);
}
END_TEST

Suite *bleu_tokenize_suite(void);

Suite *bleu_tokenize_suite(void)
{
	Suite *s = suite_create("bleu_tokenize");
	TCase *tc = tcase_create("tokenizers");
	tcase_add_loop_test(tc, test_table, 0, (int)(sizeof cases / sizeof cases[0]));
	tcase_add_test(tc, test_lowercase);
	tcase_add_test(tc, test_exact_match_every_tokenizer);
	tcase_add_test(tc, test_tokenizer_names);
	suite_add_tcase(s, tc);
	tc = tcase_create("utf8");
	tcase_add_test(tc, test_invalid_utf8);
	tcase_add_test(tc, test_rstrip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bleu_tokenize_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
