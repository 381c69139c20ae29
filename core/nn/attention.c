/* SPDX-License-Identifier: Apache-2.0 */
/* Scaled dot-product attention on the CPU backend (Vaswani et al. 2017,
 * eq. 1), over the heads of a (B,T,H,dh) layout, with key padding and
 * causal masks and dropout on the weights. Both masks hide a suffix of each
 * query's keys (padding is at the end, causality hides the future), so a
 * query sees exactly the keys [0, lim): the products run over the first
 * key_len[b] keys only, and the softmax is one fused pass per row (max,
 * exp and sum, scale by the inverse, zeros past lim) with the score scale
 * folded into the sgemm's alpha. Every product is a cblas_sgemm. */
#include "config.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"
#include "fastmath.h"
#include "lanes.h"

uint64_t nn_cpu_attn_cache_floats(void *ctx, const struct fedrun_attn_dims *d)
{
	if (!d)
		return 0;
	uint64_t n = (uint64_t)d->batch * d->heads * d->tq * d->tk;
	return n + (d->dropout > 0.0f ? (n + 3) / 4 : 0);
}

int fedrun_attn_resolve(const char *op, const struct fedrun_attn_dims *d, const void *q,
			const void *k, const void *v, const void *cache,
			struct fedrun_attn_geometry *g)
{
	if (!d || !g)
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL dims", op);
	if (!d->batch || !d->heads || !d->tq || !d->tk || !d->dh)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: zero dimension (B=%u, H=%u, Tq=%u, Tk=%u, dh=%u)", op,
				    d->batch, d->heads, d->tq, d->tk, d->dh);
	uint64_t D = (uint64_t)d->heads * d->dh;
	if (D > INT_MAX || d->tq > INT_MAX || d->tk > INT_MAX ||
	    (uint64_t)d->heads * d->tq * d->tk > INT_MAX)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: dimensions beyond INT_MAX (H=%u, Tq=%u, Tk=%u, dh=%u)", op,
				    d->heads, d->tq, d->tk, d->dh);
	g->B = d->batch, g->H = d->heads, g->Tq = d->tq, g->Tk = d->tk, g->dh = d->dh;
	g->D = (uint32_t)D;
	g->ldq = d->ldq ? d->ldq : g->D;
	g->ldk = d->ldk ? d->ldk : g->D;
	g->ldv = d->ldv ? d->ldv : g->D;
	if (g->ldq < g->D || g->ldk < g->D || g->ldv < g->D || g->ldq > INT_MAX ||
	    g->ldk > INT_MAX || g->ldv > INT_MAX)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: row strides ldq=%u, ldk=%u, ldv=%u must be in [D=%u, "
				    "INT_MAX]",
				    op, g->ldq, g->ldk, g->ldv, g->D);
	if (!isfinite(d->scale))
		return fedrun_error(FEDRUN_EINVAL, "%s: scale = %g", op, (double)d->scale);
	g->scale = d->scale != 0.0f ? d->scale : (float)(1.0 / sqrt((double)d->dh));
	if (!(d->dropout >= 0.0f && d->dropout < 1.0f))
		return fedrun_error(FEDRUN_EINVAL, "%s: dropout = %g outside [0, 1)", op,
				    (double)d->dropout);
	g->p = d->dropout;
	g->causal = d->causal != 0;
	if (!q || !k || !v || !cache)
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL q, k, v or cache", op);
	return 0;
}

/* The call's geometry, and on the CPU (where device memory is host
 * memory) its key lengths checked too. */
static int attn_setup(const char *op, const struct fedrun_attn_dims *d, const int32_t *key_len,
		      const float *q, const float *k, const float *v, const float *cache,
		      struct fedrun_attn_geometry *g)
{
	int rc = fedrun_attn_resolve(op, d, q, k, v, cache, g);
	if (rc < 0)
		return rc;
	for (uint32_t b = 0; key_len && b < g->B; b++)
		if (key_len[b] < 0 || (uint32_t)key_len[b] > g->Tk)
			return fedrun_error(FEDRUN_EINVAL, "%s: key_len[%u] = %d outside [0, %u]",
					    op, b, key_len[b], g->Tk);
	return 0;
}

static uint32_t attn_len(const struct fedrun_attn_geometry *g, const int32_t *key_len, uint32_t b)
{
	return key_len ? (uint32_t)key_len[b] : g->Tk;
}

