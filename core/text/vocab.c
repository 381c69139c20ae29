/* SPDX-License-Identifier: Apache-2.0 */
/* Vocabularies: an open-addressing hash table over words kept in one byte
 * arena, building from corpus files by count with byte-order ties, and a
 * plain "word<TAB>count" file format. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "fedrun/text.h"
#include "text_internal.h"

/* Ids are uint32 and id + 1 marks a used hash slot. */
#define VOCAB_MAX_WORDS 0x7fffffffu

struct fedrun_vocab {
	uint32_t n, cap;
	uint64_t *off; /* start of word i in chars */
	uint32_t *len; /* bytes of word i */
	uint64_t *count;
	char *chars; /* words, each NUL-terminated */
	size_t chars_len, chars_cap;
	uint32_t *slot; /* id + 1, 0 when empty; nslot is a power of two */
	uint32_t nslot;
};

/* FNV-1a, 64 bits: short words, few collisions, no state. */
static uint64_t hash_word(const char *w, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)w[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The slot holding `word`, or the empty slot where it would go. */
static uint32_t probe(const struct fedrun_vocab *v, const char *word, size_t len)
{
	uint32_t mask = v->nslot - 1;
	uint32_t i = (uint32_t)hash_word(word, len) & mask;
	for (;;) {
		uint32_t s = v->slot[i];
		if (s == 0)
			return i;
		uint32_t id = s - 1;
		if (v->len[id] == len && memcmp(v->chars + v->off[id], word, len) == 0)
			return i;
		i = (i + 1) & mask;
	}
}

static int rehash(struct fedrun_vocab *v, uint32_t nslot)
{
	uint32_t *slot = calloc(nslot, sizeof slot[0]);
	if (!slot)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	free(v->slot);
	v->slot = slot;
	v->nslot = nslot;
	for (uint32_t id = 0; id < v->n; id++)
		v->slot[probe(v, v->chars + v->off[id], v->len[id])] = id + 1;
	return 0;
}

static int grow_arrays(struct fedrun_vocab *v)
{
	uint32_t cap = v->cap ? 2 * v->cap : 64;
	uint64_t *off = realloc(v->off, cap * sizeof off[0]);
	if (off)
		v->off = off;
	uint32_t *len = realloc(v->len, cap * sizeof len[0]);
	if (len)
		v->len = len;
	uint64_t *count = realloc(v->count, cap * sizeof count[0]);
	if (count)
		v->count = count;
	if (!off || !len || !count)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	v->cap = cap;
	return 0;
}

/* Appends a word known to be absent; `slot` is where probe() put it. */
static int insert(struct fedrun_vocab *v, const char *word, size_t len, uint64_t count,
		  uint32_t *id)
{
	if (v->n >= VOCAB_MAX_WORDS)
		return fedrun_error(FEDRUN_EINVAL, "vocabulary: more than %u words",
				    VOCAB_MAX_WORDS);
	if (v->n == v->cap && grow_arrays(v) < 0)
		return FEDRUN_ENOMEM;
	if (v->chars_len + len + 1 > v->chars_cap) {
		size_t cap = v->chars_cap ? v->chars_cap : 1024;
		while (cap < v->chars_len + len + 1)
			cap *= 2;
		char *c = realloc(v->chars, cap);
		if (!c)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		v->chars = c;
		v->chars_cap = cap;
	}
	memcpy(v->chars + v->chars_len, word, len);
	v->chars[v->chars_len + len] = '\0';
	v->off[v->n] = v->chars_len;
	v->len[v->n] = (uint32_t)len;
	v->count[v->n] = count;
	v->chars_len += len + 1;
	*id = v->n++;
	/* Keep the load factor at most 1/2. */
	if (2 * (uint64_t)v->n > v->nslot)
		return rehash(v, 2 * v->nslot);
	v->slot[probe(v, word, len)] = *id + 1;
	return 0;
}

int fedrun_vocab_create(struct fedrun_vocab **out)
{
	*out = NULL;
	struct fedrun_vocab *v = calloc(1, sizeof *v);
	if (!v)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	uint32_t id;
	int rc = rehash(v, 64);
	if (rc == 0)
		rc = insert(v, FEDRUN_VOCAB_UNK_WORD, strlen(FEDRUN_VOCAB_UNK_WORD), 0, &id);
	if (rc == 0)
		rc = insert(v, FEDRUN_VOCAB_EOS_WORD, strlen(FEDRUN_VOCAB_EOS_WORD), 0, &id);
	if (rc < 0) {
		fedrun_vocab_destroy(v);
		return rc;
	}
	*out = v;
	return 0;
}

void fedrun_vocab_destroy(struct fedrun_vocab *v)
{
	if (!v)
		return;
	free(v->off);
	free(v->len);
	free(v->count);
	free(v->chars);
	free(v->slot);
	free(v);
}

uint32_t fedrun_vocab_size(const struct fedrun_vocab *v)
{
	return v->n;
}

const char *fedrun_vocab_word(const struct fedrun_vocab *v, uint32_t id)
{
	return id < v->n ? v->chars + v->off[id] : NULL;
}

uint64_t fedrun_vocab_count(const struct fedrun_vocab *v, uint32_t id)
{
	return id < v->n ? v->count[id] : 0;
}

bool fedrun_vocab_find(const struct fedrun_vocab *v, const char *word, size_t len, uint32_t *id)
{
	uint32_t s = v->slot[probe(v, word, len)];
	if (s && id)
		*id = s - 1;
	return s != 0;
}

uint32_t fedrun_vocab_lookup(const struct fedrun_vocab *v, const char *word, size_t len)
{
	uint32_t s = v->slot[probe(v, word, len)];
	return s ? s - 1 : FEDRUN_VOCAB_UNK;
}

/* A word must be non-empty valid UTF-8 without white space: the corpus
 * scanner could never produce anything else, so nothing else could match. */
static const char *word_problem(const char *word, size_t len)
{
	const unsigned char *p = (const unsigned char *)word, *end = p + len;
	if (len == 0)
		return "empty word";
	if (len > UINT32_MAX)
		return "word too long";
	while (p < end) {
		size_t n = text_utf8_len(p, end);
		if (n == 0)
			return *p ? "invalid UTF-8" : "NUL byte in word";
		if (n == 1 && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' || *p == '\f' ||
			       *p == '\n'))
			return "white space in word";
		p += n;
	}
	return NULL;
}

