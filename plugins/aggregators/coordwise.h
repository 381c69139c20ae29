/* SPDX-License-Identifier: Apache-2.0 */
/* Coordinate-wise robust aggregation, shared by median and trimmed_mean:
 * each coordinate of each tensor gets a statistic of the values the clients
 * that sent the tensor have there (Yin, Chen, Ramchandran, Bartlett 2018,
 * "Byzantine-Robust Distributed Learning: Towards Optimal Statistical
 * Rates", ICML, section 3). */
#ifndef COORDWISE_H
#define COORDWISE_H

#include <stdint.h>
#include "fedrun/plugin.h"
#include "common.h"

/* The k-th smallest (0-based) of v[0..m), k < m. Reorders v so that
 * v[0..k) <= v[k] <= v[k+1..m): three-way quickselect, median-of-three pivot,
 * O(m) on average, deterministic. */
float coordwise_select(float *v, uint32_t m, uint32_t k);

/* The statistic of m >= 1 values (which it may reorder). */
typedef double (*coordwise_stat_fn)(float *v, uint32_t m, const void *arg);

/* θ_i[e] += stat(the senders' Δ_k,i[e]) for every tensor i that at least one
 * client sent; the others keep their values. Coordinates run in parallel,
 * each on its own, so the result does not depend on the number of threads. */
int coordwise_apply(struct aggr_base *b, const struct fedrun_update *updates, uint32_t n,
		    float *params, coordwise_stat_fn stat, const void *arg);

#endif
