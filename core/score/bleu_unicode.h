/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to libfedrun: code-point strings, strict UTF-8, and the Unicode
 * classes that sacreBLEU's tokenizers and chrF depend on (Python's
 * whitespace and lowercasing, the regex module's \p{P}, \p{S}, \p{N}).
 * The tables live in the generated bleu_unicode_tables.c. */
#ifndef FEDRUN_BLEU_UNICODE_H
#define FEDRUN_BLEU_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bleu_range {
	uint32_t lo, hi; /* inclusive */
};

struct bleu_case_pair {
	uint32_t cp, lower;
};

struct bleu_case_multi {
	uint32_t cp;
	uint32_t n;
	uint32_t lower[3];
};

extern const char bleu_unicode_classes_source[];
extern const char bleu_unicode_python_source[];
extern const struct bleu_range bleu_space_ranges[];
extern const size_t bleu_space_ranges_n;
extern const struct bleu_range bleu_punct_ranges[];
extern const size_t bleu_punct_ranges_n;
extern const struct bleu_range bleu_symbol_ranges[];
extern const size_t bleu_symbol_ranges_n;
extern const struct bleu_range bleu_number_ranges[];
extern const size_t bleu_number_ranges_n;
extern const struct bleu_range bleu_cased_ranges[];
extern const size_t bleu_cased_ranges_n;
extern const struct bleu_range bleu_case_ignorable_ranges[];
extern const size_t bleu_case_ignorable_ranges_n;
extern const struct bleu_case_pair bleu_lower_pairs[];
extern const size_t bleu_lower_pairs_n;
extern const struct bleu_case_multi bleu_lower_multi[];
extern const size_t bleu_lower_multi_n;

/* A growable string of code points (Python's str). Caller-owned struct:
 * zero it (or bleu_ustr_init) before use, bleu_ustr_fini after. */
struct bleu_ustr {
	uint32_t *v;
	size_t n, cap;
};

void bleu_ustr_init(struct bleu_ustr *s);
void bleu_ustr_fini(struct bleu_ustr *s);
/* Makes room for `extra` more code points. */
int bleu_ustr_reserve(struct bleu_ustr *s, size_t extra);
int bleu_ustr_push(struct bleu_ustr *s, uint32_t c);
int bleu_ustr_append(struct bleu_ustr *s, const uint32_t *v, size_t n);

/* Decodes n bytes of strict UTF-8 (as Python's "utf-8" codec: no overlong
 * forms, no surrogates, nothing above U+10FFFF) into out (cleared first).
 * FEDRUN_EINVAL names the byte offset of the first bad sequence. */
int bleu_utf8_decode(const char *s, size_t n, struct bleu_ustr *out);
/* Encodes v[0..n) into a new NUL-terminated UTF-8 string (free()). */
int bleu_utf8_encode(const uint32_t *v, size_t n, char **out);

/* Whether c is in one of the sorted, disjoint ranges r[0..n). */
bool bleu_in_ranges(const struct bleu_range *r, size_t n, uint32_t c);

bool bleu_is_space(uint32_t c);		 /* Python str.isspace() */
bool bleu_is_punct(uint32_t c);		 /* regex \p{P} */
bool bleu_is_symbol(uint32_t c);	 /* regex \p{S} */
bool bleu_is_number(uint32_t c);	 /* regex \p{N} */
bool bleu_is_cased(uint32_t c);		 /* Python's Cased */
bool bleu_is_case_ignorable(uint32_t c); /* Python's Case_Ignorable */

/* Python str.lower() of in[0..n), final sigma included, appended to out. */
int bleu_lower(const uint32_t *in, size_t n, struct bleu_ustr *out);

/* Python str.rstrip(): the length without trailing whitespace. */
size_t bleu_rstrip_len(const uint32_t *v, size_t n);

#endif
