/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the text layer: vocabularies, corpus reading, partitions, BPTT
 * windows and the pipeline's "data" section, on the small corpora in
 * tests/data/text (counts worked out by hand in the comments). */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/text.h"

#define D TEXT_DATA_DIR "/"

static const struct fedrun_text_opts cased = {.lowercase = false}, lower = {.lowercase = true};

/* The message of the last error contains `what`. */
#define ck_msg(what)                                                                               \
	ck_assert_msg(strstr(fedrun_error_message(), (what)) != NULL,                              \
		      "message \"%s\" lacks \"%s\"", fedrun_error_message(), (what))

static struct fedrun_vocab *build(const char *file, uint32_t max_size, uint64_t min_count,
				  bool lowercase)
{
	const char *files[] = {file};
	struct fedrun_vocab_opts o = {max_size, min_count, {.lowercase = lowercase}};
	struct fedrun_vocab *v = NULL;
	int rc = fedrun_vocab_build(files, 1, &o, &v);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	return v;
}

static void expect_words(const struct fedrun_vocab *v, const char *const *words, uint32_t n)
{
	ck_assert_uint_eq(fedrun_vocab_size(v), n);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_str_eq(fedrun_vocab_word(v, i), words[i]);
	ck_assert_ptr_null(fedrun_vocab_word(v, n));
}

/* ---- vocabulary ---- */

/* train.txt: "the cat sat on the mat" / "the dog sat" / blank / "a cat and
 * a dog" / "The Cat": the 3; a, cat, dog, sat 2; Cat, The, and, mat, on 1. */
START_TEST(test_vocab_build_order)
{
	struct fedrun_vocab *v = build(D "train.txt", 0, 1, false);
	static const char *const w[] = {"<unk>", "<eos>", "the", "a",	"cat", "dog",
					"sat",	 "Cat",	  "The", "and", "mat", "on"};
	expect_words(v, w, 12);
	ck_assert_uint_eq(fedrun_vocab_count(v, 2), 3);
	ck_assert_uint_eq(fedrun_vocab_count(v, 3), 2);
	ck_assert_uint_eq(fedrun_vocab_count(v, 11), 1);
	ck_assert_uint_eq(fedrun_vocab_count(v, FEDRUN_VOCAB_EOS), 4); /* sentences */
	ck_assert_uint_eq(fedrun_vocab_count(v, FEDRUN_VOCAB_UNK), 0);
	fedrun_vocab_destroy(v);
}
END_TEST

START_TEST(test_vocab_build_lowercase)
{
	/* the 4, cat 3, a dog sat 2, and mat on 1 */
	struct fedrun_vocab *v = build(D "train.txt", 0, 1, true);
	static const char *const w[] = {"<unk>", "<eos>", "the", "cat", "a",
					"dog",	 "sat",	  "and", "mat", "on"};
	expect_words(v, w, 10);
	ck_assert_uint_eq(fedrun_vocab_count(v, 2), 4);
	fedrun_vocab_destroy(v);
}
END_TEST

START_TEST(test_vocab_build_cap)
{
	/* 5 entries: <unk> <eos> the a cat; the 9 other tokens go to <unk>. */
	struct fedrun_vocab *v = build(D "train.txt", 5, 1, false);
	static const char *const w[] = {"<unk>", "<eos>", "the", "a", "cat"};
	expect_words(v, w, 5);
	ck_assert_uint_eq(fedrun_vocab_count(v, FEDRUN_VOCAB_UNK), 9);
	fedrun_vocab_destroy(v);

	/* A cap of 2 keeps only the special tokens. */
	v = build(D "train.txt", 2, 1, false);
	expect_words(v, w, 2);
	ck_assert_uint_eq(fedrun_vocab_count(v, FEDRUN_VOCAB_UNK), 16);
	fedrun_vocab_destroy(v);
}
END_TEST

START_TEST(test_vocab_build_min_count)
{
	struct fedrun_vocab *v = build(D "train.txt", 0, 2, false);
	static const char *const w[] = {"<unk>", "<eos>", "the", "a", "cat", "dog", "sat"};
	expect_words(v, w, 7);
	ck_assert_uint_eq(fedrun_vocab_count(v, FEDRUN_VOCAB_UNK), 5);
	fedrun_vocab_destroy(v);
	/* Both: min count first, then the cap. */
	v = build(D "train.txt", 4, 2, false);
	expect_words(v, w, 4);
	ck_assert_uint_eq(fedrun_vocab_count(v, FEDRUN_VOCAB_UNK), 5 + 6);
	fedrun_vocab_destroy(v);
}
END_TEST

START_TEST(test_vocab_lookup)
{
	struct fedrun_vocab *v = build(D "train.txt", 0, 1, false);
	ck_assert_uint_eq(fedrun_vocab_lookup(v, "cat", 3), 4);
	ck_assert_uint_eq(fedrun_vocab_lookup(v, "cats", 4), FEDRUN_VOCAB_UNK);
	ck_assert_uint_eq(fedrun_vocab_lookup(v, "catalog", 3), 4); /* length counts */
	ck_assert_uint_eq(fedrun_vocab_lookup(v, "<eos>", 5), FEDRUN_VOCAB_EOS);
	uint32_t id = 99;
	ck_assert(!fedrun_vocab_find(v, "zebra", 5, &id));
	ck_assert_uint_eq(id, 99);
	ck_assert(fedrun_vocab_find(v, "<unk>", 5, &id));
	ck_assert_uint_eq(id, FEDRUN_VOCAB_UNK);
	ck_assert_int_eq(fedrun_vocab_add(v, "zebra", 5, 7, &id), 0);
	ck_assert_uint_eq(id, 12);
	ck_assert_uint_eq(fedrun_vocab_count(v, 12), 7);
	ck_assert_int_eq(fedrun_vocab_add(v, "zebra", 5, 1, &id), 0);
	ck_assert_uint_eq(fedrun_vocab_count(v, 12), 8);
	ck_assert_int_eq(fedrun_vocab_add(v, "two words", 9, 1, NULL), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_vocab_add(v, "", 0, 1, NULL), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_vocab_add(v, "\xc0\xaf", 2, 1, NULL), FEDRUN_EINVAL);
	fedrun_vocab_destroy(v);
}
END_TEST

/* Many words force the hash table to grow; every id must survive it. */
START_TEST(test_vocab_many_words)
{
	struct fedrun_vocab *v;
	ck_assert_int_eq(fedrun_vocab_create(&v), 0);
	char w[32];
	for (uint32_t i = 0; i < 20000; i++) {
		int n = snprintf(w, sizeof w, "w%u", i);
		uint32_t id;
		ck_assert_int_eq(fedrun_vocab_add(v, w, (size_t)n, i, &id), 0);
		ck_assert_uint_eq(id, i + 2);
	}
	for (uint32_t i = 0; i < 20000; i += 997) {
		int n = snprintf(w, sizeof w, "w%u", i);
		ck_assert_uint_eq(fedrun_vocab_lookup(v, w, (size_t)n), i + 2);
		ck_assert_str_eq(fedrun_vocab_word(v, i + 2), w);
	}
	fedrun_vocab_destroy(v);
}
END_TEST

static char tmpdir[64];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/fedrun-text-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

