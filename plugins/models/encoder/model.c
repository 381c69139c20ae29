/* SPDX-License-Identifier: Apache-2.0 */
/* encoder: options, the architecture (from a Hugging Face model directory
 * or the model section), freezing and adapters, the two layouts, the
 * initialisation, and the plugin descriptor. The data are data.c's, the
 * training and evaluation loops train.c's; fedrun-models(7) documents
 * every option. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "encoder.h"

/* The architecture of model.arch without model.pretrained: small BERTs of
 * Turc et al. (2019, "Well-read students learn better", Table: L/H) by
 * preset, overridable key by key. */
static const struct {
	const char *name;
	uint32_t layers, dim, heads;
} presets[] = {{"tiny", 2, 128, 2}, {"mini", 4, 256, 4}, {"small", 4, 512, 8},
	       {"medium", 8, 512, 8}, {"base", 12, 768, 12}};
#define NPRESETS (sizeof presets / sizeof presets[0])

struct model_opts {
	int task;
	const char *pretrained;
	int arch, preset;
	int64_t dim, layers, heads, ffn, max_pos, max_len, eval_batch, freeze;
	int batching;
	double dropout, attn_dropout, cls_dropout, mask_prob;
	const char *vocab;
	int64_t vocab_size;
	int lowercase;
	json_t *lora;
	const char *backend;
	int64_t device;
	bool deterministic;
	int precision;
};

static const struct fedrun_opt model_spec[] = {
    {"task", FEDRUN_OPT_CHOICE, offsetof(struct model_opts, task), FEDRUN_OPT_REQUIRED, 0, 0, 0,
     NULL, "classify|tag|mlm"},
    {"pretrained", FEDRUN_OPT_PATH, offsetof(struct model_opts, pretrained),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_UNREAD, 0, 0, 0, NULL, NULL},
    {"arch", FEDRUN_OPT_CHOICE, offsetof(struct model_opts, arch), 0, 0, 0, 0, "bert",
     "bert|distilbert"},
    {"preset", FEDRUN_OPT_CHOICE, offsetof(struct model_opts, preset), 0, 0, 0, 0, "mini",
     "tiny|mini|small|medium|base"},
    {"dim", FEDRUN_OPT_INT, offsetof(struct model_opts, dim), FEDRUN_OPT_OPTIONAL, 1, 16384, 0,
     NULL, NULL},
    {"layers", FEDRUN_OPT_INT, offsetof(struct model_opts, layers), FEDRUN_OPT_OPTIONAL, 1, 64, 0,
     NULL, NULL},
    {"heads", FEDRUN_OPT_INT, offsetof(struct model_opts, heads), FEDRUN_OPT_OPTIONAL, 1, 256, 0,
     NULL, NULL},
    {"ffn", FEDRUN_OPT_INT, offsetof(struct model_opts, ffn), FEDRUN_OPT_OPTIONAL, 1, 65536, 0,
     NULL, NULL},
    {"max_pos", FEDRUN_OPT_INT, offsetof(struct model_opts, max_pos), 0, 2, 65536, 512, NULL,
     NULL},
    {"max_len", FEDRUN_OPT_INT, offsetof(struct model_opts, max_len), 0, 3, 65536, 128, NULL,
     NULL},
    {"eval_batch", FEDRUN_OPT_INT, offsetof(struct model_opts, eval_batch), 0, 1, 100000, 32,
     NULL, NULL},
    {"batching", FEDRUN_OPT_CHOICE, offsetof(struct model_opts, batching), 0, 0, 0, 0, "length",
     "length|random"},
    {"freeze", FEDRUN_OPT_INT, offsetof(struct model_opts, freeze), 0, -1, 64, -1, NULL, NULL},
    {"dropout", FEDRUN_OPT_NUMBER, offsetof(struct model_opts, dropout),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_MAX_OPEN, 0, 1, 0, NULL, NULL},
    {"attn_dropout", FEDRUN_OPT_NUMBER, offsetof(struct model_opts, attn_dropout),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_MAX_OPEN, 0, 1, 0, NULL, NULL},
    {"cls_dropout", FEDRUN_OPT_NUMBER, offsetof(struct model_opts, cls_dropout),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_MAX_OPEN, 0, 1, 0, NULL, NULL},
    {"mask_prob", FEDRUN_OPT_NUMBER, offsetof(struct model_opts, mask_prob),
     FEDRUN_OPT_MIN_OPEN | FEDRUN_OPT_MAX_OPEN, 0, 1, 0.15, NULL, NULL},
    {"vocab", FEDRUN_OPT_PATH, offsetof(struct model_opts, vocab), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"vocab_size", FEDRUN_OPT_INT, offsetof(struct model_opts, vocab_size), FEDRUN_OPT_OPTIONAL,
     16, 1e6, 0, NULL, NULL},
    {"lowercase", FEDRUN_OPT_BOOL, offsetof(struct model_opts, lowercase), 0, 0, 0, 1, NULL,
     NULL},
    {"lora", FEDRUN_OPT_OBJECT, offsetof(struct model_opts, lora), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"backend", FEDRUN_OPT_STRING, offsetof(struct model_opts, backend), 0, 0, 0, 0, "cpu", NULL},
    {"device", FEDRUN_OPT_INT, offsetof(struct model_opts, device), 0, 0, 1023, 0, NULL, NULL},
    {"deterministic", FEDRUN_OPT_BOOL, offsetof(struct model_opts, deterministic), 0, 0, 0, 1,
     NULL, NULL},
    {"precision", FEDRUN_OPT_CHOICE, offsetof(struct model_opts, precision), 0, 0, 0, 0, "fp32",
     MDEV_PRECISIONS},
    FEDRUN_OPT_END_,
};

