/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend's GRU layer: cuBLAS for the products and one fused
 * kernel per time step for the gates (PyTorch's equations and gate order
 * r, z, n; fedrun/backend.h). The input projections of all steps are one
 * GEMM before the recurrence; in backward the parameter gradients are one
 * GEMM each after it, so only the (B,H) x (H,3H) product and the gate
 * kernel run per step. Measured against cuDNN's GRU (bench/cudnn_gru, FP32,
 * gru-lm's windows on an H200): 11 to 45% faster, hence no cuDNN.
 *
 * Cache layout (floats; private to this backend), TB = T B:
 *   G  (T,B,4H): r, z, n and hn = W_hn h + b_hn of each step,
 *   XI (T,B,3H): x W_ih^T + b_ih in forward, the gradient of those
 *                pre-activations in backward,
 *   HH (T,B,3H): h W_hh^T in forward, the gradient of h W_hh^T + b_hh in
 *                backward. */
#include "internal.cuh"

extern "C" uint64_t cu_gru_cache_floats(void *ctx, const struct fedrun_gru_dims *d)
{
	return d ? 10ull * d->steps * d->batch * d->hidden : 0;
}

static int gru_check(const char *op, const struct fedrun_gru_dims *d,
		     const struct fedrun_gru_weights *w, const float *x, const float *cache)
{
	if (!d || !w)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL dims or weights", op);
	if (!d->hidden || !d->input)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: input %u, hidden %u", op,
				    d->input, d->hidden);
	if (d->steps && d->batch && (!x || !cache || !w->w_ih || !w->w_hh))
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL x, cache or weight", op);
	return 0;
}

__global__ void add_bias_rows(uint64_t rows, uint32_t D, const float *__restrict__ b,
			      float *__restrict__ y)
{
	const uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (k < rows * D)
		y[k] += b[k % D];
}

__device__ __forceinline__ float sigm(float v)
{
	return 1.0f / (1.0f + expf(-v));
}

/* Step t's gates from xi (B,3H) and hh (B,3H) (hh NULL: h = 0), h (B,H)
 * the previous state (NULL: 0); writes y (B,H) and g (B,4H). */
__global__ void gru_gates(uint32_t B, uint32_t H, const float *__restrict__ xi,
			  const float *__restrict__ hh, const float *__restrict__ bhh,
			  const float *__restrict__ h, float *__restrict__ y, float *__restrict__ g)
{
	const uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= (uint64_t)B * H)
		return;
	const uint64_t b = k / H, j = k % H;
	const float *xr = xi + b * 3 * H, *hr = hh ? hh + b * 3 * H : NULL;
	float ar = xr[j], az = xr[H + j], xn = xr[2 * H + j];
	float hrv = hr ? hr[j] : 0.0f, hzv = hr ? hr[H + j] : 0.0f, hnv = hr ? hr[2 * H + j] : 0.0f;
	if (bhh) {
		hrv += bhh[j];
		hzv += bhh[H + j];
		hnv += bhh[2 * H + j];
	}
	const float r = sigm(ar + hrv), z = sigm(az + hzv);
	const float n = tanhf(xn + r * hnv);
	const float hp = h ? h[k] : 0.0f;
	y[k] = (1.0f - z) * n + z * hp;
	float *gr = g + b * 4 * H;
	gr[j] = r;
	gr[H + j] = z;
	gr[2 * H + j] = n;
	gr[3 * H + j] = hnv;
}

/* Backward through step t's gates: dh (B,H) holds dL/dh_t except dy[t],
 * which is added here; writes dxi (B,3H) = d(pre-activations of the input
 * side), dhh (B,3H) = d(h W_hh^T + b_hh), and dh = the direct part of
 * dL/dh_{t-1} (z dh); the caller adds dhh W_hh to it. */
__global__ void gru_gates_bwd(uint32_t B, uint32_t H, const float *__restrict__ g,
			      const float *__restrict__ h, const float *__restrict__ dy,
			      float *__restrict__ dh, float *__restrict__ dxi,
			      float *__restrict__ dhh)
{
	const uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= (uint64_t)B * H)
		return;
	const uint64_t b = k / H, j = k % H;
	const float *gr = g + b * 4 * H;
	const float r = gr[j], z = gr[H + j], n = gr[2 * H + j], hn = gr[3 * H + j];
	const float hp = h ? h[k] : 0.0f;
	const float d = dh[k] + (dy ? dy[k] : 0.0f);
	const float dn = d * (1.0f - z);
	const float dz = d * (hp - n);
	const float dan = dn * (1.0f - n * n);
	const float dar = dan * hn * r * (1.0f - r);
	const float daz = dz * z * (1.0f - z);
	float *xr = dxi + b * 3 * H, *hr = dhh + b * 3 * H;
	xr[j] = dar;
	xr[H + j] = daz;
	xr[2 * H + j] = dan;
	hr[j] = dar;
	hr[H + j] = daz;
	hr[2 * H + j] = dan * r;
	dh[k] = d * z;
}

