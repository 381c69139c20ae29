/* SPDX-License-Identifier: Apache-2.0 */
/* chrF (Popović, 2015) and chrF++ (Popović, 2017) as sacreBLEU 2.6.0
 * computes them (metrics/chrf.py): character n-grams of the segment with
 * its whitespace removed, optional word n-grams, per-order precision and
 * recall averaged over the orders both sides have, F-beta of the averages,
 * and per segment the reference that gives the best F. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"
#include "bleu_internal.h"

/* chrF++.py's epsilon for empty orders (eps_smoothing only). */
#define CHRF_EPS 1e-16

struct chrf_ctx {
	struct bleu_scratch s;
	struct bleu_words split, words;
	struct bleu_ngrams t;
};

static void ctx_init(struct chrf_ctx *c)
{
	bleu_scratch_init(&c->s);
	bleu_words_init(&c->split);
	bleu_words_init(&c->words);
	bleu_ngrams_init(&c->t);
}

static void ctx_fini(struct chrf_ctx *c)
{
	bleu_scratch_fini(&c->s);
	bleu_words_fini(&c->split);
	bleu_words_fini(&c->words);
	bleu_ngrams_fini(&c->t);
}

void fedrun_chrf_opts_init(struct fedrun_chrf_opts *opts)
{
	memset(opts, 0, sizeof *opts);
	opts->char_order = 6;
	opts->word_order = 0;
	opts->beta = 2;
}

static int check_opts(const struct fedrun_chrf_opts *opts)
{
	if (opts->char_order < 0 || opts->word_order < 0 ||
	    opts->char_order + opts->word_order < 1 ||
	    opts->char_order + opts->word_order > FEDRUN_CHRF_MAX_ORDER)
		return fedrun_error(FEDRUN_EINVAL,
				    "chrf: char_order %d + word_order %d must be in [1, %d]",
				    opts->char_order, opts->word_order, FEDRUN_CHRF_MAX_ORDER);
	if (opts->beta < 0 || opts->beta > 1000)
		return fedrun_error(FEDRUN_EINVAL, "chrf: beta %d outside [0, 1000]", opts->beta);
	return 0;
}

/* string.punctuation, the set CHRF._remove_punctuation splits off. */
static bool is_ascii_punct(uint32_t c)
{
	return c < 0x80 && c > ' ' && c != 0x7F && !(c >= '0' && c <= '9') &&
	       !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z');
}

/* CHRF._remove_punctuation: splits one leading or (preferably) trailing
 * ASCII punctuation mark off each word of more than one character. */
static int remove_punctuation(struct chrf_ctx *c, const struct bleu_ustr *line)
{
	int rc = bleu_words_split(line->v, line->n, &c->split);
	if (rc)
		return rc;
	c->words.n = 0;
	c->words.text.n = 0;
	for (size_t i = 0; i < c->split.n && !rc; i++) {
		const uint32_t *w = c->split.text.v + c->split.start[i];
		size_t len = bleu_words_end(&c->split, i) - c->split.start[i];
		if (len > 1 && is_ascii_punct(w[len - 1])) {
			if (!(rc = bleu_words_push(&c->words, w, len - 1)))
				rc = bleu_words_push(&c->words, w + len - 1, 1);
		} else if (len > 1 && is_ascii_punct(w[0])) {
			if (!(rc = bleu_words_push(&c->words, w, 1)))
				rc = bleu_words_push(&c->words, w + 1, len - 1);
		} else {
			rc = bleu_words_push(&c->words, w, len);
		}
	}
	return rc;
}

/* Counts a segment's n-grams into counter a (which == 0) or b (else),
 * adding each order's total to tot[]. Orders are tagged 0..char_order-1
 * for characters, then char_order.. for words. */
