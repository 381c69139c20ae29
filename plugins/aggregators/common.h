/* SPDX-License-Identifier: Apache-2.0 */
/* What every aggregator plugin of this directory needs: its own copy of the
 * layout, the checks a round must pass, the senders of a tensor, metrics, and
 * the norm of the step the server took. Compiled into each plugin (internal,
 * not exported: plugins export only fedrun_plugin_entry). */
#ifndef AGGR_COMMON_H
#define AGGR_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include "fedrun/plugin.h"

/* The JSON path under which the pipeline holds an aggregator's section. */
#define AGGR_PATH "aggregator"

struct aggr_base {
	const char *name;		/* the plugin's name, for messages */
	const struct fedrun_host *host; /* borrowed from create; outlives us */
	struct fedrun_layout layout;	/* owned copy */
	uint64_t max_numel;		/* of the largest tensor */
	float *before;			/* θ_t, kept for the step norm; owned */
	/* Per-client scratch of `cap` entries, reserved by aggr_begin for the
	 * round's n updates: the tensor pointers of aggr_senders, float
	 * weights, and doubles for per-client scores. */
	uint32_t cap;
	const float **src;
	float *w;
	double *val;
};

int aggr_base_init(struct aggr_base *b, const char *name, const struct fedrun_host *host,
		   const struct fedrun_layout *layout);
void aggr_base_fini(struct aggr_base *b);

/* Checks what aggregate() receives (n >= 1, the same layout as at create,
 * finite updates), reserves the per-client scratch and saves θ_t for
 * aggr_end(). */
int aggr_begin(struct aggr_base *b, const struct fedrun_round_info *round,
	       const struct fedrun_update *updates, uint32_t n, const float *params);
/* Reports "<name>.step_norm", ||θ_{t+1} − θ_t||, and checks θ_{t+1} is
 * finite. */
int aggr_end(struct aggr_base *b, const float *params);

/* The clients that sent tensor i: fills src[k] with updates[k].tensor[i]
 * (NULL where not sent) and returns how many are not NULL. */
uint32_t aggr_senders(const struct fedrun_update *updates, uint32_t n, uint32_t i,
		      const float **src);

/* out[0..numel) = Σ_k p_k Δ_k,i / Σ_k p_k over the clients k that sent tensor
 * i (meritfed's weighted update). Returns that
 * total weight, or 0 when nobody sent the tensor; when the total is not
 * above 1e-12, out is left zero. Uses b->src and b->w. */
double aggr_weighted_mean(struct aggr_base *b, const struct fedrun_update *updates, uint32_t n,
			  uint32_t i, const double *p, float *out);

/* Refuses a round whose layout is not the one of create (n tensors, total
 * floats). */
int aggr_check_layout(const char *name, uint32_t n, uint64_t total,
		      const struct fedrun_round_info *round);
/* Refuses a non-finite value in an update, naming the client, tensor and
 * element (what aggr_begin checks, for streaming ops). */
int aggr_check_finite(const char *name, const struct fedrun_layout *l,
		      const struct fedrun_round_info *round, const struct fedrun_update *updates,
		      uint32_t n);

/* Streaming weighted mean (ABI 1.3 begin/accumulate/finish): per tensor i,
 * Σ_k p_k Δ_k,i and Σ_k p_k over the clients that sent it, in double, with
 * p_k = n_k (samples), 1 (uniform) or the client's local steps this round
 * (steps: FedNMT's weighted average, Wang et al. 2021, eq. 3). Each element adds the clients in
 * their order, so any cut of the round into accumulate calls gives the same
 * bits, and memory is one double arena whatever the number of clients. */
struct aggr_sum {
	uint64_t total;	  /* floats of the layout */
	uint32_t ntensors;
	int weights;	  /* enum aggr_weights */
	double *acc;	  /* total doubles */
	double *tot;	  /* ntensors: Σ p_k over the senders */
	uint32_t *senders; /* ntensors: how many updates had the tensor */
	double all;	  /* Σ p_k over every update of the round */
	uint32_t n;	  /* updates so far */
	uint32_t *client; /* each update's client and weight p_k (metrics; a call's */
	double *p;	  /* weights are its slice of p) */
	const float **src; /* scratch: one tensor pointer per update of a call */
	uint32_t ccap, cap, srccap; /* capacities of client, p, src */
};

/* How an aggregator's "weights" option weighs client k: p_k = n_k, 1, or the
 * local steps the host reports (fedrun_round_info.client_steps, ABI 1.5).
 * AGGR_WEIGHTS_CHOICES is the option's choice list, in this order. */
enum aggr_weights { AGGR_WEIGHTS_SAMPLES, AGGR_WEIGHTS_UNIFORM, AGGR_WEIGHTS_STEPS };
#define AGGR_WEIGHTS_CHOICES "samples|uniform|steps"

int aggr_sum_init(struct aggr_sum *s, const struct fedrun_layout *l, int weights);
void aggr_sum_fini(struct aggr_sum *s);
/* Starts a round: zeroes the sums. */
void aggr_sum_begin(struct aggr_sum *s);
/* Adds n updates (with steps weights, round->client_steps gives them;
 * a host that does not report them is refused). */
int aggr_sum_add(struct aggr_sum *s, const struct fedrun_layout *l,
		 const struct fedrun_round_info *round, const struct fedrun_update *updates,
		 uint32_t n);
/* The same with client k's weight p_k times scale[k] (fednova: p_k times
 * its normaliser); scale NULL is aggr_sum_add. */
int aggr_sum_add_scaled(struct aggr_sum *s, const struct fedrun_layout *l,
			const struct fedrun_round_info *round, const struct fedrun_update *updates,
			uint32_t n, const double *scale);
/* out[0..numel) = Σ_k p_k Δ_k,i / Σ_k p_k for tensor i of layout l; returns
 * that total, or 0 (out untouched) when it is 0 (nobody sent the tensor:
 * senders[i] == 0, or its senders report 0 samples). */
double aggr_sum_mean(const struct aggr_sum *s, const struct fedrun_layout *l, uint32_t i,
		     float *out);
/* params[tensor i] += the mean, for every tensor somebody sent (FedAvg's
 * θ_{t+1} = θ_t + Σ_k p_k Δ_k / Σ_k p_k). */
void aggr_sum_apply(const struct aggr_sum *s, const struct fedrun_layout *l, float *params);

/* The run's clients and the updates a round aggregates (host->clients,
 * ABI 1.2); returns false where the host does not say. */
bool aggr_run_clients(const struct fedrun_host *host, uint32_t *clients, uint32_t *per_round);

/* host->metric, when the host has one. */
int aggr_metric(const struct aggr_base *b, const char *metric, int64_t client, const char *tensor,
		double value);

/* The one symbol each plugin exports (declared here for -Wmissing-prototypes). */
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);

#endif
