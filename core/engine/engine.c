/* SPDX-License-Identifier: Apache-2.0 */
/* The round engine (DESIGN.md section 4): sample clients, push θ_t, train
 * clients in parallel, select and privatise their updates, pull them as
 * messages, aggregate, evaluate, write metrics and checkpoints. Results are
 * the same bits whatever the number of threads: randomness comes from
 * counter-based streams and updates are combined in client order. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "attack.h"
#include "dist.h"
#include "engine.h"
#include "message.h"
#include "secure.h"

/* ---- one round -------------------------------------------------------- */

/* Chooses run_clients_per_round() clients without replacement, sorted by
 * id, among the K clients that have training data (evaluation-only
 * clients, client_size 0, are never sampled). */
static int sample_clients(struct run *r, uint32_t round, uint32_t **out, uint32_t *m)
{
	uint32_t K = r->ntrainable;
	uint32_t want = run_clients_per_round(r);
	uint32_t *all = malloc((size_t)K * sizeof *all);
	if (!all)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t k = 0; k < K; k++)
		all[k] = k;
	if (want < K) {
		struct fedrun_rng rng;
		fedrun_rng_init(&rng, (uint64_t)r->cfg.seed, FEDRUN_RNG_SAMPLE, round, 0);
		for (uint32_t k = 0; k < want; k++) { /* partial Fisher-Yates */
			uint32_t j = k + (uint32_t)fedrun_rng_below(&rng, K - k);
			uint32_t t = all[k];
			all[k] = all[j];
			all[j] = t;
		}
		for (uint32_t k = 1; k < want; k++) /* insertion sort is fine: few */
			for (uint32_t j = k; j > 0 && all[j - 1] > all[j]; j--) {
				uint32_t t = all[j];
				all[j] = all[j - 1];
				all[j - 1] = t;
			}
	}
	for (uint32_t k = 0; k < want; k++) /* positions in the list -> client ids */
		all[k] = r->trainable[all[k]];
	*out = all;
	*m = want;
	return 0;
}

static int evaluate_server(struct run *r, enum fedrun_split split)
{
	struct fedrun_eval ev = {0};
	int rc = r->model_ops->evaluate(r->model.state, r->workers[0].model_worker, r->theta, split,
					FEDRUN_ALL_CLIENTS, &ev);
	if (rc == FEDRUN_ENOENT)
		return 0; /* no such split */
	if (rc < 0)
		return fedrun_error_wrap(rc, "evaluation: ");
	for (uint32_t i = 0; i < ev.n && i < FEDRUN_METRICS_MAX; i++) {
		rc = run_event(r, -1, (int)split, ev.m[i].name, NULL, ev.m[i].value);
		if (rc < 0)
			return rc;
	}
	if (ev.n > 0 && strcmp(ev.m[0].name, "loss") == 0) {
		if (!isfinite(ev.m[0].value))
			return fedrun_error(FEDRUN_ENUMERIC,
					    "round %u: the model's %s loss is %g: training diverged (a "
					    "smaller learning rate?)",
					    r->round, run_split_name((int)split), ev.m[0].value);
		if (split == FEDRUN_SPLIT_TEST) {
			r->test_loss = ev.m[0].value;
		} else {
			if (isnan(r->first_loss)) {
				r->first_loss = ev.m[0].value;
				r->first_loss_round = r->round;
			}
			r->last_loss = ev.m[0].value;
		}
	}
	return 0;
}

static int eval_client(struct run *r, struct worker *w, uint32_t c, void *p)
{
	enum fedrun_split split = *(enum fedrun_split *)p;
	struct fedrun_eval ev = {0};
	int rc = r->model_ops->evaluate(r->model.state, w->model_worker, r->theta, split, c, &ev);
	if (rc == FEDRUN_ENOENT)
		return 0;
	if (rc < 0)
		return fedrun_error_wrap(rc, "evaluation of client %u: ", c);
	for (uint32_t i = 0; i < ev.n && i < FEDRUN_METRICS_MAX; i++)
		if ((rc = run_event(r, c, (int)split, ev.m[i].name, NULL, ev.m[i].value)) < 0)
			return rc;
	return 0;
}

/* The server's and (eval.clients) every client's evaluation on `split`;
 * its time goes to the progress line's ETA. */
static int evaluate_all(struct run *r, enum fedrun_split split)
{
	double t = run_now();
	int rc = evaluate_server(r, split);
	if (rc == 0 && r->cfg.eval_clients)
		rc = run_parallel_for(r, r->num_clients, eval_client, &split);
	r->prog.eval = run_now() - t;
	return rc;
}

static double last_loss(const struct run *r, int split)
{
	for (uint32_t i = r->nevents; i-- > 0;)
		if (r->events[i].client == UINT32_MAX && r->events[i].split == split &&
		    strcmp(run_str(r, r->events[i].name), "loss") == 0)
			return r->events[i].value;
	return NAN;
}

/* Whether a round streams its updates into the aggregator (ABI 1.3): the
 * aggregator can, and no server-side attack needs every update at once. */
static bool run_streams(const struct run *r)
{
	return FEDRUN_AGGREGATOR_STREAMS(r->agg_ops) && !attack_needs_all(r->attack);
}

/* Clients trained at once in a round of m: all of them, or when streaming
 * enough to keep every worker of every rank busy (a chunk waits for its slowest client)
 * and few enough that the round's memory does not depend on m. */
