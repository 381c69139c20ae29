/* SPDX-License-Identifier: Apache-2.0 */
/* BLEU and chrF against sacreBLEU 2.6.0 itself: every vector of
 * tests/data/sacrebleu/vectors.jsonl (see its README) must give the same
 * counts, totals and lengths exactly, the score within 1e-9 relative, and the
 * same signature. */
#include "config.h"
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"
#include "fedrun/io.h"

#define REL_TOL 1e-9
#define MAX_REPORTS 10

/* One vector: the JSON object and its text as C arrays. */
struct vec {
	json_t *obj;
	const char *metric;
	size_t n, nrefs;
	const char **hyps;
	const char ***refs; /* refs[r][i] */
};

static const char *vectors_path(char *buf, size_t size)
{
	const char *srcdir = getenv("srcdir");
	if (srcdir) {
		snprintf(buf, size, "%s/tests/data/sacrebleu/vectors.jsonl", srcdir);
		FILE *fp = fopen(buf, "r");
		if (fp) {
			fclose(fp);
			return buf;
		}
	}
	return FEDRUN_BLEU_VECTORS;
}

static const char *str_of(json_t *v)
{
	ck_assert_msg(json_is_string(v), "expected a string");
	/* a NUL inside would silently shorten the C string */
	ck_assert_uint_eq(strlen(json_string_value(v)), json_string_length(v));
	return json_string_value(v);
}

static void vec_load(struct vec *v, json_t *obj)
{
	memset(v, 0, sizeof *v);
	v->obj = obj;
	v->metric = str_of(json_object_get(obj, "metric"));
	json_t *hyps = json_object_get(obj, "hyps"), *refs = json_object_get(obj, "refs");
	ck_assert(json_is_array(hyps) && json_is_array(refs));
	v->n = json_array_size(hyps);
	v->nrefs = json_array_size(refs);
	ck_assert(v->n > 0 && v->nrefs > 0);
	v->hyps = calloc(v->n, sizeof v->hyps[0]);
	v->refs = calloc(v->nrefs, sizeof v->refs[0]);
	ck_assert(v->hyps && v->refs);
	for (size_t i = 0; i < v->n; i++)
		v->hyps[i] = str_of(json_array_get(hyps, i));
	for (size_t r = 0; r < v->nrefs; r++) {
		json_t *stream = json_array_get(refs, r);
		ck_assert_uint_eq(json_array_size(stream), v->n);
		v->refs[r] = calloc(v->n, sizeof v->refs[r][0]);
		ck_assert(v->refs[r]);
		for (size_t i = 0; i < v->n; i++)
			v->refs[r][i] = str_of(json_array_get(stream, i));
	}
}

static void vec_free(struct vec *v)
{
	for (size_t r = 0; r < v->nrefs; r++)
		free(v->refs[r]);
	free(v->refs);
	free(v->hyps);
}

/* Calls fn on every vector whose metric is `metric`; returns how many. */
static size_t for_each_vector(const char *metric, void (*fn)(const struct vec *, void *), void *ud)
{
	char pathbuf[4096], *data;
	size_t len, count = 0;
	const char *path = vectors_path(pathbuf, sizeof pathbuf);
	ck_assert_msg(fedrun_read_file(path, &data, &len) == 0, "%s", fedrun_error_message());
	for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
		json_error_t err;
		json_t *obj = json_loads(line, 0, &err);
		ck_assert_msg(obj, "%s: %s", path, err.text);
		struct vec v;
		vec_load(&v, obj);
		if (!strcmp(v.metric, metric)) {
			fn(&v, ud);
			count++;
		}
		vec_free(&v);
		json_decref(obj);
	}
	free(data);
	return count;
}

struct tally {
	size_t failures;
	double max_rel;
};

static bool close_enough(struct tally *t, double got, double want)
{
	double diff = fabs(got - want);
	double rel = want != 0 ? diff / fabs(want) : diff;
	if (rel > t->max_rel)
		t->max_rel = rel;
	return want == 0 ? got == 0 : rel <= REL_TOL;
}