/* Keys [0, lim) are visible to query i of a sequence with len keys. */
static uint32_t attn_lim(const struct fedrun_attn_geometry *g, uint32_t len, uint32_t i)
{
	if (!g->causal)
		return len;
	int64_t c = (int64_t)i + g->Tk - g->Tq + 1; /* keys j <= i + Tk - Tq */
	if (c <= 0)
		return 0;
	return (uint64_t)c < len ? (uint32_t)c : len;
}

/* One row of scores (already scaled) becomes probabilities: softmax over
 * [0, lim), exactly zero from lim to Tk (including the columns the sgemm
 * did not write). A row with no visible key is all zeros. */
NN_SIMD_CLONES
static void attn_softmax_row(uint32_t lim, uint32_t Tk, float *s)
{
	if (lim) {
		const float m = nn_lanes_max(lim, s);
		const uint32_t nm = lim - lim % NN_LANES;
		float lane[NN_LANES] = {0};
		for (uint32_t j0 = 0; j0 < nm; j0 += NN_LANES) {
#pragma omp simd
			for (uint32_t q = 0; q < NN_LANES; q++) {
				float e = nn_expf(s[j0 + q] - m);
				s[j0 + q] = e;
				lane[q] += e;
			}
		}
		float t = 0.0f;
		for (uint32_t j = nm; j < lim; j++) {
			s[j] = nn_expf(s[j] - m);
			t += s[j];
		}
		/* the maximum contributes e^0 = 1, so the sum is >= 1 */
		const float inv = 1.0f / nn_lanes_fold(lane, t);
#pragma omp simd
		for (uint32_t j = 0; j < lim; j++)
			s[j] *= inv;
	}
	memset(s + lim, 0, (size_t)(Tk - lim) * sizeof *s);
}

/* w[0..len) = p[0..len) * mask / (1 - p): the dropped-out weights that
 * multiply V. */
NN_SIMD_CLONES
static void attn_drop_row(uint32_t len, const float *restrict p, const uint8_t *restrict mask,
			  float ks, float *restrict w)
{
#pragma omp simd
	for (uint32_t j = 0; j < len; j++)
		w[j] = mask[j] ? p[j] * ks : 0.0f;
}

/* Gradient through softmax (and dropout) of one row. On entry w[0..len)
 * holds dL/dP' (P' = the weights after dropout); on return w[0..lim) holds
 * dL/dS / scale = P (dP - sum_j dP_j P_j) with dP = dP' mask / (1 - p), the
 * softmax Jacobian, and w[lim..len) zeros. sum_j dP_j P_j equals
 * sum_j dP'_j P'_j, so no second pass over P' is needed. */
NN_SIMD_CLONES
static void attn_grad_row(uint32_t lim, uint32_t len, const float *restrict p,
			  const uint8_t *restrict mask, float ks, float *restrict w)
{
	if (mask) {
#pragma omp simd
		for (uint32_t j = 0; j < lim; j++)
			w[j] = mask[j] ? w[j] * ks : 0.0f;
	}
	const float dsum = nn_lanes_dot(lim, w, p);
#pragma omp simd
	for (uint32_t j = 0; j < lim; j++)
		w[j] = p[j] * (w[j] - dsum);
	memset(w + lim, 0, (size_t)(len - lim) * sizeof *w);
}

/* Zeros columns [0, D) of rows [r0, r1) of a matrix with row stride ld. */
static void zero_rows(float *a, uint64_t ld, uint32_t D, uint64_t r0, uint64_t r1)
{
	for (uint64_t r = r0; r < r1; r++)
		memset(a + r * ld, 0, (size_t)D * sizeof *a);
}