struct lora_opts {
	int64_t r;
	double alpha;
	json_t *targets;
};

static const struct fedrun_opt lora_spec[] = {
    {"r", FEDRUN_OPT_INT, offsetof(struct lora_opts, r), 0, 1, 4096, 8, NULL, NULL},
    {"alpha", FEDRUN_OPT_NUMBER, offsetof(struct lora_opts, alpha), FEDRUN_OPT_MIN_OPEN, 0, 1e6,
     16, NULL, NULL},
    {"targets", FEDRUN_OPT_ARRAY, offsetof(struct lora_opts, targets), FEDRUN_OPT_OPTIONAL, 0, 0,
     0, NULL, NULL},
    FEDRUN_OPT_END_,
};

/* model.lora.targets: names of the adapted maps of every layer. */
static const struct {
	const char *name;
	uint32_t bit;
} lora_names[] = {{"query", ENC_LORA_Q}, {"key", ENC_LORA_K},	 {"value", ENC_LORA_V},
		  {"output", ENC_LORA_O}, {"ffn1", ENC_LORA_FFN1}, {"ffn2", ENC_LORA_FFN2}};

static int parse_lora(json_t *section, struct enc_cfg *c)
{
	struct lora_opts o = {0};
	int rc = fedrun_opts_parse(lora_spec, section, "model.lora", &o);
	if (rc < 0)
		return rc;
	c->lora_r = (uint32_t)o.r;
	c->lora_alpha = (float)o.alpha;
	if (!o.targets) { /* Hu et al. 2021, sec. 7.1: W_q and W_v */
		c->lora_targets = ENC_LORA_Q | ENC_LORA_V;
		json_t *a = json_pack("[ss]", "query", "value");
		if (!a || json_object_set_new(section, "targets", a) < 0)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		return 0;
	}
	size_t i;
	json_t *v;
	json_array_foreach(o.targets, i, v)
	{
		const char *s = json_string_value(v);
		size_t j = 0;
		while (s && j < sizeof lora_names / sizeof lora_names[0] &&
		       strcmp(s, lora_names[j].name) != 0)
			j++;
		if (!s || j == sizeof lora_names / sizeof lora_names[0])
			return fedrun_error(FEDRUN_ECONFIG,
					    "model.lora.targets[%zu]: expected one of \"query\", "
					    "\"key\", \"value\", \"output\", \"ffn1\", \"ffn2\"",
					    i);
		c->lora_targets |= lora_names[j].bit;
	}
	if (!c->lora_targets)
		return fedrun_error(FEDRUN_ECONFIG, "model.lora.targets: empty");
	return 0;
}

static void enc_destroy(void *model)
{
	struct enc_model *m = model;
	if (!m)
		return;
	enc_data_free(m);
	wp_free(m->tok);
	enc_layout_free(m->full);
	fedrun_layout_fini(&m->layout);
	free(m->trainable);
	free(m->full_of);
	free(m->frozen);
	free(m->pretrained);
	free(m->loaded);
	free(m->pretrained_dir);
	free(m->vocab_path);
	free(m->vocab_text);
	free(m->backend);
	free(m);
}

