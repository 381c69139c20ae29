/* SPDX-License-Identifier: Apache-2.0 */
/* Paired bootstrap resampling of BLEU and chrF (core/score/bootstrap.c):
 * the identity resample is the corpus score to the last bit; every
 * resample's scores are those of its indices' summed statistics; the
 * interval is sacreBLEU's estimate_ci of the resampled values; identical
 * systems differ by exactly 0; the indices are fixed bits of (seed, k, n)
 * (the pinned values are those of tests/bleu_bootstrap_check.py's own
 * Philox); bad arguments are errors, never an abort. */
#include "config.h"
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"

#define NSEG 6

/* Two references per segment, the second absent for segment 3 (as
 * sacreBLEU's None), so that stats come from the multi-reference rules. */
static const char *const refs0[NSEG] = {"The cat sat on the mat.",  "There is a dog in the garden.",
					"It rains today in Paris.", "She reads a book at night.",
					"We went to the market.",   "Ça va très bien, merci."};
static const char *const refs1[NSEG] = {
    "A cat was sitting on the mat.",	"A dog is in the garden.",
    "Today it is raining in Paris.",	NULL,
    "Yesterday we went to the market.", "Tout va bien, merci."};
static const char *const sys_a[NSEG] = {
    "The cat sat on a mat.",	 "There is one dog in garden.", "It is raining today in Paris.",
    "She reads books at night.", "We went to market.",		"Ça va bien, merci."};
static const char *const sys_b[NSEG] = {"A cat on the mat.",	  "The dog is in the garden.",
					"Paris rains.",		  "She reads a book.",
					"We went to the market.", "Très bien."};

static const char *const *const refs[2] = {refs0, refs1};

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

/* sacreBLEU's estimate_ci, computed again here from the scores array. */
static void check_ci(const double *scores, size_t samples, int col,
		     const struct fedrun_bootstrap_ci *ci)
{
	double *v = malloc(samples * sizeof v[0]), sum = 0.0;
	ck_assert_ptr_nonnull(v);
	for (size_t k = 0; k < samples; k++) {
		v[k] = scores[3 * k + (size_t)col];
		sum += v[k];
	}
	qsort(v, samples, sizeof v[0], cmp_double);
	ck_assert(ci->mean == sum / (double)samples);
	ck_assert(ci->lo == v[samples / 40]);
	ck_assert(ci->hi == v[samples - 1 - samples / 40]);
	ck_assert(ci->lo <= ci->hi);
	free(v);
}

/* Both metrics' default options and the segment statistics of A and B. */
struct fixture {
	struct fedrun_bleu_opts bo;
	struct fedrun_chrf_opts co;
	struct fedrun_bleu_stats ba[NSEG], bb[NSEG];
	struct fedrun_chrf_stats ca[NSEG], cb[NSEG];
};

static void fixture_init(struct fixture *f)
{
	fedrun_bleu_opts_init(&f->bo);
	fedrun_chrf_opts_init(&f->co);
	ck_assert_int_eq(fedrun_bleu_corpus_stats(&f->bo, NSEG, sys_a, 2, refs, f->ba, NULL), 0);
	ck_assert_int_eq(fedrun_bleu_corpus_stats(&f->bo, NSEG, sys_b, 2, refs, f->bb, NULL), 0);
	ck_assert_int_eq(fedrun_chrf_corpus_stats(&f->co, NSEG, sys_a, 2, refs, f->ca, NULL), 0);
	ck_assert_int_eq(fedrun_chrf_corpus_stats(&f->co, NSEG, sys_b, 2, refs, f->cb, NULL), 0);
}

/* The paired bootstrap of BLEU (metric 0) or chrF (1), of A against B or,
 * when `same`, of A against itself. */
