/* SPDX-License-Identifier: Apache-2.0 */
/* Paired bootstrap resampling (Koehn, 2004, "Statistical Significance
 * Tests for Machine Translation Evaluation", sec. 4) of BLEU and chrF, as
 * sacreBLEU 2.6.0's _paired_bs_test makes it: one set of resampled segment
 * indices, shared by both systems; each resample scored from its summed
 * segment statistics; sacreBLEU's estimate_ci interval. The indices come
 * from fedrun's Philox streams instead of numpy's generator. */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"
#include "fedrun/rng.h"
#include "bleu_internal.h"

int fedrun_bootstrap_indices(uint64_t seed, uint64_t k, size_t n, size_t *idx)
{
	if (!n)
		return fedrun_error(FEDRUN_EINVAL, "bootstrap: no segments to resample");
	if (k > UINT32_MAX)
		return fedrun_error(FEDRUN_EINVAL, "bootstrap: resample %llu beyond 2^32 - 1",
				    (unsigned long long)k);
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_BOOTSTRAP, (uint32_t)k, 0);
	for (size_t j = 0; j < n; j++)
		idx[j] = (size_t)fedrun_rng_below(&r, (uint64_t)n);
	return 0;
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

/* Mean and sacreBLEU's estimate_ci bounds of v[0..m), m >= 1 (v is sorted
 * in place). */
static void summarize(double *v, size_t m, struct fedrun_bootstrap_ci *ci)
{
	double sum = 0.0;
	for (size_t k = 0; k < m; k++)
		sum += v[k];
	ci->mean = sum / (double)m;
	qsort(v, m, sizeof v[0], cmp_double);
	ci->lo = v[m / 40];
	ci->hi = v[m - 1 - m / 40];
}

int bleu_paired_bootstrap(bleu_resample_fn score, const void *opts, const void *a, const void *b,
			  size_t n, size_t samples, uint64_t seed,
			  struct fedrun_paired_bootstrap *out, double *scores)
{
	memset(out, 0, sizeof *out);
	if (!n)
		return fedrun_error(FEDRUN_EINVAL, "bootstrap: no segments to resample");
	if (!a || !b)
		return fedrun_error(FEDRUN_EINVAL, "bootstrap: no statistics for %s",
				    a ? "system B" : "system A");
	if (!samples || samples - 1 > UINT32_MAX)
		return fedrun_error(FEDRUN_EINVAL, "bootstrap: %zu resamples: expected 1 to 2^32",
				    samples);
	int rc = 0;
	size_t *idx = n <= SIZE_MAX / sizeof idx[0] ? malloc(n * sizeof idx[0]) : NULL;
	double *v =
	    samples <= SIZE_MAX / (3 * sizeof v[0]) ? malloc(3 * samples * sizeof v[0]) : NULL;
	if (!idx || !v) {
		rc = fedrun_error(FEDRUN_ENOMEM,
				  "bootstrap: out of memory for %zu segments and "
				  "%zu resamples",
				  n, samples);
		goto done;
	}
	/* the identity resample: every segment once, the corpus scores */
	for (size_t j = 0; j < n; j++)
		idx[j] = j;
	out->a = score(opts, a, n, idx);
	out->b = score(opts, b, n, idx);
	out->diff = out->a - out->b;
	out->samples = samples;
	out->seed = seed;
	/* v holds A's scores, then B's, then the differences */
	double *va = v, *vb = v + samples, *vd = v + 2 * samples;
	for (size_t k = 0; k < samples; k++) {
		if ((rc = fedrun_bootstrap_indices(seed, k, n, idx)))
			goto done;
		va[k] = score(opts, a, n, idx);
		vb[k] = score(opts, b, n, idx);
		vd[k] = va[k] - vb[k];
		if (scores) {
			scores[3 * k] = va[k];
			scores[3 * k + 1] = vb[k];
			scores[3 * k + 2] = vd[k];
		}
	}
	summarize(va, samples, &out->ci_a);
	summarize(vb, samples, &out->ci_b);
	summarize(vd, samples, &out->ci_diff);
done:
	free(idx);
	free(v);
	return rc;
}
