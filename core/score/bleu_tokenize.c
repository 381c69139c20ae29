/* SPDX-License-Identifier: Apache-2.0 */
/* sacreBLEU's tokenizers on code points: 13a (mteval-v13a; the regexes of
 * tokenizers/tokenizer_re.py), intl (mteval-v14 international) and none,
 * followed by Python's str.split(). Each regex pass of sacreBLEU is one
 * left-to-right, non-overlapping scan here, as re.sub() makes it. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "bleu_internal.h"

void bleu_words_init(struct bleu_words *w)
{
	bleu_ustr_init(&w->text);
	w->start = NULL;
	w->n = 0;
	w->cap = 0;
}

void bleu_words_fini(struct bleu_words *w)
{
	bleu_ustr_fini(&w->text);
	free(w->start);
	bleu_words_init(w);
}

size_t bleu_words_end(const struct bleu_words *w, size_t i)
{
	return i + 1 < w->n ? w->start[i + 1] - 1 : w->text.n;
}

static int words_push_start(struct bleu_words *w, size_t at)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 32;
		size_t *p = realloc(w->start, cap * sizeof p[0]);
		if (!p)
			return fedrun_error(FEDRUN_ENOMEM, "bleu: out of memory");
		w->start = p;
		w->cap = cap;
	}
	w->start[w->n++] = at;
	return 0;
}

int bleu_words_split(const uint32_t *v, size_t n, struct bleu_words *out)
{
	out->text.n = 0;
	out->n = 0;
	int rc = bleu_ustr_reserve(&out->text, n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n;) {
		while (i < n && bleu_is_space(v[i]))
			i++;
		if (i == n)
			break;
		if (out->n)
			out->text.v[out->text.n++] = ' ';
		rc = words_push_start(out, out->text.n);
		if (rc)
			return rc;
		while (i < n && !bleu_is_space(v[i]))
			out->text.v[out->text.n++] = v[i++];
	}
	return 0;
}

int bleu_words_push(struct bleu_words *w, const uint32_t *v, size_t n)
{
	int rc;
	if (w->n && (rc = bleu_ustr_push(&w->text, ' ')))
		return rc;
	if ((rc = words_push_start(w, w->text.n)))
		return rc;
	return bleu_ustr_append(&w->text, v, n);
}

void bleu_scratch_init(struct bleu_scratch *s)
{
	bleu_ustr_init(&s->a);
	bleu_ustr_init(&s->b);
	bleu_ustr_init(&s->c);
}

void bleu_scratch_fini(struct bleu_scratch *s)
{
	bleu_ustr_fini(&s->a);
	bleu_ustr_fini(&s->b);
	bleu_ustr_fini(&s->c);
}

int bleu_segment_decode(const char *seg, bool lowercase, struct bleu_scratch *s)
{
	struct bleu_ustr *dst = lowercase ? &s->c : &s->a;
	int rc = bleu_utf8_decode(seg, strlen(seg), dst);
	if (rc || !lowercase)
		return rc;
	s->a.n = 0;
	return bleu_lower(s->c.v, s->c.n, &s->a);
}

/* Python's str.replace(pat, rep) for ASCII pat and rep; in -> out. */
static int replace_ascii(const struct bleu_ustr *in, const char *pat, const char *rep,
			 struct bleu_ustr *out)
{
	size_t np = strlen(pat), nr = strlen(rep);
	out->n = 0;
	int rc = bleu_ustr_reserve(out, in->n);
	if (rc)
		return rc;
	for (size_t i = 0; i < in->n;) {
		size_t k = 0;
		while (k < np && i + k < in->n && in->v[i + k] == (unsigned char)pat[k])
			k++;
		if (k == np) {
			/* rep is never longer than pat here, so room suffices */
			for (size_t j = 0; j < nr; j++)
				out->v[out->n++] = (unsigned char)rep[j];
			i += np;
		} else {
			out->v[out->n++] = in->v[i++];
		}
	}
	return 0;
}

static void swap(struct bleu_ustr *x, struct bleu_ustr *y)
{
	struct bleu_ustr t = *x;
	*x = *y;
	*y = t;
}

