/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend's multi-head attention (Vaswani et al. 2017, sec. 3.2,
 * eq. 1): the score and value products are one cuBLAS batched GEMM each
 * over all B H (sequence, head) pairs, whose matrix pointers a kernel
 * computes (a head's rows are a fixed stride apart within a sequence and
 * another between sequences, fedrun/backend.h), and the masked
 * softmax, its dropout and its backward are one warp per row of scores.
 * The cache holds P (B,H,Tq,Tk) and, with dropout, its mask of bytes, as
 * the table specifies. */
#include <math.h>
#include "internal.cuh"

extern "C" uint64_t cu_attn_cache_floats(void *ctx, const struct fedrun_attn_dims *d)
{
	if (!d)
		return 0;
	uint64_t n = (uint64_t)d->batch * d->heads * d->tq * d->tk;
	return n + (d->dropout > 0.0f ? (n + 3) / 4 : 0);
}

/* Keys visible to query i of sequence b: [0, len). A key_len outside
 * [0, Tk] sets *bad (the caller reports it). */
__device__ __forceinline__ uint32_t visible(const int32_t *key_len, uint32_t b, uint32_t i,
					    uint32_t Tq, uint32_t Tk, bool causal, int *bad)
{
	uint32_t len = Tk;
	if (key_len) {
		int32_t kl = key_len[b];
		if (kl < 0 || (uint32_t)kl > Tk) {
			atomicCAS(bad, -1, (int)b);
			kl = kl < 0 ? 0 : (int32_t)Tk;
		}
		len = (uint32_t)kl;
	}
	if (causal) {
		uint32_t lim = i + Tk - Tq + 1; /* j <= i + Tk - Tq */
		if (Tk < Tq && i + 1 <= Tq - Tk)
			lim = 0;
		len = lim < len ? lim : len;
	}
	return len;
}

/* One warp per row (b, h, i) of the scores S, in place: P = softmax over
 * the visible keys, 0 elsewhere (all 0 when none is visible); with
 * dropout, the row's mask (element e = row Tk + j of the B H Tq Tk, drawn
 * as dropout_forward would) and pd = P mask / (1 - p). */
__global__ void attn_softmax(uint64_t rows, uint32_t H, uint32_t Tq, uint32_t Tk, bool causal,
			     const int32_t *key_len, float *P, struct cu_drop dr, float p,
			     uint8_t *mask, float *pd, int *bad)
{
	const uint64_t row = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	const uint32_t lane = threadIdx.x & 31;
	if (row >= rows)
		return;
	const uint32_t i = (uint32_t)(row % Tq), b = (uint32_t)(row / Tq / H);
	const uint32_t len = visible(key_len, b, i, Tq, Tk, causal, bad);
	float *s = P + row * Tk;
	float m = -INFINITY;
	for (uint32_t j = lane; j < len; j += 32)
		m = fmaxf(m, s[j]);
	for (int o = 16; o > 0; o >>= 1)
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
	float z = 0.0f;
	for (uint32_t j = lane; j < len; j += 32)
		z += expf(s[j] - m);
	for (int o = 16; o > 0; o >>= 1)
		z += __shfl_xor_sync(0xffffffffu, z, o);
	const float inv = len ? 1.0f / z : 0.0f;
	const float ks = mask ? 1.0f / (1.0f - p) : 1.0f;
	for (uint32_t j = lane; j < Tk; j += 32) {
		float pj = j < len ? expf(s[j] - m) * inv : 0.0f;
		s[j] = pj;
		if (mask) {
			uint64_t e = row * Tk + j;
			uint8_t keep = cu_keep(dr, e);
			mask[e] = keep;
			pd[e] = keep ? pj * ks : 0.0f;
		}
	}
}

/* pd = P mask / (1 - p) (backward's copy of the dropped-out weights) */
__global__ void attn_redrop(uint64_t n, float ks, const float *P, const uint8_t *mask, float *pd)
{
	const uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (e < n)
		pd[e] = mask[e] ? P[e] * ks : 0.0f;
}

