/* SPDX-License-Identifier: Apache-2.0 */
/* What the engine's files (core/engine/) give each other: wiring the
 * plugins of a pipeline into a run, the phases after the last round, and
 * client names. Built on the run's API (run/run.h); nothing below the
 * engine includes this header. */
#ifndef FEDRUN_ENGINE_H
#define FEDRUN_ENGINE_H

#include "run/run.h"

/* ---- client.c: one client's turn in a round ---- */

/* What the clients of a round (or of a chunk of it) train with, and what
 * they give back, by position i in `clients`. */
struct round_ctx {
	struct fedrun_round_info info;
	const uint32_t *clients;
	const void *push;
	size_t push_len;
	void **push_own; /* push selection: one message per client */
	size_t *push_own_len;
	void **pull;
	size_t *pull_len;
	uint64_t *updates; /* optimizer updates each client made */
	uint64_t *samples; /* samples (or tokens) its training reported */
	/* Secure aggregation (secure.h): the position of clients[0] in the
	 * round, and each client's masked update (its pull message then
	 * carries no tensor). */
	uint32_t base;
	void **masked;
	size_t *masked_len;
};

/* The round's description the plugins get (info.direction: pull). */
void engine_round_info(const struct run *r, uint32_t round, uint32_t sampled,
		       struct fedrun_round_info *info);
/* Trains client ctx->clients[i] from the push message and leaves its pull
 * message in ctx->pull[i] (a run_parallel_for function; ctx: round_ctx). */
int engine_train_client(struct run *r, struct worker *w, uint32_t i, void *ctx);
/* 1 and *name set when a tensor of `arena` holds a NaN or an infinity. */
int engine_first_bad_tensor(const struct fedrun_layout *l, const float *arena, const char **name);

/* ---- wiring.c: the host table and the plugins of a run ---- */

void run_host_init(struct run *r);
int run_plugins_create(struct run *r, struct fedrun_registry *reg);
void run_plugins_destroy(struct run *r);

/* ---- progress.c: what a run says while it runs (fedrun(1), PROGRESS) ---- */

/* Appends "[seconds] LVL: line" to RUN/log.txt, or keeps it for the file
 * until it is open (host->log, run_status); the caller holds r->lock. */
void run_log_line(struct run *r, const char *lvl, const char *line);

/* A phase starts: "LINE ..." in log.txt and, unless --quiet, on stderr
 * (rank 0 of a real run only). */
void run_status(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Round r->round is done, `secs` after it began (its checkpoint in): its
 * line, in log.txt and unless --quiet on stderr (rewritten in place on a
 * terminal). */
void run_progress(struct run *r, double secs);
/* Ends a rewritten line on the terminal before anything else is written
 * to stderr; the caller holds r->lock or runs alone. */
void run_progress_break(struct run *r);

/* ---- after.c: fine-tuning and the model-by-domain table ---- */

/* The name of client k: the model's client_name op, else "client<k>". */
const char *run_client_name(struct run *r, uint32_t k, char *buf, size_t len);
/* The client called `want` (its data.clients name, or "clientN"), or -1. */
int64_t run_client_by_name(struct run *r, const char *want);
/* Resolves a phase's "clients" choice sel ("all": every client with
 * training data; or a list of names, "client<k>" or indices, each with
 * training data) into *list (malloc'd, sorted by id, no duplicates) and
 * *count; what names the section in errors ("finetune"). */
int run_clients_resolve(struct run *r, json_t *sel, const char *what, uint32_t **list,
			uint32_t *count);
/* Resolves finetune.clients against the model's clients (r->ft_list). */
int run_finetune_clients(struct run *r);
/* Writes RUN/sub/client-K.safetensors: the layout's tensors of params,
 * metadata fedrun.<phase>.client and .name, and when extra_name is not NULL
 * one more F32 tensor of extra_n floats. */
int run_client_model_write(struct run *r, const char *sub, const char *phase, uint32_t c,
			   const float *params, const char *extra_name, const float *extra,
			   uint64_t extra_n);

/* ---- expert.c: domain experts (FedNMT sec. 2.5), after fine-tuning ---- */

/* Resolves expert.clients (r->ex_list) and checks that the model has the
 * gate ops. */
int run_expert_clients(struct run *r);
/* Per chosen client: the private model, the gate, the mixture's metrics
 * and RUN/experts/client-K.safetensors. */
int run_experts(struct run *r);
/* Fine-tuning and the model-by-domain table, after the last round. */
int run_after(struct run *r);
/* Whether the outputs of run_after (fine-tuned models, the table) exist. */
bool run_after_done(const struct run *r);

#endif
