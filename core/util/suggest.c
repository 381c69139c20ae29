/* SPDX-License-Identifier: Apache-2.0 */
/* "Did you mean" for unknown keys, choices and plugin names. */
#include "config.h"
#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include "util/suggest.h"

#define MAXW 63

static int fold(unsigned char c)
{
	return c < 128 ? tolower(c) : c;
}

/* Optimal string alignment distance, O(|a| |b|) with three rows. */
size_t edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > MAXW || m > MAXW)
		return SIZE_MAX;
	size_t row[3][MAXW + 2];
	size_t *pp = row[0], *p = row[1], *c = row[2];
	for (size_t j = 0; j <= m; j++)
		p[j] = j;
	for (size_t i = 1; i <= n; i++) {
		c[0] = i;
		for (size_t j = 1; j <= m; j++) {
			size_t cost = fold((unsigned char)a[i - 1]) != fold((unsigned char)b[j - 1]);
			size_t d = p[j - 1] + cost;
			if (p[j] + 1 < d)
				d = p[j] + 1;
			if (c[j - 1] + 1 < d)
				d = c[j - 1] + 1;
			if (i > 1 && j > 1 && fold((unsigned char)a[i - 1]) == fold((unsigned char)b[j - 2]) &&
			    fold((unsigned char)a[i - 2]) == fold((unsigned char)b[j - 1]) && pp[j - 2] + 1 < d)
				d = pp[j - 2] + 1;
			c[j] = d;
		}
		size_t *t = pp;
		pp = p;
		p = c;
		c = t;
	}
	return p[m];
}

void suggest_init(struct suggest *s, const char *word)
{
	s->word = word;
	s->best = NULL;
	s->best_d = SIZE_MAX;
}

void suggest_add(struct suggest *s, const char *candidate)
{
	size_t len = strlen(s->word);
	size_t limit = len / 4 > 1 ? len / 4 : 1;
	if (!candidate || strcmp(candidate, s->word) == 0)
		return;
	size_t d = edit_distance(s->word, candidate);
	if (d <= limit && d < len && d < s->best_d) {
		s->best = candidate;
		s->best_d = d;
	}
}

int suggest_among(const char *word, const char *list, char sep, char *out, size_t n)
{
	struct suggest s;
	suggest_init(&s, word);
	char one[MAXW + 1];
	int found = 0;
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, sep);
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len <= MAXW && len < n) {
			memcpy(one, p, len);
			one[len] = '\0';
			size_t before = s.best_d;
			suggest_add(&s, one);
			if (s.best_d < before) {
				memcpy(out, one, len + 1);
				found = 1;
			}
		}
		p = e ? e + 1 : p + len;
	}
	return found;
}
