/* SPDX-License-Identifier: Apache-2.0 */
/* One GRU layer over a sequence on the CPU backend, forward and
 * backpropagation through time, with PyTorch's equations and gate order
 * (see fedrun/backend.h). The products are as few and as large as the
 * recurrence allows: the input projection of all T steps is one sgemm, each
 * step adds one (B,H) x (H,3H) sgemm, and the backward pass needs one sgemm
 * per step plus four large ones after the loop. Everything else is a fused,
 * vectorized loop per step over the (B,H) elements. */
#include "config.h"
#include <limits.h>
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"
#include "fastmath.h"

/* Hidden units per unit of parallel work in the fused loops. */
#define GRU_JCHUNK 256
/* From this many steps on, forward first copies w_hh transposed, (H,3H):
 * OpenBLAS multiplies a row-major (H,3H) right operand about a third faster
 * than a transposed (3H,H) one at these shapes (0.10 against 0.15 ms for
 * B=20, H=300 on one core), which repays the copy (0.2 ms) after 4 steps. */
#define GRU_TRANSPOSE_MIN_STEPS 4
/* Tile of the blocked transpose. */
#define GRU_TILE 32

/* The cache, carved from the caller's array:
 *   g    (T,B,4H)  forward: per row [r | z | hn | n], hn = W_hn h + b_hn;
 *                  backward: [da_r | da_z | dhn | -], the gradient of the
 *                  recurrent pre-activations (W_hh h + b_hh)
 *   gx   (T,B,3H)  forward: x W_ih^T + b_ih (+ b_hr, b_hz folded in);
 *                  backward: [da_r | da_z | da_n], the gradient of the
 *                  input pre-activations
 *   dh   (B,H)     backward: dL/dh flowing back through the recurrence
 *   zero (B,H)     zeros, standing in for a NULL h0 or dy
 *   bias (4H)      [b_ir + b_hr | b_iz + b_hz | b_in | b_hn]
 *   wt   (H,3H)    w_hh transposed (see GRU_TRANSPOSE_MIN_STEPS)
 * Keeping [r | z | hn] in front of n lets backward write the recurrent
 * gradient in place as one (B,3H) matrix of row stride 4H, which is the
 * left operand of the per-step sgemm and of the dW_hh sgemm. */
struct gru_cache {
	float *g, *gx, *dh, *zero, *bias, *wt;
};

static void gru_cache_carve(const struct fedrun_gru_dims *d, float *cache, struct gru_cache *c)
{
	uint64_t tb = (uint64_t)d->steps * d->batch, H = d->hidden;
	c->g = cache;
	c->gx = c->g + tb * 4 * H;
	c->dh = c->gx + tb * 3 * H;
	c->zero = c->dh + (uint64_t)d->batch * H;
	c->bias = c->zero + (uint64_t)d->batch * H;
	c->wt = c->bias + 4 * H;
}

uint64_t nn_cpu_gru_cache_floats(void *ctx, const struct fedrun_gru_dims *d)
{
	uint64_t tb = (uint64_t)d->steps * d->batch, H = d->hidden;
	return tb * 7 * H + 2 * (uint64_t)d->batch * H + 4 * H + 3 * H * H;
}

static int gru_check(const char *op, const struct fedrun_gru_dims *d,
		     const struct fedrun_gru_weights *w, const float *x, const float *y,
		     const float *cache)
{
	if (!d || !w)
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL dims or weights", op);
	if (!d->steps || !d->batch || !d->input || !d->hidden)
		return fedrun_error(FEDRUN_EINVAL, "%s: zero dimension (T=%u, B=%u, I=%u, H=%u)",
				    op, d->steps, d->batch, d->input, d->hidden);
	if ((uint64_t)d->steps * d->batch > INT_MAX || d->input > INT_MAX ||
	    (uint64_t)d->hidden * 7 > INT_MAX)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: dimensions beyond INT_MAX (T=%u, B=%u, I=%u, H=%u)", op,
				    d->steps, d->batch, d->input, d->hidden);
	if (!w->w_ih || !w->w_hh || !x || !y || !cache)
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL weight, x, y or cache", op);
	return 0;
}

/* wt (H,3H) = w (3H,H)^T, tile by tile so that reads and writes both stay
 * in cache lines. */