static uint32_t round_chunk(const struct run *r, bool stream, uint32_t m)
{
	uint32_t c = 4 * r->nworkers < 8 ? 8 : 4 * r->nworkers;
	c *= dist_nranks(r); /* every rank's workers (the same threads each) */
	return stream && c < m ? c : m;
}

static void free_messages(struct round_ctx *ctx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(ctx->pull[i]);
		ctx->pull[i] = NULL;
		free(ctx->push_own[i]);
		ctx->push_own[i] = NULL;
		if (ctx->masked) {
			free(ctx->masked[i]);
			ctx->masked[i] = NULL;
		}
	}
}

static int run_round(struct run *r, uint32_t round)
{
	const struct fedrun_layout *l = r->layout;
	uint32_t *clients = NULL, m = 0;
	const double t0 = run_now();
	int rc = sample_clients(r, round, &clients, &m);
	if (rc < 0)
		return rc;
	struct round_ctx ctx = {.clients = clients};
	engine_round_info(r, round, m, &ctx.info);
	/* Streaming: the clients train a chunk at a time and each chunk's
	 * updates go to the aggregator's accumulate, in client order, before
	 * the next chunk trains. Otherwise the whole round is one chunk whose
	 * updates aggregate() receives together. */
	const bool stream = run_streams(r);
	const uint32_t chunk = round_chunk(r, stream, m);
	void *push = NULL;
	struct fedrun_update *ups = NULL;
	const float **views = NULL;
	float *sa_mean = NULL; /* secure aggregation: the round's mean update */
	const float **sa_tensor = NULL;
	ctx.push_own = calloc(chunk, sizeof *ctx.push_own);
	ctx.push_own_len = calloc(chunk, sizeof *ctx.push_own_len);
	ctx.pull = calloc(chunk, sizeof *ctx.pull);
	ctx.pull_len = calloc(chunk, sizeof *ctx.pull_len);
	ctx.updates = calloc(chunk, sizeof *ctx.updates);
	ctx.samples = calloc(chunk, sizeof *ctx.samples);
	ups = calloc(chunk, sizeof *ups);
	views = calloc((size_t)chunk * l->n, sizeof *views);
	if (r->secure) {
		ctx.masked = calloc(chunk, sizeof *ctx.masked);
		ctx.masked_len = calloc(chunk, sizeof *ctx.masked_len);
		sa_mean = fedrun_arena_alloc(l->total);
		sa_tensor = calloc(l->n, sizeof *sa_tensor);
	}
	if (!ctx.pull || !ctx.pull_len || !ups || !views || !ctx.push_own ||
	    !ctx.push_own_len || !ctx.updates || !ctx.samples ||
	    (r->secure && (!ctx.masked || !ctx.masked_len || !sa_mean || !sa_tensor))) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	/* Each chunk's local steps, parallel to the updates aggregate() or
	 * accumulate() receives (ABI 1.5). */
	ctx.info.client_steps = ctx.updates;

	/* PUSH: one serialized θ_t, received by every sampled client (with
	 * push selection, each client's own message, made by its worker). */
	if (!run_push(r)) {
		rc = msg_encode(MSG_PUSH, round, UINT32_MAX, 0, 0, l, r->theta, NULL, &push, &ctx.push_len);
		if (rc < 0)
			goto out;
		ctx.push = push;
	}
	if (r->server_prev)
		memcpy(r->server_prev, r->theta, l->total * sizeof(float));
	if (stream && (rc = r->agg_ops->begin(r->aggregator.state, &ctx.info)) < 0) {
		fedrun_error_wrap(rc, "round %u: aggregator '%s': ", round, r->aggregator.desc->name);
		goto out;
	}

	/* The global step advances by the longest chain of updates of the
	 * round: the server model after round t is t rounds of parallel local
	 * training deep, and one client reproduces centralized training's
	 * step count exactly. */
	/* Other ranks: the round's clients and θ_t (dist.h). */
	if ((rc = dist_round(r, &ctx, m, chunk)) < 0)
		goto out;
	/* Secure aggregation: keys and their shares before the clients train. */
	if (r->secure && (rc = secure_round_begin(r->secure, r, round, clients, m)) < 0)
		goto out;
	uint64_t most = 0, samples = 0;
	double loss_sum = 0, n_sum = 0;
	r->bytes_push = 0;
	r->bytes_pull = 0;
	for (uint32_t base = 0; base < m; base += chunk) {
		const uint32_t n = m - base < chunk ? m - base : chunk;
		ctx.clients = clients + base;
		ctx.base = base;
		/* The clients this process owns (all of them in one process);
		 * the other ranks' messages come in. */
		if ((rc = dist_train_chunk(r, &ctx, n, base + n < m)) < 0)
			goto out;
		for (uint32_t i = 0; i < n; i++) {
			most = ctx.updates[i] > most ? ctx.updates[i] : most;
			samples += ctx.samples[i];
			r->bytes_push += run_push(r) ? ctx.push_own_len[i] : ctx.push_len;
		}
		/* PULL: decode in client order. */
		for (uint32_t i = 0; i < n; i++) {
			struct msg_view v = {.tensor = views + (size_t)i * l->n};
			rc = msg_decode(ctx.pull[i], ctx.pull_len[i], l, &v);
			if (rc < 0)
				goto out;
			r->bytes_pull += ctx.pull_len[i];
			if (r->secure) { /* its update, masked, into the server's sum */
				rc = secure_server_add(r->secure, base + i, ctx.masked[i], ctx.masked_len[i]);
				free(ctx.masked[i]);
				ctx.masked[i] = NULL;
				if (rc < 0)
					goto out;
			}
			ups[i] = (struct fedrun_update){.client = v.client, .n_samples = v.n_samples,
							.train_loss = v.train_loss, .tensor = v.tensor};
			loss_sum += v.train_loss * (double)v.n_samples;
			n_sum += (double)v.n_samples;
			if ((rc = run_event(r, v.client, FEDRUN_SPLIT_TRAIN, "train_loss", NULL, v.train_loss)) < 0 ||
			    (rc = run_event(r, v.client, FEDRUN_SPLIT_TRAIN, "updates", NULL,
					    (double)ctx.updates[i])) < 0)
				goto out;
		}
		if (stream && !r->secure) {
#ifdef _OPENMP
			/* One thread: an OpenMP team woken here would spin on the
			 * cores the next chunk's workers train on (a quarter of
			 * the CPU time with 2 threads), and the chunk's sum is
			 * small beside its training. */
			int omp_saved = omp_get_max_threads();
			omp_set_num_threads(1);
#endif
			rc = r->agg_ops->accumulate(r->aggregator.state, &ctx.info, ups, n);
#ifdef _OPENMP
			omp_set_num_threads(omp_saved);
#endif
			if (rc < 0) {
				fedrun_error_wrap(rc, "round %u: aggregator '%s': ", round,
						  r->aggregator.desc->name);
				goto out;
			}
		}
		if (stream)
			free_messages(&ctx, n);
	}
	r->global_step += most;
	if (run_push(r))
		memcpy(r->theta_last, r->theta, l->total * sizeof(float)); /* θ_t, for round t + 1 */

	if (!stream && !r->secure && (rc = attack_server(r->attack, l, ups, m)) < 0)
		goto out;
	if (r->attack->type != ATTACK_NONE) {
		uint32_t bad = 0;
		for (uint32_t i = 0; i < m; i++)
			bad += attack_by(r->attack, clients[i]);
		if ((rc = run_event(r, -1, -1, "attack.attackers", NULL, bad)) < 0)
			goto out;
	}
	if (r->secure) {
		/* The aggregator gets one update: the survivors' weighted mean,
		 * the only thing secure aggregation reveals. */
		struct fedrun_update sa;
		if ((rc = secure_round_finish(r->secure, r, sa_mean, sa_tensor, &sa)) < 0)
			goto out;
		sa.train_loss = n_sum > 0 ? loss_sum / n_sum : 0;
		ctx.info.client_steps = &most;
		rc = stream ? r->agg_ops->accumulate(r->aggregator.state, &ctx.info, &sa, 1)
			    : r->agg_ops->aggregate(r->aggregator.state, &ctx.info, &sa, 1, r->theta);
		if (rc == 0 && stream)
			rc = r->agg_ops->finish(r->aggregator.state, &ctx.info, r->theta);
	} else {
		rc = stream ? r->agg_ops->finish(r->aggregator.state, &ctx.info, r->theta)
			    : r->agg_ops->aggregate(r->aggregator.state, &ctx.info, ups, m, r->theta);
	}
	if (rc < 0) {
		fedrun_error_wrap(rc, "round %u: aggregator '%s': ", round, r->aggregator.desc->name);
		goto out;
	}
	if (r->server_prev) {
		/* Central privacy: the plugin transforms θ_{t+1} − θ_t. */
		fedrun_vec_sub(l->total, r->theta, r->server_prev, r->server_delta);
		rc = r->priv_ops->apply_server(r->privacy.state, &ctx.info, m, r->server_delta);
		if (rc < 0) {
			fedrun_error_wrap(rc, "round %u: privacy '%s' on the server: ", round,
					  r->privacy.desc->name);
			goto out;
		}
		memcpy(r->theta, r->server_prev, l->total * sizeof(float));
		fedrun_vec_axpy(l->total, 1.0f, r->server_delta, r->theta);
	}
	const char *bad;
	if (engine_first_bad_tensor(l, r->theta, &bad)) {
		rc = fedrun_error(FEDRUN_ENUMERIC, "round %u: aggregator '%s' produced non-finite values in tensor '%s'",
				  round, r->aggregator.desc->name, bad);
		goto out;
	}
	r->round = round;
	double train_loss = n_sum > 0 ? loss_sum / n_sum : NAN;
	if (n_sum > 0 && !isfinite(train_loss)) { /* finite weights, infinite loss */
		rc = fedrun_error(FEDRUN_ENUMERIC,
				  "round %u: the clients' training loss is %g: training diverged "
				  "(a smaller learning rate?)",
				  round, train_loss);
		goto out;
	}
	rc = run_event(r, -1, FEDRUN_SPLIT_TRAIN, "train_loss", NULL, train_loss);
	if (rc == 0)
		rc = run_event(r, -1, -1, "clients", NULL, m);
	if (rc == 0)
		rc = run_event(r, -1, -1, "global_step", NULL, (double)r->global_step);
	/* What the round's progress line says (run_progress). */
	r->prog.train = run_now() - t0;
	r->prog.samples = samples;
	r->prog.train_loss = train_loss;
	r->prog.round_eval = 0;
	if (rc == 0 && r->cfg.eval_every > 0 &&
	    (round % r->cfg.eval_every == 0 || round == r->cfg.rounds)) {
		rc = evaluate_all(r, (enum fedrun_split)r->cfg.eval_split);
		r->prog.round_eval = r->prog.eval;
	}
	if (rc < 0)
		goto out;
	r->prog.eval_loss = last_loss(r, r->cfg.eval_split);
	rc = metrics_flush_round(r, round);
out:
	if (ctx.pull && ctx.push_own)
		free_messages(&ctx, chunk);
	free(ctx.push_own);
	free(ctx.push_own_len);
	free(ctx.pull);
	free(ctx.pull_len);
	free(ctx.updates);
	free(ctx.samples);
	free(ctx.masked);
	free(ctx.masked_len);
	fedrun_arena_free(sa_mean);
	free(sa_tensor);
	secure_round_end(r->secure);
	free(push);
	free(ups);
	free(views);
	free(clients);
	return rc;
}

