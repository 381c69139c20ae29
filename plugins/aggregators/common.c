/* Checks and bookkeeping shared by the aggregator plugins (see common.h). */
#include "config.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/vec.h"
#include "common.h"

int aggr_base_init(struct aggr_base *b, const char *name, const struct fedrun_host *host,
		   const struct fedrun_layout *layout)
{
	memset(b, 0, sizeof *b);
	b->name = name;
	b->host = host;
	if (!layout || layout->n == 0)
		return fedrun_error(FEDRUN_EINVAL, "%s: the model has no tensors", name);
	int rc = fedrun_layout_copy(&b->layout, layout);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < layout->n; i++)
		if (layout->t[i].numel > b->max_numel)
			b->max_numel = layout->t[i].numel;
	b->before = fedrun_arena_alloc(layout->total);
	if (!b->before) {
		fedrun_layout_fini(&b->layout);
		return fedrun_error(FEDRUN_ENOMEM, "%s: out of memory for %llu parameters", name,
				    (unsigned long long)layout->total);
	}
	return 0;
}

void aggr_base_fini(struct aggr_base *b)
{
	free(b->src);
	free(b->w);
	free(b->val);
	b->src = NULL;
	b->w = NULL;
	b->val = NULL;
	fedrun_arena_free(b->before);
	fedrun_layout_fini(&b->layout);
	b->before = NULL;
}

int aggr_begin(struct aggr_base *b, const struct fedrun_round_info *round,
	       const struct fedrun_update *updates, uint32_t n, const float *params)
{
	const struct fedrun_layout *l = &b->layout;
	if (n == 0 || !updates)
		return fedrun_error(FEDRUN_EINVAL, "%s: round %u: no updates to aggregate", b->name,
				    round ? round->round : 0);
	if (round && round->layout &&
	    (round->layout->n != l->n || round->layout->total != l->total))
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: round %u: the layout has %u tensors (%llu floats), "
				    "at create it had %u (%llu)",
				    b->name, round->round, round->layout->n,
				    (unsigned long long)round->layout->total, l->n,
				    (unsigned long long)l->total);
	/* NaN would silently poison every rule here (comparisons in median,
	 * softmax in fedatt), so refuse it with its place. */
	for (uint32_t k = 0; k < n; k++) {
		for (uint32_t i = 0; i < l->n; i++) {
			const float *x = updates[k].tensor[i];
			uint64_t bad;
			if (x && !fedrun_vec_finite(l->t[i].numel, x, &bad))
				return fedrun_error(
				    FEDRUN_ENUMERIC,
				    "%s: round %u: client %u sent a non-finite value "
				    "in tensor %s at element %llu",
				    b->name, round ? round->round : 0, updates[k].client,
				    l->t[i].name, (unsigned long long)bad);
		}
	}
	if (n > b->cap) {
		const float **src = realloc(b->src, n * sizeof *src);
		if (src)
			b->src = src;
		float *w = realloc(b->w, n * sizeof *w);
		if (w)
			b->w = w;
		double *val = realloc(b->val, n * sizeof *val);
		if (val)
			b->val = val;
		if (!src || !w || !val)
			return fedrun_error(FEDRUN_ENOMEM, "%s: out of memory for %u clients",
					    b->name, n);
		b->cap = n;
	}
	memcpy(b->before, params, l->total * sizeof *params);
	return 0;
}

int aggr_end(struct aggr_base *b, const float *params)
{
	uint64_t bad;
	if (!fedrun_vec_finite(b->layout.total, params, &bad))
		return fedrun_error(FEDRUN_ENUMERIC,
				    "%s: the aggregated parameters are not finite (element %llu)",
				    b->name, (unsigned long long)bad);
	char metric[64];
	snprintf(metric, sizeof metric, "%s.step_norm", b->name);
	return aggr_metric(b, metric, -1, NULL,
			   fedrun_vec_dist2(b->layout.total, params, b->before));
}

uint32_t aggr_senders(const struct fedrun_update *updates, uint32_t n, uint32_t i,
		      const float **src)
{
	uint32_t m = 0;
	for (uint32_t k = 0; k < n; k++) {
		src[k] = updates[k].tensor[i];
		m += src[k] != NULL;
	}
	return m;
}

double aggr_weighted_mean(struct aggr_base *b, const struct fedrun_update *updates, uint32_t n,
			  uint32_t i, const double *p, float *out)
{
	const uint64_t numel = b->layout.t[i].numel;
	double total = 0;
	uint32_t m = aggr_senders(updates, n, i, b->src);
	for (uint32_t k = 0; k < n; k++)
		if (b->src[k])
			total += p[k];
	memset(out, 0, numel * sizeof *out);
	if (m == 0)
		return 0;
	if (!(total > 1e-12))
		return total;
	for (uint32_t k = 0; k < n; k++)
		b->w[k] = b->src[k] ? (float)(p[k] / total) : 0;
	fedrun_vec_wsum(numel, n, b->src, b->w, out);
	return total;
}

int aggr_metric(const struct aggr_base *b, const char *metric, int64_t client, const char *tensor,
		double value)
{
	if (!b->host || !b->host->metric)
		return 0;
	return b->host->metric(b->host->ctx, metric, client, tensor, value);
}

bool aggr_run_clients(const struct fedrun_host *host, uint32_t *clients, uint32_t *per_round)
{
#if FEDRUN_ABI_MINOR >= 2
	if (host && host->size >= offsetof(struct fedrun_host, clients) + sizeof host->clients &&
	    host->clients) {
		*per_round = 0;
		*clients = host->clients(host->ctx, per_round);
		return *clients > 0;
	}
#else
	(void)host;
#endif
	*clients = *per_round = 0;
	return false;
}
