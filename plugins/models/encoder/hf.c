/* SPDX-License-Identifier: Apache-2.0 */
/* Hugging Face model directories (hf.h): config.json, model.safetensors by
 * the name rule of hf.h, the tokenizer's files, and the run's hf/ that
 * `fedrun export-hf` turns into a model directory. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "hf.h"

#define PATH_LEN 4096
#define LORA_A ".lora_A.weight"
#define LORA_B ".lora_B.weight"

/* ---- small helpers ---- */

static int join(char *out, const char *dir, const char *name)
{
	if ((size_t)snprintf(out, PATH_LEN, "%s/%s", dir, name) >= PATH_LEN)
		return fedrun_error(FEDRUN_EINVAL, "%s/%s: path too long", dir, name);
	return 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && strcmp(s + a - b, tail) == 0;
}

/* A JSON file: a new object, or an error naming the file. */
static int read_json(const char *path, json_t **out)
{
	char *text;
	size_t n;
	*out = NULL;
	int rc = fedrun_read_file(path, &text, &n);
	if (rc < 0)
		return rc;
	json_error_t err;
	json_t *j = json_loadb(text, n, JSON_REJECT_DUPLICATES, &err);
	free(text);
	if (!j)
		return fedrun_error(FEDRUN_EFORMAT, "%s:%d: %s", path, err.line, err.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return fedrun_error(FEDRUN_EFORMAT, "%s: not a JSON object", path);
	}
	*out = j;
	return 0;
}

/* A growing text: what the report lists. */
struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	for (int pass = 0; pass < 2 && !b->oom; pass++) {
		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->s && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->oom = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
}

static void shape_str(uint32_t ndim, const uint64_t *shape, char *buf, size_t n)
{
	size_t a = 0;
	buf[0] = 0;
	if (ndim == 0)
		snprintf(buf, n, "scalar");
	for (uint32_t d = 0; d < ndim && a < n; d++)
		a += (size_t)snprintf(buf + a, n - a, "%s%" PRIu64, d ? "x" : "", shape[d]);
}

/* ---- config.json ---- */

void hf_tok_opts_default(struct hf_tok_opts *o)
{
	*o = (struct hf_tok_opts){.do_lower_case = 1, .strip_accents = -1,
				  .tokenize_chinese_chars = 1, .model_max_length = 0};
}

void hf_labels_free(char **labels, uint32_t n)
{
	if (!labels)
		return;
	for (uint32_t i = 0; i < n; i++)
		free(labels[i]);
	free(labels);
}

static const char *const task_names[] = {
	[ENC_TASK_BASE] = "base", [ENC_TASK_CLASSIFY] = "classify", [ENC_TASK_TAG] = "tag",
	[ENC_TASK_MLM] = "mlm"};

const char *hf_task_name(enum enc_task t)
{
	return (unsigned)t < 4 ? task_names[t] : "?";
}

int hf_task_parse(const char *s)
{
	for (int t = 0; t < 4; t++)
		if (s && strcmp(s, task_names[t]) == 0)
			return t;
	return -1;
}

/* A size: a positive integer at most hi, required. */
static int cfg_size(json_t *c, const char *path, const char *key, uint32_t lo, uint32_t *out)
{
	json_t *v = json_object_get(c, key);
	if (!v)
		return fedrun_error(FEDRUN_EFORMAT, "%s: \"%s\" is missing", path, key);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > (1 << 30))
		return fedrun_error(FEDRUN_EFORMAT, "%s: \"%s\": expected an integer in [%u, 2^30]",
				    path, key, lo);
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* A probability in [0, 1) or a positive number (hi 0: any > 0); absent or
 * null: def. */
static int cfg_num(json_t *c, const char *path, const char *key, double def, bool prob,
		   float *out)
{
	json_t *v = json_object_get(c, key);
	double x = def;
	if (v && !json_is_null(v)) {
		if (!json_is_number(v))
			return fedrun_error(FEDRUN_EFORMAT, "%s: \"%s\": expected a number", path, key);
		x = json_number_value(v);
	}
	if (prob ? !(x >= 0 && x < 1) : !(x > 0 && isfinite(x)))
		return fedrun_error(FEDRUN_EFORMAT, "%s: \"%s\": %g is not %s", path, key, x,
				    prob ? "a probability in [0, 1)" : "a positive number");
	*out = (float)x;
	return 0;
}

static int cfg_act(json_t *c, const char *path, const char *key, int *out)
{
	json_t *v = json_object_get(c, key);
	const char *s = v ? json_string_value(v) : "gelu";
	if (!s)
		return fedrun_error(FEDRUN_EFORMAT, "%s: \"%s\": expected a string", path, key);
	if (strcmp(s, "gelu") == 0)
		*out = FEDRUN_ACT_GELU_ERF;
	else if (strcmp(s, "gelu_new") == 0 || strcmp(s, "gelu_pytorch_tanh") == 0)
		*out = FEDRUN_ACT_GELU;
	else if (strcmp(s, "relu") == 0)
		*out = FEDRUN_ACT_RELU;
	else
		return fedrun_error(FEDRUN_EFORMAT, "%s: \"%s\": \"%s\": only gelu, gelu_new and relu "
				    "are supported", path, key, s);
	return 0;
}