START_TEST(test_vocab_save_load)
{
	make_tmpdir();
	char path[128];
	snprintf(path, sizeof path, "%s/vocab.txt", tmpdir);
	struct fedrun_vocab *v = build(D "train.txt", 6, 1, false), *w;
	ck_assert_int_eq(fedrun_vocab_save(v, path), 0);
	ck_assert_int_eq(fedrun_vocab_load(path, &w), 0);
	ck_assert_uint_eq(fedrun_vocab_size(w), fedrun_vocab_size(v));
	for (uint32_t i = 0; i < fedrun_vocab_size(v); i++) {
		ck_assert_str_eq(fedrun_vocab_word(w, i), fedrun_vocab_word(v, i));
		ck_assert_uint_eq(fedrun_vocab_count(w, i), fedrun_vocab_count(v, i));
	}
	/* The file is plain "word<TAB>count" lines. */
	FILE *fp = fopen(path, "r");
	char line[64];
	ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
	ck_assert_str_eq(line, "<unk>\t7\n");
	ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
	ck_assert_str_eq(line, "<eos>\t4\n");
	ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
	ck_assert_str_eq(line, "the\t3\n");
	fclose(fp);
	unlink(path);
	rmdir(tmpdir);
	fedrun_vocab_destroy(v);
	fedrun_vocab_destroy(w);
}
END_TEST

/* vocab.txt lists <eos> first and <unk> fourth, with and without counts,
 * tab or space separated, with a blank line: the specials still get 0, 1. */
START_TEST(test_vocab_load_format)
{
	struct fedrun_vocab *v;
	ck_assert_int_eq(fedrun_vocab_load(D "vocab.txt", &v), 0);
	static const char *const w[] = {"<unk>", "<eos>", "the", "cat", "dog"};
	expect_words(v, w, 5);
	ck_assert_uint_eq(fedrun_vocab_count(v, 0), 2);
	ck_assert_uint_eq(fedrun_vocab_count(v, 1), 5);
	ck_assert_uint_eq(fedrun_vocab_count(v, 2), 10);
	ck_assert_uint_eq(fedrun_vocab_count(v, 3), 0);
	ck_assert_uint_eq(fedrun_vocab_count(v, 4), 3);
	fedrun_vocab_destroy(v);
}
END_TEST

START_TEST(test_vocab_load_errors)
{
	struct fedrun_vocab *v = (void *)1;
	ck_assert_int_eq(fedrun_vocab_load(D "bad_vocab.txt", &v), FEDRUN_EFORMAT);
	ck_assert_ptr_null(v);
	ck_msg("bad_vocab.txt:3: duplicate word \"the\"");
	ck_assert_int_eq(fedrun_vocab_load(D "no-such-vocab.txt", &v), FEDRUN_ENOENT);
	ck_msg("no-such-vocab.txt");
	ck_assert_int_eq(fedrun_vocab_load(D "empty.txt", &v), FEDRUN_EFORMAT);
	ck_msg("empty.txt: no word");
	ck_assert_int_eq(fedrun_vocab_load(D "train.txt", &v), FEDRUN_EFORMAT);
	ck_msg("train.txt:1: expected \"word\" or \"word<TAB>count\"");
	/* the line itself is not echoed: a file named by mistake may be secret */
	ck_assert_ptr_null(strstr(fedrun_error_message(), "got"));
	{
		char line[256] = "";
		FILE *fp = fopen(D "train.txt", "r");
		ck_assert_ptr_nonnull(fp);
		ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
		fclose(fp);
		char *second = strchr(line, ' ');
		ck_assert_ptr_nonnull(second);
		char *w2 = second + 1, *e2 = strpbrk(w2, " \n");
		if (e2)
			*e2 = 0;
		ck_assert_msg(!strstr(fedrun_error_message(), w2), "the message echoes '%s': %s", w2,
			      fedrun_error_message());
	}
	ck_assert_int_eq(fedrun_vocab_load(D "bad_utf8.txt", &v), FEDRUN_EFORMAT);
	ck_msg("bad_utf8.txt:1:");
}
END_TEST

START_TEST(test_vocab_build_errors)
{
	const char *files[] = {D "train.txt", D "missing.txt"};
	struct fedrun_vocab_opts o = {0, 1, {.lowercase = false}};
	struct fedrun_vocab *v = (void *)1;
	ck_assert_int_eq(fedrun_vocab_build(files, 2, &o, &v), FEDRUN_ENOENT);
	ck_assert_ptr_null(v);
	ck_msg("missing.txt");
	o.max_size = 1;
	ck_assert_int_eq(fedrun_vocab_build(files, 1, &o, &v), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_vocab_build(files, 0, &o, &v), FEDRUN_EINVAL);
}
END_TEST

/* ---- corpus ---- */

START_TEST(test_corpus_read)
{
	struct fedrun_vocab *v = build(D "train.txt", 0, 1, false);
	struct fedrun_corpus c;
	fedrun_corpus_init(&c);
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "train.txt", &cased), 0);
	/* 16 words + 4 <eos>; the blank line is not a sentence. */
	ck_assert_uint_eq(c.n_sent, 4);
	ck_assert_uint_eq(c.n_tokens, 20);
	ck_assert_uint_eq(c.n_unk, 0);
	static const uint64_t off[] = {0, 7, 11, 17, 20};
	for (int i = 0; i < 5; i++)
		ck_assert_uint_eq(c.sent_off[i], off[i]);
	/* "the dog sat" with a tab and spaces around it */
	static const uint32_t s1[] = {2, 5, 6, FEDRUN_VOCAB_EOS};
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(c.ids[7 + i], s1[i]);
	/* "The Cat" */
	ck_assert_uint_eq(c.ids[17], 8);
	ck_assert_uint_eq(c.ids[18], 7);
	ck_assert_uint_eq(c.ids[19], FEDRUN_VOCAB_EOS);

	/* valid.txt: "the cat <unk> zebra" / blank / "a dog" / "café" */
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "valid.txt", &cased), 0);
	ck_assert_uint_eq(c.n_files, 2);
	ck_assert_uint_eq(c.n_sent, 7);
	ck_assert_uint_eq(c.n_tokens, 30);
	ck_assert_uint_eq(c.n_unk, 2); /* zebra, café; the literal <unk> is a word */
	static const uint32_t valid[] = {2, 4, 0, 0, 1, 3, 5, 1, 0, 1};
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(c.ids[20 + i], valid[i]);
	ck_assert_uint_eq(c.sent_file[3], 0);
	ck_assert_uint_eq(c.sent_file[4], 1);
	ck_assert_uint_eq(c.sent_file[6], 1);

	/* test.txt ends its line with CR LF: the CR is white space. */
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "test.txt", &cased), 0);
	ck_assert_uint_eq(c.n_tokens, 33);
	ck_assert_uint_eq(c.ids[30], 2);
	ck_assert_uint_eq(c.ids[31], 10);
	fedrun_corpus_fini(&c);
	fedrun_vocab_destroy(v);
}
END_TEST

START_TEST(test_corpus_lowercase)
{
	struct fedrun_vocab *v = build(D "train.txt", 0, 1, true);
	struct fedrun_corpus c;
	fedrun_corpus_init(&c);
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "train.txt", &lower), 0);
	ck_assert_uint_eq(c.ids[17], 2); /* The -> the */
	ck_assert_uint_eq(c.ids[18], 3); /* Cat -> cat */
	fedrun_corpus_fini(&c);
	/* Read cased against a lowercase vocabulary: "The" is unknown. */
	fedrun_corpus_init(&c);
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "train.txt", &cased), 0);
	ck_assert_uint_eq(c.ids[17], FEDRUN_VOCAB_UNK);
	ck_assert_uint_eq(c.n_unk, 2);
	fedrun_corpus_fini(&c);
	fedrun_vocab_destroy(v);
}
END_TEST

