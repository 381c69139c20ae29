/* SPDX-License-Identifier: Apache-2.0 */
/* meanest: the test problems of the MeritFed paper (Tupitsa et al. 2024;
 * Gorbunov 2024 slides). Problem "gaussian": client k holds samples
 * ξ ~ N(μ_k, I) in d dimensions and minimises E||x − ξ||² by SGD. Problem
 * "quadratic": f_k(x) = ||x − a_k||² with a_k = μ_k (the toy problem).
 * Clients come in groups sharing μ. Samples are not stored: sample j of
 * client k is drawn from the stream (seed, FEDRUN_RNG_DATA, j, k) whenever it
 * is needed, so memory does not grow with the number of clients. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>

enum { PROBLEM_GAUSSIAN, PROBLEM_QUADRATIC };

/* Streams of held-out samples start at these sample indices. */
#define VALID_BASE UINT32_C(0x80000000)
#define TEST_BASE UINT32_C(0xC0000000)

struct group {
	uint32_t first, count; /* clients [first, first + count) */
	char *name;            /* NULL: the host's default names */
	char **names;          /* count client names ("name" or "name<i>") */
	float *mean;           /* d */
	double std;
	int64_t samples, valid_samples;
};

struct meanest {
	const struct fedrun_host *host;
	int problem;
	int64_t dim;
	double init;
	uint64_t data_seed;
	struct group *groups;
	uint32_t ngroups, nclients;
	struct fedrun_layout layout;
};

struct meanest_cfg {
	int problem;
	int64_t dim;
	double init;
	json_t *tensors;
};

static const struct fedrun_opt model_spec[] = {
	{"problem", FEDRUN_OPT_CHOICE, offsetof(struct meanest_cfg, problem), 0, 0, 0, 0, "gaussian",
	 "gaussian|quadratic"},
	{"dim", FEDRUN_OPT_INT, offsetof(struct meanest_cfg, dim), 0, 1, 1e7, 1, NULL, NULL},
	{"init", FEDRUN_OPT_NUMBER, offsetof(struct meanest_cfg, init), 0, -1e30, 1e30, 0, NULL, NULL},
	{"tensors", FEDRUN_OPT_ARRAY, offsetof(struct meanest_cfg, tensors), FEDRUN_OPT_OPTIONAL, 0, 0,
	 0, NULL, NULL},
	FEDRUN_OPT_END_,
};

struct data_cfg {
	json_t *groups;
	int64_t seed;
};

static const struct fedrun_opt data_spec[] = {
	{"groups", FEDRUN_OPT_ARRAY, offsetof(struct data_cfg, groups), FEDRUN_OPT_REQUIRED, 0, 0, 0,
	 NULL, NULL},
	{"seed", FEDRUN_OPT_INT, offsetof(struct data_cfg, seed), FEDRUN_OPT_OPTIONAL, 0,
	 9007199254740991.0, 0, NULL, NULL},
	FEDRUN_OPT_END_,
};

struct group_cfg {
	int64_t clients, samples, valid_samples;
	const char *name;
	json_t *mean;
	double std;
};

static const struct fedrun_opt group_spec[] = {
	{"clients", FEDRUN_OPT_INT, offsetof(struct group_cfg, clients), FEDRUN_OPT_REQUIRED, 1, 1e8,
	 0, NULL, NULL},
	{"mean", FEDRUN_OPT_ANY, offsetof(struct group_cfg, mean), FEDRUN_OPT_REQUIRED, 0, 0, 0, NULL,
	 NULL},
	{"std", FEDRUN_OPT_NUMBER, offsetof(struct group_cfg, std), 0, 0, 1e6, 1.0, NULL, NULL},
	/* Training shuffles a 4-byte index a sample on each worker: 1e7. */
	{"samples", FEDRUN_OPT_INT, offsetof(struct group_cfg, samples), 0, 0, 1e7, 1000, NULL, NULL},
	{"name", FEDRUN_OPT_STRING, offsetof(struct group_cfg, name), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,
	 NULL},
	{"valid_samples", FEDRUN_OPT_INT, offsetof(struct group_cfg, valid_samples), 0, 0, 1e9, 100,
	 NULL, NULL},
	FEDRUN_OPT_END_,
};

