/* SPDX-License-Identifier: Apache-2.0 */
/* gru-lm: a word-level GRU language model (the client model of the FedAtt
 * paper, sec. III-C and IV-B) written against the backend vtable, on the
 * backend its "backend" option names. Internal to the plugin: the model,
 * its per-thread scratch, and the functions that model.c, net.c and
 * train.c share.
 *
 * Device memory: each worker holds its own device copy of the parameters,
 * the gradient, the optimizer state and FedProx's anchor; train() sends the
 * engine's (host) parameters and optimizer state at its start, runs every
 * local step on the device (the backend's optim_step and prox_grad) and
 * brings them back at its end. Per window only the token ids and targets
 * cross (one to_device); the loss comes back through the ops' host
 * scalars. */
#ifndef GRU_LM_H
#define GRU_LM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <fedrun/fedrun.h>
#include "../device.h"

#define GRU_LM_MAX_LAYERS 8
#define GRU_LM_MAX_GROUPS 64 /* of evaluation rows */

/* The model: sizes, data and where each tensor lives in the arena. */
struct gru_lm {
	const struct fedrun_host *host;
	const struct fedrun_backend_ops *be;
	char *backend;	  /* the "backend" option */
	int32_t device;	  /* the "device" option */
	bool deterministic; /* the "deterministic" option */
	uint32_t precision; /* the "precision" option (enum fedrun_precision) */
	bool report_xfer; /* not "cpu": host<->device bytes become metrics */
	struct fedrun_textdata *td;	     /* NULL when created to read text only */
	const struct fedrun_vocab *vocab;    /* td's, or own_vocab */
	struct fedrun_vocab *own_vocab;	     /* RUN/vocab.txt (fedrun score, sample) */
	struct fedrun_text_opts text;	     /* how text is read (data.tokenizer, ...) */
	char *vocab_path;		     /* RUN/vocab.txt while still to be written */
	pthread_mutex_t vocab_lock;	     /* over vocab_path */
	uint32_t V, D, H, L; /* vocabulary, embedding, hidden units, layers */
	uint32_t bptt, eval_batch, eval_groups;
	float dropout;
	bool tied;
	bool speed_metric;
	double init_range;
	struct fedrun_layout layout;
	/* Offsets (floats) of the tensors; dec_w == emb when tied. */
	uint64_t off_emb, off_dec_w, off_dec_b;
	uint64_t off_gru[GRU_LM_MAX_LAYERS][4]; /* w_ih, w_hh, b_ih, b_hh */
	uint64_t *train_tokens;			/* n_k of each client */
};

/* Per-thread scratch: a backend context, the device copies of the model's
 * arrays and the activations of one BPTT window (device memory unless
 * marked host), grown on demand to the largest window seen. */
struct gru_lm_worker {
	void *ctx;
	struct mdev_xfer xfer;		  /* bytes this worker has copied */
	uint64_t cap_tb;		  /* T * B the buffers hold */
	uint32_t cap_b;			  /* B the state buffers hold */
	uint32_t *in_u, *tgt_u;		  /* host (T,B): ids from fedrun_bptt_window */
	int32_t *hids;			  /* host (2 T B): in then tgt as int32 */
	int32_t *ids;			  /* (2 T B): hids on the device */
	float *emb;			  /* (T,B,D) embedded (and dropped) input */
	uint8_t *mask_emb;		  /* (T,B,D) */
	float *y[GRU_LM_MAX_LAYERS];	  /* (T,B,H) each layer's output */
	float *yd[GRU_LM_MAX_LAYERS];	  /* (T,B,H) after dropout */
	uint8_t *mask[GRU_LM_MAX_LAYERS]; /* (T,B,H) */
	float *cache[GRU_LM_MAX_LAYERS];  /* the backend's GRU cache */
	uint64_t cache_floats;		  /* per layer */
	float *h0[GRU_LM_MAX_LAYERS];	  /* (B,H) state entering the window */
	float *logits;			  /* (T*B,V), then its gradient */
	float *da, *db;			  /* (T,B,max(D,H)) gradient ping-pong */
	float *params;			  /* the parameters the ops read (layout.total) */
	float *grad;			  /* the gradient arena (layout.total) */
	bool grad_zero;			  /* grad is known to be all zeros */
	float *state;			  /* optimizer state (state_cap floats) */
	uint64_t state_cap;
	float *anchor; /* FedProx's w_t (layout.total), on first use */
};