START_TEST(test_corpus_errors)
{
	struct fedrun_vocab *v = build(D "train.txt", 0, 1, false);
	struct fedrun_corpus c;
	fedrun_corpus_init(&c);
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "train.txt", &cased), 0);

	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "nonexistent.txt", &cased), FEDRUN_ENOENT);
	ck_msg("nonexistent.txt");
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "bad_utf8.txt", &cased), FEDRUN_EFORMAT);
	ck_msg("bad_utf8.txt:2:5: invalid UTF-8");
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "empty.txt", &cased), FEDRUN_EFORMAT);
	ck_msg("empty.txt: empty file");
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "blank.txt", &cased), FEDRUN_EFORMAT);
	ck_msg("blank.txt:3: no sentence: all 3 lines are blank");
	/* Failed reads leave the corpus as it was (bad_utf8's line 1 was
	 * already scanned when line 2 failed). */
	ck_assert_uint_eq(c.n_files, 1);
	ck_assert_uint_eq(c.n_sent, 4);
	ck_assert_uint_eq(c.n_tokens, 20);
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "test.txt", &cased), 0);
	ck_assert_uint_eq(c.sent_off[5], 23);
	ck_assert_uint_eq(c.sent_file[4], 1);
	fedrun_corpus_fini(&c);
	fedrun_vocab_destroy(v);
}
END_TEST

/* Writes `bytes` to a temporary file and scans it for sentences. */
static int scan_bytes(const char *bytes, size_t n)
{
	char path[] = "/tmp/fedrun-utf8-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, bytes, n), (ssize_t)n);
	close(fd);
	struct fedrun_vocab *v;
	ck_assert_int_eq(fedrun_vocab_create(&v), 0);
	struct fedrun_corpus c;
	fedrun_corpus_init(&c);
	int rc = fedrun_corpus_read(&c, v, path, &cased);
	fedrun_corpus_fini(&c);
	fedrun_vocab_destroy(v);
	unlink(path);
	return rc;
}

START_TEST(test_utf8)
{
	static const char ok[] = "a \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbb\xbf\n";
	ck_assert_int_eq(scan_bytes(ok, sizeof ok - 1), 0);
	static const char *const bad[] = {
	    "\xc0\xaf",		/* overlong '/' */
	    "\xe0\x80\xaf",	/* overlong */
	    "\xed\xa0\x80",	/* surrogate U+D800 */
	    "\xf4\x90\x80\x80", /* U+110000 */
	    "\x80",		/* stray continuation */
	    "\xe2\x82",		/* truncated */
	    "\xf8\x88\x80\x80", /* 5-byte form */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char buf[32];
		int n = snprintf(buf, sizeof buf, "ok x%s y\n", bad[i]);
		ck_assert_int_eq(scan_bytes(buf, (size_t)n), FEDRUN_EFORMAT);
		ck_msg(":1:5: invalid UTF-8");
	}
	ck_assert_int_eq(scan_bytes("ab\0c\n", 5), FEDRUN_EFORMAT);
	ck_msg(":1:3: NUL byte in text");
}
END_TEST

/* ---- partitions ---- */

START_TEST(test_iid_shards)
{
	enum { N = 103, K = 10 };
	uint32_t a[N], b[N], c[N];
	ck_assert_int_eq(fedrun_partition_iid(N, K, 42, 0, a), 0);
	uint64_t size[K] = {0};
	for (int s = 0; s < N; s++) {
		ck_assert_uint_lt(a[s], K);
		size[a[s]]++;
	}
	/* 103 = 3 * 11 + 7 * 10: the first three shards hold one more. */
	for (int k = 0; k < K; k++)
		ck_assert_uint_eq(size[k], k < 3 ? 11 : 10);
	/* Same seed and stream: same shards; another seed or stream: not. */
	ck_assert_int_eq(fedrun_partition_iid(N, K, 42, 0, b), 0);
	ck_assert_mem_eq(a, b, sizeof a);
	ck_assert_int_eq(fedrun_partition_iid(N, K, 43, 0, c), 0);
	ck_assert(memcmp(a, c, sizeof a) != 0);
	ck_assert_int_eq(fedrun_partition_iid(N, K, 42, 1, c), 0);
	ck_assert(memcmp(a, c, sizeof a) != 0);
	/* Shuffled: not simply consecutive blocks. */
	int runs = 0;
	for (int s = 1; s < N; s++)
		runs += a[s] != a[s - 1];
	ck_assert_int_gt(runs, 20);

	ck_assert_int_eq(fedrun_partition_iid(5, 6, 1, 0, a), FEDRUN_EINVAL);
	ck_msg("5 sentences cannot be split over 6 clients");
	ck_assert_int_eq(fedrun_partition_iid(5, 0, 1, 0, a), FEDRUN_EINVAL);
}
END_TEST

/* Grouping moves whole sentences: each sentence ends in exactly one client
 * and the clients' sentences are the corpus's, each client in corpus order. */
START_TEST(test_group)
{
	struct fedrun_vocab *v = build(D "cat_a.txt", 0, 1, false);
	struct fedrun_corpus c, orig;
	fedrun_corpus_init(&c);
	fedrun_corpus_init(&orig);
	ck_assert_int_eq(fedrun_corpus_read(&c, v, D "cat_a.txt", &cased), 0);
	ck_assert_int_eq(fedrun_corpus_read(&orig, v, D "cat_a.txt", &cased), 0);
	enum { K = 4 };
	uint32_t *assign = malloc(c.n_sent * sizeof assign[0]);
	ck_assert_int_eq(fedrun_partition_iid(c.n_sent, K, 7, 0, assign), 0);
	uint64_t cs[K + 1];
	ck_assert_int_eq(fedrun_corpus_group(&c, assign, K, cs), 0);
	ck_assert_uint_eq(cs[0], 0);
	ck_assert_uint_eq(cs[K], orig.n_sent);
	ck_assert_uint_eq(c.n_tokens, orig.n_tokens);
	ck_assert_uint_eq(c.sent_off[c.n_sent], orig.n_tokens);
	/* Walk each client's sentences: they must be the original sentences
	 * assigned to it, in order. */
	for (uint32_t k = 0; k < K; k++) {
		uint64_t i = cs[k];
		for (uint64_t s = 0; s < orig.n_sent; s++) {
			if (assign[s] != k)
				continue;
			uint64_t len = orig.sent_off[s + 1] - orig.sent_off[s];
			ck_assert_uint_lt(i, cs[k + 1]);
			ck_assert_uint_eq(c.sent_off[i + 1] - c.sent_off[i], len);
			ck_assert_mem_eq(c.ids + c.sent_off[i], orig.ids + orig.sent_off[s],
					 len * sizeof(uint32_t));
			i++;
		}
		ck_assert_uint_eq(i, cs[k + 1]);
	}
	assign[3] = K;
	ck_assert_int_eq(fedrun_corpus_group(&c, assign, K, cs), FEDRUN_EINVAL);
	free(assign);
	fedrun_corpus_fini(&c);
	fedrun_corpus_fini(&orig);
	fedrun_vocab_destroy(v);
}
END_TEST

enum { NCAT = 3, PER_CAT = 3000, NS = NCAT * PER_CAT };

static uint32_t *categories(void)
{
	uint32_t *cat = malloc(NS * sizeof cat[0]);
	for (uint32_t s = 0; s < NS; s++)
		cat[s] = s % NCAT;
	return cat;
}

