/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the CUDA backend: its execution context, error checking and
 * the helpers that several .cu files share. */
#ifndef FEDRUN_CUDA_INTERNAL_CUH
#define FEDRUN_CUDA_INTERNAL_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include "fedrun/error.h"
#include "cuda_backend.h"

/* One context: a device, a stream that every op of the context is queued
 * on (so the ops of one context run in order, and contexts on different
 * threads run side by side), a cuBLAS handle bound to that stream with a
 * fixed workspace (cuBLAS is then deterministic for a given GPU and
 * library: no split-K with atomics, no workspace chosen per call), and
 * scratch memory that ops borrow for the duration of a call. */
struct cu_ctx {
	int device;
	cudaStream_t stream;
	cublasHandle_t blas;
	void *blas_ws;	     /* cuBLAS workspace, fixed */
	void *scratch;	     /* device scratch, grown on demand */
	uint64_t scratch_bytes;
	double *host;	     /* pinned host memory for scalars coming back */
	const void **ptrs;   /* device arrays of matrix pointers (cu_gemm_heads) */
	uint64_t ptrs_bytes;
	bool deterministic;  /* FEDRUN_CUDA_DETERMINISTIC != 0 (the default) */
	uint32_t precision;  /* enum fedrun_precision of the products */
	/* BF16 contexts: the two operands of the current product, converted */
	__nv_bfloat16 *bf[2];
	uint64_t bf_bytes[2];
	/* the range given to declare_params, and the bf16 copies of the
	 * operands read from it (cu_gemm) */
	const float *pp;
	uint64_t pn;
	struct cu_wcopy *w;
	uint32_t nw, capw;
};

/* The bf16 copy of a parameter matrix as it is stored (rows of cols floats
 * from ptr, row stride ld), dense with row stride dld: the same copy
 * serves a product that reads it transposed and one that does not. */
struct cu_wcopy {
	const float *ptr;
	int rows, cols, ld, dld;
	bool valid; /* false: written since; convert again */
	__nv_bfloat16 *data;
};

/* Records a CUDA runtime failure (a negative FEDRUN_E* code). */
int cu_fail(const char *op, cudaError_t e);
/* Records a cuBLAS failure. */
int cu_blas_fail(const char *op, cublasStatus_t s);
/* The context (made current on the calling thread), or NULL with a
 * recorded error when ctx is NULL. */
struct cu_ctx *cu_enter(void *ctx, const char *op);
/* Device scratch of at least `bytes`, valid until the next call of an op of
 * the same context; NULL with an error recorded on failure. */
void *cu_scratch(struct cu_ctx *c, uint64_t bytes, const char *op);
/* Makes *p (device memory, *bytes of it) hold at least `bytes`: grows it
 * by half again, waiting for the stream before freeing the old block,
 * which queued work may still read. Contents are not kept. */
int cu_grow(struct cu_ctx *c, void **p, uint64_t *cap, uint64_t bytes, const char *op);
/* A write through the context into [dst, dst + bytes): the bf16 copies of
 * parameters it overlaps are made again at their next use. */
void cu_params_written(struct cu_ctx *c, const void *dst, uint64_t bytes);
/* The error of the last launch on this thread, if any. */
int cu_check_launch(const char *op);
/* Waits for the context's stream; returns its error, if any. */
int cu_sync(struct cu_ctx *c, const char *op);
/* Waits for the stream and reads back a device flag that a kernel set to
 * the index of the first bad input (ids, key lengths) or left at -1: *index
 * gets it. Costs a wait, which ops pay to report bad input as the CPU
 * backend does, from the call that received it. */
int cu_read_flag(struct cu_ctx *c, const char *op, const int *flag, int *index);

#define CU_TRY(op, call)                                                                           \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess)                                                             \
			return cu_fail((op), e_);                                                  \
	} while (0)
#define CU_BLAS(op, call)                                                                          \
	do {                                                                                       \
		cublasStatus_t s_ = (call);                                                        \
		if (s_ != CUBLAS_STATUS_SUCCESS)                                                   \
			return cu_blas_fail((op), s_);                                             \
	} while (0)
#define CU_LAUNCHED(op)                                                                            \
	do {                                                                                       \
		int rc_ = cu_check_launch(op);                                                     \
		if (rc_ < 0)                                                                       \
			return rc_;                                                                \
	} while (0)

/* Blocks of `threads` covering n items (at least 1). */
static inline unsigned cu_blocks(uint64_t n, unsigned threads)
{
	uint64_t b = (n + threads - 1) / threads;
	if (b < 1)
		b = 1;
	return b > 0x7fffffffu ? 0x7fffffffu : (unsigned)b;
}

