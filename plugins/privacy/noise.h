/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the privacy plugins: the two noise sources (the secure one,
 * ChaCha20 keyed from getrandom(2), and the reproducible one, the stream
 * (seed, FEDRUN_RNG_PRIVACY, round, client)), clipping an update's sent
 * tensors to an L2 or L1 bound, and the parsing of the "noise" option. */
#ifndef FEDRUN_PRIVACY_NOISE_H
#define FEDRUN_PRIVACY_NOISE_H

#include <math.h>
#include <stdbool.h>
#include <fedrun/fedrun.h>
#include <fedrun/csprng.h>

enum { NOISE_SECURE = 0, NOISE_REPRODUCIBLE = 1 };
#define NOISE_CHOICES "secure|reproducible"

/* The stream id of noise the server adds (no client has this id). */
#define NOISE_SERVER UINT32_MAX

struct noise_src {
	bool secure;
	struct fedrun_rng rng;
	struct fedrun_csprng cs;
};

/* Opens the noise stream of (round, stream): a fresh ChaCha20 key when
 * secure, else the seed's privacy stream. Close with noise_src_fini. */
static inline int noise_src_init(struct noise_src *s, int source,
				 const struct fedrun_round_info *round, uint32_t stream)
{
	s->secure = source == NOISE_SECURE;
	if (s->secure)
		return fedrun_csprng_init(&s->cs);
	fedrun_rng_init(&s->rng, round->seed, FEDRUN_RNG_PRIVACY, round->round, stream);
	return 0;
}

static inline void noise_src_fini(struct noise_src *s)
{
	if (s->secure)
		fedrun_csprng_fini(&s->cs);
}

static inline double noise_normal(struct noise_src *s)
{
	return s->secure ? fedrun_csprng_normal(&s->cs) : fedrun_rng_normal(&s->rng);
}

static inline double noise_laplace(struct noise_src *s, double b)
{
	return s->secure ? fedrun_csprng_laplace(&s->cs, b) : fedrun_rng_laplace(&s->rng, b);
}

/* Adds scale·N(0, 1) (laplace false) or Lap(0, scale) to every entry of
 * the tensors with mask[i] set (mask NULL: every tensor). */
static inline void noise_add(struct noise_src *s, const struct fedrun_layout *l,
			     const uint8_t *mask, float *delta, bool laplace, double scale)
{
	for (uint32_t i = 0; i < l->n; i++) {
		if (mask && !mask[i])
			continue;
		float *x = delta + l->t[i].offset;
		if (laplace)
			for (uint64_t j = 0; j < l->t[i].numel; j++)
				x[j] += (float)noise_laplace(s, scale);
		else
			for (uint64_t j = 0; j < l->t[i].numel; j++)
				x[j] += (float)(scale * noise_normal(s));
	}
}

/* The L2 (l1 false) or L1 norm of the sent tensors together. */
static inline double noise_norm(const struct fedrun_layout *l, const uint8_t *mask,
				const float *delta, bool l1)
{
	double acc = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		if (!mask[i])
			continue;
		const float *x = delta + l->t[i].offset;
		acc += l1 ? fedrun_vec_asum(l->t[i].numel, x) : fedrun_vec_dot(l->t[i].numel, x, x);
	}
	return l1 ? acc : sqrt(acc);
}

static inline void noise_scale(const struct fedrun_layout *l, const uint8_t *mask, float *delta,
			       double f)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (mask[i])
			fedrun_vec_scale(l->t[i].numel, (float)f, delta + l->t[i].offset);
}

/* Scales the sent tensors so that their L2 (or L1) norm is at most `bound`:
 * the clipping that bounds a client's sensitivity. Rounding to float can
 * leave the scaled norm a few ulps above the bound, so the result is checked
 * and, if need be, scaled again just below it: the bound always holds, and
 * a clipped update's norm is the bound to within about 1e-7 relative.
 * Returns FEDRUN_ENUMERIC for a non-finite update. */
static inline int noise_clip(const struct fedrun_layout *l, const uint8_t *mask, float *delta,
			     bool l1, double bound, uint32_t client)
{
	double norm = noise_norm(l, mask, delta, l1);
	if (!isfinite(norm))
		return fedrun_error(FEDRUN_ENUMERIC,
				    "client %u: the update holds non-finite values before clipping",
				    client);
	for (int tries = 0; norm > bound; tries++) {
		if (tries == 8)
			return fedrun_error(
			    FEDRUN_ENUMERIC,
			    "client %u: cannot clip the update below %g (norm %.9g)", client, bound,
			    norm);
		/* one float rounding moves the norm by at most 2^-24 relative */
		noise_scale(l, mask, delta, bound / norm * (tries == 0 ? 1.0 : 1.0 - 0x1p-22));
		norm = noise_norm(l, mask, delta, l1);
	}
	return 0;
}

/* The name of a noise source, for logs. */
static inline const char *noise_name(int source)
{
	return source == NOISE_SECURE ? "secure (ChaCha20 keyed from getrandom(2) per stream)"
				      : "reproducible (from the seed; gives no privacy)";
}

#endif
