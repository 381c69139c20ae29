/* SPDX-License-Identifier: Apache-2.0 */
/* The fedrun plugin ABI.
 *
 * A plugin is a shared object that exports exactly one symbol,
 *
 *     const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
 *
 * which the host calls with index 0, 1, 2, ... until it returns NULL, so one
 * file may hold several plugins. The rules (LV2 / GStreamer style):
 *
 *  - abi_major MUST equal the host's FEDRUN_ABI_MAJOR; abi_minor MUST NOT be
 *    newer than the host's FEDRUN_ABI_MINOR.
 *  - `size` MUST be sizeof(struct fedrun_plugin) as the plugin was built; the
 *    ops table's first member MUST be its own size. Tables only grow at the
 *    end; the host reads no member beyond the size a plugin declares.
 *  - Required ops (marked REQUIRED below) MUST NOT be NULL.
 *  - A plugin MUST NOT exit or abort the process, nor print to stdout: it
 *    returns a negative FEDRUN_E* code with a message (fedrun_error or
 *    host->error).
 *  - Configuration arrives as the plugin's pipeline section, a jansson object
 *    BORROWED for the duration of create(); keep what you need. Unknown keys
 *    MUST be rejected (fedrun_opts_parse does it).
 *  - Every pointer passed to an op is borrowed for the duration of the call
 *    unless stated otherwise.
 */
#ifndef FEDRUN_PLUGIN_H
#define FEDRUN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <jansson.h>
#include "fedrun/error.h"
#include "fedrun/params.h"
#include "fedrun/host.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FEDRUN_ABI_MAJOR 1
#define FEDRUN_ABI_MINOR 11

#define FEDRUN_PLUGIN_ENTRY "fedrun_plugin_entry"

enum fedrun_plugin_kind {
	FEDRUN_KIND_AGGREGATOR = 1,
	FEDRUN_KIND_MODEL = 2,
	FEDRUN_KIND_SELECTOR = 3,
	FEDRUN_KIND_PRIVACY = 4,
	FEDRUN_KIND_BACKEND = 5,
	FEDRUN_KIND_TRANSPORT = 6 /* fedrun/transport.h */
};
#define FEDRUN_KIND_MAX_ FEDRUN_KIND_TRANSPORT

struct fedrun_plugin {
	uint32_t abi_major;  /* FEDRUN_ABI_MAJOR */
	uint32_t abi_minor;  /* FEDRUN_ABI_MINOR */
	uint32_t size;       /* sizeof(struct fedrun_plugin) */
	uint32_t kind;       /* enum fedrun_plugin_kind */
	const char *name;    /* pipeline name: [a-z0-9_-]+ */
	const char *version; /* the plugin's own version, "1.2.0" */
	const char *summary; /* one line */
	const void *ops;     /* the kind's ops table, first member its size */
};

/* Signature of the entry symbol. */
typedef const struct fedrun_plugin *(*fedrun_plugin_entry_fn)(uint32_t index);

/* What every round-time call knows about the round. */
struct fedrun_round_info {
	uint32_t size;     /* sizeof(struct fedrun_round_info) */
	uint32_t round;    /* 1-based */
	uint32_t rounds;   /* total rounds of the run */
	uint32_t num_clients;
	uint64_t seed;
	const struct fedrun_layout *layout;
	uint32_t sampled;  /* clients sampled this round */
	double fraction;   /* the pipeline's clients.fraction (sampling rate) */
	uint32_t direction; /* selectors: FEDRUN_PULL or FEDRUN_PUSH */
	/* ABI 1.1 (check size): clients that have training data, among which
	 * `sampled` were drawn (the others are evaluation-only). */
	uint32_t num_trainable;
	/* ABI 1.5 (check size): in aggregate() and accumulate(), the optimizer
	 * updates (local steps) each client of that call's `updates` made this
	 * round, parallel to `updates`; NULL in the other calls: how far the
	 * client's train() advanced *args->optim_step (0 for a model that does
	 * not advance it). FedNMT's weighted average (Wang et al. 2021, eq. 3)
	 * weighs by it; FedNova (Wang et al. 2020) normalises by it. */
	const uint64_t *client_steps;
};