/* Row-major C (m,n) = alpha op(A) op(B) + beta C on the context's stream,
 * in the context's precision: FP32 (no TF32); TF32 (the handle's math
 * mode); BF16 (A and B converted to bf16, a parameter's copy kept; sums
 * and C in FP32). cu_gemm_batched and cu_gemm_heads likewise. */
int cu_gemm(struct cu_ctx *c, const char *op, bool ta, bool tb, int m, int n, int k, float alpha,
	    const float *a, int lda, const float *b, int ldb, float beta, float *cm, int ldc);
int cu_gemm_batched(struct cu_ctx *c, const char *op, bool ta, bool tb, int m, int n, int k,
		    float alpha, const float *a, int lda, int64_t sa, const float *b, int ldb,
		    int64_t sb, float beta, float *cm, int ldc, int64_t sc, int batch);

/* nb x nh products, problem (b, h) reading A + b sab + h sah, B + b sbb +
 * h sbh and writing C + b scb + h sch (strides in floats): the heads of
 * attention, a fixed stride apart within a sequence and another stride
 * between sequences, in one cuBLAS batched call whose pointer arrays a
 * kernel builds on the device. */
int cu_gemm_heads(struct cu_ctx *c, const char *op, bool ta, bool tb, int m, int n, int k,
		  float alpha, const float *a, int lda, int64_t sab, int64_t sah, const float *b,
		  int ldb, int64_t sbb, int64_t sbh, float beta, float *cm, int ldc, int64_t scb,
		  int64_t sch, int nb, int nh);

/* out[j] += sum over rows i of x[i ld + j] (N rows, D columns), the rows
 * added in an order fixed by (N, D): deterministic. part is device scratch
 * of cu_colsum_bytes(N, D) bytes, or NULL to take the context's scratch
 * (which invalidates pointers into it taken before). */
uint64_t cu_colsum_bytes(uint32_t N, uint32_t D);
int cu_colsum_acc(struct cu_ctx *c, const char *op, uint32_t N, uint32_t D, const float *x,
		  uint64_t ld, float *out, float *part);

/* Philox4x32-10 (Salmon et al. 2011), word `w` of block `blk` of a
 * fedrun_rng stream with key (k0, k1) and counter words c2, c3: the same
 * numbers as fedrun_philox4x32. */
__device__ __forceinline__ uint4 cu_philox(uint64_t blk, uint32_t c2, uint32_t c3, uint32_t k0,
					   uint32_t k1)
{
	uint32_t x0 = (uint32_t)blk, x1 = (uint32_t)(blk >> 32), x2 = c2, x3 = c3;
#pragma unroll
	for (int r = 0; r < 10; r++) {
		uint32_t hi0 = __umulhi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
		uint32_t hi1 = __umulhi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
		x0 = hi1 ^ x1 ^ k0;
		x1 = lo1;
		x2 = hi0 ^ x3 ^ k1;
		x3 = lo0;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	return make_uint4(x0, x1, x2, x3);
}

/* What a dropout kernel needs of a fedrun_rng: the key, the counter words
 * and the block the mask starts at (FEDRUN_DROPOUT_THRESHOLD's rule). */
struct cu_drop {
	uint32_t k0, k1, c2, c3;
	uint64_t base;
	uint32_t thr;
};
/* Reads the stream, and advances it past n elements' words (buffer
 * discarded), as the dropout rule of fedrun/backend.h says. */
struct cu_drop cu_drop_take(struct fedrun_rng *rng, uint64_t n, float p);

/* The dropout decision for element i: kept (1) or dropped (0). */
__device__ __forceinline__ uint8_t cu_keep(const struct cu_drop &d, uint64_t i)
{
	uint4 w = cu_philox(d.base + i / 4, d.c2, d.c3, d.k0, d.k1);
	uint32_t u = (i & 3) == 0 ? w.x : (i & 3) == 1 ? w.y : (i & 3) == 2 ? w.z : w.w;
	return u >= d.thr;
}

/* Block-wide sum of one value per thread (blockDim.x a multiple of 32, at
 * most 1024); every thread gets the total. Fixed order: deterministic. */
template <typename T> __device__ T cu_block_sum(T v)
{
	__shared__ T part[32];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
	__syncthreads();
	if (lane == 0)
		part[wid] = v;
	__syncthreads();
	T s = 0;
	for (int i = 0; i < nw; i++)
		s += part[i];
	return s;
}
template <typename T> __device__ T cu_block_max(T v)
{
	__shared__ T part[32];
	for (int o = 16; o > 0; o >>= 1) {
		T u = __shfl_xor_sync(0xffffffffu, v, o);
		v = u > v ? u : v;
	}
	const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
	__syncthreads();
	if (lane == 0)
		part[wid] = v;
	__syncthreads();
	T s = part[0];
	for (int i = 1; i < nw; i++)
		s = part[i] > s ? part[i] : s;
	return s;
}

#endif
