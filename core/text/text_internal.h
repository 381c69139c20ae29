/* SPDX-License-Identifier: Apache-2.0 */
/* Private to libfedrun's text layer: the corpus scanner shared by vocabulary
 * building and corpus reading, and the word hash table behind a vocabulary.
 * Not installed; names carry no fedrun_ prefix so they are not exported. */
#ifndef FEDRUN_TEXT_INTERNAL_H
#define FEDRUN_TEXT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "fedrun/opts.h"
#include "fedrun/records.h"
#include "fedrun/text.h"

/* Called for each token (len >= 1 bytes, not NUL-terminated, already
 * lowercased when asked) and, with word NULL, at the end of each sentence.
 * A negative return stops the scan and is returned by text_scan_file. */
typedef int (*text_token_fn)(void *ud, const char *word, size_t len);

/* Reads `path` whole and calls `fn` for its tokens and sentence ends.
 * Validates UTF-8 (errors name file, line and byte column) and fails when
 * the file holds no sentence. */
int text_scan_file(const char *path, const struct fedrun_text_opts *opts, text_token_fn fn,
		   void *ud);

/* One line [text, text + len) of no newline as text_scan_file scans a
 * file's line (errors name `where` and `line`): its tokens, then the end
 * of sentence when it had any. Returns 1 when it had a token, 0 when it was
 * blank, or fn's or the scan's error. */
int text_scan_line(const char *where, uint64_t line, const char *text, size_t len,
		   const struct fedrun_text_opts *opts, text_token_fn fn, void *ud);

/* The data.tokenizer key of a fedrun_opts spec, stored as an int (enum
 * fedrun_text_tokenizer) at member m of struct type T: optional, so that
 * the default (whitespace, which the caller sets) is not written back and
 * a run's pipeline stays as it was before the key existed. */
#define TEXT_TOKENIZER_OPT(T, m)                                                                   \
	{"tokenizer", FEDRUN_OPT_CHOICE, offsetof(T, m), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,       \
	 "whitespace|13a|intl"}
/* Called with the label of each sentence (data.format tsv or jsonl with a
 * label column or field), after its tokens and before its end. */
typedef int (*text_label_fn)(void *ud, const char *label, size_t len);

/* text_scan_file for opts->format tsv and jsonl: the text of each record
 * (fedrun_records_read) is a line; label_fn (may be NULL) gets labels. */
int text_scan_records(const char *path, const struct fedrun_text_opts *opts, text_token_fn fn,
		      text_label_fn label_fn, void *ud);

/* Length of the valid UTF-8 sequence starting at p (1 to 4), or 0 when the
 * bytes there are not valid UTF-8 (overlong, surrogate, > U+10FFFF,
 * truncated, stray continuation byte) or a NUL. */
size_t text_utf8_len(const unsigned char *p, const unsigned char *end);

#endif