/* The architecture from the model section alone (no pretrained). */
static int arch_from_opts(const struct model_opts *o, uint32_t vocab, struct enc_cfg *c)
{
	c->arch = o->arch ? ENC_DISTILBERT : ENC_BERT;
	c->layers = o->layers > 0 ? (uint32_t)o->layers : presets[o->preset].layers;
	c->dim = o->dim > 0 ? (uint32_t)o->dim : presets[o->preset].dim;
	c->heads = o->heads > 0 ? (uint32_t)o->heads : presets[o->preset].heads;
	c->ffn = o->ffn > 0 ? (uint32_t)o->ffn : 4 * c->dim;
	c->vocab = vocab;
	c->max_pos = (uint32_t)o->max_pos;
	c->type_vocab = c->arch == ENC_BERT ? 2 : 0;
	c->ln_eps = 1e-12f;
	c->act = FEDRUN_ACT_GELU_ERF;
	c->dropout = 0.1f;
	c->attn_dropout = 0.1f;
	c->cls_dropout = c->arch == ENC_DISTILBERT ? 0.2f : 0.1f;
	c->init_range = 0.02f;
	if (c->dim % c->heads)
		return fedrun_error(FEDRUN_ECONFIG, "model.heads: %u heads do not divide dim %u",
				    c->heads, c->dim);
	return 0;
}

/* Which tensors train: model.freeze (the embeddings, then layers 0 ..
 * freeze-1: FedNLP's Q3) and, with adapters, only the adapters and the
 * head (Hu et al. 2021, sec. 4.1: W0 is frozen). */
