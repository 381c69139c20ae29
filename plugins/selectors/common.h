/* SPDX-License-Identifier: Apache-2.0 */
/* Shared internals of the selectors: tensor groups by name prefix (the
 * encoder/decoder split of Passban et al. 2022), the quantile that sets a
 * group's threshold, and the per-client traffic metrics. Compiled into each
 * selector that uses them; nothing here is exported from a plugin. */
#ifndef FEDRUN_SELECTORS_COMMON_H
#define FEDRUN_SELECTORS_COMMON_H

#include <stdint.h>
#include <fedrun/fedrun.h>

/* Tensors partitioned into groups: group k < nprefix holds the tensors whose
 * name starts with prefix k (the first prefix that matches, in list order);
 * group nprefix holds the tensors no prefix matches. Empty groups are kept
 * (count 0) so that group numbers follow the configuration. */
struct selgroups {
	uint32_t n;	  /* groups: prefixes + 1 */
	uint32_t *start;  /* n + 1 entries: group g is member[start[g] .. start[g+1]) */
	uint32_t *member; /* tensor indices, grouped, ascending within a group */
};

/* Reads `key` of `section` (JSON path `path`): an array of distinct,
 * non-empty prefix strings, or absent for ["encoder.", "decoder."], which is
 * then written back into the section when `write_default` is set. Fills
 * `g` from `layout`. On error returns FEDRUN_ECONFIG naming the element. */
int selgroups_init(struct selgroups *g, json_t *section, const char *path, const char *key,
		   bool write_default, const struct fedrun_layout *layout);
void selgroups_fini(struct selgroups *g);

/* The q-quantile of v[0..m-1] (m >= 1, sorted ascending in place) by linear
 * interpolation between order statistics (Hyndman and Fan's definition 7,
 * numpy's default): h = q (m − 1), θ = v[⌊h⌋] + (h − ⌊h⌋)(v[⌊h⌋+1] − v[⌊h⌋]).
 * For q = 0.5 it is the usual median: the middle value for odd m, the mean of
 * the two middle values for even m. */
double selgroups_quantile(double *v, uint32_t m, double q);

/* A tensor's change measure and its number of parameters. */
struct selgroups_weighted {
	double value;
	uint64_t weight;
};

/* The threshold that puts the share of the parameters nearest to q below
 * it: with v[0..m-1] (m >= 1) sorted ascending by value in place, W the
 * total weight and C_j the weight of v[0..j-1], θ = v[k].value for the k in
 * [0, m − 1] that minimises |C_k − q W| among the k where a threshold can
 * fall (k = 0, or v[k−1].value < v[k].value), the smallest such k on ties.
 * So the tensors below θ hold C_k parameters, within half a tensor of
 * q W where no two values tie, and the tensor of the largest value is never
 * below θ (as with selgroups_quantile's θ, at most the largest value). */
double selgroups_weighted_threshold(struct selgroups_weighted *v, uint32_t m, double q);

/* Records selector.sent, selector.params_sent and selector.saving for
 * `client` from `mask` through host->metric. */
int selgroups_report(const struct fedrun_host *host, const struct fedrun_layout *layout,
		     uint32_t client, const uint8_t *mask);

#endif