static void report(struct tally *t, const struct vec *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(struct tally *t, const struct vec *v, const char *fmt, ...)
{
	if (t->failures++ < MAX_REPORTS) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "%s vector, first hypothesis \"%s\": ", v->metric, v->hyps[0]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

static int64_t int_field(const struct vec *v, const char *key, size_t idx, bool array)
{
	json_t *f = json_object_get(v->obj, key);
	if (array)
		f = json_array_get(f, idx);
	ck_assert_msg(json_is_integer(f), "field %s", key);
	return json_integer_value(f);
}

static double num_field(const struct vec *v, const char *key)
{
	json_t *f = json_object_get(v->obj, key);
	ck_assert_msg(json_is_number(f), "field %s", key);
	return json_number_value(f);
}

static void bleu_opts_of(const struct vec *v, struct fedrun_bleu_opts *o)
{
	fedrun_bleu_opts_init(o);
	ck_assert_int_eq(
	    fedrun_bleu_tokenizer_parse(str_of(json_object_get(v->obj, "tokenize")), &o->tokenize),
	    0);
	ck_assert_int_eq(
	    fedrun_bleu_smooth_parse(str_of(json_object_get(v->obj, "smooth")), &o->smooth), 0);
	o->effective_order = json_is_true(json_object_get(v->obj, "effective_order"));
}

static void check_corpus_bleu(const struct vec *v, void *ud)
{
	struct tally *t = ud;
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_score s;
	char sig[FEDRUN_BLEU_LINE_MAX];
	bleu_opts_of(v, &o);
	int rc = fedrun_bleu_corpus_score(&o, v->n, v->hyps, v->nrefs,
					  (const char *const *const *)v->refs, &s);
	if (rc) {
		report(t, v, "error %s", fedrun_error_message());
		return;
	}
	for (size_t k = 0; k < FEDRUN_BLEU_ORDER; k++) {
		if (s.counts[k] != int_field(v, "counts", k, true) ||
		    s.totals[k] != int_field(v, "totals", k, true))
			report(t, v, "order %zu: counts %lld/%lld, expected %lld/%lld", k + 1,
			       (long long)s.counts[k], (long long)s.totals[k],
			       (long long)int_field(v, "counts", k, true),
			       (long long)int_field(v, "totals", k, true));
	}
	if (s.sys_len != int_field(v, "sys_len", 0, false) ||
	    s.ref_len != int_field(v, "ref_len", 0, false))
		report(t, v, "lengths %lld/%lld", (long long)s.sys_len, (long long)s.ref_len);
	if (!close_enough(t, s.score, num_field(v, "score")))
		report(t, v, "score %.17g, expected %.17g", s.score, num_field(v, "score"));
	if (!close_enough(t, s.bp, num_field(v, "bp")))
		report(t, v, "bp %.17g, expected %.17g", s.bp, num_field(v, "bp"));
	ck_assert_int_eq(fedrun_bleu_signature(&o, s.nrefs, false, sig, sizeof sig), 0);
	if (strcmp(sig, str_of(json_object_get(v->obj, "signature"))))
		report(t, v, "signature %s", sig);
}

static void check_sentence_bleu(const struct vec *v, void *ud)
{
	struct tally *t = ud;
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_score s;
	const char *refs[8];
	bleu_opts_of(v, &o);
	ck_assert(o.effective_order);
	ck_assert_uint_eq(v->n, 1);
	ck_assert_uint_le(v->nrefs, 8);
	for (size_t r = 0; r < v->nrefs; r++)
		refs[r] = v->refs[r][0];
	int rc = fedrun_bleu_sentence_score(&o, v->hyps[0], v->nrefs, refs, &s);
	if (rc)
		report(t, v, "error %s", fedrun_error_message());
	else if (!close_enough(t, s.score, num_field(v, "score")))
		report(t, v, "score %.17g, expected %.17g", s.score, num_field(v, "score"));
}

static void check_chrf(const struct vec *v, void *ud)
{
	struct tally *t = ud;
	struct fedrun_chrf_opts o;
	struct fedrun_chrf_score s;
	char sig[FEDRUN_BLEU_LINE_MAX];
	fedrun_chrf_opts_init(&o);
	o.char_order = (int)int_field(v, "char_order", 0, false);
	o.word_order = (int)int_field(v, "word_order", 0, false);
	o.beta = (int)int_field(v, "beta", 0, false);
	int rc = fedrun_chrf_corpus_score(&o, v->n, v->hyps, v->nrefs,
					  (const char *const *const *)v->refs, &s);
	if (rc) {
		report(t, v, "error %s", fedrun_error_message());
		return;
	}
	if (!close_enough(t, s.score, num_field(v, "score")))
		report(t, v, "score %.17g, expected %.17g", s.score, num_field(v, "score"));
	ck_assert_int_eq(fedrun_chrf_signature(&o, s.nrefs, false, sig, sizeof sig), 0);
	if (strcmp(sig, str_of(json_object_get(v->obj, "signature"))))
		report(t, v, "signature %s", sig);
}

static void run_metric(const char *metric, void (*fn)(const struct vec *, void *), size_t expected)
{
	struct tally t = {0, 0.0};
	size_t n = for_each_vector(metric, fn, &t);
	fprintf(stderr, "%s: %zu vectors, %zu failures, max relative error %.3g\n", metric, n,
		t.failures, t.max_rel);
	ck_assert_uint_eq(n, expected);
	ck_assert_uint_eq(t.failures, 0);
}

/* The README's counts: 180 corpus BLEU, 1515 sentence BLEU, 60 chrF. */
START_TEST(test_vectors_corpus_bleu)
{
	run_metric("bleu", check_corpus_bleu, 180);
}
END_TEST

START_TEST(test_vectors_sentence_bleu)
{
	run_metric("sentence_bleu", check_sentence_bleu, 1515);
}
END_TEST

START_TEST(test_vectors_chrf)
{
	run_metric("chrf", check_chrf, 60);
}
END_TEST

/* ---- hand-checked cases ------------------------------------------------ */

static const char *const one_ref[] = {"the cat sat on the mat"};

START_TEST(test_exact_match_is_100)
{
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_score s;
	fedrun_bleu_opts_init(&o);
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, one_ref[0], 1, one_ref, &s), 0);
	ck_assert_double_eq_tol(s.score, 100.0, 1e-12);
	ck_assert_int_eq(s.counts[0], 6);
	ck_assert_int_eq(s.totals[3], 3);
	ck_assert_double_eq(s.bp, 1.0);

	struct fedrun_chrf_opts co;
	struct fedrun_chrf_score cs;
	fedrun_chrf_opts_init(&co);
	ck_assert_int_eq(fedrun_chrf_sentence_score(&co, one_ref[0], 1, one_ref, &cs), 0);
	ck_assert_double_eq_tol(cs.score, 100.0, 1e-12);
}
END_TEST