static int plan_trainable(struct enc_model *m)
{
	const struct fedrun_layout *l = m->full;
	if (m->freeze > (int)m->cfg.layers)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.freeze: %d layers, but the model has %u (at most %u: "
				    "every layer frozen, the head trained)",
				    m->freeze, m->cfg.layers, m->cfg.layers);
	if (!(m->trainable = calloc(l->n, 1)) || !(m->full_of = calloc(l->n, sizeof *m->full_of)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	fedrun_layout_init(&m->layout);
	m->all_trainable = true;
	for (uint32_t i = 0; i < l->n; i++) {
		const char *name = l->t[i].name;
		int layer = enc_tensor_layer(&m->cfg, l, i);
		bool t = true;
		if (m->cfg.lora_r)
			t = strstr(name, ".lora_A.") || strstr(name, ".lora_B.") ||
			    layer == (int)m->cfg.layers;
		else if (m->freeze >= 0)
			t = layer >= m->freeze;
		/* the pooler is part of the body when everything is frozen */
		m->trainable[i] = t;
		if (!t) {
			m->all_trainable = false;
			continue;
		}
		int rc = fedrun_layout_add(&m->layout, name, l->t[i].ndim, l->t[i].shape);
		if (rc < 0)
			return rc;
		m->full_of[m->layout.n - 1] = i;
	}
	if (m->layout.n == 0)
		return fedrun_error(FEDRUN_ECONFIG, "model: nothing left to train");
	return 0;
}

/* The network's initial values with `seed`, then the pretrained tensors
 * over them: the full arena (host, full->total floats). */
static int full_init(struct enc_model *m, uint64_t seed, float *p)
{
	int rc = enc_init(&m->cfg, m->full, seed, p);
	if (rc < 0 || !m->pretrained)
		return rc;
	for (uint32_t i = 0; i < m->full->n; i++)
		if (m->loaded[i]) {
			const struct fedrun_tensor_info *t = &m->full->t[i];
			memcpy(p + t->offset, m->pretrained + t->offset, t->numel * sizeof *p);
		}
	return 0;
}

/* RUN/hf/: what fedrun export-hf needs besides the run's checkpoints. */
static int write_run_meta(struct enc_model *m, const char *run)
{
	/* a learned vocabulary becomes RUN/vocab.txt, which RUN/hf copies */
	if (!m->vocab_path) {
		if (!(m->vocab_path = fedrun_path_resolve(run, "vocab.txt")))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		int rc = fedrun_write_file_atomic(m->vocab_path, m->vocab_text, m->vocab_bytes);
		if (rc < 0)
			return rc;
	}
	uint32_t nl = m->labels ? fedrun_labels_count(m->labels) : 0;
	char **names = nl ? calloc(nl, sizeof *names) : NULL;
	if (nl && !names)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < nl; i++)
		names[i] = (char *)fedrun_labels_name(m->labels, i);
	float *vals = m->frozen;
	int rc = 0;
	if (!vals) {
		if (!(vals = malloc(m->full->total * sizeof *vals)))
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		else
			rc = full_init(m, m->mlm_seed, vals);
	}
	if (rc == 0)
		rc = hf_write_run_meta(run, &m->cfg, m->full, vals,
				       m->all_trainable ? NULL : m->trainable, m->vocab_path,
				       nl ? names : NULL, &m->tok_opts);
	if (vals != m->frozen)
		free(vals);
	free(names);
	return rc;
}

static int enc_create(const struct fedrun_host *host, json_t *model_config, json_t *data_config,
		      void **out)
{
	/* With a checkpoint the architecture and the tokenizer are its own. */
	static const char *const arch_keys[] = {"arch",	   "preset", "dim",    "layers",   "heads",
						"ffn",	   "max_pos", "vocab", "lowercase",
						"vocab_size"};
	if (json_is_object(model_config) && json_object_get(model_config, "pretrained"))
		for (size_t i = 0; i < sizeof arch_keys / sizeof arch_keys[0]; i++)
			if (json_object_get(model_config, arch_keys[i]))
				return fedrun_error(FEDRUN_ECONFIG,
						    "model.%s: not with model.pretrained (the "
						    "architecture and the vocabulary are the "
						    "checkpoint's config.json and vocab.txt)",
						    arch_keys[i]);
	struct model_opts o = {.dropout = NAN, .attn_dropout = NAN, .cls_dropout = NAN};
	int rc = fedrun_opts_parse(model_spec, model_config, "model", &o);
	if (rc < 0)
		return rc;
	if (!data_config)
		return fedrun_error(FEDRUN_ECONFIG, "data: required section is missing (the encoder "
						    "reads examples: data.train)");
	if (o.lora && o.freeze >= 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.freeze: not with model.lora (LoRA freezes the whole "
				    "body itself)");
	const struct fedrun_backend_ops *be = NULL;
	if ((rc = mdev_backend_open(o.backend, (int32_t)o.device, o.deterministic,
				    (uint32_t)o.precision, &be)) < 0)
		return rc;
	struct enc_model *m = calloc(1, sizeof *m);
	if (!m)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	m->host = host;
	m->be = be;
	m->device = (int32_t)o.device;
	m->deterministic = o.deterministic;
	m->precision = (uint32_t)o.precision;
	m->report_xfer = strcmp(o.backend, "cpu") != 0;
	m->freeze = (int)o.freeze;
	m->max_len = (uint32_t)o.max_len;
	m->eval_batch = (uint32_t)o.eval_batch;
	m->batching = o.batching;
	m->mask_prob = o.mask_prob;
	m->mlm_seed = host->seed(host->ctx);
	if (!(m->backend = strdup(o.backend))) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	struct enc_cfg *c = &m->cfg;
	const enum enc_task task = o.task == 0	 ? ENC_TASK_CLASSIFY
				   : o.task == 1 ? ENC_TASK_TAG
						 : ENC_TASK_MLM;
	/* The tokenizer: the pretrained model's, or model.vocab. */
	if (o.pretrained) {
		if (!(m->pretrained_dir = strdup(o.pretrained))) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto fail;
		}
		c->task = task;
		if ((rc = hf_read_config(o.pretrained, c, NULL, NULL)) < 0 ||
		    (rc = hf_read_tok_opts(o.pretrained, &m->tok_opts)) < 0)
			goto fail;
		m->vocab_path = fedrun_path_resolve(o.pretrained, "vocab.txt");
	} else {
		if (!o.vocab == !(o.vocab_size > 0)) {
			rc = fedrun_error(FEDRUN_ECONFIG,
					  o.vocab ? "model.vocab_size: not with model.vocab"
						  : "model.vocab: required without model.pretrained "
						    "(a WordPiece vocabulary, vocab.txt), unless "
						    "model.vocab_size learns one from data.train");
			goto fail;
		}
		hf_tok_opts_default(&m->tok_opts);
		m->tok_opts.do_lower_case = o.lowercase;
		m->vocab_size = (uint32_t)o.vocab_size;
		if (o.vocab && !(m->vocab_path = strdup(o.vocab))) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto fail;
		}
	}
	if (o.pretrained && !m->vocab_path) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	struct wp_options wo;
	wp_options_default(&wo);
	wo.lowercase = m->tok_opts.do_lower_case;
	wo.strip_accents = m->tok_opts.strip_accents;
	wo.tokenize_chinese_chars = m->tok_opts.tokenize_chinese_chars;
	if (m->vocab_path && (rc = wp_load(m->vocab_path, &wo, &m->tok)) < 0)
		goto fail;
	/* model.vocab_size: learned from the training text (data.c), then
	 * the architecture's sizes follow it */
	c->task = task;
	if (!m->tok && (rc = enc_data_learn_vocab(m, data_config, "data")) < 0)
		goto fail;
	if (wp_size(m->tok) > INT32_MAX / 2) {
		rc = fedrun_error(FEDRUN_ECONFIG, "model.vocab: %zu entries is too many",
				  wp_size(m->tok));
		goto fail;
	}
	m->cls_id = wp_id(m->tok, "[CLS]");
	m->sep_id = wp_id(m->tok, "[SEP]");
	m->mask_id = wp_id(m->tok, "[MASK]");
	m->pad_id = wp_id(m->tok, "[PAD]");
	m->unk_id = wp_id(m->tok, "[UNK]");
	if (m->cls_id < 0 || m->sep_id < 0 || m->pad_id < 0 || m->unk_id < 0 ||
	    (task == ENC_TASK_MLM && m->mask_id < 0)) {
		rc = fedrun_error(FEDRUN_ECONFIG,
				  "%s: the vocabulary lacks [CLS], [SEP], [PAD], [UNK]%s",
				  m->vocab_path ? m->vocab_path : "model.vocab_size", task == ENC_TASK_MLM ? " or [MASK]" : "");
		goto fail;
	}
	if (!o.pretrained && (rc = arch_from_opts(&o, (uint32_t)wp_size(m->tok), c)) < 0)
		goto fail;
	if (o.pretrained && wp_size(m->tok) > c->vocab) {
		rc = fedrun_error(FEDRUN_ECONFIG,
				  "%s: vocab.txt has %zu entries, more than config.json's vocab_size "
				  "%u",
				  o.pretrained, wp_size(m->tok), c->vocab);
		goto fail;
	}
	if (m->max_len > c->max_pos) {
		rc = fedrun_error(FEDRUN_ECONFIG,
				  "model.max_len: %u wordpieces, but the model has %u positions",
				  m->max_len, c->max_pos);
		goto fail;
	}
	c->task = task;
	if (!o.pretrained)
		c->pad_id = m->pad_id;
	if (!isnan(o.dropout))
		c->dropout = (float)o.dropout;
	if (!isnan(o.attn_dropout))
		c->attn_dropout = (float)o.attn_dropout;
	if (!isnan(o.cls_dropout))
		c->cls_dropout = (float)o.cls_dropout;
	if (o.lora && (rc = parse_lora(o.lora, c)) < 0)
		goto fail;
	c->device = (int32_t)o.device;
	c->nondeterministic = !o.deterministic;
	c->precision = (uint32_t)o.precision;
	/* The data, which give classify and tag their labels. */
	if ((rc = enc_data_load(m, data_config, "data")) < 0)
		goto fail;
	c->labels = c->task == ENC_TASK_MLM ? 0 : fedrun_labels_count(m->labels);
	if (c->task != ENC_TASK_MLM && c->labels < 2) {
		rc = fedrun_error(FEDRUN_ECONFIG, "data.train: %u label(s): a %s task needs two "
						  "or more",
				  c->labels, c->task == ENC_TASK_TAG ? "tagging" : "classification");
		goto fail;
	}
	if ((rc = enc_cfg_check(c)) < 0 || (rc = enc_layout(c, &m->full)) < 0)
		goto fail;
	if (o.pretrained) {
		if (!(m->pretrained = calloc(m->full->total, sizeof(float))) ||
		    !(m->loaded = calloc(m->full->n, 1))) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto fail;
		}
		char *report = NULL;
		if ((rc = enc_init(c, m->full, host->seed(host->ctx), m->pretrained)) < 0 ||
		    (rc = hf_load_params(o.pretrained, c, m->full, m->pretrained, m->loaded,
					 &report)) < 0)
			goto fail;
		if (report) {
			host->log(host->ctx, FEDRUN_LOG_INFO, "encoder: %s: %s", o.pretrained, report);
			free(report);
		}
	}
	if ((rc = plan_trainable(m)) < 0)
		goto fail;
	if (!m->all_trainable) {
		if (!(m->frozen = malloc(m->full->total * sizeof(float)))) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto fail;
		}
		if ((rc = full_init(m, m->mlm_seed, m->frozen)) < 0)
			goto fail;
	}
	const char *run = host->size >= offsetof(struct fedrun_host, run_dir) + sizeof(void *) &&
				  host->run_dir
			      ? host->run_dir(host->ctx)
			      : NULL;
	if (run && (rc = enc_data_partition_write(m)) < 0)
		goto fail;
	if (run && (rc = write_run_meta(m, run)) < 0)
		goto fail;
	char prec[96];
	uint64_t nt = fedrun_layout_numel(&m->layout), nf = fedrun_layout_numel(m->full);
	host->log(host->ctx, FEDRUN_LOG_INFO,
		  "encoder: %s %s, %u layers, dim %u, %u heads, ffn %u, vocabulary %u, "
		  "%s; %llu of %llu parameters train%s; %u clients, backend %s, precision %s",
		  c->arch == ENC_BERT ? "bert" : "distilbert",
		  c->task == ENC_TASK_CLASSIFY ? "classify" : c->task == ENC_TASK_TAG ? "tag" : "mlm",
		  c->layers, c->dim, c->heads, c->ffn, c->vocab,
		  o.pretrained ? o.pretrained : "random initialisation", (unsigned long long)nt,
		  (unsigned long long)nf, c->lora_r ? " (LoRA)" : "", m->nclients, m->backend,
		  mdev_precision_text(be, m->precision, prec, sizeof prec));
	*out = m;
	return 0;