/* In place over dP (the gradient of the dropped-out weights): dP = dP
 * mask / (1 - p), then dS = P (dP - sum_j dP_j P_j), the softmax's
 * Jacobian; hidden keys have P = 0 and so dS = 0. One warp per row. */
__global__ void attn_softmax_bwd(uint64_t rows, uint32_t Tk, const float *P, const uint8_t *mask,
				 float ks, float *dP)
{
	const uint64_t row = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	const uint32_t lane = threadIdx.x & 31;
	if (row >= rows)
		return;
	const float *pr = P + row * Tk;
	float *dr = dP + row * Tk;
	const uint8_t *mr = mask ? mask + row * Tk : NULL;
	float dot = 0.0f;
	for (uint32_t j = lane; j < Tk; j += 32) {
		float g = mr ? (mr[j] ? dr[j] * ks : 0.0f) : dr[j];
		dr[j] = g;
		dot += g * pr[j];
	}
	for (int o = 16; o > 0; o >>= 1)
		dot += __shfl_xor_sync(0xffffffffu, dot, o);
	for (uint32_t j = lane; j < Tk; j += 32)
		dr[j] = pr[j] * (dr[j] - dot);
}

extern "C" int cu_attn_forward(void *ctx, const struct fedrun_attn_dims *d, const float *q,
			       const float *k, const float *v, const int32_t *key_len,
			       struct fedrun_rng *rng, float *out, float *cache)
{
	const char *op = "attn_forward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	struct fedrun_attn_geometry g;
	int rc = fedrun_attn_resolve(op, d, q, k, v, cache, &g);
	if (rc < 0)
		return rc;
	if (!out)
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL out", op);
	if (g.p > 0.0f && !rng)
		return fedrun_error(FEDRUN_EINVAL, "%s: dropout %g needs an rng", op, (double)g.p);
	const uint64_t TT = (uint64_t)g.Tq * g.Tk, n = (uint64_t)g.B * g.H * TT;
	const bool drop = g.p > 0.0f;
	char *s = (char *)cu_scratch(c, 256 + (drop ? n * sizeof(float) : 0), op);
	if (!s)
		return FEDRUN_ENOMEM;
	int *flag = (int *)s;
	float *pd = drop ? (float *)(s + 256) : cache;
	uint8_t *mask = drop ? (uint8_t *)(cache + n) : NULL;
	CU_TRY(op, cudaMemsetAsync(flag, 0xff, sizeof(int), c->stream));
	/* S = scale Q K^T for every (sequence, head), into the cache */
	rc = cu_gemm_heads(c, op, false, true, (int)g.Tq, (int)g.Tk, (int)g.dh, g.scale, q,
			   (int)g.ldq, (int64_t)g.Tq * g.ldq, g.dh, k, (int)g.ldk,
			   (int64_t)g.Tk * g.ldk, g.dh, 0.0f, cache, (int)g.Tk, (int64_t)g.H * TT,
			   (int64_t)TT, (int)g.B, (int)g.H);
	if (rc < 0)
		return rc;
	struct cu_drop dr = {};
	if (drop)
		dr = cu_drop_take(rng, n, g.p);
	const uint64_t rows = (uint64_t)g.B * g.H * g.Tq;
	attn_softmax<<<cu_blocks(rows * 32, 256), 256, 0, c->stream>>>(
	    rows, g.H, g.Tq, g.Tk, g.causal, key_len, cache, dr, g.p, mask, pd, flag);
	CU_LAUNCHED(op);
	/* out = drop(P) V, head h into columns [h dh, (h+1) dh) */
	rc = cu_gemm_heads(c, op, false, false, (int)g.Tq, (int)g.dh, (int)g.Tk, 1.0f, pd,
			   (int)g.Tk, (int64_t)g.H * TT, (int64_t)TT, v, (int)g.ldv,
			   (int64_t)g.Tk * g.ldv, g.dh, 0.0f, out, (int)g.D, (int64_t)g.Tq * g.D, g.dh,
			   (int)g.B, (int)g.H);
	if (rc < 0)
		return rc;
	if (!key_len)
		return 0;
	int bad;
	if ((rc = cu_read_flag(c, op, flag, &bad)) == 0 && bad >= 0)
		rc = fedrun_error(FEDRUN_EINVAL, "%s: key_len[%d] outside [0, %u]", op, bad, g.Tk);
	return rc;
}