START_TEST(test_empty_hypothesis_scores_zero)
{
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_score s;
	fedrun_bleu_opts_init(&o);
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "", 1, one_ref, &s), 0);
	ck_assert_double_eq(s.score, 0.0);
	ck_assert_int_eq(s.sys_len, 0);
	ck_assert_int_eq(s.ref_len, 6);
	ck_assert_double_eq(s.bp, 0.0);

	struct fedrun_chrf_opts co;
	struct fedrun_chrf_score cs;
	fedrun_chrf_opts_init(&co);
	ck_assert_int_eq(fedrun_chrf_sentence_score(&co, "", 1, one_ref, &cs), 0);
	ck_assert_double_eq(cs.score, 0.0);
}
END_TEST

/* Two unigram matches out of three, no bigram: exp smoothing halves the
 * floor per missing order; effective order stops at the orders present. */
START_TEST(test_smoothing_by_hand)
{
	const char *refs[] = {"a b c d"};
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_score s;
	fedrun_bleu_opts_init(&o);
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "a x c", 1, refs, &s), 0);
	ck_assert_int_eq(s.counts[0], 2);
	ck_assert_int_eq(s.counts[1], 0);
	ck_assert_int_eq(s.totals[1], 2);
	ck_assert_int_eq(s.totals[2], 1);
	ck_assert_int_eq(s.totals[3], 0);
	double bp = exp(1.0 - 4.0 / 3.0);
	/* no effective order: p4 has no 4-gram, so its log is the floor */
	ck_assert_double_eq(s.score, 0.0);
	o.effective_order = true;
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "a x c", 1, refs, &s), 0);
	double p1 = 100.0 * 2 / 3, p2 = 100.0 / (2 * 2), p3 = 100.0 / (4 * 1);
	ck_assert_double_eq_tol(s.precisions[1], p2, 1e-12);
	ck_assert_double_eq_tol(s.score, bp * exp((log(p1) + log(p2) + log(p3)) / 3), 1e-9);

	o.smooth = FEDRUN_BLEU_SMOOTH_FLOOR;
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "a x c", 1, refs, &s), 0);
	ck_assert_double_eq_tol(s.precisions[1], 100.0 * 0.1 / 2, 1e-12);
	o.smooth = FEDRUN_BLEU_SMOOTH_ADD_K;
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "a x c", 1, refs, &s), 0);
	ck_assert_double_eq_tol(s.precisions[1], 100.0 * 1 / 3, 1e-12);
	ck_assert_double_eq_tol(s.precisions[3], 100.0 * 1 / 1, 1e-12);
	ck_assert_int_eq(s.counts[1], 0); /* reported unsmoothed */
	o.smooth = FEDRUN_BLEU_SMOOTH_NONE;
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "a x c", 1, refs, &s), 0);
	ck_assert_double_eq(s.precisions[1], 0.0);
	ck_assert_double_eq(s.score, 0.0);
}
END_TEST

