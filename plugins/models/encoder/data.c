/* SPDX-License-Identifier: Apache-2.0 */
/* The encoder's data: examples read from tsv or jsonl records (or text
 * lines for mlm), cut into wordpieces by the model's tokenizer, and
 * partitioned into clients by FedNLP's schemes (Lin et al. 2022, sec. 3:
 * uniform, label skew by Dirichlet alpha, quantity skew); batches with the
 * MLM masks of Devlin et al. (2019, sec. 3.1). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "encoder.h"
#include "wplearn.h"

enum {
	SCHEME_IID = FEDRUN_PARTITION_IID,
	SCHEME_FILES = FEDRUN_PARTITION_FILES,
	SCHEME_DIRICHLET = FEDRUN_PARTITION_DIRICHLET,
	SCHEME_QUANTITY = FEDRUN_PARTITION_QUANTITY
};
static const char *const split_key[3] = {"train", "valid", "test"};

struct data_opts {
	json_t *files[3]; /* checked by fedrun_opts_files */
	json_t *partition;
	int64_t max_train;
	json_t *format, *columns, *fields, *header; /* fedrun_records_config's */
};

static const struct fedrun_opt data_spec[] = {
    {"train", FEDRUN_OPT_ANY, offsetof(struct data_opts, files[0]), FEDRUN_OPT_REQUIRED, 0, 0, 0,
     NULL, NULL},
    {"valid", FEDRUN_OPT_ANY, offsetof(struct data_opts, files[1]), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"test", FEDRUN_OPT_ANY, offsetof(struct data_opts, files[2]), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"partition", FEDRUN_OPT_OBJECT, offsetof(struct data_opts, partition), FEDRUN_OPT_OPTIONAL, 0,
     0, 0, NULL, NULL},
    {"max_train_examples", FEDRUN_OPT_INT, offsetof(struct data_opts, max_train), 0, 0, 1e15, 0,
     NULL, NULL},
    FEDRUN_RECORDS_OPTS(struct data_opts),
    FEDRUN_OPT_END_,
};

/* ---- reading ---- */

struct reader {
	struct enc_model *m;
	struct enc_split *s;
	uint64_t cap;
	const char *file;
	uint32_t file_index;
	uint32_t *file_of; /* per example: the file it came from */
	uint64_t cap_file;
	bool train; /* labels may be added */
	int32_t *wp; /* scratch wordpieces */
	size_t cap_wp;
	int32_t *first; /* tag: the first piece of each word */
	const char **words;
	size_t cap_words, cap_first;
	char *text; /* tag: a copy of the text, cut into words */
	size_t cap_text;
};

static int push_example(struct reader *r, const struct enc_example *e)
{
	struct enc_split *s = r->s;
	if (s->n == r->cap) {
		uint64_t nc = r->cap ? 2 * r->cap : 256;
		struct enc_example *ne = realloc(s->ex, nc * sizeof *ne);
		uint32_t *nf = realloc(r->file_of, nc * sizeof *nf);
		if (ne)
			s->ex = ne;
		if (nf)
			r->file_of = nf;
		if (!ne || !nf)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		r->cap = nc;
	}
	r->file_of[s->n] = r->file_index;
	s->ex[s->n++] = *e;
	return 0;
}

/* The id of label text (len bytes); only the training data add labels. */
static int label_id(struct reader *r, uint64_t line, const char *t, size_t len, int32_t *id)
{
	uint32_t before = fedrun_labels_count(r->m->labels), v;
	int rc = fedrun_labels_id(r->m->labels, t, len, &v);
	if (rc < 0)
		return rc;
	if (!r->train && fedrun_labels_count(r->m->labels) != before)
		return fedrun_error(FEDRUN_EFORMAT,
				    "%s:%llu: label \"%.*s\" does not occur in the training data",
				    r->file, (unsigned long long)line, (int)(len > 64 ? 64 : len), t);
	*id = (int32_t)v;
	return 0;
}

