/* Local optimizers (see fedrun/optim.h). */
#include "config.h"
#include <math.h>
#include "fedrun/optim.h"
#include "fedrun/vec.h"

uint64_t fedrun_optim_state_floats(const struct fedrun_optim_cfg *cfg, uint64_t n)
{
	switch (cfg->kind) {
	case FEDRUN_OPTIM_SGD: return cfg->momentum > 0 ? n : 0;
	case FEDRUN_OPTIM_ADAM:
	case FEDRUN_OPTIM_ADAMW: return 2 * n;
	}
	return 0;
}

double fedrun_clip_grad_norm(uint64_t n, float *grad, double max_norm)
{
	double norm = fedrun_vec_nrm2(n, grad);
	if (max_norm > 0 && norm > max_norm)
		fedrun_vec_scale(n, (float)(max_norm / (norm + 1e-6)), grad);
	return norm;
}

void fedrun_prox_grad(uint64_t n, double mu, const float *params, const float *anchor,
		      float *grad)
{
	const float fmu = (float)mu;
#pragma omp parallel for schedule(static) if (n >= 65536)
	for (uint64_t i = 0; i < n; i++)
		grad[i] += fmu * (params[i] - anchor[i]);
}

void fedrun_optim_step(const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
		       float *params, float *grad, float *state, uint64_t *step)
{
	if (cfg->clip_norm > 0)
		fedrun_clip_grad_norm(n, grad, cfg->clip_norm);
	uint64_t t = ++*step;
	const float flr = (float)lr, wd = (float)cfg->weight_decay;

	switch (cfg->kind) {
	case FEDRUN_OPTIM_SGD: {
		/* v <- mu v + (g + wd p); p <- p - lr v (Nesterov: g + mu v). */
		const float mu = (float)cfg->momentum;
		const int nesterov = cfg->nesterov;
#pragma omp parallel for schedule(static) if (n >= 65536)
		for (uint64_t i = 0; i < n; i++) {
			float g = grad[i] + wd * params[i];
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
			float g = grad[i];
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