static int paired(const struct fixture *f, int metric, bool same, size_t m, uint64_t seed,
		  struct fedrun_paired_bootstrap *p, double *sc)
{
	if (metric == 0)
		return fedrun_bleu_paired_bootstrap(&f->bo, NSEG, f->ba, same ? f->ba : f->bb, m,
						    seed, p, sc);
	return fedrun_chrf_paired_bootstrap(&f->co, NSEG, f->ca, same ? f->ca : f->cb, m, seed, p,
					    sc);
}

START_TEST(test_indices_are_pinned)
{
	static const size_t want0[10] = {14, 14, 17, 27, 10, 10, 29, 11, 4, 25};
	static const size_t want999[7] = {3, 3, 4, 3, 0, 4, 5};
	size_t idx[30], again[30];
	ck_assert_int_eq(fedrun_bootstrap_indices(12345, 0, 30, idx), 0);
	for (int j = 0; j < 10; j++)
		ck_assert_uint_eq(idx[j], want0[j]);
	for (int j = 0; j < 30; j++)
		ck_assert_uint_lt(idx[j], 30);
	ck_assert_int_eq(fedrun_bootstrap_indices(12345, 999, 7, again), 0);
	for (int j = 0; j < 7; j++)
		ck_assert_uint_eq(again[j], want999[j]);
	/* a resample does not depend on the ones made before it */
	ck_assert_int_eq(fedrun_bootstrap_indices(12345, 0, 30, again), 0);
	ck_assert_mem_eq(idx, again, sizeof idx);
	ck_assert_int_eq(fedrun_bootstrap_indices(0, 0, 3, again), 0);
	ck_assert_uint_eq(again[0], 2);
	ck_assert_uint_eq(again[1], 1);
	ck_assert_uint_eq(again[2], 1);
	/* another seed or resample number gives other indices */
	ck_assert_int_eq(fedrun_bootstrap_indices(12346, 0, 30, again), 0);
	ck_assert(memcmp(idx, again, sizeof idx) != 0);
	ck_assert_int_eq(fedrun_bootstrap_indices(12345, 1, 30, again), 0);
	ck_assert(memcmp(idx, again, sizeof idx) != 0);
	/* one segment: always index 0 */
	ck_assert_int_eq(fedrun_bootstrap_indices(7, 3, 1, again), 0);
	ck_assert_uint_eq(again[0], 0);
}
END_TEST