/* Which way a selector's choice goes (fedrun_round_info.direction). With
 * selector.direction "both" the host creates one instance for each way. */
enum { FEDRUN_PULL = 0, FEDRUN_PUSH = 1 };

/* ---- aggregators ------------------------------------------------------- */

/* What an aggregator may ask of the clients' local training (see
 * configure_clients). The host fills in defaults before the call. */
struct fedrun_client_hints {
	uint32_t size;  /* sizeof(struct fedrun_client_hints) as the host has it */
	double prox_mu; /* FedProx's μ: local objective + μ/2·||w − w_t||² */
};

/* One client's update as the server decoded it from the pull message.
 * tensor[i] points at the numel floats of Δ_k = θ_k − θ_t for tensor i of the
 * layout, or is NULL when the client's selector did not send tensor i. */
struct fedrun_update {
	uint32_t client;
	uint64_t n_samples;         /* n_k: the client's training samples */
	double train_loss;          /* mean local training loss */
	const float *const *tensor; /* layout->n entries */
};

/* A named piece of plugin state that the host saves in checkpoints and
 * restores in place on --resume. `data` is owned by the plugin. */
struct fedrun_state_blob {
	const char *name;
	void *data;
	uint64_t bytes;
};

struct fedrun_aggregator_ops {
	uint32_t size;
	/* REQUIRED. Parses `config` and allocates state. */
	int (*create)(const struct fedrun_host *host, json_t *config,
		      const struct fedrun_layout *layout, void **state);
	/* REQUIRED. */
	void (*destroy)(void *state);
	/* REQUIRED. `params` holds θ_t on entry and must hold θ_{t+1} on
	 * return. `updates` are sorted by client id; n >= 1. */
	int (*aggregate)(void *state, const struct fedrun_round_info *round,
			 const struct fedrun_update *updates, uint32_t n,
			 float *params);
	/* Optional. Lists state that must survive a checkpoint/resume; sets
	 * *blobs (owned by the plugin) and *n. */
	int (*state)(void *state, const struct fedrun_state_blob **blobs,
		     uint32_t *n);
	/* Optional. Called once after create: sets what the clients' local
	 * training must do for this aggregator (FedProx's proximal term). */
	int (*configure_clients)(void *state, struct fedrun_client_hints *hints);
	/* ---- ABI 1.3: streaming aggregation. Optional: all three or none
	 * (the host refuses a table with some of them). With them the host
	 * never holds a round's updates at once: it calls begin, then
	 * accumulate with the updates in client order, a few at a time as
	 * clients finish (n >= 1 per call; the updates are borrowed for the
	 * call only), then finish with `params` holding θ_t, which must hold
	 * θ_{t+1} on return. The result MUST NOT depend on how the updates
	 * are cut into calls; aggregate(u, n) must equal begin, accumulate(u,
	 * n), finish (fedrun_aggregate_stream below does exactly that). The
	 * host still calls aggregate where it must see every update first (a
	 * server-side attack). An aggregator whose rule needs all updates at
	 * once (median, Krum, MeritFed) leaves these NULL, and the host then
	 * buffers the round: memory grows with the clients per round. */
	int (*begin)(void *state, const struct fedrun_round_info *round);
	int (*accumulate)(void *state, const struct fedrun_round_info *round,
			  const struct fedrun_update *updates, uint32_t n);
	int (*finish)(void *state, const struct fedrun_round_info *round, float *params);
};

/* True when an aggregator ops table streams (ABI 1.3 begin, accumulate
 * and finish, checked by the host at load). */
#define FEDRUN_AGGREGATOR_STREAMS(ops_)                                                   \
	((ops_)->size >= offsetof(struct fedrun_aggregator_ops, finish) + sizeof(void *) &&   \
	 (ops_)->begin != NULL && (ops_)->accumulate != NULL && (ops_)->finish != NULL)

