/* SPDX-License-Identifier: Apache-2.0 */
/* Whether text has anything for SentencePiece to learn from. Its trainer
 * aborts the process (a CHECK, not a status) when the normalized text has
 * no character at all, so data.c and spm.cc ask this first. */
#ifndef TFM_BLANK_H
#define TFM_BLANK_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True when the n bytes at s hold no real content: only characters with
 * the Unicode White_Space or Default_Ignorable_Code_Point property
 * (blank_table.h), control characters (Cc), U+2581 (SentencePiece's own
 * mark for a space) and U+FFFD (which its nmt_nfkc normalization turns into
 * a space). A byte that is not part of well-formed UTF-8 is content:
 * SentencePiece learns it as a character. True for n == 0. */
bool tfm_text_blank(const char *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
