/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 checked a sequence at a time, for the corpus scanner, the
 * vocabulary and the records reader (text_internal.h). */
#include "config.h"
#include "text_internal.h"

size_t text_utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* UTF-16 surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0; /* continuation byte, overlong C0/C1, or F5..FF */
	}
	if ((size_t)(end - p) < n)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}