START_TEST(test_dirichlet_props)
{
	enum { C = 20, K = 10 };
	double p[C * K];
	/* Tiny alpha must not underflow to 0/0. */
	static const double alphas[] = {1e-3, 0.05, 1, 1e4};
	double maxmean[4];
	for (int a = 0; a < 4; a++) {
		ck_assert_int_eq(fedrun_partition_dirichlet_props(C, K, alphas[a], 3, 0, p), 0);
		maxmean[a] = 0;
		for (int c = 0; c < C; c++) {
			double sum = 0, max = 0;
			for (int k = 0; k < K; k++) {
				ck_assert(isfinite(p[c * K + k]) && p[c * K + k] >= 0);
				sum += p[c * K + k];
				if (p[c * K + k] > max)
					max = p[c * K + k];
			}
			ck_assert_double_eq_tol(sum, 1.0, 1e-12);
			maxmean[a] += max / C;
		}
	}
	/* Small alpha: each category mostly on one client; large alpha:
	 * every share near 1/K. */
	ck_assert_double_gt(maxmean[0], 0.95);
	ck_assert_double_gt(maxmean[1], 0.5);
	ck_assert_double_lt(maxmean[3], 0.12);
	ck_assert_int_eq(fedrun_partition_dirichlet_props(C, K, 0, 3, 0, p), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_partition_dirichlet_props(C, K, NAN, 3, 0, p), FEDRUN_EINVAL);
}
END_TEST

static void client_sizes(const uint32_t *assign, uint32_t K, uint64_t *size,
			 uint64_t (*per_cat)[NCAT])
{
	memset(size, 0, K * sizeof size[0]);
	for (uint32_t s = 0; s < NS; s++) {
		size[assign[s]]++;
		if (per_cat)
			per_cat[assign[s]][s % NCAT]++;
	}
}

START_TEST(test_dirichlet_large_alpha)
{
	enum { K = 10 };
	uint32_t *cat = categories(), *a = malloc(NS * sizeof a[0]);
	double props[NCAT * K];
	ck_assert_int_eq(fedrun_partition_dirichlet(NS, cat, NCAT, K, 1e4, 1, 5, 0, a, props), 0);
	uint64_t size[K], per_cat[K][NCAT];
	memset(per_cat, 0, sizeof per_cat);
	client_sizes(a, K, size, per_cat);
	/* Near-uniform: every client holds about 300 sentences of each
	 * category (the standard deviation of a share is ~0.001 here). */
	for (int k = 0; k < K; k++)
		for (int c = 0; c < NCAT; c++)
			ck_assert_msg(per_cat[k][c] >= 270 && per_cat[k][c] <= 330,
				      "client %d category %d: %llu", k, c,
				      (unsigned long long)per_cat[k][c]);
	/* The counts follow the returned proportions' cuts. */
	for (int c = 0; c < NCAT; c++) {
		double cum = 0;
		uint64_t from = 0;
		for (int k = 0; k < K; k++) {
			cum += props[c * K + k];
			uint64_t to = k == K - 1 ? PER_CAT : (uint64_t)floor(cum * PER_CAT);
			ck_assert_uint_eq(per_cat[k][c], to - from);
			from = to;
		}
	}
	free(cat);
	free(a);
}
END_TEST

START_TEST(test_dirichlet_small_alpha)
{
	enum { K = 5 };
	uint32_t *cat = categories(), *a = malloc(NS * sizeof a[0]), *b = malloc(NS * sizeof b[0]);
	ck_assert_int_eq(fedrun_partition_dirichlet(NS, cat, NCAT, K, 0.1, 1, 9, 0, a, NULL), 0);
	uint64_t size[K], per_cat[K][NCAT];
	memset(per_cat, 0, sizeof per_cat);
	client_sizes(a, K, size, per_cat);
	/* Every client has a sentence; and skewed: some client holds more
	 * than half of some category. */
	bool skewed = false;
	for (int k = 0; k < K; k++) {
		ck_assert_uint_ge(size[k], 1);
		for (int c = 0; c < NCAT; c++)
			skewed |= per_cat[k][c] > PER_CAT / 2;
	}
	ck_assert(skewed);
	/* Same seed: same partition; other seed: another. */
	ck_assert_int_eq(fedrun_partition_dirichlet(NS, cat, NCAT, K, 0.1, 1, 9, 0, b, NULL), 0);
	ck_assert_mem_eq(a, b, NS * sizeof a[0]);
	ck_assert_int_eq(fedrun_partition_dirichlet(NS, cat, NCAT, K, 0.1, 1, 10, 0, b, NULL), 0);
	ck_assert(memcmp(a, b, NS * sizeof a[0]) != 0);
	/* A floor that draws must meet. */
	ck_assert_int_eq(fedrun_partition_dirichlet(NS, cat, NCAT, K, 0.5, 500, 9, 0, b, NULL), 0);
	client_sizes(b, K, size, NULL);
	for (int k = 0; k < K; k++)
		ck_assert_uint_ge(size[k], 500);
	free(cat);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_dirichlet_errors)
{
	uint32_t *cat = categories(), *a = malloc(NS * sizeof a[0]);
	/* One category and a vanishing alpha: one client takes (nearly) all,
	 * in every draw. */
	uint32_t one[NS] = {0};
	ck_assert_int_eq(fedrun_partition_dirichlet(NS, one, 1, 50, 1e-4, 1, 1, 0, a, NULL),
			 FEDRUN_EINVAL);
	ck_msg("use a larger alpha or fewer clients");
	ck_assert_int_eq(fedrun_partition_dirichlet(10, cat, NCAT, 11, 1, 1, 1, 0, a, NULL),
			 FEDRUN_EINVAL);
	ck_msg("10 sentences cannot give each of 11 clients at least 1");
	ck_assert_int_eq(fedrun_partition_dirichlet(NS, cat, NCAT, 4, -1, 1, 1, 0, a, NULL),
			 FEDRUN_EINVAL);
	cat[5] = NCAT;
	ck_assert_int_eq(fedrun_partition_by_props(NS, cat, NCAT, 1, (double[]){1, 1, 1}, 1, 0, a),
			 FEDRUN_EINVAL);
	free(cat);
	free(a);
}
END_TEST

/* Quantity skew: client sizes ~ Dir(alpha 1_K), cut from the shuffled
 * sentences at floor(N cumsum(q)) (the last client to N); it is the
 * Dirichlet partition of one category, whatever the labels. */
