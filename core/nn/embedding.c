/* SPDX-License-Identifier: Apache-2.0 */
/* Embedding lookup on the CPU backend: forward copies rows of the table,
 * backward scatter-adds gradient rows into it. The backward splits the
 * columns between threads, so that no two threads touch one float and each
 * float's sum runs in token order: no atomics, and the same bits for any
 * thread count. */
#include "config.h"
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"

static int ids_check(const char *op, uint32_t N, uint32_t V, const int32_t *ids)
{
	if (N && !ids)
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL ids", op);
	for (uint32_t i = 0; i < N; i++)
		if (ids[i] < 0 || (uint32_t)ids[i] >= V)
			return fedrun_error(FEDRUN_EINVAL, "%s: ids[%u] = %d outside [0, %u)", op,
					    i, ids[i], V);
	return 0;
}

int nn_cpu_embedding_forward(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
			     const float *w, float *out)
{
	int rc = ids_check("embedding_forward", N, V, ids);
	if (rc)
		return rc;
	if (!N || !D)
		return 0;
	if (!w || !out)
		return fedrun_error(FEDRUN_EINVAL, "embedding_forward: NULL array");
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)N * D >= NN_PAR_MIN)
	for (uint32_t i = 0; i < N; i++)
		memcpy(out + (uint64_t)i * D, w + (uint64_t)ids[i] * D, D * sizeof *out);
	return 0;
}

int nn_cpu_embedding_backward(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
			      const float *dout, float *dw)
{
	int rc = ids_check("embedding_backward", N, V, ids);
	if (rc)
		return rc;
	if (!N || !D)
		return 0;
	if (!dout || !dw)
		return fedrun_error(FEDRUN_EINVAL, "embedding_backward: NULL array");
	int nt = nn_cpu_threads(ctx);
	if ((uint64_t)N * D < NN_PAR_MIN)
		nt = 1;
	/* Column chunks: a multiple of 16 floats (one cache line). */
	uint32_t chunk = (D + (uint32_t)nt - 1) / (uint32_t)nt;
	chunk = (chunk + 15) / 16 * 16;
	uint32_t nchunks = (D + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
	for (uint32_t c = 0; c < nchunks; c++) {
		uint32_t c0 = c * chunk, len = D - c0 < chunk ? D - c0 : chunk;
		for (uint32_t i = 0; i < N; i++) {
			const float *src = dout + (uint64_t)i * D + c0; /* (N,D) */
			float *dst = dw + (uint64_t)ids[i] * D + c0;	/* (V,D) */
#pragma omp simd
			for (uint32_t j = 0; j < len; j++)
				dst[j] += src[j];
		}
	}
	return 0;
}