/* [CLS] pieces [SEP], at most max_len in all. */
static int wrap_ids(const struct enc_model *m, const int32_t *wp, uint32_t n, int32_t **ids,
		    uint32_t *len)
{
	uint32_t keep = n > m->max_len - 2 ? m->max_len - 2 : n;
	int32_t *v = malloc((keep + 2) * sizeof *v);
	if (!v)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	v[0] = m->cls_id;
	memcpy(v + 1, wp, keep * sizeof *v);
	v[keep + 1] = m->sep_id;
	*ids = v;
	*len = keep + 2;
	return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t nc = need > 2 * *cap ? need : 2 * *cap;
	void *q = realloc(*p, nc * size);
	if (!q)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	*p = q;
	*cap = nc;
	return 0;
}

/* The wordpieces of a text into r->wp (n of them; a text of more than
 * fit in max_len - 2 is cut there). */
static int encode_text(struct reader *r, uint64_t line, const char *t, size_t len, size_t *n)
{
	const size_t max = r->m->max_len - 2;
	int rc = grow((void **)&r->wp, &r->cap_wp, max, sizeof *r->wp);
	if (rc == 0)
		rc = wp_encode(r->m->tok, t, len, r->wp, max, n);
	if (rc < 0)
		return fedrun_error_wrap(rc, "%s:%llu: ", r->file, (unsigned long long)line);
	if (*n > max)
		*n = max;
	return 0;
}

/* Tagging: the text's words (cut at spaces and tabs) tokenized one by one;
 * r->first[w] is word w's first piece (-1: none, or cut off). */
