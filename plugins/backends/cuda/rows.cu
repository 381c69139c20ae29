/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend's row-wise ops: softmax cross-entropy (plain, with the
 * bias gradient, label-smoothed) and layer normalization. One block per
 * row; every sum runs in an order fixed by the shape (block reductions,
 * then the rows in order), so results repeat bit for bit. */
#include <math.h>
#include "internal.cuh"

#define ROW_THREADS 256

/* count of targets >= 0 into out[0]; the first target >= V (or -1) into
 * out[1]. One block. */
__global__ void count_targets(uint32_t N, uint32_t V, const int32_t *__restrict__ t,
			      long long *__restrict__ out)
{
	long long n = 0;
	int bad = 0x7fffffff;
	for (uint32_t i = threadIdx.x; i < N; i += blockDim.x) {
		int32_t ti = t[i];
		if (ti >= 0) {
			n++;
			if ((uint32_t)ti >= V && (int)i < bad)
				bad = (int)i;
		}
	}
	n = cu_block_sum(n);
	/* min over the block, by the same tree */
	for (int o = 16; o > 0; o >>= 1) {
		int u = __shfl_xor_sync(0xffffffffu, bad, o);
		bad = u < bad ? u : bad;
	}
	__shared__ int wmin[32];
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		wmin[threadIdx.x >> 5] = bad;
	__syncthreads();
	if (threadIdx.x == 0) {
		int b = wmin[0];
		for (int w = 1; w < (int)(blockDim.x >> 5); w++)
			b = wmin[w] < b ? wmin[w] : b;
		out[0] = n;
		out[1] = b == 0x7fffffff ? -1 : b;
	}
}

/* Row i: with p = softmax(l), q = (1 - eps) onehot(t) + eps / V,
 *   loss = (1 - eps) nll + eps (lz - mean(l)),  nll = lz - l_t,
 * lz = log sum exp(l); dl = (p - q) * scale / count (0 on ignored rows).
 * eps = 0 is plain cross-entropy. rows[2i], rows[2i+1] get loss and nll. */
__global__ void xent_rows(uint32_t N, uint32_t V, float eps, float scale,
			  const float *__restrict__ logits, const int32_t *__restrict__ targets,
			  const long long *__restrict__ cnt, double *__restrict__ rows, float *dl)
{
	const uint32_t i = blockIdx.x;
	const float *l = logits + (uint64_t)i * V;
	float *d = dl ? dl + (uint64_t)i * V : NULL;
	const int32_t t = targets[i];
	if (t < 0 || (uint32_t)t >= V) {
		if (threadIdx.x == 0) {
			rows[2 * i] = 0.0;
			rows[2 * i + 1] = 0.0;
		}
		if (d)
			for (uint32_t j = threadIdx.x; j < V; j += blockDim.x)
				d[j] = 0.0f;
		return;
	}
	float m = -INFINITY;
	for (uint32_t j = threadIdx.x; j < V; j += blockDim.x)
		m = fmaxf(m, l[j]);
	m = cu_block_max(m);
	float se = 0.0f, sl = 0.0f;
	for (uint32_t j = threadIdx.x; j < V; j += blockDim.x) {
		se += expf(l[j] - m);
		sl += l[j];
	}
	se = cu_block_sum(se);
	sl = eps > 0.0f ? cu_block_sum(sl) : 0.0f;
	const float lt = l[t];
	const double lz = (double)m + log((double)se);
	if (threadIdx.x == 0) {
		const double nll = lz - (double)lt;
		const double mean_l = (double)sl / (double)V;
		rows[2 * i] = eps > 0.0f ? (1.0 - eps) * nll + eps * (lz - mean_l) : nll;
		rows[2 * i + 1] = nll;
	}
	if (!d)
		return;
	__syncthreads(); /* every thread has read l (and l[t]) before d = l is written */
	const long long n = *cnt;
	const float k = n > 0 ? scale / (float)n : 0.0f;
	const float ks = k / se, u = eps * k / (float)V, on = (1.0f - eps) * k;
	for (uint32_t j = threadIdx.x; j < V; j += blockDim.x) {
		float g = expf(l[j] - m) * ks - u;
		d[j] = j == (uint32_t)t ? g - on : g;
	}
}

/* out[0] = sum of row losses / count, out[1] = sum of nll / count (0 when
 * count is 0), in row order by a fixed tree. One block. */
__global__ void xent_total(uint32_t N, const double *__restrict__ rows,
			   const long long *__restrict__ cnt, double *__restrict__ out)
{
	double a = 0.0, b = 0.0;
	for (uint32_t i = threadIdx.x; i < N; i += blockDim.x) {
		a += rows[2 * i];
		b += rows[2 * i + 1];
	}
	a = cu_block_sum(a);
	b = cu_block_sum(b);
	if (threadIdx.x == 0) {
		const long long n = *cnt;
		out[0] = n ? a / (double)n : 0.0;
		out[1] = n ? b / (double)n : 0.0;
	}
}

