/* SPDX-License-Identifier: Apache-2.0 */
/* The run's API: the state of one run (struct run) and the services the
 * layers above build on. The run layer (core/run/: run.c, checkpoint.c,
 * metrics.c) calls nothing in core/engine/; the engine (rounds, wiring,
 * the phases after the rounds) calls down into it. */
#ifndef FEDRUN_RUN_H
#define FEDRUN_RUN_H

#include <pthread.h>
#include <stdio.h>
#include <jansson.h>
#include "fedrun/fedrun.h"
#include "fedrun/pipeline.h"
#include "pipeline/run_cfg.h"

struct attack;
struct secure;
struct dist;

struct plugin_slot {
	const struct fedrun_plugin *desc;
	const char *file;
	void *state;
};

/* 32 bytes: the strings are interned (metrics.c) and named by their ids
 * (run_str), so a round of 10,000 clients' events stays small beside one
 * model update. */
struct metric_event {
	double value;
	uint32_t client; /* UINT32_MAX: server (client ids are below it) */
	uint32_t seq;	/* order of recording since the last flush */
	uint32_t name;	/* metric name, at most 47 bytes */
	uint32_t tensor; /* 0 ("") or a tensor name */
	uint32_t model; /* 0 ("") or the evaluated model: "server" or a client's name */
	int32_t split;	/* -1: none */
};

/* What the engine keeps of a client between the rounds it takes part in:
 * its optimizer state (clients.optimizer_state "keep") and, when the
 * selector applies to push, its own parameters (tensors not pushed keep
 * the client's values). */
struct client_state {
	uint32_t client;
	float *optim;    /* NULL unless kept (on disk: only while it trains) */
	uint64_t step;
	float *params;   /* NULL unless push selection; NULL until it trained */
	bool stored;     /* on disk: its file in the store holds its state */
};

struct worker {
	void *model_worker;
	float *params, *before;
	uint8_t *mask;
	const float **view;
	float *optim_scratch;
};

struct run {
	json_t *pipeline; /* borrowed, resolved in place */
	const struct fedrun_run_opts *opts;
	struct run_cfg cfg;
	const char *run_dir; /* cfg.dir in fedrun run, else NULL */
	char *run_dir_abs;   /* host->run_dir: its absolute path, once asked for */
	bool run_dir_made;   /* host->run_dir created it (it was not there) */
	struct fedrun_host host;

	struct plugin_slot model, aggregator, selector, privacy;
	void *push_selector; /* the selector instance for push ("both": its own) */
	const struct fedrun_model_ops *model_ops;
	const struct fedrun_aggregator_ops *agg_ops;
	const struct fedrun_selector_ops *sel_ops;
	const struct fedrun_privacy_ops *priv_ops; /* NULL: no privacy */

	const struct fedrun_layout *layout;
	uint32_t num_clients;
	uint32_t *trainable; /* clients with training data (client_size > 0), by id */
	uint32_t ntrainable;
	uint32_t *ft_list;   /* finetune: the chosen clients, sorted by id */
	uint32_t nft;
	uint32_t *ex_list;   /* expert: the chosen clients, sorted by id */
	uint32_t nex;
	const char **ex_private; /* per ex_list entry: its expert.private file, or NULL */
	struct attack *attack; /* the attacking clients (engine/attack.h); owned */
	struct secure *secure; /* secure aggregation (engine/secure.h); owned; NULL: off */
	/* A run over several processes (engine/dist.h); NULL in one process. */
	struct dist *dist;
	/* Set by a distributed run on rank 0 while it writes a checkpoint:
	 * the bytes to write for blob i of the stateful plugin whose entries
	 * start with `prefix` (other ranks changed them), or `data`. */
	const void *(*blob_overlay)(struct run *r, const char *prefix, uint32_t i, const void *data,
				    uint64_t bytes);
	uint64_t optim_floats;
	float *theta;
	float *server_prev, *server_delta; /* for central privacy only */
	float *theta_init, *theta_last;    /* push selection: θ_0 and θ_{t−1} */
	uint32_t round; /* last completed round */
	/* The global step: the sum over completed rounds of the largest
	 * number of updates a client of the round made (with one client, its
	 * own step count). Learning-rate schedules continue from it. */
	uint64_t global_step;
	/* Prefixed to the names of plugins' metrics during a phase after the
	 * rounds ("finetune."), so that they do not pass for the last
	 * round's; set only while no worker runs. */
	const char *metric_prefix;
	uint32_t first_round; /* the first round this process runs */

