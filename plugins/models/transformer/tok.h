/* SPDX-License-Identifier: Apache-2.0 */
/* The transformer's tokenizers behind one interface: "words" (tokens split
 * at ASCII white space, a fedrun_vocab shared by source and target, with
 * the specials <unk>, <eos>, <pad>, <bos>) and "sentencepiece" (spm.h; only
 * when fedrun was built with SentencePiece). */
#ifndef TFM_TOK_H
#define TFM_TOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { TFM_TOK_WORDS = 0, TFM_TOK_SPM = 1 };
/* How the words tokenizer splits a line: at white space only, or also
 * before and after every ASCII punctuation character, a token glued to the
 * previous one marked with a joiner (tok.c) so that decoding restores the
 * spacing. Part of the vocabulary: a vocabulary is used with the splitting
 * it was built with. */
enum { TFM_SPLIT_WHITESPACE = 0, TFM_SPLIT_PUNCT = 1 };
/* chars (with TFM_SPLIT_PUNCT only): a word the vocabulary lacks is
 * spelled in its characters, each a token glued to the one before (the
 * first as the word was), instead of becoming <unk>; a trained vocabulary
 * counts the characters of every word beside the words. */

struct tfm_tok;

/* Words: a vocabulary trained on in-memory lines (every token of lines[0 ..
 * n)): the most frequent words, ties by byte order, those seen fewer than
 * min_count times left out, at most max_size entries with the specials (0:
 * no cap). */
int tfm_tok_words_train(const char *const *lines, uint64_t n, uint32_t max_size, uint64_t min_count,
			int split, int chars, struct tfm_tok **out);
/* Words, federated: the same vocabulary from the clients' lines (client k:
 * lines[k][0 .. n[k])) without any party learning another's counts; the
 * order comes from fedrun_fedvocab_order (FedNMT's federated vocabulary),
 * min_count is applied inside it, max_size after it. The counts recorded in
 * the vocabulary are 0, since nobody learns the totals. */
struct tfm_tok_fed {
	uint32_t max_size;
	uint64_t min_count;
	uint32_t key_bits, key_holder;
	uint32_t threads; /* for the protocol's encryptions and decryptions */
	int split;	  /* TFM_SPLIT_* */
	int chars;	  /* count characters too (unknown words spelled) */
	/* asked during the protocol; true: it stops (FEDRUN_EINTERRUPTED).
	   NULL: never */
	bool (*interrupted)(void *ctx);
	void *ctx;
};
int tfm_tok_words_train_federated(const char *const *const *lines, const uint64_t *n,
				  uint32_t nclients, const struct tfm_tok_fed *f,
				  struct tfm_tok **out);
/* Words: a vocabulary file (fedrun_vocab_load's format), used with the
 * splitting `split` (TFM_SPLIT_*). */
int tfm_tok_words_load(const char *path, int split, int chars, struct tfm_tok **out);
/* Words: writes the vocabulary (fedrun_vocab_save). */
int tfm_tok_words_save(const struct tfm_tok *t, const char *path);
/* SentencePiece: a .model file. FEDRUN_ECONFIG naming `what` when fedrun
 * was built without SentencePiece. */
int tfm_tok_spm_load(const char *path, const char *what, struct tfm_tok **out);
/* SentencePiece: trains on the lines of files into model_path. */
int tfm_tok_spm_train(const char *const *files, uint32_t n, uint32_t vocab_size,
		      const char *model_type, double character_coverage, uint64_t seed,
		      const char *text_name, const char *model_path, const char *what);
void tfm_tok_destroy(struct tfm_tok *t);

int tfm_tok_type(const struct tfm_tok *t);
uint32_t tfm_tok_size(const struct tfm_tok *t);
int32_t tfm_tok_pad(const struct tfm_tok *t);
int32_t tfm_tok_bos(const struct tfm_tok *t);
int32_t tfm_tok_eos(const struct tfm_tok *t);
int32_t tfm_tok_unk(const struct tfm_tok *t);
/* Text (len bytes, UTF-8) to ids, no bos/eos; *ids malloc'd (may be NULL
 * when *n is 0). Thread-safe. */
int tfm_tok_encode(const struct tfm_tok *t, const char *text, size_t len, int32_t **ids,
		   uint32_t *n);
/* Ids to text, specials (pad, bos, eos) left out; *text malloc'd. */
int tfm_tok_decode(const struct tfm_tok *t, const int32_t *ids, uint32_t n, char **text);

#endif