static int read_labels(json_t *c, const char *path, char ***labels, uint32_t *nlabels)
{
	json_t *m = json_object_get(c, "id2label");
	if (!m || json_is_null(m))
		return 0;
	if (!json_is_object(m) || json_object_size(m) > (1u << 20))
		return fedrun_error(FEDRUN_EFORMAT, "%s: \"id2label\": expected an object", path);
	uint32_t n = (uint32_t)json_object_size(m);
	char **out = calloc(n ? n : 1, sizeof *out);
	if (!out)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	const char *k;
	json_t *v;
	json_object_foreach(m, k, v) {
		char *end;
		errno = 0;
		unsigned long id = strtoul(k, &end, 10);
		if (!*k || *end || errno || id >= n || out[id] || !json_is_string(v)) {
			hf_labels_free(out, n);
			return fedrun_error(FEDRUN_EFORMAT, "%s: \"id2label\": entry \"%s\": expected "
					    "ids 0 to %u, each once, naming a string", path, k, n - 1);
		}
		if (!(out[id] = strdup(json_string_value(v)))) {
			hf_labels_free(out, n);
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
	}
	*labels = out;
	*nlabels = n;
	return 0;
}

int hf_read_config(const char *dir, struct enc_cfg *cfg, char ***labels, uint32_t *nlabels)
{
	char path[PATH_LEN];
	json_t *c;
	int rc;
	if (labels)
		*labels = NULL;
	if (nlabels)
		*nlabels = 0;
	if ((rc = join(path, dir, "config.json")) < 0 || (rc = read_json(path, &c)) < 0)
		return rc;
	const char *mt = json_string_value(json_object_get(c, "model_type"));
	struct enc_cfg k = *cfg;
	if (!mt) {
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: no \"model_type\"", path);
	} else if (strcmp(mt, "bert") == 0) {
		const char *pe = json_string_value(json_object_get(c, "position_embedding_type"));
		k.arch = ENC_BERT;
		if (json_object_get(c, "position_embedding_type") && (!pe || strcmp(pe, "absolute")))
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: position_embedding_type \"%s\": only "
					  "\"absolute\" is supported", path, pe ? pe : "(not a string)");
		else if (json_is_true(json_object_get(c, "is_decoder")) ||
			 json_is_true(json_object_get(c, "add_cross_attention")))
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: a decoder (is_decoder or "
					  "add_cross_attention): only encoders are supported", path);
		else if (!(rc = cfg_size(c, path, "vocab_size", 2, &k.vocab)) &&
			 !(rc = cfg_size(c, path, "hidden_size", 1, &k.dim)) &&
			 !(rc = cfg_size(c, path, "num_hidden_layers", 1, &k.layers)) &&
			 !(rc = cfg_size(c, path, "num_attention_heads", 1, &k.heads)) &&
			 !(rc = cfg_size(c, path, "intermediate_size", 1, &k.ffn)) &&
			 !(rc = cfg_size(c, path, "max_position_embeddings", 1, &k.max_pos)) &&
			 !(rc = cfg_size(c, path, "type_vocab_size", 1, &k.type_vocab)) &&
			 !(rc = cfg_num(c, path, "layer_norm_eps", 1e-12, false, &k.ln_eps)) &&
			 !(rc = cfg_act(c, path, "hidden_act", &k.act)) &&
			 !(rc = cfg_num(c, path, "hidden_dropout_prob", 0.1, true, &k.dropout)) &&
			 !(rc = cfg_num(c, path, "attention_probs_dropout_prob", 0.1, true,
					&k.attn_dropout)) &&
			 !(rc = cfg_num(c, path, "classifier_dropout", k.dropout, true,
					&k.cls_dropout)))
			rc = cfg_num(c, path, "initializer_range", 0.02, false, &k.init_range);
	} else if (strcmp(mt, "distilbert") == 0) {
		k.arch = ENC_DISTILBERT;
		k.type_vocab = 0;
		k.ln_eps = 1e-12f; /* DistilBERT's LayerNorms: nn.LayerNorm(eps=1e-12) */
		if (!(rc = cfg_size(c, path, "vocab_size", 2, &k.vocab)) &&
		    !(rc = cfg_size(c, path, "dim", 1, &k.dim)) &&
		    !(rc = cfg_size(c, path, "n_layers", 1, &k.layers)) &&
		    !(rc = cfg_size(c, path, "n_heads", 1, &k.heads)) &&
		    !(rc = cfg_size(c, path, "hidden_dim", 1, &k.ffn)) &&
		    !(rc = cfg_size(c, path, "max_position_embeddings", 1, &k.max_pos)) &&
		    !(rc = cfg_act(c, path, "activation", &k.act)) &&
		    !(rc = cfg_num(c, path, "dropout", 0.1, true, &k.dropout)) &&
		    !(rc = cfg_num(c, path, "attention_dropout", 0.1, true, &k.attn_dropout)) &&
		    !(rc = cfg_num(c, path, "seq_classif_dropout", 0.2, true, &k.cls_dropout)) &&
		    !(rc = cfg_num(c, path, "initializer_range", 0.02, false, &k.init_range)) &&
		    k.task != ENC_TASK_CLASSIFY)
			k.cls_dropout = k.dropout;
	} else {
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: model_type \"%s\": only bert and distilbert are "
				  "supported", path, mt);
	}
	if (rc == 0) {
		json_t *pad = json_object_get(c, "pad_token_id");
		json_int_t p = pad && !json_is_null(pad) ? json_integer_value(pad) : 0;
		if (pad && !json_is_null(pad) && !json_is_integer(pad))
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: \"pad_token_id\": expected an integer",
					  path);
		else if (p < 0 || p >= (json_int_t)k.vocab)
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: pad_token_id %lld is not a token of the "
					  "vocabulary of %u", path, (long long)p, k.vocab);
		else if (k.dim % k.heads)
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: %u heads do not divide the width %u", path,
					  k.heads, k.dim);
		k.pad_id = (int32_t)p;
	}
	if (rc == 0 && labels && nlabels)
		rc = read_labels(c, path, labels, nlabels);
	json_decref(c);
	if (rc == 0)
		*cfg = k;
	return rc;
}

int hf_read_tok_opts(const char *dir, struct hf_tok_opts *o)
{
	char path[PATH_LEN];
	json_t *c;
	int rc;
	hf_tok_opts_default(o);
	if ((rc = join(path, dir, "tokenizer_config.json")) < 0)
		return rc;
	if (access(path, F_OK) != 0)
		return 0;
	if ((rc = read_json(path, &c)) < 0)
		return rc;
	static const char *const flags[] = {"do_lower_case", "tokenize_chinese_chars",
					    "strip_accents"};
	int *dst[] = {&o->do_lower_case, &o->tokenize_chinese_chars, &o->strip_accents};
	for (int i = 0; i < 3 && rc == 0; i++) {
		json_t *v = json_object_get(c, flags[i]);
		if (!v || (i == 2 && json_is_null(v)))
			continue;
		if (!json_is_boolean(v))
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: \"%s\": expected true or false%s", path,
					  flags[i], i == 2 ? " or null" : "");
		else
			*dst[i] = json_is_true(v);
	}
	json_t *ml = json_object_get(c, "model_max_length");
	/* transformers writes a huge number (int(1e30)) for "no limit" */
	if (rc == 0 && json_is_integer(ml) && json_integer_value(ml) > 0 &&
	    json_integer_value(ml) <= (1 << 30))
		o->model_max_length = (uint32_t)json_integer_value(ml);
	json_decref(c);
	return rc;
}

/* ---- reading model.safetensors ---- */

struct ftensor {
	const struct fedrun_st_tensor *t;
	const char *file; /* its file's name, for messages */
	char *canon;      /* owned */
	bool used;
};

