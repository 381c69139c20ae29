/* SPDX-License-Identifier: Apache-2.0 */
/* Code-point strings, strict UTF-8 and the Unicode class look-ups behind
 * the sacreBLEU-exact tokenizers: sacreBLEU works on Python str (code
 * points), so everything here does too, never on bytes. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"
#include "bleu_unicode.h"

#define GREEK_CAPITAL_SIGMA 0x3A3
#define GREEK_SMALL_SIGMA 0x3C3
#define GREEK_SMALL_FINAL_SIGMA 0x3C2

void bleu_ustr_init(struct bleu_ustr *s)
{
	s->v = NULL;
	s->n = 0;
	s->cap = 0;
}

void bleu_ustr_fini(struct bleu_ustr *s)
{
	free(s->v);
	bleu_ustr_init(s);
}

int bleu_ustr_reserve(struct bleu_ustr *s, size_t extra)
{
	if (extra <= s->cap - s->n)
		return 0;
	if (extra > SIZE_MAX / sizeof(uint32_t) / 2 - s->n)
		return fedrun_error(FEDRUN_ENOMEM, "bleu: string too long");
	size_t cap = s->cap ? s->cap : 64;
	while (cap - s->n < extra)
		cap *= 2;
	uint32_t *v = realloc(s->v, cap * sizeof v[0]);
	if (!v)
		return fedrun_error(FEDRUN_ENOMEM, "bleu: out of memory");
	s->v = v;
	s->cap = cap;
	return 0;
}

int bleu_ustr_push(struct bleu_ustr *s, uint32_t c)
{
	if (s->n == s->cap) {
		int rc = bleu_ustr_reserve(s, 1);
		if (rc)
			return rc;
	}
	s->v[s->n++] = c;
	return 0;
}

int bleu_ustr_append(struct bleu_ustr *s, const uint32_t *v, size_t n)
{
	if (!n)
		return 0;
	int rc = bleu_ustr_reserve(s, n);
	if (rc)
		return rc;
	memcpy(s->v + s->n, v, n * sizeof v[0]);
	s->n += n;
	return 0;
}

size_t fedrun_utf8_next(const char *s, size_t n, size_t i, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char b = p[i];
	size_t len;
	uint32_t c, min;
	if (b < 0x80) {
		*cp = b;
		return 1;
	} else if (b >= 0xC2 && b <= 0xDF) {
		len = 2, c = b & 0x1Fu, min = 0x80;
	} else if (b >= 0xE0 && b <= 0xEF) {
		len = 3, c = b & 0x0Fu, min = 0x800;
	} else if (b >= 0xF0 && b <= 0xF4) {
		len = 4, c = b & 0x07u, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n - i)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((p[i + k] & 0xC0u) != 0x80u)
			return 0;
		c = (c << 6) | (p[i + k] & 0x3Fu);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

int bleu_utf8_decode(const char *s, size_t n, struct bleu_ustr *out)
{
	out->n = 0;
	int rc = bleu_ustr_reserve(out, n + 1);
	if (rc)
		return rc;
	for (size_t i = 0; i < n;) {
		size_t len = fedrun_utf8_next(s, n, i, &out->v[out->n]);
		if (!len)
			return fedrun_error(FEDRUN_EINVAL, "invalid UTF-8 at byte %zu", i);
		out->n++;
		i += len;
	}
	return 0;
}

bool fedrun_utf8_valid(const char *s, size_t n, size_t *bad)
{
	uint32_t cp;
	for (size_t i = 0; i < n;) {
		size_t len = fedrun_utf8_next(s, n, i, &cp);
		if (!len) {
			if (bad)
				*bad = i;
			return false;
		}
		i += len;
	}
	return true;
}

size_t fedrun_utf8_rstrip(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	while (n > 0) {
		size_t j = n - 1;
		while (j > 0 && (p[j] & 0xC0u) == 0x80u)
			j--;
		uint32_t cp;
		if (fedrun_utf8_next(s, n, j, &cp) != n - j || !bleu_is_space(cp))
			break;
		n = j;
	}
	return n;
}

int bleu_utf8_encode(const uint32_t *v, size_t n, char **out)
{
	*out = NULL;
	if (n > (SIZE_MAX - 1) / 4)
		return fedrun_error(FEDRUN_ENOMEM, "bleu: string too long");
	unsigned char *buf = malloc(4 * n + 1), *q = buf;
	if (!buf)
		return fedrun_error(FEDRUN_ENOMEM, "bleu: out of memory");
	for (size_t i = 0; i < n; i++) {
		uint32_t c = v[i];
		if (c < 0x80) {
			*q++ = (unsigned char)c;
		} else if (c < 0x800) {
			*q++ = (unsigned char)(0xC0 | (c >> 6));
			*q++ = (unsigned char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			*q++ = (unsigned char)(0xE0 | (c >> 12));
			*q++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
			*q++ = (unsigned char)(0x80 | (c & 0x3F));
		} else {
			*q++ = (unsigned char)(0xF0 | (c >> 18));
			*q++ = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
			*q++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
			*q++ = (unsigned char)(0x80 | (c & 0x3F));
		}
	}
	*q = '\0';
	*out = (char *)buf;
	return 0;
}

bool bleu_in_ranges(const struct bleu_range *r, size_t n, uint32_t c)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c < r[mid].lo)
			hi = mid;
		else if (c > r[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

bool bleu_is_space(uint32_t c)
{
	/* The common case, without a search. */
	if (c < 0x80)
		return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
	return bleu_in_ranges(bleu_space_ranges, bleu_space_ranges_n, c);
}

