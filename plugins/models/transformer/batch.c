/* SPDX-License-Identifier: Apache-2.0 */
/* Token-count batching (fairseq's --max-tokens): pairs sorted by length, so
 * that consecutive pairs form buckets of similar length, cut into batches of
 * at most `tokens` rows x longest side, and padded into the network's
 * arrays. */
#include <stdlib.h>
#include <string.h>
#include "transformer.h"

static _Thread_local const struct tfm_split *sort_split;

static int by_len(const void *a, const void *b)
{
	const struct tfm_split *s = sort_split;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	uint32_t li = tfm_pair_len(s, i), lj = tfm_pair_len(s, j);
	if (li != lj)
		return li < lj ? -1 : 1;
	if (s->slen[i] != s->slen[j])
		return s->slen[i] < s->slen[j] ? -1 : 1;
	return i < j ? -1 : i > j; /* stable: a total order */
}

int tfm_batch_sort(struct tfm_split *s)
{
	free(s->order);
	s->order = malloc((s->n ? s->n : 1) * sizeof *s->order);
	if (!s->order)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < s->n; i++)
		s->order[i] = i;
	sort_split = s;
	qsort(s->order, s->n, sizeof *s->order, by_len);
	sort_split = NULL;
	return 0;
}

int tfm_batch_plan(const struct tfm_split *s, uint32_t tokens, uint32_t **start, uint32_t *nb)
{
	uint32_t *st = malloc(((size_t)s->n + 1) * sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	uint32_t k = 0, rows = 0, longest = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		uint32_t l = tfm_pair_len(s, s->order[i]);
		uint32_t lg = l > longest ? l : longest;
		if (rows == 0 || (uint64_t)(rows + 1) * lg > tokens) {
			st[k++] = i; /* a new batch */
			rows = 1;
			longest = l;
		} else {
			rows++;
			longest = lg;
		}
	}
	st[k] = s->n;
	*start = st;
	*nb = k;
	return 0;
}

void tfm_batchbuf_free(struct tfm_batchbuf *bb)
{
	free(bb->src);
	free(bb->tgt_in);
	free(bb->tgt_out);
	free(bb->src_len);
	free(bb->tgt_len);
	memset(bb, 0, sizeof *bb);
}

static int grow(int32_t **p, uint64_t n)
{
	int32_t *q = realloc(*p, (n ? n : 1) * sizeof *q);
	if (!q)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	*p = q;
	return 0;
}

int tfm_batch_fill(const struct tfm_model *m, const struct tfm_split *s, const uint32_t *idx,
		   uint32_t k, struct tfm_batchbuf *bb, struct tfm_batch *b)
{
	uint32_t Ts = 1, Tt = 1;
	for (uint32_t r = 0; r < k; r++) {
		if (s->slen[idx[r]] + 1 > Ts)
			Ts = s->slen[idx[r]] + 1;
		if (s->tlen[idx[r]] + 1 > Tt)
			Tt = s->tlen[idx[r]] + 1;
	}
	uint64_t ns = (uint64_t)k * Ts, nt = (uint64_t)k * Tt;
	int rc = 0;
	if (ns > bb->cap_src) {
		if ((rc = grow(&bb->src, ns)) < 0)
			return rc;
		bb->cap_src = ns;
	}
	if (nt > bb->cap_tgt) {
		if ((rc = grow(&bb->tgt_in, nt)) < 0 || (rc = grow(&bb->tgt_out, nt)) < 0)
			return rc;
		bb->cap_tgt = nt;
	}
	if (k > bb->cap_b) {
		if ((rc = grow(&bb->src_len, k)) < 0 || (rc = grow(&bb->tgt_len, k)) < 0)
			return rc;
		bb->cap_b = k;
	}
	const int32_t pad = m->cfg.pad_id, bos = m->cfg.bos_id, eos = m->cfg.eos_id;
	for (uint32_t r = 0; r < k; r++) {
		uint32_t i = idx[r], a = s->slen[i], n = s->tlen[i];
		int32_t *src = bb->src + (uint64_t)r * Ts;
		int32_t *ti = bb->tgt_in + (uint64_t)r * Tt, *to = bb->tgt_out + (uint64_t)r * Tt;
		/* The source ends with eos (as fairseq's), the target input
		 * starts with bos and the output ends with eos. */
		if (a)
			memcpy(src, s->src[i], a * sizeof *src);
		src[a] = eos;
		for (uint32_t t = a + 1; t < Ts; t++)
			src[t] = pad;
		ti[0] = bos;
		if (n) {
			memcpy(ti + 1, s->tgt[i], n * sizeof *ti);
			memcpy(to, s->tgt[i], n * sizeof *to);
		}
		to[n] = eos;
		for (uint32_t t = n + 1; t < Tt; t++) {
			ti[t] = pad;
			to[t] = -1;
		}
		bb->src_len[r] = (int32_t)(a + 1);
		bb->tgt_len[r] = (int32_t)(n + 1);
	}
	*b = (struct tfm_batch){.B = k,
				.Ts = Ts,
				.Tt = Tt,
				.src = bb->src,
				.src_len = bb->src_len,
				.tgt_in = bb->tgt_in,
				.tgt_out = bb->tgt_out,
				.tgt_len = bb->tgt_len};
	return 0;
}