struct hf_files {
	struct fedrun_st_file *f;
	char **names;
	uint32_t nf;
	struct ftensor *t;
	uint32_t nt;
};

static void files_fini(struct hf_files *h)
{
	for (uint32_t i = 0; i < h->nf; i++) {
		fedrun_st_fini(&h->f[i]);
		free(h->names[i]);
	}
	for (uint32_t i = 0; i < h->nt; i++)
		free(h->t[i].canon);
	free(h->f);
	free(h->names);
	free(h->t);
	memset(h, 0, sizeof *h);
}

static const char *arch_prefix(const struct enc_cfg *cfg)
{
	return cfg->arch == ENC_DISTILBERT ? "distilbert." : "bert.";
}

/* The canonical form of a name (hf.h's rule); file: also a LayerNorm's
 * gamma and beta. A new string, or NULL. */
static char *canonical(const struct enc_cfg *cfg, const char *name, bool file)
{
	const char *pre = arch_prefix(cfg);
	if (strncmp(name, pre, strlen(pre)) == 0)
		name += strlen(pre);
	size_t n = strlen(name);
	char *s = malloc(n + 8);
	if (!s)
		return NULL;
	memcpy(s, name, n + 1);
	if (file && (strstr(s, "LayerNorm.") || strstr(s, "layer_norm."))) {
		if (ends_with(s, ".gamma"))
			strcpy(s + n - 6, ".weight");
		else if (ends_with(s, ".beta"))
			strcpy(s + n - 5, ".bias");
	}
	return s;
}

static int cmp_ftensor(const void *a, const void *b)
{
	return strcmp(((const struct ftensor *)a)->canon, ((const struct ftensor *)b)->canon);
}

static struct ftensor *files_find(const struct hf_files *h, const char *canon)
{
	struct ftensor key = {.canon = (char *)canon};
	return bsearch(&key, h->t, h->nt, sizeof *h->t, cmp_ftensor);
}

static int files_add(struct hf_files *h, const char *path, const char *name)
{
	struct fedrun_st_file *f = realloc(h->f, (h->nf + 1) * sizeof *f);
	if (f)
		h->f = f;
	char **names = realloc(h->names, (h->nf + 1) * sizeof *names);
	if (names)
		h->names = names;
	if (!f || !names)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (!(h->names[h->nf] = strdup(name)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = fedrun_st_read(&h->f[h->nf], path);
	if (rc < 0) {
		free(h->names[h->nf]);
		return rc;
	}
	h->nf++;
	return 0;
}

/* A shard's name from the index: a file of DIR, nothing else. */
static bool plain_name(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* DIR's safetensors file(s): model.safetensors, else the shards of
 * model.safetensors.index.json. */
static int files_open(struct hf_files *h, const char *dir, const struct enc_cfg *cfg)
{
	char path[PATH_LEN];
	int rc;
	memset(h, 0, sizeof *h);
	json_t *idx = NULL, *map = NULL;
	if ((rc = join(path, dir, "model.safetensors")) < 0)
		return rc;
	if (access(path, F_OK) == 0) {
		if ((rc = files_add(h, path, "model.safetensors")) < 0)
			return rc;
	} else {
		if ((rc = join(path, dir, "model.safetensors.index.json")) < 0)
			return rc;
		if (access(path, F_OK) != 0) {
			char bin[PATH_LEN];
			if ((rc = join(bin, dir, "pytorch_model.bin")) < 0)
				return rc;
			if (access(bin, F_OK) == 0)
				return fedrun_error(FEDRUN_EFORMAT, "%s: only model.safetensors is read, "
						    "not pytorch_model.bin (a pickle): convert it "
						    "(transformers' save_pretrained writes "
						    "safetensors)", dir);
			return fedrun_error(FEDRUN_ENOENT, "%s: no model.safetensors (nor "
					    "model.safetensors.index.json)", dir);
		}
		if ((rc = read_json(path, &idx)) < 0)
			return rc;
		map = json_object_get(idx, "weight_map");
		if (!json_is_object(map) || json_object_size(map) == 0) {
			json_decref(idx);
			return fedrun_error(FEDRUN_EFORMAT, "%s: no \"weight_map\" object", path);
		}
		const char *k;
		json_t *v;
		json_object_foreach(map, k, v) {
			const char *shard = json_string_value(v);
			if (!shard || !plain_name(shard)) {
				rc = fedrun_error(FEDRUN_EFORMAT, "%s: tensor '%s': the shard must be "
						  "the name of a file of %s", path, k, dir);
				break;
			}
			bool seen = false;
			for (uint32_t i = 0; i < h->nf && !seen; i++)
				seen = strcmp(h->names[i], shard) == 0;
			char sp[PATH_LEN];
			if (!seen && ((rc = join(sp, dir, shard)) < 0 ||
				      (rc = files_add(h, sp, shard)) < 0))
				break;
		}
		if (rc < 0) {
			json_decref(idx);
			files_fini(h);
			return rc;
		}
	}
	uint32_t nt = 0;
	for (uint32_t i = 0; i < h->nf; i++)
		nt += h->f[i].n;
	if (!(h->t = calloc(nt ? nt : 1, sizeof *h->t)))
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < h->nf && rc == 0; i++)
		for (uint32_t j = 0; j < h->f[i].n && rc == 0; j++) {
			const struct fedrun_st_tensor *t = &h->f[i].t[j];
			if (map) {
				const char *want = json_string_value(json_object_get(map, t->name));
				if (!want || strcmp(want, h->names[i]) != 0) {
					rc = fedrun_error(FEDRUN_EFORMAT, "%s/%s: tensor '%s' is not "
							  "in model.safetensors.index.json's "
							  "weight_map for this shard", dir,
							  h->names[i], t->name);
					break;
				}
			}
			struct ftensor *ft = &h->t[h->nt];
			ft->t = t;
			ft->file = h->names[i];
			if (!(ft->canon = canonical(cfg, t->name, true)))
				rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			else
				h->nt++;
		}
	if (rc == 0 && map && json_object_size(map) != h->nt)
		rc = fedrun_error(FEDRUN_EFORMAT, "%s/model.safetensors.index.json names %zu "
				  "tensors, its shards hold %u", dir, json_object_size(map), h->nt);
	json_decref(idx);
	if (rc == 0) {
		qsort(h->t, h->nt, sizeof *h->t, cmp_ftensor);
		for (uint32_t i = 1; i < h->nt && rc == 0; i++)
			if (strcmp(h->t[i - 1].canon, h->t[i].canon) == 0)
				rc = fedrun_error(FEDRUN_EFORMAT, "%s: tensors '%s' and '%s' are one "
						  "tensor by their names", dir, h->t[i - 1].t->name,
						  h->t[i].t->name);
	}
	if (rc < 0)
		files_fini(h);
	return rc;
}

static bool is_lora(const char *name)
{
	return ends_with(name, LORA_A) || ends_with(name, LORA_B);
}

static bool is_body(const struct enc_cfg *cfg, const char *canon)
{
	if (is_lora(canon))
		return false;
	return strncmp(canon, "embeddings.", 11) == 0 ||
	       strncmp(canon, cfg->arch == ENC_DISTILBERT ? "transformer." : "encoder.",
		       cfg->arch == ENC_DISTILBERT ? 12 : 8) == 0;
}

static bool is_buffer(const char *canon)
{
	return strcmp(canon, "embeddings.position_ids") == 0 ||
	       strcmp(canon, "embeddings.token_type_ids") == 0;
}

static bool same_shape(const struct fedrun_tensor_info *a, const struct fedrun_st_tensor *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (uint32_t d = 0; d < a->ndim; d++)
		if (a->shape[d] != b->shape[d])
			return false;
	return true;
}

/* The tied decoder of the file (ft) against what it is tied to: equal
 * values (as floats) when MLM, which ties them. */
static int check_tied(const char *dir, const struct hf_files *h, const struct ftensor *ft,
		      const char *to_canon)
{
	const struct ftensor *to = files_find(h, to_canon);
	int rc = 0;
	if (!to)
		return fedrun_error(FEDRUN_EFORMAT, "%s: the file has '%s' but not '%s', which it "
				    "is tied to", dir, ft->t->name, to_canon);
	uint64_t n = ft->t->bytes / fedrun_dtype_size(ft->t->dtype);
	bool eq = ft->t->ndim == to->t->ndim &&
		  to->t->bytes / fedrun_dtype_size(to->t->dtype) == n;
	for (uint32_t d = 0; eq && d < ft->t->ndim; d++)
		eq = ft->t->shape[d] == to->t->shape[d];
	if (!eq)
		return fedrun_error(FEDRUN_EFORMAT, "%s: '%s' and '%s', which it is tied to, differ "
				    "in shape", dir, ft->t->name, to->t->name);
	float *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
	if (!a || !b)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0 && (rc = fedrun_st_to_f32(ft->t, a)) == 0)
		rc = fedrun_st_to_f32(to->t, b);
	for (uint64_t i = 0; rc == 0 && i < n && eq; i++)
		eq = a[i] == b[i] || (isnan(a[i]) && isnan(b[i]));
	free(a);
	free(b);
	if (rc == 0 && !eq)
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: '%s' differs from '%s': the file's MLM decoder "
				  "is not tied to the embeddings (tie_word_embeddings false?), and "
				  "fedrun's MLM head ties them", dir, ft->t->name, to->t->name);
	return rc;
}