static int count_segment(struct chrf_ctx *c, const struct fedrun_chrf_opts *opts, const char *seg,
			 int which, int64_t *tot)
{
	int rc = bleu_segment_decode(seg, opts->lowercase, &c->s);
	if (rc)
		return rc;
	const struct bleu_ustr *line = &c->s.a;
	/* extract_all_char_ngrams: "".join(line.split()) unless whitespace */
	struct bleu_ustr *chars = &c->s.b;
	chars->n = 0;
	if ((rc = bleu_ustr_reserve(chars, line->n)))
		return rc;
	for (size_t i = 0; i < line->n; i++)
		if (opts->whitespace || !bleu_is_space(line->v[i]))
			chars->v[chars->n++] = line->v[i];
	for (int n = 1; n <= opts->char_order; n++) {
		for (size_t i = 0; i + (size_t)n <= chars->n; i++) {
			struct bleu_ngram *g;
			rc = bleu_ngrams_get(&c->t, chars->v + i, (size_t)n, (uint32_t)(n - 1), &g);
			if (rc)
				return rc;
			if (which == 0)
				g->a++;
			else
				g->b++;
			tot[n - 1]++;
		}
	}
	if (opts->word_order == 0)
		return 0;
	if ((rc = remove_punctuation(c, line)))
		return rc;
	for (int n = 1; n <= opts->word_order; n++) {
		uint32_t tag = (uint32_t)(opts->char_order + n - 1);
		for (size_t i = 0; i + (size_t)n <= c->words.n; i++) {
			size_t b = c->words.start[i],
			       e = bleu_words_end(&c->words, i + (size_t)n - 1);
			struct bleu_ngram *g;
			rc = bleu_ngrams_get(&c->t, c->words.text.v + b, e - b, tag, &g);
			if (rc)
				return rc;
			if (which == 0)
				g->a++;
			else
				g->b++;
			tot[tag]++;
		}
	}
	return 0;
}

double fedrun_chrf_compute(const struct fedrun_chrf_opts *opts, const struct fedrun_chrf_stats *st)
{
	/* CHRF._compute_f_score, in Python's order of operations: the
	 * F-beta of the average precision and recall over the orders,
	 * (1 + b^2) P R / (b^2 P + R), eq. 1 of Popović (2015) */
	const int order = opts->char_order + opts->word_order;
	const double factor = (double)opts->beta * opts->beta;
	double score = 0.0, avg_prec = 0.0, avg_rec = 0.0;
	int effective_order = 0;
	for (int i = 0; i < order && i < FEDRUN_CHRF_MAX_ORDER; i++) {
		int64_t n_hyp = st->v[3 * i], n_ref = st->v[3 * i + 1], n_match = st->v[3 * i + 2];
		double prec = n_hyp > 0 ? (double)n_match / (double)n_hyp : CHRF_EPS;
		double rec = n_ref > 0 ? (double)n_match / (double)n_ref : CHRF_EPS;
		double denom = factor * prec + rec;
		score += denom > 0 ? (1 + factor) * prec * rec / denom : CHRF_EPS;
		if (n_hyp > 0 && n_ref > 0) {
			avg_prec += prec;
			avg_rec += rec;
			effective_order++;
		}
	}
	if (opts->eps_smoothing)
		return 100 * score / order;
	if (effective_order == 0) {
		avg_prec = avg_rec = 0.0;
	} else {
		avg_prec /= effective_order;
		avg_rec /= effective_order;
	}
	if (avg_prec + avg_rec != 0) {
		score = (1 + factor) * avg_prec * avg_rec;
		score /= (factor * avg_prec) + avg_rec;
		return 100 * score;
	}
	return 0.0;
}

/* CHRF._compute_segment_statistics: counter a holds the hypothesis's
 * n-grams, b the current reference's. */
static int segment_stats(struct chrf_ctx *c, const struct fedrun_chrf_opts *opts, const char *hyp,
			 size_t nrefs, const char *const *refs, struct fedrun_chrf_stats *best,
			 size_t *used)
{
	const int order = opts->char_order + opts->word_order;
	int64_t hyp_tot[FEDRUN_CHRF_MAX_ORDER] = {0};
	double best_f = -1.0;
	int rc;
	memset(best, 0, sizeof *best);
	*used = 0;
	if (!hyp)
		return fedrun_error(FEDRUN_EINVAL, "hypothesis is NULL");
	bleu_ngrams_clear(&c->t);
	if ((rc = count_segment(c, opts, hyp, 0, hyp_tot)))
		return fedrun_error_wrap(rc, "hypothesis: ");
	for (size_t r = 0; r < nrefs; r++) {
		int64_t ref_tot[FEDRUN_CHRF_MAX_ORDER] = {0}, match[FEDRUN_CHRF_MAX_ORDER] = {0};
		if (!refs[r]) /* None is absent; "" is an empty reference */
			continue;
		for (size_t i = 0; i < c->t.used; i++)
			BLEU_NGRAM_AT(&c->t, i)->b = 0;
		if ((rc = count_segment(c, opts, refs[r], 1, ref_tot)))
			return fedrun_error_wrap(rc, "reference %zu: ", r + 1);
		++*used;
		for (size_t i = 0; i < c->t.used; i++) {
			const struct bleu_ngram *g = BLEU_NGRAM_AT(&c->t, i);
			if (g->a && g->b)
				match[g->order] += g->a < g->b ? g->a : g->b;
		}
		struct fedrun_chrf_stats st;
		memset(&st, 0, sizeof st);
		for (int k = 0; k < order; k++) {
			/* _get_match_statistics: no hypothesis count for an
			 * order the reference has no n-gram of */
			st.v[3 * k] = ref_tot[k] ? hyp_tot[k] : 0;
			st.v[3 * k + 1] = ref_tot[k];
			st.v[3 * k + 2] = match[k];
		}
		double f = fedrun_chrf_compute(opts, &st);
		if (f > best_f) {
			best_f = f;
			*best = st;
		}
	}
	if (!*used)
		return fedrun_error(FEDRUN_EINVAL, "no reference (all are NULL)");
	return 0;
}