extern "C" int cu_gru_forward(void *ctx, const struct fedrun_gru_dims *d,
			      const struct fedrun_gru_weights *w, const float *x, const float *h0,
			      float *y, float *cache)
{
	const char *op = "gru_forward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	int rc = gru_check(op, d, w, x, cache);
	if (rc < 0)
		return rc;
	const uint32_t T = d->steps, B = d->batch, I = d->input, H = d->hidden;
	const uint64_t TB = (uint64_t)T * B, BH = (uint64_t)B * H;
	if (!TB)
		return 0;
	if (!y)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL y", op);
	float *G = cache, *XI = cache + 4 * TB * H, *HH = XI + 3 * TB * H;
	rc = cu_gemm(c, op, false, true, (int)TB, (int)(3 * H), (int)I, 1.0f, x, (int)I, w->w_ih,
		     (int)I, 0.0f, XI, (int)(3 * H));
	if (rc < 0)
		return rc;
	if (w->b_ih) {
		add_bias_rows<<<cu_blocks(TB * 3 * H, 256), 256, 0, c->stream>>>(TB, 3 * H, w->b_ih,
										  XI);
		CU_LAUNCHED(op);
	}
	for (uint32_t t = 0; t < T; t++) {
		const float *hp = t ? y + (t - 1) * BH : h0;
		float *hh = HH + (uint64_t)t * B * 3 * H;
		if (hp) {
			rc = cu_gemm(c, op, false, true, (int)B, (int)(3 * H), (int)H, 1.0f, hp,
				     (int)H, w->w_hh, (int)H, 0.0f, hh, (int)(3 * H));
			if (rc < 0)
				return rc;
		}
		gru_gates<<<cu_blocks(BH, 256), 256, 0, c->stream>>>(
		    B, H, XI + (uint64_t)t * B * 3 * H, hp ? hh : NULL, w->b_hh, hp,
		    y + t * BH, G + (uint64_t)t * B * 4 * H);
		CU_LAUNCHED(op);
	}
	return 0;
}

extern "C" int cu_gru_backward(void *ctx, const struct fedrun_gru_dims *d,
			       const struct fedrun_gru_weights *w, const float *x, const float *h0,
			       const float *y, float *cache, const float *dy, const float *dhT,
			       float *dx, float *dh0, const struct fedrun_gru_grads *g)
{
	const char *op = "gru_backward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	int rc = gru_check(op, d, w, x, cache);
	if (rc < 0)
		return rc;
	const uint32_t T = d->steps, B = d->batch, I = d->input, H = d->hidden;
	const uint64_t TB = (uint64_t)T * B, BH = (uint64_t)B * H;
	if (!B)
		return 0;
	if (!T) {
		/* no steps: the final state is h0, its gradient dhT */
		if (dh0) {
			if (dhT)
				CU_TRY(op, cudaMemcpyAsync(dh0, dhT, BH * sizeof(float),
							   cudaMemcpyDeviceToDevice, c->stream));
			else
				CU_TRY(op, cudaMemsetAsync(dh0, 0, BH * sizeof(float), c->stream));
		}
		return 0;
	}
	if (!y)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL y", op);
	const uint64_t cs = cu_colsum_bytes((uint32_t)TB, 3 * H);
	char *s = (char *)cu_scratch(c, BH * sizeof(float) + cs, op);
	if (!s)
		return FEDRUN_ENOMEM;
	float *dh = (float *)(s + cs), *part = (float *)s;
	float *G = cache, *DXI = cache + 4 * TB * H, *DHH = DXI + 3 * TB * H;
	if (dhT)
		CU_TRY(op, cudaMemcpyAsync(dh, dhT, BH * sizeof(float), cudaMemcpyDeviceToDevice,
					   c->stream));
	else
		CU_TRY(op, cudaMemsetAsync(dh, 0, BH * sizeof(float), c->stream));
	for (uint32_t t = T; t-- > 0;) {
		const float *hp = t ? y + (t - 1) * BH : h0;
		float *dhh = DHH + (uint64_t)t * B * 3 * H;
		gru_gates_bwd<<<cu_blocks(BH, 256), 256, 0, c->stream>>>(
		    B, H, G + (uint64_t)t * B * 4 * H, hp, dy ? dy + t * BH : NULL, dh,
		    DXI + (uint64_t)t * B * 3 * H, dhh);
		CU_LAUNCHED(op);
		if (t > 0 || dh0) {
			rc = cu_gemm(c, op, false, false, (int)B, (int)H, (int)(3 * H), 1.0f, dhh,
				     (int)(3 * H), w->w_hh, (int)H, 1.0f, dh, (int)H);
			if (rc < 0)
				return rc;
		}
	}
	if (dh0)
		CU_TRY(op, cudaMemcpyAsync(dh0, dh, BH * sizeof(float), cudaMemcpyDeviceToDevice,
					   c->stream));
	if (g && g->w_ih)
		rc = cu_gemm(c, op, true, false, (int)(3 * H), (int)I, (int)TB, 1.0f, DXI,
			     (int)(3 * H), x, (int)I, 1.0f, g->w_ih, (int)I);
	if (rc == 0 && g && g->b_ih)
		rc = cu_colsum_acc(c, op, (uint32_t)TB, 3 * H, DXI, 3 * H, g->b_ih, part);
	if (rc == 0 && g && g->w_hh && T > 1)
		rc = cu_gemm(c, op, true, false, (int)(3 * H), (int)H, (int)((T - 1) * B), 1.0f,
			     DHH + BH * 3, (int)(3 * H), y, (int)H, 1.0f, g->w_hh, (int)H);
	if (rc == 0 && g && g->w_hh && h0)
		rc = cu_gemm(c, op, true, false, (int)(3 * H), (int)H, (int)B, 1.0f, DHH,
			     (int)(3 * H), h0, (int)H, 1.0f, g->w_hh, (int)H);
	if (rc == 0 && g && g->b_hh)
		rc = cu_colsum_acc(c, op, (uint32_t)TB, 3 * H, DHH, 3 * H, g->b_hh, part);
	if (rc == 0 && dx)
		rc = cu_gemm(c, op, false, false, (int)TB, (int)I, (int)(3 * H), 1.0f, DXI,
			     (int)(3 * H), w->w_ih, (int)I, 0.0f, dx, (int)I);
	return rc;
}