static void gru_transpose(const void *ctx, uint32_t H, const float *w, float *wt)
{
	const uint32_t rows = 3 * H, nti = (rows + GRU_TILE - 1) / GRU_TILE;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)rows * H >= 8 * NN_PAR_MIN)
	for (uint32_t ti = 0; ti < nti; ti++) {
		uint32_t i0 = ti * GRU_TILE, i1 = rows - i0 < GRU_TILE ? rows : i0 + GRU_TILE;
		for (uint32_t j0 = 0; j0 < H; j0 += GRU_TILE) {
			uint32_t j1 = H - j0 < GRU_TILE ? H : j0 + GRU_TILE;
			for (uint32_t i = i0; i < i1; i++)
				for (uint32_t j = j0; j < j1; j++)
					wt[(uint64_t)j * rows + i] = w[(uint64_t)i * H + j];
		}
	}
}

/* The fused forward of units [0, len) of one batch row: g_* point into the
 * row's (4H) gates, x_* into its (3H) input pre-activations, hp and y into
 * its previous and new state. Cloned for AVX-512 and AVX2 where the
 * compiler can (NN_SIMD_CLONES); no clone enables FMA, so all give the
 * same bits. */
NN_SIMD_CLONES
static void gru_fwd_units(uint32_t len, float *restrict g_r, float *restrict g_z,
			  float *restrict g_hn, float *restrict g_n, const float *restrict x_r,
			  const float *restrict x_z, const float *restrict x_n,
			  const float *restrict bn, const float *restrict hp, float *restrict y)
{
#pragma omp simd
	for (uint32_t j = 0; j < len; j++) {
		float r = nn_sigmoidf(x_r[j] + g_r[j]);
		float z = nn_sigmoidf(x_z[j] + g_z[j]);
		float hn = g_hn[j] + bn[j];
		float n = nn_tanhf(x_n[j] + r * hn);
		g_r[j] = r;
		g_z[j] = z;
		g_hn[j] = hn;
		g_n[j] = n;
		y[j] = n + z * (hp[j] - n); /* (1 - z) n + z h */
	}
}

/* One forward step's element-wise part, for rows [0,B) of the step:
 * g (B,4H) holds W_hh h in its first 3H columns on entry, gx (B,3H) the
 * input pre-activations, hp (B,H) the previous state; writes the gates back
 * into g and the new state into y (B,H). */
static void gru_step_forward(const void *ctx, uint32_t B, uint32_t H, float *g, const float *gx,
			     const float *b_hn, const float *hp, float *y)
{
	uint32_t nch = (H + GRU_JCHUNK - 1) / GRU_JCHUNK;
	uint64_t units = (uint64_t)B * nch;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)B * H >= NN_PAR_MIN)
	for (uint64_t u = 0; u < units; u++) {
		uint64_t b = u / nch;
		uint32_t j0 = (uint32_t)(u % nch) * GRU_JCHUNK;
		uint32_t j1 = H - j0 < GRU_JCHUNK ? H : j0 + GRU_JCHUNK;
		float *gr = g + b * 4 * H + j0;	       /* row b's gates from unit j0 */
		const float *xr = gx + b * 3 * H + j0; /* its input pre-activations */
		gru_fwd_units(j1 - j0, gr, gr + H, gr + 2 * H, gr + 3 * H, xr, xr + H, xr + 2 * H,
			      b_hn + j0, hp + b * H + j0, y + b * H + j0);
	}
}