int fedrun_chrf_segment_stats(const struct fedrun_chrf_opts *opts, const char *hyp, size_t nrefs,
			      const char *const *refs, struct fedrun_chrf_stats *stats,
			      size_t *used)
{
	size_t u = 0;
	int rc = check_opts(opts);
	if (rc)
		return rc;
	struct chrf_ctx c;
	ctx_init(&c);
	rc = segment_stats(&c, opts, hyp, nrefs, refs, stats, &u);
	ctx_fini(&c);
	if (used)
		*used = u;
	return rc;
}

void fedrun_chrf_stats_add(struct fedrun_chrf_stats *acc, const struct fedrun_chrf_stats *s)
{
	for (int i = 0; i < 3 * FEDRUN_CHRF_MAX_ORDER; i++)
		acc->v[i] += s->v[i];
}

/* Scores every segment once: the sum into *sum, each segment's statistics
 * into per_seg[i] when per_seg is not NULL. */
static int corpus_stats(const struct fedrun_chrf_opts *opts, size_t n, const char *const *hyps,
			size_t nrefs, const char *const *const *refs,
			struct fedrun_chrf_stats *per_seg, struct fedrun_chrf_stats *sum,
			int *nrefs_out)
{
	memset(sum, 0, sizeof *sum);
	*nrefs_out = 0;
	int rc = check_opts(opts);
	if (rc)
		return rc;
	if (!n)
		return fedrun_error(FEDRUN_EINVAL, "chrf: no hypotheses");
	if (!nrefs)
		return fedrun_error(FEDRUN_EINVAL, "chrf: no references");
	const char **seg_refs = calloc(nrefs, sizeof seg_refs[0]);
	if (!seg_refs)
		return fedrun_error(FEDRUN_ENOMEM, "chrf: out of memory");
	struct chrf_ctx c;
	ctx_init(&c);
	struct fedrun_chrf_stats st;
	int nr = BLEU_NREFS_UNSET;
	for (size_t i = 0; i < n; i++) {
		size_t used;
		for (size_t r = 0; r < nrefs; r++)
			seg_refs[r] = refs[r] ? refs[r][i] : NULL;
		rc = segment_stats(&c, opts, hyps[i], nrefs, seg_refs, &st, &used);
		if (rc) {
			rc = fedrun_error_wrap(rc, "chrf: segment %zu: ", i + 1);
			break;
		}
		fedrun_chrf_stats_add(sum, &st);
		if (per_seg)
			per_seg[i] = st;
		bleu_nrefs_fold(&nr, used);
	}
	ctx_fini(&c);
	free(seg_refs);
	if (!rc)
		*nrefs_out = nr;
	return rc;
}

int fedrun_chrf_corpus_score(const struct fedrun_chrf_opts *opts, size_t n, const char *const *hyps,
			     size_t nrefs, const char *const *const *refs,
			     struct fedrun_chrf_score *out)
{
	struct fedrun_chrf_stats sum;
	int nr;
	memset(out, 0, sizeof *out);
	int rc = corpus_stats(opts, n, hyps, nrefs, refs, NULL, &sum, &nr);
	if (rc)
		return rc;
	out->score = fedrun_chrf_compute(opts, &sum);
	out->nrefs = nr;
	return 0;
}

