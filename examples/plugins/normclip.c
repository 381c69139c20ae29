/* normclip: an example aggregator built out of tree. Federated averaging of
 * norm-bounded updates: each client's update is scaled to an L2 norm of at
 * most `max_norm` before the weighted average (the norm-bounding defence of
 * Sun et al. 2019, "Can You Really Backdoor Federated Learning?").
 *
 * Build against an installed fedrun:
 *   cc -shared -fPIC $(pkg-config --cflags fedrun) -o normclip.so normclip.c \
 *      $(pkg-config --libs fedrun)
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <fedrun/fedrun.h>

struct normclip {
	const struct fedrun_host *host;
	double max_norm;
};

static const struct fedrun_opt normclip_spec[] = {
	{"max_norm", FEDRUN_OPT_NUMBER, offsetof(struct normclip, max_norm), FEDRUN_OPT_MIN_OPEN,
	 0, INFINITY, 1.0, NULL, NULL},
	FEDRUN_OPT_END_,
};

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
	*state = st;
	return 0;
}

static void normclip_destroy(void *state)
{
	free(state);
}

static int normclip_aggregate(void *state, const struct fedrun_round_info *round,
			      const struct fedrun_update *u, uint32_t n, float *params)
{
	struct normclip *st = state;
	const struct fedrun_layout *l = round->layout;
	double total = 0;
	for (uint32_t k = 0; k < n; k++)
		total += (double)u[k].n_samples;
	if (!(total > 0))
		return fedrun_error(FEDRUN_EINVAL, "normclip: every client reports 0 samples");
	for (uint32_t k = 0; k < n; k++) {
		/* The norm of the whole update, over the tensors it sent. */
		double sq = 0;
		for (uint32_t i = 0; i < l->n; i++)
			if (u[k].tensor[i]) {
				double t = fedrun_vec_nrm2(l->t[i].numel, u[k].tensor[i]);
				sq += t * t;
			}
		double norm = sqrt(sq), scale = norm > st->max_norm ? st->max_norm / norm : 1.0;
		st->host->metric(st->host->ctx, "normclip.norm", u[k].client, NULL, norm);
		float w = (float)(scale * (double)u[k].n_samples / total);
		for (uint32_t i = 0; i < l->n; i++)
			if (u[k].tensor[i])
				fedrun_vec_axpy(l->t[i].numel, w, u[k].tensor[i], params + l->t[i].offset);
	}
	return 0;
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

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &normclip_plugin : NULL;
}
