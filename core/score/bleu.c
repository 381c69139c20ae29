/* SPDX-License-Identifier: Apache-2.0 */
/* BLEU (Papineni et al., 2002) as sacreBLEU 2.6.0 computes it
 * (metrics/bleu.py): clipped n-gram matches against the per-n-gram maximum
 * over references, the closest reference length, Chen and Cherry (2014)
 * smoothing, effective order, and sacreBLEU's signature and text format. */
#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"
#include "bleu_internal.h"

/* sacreBLEU's my_log(0): a floor instead of -inf, so that a zero
 * precision drives the geometric mean to 0 without a domain error. */
#define BLEU_LOG_ZERO (-9999999999.0)

/* BLEU.SMOOTH_DEFAULTS */
#define BLEU_FLOOR_DEFAULT 0.1
#define BLEU_ADD_K_DEFAULT 1.0

/* What one corpus evaluation reuses from segment to segment. */
struct bleu_ctx {
	struct bleu_scratch s;
	struct bleu_words w;
	struct bleu_ngrams t;
	int64_t *ref_lens;
	size_t ref_cap;
};

static void ctx_init(struct bleu_ctx *c)
{
	bleu_scratch_init(&c->s);
	bleu_words_init(&c->w);
	bleu_ngrams_init(&c->t);
	c->ref_lens = NULL;
	c->ref_cap = 0;
}

static void ctx_fini(struct bleu_ctx *c)
{
	bleu_scratch_fini(&c->s);
	bleu_words_fini(&c->w);
	bleu_ngrams_fini(&c->t);
	free(c->ref_lens);
}

static const char *const smooth_names[] = {"exp", "none", "floor", "add-k"};

const char *fedrun_bleu_smooth_name(enum fedrun_bleu_smooth smooth)
{
	if ((unsigned)smooth >= sizeof smooth_names / sizeof smooth_names[0])
		return NULL;
	return smooth_names[smooth];
}

int fedrun_bleu_smooth_parse(const char *name, enum fedrun_bleu_smooth *out)
{
	for (size_t k = 0; k < sizeof smooth_names / sizeof smooth_names[0]; k++) {
		if (name && !strcmp(name, smooth_names[k])) {
			*out = (enum fedrun_bleu_smooth)k;
			return 0;
		}
	}
	return fedrun_error(FEDRUN_EINVAL,
			    "unknown smoothing '%s': expected exp, none, floor or add-k",
			    name ? name : "(null)");
}

void fedrun_bleu_opts_init(struct fedrun_bleu_opts *opts)
{
	memset(opts, 0, sizeof *opts);
	opts->tokenize = FEDRUN_BLEU_TOK_13A;
	opts->smooth = FEDRUN_BLEU_SMOOTH_EXP;
	opts->smooth_value = -1.0;
	opts->lowercase = false;
	opts->effective_order = false;
}

static int check_opts(const struct fedrun_bleu_opts *opts)
{
	if (!fedrun_bleu_tokenizer_name(opts->tokenize))
		return fedrun_error(FEDRUN_EINVAL, "bleu: unknown tokenizer %d",
				    (int)opts->tokenize);
	if (!fedrun_bleu_smooth_name(opts->smooth))
		return fedrun_error(FEDRUN_EINVAL, "bleu: unknown smoothing %d", (int)opts->smooth);
	if (isnan(opts->smooth_value))
		return fedrun_error(FEDRUN_EINVAL, "bleu: smooth_value is NaN");
	return 0;
}

static double smooth_value(const struct fedrun_bleu_opts *opts)
{
	if (opts->smooth_value >= 0)
		return opts->smooth_value;
	return opts->smooth == FEDRUN_BLEU_SMOOTH_FLOOR ? BLEU_FLOOR_DEFAULT : BLEU_ADD_K_DEFAULT;
}

