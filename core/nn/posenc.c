/* SPDX-License-Identifier: Apache-2.0 */
/* Sinusoidal positional encodings (Vaswani et al. 2017, sec. 3.5) added to
 * embeddings scaled by sqrt(D) (sec. 3.4), on the CPU backend. Each
 * encoding value is computed once per call, in double, and added to the B
 * rows that share its position. libm may pick other (FMA) variants of sin
 * and cos on other machines, differing in the last bit of the double; the
 * float result then differs only for a value within that bit of a float
 * rounding boundary. */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include "fedrun/error.h"
#include "cpu.h"
#include "fastmath.h"

#define PE_CHUNK 256 /* columns of encoding computed at once, on the stack */

/* y = scale x + pe over len floats (x NULL: y = pe); y may be x. */
NN_SIMD_CLONES
static void pe_add(uint32_t len, float scale, const float *x, const float *restrict pe, float *y)
{
	if (x) {
#pragma omp simd
		for (uint32_t j = 0; j < len; j++)
			y[j] = scale * x[j] + pe[j];
	} else {
#pragma omp simd
		for (uint32_t j = 0; j < len; j++)
			y[j] = pe[j];
	}
}

int nn_cpu_posenc_forward(void *ctx, uint32_t B, uint32_t T, uint32_t D, uint32_t pos0, float scale,
			  const float *x, float *y)
{
	if (!isfinite(scale))
		return fedrun_error(FEDRUN_EINVAL, "posenc_forward: scale = %g", (double)scale);
	if (!B || !T || !D)
		return 0;
	if (!y)
		return fedrun_error(FEDRUN_EINVAL, "posenc_forward: NULL y");
	/* freq[i] = 10000^(-2i/D), the angular frequency of columns 2i and
	 * 2i + 1 (eq. of sec. 3.5) */
	const uint32_t nf = (D + 1) / 2;
	double *freq = malloc(nf * sizeof *freq);
	if (!freq)
		return fedrun_error(FEDRUN_ENOMEM, "posenc_forward: %u frequencies", nf);
	for (uint32_t i = 0; i < nf; i++)
		freq[i] = pow(10000.0, -(2.0 * i) / (double)D);
	const uint64_t rowstride = (uint64_t)T * D; /* floats between sequences */
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)B * T * D >= NN_PAR_MIN)
	for (uint32_t t = 0; t < T; t++) {
		const double pos = (double)pos0 + t;
		float pe[PE_CHUNK];
		for (uint32_t j0 = 0; j0 < D; j0 += PE_CHUNK) {
			uint32_t len = D - j0 < PE_CHUNK ? D - j0 : PE_CHUNK;
			for (uint32_t j = 0; j < len; j++) {
				uint32_t c = j0 + j;
				double a = pos * freq[c / 2];
				pe[j] = (float)(c % 2 ? cos(a) : sin(a));
			}
			for (uint32_t b = 0; b < B; b++) {
				uint64_t o = b * rowstride + (uint64_t)t * D + j0;
				pe_add(len, scale, x ? x + o : NULL, pe, y + o);
			}
		}
	}
	free(freq);
	return 0;
}

NN_SIMD_CLONES
static void pe_scale(uint64_t n, float scale, const float *dy, float *dx)
{
#pragma omp simd
	for (uint64_t i = 0; i < n; i++)
		dx[i] = scale * dy[i];
}

int nn_cpu_posenc_backward(void *ctx, uint32_t B, uint32_t T, uint32_t D, float scale,
			   const float *dy, float *dx)
{
	if (!isfinite(scale))
		return fedrun_error(FEDRUN_EINVAL, "posenc_backward: scale = %g", (double)scale);
	const uint64_t n = (uint64_t)B * T * D, chunk = 4096;
	if (!n)
		return 0;
	if (!dy || !dx)
		return fedrun_error(FEDRUN_EINVAL, "posenc_backward: NULL dy or dx");
	const uint64_t nch = (n + chunk - 1) / chunk;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if (n >= NN_PAR_MIN)
	for (uint64_t c = 0; c < nch; c++) {
		uint64_t i0 = c * chunk;
		pe_scale(n - i0 < chunk ? n - i0 : chunk, scale, dy + i0, dx + i0);
	}
	return 0;
}
