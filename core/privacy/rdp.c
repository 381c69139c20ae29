/* SPDX-License-Identifier: Apache-2.0 */
/* The RDP accountant of the sampled Gaussian mechanism (see fedrun/rdp.h):
 * log A_α of Mironov, Talwar and Zhang 2019, in log space so that large
 * orders and small sampling rates neither overflow nor underflow. */
#include "config.h"
#include <math.h>
#include <stdbool.h>
#include "fedrun/error.h"
#include "fedrun/rdp.h"

/* One line per group of orders. */
/* clang-format off */
static const double default_orders[] = {
	1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5,
	5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
	25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
	45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
	128, 256, 512,
};
/* clang-format on */

/* A fractional order's series stops when its terms fall below e^-30 (as in
 * TensorFlow Privacy); this bounds the work when they never do. */
#define FRAC_MAX_TERMS 20000000u

const double *fedrun_rdp_default_orders(size_t *n)
{
	*n = sizeof default_orders / sizeof *default_orders;
	return default_orders;
}

/* log(e^a + e^b) */
static double log_add(double a, double b)
{
	if (a == -INFINITY)
		return b;
	if (b == -INFINITY)
		return a;
	double hi = a > b ? a : b, lo = a > b ? b : a;
	return hi + log1p(exp(lo - hi));
}

/* log(e^a − e^b) for a >= b; false when a < b (the series lost its
 * precision). */
static bool log_sub(double a, double b, double *out)
{
	if (b == -INFINITY) {
		*out = a;
		return true;
	}
	if (a < b)
		return false;
	*out = a == b ? -INFINITY : a + log1p(-exp(b - a));
	return true;
}

/* log(erfc(x)), accurate where erfc underflows: beyond x = 20 the
 * asymptotic series erfc(x) ~ exp(−x² − 1/(2x²) + 5/(8x⁴) − 37/(24x⁶) +
 * 353/(64x⁸)) / (x√π) (its next term is below 1e-13 there). */
static double log_erfc(double x)
{
	if (x < 20)
		return log(erfc(x));
	double x2 = 1 / (x * x);
	return -0.5 * log(M_PI) - log(x) - x * x +
	       x2 * (-0.5 + x2 * (0.625 + x2 * (-37.0 / 24 + x2 * (353.0 / 64))));
}

/* log A_α for integer α: A_α = Σ_{i=0}^{α} C(α, i) q^i (1−q)^(α−i)
 * exp((i² − i)/(2σ²)) (section 3.3 of Mironov et al. 2019). */
static double log_a_int(double q, double sigma, unsigned alpha)
{
	double log_a = -INFINITY, log_binom = 0; /* log C(α, 0) */
	double lq = log(q), l1q = log1p(-q), s2 = 2 * sigma * sigma;
	for (unsigned i = 0; i <= alpha; i++) {
		if (i > 0)
			log_binom += log((double)(alpha - i + 1)) - log((double)i);
		double term = log_binom + i * lq + (alpha - i) * l1q + ((double)i * i - i) / s2;
		log_a = log_add(log_a, term);
	}
	return log_a;
}

/* log A_α for fractional α, as the two series A_α = Σ_i C(α, i) (terms of
 * the two halves of the real line split at z0 = σ² log(1/q − 1) + 1/2),
 * section 3.3 of Mironov et al. 2019. Binomial coefficients of a fractional
 * α alternate in sign from i = ⌈α⌉ on, hence signed log-space sums. */
static int log_a_frac(double q, double sigma, double alpha, double *out)
{
	double log_a0 = -INFINITY, log_a1 = -INFINITY;
	double z0 = sigma * sigma * log(1 / q - 1) + 0.5;
	double lq = log(q), l1q = log1p(-q), s2 = 2 * sigma * sigma, rs = M_SQRT2 * sigma;
	double log_coef = 0; /* log |C(α, i)| */
	int sign = 1;
	for (unsigned i = 0; i < FRAC_MAX_TERMS; i++) {
		if (i > 0) {
			double f = (alpha - i + 1) / i;
			if (f < 0)
				sign = -sign;
			log_coef += log(fabs(f));
		}
		double j = alpha - i;
		double log_t0 = log_coef + i * lq + j * l1q;
		double log_t1 = log_coef + j * lq + i * l1q;
		double log_e0 = log(0.5) + log_erfc((i - z0) / rs);
		double log_e1 = log(0.5) + log_erfc((z0 - j) / rs);
		double log_s0 = log_t0 + ((double)i * i - i) / s2 + log_e0;
		double log_s1 = log_t1 + (j * j - j) / s2 + log_e1;
		if (sign > 0) {
			log_a0 = log_add(log_a0, log_s0);
			log_a1 = log_add(log_a1, log_s1);
		} else if (!log_sub(log_a0, log_s0, &log_a0) || !log_sub(log_a1, log_s1, &log_a1)) {
			return fedrun_error(FEDRUN_ENUMERIC,
					    "RDP: the series of order %g lost its precision "
					    "(q = %g, noise multiplier %g)",
					    alpha, q, sigma);
		}
		if ((log_s0 > log_s1 ? log_s0 : log_s1) < -30) {
			*out = log_add(log_a0, log_a1);
			return 0;
		}
	}
	return fedrun_error(FEDRUN_ENUMERIC,
			    "RDP of the sampled Gaussian: the series of order %g does not converge "
			    "(q = %g, noise multiplier %g)",
			    alpha, q, sigma);
}

