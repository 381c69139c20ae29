/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend's contexts and memory: one stream and one cuBLAS handle
 * per context, device memory from cudaMalloc, copies queued on the stream,
 * and the error reporting that every op shares. */
#include <stdlib.h>
#include <string.h>
#include "internal.cuh"

/* cuBLAS's workspace, fixed per context: with a workspace of its own per
 * stream cuBLAS picks the same kernels on every call, so results repeat
 * bit for bit (cuBLAS documentation, "Results reproducibility"). 32 MiB is
 * what that documentation recommends for Hopper. */
#define CU_BLAS_WS (32u << 20)

int cu_fail(const char *op, cudaError_t e)
{
	int code = e == cudaErrorMemoryAllocation ? FEDRUN_ENOMEM
		   : (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
		      e == cudaErrorInvalidDevice)
		       ? FEDRUN_EUNSUPPORTED
		       : FEDRUN_EIO;
	return fedrun_error(code, "cuda backend %s: %s (%s)", op, cudaGetErrorString(e),
			    cudaGetErrorName(e));
}

int cu_blas_fail(const char *op, cublasStatus_t s)
{
	return fedrun_error(s == CUBLAS_STATUS_ALLOC_FAILED ? FEDRUN_ENOMEM : FEDRUN_EIO,
			    "cuda backend %s: cuBLAS %s (%s)", op, cublasGetStatusString(s),
			    cublasGetStatusName(s));
}

int cu_check_launch(const char *op)
{
	cudaError_t e = cudaGetLastError();
	return e == cudaSuccess ? 0 : cu_fail(op, e);
}

struct cu_ctx *cu_enter(void *ctx, const char *op)
{
	struct cu_ctx *c = (struct cu_ctx *)ctx;
	if (!c) {
		fedrun_error(FEDRUN_EINVAL, "cuda backend %s: NULL context", op);
		return NULL;
	}
	cudaError_t e = cudaSetDevice(c->device);
	if (e != cudaSuccess) {
		cu_fail(op, e);
		return NULL;
	}
	return c;
}

int cu_sync(struct cu_ctx *c, const char *op)
{
	cudaError_t e = cudaStreamSynchronize(c->stream);
	return e == cudaSuccess ? 0 : cu_fail(op, e);
}

int cu_read_flag(struct cu_ctx *c, const char *op, const int *flag, int *index)
{
	*index = -1;
	CU_TRY(op, cudaMemcpyAsync(index, flag, sizeof *index, cudaMemcpyDeviceToHost, c->stream));
	return cu_sync(c, op);
}

int cu_grow(struct cu_ctx *c, void **p, uint64_t *cap, uint64_t bytes, const char *op)
{
	if (bytes <= *cap)
		return 0;
	/* Grow by half again, so that a slowly growing need does not free
	 * and allocate on every call; the old block may still be read by
	 * queued work, hence the wait before freeing it. */
	uint64_t want = bytes + bytes / 2;
	if (*p) {
		int rc = cu_sync(c, op);
		if (rc < 0)
			return rc;
		cudaFree(*p);
		*p = NULL;
		*cap = 0;
	}
	cudaError_t e = cudaMalloc(p, want);
	if (e != cudaSuccess) {
		*p = NULL;
		return cu_fail(op, e);
	}
	*cap = want;
	return 0;
}

void *cu_scratch(struct cu_ctx *c, uint64_t bytes, const char *op)
{
	return cu_grow(c, &c->scratch, &c->scratch_bytes, bytes, op) < 0 ? NULL : c->scratch;
}

/* ---- parameters and their bf16 copies ---- */

/* Whether the bytes [d, dend) overlap the floats that copy w was made from. */
static bool wcopy_overlaps(const struct cu_wcopy *w, const char *d, const char *dend)
{
	const char *p = (const char *)w->ptr;
	const char *pend = (const char *)(w->ptr + (int64_t)(w->rows - 1) * w->ld + w->cols);
	return d < pend && p < dend;
}

void cu_params_written(struct cu_ctx *c, const void *dst, uint64_t bytes)
{
	if (!c || !c->nw || !bytes || !dst)
		return;
	const char *d = (const char *)dst;
	for (uint32_t i = 0; i < c->nw; i++)
		if (c->w[i].valid && wcopy_overlaps(&c->w[i], d, d + bytes))
			c->w[i].valid = false;
}

/* Frees every copy; queued products may still read them. */
static void wcopies_free(struct cu_ctx *c)
{
	if (!c->nw)
		return;
	cudaStreamSynchronize(c->stream);
	for (uint32_t i = 0; i < c->nw; i++)
		cudaFree(c->w[i].data);
	c->nw = 0;
}

/* The same range again keeps the copies' memory (each is made again at
 * its next use); another range frees them. */