/* ---- setup and teardown ----------------------------------------------- */

static int prepare_dir_early(struct run *r);

/* with_dir: a real run, whose directory is checked and created before the
 * plugins are, so that they may write files into it (host->run_dir). */
static int run_setup(struct run *r, json_t *pipeline, const struct fedrun_run_opts *opts,
		     struct fedrun_registry *reg, bool with_dir)
{
	memset(r, 0, sizeof *r);
	r->first_loss = r->last_loss = r->test_loss = NAN;
	r->prog.on = with_dir; /* status and round lines: a real run's */
	r->prog.eval = -1;
	r->pipeline = pipeline;
	r->opts = opts;
	r->t0 = run_now();
	pthread_mutex_init(&r->lock, NULL);
	run_host_init(r);
	fedrun_opts_set_base_dir(opts->base_dir);
	/* A real run joins the other processes of its job first, so that
	 * they can agree on whether everyone set up (dist_agree). */
	int rc = with_dir ? dist_open(r) : 0;
	if (rc == 0)
		rc = run_config_parse(pipeline, &r->cfg);
	if (rc == 0 && r->cfg.init && !opts->resume && access(r->cfg.init, R_OK) != 0)
		rc = fedrun_error(FEDRUN_ENOENT, "init: cannot read file '%s': %s", r->cfg.init,
				  strerror(errno));
	/* Only rank 0 writes the run directory; the plugins of the other
	 * ranks write into a private one. */
	if (rc == 0 && with_dir && dist_rank(r) > 0)
		r->run_dir = dist_scratch(r);
	else if (rc == 0 && with_dir && (rc = prepare_dir_early(r)) == 0)
		r->run_dir = r->cfg.dir;
	if (rc == 0)
		rc = run_plugins_create(r, reg);
	return rc;
}

