/* SPDX-License-Identifier: Apache-2.0 */
/* The transformer model plugin: options and presets, the layout and
 * initialisation (net.c), and the plugin descriptor. Data in data.c,
 * batching in batch.c, the loops in train.c; fedrun-models(7) documents
 * every option. */
#include "config.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "transformer.h"

enum { PRESET_TINY, PRESET_SMALL, PRESET_BASE };

/* tiny: for tests; small: fits a 2-core CPU; base: Vaswani et al. 2017,
 * Table 3, row "base" (N = 6, d_model 512, d_ff 2048, h = 8). */
static const struct {
	int64_t enc, dec, dim, heads, ffn;
} presets[] = {
    {2, 2, 64, 4, 256},
    {3, 3, 256, 4, 1024},
    {6, 6, 512, 8, 2048},
};

struct model_cfg {
	int preset, tie, norm, lr_schedule, eval_bleu, bleu_tok, activation;
	int64_t enc, dec, dim, heads, ffn, max_len, eval_batch, warmup;
	double dropout, attn_dropout, relu_dropout, label_smoothing, warmup_init_lr;
	json_t *tokenizer, *decode, *bleu;
	const char *backend;
	int64_t device;
	bool deterministic;
	int precision;
};

static const struct fedrun_opt model_spec[] = {
    {"preset", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, preset), 0, 0, 0, 0, "small",
     "tiny|small|base"},
    {"encoder_layers", FEDRUN_OPT_INT, offsetof(struct model_cfg, enc), FEDRUN_OPT_OPTIONAL, 1, 64,
     0, NULL, NULL},
    {"decoder_layers", FEDRUN_OPT_INT, offsetof(struct model_cfg, dec), FEDRUN_OPT_OPTIONAL, 1, 64,
     0, NULL, NULL},
    {"dim", FEDRUN_OPT_INT, offsetof(struct model_cfg, dim), FEDRUN_OPT_OPTIONAL, 1, 16384, 0, NULL,
     NULL},
    {"heads", FEDRUN_OPT_INT, offsetof(struct model_cfg, heads), FEDRUN_OPT_OPTIONAL, 1, 1024, 0,
     NULL, NULL},
    {"ffn", FEDRUN_OPT_INT, offsetof(struct model_cfg, ffn), FEDRUN_OPT_OPTIONAL, 1, 65536, 0, NULL,
     NULL},
    {"dropout", FEDRUN_OPT_NUMBER, offsetof(struct model_cfg, dropout), FEDRUN_OPT_MAX_OPEN, 0, 1,
     0.1, NULL, NULL},
    {"attention_dropout", FEDRUN_OPT_NUMBER, offsetof(struct model_cfg, attn_dropout),
     FEDRUN_OPT_MAX_OPEN, 0, 1, 0.0, NULL, NULL},
    {"relu_dropout", FEDRUN_OPT_NUMBER, offsetof(struct model_cfg, relu_dropout),
     FEDRUN_OPT_MAX_OPEN, 0, 1, 0.0, NULL, NULL},
    {"label_smoothing", FEDRUN_OPT_NUMBER, offsetof(struct model_cfg, label_smoothing), 0, 0, 1,
     0.1, NULL, NULL},
    {"tie_embeddings", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, tie), 0, 0, 0, 0, "all",
     "none|decoder|all"},
    {"norm", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, norm), 0, 0, 0, 0, "post", "post|pre"},
    {"activation", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, activation), 0, 0, 0, 0, "relu",
     "relu|gelu"},
    {"max_len", FEDRUN_OPT_INT, offsetof(struct model_cfg, max_len), 0, 1, 100000, 256, NULL, NULL},
    {"eval_batch", FEDRUN_OPT_INT, offsetof(struct model_cfg, eval_batch), 0, 1, 1e9, 4096, NULL,
     NULL},
    {"lr_schedule", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, lr_schedule), 0, 0, 0, 0,
     "constant", "constant|inverse_sqrt|noam"},
    {"warmup", FEDRUN_OPT_INT, offsetof(struct model_cfg, warmup), 0, 0, 1e12, 4000, NULL, NULL},
    {"warmup_init_lr", FEDRUN_OPT_NUMBER, offsetof(struct model_cfg, warmup_init_lr), 0, 0, 1e6, 0,
     NULL, NULL},
    {"tokenizer", FEDRUN_OPT_OBJECT, offsetof(struct model_cfg, tokenizer), FEDRUN_OPT_OPTIONAL, 0,
     0, 0, NULL, NULL},
    {"decode", FEDRUN_OPT_OBJECT, offsetof(struct model_cfg, decode), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"bleu", FEDRUN_OPT_OBJECT, offsetof(struct model_cfg, bleu), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"eval_bleu", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, eval_bleu), 0, 0, 0, 0, "test",
     "test|all|none"},
    {"backend", FEDRUN_OPT_STRING, offsetof(struct model_cfg, backend), 0, 0, 0, 0, "cpu", NULL},
    {"device", FEDRUN_OPT_INT, offsetof(struct model_cfg, device), 0, 0, 1023, 0, NULL, NULL},
    {"deterministic", FEDRUN_OPT_BOOL, offsetof(struct model_cfg, deterministic), 0, 0, 0, 1, NULL,
     NULL},
    {"precision", FEDRUN_OPT_CHOICE, offsetof(struct model_cfg, precision), 0, 0, 0, 0, "fp32",
     MDEV_PRECISIONS},
    FEDRUN_OPT_END_,
};