START_TEST(test_quantity_sizes)
{
	enum { K = 6 };
	uint32_t *a = malloc(NS * sizeof a[0]), *b = malloc(NS * sizeof b[0]);
	uint32_t *one = calloc(NS, sizeof one[0]);
	double q[K];
	ck_assert_int_eq(fedrun_partition_quantity(NS, K, 0.5, 1, 7, 0, a, q), 0);
	uint64_t size[K], from = 0;
	client_sizes(a, K, size, NULL);
	double cum = 0, qsum = 0;
	uint64_t most = 0, least = NS;
	for (int k = 0; k < K; k++) {
		cum += q[k];
		qsum += q[k];
		uint64_t to = k == K - 1 ? NS : (uint64_t)floor(cum * NS);
		ck_assert_uint_eq(size[k], to - from);
		ck_assert_uint_ge(size[k], 1);
		from = to;
		most = size[k] > most ? size[k] : most;
		least = size[k] < least ? size[k] : least;
	}
	ck_assert_double_eq_tol(qsum, 1, 1e-12);
	ck_assert_msg(most > 3 * least, "alpha 0.5: sizes %llu to %llu are not skewed",
		      (unsigned long long)least, (unsigned long long)most);
	/* The same as the Dirichlet partition of a single category. */
	ck_assert_int_eq(fedrun_partition_dirichlet(NS, one, 1, K, 0.5, 1, 7, 0, b, NULL), 0);
	ck_assert_mem_eq(a, b, NS * sizeof a[0]);
	/* Same seed: same partition; other seed or stream: another. */
	ck_assert_int_eq(fedrun_partition_quantity(NS, K, 0.5, 1, 7, 0, b, NULL), 0);
	ck_assert_mem_eq(a, b, NS * sizeof a[0]);
	ck_assert_int_eq(fedrun_partition_quantity(NS, K, 0.5, 1, 8, 0, b, NULL), 0);
	ck_assert(memcmp(a, b, NS * sizeof a[0]) != 0);
	/* Large alpha: every size near N / K = 1500. */
	ck_assert_int_eq(fedrun_partition_quantity(NS, K, 1e5, 1, 7, 0, b, NULL), 0);
	client_sizes(b, K, size, NULL);
	for (int k = 0; k < K; k++)
		ck_assert_msg(size[k] >= 1400 && size[k] <= 1600, "client %d: %llu", k,
			      (unsigned long long)size[k]);
	/* A floor the draws must meet. */
	ck_assert_int_eq(fedrun_partition_quantity(NS, K, 0.5, 700, 7, 0, b, q), 0);
	client_sizes(b, K, size, NULL);
	for (int k = 0; k < K; k++)
		ck_assert_uint_ge(size[k], 700);
	free(a);
	free(b);
	free(one);
}
END_TEST

/* FedNLP's quantity skew at alpha 0.1, 10 clients, 1,600 sentences: few
 * draws give every client a sentence (about 1 in 600), and for seed 2 none
 * of the first 1,000 does, where fedrun used to give up. The draws go on
 * (up to 2^23 Gamma variates), and the one taken is the first that meets
 * the floor: every client has a sentence, and the cuts are its
 * proportions'. */
START_TEST(test_quantity_rare_draw)
{
	enum { N = 1600, K = 10 };
	uint32_t *a = malloc(N * sizeof a[0]);
	double q[K];
	ck_assert_int_eq(fedrun_partition_quantity(N, K, 0.1, 1, 2, 0, a, q), 0);
	uint64_t size[K] = {0}, from = 0;
	for (uint32_t s = 0; s < N; s++)
		size[a[s]]++;
	double cum = 0;
	for (int k = 0; k < K; k++) {
		cum += q[k];
		uint64_t to = k == K - 1 ? N : (uint64_t)floor(cum * N);
		ck_assert_uint_eq(size[k], to - from);
		ck_assert_uint_ge(size[k], 1);
		from = to;
	}
	free(a);
}
END_TEST

START_TEST(test_quantity_errors)
{
	uint32_t *a = malloc(NS * sizeof a[0]);
	ck_assert_int_eq(fedrun_partition_quantity(NS, 4, 0, 1, 1, 0, a, NULL), FEDRUN_EINVAL);
	ck_msg("Dirichlet alpha must be a positive number, got 0");
	ck_assert_int_eq(fedrun_partition_quantity(NS, 4, -2, 1, 1, 0, a, NULL), FEDRUN_EINVAL);
	ck_msg("got -2");
	ck_assert_int_eq(fedrun_partition_quantity(10, 11, 1, 1, 1, 0, a, NULL), FEDRUN_EINVAL);
	ck_msg("10 sentences cannot give each of 11 clients at least 1");
	ck_assert_int_eq(fedrun_partition_quantity(NS, 50, 1e-4, 1, 1, 0, a, NULL), FEDRUN_EINVAL);
	ck_msg("draws of Dirichlet(alpha = 0.0001) over client sizes, some of the 50 clients "
	       "got no sentence; use a larger alpha or fewer clients");
	ck_assert_int_eq(fedrun_partition_quantity(NS, 4, 1, 2250, 1, 0, a, NULL), FEDRUN_EINVAL);
	ck_msg("got fewer than 2250 sentences");
	free(a);
}
END_TEST

/* ---- streams and BPTT ---- */

START_TEST(test_bptt_windows)
{
	uint32_t ids[26];
	for (uint32_t i = 0; i < 26; i++)
		ids[i] = i;
	uint64_t off[2] = {0, 26};
	struct fedrun_stream s = {ids, 26, 1, off};
	struct fedrun_bptt it;
	/* batch 3: L = 26 / 3 = 8, rows 0..7, 8..15, 16..23 (24, 25 dropped);
	 * 7 steps per row in windows of 4: T = 4, then 3. */
	ck_assert_int_eq(fedrun_bptt_init(&it, &s, 3, 4), 0);
	ck_assert_uint_eq(it.row_len, 8);
	ck_assert_uint_eq(it.windows, 2);
	ck_assert_uint_eq(fedrun_bptt_targets(&it), 21);
	uint32_t in[12], tg[12];
	ck_assert_uint_eq(fedrun_bptt_window(&it, 0, in, tg), 4);
	static const uint32_t in0[] = {0, 8, 16, 1, 9, 17, 2, 10, 18, 3, 11, 19};
	static const uint32_t tg0[] = {1, 9, 17, 2, 10, 18, 3, 11, 19, 4, 12, 20};
	ck_assert_mem_eq(in, in0, sizeof in0);
	ck_assert_mem_eq(tg, tg0, sizeof tg0);
	ck_assert_uint_eq(fedrun_bptt_window(&it, 1, in, tg), 3);
	static const uint32_t in1[] = {4, 12, 20, 5, 13, 21, 6, 14, 22};
	static const uint32_t tg1[] = {5, 13, 21, 6, 14, 22, 7, 15, 23};
	ck_assert_mem_eq(in, in1, sizeof in1);
	ck_assert_mem_eq(tg, tg1, sizeof tg1);
	ck_assert_uint_eq(fedrun_bptt_window(&it, 2, in, tg), 0);

	/* bptt dividing L - 1 exactly: batch 1, L = 26 - 1 = 25 steps, 5 x 5. */
	ck_assert_int_eq(fedrun_bptt_init(&it, &s, 1, 5), 0);
	ck_assert_uint_eq(it.windows, 5);
	ck_assert_uint_eq(fedrun_bptt_window(&it, 4, in, tg), 5);
	ck_assert_uint_eq(in[0], 20);
	ck_assert_uint_eq(tg[4], 25);

	/* Too short: 5 tokens over batch 3 is one token per row. */
	s.n_tokens = 5;
	ck_assert_int_eq(fedrun_bptt_init(&it, &s, 3, 4), 0);
	ck_assert_uint_eq(it.windows, 0);
	ck_assert_uint_eq(fedrun_bptt_targets(&it), 0);
	ck_assert_uint_eq(fedrun_bptt_window(&it, 0, in, tg), 0);
	ck_assert_int_eq(fedrun_bptt_init(&it, &s, 0, 4), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_bptt_init(&it, &s, 3, 0), FEDRUN_EINVAL);
}
END_TEST