static void run_teardown(struct run *r)
{
	dist_close(r);
	metrics_close(r);
	run_workers_destroy(r);
	run_plugins_destroy(r);
	fedrun_arena_free(r->theta);
	fedrun_arena_free(r->server_prev);
	fedrun_arena_free(r->server_delta);
	for (uint32_t i = 0; i < r->ncstates; i++) {
		fedrun_arena_free(r->cstates[i].optim);
		fedrun_arena_free(r->cstates[i].params);
	}
	fedrun_arena_free(r->theta_init);
	fedrun_arena_free(r->theta_last);
	free(r->cstates);
	free(r->trainable);
	free(r->ft_list);
	free(r->ex_list);
	free(r->ex_private);
	free(r->run_dir_abs);
	free(r->events);
	run_strings_free(r);
	free(r->pending_log);
	pthread_mutex_destroy(&r->lock);
}


/* Compares the resolved pipeline with the one a run directory holds; only
 * "rounds" (a resumed run may be extended), "output.dir" (the directory
 * may have been moved) and where the model computes (model.backend,
 * model.device, model.deterministic: a run started on a GPU may finish on
 * a CPU, and a run started before those keys existed has none) may
 * differ. */
static int same_pipeline(const struct run *r, const char *saved_path)
{
	json_t *saved;
	int rc = fedrun_pipeline_load(saved_path, &saved);
	if (rc < 0)
		return fedrun_error_wrap(rc, "cannot resume: ");
	json_t *now = json_deep_copy(r->pipeline);
	json_object_del(saved, "rounds");
	json_object_del(now, "rounds");
	json_object_del(json_object_get(saved, "output"), "dir");
	json_object_del(json_object_get(now, "output"), "dir");
	static const char *const placement[] = {"backend", "device", "deterministic"};
	for (size_t i = 0; i < sizeof placement / sizeof placement[0]; i++) {
		json_object_del(json_object_get(saved, "model"), placement[i]);
		json_object_del(json_object_get(now, "model"), placement[i]);
	}
	const char *key;
	json_t *v;
	rc = 0;
	json_object_foreach(now, key, v) {
		if (!json_equal(v, json_object_get(saved, key))) {
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "cannot resume: the pipeline's '%s' differs from the run's %s",
					  key, saved_path);
			break;
		}
	}
	json_object_foreach(saved, key, v)
		if (rc == 0 && !json_object_get(now, key))
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "cannot resume: the run's %s has '%s', the pipeline does not",
					  saved_path, key);
	json_decref(saved);
	json_decref(now);
	return rc;
}

/* A fresh run directory: refuses to overwrite a run unless output.overwrite
 * says so, in which case the old run's files go first (stale checkpoints
 * must not be resumed later). */
static void clear_run(struct run *r);