struct decode_cfg {
	int64_t beam, batch;
	double len_penalty, max_len_a, max_len_b;
};

static const struct fedrun_opt decode_spec[] = {
    {"beam", FEDRUN_OPT_INT, offsetof(struct decode_cfg, beam), 0, 1, 1000, 4, NULL, NULL},
    {"len_penalty", FEDRUN_OPT_NUMBER, offsetof(struct decode_cfg, len_penalty), 0, -1e9, 1e9, 1.0,
     NULL, NULL},
    {"max_len_a", FEDRUN_OPT_NUMBER, offsetof(struct decode_cfg, max_len_a), 0, 0, 1e9, 1.2, NULL,
     NULL},
    {"max_len_b", FEDRUN_OPT_NUMBER, offsetof(struct decode_cfg, max_len_b), 0, 0, 1e9, 10, NULL,
     NULL},
    {"batch", FEDRUN_OPT_INT, offsetof(struct decode_cfg, batch), 0, 1, 100000, 32, NULL, NULL},
    FEDRUN_OPT_END_,
};

struct bleu_cfg {
	int tokenize;
};

static const struct fedrun_opt bleu_spec[] = {
    {"tokenize", FEDRUN_OPT_CHOICE, offsetof(struct bleu_cfg, tokenize), 0, 0, 0, 0, "13a",
     "13a|intl|none"},
    FEDRUN_OPT_END_,
};

/* A sub-object of the model section, created empty when absent so that
 * its defaults are written back into the resolved pipeline. */
static json_t *sub(json_t *config, const char *key, json_t *have)
{
	if (have)
		return have;
	json_t *o = json_object();
	if (o && json_object_set_new(config, key, o) < 0)
		return NULL;
	return o;
}

static int apply_preset(json_t *config, struct model_cfg *c)
{
	int rc = 0;
#define FILL(field, key, val)                                                                      \
	if (c->field < 0) {                                                                        \
		c->field = (val);                                                                  \
		rc |= json_object_set_new(config, key, json_integer(c->field));                    \
	}
	FILL(enc, "encoder_layers", presets[c->preset].enc);
	FILL(dec, "decoder_layers", presets[c->preset].dec);
	FILL(dim, "dim", presets[c->preset].dim);
	FILL(heads, "heads", presets[c->preset].heads);
	FILL(ffn, "ffn", presets[c->preset].ffn);
#undef FILL
	return rc ? fedrun_error(FEDRUN_ENOMEM, "out of memory") : 0;
}