/* Adds the 1..4-grams of w to counter a (which == 0) or c (which == 2). */
static int count_ngrams(struct bleu_ngrams *t, const struct bleu_words *w, int which)
{
	for (size_t n = 1; n <= FEDRUN_BLEU_ORDER; n++) {
		for (size_t i = 0; i + n <= w->n; i++) {
			size_t b = w->start[i], e = bleu_words_end(w, i + n - 1);
			struct bleu_ngram *g;
			int rc = bleu_ngrams_get(t, w->text.v + b, e - b, (uint32_t)n, &g);
			if (rc)
				return rc;
			if (which == 0)
				g->a++;
			else
				g->c++;
		}
	}
	return 0;
}

static int words_of(struct bleu_ctx *c, const struct fedrun_bleu_opts *opts, const char *seg)
{
	const struct bleu_ustr *tok;
	int rc = bleu_segment_tokenize(opts->tokenize, opts->lowercase, seg, &c->s, &tok);
	if (!rc)
		rc = bleu_words_split(tok->v, tok->n, &c->w);
	return rc;
}

/* BLEU._get_closest_ref_len: ties go to the shorter reference. */
static int64_t closest_ref_len(int64_t hyp_len, const int64_t *lens, size_t n)
{
	int64_t best_diff = -1, best = -1;
	for (size_t i = 0; i < n; i++) {
		int64_t diff = hyp_len > lens[i] ? hyp_len - lens[i] : lens[i] - hyp_len;
		if (best_diff == -1 || diff < best_diff) {
			best_diff = diff;
			best = lens[i];
		} else if (diff == best_diff && lens[i] < best) {
			best = lens[i];
		}
	}
	return best;
}

/* BLEU._extract_reference_info and _compute_segment_statistics: counter b
 * holds each n-gram's maximum count over the references, c the current
 * reference's count, a the hypothesis's. */
static int segment_stats(struct bleu_ctx *c, const struct fedrun_bleu_opts *opts, const char *hyp,
			 size_t nrefs, const char *const *refs, struct fedrun_bleu_stats *st,
			 size_t *used)
{
	int rc;
	memset(st, 0, sizeof *st);
	*used = 0;
	if (!hyp)
		return fedrun_error(FEDRUN_EINVAL, "hypothesis is NULL");
	if (nrefs > c->ref_cap) {
		int64_t *p = realloc(c->ref_lens, nrefs * sizeof p[0]);
		if (!p)
			return fedrun_error(FEDRUN_ENOMEM, "bleu: out of memory");
		c->ref_lens = p;
		c->ref_cap = nrefs;
	}
	bleu_ngrams_clear(&c->t);
	size_t k = 0;
	for (size_t r = 0; r < nrefs; r++) {
		/* sacreBLEU drops None references per segment, but keeps ""
		 * ones: an empty reference has length 0 and no n-grams */
		if (!refs[r])
			continue;
		if ((rc = words_of(c, opts, refs[r])) || (rc = count_ngrams(&c->t, &c->w, 2)))
			return fedrun_error_wrap(rc, "reference %zu: ", r + 1);
		c->ref_lens[k++] = (int64_t)c->w.n;
		for (size_t i = 0; i < c->t.used; i++) {
			struct bleu_ngram *g = BLEU_NGRAM_AT(&c->t, i);
			if (g->c > g->b)
				g->b = g->c;
			g->c = 0;
		}
	}
	if (!k)
		return fedrun_error(FEDRUN_EINVAL, "no reference (all are NULL)");
	*used = k;
	if ((rc = words_of(c, opts, hyp)) || (rc = count_ngrams(&c->t, &c->w, 0)))
		return fedrun_error_wrap(rc, "hypothesis: ");
	st->sys_len = (int64_t)c->w.n;
	st->ref_len = closest_ref_len(st->sys_len, c->ref_lens, k);
	for (size_t i = 0; i < c->t.used; i++) {
		const struct bleu_ngram *g = BLEU_NGRAM_AT(&c->t, i);
		if (!g->a)
			continue;
		st->total[g->order - 1] += g->a;
		st->correct[g->order - 1] += g->a < g->b ? g->a : g->b;
	}
	return 0;
}

