/* SPDX-License-Identifier: Apache-2.0 */
/* Reference softmax cross-entropy, with the log-sum-exp shifted by the row
 * maximum, in double. */
#include "config.h"
#include <math.h>
#include "ref.h"

double nn_ref_softmax_xent(uint32_t N, uint32_t V, const double *logits, const int32_t *targets,
			   uint64_t *count, double *dlogits)
{
	uint64_t cnt = 0;
	for (uint32_t i = 0; i < N; i++)
		cnt += targets[i] >= 0;
	double total = 0.0;
	for (uint32_t i = 0; i < N; i++) {
		const double *l = logits + (uint64_t)i * V;
		double *dl = dlogits ? dlogits + (uint64_t)i * V : NULL;
		if (targets[i] < 0) {
			for (uint32_t j = 0; dl && j < V; j++)
				dl[j] = 0.0;
			continue;
		}
		double m = l[0], s = 0.0;
		for (uint32_t j = 1; j < V; j++)
			m = fmax(m, l[j]);
		for (uint32_t j = 0; j < V; j++)
			s += exp(l[j] - m);
		total += log(s) + m - l[targets[i]];
		for (uint32_t j = 0; dl && j < V; j++)
			dl[j] = (exp(l[j] - m) / s - (j == (uint32_t)targets[i])) / (double)cnt;
	}
	if (count)
		*count = cnt;
	return cnt ? total / (double)cnt : 0.0;
}

double nn_ref_softmax_xent_db(uint32_t N, uint32_t V, const double *logits, const int32_t *targets,
			      double scale, uint64_t *count, double *dlogits, double *db)
{
	double loss = nn_ref_softmax_xent(N, V, logits, targets, count, dlogits);
	for (uint64_t i = 0; i < (uint64_t)N * V; i++)
		dlogits[i] *= scale;
	for (uint32_t i = 0; db && i < N; i++)
		for (uint32_t j = 0; j < V; j++)
			db[j] += dlogits[(uint64_t)i * V + j];
	return loss;
}
