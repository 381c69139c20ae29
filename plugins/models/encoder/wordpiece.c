/* SPDX-License-Identifier: Apache-2.0 */
/* BERT's WordPiece tokenizer (see wordpiece.h). The text is worked on as
 * code points, as the Python it mirrors works on str; Python's whitespace
 * and str.lower() are libfedrun's own (core/score/bleu_unicode.c, the
 * tables sacreBLEU's tokenizers use), the General_Category classes and NFD
 * come from wordpiece_unicode.h (tools/gen_wordpiece_unicode.py). */
#include "config.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "bleu_unicode.h"
#include "wordpiece.h"
#include "wordpiece_unicode.h"

#define UNK "[UNK]"

struct wp_tokenizer {
	struct wp_options o;
	char *buf;	  /* the file, each line NUL-terminated in place */
	char **line;	  /* [nlines]: the token of each line */
	uint32_t *len;	  /* [nlines]: its length in bytes */
	bool *live;	  /* [nlines]: the line is its token's last (its id) */
	size_t nlines;
	int32_t *slot;	  /* open addressing: line numbers, -1 empty */
	size_t cap;	  /* a power of two */
};

void wp_options_default(struct wp_options *o)
{
	o->lowercase = 1;
	o->strip_accents = -1;
	o->tokenize_chinese_chars = 1;
	o->max_chars_per_word = 100;
}

/* ---------------------------------------------------------------- vocab */

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

/* The slot of token s[0..n): the one holding it, or the empty one where it
 * would go. */
static size_t find_slot(const struct wp_tokenizer *t, const char *s, size_t n)
{
	size_t i = (size_t)hash_bytes(s, n) & (t->cap - 1);
	for (;;) {
		int32_t l = t->slot[i];
		if (l < 0 || (t->len[l] == n && memcmp(t->line[l], s, n) == 0))
			return i;
		i = (i + 1) & (t->cap - 1);
	}
}

static int32_t lookup(const struct wp_tokenizer *t, const char *s, size_t n)
{
	return t->slot[find_slot(t, s, n)];
}

int32_t wp_id(const struct wp_tokenizer *tok, const char *token)
{
	return lookup(tok, token, strlen(token));
}

const char *wp_token(const struct wp_tokenizer *tok, int32_t id)
{
	if (id < 0 || (size_t)id >= tok->nlines || !tok->live[id])
		return UNK;
	return tok->line[id];
}

size_t wp_size(const struct wp_tokenizer *tok)
{
	return tok->nlines;
}

void wp_free(struct wp_tokenizer *tok)
{
	if (!tok)
		return;
	free(tok->buf);
	free(tok->line);
	free(tok->len);
	free(tok->live);
	free(tok->slot);
	free(tok);
}

/* Cuts buf[0..n) into lines in place (Python's universal newlines and
 * readlines(): a last line without a newline counts, nothing after the
 * last newline does); with line NULL only counts them. */
static size_t split_lines(char *buf, size_t n, char **line, uint32_t *len)
{
	size_t k = 0, start = 0;
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != '\n' && buf[i] != '\r')
			continue;
		if (line) {
			line[k] = buf + start;
			len[k] = (uint32_t)(i - start);
		}
		k++;
		if (buf[i] == '\r' && i + 1 < n && buf[i + 1] == '\n') {
			if (line)
				buf[i] = '\0';
			i++;
		}
		if (line)
			buf[i] = '\0';
		start = i + 1;
	}
	if (start < n) {
		if (line) {
			line[k] = buf + start;
			len[k] = (uint32_t)(n - start);
		}
		k++;
	}
	return k;
}

int wp_load(const char *path, const struct wp_options *opts, struct wp_tokenizer **out)
{
	char *buf;
	size_t n;
	*out = NULL;
	int rc = fedrun_read_file(path, &buf, &n);
	return rc < 0 ? rc : wp_load_buffer(path, buf, n, opts, out);
}

