/* SPDX-License-Identifier: Apache-2.0 */
/* Byte-pair encoding over characters with WordPiece's "##" continuation
 * (wplearn.h). Pair counts live in a hash table with, per pair, the words
 * it was seen in (possibly stale: checked when used); the most frequent
 * pair comes from a max-heap with lazy deletion (an entry whose count no
 * longer matches the table's is dropped when it surfaces). A merge
 * rewrites only the words that hold the pair, each by subtracting its old
 * pairs' counts and adding its new ones. */
#include "config.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "wplearn.h"

/* ---- symbols: strings with ids, found by hash ---- */

struct symtab {
	char **s;
	uint32_t n, cap;
	uint32_t *slot; /* open addressing: id + 1, 0 empty */
	uint32_t nslot;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int sym_rehash(struct symtab *t, uint32_t nslot)
{
	uint32_t *slot = calloc(nslot, sizeof *slot);
	if (!slot)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t h = hash_str(t->s[i]) & (nslot - 1);
		while (slot[h])
			h = (h + 1) & (nslot - 1);
		slot[h] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = nslot;
	return 0;
}

/* The id of s (len bytes), added when new (*added). */
static int sym_id(struct symtab *t, const char *s, size_t len, uint32_t *id, bool *added)
{
	if (2 * (t->n + 1) > t->nslot) {
		int rc = sym_rehash(t, t->nslot ? 2 * t->nslot : 1024);
		if (rc < 0)
			return rc;
	}
	char *k = malloc(len + 1);
	if (!k)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	memcpy(k, s, len);
	k[len] = 0;
	uint64_t h = hash_str(k) & (t->nslot - 1);
	while (t->slot[h]) {
		if (strcmp(t->s[t->slot[h] - 1], k) == 0) {
			free(k);
			*id = t->slot[h] - 1;
			*added = false;
			return 0;
		}
		h = (h + 1) & (t->nslot - 1);
	}
	if (t->n == t->cap) {
		uint32_t nc = t->cap ? 2 * t->cap : 256;
		char **ns = realloc(t->s, nc * sizeof *ns);
		if (!ns) {
			free(k);
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		t->s = ns;
		t->cap = nc;
	}
	t->s[t->n] = k;
	t->slot[h] = t->n + 1;
	*id = t->n++;
	*added = true;
	return 0;
}

/* ---- pairs: counts and the words they occur in ---- */

struct pair {
	uint64_t key; /* a << 32 | b; UINT64_MAX: empty */
	int64_t count;
	uint32_t *words, nw, cw;
};

struct pairtab {
	struct pair *p;
	uint64_t n, cap; /* cap a power of two */
};

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

static int pair_grow(struct pairtab *t)
{
	uint64_t nc = t->cap ? 2 * t->cap : 4096;
	struct pair *np = malloc(nc * sizeof *np);
	if (!np)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < nc; i++)
		np[i].key = UINT64_MAX;
	for (uint64_t i = 0; i < t->cap; i++) {
		if (t->p[i].key == UINT64_MAX)
			continue;
		uint64_t h = mix(t->p[i].key) & (nc - 1);
		while (np[h].key != UINT64_MAX)
			h = (h + 1) & (nc - 1);
		np[h] = t->p[i];
	}
	free(t->p);
	t->p = np;
	t->cap = nc;
	return 0;
}

static int pair_get(struct pairtab *t, uint64_t key, struct pair **out)
{
	if (2 * (t->n + 1) > t->cap) {
		int rc = pair_grow(t);
		if (rc < 0)
			return rc;
	}
	uint64_t h = mix(key) & (t->cap - 1);
	while (t->p[h].key != UINT64_MAX && t->p[h].key != key)
		h = (h + 1) & (t->cap - 1);
	if (t->p[h].key == UINT64_MAX) {
		t->p[h] = (struct pair){.key = key};
		t->n++;
	}
	*out = &t->p[h];
	return 0;
}

/* ---- the heap of (count, key), max count first, then smallest key ---- */

struct entry {
	int64_t count;
	uint64_t key;
};

struct heap {
	struct entry *e;
	uint64_t n, cap;
};

static bool above(const struct entry *x, const struct entry *y)
{
	return x->count > y->count || (x->count == y->count && x->key < y->key);
}

static int heap_push(struct heap *h, int64_t count, uint64_t key)
{
	if (h->n == h->cap) {
		uint64_t nc = h->cap ? 2 * h->cap : 4096;
		struct entry *ne = realloc(h->e, nc * sizeof *ne);
		if (!ne)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		h->e = ne;
		h->cap = nc;
	}
	uint64_t i = h->n++;
	h->e[i] = (struct entry){count, key};
	while (i > 0 && above(&h->e[i], &h->e[(i - 1) / 2])) {
		struct entry t = h->e[i];
		h->e[i] = h->e[(i - 1) / 2];
		h->e[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	return 0;
}

static struct entry heap_pop(struct heap *h)
{
	struct entry top = h->e[0];
	h->e[0] = h->e[--h->n];
	uint64_t i = 0;
	for (;;) {
		uint64_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && above(&h->e[l], &h->e[m]))
			m = l;
		if (r < h->n && above(&h->e[r], &h->e[m]))
			m = r;
		if (m == i)
			break;
		struct entry t = h->e[i];
		h->e[i] = h->e[m];
		h->e[m] = t;
		i = m;
	}
	return top;
}

/* ---- the learner ---- */

struct word {
	uint64_t count;
	uint32_t *sym, len;
	uint32_t seen; /* the merge that last rewrote it (+1) */
};

struct learner {
	struct symtab syms;
	struct pairtab pairs;
	struct heap heap;
	struct word *w;
	uint32_t nw;
};

/* Adds sign * count of word wi's pairs to the table, noting the word in
 * each pair (sign > 0) and pushing the new counts. */
static int word_pairs(struct learner *L, uint32_t wi, int sign)
{
	struct word *w = &L->w[wi];
	for (uint32_t i = 0; i + 1 < w->len; i++) {
		uint64_t key = (uint64_t)w->sym[i] << 32 | w->sym[i + 1];
		struct pair *p;
		int rc = pair_get(&L->pairs, key, &p);
		if (rc < 0)
			return rc;
		p->count += sign * (int64_t)w->count;
		if (sign > 0) {
			if (p->nw == p->cw) {
				uint32_t nc = p->cw ? 2 * p->cw : 4;
				uint32_t *nwd = realloc(p->words, nc * sizeof *nwd);
				if (!nwd)
					return fedrun_error(FEDRUN_ENOMEM, "out of memory");
				p->words = nwd;
				p->cw = nc;
			}
			if (p->nw == 0 || p->words[p->nw - 1] != wi)
				p->words[p->nw++] = wi;
		}
		if (p->count > 0 && (rc = heap_push(&L->heap, p->count, key)) < 0)
			return rc;
	}
	return 0;
}

static int cmp_word(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	return strcmp(*x, *y);
}

static size_t utf8_len(unsigned char c)
{
	return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

int wpl_learn(const char *const *words, const uint64_t *counts, uint32_t nwords,
	      const struct wpl_opts *o, char ***out, uint32_t *nout)
{
	struct learner L = {0};
	const char **sorted = NULL;
	int rc = 0;
	bool added;
	uint32_t id;
	for (uint32_t i = 0; i < o->n_specials && rc == 0; i++)
		rc = sym_id(&L.syms, o->specials[i], strlen(o->specials[i]), &id, &added);
	if (rc < 0)
		goto out;
	/* Words in byte order, so the alphabet's order (and every tie) is a
	 * function of the counts alone, not of the caller's order. */
	sorted = malloc((nwords ? nwords : 1) * sizeof *sorted);
	L.w = calloc(nwords ? nwords : 1, sizeof *L.w);
	if (!sorted || !L.w) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < nwords; i++)
		sorted[i] = words[i];
	qsort(sorted, nwords, sizeof *sorted, cmp_word);
	for (uint32_t i = 0; i < nwords && rc == 0; i++) {
		const char *s = sorted[i];
		size_t n = strlen(s);
		struct word *w = &L.w[L.nw];
		if (!(w->sym = malloc((n ? n : 1) * sizeof *w->sym))) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		for (size_t j = 0; j < n && rc == 0;) {
			size_t cl = utf8_len((unsigned char)s[j]);
			if (j + cl > n)
				cl = n - j;
			char buf[8] = "##";
			memcpy(buf + 2, s + j, cl);
			rc = j == 0 ? sym_id(&L.syms, s, cl, &id, &added)
				    : sym_id(&L.syms, buf, cl + 2, &id, &added);
			w->sym[w->len++] = id;
			j += cl;
		}
		L.nw++;
	}
	if (rc < 0)
		goto out;
	/* each word's count: words[] repeats no string (wplearn.h), so a
	 * binary search of each original word in the sorted order finds it */
	for (uint32_t i = 0; i < nwords; i++) {
		uint32_t lo = 0, hi = nwords;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (strcmp(sorted[mid], words[i]) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		L.w[lo].count = counts[i];
	}
	if (L.syms.n > o->vocab_size) {
		rc = fedrun_error(FEDRUN_EINVAL,
				  "wordpiece vocabulary: %u entries are too few for the %u special "
				  "tokens and the %u characters (and continuations) of the text",
				  o->vocab_size, o->n_specials, L.syms.n - o->n_specials);
		goto out;
	}
	for (uint32_t i = 0; i < L.nw && rc == 0; i++)
		rc = word_pairs(&L, i, +1);
	uint32_t merges = 0;
	while (rc == 0 && L.syms.n < o->vocab_size && L.heap.n > 0) {
		struct entry e = heap_pop(&L.heap);
		struct pair *p;
		if ((rc = pair_get(&L.pairs, e.key, &p)) < 0)
			break;
		if (p->count != e.count || p->count <= 0)
			continue; /* stale */
		if ((uint64_t)p->count < o->min_frequency)
			break;
		const uint32_t a = (uint32_t)(e.key >> 32), b = (uint32_t)e.key;
		const char *sa = L.syms.s[a], *sb = L.syms.s[b] + 2; /* b is "##..." */
		size_t la = strlen(sa), lb = strlen(sb);
		char *m = malloc(la + lb + 1);
		if (!m) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		memcpy(m, sa, la);
		memcpy(m + la, sb, lb + 1);
		uint32_t c;
		rc = sym_id(&L.syms, m, la + lb, &c, &added);
		free(m);
		if (rc < 0)
			break;
		merges++;
		/* the words of the pair; copied, since rewriting adds to lists */
		uint32_t nw = p->nw, *ws = malloc((nw ? nw : 1) * sizeof *ws);
		if (!ws) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		memcpy(ws, p->words, nw * sizeof *ws);
		free(p->words);
		p->words = NULL;
		p->nw = p->cw = 0;
		for (uint32_t k = 0; k < nw && rc == 0; k++) {
			struct word *w = &L.w[ws[k]];
			if (w->seen == merges)
				continue;
			w->seen = merges;
			bool has = false;
			for (uint32_t i = 0; i + 1 < w->len && !has; i++)
				has = w->sym[i] == a && w->sym[i + 1] == b;
			if (!has)
				continue;
			if ((rc = word_pairs(&L, ws[k], -1)) < 0)
				break;
			uint32_t j = 0;
			for (uint32_t i = 0; i < w->len; i++) {
				if (i + 1 < w->len && w->sym[i] == a && w->sym[i + 1] == b) {
					w->sym[j++] = c;
					i++;
				} else {
					w->sym[j++] = w->sym[i];
				}
			}
			w->len = j;
			rc = word_pairs(&L, ws[k], +1);
		}
		free(ws);
	}
	if (rc < 0)
		goto out;
	*out = L.syms.s;
	*nout = L.syms.n;
	L.syms.s = NULL;
	L.syms.n = 0;
out:
	for (uint32_t i = 0; i < L.syms.n; i++)
		free(L.syms.s[i]);
	free(L.syms.s);
	free(L.syms.slot);
	for (uint64_t i = 0; i < L.pairs.cap; i++)
		if (L.pairs.p[i].key != UINT64_MAX)
			free(L.pairs.p[i].words);
	free(L.pairs.p);
	free(L.heap.e);
	for (uint32_t i = 0; i < L.nw; i++)
		free(L.w[i].sym);
	free(L.w);
	free(sorted);
	return rc;
}

void wpl_free(char **vocab, uint32_t n)
{
	if (!vocab)
		return;
	for (uint32_t i = 0; i < n; i++)
		free(vocab[i]);
	free(vocab);
}

/* ---- counting words ---- */

struct wpl_counter {
	struct symtab words;
	uint64_t *count;
	uint32_t cap;
};

int wpl_counter_create(struct wpl_counter **out)
{
	if (!(*out = calloc(1, sizeof **out)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	return 0;
}

void wpl_counter_destroy(struct wpl_counter *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->words.n; i++)
		free(c->words.s[i]);
	free(c->words.s);
	free(c->words.slot);
	free(c->count);
	free(c);
}

int wpl_counter_add(struct wpl_counter *c, const char *word, size_t len)
{
	uint32_t id;
	bool added;
	if (len == 0)
		return 0;
	int rc = sym_id(&c->words, word, len, &id, &added);
	if (rc < 0)
		return rc;
	if (id >= c->cap) {
		uint32_t nc = c->cap ? 2 * c->cap : 1024;
		uint64_t *n = realloc(c->count, nc * sizeof *n);
		if (!n)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		memset(n + c->cap, 0, (nc - c->cap) * sizeof *n);
		c->count = n;
		c->cap = nc;
	}
	c->count[id]++;
	return 0;
}

uint32_t wpl_counter_words(const struct wpl_counter *c)
{
	return c->words.n;
}

int wpl_counter_learn(const struct wpl_counter *c, const struct wpl_opts *o, char ***out,
		      uint32_t *n)
{
	return wpl_learn((const char *const *)c->words.s, c->count, c->words.n, o, out, n);
}