extern "C" int cu_attn_backward(void *ctx, const struct fedrun_attn_dims *d, const float *q,
				const float *k, const float *v, const int32_t *key_len,
				const float *cache, const float *dout, float *dq, float *dk,
				float *dv)
{
	const char *op = "attn_backward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	struct fedrun_attn_geometry g;
	int rc = fedrun_attn_resolve(op, d, q, k, v, cache, &g);
	if (rc < 0)
		return rc;
	if (!dout)
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL dout", op);
	if (!dq && !dk && !dv)
		return 0;
	const uint64_t TT = (uint64_t)g.Tq * g.Tk, n = (uint64_t)g.B * g.H * TT;
	const bool drop = g.p > 0.0f;
	const float ks = drop ? 1.0f / (1.0f - g.p) : 1.0f;
	const uint8_t *mask = drop ? (const uint8_t *)(cache + n) : NULL;
	char *s = (char *)cu_scratch(c, (drop ? 2 : 1) * n * sizeof(float), op);
	if (!s)
		return FEDRUN_ENOMEM;
	float *dP = (float *)s;
	const float *pd = cache;
	if (drop) {
		float *w = (float *)s + n;
		attn_redrop<<<cu_blocks(n, 256), 256, 0, c->stream>>>(n, ks, cache, mask, w);
		CU_LAUNCHED(op);
		pd = w;
	}
	/* dV = drop(P)^T dout */
	if (dv && (rc = cu_gemm_heads(c, op, true, false, (int)g.Tk, (int)g.dh, (int)g.Tq, 1.0f, pd,
				      (int)g.Tk, (int64_t)g.H * TT, (int64_t)TT, dout, (int)g.D,
				      (int64_t)g.Tq * g.D, g.dh, 0.0f, dv, (int)g.ldv,
				      (int64_t)g.Tk * g.ldv, g.dh, (int)g.B, (int)g.H)) < 0)
		return rc;
	if (!dq && !dk)
		return 0;
	/* d drop(P) = dout V^T */
	rc = cu_gemm_heads(c, op, false, true, (int)g.Tq, (int)g.Tk, (int)g.dh, 1.0f, dout,
			   (int)g.D, (int64_t)g.Tq * g.D, g.dh, v, (int)g.ldv, (int64_t)g.Tk * g.ldv,
			   g.dh, 0.0f, dP, (int)g.Tk, (int64_t)g.H * TT, (int64_t)TT, (int)g.B,
			   (int)g.H);
	if (rc < 0)
		return rc;
	const uint64_t rows = (uint64_t)g.B * g.H * g.Tq;
	attn_softmax_bwd<<<cu_blocks(rows * 32, 256), 256, 0, c->stream>>>(rows, g.Tk, cache,
									    mask, ks, dP);
	CU_LAUNCHED(op);
	/* dQ = scale dS K, dK = scale dS^T Q */
	if (dq && (rc = cu_gemm_heads(c, op, false, false, (int)g.Tq, (int)g.dh, (int)g.Tk, g.scale,
				      dP, (int)g.Tk, (int64_t)g.H * TT, (int64_t)TT, k, (int)g.ldk,
				      (int64_t)g.Tk * g.ldk, g.dh, 0.0f, dq, (int)g.ldq,
				      (int64_t)g.Tq * g.ldq, g.dh, (int)g.B, (int)g.H)) < 0)
		return rc;
	if (dk && (rc = cu_gemm_heads(c, op, true, false, (int)g.Tk, (int)g.dh, (int)g.Tq, g.scale,
				      dP, (int)g.Tk, (int64_t)g.H * TT, (int64_t)TT, q, (int)g.ldq,
				      (int64_t)g.Tq * g.ldq, g.dh, 0.0f, dk, (int)g.ldk,
				      (int64_t)g.Tk * g.ldk, g.dh, (int)g.B, (int)g.H)) < 0)
		return rc;
	return 0;
}
