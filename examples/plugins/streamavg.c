/* SPDX-License-Identifier: Apache-2.0 */
/* streamavg: an example STREAMING aggregator built out of tree, the template
 * for a rule that can add the clients' updates as they arrive (plugin ABI
 * 1.3 begin, accumulate, finish). A weighted mean of the updates, as fedavg:
 *
 *     θ_{t+1} = θ_t + Σ_k p_k Δ_k / Σ_k p_k   per tensor,
 *
 * p_k = n_k (the client's samples) or 1 ("weights": "uniform"), both sums
 * over the clients that sent the tensor. With the three streaming ops the
 * host never holds a round's updates at once: the memory is one double per
 * parameter, whatever the number of clients. The conventions of
 * fedrun-plugin(7), AGGREGATOR CONVENTIONS: sums per tensor over its
 * senders, in double and in client order (so any cut of the round into
 * accumulate calls gives the same bits, and so does any number of
 * threads), non-finite updates refused, "streamavg.step_norm" reported.
 *
 * Build against an installed fedrun:
 *   cc -shared -fPIC $(pkg-config --cflags fedrun) -o streamavg.so streamavg.c \
 *      $(pkg-config --libs fedrun)
 * and check it: fedrun check-aggregator --allow-plugin-paths ./streamavg.so
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>

struct streamavg {
	const struct fedrun_host *host;
	int uniform;   /* the "weights" choice: 0 samples, 1 uniform */
	uint64_t total; /* floats of the layout */
	uint32_t ntensors;
	double *acc;   /* Σ_k p_k Δ_k, one double per parameter */
	double *tot;   /* per tensor: Σ_k p_k over its senders */
	uint32_t seen; /* updates of the round so far */
};

static const struct fedrun_opt streamavg_spec[] = {
	{"weights", FEDRUN_OPT_CHOICE, offsetof(struct streamavg, uniform), 0, 0, 0, 0, "samples",
	 "samples|uniform"},
	FEDRUN_OPT_END_,
};

static void streamavg_destroy(void *state)
{
	struct streamavg *st = state;
	free(st->acc);
	free(st->tot);
	free(st);
}

static int streamavg_create(const struct fedrun_host *host, json_t *config,
			    const struct fedrun_layout *layout, void **state)
{
	struct streamavg *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	int rc = fedrun_opts_parse(streamavg_spec, config, "aggregator", st);
	if (rc < 0) {
		free(st);
		return rc;
	}
	st->total = layout->total;
	st->ntensors = layout->n;
	st->acc = calloc(layout->total ? layout->total : 1, sizeof *st->acc);
	st->tot = calloc(layout->n ? layout->n : 1, sizeof *st->tot);
	if (!st->acc || !st->tot) {
		streamavg_destroy(st);
		return fedrun_error(FEDRUN_ENOMEM, "streamavg: out of memory for %llu parameters",
				    (unsigned long long)layout->total);
	}
	*state = st;
	return 0;
}

/* A round starts: the sums restart from zero. */
static int streamavg_begin(void *state, const struct fedrun_round_info *round)
{
	struct streamavg *st = state;
	if (round->layout->n != st->ntensors || round->layout->total != st->total)
		return fedrun_error(FEDRUN_EINVAL, "streamavg: round %u: the layout changed",
				    round->round);
	memset(st->acc, 0, st->total * sizeof *st->acc);
	memset(st->tot, 0, st->ntensors * sizeof *st->tot);
	st->seen = 0;
	return 0;
}

/* Some of the round's updates, in client order (borrowed for this call
 * only: add them now). */
static int streamavg_accumulate(void *state, const struct fedrun_round_info *round,
				const struct fedrun_update *u, uint32_t n)
{
	struct streamavg *st = state;
	const struct fedrun_layout *l = round->layout;
	/* Check the whole call first: a refused update adds nothing. */
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < l->n; i++) {
			uint64_t bad;
			if (u[k].tensor[i] && !fedrun_vec_finite(l->t[i].numel, u[k].tensor[i], &bad))
				return fedrun_error(FEDRUN_ENUMERIC,
						    "streamavg: round %u: client %u sent a non-finite "
						    "value in tensor %s at element %llu",
						    round->round, u[k].client, l->t[i].name,
						    (unsigned long long)bad);
		}
	for (uint32_t k = 0; k < n; k++) {
		double p = st->uniform ? 1.0 : (double)u[k].n_samples;
		for (uint32_t i = 0; i < l->n; i++) {
			const float *x = u[k].tensor[i];
			if (!x)
				continue; /* not sent: it does not count in this tensor's mean */
			double *a = st->acc + l->t[i].offset;
			for (uint64_t j = 0; j < l->t[i].numel; j++)
				a[j] += p * x[j];
			st->tot[i] += p;
		}
	}
	st->seen += n;
	return 0;
}

/* params hold θ_t: move them to the mean. */
static int streamavg_finish(void *state, const struct fedrun_round_info *round, float *params)
{
	struct streamavg *st = state;
	const struct fedrun_layout *l = round->layout;
	if (st->seen == 0)
		return fedrun_error(FEDRUN_EINVAL, "streamavg: round %u: no updates to aggregate",
				    round->round);
	double step = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		if (!(st->tot[i] > 0))
			continue; /* nobody (with samples) sent it: it keeps its value */
		const double *a = st->acc + l->t[i].offset;
		float *theta = params + l->t[i].offset;
		for (uint64_t j = 0; j < l->t[i].numel; j++) {
			double d = a[j] / st->tot[i];
			theta[j] = (float)(theta[j] + d);
			step += d * d;
		}
	}
	return st->host->metric(st->host->ctx, "streamavg.step_norm", -1, NULL, sqrt(step));
}

static const struct fedrun_aggregator_ops streamavg_ops;

/* All updates at once (the host calls it where it must see them all first):
 * the same three steps, so both paths give the same bits. */
static int streamavg_aggregate(void *state, const struct fedrun_round_info *round,
			       const struct fedrun_update *u, uint32_t n, float *params)
{
	return fedrun_aggregate_stream(&streamavg_ops, state, round, u, n, params);
}

static const struct fedrun_aggregator_ops streamavg_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = streamavg_create,
	.destroy = streamavg_destroy,
	.aggregate = streamavg_aggregate,
	.begin = streamavg_begin,
	.accumulate = streamavg_accumulate,
	.finish = streamavg_finish,
};

static const struct fedrun_plugin streamavg_plugin = FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_AGGREGATOR, "streamavg", "0.1.0",
	"example: streaming weighted mean of the updates", &streamavg_ops);

/* The one symbol a plugin exports. */
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &streamavg_plugin : NULL;
}