	struct worker *workers;
	uint32_t nworkers;
	struct run_pool *pool; /* run_parallel_for's threads, started on first use */

	struct client_state *cstates; /* sorted by client; only clients that trained */
	uint32_t ncstates;
	bool cstore_disk; /* their optim and params live in run_dir/clients (cstore.c) */

	pthread_mutex_t lock;
	struct metric_event *events;
	uint32_t nevents, capevents;
	/* Interned event strings: strtab[id] for id < nstrings (strtab[0] is
	 * ""), and a hash set of ids (open addressing, capslots a power of 2,
	 * UINT32_MAX for free). */
	char **strtab;
	uint32_t nstrings, capstrings;
	uint32_t *slots;
	uint32_t capslots;
	uint64_t seq;

	FILE *metrics, *csv, *log;
	char *pending_log;   /* lines logged before log.txt is open (plugin create) */
	size_t pending_len;
	double t0;
	double wall_base; /* a resumed run's wall time before this process (metrics) */
	uint64_t bytes_push, bytes_pull; /* of the current round */
	double first_loss, last_loss, test_loss; /* server evaluations, for the summary */
	/* The round of first_loss: 0 (before round 1), or on a resumed run
	 * whose metrics lack round 0's loss the first it evaluated. */
	uint32_t first_loss_round;

	/* What the run says while it runs (engine/progress.c). */
	struct {
		bool on;	   /* a real run: status and round lines */
		bool open;	   /* a \r line on the terminal awaits its newline */
		double work;	   /* the time of the rounds this process ran, their
				      evaluations left out (checkpoints in) */
		uint32_t rounds;   /* how many */
		double eval;	   /* the last evaluation's time; -1: none yet */
		double round_eval; /* the current round's evaluation time */
		double train;	   /* the current round's training, in seconds */
		uint64_t samples;  /* the samples its clients report (train stats) */
		double train_loss; /* its clients' mean training loss */
		double eval_loss;  /* its evaluation's loss; NAN: none */
	} prog;
};

static inline bool run_push(const struct run *r)
{
	return r->cfg.direction != DIR_PULL;
}

static inline bool run_keeps_clients(const struct run *r)
{
	return r->cfg.optim_state == OPTIM_STATE_KEEP || run_push(r);
}

/* ---- run.c: clock, workers, client state ---- */

double run_now(void);
/* The clients sampled each round (0 before the model is created). */
uint32_t run_clients_per_round(const struct run *r);
/* The workers (r->opts->threads of them, each with its buffers and the
 * model's scratch) and their teardown. */
int run_workers_create(struct run *r);
void run_workers_destroy(struct run *r);
/* Runs fn(i) for i in [0, n) on the workers. On failure returns the error
 * of the lowest failed index, so the message does not depend on timing.
 * Not from inside fn: worker k > 0 is one thread kept for the whole run
 * (joined by run_workers_destroy), which waits between calls. */
int run_parallel_for(struct run *r, uint32_t n,
		     int (*fn)(struct run *, struct worker *, uint32_t, void *), void *ctx);
/* The state the run keeps of `client` across rounds, created on first use. */
struct client_state *run_client_state(struct run *r, uint32_t client, int *rc);

/* ---- cstore.c: the clients' kept state, in memory or on disk ---- */

/* Decides where the state lives (clients.state_store) and makes the
 * store's directory. After the model and the run directory. */
int cstore_init(struct run *r);
/* Before client cs trains: its optim (and params) in memory, read from
 * its file on disk, zeroed for a client that has not trained. */
int cstore_checkout(struct run *r, struct client_state *cs);
/* After it trained: on disk, its state is written to its file and its
 * buffers freed; in memory, nothing. Thread-safe for distinct clients. */
