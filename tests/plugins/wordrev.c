/* SPDX-License-Identifier: Apache-2.0 */
/* Test-only model "wordrev": a few parameters, quadratic clients (client k
 * pulls every parameter towards k + 1), and a translate op that reverses the
 * order of the words of each sentence, so that translating twice gives the
 * input back. Built twice: as ABI 1.1 (with translate and client_name), and
 * with -DABI10 as an ABI 1.0 plugin whose ops table ends at loss_grad (and is
 * followed by a poisoned pointer that the host must never read). */
#include <stdbool.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>

#ifndef ABI10
#define ABI10 0
#endif

struct wordrev {
	int64_t dim, clients;
	bool inf_train, inf_eval; /* report an infinite loss (engine tests) */
	struct fedrun_layout layout;
	char names[8][16];
};

struct mcfg {
	int64_t dim;
	json_t *decode;
	bool marker;
	const char *marker_file;
	bool inf_train, inf_eval;
};

static const struct fedrun_opt model_spec[] = {
	{"dim", FEDRUN_OPT_INT, offsetof(struct mcfg, dim), 0, 1, 1024, 4, NULL, NULL},
	{"decode", FEDRUN_OPT_OBJECT, offsetof(struct mcfg, decode), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL},
	{"marker", FEDRUN_OPT_BOOL, offsetof(struct mcfg, marker), 0, 0, 0, 0, NULL, NULL},
	{"marker_file", FEDRUN_OPT_STRING, offsetof(struct mcfg, marker_file), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL},
	{"inf_train_loss", FEDRUN_OPT_BOOL, offsetof(struct mcfg, inf_train), 0, 0, 0, 0, NULL, NULL},
	{"inf_eval_loss", FEDRUN_OPT_BOOL, offsetof(struct mcfg, inf_eval), 0, 0, 0, 0, NULL, NULL},
	FEDRUN_OPT_END_,
};

struct dcfg {
	int64_t clients;
};

static const struct fedrun_opt data_spec[] = {
	{"clients", FEDRUN_OPT_INT, offsetof(struct dcfg, clients), 0, 1, 8, 2, NULL, NULL},
	FEDRUN_OPT_END_,
};

static void wr_destroy(void *model)
{
	struct wordrev *m = model;
	if (!m)
		return;
	fedrun_layout_fini(&m->layout);
	free(m);
}