static int xent(void *ctx, const char *op, uint32_t N, uint32_t V, float eps, float scale,
		const float *logits, const int32_t *targets, double *loss, double *nll,
		uint64_t *count, float *dlogits, float *db)
{
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!(eps >= 0.0f && eps <= 1.0f))
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: eps = %g outside [0, 1]", op,
				    (double)eps);
	if (!N) {
		if (loss)
			*loss = 0.0;
		if (nll)
			*nll = 0.0;
		if (count)
			*count = 0;
		return 0;
	}
	if (!V || !logits || !targets)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: V = %u or NULL argument", op,
				    V);
	if (db && !dlogits)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: db needs dlogits", op);
	/* scratch: count and bad index (2 long long), 2 totals, 2N row values */
	const uint64_t rbytes = 64 + 2 * (uint64_t)N * sizeof(double);
	char *s = (char *)cu_scratch(c, rbytes + (db ? cu_colsum_bytes(N, V) : 0), op);
	if (!s)
		return FEDRUN_ENOMEM;
	long long *cnt = (long long *)s;
	double *tot = (double *)(s + 32), *rows = (double *)(s + 64);
	count_targets<<<1, 1024, 0, c->stream>>>(N, V, targets, cnt);
	xent_rows<<<N, ROW_THREADS, 0, c->stream>>>(N, V, eps, scale, logits, targets, cnt, rows,
						     dlogits);
	xent_total<<<1, 1024, 0, c->stream>>>(N, rows, cnt, tot);
	CU_LAUNCHED(op);
	if (db) {
		int rc = cu_colsum_acc(c, op, N, V, dlogits, V, db, (float *)(s + rbytes));
		if (rc < 0)
			return rc;
	}
	/* The scalars come back through pinned memory; the wait also reports
	 * a target outside [0, V). */
	CU_TRY(op, cudaMemcpyAsync(c->host, s, 64, cudaMemcpyDeviceToHost, c->stream));
	int rc = cu_sync(c, op);
	if (rc < 0)
		return rc;
	const long long *hc = (const long long *)c->host;
	const double *ht = (const double *)((const char *)c->host + 32);
	if (hc[1] >= 0)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend %s: targets[%lld] outside [0, %u)",
				    op, hc[1], V);
	if (loss)
		*loss = ht[0];
	if (nll)
		*nll = ht[1];
	if (count)
		*count = (uint64_t)hc[0];
	return 0;
}

extern "C" int cu_softmax_xent(void *ctx, uint32_t N, uint32_t V, const float *logits,
			       const int32_t *targets, double *loss, uint64_t *count,
			       float *dlogits)
{
	return xent(ctx, "softmax_xent", N, V, 0.0f, 1.0f, logits, targets, loss, NULL, count,
		    dlogits, NULL);
}

extern "C" int cu_softmax_xent_db(void *ctx, uint32_t N, uint32_t V, const float *logits,
				  const int32_t *targets, float scale, double *loss,
				  uint64_t *count, float *dlogits, float *db)
{
	return xent(ctx, "softmax_xent_db", N, V, 0.0f, scale, logits, targets, loss, NULL, count,
		    dlogits, db);
}

extern "C" int cu_label_smoothed_xent(void *ctx, uint32_t N, uint32_t V, float eps,
				      const float *logits, const int32_t *targets, double *loss,
				      double *nll, uint64_t *count, float *dlogits)
{
	return xent(ctx, "label_smoothed_xent", N, V, eps, 1.0f, logits, targets, loss, nll,
		    count, dlogits, NULL);
}

/* ---- layer normalization (Ba et al. 2016) ------------------------------- */

__global__ void ln_fwd(uint32_t N, uint32_t D, float eps, const float *__restrict__ x,
		       const float *__restrict__ gain, const float *__restrict__ bias,
		       float *__restrict__ y, float *__restrict__ mean, float *__restrict__ rstd)
{
	const uint32_t i = blockIdx.x;
	const float *xr = x + (uint64_t)i * D;
	float *yr = y + (uint64_t)i * D;
	float s = 0.0f;
	for (uint32_t j = threadIdx.x; j < D; j += blockDim.x)
		s += xr[j];
	const float m = cu_block_sum(s) / (float)D;
	float v = 0.0f;
	for (uint32_t j = threadIdx.x; j < D; j += blockDim.x) {
		float u = xr[j] - m;
		v += u * u;
	}
	const float r = 1.0f / sqrtf(cu_block_sum(v) / (float)D + eps);
	for (uint32_t j = threadIdx.x; j < D; j += blockDim.x) {
		float h = (xr[j] - m) * r;
		yr[j] = h * (gain ? gain[j] : 1.0f) + (bias ? bias[j] : 0.0f);
	}
	if (threadIdx.x == 0) {
		mean[i] = m;
		rstd[i] = r;
	}
}