bool bleu_is_punct(uint32_t c)
{
	return bleu_in_ranges(bleu_punct_ranges, bleu_punct_ranges_n, c);
}

bool bleu_is_symbol(uint32_t c)
{
	return bleu_in_ranges(bleu_symbol_ranges, bleu_symbol_ranges_n, c);
}

bool bleu_is_number(uint32_t c)
{
	return bleu_in_ranges(bleu_number_ranges, bleu_number_ranges_n, c);
}

bool bleu_is_cased(uint32_t c)
{
	return bleu_in_ranges(bleu_cased_ranges, bleu_cased_ranges_n, c);
}

bool bleu_is_case_ignorable(uint32_t c)
{
	return bleu_in_ranges(bleu_case_ignorable_ranges, bleu_case_ignorable_ranges_n, c);
}

static uint32_t lower_single(uint32_t c)
{
	if (c < 0x80)
		return (c >= 'A' && c <= 'Z') ? c + 32 : c;
	size_t lo = 0, hi = bleu_lower_pairs_n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c < bleu_lower_pairs[mid].cp)
			hi = mid;
		else if (c > bleu_lower_pairs[mid].cp)
			lo = mid + 1;
		else
			return bleu_lower_pairs[mid].lower;
	}
	return c;
}

/* CPython's rule for U+03A3 (handle_capital_sigma in unicodeobject.c,
 * Unicode's Final_Sigma context): final when a cased letter precedes it
 * and none follows, case-ignorable characters skipped on both sides. */
static bool is_final_sigma(const uint32_t *v, size_t n, size_t i)
{
	size_t j = i;
	while (j > 0 && bleu_is_case_ignorable(v[j - 1]))
		j--;
	if (j == 0 || !bleu_is_cased(v[j - 1]))
		return false;
	for (j = i + 1; j < n; j++)
		if (!bleu_is_case_ignorable(v[j]))
			return !bleu_is_cased(v[j]);
	return true;
}

int bleu_lower(const uint32_t *in, size_t n, struct bleu_ustr *out)
{
	int rc = bleu_ustr_reserve(out, n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = in[i];
		if (c == GREEK_CAPITAL_SIGMA) {
			c = is_final_sigma(in, n, i) ? GREEK_SMALL_FINAL_SIGMA : GREEK_SMALL_SIGMA;
		} else {
			for (size_t k = 0; k < bleu_lower_multi_n; k++) {
				if (bleu_lower_multi[k].n && bleu_lower_multi[k].cp == c) {
					rc = bleu_ustr_append(out, bleu_lower_multi[k].lower,
							      bleu_lower_multi[k].n);
					if (rc)
						return rc;
					goto next;
				}
			}
			c = lower_single(c);
		}
		rc = bleu_ustr_push(out, c);
		if (rc)
			return rc;
	next:;
	}
	return 0;
}

size_t bleu_rstrip_len(const uint32_t *v, size_t n)
{
	while (n > 0 && bleu_is_space(v[n - 1]))
		n--;
	return n;
}