int cstore_checkin(struct run *r, struct client_state *cs);
/* On disk: frees the buffers without writing (a failed round). */
void cstore_drop(struct run *r, struct client_state *cs);
/* Frees the state and removes its file (a client another rank owns). */
void cstore_forget(struct run *r, struct client_state *cs);
/* The store's file of `client`. */
void cstore_path(const struct run *r, uint32_t client, char *buf, size_t n);
/* Reads / writes a store file (checkpoint.c's links point at such files). */
int cstore_read(struct run *r, struct client_state *cs, const char *path);
int cstore_write(const struct run *r, const struct client_state *cs, const char *path);
/* Makes the store's files durable (one syncfs) before a checkpoint. */
int cstore_sync(const struct run *r);
/* Removes the store files (and their temporaries) of directory dir, then
 * dir when that leaves it empty; other files stay. */
int cstore_remove_dir(const char *dir);
/* cstore_remove_dir of run_dir/clients. */
int cstore_clear(const char *run_dir);

/* ---- checkpoint.c ---- */

/* The plugins whose state checkpoints hold (state op), with the prefix of
 * their entries: the aggregator, the selector (and the push selector when
 * it is an instance of its own), the privacy plugin. */
struct stateful {
	const char *prefix;
	int (*state)(void *, const struct fedrun_state_blob **, uint32_t *);
	void *st;
};
#define RUN_STATEFULS_MAX 4
uint32_t run_statefuls(const struct run *r, struct stateful out[RUN_STATEFULS_MAX]);

int checkpoint_write(struct run *r);
/* Removes the temporary files that killed atomic writes of fedrun's files
 * left in the run directory and its checkpoints/, finetuned/ and experts/
 * ("NAME.tmp.PID", PID no longer a process), with one line of log. */
void run_remove_stale_tmp(struct run *r);
int checkpoint_latest(const char *dir, uint32_t *round, char **path);
int checkpoint_load(struct run *r, const char *path);
/* A checkpoint's (or final model's) fedrun.round, validated: digits, in
 * range, and the round its name gives (round-NNNNNN.safetensors). */
int checkpoint_round(const struct fedrun_st_file *f, const char *path, uint32_t *round);
int final_write(struct run *r);
/* The model parameters of the safetensors file `path` into dst (the run's
 * layout; tensors whose names start with "__" are not parameters); errors
 * begin with `what` (a pipeline key: "init", "expert.private.NAME"). */
int params_load(struct run *r, const char *path, float *dst, const char *what);
/* params_load into r->theta, as "init". */
int init_load(struct run *r, const char *path);

/* ---- metrics.c ---- */

int metrics_open(struct run *r);
void metrics_close(struct run *r);
int metrics_flush_round(struct run *r, uint32_t round);
/* Drops the metrics of rounds after `round` and stores in *wall the wall
 * time recorded last, so that a resumed run's "wall" goes on from it. Time
 * linear in the files' size; when *stop is set (a signal) before both are
 * read, returns FEDRUN_EINTERRUPTED with both files as they were. */
int metrics_truncate(const char *dir, uint32_t round, double *wall, volatile int *stop);
/* The server's loss on `split` (FEDRUN_SPLIT_*) before round 1 in
 * dir/metrics.jsonl, NAN when the file has none (a resumed run's summary
 * starts from it). */
double metrics_round0_loss(const char *dir, int split);
/* "train", "valid", "test" for FEDRUN_SPLIT_*; "" for any other. */
const char *run_split_name(int split);
/* Frees the interned event strings (at the run's end). */
void run_strings_free(struct run *r);
/* The interned string `id` of an event. */
const char *run_str(const struct run *r, uint32_t id);
int run_event(struct run *r, int64_t client, int split, const char *name, const char *tensor,
	      double value);
/* An event about one model of several (eval.matrix, finetune): `model` is
 * "server" or a client's name, written as the record's "model" field. */
int run_event_model(struct run *r, int64_t client, int split, const char *name,
		    const char *model, double value);
/* Any event: tensor and model may be NULL or "". */
int run_event_full(struct run *r, int64_t client, int split, const char *name, const char *tensor,
		   const char *model, double value);

#endif
