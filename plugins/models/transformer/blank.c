/* tfm_text_blank (blank.h): a strict UTF-8 decoder and a lookup in the
 * table of White_Space and Default_Ignorable_Code_Point ranges that
 * tools/gen_blank_table.py makes from the Unicode data files. */
#include "config.h"
#include <stdint.h>
#include "blank.h"
#include "blank_table.h"

/* Decodes the code point at p (n > 0 bytes left) into *cp and returns its
 * length, or 0 when p does not start well-formed UTF-8 (a stray
 * continuation byte, a cut-off, overlong or surrogate sequence, or one
 * beyond U+10FFFF). */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	size_t len;
	uint32_t c, min;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, c = p[0] & 0x1f, min = 0x80;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, c = p[0] & 0x0f, min = 0x800;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, c = p[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

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
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t len = utf8_decode(p + i, n - i, &c);
		if (len == 0 || !is_blank(c))
			return false;
		i += len;
	}
	return true;
}
