/* Local optimizers over a parameter arena: SGD with momentum (Algorithm 2 of
 * the FedAtt paper; PyTorch's convention), Adam and AdamW. */
#ifndef FEDRUN_OPTIM_H
#define FEDRUN_OPTIM_H

#include <stdint.h>
#include "fedrun/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Floats of optimizer state for an arena of n floats (0, n or 2n). */
uint64_t fedrun_optim_state_floats(const struct fedrun_optim_cfg *cfg, uint64_t n);

/* One step on params (n floats) with gradient grad, which it may modify
 * (weight decay, clipping). state holds fedrun_optim_state_floats() floats
 * (zero before the first step); *step counts steps taken and is advanced.
 * lr overrides cfg->lr (for schedules). */
void fedrun_optim_step(const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
		       float *params, float *grad, float *state, uint64_t *step);

/* Scales grad so that its L2 norm is at most max_norm; returns the norm
 * before clipping. */
double fedrun_clip_grad_norm(uint64_t n, float *grad, double max_norm);

/* FedProx (Li et al. 2020, eq. 2): adds mu (params - anchor), the gradient
 * of the proximal term mu/2 ||w - w_t||^2, to grad (n floats); anchor is
 * w_t, the parameters the client received. */
void fedrun_prox_grad(uint64_t n, double mu, const float *params, const float *anchor,
		      float *grad);

#ifdef __cplusplus
}
#endif
#endif