extern "C" int cu_declare_params(void *ctx, const float *p, uint64_t n)
{
	struct cu_ctx *c = cu_enter(ctx, "declare_params");
	if (!c)
		return FEDRUN_EINVAL;
	if (n && !p)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend declare_params: NULL pointer");
	if (!n)
		p = NULL;
	if (p == c->pp && n == c->pn) {
		for (uint32_t i = 0; i < c->nw; i++)
			c->w[i].valid = false;
		return 0;
	}
	wcopies_free(c);
	c->pp = p;
	c->pn = n;
	return 0;
}

extern "C" void cu_ctx_destroy(void *ctx)
{
	struct cu_ctx *c = (struct cu_ctx *)ctx;
	if (!c)
		return;
	cudaSetDevice(c->device);
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	if (c->blas)
		cublasDestroy(c->blas);
	cudaFree(c->blas_ws);
	cudaFree(c->scratch);
	cudaFree(c->ptrs);
	cudaFree(c->bf[0]);
	cudaFree(c->bf[1]);
	wcopies_free(c);
	free(c->w);
	cudaFreeHost(c->host);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	free(c);
}

extern "C" int cu_ctx_create(const struct fedrun_backend_ctx_cfg *cfg, void **ctx)
{
	if (!ctx)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend: NULL ctx pointer");
	/* a precision no backend knows is bad input, whatever the machine */
	uint32_t prec = FEDRUN_PRECISION_FP32;
	if (cfg && cfg->size >= offsetof(struct fedrun_backend_ctx_cfg, precision) +
				    sizeof cfg->precision)
		prec = cfg->precision;
	if (prec != FEDRUN_PRECISION_FP32 && prec != FEDRUN_PRECISION_BF16 &&
	    prec != FEDRUN_PRECISION_TF32)
		return fedrun_error(FEDRUN_EINVAL,
				    "cuda backend: no precision %u (fp32, bf16 or tf32)", prec);
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess)
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "cuda backend: no usable CUDA device: %s (%s)",
				    cudaGetErrorString(e), cudaGetErrorName(e));
	if (ndev < 1)
		return fedrun_error(FEDRUN_EUNSUPPORTED, "cuda backend: no CUDA device");
	int dev = 0;
	bool fast = false;
	if (cfg && cfg->size >= offsetof(struct fedrun_backend_ctx_cfg, device) + sizeof cfg->device)
		dev = cfg->device;
	if (cfg && cfg->size >= offsetof(struct fedrun_backend_ctx_cfg, allow_nondeterministic) +
				    sizeof cfg->allow_nondeterministic)
		fast = cfg->allow_nondeterministic != 0;
	if (dev < 0 || dev >= ndev)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend: device %d, but %d device%s", dev,
				    ndev, ndev == 1 ? " is present (0)" : "s are present");
	if (prec != FEDRUN_PRECISION_FP32) {
		/* bf16 and tf32 tensor cores came with Ampere (8.0); cuBLAS
		 * would compute in FP32 on older GPUs, which is not what was
		 * asked for */
		cudaDeviceProp pr;
		if ((e = cudaGetDeviceProperties(&pr, dev)) != cudaSuccess)
			return cu_fail("ctx_create", e);
		if (pr.major < 8)
			return fedrun_error(FEDRUN_EUNSUPPORTED,
					    "cuda backend: precision %s needs %s tensor cores "
					    "(compute capability 8.0 or later); device %d, %s, is "
					    "%d.%d",
					    fedrun_precision_name(prec),
					    fedrun_precision_name(prec), dev, pr.name, pr.major,
					    pr.minor);
	}
	struct cu_ctx *c = (struct cu_ctx *)calloc(1, sizeof *c);
	if (!c)
		return fedrun_error(FEDRUN_ENOMEM, "cuda backend: context");
	c->device = dev;
	c->deterministic = !fast;
	c->precision = prec;
	int rc = 0;
	const char *op = "ctx_create";
	if ((e = cudaSetDevice(dev)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess ||
	    (e = cudaMalloc(&c->blas_ws, CU_BLAS_WS)) != cudaSuccess ||
	    (e = cudaMallocHost((void **)&c->host, 64 * sizeof(double))) != cudaSuccess) {
		rc = cu_fail(op, e);
	} else {
		cublasStatus_t s;
		if ((s = cublasCreate(&c->blas)) != CUBLAS_STATUS_SUCCESS ||
		    (s = cublasSetStream(c->blas, c->stream)) != CUBLAS_STATUS_SUCCESS ||
		    (s = cublasSetWorkspace(c->blas, c->blas_ws, CU_BLAS_WS)) !=
			CUBLAS_STATUS_SUCCESS ||
		    /* FP32 arithmetic as the CPU backend does it: no TF32,
		     * unless asked for (bf16 products are cublasGemmEx
		     * calls, which use tensor cores in the default mode) */
		    (s = cublasSetMathMode(c->blas, prec == FEDRUN_PRECISION_TF32
							? CUBLAS_TF32_TENSOR_OP_MATH
							: CUBLAS_DEFAULT_MATH)) !=
			CUBLAS_STATUS_SUCCESS ||
		    (s = cublasSetAtomicsMode(c->blas, CUBLAS_ATOMICS_NOT_ALLOWED)) !=
			CUBLAS_STATUS_SUCCESS ||
		    (s = cublasSetPointerMode(c->blas, CUBLAS_POINTER_MODE_HOST)) !=
			CUBLAS_STATUS_SUCCESS)
			rc = cu_blas_fail(op, s);
	}
	if (rc < 0) {
		cu_ctx_destroy(c);
		return rc;
	}
	*ctx = c;
	return 0;
}