int hf_load_params(const char *dir, const struct enc_cfg *cfg, const struct fedrun_layout *l,
		   float *params, uint8_t *loaded, char **report)
{
	struct hf_files h;
	struct sbuf kept = {0}, skipped = {0};
	uint32_t nkept = 0, nskipped = 0, lora_kept = 0;
	char want[96], got[96];
	if (report)
		*report = NULL;
	int rc = files_open(&h, dir, cfg);
	if (rc < 0)
		return rc;
	const char *fname = h.nf == 1 ? h.names[0] : "model.safetensors.index.json";
	for (uint32_t i = 0; i < l->n && rc == 0; i++) {
		const struct fedrun_tensor_info *ti = &l->t[i];
		char *c = canonical(cfg, ti->name, false);
		if (!c) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		struct ftensor *ft = files_find(&h, c);
		bool body = is_body(cfg, c);
		free(c);
		if (loaded)
			loaded[i] = 0;
		if (ft)
			ft->used = true;
		if (ft && same_shape(ti, ft->t)) {
			if ((rc = fedrun_st_to_f32(ft->t, params + ti->offset)) < 0)
				rc = fedrun_error_wrap(rc, "%s/%s: ", dir, ft->file);
			else if (loaded)
				loaded[i] = 1;
			continue;
		}
		shape_str(ti->ndim, ti->shape, want, sizeof want);
		if (ft)
			shape_str(ft->t->ndim, ft->t->shape, got, sizeof got);
		if (body && ft)
			rc = fedrun_error(FEDRUN_EFORMAT, "%s/%s: tensor '%s': the model (config.json) "
					  "has %s, the file's '%s' %s", dir, ft->file, ti->name, want,
					  ft->t->name, got);
		else if (body)
			rc = fedrun_error(FEDRUN_EFORMAT, "%s/%s: tensor '%s' (%s) of the model is "
					  "missing", dir, fname, ti->name, want);
		else if (is_lora(ti->name) && !ft)
			lora_kept++;
		else if (ft)
			sb_add(&kept, "%s%s (the file's %s, the task's %s)", nkept++ ? ", " : "",
			       ti->name, got, want);
		else
			sb_add(&kept, "%s%s", nkept++ ? ", " : "", ti->name);
	}
	for (uint32_t j = 0; j < h.nt && rc == 0; j++) {
		struct ftensor *ft = &h.t[j];
		if (ft->used || is_buffer(ft->canon))
			continue;
		bool bert = cfg->arch == ENC_BERT;
		const char *tied = NULL;
		if (strcmp(ft->canon, bert ? "cls.predictions.decoder.weight" : "vocab_projector.weight") == 0)
			tied = "embeddings.word_embeddings.weight";
		else if (bert && strcmp(ft->canon, "cls.predictions.decoder.bias") == 0)
			tied = "cls.predictions.bias";
		if (tied && cfg->task == ENC_TASK_MLM) {
			rc = check_tied(dir, &h, ft, tied);
		} else if (is_body(cfg, ft->canon)) {
			rc = fedrun_error(FEDRUN_EFORMAT, "%s/%s: tensor '%s' is not part of the model "
					  "config.json describes (%u layers)", dir, ft->file,
					  ft->t->name, cfg->layers);
		} else {
			sb_add(&skipped, "%s%s", nskipped++ ? ", " : "", ft->t->name);
		}
	}
	if (rc == 0 && (kept.oom || skipped.oom))
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0 && report && (nkept || nskipped || lora_kept)) {
		struct sbuf r = {0};
		sb_add(&r, "%s/%s:", dir, fname);
		if (nskipped)
			sb_add(&r, " skipped %u tensor%s the task does not use: %s;", nskipped,
			       nskipped == 1 ? "" : "s", skipped.s);
		if (nkept)
			sb_add(&r, " %u tensor%s kept %s initialisation: %s;", nkept,
			       nkept == 1 ? "" : "s", nkept == 1 ? "its" : "their", kept.s);
		if (lora_kept)
			sb_add(&r, " %u LoRA adapter tensors start from their initialisation;",
			       lora_kept);
		if (r.oom) {
			free(r.s);
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		} else {
			r.s[r.len - 1] = 0; /* the last ';' */
			*report = r.s;
		}
	}
	free(kept.s);
	free(skipped.s);
	files_fini(&h);
	return rc;
}