START_TEST(test_identity_resample_is_corpus_score)
{
	struct fedrun_bleu_opts bo;
	struct fedrun_chrf_opts co;
	fedrun_bleu_opts_init(&bo);
	fedrun_chrf_opts_init(&co);
	struct fedrun_bleu_stats bs[NSEG];
	struct fedrun_chrf_stats cs[NSEG];
	size_t id[NSEG];
	for (size_t j = 0; j < NSEG; j++)
		id[j] = j;
	const char *const *systems[2] = {sys_a, sys_b};
	for (int s = 0; s < 2; s++) {
		struct fedrun_bleu_score corpus, resampled;
		int nr = 0;
		ck_assert_int_eq(fedrun_bleu_corpus_score(&bo, NSEG, systems[s], 2, refs, &corpus),
				 0);
		ck_assert_int_eq(fedrun_bleu_corpus_stats(&bo, NSEG, systems[s], 2, refs, bs, &nr),
				 0);
		ck_assert_int_eq(nr, corpus.nrefs);
		ck_assert_int_eq(nr, -1); /* segment 4 has one reference */
		fedrun_bleu_resample_score(&bo, bs, NSEG, id, &resampled);
		ck_assert(resampled.score == corpus.score); /* bit for bit */
		ck_assert(resampled.bp == corpus.bp);
		ck_assert_int_eq(resampled.sys_len, corpus.sys_len);
		ck_assert_int_eq(resampled.ref_len, corpus.ref_len);
		for (int n = 0; n < FEDRUN_BLEU_ORDER; n++) {
			ck_assert_int_eq(resampled.counts[n], corpus.counts[n]);
			ck_assert_int_eq(resampled.totals[n], corpus.totals[n]);
		}
		/* a segment's own statistics are fedrun_bleu_segment_stats' */
		struct fedrun_bleu_stats one;
		const char *seg_refs[2] = {refs0[2], refs1[2]};
		ck_assert_int_eq(
		    fedrun_bleu_segment_stats(&bo, systems[s][2], 2, seg_refs, &one, NULL), 0);
		ck_assert_mem_eq(&one, &bs[2], sizeof one);

		struct fedrun_chrf_score ccorpus;
		ck_assert_int_eq(fedrun_chrf_corpus_score(&co, NSEG, systems[s], 2, refs, &ccorpus),
				 0);
		ck_assert_int_eq(fedrun_chrf_corpus_stats(&co, NSEG, systems[s], 2, refs, cs, NULL),
				 0);
		ck_assert(fedrun_chrf_resample_score(&co, cs, NSEG, id) == ccorpus.score);
	}

	/* the paired test's observed scores are the corpus scores too */
	struct fedrun_bleu_stats ba[NSEG], bb[NSEG];
	struct fedrun_bleu_score sa, sb;
	struct fedrun_paired_bootstrap p;
	ck_assert_int_eq(fedrun_bleu_corpus_stats(&bo, NSEG, sys_a, 2, refs, ba, NULL), 0);
	ck_assert_int_eq(fedrun_bleu_corpus_stats(&bo, NSEG, sys_b, 2, refs, bb, NULL), 0);
	ck_assert_int_eq(fedrun_bleu_corpus_score(&bo, NSEG, sys_a, 2, refs, &sa), 0);
	ck_assert_int_eq(fedrun_bleu_corpus_score(&bo, NSEG, sys_b, 2, refs, &sb), 0);
	ck_assert_int_eq(fedrun_bleu_paired_bootstrap(&bo, NSEG, ba, bb, 50, 12345, &p, NULL), 0);
	ck_assert(p.a == sa.score && p.b == sb.score && p.diff == sa.score - sb.score);
	ck_assert_uint_eq(p.samples, 50);
	ck_assert_uint_eq(p.seed, 12345);
}
END_TEST

START_TEST(test_resamples_are_their_indices)
{
	struct fixture f;
	fixture_init(&f);
	/* 1000 (sacreBLEU's default), 39 (the interval is min and max) and
	 * 1 (everything is the one resample) */
	static const size_t counts[] = {1000, 39, 1};
	for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
		const size_t m = counts[c];
		double *sc = malloc(3 * m * sizeof sc[0]);
		ck_assert_ptr_nonnull(sc);
		struct fedrun_paired_bootstrap p, again;
		for (int metric = 0; metric < 2; metric++) {
			ck_assert_int_eq(paired(&f, metric, false, m, 99, &p, sc), 0);
			for (size_t k = 0; k < m; k++) {
				size_t idx[NSEG];
				double a, b;
				ck_assert_int_eq(fedrun_bootstrap_indices(99, k, NSEG, idx), 0);
				if (metric == 0) {
					struct fedrun_bleu_score s;
					fedrun_bleu_resample_score(&f.bo, f.ba, NSEG, idx, &s);
					a = s.score;
					fedrun_bleu_resample_score(&f.bo, f.bb, NSEG, idx, &s);
					b = s.score;
				} else {
					a = fedrun_chrf_resample_score(&f.co, f.ca, NSEG, idx);
					b = fedrun_chrf_resample_score(&f.co, f.cb, NSEG, idx);
				}
				ck_assert(sc[3 * k] == a);
				ck_assert(sc[3 * k + 1] == b);
				ck_assert(sc[3 * k + 2] == a - b);
			}
			check_ci(sc, m, 0, &p.ci_a);
			check_ci(sc, m, 1, &p.ci_b);
			check_ci(sc, m, 2, &p.ci_diff);
			if (m == 1)
				ck_assert(p.ci_diff.lo == sc[2] && p.ci_diff.hi == sc[2]);
			/* the same bits again, with or without the scores array */
			ck_assert_int_eq(paired(&f, metric, false, m, 99, &again, NULL), 0);
			ck_assert_mem_eq(&p, &again, sizeof p);
		}
		free(sc);
	}
}
END_TEST

