/* SPDX-License-Identifier: Apache-2.0 */
/* BLEU and chrF computed exactly as sacreBLEU 2.6.0 computes them: the same
 * tokenizers (13a, intl, none), n-gram statistics, smoothing, effective
 * order, multi-reference rules and signature strings, on UTF-8 text
 * processed as Unicode code points like Python's str. */
#ifndef FEDRUN_BLEU_H
#define FEDRUN_BLEU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The sacreBLEU release whose results (and signatures) we reproduce. */
#define FEDRUN_SACREBLEU_VERSION "2.6.0"

/* BLEU's n-gram order (sacreBLEU's MAX_NGRAM_ORDER). */
#define FEDRUN_BLEU_ORDER 4
/* Most chrF orders (char_order + word_order) these structs hold. */
#define FEDRUN_CHRF_MAX_ORDER 16

/* A signature or formatted score never needs more than this many bytes. */
#define FEDRUN_BLEU_LINE_MAX 512

/* Conventions for every function below:
 * - Text is NUL-terminated UTF-8; invalid UTF-8 is FEDRUN_EINVAL.
 * - References come as streams, like sacreBLEU's `references` argument:
 *   refs[r][i] is reference r of segment i. A NULL reference is absent
 *   (sacreBLEU's None: a variable number of references); a segment whose
 *   references are all absent is FEDRUN_EINVAL. An empty string is a
 *   reference of length 0, as sacreBLEU 2.6.0 counts it.
 * - nrefs reported in scores is the number of references per segment, or
 *   -1 when it varies across segments (signature "nrefs:var"). */

/* ---- tokenizers ------------------------------------------------------- */

enum fedrun_bleu_tokenizer {
	FEDRUN_BLEU_TOK_13A = 0,  /* mteval-v13a, sacreBLEU's default */
	FEDRUN_BLEU_TOK_INTL = 1, /* mteval-v14 international: \p{P}, \p{S} */
	FEDRUN_BLEU_TOK_NONE = 2  /* whitespace only */
};

/* "13a", "intl", "none". NULL for an unknown value. */
const char *fedrun_bleu_tokenizer_name(enum fedrun_bleu_tokenizer tok);
/* Parses a tokenizer name; FEDRUN_EINVAL (naming the choices) if unknown. */
int fedrun_bleu_tokenizer_parse(const char *name, enum fedrun_bleu_tokenizer *out);

/* The segment as BLEU sees it: optionally lowercased (Python str.lower()),
 * right-stripped of whitespace, then tokenized. For 13a and intl the result
 * is the tokens joined by single spaces, as sacreBLEU's tokenizers return;
 * for none it is the stripped segment itself. *out is new (free()). */
int fedrun_bleu_tokenize(enum fedrun_bleu_tokenizer tok, bool lowercase, const char *segment,
			 char **out);

/* ---- BLEU --------------------------------------------------------------- */

enum fedrun_bleu_smooth {
	FEDRUN_BLEU_SMOOTH_EXP = 0, /* NIST geometric decay (mteval-v13a) */
	FEDRUN_BLEU_SMOOTH_NONE = 1,
	FEDRUN_BLEU_SMOOTH_FLOOR = 2, /* zero matches count as smooth_value */
	FEDRUN_BLEU_SMOOTH_ADD_K = 3  /* add smooth_value to n > 1 counts */
};

/* "exp", "none", "floor", "add-k". NULL for an unknown value. */
const char *fedrun_bleu_smooth_name(enum fedrun_bleu_smooth smooth);
int fedrun_bleu_smooth_parse(const char *name, enum fedrun_bleu_smooth *out);

struct fedrun_bleu_opts {
	enum fedrun_bleu_tokenizer tokenize;
	enum fedrun_bleu_smooth smooth;
	/* floor and add-k only; negative: sacreBLEU's default (floor 0.1,
	 * add-k 1). */
	double smooth_value;
	bool lowercase;
	/* Leave out n-gram orders the hypothesis has none of (sacreBLEU's
	 * effective_order; its command line sets it for sentence BLEU). */
	bool effective_order;
};