int nn_cpu_attn_forward(void *ctx, const struct fedrun_attn_dims *d, const float *q, const float *k,
			const float *v, const int32_t *key_len, struct fedrun_rng *rng, float *out,
			float *cache)
{
	struct fedrun_attn_geometry g;
	int rc = attn_setup("attn_forward", d, key_len, q, k, v, cache, &g);
	if (rc)
		return rc;
	if (!out)
		return fedrun_error(FEDRUN_EINVAL, "attn_forward: NULL out");
	if (g.p > 0.0f && !rng)
		return fedrun_error(FEDRUN_EINVAL, "attn_forward: dropout %g needs a stream",
				    (double)g.p);
	const uint64_t TT = (uint64_t)g.Tq * g.Tk, n = (uint64_t)g.B * g.H * TT;
	const uint32_t rows = g.H * g.Tq; /* rows of P per sequence */
	uint8_t *mask = g.p > 0.0f ? (uint8_t *)(cache + n) : NULL;
	float *scratch = NULL;
	const float ks = 1.0f / (1.0f - g.p);
	if (mask) {
		rc = nn_cpu_dropout_mask(ctx, n, g.p, rng, mask);
		if (rc)
			return rc;
		scratch = malloc((uint64_t)rows * g.Tk * sizeof *scratch); /* (H,Tq,Tk) */
		if (!scratch)
			return fedrun_error(FEDRUN_ENOMEM, "attn_forward: %u x %u x %u scratch",
					    g.H, g.Tq, g.Tk);
	}
	int nt = nn_cpu_threads(ctx);
	(void)nt;
	const int par = (uint64_t)rows * g.Tk >= NN_PAR_MIN;
	for (uint32_t b = 0; b < g.B; b++) {
		const uint32_t len = attn_len(&g, key_len, b);
		const float *qb = q + (uint64_t)b * g.Tq * g.ldq;
		const float *kb = k + (uint64_t)b * g.Tk * g.ldk;
		const float *vb = v + (uint64_t)b * g.Tk * g.ldv;
		float *ob = out + (uint64_t)b * g.Tq * g.D;
		float *pb = cache + (uint64_t)b * g.H * TT; /* (H,Tq,Tk) */
		/* S (Tq,len) = scale Q K^T, head by head, into P's place */
		for (uint32_t h = 0; h < g.H && len && rc == 0; h++)
			rc = nn_cpu_gemm(ctx, false, true, (int)g.Tq, (int)len, (int)g.dh, g.scale,
					 qb + (uint64_t)h * g.dh, (int)g.ldq,
					 kb + (uint64_t)h * g.dh, (int)g.ldk, 0.0f, pb + h * TT,
					 (int)g.Tk);
		if (rc)
			break;
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
		for (uint32_t r = 0; r < rows; r++)
			attn_softmax_row(attn_lim(&g, len, r % g.Tq), g.Tk,
					 pb + (uint64_t)r * g.Tk);
		if (!len) {
			zero_rows(ob, g.D, g.D, 0, g.Tq);
			continue;
		}
		const float *a = pb; /* the weights that multiply V, (H,Tq,Tk) */
		if (mask) {
			const uint8_t *mb = mask + (uint64_t)b * g.H * TT;
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
			for (uint32_t r = 0; r < rows; r++)
				attn_drop_row(len, pb + (uint64_t)r * g.Tk, mb + (uint64_t)r * g.Tk,
					      ks, scratch + (uint64_t)r * g.Tk);
			a = scratch;
		}
		/* out (Tq,dh) of head h = A (Tq,len) V (len,dh) */
		for (uint32_t h = 0; h < g.H && rc == 0; h++)
			rc = nn_cpu_gemm(ctx, false, false, (int)g.Tq, (int)g.dh, (int)len, 1.0f,
					 a + h * TT, (int)g.Tk, vb + (uint64_t)h * g.dh, (int)g.ldv,
					 0.0f, ob + (uint64_t)h * g.dh, (int)g.D);
		if (rc)
			break;
	}
	free(scratch);
	return rc;
}

