/* SPDX-License-Identifier: Apache-2.0 */
/* Vector kernels over parameter arenas, for aggregators, selectors and
 * privacy plugins. Parallel (OpenMP) and deterministic: every reduction adds
 * fixed-size blocks in a fixed order, so results do not depend on the
 * number of threads. */
#ifndef FEDRUN_VEC_H
#define FEDRUN_VEC_H

#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y += a x */
void fedrun_vec_axpy(uint64_t n, float a, const float *x, float *y);
/* x *= a */
void fedrun_vec_scale(uint64_t n, float a, float *x);
/* out = a - b (out may alias a or b) */
void fedrun_vec_sub(uint64_t n, const float *a, const float *b, float *out);
/* y += sum_j w[j] x[j], for k vectors x[0..k-1]; x[j] may be NULL (skipped).
 * One pass over y: the kernel behind fedavg. */
void fedrun_vec_wsum(uint64_t n, uint32_t k, const float *const *x, const float *w,
		     float *y);
/* y += sum_j w[j] x[j] in double, x[j] may be NULL (skipped): each y[i]
 * adds the k terms in order j = 0, 1, ..., so cutting the vectors into
 * calls of any sizes gives the same bits. The kernel behind streaming
 * aggregation (fedavg's accumulate). */
void fedrun_vec_wsum_d(uint64_t n, uint32_t k, const float *const *x, const double *w,
		       double *y);
/* Dot product, accumulated in double. */
double fedrun_vec_dot(uint64_t n, const float *x, const float *y);
/* Euclidean norm, accumulated in double. */
double fedrun_vec_nrm2(uint64_t n, const float *x);
/* Euclidean distance ||x - y||, accumulated in double. */
double fedrun_vec_dist2(uint64_t n, const float *x, const float *y);
/* L1 norm, accumulated in double. */
double fedrun_vec_asum(uint64_t n, const float *x);
/* True when every element is finite; otherwise *bad (if not NULL) is the
 * index of the first non-finite element. */
bool fedrun_vec_finite(uint64_t n, const float *x, uint64_t *bad);

#ifdef __cplusplus
}
#endif
#endif