START_TEST(test_identical_systems_differ_by_zero)
{
	struct fixture f;
	struct fedrun_paired_bootstrap p;
	fixture_init(&f);
	for (int metric = 0; metric < 2; metric++) {
		ck_assert_int_eq(paired(&f, metric, true, FEDRUN_BOOTSTRAP_SAMPLES,
					FEDRUN_BOOTSTRAP_SEED, &p, NULL),
				 0);
		ck_assert(p.diff == 0.0);
		ck_assert(p.ci_diff.mean == 0.0 && p.ci_diff.lo == 0.0 && p.ci_diff.hi == 0.0);
		ck_assert_mem_eq(&p.ci_a, &p.ci_b, sizeof p.ci_a);
		ck_assert(p.ci_a.lo < p.ci_a.hi); /* the systems' own intervals are not empty */
		ck_assert(p.a == p.b);
	}
}
END_TEST

START_TEST(test_bad_arguments_are_errors)
{
	struct fixture f;
	struct fedrun_paired_bootstrap p;
	size_t idx[2];
	fixture_init(&f);
	struct fedrun_bleu_opts bo = f.bo;
	struct fedrun_bleu_stats *ba = f.ba;
	struct fedrun_chrf_stats *ca = f.ca;

	ck_assert_int_eq(fedrun_bleu_paired_bootstrap(&bo, 0, ba, ba, 10, 1, &p, NULL),
			 FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "no segments"));
	ck_assert_int_eq(fedrun_bleu_paired_bootstrap(&bo, NSEG, ba, ba, 0, 1, &p, NULL),
			 FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "0 resamples"));
	ck_assert_int_eq(fedrun_chrf_paired_bootstrap(&f.co, NSEG, ca, NULL, 10, 1, &p, NULL),
			 FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "system B"));
	ck_assert_int_eq(fedrun_bootstrap_indices(1, 0, 0, idx), FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_bootstrap_indices(1, (uint64_t)UINT32_MAX + 1, 2, idx),
			 FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_bootstrap_indices(1, UINT32_MAX, 2, idx), 0);
	bo.smooth = (enum fedrun_bleu_smooth)99;
	ck_assert_int_eq(fedrun_bleu_paired_bootstrap(&bo, NSEG, ba, ba, 10, 1, &p, NULL),
			 FEDRUN_EINVAL);
	bo = f.bo;
	ck_assert_int_eq(fedrun_bleu_corpus_stats(&bo, NSEG, sys_a, 2, refs, NULL, NULL),
			 FEDRUN_EINVAL);
	ck_assert_int_eq(fedrun_bleu_corpus_stats(&bo, 0, sys_a, 2, refs, ba, NULL), FEDRUN_EINVAL);
	/* a segment whose references are all absent names the segment */
	const char *const none[NSEG] = {NULL};
	const char *const *const no_refs[1] = {none};
	ck_assert_int_eq(fedrun_chrf_corpus_stats(&f.co, NSEG, sys_a, 1, no_refs, ca, NULL),
			 FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "segment 1"));
}
END_TEST

static Suite *bootstrap_suite(void)
{
	Suite *s = suite_create("bleu-bootstrap");
	TCase *tc = tcase_create("paired");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_indices_are_pinned);
	tcase_add_test(tc, test_identity_resample_is_corpus_score);
	tcase_add_test(tc, test_resamples_are_their_indices);
	tcase_add_test(tc, test_identical_systems_differ_by_zero);
	tcase_add_test(tc, test_bad_arguments_are_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bootstrap_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
