/* SPDX-License-Identifier: Apache-2.0 */
/* The n-gram count table behind BLEU and chrF (sacreBLEU's Counter): open
 * addressing with linear probing over keys that are runs of code points,
 * copied into one arena so that entries outlive the segment they came from. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "bleu_internal.h"

void bleu_ngrams_init(struct bleu_ngrams *t)
{
	t->slot = NULL;
	t->live = NULL;
	t->cap = 0;
	t->used = 0;
	bleu_ustr_init(&t->keys);
}

void bleu_ngrams_fini(struct bleu_ngrams *t)
{
	free(t->slot);
	free(t->live);
	bleu_ustr_fini(&t->keys);
	bleu_ngrams_init(t);
}

void bleu_ngrams_clear(struct bleu_ngrams *t)
{
	for (size_t k = 0; k < t->used; k++)
		t->slot[t->live[k]].len = 0;
	t->used = 0;
	t->keys.n = 0;
}

/* FNV-1a over the code points and the tag, then a final avalanche so that
 * the low bits used for the slot index depend on every input bit. */
static uint64_t key_hash(const uint32_t *key, size_t len, uint32_t order)
{
	uint64_t h = 0xcbf29ce484222325ull ^ order;
	for (size_t i = 0; i < len; i++) {
		h ^= key[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static int grow(struct bleu_ngrams *t)
{
	size_t cap = t->cap ? 2 * t->cap : 256;
	struct bleu_ngram *slot = calloc(cap, sizeof slot[0]);
	size_t *live = malloc(cap / 2 * sizeof live[0]);
	if (!slot || !live) {
		free(slot);
		free(live);
		return fedrun_error(FEDRUN_ENOMEM, "bleu: out of memory");
	}
	for (size_t k = 0; k < t->used; k++) {
		const struct bleu_ngram *g = &t->slot[t->live[k]];
		size_t j = g->hash & (cap - 1);
		while (slot[j].len)
			j = (j + 1) & (cap - 1);
		slot[j] = *g;
		live[k] = j;
	}
	free(t->slot);
	free(t->live);
	t->slot = slot;
	t->live = live;
	t->cap = cap;
	return 0;
}

int bleu_ngrams_get(struct bleu_ngrams *t, const uint32_t *key, size_t len, uint32_t order,
		    struct bleu_ngram **e)
{
	int rc;
	if (len == 0 || len > UINT32_MAX)
		return fedrun_error(FEDRUN_EINVAL, "bleu: n-gram key of length %zu", len);
	/* keep the load at most one half */
	if (2 * (t->used + 1) > t->cap && (rc = grow(t)))
		return rc;
	uint64_t h = key_hash(key, len, order);
	size_t j = h & (t->cap - 1);
	for (;; j = (j + 1) & (t->cap - 1)) {
		struct bleu_ngram *s = &t->slot[j];
		if (!s->len)
			break;
		if (s->hash == h && s->len == len && s->order == order &&
		    !memcmp(t->keys.v + s->off, key, len * sizeof key[0])) {
			*e = s;
			return 0;
		}
	}
	size_t off = t->keys.n;
	if ((rc = bleu_ustr_append(&t->keys, key, len)))
		return rc;
	struct bleu_ngram *s = &t->slot[j];
	memset(s, 0, sizeof *s);
	s->hash = h;
	s->off = off;
	s->len = (uint32_t)len;
	s->order = order;
	t->live[t->used++] = j;
	*e = s;
	return 0;
}

void bleu_nrefs_fold(int *nrefs, size_t used)
{
	if (*nrefs == BLEU_NREFS_UNSET)
		*nrefs = (int)used;
	else if (*nrefs != (int)used)
		*nrefs = -1;
}