int nn_cpu_attn_backward(void *ctx, const struct fedrun_attn_dims *d, const float *q,
			 const float *k, const float *v, const int32_t *key_len, const float *cache,
			 const float *dout, float *dq, float *dk, float *dv)
{
	struct fedrun_attn_geometry g;
	int rc = attn_setup("attn_backward", d, key_len, q, k, v, cache, &g);
	if (rc)
		return rc;
	if (!dout)
		return fedrun_error(FEDRUN_EINVAL, "attn_backward: NULL dout");
	if (!dq && !dk && !dv)
		return 0;
	const uint64_t TT = (uint64_t)g.Tq * g.Tk, n = (uint64_t)g.B * g.H * TT;
	const uint32_t rows = g.H * g.Tq;
	const uint8_t *mask = g.p > 0.0f ? (const uint8_t *)(cache + n) : NULL;
	const float ks = 1.0f / (1.0f - g.p);
	float *w = malloc((uint64_t)rows * g.Tk * sizeof *w); /* (H,Tq,Tk) */
	if (!w)
		return fedrun_error(FEDRUN_ENOMEM, "attn_backward: %u x %u x %u scratch", g.H, g.Tq,
				    g.Tk);
	int nt = nn_cpu_threads(ctx);
	(void)nt;
	const int par = (uint64_t)rows * g.Tk >= NN_PAR_MIN;
	for (uint32_t b = 0; b < g.B; b++) {
		const uint32_t len = attn_len(&g, key_len, b);
		const uint64_t qr = (uint64_t)b * g.Tq, kr = (uint64_t)b * g.Tk; /* first rows */
		const float *qb = q + qr * g.ldq, *kb = k + kr * g.ldk, *vb = v + kr * g.ldv;
		const float *dob = dout + qr * g.D;
		const float *pb = cache + (uint64_t)b * g.H * TT;
		const uint8_t *mb = mask ? mask + (uint64_t)b * g.H * TT : NULL;
		/* hidden keys get no gradient; with no key at all, nothing does */
		if (dk)
			zero_rows(dk, g.ldk, g.D, kr + len, kr + g.Tk);
		if (dv)
			zero_rows(dv, g.ldv, g.D, kr + len, kr + g.Tk);
		if (!len) {
			if (dq)
				zero_rows(dq, g.ldq, g.D, qr, qr + g.Tq);
			continue;
		}
		if (dv) {
			/* dV (len,dh) = P'^T (len,Tq) dO (Tq,dh), P' after dropout */
			const float *a = pb;
			if (mb) {
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
				for (uint32_t r = 0; r < rows; r++)
					attn_drop_row(len, pb + (uint64_t)r * g.Tk,
						      mb + (uint64_t)r * g.Tk, ks,
						      w + (uint64_t)r * g.Tk);
				a = w;
			}
			for (uint32_t h = 0; h < g.H && rc == 0; h++)
				rc = nn_cpu_gemm(ctx, true, false, (int)len, (int)g.dh, (int)g.Tq,
						 1.0f, a + h * TT, (int)g.Tk,
						 dob + (uint64_t)h * g.dh, (int)g.D, 0.0f,
						 dv + kr * g.ldv + (uint64_t)h * g.dh, (int)g.ldv);
			if (rc)
				break;
		}
		if (!dq && !dk)
			continue;
		/* dP' (Tq,len) = dO (Tq,dh) V^T (dh,len), then through the
		 * softmax into dS / scale */
		for (uint32_t h = 0; h < g.H && rc == 0; h++)
			rc =
			    nn_cpu_gemm(ctx, false, true, (int)g.Tq, (int)len, (int)g.dh, 1.0f,
					dob + (uint64_t)h * g.dh, (int)g.D, vb + (uint64_t)h * g.dh,
					(int)g.ldv, 0.0f, w + h * TT, (int)g.Tk);
		if (rc)
			break;
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
		for (uint32_t r = 0; r < rows; r++)
			attn_grad_row(attn_lim(&g, len, r % g.Tq), len, pb + (uint64_t)r * g.Tk,
				      mb ? mb + (uint64_t)r * g.Tk : NULL, ks,
				      w + (uint64_t)r * g.Tk);
		for (uint32_t h = 0; h < g.H && rc == 0; h++) {
			const uint64_t off = (uint64_t)h * g.dh;
			if (dq) /* dQ (Tq,dh) = scale dS (Tq,len) K (len,dh) */
				rc = nn_cpu_gemm(ctx, false, false, (int)g.Tq, (int)g.dh, (int)len,
						 g.scale, w + h * TT, (int)g.Tk, kb + off,
						 (int)g.ldk, 0.0f, dq + qr * g.ldq + off,
						 (int)g.ldq);
			if (dk && rc == 0) /* dK (len,dh) = scale dS^T (len,Tq) Q (Tq,dh) */
				rc = nn_cpu_gemm(ctx, true, false, (int)len, (int)g.dh, (int)g.Tq,
						 g.scale, w + h * TT, (int)g.Tk, qb + off,
						 (int)g.ldq, 0.0f, dk + kr * g.ldk + off,
						 (int)g.ldk);
		}
		if (rc)
			break;
	}
	free(w);
	return rc;
}