/* The files a run writes besides pipeline.json (clear_run removes them). */
static const char *const run_files[] = {"metrics.jsonl", "metrics.csv",     "log.txt",
					"final.safetensors", "eval_matrix.tsv", "checkpoints",
					"finetuned", "clients"};

/* Whether output.dir can be created and written: the directory, or the
 * nearest ancestor that exists, must be a writable directory. */
static int dir_writable(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s", dir);
	for (;;) {
		struct stat st;
		if (stat(path, &st) == 0) {
			/* A value no run can use: an invalid pipeline (exit 2) */
			if (!S_ISDIR(st.st_mode))
				return fedrun_error(FEDRUN_ECONFIG, "output.dir: %s: %s is not a directory", dir,
						    path);
			if (access(path, W_OK | X_OK) != 0)
				return fedrun_error(FEDRUN_EIO, "output.dir: %s: %s is not writable: %s", dir,
						    path, strerror(errno));
			return 0;
		}
		char *slash = strrchr(path, '/');
		while (slash && slash > path && slash[1] == '\0') { /* trailing slashes */
			*slash = '\0';
			slash = strrchr(path, '/');
		}
		if (!slash)
			snprintf(path, sizeof path, ".");
		else if (slash == path)
			path[1] = '\0'; /* "/" */
		else
			*slash = '\0';
	}
}

int fedrun_pipeline_validate(json_t *pipeline, const struct fedrun_run_opts *opts,
			     struct fedrun_registry *reg)
{
	struct run r;
	int rc = run_setup(&r, pipeline, opts, reg, false);
	if (rc == 0)
		rc = dir_writable(r.cfg.dir); /* what the run would find first */
	/* The init file is read as the run reads it: a malformed one, or one
	 * that does not fit the model, is refused here too. */
	if (rc == 0 && r.cfg.init && !opts->resume) {
		if (!(r.theta = fedrun_arena_alloc(r.layout->total)))
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory for %" PRIu64 " parameters",
					  r.layout->total);
		else
			rc = init_load(&r, r.cfg.init);
	}
	run_teardown(&r);
	return rc;
}

static int fresh_dir(struct run *r, bool check_only)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/pipeline.json", r->cfg.dir);
	if (access(path, F_OK) == 0 && !r->cfg.overwrite)
		return fedrun_error(FEDRUN_EIO,
				    "%s already holds a run: continue it with --resume, or set "
				    "output.overwrite to true, or choose another output.dir", r->cfg.dir);
	/* Outputs of a run whose pipeline.json is gone are not overwritten
	 * unasked either. */
	for (size_t i = 0; !r->cfg.overwrite && i < sizeof run_files / sizeof *run_files; i++) {
		snprintf(path, sizeof path, "%s/%s", r->cfg.dir, run_files[i]);
		if (access(path, F_OK) == 0)
			return fedrun_error(FEDRUN_EIO,
					    "%s holds a run's %s but no pipeline.json: set "
					    "output.overwrite to true to replace it, or choose another "
					    "output.dir",
					    r->cfg.dir, run_files[i]);
	}
	if (check_only)
		return dir_writable(r->cfg.dir);
	int rc = fedrun_mkdir_p(r->cfg.dir);
	if (rc < 0 || !r->cfg.overwrite)
		return rc;
	clear_run(r);
	return 0;
}

/* Removes a run's outputs (metrics, log, final and fine-tuned models, the
 * table, checkpoints) from its directory: stale ones must not be resumed
 * or read later. The pipeline and the plugins' files stay. */
static void clear_run(struct run *r)
{
	char path[4096];
	for (size_t i = 0; i < 5; i++) { /* the files of run_files */
		snprintf(path, sizeof path, "%s/%s", r->cfg.dir, run_files[i]);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/finetuned", r->cfg.dir);
	DIR *d = opendir(path);
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "client-", 7) == 0 && len > 12 &&
		    strcmp(e->d_name + len - 12, ".safetensors") == 0) {
			snprintf(path, sizeof path, "%s/finetuned/%s", r->cfg.dir, e->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
	if (cstore_clear(r->cfg.dir) < 0) /* the clients' kept state */
		r->host.log(r, FEDRUN_LOG_WARN, "%s", fedrun_error_message());
	uint32_t rd;
	char *ck;
	while (checkpoint_latest(r->cfg.dir, &rd, &ck) == 0) {
		int gone = unlink(ck) == 0;
		free(ck);
		if (!gone)
			break;
	}
	fedrun_error_clear();
}

/* Checks the run directory before the plugins are created: a fresh run
 * must not overwrite another, a resumed run needs one. Nothing is created
 * yet (host->run_dir creates the directory when a plugin asks for it). */
static int prepare_dir_early(struct run *r)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/pipeline.json", r->cfg.dir);
	if (r->opts->resume)
		return access(path, R_OK) != 0
			       ? fedrun_error(FEDRUN_ENOENT, "cannot resume: %s holds no run (no pipeline.json)",
					      r->cfg.dir)
			       : 0;
	return fresh_dir(r, true);
}

/* Readies the run directory: a resumed run's must hold the same run, a
 * fresh run's is created (an overwritten run's outputs removed). */
static int prepare_dir(struct run *r, bool fresh)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/pipeline.json", r->cfg.dir);
	int rc = r->opts->resume ? same_pipeline(r, path) : fresh_dir(r, false);
	if (rc == 0 && r->opts->resume && fresh)
		clear_run(r); /* what a run stopped before its first checkpoint left */
	return rc;
}