/* aggregate() for a streaming aggregator: begin, one accumulate over all
 * n updates, finish. */
static inline int fedrun_aggregate_stream(const struct fedrun_aggregator_ops *ops, void *state,
					  const struct fedrun_round_info *round,
					  const struct fedrun_update *updates, uint32_t n,
					  float *params)
{
	int rc = ops->begin(state, round);
	if (rc >= 0)
		rc = ops->accumulate(state, round, updates, n);
	if (rc >= 0)
		rc = ops->finish(state, round, params);
	return rc;
}

/* ---- selectors --------------------------------------------------------- */

struct fedrun_selector_ops {
	uint32_t size;
	int (*create)(const struct fedrun_host *host, json_t *config,
		      const struct fedrun_layout *layout, void **state); /* REQUIRED */
	void (*destroy)(void *state);                                /* REQUIRED */
	/* REQUIRED. Sets mask[i] to 1 for each tensor i of `client`'s update
	 * that is sent to the server, 0 otherwise. `before` is θ_t as the
	 * client received it, `after` its parameters after local training.
	 * Called from worker threads, concurrently for different clients. */
	int (*select)(void *state, const struct fedrun_round_info *round,
		      uint32_t client, const float *before, const float *after,
		      uint8_t *mask);
	/* Optional. State that must survive a checkpoint (as for
	 * aggregators); called on the main thread between rounds. */
	int (*state)(void *state, const struct fedrun_state_blob **blobs,
		     uint32_t *n);
};

/* ---- privacy ----------------------------------------------------------- */

struct fedrun_privacy_ops {
	uint32_t size;
	int (*create)(const struct fedrun_host *host, json_t *config,
		      const struct fedrun_layout *layout, void **state); /* REQUIRED */
	void (*destroy)(void *state);                                /* REQUIRED */
	/* REQUIRED. Transforms client's update `delta` (a whole arena) in
	 * place; only tensors with mask[i] set travel. Called from worker
	 * threads, concurrently for different clients. */
	int (*apply)(void *state, const struct fedrun_round_info *round,
		     uint32_t client, const uint8_t *mask, float *delta);
	/* Optional. Central privacy: called on the server after aggregation
	 * with the round's aggregate update θ_{t+1} − θ_t (a whole arena), to
	 * transform in place (e.g. add noise to the average, as DP-FedAvg
	 * does); `n` updates were aggregated. Also where a plugin accounts
	 * the privacy spent in the round (report it with host->metric). */
	int (*apply_server)(void *state, const struct fedrun_round_info *round,
			    uint32_t n, float *delta);
	/* Optional. State that must survive a checkpoint (accountants). */
	int (*state)(void *state, const struct fedrun_state_blob **blobs,
		     uint32_t *n);
};

/* ---- models ------------------------------------------------------------ */

enum fedrun_optimizer_kind {
	FEDRUN_OPTIM_SGD = 0,
	FEDRUN_OPTIM_ADAM = 1,
	FEDRUN_OPTIM_ADAMW = 2
};

/* Local optimizer settings, from the pipeline's clients.optimizer. */
struct fedrun_optim_cfg {
	enum fedrun_optimizer_kind kind;
	double lr;
	double momentum;     /* SGD */
	bool nesterov;       /* SGD */
	double weight_decay;
	double beta1, beta2, eps; /* Adam, AdamW */
	double clip_norm;    /* global-norm gradient clipping; 0 = off */
};

