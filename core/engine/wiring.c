/* SPDX-License-Identifier: Apache-2.0 */
/* Wiring a run: the host table handed to plugins, and creating the model,
 * selector, privacy and aggregator plugins named by the pipeline. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attack.h"
#include "secure.h"
#include "dist.h"
#include "engine.h"
#include "pipeline/internal.h"
#include "plugin/plugin_internal.h"


static void host_log(void *ctx, enum fedrun_log_level level, const char *fmt, ...)
{
	struct run *r = ctx;
	static const char *names[] = {"error", "warning", "info", "debug"};
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	const char *lvl = level <= FEDRUN_LOG_DEBUG ? names[level] : "log";
	if (dist_rank(r) > 0) {
		/* A worker rank: rank 0 writes the run's log; what only a
		 * worker's clients meet goes to stderr, named. */
		if (level <= FEDRUN_LOG_WARN && dist_worker_logging(r))
			fprintf(stderr, "fedrun: rank %u: %s: %s\n", dist_rank(r), lvl, line);
		return;
	}
	pthread_mutex_lock(&r->lock);
	run_log_line(r, lvl, line);
	if (level <= FEDRUN_LOG_WARN) {
		run_progress_break(r);
		fprintf(stderr, "fedrun: %s: %s\n", lvl, line);
	}
	pthread_mutex_unlock(&r->lock);
}

static int host_error(void *ctx, int code, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return fedrun_error(code, "%s", msg);
}

static int host_metric(void *ctx, const char *name, int64_t client, const char *tensor,
		       double value)
{
	const struct run *r = ctx;
	char buf[128];
	if (r->metric_prefix) { /* a phase's own name: "finetune.lr" */
		snprintf(buf, sizeof buf, "%s%s", r->metric_prefix, name);
		name = buf;
	}
	if (client == SECURE_CLIENT) /* the one update of a secure round: no client's */
		return 0;
	return run_event(ctx, client, -1, name, tensor, value);
}

static int host_loss_grad(void *ctx, int64_t client, enum fedrun_split split,
			  const float *params, float *grad, double *loss)
{
	struct run *r = ctx;
	if (!r->model_ops->loss_grad)
		return fedrun_error(FEDRUN_EUNSUPPORTED, "model '%s' cannot compute loss gradients",
				    r->model.desc->name);
	return r->model_ops->loss_grad(r->model.state, r->workers[0].model_worker, params,
				       split, client, grad, loss);
}

static uint32_t host_threads(void *ctx)
{
	return ((struct run *)ctx)->opts->threads;
}

static uint64_t host_seed(void *ctx)
{
	return (uint64_t)((struct run *)ctx)->cfg.seed;
}

/* Creates the directory on first use, so that a pipeline that fails to
 * set up leaves no run directory behind unless a plugin wrote into it. The
 * path is absolute, so that paths plugins derive from it and record in the
 * pipeline stay valid from any working directory (fedrun translate). */
static const char *host_run_dir(void *ctx)
{
	struct run *r = ctx;
	if (!r->run_dir)
		return NULL;
	if (r->run_dir_abs)
		return r->run_dir_abs;
	r->run_dir_made = access(r->run_dir, F_OK) != 0;
	if (fedrun_mkdir_p(r->run_dir) < 0) {
		r->host.log(r, FEDRUN_LOG_WARN, "%s", fedrun_error_message());
		return NULL;
	}
	if (!(r->run_dir_abs = realpath(r->run_dir, NULL))) {
		r->host.log(r, FEDRUN_LOG_WARN, "%s: %s", r->run_dir, strerror(errno));
		return NULL;
	}
	return r->run_dir_abs;
}

static bool host_resuming(void *ctx)
{
	const struct run *r = ctx;
	return r->opts && r->opts->resume;
}

static uint32_t host_clients(void *ctx, uint32_t *per_round)
{
	const struct run *r = ctx;
	if (per_round)
		*per_round = run_clients_per_round(r);
	return r->ntrainable ? r->num_clients : 0;
}