START_TEST(test_closest_ref_len_prefers_shorter)
{
	/* hypothesis of 3 tokens, references of 2 and 4: equally close */
	const char *refs[] = {"a b c d", "a b"};
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_score s;
	fedrun_bleu_opts_init(&o);
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "a b c", 2, refs, &s), 0);
	ck_assert_int_eq(s.ref_len, 2);
	ck_assert_int_eq(s.nrefs, 2);
	/* clipping takes the maximum count over references */
	const char *refs2[] = {"x x y", "x y y"};
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "x x y y", 2, refs2, &s), 0);
	ck_assert_int_eq(s.counts[0], 4);
}
END_TEST

/* NULL references are absent (nrefs:var when the count varies); an empty
 * string is a reference of length 0, as sacreBLEU 2.6.0 keeps it. */
START_TEST(test_absent_and_empty_references)
{
	const char *s0[] = {"a b c", "d e f"};
	const char *s1[] = {"a b c", NULL};
	const char *const *streams[] = {s0, s1};
	const char *hyps[] = {"a b c", "d e f"};
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_score s;
	char sig[FEDRUN_BLEU_LINE_MAX];
	fedrun_bleu_opts_init(&o);
	ck_assert_int_eq(fedrun_bleu_corpus_score(&o, 2, hyps, 2, streams, &s), 0);
	ck_assert_int_eq(s.nrefs, -1);
	ck_assert_int_eq(fedrun_bleu_signature(&o, s.nrefs, false, sig, sizeof sig), 0);
	ck_assert_str_eq(sig, "nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");

	/* "" is a reference: still two per segment, and its length 0 is
	 * the closest to a one-token hypothesis */
	const char *e1[] = {"a b c", ""};
	const char *const *estreams[] = {s0, e1};
	ck_assert_int_eq(fedrun_bleu_corpus_score(&o, 2, hyps, 2, estreams, &s), 0);
	ck_assert_int_eq(s.nrefs, 2);
	const char *short_refs[] = {"a b c", ""};
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "a", 2, short_refs, &s), 0);
	ck_assert_int_eq(s.ref_len, 0);

	/* no reference at all for a segment is an error that names it */
	const char *n0[] = {"a b c", NULL};
	const char *const *nstreams[] = {n0, s1};
	ck_assert_int_eq(fedrun_bleu_corpus_score(&o, 2, hyps, 2, nstreams, &s), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "segment 2"));
	struct fedrun_chrf_opts co;
	struct fedrun_chrf_score cs;
	fedrun_chrf_opts_init(&co);
	ck_assert_int_eq(fedrun_chrf_corpus_score(&co, 2, hyps, 2, nstreams, &cs), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_chrf_corpus_score(&co, 2, hyps, 2, streams, &cs), 0);
	ck_assert_int_eq(cs.nrefs, -1);
	ck_assert_int_eq(fedrun_chrf_corpus_score(&co, 2, hyps, 2, estreams, &cs), 0);
	ck_assert_int_eq(cs.nrefs, 2);
}
END_TEST