struct fedrun_train_args {
	uint32_t size;        /* sizeof(struct fedrun_train_args) */
	uint32_t round;
	uint32_t client;
	uint64_t seed;
	uint32_t epochs;      /* local epochs; 0 when steps is used */
	uint64_t steps;       /* local steps; 0 when epochs is used */
	uint32_t batch;
	const struct fedrun_optim_cfg *optim;
	/* Optimizer state that persists across rounds when the pipeline keeps
	 * it (fedrun_optim_state_floats() floats), else a zeroed scratch. */
	float *optim_state;
	uint64_t *optim_step; /* the optimizer's step counter, kept with it */
	/* FedProx (Li et al. 2020): when prox_mu > 0 the local objective
	 * gains μ/2·||w − w_t||², w_t = prox_anchor (the parameters the client
	 * received); fedrun_prox_grad() adds its gradient. */
	double prox_mu;
	const float *prox_anchor;
	/* ABI 1.2: the step a learning-rate schedule has reached before this
	 * call's first update: the server's global step (the sum over past
	 * rounds of the most updates a client made in the round), or with
	 * clients.lr_clock "client" the optimizer's own *optim_step. A model
	 * with a schedule uses step sched_step + k + 1 for its k-th update
	 * (k from 0) in this call. Check size before reading it; older hosts
	 * leave it out, and *optim_step + 1 is the step to use. */
	uint64_t sched_step;
};

struct fedrun_train_stats {
	double loss;      /* mean training loss over the local work */
	uint64_t samples; /* samples (or tokens) processed */
};

#define FEDRUN_METRICS_MAX 16
struct fedrun_metric_value {
	char name[32];
	double value;
};
/* Evaluation results; by convention m[0] is "loss". */
struct fedrun_eval {
	uint32_t n;
	struct fedrun_metric_value m[FEDRUN_METRICS_MAX];
};

/* ABI 1.1: decoding settings for models that generate text. */
struct fedrun_decode_opts {
	uint32_t size;      /* sizeof(struct fedrun_decode_opts) */
	uint32_t beam;      /* 1 = greedy */
	double len_penalty; /* alpha: score / len^alpha (fairseq's --lenpen); 0 = none */
	double max_len_a;   /* max target length = a * source length + b */
	double max_len_b;
	uint32_t batch;     /* sentences decoded at once */
	/* ---- ABI 1.7: the op reads these only when `size` covers them. */
	/* What to do with a source longer than the model decodes (the
	 * transformer's max_len tokens): FEDRUN_LONG_CUT keeps its first
	 * tokens, FEDRUN_LONG_REFUSE fails the call with FEDRUN_EINVAL,
	 * FEDRUN_LONG_KEEP decodes it whole, as the model's evaluation does
	 * (a model that does so sets *max_src to 0; one that does not know
	 * the value cuts, and says so through *max_src). */
	uint32_t long_src;
	/* Outputs, each NULL or set by the op: src_tokens[i] the tokens of
	 * source i as the model reads it (before any cut; n entries, set for
	 * every source when the call fails on one); *max_src the most source
	 * tokens the model decodes. With these the host names the line it
	 * cut or refused. */
	uint32_t *src_tokens;
	uint32_t *max_src;
};
enum fedrun_long_src { FEDRUN_LONG_CUT = 0, FEDRUN_LONG_REFUSE = 1, FEDRUN_LONG_KEEP = 2 };

/* ABI 1.9: what a language model's score op measures on new text. */
struct fedrun_lm_score {
	uint32_t size;	  /* sizeof(struct fedrun_lm_score) as the host has it */
	double loss;	  /* out: mean cross-entropy in nats per predicted token */
	uint64_t tokens;  /* out: predicted tokens (<eos> included) */
	uint64_t oov;	  /* out: tokens outside the vocabulary (read as <unk>) */
	/* NULL: the lines are one text, scored as the model evaluates a split.
	 * Otherwise n entries: each line's log-probability (natural log) on
	 * its own, from a fresh state, and line_tokens (n entries) the tokens
	 * it predicts (0 for a blank line, whose log-probability is 0). */
	double *line_logprob;
	uint64_t *line_tokens;
};

/* ABI 1.9: sampling text from a language model (sample). */
struct fedrun_sample_opts {
	uint32_t size;	    /* sizeof(struct fedrun_sample_opts) */
	uint32_t tokens;    /* tokens to draw (<eos> included) */
	double temperature; /* softmax(logits / T); 0: the most probable token */
	uint64_t seed;	    /* the draws' fedrun_rng stream */
	const char *prompt; /* UTF-8 text read before drawing, or NULL */
};