static int encode_words(struct reader *r, uint64_t line, const char *t, size_t len, size_t *nw,
			size_t *n)
{
	const size_t max = r->m->max_len - 2;
	int rc = grow((void **)&r->text, &r->cap_text, len + 1, 1);
	if (rc == 0)
		rc = grow((void **)&r->wp, &r->cap_wp, max, sizeof *r->wp);
	if (rc < 0)
		return rc;
	memcpy(r->text, t, len);
	r->text[len] = 0;
	*nw = 0;
	for (char *p = r->text; *p;) {
		while (*p == ' ' || *p == '\t')
			*p++ = 0;
		if (!*p)
			break;
		if ((rc = grow((void **)&r->words, &r->cap_words, *nw + 1, sizeof *r->words)) < 0 ||
		    (rc = grow((void **)&r->first, &r->cap_first, *nw + 1, sizeof *r->first)) < 0)
			return rc;
		r->words[(*nw)++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	rc = wp_encode_words(r->m->tok, r->words, *nw, r->wp, r->first, max, n);
	if (rc < 0)
		return fedrun_error_wrap(rc, "%s:%llu: ", r->file, (unsigned long long)line);
	if (*n > max)
		*n = max;
	return 0;
}

/* One record: value[0] the text, value[1] the label (classify) or the
 * space-separated tags of the text's space-separated words (tag). */
static int on_record(void *ud, uint64_t line, const char *const *value, const size_t *len)
{
	struct reader *r = ud;
	struct enc_model *m = r->m;
	struct enc_example e = {.label = -1};
	const enum enc_task task = m->cfg.task;
	size_t n = 0, nw = 0;
	int rc = task == ENC_TASK_TAG ? encode_words(r, line, value[0], len[0], &nw, &n)
				      : encode_text(r, line, value[0], len[0], &n);
	if (rc < 0)
		return rc;
	if (n == 0)
		return 0; /* nothing left to read: skipped as a blank record */
	if ((rc = wrap_ids(m, r->wp, (uint32_t)n, &e.ids, &e.len)) < 0)
		return rc;
	if (task == ENC_TASK_CLASSIFY) {
		rc = label_id(r, line, value[1], len[1], &e.label);
	} else if (task == ENC_TASK_TAG) {
		/* first-subword labelling: the word's tag on its first piece */
		if (!(e.tags = malloc(e.len * sizeof *e.tags))) {
			free(e.ids);
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		for (uint32_t i = 0; i < e.len; i++)
			e.tags[i] = -1;
		const char *t = value[1], *end = value[1] + len[1];
		size_t w = 0;
		uint64_t tagged = 0;
		for (; rc == 0; w++) {
			while (t < end && (*t == ' ' || *t == '\t'))
				t++;
			if (t == end)
				break;
			const char *q = t;
			while (q < end && *q != ' ' && *q != '\t')
				q++;
			if (w >= nw) {
				rc = fedrun_error(FEDRUN_EFORMAT,
						  "%s:%llu: more tags than the %zu words", r->file,
						  (unsigned long long)line, nw);
				break;
			}
			int32_t id;
			rc = label_id(r, line, t, (size_t)(q - t), &id);
			if (rc == 0 && r->first[w] >= 0 && (size_t)r->first[w] < n) {
				e.tags[r->first[w] + 1] = id; /* + 1: after [CLS] */
				tagged++;
			}
			t = q;
		}
		if (rc == 0 && w < nw)
			rc = fedrun_error(FEDRUN_EFORMAT, "%s:%llu: %zu tags for %zu words", r->file,
					  (unsigned long long)line, w, nw);
		r->s->words_cut += nw - tagged;
	}
	if (rc == 0)
		rc = push_example(r, &e);
	if (rc < 0) {
		free(e.ids);
		free(e.tags);
	}
	return rc;
}

/* data.format "text" (mlm): each non-empty line a record of one role, the
 * text, as fedrun_records_read gives tsv and jsonl records (at most max
 * when max > 0; a CR before the newline dropped). */
static int text_lines(const char *path, uint64_t max, fedrun_record_fn fn, void *ud)
{
	char *data;
	size_t n;
	int rc = fedrun_read_file(path, &data, &n);
	if (rc < 0)
		return rc;
	uint64_t line = 0, records = 0;
	for (size_t i = 0; i < n && rc == 0 && (!max || records < max);) {
		size_t j = i;
		while (j < n && data[j] != '\n')
			j++;
		size_t e = j;
		if (e > i && data[e - 1] == '\r')
			e--;
		line++;
		size_t bad = 0;
		if (memchr(data + i, 0, e - i) || !fedrun_utf8_valid(data + i, e - i, &bad)) {
			rc = fedrun_error(FEDRUN_EFORMAT, "%s:%llu: %s at byte %zu", path,
					  (unsigned long long)line,
					  memchr(data + i, 0, e - i) ? "a NUL byte" : "invalid UTF-8",
					  bad + 1);
			break;
		}
		if (e > i) {
			const char *v[2] = {data + i, NULL};
			size_t l[2] = {e - i, 0};
			char save = data[e];
			data[e] = 0;
			rc = fn(ud, line, v, l);
			data[e] = save;
			records++;
		}
		i = j + 1;
	}
	free(data);
	return rc;
}

static int read_split(struct enc_model *m, int s, json_t *data, const char *dpath,
		      const struct fedrun_records_format *fmt, uint64_t max, uint32_t **file_of,
		      uint32_t *nfiles, char ***names)
{
	const char **f = NULL;
	uint32_t nf = 0;
	int rc = fedrun_opts_files(data, split_key[s], dpath, &f, &nf);
	*nfiles = 0;
	if (rc < 0 || nf == 0) {
		free(f);
		return rc;
	}
	if (names && !(*names = calloc(nf, sizeof **names))) {
		free(f);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	struct reader r = {.m = m, .s = &m->split[s], .train = s == 0};
	m->split[s].present = true;
	for (uint32_t i = 0; i < nf && rc == 0; i++) {
		const char *path = f[i];
		r.file = path;
		r.file_index = i;
		uint64_t left = max ? max - (m->split[s].n < max ? m->split[s].n : max) : 0;
		if (max && left == 0)
			break;
		if (fmt->kind == FEDRUN_RECORDS_TEXT)
			rc = text_lines(path, left, on_record, &r);
		else
			rc = fedrun_records_read(path, fmt, left, on_record, &r);
		if (rc == 0 && names) {
			const char *b = strrchr(f[i], '/');
			if (!((*names)[i] = strdup(b ? b + 1 : f[i])))
				rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
	}
	if (rc == 0 && m->split[s].n == 0)
		rc = fedrun_error(FEDRUN_EFORMAT, "data.%s: no examples", split_key[s]);
	free(r.wp);
	free(r.first);
	free(r.words);
	free(r.text);
	free(f);
	*file_of = r.file_of;
	*nfiles = nf;
	return rc;
}

/* ---- learning the vocabulary ---- */

struct counting {
	struct wpl_counter *c;
	struct wp_options wo;
	const char *file;
};

static int count_word(void *ud, const char *w, size_t len)
{
	return wpl_counter_add(((struct counting *)ud)->c, w, len);
}

static int count_record(void *ud, uint64_t line, const char *const *value, const size_t *len)
{
	struct counting *k = ud;
	int rc = wp_basic_words(&k->wo, value[0], len[0], count_word, k);
	return rc < 0 ? fedrun_error_wrap(rc, "%s:%llu: ", k->file, (unsigned long long)line) : 0;
}

/* model.vocab_size without a vocabulary: WordPiece pieces learned from the
 * training text's basic words (wplearn.h), as BERT's own were from its
 * corpus. The vocabulary (one token a line) is kept in m->vocab_text for
 * the run directory. */
static int learn_vocab(struct enc_model *m, const char *const *files, uint32_t nf,
		       const struct fedrun_records_format *fmt, uint64_t max)
{
	static const char *const specials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
	struct counting k = {0};
	wp_options_default(&k.wo);
	k.wo.lowercase = m->tok_opts.do_lower_case;
	k.wo.strip_accents = m->tok_opts.strip_accents;
	k.wo.tokenize_chinese_chars = m->tok_opts.tokenize_chinese_chars;
	int rc = wpl_counter_create(&k.c);
	for (uint32_t i = 0; i < nf && rc == 0; i++) {
		k.file = files[i];
		rc = fmt->kind == FEDRUN_RECORDS_TEXT
			 ? text_lines(files[i], max, count_record, &k)
			 : fedrun_records_read(files[i], fmt, max, count_record, &k);
	}
	char **v = NULL;
	uint32_t nv = 0;
	struct wpl_opts o = {.vocab_size = m->vocab_size,
			     .min_frequency = 2,
			     .specials = specials,
			     .n_specials = 5};
	if (rc == 0)
		rc = wpl_counter_learn(k.c, &o, &v, &nv);
	wpl_counter_destroy(k.c);
	size_t bytes = 0;
	for (uint32_t i = 0; rc == 0 && i < nv; i++)
		bytes += strlen(v[i]) + 1;
	char *buf = rc == 0 ? malloc(bytes ? bytes : 1) : NULL;
	if (rc == 0 && !buf)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (size_t off = 0, i = 0; rc == 0 && i < nv; i++) {
		size_t l = strlen(v[i]);
		memcpy(buf + off, v[i], l);
		buf[off + l] = '\n';
		off += l + 1;
	}
	wpl_free(v, nv);
	if (rc < 0) {
		free(buf);
		return fedrun_error_wrap(rc, "model.vocab_size: ");
	}
	if (!(m->vocab_text = malloc(bytes ? bytes : 1))) {
		free(buf);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	memcpy(m->vocab_text, buf, bytes);
	m->vocab_bytes = bytes;
	/* the tokenizer owns buf from here */
	return wp_load_buffer("model.vocab_size (learned)", buf, bytes, &k.wo, &m->tok);
}

/* ---- partition ---- */

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Groups split s's examples by client: order[] lists them client by
 * client, client_start[k] where client k begins; within a client in
 * example order, or by length (then example order) when by_len. */
static int group(struct enc_split *sp, const uint32_t *assign, uint32_t K, bool by_len)
{
	sp->client_start = calloc((size_t)K + 1, sizeof *sp->client_start);
	sp->order = malloc((sp->n ? sp->n : 1) * sizeof *sp->order);
	if (!sp->client_start || !sp->order)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < sp->n; i++)
		sp->client_start[assign[i] + 1]++;
	for (uint32_t k = 0; k < K; k++)
		sp->client_start[k + 1] += sp->client_start[k];
	uint64_t *pos = malloc((size_t)K * sizeof *pos);
	if (!pos)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	memcpy(pos, sp->client_start, (size_t)K * sizeof *pos);
	for (uint64_t i = 0; i < sp->n; i++)
		sp->order[pos[assign[i]]++] = i;
	free(pos);
	if (!by_len)
		return 0;
	/* keys length << 40 | index (lengths < 2^24, indices < 2^40), sorted */
	if (sp->n >> 40)
		return fedrun_error(FEDRUN_EINVAL, "%llu examples: too many to sort",
				    (unsigned long long)sp->n);
	for (uint64_t j = 0; j < sp->n; j++)
		sp->order[j] |= (uint64_t)sp->ex[sp->order[j]].len << 40;
	for (uint32_t k = 0; k < K; k++)
		qsort(sp->order + sp->client_start[k], sp->client_start[k + 1] - sp->client_start[k],
		      sizeof *sp->order, cmp_u64);
	for (uint64_t j = 0; j < sp->n; j++)
		sp->order[j] &= ((uint64_t)1 << 40) - 1;
	return 0;
}

static int partition(struct enc_model *m, const struct fedrun_partition_opts *po, uint64_t seed,
		     uint32_t *const file_of[3], const uint32_t nfiles[3])
{
	const uint32_t K = m->nclients;
	uint32_t n_cat = m->cfg.task == ENC_TASK_CLASSIFY ? fedrun_labels_count(m->labels) : 0;
	double *props = NULL;
	uint32_t *assign = NULL, *cat = NULL;
	int rc = 0;
	if (po->scheme == SCHEME_DIRICHLET || po->scheme == SCHEME_QUANTITY) {
		uint32_t rows = po->scheme == SCHEME_DIRICHLET ? n_cat : 1;
		if (!(props = malloc((size_t)rows * K * sizeof *props)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	for (int s = 0; s < 3 && rc == 0; s++) {
		struct enc_split *sp = &m->split[s];
		if (!sp->present || (s > 0 && po->eval == FEDRUN_PARTITION_EVAL_SERVER &&
				     !(po->scheme == SCHEME_FILES && nfiles[s] == K && K > 1)))
			continue;
		free(assign);
		free(cat);
		assign = malloc((sp->n ? sp->n : 1) * sizeof *assign);
		cat = malloc((sp->n ? sp->n : 1) * sizeof *cat);
		if (!assign || !cat) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		for (uint64_t i = 0; i < sp->n; i++)
			cat[i] = n_cat ? (uint32_t)sp->ex[i].label : 0;
		switch (po->scheme) {
		case SCHEME_FILES:
			if (nfiles[s] != K) {
				rc = fedrun_error(FEDRUN_ECONFIG,
						  "%u files for %u clients: with scheme \"files\", "
						  "give one file per client or (held-out) one file "
						  "for the server",
						  nfiles[s], K);
				break;
			}
			for (uint64_t i = 0; i < sp->n; i++)
				assign[i] = file_of[s][i];
			break;
		case SCHEME_IID:
			rc = fedrun_partition_iid(sp->n, K, seed, (uint32_t)s, assign);
			break;
		case SCHEME_DIRICHLET:
			if (s == 0)
				rc = fedrun_partition_dirichlet(sp->n, cat, n_cat, K, po->alpha,
								(uint64_t)po->min_sentences, seed, 0,
								assign, props);
			else
				rc = fedrun_partition_by_props(sp->n, cat, n_cat, K, props, seed,
							       (uint32_t)s, assign);
			break;
		case SCHEME_QUANTITY:
			if (s == 0)
				rc = fedrun_partition_quantity(sp->n, K, po->alpha,
							       (uint64_t)po->min_sentences, seed, 0,
							       assign, props);
			else
				rc = fedrun_partition_by_props(sp->n, cat, 1, K, props, seed,
							       (uint32_t)s, assign);
			break;
		}
		/* length-sorted examples: model.batching "length" (held-out
		 * ones too: evaluation pads less, and its sums do not depend
		 * on the order beyond their rounding) */
		if (rc == 0)
			rc = group(sp, assign, K, m->batching == ENC_BATCH_LENGTH);
		if (rc < 0)
			fedrun_error_wrap(rc, "data.%s: ", split_key[s]);
	}
	free(assign);
	free(cat);
	free(props);
	if (rc == 0) {
		if (!(m->client_n = calloc(K, sizeof *m->client_n)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		for (uint32_t k = 0; k < K; k++)
			m->client_n[k] =
			    m->split[0].client_start[k + 1] - m->split[0].client_start[k];
	}
	return rc;
}

/* data.format and its keys, with the roles of the task. */
static int records_format(const struct enc_model *m, json_t *data, const char *path,
			  struct fedrun_records_format *fmt)
{
	const enum enc_task task = m->cfg.task;
	const struct fedrun_records_roles roles = {
	    {"text", task == ENC_TASK_TAG ? "tags" : task == ENC_TASK_CLASSIFY ? "label" : NULL},
	    {true, task != ENC_TASK_MLM},
	    {"text", task == ENC_TASK_TAG ? "tags" : task == ENC_TASK_CLASSIFY ? "label" : NULL}};
	int rc = fedrun_records_config(data, path, &roles, fmt);
	if (rc < 0)
		return rc;
	if (fmt->kind == FEDRUN_RECORDS_TEXT && task != ENC_TASK_MLM)
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.format: \"tsv\" or \"jsonl\" for task \"%s\" (records with "
				    "the text and its %s)",
				    path, task == ENC_TASK_TAG ? "tag" : "classify",
				    task == ENC_TASK_TAG ? "tags" : "label");
	return 0;
}

int enc_data_load(struct enc_model *m, json_t *data, const char *path)
{
	struct data_opts o = {0};
	int rc = fedrun_opts_parse(data_spec, data, path, &o);
	if (rc < 0)
		return rc;
	const enum enc_task task = m->cfg.task;
	struct fedrun_records_format fmt;
	if ((rc = records_format(m, data, path, &fmt)) < 0)
		return rc;
	struct fedrun_partition_opts po;
	if ((rc = fedrun_partition_opts_parse(data, path, &po)) < 0)
		return rc;
	if (po.scheme == SCHEME_DIRICHLET && task != ENC_TASK_CLASSIFY)
		return fedrun_error(FEDRUN_ECONFIG,
				    "data.partition.scheme \"dirichlet\": label skew needs one label "
				    "per example (task \"classify\"); use \"quantity\", \"files\" or "
				    "\"iid\"");
	if (task != ENC_TASK_MLM && (rc = fedrun_labels_create(&m->labels)) < 0)
		return rc;
	uint32_t *file_of[3] = {NULL, NULL, NULL}, nfiles[3] = {0, 0, 0};
	char **names = NULL;
	for (int s = 0; s < 3 && rc == 0; s++)
		rc = read_split(m, s, data, path, &fmt, s == 0 ? (uint64_t)o.max_train : 0,
				&file_of[s], &nfiles[s],
				s == 0 && po.scheme == SCHEME_FILES ? &names : NULL);
	m->client_names = names;
	if (rc == 0)
		m->nclients = po.scheme == SCHEME_FILES ? nfiles[0] : (uint32_t)po.clients;
	if (rc == 0 && po.scheme == SCHEME_FILES && po.clients > 0 &&
	    (uint32_t)po.clients != nfiles[0])
		rc = fedrun_error(FEDRUN_ECONFIG,
				  "data.partition.clients: %lld, but scheme \"files\" makes one client "
				  "per train file (%u)",
				  (long long)po.clients, nfiles[0]);
	uint64_t seed = po.seed >= 0 ? (uint64_t)po.seed : m->host->seed(m->host->ctx);
	if (rc == 0)
		rc = partition(m, &po, seed, file_of, nfiles);
	for (int s = 0; s < 3; s++)
		free(file_of[s]);
	for (int s = 0; s < 3 && rc == 0; s++) {
		struct enc_split *sp = &m->split[s];
		if (!sp->present)
			continue;
		uint32_t *none = calloc(sp->n ? sp->n : 1, sizeof *none);
		uint64_t *cs = sp->client_start, *ord = sp->order;
		if (!none) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		/* one group of all: the server's order */
		sp->client_start = NULL;
		sp->order = NULL;
		rc = group(sp, none, 1, m->batching == ENC_BATCH_LENGTH);
		free(none);
		free(sp->client_start);
		sp->pooled = sp->order;
		sp->client_start = cs;
		sp->order = ord;
	}
	return rc;
}

int enc_data_learn_vocab(struct enc_model *m, json_t *data, const char *path)
{
	struct data_opts o = {0};
	int rc = fedrun_opts_parse(data_spec, data, path, &o);
	if (rc < 0)
		return rc;
	struct fedrun_records_format fmt;
	if ((rc = records_format(m, data, path, &fmt)) < 0)
		return rc;
	const char **f = NULL;
	uint32_t nf = 0;
	rc = fedrun_opts_files(data, "train", path, &f, &nf);
	if (rc == 0)
		rc = learn_vocab(m, f, nf, &fmt, (uint64_t)o.max_train);
	free(f);
	return rc;
}

void enc_data_free(struct enc_model *m)
{
	for (int s = 0; s < 3; s++) {
		struct enc_split *sp = &m->split[s];
		for (uint64_t i = 0; i < sp->n; i++) {
			free(sp->ex[i].ids);
			free(sp->ex[i].tags);
		}
		free(sp->ex);
		free(sp->client_start);
		free(sp->order);
		free(sp->pooled);
	}
	if (m->client_names)
		for (uint32_t k = 0; k < m->nclients; k++)
			free(m->client_names[k]);
	free(m->client_names);
	free(m->client_n);
	fedrun_labels_destroy(m->labels);
}

/* RUN/partition.tsv: examples (and wordpieces) of each client per split,
 * and per label for classify. */
int enc_data_partition_write(const struct enc_model *m)
{
	const uint32_t K = m->nclients;
	const uint32_t n_cat =
	    m->cfg.task == ENC_TASK_CLASSIFY ? fedrun_labels_count(m->labels) : 0;
	uint64_t *cnt[3] = {NULL, NULL, NULL}, *tok[3] = {NULL, NULL, NULL};
	uint64_t *cat = calloc((size_t)K * (n_cat ? n_cat : 1), sizeof *cat);
	const char **names = calloc(K, sizeof *names), **cat_names = NULL;
	char (*buf)[24] = calloc(K, sizeof *buf);
	int rc = (!cat || !names || !buf) ? fedrun_error(FEDRUN_ENOMEM, "out of memory") : 0;
	if (rc == 0 && n_cat && !(cat_names = calloc(n_cat, sizeof *cat_names)))
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t c = 0; rc == 0 && c < n_cat; c++)
		cat_names[c] = fedrun_labels_name(m->labels, c);
	for (uint32_t k = 0; rc == 0 && k < K; k++) {
		names[k] = m->client_names ? m->client_names[k] : buf[k];
		snprintf(buf[k], sizeof buf[k], "client%u", k);
	}
	for (int s = 0; s < 3 && rc == 0; s++) {
		const struct enc_split *sp = &m->split[s];
		if (!sp->client_start)
			continue;
		cnt[s] = calloc(K, sizeof *cnt[s]);
		tok[s] = calloc(K, sizeof *tok[s]);
		if (!cnt[s] || !tok[s]) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		for (uint32_t k = 0; k < K; k++)
			for (uint64_t j = sp->client_start[k]; j < sp->client_start[k + 1]; j++) {
				const struct enc_example *e = &sp->ex[sp->order[j]];
				cnt[s][k]++;
				tok[s][k] += e->len;
				if (s == 0 && n_cat)
					cat[(size_t)k * n_cat + (uint32_t)e->label]++;
			}
	}
	if (rc == 0) {
		struct fedrun_partition_report r = {.clients = K,
						    .name = names,
						    .sentences = {cnt[0], cnt[1], cnt[2]},
						    .tokens = {tok[0], tok[1], tok[2]},
						    .n_cat = n_cat,
						    .cat_name = cat_names,
						    .cat_sentences = n_cat ? cat : NULL};
		rc = fedrun_partition_report_write(m->host, &r);
	}
	for (int s = 0; s < 3; s++)
		free(cnt[s]), free(tok[s]);
	free(cat);
	free(names);
	free(cat_names);
	free(buf);
	return rc;
}

/* ---- batches ---- */

static int reserve(struct enc_worker *w, uint32_t B, uint32_t T)
{
	uint64_t bt = (uint64_t)B * T;
	if (bt > w->cap_bt) {
		free(w->ids), free(w->labels), free(w->pred);
		w->ids = malloc(bt * sizeof *w->ids);
		w->labels = malloc(bt * sizeof *w->labels);
		w->pred = malloc(bt * sizeof *w->pred);
		w->cap_bt = 0;
		if (!w->ids || !w->labels || !w->pred)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		w->cap_bt = (uint32_t)bt;
	}
	if (B > w->cap_b) {
		free(w->len);
		if (!(w->len = malloc((size_t)B * sizeof *w->len)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		w->cap_b = B;
	}
	return 0;
}

int enc_batch_fill(const struct enc_model *m, struct enc_worker *w, const struct enc_split *s,
		   const uint64_t *idx, uint32_t n, struct fedrun_rng *rng, struct enc_batch *b)
{
	const int split = (int)(s - m->split);
	uint32_t T = 1;
	for (uint32_t i = 0; i < n; i++)
		if (s->ex[idx[i]].len > T)
			T = s->ex[idx[i]].len;
	int rc = reserve(w, n, T);
	if (rc < 0)
		return rc;
	const enum enc_task task = m->cfg.task;
	const uint32_t V = m->cfg.vocab;
	for (uint32_t i = 0; i < n; i++) {
		const struct enc_example *e = &s->ex[idx[i]];
		int32_t *row = w->ids + (size_t)i * T, *lab = w->labels + (size_t)i * T;
		memcpy(row, e->ids, e->len * sizeof *row);
		for (uint32_t t = e->len; t < T; t++)
			row[t] = m->pad_id;
		w->len[i] = (int32_t)e->len;
		if (task == ENC_TASK_CLASSIFY) {
			w->labels[i] = e->label;
		} else if (task == ENC_TASK_TAG) {
			memcpy(lab, e->tags, e->len * sizeof *lab);
			for (uint32_t t = e->len; t < T; t++)
				lab[t] = -1;
		} else {
			/* Devlin et al. 2019, sec. 3.1 "Task #1: Masked LM": 15% of
			 * the wordpieces (not [CLS], [SEP]) are predicted; of them
			 * 80% become [MASK], 10% a random token, 10% stay. */
			for (uint32_t t = 0; t < T; t++)
				lab[t] = -1;
			/* Held out (rng NULL): each example's own stream, so that
			 * every evaluation masks it alike, in any batch. */
			struct fedrun_rng own;
			if (!rng)
				fedrun_rng_init(&own, m->mlm_seed, ENC_RNG_EVAL_MASK, (uint32_t)split,
						(uint32_t)idx[i]);
			struct fedrun_rng *r = rng ? rng : &own;
			for (uint32_t t = 1; t + 1 < e->len; t++) {
				if (fedrun_rng_uniform(r) >= m->mask_prob)
					continue;
				lab[t] = row[t];
				double u = fedrun_rng_uniform(r);
				if (u < 0.8)
					row[t] = m->mask_id;
				else if (u < 0.9)
					row[t] = (int32_t)fedrun_rng_below(r, V);
			}
		}
	}
	*b = (struct enc_batch){.B = n,
				.T = T,
				.ids = w->ids,
				.len = w->len,
				.type_ids = NULL,
				.labels = w->labels};
	return 0;
}
