/* SPDX-License-Identifier: Apache-2.0 */
/* gru-lm: options, presets, the parameter layout and initialisation, and the
 * plugin descriptor. The network itself is in net.c, the training and
 * evaluation loops in train.c; fedrun-models(7) documents every option. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gru_lm.h"

enum { PRESET_SMALL, PRESET_MEDIUM, PRESET_LARGE };

/* The three scales of the FedAtt paper (sec. IV-B and IV-G): embedding and
 * hidden sizes 300, 650 and 1500. The paper gives no dropout; these are the
 * rates Zaremba et al. (2014) used for 650 and 1500 units, and PyTorch's
 * word_language_model default for the small one. */
static const struct {
	int64_t size;
	double dropout;
} presets[] = {{300, 0.2}, {650, 0.5}, {1500, 0.65}};

struct model_cfg {
	int preset;
	int64_t embed, hidden, layers, bptt, eval_batch, eval_groups;
	double dropout, init_range;
	bool tied, speed_metric;
	const char *backend;
	int64_t device;
	bool deterministic;
	int precision;
};

static const struct fedrun_opt model_spec[] = {
    {"preset", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, preset), 0, 0, 0, 0, "small",
     "small|medium|large"},
    {"embed", FEDRUN_OPT_INT, offsetof(struct model_cfg, embed), FEDRUN_OPT_OPTIONAL, 1, 16384, 0,
     NULL, NULL},
    {"hidden", FEDRUN_OPT_INT, offsetof(struct model_cfg, hidden), FEDRUN_OPT_OPTIONAL, 1, 16384, 0,
     NULL, NULL},
    {"layers", FEDRUN_OPT_INT, offsetof(struct model_cfg, layers), 0, 1, GRU_LM_MAX_LAYERS, 1, NULL,
     NULL},
    {"dropout", FEDRUN_OPT_NUMBER, offsetof(struct model_cfg, dropout),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_MAX_OPEN, 0, 1, 0, NULL, NULL},
    {"tied", FEDRUN_OPT_BOOL, offsetof(struct model_cfg, tied), 0, 0, 0, 1, NULL, NULL},
    {"bptt", FEDRUN_OPT_INT, offsetof(struct model_cfg, bptt), 0, 1, 10000, 35, NULL, NULL},
    {"eval_batch", FEDRUN_OPT_INT, offsetof(struct model_cfg, eval_batch), 0, 1, 100000, 10, NULL,
     NULL},
    {"eval_groups", FEDRUN_OPT_INT, offsetof(struct model_cfg, eval_groups), 0, 1,
     GRU_LM_MAX_GROUPS, 2, NULL, NULL},
    {"init_range", FEDRUN_OPT_NUMBER, offsetof(struct model_cfg, init_range), FEDRUN_OPT_MIN_OPEN,
     0, 10, 0.1, NULL, NULL},
    {"speed_metric", FEDRUN_OPT_BOOL, offsetof(struct model_cfg, speed_metric), 0, 0, 0, 1, NULL,
     NULL},
    {"backend", FEDRUN_OPT_STRING, offsetof(struct model_cfg, backend), 0, 0, 0, 0, "cpu", NULL},
    {"device", FEDRUN_OPT_INT, offsetof(struct model_cfg, device), 0, 0, 1023, 0, NULL, NULL},
    {"deterministic", FEDRUN_OPT_BOOL, offsetof(struct model_cfg, deterministic), 0, 0, 0, 1, NULL,
     NULL},
    {"precision", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, precision), 0, 0, 0, 0, "fp32",
     MDEV_PRECISIONS},
    FEDRUN_OPT_END_,
};

/* Fills the options the pipeline left out from the preset and writes them
 * back, so that the run's resolved pipeline shows the sizes it used. */
static int apply_preset(json_t *config, struct model_cfg *c)
{
	int rc = 0;
	if (c->embed < 0) {
		c->embed = presets[c->preset].size;
		rc |= json_object_set_new(config, "embed", json_integer(c->embed));
	}
	if (c->hidden < 0) {
		c->hidden = presets[c->preset].size;
		rc |= json_object_set_new(config, "hidden", json_integer(c->hidden));
	}
	if (isnan(c->dropout)) {
		c->dropout = presets[c->preset].dropout;
		rc |= json_object_set_new(config, "dropout", json_real(c->dropout));
	}
	return rc ? fedrun_error(FEDRUN_ENOMEM, "out of memory") : 0;
}

static void gru_lm_destroy(void *model)
{
	struct gru_lm *m = model;
	if (!m)
		return;
	fedrun_textdata_destroy(m->td);
	fedrun_vocab_destroy(m->own_vocab);
	free(m->vocab_path);
	pthread_mutex_destroy(&m->vocab_lock);
	fedrun_layout_fini(&m->layout);
	free(m->train_tokens);
	free(m->backend);
	free(m);
}

