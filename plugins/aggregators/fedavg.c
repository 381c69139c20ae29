/* fedavg: federated averaging. θ_{t+1} = Σ_k (n_k / n) θ_k (eq. 1 of Passban
 * et al. 2022; McMahan et al. 2017), computed as θ_t + Σ_k (n_k / n) Δ_k.
 * Per tensor, the sum runs over the clients that sent it; a tensor no client
 * sent keeps its value. */
#include <stddef.h>
#include <stdlib.h>
#include <fedrun/fedrun.h>

enum { WEIGHTS_SAMPLES, WEIGHTS_UNIFORM };

struct fedavg {
	const struct fedrun_host *host;
	int weights;
	double mu; /* fedprox only */
	const float **x; /* scratch: one pointer per client */
	float *w;
	uint32_t cap;
};

static const struct fedrun_opt fedavg_spec[] = {
	{"weights", FEDRUN_OPT_CHOICE, offsetof(struct fedavg, weights), 0, 0, 0, 0, "samples",
	 "samples|uniform"},
	FEDRUN_OPT_END_,
};

static const struct fedrun_opt fedprox_spec[] = {
	{"weights", FEDRUN_OPT_CHOICE, offsetof(struct fedavg, weights), 0, 0, 0, 0, "samples",
	 "samples|uniform"},
	{"mu", FEDRUN_OPT_NUMBER, offsetof(struct fedavg, mu), FEDRUN_OPT_REQUIRED, 0, 1e6, 0, NULL,
	 NULL},
	FEDRUN_OPT_END_,
};

static int create_with(const struct fedrun_opt *spec, const struct fedrun_host *host,
		       json_t *config, void **state)
{
	struct fedavg *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	int rc = fedrun_opts_parse(spec, config, "aggregator", st);
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
	return create_with(fedavg_spec, host, config, state);
}

static int fedprox_create(const struct fedrun_host *host, json_t *config,
			  const struct fedrun_layout *layout, void **state)
{
	return create_with(fedprox_spec, host, config, state);
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
	free(st->x);
	free(st->w);
	free(st);
}

static int fedavg_aggregate(void *state, const struct fedrun_round_info *round,
			    const struct fedrun_update *u, uint32_t n, float *params)
{
	struct fedavg *st = state;
	const struct fedrun_layout *l = round->layout;
	if (n > st->cap) {
		const float **x = realloc(st->x, n * sizeof *x);
		if (x)
			st->x = x;
		float *w = realloc(st->w, n * sizeof *w);
		if (w)
			st->w = w;
		if (!x || !w)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		st->cap = n;
	}
	double total_all = 0;
	for (uint32_t k = 0; k < n; k++)
		total_all += st->weights == WEIGHTS_UNIFORM ? 1.0 : (double)u[k].n_samples;
	if (!(total_all > 0))
		return fedrun_error(FEDRUN_EINVAL, "every client reports 0 training samples");
	for (uint32_t k = 0; k < n; k++)
		st->host->metric(st->host->ctx, "fedavg.weight", u[k].client, NULL,
				 (st->weights == WEIGHTS_UNIFORM ? 1.0 : (double)u[k].n_samples) /
					 total_all);

	for (uint32_t i = 0; i < l->n; i++) {
		double total = 0;
		for (uint32_t k = 0; k < n; k++)
			if (u[k].tensor[i])
				total += st->weights == WEIGHTS_UNIFORM ? 1.0 : (double)u[k].n_samples;
		if (total == 0)
			continue; /* nobody sent this tensor */
		for (uint32_t k = 0; k < n; k++) {
			st->x[k] = u[k].tensor[i];
			st->w[k] = (float)((st->weights == WEIGHTS_UNIFORM ? 1.0
									 : (double)u[k].n_samples) / total);
		}
		fedrun_vec_wsum(l->t[i].numel, n, st->x, st->w, params + l->t[i].offset);
	}
	return 0;
}

static const struct fedrun_aggregator_ops fedavg_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = fedavg_create,
	.destroy = fedavg_destroy,
	.aggregate = fedavg_aggregate,
};

static const struct fedrun_aggregator_ops fedprox_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = fedprox_create,
	.destroy = fedavg_destroy,
	.aggregate = fedavg_aggregate,
	.configure_clients = fedprox_configure_clients,
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
