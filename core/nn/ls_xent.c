/* SPDX-License-Identifier: Apache-2.0 */
/* Label-smoothed cross-entropy (Szegedy et al. 2016, sec. 7) on the CPU
 * backend, loss, plain NLL and gradient in one pass per row after the
 * maximum. With the target distribution q = (1 - eps) onehot(t) + eps / V
 * and log p_j = l_j - logZ, logZ = m + log sum_j e^{l_j - m}:
 *   -sum_j q_j log p_j = (1 - eps) (logZ - l_t) + eps (logZ - mean_j l_j),
 * so the smoothing term needs only the row sum of the logits. Sums are
 * taken in fixed lanes and fixed blocks of rows, as in xent.c, so the bits
 * depend neither on the vector width nor on the thread count. */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"
#include "fastmath.h"
#include "lanes.h"

#define LSX_BLOCK 16 /* rows per partial sum */

/* Row loss and nll (*nll); when dl is not NULL (it may be l) writes
 * (p - q) k. */
NN_SIMD_CLONES
static double lsx_row(uint32_t V, const float *l, int32_t t, float eps, float *dl, float k,
		      double *nll)
{
	const float m = nn_lanes_max(V, l);
	const float lt = l[t];
	const uint32_t vm = V - V % NN_LANES;
	float se[NN_LANES] = {0}, sl[NN_LANES] = {0};
	for (uint32_t j0 = 0; j0 < vm; j0 += NN_LANES) {
		float e[NN_LANES];
#pragma omp simd
		for (uint32_t q = 0; q < NN_LANES; q++) {
			float lj = l[j0 + q];
			e[q] = nn_expf(lj - m);
			se[q] += e[q];
			sl[q] += lj;
		}
		if (dl)
			memcpy(dl + j0, e, sizeof e);
	}
	float te = 0.0f, tl = 0.0f;
	for (uint32_t j = vm; j < V; j++) {
		float lj = l[j], e = nn_expf(lj - m);
		te += e;
		tl += lj;
		if (dl)
			dl[j] = e;
	}
	const float s = nn_lanes_fold(se, te);
	const double lz = (double)m + log((double)s);
	const double mean_l = (double)nn_lanes_fold(sl, tl) / (double)V;
	if (dl) {
		const float ks = k / s, u = eps * k / (float)V;
#pragma omp simd
		for (uint32_t j = 0; j < V; j++)
			dl[j] = dl[j] * ks - u;
		dl[t] -= (1.0f - eps) * k;
	}
	*nll = lz - (double)lt;
	return (1.0 - (double)eps) * *nll + (double)eps * (lz - mean_l);
}

int nn_cpu_label_smoothed_xent(void *ctx, uint32_t N, uint32_t V, float eps, const float *logits,
			       const int32_t *targets, double *loss, double *nll, uint64_t *count,
			       float *dlogits)
{
	if (!(eps >= 0.0f && eps <= 1.0f))
		return fedrun_error(FEDRUN_EINVAL, "label_smoothed_xent: eps = %g outside [0, 1]",
				    (double)eps);
	if (N && (!V || !logits || !targets))
		return fedrun_error(FEDRUN_EINVAL,
				    "label_smoothed_xent: V = 0 or NULL logits/targets");
	uint64_t cnt = 0;
	for (uint32_t i = 0; i < N; i++) {
		if (targets[i] >= 0 && (uint32_t)targets[i] >= V)
			return fedrun_error(FEDRUN_EINVAL,
					    "label_smoothed_xent: targets[%u] = %d outside [0, %u)",
					    i, targets[i], V);
		cnt += targets[i] >= 0;
	}
	const uint32_t nb = (N + LSX_BLOCK - 1) / LSX_BLOCK;
	double *part = malloc((nb ? 2 * (size_t)nb : 1) * sizeof *part); /* loss, nll */
	if (!part)
		return fedrun_error(FEDRUN_ENOMEM, "label_smoothed_xent: %u partial sums", nb);
	const float k = cnt ? 1.0f / (float)cnt : 0.0f;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)N * V >= NN_PAR_MIN)
	for (uint32_t blk = 0; blk < nb; blk++) {
		uint32_t i1 = N - blk * LSX_BLOCK < LSX_BLOCK ? N : (blk + 1) * LSX_BLOCK;
		double s = 0.0, sn = 0.0;
		for (uint32_t i = blk * LSX_BLOCK; i < i1; i++) {
			const float *l = logits + (uint64_t)i * V;		/* (V) */
			float *dl = dlogits ? dlogits + (uint64_t)i * V : NULL; /* (V) */
			if (targets[i] < 0) {
				if (dl)
					memset(dl, 0, V * sizeof *dl);
				continue;
			}
			double rn;
			s += lsx_row(V, l, targets[i], eps, dl, k, &rn);
			sn += rn;
		}
		part[2 * blk] = s;
		part[2 * blk + 1] = sn;
	}
	double total = 0.0, total_nll = 0.0;
	for (uint32_t blk = 0; blk < nb; blk++) {
		total += part[2 * blk];
		total_nll += part[2 * blk + 1];
	}
	free(part);
	if (loss)
		*loss = cnt ? total / (double)cnt : 0.0;
	if (nll)
		*nll = cnt ? total_nll / (double)cnt : 0.0;
	if (count)
		*count = cnt;
	return 0;
}