static int rdp_one(double q, double z, double alpha, double *out)
{
	if (q == 0) {
		*out = 0;
		return 0;
	}
	if (q == 1) { /* the Gaussian mechanism (Mironov 2017, proposition 7) */
		*out = alpha / (2 * z * z);
		return 0;
	}
	if (isinf(alpha)) {
		*out = INFINITY;
		return 0;
	}
	double log_a = 0;
	if (alpha == floor(alpha) && alpha <= 4294967295.0) {
		log_a = log_a_int(q, z, (unsigned)alpha);
	} else {
		int rc = log_a_frac(q, z, alpha, &log_a);
		if (rc < 0)
			return rc;
	}
	/* RDP(α) = log A_α / (α − 1) (Mironov et al. 2019, section 3.3). */
	*out = log_a / (alpha - 1);
	return 0;
}

int fedrun_rdp_sgm(double q, double z, uint64_t steps, const double *orders, size_t n, double *rdp)
{
	if (!(q >= 0 && q <= 1))
		return fedrun_error(FEDRUN_EINVAL, "RDP: sampling rate %g is not in [0, 1]", q);
	if (!(z > 0) || isinf(z))
		return fedrun_error(FEDRUN_EINVAL,
				    "RDP: noise multiplier %g is not positive and finite", z);
	for (size_t i = 0; i < n; i++) {
		if (!(orders[i] > 1))
			return fedrun_error(FEDRUN_EINVAL, "RDP: order %g is not above 1",
					    orders[i]);
		int rc = rdp_one(q, z, orders[i], &rdp[i]);
		if (rc < 0)
			return rc;
		if (isnan(rdp[i])) /* 1/z² overflowed: say so, not a NaN later */
			return fedrun_error(FEDRUN_EINVAL,
					    "RDP: noise multiplier %g is too small: the divergence at "
					    "order %g is not a number",
					    z, orders[i]);
		rdp[i] *= (double)steps;
	}
	return 0;
}

int fedrun_rdp_to_eps(const double *orders, const double *rdp, size_t n, double delta,
		      enum fedrun_rdp_conversion conversion, double *eps, double *order)
{
	if (!(delta > 0 && delta < 1))
		return fedrun_error(FEDRUN_EINVAL, "RDP: delta %g is not in (0, 1)", delta);
	if (conversion != FEDRUN_RDP_CLASSIC && conversion != FEDRUN_RDP_IMPROVED)
		return fedrun_error(FEDRUN_EINVAL, "RDP: unknown conversion %d", (int)conversion);
	double best = INFINITY, best_order = NAN;
	for (size_t i = 0; i < n; i++) {
		double a = orders[i], r = rdp[i], e;
		if (!(a > 1))
			return fedrun_error(FEDRUN_EINVAL, "RDP: order %g is not above 1", a);
		if (isnan(r) || r < -1e-12)
			return fedrun_error(FEDRUN_EINVAL,
					    "RDP: divergence %g at order %g is not >= 0", r, a);
		if (r < 0)
			r = 0; /* rounding of a zero divergence */
		if (conversion == FEDRUN_RDP_CLASSIC) {
			e = r - log(delta) / (a - 1);
		} else if (delta * delta + expm1(-r) >= 0) {
			/* δ >= sqrt(1 − exp(−KL)) bounds the total variation
			 * (Bretagnolle-Huber), and RDP(α) >= KL. */
			e = 0;
		} else if (a > 1.01) {
			e = r + log1p(-1 / a) - (log(delta) + log(a)) / (a - 1);
		} else {
			e = INFINITY; /* unstable as α → 1, and never the best */
		}
		if (e < best) {
			best = e;
			best_order = a;
		}
	}
	*eps = best > 0 ? best : 0;
	if (isinf(best))
		*eps = INFINITY;
	*order = best_order;
	return 0;
}
