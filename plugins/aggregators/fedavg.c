/* SPDX-License-Identifier: Apache-2.0 */
/* fedavg: federated averaging. θ_{t+1} = Σ_k (n_k / n) θ_k (eq. 1 of Passban
 * et al. 2022; McMahan et al. 2017), computed as θ_t + Σ_k (n_k / n) Δ_k.
 * Per tensor, the sum runs over the clients that sent it; a tensor no client
 * sent keeps its value. */
#include <stddef.h>
#include <stdlib.h>
#include <fedrun/fedrun.h>
#include "common.h"

/* fedavg streams (ABI 1.3): the round's updates are summed as they arrive,
 * Σ_k n_k Δ_k and Σ_k n_k per tensor in double (aggr_sum), and θ_t moves to
 * the mean at finish; aggregate() is the same three steps over all updates
 * at once, so both paths give the same bits. */
struct fedavg {
	const struct fedrun_host *host;
	int weights;
	double mu; /* fedprox only */
	struct aggr_sum sum;
};

static const struct fedrun_opt fedavg_spec[] = {
	{"weights", FEDRUN_OPT_CHOICE, offsetof(struct fedavg, weights), 0, 0, 0, 0, "samples",
	 AGGR_WEIGHTS_CHOICES},
	FEDRUN_OPT_END_,
};

static const struct fedrun_opt fedprox_spec[] = {
	{"weights", FEDRUN_OPT_CHOICE, offsetof(struct fedavg, weights), 0, 0, 0, 0, "samples",
	 AGGR_WEIGHTS_CHOICES},
	{"mu", FEDRUN_OPT_NUMBER, offsetof(struct fedavg, mu), FEDRUN_OPT_REQUIRED, 0, 1e6, 0, NULL,
	 NULL},
	FEDRUN_OPT_END_,
};

static int create_with(const struct fedrun_opt *spec, const struct fedrun_host *host,
		       json_t *config, const struct fedrun_layout *layout, void **state)
{
	struct fedavg *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	int rc = fedrun_opts_parse(spec, config, "aggregator", st);
	if (rc == 0)
		rc = aggr_sum_init(&st->sum, layout, st->weights);
	if (rc < 0) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static int fedavg_create(const struct fedrun_host *host, json_t *config,
			 const struct fedrun_layout *layout, void **state)
{
	return create_with(fedavg_spec, host, config, layout, state);
}

static int fedprox_create(const struct fedrun_host *host, json_t *config,
			  const struct fedrun_layout *layout, void **state)
{
	return create_with(fedprox_spec, host, config, layout, state);
}

/* FedProx (Li et al. 2020): the server aggregates as FedAvg; the clients
 * minimise F_k(w) + μ/2·||w − w_t||² (eq. 2), which the engine passes to the
 * model's training loop. */
static int fedprox_configure_clients(void *state, struct fedrun_client_hints *hints)
{
	hints->prox_mu = ((struct fedavg *)state)->mu;
	return 0;
}

static void fedavg_destroy(void *state)
{
	struct fedavg *st = state;
	aggr_sum_fini(&st->sum);
	free(st);
}

static int fedavg_begin(void *state, const struct fedrun_round_info *round)
{
	struct fedavg *st = state;
	int rc = aggr_check_layout("fedavg", st->sum.ntensors, st->sum.total, round);
	if (rc < 0)
		return rc;
	aggr_sum_begin(&st->sum);
	return 0;
}

static int fedavg_accumulate(void *state, const struct fedrun_round_info *round,
			     const struct fedrun_update *u, uint32_t n)
{
	struct fedavg *st = state;
	/* NaN would spread over the whole tensor of the mean: refuse it with
	 * its place, as every aggregator of this directory does. */
	int rc = aggr_check_finite("fedavg", round->layout, round, u, n);
	return rc < 0 ? rc : aggr_sum_add(&st->sum, round->layout, round, u, n);
}

/* θ_{t+1} = θ_t + Σ_k (n_k / n) Δ_k per tensor, n over its senders. */
static int fedavg_finish(void *state, const struct fedrun_round_info *round, float *params)
{
	struct fedavg *st = state;
	const struct aggr_sum *s = &st->sum;
	if (s->n == 0)
		return fedrun_error(FEDRUN_EINVAL, "fedavg: round %u: no updates to aggregate",
				    round->round);
	if (!(s->all > 0))
		return fedrun_error(FEDRUN_EINVAL, "every client reports 0 training samples");
	for (uint32_t k = 0; k < s->n; k++) {
		int rc = st->host->metric(st->host->ctx, "fedavg.weight", s->client[k], NULL,
					  s->p[k] / s->all);
		if (rc < 0)
			return rc;
	}
	aggr_sum_apply(s, round->layout, params);
	return 0;
}

static const struct fedrun_aggregator_ops fedavg_ops;

static int fedavg_aggregate(void *state, const struct fedrun_round_info *round,
			    const struct fedrun_update *u, uint32_t n, float *params)
{
	return fedrun_aggregate_stream(&fedavg_ops, state, round, u, n, params);
}

static const struct fedrun_aggregator_ops fedavg_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = fedavg_create,
	.destroy = fedavg_destroy,
	.aggregate = fedavg_aggregate,
	.begin = fedavg_begin,
	.accumulate = fedavg_accumulate,
	.finish = fedavg_finish,
};

static const struct fedrun_aggregator_ops fedprox_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = fedprox_create,
	.destroy = fedavg_destroy,
	.aggregate = fedavg_aggregate,
	.configure_clients = fedprox_configure_clients,
	.begin = fedavg_begin,
	.accumulate = fedavg_accumulate,
	.finish = fedavg_finish,
};

static const struct fedrun_plugin fedavg_plugin =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "fedavg", "1.0.0",
			   "federated averaging weighted by client samples (or uniform)", &fedavg_ops);
static const struct fedrun_plugin fedprox_plugin =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "fedprox", "1.0.0",
			   "FedAvg with a proximal term mu/2*||w - w_t||^2 in local training", &fedprox_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &fedavg_plugin : index == 1 ? &fedprox_plugin : NULL;
}