/* sacreBLEU's BLEU() defaults: 13a, exp, mixed case, no effective order. */
void fedrun_bleu_opts_init(struct fedrun_bleu_opts *opts);

/* Sufficient statistics; corpus statistics are sums over segments. */
struct fedrun_bleu_stats {
	int64_t sys_len;		    /* hypothesis tokens */
	int64_t ref_len;		    /* closest reference length (ties: the shorter) */
	int64_t correct[FEDRUN_BLEU_ORDER]; /* clipped matching n-grams */
	int64_t total[FEDRUN_BLEU_ORDER];   /* hypothesis n-grams */
};

struct fedrun_bleu_score {
	double score; /* 0..100 */
	/* Matching and total n-grams, n = 1..4. Unlike sacreBLEU, which
	 * reports add-k's smoothed counts here, these are never smoothed. */
	int64_t counts[FEDRUN_BLEU_ORDER];
	int64_t totals[FEDRUN_BLEU_ORDER];
	double precisions[FEDRUN_BLEU_ORDER]; /* percent, smoothed */
	double bp;			      /* brevity penalty */
	int64_t sys_len, ref_len;
	int nrefs; /* references per segment; -1: varies */
};

/* Statistics of one segment against its references (refs[0..nrefs),
 * NULL ones skipped); *used (may be NULL) is how many were used. */
int fedrun_bleu_segment_stats(const struct fedrun_bleu_opts *opts, const char *hyp, size_t nrefs,
			      const char *const *refs, struct fedrun_bleu_stats *stats,
			      size_t *used);
/* acc += s */
void fedrun_bleu_stats_add(struct fedrun_bleu_stats *acc, const struct fedrun_bleu_stats *s);
/* The score of (summed) statistics: sacreBLEU's BLEU.compute_bleu.
 * out->nrefs is set to 0; the caller knows it. */
void fedrun_bleu_compute(const struct fedrun_bleu_opts *opts, const struct fedrun_bleu_stats *stats,
			 struct fedrun_bleu_score *out);

/* Corpus BLEU of hyps[0..n) against nrefs reference streams, each of n
 * segments: refs[r][i]. sacreBLEU's BLEU(...).corpus_score(). */
int fedrun_bleu_corpus_score(const struct fedrun_bleu_opts *opts, size_t n, const char *const *hyps,
			     size_t nrefs, const char *const *const *refs,
			     struct fedrun_bleu_score *out);
/* Sentence BLEU of one hypothesis against refs[0..nrefs): sacreBLEU's
 * BLEU(...).sentence_score(). As there, effective order is whatever opts
 * say; set it, as sacreBLEU recommends and its command line does. */
int fedrun_bleu_sentence_score(const struct fedrun_bleu_opts *opts, const char *hyp, size_t nrefs,
			       const char *const *refs, struct fedrun_bleu_score *out);

/* sacreBLEU's signature, e.g.
 *   nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0
 * or, short, "#:1|c:mixed|e:no|tok:13a|s:exp|v:2.6.0". nrefs -1 is "var".
 * FEDRUN_EINVAL if it does not fit in size bytes. */
int fedrun_bleu_signature(const struct fedrun_bleu_opts *opts, int nrefs, bool short_form,
			  char *buf, size_t size);
/* sacreBLEU's text line for a score, `width` decimals (its default is 1):
 *   BLEU|<signature> = 38.2 71.4/46.2/31.6/22.2 (BP = 0.967 ratio = 0.968
 *   hyp_len = 30 ref_len = 31)
 * (one line). The signature uses score->nrefs. */
int fedrun_bleu_format(const struct fedrun_bleu_opts *opts, const struct fedrun_bleu_score *score,
		       int width, bool short_form, char *buf, size_t size);

/* ---- chrF ----------------------------------------------------------------- */