/* ABI 1.6: how a domain expert's gate is fitted (gate_fit). */
struct fedrun_gate_opts {
	uint32_t size;  /* sizeof(struct fedrun_gate_opts) */
	uint32_t steps; /* optimizer steps */
	double lr;      /* learning rate */
};

struct fedrun_model_ops {
	uint32_t size;
	/* REQUIRED. Builds the model and loads or generates its data from
	 * the "model" and "data" sections (data may be NULL when absent). */
	int (*create)(const struct fedrun_host *host, json_t *model_config,
		      json_t *data_config, void **model);
	void (*destroy)(void *model); /* REQUIRED */
	/* REQUIRED. Borrowed, valid until destroy. */
	const struct fedrun_layout *(*layout)(void *model);
	/* REQUIRED. Initial parameters (padding already zero). */
	int (*init_params)(void *model, uint64_t seed, float *params);
	/* REQUIRED. */
	uint32_t (*num_clients)(void *model);
	/* REQUIRED. n_k, the number of training samples of `client`. */
	uint64_t (*client_size)(void *model, uint32_t client);
	/* Optional per-thread scratch; worker is NULL where absent. */
	int (*worker_create)(void *model, void **worker);
	void (*worker_destroy)(void *model, void *worker);
	/* REQUIRED. Local training of args->client starting from `params`,
	 * which hold the trained parameters on return. Called concurrently
	 * from worker threads (each with its own worker). */
	int (*train)(void *model, void *worker,
		     const struct fedrun_train_args *args, float *params,
		     struct fedrun_train_stats *stats);
	/* REQUIRED. Evaluates params on `split` of `client` (or
	 * FEDRUN_ALL_CLIENTS). Returns FEDRUN_ENOENT when the client has no
	 * such split. */
	int (*evaluate)(void *model, void *worker, const float *params,
			enum fedrun_split split, int64_t client,
			struct fedrun_eval *out);
	/* Optional. Mean loss and its gradient (grad may be NULL). */
	int (*loss_grad)(void *model, void *worker, const float *params,
			 enum fedrun_split split, int64_t client, float *grad,
			 double *loss);
	/* ---- ABI 1.1: the host reads these only when `size` covers them. */
	/* Optional. Translates n source sentences (UTF-8, one sentence each,
	 * no newline) with `params`; out[i] receives a malloc'd UTF-8 string
	 * (the caller frees it with free()). opts may be NULL (the model's own
	 * defaults, from its "decode" options). Called from the main thread.
	 * A model created with data_config == NULL must support it (fedrun
	 * translate creates the model so; num_clients is 0 then). */
	int (*translate)(void *model, void *worker, const float *params,
			 const struct fedrun_decode_opts *opts,
			 const char *const *src, uint32_t n, char **out);
	/* Optional. The display name of `client` (e.g. its domain, "git"),
	 * borrowed, valid until destroy; NULL for the host's "client<k>".
	 * Used for eval.matrix tables and fine-tuned models' metrics. */
	const char *(*client_name)(void *model, uint32_t client);
	/* ---- ABI 1.6: domain experts (FedNMT paper, sec. 2.5; the
	 * pipeline's "expert" section, fedrun-pipeline(5)). Optional: all
	 * four or none (the host refuses a table with some of them). A client
	 * translates with the token-level mixture λ(x) p_G + (1 − λ(x)) p_P of
	 * the global model (`global`) and its private model (`priv`, the same
	 * layout), λ a gate of the source sentence x with gate_size() floats
	 * of parameters θ (`gate`). Every array is host memory. */
	/* The floats of θ (>= 1). */
	uint32_t (*gate_size)(void *model);
	/* Fits θ on `client`'s training data, both models frozen, with
	 * opts->steps optimizer steps of rate opts->lr from the model's
	 * neutral gate; writes θ into gate and what the fit measured into
	 * out (e.g. gate_nll_start, gate_nll_end, lambda). With steps 0, gate
	 * is the neutral gate (λ = 1/2 everywhere). Called from worker
	 * threads, concurrently for different clients. */
	int (*gate_fit)(void *model, void *worker, const float *global, const float *priv,
			uint32_t client, const struct fedrun_gate_opts *opts, float *gate,
			struct fedrun_eval *out);
	/* Evaluates the mixture on `split` of `client` (or
	 * FEDRUN_ALL_CLIENTS): by convention m[0] is "loss" (the mixture's
	 * per-token NLL), with "nll_global" and "nll_private" for the two
	 * models alone. FEDRUN_ENOENT when the client has no such split.
	 * Concurrency as gate_fit. */
	int (*gate_evaluate)(void *model, void *worker, const float *global, const float *priv,
			     const float *gate, enum fedrun_split split, int64_t client,
			     struct fedrun_eval *out);
	/* translate() with the mixture. */
	int (*gate_translate)(void *model, void *worker, const float *global, const float *priv,
			      const float *gate, const struct fedrun_decode_opts *opts,
			      const char *const *src, uint32_t n, char **out);
	/* ---- ABI 1.9: language models (fedrun score, fedrun sample). Both
	 * optional. The host creates the model with data_config NULL and
	 * host->run_dir the run directory it reads (the model writes nothing
	 * there), from which the model takes what reading text needs (its
	 * vocabulary). Called from the main thread. */
	/* Scores n lines of UTF-8 text (no newlines), tokenised as the
	 * model's training text, with `params`; fills out (see struct
	 * fedrun_lm_score). Bad text fails with a message naming the line
	 * (the first line is line 1). */
	int (*score)(void *model, void *worker, const float *params, const char *const *lines,
		     uint32_t n, struct fedrun_lm_score *out);
	/* Draws opts->tokens tokens after the prompt; *out receives them as
	 * malloc'd UTF-8 text (words joined by spaces, each <eos> a newline). */
	int (*sample)(void *model, void *worker, const float *params,
		      const struct fedrun_sample_opts *opts, char **out);
	/* ---- ABI 1.9, optional: what struct fedrun_train_stats.samples
	 * counts, plural ("tokens"), for the run's progress line ("N
	 * tokens/s"); NULL: "samples". */
	const char *samples_unit;
};