static void tfm_destroy(void *model)
{
	struct tfm_model *m = model;
	if (!m)
		return;
	tfm_data_free(m);
	tfm_tok_destroy(m->tok);
	if (m->layout)
		tfm_layout_free(m->layout);
	free(m->backend);
	free(m);
}

static int tfm_create(const struct fedrun_host *host, json_t *model_config, json_t *data_config,
		      void **out)
{
	struct model_cfg c = {.enc = -1, .dec = -1, .dim = -1, .heads = -1, .ffn = -1};
	int rc = fedrun_opts_parse(model_spec, model_config, "model", &c);
	if (rc < 0)
		return rc;
	if ((rc = apply_preset(model_config, &c)) < 0)
		return rc;
	if (c.dim % c.heads)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.heads: dim (%lld) must be a multiple of heads (%lld)",
				    (long long)c.dim, (long long)c.heads);
	json_t *tok = sub(model_config, "tokenizer", c.tokenizer);
	json_t *dec = sub(model_config, "decode", c.decode);
	json_t *bl = sub(model_config, "bleu", c.bleu);
	if (!tok || !dec || !bl)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	struct decode_cfg dc;
	struct bleu_cfg bc;
	if ((rc = fedrun_opts_parse(decode_spec, dec, "model.decode", &dc)) < 0 ||
	    (rc = fedrun_opts_parse(bleu_spec, bl, "model.bleu", &bc)) < 0)
		return rc;
	const struct fedrun_backend_ops *be = NULL;
	if ((rc = mdev_backend_open(c.backend, (int32_t)c.device, c.deterministic,
				    (uint32_t)c.precision, &be)) < 0)
		return rc;
	struct tfm_model *m = calloc(1, sizeof *m);
	if (!m)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	m->host = host;
	m->be = be;
	m->report_xfer = strcmp(c.backend, "cpu") != 0;
	if (!(m->backend = strdup(c.backend))) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	m->max_len = (uint32_t)c.max_len;
	m->eval_batch = (uint32_t)c.eval_batch;
	m->decode = (struct tfm_decode){.beam = (uint32_t)dc.beam,
					.batch = (uint32_t)dc.batch,
					.len_penalty = dc.len_penalty,
					.max_len_a = dc.max_len_a,
					.max_len_b = dc.max_len_b};
	m->bleu_tok = bc.tokenize; /* the choices are in enum order */
	m->eval_bleu = c.eval_bleu;
	m->lr_schedule = c.lr_schedule;
	m->warmup = (uint64_t)c.warmup;
	m->warmup_init_lr = c.warmup_init_lr;
	if ((rc = tfm_data_load(m, model_config, tok, data_config)) < 0)
		goto fail;
	m->cfg = (struct tfm_cfg){
	    .vocab = tfm_tok_size(m->tok),
	    .enc_layers = (uint32_t)c.enc,
	    .dec_layers = (uint32_t)c.dec,
	    .dim = (uint32_t)c.dim,
	    .heads = (uint32_t)c.heads,
	    .ffn = (uint32_t)c.ffn,
	    .dropout = (float)c.dropout,
	    .attn_dropout = (float)c.attn_dropout,
	    .relu_dropout = (float)c.relu_dropout,
	    .label_smoothing = (float)c.label_smoothing,
	    .tie = c.tie == 0	? TFM_TIE_NONE
		   : c.tie == 1 ? TFM_TIE_DECODER
				: TFM_TIE_ALL,
	    .pre_norm = c.norm,
	    .pad_id = tfm_tok_pad(m->tok),
	    .bos_id = tfm_tok_bos(m->tok),
	    .eos_id = tfm_tok_eos(m->tok),
	    .device = (int32_t)c.device,
	    .nondeterministic = !c.deterministic,
	    .precision = (uint32_t)c.precision,
	    .activation = c.activation == 0 ? FEDRUN_ACT_RELU : FEDRUN_ACT_GELU,
	};
	if ((rc = tfm_layout(&m->cfg, &m->layout)) < 0)
		goto fail;
	uint64_t pairs = 0;
	for (uint32_t k = 0; k < m->nclients; k++)
		pairs += m->clients[k].split[FEDRUN_SPLIT_TRAIN].n;
	char prec[96];
	host->log(host->ctx, FEDRUN_LOG_INFO,
		  "transformer: vocabulary %u (%s), %u+%u layers, dim %u, %u heads, ffn %u, "
		  "%llu parameters, %u clients, %llu training pairs, backend %s, precision %s",
		  m->cfg.vocab, tfm_tok_type(m->tok) == TFM_TOK_WORDS ? "words" : "sentencepiece",
		  m->cfg.enc_layers, m->cfg.dec_layers, m->cfg.dim, m->cfg.heads, m->cfg.ffn,
		  (unsigned long long)fedrun_layout_numel(m->layout), m->nclients,
		  (unsigned long long)pairs, m->backend,
		  mdev_precision_text(be, m->cfg.precision, prec, sizeof prec));
	*out = m;
	return 0;