static bool host_overwrite(void *ctx)
{
	const struct run *r = ctx;
	return r->cfg.overwrite;
}

static bool host_interrupted(void *ctx)
{
	const struct run *r = ctx;
	return r->opts && r->opts->interrupt && *r->opts->interrupt;
}

void run_host_init(struct run *r)
{
	r->host = (struct fedrun_host){
		.size = sizeof(struct fedrun_host), .abi_minor = FEDRUN_ABI_MINOR, .ctx = r,
		.log = host_log, .error = host_error, .metric = host_metric,
		.loss_grad = host_loss_grad, .threads = host_threads, .seed = host_seed,
		.run_dir = host_run_dir, .resuming = host_resuming, .clients = host_clients,
		.overwrite = host_overwrite, .interrupted = host_interrupted};
}

/* Finds the plugin named by section `key` ("plugin", optional "path"). */
static int find_plugin(struct fedrun_registry *reg, json_t *root, const char *key, uint32_t kind,
		       struct plugin_slot *slot, json_t **sec)
{
	char got[64];
	*sec = json_object_get(root, key);
	json_t *name = json_object_get(*sec, "plugin"), *path = json_object_get(*sec, "path");
	if (!json_is_string(name))
		return fedrun_error(FEDRUN_ECONFIG, "%s.plugin: expected a plugin name, got %s", key,
				    fedrun_json_describe(name, got, sizeof got));
	if (path && !json_is_string(path))
		return fedrun_error(FEDRUN_ECONFIG, "%s.path: expected a file name, got %s", key,
				    fedrun_json_describe(path, got, sizeof got));
	char *file = NULL;
	if (path) {
		file = fedrun_path_resolve(opts_base_dir(), json_string_value(path));
		if (!file)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	int rc = fedrun_registry_find(reg, kind, json_string_value(name), file, &slot->desc,
				      &slot->file);
	/* The resolved pipeline (the run's pipeline.json, read by fedrun
	 * translate) records the path as it was resolved, as for data files. */
	if (rc == 0 && file && strcmp(file, json_string_value(path)) != 0)
		json_object_set_new(*sec, "path", json_string(file));
	free(file);
	if (rc < 0)
		return fedrun_error_wrap(rc, "%s.plugin: ", key);
	return registry_check_code_keys(reg, slot->desc, *sec, key);
}

int run_plugins_create(struct run *r, struct fedrun_registry *reg)
{
	json_t *root = r->pipeline, *sec;
	int rc = find_plugin(reg, root, "model", FEDRUN_KIND_MODEL, &r->model, &sec);
	if (rc < 0)
		return rc;
	r->model_ops = r->model.desc->ops;
	json_t *data = json_object_get(root, "data");
	run_status(r, "creating model '%s': loading its data", r->model.desc->name);
	rc = r->model_ops->create(&r->host, sec, data, &r->model.state);
	if (rc < 0)
		return fedrun_error_wrap(rc, "model '%s': ", r->model.desc->name);
	r->layout = r->model_ops->layout(r->model.state);
	r->num_clients = r->model_ops->num_clients(r->model.state);
	if (!r->layout || r->layout->n == 0)
		return fedrun_error(FEDRUN_EPLUGIN, "model '%s' has no parameters", r->model.desc->name);
	if (r->num_clients == 0)
		return fedrun_error(FEDRUN_ECONFIG, "model '%s': the data gives no clients",
				    r->model.desc->name);
	/* Clients without training data are evaluation-only domains. */
	if (!(r->trainable = malloc((size_t)r->num_clients * sizeof *r->trainable)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t k = 0; k < r->num_clients; k++)
		if (r->model_ops->client_size(r->model.state, k) > 0)
			r->trainable[r->ntrainable++] = k;
	if (r->ntrainable == 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model '%s': none of the %u clients has training data (client_size 0): "
				    "nothing to train", r->model.desc->name, r->num_clients);
	if ((rc = run_finetune_clients(r)) < 0 || (rc = run_expert_clients(r)) < 0)
		return rc;

	if (!(r->attack = calloc(1, sizeof *r->attack)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	rc = attack_parse(json_object_get(root, "attack"), r->num_clients, (uint64_t)r->cfg.seed,
			  r->attack);
	if (rc < 0)
		return rc;

	rc = find_plugin(reg, root, "selector", FEDRUN_KIND_SELECTOR, &r->selector, &sec);
	if (rc < 0)
		return rc;
	r->sel_ops = r->selector.desc->ops;
	/* "direction" is the engine's key: the plugin does not see it. */
	static const struct fedrun_opt dir_spec[] = {
		{"direction", FEDRUN_OPT_CHOICE, offsetof(struct run_cfg, direction), 0, 0, 0, 0, "pull",
		 "pull|push|both"},
		FEDRUN_OPT_END_};
	json_t *dir = json_object();
	if (json_object_get(sec, "direction"))
		json_object_set(dir, "direction", json_object_get(sec, "direction"));
	json_object_del(sec, "direction");
	rc = fedrun_opts_parse(dir_spec, dir, "selector", &r->cfg);
	if (rc < 0) { /* a message about the engine's key: not the plugin's */
		json_decref(dir);
		return rc;
	}
	rc = r->sel_ops->create(&r->host, sec, r->layout, &r->selector.state);
	/* With "both", push gets an instance of its own, so that stateful
	 * selectors keep the two sides apart. */
	r->push_selector = r->selector.state;
	if (rc == 0 && r->cfg.direction == DIR_BOTH)
		rc = r->sel_ops->create(&r->host, sec, r->layout, &r->push_selector);
	json_object_set(sec, "direction", json_object_get(dir, "direction"));
	json_decref(dir);
	if (rc < 0)
		return fedrun_error_wrap(rc, "selector '%s': ", r->selector.desc->name);

	if (json_is_object(json_object_get(root, "privacy"))) {
		rc = find_plugin(reg, root, "privacy", FEDRUN_KIND_PRIVACY, &r->privacy, &sec);
		if (rc < 0)
			return rc;
		r->priv_ops = r->privacy.desc->ops;
		rc = r->priv_ops->create(&r->host, sec, r->layout, &r->privacy.state);
		if (rc < 0)
			return fedrun_error_wrap(rc, "privacy '%s': ", r->privacy.desc->name);
	}

	rc = find_plugin(reg, root, "aggregator", FEDRUN_KIND_AGGREGATOR, &r->aggregator, &sec);
	if (rc < 0)
		return rc;
	r->agg_ops = r->aggregator.desc->ops;
	rc = r->agg_ops->create(&r->host, sec, r->layout, &r->aggregator.state);
	if (rc < 0)
		return fedrun_error_wrap(rc, "aggregator '%s': ", r->aggregator.desc->name);
	r->cfg.hints = (struct fedrun_client_hints){.size = sizeof r->cfg.hints};
	if (r->agg_ops->size >= offsetof(struct fedrun_aggregator_ops, configure_clients) + sizeof(void *) &&
	    r->agg_ops->configure_clients) {
		rc = r->agg_ops->configure_clients(r->aggregator.state, &r->cfg.hints);
		if (rc < 0)
			return fedrun_error_wrap(rc, "aggregator '%s': ", r->aggregator.desc->name);
	}
	return secure_create(r, dist_nranks(r), &r->secure);
}

void run_plugins_destroy(struct run *r)
{
	if (r->aggregator.state)
		r->agg_ops->destroy(r->aggregator.state);
	if (r->privacy.state)
		r->priv_ops->destroy(r->privacy.state);
	if (r->push_selector && r->push_selector != r->selector.state)
		r->sel_ops->destroy(r->push_selector);
	if (r->selector.state)
		r->sel_ops->destroy(r->selector.state);
	r->push_selector = NULL;
	if (r->model.state)
		r->model_ops->destroy(r->model.state);
	r->aggregator.state = r->privacy.state = r->selector.state = r->model.state = NULL;
	if (r->attack)
		attack_fini(r->attack);
	free(r->attack);
	r->attack = NULL;
	secure_destroy(r->secure);
	r->secure = NULL;
}