/* prod = dy * xhat, for dgain's column sums */
__global__ void ln_dy_xhat(uint32_t N, uint32_t D, const float *__restrict__ x,
			   const float *__restrict__ mean, const float *__restrict__ rstd,
			   const float *__restrict__ dy, float *__restrict__ prod)
{
	const uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= (uint64_t)N * D)
		return;
	const uint64_t i = k / D;
	prod[k] = dy[k] * ((x[k] - mean[i]) * rstd[i]);
}

/* dx = r (g - mean(g) - xhat mean(g xhat)), g = gain dy; dx may be dy:
 * every dy of the row is read (the sums) before any dx is written. */
__global__ void ln_bwd(uint32_t N, uint32_t D, const float *__restrict__ x,
		       const float *__restrict__ gain, const float *__restrict__ mean,
		       const float *__restrict__ rstd, const float *dy, float *dx)
{
	const uint32_t i = blockIdx.x;
	const float *xr = x + (uint64_t)i * D;
	const float *dyr = dy + (uint64_t)i * D;
	float *dxr = dx + (uint64_t)i * D;
	const float m = mean[i], r = rstd[i];
	float t1 = 0.0f, t2 = 0.0f;
	for (uint32_t j = threadIdx.x; j < D; j += blockDim.x) {
		float g = gain ? gain[j] * dyr[j] : dyr[j];
		t1 += g;
		t2 += g * ((xr[j] - m) * r);
	}
	const float a = cu_block_sum(t1) / (float)D;
	const float c = cu_block_sum(t2) / (float)D;
	for (uint32_t j = threadIdx.x; j < D; j += blockDim.x) {
		float g = gain ? gain[j] * dyr[j] : dyr[j];
		dxr[j] = r * (g - a - (xr[j] - m) * r * c);
	}
}

static unsigned ln_threads(uint32_t D)
{
	unsigned t = 32;
	while (t < 512 && t < D)
		t *= 2;
	return t;
}

extern "C" int cu_layernorm_forward(void *ctx, uint32_t N, uint32_t D, float eps, const float *x,
				    const float *gain, const float *bias, float *y, float *cache)
{
	const char *op = "layernorm_forward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!(eps >= 0.0f) || isinf(eps))
		return fedrun_error(FEDRUN_EINVAL, "layernorm_forward: eps = %g", (double)eps);
	if (!N)
		return 0;
	if (!D)
		return fedrun_error(FEDRUN_EINVAL, "layernorm_forward: D = 0");
	if (!x || !y || !cache)
		return fedrun_error(FEDRUN_EINVAL, "layernorm_forward: NULL x, y or cache");
	ln_fwd<<<N, ln_threads(D), 0, c->stream>>>(N, D, eps, x, gain, bias, y, cache, cache + N);
	CU_LAUNCHED(op);
	return 0;
}

extern "C" int cu_layernorm_backward(void *ctx, uint32_t N, uint32_t D, const float *x,
				     const float *gain, const float *cache, const float *dy,
				     float *dx, float *dgain, float *dbias)
{
	const char *op = "layernorm_backward";
	struct cu_ctx *c = cu_enter(ctx, op);
	if (!c)
		return FEDRUN_EINVAL;
	if (!N)
		return 0;
	if (!D)
		return fedrun_error(FEDRUN_EINVAL, "layernorm_backward: D = 0");
	if (!x || !cache || !dy)
		return fedrun_error(FEDRUN_EINVAL, "layernorm_backward: NULL x, cache or dy");
	const float *mean = cache, *rstd = cache + N;
	int rc = 0;
	/* The parameter gradients first: dx may overwrite dy. */
	if (dgain) {
		const uint64_t pbytes = (uint64_t)N * D * sizeof(float);
		char *s = (char *)cu_scratch(c, pbytes + cu_colsum_bytes(N, D), op);
		if (!s)
			return FEDRUN_ENOMEM;
		float *prod = (float *)s;
		ln_dy_xhat<<<cu_blocks((uint64_t)N * D, 256), 256, 0, c->stream>>>(N, D, x, mean,
										    rstd, dy, prod);
		CU_LAUNCHED(op);
		rc = cu_colsum_acc(c, op, N, D, prod, D, dgain, (float *)(s + pbytes));
		if (rc < 0)
			return rc;
	}
	if (dbias && (rc = cu_colsum_acc(c, op, N, D, dy, D, dbias, NULL)) < 0)
		return rc;
	if (dx) {
		ln_bwd<<<N, ln_threads(D), 0, c->stream>>>(N, D, x, gain, mean, rstd, dy, dx);
		CU_LAUNCHED(op);
	}
	return 0;
}
