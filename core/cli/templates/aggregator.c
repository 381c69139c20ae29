/* SPDX-License-Identifier: Apache-2.0 */
/* @NAME@: a fedrun aggregator plugin, written by `fedrun new aggregator`.
 *
 * As written it is a weighted mean of the clients' updates, the rule of the
 * shipped fedavg, and gives the same bits:
 *
 *     θ_{t+1} = θ_t + Σ_k p_k Δ_k / Σ_k p_k
 *
 * per tensor, the sums running over the clients that sent that tensor (a
 * selector may leave some out; a tensor nobody sent keeps its value), with
 * p_k the client's training samples ("weights": "samples", the default) or
 * 1 ("weights": "uniform"). Your rule goes where the TODO comments are:
 * most rules change only weight_of(), a client's p_k.
 *
 * The plugin streams (plugin ABI 1.3 begin/accumulate/finish): the host
 * hands it each round's updates a few at a time, in client order, and never
 * holds them all; the sums are kept in double, so that how the round is cut
 * into calls does not change a bit. A rule that needs every update of the
 * round at once (a median, Krum) cannot stream: delete begin, accumulate
 * and finish from the ops table and write aggregate() over all n updates.
 *
 * It records two metrics a round: "@NAME@.weight", each client's share
 * p_k / Σ p, and "@NAME@.step_norm", ||θ_{t+1} − θ_t||.
 *
 * Build, run and check it: see README.txt, and fedrun-plugin(7) for the
 * rules a plugin follows.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>

struct @NAME@_state {
	const struct fedrun_host *host;
	struct fedrun_layout layout; /* the model's tensors, copied at create */
	int weights;		     /* option "weights": 0 samples, 1 uniform */
	/* TODO: your rule's options (add them to @NAME@_spec) and state. */
	double *acc;		/* layout.total: Σ_k p_k Δ_k, element by element */
	double *tot;		/* layout.n: Σ_k p_k over the clients that sent tensor i */
	double all;		/* Σ_k p_k over the round's updates */
	uint32_t n;		/* the round's updates so far */
	uint32_t *client;	/* their clients */
	double *p;		/* and weights p_k */
	const float **src;	/* scratch: one tensor of each update of a call */
	uint32_t ccap, pcap, srccap; /* room in client, p and src */
};

/* The options of the pipeline's "aggregator" section ("plugin" and "path"
 * are the host's). fedrun_opts_parse refuses unknown keys, wrong types and
 * values out of range with a message naming the key. */
static const struct fedrun_opt @NAME@_spec[] = {
	{"weights", FEDRUN_OPT_CHOICE, offsetof(struct @NAME@_state, weights), 0, 0, 0, 0,
	 "samples", "samples|uniform"},
	/* TODO: your options, e.g. a number in (0, 1]:
	 * {"beta", FEDRUN_OPT_NUMBER, offsetof(struct @NAME@_state, beta),
	 *  FEDRUN_OPT_MIN_OPEN, 0, 1, 0.5, NULL, NULL}, */
	FEDRUN_OPT_END_,
};

/* p_k: how much client k's update counts, a finite number >= 0. */
static double weight_of(const struct @NAME@_state *st, const struct fedrun_round_info *round,
			const struct fedrun_update *u)
{
	(void)round;
	/* TODO: your rule. u->n_samples (n_k), u->train_loss, u->client and
	 * the update itself (u->tensor[i], NULL where not sent) are at hand. */
	return st->weights == 1 ? 1.0 : (double)u->n_samples;
}

static void @NAME@_destroy(void *state)
{
	struct @NAME@_state *st = state;
	fedrun_arena_free((float *)(void *)st->acc);
	free(st->tot);
	free(st->client);
	free(st->p);
	free(st->src);
	fedrun_layout_fini(&st->layout);
	free(st);
}

static int @NAME@_create(const struct fedrun_host *host, json_t *config,
			 const struct fedrun_layout *layout, void **state)
{
	struct @NAME@_state *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "@NAME@: out of memory");
	st->host = host;
	fedrun_layout_init(&st->layout);
	int rc = fedrun_opts_parse(@NAME@_spec, config, "aggregator", st);
	if (rc == 0)
		rc = fedrun_layout_copy(&st->layout, layout);
	if (rc == 0) {
		/* An arena of 2·total floats is aligned room for total doubles. */
		st->acc = (double *)(void *)fedrun_arena_alloc(2 * layout->total);
		st->tot = calloc(layout->n ? layout->n : 1, sizeof *st->tot);
		if (!st->acc || !st->tot)
			rc = fedrun_error(FEDRUN_ENOMEM, "@NAME@: out of memory for %llu parameters",
					  (unsigned long long)layout->total);
	}
	if (rc < 0) {
		@NAME@_destroy(st);
		return rc;
	}
	*state = st;
	return 0;
}

static int @NAME@_begin(void *state, const struct fedrun_round_info *round)
{
	struct @NAME@_state *st = state;
	const struct fedrun_layout *l = &st->layout;
	if (round->layout && (round->layout->n != l->n || round->layout->total != l->total))
		return fedrun_error(FEDRUN_EINVAL, "@NAME@: round %u: the model's layout changed",
				    round->round);
	memset(st->acc, 0, l->total * sizeof *st->acc);
	memset(st->tot, 0, l->n * sizeof *st->tot);
	st->all = 0;
	st->n = 0;
	/* TODO: reset your rule's per-round state. */
	return 0;
}