/* Records the resolved pipeline (as the plugins left it) in the run
 * directory, on resume too ("rounds" may have been extended, the directory
 * moved). A resumed run records it only once its checkpoint is read and its
 * metrics cut, so that a signal before leaves the directory as it was. The
 * temporary files of writes a killed run left go then: nothing else
 * removes them, and a checkpoint's is as big as the checkpoint. */
static int record_pipeline(struct run *r)
{
	run_remove_stale_tmp(r);
	char path[4096];
	snprintf(path, sizeof path, "%s/pipeline.json", r->cfg.dir);
	char *text = json_dumps(r->pipeline, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!text)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	size_t n = strlen(text);
	text[n] = '\n'; /* replaces the NUL: n + 1 bytes are written */
	int rc = fedrun_write_file_atomic(path, text, n + 1);
	free(text);
	return rc;
}

/* Where --resume starts: *ckpt gets the newest checkpoint (new string) and
 * *round its round; a run that stopped before its first checkpoint starts
 * again from round 0 (*fresh, with a notice). Returns 1 when the run is
 * complete (final.safetensors of `rounds` rounds, written after everything
 * else, and the after-round outputs there: nothing to do; it says so), 0 to
 * go on, or an error. */
static int resume_point(struct run *r, uint32_t *round, char **ckpt, bool *fresh)
{
	char final[4096];
	snprintf(final, sizeof final, "%s/final.safetensors", r->cfg.dir);
	int rc = checkpoint_latest(r->cfg.dir, round, ckpt);
	if (rc == FEDRUN_ENOENT && access(final, F_OK) != 0) {
		fedrun_error_clear();
		*fresh = true;
		r->host.log(r, FEDRUN_LOG_WARN,
			    "%s has no checkpoint (the run stopped before its first): starting it "
			    "again from round 0",
			    r->cfg.dir);
		return 0;
	}
	if (rc < 0 && rc != FEDRUN_ENOENT)
		return rc;
	/* The final model's round (fedrun.round), when there is one. */
	uint32_t done = 0;
	bool complete = false;
	struct fedrun_st_file f;
	if (access(final, F_OK) == 0) {
		if ((rc = fedrun_st_read(&f, final)) < 0)
			return fedrun_error_wrap(rc, "cannot resume: ");
		rc = fedrun_st_checksum_kind(&f) == FEDRUN_ST_CHECKSUM_FULL
			     ? checkpoint_round(&f, final, &done)
			     : fedrun_error(FEDRUN_EFORMAT,
					    "%s: no checksum over its header and data", final);
		fedrun_st_fini(&f);
		if (rc < 0)
			return fedrun_error_wrap(rc, "cannot resume: ");
		complete = true;
	}
	fedrun_error_clear(); /* no checkpoint, but the final model */
	uint32_t at = complete && done > (*ckpt ? *round : 0) ? done : *round;
	if (at > (uint32_t)r->cfg.rounds)
		return fedrun_error(FEDRUN_ECONFIG,
				    "cannot resume: the run in %s is at round %u already, past rounds "
				    "%" PRId64 "; set rounds to more than %u to extend it",
				    r->cfg.dir, at, r->cfg.rounds, at);
	/* (A run whose fine-tuned models or table are gone redoes them.) */
	if (complete && done == (uint32_t)r->cfg.rounds && run_after_done(r)) {
		free(*ckpt);
		*ckpt = NULL;
		r->host.log(r, FEDRUN_LOG_WARN,
			    "the run in %s is complete (%u rounds): nothing to do; set rounds to more "
			    "than %u to extend it",
			    r->cfg.dir, done, done);
		return 1;
	}
	if (!*ckpt)
		return fedrun_error(FEDRUN_ENOENT,
				    "cannot resume: %s holds the model of round %u but no checkpoint to "
				    "extend it from",
				    r->cfg.dir, done);
	return 0;
}

/* Whether SIGINT or SIGTERM came (opts->interrupt). */
static bool interrupted(const struct run *r)
{
	return r->opts->interrupt && *r->opts->interrupt;
}

/* The error of a run stopped by a signal before its first round. Starting
 * and resuming a run of many clients take long (reading the checkpoint,
 * cutting the metrics back to its round, evaluating round 0), so a signal
 * stops them at once instead of after the first round. `prepared`: the run
 * directory records the run (record_pipeline); until then a resumed
 * run's directory is as it was, and a fresh run is not a run to resume. */
static int stopped_early(const struct run *r, bool prepared, bool fresh)
{
	if (!prepared && !r->opts->resume)
		return fedrun_error(FEDRUN_EINTERRUPTED,
				    "interrupted while starting, before %s recorded the run: run it "
				    "again",
				    r->cfg.dir);
	if (!fresh)
		return fedrun_error(FEDRUN_EINTERRUPTED,
				    "interrupted while resuming, before its first round: the run "
				    "directory is as it was; continue with --resume and the same "
				    "arguments (its --set options, output.dir among them)");
	return fedrun_error(FEDRUN_EINTERRUPTED,
			    "interrupted before round 1, with no checkpoint written: --resume starts "
			    "the run in %s again from round 0",
			    r->cfg.dir);
}

/* A worker rank of a distributed run (dist.h): trains the clients rank 0
 * gives it until rank 0 stops the run; rank 0 reports every failure. */
