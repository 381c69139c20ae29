/* SPDX-License-Identifier: Apache-2.0 */
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

int aggr_check_layout(const char *name, uint32_t n, uint64_t total,
		      const struct fedrun_round_info *round)
{
	if (round && round->layout && (round->layout->n != n || round->layout->total != total))
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: round %u: the layout has %u tensors (%llu floats), "
				    "at create it had %u (%llu)",
				    name, round->round, round->layout->n,
				    (unsigned long long)round->layout->total, n,
				    (unsigned long long)total);
	return 0;
}

int aggr_check_finite(const char *name, const struct fedrun_layout *l,
		      const struct fedrun_round_info *round, const struct fedrun_update *updates,
		      uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		for (uint32_t i = 0; i < l->n; i++) {
			const float *x = updates[k].tensor[i];
			uint64_t bad;
			if (x && !fedrun_vec_finite(l->t[i].numel, x, &bad))
				return fedrun_error(
				    FEDRUN_ENUMERIC,
				    "%s: round %u: client %u sent a non-finite value "
				    "in tensor %s at element %llu",
				    name, round ? round->round : 0, updates[k].client,
				    l->t[i].name, (unsigned long long)bad);
		}
	}
	return 0;
}

int aggr_begin(struct aggr_base *b, const struct fedrun_round_info *round,
	       const struct fedrun_update *updates, uint32_t n, const float *params)
{
	const struct fedrun_layout *l = &b->layout;
	if (n == 0 || !updates)
		return fedrun_error(FEDRUN_EINVAL, "%s: round %u: no updates to aggregate", b->name,
				    round ? round->round : 0);
	int rc = aggr_check_layout(b->name, l->n, l->total, round);
	if (rc < 0)
		return rc;
	/* NaN would silently poison every rule here (comparisons in median,
	 * softmax in fedatt), so refuse it with its place. */
	rc = aggr_check_finite(b->name, l, round, updates, n);
	if (rc < 0)
		return rc;
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

int aggr_sum_init(struct aggr_sum *s, const struct fedrun_layout *l, int weights)
{
	memset(s, 0, sizeof *s);
	s->total = l->total;
	s->ntensors = l->n;
	s->weights = weights;
	/* An arena of 2·total floats is 64-byte aligned room for total doubles. */
	s->acc = (double *)(void *)fedrun_arena_alloc(2 * l->total);
	s->tot = calloc(l->n, sizeof *s->tot);
	s->senders = calloc(l->n, sizeof *s->senders);
	if (!s->acc || !s->tot || !s->senders) {
		aggr_sum_fini(s);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for the sum of %llu parameters",
				    (unsigned long long)l->total);
	}
	return 0;
}

void aggr_sum_fini(struct aggr_sum *s)
{
	fedrun_arena_free((float *)(void *)s->acc);
	free(s->tot);
	free(s->senders);
	free(s->client);
	free(s->p);
	free(s->src);
	memset(s, 0, sizeof *s);
}

void aggr_sum_begin(struct aggr_sum *s)
{
	memset(s->acc, 0, s->total * sizeof *s->acc);
	memset(s->tot, 0, s->ntensors * sizeof *s->tot);
	memset(s->senders, 0, s->ntensors * sizeof *s->senders);
	s->all = 0;
	s->n = 0;
}

/* Grows a[cap] to at least want entries of `size` bytes (doubling). */
static int grow(void **a, uint32_t *cap, uint32_t want, size_t size)
{
	if (want <= *cap)
		return 0;
	uint32_t c = *cap ? *cap : 16;
	while (c < want)
		c = c > UINT32_MAX / 2 ? want : 2 * c;
	void *p = realloc(*a, (size_t)c * size);
	if (!p)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for %u updates", want);
	*a = p;
	*cap = c;
	return 0;
}

int aggr_sum_add(struct aggr_sum *s, const struct fedrun_layout *l,
		 const struct fedrun_round_info *round, const struct fedrun_update *updates,
		 uint32_t n)
{
	return aggr_sum_add_scaled(s, l, round, updates, n, NULL);
}

int aggr_sum_add_scaled(struct aggr_sum *s, const struct fedrun_layout *l,
			const struct fedrun_round_info *round, const struct fedrun_update *updates,
			uint32_t n, const double *scale)
{
	int rc;
	const uint64_t *steps = NULL;
	if (s->weights == AGGR_WEIGHTS_STEPS) {
		if (round->size < offsetof(struct fedrun_round_info, client_steps) +
					  sizeof round->client_steps ||
		    !round->client_steps)
			return fedrun_error(FEDRUN_EINVAL,
					    "aggregator.weights \"steps\": the host does not report "
					    "the clients' local steps (plugin ABI 1.5)");
		steps = round->client_steps;
	}
	if ((rc = grow((void **)&s->client, &s->ccap, s->n + n, sizeof *s->client)) < 0 ||
	    (rc = grow((void **)&s->p, &s->cap, s->n + n, sizeof *s->p)) < 0 ||
	    (rc = grow((void **)&s->src, &s->srccap, n, sizeof *s->src)) < 0)
		return rc;
	double *w = s->p + s->n; /* this call's weights */
	for (uint32_t k = 0; k < n; k++) {
		w[k] = steps ? (double)steps[k]
		       : s->weights == AGGR_WEIGHTS_UNIFORM ? 1.0
							    : (double)updates[k].n_samples;
		if (scale)
			w[k] *= scale[k];
		s->client[s->n + k] = updates[k].client;
		s->all += w[k];
	}
	s->n += n;
	for (uint32_t i = 0; i < l->n; i++) {
		for (uint32_t k = 0; k < n; k++) {
			s->src[k] = updates[k].tensor[i];
			if (s->src[k]) {
				s->tot[i] += w[k];
				s->senders[i]++;
			}
		}
		fedrun_vec_wsum_d(l->t[i].numel, n, s->src, w, s->acc + l->t[i].offset);
	}
	return 0;
}

double aggr_sum_mean(const struct aggr_sum *s, const struct fedrun_layout *l, uint32_t i,
		     float *out)
{
	double tot = s->tot[i];
	if (tot == 0)
		return 0;
	const double *acc = s->acc + l->t[i].offset;
	for (uint64_t j = 0; j < l->t[i].numel; j++)
		out[j] = (float)(acc[j] / tot);
	return tot;
}

void aggr_sum_apply(const struct aggr_sum *s, const struct fedrun_layout *l, float *params)
{
	for (uint32_t i = 0; i < l->n; i++) {
		double tot = s->tot[i];
		if (tot == 0)
			continue; /* nobody sent this tensor: it keeps its value */
		const double *acc = s->acc + l->t[i].offset;
		float *x = params + l->t[i].offset;
		uint64_t numel = l->t[i].numel;
#pragma omp parallel for schedule(static) if (numel >= (1u << 16))
		for (uint64_t j = 0; j < numel; j++)
			x[j] = (float)((double)x[j] + acc[j] / tot);
	}
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
