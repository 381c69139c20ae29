/* SPDX-License-Identifier: Apache-2.0 */
/* dp_greater and dp_less: Dynamic Pulling (Passban et al. 2022, eqs. 2 and 3).
 * A client sends the tensors whose change since its previous round,
 * ||w_r − w_{r−1}||, is at least (dp_greater) or below (dp_less) a threshold
 * θ set per group of tensors (encoder., decoder., the rest) at a quantile of
 * the group's norms: the median by default, so about half the tensors go.
 * Options beyond the paper's text: the measure may be the norm divided by
 * the tensor's size (measure "mean"), and θ may be the quantile of the
 * parameters rather than of the tensors (fraction_by "parameters"), so that
 * about half the parameters go, the share the paper reports (sec. 5.4:
 * 22,863,104 of 45,724,160 parameters pulled by DP_l). */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>
#include "common.h"

enum { DP_REF_PREVIOUS, DP_REF_RECEIVED };
enum { DP_NORM_L2, DP_NORM_L1 };
enum { DP_FIRST_ALL, DP_FIRST_RECEIVED };
enum { DP_MEASURE_NORM, DP_MEASURE_MEAN };
enum { DP_BY_TENSORS, DP_BY_PARAMETERS };

/* Checkpoints hold one model copy per client slot, so the table is bounded
 * well below what would make sense to checkpoint. */
#define DP_MAX_CLIENTS 65536
#define DP_BLOB_NAME 16 /* "ref.65535" */

struct dp_cfg {
	double quantile;
	int reference, norm, first, measure, fraction_by;
	int64_t max_clients;
	json_t *groups; /* read again by selgroups_init */
};

