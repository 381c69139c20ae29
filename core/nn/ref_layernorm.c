/* SPDX-License-Identifier: Apache-2.0 */
/* Reference layer normalization in double: the statistics by two passes,
 * and the backward pass through the explicit Jacobian of each row,
 *   d xhat_j / d x_k = rstd (delta_jk - 1/D - xhat_j xhat_k / D),
 * a different route from the CPU kernel's closed form. */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include "ref.h"

static void stats(uint32_t D, double eps, const double *x, double *m, double *r)
{
	double s = 0.0, v = 0.0;
	for (uint32_t j = 0; j < D; j++)
		s += x[j];
	*m = s / D;
	for (uint32_t j = 0; j < D; j++)
		v += (x[j] - *m) * (x[j] - *m);
	*r = 1.0 / sqrt(v / D + eps);
}

void nn_ref_layernorm_forward(uint32_t N, uint32_t D, double eps, const double *x,
			      const double *gain, const double *bias, double *y, double *mean,
			      double *rstd)
{
	for (uint32_t i = 0; i < N; i++) {
		const double *xr = x + (uint64_t)i * D;
		double m, r;
		stats(D, eps, xr, &m, &r);
		if (mean)
			mean[i] = m;
		if (rstd)
			rstd[i] = r;
		for (uint32_t j = 0; j < D; j++)
			y[(uint64_t)i * D + j] =
			    (xr[j] - m) * r * (gain ? gain[j] : 1.0) + (bias ? bias[j] : 0.0);
	}
}

void nn_ref_layernorm_backward(uint32_t N, uint32_t D, double eps, const double *x,
			       const double *gain, const double *dy, double *dx, double *dgain,
			       double *dbias)
{
	for (uint32_t i = 0; i < N; i++) {
		const double *xr = x + (uint64_t)i * D, *dr = dy + (uint64_t)i * D;
		double m, r;
		stats(D, eps, xr, &m, &r);
		for (uint32_t j = 0; j < D; j++) {
			double xh = (xr[j] - m) * r;
			if (dgain)
				dgain[j] += dr[j] * xh;
			if (dbias)
				dbias[j] += dr[j];
		}
		for (uint32_t kk = 0; dx && kk < D; kk++) {
			double s = 0.0, xk = (xr[kk] - m) * r;
			for (uint32_t j = 0; j < D; j++) {
				double xj = (xr[j] - m) * r;
				double jac = r * ((j == kk) - 1.0 / D - xj * xk / D);
				s += dr[j] * (gain ? gain[j] : 1.0) * jac;
			}
			dx[(uint64_t)i * D + kk] = s;
		}
	}
}
