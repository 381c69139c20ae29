/* SPDX-License-Identifier: Apache-2.0 */
/* krum: Krum and Multi-Krum (Blanchard, El Mhamdi, Guerraoui, Stainer 2017,
 * "Machine Learning with Adversaries: Byzantine Tolerant Gradient Descent",
 * NeurIPS, section 4): the update (or the mean of the m updates) closest to
 * its n − f − 2 nearest neighbours. */
#include "config.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/plugin.h"
#include "fedrun/vec.h"
#include "common.h"

struct krum_cfg {
	int64_t f; /* Byzantine clients tolerated */
	int64_t m; /* updates averaged: 1 is Krum */
};

static const struct fedrun_opt krum_opts[] = {
    {"f", FEDRUN_OPT_INT, offsetof(struct krum_cfg, f), 0, 0, INT32_MAX, 0, NULL, NULL},
    {"m", FEDRUN_OPT_INT, offsetof(struct krum_cfg, m), 0, 1, INT32_MAX, 1, NULL, NULL},
    FEDRUN_OPT_END_};

struct krum {
	struct aggr_base base;
	struct krum_cfg cfg;
	double *dist;	 /* n x n squared distances */
	double *row;	 /* n scratch */
	uint32_t *order; /* clients by score */
	uint32_t cap;
};

static int krum_create(const struct fedrun_host *host, json_t *config,
		       const struct fedrun_layout *layout, void **state)
{
	struct krum *kr = calloc(1, sizeof *kr);
	if (!kr)
		return fedrun_error(FEDRUN_ENOMEM, "krum: out of memory");
	int rc = fedrun_opts_parse(krum_opts, config, AGGR_PATH, &kr->cfg);
	uint32_t nclients, n; /* the updates of a round: checked again each round */
	if (rc == 0 && aggr_run_clients(host, &nclients, &n) && n > 0) {
		if ((int64_t)n < 2 * kr->cfg.f + 3)
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "aggregator.f: %lld needs at least 2f + 3 = %lld updates a "
					  "round, the run has %u",
					  (long long)kr->cfg.f, (long long)(2 * kr->cfg.f + 3), n);
		else if (kr->cfg.m > (int64_t)n)
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "aggregator.m: %lld is more than the %u updates of a round",
					  (long long)kr->cfg.m, n);
	}
	if (rc == 0)
		rc = aggr_base_init(&kr->base, "krum", host, layout);
	if (rc < 0) {
		free(kr);
		return rc;
	}
	*state = kr;
	return 0;
}

static void krum_destroy(void *state)
{
	struct krum *kr = state;
	if (!kr)
		return;
	aggr_base_fini(&kr->base);
	free(kr->dist);
	free(kr->row);
	free(kr->order);
	free(kr);
}

static int krum_reserve(struct krum *kr, uint32_t n)
{
	if (n <= kr->cap)
		return 0;
	free(kr->dist);
	free(kr->row);
	free(kr->order);
	kr->dist = malloc((size_t)n * n * sizeof *kr->dist);
	kr->row = malloc(n * sizeof *kr->row);
	kr->order = malloc(n * sizeof *kr->order);
	if (!kr->dist || !kr->row || !kr->order) {
		kr->cap = 0;
		return fedrun_error(FEDRUN_ENOMEM, "krum: out of memory for %u clients", n);
	}
	kr->cap = n;
	return 0;
}

/* Krum compares whole vectors: a distance over different sets of tensors
 * would not be a distance. So every tensor must come from every client or
 * from none (a tensor nobody sent keeps its value). */
static int krum_check_whole(const struct krum *kr, const struct fedrun_update *updates, uint32_t n)
{
	const struct fedrun_layout *l = &kr->base.layout;
	for (uint32_t i = 0; i < l->n; i++)
		for (uint32_t k = 1; k < n; k++)
			if (!updates[k].tensor[i] != !updates[0].tensor[i]) {
				const struct fedrun_update *has =
				    updates[k].tensor[i] ? &updates[k] : &updates[0];
				const struct fedrun_update *lacks =
				    updates[k].tensor[i] ? &updates[0] : &updates[k];
				return fedrun_error(FEDRUN_EUNSUPPORTED,
						    "krum: client %u sent tensor %s but client %u "
						    "did not; krum needs whole updates (use the "
						    "selector \"all\")",
						    has->client, l->t[i].name, lacks->client);
			}
	return 0;
}

/* Sum of the smallest `keep` values of v[0..len) (len small: a partial
 * selection sort is enough and keeps the sum's order fixed). */