/* ---- writing ---- */

/* The shortest decimal that reads back as x (a float of the config), as a
 * JSON number: 0.1f is written 0.1, not 0.10000000149011612. */
static json_t *json_float(float x)
{
	char buf[32];
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, (double)x);
		if (strtof(buf, NULL) == x)
			break;
	}
	return json_real(strtod(buf, NULL));
}

static const char *act_name(int act)
{
	return act == FEDRUN_ACT_GELU_ERF ? "gelu" : act == FEDRUN_ACT_GELU ? "gelu_new" : "relu";
}

static int set(json_t *o, const char *k, json_t *v)
{
	return json_object_set_new(o, k, v) == 0 ? 0 : -1;
}

static json_t *config_json(const struct enc_cfg *c, char *const *labels)
{
	static const char *const arch_names[2][4] = {
		{"BertModel", "BertForSequenceClassification", "BertForTokenClassification",
		 "BertForMaskedLM"},
		{"DistilBertModel", "DistilBertForSequenceClassification",
		 "DistilBertForTokenClassification", "DistilBertForMaskedLM"}};
	json_t *o = json_object();
	int bad = !o;
	bool d = c->arch == ENC_DISTILBERT;
	bad |= set(o, "architectures", json_pack("[s]", arch_names[d][c->task]));
	bad |= set(o, "model_type", json_string(d ? "distilbert" : "bert"));
	bad |= set(o, "vocab_size", json_integer(c->vocab));
	bad |= set(o, "max_position_embeddings", json_integer(c->max_pos));
	bad |= set(o, "initializer_range", json_float(c->init_range));
	bad |= set(o, "pad_token_id", json_integer(c->pad_id));
	bad |= set(o, "torch_dtype", json_string("float32"));
	if (d) {
		bad |= set(o, "dim", json_integer(c->dim));
		bad |= set(o, "n_layers", json_integer(c->layers));
		bad |= set(o, "n_heads", json_integer(c->heads));
		bad |= set(o, "hidden_dim", json_integer(c->ffn));
		bad |= set(o, "activation", json_string(act_name(c->act)));
		bad |= set(o, "dropout", json_float(c->dropout));
		bad |= set(o, "attention_dropout", json_float(c->attn_dropout));
		bad |= set(o, "seq_classif_dropout",
			   json_float(c->task == ENC_TASK_CLASSIFY ? c->cls_dropout : 0.2f));
		bad |= set(o, "qa_dropout", json_real(0.1));
		bad |= set(o, "sinusoidal_pos_embds", json_false());
		bad |= set(o, "tie_weights_", json_true());
	} else {
		bad |= set(o, "hidden_size", json_integer(c->dim));
		bad |= set(o, "num_hidden_layers", json_integer(c->layers));
		bad |= set(o, "num_attention_heads", json_integer(c->heads));
		bad |= set(o, "intermediate_size", json_integer(c->ffn));
		bad |= set(o, "type_vocab_size", json_integer(c->type_vocab));
		bad |= set(o, "layer_norm_eps", json_float(c->ln_eps));
		bad |= set(o, "hidden_act", json_string(act_name(c->act)));
		bad |= set(o, "hidden_dropout_prob", json_float(c->dropout));
		bad |= set(o, "attention_probs_dropout_prob", json_float(c->attn_dropout));
		bad |= set(o, "classifier_dropout",
			   c->cls_dropout == c->dropout ? json_null() : json_float(c->cls_dropout));
		bad |= set(o, "position_embedding_type", json_string("absolute"));
		bad |= set(o, "use_cache", json_true());
	}
	if (c->task == ENC_TASK_CLASSIFY || c->task == ENC_TASK_TAG) {
		json_t *i2l = json_object(), *l2i = json_object();
		bad |= set(o, "id2label", i2l) | set(o, "label2id", l2i);
		for (uint32_t i = 0; i < c->labels && !bad; i++) {
			char id[16], def[32];
			snprintf(id, sizeof id, "%u", i);
			snprintf(def, sizeof def, "LABEL_%u", i);
			const char *name = labels && labels[i] ? labels[i] : def;
			bad |= set(i2l, id, json_string(name));
			bad |= set(l2i, name, json_integer(i));
		}
		if (!bad && json_object_size(l2i) != c->labels) { /* two labels of one name */
			json_decref(o);
			fedrun_error(FEDRUN_EINVAL, "two labels of one name: label2id cannot say them");
			return NULL;
		}
	}
	if (bad) {
		json_decref(o);
		fedrun_error(FEDRUN_ENOMEM, "out of memory");
		return NULL;
	}
	return o;
}

static int write_json(const char *dir, const char *name, json_t *j)
{
	char path[PATH_LEN];
	int rc = join(path, dir, name);
	if (rc < 0)
		return rc;
	char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15))
		       : NULL;
	if (!text)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory writing %s", path);
	size_t n = strlen(text);
	char *t2 = realloc(text, n + 2);
	if (!t2) {
		free(text);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory writing %s", path);
	}
	t2[n] = '\n';
	rc = fedrun_write_file_atomic(path, t2, n + 1);
	free(t2);
	return rc;
}

static int copy_vocab(const char *dir, const char *vocab, uint32_t want)
{
	char path[PATH_LEN], *data;
	size_t n;
	int rc = join(path, dir, "vocab.txt");
	if (rc < 0 || (rc = fedrun_read_file(vocab, &data, &n)) < 0)
		return rc;
	uint64_t lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += data[i] == '\n';
	lines += n && data[n - 1] != '\n';
	if (lines != want)
		rc = fedrun_error(FEDRUN_EINVAL, "%s: %" PRIu64 " tokens, the model's vocabulary "
				  "has %u", vocab, lines, want);
	else
		rc = fedrun_write_file_atomic(path, data, n);
	free(data);
	return rc;
}