int wp_load_buffer(const char *path, char *buf, size_t n, const struct wp_options *opts,
		   struct wp_tokenizer **out)
{
	struct wp_tokenizer *t;
	struct bleu_ustr u;
	int rc = 0;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t) {
		free(buf);
		return fedrun_error(FEDRUN_ENOMEM, "%s: out of memory", path);
	}
	if (opts)
		t->o = *opts;
	else
		wp_options_default(&t->o);
	t->buf = buf;
	t->nlines = split_lines(t->buf, n, NULL, NULL);
	if (t->nlines > INT32_MAX / 2) {
		wp_free(t);
		return fedrun_error(FEDRUN_EINVAL, "%s: too many lines", path);
	}
	for (t->cap = 16; t->cap < 2 * t->nlines; t->cap *= 2)
		;
	t->line = calloc(t->nlines + 1, sizeof(*t->line));
	t->len = calloc(t->nlines + 1, sizeof(*t->len));
	t->live = calloc(t->nlines + 1, sizeof(*t->live));
	t->slot = malloc(t->cap * sizeof(*t->slot));
	if (!t->line || !t->len || !t->live || !t->slot) {
		wp_free(t);
		return fedrun_error(FEDRUN_ENOMEM, "%s: out of memory", path);
	}
	memset(t->slot, 0xff, t->cap * sizeof(*t->slot));
	split_lines(t->buf, n, t->line, t->len);
	bleu_ustr_init(&u);
	for (size_t l = 0; l < t->nlines; l++) {
		size_t s;
		if (memchr(t->line[l], '\0', t->len[l])) {
			rc = fedrun_error(FEDRUN_EINVAL, "%s:%zu: a NUL byte in the token", path, l + 1);
			break;
		}
		if (bleu_utf8_decode(t->line[l], t->len[l], &u) < 0) {
			rc = fedrun_error(FEDRUN_EINVAL, "%s:%zu: invalid UTF-8", path, l + 1);
			break;
		}
		s = find_slot(t, t->line[l], t->len[l]);
		if (t->slot[s] >= 0)
			t->live[t->slot[s]] = false;
		t->slot[s] = (int32_t)l;
		t->live[l] = true;
	}
	bleu_ustr_fini(&u);
	if (rc == 0 && wp_id(t, UNK) < 0)
		rc = fedrun_error(FEDRUN_EINVAL, "%s: no %s token (a line \"%s\")", path, UNK, UNK);
	if (rc == 0 && t->o.max_chars_per_word < 0)
		rc = fedrun_error(FEDRUN_EINVAL, "%s: max_chars_per_word %d is negative", path,
				  t->o.max_chars_per_word);
	if (rc < 0) {
		wp_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* ---------------------------------------------------------------- Unicode */

#define IN(table, c) bleu_in_ranges(table, sizeof(table) / sizeof(table[0]), c)

/* tokenization_utils.py's _is_control, _is_whitespace, _is_punctuation. */
static bool is_control(uint32_t c)
{
	if (c == '\t' || c == '\n' || c == '\r')
		return false;
	return IN(wp_other_ranges, c);
}

static bool is_whitespace(uint32_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || IN(wp_zs_ranges, c);
}

static bool is_punct(uint32_t c)
{
	if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
	    (c >= 123 && c <= 126))
		return true;
	return IN(wp_punct_ranges, c);
}

