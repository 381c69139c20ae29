/* SPDX-License-Identifier: Apache-2.0 */
/* The transformer model plugin's private header: the model (options, data,
 * tokenizer, network configuration), its parallel data (data.c), the
 * token-count batching (batch.c) and the loops (train.c). fedrun-models(7)
 * documents every option. */
#ifndef TFM_PLUGIN_H
#define TFM_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>
#include <fedrun/fedrun.h>
#include "net.h"
#include "tok.h"
#include "../device.h"

/* One split of one client: n sentence pairs, as token ids (no bos/eos),
 * and the raw target lines (the references BLEU scores against). */
struct tfm_split {
	uint32_t n;
	int32_t **src, **tgt;
	uint32_t *slen, *tlen;
	char **ref;  /* raw target lines, n */
	bool absent; /* the client has no such split */
	/* Pair order sorted by length (batch.c), computed at load. */
	uint32_t *order;
};

struct tfm_client {
	char name[64];
	struct tfm_split split[3]; /* enum fedrun_split */
};

/* Decoding settings (the "decode" object). */
struct tfm_decode {
	uint32_t beam, batch;
	double len_penalty, max_len_a, max_len_b;
};

enum { TFM_LR_CONSTANT = 0, TFM_LR_INVERSE_SQRT = 1, TFM_LR_NOAM = 2 };
enum { TFM_EVAL_BLEU_TEST = 0, TFM_EVAL_BLEU_ALL = 1, TFM_EVAL_BLEU_NONE = 2 };

struct tfm_model {
	const struct fedrun_host *host;
	const struct fedrun_backend_ops *be;
	char *backend;	  /* the "backend" option */
	bool report_xfer; /* not "cpu": host<->device bytes become metrics */
	struct tfm_cfg cfg;
	struct fedrun_layout *layout;
	struct tfm_tok *tok;
	uint32_t nclients;
	struct tfm_client *clients;
	struct tfm_split all[3]; /* views over the union (pointers borrowed) */
	uint32_t max_len;	 /* training pairs with a longer side dropped */
	uint32_t eval_batch;	 /* tokens per evaluation batch */
	struct tfm_decode decode;
	int bleu_tok; /* enum fedrun_bleu_tokenizer */
	int eval_bleu;
	int lr_schedule;
	uint64_t warmup;
	double warmup_init_lr;
};

/* ---- data.c ---- */
/* Reads (or generates) the clients' pairs from the "data" section; the
 * tokenizer is built there too (it is trained on the training data). */
int tfm_data_load(struct tfm_model *m, json_t *model_config, json_t *tok_config,
		  json_t *data_config);
void tfm_data_free(struct tfm_model *m);
/* The split of client (or FEDRUN_ALL_CLIENTS); NULL with FEDRUN_ENOENT set
 * when absent. */
const struct tfm_split *tfm_split_get(const struct tfm_model *m, enum fedrun_split split,
				      int64_t client, int *rc);

/* ---- batch.c ---- */
/* Sorts the pairs of s by (max side, source length, index) into s->order:
 * consecutive pairs are then of similar length (the length buckets). */
int tfm_batch_sort(struct tfm_split *s);
/* Cuts the sorted order into batches of at most `tokens` rows x longest
 * side (a longer pair alone is a batch of its own): *nb batches, batch i
 * holding order[start[i] .. start[i + 1]). start is malloc'd (nb + 1). */
int tfm_batch_plan(const struct tfm_split *s, uint32_t tokens, uint32_t **start, uint32_t *nb);
/* Lengths with the eos/bos the network sees: source m + 1, target n + 1. */
static inline uint32_t tfm_pair_len(const struct tfm_split *s, uint32_t i)
{
	uint32_t a = s->slen[i] + 1, b = s->tlen[i] + 1;
	return a > b ? a : b;
}

/* Padded arrays of one batch (grown on demand). */
struct tfm_batchbuf {
	uint64_t cap_src, cap_tgt;
	uint32_t cap_b;
	int32_t *src, *tgt_in, *tgt_out, *src_len, *tgt_len;
};
void tfm_batchbuf_free(struct tfm_batchbuf *bb);
/* Fills bb and b with pairs idx[0 .. k) of s. */
int tfm_batch_fill(const struct tfm_model *m, const struct tfm_split *s, const uint32_t *idx,
		   uint32_t k, struct tfm_batchbuf *bb, struct tfm_batch *b);

/* ---- train.c ---- */
/* Per-thread scratch: the network's work object (and its backend
 * context), device copies of the parameters, the gradient, the optimizer
 * state and FedProx's anchor (each call sends the engine's host arrays at
 * its start and brings back what it changed at its end), and the host
 * batch buffers. */
