/* SPDX-License-Identifier: Apache-2.0 */
/* Pipeline files: loading, --set overrides, validation and running.
 * A pipeline is one JSON document; fedrun_pipeline_validate() resolves it
 * (defaults filled in, relative input paths made relative to the pipeline
 * file's directory) by building every plugin it names without training. */
#ifndef FEDRUN_PIPELINE_H
#define FEDRUN_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "fedrun/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses a pipeline file (duplicate keys are errors). *out is a new
 * reference. Messages give file:line:column. */
int fedrun_pipeline_load(const char *file, json_t **out);

/* Applies one "a.b.c=value" override: value is parsed as JSON when it is
 * valid JSON, else taken as a string; missing objects on the way are
 * created. */
int fedrun_pipeline_set(json_t *root, const char *assignment);

/* Removes the key at "a.b.c" (--unset), so that its default applies or
 * the section goes: FEDRUN_ECONFIG naming the first missing component
 * when the pipeline has no such key (a misspelt path is not ignored).
 * Array elements cannot be removed (set the array instead). */
int fedrun_pipeline_unset(json_t *root, const char *path);

struct fedrun_run_opts {
	uint32_t threads;         /* worker threads; >= 1 */
	bool resume;              /* continue from the run directory's last checkpoint */
	bool quiet;               /* no progress line */
	bool progress;            /* show a progress line (stderr is a terminal) */
	const char *base_dir;     /* relative input paths are resolved here */
	volatile int *interrupt;  /* set non-zero (e.g. from a signal handler)
				     to stop after the current round; plugins
				     that ask host->interrupted (ABI 1.8) stop
				     sooner, in create too */
	uint32_t peer_timeout;    /* a run over several processes fails when
				     another rank is not heard from for this
				     many seconds (stopped, or its node
				     unreachable); 0: wait forever */
};

/* Resolves and checks the pipeline (which it modifies: defaults are
 * filled in) by creating every plugin, then destroys them.
 * FEDRUN_EINTERRUPTED when *opts->interrupt stopped a plugin's create. */
int fedrun_pipeline_validate(json_t *pipeline, const struct fedrun_run_opts *opts,
			     struct fedrun_registry *reg);

/* Runs the pipeline. Returns 0, FEDRUN_EINTERRUPTED when *opts->interrupt
 * stopped it (a checkpoint was written when the rounds had begun, in a run
 * over several processes that of any rank, and every rank returns it; a
 * plugin that stopped in create wrote nothing), or another error. */
int fedrun_pipeline_run(json_t *pipeline, const struct fedrun_run_opts *opts,
			struct fedrun_registry *reg);

#ifdef __cplusplus
}
#endif
#endif