fail:
	tfm_destroy(m);
	return rc;
}

static const struct fedrun_layout *tfm_get_layout(void *model)
{
	return ((struct tfm_model *)model)->layout;
}

static int tfm_init_params(void *model, uint64_t seed, float *params)
{
	struct tfm_model *m = model;
	return tfm_init(&m->cfg, m->layout, seed, params);
}

static uint32_t tfm_num_clients(void *model)
{
	return ((struct tfm_model *)model)->nclients;
}

/* n_k: the client's training pairs (after the max_len filter). */
static uint64_t tfm_client_size(void *model, uint32_t client)
{
	struct tfm_model *m = model;
	if (client >= m->nclients)
		return 0;
	const struct tfm_split *s = &m->clients[client].split[FEDRUN_SPLIT_TRAIN];
	return s->absent ? 0 : s->n;
}

#if FEDRUN_ABI_MINOR >= 1
static const char *tfm_client_name(void *model, uint32_t client)
{
	struct tfm_model *m = model;
	return client < m->nclients ? m->clients[client].name : NULL;
}

/* translate and gate_translate: tokenizes, decodes with the model's
 * settings overridden by opts, with the expert's mixture when priv and
 * gate are given. */
static int translate(struct tfm_model *m, void *worker, const float *params, const float *priv,
		     const float *gate, const struct fedrun_decode_opts *opts,
		     const char *const *src, uint32_t n, char **out)
{
	struct tfm_decode d = m->decode;
	if (opts && opts->size >= offsetof(struct fedrun_decode_opts, batch) + sizeof opts->batch) {
		d.beam = opts->beam ? opts->beam : 1;
		d.len_penalty = opts->len_penalty;
		d.max_len_a = opts->max_len_a;
		d.max_len_b = opts->max_len_b;
		d.batch = opts->batch ? opts->batch : 1;
	}
	int32_t **ids = calloc(n ? n : 1, sizeof *ids);
	uint32_t *len = calloc(n ? n : 1, sizeof *len);
	struct tfm_worker *w = worker;
	int rc = ids && len ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n && rc == 0; i++)
		out[i] = NULL;
	for (uint32_t i = 0; i < n && rc == 0; i++)
		rc = tfm_tok_encode(m->tok, src[i], strlen(src[i]), &ids[i], &len[i]);
	/* Sources past max_len (the longest the model was trained on) are cut
	 * or refused: attention's cost grows with the square of the length,
	 * and the model has never seen such positions. FEDRUN_LONG_KEEP
	 * decodes them whole, as evaluation does (tfm_split_bleu), so that a
	 * test set's translations are those its BLEU was computed on. */
	const bool v17 = opts && opts->size >= offsetof(struct fedrun_decode_opts, max_src) +
						   sizeof opts->max_src;
	const bool keep = v17 && opts->long_src == FEDRUN_LONG_KEEP;
	if (rc == 0 && v17 && opts->max_src)
		*opts->max_src = keep ? 0 : m->max_len;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		if (v17 && opts->src_tokens)
			opts->src_tokens[i] = len[i];
		if (len[i] <= m->max_len || keep)
			continue;
		if (v17 && opts->long_src == FEDRUN_LONG_REFUSE) {
			for (uint32_t j = i + 1; opts->src_tokens && j < n; j++)
				opts->src_tokens[j] = len[j];
			rc = fedrun_error(
			    FEDRUN_EINVAL,
			    "transformer: a source of %u tokens, more than the model's "
			    "max_len (%u)",
			    len[i], m->max_len);
		} else {
			len[i] = m->max_len;
		}
	}
	if (rc == 0 && !w)
		rc = tfm_worker_create(m, (void **)&w);
	struct mdev_xfer x0 = {0, 0};
	if (rc == 0) {
		x0 = tfm_xfer(w);
		rc = tfm_send_params(m, w, params);
	}
	const uint32_t threads = m->host->threads(m->host->ctx);
	if (rc == 0)
		rc = priv ? tfm_expert_translate_ids(m, w, params, priv, gate, &d, ids, len, n,
						     threads, out)
			  : tfm_decode_ids(m, w, params, &d, ids, len, n, threads, NULL, out);
	if (rc == 0)
		tfm_report_xfer(m, w, -1, &x0);
	if (w && w != worker)
		tfm_worker_destroy(m, w);
	if (rc < 0)
		for (uint32_t i = 0; i < n; i++) {
			free(out[i]);
			out[i] = NULL;
		}
	for (uint32_t i = 0; ids && i < n; i++)
		free(ids[i]);
	free(ids);
	free(len);
	return rc;
}

