/* SPDX-License-Identifier: Apache-2.0 */
/* Rényi differential privacy (RDP) accounting for the sampled Gaussian
 * mechanism (Mironov, Talwar and Zhang 2019, "Rényi Differential Privacy of
 * the Sampled Gaussian Mechanism"), and its conversion to (ε, δ)-DP. The
 * computation is the one of TensorFlow Privacy's rdp_accountant. */
#ifndef FEDRUN_RDP_H
#define FEDRUN_RDP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The orders α fedrun accounts at: 1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5,
 * 4, 4.5, then every integer from 5 to 63, then 128, 256 and 512 (72
 * orders; the list of TensorFlow Privacy's compute_dp_sgd_privacy). Sets *n
 * and returns a static array. */
const double *fedrun_rdp_default_orders(size_t *n);

/* RDP of `steps` compositions of the sampled Gaussian mechanism at each of
 * the n `orders` (each > 1), written to rdp[0..n-1]: every step includes
 * each record independently with probability q in [0, 1] (Poisson
 * sampling) and adds N(0, z²·S²) to a sum of sensitivity S, z > 0 the noise
 * multiplier. q = 1 gives the Gaussian mechanism, α/(2z²) per step; q = 0
 * gives 0. Integer orders use the binomial expansion (section 3.3 of
 * Mironov et al.), fractional ones the two-series expansion, both in log
 * space. Returns 0, FEDRUN_EINVAL for bad arguments, or FEDRUN_ENUMERIC
 * when a series does not converge. */
int fedrun_rdp_sgm(double q, double z, uint64_t steps, const double *orders, size_t n, double *rdp);

enum fedrun_rdp_conversion {
	/* ε = RDP(α) + log(1/δ)/(α − 1) (Mironov 2017, proposition 3). */
	FEDRUN_RDP_CLASSIC = 0,
	/* ε = RDP(α) + log((α − 1)/α) − (log δ + log α)/(α − 1) (Balle et al.
	 * 2020, theorem 21; Canonne, Kamath and Steinke 2020, proposition 12),
	 * and ε = 0 when δ² ≥ 1 − exp(−RDP(α)); the conversion of TensorFlow
	 * Privacy's compute_epsilon. Orders α ≤ 1.01 are skipped, as there. */
	FEDRUN_RDP_IMPROVED = 1
};

/* The smallest ε over the orders for which the accumulated `rdp` gives
 * (ε, δ)-DP, δ in (0, 1), and the order that attains it (ties: the first).
 * *eps is +inf (and *order NaN) when no order gives a finite bound.
 * Returns 0 or FEDRUN_EINVAL. */
int fedrun_rdp_to_eps(const double *orders, const double *rdp, size_t n, double delta,
		      enum fedrun_rdp_conversion conversion, double *eps, double *order);

#ifdef __cplusplus
}
#endif
#endif