int fedrun_vocab_add(struct fedrun_vocab *v, const char *word, size_t len, uint64_t count,
		     uint32_t *id)
{
	uint32_t got;
	uint32_t s = v->slot[probe(v, word, len)];
	if (s) {
		got = s - 1;
		v->count[got] += count;
	} else {
		const char *why = word_problem(word, len);
		if (why)
			return fedrun_error(FEDRUN_EINVAL, "vocabulary: cannot add \"%.*s\": %s",
					    (int)(len > 40 ? 40 : len), word, why);
		int rc = insert(v, word, len, count, &got);
		if (rc < 0)
			return rc;
	}
	if (id)
		*id = got;
	return 0;
}

/* ---- building ---- */

static int count_token(void *ud, const char *word, size_t len)
{
	struct fedrun_vocab *v = ud;
	if (!word) {
		v->count[FEDRUN_VOCAB_EOS]++;
		return 0;
	}
	uint32_t s = v->slot[probe(v, word, len)];
	if (s) {
		v->count[s - 1]++;
		return 0;
	}
	uint32_t id;
	return insert(v, word, len, 1, &id);
}

struct ranked {
	uint64_t count;
	const char *word;
	uint32_t len;
};

/* Count descending, then bytes ascending (a proper prefix first). */
static int cmp_ranked(const void *pa, const void *pb)
{
	const struct ranked *a = pa, *b = pb;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	uint32_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->word, b->word, n);
	if (c)
		return c;
	return (a->len > b->len) - (a->len < b->len);
}

int fedrun_vocab_build(const char *const *files, uint32_t n, const struct fedrun_vocab_opts *opts,
		       struct fedrun_vocab **out)
{
	*out = NULL;
	if (n == 0)
		return fedrun_error(FEDRUN_EINVAL, "vocabulary: no file to build it from");
	if (opts->max_size == 1)
		return fedrun_error(FEDRUN_EINVAL,
				    "vocabulary: size %u is too small: <unk> and <eos> take 2",
				    opts->max_size);
	struct fedrun_vocab *counts, *v = NULL;
	struct ranked *r = NULL;
	int rc = fedrun_vocab_create(&counts);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < n && rc == 0; i++)
		rc = text_scan_file(files[i], &opts->text, count_token, counts);
	if (rc < 0)
		goto out;

	uint32_t m = 0;
	r = malloc((counts->n ? counts->n : 1) * sizeof r[0]);
	if (!r) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	uint64_t dropped = 0;
	for (uint32_t id = 2; id < counts->n; id++) {
		if (counts->count[id] < opts->min_count) {
			dropped += counts->count[id];
			continue;
		}
		r[m].count = counts->count[id];
		r[m].word = counts->chars + counts->off[id];
		r[m].len = counts->len[id];
		m++;
	}
	qsort(r, m, sizeof r[0], cmp_ranked);
	if (opts->max_size && m > opts->max_size - 2) {
		for (uint32_t i = opts->max_size - 2; i < m; i++)
			dropped += r[i].count;
		m = opts->max_size - 2;
	}
	rc = fedrun_vocab_create(&v);
	for (uint32_t i = 0; i < m && rc == 0; i++) {
		uint32_t id;
		rc = insert(v, r[i].word, r[i].len, r[i].count, &id);
	}
	if (rc < 0)
		goto out;
	v->count[FEDRUN_VOCAB_UNK] = counts->count[FEDRUN_VOCAB_UNK] + dropped;
	v->count[FEDRUN_VOCAB_EOS] = counts->count[FEDRUN_VOCAB_EOS];
	*out = v;
	v = NULL;
