/* SPDX-License-Identifier: Apache-2.0 */
/* Row reductions in a fixed order of lanes for the CPU kernels (layer norm,
 * attention softmax, label-smoothed cross-entropy): element j goes into lane
 * j % NN_LANES and the lanes are added in order at the end, so a sum rounds
 * the same way whatever vector width the compiler or the ifunc clone picks.
 * Include after fastmath.h, from files whose hot functions are NN_SIMD_CLONES. */
#ifndef FEDRUN_NN_LANES_H
#define FEDRUN_NN_LANES_H

#include <stdint.h>

#define NN_LANES 16

/* Largest of x[0..n), n >= 1. */
static inline float nn_lanes_max(uint32_t n, const float *x)
{
	const uint32_t nm = n - n % NN_LANES;
	float mx[NN_LANES];
	for (uint32_t q = 0; q < NN_LANES; q++)
		mx[q] = x[0];
	for (uint32_t j0 = 0; j0 < nm; j0 += NN_LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < NN_LANES; q++)
			mx[q] = x[j0 + q] > mx[q] ? x[j0 + q] : mx[q];
	}
	float m = x[0];
	for (uint32_t j = nm; j < n; j++)
		m = x[j] > m ? x[j] : m;
	for (uint32_t q = 0; q < NN_LANES; q++)
		m = mx[q] > m ? mx[q] : m;
	return m;
}

/* Adds the lanes in order, then the tail x[nm..n). */
static inline float nn_lanes_fold(const float lane[NN_LANES], float tail)
{
	float s = 0.0f;
	for (uint32_t q = 0; q < NN_LANES; q++)
		s += lane[q];
	return s + tail;
}

/* sum of x[0..n). */
static inline float nn_lanes_sum(uint32_t n, const float *x)
{
	const uint32_t nm = n - n % NN_LANES;
	float lane[NN_LANES] = {0};
	for (uint32_t j0 = 0; j0 < nm; j0 += NN_LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < NN_LANES; q++)
			lane[q] += x[j0 + q];
	}
	float t = 0.0f;
	for (uint32_t j = nm; j < n; j++)
		t += x[j];
	return nn_lanes_fold(lane, t);
}

/* sum of (x[j] - c)^2 over [0, n): the second pass of a two-pass
 * variance, which does not cancel as E[x^2] - E[x]^2 does. */
static inline float nn_lanes_sqdev(uint32_t n, const float *x, float c)
{
	const uint32_t nm = n - n % NN_LANES;
	float lane[NN_LANES] = {0};
	for (uint32_t j0 = 0; j0 < nm; j0 += NN_LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < NN_LANES; q++) {
			float v = x[j0 + q] - c;
			lane[q] += v * v;
		}
	}
	float t = 0.0f;
	for (uint32_t j = nm; j < n; j++) {
		float v = x[j] - c;
		t += v * v;
	}
	return nn_lanes_fold(lane, t);
}

/* sum of x[j] y[j] over [0, n). */
static inline float nn_lanes_dot(uint32_t n, const float *x, const float *y)
{
	const uint32_t nm = n - n % NN_LANES;
	float lane[NN_LANES] = {0};
	for (uint32_t j0 = 0; j0 < nm; j0 += NN_LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < NN_LANES; q++)
			lane[q] += x[j0 + q] * y[j0 + q];
	}
	float t = 0.0f;
	for (uint32_t j = nm; j < n; j++)
		t += x[j] * y[j];
	return nn_lanes_fold(lane, t);
}

#endif
