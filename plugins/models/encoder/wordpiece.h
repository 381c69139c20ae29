/* SPDX-License-Identifier: Apache-2.0 */
/* BERT's WordPiece tokenizer, as Hugging Face transformers' slow Python
 * BertTokenizer.tokenize() has it (tests/data/hf/README.md: the fixtures
 * it is checked against, code point for code point):
 *
 *  1. when lowercasing, the text is lowercased first, one code point at a
 *     time (Python's str.lower() of each: a capital sigma is always "σ",
 *     never final "ς"), as PreTrainedTokenizer.tokenize does before
 *     anything else (its re.sub over "(.+?)");
 *  2. BasicTokenizer: U+0000, U+FFFD and every General_Category C* code
 *     point but \t \n \r are dropped, whitespace (those three, ' ' and Zs)
 *     becomes ' '; CJK ideographs (tokenization_bert.py's _is_chinese_char
 *     ranges) get a space either side when tokenize_chinese_chars; the text
 *     is split at Python's whitespace (str.split()); each word loses its
 *     accents (NFD, then every Mn dropped) when strip_accents says so; every
 *     punctuation code point (ASCII 33-47, 58-64, 91-96, 123-126, and
 *     General_Category P*) becomes a word of its own;
 *  3. WordpieceTokenizer: each word longer than max_chars_per_word code
 *     points is "[UNK]"; otherwise it is cut greedily, longest match first,
 *     the pieces after the first looked up with a "##" prefix; a word with
 *     an unmatchable rest is "[UNK]" as a whole.
 *
 * The Unicode data is Python 3.11's (unicodedata 14.0.0), as the fixtures'.
 * Text containing a special token ("[MASK]") is not given special
 * treatment (Hugging Face keeps such a token whole); later transformers
 * versions also normalise the text to NFC first, which this (and the
 * fixtures, made with 4.19) does not.
 *
 * Errors go through fedrun_error() and return a negative FEDRUN_E* code. */
#ifndef FEDRUN_ENCODER_WORDPIECE_H
#define FEDRUN_ENCODER_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

struct wp_tokenizer;

struct wp_options {
	int lowercase;		/* BertTokenizer's do_lower_case (default 1) */
	int strip_accents;	/* 1, 0, or -1: follow lowercase (default -1) */
	int tokenize_chinese_chars; /* default 1 */
	int max_chars_per_word;	/* default 100; words longer are [UNK] */
};

/* The defaults above (bert-base-uncased's tokenizer). */
void wp_options_default(struct wp_options *o);

/* Reads a vocab.txt as transformers' load_vocab() does: one token a line,
 * the id its line number from 0, lines ended by "\n", "\r\n" or "\r"
 * (Python's universal newlines), nothing else stripped (so an empty line is
 * the token ""); a token on several lines gets the id of its last line
 * (ids of its earlier lines then have no token, as in transformers).
 * FEDRUN_EINVAL, naming the file and line: invalid UTF-8, a NUL byte; and,
 * naming the file, no "[UNK]" line. FEDRUN_EIO/ENOENT: unreadable.
 * opts NULL: the defaults. */
int wp_load(const char *path, const struct wp_options *opts, struct wp_tokenizer **out);
void wp_free(struct wp_tokenizer *tok);
/* The same from n bytes of a vocab.txt in memory (buf, malloc'd: the
 * tokenizer owns it from the call on, also on error); path names it in
 * messages. */
int wp_load_buffer(const char *path, char *buf, size_t n, const struct wp_options *opts,
		   struct wp_tokenizer **out);

/* The number of lines of the vocabulary: every id is below it. */
size_t wp_size(const struct wp_tokenizer *tok);
/* The id of a token (exact match), or -1. */
int32_t wp_id(const struct wp_tokenizer *tok, const char *token);
/* The token of an id; for an id without one (out of range, or an earlier
 * line of a duplicated token), "[UNK]", as transformers' convert_ids_to_tokens. */
const char *wp_token(const struct wp_tokenizer *tok, int32_t id);

/* Tokenizes `text` (n bytes of UTF-8; FEDRUN_EINVAL for invalid UTF-8,
 * naming the byte offset): writes the first `max` ids to ids[] and the
 * total count (which may exceed max: the text did not fit) to *n. No
 * [CLS]/[SEP] is added. */
int wp_encode(const struct wp_tokenizer *tok, const char *text, size_t len, int32_t *ids,
	      size_t max, size_t *n);

/* The same for text already cut into words (NUL-terminated UTF-8), as a
 * tagging dataset has it: each word is tokenized on its own, one after the
 * other into ids[] (the first `max`; *n the total); first[w] is the index
 * in ids[] of word w's first piece (the one that carries its label in
 * first-subword labelling), or -1 where the word gave no piece (only
 * control characters, say) or its first piece falls at or past max. */
int wp_encode_words(const struct wp_tokenizer *tok, const char *const *words, size_t n_words,
		    int32_t *ids, int32_t *first, size_t max, size_t *n);

/* BasicTokenizer alone (steps 1 and 2 above, with opts; NULL: the
 * defaults): calls fn with each word it makes (NUL-terminated UTF-8 of len
 * bytes, valid for the call), in order; a negative return of fn stops and
 * is returned. For learning a vocabulary (wplearn.h) from the words that
 * WordPiece will later cut. */
int wp_basic_words(const struct wp_options *opts, const char *text, size_t len,
		   int (*fn)(void *ud, const char *word, size_t len), void *ud);

#endif