static int run_worker(struct run *r)
{
	int rc = run_workers_create(r);
	rc = dist_start(r, NULL, rc);
	if (rc == 0)
		rc = dist_serve(r);
	return rc == DIST_QUIT ? 0 : rc;
}

int fedrun_pipeline_run(json_t *pipeline, const struct fedrun_run_opts *opts,
			struct fedrun_registry *reg)
{
	struct run r;
	char *ckpt = NULL; /* --resume: the checkpoint to start from */
#ifdef _OPENMP
	/* The models' kernels take the OpenMP threads of the thread that calls
	 * them (plugins/models/device.h): --threads here, threads/workers on
	 * the workers of run_parallel_for. */
	int omp_saved = omp_get_max_threads();
	omp_set_num_threads(opts->threads ? (int)opts->threads : 1);
#endif
	int rc = run_setup(&r, pipeline, opts, reg, true);
	if ((rc = dist_agree(&r, rc)) != 0) {
		if (rc == DIST_QUIT)
			rc = 0; /* rank 0 says why */
		goto out;
	}
	r.optim_floats = fedrun_optim_state_floats(&r.cfg.optim, r.layout->total);
	r.theta = fedrun_arena_alloc(r.layout->total);
	if (!r.theta) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory for %" PRIu64 " parameters",
				  r.layout->total);
		goto out;
	}
	if (r.priv_ops && r.priv_ops->size >= offsetof(struct fedrun_privacy_ops, apply_server) + sizeof(void *) &&
	    r.priv_ops->apply_server) {
		r.server_prev = fedrun_arena_alloc(r.layout->total);
		r.server_delta = fedrun_arena_alloc(r.layout->total);
		if (!r.server_prev || !r.server_delta) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto out;
		}
	}
	if (run_push(&r)) {
		r.theta_init = fedrun_arena_alloc(r.layout->total);
		r.theta_last = fedrun_arena_alloc(r.layout->total);
		if (!r.theta_init || !r.theta_last) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto out;
		}
	}
	/* OpenBLAS gives other bits with other thread counts for some shapes:
	 * matrix products run on one thread each, and parallelism comes from
	 * clients and from fedrun's own (deterministic) loops. */
	if (fedrun_backend_cpu_set_blas_threads(1) < 0)
		fedrun_error_clear(); /* another CBLAS: its own threading */
	if (dist_rank(&r) > 0) {
		/* its clients' state in its own directory */
		if ((rc = cstore_init(&r)) == 0)
			rc = run_worker(&r);
		goto out;
	}
	/* --resume: from the newest checkpoint; from round 0 when the run
	 * stopped before its first one; nothing to do when it is complete. */
	bool fresh = !opts->resume;
	if (opts->resume) {
		uint32_t rd;
		if ((rc = resume_point(&r, &rd, &ckpt, &fresh)) != 0) {
			if (rc > 0) { /* complete */
				rc = 0;
				dist_stop(&r, 0);
			}
			goto out;
		}
		if (ckpt) {
			const char *base = strrchr(ckpt, '/');
			run_status(&r, "resuming from round %u (checkpoints/%s)", rd, base ? base + 1 : ckpt);
		}
	}
	if (interrupted(&r)) {
		rc = stopped_early(&r, false, fresh);
		goto out;
	}
	/* init is read before the run directory records the pipeline: a file
	 * that does not fit leaves no run behind, so the corrected command
	 * runs without output.overwrite (and an init inside the directory an
	 * overwriting run clears is read before it goes). */
	if (fresh && r.cfg.init)
		run_status(&r, "reading the initial model from %s", r.cfg.init);
	if (fresh && r.cfg.init && (rc = init_load(&r, r.cfg.init)) < 0)
		goto out;
	if (interrupted(&r)) {
		rc = stopped_early(&r, false, fresh);
		goto out;
	}
	if ((rc = prepare_dir(&r, fresh)) < 0 || (!ckpt && (rc = record_pipeline(&r)) < 0))
		goto out;
	run_status(&r, "starting %u worker thread%s for %u clients (%u a round)", opts->threads,
		   opts->threads == 1 ? "" : "s", r.num_clients, run_clients_per_round(&r));
	if ((rc = run_workers_create(&r)) < 0 || (rc = cstore_init(&r)) < 0)
		goto out;
	if (ckpt) {
		rc = checkpoint_load(&r, ckpt);
		if (rc == 0 && interrupted(&r))
			rc = FEDRUN_EINTERRUPTED;
		if (rc == 0)
			rc = metrics_truncate(r.cfg.dir, r.round, &r.wall_base, opts->interrupt);
		/* The summary's first loss is the whole run's: before round 1. */
		if (rc == 0 && !isnan(r.first_loss = metrics_round0_loss(r.cfg.dir,
									  r.cfg.eval_split)))
			r.first_loss_round = 0;
		if (rc == FEDRUN_EINTERRUPTED)
			rc = stopped_early(&r, false, false);
		if (rc == 0)
			rc = record_pipeline(&r);
		if (rc < 0)
			goto out;
	} else if (!r.cfg.init) {
		rc = r.model_ops->init_params(r.model.state, (uint64_t)r.cfg.seed, r.theta);
		if (rc < 0) {
			fedrun_error_wrap(rc, "model '%s': initialisation: ", r.model.desc->name);
			goto out;
		}
	}
	if (run_push(&r) && fresh) {
		memcpy(r.theta_init, r.theta, r.layout->total * sizeof(float));
		memcpy(r.theta_last, r.theta, r.layout->total * sizeof(float));
	}
	if ((rc = metrics_open(&r)) < 0 || (rc = dist_start(&r, ckpt, 0)) < 0)
		goto out;
	r.host.log(&r, FEDRUN_LOG_INFO, "fedrun %s: %s, %u clients, %" PRIu64 " parameters in %u tensors, %u threads%s",
		   PACKAGE_VERSION, r.cfg.name, r.num_clients, fedrun_layout_numel(r.layout), r.layout->n,
		   opts->threads, opts->resume ? ", resumed" : "");
	if (fresh && r.cfg.eval_every > 0) {
		/* Round 0: the initial model, as a baseline. */
		run_status(&r, "evaluating the initial model on %s (round 0)",
			   run_split_name(r.cfg.eval_split));
		if ((rc = evaluate_all(&r, (enum fedrun_split)r.cfg.eval_split)) < 0 ||
		    (rc = metrics_flush_round(&r, 0)) < 0)
			goto out;
	}
	if (fresh && interrupted(&r)) {
		rc = stopped_early(&r, true, true);
		goto out;
	}
	uint32_t first = r.round + 1;
	r.first_round = first;
	for (uint32_t round = first; round <= (uint32_t)r.cfg.rounds; round++) {
		const double t = run_now();
		if ((rc = run_round(&r, round)) < 0)
			goto out;
		/* A signal to any rank stops the whole job here: a preempted
		 * node's SIGTERM saves the run as one to rank 0 does. */
		bool here = opts->interrupt && *opts->interrupt;
		uint32_t there = dist_interrupted_rank(&r);
		bool stop = here || there != UINT32_MAX;
		if ((r.cfg.ckpt_every > 0 && round % r.cfg.ckpt_every == 0) || stop) {
			/* What the other ranks' clients keep goes in too. */
			rc = dist_gather_state(&r);
			if (rc == 0)
				rc = checkpoint_write(&r);
			dist_gather_done(&r);
			if (rc < 0)
				goto out;
		}
		run_progress(&r, run_now() - t);
		if (stop && round < r.cfg.rounds) {
			char who[48] = "";
			if (!here)
				snprintf(who, sizeof who, " (a signal to rank %u)", there);
			rc = fedrun_error(FEDRUN_EINTERRUPTED,
					  "interrupted%s after round %u; a checkpoint is in %s/checkpoints: "
					  "continue with --resume and the same arguments (its --set "
					  "options, output.dir among them)",
					  who, round, r.cfg.dir);
			goto out;
		}
	}
	dist_stop(&r, 0); /* what remains is rank 0's */
	if (r.cfg.final_test) {
		run_status(&r, "final evaluation on test");
		if ((rc = evaluate_all(&r, FEDRUN_SPLIT_TEST)) < 0 ||
		    (rc = metrics_flush_round(&r, r.round)) < 0)
			goto out;
	}
	/* final.safetensors last: its presence says the run is complete
	 * (resume_point), the after-round phases included. */
	rc = run_after(&r);
	if (rc == 0)
		rc = run_experts(&r);
	if (rc == 0) {
		run_status(&r, "writing %s/final.safetensors", r.cfg.dir);
		rc = final_write(&r);
	}
	if (rc == 0) {
		r.host.log(&r, FEDRUN_LOG_INFO, "finished after round %u: %s/final.safetensors", r.round,
			   r.cfg.dir);
		/* The results print with --quiet too: it hides stderr's lines. */
		printf("%s: %u rounds", r.cfg.name, r.round);
		/* (no last loss: a resumed run that had no round left) */
		const bool losses = !isnan(r.first_loss) && !isnan(r.last_loss);
		if (losses && r.first_loss_round > 0)
			/* resumed, and its metrics lack round 0's loss: the first
			 * loss this process saw, named as such */
			printf(" (resumed at round %u), %s loss %.6g (round %u) -> %.6g",
			       r.first_round - 1, run_split_name(r.cfg.eval_split), r.first_loss,
			       r.first_loss_round, r.last_loss);
		else if (losses)
			printf(", %s loss %.6g -> %.6g", run_split_name(r.cfg.eval_split), r.first_loss,
			       r.last_loss);
		if (!isnan(r.test_loss))
			printf(", test loss %.6g", r.test_loss);
		printf("; model in %s/final.safetensors\n", r.cfg.dir);
	}
out:
	run_progress_break(&r);
	if (dist_rank(&r) == 0)
		dist_stop(&r, rc);
	if (rc < 0 && r.log)
		fprintf(r.log, "error: %s\n", fedrun_error_message());
	/* A run that failed or was interrupted while its plugins were made
	 * leaves no empty directory behind (host_run_dir made it for them);
	 * rmdir leaves one that holds anything. */
	if (rc < 0 && r.run_dir_made && r.run_dir == r.cfg.dir) {
		/* partition.tsv and .svg, which the model plugins write at
		 * create, go with it (fedrun(1), FILES) */
		char path[4096];
		snprintf(path, sizeof path, "%s/partition.tsv", r.cfg.dir);
		(void)unlink(path);
		snprintf(path, sizeof path, "%s/partition.svg", r.cfg.dir);
		(void)unlink(path);
		(void)rmdir(r.cfg.dir);
	}
	free(ckpt);
	run_teardown(&r);
#ifdef _OPENMP
	omp_set_num_threads(omp_saved);
#endif
	return rc;
}
