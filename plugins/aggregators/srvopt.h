/* SPDX-License-Identifier: Apache-2.0 */
/* Server optimizers over the parameter arena, shared by fedopt and meritfed
 * (MeritOpt): the adaptive rules of Reddi et al. 2021, "Adaptive Federated
 * Optimization", Algorithm 2 (FedAdagrad, FedAdam, FedYogi), and server
 * momentum SGD (FedAvgM, Hsu, Qi, Brown 2019). `d` is always a direction to
 * move along, Reddi's pseudo-gradient Δ_t (the weighted mean of the client
 * updates Δ_k = θ_k − θ_t), so every rule adds to x. */
#ifndef SRVOPT_H
#define SRVOPT_H

#include <stdbool.h>
#include <stdint.h>
#include "fedrun/plugin.h"

enum srvopt_method { SRVOPT_SGD, SRVOPT_ADAM, SRVOPT_YOGI, SRVOPT_ADAGRAD };

struct srvopt_cfg {
	enum srvopt_method method;
	double lr;	      /* η: server learning rate */
	double momentum;      /* SGD: v ← μ v + d; x ← x + η v (0: plain x + η d) */
	double beta1;	      /* adaptive: m ← β1 m + (1 − β1) d */
	double beta2;	      /* Adam, Yogi: second-moment decay */
	double tau;	      /* adaptive: x ← x + η m / (√v + τ); > 0 */
	double v0;	      /* adaptive: initial v (Algorithm 2: v_{−1} ≥ τ²) */
	bool bias_correction; /* divide m by 1 − β1^t and v by 1 − β2^t (Kingma and Ba) */
};

/* Caller-owned. The moment arenas have the layout of the parameters, so a
 * span [off, off + len) of a tensor has its moments at the same offsets. */
struct srvopt {
	struct srvopt_cfg cfg;
	uint64_t n;    /* floats per arena */
	float *m;      /* momentum or first moment; NULL when the rule has none */
	float *v;      /* second moment; NULL for SGD */
	uint64_t step; /* rounds completed */
	struct fedrun_state_blob blobs[3];
	uint32_t nblobs; /* blobs[0..nblobs): "m", "v" when present, "step" */
};

int srvopt_init(struct srvopt *o, const struct srvopt_cfg *cfg, uint64_t n);
void srvopt_fini(struct srvopt *o);

/* One step of the rule on x[0..len) with direction d, for the span that
 * starts at arena offset `off`: updates the moments there and x in place.
 * Every span of a round uses step t = o->step + 1; call srvopt_end_round()
 * once when the round's spans are done. */
void srvopt_apply(struct srvopt *o, uint64_t off, uint64_t len, float *x, const float *d);
void srvopt_end_round(struct srvopt *o);

/* What srvopt_apply would give, without touching the moments: out = the new
 * x; jac (may be NULL) = ∂out/∂d element by element (each element of the
 * new x depends only on the same element of d). */
void srvopt_candidate(const struct srvopt *o, uint64_t off, uint64_t len, const float *x,
		      const float *d, float *out, float *jac);

#endif