static const struct fedrun_opt dp_spec[] = {
    {"quantile", FEDRUN_OPT_NUMBER, offsetof(struct dp_cfg, quantile), 0, 0, 1, 0.5, NULL, NULL},
    {"reference", FEDRUN_OPT_CHOICE, offsetof(struct dp_cfg, reference), 0, 0, 0, 0, "previous",
     "previous|received"},
    {"norm", FEDRUN_OPT_CHOICE, offsetof(struct dp_cfg, norm), 0, 0, 0, 0, "l2", "l2|l1"},
    {"first", FEDRUN_OPT_CHOICE, offsetof(struct dp_cfg, first), 0, 0, 0, 0, "all", "all|received"},
    {"measure", FEDRUN_OPT_CHOICE, offsetof(struct dp_cfg, measure), 0, 0, 0, 0, "norm",
     "norm|mean"},
    {"fraction_by", FEDRUN_OPT_CHOICE, offsetof(struct dp_cfg, fraction_by), 0, 0, 0, 0, "tensors",
     "tensors|parameters"},
    {"max_clients", FEDRUN_OPT_INT, offsetof(struct dp_cfg, max_clients), FEDRUN_OPT_OPTIONAL, 1,
     DP_MAX_CLIENTS, 0, NULL, NULL},
    {"groups", FEDRUN_OPT_ARRAY, offsetof(struct dp_cfg, groups), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    FEDRUN_OPT_END_,
};

struct dp {
	const struct fedrun_host *host;
	const char *name; /* "dp_greater" or "dp_less" */
	bool greater;	  /* eq. 2 (norm >= θ) rather than eq. 3 (norm < θ) */
	double quantile;
	int reference, norm, first, measure, fraction_by;
	struct selgroups groups;
	uint32_t n;	/* tensors */
	uint64_t total; /* arena floats */

	/* reference "previous": w_{r−1} of each client, in a slot indexed by
	 * client id. ref[c] is allocated the first time client c trains, and
	 * only the thread that runs client c touches ref[c] and have[c]. */
	uint32_t max_clients;
	float **ref;
	uint8_t *have; /* have[c]: ref[c] holds w_{r−1}; the "have" blob */
	char (*names)[DP_BLOB_NAME];
	struct fedrun_state_blob *blobs; /* 1 + max_clients */
	float *zero;			 /* stands in for empty slots in checkpoints */
	pthread_mutex_t lock;		 /* guards used and trim */
	bool used;			 /* select has run since create */
	bool trim;			 /* slots allocated for a restore, to free if empty */
};

static void dp_destroy(void *state)
{
	struct dp *st = state;
	if (!st)
		return;
	if (st->ref)
		for (uint32_t c = 0; c < st->max_clients; c++)
			fedrun_arena_free(st->ref[c]);
	free(st->ref);
	free(st->have);
	free(st->names);
	free(st->blobs);
	fedrun_arena_free(st->zero);
	selgroups_fini(&st->groups);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static int dp_create_table(struct dp *st)
{
	uint32_t m = st->max_clients;
	st->ref = calloc(m, sizeof *st->ref);
	st->have = calloc(m, 1);
	st->names = calloc(m, sizeof *st->names);
	st->blobs = calloc((size_t)m + 1, sizeof *st->blobs);
	if (!st->ref || !st->have || !st->names || !st->blobs)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t c = 0; c < m; c++)
		snprintf(st->names[c], sizeof st->names[c], "ref.%u", c);
	return 0;
}

static int dp_create(const struct fedrun_host *host, json_t *config,
		     const struct fedrun_layout *layout, void **state, bool greater)
{
	struct dp_cfg cfg = {0};
	int rc = fedrun_opts_parse(dp_spec, config, "selector", &cfg);
	if (rc < 0)
		return rc;
	if (cfg.reference == DP_REF_PREVIOUS && !json_object_get(config, "max_clients"))
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "selector.max_clients: required with reference \"previous\": "
		    "the number of clients, whose last parameters are kept and checkpointed");
	struct dp *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	pthread_mutex_init(&st->lock, NULL);
	st->host = host;
	st->name = greater ? "dp_greater" : "dp_less";
	st->greater = greater;
	st->quantile = cfg.quantile;
	st->reference = cfg.reference;
	st->norm = cfg.norm;
	st->first = cfg.first;
	st->measure = cfg.measure;
	st->fraction_by = cfg.fraction_by;
	st->n = layout->n;
	st->total = layout->total;
	if ((rc = selgroups_init(&st->groups, config, "selector", "groups", true, layout)) < 0)
		goto fail;
	if (cfg.reference == DP_REF_PREVIOUS) {
		uint32_t nclients = 0;
#if FEDRUN_ABI_MINOR >= 2
		/* Checked here, not in the first round, so that validate refuses it. */
		if (host && host->size >= offsetof(struct fedrun_host, clients) + sizeof host->clients &&
		    host->clients)
			nclients = host->clients(host->ctx, NULL);
#endif
		if (nclients > cfg.max_clients) {
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "selector.max_clients: %lld, but the run has %u clients (%s "
					  "keeps one reference per client)",
					  (long long)cfg.max_clients, nclients, st->name);
			goto fail;
		}
		st->max_clients = (uint32_t)cfg.max_clients;
		if ((rc = dp_create_table(st)) < 0)
			goto fail;
	}
	*state = st;
	return 0;
fail:
	dp_destroy(st);
	return rc;
}

static int dp_greater_create(const struct fedrun_host *host, json_t *config,
			     const struct fedrun_layout *layout, void **state)
{
	return dp_create(host, config, layout, state, true);
}

static int dp_less_create(const struct fedrun_host *host, json_t *config,
			  const struct fedrun_layout *layout, void **state)
{
	return dp_create(host, config, layout, state, false);
}

/* ||a − b|| over n floats, accumulated in double in a fixed order. */
static double dp_norm(int norm, uint64_t n, const float *a, const float *b)
{
	if (norm == DP_NORM_L2)
		return fedrun_vec_dist2(n, a, b);
	double s = 0;
	for (uint64_t i = 0; i < n; i++)
		s += fabs((double)a[i] - (double)b[i]);
	return s;
}

