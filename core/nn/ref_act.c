/* SPDX-License-Identifier: Apache-2.0 */
/* Reference activations and their derivatives, from libm in double. */
#include "config.h"
#include <math.h>
#include "ref.h"

static double gelu(double v)
{
	const double c = sqrt(2.0 / M_PI);
	return 0.5 * v * (1.0 + tanh(c * (v + 0.044715 * v * v * v)));
}

static double f(enum fedrun_act act, double v)
{
	switch (act) {
	case FEDRUN_ACT_RELU:
		return v > 0.0 ? v : 0.0;
	case FEDRUN_ACT_GELU:
		return gelu(v);
	case FEDRUN_ACT_GELU_ERF:
		return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
	case FEDRUN_ACT_TANH:
		return tanh(v);
	case FEDRUN_ACT_SIGMOID:
		return 1.0 / (1.0 + exp(-v));
	}
	return NAN;
}

static double df(enum fedrun_act act, double v)
{
	switch (act) {
	case FEDRUN_ACT_RELU:
		return v > 0.0 ? 1.0 : 0.0;
	case FEDRUN_ACT_GELU: {
		const double c = sqrt(2.0 / M_PI);
		double th = tanh(c * (v + 0.044715 * v * v * v));
		return 0.5 * (1.0 + th) +
		       0.5 * v * (1.0 - th * th) * c * (1.0 + 3 * 0.044715 * v * v);
	}
	case FEDRUN_ACT_GELU_ERF:
		return 0.5 * (1.0 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI);
	case FEDRUN_ACT_TANH:
		return 1.0 - tanh(v) * tanh(v);
	case FEDRUN_ACT_SIGMOID: {
		double s = 1.0 / (1.0 + exp(-v));
		return s * (1.0 - s);
	}
	}
	return NAN;
}

void nn_ref_act_forward(enum fedrun_act act, uint64_t n, const double *x, double *y)
{
	for (uint64_t i = 0; i < n; i++)
		y[i] = f(act, x[i]);
}

void nn_ref_act_backward(enum fedrun_act act, uint64_t n, const double *x, const double *dy,
			 double *dx)
{
	for (uint64_t i = 0; i < n; i++)
		dx[i] = dy[i] * df(act, x[i]);
}