static void meanest_destroy(void *model)
{
	struct meanest *m = model;
	if (!m)
		return;
	for (uint32_t g = 0; g < m->ngroups; g++) {
		free(m->groups[g].mean);
		if (m->groups[g].names)
			for (uint32_t i = 0; i < m->groups[g].count; i++)
				free(m->groups[g].names[i]);
		free(m->groups[g].names);
	}
	free(m->groups);
	fedrun_layout_fini(&m->layout);
	free(m);
}

/* The largest |μ| entry: model.init's range, so that x, ξ and x − ξ stay
 * finite floats (1e300 became inf, and round 0 failed on an infinite loss
 * that validate had passed). */
#define MEAN_MAX 1e30

static int parse_mean(json_t *v, int64_t dim, float *out, const char *path)
{
	char got[64];
	if (json_is_number(v)) {
		double x = json_number_value(v);
		if (!(fabs(x) <= MEAN_MAX))
			return fedrun_error(FEDRUN_ECONFIG, "%s.mean: %g is outside [-%g, %g]", path, x,
					    MEAN_MAX, MEAN_MAX);
		for (int64_t i = 0; i < dim; i++)
			out[i] = (float)x;
		return 0;
	}
	if (json_is_array(v) && (int64_t)json_array_size(v) == dim) {
		for (int64_t i = 0; i < dim; i++) {
			json_t *e = json_array_get(v, (size_t)i);
			if (!json_is_number(e))
				return fedrun_error(FEDRUN_ECONFIG, "%s.mean[%lld]: expected a number, got %s",
						    path, (long long)i, fedrun_json_describe(e, got, sizeof got));
			double x = json_number_value(e);
			if (!(fabs(x) <= MEAN_MAX))
				return fedrun_error(FEDRUN_ECONFIG,
						    "%s.mean[%lld]: %g is outside [-%g, %g]", path,
						    (long long)i, x, MEAN_MAX, MEAN_MAX);
			out[i] = (float)x;
		}
		return 0;
	}
	return fedrun_error(FEDRUN_ECONFIG, "%s.mean: expected a number or an array of %lld numbers (model.dim), got %s",
			    path, (long long)dim, fedrun_json_describe(v, got, sizeof got));
}

/* The layout: x as one tensor "x", or cut into the named tensors of
 * model.tensors (so that selectors that work per tensor and per name prefix
 * have something to choose from). All pieces but the last hold a multiple of
 * FEDRUN_TENSOR_ALIGN floats, so the arena holds x without gaps and the
 * problem code keeps working on one vector of dim floats. */