START_TEST(test_stream_sentence)
{
	uint32_t ids[] = {5, 6, 1, 7, 1, 8, 9, 10, 1};
	uint64_t off[] = {100, 103, 105, 109}; /* a view into a larger corpus */
	struct fedrun_stream s = {ids, 9, 3, off};
	uint64_t len;
	const uint32_t *p = fedrun_stream_sentence(&s, 1, &len);
	ck_assert_uint_eq(len, 2);
	ck_assert_ptr_eq(p, ids + 3);
	p = fedrun_stream_sentence(&s, 2, &len);
	ck_assert_uint_eq(len, 4);
	ck_assert_uint_eq(p[0], 8);
	ck_assert_ptr_null(fedrun_stream_sentence(&s, 3, &len));
}
END_TEST

/* ---- the "data" section ---- */

static json_t *parse_json(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	ck_assert_msg(j != NULL, "bad test JSON: %s", e.text);
	return j;
}

/* Builds from JSON text with the test data as base directory; returns the
 * code, and the object in *out when it succeeds. */
static int from_json(const char *text, uint64_t seed, json_t **section,
		     struct fedrun_textdata **out)
{
	fedrun_opts_set_base_dir(TEXT_DATA_DIR);
	*section = parse_json(text);
	return fedrun_textdata_from_json(*section, "data", seed, out);
}

static uint64_t total_sent(const struct fedrun_textdata *td, enum fedrun_split split)
{
	struct fedrun_stream s;
	ck_assert_int_eq(fedrun_textdata_stream(td, split, FEDRUN_ALL_CLIENTS, &s), 0);
	return s.n_sent;
}

START_TEST(test_data_iid)
{
	json_t *j;
	struct fedrun_textdata *td;
	int rc = from_json("{\"train\": [\"cat_a.txt\", \"cat_b.txt\", \"cat_c.txt\"],"
			   " \"valid\": \"valid.txt\", \"test\": \"test.txt\","
			   " \"partition\": {\"clients\": 4}, \"vocab\": {\"size\": 20}}",
			   1, &j, &td);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	ck_assert_uint_eq(fedrun_textdata_num_clients(td), 4);
	ck_assert_uint_eq(fedrun_vocab_size(fedrun_textdata_vocab(td)), 20);
	ck_assert_str_eq(fedrun_textdata_client_name(td, 3), "client3");
	ck_assert_ptr_null(fedrun_textdata_client_name(td, 4));
	/* 72 sentences in shards of 18; their streams tile the whole. */
	ck_assert_uint_eq(total_sent(td, FEDRUN_SPLIT_TRAIN), 72);
	struct fedrun_stream all, s;
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, FEDRUN_ALL_CLIENTS, &all),
			 0);
	const uint32_t *next = all.ids;
	for (int k = 0; k < 4; k++) {
		ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, k, &s), 0);
		ck_assert_uint_eq(s.n_sent, 18);
		ck_assert_ptr_eq(s.ids, next);
		ck_assert_uint_eq(s.ids[s.n_tokens - 1], FEDRUN_VOCAB_EOS);
		next += s.n_tokens;
	}
	ck_assert_ptr_eq(next, all.ids + all.n_tokens);
	/* valid and test are the server's. */
	ck_assert_uint_eq(total_sent(td, FEDRUN_SPLIT_VALID), 3);
	ck_assert_uint_eq(total_sent(td, FEDRUN_SPLIT_TEST), 1);
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_VALID, 0, &s), FEDRUN_ENOENT);
	ck_msg("held by the server");
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, 4, &s), FEDRUN_EINVAL);
	/* Defaults and resolved files are written back. */
	json_t *p = json_object_get(j, "partition");
	ck_assert_str_eq(json_string_value(json_object_get(p, "scheme")), "iid");
	ck_assert_str_eq(json_string_value(json_object_get(p, "eval")), "server");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(j, "vocab"), "min_count")), 1);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "train"), 1)),
			 D "cat_b.txt");
	ck_assert_str_eq(json_string_value(json_object_get(j, "valid")), D "valid.txt");

	/* Same seed: same shards; partition.seed overrides the run's. */
	struct fedrun_textdata *td2;
	json_t *j2;
	ck_assert_int_eq(from_json("{\"train\": [\"cat_a.txt\", \"cat_b.txt\", \"cat_c.txt\"],"
				   " \"partition\": {\"clients\": 4}, \"vocab\": {\"size\": 20}}",
				   1, &j2, &td2),
			 0);
	struct fedrun_stream s2;
	ck_assert_int_eq(fedrun_textdata_stream(td2, FEDRUN_SPLIT_TRAIN, 2, &s2), 0);
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, 2, &s), 0);
	ck_assert_uint_eq(s.n_tokens, s2.n_tokens);
	ck_assert_mem_eq(s.ids, s2.ids, s.n_tokens * sizeof(uint32_t));
	ck_assert_int_eq(fedrun_textdata_stream(td2, FEDRUN_SPLIT_VALID, FEDRUN_ALL_CLIENTS, &s2),
			 FEDRUN_ENOENT);
	ck_msg("no valid data");
	fedrun_textdata_destroy(td2);
	json_decref(j2);
	ck_assert_int_eq(from_json("{\"train\": [\"cat_a.txt\", \"cat_b.txt\", \"cat_c.txt\"],"
				   " \"partition\": {\"clients\": 4, \"seed\": 99},"
				   " \"vocab\": {\"size\": 20}}",
				   1, &j2, &td2),
			 0);
	ck_assert_int_eq(fedrun_textdata_stream(td2, FEDRUN_SPLIT_TRAIN, 2, &s2), 0);
	ck_assert(s.n_tokens != s2.n_tokens ||
		  memcmp(s.ids, s2.ids, s.n_tokens * sizeof(uint32_t)) != 0);
	fedrun_textdata_destroy(td2);
	json_decref(j2);
	fedrun_textdata_destroy(td);
	json_decref(j);
}
END_TEST

START_TEST(test_data_eval_clients)
{
	json_t *j;
	struct fedrun_textdata *td;
	int rc = from_json("{\"train\": \"cat_a.txt\", \"valid\": \"cat_b.txt\","
			   " \"partition\": {\"clients\": 3, \"eval\": \"clients\"}}",
			   1, &j, &td);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	struct fedrun_stream s;
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_VALID, k, &s), 0);
		ck_assert_uint_eq(s.n_sent, 8); /* 24 / 3 */
		ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, k, &s), 0);
		ck_assert_uint_eq(s.n_sent, 10); /* 30 / 3 */
	}
	/* cat_b's words are not in cat_a's vocabulary. */
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_VALID, 0, &s), 0);
	ck_assert_uint_eq(s.ids[0], FEDRUN_VOCAB_UNK);
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TEST, FEDRUN_ALL_CLIENTS, &s),
			 FEDRUN_ENOENT);
	fedrun_textdata_destroy(td);
	json_decref(j);
}
END_TEST