static int tfm_translate(void *model, void *worker, const float *params,
			 const struct fedrun_decode_opts *opts, const char *const *src, uint32_t n,
			 char **out)
{
	return translate(model, worker, params, NULL, NULL, opts, src, n, out);
}
#endif

#if FEDRUN_ABI_MINOR >= 6
static int tfm_gate_fit(void *model, void *worker, const float *global, const float *priv,
			uint32_t client, const struct fedrun_gate_opts *opts, float *gate,
			struct fedrun_eval *out)
{
	struct tfm_model *m = model;
	if (!opts || opts->size < offsetof(struct fedrun_gate_opts, lr) + sizeof opts->lr)
		return fedrun_error(FEDRUN_EINVAL, "transformer: gate_fit: no options");
	if (client >= m->nclients)
		return fedrun_error(FEDRUN_EINVAL, "transformer: gate_fit: no client %u", client);
	return tfm_expert_fit(model, worker, global, priv, client, opts->steps, opts->lr, gate,
			      out);
}

static int tfm_gate_translate(void *model, void *worker, const float *global, const float *priv,
			      const float *gate, const struct fedrun_decode_opts *opts,
			      const char *const *src, uint32_t n, char **out)
{
	if (!priv || !gate)
		return fedrun_error(FEDRUN_EINVAL,
				    "transformer: gate_translate: NULL model or gate");
	return translate(model, worker, global, priv, gate, opts, src, n, out);
}
#endif

static const struct fedrun_model_ops tfm_ops = {
    .size = sizeof(struct fedrun_model_ops),
    .create = tfm_create,
    .destroy = tfm_destroy,
    .layout = tfm_get_layout,
    .init_params = tfm_init_params,
    .num_clients = tfm_num_clients,
    .client_size = tfm_client_size,
    .worker_create = tfm_worker_create,
    .worker_destroy = tfm_worker_destroy,
    .train = tfm_train,
    .evaluate = tfm_evaluate,
    .loss_grad = tfm_loss_grad,
#if FEDRUN_ABI_MINOR >= 1
    .translate = tfm_translate,
    .client_name = tfm_client_name,
#endif
#if FEDRUN_ABI_MINOR >= 6
    .gate_size = tfm_expert_gate_size,
    .gate_fit = tfm_gate_fit,
    .gate_evaluate = tfm_expert_evaluate,
    .gate_translate = tfm_gate_translate,
#endif
    .samples_unit = "tokens", /* train.c counts target tokens */
};

static const struct fedrun_plugin tfm_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_MODEL, "transformer", "1.0.0",
    "encoder-decoder Transformer (Vaswani et al. 2017) for machine translation", &tfm_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &tfm_plugin : NULL;
}