static int meanest_layout_build(struct fedrun_layout *l, json_t *config, json_t *names,
				int64_t dim)
{
	char got[64];
	if (!names) {
		json_t *def = json_pack("[s]", "x");
		if (!def || json_object_set_new(config, "tensors", def) < 0)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		names = def;
	}
	size_t k = json_array_size(names);
	if (k == 0)
		return fedrun_error(FEDRUN_ECONFIG, "model.tensors: expected at least one tensor name");
	for (size_t i = 0; i < k; i++) {
		json_t *e = json_array_get(names, i);
		if (!json_is_string(e) || json_string_length(e) == 0 ||
		    json_string_length(e) >= FEDRUN_NAME_MAX)
			return fedrun_error(FEDRUN_ECONFIG,
					    "model.tensors[%zu]: expected a non-empty name shorter than %d bytes, got %s",
					    i, FEDRUN_NAME_MAX, fedrun_json_describe(e, got, sizeof got));
		for (size_t j = 0; j < i; j++)
			if (strcmp(json_string_value(e), json_string_value(json_array_get(names, j))) == 0)
				return fedrun_error(FEDRUN_ECONFIG, "model.tensors[%zu]: \"%s\" repeats model.tensors[%zu]",
						    i, json_string_value(e), j);
	}
	int64_t piece = dim / (int64_t)k / FEDRUN_TENSOR_ALIGN * FEDRUN_TENSOR_ALIGN;
	if (piece < FEDRUN_TENSOR_ALIGN)
		piece = FEDRUN_TENSOR_ALIGN;
	if (k > 1 && (int64_t)(k - 1) * piece >= dim)
		return fedrun_error(FEDRUN_ECONFIG, "model.tensors: %zu tensors need model.dim > %lld, got %lld",
				    k, (long long)(k - 1) * piece, (long long)dim);
	for (size_t i = 0; i < k; i++) {
		uint64_t shape[1] = {(uint64_t)(i + 1 < k ? piece : dim - (int64_t)(k - 1) * piece)};
		int rc = fedrun_layout_add(l, json_string_value(json_array_get(names, i)), 1, shape);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int meanest_create(const struct fedrun_host *host, json_t *model_config, json_t *data_config,
			  void **out)
{
	struct meanest_cfg mc;
	struct data_cfg dc = {0};
	int rc = fedrun_opts_parse(model_spec, model_config, "model", &mc);
	if (rc < 0)
		return rc;
	if (!data_config)
		return fedrun_error(FEDRUN_ECONFIG, "data: required section is missing (meanest needs data.groups)");
	if ((rc = fedrun_opts_parse(data_spec, data_config, "data", &dc)) < 0)
		return rc;
	size_t ng = json_array_size(dc.groups);
	if (ng == 0)
		return fedrun_error(FEDRUN_ECONFIG, "data.groups: expected at least one group");
	struct meanest *m = calloc(1, sizeof *m);
	if (!m || !(m->groups = calloc(ng, sizeof *m->groups))) {
		free(m);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	m->host = host;
	m->problem = mc.problem;
	m->dim = mc.dim;
	m->init = mc.init;
	/* data.seed fixes the data apart from the run's seed, so that runs
	 * with different seeds can share one dataset. */
	m->data_seed = json_object_get(data_config, "seed") ? (uint64_t)dc.seed : host->seed(host->ctx);
	m->ngroups = (uint32_t)ng;
	fedrun_layout_init(&m->layout);
	uint64_t total = 0;
	for (size_t g = 0; g < ng; g++) {
		char path[64];
		snprintf(path, sizeof path, "data.groups[%zu]", g);
		struct group_cfg gc;
		struct group *gr = &m->groups[g];
		json_t *gj = json_array_get(dc.groups, g);
		if ((rc = fedrun_opts_parse(group_spec, gj, path, &gc)) < 0)
			goto fail;
		if (!(gr->mean = malloc((size_t)mc.dim * sizeof *gr->mean))) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto fail;
		}
		if ((rc = parse_mean(gc.mean, mc.dim, gr->mean, path)) < 0)
			goto fail;
		gr->first = (uint32_t)total;
		gr->count = (uint32_t)gc.clients;
		if (gc.samples == 0 && m->problem == PROBLEM_QUADRATIC) {
			rc = fedrun_error(FEDRUN_ECONFIG, "%s.samples: 0 (evaluation-only clients) needs problem \"gaussian\"", path);
			goto fail;
		}
		if (gc.name) {
			/* Client names: "name" for a group of one, else "name<i>". */
			if (!(gr->names = calloc(gr->count, sizeof *gr->names))) {
				rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
				goto fail;
			}
			for (uint32_t i = 0; i < gr->count; i++) {
				size_t len = strlen(gc.name) + 16;
				if (!(gr->names[i] = malloc(len))) {
					rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
					goto fail;
				}
				if (gr->count == 1)
					snprintf(gr->names[i], len, "%s", gc.name);
				else
					snprintf(gr->names[i], len, "%s%u", gc.name, i);
			}
		}
		gr->std = gc.std;
		gr->samples = m->problem == PROBLEM_QUADRATIC ? 1 : gc.samples;
		gr->valid_samples = gc.valid_samples;
		total += (uint64_t)gc.clients;
		if (total > UINT32_MAX / 2) {
			rc = fedrun_error(FEDRUN_ECONFIG, "%s.clients: too many clients in all", path);
			goto fail;
		}
	}
	m->nclients = (uint32_t)total;
	if ((rc = meanest_layout_build(&m->layout, model_config, mc.tensors, mc.dim)) < 0)
		goto fail;
	*out = m;
	return 0;
fail:
	meanest_destroy(m);
	return rc;
}

static const struct fedrun_layout *meanest_layout(void *model)
{
	return &((struct meanest *)model)->layout;
}

static int meanest_init(void *model, uint64_t seed, float *params)
{
	struct meanest *m = model;
	for (int64_t i = 0; i < m->dim; i++)
		params[i] = (float)m->init;
	return 0;
}

static uint32_t meanest_num_clients(void *model)
{
	return ((struct meanest *)model)->nclients;
}

static const struct group *group_of(const struct meanest *m, uint32_t client)
{
	for (uint32_t g = 0; g < m->ngroups; g++)
		if (client < m->groups[g].first + m->groups[g].count)
			return &m->groups[g];
	return NULL;
}

static uint64_t meanest_client_size(void *model, uint32_t client)
{
	const struct group *g = group_of(model, client);
	return g ? (uint64_t)g->samples : 0;
}

/* Sample j of client k into xi (d floats). */
static void sample(const struct meanest *m, const struct group *g, uint32_t client, uint32_t j,
		   float *xi)
{
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, m->data_seed, FEDRUN_RNG_DATA, j, client);
	for (int64_t i = 0; i < m->dim; i++)
		xi[i] = g->mean[i] + (float)(g->std * fedrun_rng_normal(&rng));
}

/* Mean loss ||x − ξ||² and gradient 2(x − mean ξ) over samples
 * [base, base + count) (gaussian), or f and ∇f of the quadratic. */
static double loss_grad_range(const struct meanest *m, const struct group *g, uint32_t client,
			      const uint32_t *idx, uint64_t count, uint32_t base, const float *x,
			      float *grad, float *xi)
{
	int64_t d = m->dim;
	if (m->problem == PROBLEM_QUADRATIC) {
		double f = 0;
		for (int64_t i = 0; i < d; i++) {
			double r = (double)x[i] - g->mean[i];
			f += r * r;
			if (grad)
				grad[i] = (float)(2 * r);
		}
		return f;
	}
	double f = 0;
	if (grad)
		memset(grad, 0, (size_t)d * sizeof *grad);
	for (uint64_t s = 0; s < count; s++) {
		sample(m, g, client, base + (idx ? idx[s] : (uint32_t)s), xi);
		for (int64_t i = 0; i < d; i++) {
			double r = (double)x[i] - xi[i];
			f += r * r;
			if (grad)
				grad[i] += (float)(2 * r / (double)count);
		}
	}
	return f / (double)count;
}

static int meanest_train(void *model, void *worker, const struct fedrun_train_args *a,
			 float *params, struct fedrun_train_stats *stats)
{
	struct meanest *m = model;
	const struct group *g = group_of(m, a->client);
	if (!g)
		return fedrun_error(FEDRUN_EINVAL, "no client %u", a->client);
	if (g->samples == 0)
		return fedrun_error(FEDRUN_EINVAL, "client %u has no training samples (evaluation only)",
				    a->client);
	uint64_t n = (uint64_t)g->samples, batch = a->batch < n ? a->batch : n;
	uint64_t per_epoch = (n + batch - 1) / batch;
	uint64_t steps = a->steps ? a->steps : a->epochs * per_epoch;
	float *grad = malloc((size_t)m->dim * 2 * sizeof *grad);
	uint32_t *order = malloc(n * sizeof *order);
	if (!grad || !order) {
		free(grad);
		free(order);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, a->seed, FEDRUN_RNG_SHUFFLE, a->round, a->client);
	double loss_sum = 0;
	for (uint64_t s = 0; s < steps; s++) {
		uint64_t pos = s % per_epoch;
		if (pos == 0) { /* a new epoch: reshuffle */
			for (uint64_t i = 0; i < n; i++)
				order[i] = (uint32_t)i;
			fedrun_rng_shuffle_u32(&rng, order, n);
		}
		uint64_t lo = pos * batch, cnt = lo + batch <= n ? batch : n - lo;
		loss_sum += loss_grad_range(m, g, a->client, order + lo, cnt, 0, params, grad,
					    grad + m->dim);
		fedrun_prox_grad(a, (uint64_t)m->dim, params, grad);
		fedrun_optim_step(a->optim, a->optim->lr, (uint64_t)m->dim, params, grad,
				  a->optim_state, a->optim_step);
	}
	stats->loss = steps ? loss_sum / (double)steps : 0;
	stats->samples = steps * batch;
	free(grad);
	free(order);
	return 0;
}

/* Held-out loss of one client: the quadratic exactly; for gaussian, the
 * empirical mean over its held-out samples (train: its training samples). */
static int client_loss(const struct meanest *m, uint32_t client, enum fedrun_split split,
		       const float *x, float *grad, double *loss)
{
	const struct group *g = group_of(m, client);
	if (!g)
		return fedrun_error(FEDRUN_EINVAL, "no client %u", client);
	uint64_t count = split == FEDRUN_SPLIT_TRAIN ? (uint64_t)g->samples : (uint64_t)g->valid_samples;
	uint32_t base = split == FEDRUN_SPLIT_TRAIN ? 0 : split == FEDRUN_SPLIT_VALID ? VALID_BASE : TEST_BASE;
	if (m->problem == PROBLEM_GAUSSIAN && count == 0)
		return FEDRUN_ENOENT;
	float *xi = malloc((size_t)m->dim * sizeof *xi);
	if (!xi)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	*loss = loss_grad_range(m, g, client, NULL, count, base, x, grad, xi);
	free(xi);
	return 0;
}

static double dist2(const struct meanest *m, const struct group *g, const float *x)
{
	double s = 0;
	for (int64_t i = 0; i < m->dim; i++)
		s += ((double)x[i] - g->mean[i]) * ((double)x[i] - g->mean[i]);
	return s;
}

static void put(struct fedrun_eval *out, const char *name, double v)
{
	if (out->n >= FEDRUN_METRICS_MAX)
		return;
	snprintf(out->m[out->n].name, sizeof out->m[out->n].name, "%s", name);
	out->m[out->n++].value = v;
}

static int meanest_evaluate(void *model, void *worker, const float *x, enum fedrun_split split,
			    int64_t client, struct fedrun_eval *out)
{
	struct meanest *m = model;
	out->n = 0;
	if (client == FEDRUN_ALL_CLIENTS) {
		/* The global objective in closed form: the mean over clients of
		 * E||x − ξ||² = ||x − μ_k||² + d·std² (std = 0 for quadratic). */
		double f = 0;
		for (uint32_t gi = 0; gi < m->ngroups; gi++) {
			const struct group *g = &m->groups[gi];
			double noise = m->problem == PROBLEM_GAUSSIAN ? (double)m->dim * g->std * g->std : 0;
			f += (dist2(m, g, x) + noise) * g->count;
		}
		put(out, "loss", f / m->nclients);
		put(out, "err_group0", dist2(m, &m->groups[0], x));
		put(out, "x0", x[0]);
		return 0;
	}
	double loss;
	int rc = client_loss(m, (uint32_t)client, split, x, NULL, &loss);
	if (rc < 0)
		return rc;
	put(out, "loss", loss);
	put(out, "err", dist2(m, group_of(m, (uint32_t)client), x));
	return 0;
}

static int meanest_loss_grad(void *model, void *worker, const float *params, enum fedrun_split split,
			     int64_t client, float *grad, double *loss)
{
	struct meanest *m = model;
	if (client == FEDRUN_ALL_CLIENTS)
		return fedrun_error(FEDRUN_EUNSUPPORTED, "meanest: loss_grad needs one client");
	if (client < 0 || client >= m->nclients)
		return fedrun_error(FEDRUN_EINVAL, "meanest: no client %lld", (long long)client);
	return client_loss(m, (uint32_t)client, split, params, grad, loss);
}

static const char *meanest_client_name(void *model, uint32_t client)
{
	const struct group *g = group_of(model, client);
	return g && g->names ? g->names[client - g->first] : NULL;
}

static const struct fedrun_model_ops meanest_ops = {
	.size = sizeof(struct fedrun_model_ops),
	.create = meanest_create,
	.destroy = meanest_destroy,
	.layout = meanest_layout,
	.init_params = meanest_init,
	.num_clients = meanest_num_clients,
	.client_size = meanest_client_size,
	.train = meanest_train,
	.evaluate = meanest_evaluate,
	.loss_grad = meanest_loss_grad,
	.client_name = meanest_client_name,
};

static const struct fedrun_plugin meanest_plugin = FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_MODEL, "meanest", "1.0.0",
	"mean estimation and quadratics: the MeritFed test problems", &meanest_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &meanest_plugin : NULL;
}