static int write_tokenizer(const char *dir, const struct enc_cfg *c, const struct hf_tok_opts *tok)
{
	struct hf_tok_opts def;
	if (!tok) {
		hf_tok_opts_default(&def);
		tok = &def;
	}
	json_t *sp = json_pack("{s:s, s:s, s:s, s:s, s:s}", "unk_token", "[UNK]", "sep_token",
			       "[SEP]", "pad_token", "[PAD]", "cls_token", "[CLS]", "mask_token",
			       "[MASK]");
	json_t *tc = json_deep_copy(sp);
	int rc = 0;
	if (!tc || set(tc, "do_lower_case", json_boolean(tok->do_lower_case)) ||
	    set(tc, "strip_accents", tok->strip_accents < 0 ? json_null()
							    : json_boolean(tok->strip_accents)) ||
	    set(tc, "tokenize_chinese_chars", json_boolean(tok->tokenize_chinese_chars)) ||
	    set(tc, "model_max_length",
		json_integer(tok->model_max_length ? tok->model_max_length : c->max_pos)) ||
	    set(tc, "tokenizer_class", json_string(c->arch == ENC_DISTILBERT ? "DistilBertTokenizer"
									       : "BertTokenizer")) ||
	    set(tc, "clean_up_tokenization_spaces", json_true()))
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0)
		rc = write_json(dir, "special_tokens_map.json", sp);
	if (rc == 0)
		rc = write_json(dir, "tokenizer_config.json", tc);
	json_decref(sp);
	json_decref(tc);
	return rc;
}

/* The files of a new directory, removed when it is abandoned. */
static const char *const dir_files[] = {"config.json",		  "model.safetensors",
					"vocab.txt",		  "tokenizer_config.json",
					"special_tokens_map.json", "fedrun.json",
					"frozen.safetensors"};

static void remove_dir(const char *dir)
{
	char path[PATH_LEN];
	for (size_t i = 0; i < sizeof dir_files / sizeof *dir_files; i++)
		if (join(path, dir, dir_files[i]) == 0)
			unlink(path);
	rmdir(dir);
}

/* A new empty directory beside dir ("DIR.tmp-XXXXXX"), into tmp. */
static int make_tmp_dir(const char *dir, const char *what, char *tmp)
{
	if ((size_t)snprintf(tmp, PATH_LEN, "%s.%s-XXXXXX", dir, what) >= PATH_LEN)
		return fedrun_error(FEDRUN_EINVAL, "%s: path too long", dir);
	if (!mkdtemp(tmp))
		return fedrun_error(FEDRUN_EIO, "cannot create a directory beside %s (%s): %s", dir,
				    tmp, strerror(errno));
	return 0;
}

/* dir: absent, or an empty directory (which the rename replaces). */
static int check_new_dir(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) != 0)
		return errno == ENOENT ? 0 : fedrun_error(FEDRUN_EIO, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fedrun_error(FEDRUN_EINVAL, "%s exists and is not a directory: not overwritten",
				    dir);
	DIR *d = opendir(dir);
	if (!d)
		return fedrun_error(FEDRUN_EIO, "%s: %s", dir, strerror(errno));
	struct dirent *e;
	bool empty = true;
	while (empty && (e = readdir(d)))
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(d);
	return empty ? 0 : fedrun_error(FEDRUN_EINVAL, "%s exists and is not empty: not overwritten",
					 dir);
}

/* The layout's tensors as the model's: LoRA pairs merged into their
 * weights (new arrays in merged[i], NULL where a tensor is written as it
 * is) and left out (skip[i]). */
static int lora_merge(const struct enc_cfg *c, const struct fedrun_layout *l, const float *params,
		      float **merged, uint8_t *skip)
{
	char name[FEDRUN_NAME_MAX + 16];
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		if (is_lora(t->name)) {
			skip[i] = 1;
			size_t n = strlen(t->name) - strlen(LORA_A);
			snprintf(name, sizeof name, "%.*s.weight", (int)n, t->name);
			if (fedrun_layout_find(l, name) < 0)
				return fedrun_error(FEDRUN_EINVAL, "LoRA tensor '%s' has no weight '%s'",
						    t->name, name);
			continue;
		}
		if (!ends_with(t->name, ".weight") || t->ndim != 2)
			continue;
		size_t n = strlen(t->name) - strlen(".weight");
		snprintf(name, sizeof name, "%.*s" LORA_A, (int)n, t->name);
		int64_t ia = fedrun_layout_find(l, name);
		snprintf(name, sizeof name, "%.*s" LORA_B, (int)n, t->name);
		int64_t ib = fedrun_layout_find(l, name);
		if (ia < 0 && ib < 0)
			continue;
		if (ia < 0 || ib < 0)
			return fedrun_error(FEDRUN_EINVAL, "'%s': a LoRA %s without its %s", t->name,
					    ia < 0 ? "B" : "A", ia < 0 ? "A" : "B");
		const struct fedrun_tensor_info *A = &l->t[ia], *B = &l->t[ib];
		uint64_t out = t->shape[0], in = t->shape[1], r = A->shape[0];
		if (A->ndim != 2 || B->ndim != 2 || A->shape[1] != in || B->shape[0] != out ||
		    B->shape[1] != r)
			return fedrun_error(FEDRUN_EINVAL, "'%s': LoRA shapes do not fit the weight's",
					    t->name);
		if (c->lora_r != r || !(c->lora_alpha > 0))
			return fedrun_error(FEDRUN_EINVAL, "'%s': LoRA rank %" PRIu64 ", the config's "
					    "%u (alpha %g)", t->name, r, c->lora_r,
					    (double)c->lora_alpha);
		float *m = malloc(t->numel * sizeof *m);
		if (!m)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		/* W + (alpha / r) B A, each entry's sum in double, rounded once */
		double s = (double)c->lora_alpha / (double)c->lora_r;
		const float *w = params + t->offset, *a = params + A->offset, *b = params + B->offset;
		for (uint64_t o = 0; o < out; o++)
			for (uint64_t j = 0; j < in; j++) {
				double sum = 0;
				for (uint64_t k = 0; k < r; k++)
					sum += (double)b[o * r + k] * (double)a[k * in + j];
				m[o * in + j] = (float)((double)w[o * in + j] + s * sum);
			}
		merged[i] = m;
	}
	return 0;
}

