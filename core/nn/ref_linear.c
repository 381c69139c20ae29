/* SPDX-License-Identifier: Apache-2.0 */
/* Reference fully connected layer y = x w^T + b, element by element. */
#include "config.h"
#include "ref.h"

void nn_ref_linear_forward(uint32_t N, uint32_t in, uint32_t out, const double *x, const double *w,
			   const double *b, double *y)
{
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t o = 0; o < out; o++) {
			double s = b ? b[o] : 0.0;
			for (uint32_t k = 0; k < in; k++)
				s += x[(uint64_t)i * in + k] * w[(uint64_t)o * in + k];
			y[(uint64_t)i * out + o] = s;
		}
}

void nn_ref_linear_backward(uint32_t N, uint32_t in, uint32_t out, const double *x, const double *w,
			    const double *dy, double *dx, double *dw, double *db)
{
	for (uint32_t i = 0; i < N; i++) {
		for (uint32_t k = 0; dx && k < in; k++) {
			double s = 0.0;
			for (uint32_t o = 0; o < out; o++)
				s += dy[(uint64_t)i * out + o] * w[(uint64_t)o * in + k];
			dx[(uint64_t)i * in + k] = s;
		}
		for (uint32_t o = 0; o < out; o++) {
			double g = dy[(uint64_t)i * out + o];
			if (db)
				db[o] += g;
			for (uint32_t k = 0; dw && k < in; k++)
				dw[(uint64_t)o * in + k] += g * x[(uint64_t)i * in + k];
		}
	}
}