int fedrun_bleu_segment_stats(const struct fedrun_bleu_opts *opts, const char *hyp, size_t nrefs,
			      const char *const *refs, struct fedrun_bleu_stats *stats,
			      size_t *used)
{
	size_t u = 0;
	int rc = check_opts(opts);
	if (rc)
		return rc;
	struct bleu_ctx c;
	ctx_init(&c);
	rc = segment_stats(&c, opts, hyp, nrefs, refs, stats, &u);
	ctx_fini(&c);
	if (used)
		*used = u;
	return rc;
}

void fedrun_bleu_stats_add(struct fedrun_bleu_stats *acc, const struct fedrun_bleu_stats *s)
{
	acc->sys_len += s->sys_len;
	acc->ref_len += s->ref_len;
	for (int n = 0; n < FEDRUN_BLEU_ORDER; n++) {
		acc->correct[n] += s->correct[n];
		acc->total[n] += s->total[n];
	}
}

static double my_log(double x)
{
	return x == 0.0 ? BLEU_LOG_ZERO : log(x);
}

/* BLEU.compute_bleu, operation for operation, so that the doubles agree
 * with sacreBLEU's to the last bit where the C library's exp and log do.
 * BLEU = BP * exp(sum_n w_n log p_n) with w_n = 1/N and BP = exp(1 - r/c)
 * when c < r (section 2.3 of Papineni et al., 2002). Zero-match orders
 * are smoothed by Chen and Cherry (2014): floor is their method 1, add-k
 * method 2, exp (mteval-v13a's NIST geometric decay) method 3. */
void fedrun_bleu_compute(const struct fedrun_bleu_opts *opts, const struct fedrun_bleu_stats *st,
			 struct fedrun_bleu_score *out)
{
	memset(out, 0, sizeof *out);
	for (int n = 0; n < FEDRUN_BLEU_ORDER; n++) {
		out->counts[n] = st->correct[n];
		out->totals[n] = st->total[n];
	}
	out->sys_len = st->sys_len;
	out->ref_len = st->ref_len;
	if (st->sys_len < st->ref_len)
		out->bp =
		    st->sys_len > 0 ? exp(1.0 - (double)st->ref_len / (double)st->sys_len) : 0.0;
	else
		out->bp = 1.0;

	bool any = false;
	for (int n = 0; n < FEDRUN_BLEU_ORDER; n++)
		any = any || st->correct[n] != 0;
	if (!any) /* sacreBLEU issue #141: no match at all scores 0 */
		return;

	double k = smooth_value(opts), smooth_mteval = 1.0;
	int eff_order = FEDRUN_BLEU_ORDER;
	for (int n = 1; n <= FEDRUN_BLEU_ORDER; n++) {
		double correct = (double)st->correct[n - 1], total = (double)st->total[n - 1];
		if (opts->smooth == FEDRUN_BLEU_SMOOTH_ADD_K && n > 1) {
			correct += k;
			total += k;
		}
		if (total == 0)
			break;
		if (opts->effective_order)
			eff_order = n;
		if (correct == 0) {
			if (opts->smooth == FEDRUN_BLEU_SMOOTH_EXP) {
				smooth_mteval *= 2;
				out->precisions[n - 1] = 100. / (smooth_mteval * total);
			} else if (opts->smooth == FEDRUN_BLEU_SMOOTH_FLOOR) {
				out->precisions[n - 1] = 100. * k / total;
			}
		} else {
			out->precisions[n - 1] = 100. * correct / total;
		}
	}
	/* Python's sum() adds left to right from 0 */
	double sum = 0.0;
	for (int n = 0; n < eff_order; n++)
		sum += my_log(out->precisions[n]);
	out->score = out->bp * exp(sum / eff_order);
}

/* Scores every segment once: the sum into *sum, each segment's statistics
 * into per_seg[i] when per_seg is not NULL. */
