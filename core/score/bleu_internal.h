/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to libfedrun: the pieces BLEU and chrF share. Segments become
 * token lists (sacreBLEU's tokenizers followed by str.split()), and n-grams
 * are counted in a hash table keyed by runs of code points. */
#ifndef FEDRUN_BLEU_INTERNAL_H
#define FEDRUN_BLEU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "fedrun/bleu.h"
#include "bleu_unicode.h"

/* Words of a segment, stored as text = the words joined by single spaces
 * (U+0020 never occurs inside a word), so that the n words starting at
 * word i are the contiguous run text[start[i] .. end(i + n - 1)). */
struct bleu_words {
	struct bleu_ustr text;
	size_t *start; /* n entries */
	size_t n, cap;
};

void bleu_words_init(struct bleu_words *w);
void bleu_words_fini(struct bleu_words *w);
/* End (exclusive) of word i in w->text. */
size_t bleu_words_end(const struct bleu_words *w, size_t i);
/* Python's s.split(): the whitespace-separated words of v[0..n). */
int bleu_words_split(const uint32_t *v, size_t n, struct bleu_words *out);

/* Scratch buffers reused from segment to segment. */
struct bleu_scratch {
	struct bleu_ustr a, b, c;
};
void bleu_scratch_init(struct bleu_scratch *s);
void bleu_scratch_fini(struct bleu_scratch *s);

/* Decodes a segment and applies Python's str.lower() when asked; the result
 * is in s->a. The error message says what was wrong. */
int bleu_segment_decode(const char *seg, bool lowercase, struct bleu_scratch *s);
/* BLEU's _preprocess_segment(): lowercase, rstrip, tokenize; the
 * tokenizer's output string is left in *out (one of the scratch buffers). */
int bleu_segment_tokenize(enum fedrun_bleu_tokenizer tok, bool lowercase, const char *seg,
			  struct bleu_scratch *s, const struct bleu_ustr **out);

/* An n-gram count table. Keys are code-point runs plus an order tag (two
 * different n-grams may spell the same run, e.g. chrF's character 3-gram
 * "abc" and word 1-gram "abc"); each entry carries three counters. */
struct bleu_ngram {
	uint64_t hash;
	size_t off;	/* key in the table's key arena */
	uint32_t len;	/* key length in code points; 0: empty slot */
	uint32_t order; /* caller's tag */
	int64_t a, b, c;
};

struct bleu_ngrams {
	struct bleu_ngram *slot;
	size_t cap, used;
	/* slot indices of the `used` entries, in insertion order: clearing
	 * and visiting cost the entries, not the table's capacity */
	size_t *live;
	struct bleu_ustr keys;
};

/* Entry k (0 <= k < t->used) of table t. */
#define BLEU_NGRAM_AT(t, k) (&(t)->slot[(t)->live[(k)]])

void bleu_ngrams_init(struct bleu_ngrams *t);
void bleu_ngrams_fini(struct bleu_ngrams *t);
/* Forgets every entry, keeping the memory. */
void bleu_ngrams_clear(struct bleu_ngrams *t);
/* Finds the entry of (key[0..len), order), inserting a zeroed one; len >= 1.
 * *e stays valid until the next insertion. */
int bleu_ngrams_get(struct bleu_ngrams *t, const uint32_t *key, size_t len, uint32_t order,
		    struct bleu_ngram **e);

/* Folds one segment's reference count into the corpus's nrefs: *nrefs
 * starts at BLEU_NREFS_UNSET and ends as the common count, or -1 ("var")
 * when segments differ. */
#define BLEU_NREFS_UNSET (-2)
void bleu_nrefs_fold(int *nrefs, size_t used);

/* snprintf at buf + *pos, advancing *pos; FEDRUN_EINVAL when the text
 * does not fit in size bytes. */
int bleu_put(char *buf, size_t size, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends a word (n >= 1 code points, no whitespace) to w. */
int bleu_words_push(struct bleu_words *w, const uint32_t *v, size_t n);

/* Scores the segments idx[0..m) of a metric's per-segment statistics
 * (an array of the metric's stats struct). */
typedef double (*bleu_resample_fn)(const void *opts, const void *stats, size_t m,
				   const size_t *idx);
/* The paired bootstrap of core/score/bootstrap.c, for any metric: a and b
 * are the metric's arrays of n segment statistics, scored by `score` (see
 * fedrun_bleu_paired_bootstrap). */
int bleu_paired_bootstrap(bleu_resample_fn score, const void *opts, const void *a, const void *b,
			  size_t n, size_t samples, uint64_t seed,
			  struct fedrun_paired_bootstrap *out, double *scores);

#endif
