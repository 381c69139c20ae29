/* SPDX-License-Identifier: Apache-2.0 */
/* The core's own pipeline keys (man 5 fedrun-pipeline), parsed from the
 * pipeline into struct run_cfg (config.c). */
#ifndef FEDRUN_PIPELINE_RUN_CFG_H
#define FEDRUN_PIPELINE_RUN_CFG_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "fedrun/fedrun.h"

/* The core's own pipeline keys (see man 5 fedrun-pipeline). */
struct run_cfg {
	const char *name;
	int64_t seed;
	int64_t rounds;
	const char *init;
	/* clients */
	double fraction;
	int64_t epochs, steps, batch;
	int optim_state;      /* OPTIM_STATE_*: clients.optimizer_state */
	int lr_clock;         /* LR_CLOCK_*: clients.lr_clock */
	int state_store;      /* STATE_STORE_*: clients.state_store */
	json_t *optim_section; /* clients.optimizer: unused (parsed apart), borrowed */
	int direction;        /* selector: DIR_PULL, DIR_PUSH or DIR_BOTH */
	struct fedrun_client_hints hints; /* from the aggregator */
	struct fedrun_optim_cfg optim;
	/* eval */
	int64_t eval_every;
	bool eval_clients;
	int eval_split;       /* FEDRUN_SPLIT_* evaluated every eval_every rounds */
	bool final_test;
	bool eval_matrix;     /* the model-by-domain table at the end */
	int matrix_split;     /* FEDRUN_SPLIT_* of the table */
	/* finetune (Passban et al. 2022, sec. 5, Table 4 rows c) */
	bool finetune;
	int64_t ft_epochs, ft_steps, ft_batch;
	struct fedrun_optim_cfg ft_optim;
	json_t *ft_clients;   /* "all" or an array of names/indices; borrowed */
	/* expert (FedNMT sec. 2.5: a private model and a gate per client) */
	bool expert;
	int64_t ex_steps, ex_epochs; /* the private model's training, one of them 0 */
	int64_t ex_gate_steps;
	double ex_gate_lr;
	json_t *ex_clients;   /* as ft_clients */
	json_t *ex_private;   /* {client name: file of its private model}, or NULL */
	/* output */
	const char *dir;
	int64_t ckpt_every, ckpt_keep;
	bool overwrite;
};

enum { DIR_PULL = 0, DIR_PUSH = 1, DIR_BOTH = 2 };

/* clients.optimizer_state, in the order of its choices: the moments are
 * zeroed each round and the bias correction restarts (reset); each client
 * keeps its moments and its step count from its previous round (keep); the
 * moments are zeroed but the bias correction continues from the server's
 * global step (continue). */
enum { OPTIM_STATE_RESET = 0, OPTIM_STATE_KEEP = 1, OPTIM_STATE_CONTINUE = 2 };

/* clients.state_store, in the order of its choices: where the kept state
 * of clients that are not training lives (core/run/cstore.c). */
enum { STATE_STORE_AUTO = 0, STATE_STORE_MEMORY = 1, STATE_STORE_DISK = 2 };

/* clients.lr_clock: the step a learning-rate schedule reads is the server's
 * global step plus the client's updates this round (global), or the
 * client's own optimizer step count (client: each client its own clock,
 * restarted each round unless the state is kept). */
enum { LR_CLOCK_GLOBAL = 0, LR_CLOCK_CLIENT = 1 };

int run_config_parse(json_t *root, struct run_cfg *cfg);

#endif