/* tokenization_bert.py's _is_chinese_char. */
static bool is_cjk(uint32_t c)
{
	return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
	       (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
	       (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
	       (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static uint32_t ccc_nonmn(uint32_t c)
{
	size_t lo = 0, hi = sizeof(wp_ccc_nonmn) / sizeof(wp_ccc_nonmn[0]);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (wp_ccc_nonmn[mid].cp == c)
			return wp_ccc_nonmn[mid].ccc;
		if (wp_ccc_nonmn[mid].cp < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Appends the full canonical decomposition of c. */
static int nfd_push(uint32_t c, struct bleu_ustr *out)
{
	size_t lo = 0, hi = sizeof(wp_nfd) / sizeof(wp_nfd[0]);

	if (c >= 0xAC00 && c <= 0xD7A3) { /* Hangul syllables, by the algorithm */
		uint32_t s = c - 0xAC00, t = s % 28;
		uint32_t d[3] = {0x1100 + s / 588, 0x1161 + (s % 588) / 28, 0x11A7 + t};
		return bleu_ustr_append(out, d, t ? 3 : 2);
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (wp_nfd[mid].cp == c)
			return bleu_ustr_append(out, wp_nfd_pool + wp_nfd[mid].off, wp_nfd[mid].n);
		if (wp_nfd[mid].cp < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return bleu_ustr_push(out, c);
}

/* _run_strip_accents: NFD, then every Mn dropped, into out (cleared). What
 * survives of canonical ordering is the order of the code points of
 * non-zero class that are not Mn, within each run of non-zero class. */
static int strip_accents(const uint32_t *w, size_t n, struct bleu_ustr *tmp,
			 struct bleu_ustr *out)
{
	int rc = 0;

	tmp->n = 0;
	out->n = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = nfd_push(w[i], tmp);
	for (size_t i = 0; i < tmp->n && rc == 0;) {
		size_t j = i, start = out->n;
		if (!IN(wp_ccc_ranges, tmp->v[i])) {
			if (!IN(wp_mn_ranges, tmp->v[i]))
				rc = bleu_ustr_push(out, tmp->v[i]);
			i++;
			continue;
		}
		while (j < tmp->n && IN(wp_ccc_ranges, tmp->v[j]))
			j++;
		for (size_t k = i; k < j && rc == 0; k++)
			if (!IN(wp_mn_ranges, tmp->v[k]))
				rc = bleu_ustr_push(out, tmp->v[k]);
		/* a stable insertion sort by class of what was kept */
		for (size_t a = start + 1; a < out->n; a++) {
			uint32_t c = out->v[a], cc = ccc_nonmn(c);
			size_t b = a;
			for (; b > start && ccc_nonmn(out->v[b - 1]) > cc; b--)
				out->v[b] = out->v[b - 1];
			out->v[b] = c;
		}
		i = j;
	}
	return rc;
}

/* ---------------------------------------------------------------- encoding */

struct enc {
	const struct wp_tokenizer *t;
	int32_t *ids;
	size_t max, n;
	struct bleu_ustr low, text, tmp, word;
	/* wp_basic_words: each basic word goes here instead of WordPiece */
	int (*on_word)(void *ud, const char *word, size_t len);
	void *ud;
	char *key;	/* "##" + a piece's UTF-8 */
	size_t key_cap;
	uint32_t *off;	/* byte offsets of a word's code points */
	size_t off_cap;
};

/* A basic word (code points) to the caller of wp_basic_words, as UTF-8. */
static int word_out(struct enc *e, const uint32_t *w, size_t n)
{
	char *s = NULL;
	int rc = bleu_utf8_encode(w, n, &s);
	if (rc < 0)
		return rc;
	rc = e->on_word(e->ud, s, strlen(s));
	free(s);
	return rc;
}

static void emit(struct enc *e, int32_t id)
{
	if (e->n < e->max)
		e->ids[e->n] = id;
	e->n++;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	void *q;
	if (need <= *cap)
		return 0;
	q = realloc(*p, need * size);
	if (!q)
		return fedrun_error(FEDRUN_ENOMEM, "wordpiece: out of memory");
	*p = q;
	*cap = need;
	return 0;
}

/* WordpieceTokenizer.tokenize of one word w[0..n) (n > 0). */
static int wordpiece(struct enc *e, const uint32_t *w, size_t n)
{
	const struct wp_tokenizer *t = e->t;
	int32_t unk = wp_id(t, UNK);
	size_t bytes = 0, first = e->n, start = 0;
	int rc;

	if (n > (size_t)t->o.max_chars_per_word) {
		emit(e, unk);
		return 0;
	}
	rc = grow((void **)&e->off, &e->off_cap, n + 1, sizeof(*e->off));
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		e->off[i] = (uint32_t)bytes;
		bytes += w[i] < 0x80 ? 1 : w[i] < 0x800 ? 2 : w[i] < 0x10000 ? 3 : 4;
	}
	e->off[n] = (uint32_t)bytes;
	rc = grow((void **)&e->key, &e->key_cap, bytes + 3, 1);
	if (rc < 0)
		return rc;
	{ /* the word's UTF-8 after "##" */
		char *s = NULL;
		rc = bleu_utf8_encode(w, n, &s);
		if (rc < 0)
			return rc;
		memcpy(e->key + 2, s, bytes);
		free(s);
		e->key[0] = e->key[1] = '#';
	}
	while (start < n) {
		int32_t id = -1;
		size_t end = n;
		for (; end > start; end--) {
			size_t len = e->off[end] - e->off[start];
			if (start == 0)
				id = lookup(t, e->key + 2, len);
			else {
				/* "##" just before the piece, over the previous code point's
				 * bytes, restored after */
				char *k = e->key + 2 + e->off[start] - 2;
				char save[2] = {k[0], k[1]};
				k[0] = k[1] = '#';
				id = lookup(t, k, len + 2);
				k[0] = save[0];
				k[1] = save[1];
			}
			if (id >= 0)
				break;
		}
		if (id < 0) { /* unmatchable: the whole word is [UNK] */
			e->n = first;
			emit(e, unk);
			return 0;
		}
		emit(e, id);
		start = end;
	}
	return 0;
}

/* BasicTokenizer.tokenize (after the whole-text lowercasing) and the
 * WordPiece of each of its words, for text[0..n) (code points). */
static int basic(struct enc *e, const uint32_t *text, size_t n)
{
	const struct wp_options *o = &e->t->o;
	bool strip = o->strip_accents < 0 ? o->lowercase != 0 : o->strip_accents != 0;
	struct bleu_ustr *x = &e->text;
	int rc = 0;

	x->n = 0;
	for (size_t i = 0; i < n && rc == 0; i++) { /* _clean_text, _tokenize_chinese_chars */
		uint32_t c = text[i];
		if (c == 0 || c == 0xFFFD || is_control(c))
			continue;
		if (is_whitespace(c))
			rc = bleu_ustr_push(x, ' ');
		else if (o->tokenize_chinese_chars && is_cjk(c)) {
			uint32_t d[3] = {' ', c, ' '};
			rc = bleu_ustr_append(x, d, 3);
		} else
			rc = bleu_ustr_push(x, c);
	}
	for (size_t i = 0; i < x->n && rc == 0;) { /* whitespace_tokenize: str.split() */
		const uint32_t *w;
		size_t j = i, wn;
		if (bleu_is_space(x->v[i])) {
			i++;
			continue;
		}
		while (j < x->n && !bleu_is_space(x->v[j]))
			j++;
		w = x->v + i;
		wn = j - i;
		i = j;
		/* token.lower() is a no-op after the text's: no str.lower() result
		 * has anything left to lower (Python 3.11, every code point) */
		if (strip) {
			rc = strip_accents(w, wn, &e->tmp, &e->word);
			w = e->word.v;
			wn = e->word.n;
		}
		for (size_t a = 0; a < wn && rc == 0;) { /* _run_split_on_punc */
			size_t b = a;
			if (is_punct(w[a])) {
				rc = e->on_word ? word_out(e, w + a, 1) : wordpiece(e, w + a, 1);
				a++;
				continue;
			}
			while (b < wn && !is_punct(w[b]))
				b++;
			rc = e->on_word ? word_out(e, w + a, b - a) : wordpiece(e, w + a, b - a);
			a = b;
		}
	}
	return rc;
}

static void enc_fini(struct enc *e)
{
	bleu_ustr_fini(&e->low);
	bleu_ustr_fini(&e->text);
	bleu_ustr_fini(&e->tmp);
	bleu_ustr_fini(&e->word);
	free(e->key);
	free(e->off);
}

/* One text: decode, lowercase (PreTrainedTokenizer.tokenize), basic. */
static int encode_one(struct enc *e, struct bleu_ustr *u, const char *text, size_t len)
{
	int rc = bleu_utf8_decode(text, len, u);
	if (rc < 0)
		return rc;
	if (e->t->o.lowercase) {
		/* one code point at a time: PreTrainedTokenizer.tokenize lowers
		 * each match of "(.+?)", a single character, so a capital sigma
		 * never becomes final sigma */
		e->low.n = 0;
		for (size_t i = 0; i < u->n && rc == 0; i++)
			rc = bleu_lower(u->v + i, 1, &e->low);
		if (rc < 0)
			return rc;
		return basic(e, e->low.v, e->low.n);
	}
	return basic(e, u->v, u->n);
}

int wp_encode(const struct wp_tokenizer *tok, const char *text, size_t len, int32_t *ids,
	      size_t max, size_t *n)
{
	struct enc e = {.t = tok, .ids = ids, .max = max};
	struct bleu_ustr u;
	int rc;

	bleu_ustr_init(&u);
	rc = encode_one(&e, &u, text, len);
	bleu_ustr_fini(&u);
	enc_fini(&e);
	*n = e.n;
	return rc;
}

int wp_encode_words(const struct wp_tokenizer *tok, const char *const *words, size_t n_words,
		    int32_t *ids, int32_t *first, size_t max, size_t *n)
{
	struct enc e = {.t = tok, .ids = ids, .max = max};
	struct bleu_ustr u;
	int rc = 0;

	bleu_ustr_init(&u);
	for (size_t w = 0; w < n_words && rc == 0; w++) {
		size_t before = e.n;
		rc = encode_one(&e, &u, words[w], strlen(words[w]));
		first[w] = e.n > before && before < max && before <= INT32_MAX ? (int32_t)before : -1;
	}
	bleu_ustr_fini(&u);
	enc_fini(&e);
	*n = e.n;
	return rc;
}

int wp_basic_words(const struct wp_options *opts, const char *text, size_t len,
		   int (*fn)(void *ud, const char *word, size_t len), void *ud)
{
	struct wp_tokenizer t = {.nlines = 0};
	if (opts)
		t.o = *opts;
	else
		wp_options_default(&t.o);
	struct enc e = {.t = &t, .on_word = fn, .ud = ud};
	struct bleu_ustr u;
	bleu_ustr_init(&u);
	int rc = encode_one(&e, &u, text, len);
	bleu_ustr_fini(&u);
	enc_fini(&e);
	return rc;
}
