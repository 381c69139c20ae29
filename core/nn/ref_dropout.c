/* SPDX-License-Identifier: Apache-2.0 */
/* Reference inverted dropout: the mask drawn word by word from the stream,
 * as fedrun/backend.h defines it. */
#include "config.h"
#include "ref.h"

void nn_ref_dropout_forward(uint64_t n, double p, struct fedrun_rng *rng, const double *x,
			    double *y, uint8_t *mask)
{
	const uint32_t thr = FEDRUN_DROPOUT_THRESHOLD(p);
	rng->pos = 4; /* discard buffered words */
	for (uint64_t i = 0; i < n; i++) {
		mask[i] = fedrun_rng_u32(rng) >= thr;
		y[i] = mask[i] ? x[i] / (1.0 - p) : 0.0;
	}
	/* A partial last block leaves words in the buffer; the op's contract
	 * leaves the stream at the next block with the buffer empty. */
	rng->pos = 4;
}

void nn_ref_dropout_backward(uint64_t n, double p, const uint8_t *mask, const double *dy,
			     double *dx)
{
	for (uint64_t i = 0; i < n; i++)
		dx[i] = mask[i] ? dy[i] / (1.0 - p) : 0.0;
}