START_TEST(test_signatures_and_format)
{
	struct fedrun_bleu_opts o;
	char buf[FEDRUN_BLEU_LINE_MAX];
	fedrun_bleu_opts_init(&o);
	o.smooth = FEDRUN_BLEU_SMOOTH_FLOOR;
	o.lowercase = true;
	o.tokenize = FEDRUN_BLEU_TOK_INTL;
	ck_assert_int_eq(fedrun_bleu_signature(&o, 1, false, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "nrefs:1|case:lc|eff:no|tok:intl|smooth:floor[0.10]|version:2.6.0");
	o.smooth = FEDRUN_BLEU_SMOOTH_ADD_K;
	o.effective_order = true;
	ck_assert_int_eq(fedrun_bleu_signature(&o, 3, true, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "#:3|c:lc|e:yes|tok:intl|s:add-k[1.00]|v:2.6.0");
	/* too small a buffer is an error, not a truncation */
	ck_assert_int_eq(fedrun_bleu_signature(&o, 3, true, buf, 10), FEDRUN_EINVAL);

	struct fedrun_bleu_score s;
	memset(&s, 0, sizeof s);
	fedrun_bleu_opts_init(&o);
	s.score = 38.25;
	s.precisions[0] = 71.43;
	s.precisions[1] = 46.15;
	s.precisions[2] = 31.58;
	s.precisions[3] = 22.22;
	s.bp = 0.9672;
	s.sys_len = 30;
	s.ref_len = 31;
	s.nrefs = 1;
	ck_assert_int_eq(fedrun_bleu_format(&o, &s, 2, false, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = "
			      "38.25 71.4/46.1/31.6/22.2 (BP = 0.967 ratio = 0.968 hyp_len = 30 "
			      "ref_len = 31)");

	struct fedrun_chrf_opts co;
	struct fedrun_chrf_score cs = {55.66, 2};
	fedrun_chrf_opts_init(&co);
	ck_assert_int_eq(fedrun_chrf_format(&co, &cs, 1, false, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "chrF2|nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0 "
			      "= 55.7");
	co.word_order = 2;
	co.whitespace = true;
	co.eps_smoothing = true;
	ck_assert_int_eq(fedrun_chrf_format(&co, &cs, 1, true, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "chrF2++|#:2|c:mixed|e:no|nc:6|nw:2|s:yes|v:2.6.0 = 55.7");
}
END_TEST

/* chrF counts characters, not bytes: "ü" against "u" shares nothing, and a
 * two-character hypothesis has exactly one bigram. */
START_TEST(test_chrf_counts_code_points)
{
	struct fedrun_chrf_opts o;
	struct fedrun_chrf_stats st;
	const char *refs[] = {"üb"};
	size_t used;
	fedrun_chrf_opts_init(&o);
	ck_assert_int_eq(fedrun_chrf_segment_stats(&o, "ü b", 1, refs, &st, &used), 0);
	ck_assert_uint_eq(used, 1);
	ck_assert_int_eq(st.v[0], 2); /* unigrams of "üb" (space removed) */
	ck_assert_int_eq(st.v[2], 2);
	ck_assert_int_eq(st.v[3], 1); /* one bigram */
	ck_assert_int_eq(st.v[5], 1);
	ck_assert_int_eq(st.v[6], 0); /* no trigram: no hypothesis count either */
	const char *refs_u[] = {"ub"};
	ck_assert_int_eq(fedrun_chrf_segment_stats(&o, "üb", 1, refs_u, &st, &used), 0);
	ck_assert_int_eq(st.v[2], 1);
	ck_assert_int_eq(st.v[5], 0);
}
END_TEST

/* Of two references, the one giving the best chrF supplies the counts. */
START_TEST(test_chrf_picks_best_reference)
{
	struct fedrun_chrf_opts o;
	struct fedrun_chrf_stats st;
	struct fedrun_chrf_score s1, s2;
	const char *refs[] = {"completely different", "the same text"};
	size_t used;
	fedrun_chrf_opts_init(&o);
	ck_assert_int_eq(fedrun_chrf_segment_stats(&o, "the same text", 2, refs, &st, &used), 0);
	ck_assert_int_eq(st.v[1], 11); /* reference unigrams of "thesametext" */
	ck_assert_int_eq(fedrun_chrf_sentence_score(&o, "the same text", 2, refs, &s1), 0);
	ck_assert_double_eq_tol(s1.score, 100.0, 1e-12);
	ck_assert_int_eq(fedrun_chrf_sentence_score(&o, "the same text", 1, refs, &s2), 0);
	ck_assert(s2.score < s1.score);
}
END_TEST

/* chrF++ (word order 2): words split off one leading or trailing ASCII
 * punctuation mark; a perfect match still scores 100. */
START_TEST(test_chrf_plus_plus)
{
	struct fedrun_chrf_opts o;
	struct fedrun_chrf_stats st;
	const char *refs[] = {"(hi) there."};
	size_t used;
	fedrun_chrf_opts_init(&o);
	o.word_order = 2;
	ck_assert_int_eq(fedrun_chrf_segment_stats(&o, "(hi) there.", 1, refs, &st, &used), 0);
	/* words: "(hi" ")" "there" "." -> 4 unigrams, 3 bigrams */
	ck_assert_int_eq(st.v[3 * 6], 4);
	ck_assert_int_eq(st.v[3 * 7], 3);
	ck_assert_int_eq(st.v[3 * 7 + 2], 3);
	ck_assert_double_eq_tol(fedrun_chrf_compute(&o, &st), 100.0, 1e-12);
}
END_TEST

START_TEST(test_bad_input_is_an_error)
{
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_score s;
	const char *bad[] = {"ok \xff"};
	fedrun_bleu_opts_init(&o);
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "ok", 1, bad, &s), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "invalid UTF-8 at byte 3"));
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "\xc0\x80", 1, one_ref, &s), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "hypothesis"));
	o.tokenize = (enum fedrun_bleu_tokenizer)42;
	ck_assert_int_eq(fedrun_bleu_sentence_score(&o, "ok", 1, one_ref, &s), FEDRUN_EINVAL);
	struct fedrun_chrf_opts co;
	struct fedrun_chrf_score cs;
	fedrun_chrf_opts_init(&co);
	co.char_order = 0;
	ck_assert_int_eq(fedrun_chrf_sentence_score(&co, "ok", 1, one_ref, &cs), FEDRUN_EINVAL);
}
END_TEST