out:
	free(r);
	fedrun_vocab_destroy(counts);
	fedrun_vocab_destroy(v);
	return rc;
}

/* ---- files ---- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* One line "word [white space count]"; line is [p, end) without '\n'. */
static int load_line(struct fedrun_vocab *v, const char *path, uint64_t line, const char *p,
		     const char *end, bool *seen_unk, bool *seen_eos, uint64_t *words)
{
	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	if (p == end)
		return 0;
	const char *w = p;
	while (p < end && !is_blank(*p))
		p++;
	size_t len = (size_t)(p - w);
	uint64_t count = 0;
	if (p < end) {
		while (is_blank(*p))
			p++;
		const char *digits = p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		/* Where, not what: a vocabulary option pointed at another file
		 * (/etc/shadow, a key) must not print its contents. */
		if (p != end || digits == end)
			return fedrun_error(FEDRUN_EFORMAT,
					    "%s:%" PRIu64
					    ": expected \"word\" or \"word<TAB>count\": what follows "
					    "the word at byte %zu is not a count (is this a vocabulary?)",
					    path, line, (size_t)(digits - w) + 1);
		errno = 0;
		char *stop;
		unsigned long long c = strtoull(digits, &stop, 10);
		if (errno == ERANGE)
			return fedrun_error(FEDRUN_EFORMAT, "%s:%" PRIu64 ": count out of range",
					    path, line);
		count = c;
	}
	const char *why = word_problem(w, len);
	if (why)
		return fedrun_error(FEDRUN_EFORMAT, "%s:%" PRIu64 ": %s", path, line, why);
	uint32_t id;
	if (fedrun_vocab_find(v, w, len, &id)) {
		bool *seen = id == FEDRUN_VOCAB_UNK   ? seen_unk
			     : id == FEDRUN_VOCAB_EOS ? seen_eos
						      : NULL;
		if (!seen || *seen)
			return fedrun_error(FEDRUN_EFORMAT,
					    "%s:%" PRIu64 ": duplicate word \"%.*s\"", path, line,
					    (int)(len > 60 ? 60 : len), w);
		*seen = true;
		v->count[id] = count;
	} else {
		int rc = insert(v, w, len, count, &id);
		if (rc < 0)
			return rc;
	}
	(*words)++;
	return 0;
}

int fedrun_vocab_load(const char *path, struct fedrun_vocab **out)
{
	*out = NULL;
	char *data;
	size_t size;
	int rc = fedrun_read_file(path, &data, &size);
	if (rc < 0)
		return rc;
	struct fedrun_vocab *v;
	rc = fedrun_vocab_create(&v);
	if (rc < 0) {
		free(data);
		return rc;
	}
	bool seen_unk = false, seen_eos = false;
	uint64_t line = 0, words = 0;
	for (const char *p = data, *end = data + size; p < end && rc == 0;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		rc = load_line(v, path, ++line, p, eol, &seen_unk, &seen_eos, &words);
		p = eol + 1;
	}
	if (rc == 0 && words == 0)
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: no word in the vocabulary file", path);
	free(data);
	if (rc < 0) {
		fedrun_vocab_destroy(v);
		return rc;
	}
	*out = v;
	return 0;
}

int fedrun_vocab_save(const struct fedrun_vocab *v, const char *path)
{
	struct fedrun_atomic_file af;
	int rc = fedrun_atomic_open(&af, path);
	if (rc < 0)
		return rc;
	for (uint32_t id = 0; id < v->n; id++) {
		if (fprintf(af.fp, "%s\t%" PRIu64 "\n", v->chars + v->off[id], v->count[id]) < 0) {
			fedrun_atomic_abort(&af);
			return fedrun_error(FEDRUN_EIO, "cannot write '%s': %s", path,
					    strerror(errno));
		}
	}
	return fedrun_atomic_commit(&af);
}