static int add_tensor(struct gru_lm *m, const char *name, uint64_t rows, uint64_t cols,
		      uint64_t *off)
{
	uint64_t shape[2] = {rows, cols};
	int rc = fedrun_layout_add(&m->layout, name, cols ? 2 : 1, shape);
	if (rc < 0)
		return rc;
	*off = m->layout.t[m->layout.n - 1].offset;
	return 0;
}

/* Tensor names follow PyTorch's word_language_model where it has one
 * (encoder -> embedding), with one name per GRU matrix so that selectors
 * and FedAtt see each separately. */
static int build_layout(struct gru_lm *m)
{
	int rc = add_tensor(m, "embedding.weight", m->V, m->D, &m->off_emb);
	for (uint32_t l = 0; l < m->L && rc == 0; l++) {
		uint64_t in = l ? m->H : m->D, *o = m->off_gru[l];
		char name[64];
		snprintf(name, sizeof name, "gru.%u.w_ih", l);
		rc = add_tensor(m, name, 3 * (uint64_t)m->H, in, &o[0]);
		snprintf(name, sizeof name, "gru.%u.w_hh", l);
		if (rc == 0)
			rc = add_tensor(m, name, 3 * (uint64_t)m->H, m->H, &o[1]);
		snprintf(name, sizeof name, "gru.%u.b_ih", l);
		if (rc == 0)
			rc = add_tensor(m, name, 3 * (uint64_t)m->H, 0, &o[2]);
		snprintf(name, sizeof name, "gru.%u.b_hh", l);
		if (rc == 0)
			rc = add_tensor(m, name, 3 * (uint64_t)m->H, 0, &o[3]);
	}
	if (rc == 0 && !m->tied)
		rc = add_tensor(m, "decoder.weight", m->V, m->H, &m->off_dec_w);
	if (rc == 0 && m->tied)
		m->off_dec_w = m->off_emb;
	if (rc == 0)
		rc = add_tensor(m, "decoder.bias", m->V, 0, &m->off_dec_b);
	return rc;
}

static int gru_lm_create(const struct fedrun_host *host, json_t *model_config, json_t *data_config,
			 void **out)
{
	struct model_cfg c = {.embed = -1, .hidden = -1, .dropout = NAN};
	int rc = fedrun_opts_parse(model_spec, model_config, "model", &c);
	if (rc < 0)
		return rc;
	if ((rc = apply_preset(model_config, &c)) < 0)
		return rc;
	/* The FedAtt paper (sec. IV-G): "In the tied setting, the dimension
	 * of the RNN hidden state must be the same as the embedding
	 * dimension." No projection is added: the decoder is the embedding. */
	if (c.tied && c.embed != c.hidden)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tied: the decoder shares the embedding, so embed (%lld) "
				    "must equal hidden (%lld); set \"tied\": false for other sizes",
				    (long long)c.embed, (long long)c.hidden);
	/* No data: fedrun score or sample, which name the run to read. */
	if (!data_config && !gru_lm_run_dir(host))
		return fedrun_error(FEDRUN_ECONFIG, "data: required section is missing (gru-lm "
						    "reads text: data.train or data.clients)");
	const struct fedrun_backend_ops *be = NULL;
	if ((rc = mdev_backend_open(c.backend, (int32_t)c.device, c.deterministic,
				    (uint32_t)c.precision, &be)) < 0)
		return rc;
	struct gru_lm *m = calloc(1, sizeof *m);
	if (!m)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	fedrun_layout_init(&m->layout);
	pthread_mutex_init(&m->vocab_lock, NULL);
	m->host = host;
	m->be = be;
	m->device = (int32_t)c.device;
	m->deterministic = c.deterministic;
	m->precision = (uint32_t)c.precision;
	m->report_xfer = strcmp(c.backend, "cpu") != 0;
	if (!(m->backend = strdup(c.backend))) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	m->D = (uint32_t)c.embed;
	m->H = (uint32_t)c.hidden;
	m->L = (uint32_t)c.layers;
	m->bptt = (uint32_t)c.bptt;
	m->eval_batch = (uint32_t)c.eval_batch;
	m->eval_groups = (uint32_t)c.eval_groups;
	m->dropout = (float)c.dropout;
	m->tied = c.tied;
	m->init_range = c.init_range;
	m->speed_metric = c.speed_metric;
	if (data_config) {
		rc = fedrun_textdata_from_json(data_config, "data", host->seed(host->ctx), &m->td);
		if (rc == 0)
			rc = fedrun_text_opts_from_json(data_config, "data", &m->text);
		if (rc == 0)
			m->vocab = fedrun_textdata_vocab(m->td);
		/* Asked only now: the host makes the run directory when asked. */
		if (rc == 0 && gru_lm_run_dir(host))
			rc = gru_lm_check_vocab(m);
	} else {
		rc = gru_lm_read_run(m);
	}
	if (rc < 0)
		goto fail;
	uint32_t V = fedrun_vocab_size(m->vocab);
	if (V > INT32_MAX / 2) {
		rc = fedrun_error(FEDRUN_ECONFIG, "data.vocab: %u words is too many", V);
		goto fail;
	}
	m->V = V;
	if ((rc = build_layout(m)) < 0)
		goto fail;
	uint32_t K = m->td ? fedrun_textdata_num_clients(m->td) : 0;
	m->train_tokens = calloc(K ? K : 1, sizeof *m->train_tokens);
	if (!m->train_tokens) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	for (uint32_t k = 0; k < K; k++) {
		struct fedrun_stream s;
		if ((rc = fedrun_textdata_stream(m->td, FEDRUN_SPLIT_TRAIN, k, &s)) < 0)
			goto fail;
		m->train_tokens[k] = s.n_tokens;
	}
	/* Only with data: a model made from a run directory alone (fedrun
	 * score and sample) has none, and leaves the run's partition.tsv. */
	if (m->td && (rc = fedrun_textdata_partition_write(m->td, host)) < 0)
		goto fail;
	char prec[96];
	host->log(host->ctx, FEDRUN_LOG_INFO,
		  "gru-lm: vocabulary %u, embed %u, hidden %u, %u layer(s), %s, dropout %g, "
		  "%u clients, backend %s, precision %s",
		  m->V, m->D, m->H, m->L, m->tied ? "tied" : "untied", (double)m->dropout, K,
		  m->backend, mdev_precision_text(be, m->precision, prec, sizeof prec));
	*out = m;
	return 0;
