/* SPDX-License-Identifier: Apache-2.0 */
/* Test-only aggregators for tests/check_aggregator.sh: a weighted mean in
 * double (fedavg's rule, not streaming) with one fault each, so that fedrun
 * check-aggregator must fail exactly one property.
 *   BROKEN_RENORM: divides every tensor by the weight of all the round's
 *     clients, not of those that sent it (a partial update drags it to 0).
 *   BROKEN_NAN: adds a non-finite update into the model instead of
 *     refusing it. */
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>
#include "common.h"

#ifdef BROKEN_RENORM
#define NAME "agg_norenorm"
#else
#define NAME "agg_nan"
#endif

struct mean {
	double *acc;
};

static int m_create(const struct fedrun_host *h, json_t *c, const struct fedrun_layout *l,
		    void **state)
{
	struct mean *m = calloc(1, sizeof *m);
	if (!m || !(m->acc = calloc(l->total, sizeof *m->acc))) {
		free(m);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	int rc = fedrun_opts_parse((const struct fedrun_opt[]){FEDRUN_OPT_END_}, c, "aggregator",
				   m);
	if (rc < 0) {
		free(m->acc);
		free(m);
		return rc;
	}
	*state = m;
	return 0;
}

static void m_destroy(void *state)
{
	struct mean *m = state;
	free(m->acc);
	free(m);
}

static int m_aggregate(void *state, const struct fedrun_round_info *r, const struct fedrun_update *u,
		       uint32_t n, float *params)
{
	struct mean *m = state;
	const struct fedrun_layout *l = r->layout;
	double all = 0;
	for (uint32_t k = 0; k < n; k++) {
		all += (double)u[k].n_samples;
#ifndef BROKEN_NAN
		for (uint32_t i = 0; i < l->n; i++)
			if (u[k].tensor[i] && !fedrun_vec_finite(l->t[i].numel, u[k].tensor[i], NULL))
				return fedrun_error(FEDRUN_ENUMERIC, NAME ": client %u: not finite",
						    u[k].client);
#endif
	}
	(void)all;
	for (uint32_t i = 0; i < l->n; i++) {
		double *a = m->acc + l->t[i].offset, tot = 0;
		memset(a, 0, l->t[i].numel * sizeof *a);
		for (uint32_t k = 0; k < n; k++) {
			if (!u[k].tensor[i])
				continue;
			tot += (double)u[k].n_samples;
			for (uint64_t j = 0; j < l->t[i].numel; j++)
				a[j] += (double)u[k].n_samples * u[k].tensor[i][j];
		}
		if (tot == 0)
			continue;
#ifdef BROKEN_RENORM
		tot = all;
#endif
		float *x = params + l->t[i].offset;
		for (uint64_t j = 0; j < l->t[i].numel; j++)
			x[j] = (float)(x[j] + a[j] / tot);
	}
	return 0;
}

static const struct fedrun_aggregator_ops ops = {
	.size = sizeof ops, .create = m_create, .destroy = m_destroy, .aggregate = m_aggregate};
static const struct fedrun_plugin desc = FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_AGGREGATOR, NAME, "0.0.1", "test: a weighted mean with one fault", &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