int nn_cpu_gru_forward(void *ctx, const struct fedrun_gru_dims *d,
		       const struct fedrun_gru_weights *w, const float *x, const float *h0,
		       float *y, float *cache)
{
	int rc = gru_check("gru_forward", d, w, x, y, cache);
	if (rc)
		return rc;
	const uint32_t T = d->steps, B = d->batch, In = d->input, H = d->hidden;
	const uint64_t BH = (uint64_t)B * H;
	struct gru_cache c;
	gru_cache_carve(d, cache, &c);

	/* Fold b_hr and b_hz into the input projection: r and z only see
	 * their sum. b_hn stays apart, inside r * (W_hn h + b_hn). */
	for (uint32_t j = 0; j < 3 * H; j++) {
		float bi = w->b_ih ? w->b_ih[j] : 0.0f;
		float bh = w->b_hh && j < 2 * H ? w->b_hh[j] : 0.0f;
		c.bias[j] = bi + bh;
	}
	for (uint32_t j = 0; j < H; j++)
		c.bias[3 * H + j] = w->b_hh ? w->b_hh[2 * H + j] : 0.0f;
	memset(c.zero, 0, BH * sizeof *c.zero);

	/* gx (T*B,3H) = bias + x (T*B,I) . w_ih^T (I,3H): all steps at once. */
	nn_cpu_rows_fill(ctx, (uint64_t)T * B, 3 * H, 3 * H, c.bias, c.gx);
	rc = nn_cpu_gemm_mt(ctx, false, true, (int)(T * B), (int)(3 * H), (int)In, 1.0f, x, (int)In,
			    w->w_ih, (int)In, 1.0f, c.gx, (int)(3 * H));
	if (rc)
		return rc;

	/* (bf16: w_hh as it is, whose bf16 copy a declared parameter keeps) */
	const bool transposed = T >= GRU_TRANSPOSE_MIN_STEPS && !nn_cpu_bf16(ctx);
	if (transposed)
		gru_transpose(ctx, H, w->w_hh, c.wt);
	for (uint32_t t = 0; t < T; t++) {
		const float *hp = t ? y + (t - 1) * BH : (h0 ? h0 : c.zero); /* (B,H) */
		float *g = c.g + t * BH * 4;				     /* (B,4H) */
		/* g[:, 0:3H] (B,3H) = hp (B,H) . w_hh^T (H,3H) */
		if ((t || h0) && transposed)
			rc = nn_cpu_gemm(ctx, false, false, (int)B, (int)(3 * H), (int)H, 1.0f, hp,
					 (int)H, c.wt, (int)(3 * H), 0.0f, g, (int)(4 * H));
		else if (t || h0)
			rc = nn_cpu_gemm(ctx, false, true, (int)B, (int)(3 * H), (int)H, 1.0f, hp,
					 (int)H, w->w_hh, (int)H, 0.0f, g, (int)(4 * H));
		else
			nn_cpu_rows_fill(ctx, B, 3 * H, 4 * H, NULL, g);
		if (rc)
			return rc;
		gru_step_forward(ctx, B, H, g, c.gx + t * BH * 3, c.bias + 3 * H, hp, y + t * BH);
	}
	return 0;
}

/* The fused backward of units [0, len) of one batch row (pointers as in
 * gru_fwd_units; dg_* receive the input pre-activation gradient). With
 * h' = (1 - z) n + z h and a_* the pre-activations:
 *   dn = dh' (1 - z)        dz = dh' (h - n)
 *   da_n = dn (1 - n^2)     dhn = da_n r    (hn = W_hn h + b_hn)
 *   da_r = da_n hn r (1 - r)                da_z = dz z (1 - z)
 * and dh' z is the direct part of dL/dh. */
NN_SIMD_CLONES
static void gru_bwd_units(uint32_t len, float *restrict g_r, float *restrict g_z,
			  float *restrict g_hn, const float *restrict g_n, float *restrict dg_r,
			  float *restrict dg_z, float *restrict dg_n, float *restrict dh,
			  const float *restrict dy, const float *restrict hp)
{
#pragma omp simd
	for (uint32_t j = 0; j < len; j++) {
		float r = g_r[j], z = g_z[j], hn = g_hn[j], n = g_n[j];
		float dht = dh[j] + dy[j];
		float dn = dht * (1.0f - z);
		float dz = dht * (hp[j] - n);
		float dan = dn * (1.0f - n * n);
		float dar = dan * hn * r * (1.0f - r);
		float daz = dz * z * (1.0f - z);
		g_r[j] = dar;
		g_z[j] = daz;
		g_hn[j] = dan * r;
		dg_r[j] = dar;
		dg_z[j] = daz;
		dg_n[j] = dan;
		dh[j] = dht * z;
	}
}

/* One backward step's element-wise part. On entry g (B,4H) holds the
 * step's gates, dh (B,H) dL/dh_t from later steps, dy (B,H) the output
 * gradient, hp (B,H) the previous state. Writes the recurrent pre-activation
 * gradient into g[:, 0:3H], the input one into dgx (B,3H), and the direct
 * part of dL/dh_{t-1} into dh. */