static int write_model(const char *dir, const char *file, const struct enc_cfg *c,
		       const struct fedrun_layout *l, const float *params, const uint8_t *which)
{
	char path[PATH_LEN];
	int rc = join(path, dir, file);
	if (rc < 0)
		return rc;
	float **merged = calloc(l->n ? l->n : 1, sizeof *merged);
	uint8_t *skip = calloc(l->n ? l->n : 1, 1);
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	if (!merged || !skip)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0 && !which)
		rc = lora_merge(c, l, params, merged, skip);
	if (rc == 0)
		rc = fedrun_st_meta_set(&f, "format", "pt");
	for (uint32_t i = 0; i < l->n && rc == 0; i++) {
		if (skip[i] || (which && !which[i]))
			continue;
		const struct fedrun_tensor_info *t = &l->t[i];
		rc = fedrun_st_add(&f, t->name, FEDRUN_F32, t->ndim, t->shape,
				   merged[i] ? merged[i] : params + t->offset);
	}
	if (rc == 0)
		rc = fedrun_st_write(&f, path);
	fedrun_st_fini(&f);
	for (uint32_t i = 0; merged && i < l->n; i++)
		free(merged[i]);
	free(merged);
	free(skip);
	return rc;
}

/* What hf_write_dir and hf_write_run_meta both write. */
static int write_common(const char *dir, const struct enc_cfg *c, const char *vocab,
			char *const *labels, const struct hf_tok_opts *tok)
{
	if (c->arch == ENC_DISTILBERT && c->ln_eps != 1e-12f)
		return fedrun_error(FEDRUN_EINVAL, "DistilBERT's LayerNorm eps is 1e-12 in "
				    "transformers, the model's %g", (double)c->ln_eps);
	if ((unsigned)c->task > ENC_TASK_MLM)
		return fedrun_error(FEDRUN_EINVAL, "task %d is not one of net.h's", (int)c->task);
	json_t *cj = config_json(c, labels);
	if (!cj)
		return fedrun_error_wrap(FEDRUN_EINVAL, "%s/config.json: ", dir);
	int rc = write_json(dir, "config.json", cj);
	json_decref(cj);
	if (rc == 0)
		rc = copy_vocab(dir, vocab, c->vocab);
	if (rc == 0)
		rc = write_tokenizer(dir, c, tok);
	return rc;
}

static void strip_slashes(char *s)
{
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = 0;
}

int hf_write_dir(const char *dir_in, const struct enc_cfg *c, const struct fedrun_layout *l,
		 const float *params, const char *vocab, char *const *labels,
		 const struct hf_tok_opts *tok)
{
	char dir[PATH_LEN], tmp[PATH_LEN];
	if ((size_t)snprintf(dir, sizeof dir, "%s", dir_in) >= sizeof dir)
		return fedrun_error(FEDRUN_EINVAL, "%s: path too long", dir_in);
	strip_slashes(dir);
	int rc = check_new_dir(dir);
	if (rc < 0 || (rc = make_tmp_dir(dir, "tmp", tmp)) < 0)
		return rc;
	rc = write_common(tmp, c, vocab, labels, tok);
	if (rc == 0)
		rc = write_model(tmp, "model.safetensors", c, l, params, NULL);
	if (rc == 0 && (rc = check_new_dir(dir)) == 0 && rename(tmp, dir) != 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot rename %s to %s: %s", tmp, dir, strerror(errno));
	if (rc < 0) {
		remove_dir(tmp);
		return fedrun_error_wrap(rc, "%s: ", dir);
	}
	return 0;
}

int hf_write_run_meta(const char *run_dir, const struct enc_cfg *c,
		      const struct fedrun_layout *l, const float *params, const uint8_t *travels,
		      const char *vocab, char *const *labels, const struct hf_tok_opts *tok)
{
	char dir[PATH_LEN], tmp[PATH_LEN], old[PATH_LEN];
	int rc = join(dir, run_dir, "hf");
	if (rc < 0 || (rc = make_tmp_dir(dir, "tmp", tmp)) < 0)
		return rc;
	uint8_t *frozen = calloc(l->n ? l->n : 1, 1);
	bool any = false;
	for (uint32_t i = 0; frozen && travels && i < l->n; i++)
		any |= (frozen[i] = !travels[i]);
	if (!frozen)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0)
		rc = write_common(tmp, c, vocab, labels, tok);
	if (rc == 0 && any)
		rc = write_model(tmp, "frozen.safetensors", c, l, params, frozen);
	free(frozen);
	json_t *fj = rc == 0 ? json_pack("{s:s, s:s, s:I, s:o, s:I, s:o}", "format", "fedrun-hf-1",
					 "task", hf_task_name(c->task), "lora_r",
					 (json_int_t)c->lora_r, "lora_alpha",
					 json_float(c->lora_alpha), "labels", (json_int_t)c->labels,
					 "frozen", any ? json_string("frozen.safetensors") : json_null())
			     : NULL;
	if (rc == 0)
		rc = write_json(tmp, "fedrun.json", fj);
	json_decref(fj);
	/* An earlier create's hf/ (a resumed run) makes way as a whole. */
	struct stat st;
	bool had = rc == 0 && stat(dir, &st) == 0;
	if (had && (rc = make_tmp_dir(dir, "old", old)) == 0 && rename(dir, old) != 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot rename %s to %s: %s", dir, old, strerror(errno));
	if (rc == 0 && rename(tmp, dir) != 0) {
		rc = fedrun_error(FEDRUN_EIO, "cannot rename %s to %s: %s", tmp, dir, strerror(errno));
		if (had)
			rename(old, dir);
	}
	if (rc < 0) {
		remove_dir(tmp);
		if (had)
			rmdir(old); /* the empty one mkdtemp made, when rename failed */
		return fedrun_error_wrap(rc, "%s: ", dir);
	}
	if (had)
		remove_dir(old);
	return 0;
}

/* ---- fedrun export-hf ---- */

/* The newest round of RUN/checkpoints, or 0. */
static uint32_t last_round(const char *run_dir)
{
	char path[PATH_LEN];
	if (join(path, run_dir, "checkpoints") < 0)
		return 0;
	DIR *d = opendir(path);
	uint32_t best = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		unsigned rd;
		char tail[32];
		if (sscanf(e->d_name, "round-%u.%31s", &rd, tail) == 2 &&
		    strcmp(tail, "safetensors") == 0 && rd > best)
			best = rd;
	}
	if (d)
		closedir(d);
	return best;
}

/* The tensors of f (the run's parameters: not its "__" entries) into the
 * layout l; copy_tensors fills them in once the arena exists. */
