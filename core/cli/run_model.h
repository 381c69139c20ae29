/* SPDX-License-Identifier: Apache-2.0 */
/* A run's model outside the run: the model plugin its pipeline.json names,
 * created without data and loaded with a checkpoint of the run (by default
 * RUN/final.safetensors), for fedrun translate, score and sample. */
#ifndef FEDRUN_CLI_RUN_MODEL_H
#define FEDRUN_CLI_RUN_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include "fedrun/fedrun.h"

struct run_model_host {
	uint32_t threads;
	uint64_t seed;
	const char *run_dir; /* what host->run_dir returns */
};

struct run_model {
	struct run_model_host hc;
	struct fedrun_host host;
	char *pipe_path, *ckpt, *dircopy;
	const char *rundir; /* the directory of pipe_path */
	json_t *pipeline, *msec;
	struct fedrun_registry *reg;
	const struct fedrun_plugin *desc;
	const struct fedrun_model_ops *ops;
	const char *loaded_from;
	struct fedrun_st_file f; /* the checkpoint, until create */
	void *model, *worker;
	float *params;
	const struct fedrun_layout *layout;
};

/* Loads target (RUN_DIR, or a pipeline whose directory stands for it), reads
 * the checkpoint (NULL: RUN_DIR/final.safetensors) and finds the model
 * plugin; backend (may be NULL) replaces model.backend. The caller then
 * checks that the plugin has the op it needs, and calls _create. */
int run_model_open(struct run_model *rm, const char *target, const char *checkpoint,
		   const char *backend, bool allow_plugin_paths, uint32_t threads);
/* Creates the model (data section NULL; with give_run_dir the host's
 * run_dir is the run directory), loads the checkpoint into rm->params and
 * makes a worker, with the threads set up as in a run. */
int run_model_create(struct run_model *rm, bool give_run_dir);
void run_model_close(struct run_model *rm);

/* An option's number: 0, or -1 having said on stderr, as "fedrun CMD: OPT:
 * ...", that arg is not a number in [lo, hi]. */
int run_model_parse_num(const char *cmd, const char *opt, const char *arg, double lo, double hi,
			double *out);

#endif
