/* SPDX-License-Identifier: Apache-2.0 */
/* normclip: an example aggregator built out of tree. Federated averaging of
 * norm-bounded updates: each client's update is scaled to an L2 norm of at
 * most `max_norm` before the weighted average (the norm-bounding defence of
 * Sun et al. 2019, "Can You Really Backdoor Federated Learning?").
 * It keeps the conventions of the shipped aggregators: each tensor's mean is
 * over the clients that sent it, summed in double, non-finite updates are
 * refused, and "normclip.step_norm" reports ||θ_{t+1} − θ_t||.
 *
 * Build against an installed fedrun:
 *   cc -shared -fPIC $(pkg-config --cflags fedrun) -o normclip.so normclip.c \
 *      $(pkg-config --libs fedrun)
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>

struct normclip {
	const struct fedrun_host *host;
	double max_norm;
	double *acc;   /* one tensor's weighted sum, in double */
	double *scale; /* per client of a round: its clipping factor */
	uint32_t cap;  /* entries of scale */
};

static const struct fedrun_opt normclip_spec[] = {
	{"max_norm", FEDRUN_OPT_NUMBER, offsetof(struct normclip, max_norm), FEDRUN_OPT_MIN_OPEN,
	 0, INFINITY, 1.0, NULL, NULL},
	FEDRUN_OPT_END_,
};

static void normclip_destroy(void *state)
{
	struct normclip *st = state;
	free(st->acc);
	free(st->scale);
	free(st);
}

static int normclip_create(const struct fedrun_host *host, json_t *config,
			   const struct fedrun_layout *layout, void **state)
{
	struct normclip *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	int rc = fedrun_opts_parse(normclip_spec, config, "aggregator", st);
	if (rc < 0) {
		free(st);
		return rc;
	}
	uint64_t most = 1;
	for (uint32_t i = 0; i < layout->n; i++)
		most = layout->t[i].numel > most ? layout->t[i].numel : most;
	if (!(st->acc = malloc(most * sizeof *st->acc))) {
		normclip_destroy(st);
		return fedrun_error(FEDRUN_ENOMEM, "normclip: out of memory");
	}
	*state = st;
	return 0;
}

/* θ_{t+1} = θ_t + Σ_k n_k s_k Δ_k / Σ_k n_k per tensor, s_k = min(1, max_norm
 * / ||Δ_k||), both sums over the clients that sent the tensor (a selector may
 * send part of an update): the conventions of fedrun-plugin(7), AGGREGATOR
 * CONVENTIONS. */
static int normclip_aggregate(void *state, const struct fedrun_round_info *round,
			      const struct fedrun_update *u, uint32_t n, float *params)
{
	struct normclip *st = state;
	const struct fedrun_layout *l = round->layout;
	if (n > st->cap) {
		double *s = realloc(st->scale, n * sizeof *s);
		if (!s)
			return fedrun_error(FEDRUN_ENOMEM, "normclip: out of memory");
		st->scale = s;
		st->cap = n;
	}
	double total = 0;
	for (uint32_t k = 0; k < n; k++) {
		total += (double)u[k].n_samples;
		/* The norm of the whole update, over the tensors it sent. A
		 * NaN or infinity is refused: it would spread to the model. */
		double sq = 0;
		for (uint32_t i = 0; i < l->n; i++) {
			uint64_t bad;
			if (!u[k].tensor[i])
				continue;
			if (!fedrun_vec_finite(l->t[i].numel, u[k].tensor[i], &bad))
				return fedrun_error(FEDRUN_ENUMERIC,
						    "normclip: round %u: client %u sent a non-finite "
						    "value in tensor %s at element %llu",
						    round->round, u[k].client, l->t[i].name,
						    (unsigned long long)bad);
			double t = fedrun_vec_nrm2(l->t[i].numel, u[k].tensor[i]);
			sq += t * t;
		}
		double norm = sqrt(sq);
		st->scale[k] = norm > st->max_norm ? st->max_norm / norm : 1.0;
		int rc = st->host->metric(st->host->ctx, "normclip.norm", u[k].client, NULL, norm);
		if (rc < 0)
			return rc;
	}
	if (!(total > 0))
		return fedrun_error(FEDRUN_EINVAL, "normclip: every client reports 0 samples");
	double step = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		const uint64_t numel = l->t[i].numel;
		double senders = 0;
		memset(st->acc, 0, numel * sizeof *st->acc);
		for (uint32_t k = 0; k < n; k++) {
			const float *x = u[k].tensor[i];
			if (!x)
				continue;
			senders += (double)u[k].n_samples;
			double w = (double)u[k].n_samples * st->scale[k];
			for (uint64_t j = 0; j < numel; j++)
				st->acc[j] += w * x[j];
		}
		if (!(senders > 0))
			continue; /* nobody (with samples) sent it: it keeps its value */
		float *theta = params + l->t[i].offset;
		for (uint64_t j = 0; j < numel; j++) {
			double d = st->acc[j] / senders;
			theta[j] = (float)(theta[j] + d);
			step += d * d;
		}
	}
	return st->host->metric(st->host->ctx, "normclip.step_norm", -1, NULL, sqrt(step));
}

static const struct fedrun_aggregator_ops normclip_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = normclip_create,
	.destroy = normclip_destroy,
	.aggregate = normclip_aggregate,
};

static const struct fedrun_plugin normclip_plugin = FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_AGGREGATOR, "normclip", "0.1.0",
	"example: federated averaging of norm-bounded updates", &normclip_ops);

/* The one symbol a plugin exports. */
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &normclip_plugin : NULL;
}