static void gru_step_backward(const void *ctx, uint32_t B, uint32_t H, float *g, float *dgx,
			      float *dh, const float *dy, const float *hp)
{
	uint32_t nch = (H + GRU_JCHUNK - 1) / GRU_JCHUNK;
	uint64_t units = (uint64_t)B * nch;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)B * H >= NN_PAR_MIN)
	for (uint64_t u = 0; u < units; u++) {
		uint64_t b = u / nch;
		uint32_t j0 = (uint32_t)(u % nch) * GRU_JCHUNK;
		uint32_t j1 = H - j0 < GRU_JCHUNK ? H : j0 + GRU_JCHUNK;
		float *gr = g + b * 4 * H + j0;
		float *xr = dgx + b * 3 * H + j0;
		uint64_t o = b * H + j0;
		gru_bwd_units(j1 - j0, gr, gr + H, gr + 2 * H, gr + 3 * H, xr, xr + H, xr + 2 * H,
			      dh + o, dy + o, hp + o);
	}
}

int nn_cpu_gru_backward(void *ctx, const struct fedrun_gru_dims *d,
			const struct fedrun_gru_weights *w, const float *x, const float *h0,
			const float *y, float *cache, const float *dy, const float *dhT, float *dx,
			float *dh0, const struct fedrun_gru_grads *g)
{
	int rc = gru_check("gru_backward", d, w, x, y, cache);
	if (rc)
		return rc;
	const uint32_t T = d->steps, B = d->batch, In = d->input, H = d->hidden;
	const uint64_t BH = (uint64_t)B * H;
	const int TB = (int)(T * B), H3 = (int)(3 * H), H4 = (int)(4 * H);
	struct gru_cache c;
	gru_cache_carve(d, cache, &c);
	float *dw_ih = g ? g->w_ih : NULL, *dw_hh = g ? g->w_hh : NULL;
	float *db_ih = g ? g->b_ih : NULL, *db_hh = g ? g->b_hh : NULL;

	memset(c.zero, 0, BH * sizeof *c.zero);
	if (dhT)
		memcpy(c.dh, dhT, BH * sizeof *c.dh);
	else
		memset(c.dh, 0, BH * sizeof *c.dh);

	for (uint32_t t = T; t-- > 0;) {
		const float *hp = t ? y + (t - 1) * BH : (h0 ? h0 : c.zero); /* (B,H) */
		float *gt = c.g + t * BH * 4;				     /* (B,4H) */
		gru_step_backward(ctx, B, H, gt, c.gx + t * BH * 3, c.dh, dy ? dy + t * BH : c.zero,
				  hp);
		/* dh (B,H) += g[:, 0:3H] (B,3H) . w_hh (3H,H) */
		if ((t || dh0) && (rc = nn_cpu_gemm(ctx, false, false, (int)B, (int)H, H3, 1.0f, gt,
						    H4, w->w_hh, (int)H, 1.0f, c.dh, (int)H)))
			return rc;
	}
	if (dh0)
		memcpy(dh0, c.dh, BH * sizeof *dh0);

	/* dw_hh (3H,H) += sum_t g_t^T h_{t-1}: h0 for t = 0, then the
	 * contiguous y[0 .. T-2] against g[1 .. T-1] in one product. */
	if (dw_hh) {
		if (h0 && (rc = nn_cpu_gemm(ctx, true, false, H3, (int)H, (int)B, 1.0f, c.g, H4, h0,
					    (int)H, 1.0f, dw_hh, (int)H)))
			return rc;
		if (T > 1 &&
		    (rc = nn_cpu_gemm_mt(ctx, true, false, H3, (int)H, (int)((T - 1) * B), 1.0f,
					 c.g + BH * 4, H4, y, (int)H, 1.0f, dw_hh, (int)H)))
			return rc;
	}
	if (db_hh)
		nn_cpu_colsum_acc(ctx, (uint64_t)TB, 3 * H, 4 * H, c.g, db_hh);
	if (db_ih)
		nn_cpu_colsum_acc(ctx, (uint64_t)TB, 3 * H, 3 * H, c.gx, db_ih);
	/* dw_ih (3H,I) += dgx^T (3H,T*B) . x (T*B,I) */
	if (dw_ih && (rc = nn_cpu_gemm_mt(ctx, true, false, H3, (int)In, TB, 1.0f, c.gx, H3, x,
					  (int)In, 1.0f, dw_ih, (int)In)))
		return rc;
	/* dx (T*B,I) = dgx (T*B,3H) . w_ih (3H,I) */
	if (dx)
		rc = nn_cpu_gemm_mt(ctx, false, false, TB, (int)In, H3, 1.0f, c.gx, H3, w->w_ih,
				    (int)In, 0.0f, dx, (int)In);
	return rc;
}