static int corpus_stats(const struct fedrun_bleu_opts *opts, size_t n, const char *const *hyps,
			size_t nrefs, const char *const *const *refs,
			struct fedrun_bleu_stats *per_seg, struct fedrun_bleu_stats *sum,
			int *nrefs_out)
{
	memset(sum, 0, sizeof *sum);
	*nrefs_out = 0;
	int rc = check_opts(opts);
	if (rc)
		return rc;
	if (!n)
		return fedrun_error(FEDRUN_EINVAL, "bleu: no hypotheses");
	if (!nrefs)
		return fedrun_error(FEDRUN_EINVAL, "bleu: no references");
	const char **seg_refs = calloc(nrefs, sizeof seg_refs[0]);
	if (!seg_refs)
		return fedrun_error(FEDRUN_ENOMEM, "bleu: out of memory");
	struct bleu_ctx c;
	ctx_init(&c);
	struct fedrun_bleu_stats st;
	int nr = BLEU_NREFS_UNSET;
	for (size_t i = 0; i < n && !rc; i++) {
		size_t used;
		for (size_t r = 0; r < nrefs; r++)
			seg_refs[r] = refs[r] ? refs[r][i] : NULL;
		rc = segment_stats(&c, opts, hyps[i], nrefs, seg_refs, &st, &used);
		if (rc) {
			rc = fedrun_error_wrap(rc, "bleu: segment %zu: ", i + 1);
			break;
		}
		fedrun_bleu_stats_add(sum, &st);
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

int fedrun_bleu_corpus_score(const struct fedrun_bleu_opts *opts, size_t n, const char *const *hyps,
			     size_t nrefs, const char *const *const *refs,
			     struct fedrun_bleu_score *out)
{
	struct fedrun_bleu_stats sum;
	int nr;
	memset(out, 0, sizeof *out);
	int rc = corpus_stats(opts, n, hyps, nrefs, refs, NULL, &sum, &nr);
	if (rc)
		return rc;
	fedrun_bleu_compute(opts, &sum, out);
	out->nrefs = nr;
	return 0;
}

int fedrun_bleu_corpus_stats(const struct fedrun_bleu_opts *opts, size_t n, const char *const *hyps,
			     size_t nrefs, const char *const *const *refs,
			     struct fedrun_bleu_stats *stats, int *nrefs_out)
{
	struct fedrun_bleu_stats sum;
	int nr;
	if (!stats)
		return fedrun_error(FEDRUN_EINVAL, "bleu: no array for the statistics");
	int rc = corpus_stats(opts, n, hyps, nrefs, refs, stats, &sum, &nr);
	if (nrefs_out)
		*nrefs_out = nr;
	return rc;
}

void fedrun_bleu_resample_score(const struct fedrun_bleu_opts *opts,
				const struct fedrun_bleu_stats *stats, size_t m, const size_t *idx,
				struct fedrun_bleu_score *out)
{
	struct fedrun_bleu_stats sum;
	memset(&sum, 0, sizeof sum);
	for (size_t j = 0; j < m; j++)
		fedrun_bleu_stats_add(&sum, &stats[idx[j]]);
	fedrun_bleu_compute(opts, &sum, out);
}

/* bleu_resample_fn for bleu_paired_bootstrap. */
static double bleu_resample(const void *opts, const void *stats, size_t m, const size_t *idx)
{
	struct fedrun_bleu_score s;
	fedrun_bleu_resample_score(opts, stats, m, idx, &s);
	return s.score;
}

int fedrun_bleu_paired_bootstrap(const struct fedrun_bleu_opts *opts, size_t n,
				 const struct fedrun_bleu_stats *a,
				 const struct fedrun_bleu_stats *b, size_t samples, uint64_t seed,
				 struct fedrun_paired_bootstrap *out, double *scores)
{
	int rc = check_opts(opts);
	if (rc) {
		memset(out, 0, sizeof *out);
		return rc;
	}
	rc = bleu_paired_bootstrap(bleu_resample, opts, a, b, n, samples, seed, out, scores);
	return rc ? fedrun_error_wrap(rc, "bleu: ") : 0;
}

int fedrun_bleu_sentence_score(const struct fedrun_bleu_opts *opts, const char *hyp, size_t nrefs,
			       const char *const *refs, struct fedrun_bleu_score *out)
{
	struct fedrun_bleu_stats st;
	size_t used;
	memset(out, 0, sizeof *out);
	if (!nrefs)
		return fedrun_error(FEDRUN_EINVAL, "bleu: no references");
	int rc = fedrun_bleu_segment_stats(opts, hyp, nrefs, refs, &st, &used);
	if (rc)
		return fedrun_error_wrap(rc, "bleu: ");
	fedrun_bleu_compute(opts, &st, out);
	out->nrefs = (int)used;
	return 0;
}

int bleu_put(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + *pos, *pos < size ? size - *pos : 0, fmt, ap);
	va_end(ap);
	if (m < 0 || *pos >= size || (size_t)m >= size - *pos)
		return fedrun_error(FEDRUN_EINVAL, "bleu: buffer of %zu bytes too small", size);
	*pos += (size_t)m;
	return 0;
}

int fedrun_bleu_signature(const struct fedrun_bleu_opts *opts, int nrefs, bool short_form,
			  char *buf, size_t size)
{
	size_t pos = 0;
	int rc = check_opts(opts);
	if (rc)
		return rc;
	if (!size)
		return fedrun_error(FEDRUN_EINVAL, "bleu: buffer of 0 bytes too small");
	buf[0] = '\0';
	char refs[16];
	if (nrefs < 0)
		snprintf(refs, sizeof refs, "var");
	else
		snprintf(refs, sizeof refs, "%d", nrefs);
	rc = bleu_put(buf, size, &pos, "%s:%s|%s:%s|%s:%s|tok:%s|%s:%s", short_form ? "#" : "nrefs",
		      refs, short_form ? "c" : "case", opts->lowercase ? "lc" : "mixed",
		      short_form ? "e" : "eff", opts->effective_order ? "yes" : "no",
		      fedrun_bleu_tokenizer_name(opts->tokenize), short_form ? "s" : "smooth",
		      fedrun_bleu_smooth_name(opts->smooth));
	/* methods that take a value show it: floor[0.10], add-k[1.00] */
	if (!rc &&
	    (opts->smooth == FEDRUN_BLEU_SMOOTH_FLOOR || opts->smooth == FEDRUN_BLEU_SMOOTH_ADD_K))
		rc = bleu_put(buf, size, &pos, "[%.2f]", smooth_value(opts));
	if (!rc)
		rc = bleu_put(buf, size, &pos, "|%s:%s", short_form ? "v" : "version",
			      FEDRUN_SACREBLEU_VERSION);
	return rc;
}

int fedrun_bleu_format(const struct fedrun_bleu_opts *opts, const struct fedrun_bleu_score *score,
		       int width, bool short_form, char *buf, size_t size)
{
	char sig[FEDRUN_BLEU_LINE_MAX];
	size_t pos = 0;
	if (width < 0 || width > 20)
		return fedrun_error(FEDRUN_EINVAL, "bleu: width %d outside [0, 20]", width);
	int rc = fedrun_bleu_signature(opts, score->nrefs, short_form, sig, sizeof sig);
	if (rc)
		return rc;
	/* BLEUScore's ratio is 0 when there is no reference token */
	double ratio = score->ref_len ? (double)score->sys_len / (double)score->ref_len : 0.0;
	rc = bleu_put(buf, size, &pos, "BLEU|%s = %.*f ", sig, width, score->score);
	for (int n = 0; !rc && n < FEDRUN_BLEU_ORDER; n++)
		rc = bleu_put(buf, size, &pos, n ? "/%.1f" : "%.1f", score->precisions[n]);
	if (!rc)
		rc = bleu_put(buf, size, &pos,
			      " (BP = %.3f ratio = %.3f hyp_len = %" PRId64 " ref_len = %" PRId64
			      ")",
			      score->bp, ratio, score->sys_len, score->ref_len);
	return rc;
}