/* Makes room for `want` entries of `size` bytes in *a (doubling). */
static int grow(void **a, uint32_t *cap, uint32_t want, size_t size)
{
	if (want <= *cap)
		return 0;
	uint32_t c = *cap ? *cap : 16;
	while (c < want)
		c = c > UINT32_MAX / 2 ? want : 2 * c;
	void *p = realloc(*a, (size_t)c * size);
	if (!p)
		return fedrun_error(FEDRUN_ENOMEM, "@NAME@: out of memory for %u updates", want);
	*a = p;
	*cap = c;
	return 0;
}

static int @NAME@_accumulate(void *state, const struct fedrun_round_info *round,
			     const struct fedrun_update *u, uint32_t n)
{
	struct @NAME@_state *st = state;
	const struct fedrun_layout *l = &st->layout;
	int rc;
	if ((rc = grow((void **)&st->client, &st->ccap, st->n + n, sizeof *st->client)) < 0 ||
	    (rc = grow((void **)&st->p, &st->pcap, st->n + n, sizeof *st->p)) < 0 ||
	    (rc = grow((void **)&st->src, &st->srccap, n, sizeof *st->src)) < 0)
		return rc;
	double *w = st->p + st->n; /* this call's weights */
	for (uint32_t k = 0; k < n; k++) {
		/* A NaN would poison the mean silently: refuse it, with its place. */
		for (uint32_t i = 0; i < l->n; i++) {
			uint64_t bad;
			if (u[k].tensor[i] && !fedrun_vec_finite(l->t[i].numel, u[k].tensor[i], &bad))
				return fedrun_error(FEDRUN_ENUMERIC,
						    "@NAME@: round %u: client %u sent a non-finite "
						    "value in tensor %s at element %llu",
						    round->round, u[k].client, l->t[i].name,
						    (unsigned long long)bad);
		}
		w[k] = weight_of(st, round, &u[k]);
		if (!(w[k] >= 0) || !isfinite(w[k]))
			return fedrun_error(FEDRUN_EINVAL, "@NAME@: round %u: client %u: weight %g",
					    round->round, u[k].client, w[k]);
		st->client[st->n + k] = u[k].client;
		st->all += w[k];
	}
	st->n += n;
	for (uint32_t i = 0; i < l->n; i++) {
		for (uint32_t k = 0; k < n; k++) {
			st->src[k] = u[k].tensor[i];
			if (st->src[k])
				st->tot[i] += w[k];
		}
		/* acc += Σ_k w_k Δ_k in double, each element adding the clients
		 * in order: any cut of the round into calls gives the same bits. */
		fedrun_vec_wsum_d(l->t[i].numel, n, st->src, w, st->acc + l->t[i].offset);
	}
	return 0;
}

static int @NAME@_finish(void *state, const struct fedrun_round_info *round, float *params)
{
	struct @NAME@_state *st = state;
	const struct fedrun_layout *l = &st->layout;
	if (st->n == 0)
		return fedrun_error(FEDRUN_EINVAL, "@NAME@: round %u: no updates to aggregate",
				    round->round);
	if (!(st->all > 0))
		return fedrun_error(FEDRUN_EINVAL, "@NAME@: round %u: every weight is 0",
				    round->round);
	for (uint32_t k = 0; k < st->n; k++) {
		int rc = st->host->metric(st->host->ctx, "@NAME@.weight", st->client[k], NULL,
					  st->p[k] / st->all);
		if (rc < 0)
			return rc;
	}
	/* θ += the mean over each tensor's senders: Σ p_k Δ_k / Σ p_k. */
	double step = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		double tot = st->tot[i];
		if (tot == 0)
			continue; /* nobody sent this tensor (or only weight 0): it keeps its value */
		const double *acc = st->acc + l->t[i].offset;
		float *x = params + l->t[i].offset;
		for (uint64_t j = 0; j < l->t[i].numel; j++) {
			float before = x[j];
			/* TODO: a rule that changes the step itself (a server learning
			 * rate, a clip) goes here. */
			x[j] = (float)((double)x[j] + acc[j] / tot);
			if (!isfinite(x[j]))
				return fedrun_error(FEDRUN_ENUMERIC,
						    "@NAME@: round %u: tensor %s element %llu is "
						    "not finite after aggregation",
						    round->round, l->t[i].name, (unsigned long long)j);
			double d = (double)x[j] - (double)before;
			step += d * d;
		}
	}
	return st->host->metric(st->host->ctx, "@NAME@.step_norm", -1, NULL, sqrt(step));
}

static const struct fedrun_aggregator_ops @NAME@_ops;

/* Every update at once (the host calls it where it must see them all
 * first): the same three steps. */
static int @NAME@_aggregate(void *state, const struct fedrun_round_info *round,
			    const struct fedrun_update *u, uint32_t n, float *params)
{
	return fedrun_aggregate_stream(&@NAME@_ops, state, round, u, n, params);
}

static const struct fedrun_aggregator_ops @NAME@_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = @NAME@_create,
	.destroy = @NAME@_destroy,
	.aggregate = @NAME@_aggregate,
	.begin = @NAME@_begin,
	.accumulate = @NAME@_accumulate,
	.finish = @NAME@_finish,
	/* TODO: state that must survive a checkpoint and --resume (a server
	 * momentum, say) needs .state; see fedrun-plugin(7). */
};

static const struct fedrun_plugin @NAME@_plugin =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "@NAME@", "0.1.0",
			   "weighted mean of the clients' updates (fedrun new aggregator)",
			   &@NAME@_ops);

/* The one symbol a plugin exports. */
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &@NAME@_plugin : NULL;
}
