/* SPDX-License-Identifier: Apache-2.0 */
/* encoder: a BERT / DistilBERT encoder fine-tuned (or pretrained by MLM)
 * federatedly, the FedNLP setting (Lin et al. 2022). Internal to the
 * plugin: the model, its data, its per-thread scratch, and what model.c,
 * data.c and train.c share. The network is net.[ch], Hugging Face model
 * directories hf.[ch], the tokenizer wordpiece.[ch]; fedrun-models(7)
 * documents every option.
 *
 * Two layouts. The network's (`full`, enc_layout) holds every tensor; the
 * engine's (`layout`) only the trainable ones, in the same order: frozen
 * tensors (model.freeze, or everything but the adapters and the head with
 * model.lora) neither train nor travel, and their values stay those of the
 * pretrained model (or of the initialisation with the run's seed). When
 * nothing is frozen the two are the same. */
#ifndef FEDRUN_ENCODER_H
#define FEDRUN_ENCODER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <fedrun/fedrun.h>
#include "../device.h"
#include "net.h"
#include "hf.h"
#include "wordpiece.h"

/* One example: wordpiece ids with [CLS] ... [SEP] (truncated to max_len),
 * and its labels: classify one (label), tag one per wordpiece (the first
 * wordpiece of each word gets the word's tag, the others and the special
 * tokens -1), mlm none (masks are drawn per batch). */
struct enc_example {
	uint32_t len;
	int32_t *ids;
	int32_t label;	 /* classify; else -1 */
	int32_t *tags;	 /* tag: len entries; else NULL */
};

struct enc_split {
	bool present;
	uint64_t n;
	struct enc_example *ex;
	/* Per client (clients entries + 1: [k] .. [k+1] index `order`), or
	 * NULL when the split is the server's (pooled). */
	uint64_t *client_start;
	uint64_t *order; /* example indices grouped by client */
	uint64_t *pooled; /* every example, in the order evaluation takes them */
	uint64_t words_cut; /* tag: words lost to truncation */
};

struct enc_model {
	const struct fedrun_host *host;
	const struct fedrun_backend_ops *be;
	char *backend;
	int32_t device;
	bool deterministic;
	uint32_t precision;
	bool report_xfer;
	struct enc_cfg cfg;
	struct fedrun_layout *full; /* the network's layout */
	struct fedrun_layout layout; /* the engine's: trainable tensors */
	uint8_t *trainable;	     /* full->n flags */
	uint32_t *full_of;	     /* layout.n: index in full of engine tensor i */
	bool all_trainable;
	float *frozen; /* full->total floats of the frozen tensors' values
			  (host; NULL when all_trainable) */
	float *pretrained; /* full->total floats from model.pretrained, or NULL */
	uint8_t *loaded;   /* full->n: tensor i came from the checkpoint */
	char *pretrained_dir;
	int freeze;	/* -1 none, 0 embeddings, k: embeddings + layers 0..k-1 */
	uint32_t max_len, eval_batch;
	int batching; /* ENC_BATCH_*: model.batching */
	double mask_prob; /* mlm: the fraction of wordpieces predicted */
	struct wp_tokenizer *tok;
	struct hf_tok_opts tok_opts; /* as tokenizer_config.json has them */
	char *vocab_path;    /* the vocabulary file (NULL: learned, not yet written) */
	uint32_t vocab_size; /* model.vocab_size: learn this many entries */
	char *vocab_text;    /* a learned vocabulary, one token a line */
	size_t vocab_bytes;
	int32_t cls_id, sep_id, mask_id, pad_id, unk_id;
	struct fedrun_labels *labels; /* classify and tag: label names */
	uint32_t nclients;
	char **client_names; /* scheme "files": the file names; else NULL */
	struct enc_split split[3];
	uint64_t *client_n;   /* training examples of each client */
	uint64_t mlm_seed;    /* the run's seed: held-out masks */
};

struct enc_worker {
	struct enc_work *w;
	void *ctx;
	struct mdev_xfer xfer;
	float *params; /* device: full->total (the network's arena) */
	float *grad;   /* device: full->total */
	float *tparams, *tgrad; /* device: layout.total (NULL: all trainable) */
	float *state;  /* device optimizer state */
	uint64_t state_cap;
	float *anchor; /* FedProx's w_t (layout.total), on first use */
	bool frozen_sent; /* the frozen tensors are in params */
	/* host batch buffers */
	uint32_t cap_bt, cap_b;
	int32_t *ids, *len, *labels;
	int32_t *pred;
};

enum { ENC_BATCH_LENGTH = 0, ENC_BATCH_RANDOM = 1 };

/* The MLM masks' streams: training (seed, round, client), held-out
 * (run seed, split, example). */
#define ENC_RNG_TRAIN_MASK (FEDRUN_RNG_PLUGIN + 1)
#define ENC_RNG_EVAL_MASK (FEDRUN_RNG_PLUGIN + 2)

/* data.c */
int enc_data_load(struct enc_model *m, json_t *data, const char *path);
/* model.vocab_size: m->tok (and m->vocab_text) learned from data.train. */
int enc_data_learn_vocab(struct enc_model *m, json_t *data, const char *path);
void enc_data_free(struct enc_model *m);
int enc_data_partition_write(const struct enc_model *m);
/* Builds batch rows [i0, i1) of `idx` (example indices of split s) into
 * w's host buffers and b; mlm draws its masks from rng (the 80/10/10 rule
 * of Devlin et al. 2019, sec. 3.1); rng NULL: each example's held-out
 * stream. */
int enc_batch_fill(const struct enc_model *m, struct enc_worker *w, const struct enc_split *s,
		   const uint64_t *idx, uint32_t n, struct fedrun_rng *rng, struct enc_batch *b);

/* train.c */
int enc_worker_create(void *model, void **worker);
void enc_worker_destroy(void *model, void *worker);
int enc_train(void *model, void *worker, const struct fedrun_train_args *args, float *params,
	      struct fedrun_train_stats *stats);
int enc_evaluate(void *model, void *worker, const float *params, enum fedrun_split split,
		 int64_t client, struct fedrun_eval *out);

#endif