struct fedrun_chrf_opts {
	int char_order; /* 6 */
	int word_order; /* 0; 2 gives chrF++ */
	int beta;	/* 2: recall weighs beta times precision */
	bool lowercase;
	bool whitespace; /* keep whitespace inside character n-grams */
	/* chrF++.py-style epsilon smoothing instead of sacreBLEU's default
	 * effective-order averaging (signature eff:no). */
	bool eps_smoothing;
};

/* sacreBLEU's CHRF() defaults: chrF2, char order 6, word order 0. */
void fedrun_chrf_opts_init(struct fedrun_chrf_opts *opts);

/* Per order k (characters 1..char_order, then words 1..word_order):
 * v[3k] hypothesis n-grams, v[3k+1] reference n-grams, v[3k+2] matches. */
struct fedrun_chrf_stats {
	int64_t v[3 * FEDRUN_CHRF_MAX_ORDER];
};

struct fedrun_chrf_score {
	double score; /* 0..100 */
	int nrefs;    /* references per segment; -1: varies */
};

/* Statistics of one segment against the reference that gives it the best
 * chrF (the first one on ties), as sacreBLEU picks it. */
int fedrun_chrf_segment_stats(const struct fedrun_chrf_opts *opts, const char *hyp, size_t nrefs,
			      const char *const *refs, struct fedrun_chrf_stats *stats,
			      size_t *used);
/* acc += s */
void fedrun_chrf_stats_add(struct fedrun_chrf_stats *acc, const struct fedrun_chrf_stats *s);
/* The chrF score (0..100) of (summed) statistics. */
double fedrun_chrf_compute(const struct fedrun_chrf_opts *opts,
			   const struct fedrun_chrf_stats *stats);

int fedrun_chrf_corpus_score(const struct fedrun_chrf_opts *opts, size_t n, const char *const *hyps,
			     size_t nrefs, const char *const *const *refs,
			     struct fedrun_chrf_score *out);
int fedrun_chrf_sentence_score(const struct fedrun_chrf_opts *opts, const char *hyp, size_t nrefs,
			       const char *const *refs, struct fedrun_chrf_score *out);

/* nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0
 * (short: "#:1|c:mixed|e:yes|nc:6|nw:0|s:no|v:2.6.0"). */
int fedrun_chrf_signature(const struct fedrun_chrf_opts *opts, int nrefs, bool short_form,
			  char *buf, size_t size);
/* "chrF2|<signature> = 55.7" ("chrF2++" when word_order is 2). */
int fedrun_chrf_format(const struct fedrun_chrf_opts *opts, const struct fedrun_chrf_score *score,
		       int width, bool short_form, char *buf, size_t size);

/* ---- paired bootstrap resampling ---------------------------------------- */

/* Koehn (2004), as sacreBLEU's --paired-bs computes it: the segments'
 * statistics are computed once for system A and system B (against the same
 * references); each resample draws n segment indices with replacement, the
 * same indices for A and B, and scores both from the summed statistics of
 * the drawn segments. Where sacreBLEU draws with numpy, fedrun draws from
 * its own Philox stream (fedrun_bootstrap_indices), so that the resamples,
 * and every number below, are the same bits on every run and machine. */

/* sacreBLEU's defaults: --paired-bs-n 1000 and SACREBLEU_SEED 12345. */
#define FEDRUN_BOOTSTRAP_SAMPLES 1000
#define FEDRUN_BOOTSTRAP_SEED 12345

/* Resample k (0 <= k < 2^32) of n >= 1 segments: idx[j], j = 0..n-1, is the
 * j-th draw fedrun_rng_below(n) of the stream fedrun_rng_init(seed,
 * FEDRUN_RNG_BOOTSTRAP, k, 0). Each resample is a function of (seed, k, n)
 * alone, whatever the metric and in whichever order resamples are made. */
int fedrun_bootstrap_indices(uint64_t seed, uint64_t k, size_t n, size_t *idx);

