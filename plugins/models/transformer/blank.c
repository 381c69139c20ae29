/* SPDX-License-Identifier: Apache-2.0 */
/* tfm_text_blank (blank.h): libfedrun's strict UTF-8 decoder and a lookup
 * in the table of White_Space and Default_Ignorable_Code_Point ranges that
 * tools/gen_blank_table.py makes from the Unicode data files. */
#include "config.h"
#include <stdint.h>
#include <fedrun/bleu.h>
#include "blank.h"
#include "blank_table.h"

static bool in_table(uint32_t c)
{
	size_t lo = 0, hi = sizeof blank_ranges / sizeof blank_ranges[0];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c < blank_ranges[mid].lo)
			hi = mid;
		else if (c > blank_ranges[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

static bool is_blank(uint32_t c)
{
	/* Cc: General_Category values of assigned characters never change
	 * (Unicode's stability policy), so these need no table. */
	if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
		return true;
	/* Not in either property, but what SentencePiece 0.1.97 (nmt_nfkc)
	 * normalizes away like a space: the only such characters when each
	 * code point is encoded alone with a trained model. */
	if (c == 0x2581 || c == 0xfffd)
		return true;
	return in_table(c);
}

bool tfm_text_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t len = fedrun_utf8_next(s, n, i, &c);
		if (len == 0 || !is_blank(c))
			return false;
		i += len;
	}
	return true;
}
