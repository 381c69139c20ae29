/* SPDX-License-Identifier: Apache-2.0 */
/* Branch-free float exp, sigmoid and tanh that the compiler can vectorize
 * inside `#pragma omp simd` loops (libm calls cannot be, without
 * -ffast-math), for the fused element-wise kernels of the CPU backend.
 * Accuracy is checked against libm by tests/test_nn_ops.c. */
#ifndef FEDRUN_NN_FASTMATH_H
#define FEDRUN_NN_FASTMATH_H

#include <stdint.h>
#include <string.h>

/* Two GCC settings for every file that includes this header, neither of
 * which changes a result the way -ffast-math would:
 *  - no-trapping-math: under its default -ftrapping-math GCC will not
 *    if-convert the float selects below (the clamps, the tanh branches) and
 *    leaves the loops scalar. fedrun never unmasks floating-point traps.
 *  - fp-contract=off: AVX-512F has fused multiply-add, and GCC would fuse
 *    a * b + c in the AVX-512 clones (NN_SIMD_CLONES) but not in the
 *    others, so the same input would give different bits on different
 *    machines.
 * Clang neither traps nor contracts across statements by default. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "fp-contract=off")
#endif

/* Marks a function holding a hot element-wise loop to be compiled also for
 * AVX-512 and AVX2, the best chosen at load time (GCC function
 * multiversioning through an ifunc). With contraction off and every
 * reduction in a fixed order of lanes, each variant rounds exactly as the
 * baseline does: the same bits on every x86-64 machine. */
#ifndef NN_SIMD_CLONES /* -DNN_SIMD_CLONES= builds the baseline only */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define NN_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NN_SIMD_CLONES
#endif
#endif

/* e^x. Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, then the Cephes
 * expf minimax polynomial for e^r (relative error about 2e-7 over the
 * reduced range), scaled by 2^k built in the exponent bits. The input is
 * clamped to [-87, 88] so that 2^k stays a normal number: below the range
 * the result is about 1.6e-38 instead of a denormal or zero, above it about
 * 1.7e38 instead of inf, which the sigmoid and tanh below tolerate. */
static inline float nn_expf(float x)
{
	const float log2e = 1.44269504088896341f;
	const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
	/* Adding and subtracting 1.5 * 2^23 rounds to the nearest integer
	 * (the default rounding mode), with no call to rintf. */
	const float magic = 12582912.0f;
	x = x < -87.0f ? -87.0f : x;
	x = x > 88.0f ? 88.0f : x;
	/* NaN passes both clamps: compute on 0 (the int conversion of a NaN k
	 * is undefined) and give the NaN back. */
	const float in = x;
	x = in != in ? 0.0f : x;
	float k = (x * log2e + magic) - magic;
	float r = x - k * ln2_hi;
	r = r - k * ln2_lo;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	int32_t bits = ((int32_t)k + 127) << 23;
	float scale;
	memcpy(&scale, &bits, sizeof scale);
	return in != in ? in : p * scale;
}

static inline float nn_sigmoidf(float x)
{
	return 1.0f / (1.0f + nn_expf(-x));
}

/* tanh x = sign(x) (1 - e^{-2|x|}) / (1 + e^{-2|x|}). Near zero that
 * difference cancels, so below |x| = 0.1 the odd Taylor series to x^7 takes
 * over (the next term, 62 x^9 / 2835, is below 2.2e-11 there). */
static inline float nn_tanhf(float x)
{
	float a = x < 0 ? -x : x;
	float e = nn_expf(-2.0f * a);
	float big = (1.0f - e) / (1.0f + e);
	float a2 = a * a;
	float small =
	    a * (1.0f + a2 * (-1.0f / 3.0f + a2 * (2.0f / 15.0f + a2 * (-17.0f / 315.0f))));
	float t = a < 0.1f ? small : big;
	return x < 0 ? -t : t;
}

#endif
