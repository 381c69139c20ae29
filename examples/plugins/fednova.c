/* SPDX-License-Identifier: Apache-2.0 */
/* fednova: an example aggregator, FedNova in C (its twin in Python is
 * examples/python/fednova.py; both give the same model bit for bit).
 *
 * FedNova (Wang et al. 2020, "Tackling the Objective Inconsistency Problem
 * in Heterogeneous Federated Optimization", section 4) normalises each
 * client's update by the local work that made it before averaging:
 *
 *     θ_{t+1} − θ_t = −τ_eff Σ_i p_i η d_i,   d_i = G_i a_i / ||a_i||_1,
 *     τ_eff = Σ_i p_i ||a_i||_1,               p_i = n_i / Σ_j n_j,
 *
 * the paper's general update rule with the FedNova weights. With plain SGD
 * (a_i = [1, ..., 1], ||a_i||_1 = τ_i, the client's local steps) and
 * Δ_i = θ_i − θ_t = −η G_i a_i, that is
 *
 *     θ_{t+1} = θ_t + τ_eff Σ_i p_i Δ_i / τ_i,   τ_eff = Σ_i p_i τ_i,
 *
 * which is what this file computes. τ_i is the host's count of the client's
 * optimizer updates this round (fedrun_round_info.client_steps, ABI 1.5).
 * With momentum or Adam, ||a_i||_1 is not τ_i (the paper gives it for
 * momentum); this rule then normalises by the steps only. As fedrun's own
 * aggregators do, each tensor's sums run over the clients that sent it
 * (p_i renormalised over them), a tensor nobody sent keeps its value, and
 * a client that made no step (τ_i = 0, so Δ_i = 0) is left out. Sums are in
 * double, clients in their order.
 *
 * Build against an installed fedrun (-ffp-contract=off: the same bits as
 * numpy, which rounds each product before adding it):
 *   cc -shared -fPIC -ffp-contract=off $(pkg-config --cflags fedrun) -o fednova.so \
 *      fednova.c $(pkg-config --libs fedrun)
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>

struct fednova {
	const struct fedrun_host *host;
	double *acc; /* the largest tensor's floats */
	float *before;
	uint64_t total, most;
};

static const struct fedrun_opt fednova_spec[] = {FEDRUN_OPT_END_};

static void fednova_destroy(void *state)
{
	struct fednova *st = state;
	free(st->acc);
	free(st->before);
	free(st);
}

static int fednova_create(const struct fedrun_host *host, json_t *config,
			  const struct fedrun_layout *layout, void **state)
{
	struct fednova *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	int rc = fedrun_opts_parse(fednova_spec, config, "aggregator", st);
	for (uint32_t i = 0; i < layout->n; i++)
		if (layout->t[i].numel > st->most)
			st->most = layout->t[i].numel;
	st->total = layout->total;
	if (rc == 0 && (!(st->acc = malloc(st->most * sizeof *st->acc)) ||
			!(st->before = malloc(st->total * sizeof *st->before))))
		rc = fedrun_error(FEDRUN_ENOMEM, "fednova: out of memory");
	if (rc < 0) {
		fednova_destroy(st);
		return rc;
	}
	*state = st;
	return 0;
}

static int fednova_aggregate(void *state, const struct fedrun_round_info *round,
			     const struct fedrun_update *u, uint32_t n, float *params)
{
	struct fednova *st = state;
	const struct fedrun_layout *l = round->layout;
	if (round->size < offsetof(struct fedrun_round_info, client_steps) +
				  sizeof round->client_steps ||
	    !round->client_steps)
		return fedrun_error(FEDRUN_EINVAL, "fednova: the host does not report the clients' "
						   "local steps (plugin ABI 1.5)");
	const uint64_t *tau = round->client_steps;
	memcpy(st->before, params, st->total * sizeof *params);
	for (uint32_t i = 0; i < l->n; i++) {
		double w = 0, t = 0;
		for (uint32_t k = 0; k < n; k++)
			if (u[k].tensor[i] && tau[k] > 0) {
				w += (double)u[k].n_samples;
				t += (double)u[k].n_samples * (double)tau[k];
			}
		if (!(w > 0))
			continue; /* nobody sent it (or every sender made no step) */
		const double tau_eff = t / w;
		const uint64_t numel = l->t[i].numel;
		memset(st->acc, 0, numel * sizeof *st->acc);
		for (uint32_t k = 0; k < n; k++) {
			const float *d = u[k].tensor[i];
			if (!d || tau[k] == 0)
				continue;
			const double c = (double)u[k].n_samples / w / (double)tau[k];
			for (uint64_t e = 0; e < numel; e++)
				st->acc[e] += c * (double)d[e];
		}
		float *x = params + l->t[i].offset;
		for (uint64_t e = 0; e < numel; e++)
			x[e] = (float)((double)x[e] + tau_eff * st->acc[e]);
		int rc = st->host->metric(st->host->ctx, "fednova.tau_eff", -1, l->t[i].name, tau_eff);
		if (rc < 0)
			return rc;
	}
	uint64_t bad;
	if (!fedrun_vec_finite(st->total, params, &bad))
		return fedrun_error(FEDRUN_ENUMERIC,
				    "fednova: the aggregated parameters are not finite (element %llu)",
				    (unsigned long long)bad);
	return st->host->metric(st->host->ctx, "fednova.step_norm", -1, NULL,
				fedrun_vec_dist2(st->total, params, st->before));
}

static const struct fedrun_aggregator_ops fednova_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = fednova_create,
	.destroy = fednova_destroy,
	.aggregate = fednova_aggregate,
};

static const struct fedrun_plugin fednova_plugin =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "fednova", "1.0.0",
			   "FedNova: updates normalised by local steps (Wang et al. 2020)", &fednova_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &fednova_plugin : NULL;
}
