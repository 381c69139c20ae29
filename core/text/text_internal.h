/* Private to libfedrun's text layer: the corpus scanner shared by vocabulary
 * building and corpus reading, and the word hash table behind a vocabulary.
 * Not installed; names carry no fedrun_ prefix so they are not exported. */
#ifndef FEDRUN_TEXT_INTERNAL_H
#define FEDRUN_TEXT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
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

/* Length of the valid UTF-8 sequence starting at p (1 to 4), or 0 when the
 * bytes there are not valid UTF-8 (overlong, surrogate, > U+10FFFF,
 * truncated, stray continuation byte) or a NUL. */
size_t text_utf8_len(const unsigned char *p, const unsigned char *end);

#endif
