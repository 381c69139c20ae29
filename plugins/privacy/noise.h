/* Shared by the noise plugins: adding i.i.d. noise to the sent tensors of an
 * update from the reproducible stream (seed, FEDRUN_RNG_PRIVACY, round,
 * client). */
#ifndef FEDRUN_PRIVACY_NOISE_H
#define FEDRUN_PRIVACY_NOISE_H

#include <fedrun/fedrun.h>

/* draw(rng, param) returns one noise value. */
static inline void noise_add(const struct fedrun_round_info *round, uint32_t client,
			     const uint8_t *mask, float *delta,
			     double (*draw)(struct fedrun_rng *, double), double param)
{
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, round->seed, FEDRUN_RNG_PRIVACY, round->round, client);
	const struct fedrun_layout *l = round->layout;
	for (uint32_t i = 0; i < l->n; i++) {
		if (!mask[i])
			continue;
		float *x = delta + l->t[i].offset;
		for (uint64_t j = 0; j < l->t[i].numel; j++)
			x[j] += (float)draw(&rng, param);
	}
}

#endif