static int wr_create(const struct fedrun_host *host, json_t *model_config, json_t *data_config,
		     void **out)
{
	struct mcfg mc;
	struct dcfg dc = {0};
	int rc = fedrun_opts_parse(model_spec, model_config, "model", &mc);
	if (rc == 0 && data_config)
		rc = fedrun_opts_parse(data_spec, data_config, "data", &dc);
	if (rc < 0)
		return rc;
	/* "marker": as a tokenizer would, write a file into the run directory
	 * and record its path in the model section; later (fedrun translate)
	 * the recorded file must be readable. */
	if (mc.marker && mc.marker_file) {
		FILE *fp = fopen(mc.marker_file, "r");
		if (!fp)
			return fedrun_error(FEDRUN_ENOENT, "model.marker_file: cannot open '%s'", mc.marker_file);
		fclose(fp);
	} else if (mc.marker && host->size >= offsetof(struct fedrun_host, run_dir) + sizeof(void *) &&
		   host->run_dir(host->ctx)) {
		char path[4096];
		snprintf(path, sizeof path, "%s/marker.txt", host->run_dir(host->ctx));
		FILE *fp = fopen(path, "w");
		if (!fp || fputs("marker\n", fp) < 0 || fclose(fp) != 0)
			return fedrun_error(FEDRUN_EIO, "%s: cannot write", path);
		json_object_set_new(model_config, "marker_file", json_string(path));
	}
	struct wordrev *m = calloc(1, sizeof *m);
	if (!m)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	m->dim = mc.dim;
	m->inf_train = mc.inf_train;
	m->inf_eval = mc.inf_eval;
	m->clients = data_config ? dc.clients : 0;
	for (int64_t k = 0; k < m->clients; k++)
		snprintf(m->names[k], sizeof m->names[k], "dom%c", (char)('a' + k));
	fedrun_layout_init(&m->layout);
	uint64_t shape[1] = {(uint64_t)m->dim};
	if ((rc = fedrun_layout_add(&m->layout, "w", 1, shape)) < 0) {
		wr_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

static const struct fedrun_layout *wr_layout(void *model)
{
	return &((struct wordrev *)model)->layout;
}

static int wr_init(void *model, uint64_t seed, float *params)
{
	struct wordrev *m = model;
	for (int64_t i = 0; i < m->dim; i++)
		params[i] = 0;
	return 0;
}

static uint32_t wr_num_clients(void *model)
{
	return (uint32_t)((struct wordrev *)model)->clients;
}

static uint64_t wr_client_size(void *model, uint32_t client)
{
	return 10;
}

/* f_k(w) = mean_i (w_i − (k + 1))². */
static double loss_of(const struct wordrev *m, uint32_t k, const float *w, float *grad)
{
	double f = 0;
	for (int64_t i = 0; i < m->dim; i++) {
		double r = (double)w[i] - (k + 1);
		f += r * r / (double)m->dim;
		if (grad)
			grad[i] = (float)(2 * r / (double)m->dim);
	}
	return f;
}

static int wr_train(void *model, void *worker, const struct fedrun_train_args *a, float *params,
		    struct fedrun_train_stats *stats)
{
	struct wordrev *m = model;
	float *g = malloc((size_t)m->dim * sizeof *g);
	if (!g)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	uint64_t steps = a->steps ? a->steps : a->epochs;
	double sum = 0;
	for (uint64_t s = 0; s < steps; s++) {
		sum += loss_of(m, a->client, params, g);
		fedrun_optim_step(a->optim, a->optim->lr, (uint64_t)m->dim, params, g, a->optim_state,
				  a->optim_step);
	}
	free(g);
	stats->loss = m->inf_train ? INFINITY : steps ? sum / (double)steps : 0;
	stats->samples = steps;
	return 0;
}

static int wr_evaluate(void *model, void *worker, const float *params, enum fedrun_split split,
		       int64_t client, struct fedrun_eval *out)
{
	struct wordrev *m = model;
	double f = 0;
	if (client == FEDRUN_ALL_CLIENTS) {
		for (int64_t k = 0; k < m->clients; k++)
			f += loss_of(m, (uint32_t)k, params, NULL) / (double)m->clients;
	} else {
		f = loss_of(m, (uint32_t)client, params, NULL);
	}
	out->n = 2;
	snprintf(out->m[0].name, sizeof out->m[0].name, "loss");
	out->m[0].value = m->inf_eval ? INFINITY : f;
	snprintf(out->m[1].name, sizeof out->m[1].name, "w0");
	out->m[1].value = params[0];
	return 0;
}

#if !ABI10
static int wr_translate(void *model, void *worker, const float *params,
			const struct fedrun_decode_opts *opts, const char *const *src, uint32_t n,
			char **out)
{
	for (uint32_t i = 0; i < n; i++) {
		size_t len = strlen(src[i]);
		char *copy = strdup(src[i]), *o = malloc(len + 1);
		if (!copy || !o) {
			free(copy);
			free(o);
			for (uint32_t j = 0; j < i; j++) {
				free(out[j]);
				out[j] = NULL;
			}
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		/* Words (split on spaces) in reverse order, one space apart. */
		size_t pos = 0;
		char *words[256];
		int nw = 0;
		for (char *save, *t = strtok_r(copy, " ", &save); t && nw < 256; t = strtok_r(NULL, " ", &save))
			words[nw++] = t;
		for (int w = nw - 1; w >= 0; w--) {
			size_t wl = strlen(words[w]);
			if (pos)
				o[pos++] = ' ';
			memcpy(o + pos, words[w], wl);
			pos += wl;
		}
		o[pos] = 0;
		free(copy);
		out[i] = o;
	}
	return 0;
}

static const char *wr_client_name(void *model, uint32_t client)
{
	struct wordrev *m = model;
	return client < m->clients ? m->names[client] : NULL;
}

static const struct fedrun_model_ops wr_ops = {
	.size = sizeof(struct fedrun_model_ops),
	.create = wr_create, .destroy = wr_destroy, .layout = wr_layout, .init_params = wr_init,
	.num_clients = wr_num_clients, .client_size = wr_client_size, .train = wr_train,
	.evaluate = wr_evaluate, .translate = wr_translate, .client_name = wr_client_name};
static const struct fedrun_plugin desc =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_MODEL, "wordrev", "1.0", "test: reverses words", &wr_ops);
#else
/* An ABI 1.0 table as such a plugin was built, then garbage: the host must
 * not take the garbage for the 1.1 translate op. */
#define M(name_) __typeof__(((struct fedrun_model_ops *)0)->name_) name_
static const struct {
	struct {
		uint32_t size;
		M(create); M(destroy); M(layout); M(init_params); M(num_clients);
		M(client_size); M(worker_create); M(worker_destroy); M(train);
		M(evaluate); M(loss_grad);
	} v10;
	const void *poison;
} wr_ops = {
	.v10 = {.size = offsetof(struct fedrun_model_ops, translate), .create = wr_create,
		.destroy = wr_destroy, .layout = wr_layout, .init_params = wr_init,
		.num_clients = wr_num_clients, .client_size = wr_client_size, .train = wr_train,
		.evaluate = wr_evaluate},
	.poison = "not a function"};
static const struct fedrun_plugin desc = {
	.abi_major = 1, .abi_minor = 0, .size = sizeof desc, .kind = FEDRUN_KIND_MODEL,
	.name = "wordrev10", .version = "1.0", .summary = "test: ABI 1.0 model", .ops = &wr_ops};
#endif

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
