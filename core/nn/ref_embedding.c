/* SPDX-License-Identifier: Apache-2.0 */
/* Reference embedding lookup and its scatter-add gradient. */
#include "config.h"
#include "ref.h"

void nn_ref_embedding_forward(uint32_t N, uint32_t D, const int32_t *ids, const double *w,
			      double *out)
{
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t j = 0; j < D; j++)
			out[(uint64_t)i * D + j] = w[(uint64_t)ids[i] * D + j];
}

void nn_ref_embedding_backward(uint32_t N, uint32_t D, const int32_t *ids, const double *dout,
			       double *dw)
{
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t j = 0; j < D; j++)
			dw[(uint64_t)ids[i] * D + j] += dout[(uint64_t)i * D + j];
}