int fedrun_chrf_corpus_stats(const struct fedrun_chrf_opts *opts, size_t n, const char *const *hyps,
			     size_t nrefs, const char *const *const *refs,
			     struct fedrun_chrf_stats *stats, int *nrefs_out)
{
	struct fedrun_chrf_stats sum;
	int nr;
	if (!stats)
		return fedrun_error(FEDRUN_EINVAL, "chrf: no array for the statistics");
	int rc = corpus_stats(opts, n, hyps, nrefs, refs, stats, &sum, &nr);
	if (nrefs_out)
		*nrefs_out = nr;
	return rc;
}

double fedrun_chrf_resample_score(const struct fedrun_chrf_opts *opts,
				  const struct fedrun_chrf_stats *stats, size_t m,
				  const size_t *idx)
{
	struct fedrun_chrf_stats sum;
	memset(&sum, 0, sizeof sum);
	for (size_t j = 0; j < m; j++)
		fedrun_chrf_stats_add(&sum, &stats[idx[j]]);
	return fedrun_chrf_compute(opts, &sum);
}

/* bleu_resample_fn for bleu_paired_bootstrap. */
static double chrf_resample(const void *opts, const void *stats, size_t m, const size_t *idx)
{
	return fedrun_chrf_resample_score(opts, stats, m, idx);
}

int fedrun_chrf_paired_bootstrap(const struct fedrun_chrf_opts *opts, size_t n,
				 const struct fedrun_chrf_stats *a,
				 const struct fedrun_chrf_stats *b, size_t samples, uint64_t seed,
				 struct fedrun_paired_bootstrap *out, double *scores)
{
	int rc = check_opts(opts);
	if (rc) {
		memset(out, 0, sizeof *out);
		return rc;
	}
	rc = bleu_paired_bootstrap(chrf_resample, opts, a, b, n, samples, seed, out, scores);
	return rc ? fedrun_error_wrap(rc, "chrf: ") : 0;
}

int fedrun_chrf_sentence_score(const struct fedrun_chrf_opts *opts, const char *hyp, size_t nrefs,
			       const char *const *refs, struct fedrun_chrf_score *out)
{
	struct fedrun_chrf_stats st;
	size_t used;
	memset(out, 0, sizeof *out);
	if (!nrefs)
		return fedrun_error(FEDRUN_EINVAL, "chrf: no references");
	int rc = fedrun_chrf_segment_stats(opts, hyp, nrefs, refs, &st, &used);
	if (rc)
		return fedrun_error_wrap(rc, "chrf: ");
	out->score = fedrun_chrf_compute(opts, &st);
	out->nrefs = (int)used;
	return 0;
}

int fedrun_chrf_signature(const struct fedrun_chrf_opts *opts, int nrefs, bool short_form,
			  char *buf, size_t size)
{
	size_t pos = 0;
	int rc = check_opts(opts);
	if (rc)
		return rc;
	char refs[16];
	if (nrefs < 0)
		snprintf(refs, sizeof refs, "var");
	else
		snprintf(refs, sizeof refs, "%d", nrefs);
	/* eff: "yes" unless epsilon smoothing replaces effective order */
	return bleu_put(buf, size, &pos, "%s:%s|%s:%s|%s:%s|nc:%d|nw:%d|%s:%s|%s:%s",
			short_form ? "#" : "nrefs", refs, short_form ? "c" : "case",
			opts->lowercase ? "lc" : "mixed", short_form ? "e" : "eff",
			opts->eps_smoothing ? "no" : "yes", opts->char_order, opts->word_order,
			short_form ? "s" : "space", opts->whitespace ? "yes" : "no",
			short_form ? "v" : "version", FEDRUN_SACREBLEU_VERSION);
}

int fedrun_chrf_format(const struct fedrun_chrf_opts *opts, const struct fedrun_chrf_score *score,
		       int width, bool short_form, char *buf, size_t size)
{
	char sig[FEDRUN_BLEU_LINE_MAX];
	size_t pos = 0;
	if (width < 0 || width > 20)
		return fedrun_error(FEDRUN_EINVAL, "chrf: width %d outside [0, 20]", width);
	int rc = fedrun_chrf_signature(opts, score->nrefs, short_form, sig, sizeof sig);
	if (rc)
		return rc;
	/* CHRFScore's name: chrF<beta> and a '+' per word order */
	if ((rc = bleu_put(buf, size, &pos, "chrF%d", opts->beta)))
		return rc;
	for (int k = 0; k < opts->word_order && !rc; k++)
		rc = bleu_put(buf, size, &pos, "+");
	if (!rc)
		rc = bleu_put(buf, size, &pos, "|%s = %.*f", sig, width, score->score);
	return rc;
}
