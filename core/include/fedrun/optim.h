/* SPDX-License-Identifier: Apache-2.0 */
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

/* fedrun_optim_step, then grad is all zeros, ready for the next step's
 * accumulation: the zeroing happens in the update's own pass over grad,
 * which saves the separate pass (a memset) that a training loop would
 * otherwise make before each step. The same params and state. */
void fedrun_optim_step_zero(const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
			    float *params, float *grad, float *state, uint64_t *step);

/* Scales grad so that its L2 norm is at most max_norm; returns the norm
 * before clipping. */
double fedrun_clip_grad_norm(uint64_t n, float *grad, double max_norm);

/* FedProx (Li et al. 2020, eq. 2): adds the gradient of
 * μ/2·||w − w_t||², μ(w − w_t), to grad when args->prox_mu > 0 (w = params,
 * w_t = args->prox_anchor). Models call it before each optimizer step. */
void fedrun_prox_grad(const struct fedrun_train_args *args, uint64_t n, const float *params,
		      float *grad);

/* Learning-rate schedules with warm-up for Transformers. `step` is the
 * 1-based number of the update about to be made: the value that
 * fedrun_optim_step's *step holds after the call (updates done + 1).
 *
 * Vaswani et al. 2017, sec. 5.3, eq. 3 ("noam"), times a factor (1 in the
 * paper):
 *   lr = factor d_model^-0.5 min(step^-0.5, step warmup^-1.5),
 * a linear rise for warmup steps to factor (d_model warmup)^-0.5, then a
 * decay proportional to step^-0.5. Returns 0 for step 0; warmup 0 skips
 * the rise. */
double fedrun_lr_noam(uint64_t step, uint32_t d_model, uint64_t warmup, double factor);

/* fairseq's inverse_sqrt schedule: a linear rise from init_lr to peak_lr
 * over warmup updates, then peak_lr sqrt(warmup / u). With u = step - 1,
 * the number of updates already made (fairseq's num_updates):
 *   lr = init_lr + u (peak_lr - init_lr) / warmup   if u < warmup,
 *   lr = peak_lr sqrt(warmup / u)                   otherwise,
 * so the first update uses init_lr, as in fairseq (whose default init_lr
 * is 0). warmup 0 means no rise: lr = peak_lr / sqrt(max(u, 1)). */
double fedrun_lr_inverse_sqrt(uint64_t step, double peak_lr, uint64_t warmup, double init_lr);

#ifdef __cplusplus
}
#endif
#endif
