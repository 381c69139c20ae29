/* SPDX-License-Identifier: Apache-2.0 */
/* Inverted dropout on the CPU backend. The mask comes from the caller's
 * counter-based stream as FEDRUN_DROPOUT (fedrun/backend.h) specifies: each
 * block of four elements takes its own Philox block, so threads draw in any
 * order and still produce the mask a sequential draw would. Philox runs here
 * on many counters at once in vector lanes, which is what makes dropout
 * cheap next to the layers around it. */
#include "config.h"
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"
#include "fastmath.h"

/* Philox blocks per batch, and elements per batch (4 words per block). */
#define DROP_BLOCKS 256
#define DROP_CHUNK (4 * DROP_BLOCKS)

/* Words of Philox4x32-10 (Salmon et al. 2011; as fedrun_philox4x32) for
 * the counters (base + b, c2, c3), b in [0, DROP_BLOCKS): out[4b + k] is word
 * k of block base + b, the 64-bit block index split over the first two
 * counter words as fedrun_rng does. */
NN_SIMD_CLONES
static void philox_blocks(const uint32_t key[2], uint64_t base, uint32_t c2, uint32_t c3,
			  uint32_t *restrict out)
{
	const uint32_t key0 = key[0], key1 = key[1];
#pragma omp simd
	for (uint32_t b = 0; b < DROP_BLOCKS; b++) {
		uint64_t blk = base + b;
		uint32_t x0 = (uint32_t)blk, x1 = (uint32_t)(blk >> 32), x2 = c2, x3 = c3;
		uint32_t k0 = key0, k1 = key1;
		for (int round = 0; round < 10; round++) {
			uint64_t p0 = (uint64_t)UINT32_C(0xD2511F53) * x0;
			uint64_t p1 = (uint64_t)UINT32_C(0xCD9E8D57) * x2;
			x0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0;
			x1 = (uint32_t)p1;
			x2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
			x3 = (uint32_t)p0;
			k0 += UINT32_C(0x9E3779B9);
			k1 += UINT32_C(0xBB67AE85);
		}
		out[4 * b] = x0;
		out[4 * b + 1] = x1;
		out[4 * b + 2] = x2;
		out[4 * b + 3] = x3;
	}
}

NN_SIMD_CLONES
static void drop_apply(uint32_t len, const uint32_t *restrict u, uint32_t thr, float scale,
		       const float *x, float *y, uint8_t *restrict mask)
{
	/* x and y may be the same array: each element is read, then written. */
#pragma omp simd
	for (uint32_t i = 0; i < len; i++) {
		uint8_t keep = u[i] >= thr;
		mask[i] = keep;
		y[i] = keep ? x[i] * scale : 0.0f;
	}
}

int nn_cpu_dropout_forward(void *ctx, uint64_t n, float p, struct fedrun_rng *rng, const float *x,
			   float *y, uint8_t *mask)
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
		uint32_t u[DROP_CHUNK];
		uint64_t i0 = ch * DROP_CHUNK;
		uint32_t len = n - i0 < DROP_CHUNK ? (uint32_t)(n - i0) : DROP_CHUNK;
		philox_blocks(r->key, c0 + i0 / 4, r->ctr[2], r->ctr[3], u);
		drop_apply(len, u, thr, scale, x + i0, y + i0, mask + i0);
	}
	uint64_t c1 = c0 + (n + 3) / 4;
	rng->ctr[0] = (uint32_t)c1;
	rng->ctr[1] = (uint32_t)(c1 >> 32);
	rng->pos = 4;
	return 0;
}

NN_SIMD_CLONES
static void mask_apply(uint32_t len, const uint32_t *restrict u, uint32_t thr,
		       uint8_t *restrict mask)
{
#pragma omp simd
	for (uint32_t i = 0; i < len; i++)
		mask[i] = u[i] >= thr;
}

/* The mask part of nn_cpu_dropout_forward alone: the same words, the same
 * stream position afterwards. */
int nn_cpu_dropout_mask(void *ctx, uint64_t n, float p, struct fedrun_rng *rng, uint8_t *mask)
{
	if (!(p >= 0.0f && p < 1.0f))
		return fedrun_error(FEDRUN_EINVAL, "dropout mask: p = %g outside [0, 1)",
				    (double)p);
	if (n && (!rng || !mask))
		return fedrun_error(FEDRUN_EINVAL, "dropout mask: NULL argument");
	if (!n)
		return 0;
	const uint32_t thr = FEDRUN_DROPOUT_THRESHOLD(p);
	const uint64_t c0 = (uint64_t)rng->ctr[0] | (uint64_t)rng->ctr[1] << 32;
	const uint64_t nchunks = (n + DROP_CHUNK - 1) / DROP_CHUNK;
	const struct fedrun_rng *r = rng;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if (n >= NN_PAR_MIN)
	for (uint64_t ch = 0; ch < nchunks; ch++) {
		uint32_t u[DROP_CHUNK];
		uint64_t i0 = ch * DROP_CHUNK;
		uint32_t len = n - i0 < DROP_CHUNK ? (uint32_t)(n - i0) : DROP_CHUNK;
		philox_blocks(r->key, c0 + i0 / 4, r->ctr[2], r->ctr[3], u);
		mask_apply(len, u, thr, mask + i0);
	}
	uint64_t c1 = c0 + (n + 3) / 4;
	rng->ctr[0] = (uint32_t)c1;
	rng->ctr[1] = (uint32_t)(c1 >> 32);
	rng->pos = 4;
	return 0;
}

/* dx = mask ? dy scale : 0 over one chunk, the product taken for every
 * element and then selected, so that the loop vectorizes (a multiply
 * under the condition kept it scalar and branching on a random mask);
 * the same values. dx may be dy. */
NN_SIMD_CLONES
static void undrop(uint32_t len, const uint8_t *restrict mask, float scale, const float *dy,
		   float *dx)
{
#pragma omp simd
	for (uint32_t i = 0; i < len; i++) {
		float v = dy[i] * scale;
		dx[i] = mask[i] ? v : 0.0f;
	}
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
	const uint64_t nchunks = (n + DROP_CHUNK - 1) / DROP_CHUNK;
#pragma omp parallel for schedule(static) num_threads(nt) if (n >= NN_PAR_MIN)
	for (uint64_t ch = 0; ch < nchunks; ch++) {
		uint64_t i0 = ch * DROP_CHUNK;
		uint32_t len = n - i0 < DROP_CHUNK ? (uint32_t)(n - i0) : DROP_CHUNK;
		undrop(len, mask + i0, scale, dy + i0, dx + i0);
	}
	return 0;
}