struct tfm_worker {
	struct tfm_work *w;
	float *params; /* device (layout total) */
	float *grad;   /* device (layout total) */
	float *state;  /* device optimizer state, state_cap floats */
	uint64_t state_cap;
	float *anchor; /* device (layout total), on first use */
	struct tfm_batchbuf bb;
};
int tfm_worker_create(void *model, void **worker);
void tfm_worker_destroy(void *model, void *worker);
int tfm_train(void *model, void *worker, const struct fedrun_train_args *args, float *params,
	      struct fedrun_train_stats *stats);
int tfm_evaluate(void *model, void *worker, const float *params, enum fedrun_split split,
		 int64_t client, struct fedrun_eval *out);
int tfm_loss_grad(void *model, void *worker, const float *params, enum fedrun_split split,
		  int64_t client, float *grad, double *loss);
/* The domain expert's mixture for decoding (expert.h): a second model,
 * the client's private one, at params (host), whose worker w for the
 * calling thread holds them in w->params already, and the gate's
 * z = θ·x of each source sentence (n). Borrowed. */
struct tfm_mix {
	const float *params;
	struct tfm_worker *w;
	const double *z;
};
/* Decodes n tokenized sources with the given settings, in batches of
 * d->batch sentences of similar length spread over `threads` threads (w
 * serves the first, and must hold the parameters in w->params already;
 * the workers of the other threads are sent `params`, host memory):
 * out[i] malloc'd detokenized text. With mix (NULL: one model), every
 * step's log-probabilities are the mixture's, log(λ p + (1 − λ) p2). */
int tfm_decode_ids(struct tfm_model *m, struct tfm_worker *w, const float *params,
		   const struct tfm_decode *d, int32_t *const *src, const uint32_t *slen,
		   uint32_t n, uint32_t threads, const struct tfm_mix *mix, char **out);
/* The split an evaluation reads: NULL with *rc set (FEDRUN_ENOENT with a
 * message) when the client has no such split or it has no pairs. */
const struct tfm_split *tfm_eval_split(struct tfm_model *m, enum fedrun_split split,
				       int64_t client, int *rc);
/* Whether evaluations of split decode for BLEU (model.eval_bleu). */
bool tfm_eval_bleu(const struct tfm_model *m, enum fedrun_split split);
/* Appends a metric to out (dropped past FEDRUN_METRICS_MAX). */
void tfm_eval_put(struct fedrun_eval *out, const char *name, double v);
/* Corpus BLEU and chrF of the split's decoded sources (by the model's
 * decode settings; with mix, the expert's mixture) against its raw
 * reference lines (params: host, already in w->params). */
int tfm_split_bleu(struct tfm_model *m, struct tfm_worker *w, const float *params,
		   const struct tfm_split *s, uint32_t threads, const struct tfm_mix *mix,
		   double *bleu, double *chrf);
/* Sends n floats of host params into w->params. */
int tfm_send_params(struct tfm_model *m, struct tfm_worker *w, const float *params);
/* Reports the bytes w copied since `before` (tfm_work_xfer's), when the
 * model's backend is not "cpu". */
void tfm_report_xfer(struct tfm_model *m, struct tfm_worker *w, int64_t client,
		     const struct mdev_xfer *before);
struct mdev_xfer tfm_xfer(const struct tfm_worker *w);

/* ---- expert_model.c: the domain expert (FedNMT sec. 2.5, expert.h) ----
 * The model ops of the same names (fedrun-plugin(7)); global, priv and
 * gate are host arrays: the two models' parameters and θ (gate size
 * floats). */
uint32_t tfm_expert_gate_size(void *model);
/* Fits θ from 0 with `steps` Adam steps of rate lr on the client's
 * training split: out gets gate_nll_start, gate_nll_end, lambda. */
int tfm_expert_fit(void *model, void *worker, const float *global, const float *priv,
		   uint32_t client, uint32_t steps, double lr, float *gate, struct fedrun_eval *out);
/* The mixture on a split: loss = nll, ppl, lambda (mean over tokens),
 * nll_global, nll_private, tokens, and bleu, chrf where the model's
 * evaluation computes them. */
int tfm_expert_evaluate(void *model, void *worker, const float *global, const float *priv,
			const float *gate, enum fedrun_split split, int64_t client,
			struct fedrun_eval *out);
/* z[i] = θ·x of source sentence i (its ids, len[i] tokens). */
int tfm_expert_z(const struct tfm_model *m, const float *global, const float *gate,
		 int32_t *const *ids, const uint32_t *len, uint32_t n, double *z);
/* tfm_decode_ids with the mixture: w holds global in w->params already. */
int tfm_expert_translate_ids(struct tfm_model *m, struct tfm_worker *w, const float *global,
			     const float *priv, const float *gate, const struct tfm_decode *d,
			     int32_t *const *ids, const uint32_t *len, uint32_t n, uint32_t threads,
			     char **out);

#endif
