/* SPDX-License-Identifier: Apache-2.0 */
/* Reference sinusoidal positional encoding, straight from sec. 3.5 of
 * Vaswani et al. 2017: PE(p, 2i) = sin(p / 10000^(2i/D)),
 * PE(p, 2i+1) = cos(p / 10000^(2i/D)). */
#include "config.h"
#include <math.h>
#include "ref.h"

void nn_ref_posenc_forward(uint32_t B, uint32_t T, uint32_t D, uint32_t pos0, double scale,
			   const double *x, double *y)
{
	for (uint32_t b = 0; b < B; b++)
		for (uint32_t t = 0; t < T; t++)
			for (uint32_t j = 0; j < D; j++) {
				uint64_t o = ((uint64_t)b * T + t) * D + j;
				double pos = (double)pos0 + t;
				double a = pos / pow(10000.0, (double)(j - j % 2) / D);
				double pe = j % 2 ? cos(a) : sin(a);
				y[o] = (x ? scale * x[o] : 0.0) + pe;
			}
}