static double sum_smallest(double *v, uint32_t len, uint32_t keep)
{
	double s = 0;
	for (uint32_t a = 0; a < keep; a++) {
		uint32_t best = a;
		for (uint32_t b = a + 1; b < len; b++)
			if (v[b] < v[best])
				best = b;
		double t = v[a];
		v[a] = v[best];
		v[best] = t;
		s += v[a];
	}
	return s;
}

static int krum_aggregate(void *state, const struct fedrun_round_info *round,
			  const struct fedrun_update *updates, uint32_t n, float *params)
{
	struct krum *kr = state;
	const struct fedrun_layout *l = &kr->base.layout;
	const int64_t f = kr->cfg.f, m = kr->cfg.m;
	int rc = aggr_begin(&kr->base, round, updates, n, params);
	if (rc < 0)
		return rc;
	/* Krum's condition 2f + 2 < n: every score then sums at least one
	 * distance. */
	if ((int64_t)n < 2 * f + 3)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "krum: aggregator.f = %lld needs at least 2f + 3 = %lld updates, "
		    "this round has %u",
		    (long long)f, (long long)(2 * f + 3), n);
	if (m > (int64_t)n)
		return fedrun_error(FEDRUN_EINVAL,
				    "krum: aggregator.m = %lld is more than the %u updates of this "
				    "round",
				    (long long)m, n);
	rc = krum_check_whole(kr, updates, n);
	if (rc == 0)
		rc = krum_reserve(kr, n);
	if (rc < 0)
		return rc;

	/* ||Δ_a − Δ_b||², summed over the tensors sent. */
	double *dist = kr->dist;
	for (uint32_t a = 0; a < n; a++) {
		dist[(size_t)a * n + a] = 0;
		for (uint32_t b = a + 1; b < n; b++) {
			double s = 0;
			for (uint32_t i = 0; i < l->n; i++) {
				if (!updates[a].tensor[i])
					continue;
				double d = fedrun_vec_dist2(l->t[i].numel, updates[a].tensor[i],
							    updates[b].tensor[i]);
				s += d * d;
			}
			dist[(size_t)a * n + b] = dist[(size_t)b * n + a] = s;
		}
	}
	/* score(a) = Σ over the n − f − 2 closest b ≠ a of ||Δ_a − Δ_b||². */
	double *score = kr->base.val;
	const uint32_t keep = n - (uint32_t)f - 2;
	for (uint32_t a = 0; a < n; a++) {
		uint32_t len = 0;
		for (uint32_t b = 0; b < n; b++)
			if (b != a)
				kr->row[len++] = dist[(size_t)a * n + b];
		score[a] = sum_smallest(kr->row, len, keep);
	}
	/* Clients by (score, position): ties go to the lower client id. */
	uint32_t *order = kr->order;
	for (uint32_t a = 0; a < n; a++) {
		uint32_t p = a;
		while (p > 0 && score[order[p - 1]] > score[a]) {
			order[p] = order[p - 1];
			p--;
		}
		order[p] = a;
	}
	/* Multi-Krum: the mean of the m best; m = 1 is Krum's choice. */
	float *w = kr->base.w;
	for (uint32_t a = 0; a < n; a++)
		w[a] = 0;
	for (int64_t r = 0; r < m; r++)
		w[order[r]] = (float)(1.0 / (double)m);
	for (uint32_t a = 0; a < n; a++) {
		rc = aggr_metric(&kr->base, "krum.score", updates[a].client, NULL, score[a]);
		if (rc == 0)
			rc = aggr_metric(&kr->base, "krum.selected", updates[a].client, NULL,
					 w[a] > 0);
		if (rc < 0)
			return rc;
	}
	for (uint32_t i = 0; i < l->n; i++) {
		if (aggr_senders(updates, n, i, kr->base.src) == 0)
			continue;
		fedrun_vec_wsum(l->t[i].numel, n, kr->base.src, w, params + l->t[i].offset);
	}
	return aggr_end(&kr->base, params);
}

static const struct fedrun_aggregator_ops krum_ops = {
    .size = sizeof(struct fedrun_aggregator_ops),
    .create = krum_create,
    .destroy = krum_destroy,
    .aggregate = krum_aggregate,
    .state = NULL,
};

static const struct fedrun_plugin krum_plugin = {
    .abi_major = FEDRUN_ABI_MAJOR,
    .abi_minor = FEDRUN_ABI_MINOR,
    .size = sizeof(struct fedrun_plugin),
    .kind = FEDRUN_KIND_AGGREGATOR,
    .name = "krum",
    .version = "1.0.0",
    .summary = "Krum and Multi-Krum (Blanchard et al. 2017)",
    .ops = &krum_ops,
};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &krum_plugin : NULL;
}
