/* SPDX-License-Identifier: Apache-2.0 */
/* A run's model outside the run (run_model.h): what fedrun translate, score
 * and sample share, from a run directory to a model with its parameters. */
#include "config.h"
#ifdef _OPENMP
#include <omp.h>
#endif
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fedrun/fedrun.h"
#include "fedrun/pipeline.h"
#include "commands.h"
#include "run_model.h"

/* (declared in commands.h: check-aggregator's host has them too) */
void fedrun_cli_log(void *ctx, enum fedrun_log_level level, const char *fmt, ...)
{
	if (level > FEDRUN_LOG_WARN)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fedrun: %s: ", level == FEDRUN_LOG_ERROR ? "error" : "warning");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int fedrun_cli_error(void *ctx, int code, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return fedrun_error(code, "%s", msg);
}

static int t_metric(void *ctx, const char *name, int64_t client, const char *tensor, double v)
{
	return 0; /* no run, no metrics */
}

static uint32_t t_threads(void *ctx)
{
	return ((struct run_model_host *)ctx)->threads;
}

static uint64_t t_seed(void *ctx)
{
	return ((struct run_model_host *)ctx)->seed;
}

static const char *t_run_dir(void *ctx)
{
	return ((struct run_model_host *)ctx)->run_dir;
}

int run_model_open(struct run_model *rm, const char *target, const char *checkpoint,
		   const char *backend, bool allow_plugin_paths, uint32_t threads)
{
	struct stat st;
	memset(rm, 0, sizeof *rm);
	rm->hc.threads = threads;
	rm->host = (struct fedrun_host){.size = sizeof rm->host, .abi_minor = FEDRUN_ABI_MINOR,
					.ctx = &rm->hc, .log = fedrun_cli_log, .error = fedrun_cli_error,
					.metric = t_metric, .loss_grad = NULL, .threads = t_threads,
					.seed = t_seed, .run_dir = t_run_dir};
	fedrun_st_init(&rm->f);
	/* RUN_DIR holds pipeline.json; otherwise the argument is a pipeline
	 * and its directory is where the default checkpoint is looked for. */
	bool isdir = stat(target, &st) == 0 && S_ISDIR(st.st_mode);
	size_t tl = strlen(target);
	if (!(rm->pipe_path = malloc(tl + 32)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (isdir)
		snprintf(rm->pipe_path, tl + 32, "%s/pipeline.json", target);
	else
		snprintf(rm->pipe_path, tl + 32, "%s", target);
	if (!(rm->dircopy = strdup(rm->pipe_path)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	rm->rundir = dirname(rm->dircopy);
	int rc = fedrun_pipeline_load(rm->pipe_path, &rm->pipeline);
	if (rc < 0)
		return rc;
	rm->msec = json_object_get(rm->pipeline, "model");
	if (!json_is_object(rm->msec))
		return fedrun_error(FEDRUN_ECONFIG, "%s: no \"model\" section", rm->pipe_path);
	/* --backend: a run trained on a GPU used on a CPU, or back */
	if (backend && json_object_set_new(rm->msec, "backend", json_string(backend)) < 0)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	json_t *seed = json_object_get(rm->pipeline, "seed");
	rm->hc.seed = json_is_integer(seed) ? (uint64_t)json_integer_value(seed) : 0;
	/* Relative paths in a pipeline are relative to its directory, as for
	 * `fedrun run`: a run's pipeline.json names the tokenizer the run
	 * keeps ("spm.model"), so the run directory may be moved. */
	fedrun_opts_set_base_dir(rm->rundir);

	if (checkpoint) {
		rm->ckpt = strdup(checkpoint);
	} else if ((rm->ckpt = malloc(strlen(rm->rundir) + 32))) {
		snprintf(rm->ckpt, strlen(rm->rundir) + 32, "%s/final.safetensors", rm->rundir);
	}
	if (!rm->ckpt)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	/* Read the checkpoint before the model is built: a missing file is
	 * the commonest mistake and the cheapest to report. */
	if ((rc = fedrun_st_read(&rm->f, rm->ckpt)) < 0)
		return fedrun_error_wrap(rc, "checkpoint: ");

	json_t *name = json_object_get(rm->msec, "plugin"), *path = json_object_get(rm->msec, "path");
	if (!json_is_string(name) || (path && !json_is_string(path)))
		return fedrun_error(FEDRUN_ECONFIG, "%s: model.plugin: expected a plugin name",
				    rm->pipe_path);
	char *file = NULL;
	if (path && !(file = strdup(json_string_value(path))))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if ((rc = fedrun_registry_create(NULL, &rm->reg)) == 0) {
		fedrun_registry_allow_files(rm->reg, allow_plugin_paths);
		rc = fedrun_registry_find(rm->reg, FEDRUN_KIND_MODEL, json_string_value(name), file,
					  &rm->desc, &rm->loaded_from);
	}
	free(file);
	if (rc < 0)
		return fedrun_error_wrap(rc, "model.plugin: ");
	rm->ops = rm->desc->ops;
	return 0;
}

int run_model_create(struct run_model *rm, bool give_run_dir)
{
	const struct fedrun_model_ops *ops = rm->ops;
	const char *name = rm->desc->name;
	rm->hc.run_dir = give_run_dir ? rm->rundir : NULL;
	int rc = ops->create(&rm->host, rm->msec, NULL, &rm->model);
	if (rc < 0) {
		rm->model = NULL;
		return fedrun_error_wrap(rc, "model '%s': ", name);
	}
	const struct fedrun_layout *l = rm->layout = ops->layout(rm->model);
	if (!l || l->n == 0)
		return fedrun_error(FEDRUN_EPLUGIN, "model '%s' has no parameters", name);
	if (!(rm->params = fedrun_arena_alloc(l->total)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for %" PRIu64 " parameters",
				    l->total);
	if ((rc = fedrun_st_load_layout(&rm->f, l, rm->params, "__")) < 0)
		return fedrun_error_wrap(rc, "checkpoint %s does not fit model '%s' of %s: ",
					 rm->ckpt, name, rm->pipe_path);
	fedrun_st_fini(&rm->f);
	fedrun_st_init(&rm->f);
	/* As in a run: one BLAS thread, and the model's kernels and matrix
	 * products (in blocks) on the OpenMP threads, so that the results
	 * are the same bits for any number of threads. */
	if (fedrun_backend_cpu_set_blas_threads(1) < 0)
		fedrun_error_clear(); /* another CBLAS: its own threading */
#ifdef _OPENMP
	omp_set_num_threads((int)rm->hc.threads);
#endif
	if (ops->worker_create && (rc = ops->worker_create(rm->model, &rm->worker)) < 0) {
		rm->worker = NULL;
		return fedrun_error_wrap(rc, "model '%s': ", name);
	}
	return 0;
}

void run_model_close(struct run_model *rm)
{
	fedrun_st_fini(&rm->f);
	if (rm->worker && rm->ops->worker_destroy)
		rm->ops->worker_destroy(rm->model, rm->worker);
	if (rm->model)
		rm->ops->destroy(rm->model);
	fedrun_arena_free(rm->params);
	fedrun_registry_destroy(rm->reg);
	json_decref(rm->pipeline);
	free(rm->ckpt);
	free(rm->dircopy);
	free(rm->pipe_path);
	memset(rm, 0, sizeof *rm);
}

int run_model_parse_num(const char *cmd, const char *opt, const char *arg, double lo, double hi,
			double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "fedrun %s: %s: expected a number in [%g, %g], got '%s'\n", cmd, opt,
			lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}
