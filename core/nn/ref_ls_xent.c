/* SPDX-License-Identifier: Apache-2.0 */
/* Reference label-smoothed cross-entropy from its definition (Szegedy et
 * al. 2016, sec. 7): the cross-entropy -sum_j q_j log p_j between the
 * smoothed target q = (1 - eps) onehot(t) + eps / V and the softmax p. */
#include "config.h"
#include <math.h>
#include "ref.h"

double nn_ref_label_smoothed_xent(uint32_t N, uint32_t V, double eps, const double *logits,
				  const int32_t *targets, double *nll, uint64_t *count,
				  double *dlogits)
{
	uint64_t cnt = 0;
	for (uint32_t i = 0; i < N; i++)
		cnt += targets[i] >= 0;
	double total = 0.0, tnll = 0.0;
	for (uint32_t i = 0; i < N; i++) {
		const double *l = logits + (uint64_t)i * V;
		double *dl = dlogits ? dlogits + (uint64_t)i * V : NULL;
		const int32_t t = targets[i];
		if (t < 0) {
			for (uint32_t j = 0; dl && j < V; j++)
				dl[j] = 0.0;
			continue;
		}
		double m = l[0], s = 0.0;
		for (uint32_t j = 1; j < V; j++)
			m = fmax(m, l[j]);
		for (uint32_t j = 0; j < V; j++)
			s += exp(l[j] - m);
		const double lz = m + log(s);
		for (uint32_t j = 0; j < V; j++) {
			double q = ((uint32_t)t == j ? 1.0 - eps : 0.0) + eps / V;
			double logp = l[j] - lz;
			total -= q * logp;
			if (dl)
				dl[j] = (exp(logp) - q) / (double)cnt;
		}
		tnll += lz - l[t];
	}
	if (count)
		*count = cnt;
	if (nll)
		*nll = cnt ? tnll / (double)cnt : 0.0;
	return cnt ? total / (double)cnt : 0.0;
}
