/* SPDX-License-Identifier: Apache-2.0 */
/* Local optimizers (see fedrun/optim.h). */
#include "config.h"
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include "fedrun/optim.h"
#include "fedrun/vec.h"
/* NN_SIMD_CLONES, with contraction off so that every clone rounds alike */
#include "fastmath.h"

uint64_t fedrun_optim_state_floats(const struct fedrun_optim_cfg *cfg, uint64_t n)
{
	switch (cfg->kind) {
	case FEDRUN_OPTIM_SGD: return cfg->momentum > 0 ? n : 0;
	case FEDRUN_OPTIM_ADAM:
	case FEDRUN_OPTIM_ADAMW: return 2 * n;
	}
	return 0;
}

/* Elements per partial sum of grad_sumsq, and its lanes: element i of a
 * block adds into lane i % NORM_LANES, the lanes are added in order, then
 * the blocks in order. Fixed by the source, so the same bits for any thread
 * count and vector width; the independent lanes let the loop vectorize,
 * where one running double sum waits on each addition in turn (that serial
 * sum cost as much as the SGD update itself). */
#define NORM_BLOCK 4096
#define NORM_LANES 16
#define NORM_PAR_MIN (1u << 16)

NN_SIMD_CLONES
static double block_sumsq(uint64_t len, const float *x)
{
	double lane[NORM_LANES] = {0};
	const uint64_t vm = len - len % NORM_LANES;
	for (uint64_t i0 = 0; i0 < vm; i0 += NORM_LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < NORM_LANES; q++) {
			double v = x[i0 + q];
			lane[q] += v * v;
		}
	}
	for (uint64_t i = vm; i < len; i++) {
		double v = x[i];
		lane[i - vm] += v * v;
	}
	double s = 0;
	for (uint32_t q = 0; q < NORM_LANES; q++)
		s += lane[q];
	return s;
}

/* The squared L2 norm of grad, in double. */
static double grad_sumsq(uint64_t n, const float *x)
{
	const uint64_t nb = (n + NORM_BLOCK - 1) / NORM_BLOCK;
	double stack[64], *part = nb <= 64 ? stack : malloc(nb * sizeof *part);
	if (!part) { /* no memory: the same blocks, one after the other */
		double s = 0;
		for (uint64_t b = 0; b < nb; b++) {
			uint64_t lo = b * NORM_BLOCK;
			s += block_sumsq(n - lo < NORM_BLOCK ? n - lo : NORM_BLOCK, x + lo);
		}
		return s;
	}
#pragma omp parallel for schedule(static) if (n >= NORM_PAR_MIN)
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t lo = b * NORM_BLOCK;
		part[b] = block_sumsq(n - lo < NORM_BLOCK ? n - lo : NORM_BLOCK, x + lo);
	}
	double s = 0;
	for (uint64_t b = 0; b < nb; b++)
		s += part[b];
	if (part != stack)
		free(part);
	return s;
}

/* The factor that global-norm clipping multiplies the gradient by (1 when
 * its norm is within max_norm): PyTorch's clip_grad_norm_, max / (norm +
 * 1e-6). */
static float clip_factor(double norm, double max_norm)
{
	return max_norm > 0 && norm > max_norm ? (float)(max_norm / (norm + 1e-6)) : 1.0f;
}

double fedrun_clip_grad_norm(uint64_t n, float *grad, double max_norm)
{
	double norm = sqrt(grad_sumsq(n, grad));
	float c = clip_factor(norm, max_norm);
	if (c != 1.0f)
		fedrun_vec_scale(n, c, grad);
	return norm;
}

/* fedrun_optim_step, and with zero every gradient element set to 0 in the
 * same loop, right after it is read. */