START_TEST(test_data_files)
{
	json_t *j;
	struct fedrun_textdata *td;
	int rc = from_json("{\"train\": [\"cat_a.txt\", \"cat_b.txt\", \"cat_c.txt\"],"
			   " \"valid\": [\"cat_c.txt\", \"valid.txt\", \"test.txt\"],"
			   " \"test\": \"test.txt\", \"partition\": {\"scheme\": \"files\"},"
			   " \"lowercase\": true}",
			   1, &j, &td);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	ck_assert_uint_eq(fedrun_textdata_num_clients(td), 3);
	ck_assert_str_eq(fedrun_textdata_client_name(td, 1), "cat_b");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(j, "partition"), "clients")), 3);
	static const uint64_t train[] = {30, 24, 18}, valid[] = {18, 3, 1};
	struct fedrun_stream s;
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, k, &s), 0);
		ck_assert_uint_eq(s.n_sent, train[k]);
		ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_VALID, k, &s), 0);
		ck_assert_uint_eq(s.n_sent, valid[k]);
	}
	/* Client 1's training data is cat_b.txt, sentence for sentence. */
	struct fedrun_corpus c;
	fedrun_corpus_init(&c);
	ck_assert_int_eq(fedrun_corpus_read(&c, fedrun_textdata_vocab(td), D "cat_b.txt", &lower),
			 0);
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, 1, &s), 0);
	ck_assert_uint_eq(s.n_tokens, c.n_tokens);
	ck_assert_mem_eq(s.ids, c.ids, c.n_tokens * sizeof(uint32_t));
	fedrun_corpus_fini(&c);
	ck_assert_uint_eq(total_sent(td, FEDRUN_SPLIT_TEST), 1);
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TEST, 1, &s), FEDRUN_ENOENT);
	fedrun_textdata_destroy(td);
	json_decref(j);

	rc = from_json("{\"train\": [\"cat_a.txt\", \"cat_b.txt\"], \"valid\": [\"cat_c.txt\","
		       " \"valid.txt\", \"test.txt\"], \"partition\": {\"scheme\": \"files\"}}",
		       1, &j, &td);
	ck_assert_int_eq(rc, FEDRUN_ECONFIG);
	ck_msg("data.valid: 3 files for 2 clients");
	json_decref(j);
	rc = from_json("{\"train\": [\"cat_a.txt\", \"cat_b.txt\"],"
		       " \"partition\": {\"scheme\": \"files\", \"clients\": 3}}",
		       1, &j, &td);
	ck_assert_int_eq(rc, FEDRUN_ECONFIG);
	ck_msg("data.partition.clients: 3, but scheme \"files\"");
	json_decref(j);
}
END_TEST

START_TEST(test_data_client_list)
{
	json_t *j;
	struct fedrun_textdata *td;
	int rc =
	    from_json("{\"clients\": ["
		      " {\"name\": \"animals\", \"train\": \"cat_a.txt\", \"test\": \"test.txt\"},"
		      " {\"train\": [\"cat_b.txt\", \"cat_c.txt\"], \"valid\": \"valid.txt\"}]}",
		      1, &j, &td);
	ck_assert_msg(rc == 0, "%s", fedrun_error_message());
	ck_assert_uint_eq(fedrun_textdata_num_clients(td), 2);
	ck_assert_str_eq(fedrun_textdata_client_name(td, 0), "animals");
	ck_assert_str_eq(fedrun_textdata_client_name(td, 1), "client1");
	struct fedrun_stream s;
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, 1, &s), 0);
	ck_assert_uint_eq(s.n_sent, 42);
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_VALID, 0, &s), FEDRUN_ENOENT);
	ck_msg("client animals has no valid data");
	ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_VALID, 1, &s), 0);
	ck_assert_uint_eq(s.n_sent, 3);
	ck_assert_uint_eq(total_sent(td, FEDRUN_SPLIT_TEST), 1);
	fedrun_textdata_destroy(td);
	json_decref(j);
}
END_TEST

START_TEST(test_data_dirichlet)
{
#define DIRICHLET_CFG(alpha)                                                                       \
	"{\"train\": [\"cat_a.txt\", \"cat_b.txt\", \"cat_c.txt\"],"                               \
	" \"partition\": {\"scheme\": \"dirichlet\", \"clients\": 4, \"alpha\": " alpha "}}"
	uint64_t first[4];
	for (int run = 0; run < 3; run++) {
		json_t *j;
		struct fedrun_textdata *td;
		int rc =
		    from_json(run < 2 ? DIRICHLET_CFG("0.3") : DIRICHLET_CFG("1000"), 11, &j, &td);
		ck_assert_msg(rc == 0, "%s", fedrun_error_message());
		uint64_t sum = 0;
		for (int k = 0; k < 4; k++) {
			struct fedrun_stream s;
			ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, k, &s), 0);
			ck_assert_uint_ge(s.n_sent, 1);
			sum += s.n_sent;
			if (run == 0)
				first[k] = s.n_sent;
			else if (run == 1)
				ck_assert_uint_eq(s.n_sent, first[k]); /* same seed */
			else /* alpha 1000: 7.5 of cat_a, 6 of cat_b, 4.5 of cat_c */
				ck_assert(s.n_sent >= 15 && s.n_sent <= 21);
		}
		ck_assert_uint_eq(sum, 72);
		ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "partition"),
								    "min_sentences")),
				 1);
		fedrun_textdata_destroy(td);
		json_decref(j);
	}
}
END_TEST

/* data.partition.scheme "quantity": sizes by Dir(alpha), fixed by the seed,
 * held-out data cut by the same proportions with eval "clients". */
START_TEST(test_data_quantity)
{
#define QUANTITY_CFG(alpha)                                                                        \
	"{\"train\": [\"cat_a.txt\", \"cat_b.txt\", \"cat_c.txt\"], \"valid\": \"cat_a.txt\","    \
	" \"partition\": {\"scheme\": \"quantity\", \"clients\": 4, \"alpha\": " alpha            \
	", \"eval\": \"clients\"}}"
	uint64_t first[4], valid[4];
	for (int run = 0; run < 3; run++) {
		json_t *j;
		struct fedrun_textdata *td;
		int rc = from_json(run < 2 ? QUANTITY_CFG("0.5") : QUANTITY_CFG("1e6"), 11, &j, &td);
		ck_assert_msg(rc == 0, "%s", fedrun_error_message());
		uint64_t sum = 0, vsum = 0;
		for (int k = 0; k < 4; k++) {
			struct fedrun_stream s, v;
			ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, k, &s), 0);
			ck_assert_int_eq(fedrun_textdata_stream(td, FEDRUN_SPLIT_VALID, k, &v), 0);
			ck_assert_uint_ge(s.n_sent, 1);
			sum += s.n_sent;
			vsum += v.n_sent;
			if (run == 0) {
				first[k] = s.n_sent;
				valid[k] = v.n_sent;
			} else if (run == 1) { /* same seed */
				ck_assert_uint_eq(s.n_sent, first[k]);
				ck_assert_uint_eq(v.n_sent, valid[k]);
			} else { /* alpha 1e6: 18 each and 7.5, within one (rounding) */
				ck_assert(s.n_sent >= 17 && s.n_sent <= 19);
				ck_assert(v.n_sent >= 6 && v.n_sent <= 9);
			}
		}
		ck_assert_uint_eq(sum, 72);
		ck_assert_uint_eq(vsum, 30);
		ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "partition"),
								    "min_sentences")),
				 1);
		fedrun_textdata_destroy(td);
		json_decref(j);
	}
	/* Skewed, and the held-out sizes follow the training ones: valid has
	 * 30/72 of each client's training share, within rounding. */
	uint64_t most = 0, least = 72;
	for (int k = 0; k < 4; k++) {
		most = first[k] > most ? first[k] : most;
		least = first[k] < least ? first[k] : least;
		ck_assert_msg(fabs((double)valid[k] - 30.0 * (double)first[k] / 72) <= 1.5,
			      "client %d: train %llu, valid %llu", k, (unsigned long long)first[k],
			      (unsigned long long)valid[k]);
	}
	ck_assert_uint_gt(most, 2 * least);
#undef QUANTITY_CFG
}
END_TEST