/* Statistics add up: the corpus score equals the score of summed
 * per-segment statistics. */
START_TEST(test_stats_sum_to_corpus)
{
	const char *hyps[] = {"the cat is on a mat", "hello there world", "x"};
	const char *r0[] = {"the cat sat on the mat", "hello world", "y z"};
	const char *const *streams[] = {r0};
	struct fedrun_bleu_opts o;
	struct fedrun_bleu_stats sum, st;
	struct fedrun_bleu_score a, b;
	fedrun_bleu_opts_init(&o);
	memset(&sum, 0, sizeof sum);
	for (int i = 0; i < 3; i++) {
		const char *refs[] = {r0[i]};
		ck_assert_int_eq(fedrun_bleu_segment_stats(&o, hyps[i], 1, refs, &st, NULL), 0);
		fedrun_bleu_stats_add(&sum, &st);
	}
	fedrun_bleu_compute(&o, &sum, &a);
	ck_assert_int_eq(fedrun_bleu_corpus_score(&o, 3, hyps, 1, streams, &b), 0);
	ck_assert_double_eq(a.score, b.score);
	ck_assert_int_eq(a.totals[0], b.totals[0]);
	ck_assert_int_eq(b.sys_len, 10);
}
END_TEST

Suite *bleu_suite(void);

Suite *bleu_suite(void)
{
	Suite *s = suite_create("bleu");
	TCase *tc = tcase_create("sacrebleu-vectors");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_vectors_corpus_bleu);
	tcase_add_test(tc, test_vectors_sentence_bleu);
	tcase_add_test(tc, test_vectors_chrf);
	suite_add_tcase(s, tc);
	tc = tcase_create("by-hand");
	tcase_add_test(tc, test_exact_match_is_100);
	tcase_add_test(tc, test_empty_hypothesis_scores_zero);
	tcase_add_test(tc, test_smoothing_by_hand);
	tcase_add_test(tc, test_closest_ref_len_prefers_shorter);
	tcase_add_test(tc, test_absent_and_empty_references);
	tcase_add_test(tc, test_signatures_and_format);
	tcase_add_test(tc, test_chrf_counts_code_points);
	tcase_add_test(tc, test_chrf_picks_best_reference);
	tcase_add_test(tc, test_chrf_plus_plus);
	tcase_add_test(tc, test_bad_input_is_an_error);
	tcase_add_test(tc, test_stats_sum_to_corpus);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bleu_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