extern "C" int cu_alloc(void *ctx, uint64_t bytes, void **p)
{
	struct cu_ctx *c = cu_enter(ctx, "alloc");
	if (!c)
		return FEDRUN_EINVAL;
	if (!p)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend alloc: NULL result pointer");
	/* cudaMalloc's blocks are aligned to 256 bytes, more than the 64
	 * the table asks for. A zero-byte request still gets a block, so
	 * that the pointer is not NULL. */
	void *m = NULL;
	cudaError_t e = cudaMalloc(&m, bytes ? bytes : 64);
	if (e != cudaSuccess) {
		cudaGetLastError(); /* clear the sticky-free error */
		return fedrun_error(FEDRUN_ENOMEM, "cuda backend alloc: %llu bytes: %s",
				    (unsigned long long)bytes, cudaGetErrorString(e));
	}
	e = cudaMemsetAsync(m, 0, bytes ? bytes : 64, c->stream);
	if (e != cudaSuccess) {
		cudaFree(m);
		return cu_fail("alloc", e);
	}
	*p = m;
	return 0;
}

extern "C" void cu_free_mem(void *ctx, void *p)
{
	struct cu_ctx *c = (struct cu_ctx *)ctx;
	if (!p)
		return;
	/* Work queued on the stream may still use p. */
	if (c) {
		cudaSetDevice(c->device);
		cudaStreamSynchronize(c->stream);
		/* the declared parameters freed: their copies would outlive
		 * them, and a new block at the same address is other data */
		if (c->pn && (const float *)p >= c->pp && (const float *)p < c->pp + c->pn) {
			wcopies_free(c);
			c->pp = NULL;
			c->pn = 0;
		}
	}
	cudaFree(p);
}

extern "C" int cu_zero(void *ctx, void *p, uint64_t bytes)
{
	struct cu_ctx *c = cu_enter(ctx, "zero");
	if (!c)
		return FEDRUN_EINVAL;
	if (!bytes)
		return 0;
	if (!p)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend zero: NULL pointer");
	CU_TRY("zero", cudaMemsetAsync(p, 0, bytes, c->stream));
	cu_params_written(c, p, bytes);
	return 0;
}

extern "C" int cu_copy(void *ctx, void *dst, const void *src, uint64_t bytes)
{
	struct cu_ctx *c = cu_enter(ctx, "copy");
	if (!c)
		return FEDRUN_EINVAL;
	if (!bytes)
		return 0;
	if (!dst || !src)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend copy: NULL pointer");
	CU_TRY("copy", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
	cu_params_written(c, dst, bytes);
	return 0;
}

/* From pageable host memory cudaMemcpyAsync returns once the source has
 * been staged, so the caller may reuse host_src at once (CUDA runtime API,
 * "API synchronization behavior"). */
extern "C" int cu_to_device(void *ctx, void *dst, const void *host_src, uint64_t bytes)
{
	struct cu_ctx *c = cu_enter(ctx, "to_device");
	if (!c)
		return FEDRUN_EINVAL;
	if (!bytes)
		return 0;
	if (!dst || !host_src)
		return fedrun_error(FEDRUN_EINVAL, "cuda backend to_device: NULL pointer");
	CU_TRY("to_device",
	       cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, c->stream));
	cu_params_written(c, dst, bytes);
	return 0;
}

extern "C" int cu_to_host(void *ctx, void *host_dst, const void *src, uint64_t bytes)
{
	struct cu_ctx *c = cu_enter(ctx, "to_host");
	if (!c)
		return FEDRUN_EINVAL;
	if (bytes && (!host_dst || !src))
		return fedrun_error(FEDRUN_EINVAL, "cuda backend to_host: NULL pointer");
	if (bytes)
		CU_TRY("to_host",
		       cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
	return cu_sync(c, "to_host");
}

struct cu_drop cu_drop_take(struct fedrun_rng *rng, uint64_t n, float p)
{
	struct cu_drop d;
	d.k0 = rng->key[0];
	d.k1 = rng->key[1];
	d.c2 = rng->ctr[2];
	d.c3 = rng->ctr[3];
	d.base = (uint64_t)rng->ctr[0] | (uint64_t)rng->ctr[1] << 32;
	d.thr = FEDRUN_DROPOUT_THRESHOLD(p);
	uint64_t end = d.base + (n + 3) / 4;
	rng->ctr[0] = (uint32_t)end;
	rng->ctr[1] = (uint32_t)(end >> 32);
	rng->pos = 4;
	return d;
}