fail:
	enc_destroy(m);
	return rc;
}

static const struct fedrun_layout *enc_layout_op(void *model)
{
	return &((struct enc_model *)model)->layout;
}

/* The trainable tensors of the network's initialisation with `seed`,
 * over which the pretrained tensors are copied (model.pretrained). */
static int enc_init_params(void *model, uint64_t seed, float *params)
{
	struct enc_model *m = model;
	float *full = m->all_trainable ? params : malloc(m->full->total * sizeof(float));
	if (!full)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = full_init(m, seed, full);
	if (rc == 0 && !m->all_trainable) {
		memset(params, 0, m->layout.total * sizeof *params);
		for (uint32_t i = 0; i < m->layout.n; i++) {
			const struct fedrun_tensor_info *t = &m->layout.t[i];
			memcpy(params + t->offset, full + m->full->t[m->full_of[i]].offset,
			       t->numel * sizeof *params);
		}
	}
	if (full != params)
		free(full);
	return rc;
}

static uint32_t enc_num_clients(void *model)
{
	return ((struct enc_model *)model)->nclients;
}

static uint64_t enc_client_size(void *model, uint32_t client)
{
	struct enc_model *m = model;
	return client < m->nclients ? m->client_n[client] : 0;
}

static const char *enc_client_name(void *model, uint32_t client)
{
	struct enc_model *m = model;
	return m->client_names && client < m->nclients ? m->client_names[client] : NULL;
}

static const struct fedrun_model_ops enc_ops = {
    .size = sizeof(struct fedrun_model_ops),
    .create = enc_create,
    .destroy = enc_destroy,
    .layout = enc_layout_op,
    .init_params = enc_init_params,
    .num_clients = enc_num_clients,
    .client_size = enc_client_size,
    .worker_create = enc_worker_create,
    .worker_destroy = enc_worker_destroy,
    .train = enc_train,
    .evaluate = enc_evaluate,
    .client_name = enc_client_name,
    .samples_unit = "examples",
};

static const struct fedrun_plugin enc_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_MODEL, "encoder", "1.0.0",
    "BERT / DistilBERT encoder (Hugging Face checkpoints) for classification, tagging and MLM",
    &enc_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &enc_plugin : NULL;
}
