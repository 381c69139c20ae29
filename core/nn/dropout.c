/* Inverted dropout on the CPU backend. The mask comes from the caller's
 * counter-based stream as FEDRUN_DROPOUT (fedrun/backend.h) specifies: each
 * block of four elements takes its own Philox block, so threads draw in any
 * order and still produce the mask a sequential draw would. */
#include "config.h"
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"

/* Elements per unit of parallel work: a multiple of 4 (one Philox block). */
#define DROP_CHUNK 4096

int nn_cpu_dropout_forward(void *ctx, uint64_t n, float p, struct fedrun_rng *rng,
			   const float *x, float *y, uint8_t *mask)
{
	if (!(p >= 0.0f && p < 1.0f))
		return fedrun_error(FEDRUN_EINVAL, "dropout_forward: p = %g outside [0, 1)",
				    (double)p);
	if (n && (!rng || !x || !y || !mask))
		return fedrun_error(FEDRUN_EINVAL, "dropout_forward: NULL argument");
	if (!n)
		return 0;
	const uint32_t thr = FEDRUN_DROPOUT_THRESHOLD(p);
	const float scale = 1.0f / (1.0f - p);
	const uint64_t c0 = (uint64_t)rng->ctr[0] | (uint64_t)rng->ctr[1] << 32;
	const uint64_t nchunks = (n + DROP_CHUNK - 1) / DROP_CHUNK;
	const struct fedrun_rng *r = rng;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if (n >= NN_PAR_MIN)
	for (uint64_t ch = 0; ch < nchunks; ch++) {
		uint64_t i0 = ch * DROP_CHUNK, i1 = n - i0 < DROP_CHUNK ? n : i0 + DROP_CHUNK;
		for (uint64_t i = i0; i < i1; i += 4) {
			uint64_t blk = c0 + i / 4;
			uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), r->ctr[2], r->ctr[3]};
			uint32_t u[4];
			fedrun_philox4x32(r->key, ctr, u);
			for (uint64_t k = 0; k < 4 && i + k < i1; k++) {
				uint8_t keep = u[k] >= thr;
				mask[i + k] = keep;
				y[i + k] = keep ? x[i + k] * scale : 0.0f;
			}
		}
	}
	uint64_t c1 = c0 + (n + 3) / 4;
	rng->ctr[0] = (uint32_t)c1;
	rng->ctr[1] = (uint32_t)(c1 >> 32);
	rng->pos = 4;
	return 0;
}

int nn_cpu_dropout_backward(void *ctx, uint64_t n, float p, const uint8_t *mask, const float *dy,
			    float *dx)
{
	if (!(p >= 0.0f && p < 1.0f))
		return fedrun_error(FEDRUN_EINVAL, "dropout_backward: p = %g outside [0, 1)",
				    (double)p);
	if (n && (!mask || !dy || !dx))
		return fedrun_error(FEDRUN_EINVAL, "dropout_backward: NULL argument");
	const float scale = 1.0f / (1.0f - p);
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for simd schedule(static) num_threads(nt) if (n >= NN_PAR_MIN)
	for (uint64_t i = 0; i < n; i++)
		dx[i] = mask[i] ? dy[i] * scale : 0.0f;
	return 0;
}