static void optim_step(const struct fedrun_optim_cfg *cfg, double lr, uint64_t n, float *params,
		       float *grad, float *state, uint64_t *step, bool zero)
{
	/* Clipping is folded into the update: each gradient element is
	 * multiplied by the factor as it is read (the same float product that
	 * scaling the array first would store), which saves a pass over the
	 * gradient and leaves grad as it was. Without clipping c is 1, and
	 * x * 1 is x exactly. */
	const float c =
	    cfg->clip_norm > 0 ? clip_factor(sqrt(grad_sumsq(n, grad)), cfg->clip_norm) : 1.0f;
	uint64_t t = ++*step;
	const float flr = (float)lr, wd = (float)cfg->weight_decay;

	switch (cfg->kind) {
	case FEDRUN_OPTIM_SGD: {
		/* v <- mu v + (g + wd p); p <- p - lr v (Nesterov: g + mu v). */
		const float mu = (float)cfg->momentum;
		const int nesterov = cfg->nesterov;
		if (mu > 0 && !nesterov && t > 1) {
			/* The usual case on its own, branch-free so that it
			 * vectorizes: the same float operations as below. */
/* clang-format off */
#define SGD_MOMENTUM(ZERO)                                                                         \
	_Pragma("omp parallel for simd schedule(static) if (n >= 65536)")                          \
	for (uint64_t i = 0; i < n; i++) {                                                         \
		float g = grad[i] * c + wd * params[i];                                            \
		ZERO;                                                                              \
		float v = mu * state[i] + g;                                                       \
		state[i] = v;                                                                      \
		params[i] -= flr * v;                                                              \
	}
			/* clang-format on */
			/* (a conditional store would keep it scalar) */
			if (zero) {
				SGD_MOMENTUM(grad[i] = 0.0f)
			} else {
				SGD_MOMENTUM((void)0)
			}
#undef SGD_MOMENTUM
			break;
		}
#pragma omp parallel for schedule(static) if (n >= 65536)
		for (uint64_t i = 0; i < n; i++) {
			float g = grad[i] * c + wd * params[i];
			if (zero)
				grad[i] = 0.0f;
			if (mu > 0) {
				float v = (t == 1) ? g : mu * state[i] + g;
				state[i] = v;
				g = nesterov ? g + mu * v : v;
			}
			params[i] -= flr * g;
		}
		break;
	}
	case FEDRUN_OPTIM_ADAM:
	case FEDRUN_OPTIM_ADAMW: {
		/* Kingma and Ba 2015, Algorithm 1; AdamW decouples the decay
		 * (Loshchilov and Hutter 2019). */
		const float b1 = (float)cfg->beta1, b2 = (float)cfg->beta2, eps = (float)cfg->eps;
		const float c1 = (float)(1.0 - pow(cfg->beta1, (double)t));
		const float c2 = (float)(1.0 - pow(cfg->beta2, (double)t));
		const int decoupled = cfg->kind == FEDRUN_OPTIM_ADAMW;
		float *m = state, *v = state + n;
#pragma omp parallel for schedule(static) if (n >= 65536)
		for (uint64_t i = 0; i < n; i++) {
			float g = grad[i] * c;
			if (zero)
				grad[i] = 0.0f;
			if (decoupled)
				params[i] -= flr * wd * params[i];
			else
				g += wd * params[i];
			m[i] = b1 * m[i] + (1 - b1) * g;
			v[i] = b2 * v[i] + (1 - b2) * g * g;
			float mhat = m[i] / c1, vhat = v[i] / c2;
			params[i] -= flr * mhat / (sqrtf(vhat) + eps);
		}
		break;
	}
	}
}

void fedrun_optim_step(const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
		       float *params, float *grad, float *state, uint64_t *step)
{
	optim_step(cfg, lr, n, params, grad, state, step, false);
}

void fedrun_optim_step_zero(const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
			    float *params, float *grad, float *state, uint64_t *step)
{
	optim_step(cfg, lr, n, params, grad, state, step, true);
}

void fedrun_prox_grad(const struct fedrun_train_args *args, uint64_t n, const float *params,
		      float *grad)
{
	if (args->size < offsetof(struct fedrun_train_args, prox_anchor) + sizeof(void *) ||
	    !(args->prox_mu > 0) || !args->prox_anchor)
		return;
	const float mu = (float)args->prox_mu;
	const float *anchor = args->prox_anchor;
#pragma omp parallel for schedule(static) if (n >= 65536)
	for (uint64_t i = 0; i < n; i++)
		grad[i] += mu * (params[i] - anchor[i]);
}

double fedrun_lr_noam(uint64_t step, uint32_t d_model, uint64_t warmup, double factor)
{
	if (step == 0 || d_model == 0)
		return 0.0;
	const double s = (double)step;
	double r = 1.0 / sqrt(s); /* the decay, step^-0.5 */
	if (warmup) {
		const double w = (double)warmup;
		const double rise = s / (w * sqrt(w)); /* step warmup^-1.5 */
		r = rise < r ? rise : r;
	}
	return factor * r / sqrt((double)d_model);
}

double fedrun_lr_inverse_sqrt(uint64_t step, double peak_lr, uint64_t warmup, double init_lr)
{
	const uint64_t u = step ? step - 1 : 0; /* updates already made */
	if (!warmup)
		return peak_lr / sqrt((double)(u ? u : 1));
	/* fairseq's order of operations, for the same doubles */
	if (u < warmup)
		return init_lr + (double)u * ((peak_lr - init_lr) / (double)warmup);
	return peak_lr * sqrt((double)warmup) * pow((double)u, -0.5);
}