/* One regex pass: at each position, `match` says whether the pattern
 * matches there (and how many code points it spans, 1 or 2); `emit`
 * writes its replacement. Unmatched code points are copied. */
typedef int (*pass_match_fn)(const uint32_t *v, size_t n, size_t i);

static int run_pass(const struct bleu_ustr *in, struct bleu_ustr *out, pass_match_fn match,
		    const char *shape)
{
	/* shape spells the replacement: '1' and '2' are the groups, ' ' a
	 * space (e.g. "1 2 " for r'\1 \2 '). At most 4 code points per
	 * matched one... so 3x the input plus slack is always enough. */
	out->n = 0;
	int rc = bleu_ustr_reserve(out, 3 * in->n + 4);
	if (rc)
		return rc;
	for (size_t i = 0; i < in->n;) {
		int len = match(in->v, in->n, i);
		if (!len) {
			out->v[out->n++] = in->v[i++];
			continue;
		}
		for (const char *p = shape; *p; p++)
			out->v[out->n++] = *p == ' ' ? ' ' : in->v[i + (size_t)(*p - '1')];
		i += (size_t)len;
	}
	return 0;
}

static bool is_digit(uint32_t c)
{
	return c >= '0' && c <= '9';
}

/* [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation and symbols except
 * ' , - . (and the space, which is harmless to pad). */
