/* SPDX-License-Identifier: Apache-2.0 */
/* What the host offers plugins: an append-only table of services.
 * Rules (SQLite sqlite3ext.h style): members are only ever added at the end;
 * a plugin MUST check `size` before using a member newer than ABI 1.0. */
#ifndef FEDRUN_HOST_H
#define FEDRUN_HOST_H

#include <stdint.h>
#include <stdarg.h>
#include "fedrun/params.h"

#ifdef __cplusplus
extern "C" {
#endif

enum fedrun_log_level {
	FEDRUN_LOG_ERROR = 0,
	FEDRUN_LOG_WARN = 1,
	FEDRUN_LOG_INFO = 2,
	FEDRUN_LOG_DEBUG = 3
};

enum fedrun_split {
	FEDRUN_SPLIT_TRAIN = 0,
	FEDRUN_SPLIT_VALID = 1,
	FEDRUN_SPLIT_TEST = 2
};

/* Client index meaning "the union of all clients' data". */
#define FEDRUN_ALL_CLIENTS (-1)

struct fedrun_host {
	uint32_t size;      /* sizeof(struct fedrun_host) as the host was built */
	uint32_t abi_minor; /* the host's FEDRUN_ABI_MINOR */
	void *ctx;          /* pass back as the first argument of every call */

	/* Writes a line to the run log (and stderr at WARN and above). */
	void (*log)(void *ctx, enum fedrun_log_level level, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

	/* Records an error message for the current operation and returns
	 * `code` (a negative FEDRUN_E*). The same as fedrun_error(). */
	int (*error)(void *ctx, int code, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

	/* Records a metric for the current round: `name` such as
	 * "fedatt.alpha", `client` or -1, `tensor` name or NULL. Thread-safe.
	 * Events are written in a deterministic order. */
	int (*metric)(void *ctx, const char *name, int64_t client,
		      const char *tensor, double value);

	/* Loss (mean over the split) and, when grad is not NULL, its gradient
	 * with respect to params, of `client`'s data (or FEDRUN_ALL_CLIENTS).
	 * For aggregators that need the target's loss (meritfed). May be NULL
	 * when the model cannot provide it. Not thread-safe: call from the
	 * aggregator only. */
	int (*loss_grad)(void *ctx, int64_t client, enum fedrun_split split,
			 const float *params, float *grad, double *loss);

	/* Number of worker threads the run uses; aggregators may use as many. */
	uint32_t (*threads)(void *ctx);

	/* The run's seed, for plugins' own fedrun_rng streams. */
	uint64_t (*seed)(void *ctx);

	/* ABI 1.1. The run's output directory (where plugins may write files
	 * of their own, e.g. a tokenizer model), or NULL when there is none
	 * (fedrun validate, fedrun translate). Borrowed. Check
	 * size >= offsetof(struct fedrun_host, run_dir) + sizeof(void *)
	 * (or abi_minor >= 1) before calling it. */
	const char *(*run_dir)(void *ctx);

	/* ABI 1.2. True when the run continues from its run directory
	 * (--resume): files a plugin wrote there in the first call belong to
	 * the run and must be reused or checked, never replaced. Check
	 * size >= offsetof(struct fedrun_host, resuming) + sizeof(void *)
	 * (or abi_minor >= 2) before calling it. */
	bool (*resuming)(void *ctx);

	/* ABI 1.2. The run's number of clients; *per_round (when not NULL)
	 * gets the number of updates each round aggregates (the clients
	 * sampled). For plugins that can check their options against them at
	 * create (validate then refuses what a round would). 0 where the host
	 * does not know (yet): a model's create, or no run. */
	uint32_t (*clients)(void *ctx, uint32_t *per_round);

	/* ABI 1.7. True when the pipeline sets output.overwrite: a plugin may
	 * replace a file in the run directory that differs from the one it
	 * would write (say so at FEDRUN_LOG_WARN). Otherwise such a file is
	 * the user's, and the plugin refuses (FEDRUN_EIO), naming it and
	 * output.overwrite, as the host does for a run's own files. Check
	 * size >= offsetof(struct fedrun_host, overwrite) + sizeof(void *)
	 * (or abi_minor >= 7) before calling it. */
	bool (*overwrite)(void *ctx);

	/* ABI 1.8. True once the user asked fedrun to stop (SIGINT, SIGTERM).
	 * A plugin whose create or operation works long without returning
	 * (a key generation, say) asks it between steps and, when it is
	 * true, gives up and returns FEDRUN_EINTERRUPTED, writing nothing
	 * more; the host then exits with status 130. Thread-safe. Check
	 * size >= offsetof(struct fedrun_host, interrupted) + sizeof(void *)
	 * (or abi_minor >= 8) before calling it. */
	bool (*interrupted)(void *ctx);
};

#ifdef __cplusplus
}
#endif
#endif
