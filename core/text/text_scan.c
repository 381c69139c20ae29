/* SPDX-License-Identifier: Apache-2.0 */
/* The corpus scanner: one sentence per line, ASCII white space between
 * tokens (after sacreBLEU's 13a or intl tokenizer where data.tokenizer asks
 * for one), UTF-8 checked byte by byte so that a bad file is reported with
 * its line and column instead of producing garbage words. */
#include "config.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "text_internal.h"

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Scratch space for lowercased words. */
struct scratch {
	char *buf;
	size_t cap;
};

static int emit(const char *word, size_t len, const struct fedrun_text_opts *opts,
		struct scratch *s, text_token_fn fn, void *ud)
{
	if (!opts || !opts->lowercase)
		return fn(ud, word, len);
	if (len > s->cap) {
		size_t cap = len < 64 ? 64 : 2 * len;
		char *b = realloc(s->buf, cap);
		if (!b)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		s->buf = b;
		s->cap = cap;
	}
	for (size_t i = 0; i < len; i++) {
		char c = word[i];
		s->buf[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	return fn(ud, s->buf, len);
}

/* 13a or intl: the line (valid UTF-8, no NUL) through sacreBLEU's
 * tokenizer, lowercased by it when asked (Python's str.lower()), then cut at
 * ASCII white space as a whitespace line is. */
static int scan_bleu(const unsigned char *p, const unsigned char *end,
		     const struct fedrun_text_opts *opts, struct scratch *s, text_token_fn fn,
		     void *ud, bool *any)
{
	size_t len = (size_t)(end - p);
	if (len + 1 > s->cap) {
		char *b = realloc(s->buf, len + 1);
		if (!b)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		s->buf = b;
		s->cap = len + 1;
	}
	memcpy(s->buf, p, len);
	s->buf[len] = 0;
	char *tok;
	int rc = fedrun_bleu_tokenize(opts->tokenizer == FEDRUN_TEXT_TOK_13A ? FEDRUN_BLEU_TOK_13A
									: FEDRUN_BLEU_TOK_INTL,
				      opts->lowercase, s->buf, &tok);
	if (rc < 0)
		return rc;
	const char *q = tok, *word = NULL;
	for (;; q++) {
		if (*q == 0 || is_space((unsigned char)*q) || *q == '\n') {
			if (word && (rc = fn(ud, word, (size_t)(q - word))) < 0)
				break;
			*any |= word != NULL;
			word = NULL;
			if (*q == 0)
				break;
		} else if (!word) {
			word = q;
		}
	}
	free(tok);
	return rc < 0 ? rc : 0;
}

/* Tokens of one line [p, end). *any is set when the line had a token. */
static int scan_line(const char *path, uint64_t line, const unsigned char *p,
		     const unsigned char *end, const struct fedrun_text_opts *opts,
		     struct scratch *s, text_token_fn fn, void *ud, bool *any)
{
	const unsigned char *line_start = p, *word = NULL;
	const bool bleu = opts && opts->tokenizer != FEDRUN_TEXT_TOK_WHITESPACE;
	*any = false;
	while (p < end) {
		size_t n = *p < 0x80 && *p ? 1 : text_utf8_len(p, end);
		if (n == 0)
			return fedrun_error(FEDRUN_EFORMAT, "%s:%llu:%llu: %s", path,
					    (unsigned long long)line,
					    (unsigned long long)(p - line_start + 1),
					    *p ? "invalid UTF-8" : "NUL byte in text");
		if (bleu) {
			/* validated here, cut by scan_bleu */
		} else if (n == 1 && is_space(*p)) {
			if (word) {
				int rc =
				    emit((const char *)word, (size_t)(p - word), opts, s, fn, ud);
				if (rc < 0)
					return rc;
				*any = true;
				word = NULL;
			}
		} else if (!word) {
			word = p;
		}
		p += n;
	}
	if (bleu)
		return scan_bleu(line_start, end, opts, s, fn, ud, any);
	if (word) {
		int rc = emit((const char *)word, (size_t)(p - word), opts, s, fn, ud);
		if (rc < 0)
			return rc;
		*any = true;
	}
	return 0;
}

int text_scan_file(const char *path, const struct fedrun_text_opts *opts, text_token_fn fn,
		   void *ud)
{
	if (opts && opts->format && opts->format->kind != FEDRUN_RECORDS_TEXT)
		return text_scan_records(path, opts, fn, NULL, ud);
	char *data;
	size_t size;
	int rc = fedrun_read_file(path, &data, &size);
	if (rc < 0)
		return rc;
	struct scratch s = {NULL, 0};
	const unsigned char *p = (const unsigned char *)data, *end = p + size;
	uint64_t line = 0, sentences = 0;
	while (p < end) {
		const unsigned char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		bool any;
		line++;
		rc = scan_line(path, line, p, eol, opts, &s, fn, ud, &any);
		if (rc < 0)
			goto out;
		if (any) {
			rc = fn(ud, NULL, 0);
			if (rc < 0)
				goto out;
			sentences++;
		}
		p = eol + (eol < end);
	}
	if (sentences == 0 && size == 0)
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: empty file: no sentence", path);
	else if (sentences == 0)
		rc = fedrun_error(FEDRUN_EFORMAT, "%s:%llu: no sentence: all %llu lines are blank",
				  path, (unsigned long long)line, (unsigned long long)line);
out:
	free(s.buf);
	free(data);
	return rc;
}

int text_scan_line(const char *where, uint64_t line, const char *text, size_t len,
		   const struct fedrun_text_opts *opts, text_token_fn fn, void *ud)
{
	struct scratch s = {NULL, 0};
	bool any;
	const unsigned char *p = (const unsigned char *)text;
	int rc = scan_line(where, line, p, p + len, opts, &s, fn, ud, &any);
	if (rc == 0 && any)
		rc = fn(ud, NULL, 0);
	free(s.buf);
	return rc < 0 ? rc : any;
}

/* ---- tsv and jsonl (data.format): the text of each record ---- */

struct rec_scan {
	const char *path;
	const struct fedrun_text_opts *opts;
	struct scratch s;
	text_token_fn fn;
	text_label_fn label_fn;
	void *ud;
	uint64_t sentences;
};

static int scan_record(void *ud, uint64_t line, const char *const *value, const size_t *len)
{
	struct rec_scan *rs = ud;
	const unsigned char *p = (const unsigned char *)value[0];
	bool any;
	int rc = scan_line(rs->path, line, p, p + len[0], rs->opts, &rs->s, rs->fn, rs->ud, &any);
	if (rc < 0 || !any)
		return rc; /* blank text, like a blank line, is no sentence */
	if (rs->label_fn && value[1] && (rc = rs->label_fn(rs->ud, value[1], len[1])) < 0)
		return rc;
	rs->sentences++;
	return rs->fn(rs->ud, NULL, 0);
}

int text_scan_records(const char *path, const struct fedrun_text_opts *opts, text_token_fn fn,
		      text_label_fn label_fn, void *ud)
{
	struct rec_scan rs = {path, opts, {NULL, 0}, fn, label_fn, ud, 0};
	int rc = fedrun_records_read(path, opts->format, 0, scan_record, &rs);
	free(rs.s.buf);
	if (rc == 0 && rs.sentences == 0)
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: no sentence: every record's text is blank",
				  path);
	return rc;
}
