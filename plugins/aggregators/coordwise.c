/* SPDX-License-Identifier: Apache-2.0 */
/* Selection and the per-coordinate loop behind median and trimmed_mean (see
 * coordwise.h). */
#include "config.h"
#include <stdlib.h>
#include "fedrun/error.h"
#include "coordwise.h"

/* Coordinates fewer than this are not worth a parallel region. */
#define PAR_MIN 4096

static inline void swapf(float *a, float *b)
{
	float t = *a;
	*a = *b;
	*b = t;
}

static inline float median3(float a, float b, float c)
{
	if (a > b)
		swapf(&a, &b);
	if (b > c)
		b = c;
	return a > b ? a : b;
}

float coordwise_select(float *v, uint32_t m, uint32_t k)
{
	int64_t lo = 0, hi = (int64_t)m - 1;
	while (lo < hi) {
		float pivot = median3(v[lo], v[lo + (hi - lo) / 2], v[hi]);
		/* Three-way partition of v[lo..hi]: [lo, lt) < pivot,
		 * [lt, gt] == pivot, (gt, hi] > pivot. Equal values end in the
		 * middle, so runs of ties cannot make it quadratic. */
		int64_t lt = lo, gt = hi, i = lo;
		while (i <= gt) {
			if (v[i] < pivot)
				swapf(&v[lt++], &v[i++]);
			else if (v[i] > pivot)
				swapf(&v[i], &v[gt--]);
			else
				i++;
		}
		if ((int64_t)k < lt)
			hi = lt - 1;
		else if ((int64_t)k > gt)
			lo = gt + 1;
		else
			return pivot;
	}
	return v[k];
}

int coordwise_apply(struct aggr_base *b, const struct fedrun_update *updates, uint32_t n,
		    float *params, coordwise_stat_fn stat, const void *arg)
{
	const struct fedrun_layout *l = &b->layout;
	const float **src = b->src;
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		uint32_t m = aggr_senders(updates, n, i, src);
		if (m == 0)
			continue;
		/* The senders, packed. */
		uint32_t q = 0;
		for (uint32_t k = 0; k < n; k++)
			if (src[k])
				src[q++] = src[k];
		float *theta = params + t->offset;
		int failed = 0;
#pragma omp parallel if (t->numel >= PAR_MIN)
		{
			float *vals = malloc(m * sizeof *vals);
			if (!vals) {
#pragma omp atomic write
				failed = 1;
			}
#pragma omp for schedule(static)
			for (uint64_t e = 0; e < t->numel; e++) {
				if (!vals)
					continue;
				for (uint32_t k = 0; k < m; k++)
					vals[k] = src[k][e];
				theta[e] = (float)(theta[e] + stat(vals, m, arg));
			}
			free(vals);
		}
		if (failed)
			return fedrun_error(FEDRUN_ENOMEM, "%s: out of memory for %u clients",
					    b->name, m);
	}
	return 0;
}