START_TEST(test_data_errors)
{
	static const struct {
		const char *json;
		int rc;
		const char *msg;
	} cases[] = {
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"clients\": 2}, \"bogus\": 1}",
	     FEDRUN_ECONFIG, "data.bogus: unknown key"},
	    {"{\"valid\": \"cat_a.txt\"}", FEDRUN_ECONFIG, "data.train: required key is missing"},
	    {"{\"train\": [\"cat_a.txt\", \"nope.txt\"], \"partition\": {\"clients\": 2}}",
	     FEDRUN_ENOENT, "data.train[1]: cannot read file"},
	    {"{\"train\": 3, \"partition\": {\"clients\": 2}}", FEDRUN_ECONFIG,
	     "data.train: expected a file name or an array of them, got 3"},
	    {"{\"train\": [], \"partition\": {\"clients\": 2}}", FEDRUN_ECONFIG,
	     "data.train: empty array"},
	    {"{\"train\": \"cat_a.txt\"}", FEDRUN_ECONFIG,
	     "data.partition.clients: required key is missing"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"clients\": 2, \"min_sentences\": 3}}",
	     FEDRUN_ECONFIG, "data.partition.min_sentences: only for schemes \"dirichlet\" and \"quantity\""},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"clients\": 2, \"alpha\": 1}}",
	     FEDRUN_ECONFIG, "data.partition.alpha: only for schemes \"dirichlet\" and \"quantity\""},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"scheme\": \"dirichlet\", "
	     "\"clients\": 2}}",
	     FEDRUN_ECONFIG, "data.partition.alpha: required key is missing"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"scheme\": \"quantity\", "
	     "\"clients\": 2}}",
	     FEDRUN_ECONFIG, "data.partition.alpha: required key is missing (scheme \"quantity\")"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"scheme\": \"quantity\", "
	     "\"clients\": 31, \"alpha\": 1}}",
	     FEDRUN_EINVAL, "data.train: partition: 30 sentences cannot give each of 31 clients"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"scheme\": \"quantity\", "
	     "\"clients\": 5, \"alpha\": 1, \"min_sentences\": 7}}",
	     FEDRUN_EINVAL, "data.train: partition: 30 sentences cannot give each of 5 clients at least 7"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"scheme\": \"dirichlet\", "
	     "\"clients\": 2, \"alpha\": 0}}",
	     FEDRUN_ECONFIG, "data.partition.alpha: expected a number in (0, 1000000000]"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"scheme\": \"random\", \"clients\": 2}}",
	     FEDRUN_ECONFIG, "data.partition.scheme: expected one of {iid,files,dirichlet,quantity}"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"clients\": 31}}", FEDRUN_EINVAL,
	     "data.train: partition: 30 sentences cannot be split over 31 clients"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"clients\": 2},"
	     " \"vocab\": {\"file\": \"vocab.txt\", \"size\": 10}}",
	     FEDRUN_ECONFIG, "data.vocab: size and min_count apply when the vocabulary is built"},
	    {"{\"train\": \"cat_a.txt\", \"partition\": {\"clients\": 2},"
	     " \"vocab\": {\"file\": \"bad_vocab.txt\"}}",
	     FEDRUN_EFORMAT, "data.vocab: " D "bad_vocab.txt:3: duplicate word"},
	    {"{\"train\": \"bad_utf8.txt\", \"partition\": {\"clients\": 1}}", FEDRUN_EFORMAT,
	     "data.train (building the vocabulary): " D "bad_utf8.txt:2:5: invalid UTF-8"},
	    {"{\"train\": \"cat_a.txt\", \"valid\": \"empty.txt\", \"partition\": {\"clients\": "
	     "1}}",
	     FEDRUN_EFORMAT, "empty.txt: empty file"},
	    {"{\"clients\": [{\"train\": \"cat_a.txt\"}], \"partition\": {\"clients\": 1}}",
	     FEDRUN_ECONFIG, "data.partition: not allowed with data.clients"},
	    {"{\"clients\": [{\"valid\": \"cat_a.txt\"}]}", FEDRUN_ECONFIG,
	     "data.clients[0].train: required key is missing"},
	    {"{\"clients\": [{\"name\": \"x\", \"train\": \"cat_a.txt\"}, {\"name\": \"x\", "
	     "\"train\": \"cat_b.txt\"}]}",
	     FEDRUN_ECONFIG, "data.clients[1].name: \"x\" is also the name of clients[0]"},
	    {"{\"train\": [\"cat_a.txt\", \"cat_b.txt\"], \"valid\": \"cat_c.txt\","
	     " \"partition\": {\"scheme\": \"dirichlet\", \"clients\": 2, \"alpha\": 1,"
	     " \"eval\": \"clients\"}}",
	     FEDRUN_ECONFIG, "data.valid: 1 files, but train has 2"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *j;
		struct fedrun_textdata *td = (void *)1;
		fedrun_error_clear();
		int rc = from_json(cases[i].json, 1, &j, &td);
		ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d, message %s", i, rc,
			      fedrun_error_message());
		ck_assert_ptr_null(td);
		ck_msg(cases[i].msg);
		json_decref(j);
	}
}
END_TEST

Suite *text_suite(void);
Suite *text_suite(void)
{
	Suite *s = suite_create("text");
	TCase *tc = tcase_create("vocab");
	tcase_add_test(tc, test_vocab_build_order);
	tcase_add_test(tc, test_vocab_build_lowercase);
	tcase_add_test(tc, test_vocab_build_cap);
	tcase_add_test(tc, test_vocab_build_min_count);
	tcase_add_test(tc, test_vocab_lookup);
	tcase_add_test(tc, test_vocab_many_words);
	tcase_add_test(tc, test_vocab_save_load);
	tcase_add_test(tc, test_vocab_load_format);
	tcase_add_test(tc, test_vocab_load_errors);
	tcase_add_test(tc, test_vocab_build_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("corpus");
	tcase_add_test(tc, test_corpus_read);
	tcase_add_test(tc, test_corpus_lowercase);
	tcase_add_test(tc, test_corpus_errors);
	tcase_add_test(tc, test_utf8);
	suite_add_tcase(s, tc);

	tc = tcase_create("partition");
	tcase_add_test(tc, test_iid_shards);
	tcase_add_test(tc, test_group);
	tcase_add_test(tc, test_dirichlet_props);
	tcase_add_test(tc, test_dirichlet_large_alpha);
	tcase_add_test(tc, test_dirichlet_small_alpha);
	tcase_add_test(tc, test_dirichlet_errors);
	tcase_add_test(tc, test_quantity_sizes);
	tcase_add_test(tc, test_quantity_rare_draw);
	tcase_add_test(tc, test_quantity_errors);
	/* test_quantity_errors' alpha 1e-4 case draws the whole budget of
	 * 2^23 Gamma variates before it refuses: about 1.5 s here, ten times
	 * that under AddressSanitizer, past check's default 4 s. The limit
	 * only stops a hang. */
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);

	tc = tcase_create("bptt");
	tcase_add_test(tc, test_bptt_windows);
	tcase_add_test(tc, test_stream_sentence);
	suite_add_tcase(s, tc);

	tc = tcase_create("data");
	tcase_add_test(tc, test_data_iid);
	tcase_add_test(tc, test_data_eval_clients);
	tcase_add_test(tc, test_data_files);
	tcase_add_test(tc, test_data_client_list);
	tcase_add_test(tc, test_data_dirichlet);
	tcase_add_test(tc, test_data_quantity);
	tcase_add_test(tc, test_data_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(text_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