/* The resampled values of one quantity: their mean (summed in resample
 * order, then divided) and the 95% interval [lo, hi] that sacreBLEU's
 * estimate_ci takes: with the m values sorted ascending, lo is the one at
 * index m / 40 (integer division) and hi the one at m - 1 - m / 40, i.e.
 * the 2.5th and 97.5th percentiles (for m = 1000, the 26th smallest and
 * the 26th largest; for m < 40, the minimum and the maximum). */
struct fedrun_bootstrap_ci {
	double mean, lo, hi;
};

struct fedrun_paired_bootstrap {
	double a, b; /* the corpus scores of A and B (every segment once) */
	double diff; /* a - b */
	struct fedrun_bootstrap_ci ci_a, ci_b;
	struct fedrun_bootstrap_ci ci_diff; /* of the resamples' A - B */
	size_t samples;
	uint64_t seed;
};

/* Statistics of each segment of a corpus (the arguments of
 * fedrun_bleu_corpus_score): stats[i], i < n, for segment i; *nrefs_out
 * (may be NULL) as fedrun_bleu_score's nrefs. Summed, they give
 * fedrun_bleu_corpus_score's statistics. */
int fedrun_bleu_corpus_stats(const struct fedrun_bleu_opts *opts, size_t n, const char *const *hyps,
			     size_t nrefs, const char *const *const *refs,
			     struct fedrun_bleu_stats *stats, int *nrefs_out);
/* BLEU of the segments idx[0..m) (repeats count again) of stats[]: the
 * summed statistics scored by fedrun_bleu_compute. The identity resample
 * (idx[j] = j, m = n) gives fedrun_bleu_corpus_score's score exactly. */
void fedrun_bleu_resample_score(const struct fedrun_bleu_opts *opts,
				const struct fedrun_bleu_stats *stats, size_t m, const size_t *idx,
				struct fedrun_bleu_score *out);
/* Paired bootstrap of BLEU: a[i] and b[i] are segment i's statistics for
 * systems A and B, i < n. samples >= 1 resamples (at most 2^32) from seed.
 * scores (may be NULL) gets 3 * samples doubles: resample k's BLEU of A,
 * of B and their difference at scores[3k], [3k + 1] and [3k + 2]. */
int fedrun_bleu_paired_bootstrap(const struct fedrun_bleu_opts *opts, size_t n,
				 const struct fedrun_bleu_stats *a,
				 const struct fedrun_bleu_stats *b, size_t samples, uint64_t seed,
				 struct fedrun_paired_bootstrap *out, double *scores);

/* The same for chrF. */
int fedrun_chrf_corpus_stats(const struct fedrun_chrf_opts *opts, size_t n, const char *const *hyps,
			     size_t nrefs, const char *const *const *refs,
			     struct fedrun_chrf_stats *stats, int *nrefs_out);
double fedrun_chrf_resample_score(const struct fedrun_chrf_opts *opts,
				  const struct fedrun_chrf_stats *stats, size_t m,
				  const size_t *idx);
int fedrun_chrf_paired_bootstrap(const struct fedrun_chrf_opts *opts, size_t n,
				 const struct fedrun_chrf_stats *a,
				 const struct fedrun_chrf_stats *b, size_t samples, uint64_t seed,
				 struct fedrun_paired_bootstrap *out, double *scores);

/* ---- text helpers ----------------------------------------------------- */

/* Decodes the code point at s[i] (i < n) into *cp; returns its length in
 * bytes, or 0 if the bytes there are not strict UTF-8: a bad lead byte, a
 * truncated sequence, an overlong form, a surrogate, or > U+10FFFF. */
size_t fedrun_utf8_next(const char *s, size_t n, size_t i, uint32_t *cp);

/* True when s[0..n) is strict UTF-8 (what Python's "utf-8" codec
 * accepts); otherwise *bad (may be NULL) is the offset of the first bad
 * byte. */
bool fedrun_utf8_valid(const char *s, size_t n, size_t *bad);
/* Length of valid UTF-8 s[0..n) once trailing whitespace is removed as
 * Python's str.rstrip() removes it (Unicode whitespace, not just ASCII). */
size_t fedrun_utf8_rstrip(const char *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