/* The mask of eq. 2 (dp_greater) or eq. 3 (dp_less) with a threshold per
 * group: the configured quantile of the group's measures (fraction_by
 * "tensors"), or the measure below which that share of the group's
 * parameters lies (fraction_by "parameters"). The measure is the norm of
 * the change, ||w_r − w_{r−1}||, or (measure "mean") that norm over
 * numel^(1/p) for the p-norm: the root mean square of the change's entries
 * for l2, their mean absolute value for l1. */
static int dp_mask(const struct dp *st, const struct fedrun_layout *l, const float *ref,
		   const float *after, uint8_t *mask)
{
	size_t n = l->n ? l->n : 1;
	double *norm = malloc(2 * n * sizeof *norm);
	struct selgroups_weighted *wv = NULL;
	if (norm && st->fraction_by == DP_BY_PARAMETERS)
		wv = malloc(n * sizeof *wv);
	if (!norm || (st->fraction_by == DP_BY_PARAMETERS && !wv)) {
		free(norm);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	double *sorted = norm + l->n;
	for (uint32_t i = 0; i < l->n; i++) {
		uint64_t numel = l->t[i].numel;
		norm[i] = dp_norm(st->norm, numel, after + l->t[i].offset, ref + l->t[i].offset);
		if (st->measure == DP_MEASURE_MEAN && numel > 0)
			norm[i] /= st->norm == DP_NORM_L2 ? sqrt((double)numel) : (double)numel;
	}
	const struct selgroups *g = &st->groups;
	for (uint32_t k = 0; k < g->n; k++) {
		const uint32_t *member = g->member + g->start[k];
		uint32_t m = g->start[k + 1] - g->start[k];
		if (m == 0)
			continue;
		double theta;
		if (wv) {
			for (uint32_t j = 0; j < m; j++)
				wv[j] = (struct selgroups_weighted){norm[member[j]],
								    l->t[member[j]].numel};
			theta = selgroups_weighted_threshold(wv, m, st->quantile);
		} else {
			for (uint32_t j = 0; j < m; j++)
				sorted[j] = norm[member[j]];
			theta = selgroups_quantile(sorted, m, st->quantile);
		}
		for (uint32_t j = 0; j < m; j++) {
			double v = norm[member[j]];
			mask[member[j]] = st->greater ? v >= theta : v < theta;
		}
	}
	free(wv);
	free(norm);
	return 0;
}

/* Checks that `client` has a slot and, on the first select after a
 * restore, frees the slots the checkpoint left empty. The first thread to
 * take the lock does that before any thread touches its own slot. */
static int dp_enter(struct dp *st, const struct fedrun_round_info *round, uint32_t client)
{
	if (round->num_clients > st->max_clients || client >= st->max_clients)
		return fedrun_error(FEDRUN_ECONFIG,
				    "selector.max_clients: %u, but the run has %u clients "
				    "(%s keeps one reference per client)",
				    st->max_clients,
				    round->num_clients > client ? round->num_clients : client + 1,
				    st->name);
	pthread_mutex_lock(&st->lock);
	st->used = true;
	if (st->trim) {
		for (uint32_t c = 0; c < st->max_clients; c++)
			if (!st->have[c]) {
				fedrun_arena_free(st->ref[c]);
				st->ref[c] = NULL;
			}
		st->trim = false;
	}
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/* Keeps `after` as the client's w_{r−1} for its next round. */
static int dp_remember(struct dp *st, uint32_t client, const float *after)
{
	if (!st->ref[client] && !(st->ref[client] = fedrun_arena_alloc(st->total)))
		return fedrun_error(FEDRUN_ENOMEM,
				    "out of memory for client %u's reference (%llu floats)", client,
				    (unsigned long long)st->total);
	memcpy(st->ref[client], after, st->total * sizeof(float));
	st->have[client] = 1;
	return 0;
}

static int dp_select(void *state, const struct fedrun_round_info *round, uint32_t client,
		     const float *before, const float *after, uint8_t *mask)
{
	struct dp *st = state;
	const struct fedrun_layout *l = round->layout;
	int rc = 0;
	if (l->n != st->n || l->total != st->total)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: the round's layout (%u tensors) is not the one "
				    "the selector was created with (%u tensors)",
				    st->name, l->n, st->n);
	/* w_{r−1} of eqs. 2 and 3: the client's parameters after its previous
	 * round, or (reference "received") those it started this round from. */
	const float *ref = before;
	if (st->reference == DP_REF_PREVIOUS) {
		if ((rc = dp_enter(st, round, client)) < 0)
			return rc;
		ref = st->have[client]		       ? st->ref[client]
		      : st->first == DP_FIRST_RECEIVED ? before
						       : NULL;
	}
	if (ref)
		rc = dp_mask(st, l, ref, after, mask);
	else
		memset(mask, 1, l->n); /* no w_{r−1} yet: everything travels */
	if (rc == 0 && st->reference == DP_REF_PREVIOUS)
		rc = dp_remember(st, client, after);
	if (rc == 0)
		rc = selgroups_report(st->host, l, client, mask);
	return rc;
}

/* The blobs: "have" (max_clients bytes) and "ref.<c>" (the arena of client
 * c's w_{r−1}) for every slot, so that the list does not depend on which
 * clients have trained: the host restores in place into the list it gets
 * right after create. For that call (no select yet) every slot is
 * allocated; the first select frees those the checkpoint left empty. When
 * checkpointing, empty slots point at one shared zero arena. */
static int dp_state(void *state, const struct fedrun_state_blob **blobs, uint32_t *n)
{
	struct dp *st = state;
	*blobs = NULL;
	*n = 0;
	if (st->reference != DP_REF_PREVIOUS)
		return 0;
	int rc = 0;
	pthread_mutex_lock(&st->lock);
	if (!st->used) {
		for (uint32_t c = 0; c < st->max_clients; c++)
			if (!st->ref[c] && !(st->ref[c] = fedrun_arena_alloc(st->total))) {
				rc = fedrun_error(
				    FEDRUN_ENOMEM,
				    "%s: out of memory for %u client references to restore",
				    st->name, st->max_clients);
				goto out;
			}
		st->trim = true;
	} else if (!st->zero && !(st->zero = fedrun_arena_alloc(st->total))) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	st->blobs[0] = (struct fedrun_state_blob){"have", st->have, st->max_clients};
	for (uint32_t c = 0; c < st->max_clients; c++) {
		float *data = st->ref[c] && (st->have[c] || !st->used) ? st->ref[c] : st->zero;
		st->blobs[c + 1] =
		    (struct fedrun_state_blob){st->names[c], data, st->total * sizeof(float)};
	}
	*blobs = st->blobs;
	*n = st->max_clients + 1;
out:
	pthread_mutex_unlock(&st->lock);
	return rc;
}

static const struct fedrun_selector_ops dp_greater_ops = {
    .size = sizeof(struct fedrun_selector_ops),
    .create = dp_greater_create,
    .destroy = dp_destroy,
    .select = dp_select,
    .state = dp_state,
};

static const struct fedrun_selector_ops dp_less_ops = {
    .size = sizeof(struct fedrun_selector_ops),
    .create = dp_less_create,
    .destroy = dp_destroy,
    .select = dp_select,
    .state = dp_state,
};

static const struct fedrun_plugin dp_plugins[] = {
    FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_SELECTOR, "dp_greater", "1.0.0",
	"dynamic pulling: send the tensors that changed most (eq. 2 of Passban et al. 2022)",
	&dp_greater_ops),
    FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_SELECTOR, "dp_less", "1.0.0",
	"dynamic pulling: send the tensors that changed least (eq. 3 of Passban et al. 2022)",
	&dp_less_ops),
};

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index < sizeof dp_plugins / sizeof dp_plugins[0] ? &dp_plugins[index] : NULL;
}