/* What a pass over one window does. */
struct gru_lm_pass {
	uint32_t T, B;
	bool fresh;		/* the state starts at zero */
	bool train;		/* backward too (into w->grad, accumulated) */
	float dropout;		/* 0: none */
	struct fedrun_rng *rng; /* dropout stream (when dropout > 0) */
	float grad_scale;	/* multiplies this window's mean-loss gradient */
};

int gru_lm_worker_create(void *model, void **worker);
void gru_lm_worker_destroy(void *model, void *worker);
/* Makes room for windows of T*B = tb tokens and batch b. */
int gru_lm_worker_reserve(const struct gru_lm *m, struct gru_lm_worker *w, uint64_t tb, uint32_t b);

/* One window: sends the ids of w->in_u and targets of w->tgt_u (T,B) to
 * the device, runs forward from the state in w->h0 (or zeros), puts the
 * mean loss into *loss and the number of targets into *count; with
 * p->train, backward into w->grad (accumulated, scaled by p->grad_scale).
 * Leaves the final state in w->h0 for the next window. params: device
 * memory (w->params). */
int gru_lm_window(const struct gru_lm *m, struct gru_lm_worker *w, const float *params,
		  const struct gru_lm_pass *p, double *loss, uint64_t *count);
/* Forward over the window of w->in_u (T,B) as gru_lm_window does, without
 * a loss: the logits of its last input (V floats) into host memory
 * `logits`, the state left in w->h0. */
int gru_lm_next_logits(const struct gru_lm *m, struct gru_lm_worker *w, const float *params,
		       const struct gru_lm_pass *p, float *logits);
/* Sends n floats of host memory to the worker's device array dst. */
int gru_lm_send(const struct gru_lm *m, struct gru_lm_worker *w, float *dst, const float *src,
		uint64_t n);

/* Mean loss per predicted token of stream s in `batch` rows, as a split is
 * evaluated (eval_groups groups; with `parallel` on the host's threads, the
 * same bits); FEDRUN_ENOENT "N tokens, too few to predict one" when it is
 * too short. With with_grad its gradient into w->grad. */
int gru_lm_stream_loss(struct gru_lm *m, struct gru_lm_worker *w, const float *params,
		       const struct fedrun_stream *s, uint32_t batch, bool with_grad, bool parallel,
		       double *loss, uint64_t *tokens);

int gru_lm_score(void *model, void *worker, const float *params, const char *const *lines,
		 uint32_t n, struct fedrun_lm_score *out);
int gru_lm_sample(void *model, void *worker, const float *params,
		  const struct fedrun_sample_opts *opts, char **out);
/* host->run_dir(), or NULL where there is none (or no such op). */
const char *gru_lm_run_dir(const struct fedrun_host *host);
/* In a run (host->run_dir), at create: whether RUN/vocab.txt, which fedrun
 * score and sample read (gru_lm_read_run), may become the run's
 * vocabulary; if it is to be written, vocab_path says where. */
int gru_lm_check_vocab(struct gru_lm *m);
/* Writes it there, once, at the run's first train or evaluate: a run that
 * fails before it started leaves the run directory as it found it. */
int gru_lm_keep_vocab(struct gru_lm *m);
/* Created with no data section (fedrun score, sample): the vocabulary and
 * text options of the run directory host->run_dir names. */
int gru_lm_read_run(struct gru_lm *m);

int gru_lm_train(void *model, void *worker, const struct fedrun_train_args *args, float *params,
		 struct fedrun_train_stats *stats);
int gru_lm_evaluate(void *model, void *worker, const float *params, enum fedrun_split split,
		    int64_t client, struct fedrun_eval *out);
int gru_lm_loss_grad(void *model, void *worker, const float *params, enum fedrun_split split,
		     int64_t client, float *grad, double *loss);

#endif