/* True when a model ops table has the (ABI 1.6) domain-expert ops, all
 * four (the host checks at load that a table has all or none). */
#define FEDRUN_MODEL_HAS_EXPERT(ops_)                                                    \
	((ops_)->size >= offsetof(struct fedrun_model_ops, gate_translate) + sizeof(void *) && \
	 (ops_)->gate_size != NULL && (ops_)->gate_fit != NULL &&                           \
	 (ops_)->gate_evaluate != NULL && (ops_)->gate_translate != NULL)

/* True when a model ops table declares the (ABI 1.1 or later) member. */
#define FEDRUN_MODEL_HAS(ops_, member_)                                              \
	((ops_)->size >= offsetof(struct fedrun_model_ops, member_) + sizeof(void *) &&   \
	 (ops_)->member_ != NULL)


/* Convenience: a descriptor initialiser with this header's ABI and size.
 *   static const struct fedrun_plugin desc = FEDRUN_PLUGIN_INIT(
 *       FEDRUN_KIND_AGGREGATOR, "mine", "1.0.0", "what it does", &mine_ops); */
#define FEDRUN_PLUGIN_INIT(kind_, name_, version_, summary_, ops_)              \
	{.abi_major = FEDRUN_ABI_MAJOR, .abi_minor = FEDRUN_ABI_MINOR,            \
	 .size = sizeof(struct fedrun_plugin), .kind = (kind_), .name = (name_),   \
	 .version = (version_), .summary = (summary_), .ops = (ops_)}

#ifdef __cplusplus
}
#endif
#endif