static int m13a_punct(const uint32_t *v, size_t n, size_t i)
{
	uint32_t c = v[i];
	(void)n;
	return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
	       (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

/* ([^0-9])([\.,]) -> \1 \2 */
static int m13a_before_period(const uint32_t *v, size_t n, size_t i)
{
	return i + 1 < n && !is_digit(v[i]) && (v[i + 1] == '.' || v[i + 1] == ',') ? 2 : 0;
}

/* ([\.,])([^0-9]) -> ' \1 \2' */
static int m13a_after_period(const uint32_t *v, size_t n, size_t i)
{
	return i + 1 < n && (v[i] == '.' || v[i] == ',') && !is_digit(v[i + 1]) ? 2 : 0;
}

/* ([0-9])(-) -> \1 \2 */
static int m13a_dash(const uint32_t *v, size_t n, size_t i)
{
	return i + 1 < n && is_digit(v[i]) && v[i + 1] == '-' ? 2 : 0;
}

/* (\P{N})(\p{P}) -> \1 \2 */
static int mintl_punct_after(const uint32_t *v, size_t n, size_t i)
{
	return i + 1 < n && !bleu_is_number(v[i]) && bleu_is_punct(v[i + 1]) ? 2 : 0;
}

/* (\p{P})(\P{N}) -> ' \1 \2' */
static int mintl_punct_before(const uint32_t *v, size_t n, size_t i)
{
	return i + 1 < n && bleu_is_punct(v[i]) && !bleu_is_number(v[i + 1]) ? 2 : 0;
}

/* (\p{S}) -> ' \1 ' */
static int mintl_symbol(const uint32_t *v, size_t n, size_t i)
{
	(void)n;
	return bleu_is_symbol(v[i]);
}

/* Tokenizer13a.__call__: the language-independent replacements, the
 * padding to " line ", then TokenizerRegexp's four passes. Input in s->a;
 * the output is left in s->a. */
static int tokenize_13a(struct bleu_scratch *s)
{
	static const char *const repl[][2] = {
	    {"<skipped>", ""}, {"-\n", ""},   {"\n", " "},   {"&quot;", "\""},
	    {"&amp;", "&"},    {"&lt;", "<"}, {"&gt;", ">"},
	};
	int rc;
	for (size_t k = 0; k < sizeof repl / sizeof repl[0]; k++) {
		rc = replace_ascii(&s->a, repl[k][0], repl[k][1], &s->b);
		if (rc)
			return rc;
		swap(&s->a, &s->b);
	}
	/* pad: the padding is what lets "end." and ".start" split */
	s->b.n = 0;
	if ((rc = bleu_ustr_push(&s->b, ' ')) || (rc = bleu_ustr_append(&s->b, s->a.v, s->a.n)) ||
	    (rc = bleu_ustr_push(&s->b, ' ')))
		return rc;
	swap(&s->a, &s->b);
	if ((rc = run_pass(&s->a, &s->b, m13a_punct, " 1 ")))
		return rc;
	if ((rc = run_pass(&s->b, &s->a, m13a_before_period, "1 2 ")))
		return rc;
	if ((rc = run_pass(&s->a, &s->b, m13a_after_period, " 1 2")))
		return rc;
	if ((rc = run_pass(&s->b, &s->a, m13a_dash, "1 2 ")))
		return rc;
	return 0;
}

/* TokenizerV14International.__call__ (no padding, unlike 13a: a number
 * followed by a final period keeps it, as in mteval-v14.pl). */
static int tokenize_intl(struct bleu_scratch *s)
{
	int rc;
	if ((rc = run_pass(&s->a, &s->b, mintl_punct_after, "1 2 ")))
		return rc;
	if ((rc = run_pass(&s->b, &s->a, mintl_punct_before, " 1 2")))
		return rc;
	if ((rc = run_pass(&s->a, &s->b, mintl_symbol, " 1 ")))
		return rc;
	swap(&s->a, &s->b);
	return 0;
}

/* ' '.join(line.split()) of s->a, into s->a. */
static int squeeze_spaces(struct bleu_scratch *s)
{
	s->b.n = 0;
	int rc = bleu_ustr_reserve(&s->b, s->a.n);
	if (rc)
		return rc;
	for (size_t i = 0; i < s->a.n;) {
		while (i < s->a.n && bleu_is_space(s->a.v[i]))
			i++;
		if (i == s->a.n)
			break;
		if (s->b.n)
			s->b.v[s->b.n++] = ' ';
		while (i < s->a.n && !bleu_is_space(s->a.v[i]))
			s->b.v[s->b.n++] = s->a.v[i++];
	}
	swap(&s->a, &s->b);
	return 0;
}

int bleu_segment_tokenize(enum fedrun_bleu_tokenizer tok, bool lowercase, const char *seg,
			  struct bleu_scratch *s, const struct bleu_ustr **out)
{
	int rc = bleu_segment_decode(seg, lowercase, s);
	if (rc)
		return rc;
	s->a.n = bleu_rstrip_len(s->a.v, s->a.n);
	switch (tok) {
	case FEDRUN_BLEU_TOK_13A:
		rc = tokenize_13a(s);
		break;
	case FEDRUN_BLEU_TOK_INTL:
		rc = tokenize_intl(s);
		break;
	case FEDRUN_BLEU_TOK_NONE:
		*out = &s->a;
		return 0;
	default:
		return fedrun_error(FEDRUN_EINVAL, "bleu: unknown tokenizer %d", (int)tok);
	}
	if (!rc)
		rc = squeeze_spaces(s);
	*out = &s->a;
	return rc;
}

static const char *const tok_names[] = {"13a", "intl", "none"};

const char *fedrun_bleu_tokenizer_name(enum fedrun_bleu_tokenizer tok)
{
	if ((unsigned)tok >= sizeof tok_names / sizeof tok_names[0])
		return NULL;
	return tok_names[tok];
}

int fedrun_bleu_tokenizer_parse(const char *name, enum fedrun_bleu_tokenizer *out)
{
	for (size_t k = 0; k < sizeof tok_names / sizeof tok_names[0]; k++) {
		if (name && !strcmp(name, tok_names[k])) {
			*out = (enum fedrun_bleu_tokenizer)k;
			return 0;
		}
	}
	return fedrun_error(FEDRUN_EINVAL, "unknown tokenizer '%s': expected 13a, intl or none",
			    name ? name : "(null)");
}

int fedrun_bleu_tokenize(enum fedrun_bleu_tokenizer tok, bool lowercase, const char *segment,
			 char **out)
{
	*out = NULL;
	if (!segment)
		return fedrun_error(FEDRUN_EINVAL, "bleu: NULL segment");
	struct bleu_scratch s;
	bleu_scratch_init(&s);
	const struct bleu_ustr *res;
	int rc = bleu_segment_tokenize(tok, lowercase, segment, &s, &res);
	if (!rc)
		rc = bleu_utf8_encode(res->v, res->n, out);
	bleu_scratch_fini(&s);
	return rc;
}
