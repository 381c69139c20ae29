/* SPDX-License-Identifier: Apache-2.0 */
/* Learning a WordPiece vocabulary from word counts, for an encoder trained
 * from scratch on text that no published vocabulary was made for. The
 * learner is byte-pair encoding (Sennrich et al. 2016, "Neural machine
 * translation of rare words with subword units", ACL, sec. 3.1, Algorithm
 * 1) over characters, with the continuation prefix "##" that WordPiece
 * uses (Wu et al. 2016, sec. 4.1; BERT's vocab.txt): a word is first its
 * characters c1 ##c2 ##c3 ..., and the most frequent adjacent pair (x, y)
 * is merged into x + y without y's "##", again and again. This is also
 * what Hugging Face tokenizers' WordPieceTrainer does (a BpeTrainer with
 * continuing_subword_prefix "##"). The pieces it makes are whole words
 * and word beginnings (no prefix) and word continuations ("##"), which
 * WordPiece's greedy longest match then applies. */
#ifndef FEDRUN_ENCODER_WPLEARN_H
#define FEDRUN_ENCODER_WPLEARN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct wpl_opts {
	uint32_t vocab_size;	 /* total entries, the specials included */
	uint64_t min_frequency;	 /* a pair seen fewer times is not merged (>= 1) */
	const char *const *specials; /* first entries, in order ("[PAD]", ...) */
	uint32_t n_specials;
};

/* words[i] (UTF-8, no spaces, non-empty) seen counts[i] times (> 0),
 * each word once. Writes the vocabulary: the specials, every character
 * seen (the word-initial form "c" where it begins a word, "##c" where it
 * continues one, in order of first appearance in the sorted words), then
 * the merged pieces in merge order, stopping at vocab_size entries or when
 * no pair occurs min_frequency times. Ties between pairs of equal count go
 * to the pair made of the earlier symbols (symbol ids in the order above),
 * so the result is a function of the counts alone. *out (n strings) is
 * malloc'd, each string too; free with wpl_free. FEDRUN_EINVAL when
 * vocab_size cannot hold the specials and the characters (the message
 * says how many it needs). */
int wpl_learn(const char *const *words, const uint64_t *counts, uint32_t nwords,
	      const struct wpl_opts *o, char ***out, uint32_t *n);
void wpl_free(char **vocab, uint32_t n);

/* Word counts to learn from: add each word as it occurs (len bytes; empty
 * words are ignored), then learn from the distinct words and their counts. */
struct wpl_counter;
int wpl_counter_create(struct wpl_counter **out);
void wpl_counter_destroy(struct wpl_counter *c); /* NULL is fine */
int wpl_counter_add(struct wpl_counter *c, const char *word, size_t len);
uint32_t wpl_counter_words(const struct wpl_counter *c); /* distinct words */
int wpl_counter_learn(const struct wpl_counter *c, const struct wpl_opts *o, char ***out,
		      uint32_t *n);

#ifdef __cplusplus
}
#endif
#endif
