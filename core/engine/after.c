/* SPDX-License-Identifier: Apache-2.0 */
/* After the last round: the per-client fine-tuning phase and the
 * model-by-domain evaluation table (the domain experts come after them,
 * expert.c).
 *
 * Fine-tuning follows Passban et al. 2022 ("Training Mixed-Domain
 * Translation Models via Federated Learning"), section 5 and Table 4 (rows
 * with superscript c): each chosen client continues training the final
 * server model on its own training data alone, with no communication, no
 * selector and no privacy, and keeps the result as its own model.
 *
 * The table (their Tables 2 and 4): every model (the server's and each
 * fine-tuned client's) evaluated on every client's split, written to the
 * metrics with a "model" field, to RUN/eval_matrix.tsv, and printed. */
#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine.h"

const char *run_client_name(struct run *r, uint32_t k, char *buf, size_t len)
{
	if (FEDRUN_MODEL_HAS(r->model_ops, client_name)) {
		const char *n = r->model_ops->client_name(r->model.state, k);
		if (n && *n)
			return n;
	}
	snprintf(buf, len, "client%u", k);
	return buf;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int64_t run_client_by_name(struct run *r, const char *want)
{
	char buf[32], def[32];
	for (uint32_t c = 0; c < r->num_clients; c++) {
		snprintf(def, sizeof def, "client%u", c);
		if (strcmp(run_client_name(r, c, buf, sizeof buf), want) == 0 || strcmp(def, want) == 0)
			return c;
	}
	return -1;
}

int run_clients_resolve(struct run *r, json_t *sel, const char *what, uint32_t **list,
			uint32_t *count)
{
	size_t n = json_is_array(sel) ? json_array_size(sel) : r->ntrainable;
	if (!(*list = malloc((n ? n : 1) * sizeof **list)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (!json_is_array(sel)) {
		memcpy(*list, r->trainable, n * sizeof **list);
		*count = (uint32_t)n;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(sel, i);
		int64_t k = -1;
		char buf[32];
		if (json_is_integer(e)) {
			k = json_integer_value(e);
			if (k >= r->num_clients)
				return fedrun_error(FEDRUN_ECONFIG,
						    "%s.clients[%zu]: no client %" PRId64 " (the data has %u clients)",
						    what, i, k, r->num_clients);
		} else {
			const char *want = json_string_value(e);
			k = run_client_by_name(r, want);
			if (k < 0) {
				char names[512];
				size_t pos = 0;
				names[0] = 0;
				for (uint32_t c = 0; c < r->num_clients && pos < sizeof names - 8; c++)
					pos += (size_t)snprintf(names + pos, sizeof names - pos, "%s%s",
								c ? ", " : "", run_client_name(r, c, buf, sizeof buf));
				return fedrun_error(FEDRUN_ECONFIG, "%s.clients[%zu]: no client named \"%s\" (the clients are: %s)",
						    what, i, want, names);
			}
		}
		if (r->model_ops->client_size(r->model.state, (uint32_t)k) == 0)
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.clients[%zu]: client %" PRId64 " (%s) has no training data to %s on",
					    what, i, k, run_client_name(r, (uint32_t)k, buf, sizeof buf),
					    strcmp(what, "finetune") == 0 ? "fine-tune" : "train");
		(*list)[i] = (uint32_t)k;
	}
	qsort(*list, n, sizeof **list, cmp_u32);
	uint32_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (m == 0 || (*list)[m - 1] != (*list)[i])
			(*list)[m++] = (*list)[i];
	*count = m;
	return 0;
}

/* finetune.clients -> r->ft_list (run_clients_resolve). */
int run_finetune_clients(struct run *r)
{
	if (!r->cfg.finetune)
		return 0;
	return run_clients_resolve(r, r->cfg.ft_clients, "finetune", &r->ft_list, &r->nft);
}

int run_client_model_write(struct run *r, const char *sub, const char *phase, uint32_t c,
			   const float *params, const char *extra_name, const float *extra,
			   uint64_t extra_n)
{
	char path[4096], num[32], key[64], buf[32];
	snprintf(path, sizeof path, "%s/%s/client-%u.safetensors", r->cfg.dir, sub, c);
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	int rc = fedrun_st_meta_set(&f, "fedrun.model", r->model.desc->name);
	snprintf(num, sizeof num, "%u", r->round);
	if (rc == 0)
		rc = fedrun_st_meta_set(&f, "fedrun.round", num);
	snprintf(num, sizeof num, "%u", c);
	snprintf(key, sizeof key, "fedrun.%s.client", phase);
	if (rc == 0)
		rc = fedrun_st_meta_set(&f, key, num);
	snprintf(key, sizeof key, "fedrun.%s.name", phase);
	if (rc == 0)
		rc = fedrun_st_meta_set(&f, key, run_client_name(r, c, buf, sizeof buf));
	if (rc == 0)
		rc = fedrun_st_add_layout(&f, r->layout, params);
	if (rc == 0 && extra_name)
		rc = fedrun_st_add(&f, extra_name, FEDRUN_F32, 1, &extra_n, extra);
	if (rc == 0)
		rc = fedrun_st_write(&f, path);
	fedrun_st_fini(&f);
	return rc;
}

struct after {
	float **ft_params; /* nft arenas */
	struct fedrun_eval *res; /* (1 + nft) x num_clients */
	int *status;             /* 0, or 1 when the client has no such split */
};

static int finetune_client(struct run *r, struct worker *w, uint32_t i, void *p)
{
	struct after *a = p;
	uint32_t c = r->ft_list[i];
	const struct fedrun_layout *l = r->layout;
	float *params = a->ft_params[i];
	memcpy(params, r->theta, l->total * sizeof(float));
	uint64_t nopt = fedrun_optim_state_floats(&r->cfg.ft_optim, l->total), step = 0;
	float *optim = NULL;
	if (nopt && !(optim = fedrun_arena_alloc(nopt)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for client %u's optimizer state", c);
	if (optim)
		memset(optim, 0, nopt * sizeof *optim);
	/* "Round" rounds + 1: its own shuffling stream, after the last round. */
	struct fedrun_train_args args = {
		.size = sizeof args, .round = (uint32_t)r->cfg.rounds + 1, .client = c,
		.seed = (uint64_t)r->cfg.seed, .epochs = (uint32_t)r->cfg.ft_epochs,
		.steps = (uint64_t)r->cfg.ft_steps, .batch = (uint32_t)r->cfg.ft_batch,
		.optim = &r->cfg.ft_optim, .optim_state = optim, .optim_step = &step,
		.prox_mu = 0, .prox_anchor = NULL,
		/* fine-tuning continues the run's schedule (a fresh optimizer) */
		.sched_step = r->cfg.lr_clock == LR_CLOCK_GLOBAL ? r->global_step : 0};
	struct fedrun_train_stats stats = {0};
	int rc = r->model_ops->train(r->model.state, w->model_worker, &args, params, &stats);
	fedrun_arena_free(optim);
	if (rc < 0)
		return fedrun_error_wrap(rc, "finetune: client %u: training: ", c);
	for (uint32_t t = 0; t < l->n; t++)
		if (!fedrun_vec_finite(l->t[t].numel, params + l->t[t].offset, NULL))
			return fedrun_error(FEDRUN_ENUMERIC,
					    "finetune: client %u: training produced non-finite values in tensor '%s' "
					    "(try a smaller finetune.optimizer.lr)", c, l->t[t].name);
	char buf[32];
	rc = run_event_model(r, c, FEDRUN_SPLIT_TRAIN, "finetune.train_loss",
			     run_client_name(r, c, buf, sizeof buf), stats.loss);
	if (rc < 0)
		return rc;
	/* RUN/finetuned/client-K.safetensors: the tensors of final.safetensors. */
	return run_client_model_write(r, "finetuned", "finetune", c, params, NULL, NULL, 0);
}

static int matrix_cell(struct run *r, struct worker *w, uint32_t i, void *p)
{
	struct after *a = p;
	uint32_t model = i / r->num_clients, c = i % r->num_clients;
	const float *params = model == 0 ? r->theta : a->ft_params[model - 1];
	int rc = r->model_ops->evaluate(r->model.state, w->model_worker, params,
					(enum fedrun_split)r->cfg.matrix_split, c, &a->res[i]);
	if (rc == FEDRUN_ENOENT) {
		fedrun_error_clear();
		a->status[i] = 1;
		a->res[i].n = 0;
		return 0;
	}
	if (rc < 0) {
		char buf[32];
		return fedrun_error_wrap(rc, "eval.matrix: model %s on client %u: ",
					 model == 0 ? "server" : run_client_name(r, r->ft_list[model - 1], buf, sizeof buf), c);
	}
	if (a->res[i].n > FEDRUN_METRICS_MAX)
		a->res[i].n = FEDRUN_METRICS_MAX;
	return 0;
}

static const char *model_name(struct run *r, uint32_t model, char *buf, size_t len)
{
	return model == 0 ? "server" : run_client_name(r, r->ft_list[model - 1], buf, len);
}

/* Table cells: the value of `metric` in one evaluation, NAN when absent. */
static double cell(const struct fedrun_eval *e, const char *metric)
{
	for (uint32_t i = 0; i < e->n; i++)
		if (strcmp(e->m[i].name, metric) == 0)
			return e->m[i].value;
	return NAN;
}

static void put_name(FILE *fp, const char *s)
{
	for (; *s; s++)
		fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, fp);
}

/* One metric's table: rows models, columns domains and their mean over the
 * domains that have the split. tsv: tab-separated, else aligned text. */
static void table(struct run *r, const struct after *a, uint32_t nmodels, const char *metric,
		  FILE *fp, bool tsv)
{
	char buf[32];
	int wname = 6, wcol = 10;
	for (uint32_t m = 0; m < nmodels; m++) {
		int n = (int)strlen(model_name(r, m, buf, sizeof buf));
		if (n > wname)
			wname = n;
	}
	for (uint32_t c = 0; c < r->num_clients; c++) {
		int n = (int)strlen(run_client_name(r, c, buf, sizeof buf));
		if (n + 1 > wcol)
			wcol = n + 1;
	}
	if (tsv)
		fprintf(fp, "# %s on %s\nmodel", metric, run_split_name(r->cfg.matrix_split));
	else
		fprintf(fp, "%s on %s (rows: models, columns: domains)\n%-*s", metric,
			run_split_name(r->cfg.matrix_split), wname, "model");
	for (uint32_t c = 0; c < r->num_clients; c++) {
		if (tsv) {
			fputc('\t', fp);
			put_name(fp, run_client_name(r, c, buf, sizeof buf));
		} else {
			fprintf(fp, " %*s", wcol, run_client_name(r, c, buf, sizeof buf));
		}
	}
	fprintf(fp, tsv ? "\tmean\n" : " %*s\n", wcol, "mean");
	for (uint32_t m = 0; m < nmodels; m++) {
		if (tsv)
			put_name(fp, model_name(r, m, buf, sizeof buf));
		else
			fprintf(fp, "%-*s", wname, model_name(r, m, buf, sizeof buf));
		double sum = 0;
		uint32_t cnt = 0;
		for (uint32_t c = 0; c < r->num_clients; c++) {
			double v = cell(&a->res[(size_t)m * r->num_clients + c], metric);
			if (isfinite(v)) {
				sum += v;
				cnt++;
			}
			if (tsv) {
				if (isnan(v))
					fputs("\t-", fp);
				else
					fprintf(fp, "\t%.6g", v);
			} else {
				if (isnan(v))
					fprintf(fp, " %*s", wcol, "-");
				else
					fprintf(fp, " %*.4g", wcol, v);
			}
		}
		double mean = cnt ? sum / cnt : NAN;
		if (tsv)
			isnan(mean) ? fputs("\t-\n", fp) : fprintf(fp, "\t%.6g\n", mean);
		else
			isnan(mean) ? fprintf(fp, " %*s\n", wcol, "-") : fprintf(fp, " %*.4g\n", wcol, mean);
	}
}

static int matrix(struct run *r, struct after *a)
{
	uint32_t nmodels = 1 + r->nft, K = r->num_clients;
	size_t cells = (size_t)nmodels * K;
	a->res = calloc(cells, sizeof *a->res);
	a->status = calloc(cells, sizeof *a->status);
	if (!a->res || !a->status)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	run_status(r, "model-by-domain table: %u models on %u clients' %s", nmodels, K,
		   run_split_name(r->cfg.matrix_split));
	int rc = run_parallel_for(r, (uint32_t)cells, matrix_cell, a);
	if (rc < 0)
		return rc;
	/* Metric names in order of first appearance. */
	const char *names[4 * FEDRUN_METRICS_MAX];
	uint32_t nnames = 0;
	char buf[32];
	for (size_t i = 0; i < cells; i++) {
		const struct fedrun_eval *e = &a->res[i];
		for (uint32_t j = 0; j < e->n; j++) {
			uint32_t q = 0;
			while (q < nnames && strcmp(names[q], e->m[j].name) != 0)
				q++;
			if (q == nnames && nnames < sizeof names / sizeof *names)
				names[nnames++] = e->m[j].name;
			rc = run_event_model(r, (int64_t)(i % K), r->cfg.matrix_split, e->m[j].name,
					     model_name(r, (uint32_t)(i / K), buf, sizeof buf), e->m[j].value);
			if (rc < 0)
				return rc;
		}
	}
	if (nnames == 0)
		return fedrun_error(FEDRUN_ENOENT, "eval.matrix: no client has a %s split",
				    run_split_name(r->cfg.matrix_split));
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (!mem)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t q = 0; q < nnames; q++) {
		if (q)
			fputc('\n', mem);
		table(r, a, nmodels, names[q], mem, true);
	}
	fclose(mem);
	char path[4096];
	snprintf(path, sizeof path, "%s/eval_matrix.tsv", r->cfg.dir);
	rc = fedrun_write_file_atomic(path, text, len);
	free(text);
	if (rc < 0)
		return rc;
	/* The main metric: BLEU when the model reports it, else the first one
	 * (by convention the loss); with --quiet too (a result). */
	const char *main_metric = names[0];
	for (uint32_t q = 0; q < nnames; q++)
		if (strcmp(names[q], "bleu") == 0)
			main_metric = names[q];
	table(r, a, nmodels, main_metric, stdout, false);
	fflush(stdout);
	return 0;
}

bool run_after_done(const struct run *r)
{
	char path[4096];
	for (uint32_t i = 0; r->cfg.finetune && i < r->nft; i++) {
		snprintf(path, sizeof path, "%s/finetuned/client-%u.safetensors", r->cfg.dir,
			 r->ft_list[i]);
		if (access(path, F_OK) != 0)
			return false;
	}
	for (uint32_t i = 0; r->cfg.expert && i < r->nex; i++) {
		snprintf(path, sizeof path, "%s/experts/client-%u.safetensors", r->cfg.dir,
			 r->ex_list[i]);
		if (access(path, F_OK) != 0)
			return false;
	}
	snprintf(path, sizeof path, "%s/eval_matrix.tsv", r->cfg.dir);
	return !r->cfg.eval_matrix || access(path, F_OK) == 0;
}

int run_after(struct run *r)
{
	if (!r->cfg.finetune && !r->cfg.eval_matrix)
		return 0;
	struct after a = {0};
	int rc = 0;
	if (r->cfg.finetune && r->nft > 0) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/finetuned", r->cfg.dir);
		if ((rc = fedrun_mkdir_p(dir)) < 0)
			return rc;
		if (!(a.ft_params = calloc(r->nft, sizeof *a.ft_params)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		for (uint32_t i = 0; i < r->nft && rc == 0; i++)
			if (!(a.ft_params[i] = fedrun_arena_alloc(r->layout->total)))
				rc = fedrun_error(FEDRUN_ENOMEM, "out of memory for fine-tuned models");
		if (rc == 0) {
			run_status(r, "fine-tuning %u clients from the final model", r->nft);
			r->metric_prefix = "finetune.";
			rc = run_parallel_for(r, r->nft, finetune_client, &a);
			r->metric_prefix = NULL;
		}
	}
	if (rc == 0 && r->cfg.eval_matrix)
		rc = matrix(r, &a);
	if (rc == 0)
		rc = metrics_flush_round(r, r->round);
	if (a.ft_params)
		for (uint32_t i = 0; i < r->nft; i++)
			fedrun_arena_free(a.ft_params[i]);
	free(a.ft_params);
	free(a.res);
	free(a.status);
	return rc;
}