static int add_tensors(const struct fedrun_st_file *f, const char *path, struct fedrun_layout *l)
{
	for (uint32_t i = 0; i < f->n; i++) {
		const struct fedrun_st_tensor *t = &f->t[i];
		if (strncmp(t->name, "__", 2) == 0)
			continue;
		if (t->dtype != FEDRUN_F32 || t->ndim < 1 || t->ndim > FEDRUN_DIMS_MAX)
			return fedrun_error(FEDRUN_EFORMAT, "%s: tensor '%s' is not a parameter tensor "
					    "(F32, 1 to %d dimensions)", path, t->name,
					    FEDRUN_DIMS_MAX);
		if (fedrun_layout_find(l, t->name) >= 0)
			return fedrun_error(FEDRUN_EFORMAT, "%s: tensor '%s' is in the checkpoint and "
					    "in hf/frozen.safetensors", path, t->name);
		int rc = fedrun_layout_add(l, t->name, t->ndim, t->shape);
		if (rc < 0)
			return fedrun_error_wrap(rc, "%s: ", path);
	}
	return 0;
}

static void copy_tensors(const struct fedrun_st_file *f, const struct fedrun_layout *l,
			 float *params)
{
	for (uint32_t i = 0; i < f->n; i++) {
		int64_t k = strncmp(f->t[i].name, "__", 2) ? fedrun_layout_find(l, f->t[i].name) : -1;
		if (k >= 0)
			memcpy(params + l->t[k].offset, f->t[i].data, f->t[i].bytes);
	}
}

int hf_export_run(const char *run_dir, const char *checkpoint, const char *dir)
{
	char hf[PATH_LEN], path[PATH_LEN], ck[PATH_LEN];
	struct stat st;
	json_t *fj = NULL;
	char **labels = NULL;
	uint32_t nlabels = 0;
	struct fedrun_st_file f, fz;
	struct fedrun_layout l;
	float *params = NULL;
	struct enc_cfg c;
	struct hf_tok_opts tok;
	const char *frozen;
	int rc;
	memset(&c, 0, sizeof c);
	fedrun_st_init(&f);
	fedrun_st_init(&fz);
	fedrun_layout_init(&l);
	if ((rc = join(path, run_dir, "pipeline.json")) < 0 || (rc = join(hf, run_dir, "hf")) < 0)
		return rc;
	if (stat(run_dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return fedrun_error(FEDRUN_ENOENT, "%s: not a directory", run_dir);
	if (access(path, F_OK) != 0)
		return fedrun_error(FEDRUN_EINVAL, "%s: not a run directory (no pipeline.json)",
				    run_dir);
	if ((rc = join(path, hf, "fedrun.json")) < 0)
		return rc;
	if (access(path, F_OK) != 0)
		return fedrun_error(FEDRUN_EINVAL, "%s: no hf/fedrun.json: the run's model is not "
				    "an encoder (the encoder model writes hf/ when its run starts)",
				    run_dir);
	if ((rc = read_json(path, &fj)) < 0)
		return rc;
	json_t *jl = json_object_get(fj, "labels"), *jr = json_object_get(fj, "lora_r"),
	       *ja = json_object_get(fj, "lora_alpha");
	int task = hf_task_parse(json_string_value(json_object_get(fj, "task")));
	if (task < 0 || !json_is_integer(jl) || !json_is_integer(jr) || !json_is_number(ja) ||
	    json_integer_value(jl) < 0 || json_integer_value(jl) > (1 << 20) ||
	    json_integer_value(jr) < 0 || json_integer_value(jr) > (1 << 20)) {
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: expected task, labels, lora_r and lora_alpha",
				  path);
		goto out;
	}
	c.task = (enum enc_task)task;
	c.labels = (uint32_t)json_integer_value(jl);
	c.lora_r = (uint32_t)json_integer_value(jr);
	c.lora_alpha = (float)json_number_value(ja);
	if ((rc = hf_read_config(hf, &c, &labels, &nlabels)) < 0)
		goto out;
	if ((c.task == ENC_TASK_CLASSIFY || c.task == ENC_TASK_TAG) && nlabels != c.labels) {
		rc = fedrun_error(FEDRUN_EFORMAT, "%s/config.json: %u labels, fedrun.json %u", hf,
				  nlabels, c.labels);
		goto out;
	}
	if ((rc = hf_read_tok_opts(hf, &tok)) < 0)
		goto out;

	if (checkpoint) {
		snprintf(ck, sizeof ck, "%s", checkpoint);
	} else if ((rc = join(ck, run_dir, "final.safetensors")) < 0) {
		goto out;
	} else if (access(ck, F_OK) != 0) {
		uint32_t last = last_round(run_dir);
		if (last)
			rc = fedrun_error(FEDRUN_ENOENT, "%s: no final.safetensors: the run has not "
					  "finished; its last checkpoint is round %u (--round %u "
					  "exports it)", run_dir, last, last);
		else
			rc = fedrun_error(FEDRUN_ENOENT, "%s: no final.safetensors and no checkpoint: "
					  "the run has not finished a round", run_dir);
		goto out;
	}
	if ((rc = fedrun_st_read(&f, ck)) < 0)
		goto out;
	if (fedrun_st_checksum_kind(&f) != FEDRUN_ST_CHECKSUM_FULL) {
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: no checksum over its header and data: not a "
				  "checkpoint this fedrun wrote", ck);
		goto out;
	}
	if ((rc = add_tensors(&f, ck, &l)) < 0)
		goto out;
	frozen = json_string_value(json_object_get(fj, "frozen"));
	if (frozen) {
		if (!plain_name(frozen)) {
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: \"frozen\" must name a file of hf/", path);
			goto out;
		}
		if ((rc = join(path, hf, frozen)) < 0 || (rc = fedrun_st_read(&fz, path)) < 0 ||
		    (rc = add_tensors(&fz, path, &l)) < 0)
			goto out;
	}
	if (!(params = fedrun_arena_alloc(l.total))) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	copy_tensors(&f, &l, params);
	copy_tensors(&fz, &l, params);
	rc = join(path, hf, "vocab.txt");
	if (rc == 0)
		rc = hf_write_dir(dir, &c, &l, params, path, labels, &tok);
out:
	fedrun_arena_free(params);
	fedrun_layout_fini(&l);
	fedrun_st_fini(&f);
	fedrun_st_fini(&fz);
	hf_labels_free(labels, nlabels);
	json_decref(fj);
	return rc;
}