fail:
	gru_lm_destroy(m);
	return rc;
}

static const struct fedrun_layout *gru_lm_layout(void *model)
{
	return &((struct gru_lm *)model)->layout;
}

static void fill_uniform(uint64_t seed, uint32_t tensor, double a, uint64_t n, float *p)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_INIT, 0, tensor);
	for (uint64_t i = 0; i < n; i++)
		p[i] = (float)(a * (2.0 * fedrun_rng_uniform(&r) - 1.0));
}

/* PyTorch's initialisation: the embedding (and an untied decoder) uniform
 * in ±init_range as word_language_model does, the decoder bias zero, every
 * GRU weight and bias uniform in ±1/sqrt(H) as nn.GRU does. Tensor i draws
 * from its own stream (seed, FEDRUN_RNG_INIT, 0, i). */
static int gru_lm_init(void *model, uint64_t seed, float *params)
{
	struct gru_lm *m = model;
	const struct fedrun_layout *l = &m->layout;
	const double k = 1.0 / sqrt((double)m->H);
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		float *p = params + t->offset;
		if (strncmp(t->name, "gru.", 4) == 0)
			fill_uniform(seed, i, k, t->numel, p);
		else if (strcmp(t->name, "decoder.bias") == 0)
			memset(p, 0, t->numel * sizeof *p);
		else
			fill_uniform(seed, i, m->init_range, t->numel, p);
	}
	return 0;
}

static uint32_t gru_lm_num_clients(void *model)
{
	struct gru_lm *m = model;
	return m->td ? fedrun_textdata_num_clients(m->td) : 0;
}

static uint64_t gru_lm_client_size(void *model, uint32_t client)
{
	struct gru_lm *m = model;
	return client < gru_lm_num_clients(m) ? m->train_tokens[client] : 0;
}

static const struct fedrun_model_ops gru_lm_ops = {
    .size = sizeof(struct fedrun_model_ops),
    .create = gru_lm_create,
    .destroy = gru_lm_destroy,
    .layout = gru_lm_layout,
    .init_params = gru_lm_init,
    .num_clients = gru_lm_num_clients,
    .client_size = gru_lm_client_size,
    .worker_create = gru_lm_worker_create,
    .worker_destroy = gru_lm_worker_destroy,
    .train = gru_lm_train,
    .evaluate = gru_lm_evaluate,
    .loss_grad = gru_lm_loss_grad,
    .score = gru_lm_score,
    .sample = gru_lm_sample,
    .samples_unit = "tokens", /* train.c counts the tokens predicted */
};

static const struct fedrun_plugin gru_lm_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_MODEL, "gru-lm", "1.0.0",
    "word-level GRU language model (FedAtt) trained by truncated BPTT", &gru_lm_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &gru_lm_plugin : NULL;
}
