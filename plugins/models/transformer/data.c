/* SPDX-License-Identifier: Apache-2.0 */
/* The transformer's data: parallel corpora (one client per entry of
 * data.clients, files PREFIX.SRC and PREFIX.TGT aligned line by line, or
 * with data.format "tsv" or "jsonl" one file of records holding both
 * sides) or a synthetic copy/reverse task, and the tokenizer trained on (or
 * loaded for) them. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "blank.h"
#include "transformer.h"

static const char *split_name[3] = {"train", "valid", "test"};

/* ---- raw lines ---- */

struct lines {
	uint64_t n;
	char **l;
};

static void lines_free(struct lines *L)
{
	for (uint64_t i = 0; i < L->n; i++)
		free(L->l[i]);
	free(L->l);
	L->l = NULL;
	L->n = 0;
}

static int lines_push(struct lines *L, uint64_t *cap, char *s)
{
	if (L->n == *cap) {
		uint64_t nc = *cap ? 2 * *cap : 64;
		char **nl = realloc(L->l, nc * sizeof *nl);
		if (!nl) {
			free(s);
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		L->l = nl;
		*cap = nc;
	}
	L->l[L->n++] = s;
	return 0;
}

/* Every line of `path` (a final newline ends the last line; CR before LF
 * is dropped), checked for UTF-8; at most `max` lines when max > 0. */
static int read_lines(const char *path, uint64_t max, struct lines *L)
{
	char *data;
	size_t n;
	int rc = fedrun_read_file(path, &data, &n);
	if (rc < 0)
		return rc;
	uint64_t cap = 0;
	size_t i = 0;
	uint64_t line = 0;
	while (i < n && rc == 0 && (!max || L->n < max)) {
		size_t j = i;
		while (j < n && data[j] != '\n')
			j++;
		size_t e = j;
		if (e > i && data[e - 1] == '\r')
			e--;
		line++;
		size_t bad = 0;
		const char *nul = memchr(data + i, 0, e - i);
		if (nul || !fedrun_utf8_valid(data + i, e - i, &bad)) {
			rc = fedrun_error(FEDRUN_EINVAL, "%s:%llu: %s at byte %zu", path,
					  (unsigned long long)line, nul ? "a NUL byte" : "invalid UTF-8",
					  (nul ? (size_t)(nul - (data + i)) : bad) + 1);
			break;
		}
		char *s = strndup(data + i, e - i);
		if (!s) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		rc = lines_push(L, &cap, s);
		i = j + 1;
	}
	free(data);
	if (rc < 0)
		lines_free(L);
	return rc;
}

/* Raw pairs of one split of one client, before tokenizing. */
struct raw {
	struct lines src, tgt;
	bool present;
	uint64_t cap_src, cap_tgt; /* read_pair_records's */
};

/* ---- options ---- */

struct data_cfg {
	const char *src, *tgt, *dir;
	json_t *clients, *synthetic;
	int64_t max_train_pairs;
	json_t *format, *columns, *fields, *header; /* fedrun_records_config's */
};

static const struct fedrun_opt data_spec[] = {
    {"src", FEDRUN_OPT_STRING, offsetof(struct data_cfg, src), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,
     NULL},
    {"tgt", FEDRUN_OPT_STRING, offsetof(struct data_cfg, tgt), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,
     NULL},
    {"dir", FEDRUN_OPT_PATH, offsetof(struct data_cfg, dir), 0, 0, 0, 0, ".", NULL},
    {"clients", FEDRUN_OPT_ARRAY, offsetof(struct data_cfg, clients), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"synthetic", FEDRUN_OPT_OBJECT, offsetof(struct data_cfg, synthetic), FEDRUN_OPT_OPTIONAL, 0,
     0, 0, NULL, NULL},
    {"max_train_pairs", FEDRUN_OPT_INT, offsetof(struct data_cfg, max_train_pairs), 0, 0, 1e15, 0,
     NULL, NULL},
    FEDRUN_RECORDS_OPTS(struct data_cfg),
    FEDRUN_OPT_END_,
};

struct client_cfg {
	const char *name, *files[3];
};

static const struct fedrun_opt client_spec[] = {
    {"name", FEDRUN_OPT_STRING, offsetof(struct client_cfg, name), FEDRUN_OPT_REQUIRED, 0, 0, 0,
     NULL, NULL},
    {"train", FEDRUN_OPT_STRING, offsetof(struct client_cfg, files[0]), FEDRUN_OPT_OPTIONAL, 0, 0,
     0, NULL, NULL},
    {"valid", FEDRUN_OPT_STRING, offsetof(struct client_cfg, files[1]), FEDRUN_OPT_OPTIONAL, 0, 0,
     0, NULL, NULL},
    {"test", FEDRUN_OPT_STRING, offsetof(struct client_cfg, files[2]), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    FEDRUN_OPT_END_,
};

enum { TASK_COPY = 0, TASK_REVERSE = 1 };

struct synth_cfg {
	int task;
	int64_t clients, vocab, min_len, max_len, n[3];
};

static const struct fedrun_opt synth_spec[] = {
    {"task", FEDRUN_OPT_CHOICE, offsetof(struct synth_cfg, task), 0, 0, 0, 0, "copy",
     "copy|reverse"},
    {"clients", FEDRUN_OPT_INT, offsetof(struct synth_cfg, clients), 0, 1, 10000, 2, NULL, NULL},
    {"vocab", FEDRUN_OPT_INT, offsetof(struct synth_cfg, vocab), 0, 1, 1000000, 20, NULL, NULL},
    {"min_len", FEDRUN_OPT_INT, offsetof(struct synth_cfg, min_len), 0, 1, 10000, 3, NULL, NULL},
    {"max_len", FEDRUN_OPT_INT, offsetof(struct synth_cfg, max_len), 0, 1, 10000, 10, NULL, NULL},
    {"train", FEDRUN_OPT_INT, offsetof(struct synth_cfg, n[0]), 0, 0, 1e8, 2000, NULL, NULL},
    {"valid", FEDRUN_OPT_INT, offsetof(struct synth_cfg, n[1]), 0, 0, 1e8, 100, NULL, NULL},
    {"test", FEDRUN_OPT_INT, offsetof(struct synth_cfg, n[2]), 0, 0, 1e8, 100, NULL, NULL},
    FEDRUN_OPT_END_,
};

struct tok_cfg {
	int type, model_type;
	const char *model, *vocab;
	int64_t vocab_size, max_size, min_count;
	double character_coverage;
	bool federated;
	int64_t key_bits, key_holder;
	int split, unknown;
};

static const struct fedrun_opt tok_spec[] = {
    {"type", FEDRUN_OPT_CHOICE, offsetof(struct tok_cfg, type), 0, 0, 0, 0, "sentencepiece",
     "words|sentencepiece"},
    /* model and vocab: read where they are, or on --resume not at all
     * (the run's copy is the tokenizer: tok_reuse). */
    {"model", FEDRUN_OPT_PATH, offsetof(struct tok_cfg, model),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_UNREAD, 0, 0, 0, NULL, NULL},
    {"vocab_size", FEDRUN_OPT_INT, offsetof(struct tok_cfg, vocab_size), 0, 8, 1 << 24, 8000, NULL,
     NULL},
    {"model_type", FEDRUN_OPT_CHOICE, offsetof(struct tok_cfg, model_type), 0, 0, 0, 0, "unigram",
     "unigram|bpe"},
    {"character_coverage", FEDRUN_OPT_NUMBER, offsetof(struct tok_cfg, character_coverage),
     FEDRUN_OPT_MIN_OPEN, 0, 1, 1.0, NULL, NULL},
    {"vocab", FEDRUN_OPT_PATH, offsetof(struct tok_cfg, vocab),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_UNREAD, 0, 0, 0, NULL, NULL},
    {"max_size", FEDRUN_OPT_INT, offsetof(struct tok_cfg, max_size), 0, 0, 1 << 30, 0, NULL, NULL},
    {"min_count", FEDRUN_OPT_INT, offsetof(struct tok_cfg, min_count), 0, 0, 1e15, 1, NULL, NULL},
    /* words: TFM_SPLIT_*, in this order */
    {"split", FEDRUN_OPT_CHOICE, offsetof(struct tok_cfg, split), 0, 0, 0, 0, "whitespace",
     "whitespace|punctuation"},
    /* words: 0 <unk>, 1 spelled in characters (tok.h's chars) */
    {"unknown", FEDRUN_OPT_CHOICE, offsetof(struct tok_cfg, unknown), 0, 0, 0, 0, "unk",
     "unk|characters"},
    /* the words vocabulary by FedNMT's federated protocol (words_federated) */
    {"federated", FEDRUN_OPT_BOOL, offsetof(struct tok_cfg, federated), 0, 0, 0, 0, NULL, NULL},
    /* at most 8192: larger keys take minutes to make (PAILLIER_MAX_BITS) */
    {"key_bits", FEDRUN_OPT_INT, offsetof(struct tok_cfg, key_bits), 0, 2048, 8192, 2048, NULL,
     NULL},
    {"key_holder", FEDRUN_OPT_INT, offsetof(struct tok_cfg, key_holder), 0, 0, 1 << 30, 0, NULL,
     NULL},
    FEDRUN_OPT_END_,
};

/* ---- synthetic task ---- */

/* Split s of client k: n random sequences of words w0 .. w{V-1}, lengths
 * uniform in [min_len, max_len], from the stream (seed, DATA, split, k);
 * the target is the source (copy) or reversed. */
static int synth_split(const struct synth_cfg *c, uint64_t seed, uint32_t s, uint32_t k,
		       struct raw *r)
{
	struct fedrun_rng g;
	fedrun_rng_init(&g, seed, FEDRUN_RNG_DATA, s, k);
	uint64_t cs = 0, ct = 0;
	uint32_t *w = malloc((size_t)c->max_len * sizeof *w);
	char *buf = malloc((size_t)c->max_len * 12 + 1);
	int rc = w && buf ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (int64_t i = 0; i < c->n[s] && rc == 0; i++) {
		uint32_t len =
		    (uint32_t)(c->min_len + (int64_t)fedrun_rng_below(
						&g, (uint64_t)(c->max_len - c->min_len + 1)));
		for (uint32_t j = 0; j < len; j++)
			w[j] = (uint32_t)fedrun_rng_below(&g, (uint64_t)c->vocab);
		for (int side = 0; side < 2 && rc == 0; side++) {
			char *p = buf;
			for (uint32_t j = 0; j < len; j++) {
				uint32_t x =
				    side && c->task == TASK_REVERSE ? w[len - 1 - j] : w[j];
				p += sprintf(p, j ? " w%u" : "w%u", x);
			}
			char *d = strdup(buf);
			if (!d)
				rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			else
				rc = lines_push(side ? &r->tgt : &r->src, side ? &ct : &cs, d);
		}
	}
	free(w);
	free(buf);
	r->present = true;
	return rc;
}

/* ---- files ---- */

/* One record of a tsv or jsonl file: a pair. */
static int push_record(void *ud, uint64_t line, const char *const *value, const size_t *len)
{
	(void)line;
	struct raw *r = ud;
	char *a = strndup(value[0], len[0]), *b = strndup(value[1], len[1]);
	if (!a || !b) {
		free(a);
		free(b);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	int rc = lines_push(&r->src, &r->cap_src, a);
	if (rc < 0) {
		free(b);
		return rc;
	}
	return lines_push(&r->tgt, &r->cap_tgt, b);
}

/* The pairs of the file dir/NAME in a records format. */
static int read_pair_records(const char *base, const char *name,
			     const struct fedrun_records_format *fmt, uint64_t max,
			     const char *where, struct raw *r)
{
	char *full = fedrun_path_resolve(base, name);
	if (!full)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = fedrun_records_read(full, fmt, max, push_record, r);
	if (rc < 0)
		fedrun_error_wrap(rc, "%s: ", where);
	r->present = rc == 0;
	free(full);
	return rc;
}

static int read_pair_files(const char *base, const char *prefix, const char *src, const char *tgt,
			   uint64_t max, const char *where, struct raw *r)
{
	char *full = fedrun_path_resolve(base, prefix);
	if (!full)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	size_t l = strlen(full) + strlen(src) + strlen(tgt) + 4;
	char *fs = malloc(l), *ft = malloc(l);
	int rc = fs && ft ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0) {
		snprintf(fs, l, "%s.%s", full, src);
		snprintf(ft, l, "%s.%s", full, tgt);
		rc = read_lines(fs, max, &r->src);
		if (rc < 0)
			rc = fedrun_error_wrap(rc, "%s: ", where);
	}
	if (rc == 0 && (rc = read_lines(ft, max, &r->tgt)) < 0)
		rc = fedrun_error_wrap(rc, "%s: ", where);
	if (rc == 0 && r->src.n != r->tgt.n)
		rc = fedrun_error(FEDRUN_EINVAL,
				  "%s: %s has %llu lines but %s has %llu; the source and target "
				  "files must be aligned, one sentence a line",
				  where, fs, (unsigned long long)r->src.n, ft,
				  (unsigned long long)r->tgt.n);
	r->present = rc == 0;
	free(full);
	free(fs);
	free(ft);
	return rc;
}

/* ---- tokenizing ---- */

static int encode_split(struct tfm_model *m, struct raw *r, uint32_t s, const char *cname,
			struct tfm_split *out)
{
	uint64_t n = r->src.n;
	if (n > UINT32_MAX / 2)
		return fedrun_error(FEDRUN_EINVAL, "transformer: client %s has too many pairs",
				    cname);
	out->absent = !r->present;
	out->src = calloc(n ? n : 1, sizeof *out->src);
	out->tgt = calloc(n ? n : 1, sizeof *out->tgt);
	out->slen = calloc(n ? n : 1, sizeof *out->slen);
	out->tlen = calloc(n ? n : 1, sizeof *out->tlen);
	out->ref = calloc(n ? n : 1, sizeof *out->ref);
	if (!out->src || !out->tgt || !out->slen || !out->tlen || !out->ref)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	uint32_t k = 0;
	uint64_t dropped = 0;
	int rc = 0;
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		int32_t *a = NULL, *b = NULL;
		uint32_t na = 0, nb = 0;
		rc = tfm_tok_encode(m->tok, r->src.l[i], strlen(r->src.l[i]), &a, &na);
		if (rc == 0)
			rc = tfm_tok_encode(m->tok, r->tgt.l[i], strlen(r->tgt.l[i]), &b, &nb);
		if (rc == 0 && s == FEDRUN_SPLIT_TRAIN &&
		    (na > m->max_len || nb > m->max_len || (na == 0 && nb == 0))) {
			free(a);
			free(b);
			dropped++;
			continue;
		}
		if (rc < 0) {
			free(a);
			free(b);
			break;
		}
		out->src[k] = a;
		out->tgt[k] = b;
		out->slen[k] = na;
		out->tlen[k] = nb;
		if (s != FEDRUN_SPLIT_TRAIN) { /* the references, kept raw */
			out->ref[k] = r->tgt.l[i];
			r->tgt.l[i] = NULL;
		}
		k++;
	}
	out->n = k;
	if (rc == 0 && dropped)
		m->host->log(m->host->ctx, FEDRUN_LOG_INFO,
			     "transformer: client %s: %llu training pair(s) dropped (a side "
			     "longer than max_len %u tokens, or both sides empty)",
			     cname, (unsigned long long)dropped, m->max_len);
	if (rc == 0)
		rc = tfm_batch_sort(out);
	return rc;
}

static void split_free(struct tfm_split *s, bool owned)
{
	if (owned) {
		for (uint32_t i = 0; i < s->n; i++) {
			free(s->src[i]);
			free(s->tgt[i]);
			if (s->ref)
				free(s->ref[i]);
		}
	}
	free(s->src);
	free(s->tgt);
	free(s->slen);
	free(s->tlen);
	free(s->ref);
	free(s->order);
	memset(s, 0, sizeof *s);
}

void tfm_data_free(struct tfm_model *m)
{
	for (uint32_t k = 0; k < m->nclients; k++)
		for (int s = 0; s < 3; s++)
			split_free(&m->clients[k].split[s], true);
	for (int s = 0; s < 3; s++)
		split_free(&m->all[s], false);
	free(m->clients);
	m->clients = NULL;
	m->nclients = 0;
}

/* The union's views: the clients' pairs one after the other. */
static int build_all(struct tfm_model *m)
{
	for (int s = 0; s < 3; s++) {
		struct tfm_split *a = &m->all[s];
		uint64_t n = 0;
		bool any = false;
		for (uint32_t k = 0; k < m->nclients; k++) {
			n += m->clients[k].split[s].n;
			any |= !m->clients[k].split[s].absent;
		}
		a->absent = !any;
		a->src = calloc(n ? n : 1, sizeof *a->src);
		a->tgt = calloc(n ? n : 1, sizeof *a->tgt);
		a->slen = calloc(n ? n : 1, sizeof *a->slen);
		a->tlen = calloc(n ? n : 1, sizeof *a->tlen);
		a->ref = calloc(n ? n : 1, sizeof *a->ref);
		if (!a->src || !a->tgt || !a->slen || !a->tlen || !a->ref)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		uint32_t j = 0;
		for (uint32_t k = 0; k < m->nclients; k++) {
			const struct tfm_split *c = &m->clients[k].split[s];
			for (uint32_t i = 0; i < c->n; i++, j++) {
				a->src[j] = c->src[i];
				a->tgt[j] = c->tgt[i];
				a->slen[j] = c->slen[i];
				a->tlen[j] = c->tlen[i];
				a->ref[j] = c->ref[i];
			}
		}
		a->n = j;
		int rc = tfm_batch_sort(a);
		if (rc < 0)
			return rc;
	}
	return 0;
}

const struct tfm_split *tfm_split_get(const struct tfm_model *m, enum fedrun_split split,
				      int64_t client, int *rc)
{
	const struct tfm_split *s;
	const char *who = "all clients";
	if (client == FEDRUN_ALL_CLIENTS) {
		s = &m->all[split];
	} else if (client >= 0 && client < m->nclients) {
		s = &m->clients[client].split[split];
		who = m->clients[client].name;
	} else {
		*rc = fedrun_error(FEDRUN_EINVAL, "transformer: no client %lld (of %u)",
				   (long long)client, m->nclients);
		return NULL;
	}
	if (s->absent) {
		*rc = fedrun_error(FEDRUN_ENOENT, "transformer: %s has no %s data", who,
				   split_name[split]);
		return NULL;
	}
	*rc = 0;
	return s;
}

static const char *run_dir(const struct fedrun_host *h)
{
#if FEDRUN_ABI_MINOR >= 1
	if (h->size >= offsetof(struct fedrun_host, run_dir) + sizeof h->run_dir && h->run_dir)
		return h->run_dir(h->ctx);
#else
	(void)h;
#endif
	return NULL;
}

/* True when the run continues from its directory (--resume, ABI 1.2). */
static bool resuming(const struct fedrun_host *h)
{
#if FEDRUN_ABI_MINOR >= 2
	return h->size >= offsetof(struct fedrun_host, resuming) + sizeof h->resuming &&
	       h->resuming && h->resuming(h->ctx);
#else
	(void)h;
	return false;
#endif
}

/* A tokenizer file the pipeline gives (model.tokenizer.KEY), before it
 * is read: the options leave that check to us (FEDRUN_OPT_UNREAD). */
static int tok_readable(const char *path, const char *key)
{
	if (access(path, R_OK) != 0)
		return fedrun_error(FEDRUN_ENOENT, "model.tokenizer.%s: cannot read file '%s': %s",
				    key, path, strerror(errno));
	return 0;
}

/* On --resume, the tokenizer is the run's own DIR/NAME (what its
 * checkpoints were trained with), not trained again nor copied over: a
 * resume that the core refuses later (another pipeline) must not have
 * replaced it, and the file the pipeline gave (`given`, another run's
 * tokenizer) may be gone since. Where `given` is still readable it must
 * hold the same bytes. Returns 1 when the run's file was loaded, 0 when
 * there is none (the caller goes on as in a fresh run), or an error. */
static int tok_reuse(struct tfm_model *m, const char *dir, const char *name, const char *given,
		     int split, int chars, json_t *tok_config, const char *key)
{
	char *path = fedrun_path_resolve(dir, name), *mine = NULL, *theirs = NULL;
	size_t n, tn;
	if (!path)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = 0;
	if (access(path, F_OK) != 0)
		goto out;
	if ((rc = fedrun_read_file(path, &mine, &n)) < 0) {
		fedrun_error_wrap(rc, "cannot resume: the run's tokenizer: ");
		goto out;
	}
	if (given && fedrun_read_file(given, &theirs, &tn) == 0 &&
	    (tn != n || memcmp(mine, theirs, n) != 0)) {
		rc = fedrun_error(FEDRUN_ECONFIG,
				  "cannot resume: model.tokenizer.%s %s is another tokenizer than "
				  "the run's %s, which its checkpoints were trained with",
				  key, given, path);
		goto out;
	}
	fedrun_error_clear();
	rc = strcmp(name, "spm.model") == 0 ? tfm_tok_spm_load(path, "model.tokenizer.type", &m->tok)
					     : tfm_tok_words_load(path, split, chars, &m->tok);
	if (rc < 0) {
		fedrun_error_wrap(rc, "cannot resume: the run's tokenizer: ");
		goto out;
	}
	rc = json_object_set_new(tok_config, key, json_string(name))
		 ? fedrun_error(FEDRUN_ENOMEM, "out of memory")
		 : 1;
out:
	free(theirs);
	free(mine);
	free(path);
	return rc;
}

/* A run's tokenizer file: DIR/NAME gets the bytes of `src` (the file the
 * pipeline gives, or one just trained into a temporary file), atomically,
 * unless it already holds exactly these bytes (a resumed run reuses the
 * run's file instead: tok_reuse). The section then records NAME at `key`:
 * relative, so that the
 * run directory can be moved (readers of RUN/pipeline.json resolve it
 * against RUN). The caller has loaded `src` already: nothing unreadable
 * reaches the run directory. */
static int tok_install(const struct tfm_model *m, const char *dir, const char *src,
		       const char *name, json_t *tok_config, const char *key)
{
	char *data = NULL, *old = NULL, *path = fedrun_path_resolve(dir, name);
	size_t n, on;
	if (!path)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = fedrun_read_file(src, &data, &n);
	if (rc < 0) {
		fedrun_error_wrap(rc, "model.tokenizer.%s: ", key);
		goto out;
	}
	if (fedrun_read_file(path, &old, &on) == 0) {
		if (on == n && memcmp(old, data, n) == 0)
			goto record;
		/* Not this run's tokenizer: a file of the user's, replaced only
		 * when the pipeline says the directory's files may go. */
		const struct fedrun_host *h = m->host;
		bool replace = false;
#if FEDRUN_ABI_MINOR >= 7
		replace = h->size >= offsetof(struct fedrun_host, overwrite) + sizeof(void *) &&
			  h->overwrite && h->overwrite(h->ctx);
#endif
		if (!replace) {
			rc = fedrun_error(FEDRUN_EIO,
					  "model.tokenizer: %s exists and is not this run's tokenizer: "
					  "set output.overwrite to true to replace it, or choose another "
					  "output.dir",
					  path);
			goto out;
		}
		h->log(h->ctx, FEDRUN_LOG_WARN,
		       "model.tokenizer: %s held another tokenizer; replacing it (output.overwrite)",
		       path);
	}
	fedrun_error_clear();
	if ((rc = fedrun_write_file_atomic(path, data, n)) < 0) {
		fedrun_error_wrap(rc, "model.tokenizer: ");
		goto out;
	}
record:
	if (json_object_set_new(tok_config, key, json_string(name)))
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
out:
	free(old);
	free(data);
	free(path);
	return rc;
}

/* Creates an empty temporary file in /tmp; *out gets its name (new string). */
static int tmp_file(const char *what, char **out)
{
	char tmpl[64];
	snprintf(tmpl, sizeof tmpl, "/tmp/fedrun-%s-XXXXXX", what);
	int fd = mkstemp(tmpl);
	if (fd < 0)
		return fedrun_error(FEDRUN_EIO, "transformer: cannot create %s: %s", tmpl,
				    strerror(errno));
	close(fd);
	if (!(*out = strdup(tmpl))) {
		unlink(tmpl);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	return 0;
}

/* The words vocabulary from every client's training lines (source and
 * target), counted together: what the federated protocol computes, in the
 * clear. */
static int words_plain(struct tfm_model *m, const struct tok_cfg *c, struct raw (*raw)[3])
{
	uint64_t n = 0;
	for (uint32_t k = 0; k < m->nclients; k++)
		n += 2 * raw[k][0].src.n;
	if (n == 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tokenizer: no training data to build the words "
				    "vocabulary from; give \"vocab\": a vocabulary file");
	const char **lines = malloc(n * sizeof *lines);
	if (!lines)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	uint64_t j = 0;
	for (uint32_t k = 0; k < m->nclients; k++)
		for (uint64_t i = 0; i < raw[k][0].src.n; i++) {
			lines[j++] = raw[k][0].src.l[i];
			lines[j++] = raw[k][0].tgt.l[i];
		}
	int rc = tfm_tok_words_train(lines, n, (uint32_t)c->max_size, (uint64_t)c->min_count,
				     c->split, c->unknown, &m->tok);
	free(lines);
	return rc;
}

/* The host's interrupted (ABI 1.8), when it has one: the protocol asks it
 * while it makes the key, so that a signal stops a long key generation. */
static bool (*host_interrupted(const struct fedrun_host *h))(void *)
{
#if FEDRUN_ABI_MINOR >= 8
	if (h->size >= offsetof(struct fedrun_host, interrupted) + sizeof h->interrupted)
		return h->interrupted;
#else
	(void)h;
#endif
	return NULL;
}

/* Roughly how long a Paillier key of `bits` and its encryption table take
 * to make on one core, what dominates the protocol on a small vocabulary:
 * both grow with about the cube of the size. Measured on the development
 * machine (fedrun-privacy(7), Cost): at 8192 bits the key 3 to 27 s, the
 * table 10.5 s. */
#define KEY_S_8192 25.0
static double key_seconds(int64_t bits)
{
	double r = (double)bits / 8192;
	return KEY_S_8192 * r * r * r;
}

/* The same vocabulary by the federated protocol: each client counts its
 * own training lines, and only the order of the totals comes out
 * (fedrun-privacy(7), FEDERATED VOCABULARY). */
static int words_federated(struct tfm_model *m, const struct tok_cfg *c, struct raw (*raw)[3])
{
	if (c->key_holder >= m->nclients)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tokenizer.key_holder: %lld is no client (the clients are "
				    "0 to %u)",
				    (long long)c->key_holder, m->nclients - 1);
	if (c->key_bits % 16)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tokenizer.key_bits: %lld is not a multiple of 16",
				    (long long)c->key_bits);
	uint32_t nc = m->nclients;
	const char ***lines = calloc(nc, sizeof *lines);
	uint64_t *n = calloc(nc, sizeof *n), total = 0;
	int rc = lines && n ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t k = 0; k < nc && rc == 0; k++) {
		const struct raw *r = &raw[k][0];
		n[k] = 2 * r->src.n;
		total += n[k];
		if (!(lines[k] = malloc((n[k] ? n[k] : 1) * sizeof *lines[k]))) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		for (uint64_t i = 0; i < r->src.n; i++) {
			lines[k][2 * i] = r->src.l[i];
			lines[k][2 * i + 1] = r->tgt.l[i];
		}
	}
	if (rc == 0 && total == 0)
		rc = fedrun_error(FEDRUN_ECONFIG,
				  "model.tokenizer: no training data to build the federated words "
				  "vocabulary from");
	if (rc == 0) {
		/* A silent key generation of a minute looks like a hang: say
		 * what it is and how long, on standard error (WARN) once it
		 * takes seconds, in the run's log in any case. */
		double secs = key_seconds(c->key_bits);
		m->host->log(m->host->ctx, secs >= 5 ? FEDRUN_LOG_WARN : FEDRUN_LOG_INFO,
			     "model.tokenizer.federated: client %lld makes a Paillier key of "
			     "%lld bits and its encryption table, then the %u clients build the "
			     "vocabulary under it: the key and table take about %.0f s on one core, "
			     "often half or twice that (SIGINT or SIGTERM stops it)",
			     (long long)c->key_holder, (long long)c->key_bits, nc,
			     secs < 1 ? 1 : secs);
		struct tfm_tok_fed f = {.max_size = (uint32_t)c->max_size,
					.min_count = (uint64_t)c->min_count,
					.key_bits = (uint32_t)c->key_bits,
					.key_holder = (uint32_t)c->key_holder,
					/* the run's --threads: the vocabulary
					   is built before any training */
					.threads = m->host->threads(m->host->ctx),
					.split = c->split,
					.chars = c->unknown,
					.interrupted = host_interrupted(m->host),
					.ctx = m->host->ctx};
		rc = tfm_tok_words_train_federated((const char *const *const *)lines, n, nc, &f,
						   &m->tok);
		if (rc < 0)
			fedrun_error_wrap(rc, "model.tokenizer.federated: ");
	}
	for (uint32_t k = 0; lines && k < nc; k++)
		free(lines[k]);
	free(lines);
	free(n);
	return rc;
}

/* The words tokenizer: the vocabulary file given, or one built from the
 * training lines; in a run, kept as RUN/vocab.txt. */
static int words_tokenizer(struct tfm_model *m, const struct tok_cfg *c, json_t *tok_config,
			   struct raw (*raw)[3], const char *dir)
{
	int rc;
	if (dir && resuming(m->host) &&
	    (rc = tok_reuse(m, dir, "vocab.txt", c->vocab, c->split, c->unknown, tok_config,
			    "vocab")) != 0)
		return rc < 0 ? rc : 0;
	if (c->vocab) {
		if ((rc = tok_readable(c->vocab, "vocab")) < 0 ||
		    (rc = tfm_tok_words_load(c->vocab, c->split, c->unknown, &m->tok)) < 0 || !dir)
			return rc;
		return tok_install(m, dir, c->vocab, "vocab.txt", tok_config, "vocab");
	}
	if ((rc = c->federated ? words_federated(m, c, raw) : words_plain(m, c, raw)) < 0 || !dir)
		return rc;
	char *tmp;
	if ((rc = tmp_file("vocab", &tmp)) < 0)
		return rc;
	if ((rc = tfm_tok_words_save(m->tok, tmp)) == 0)
		rc = tok_install(m, dir, tmp, "vocab.txt", tok_config, "vocab");
	unlink(tmp);
	free(tmp);
	return rc;
}

/* The error for training text with nothing to learn from (blank.h), naming
 * the training files (the first two, as spm.cc names them), or the lines
 * when there are none (max_train_pairs, synthetic data). */
static int blank_text_error(const char *const *files, uint32_t nfiles)
{
	static const char what[] = "only white space, control and invisible characters (Unicode "
				   "White_Space, Default_Ignorable_Code_Point): nothing to train "
				   "SentencePiece on";
	if (nfiles == 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tokenizer: the training lines of data.clients[].train "
				    "have %s",
				    what);
	if (nfiles > 2)
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "model.tokenizer: the training text ('%s' and %u more files) has %s", files[0],
		    (unsigned)(nfiles - 1), what);
	return fedrun_error(FEDRUN_ECONFIG, "model.tokenizer: the training text ('%s%s%s') has %s",
			    files[0], nfiles == 2 ? "', '" : "", nfiles == 2 ? files[1] : "", what);
}

/* Builds or loads the tokenizer. Training lines: raw[k][TRAIN] src + tgt;
 * files: the same as files when the data came from files (nfiles > 0).
 * In a run (host->run_dir) the tokenizer ends up in the run directory,
 * trained or copied there (tok_install); without one (fedrun validate,
 * fedrun translate) a given file is read where it is. */
static int make_tokenizer(struct tfm_model *m, json_t *tok_config, struct raw (*raw)[3],
			  const char *const *files, uint32_t nfiles, bool file_order)
{
	struct tok_cfg c = {0};
	int rc = fedrun_opts_parse(tok_spec, tok_config, "model.tokenizer", &c);
	if (rc < 0)
		return rc;
	const char *dir = run_dir(m->host);
	if (c.federated && c.type != TFM_TOK_WORDS)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tokenizer.federated: only \"type\": \"words\" has a "
				    "federated vocabulary");
	if (c.split != TFM_SPLIT_WHITESPACE && c.type != TFM_TOK_WORDS)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tokenizer.split: only \"type\": \"words\" is split by "
				    "fedrun (SentencePiece segments the text itself)");
	if (c.unknown && c.split != TFM_SPLIT_PUNCT)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tokenizer.unknown: \"characters\" needs \"split\": "
				    "\"punctuation\" (the joiner that glues a word's characters back "
				    "together)");
	/* federated with a vocab file: the vocabulary a federated run built,
	 * as its pipeline.json records it (fedrun translate, --resume), is
	 * read like any other; no protocol runs. */
	if (c.type == TFM_TOK_WORDS)
		return words_tokenizer(m, &c, tok_config, raw, dir);
	if (dir && resuming(m->host) &&
	    (rc = tok_reuse(m, dir, "spm.model", c.model, 0, 0, tok_config, "model")) != 0)
		return rc < 0 ? rc : 0;
	if (c.model) {
		if ((rc = tok_readable(c.model, "model")) < 0 ||
		    (rc = tfm_tok_spm_load(c.model, "model.tokenizer.type", &m->tok)) < 0 || !dir)
			return rc;
		return tok_install(m, dir, c.model, "spm.model", tok_config, "model");
	}
	uint64_t ntrain = 0;
	for (uint32_t k = 0; k < m->nclients; k++)
		ntrain += raw[k][0].src.n;
	if (ntrain == 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.tokenizer: no training data to train SentencePiece on; "
				    "give \"model\": a SentencePiece .model file");
	/* SentencePiece aborts the process (a CHECK) when the text has no
	 * character to learn from (blank.h); spm.cc checks too, but here the
	 * message can name the data. */
	bool any = false;
	for (uint32_t k = 0; !any && k < m->nclients; k++)
		for (uint64_t i = 0; !any && i < raw[k][0].src.n; i++)
			any = !tfm_text_blank(raw[k][0].src.l[i], strlen(raw[k][0].src.l[i])) ||
			      !tfm_text_blank(raw[k][0].tgt.l[i], strlen(raw[k][0].tgt.l[i]));
	if (!any)
		return blank_text_error(files, nfiles);
	/* Train SentencePiece jointly on every client's source and target
	 * training text: the files, or the generated lines written out. The
	 * model goes to a temporary file, then into the run directory. */
	char *train_txt = NULL, *model_tmp = NULL;
	if (nfiles == 0) {
		if ((rc = tmp_file("spm", &train_txt)) < 0)
			return rc;
		FILE *fp = fopen(train_txt, "w");
		for (uint32_t k = 0; fp && k < m->nclients; k++) {
			const struct lines *src = &raw[k][0].src, *tgt = &raw[k][0].tgt;
			/* Records: the lines as the text files would hold them
			 * (PREFIX.SRC, then PREFIX.TGT), so that the same pairs
			 * train the same model whatever the format. */
			for (uint64_t i = 0; file_order && i < src->n; i++)
				fprintf(fp, "%s\n", src->l[i]);
			for (uint64_t i = 0; file_order && i < tgt->n; i++)
				fprintf(fp, "%s\n", tgt->l[i]);
			for (uint64_t i = 0; !file_order && i < src->n; i++)
				fprintf(fp, "%s\n%s\n", src->l[i], tgt->l[i]);
		}
		if (!fp || fclose(fp) != 0) {
			rc = fedrun_error(FEDRUN_EIO, "transformer: cannot write %s", train_txt);
			goto out;
		}
	}
	if ((rc = tmp_file("spm-model", &model_tmp)) < 0)
		goto out;
	const char *one[1] = {train_txt};
	rc = tfm_tok_spm_train(train_txt ? one : files, train_txt ? 1 : nfiles,
			       (uint32_t)c.vocab_size, c.model_type ? "bpe" : "unigram",
			       c.character_coverage, m->host->seed(m->host->ctx),
			       train_txt ? "the generated training text (data.synthetic)" : NULL,
			       model_tmp, "model.tokenizer.type");
	if (rc == 0)
		rc = tfm_tok_spm_load(model_tmp, "model.tokenizer.type", &m->tok);
	if (rc == 0 && dir)
		rc = tok_install(m, dir, model_tmp, "spm.model", tok_config, "model");
out:
	if (train_txt)
		unlink(train_txt);
	if (model_tmp)
		unlink(model_tmp);
	free(train_txt);
	free(model_tmp);
	return rc;
}

/* RUN/partition.tsv: each client's pairs (training pairs as kept, after
 * max_len) and tokens, source and target together. */
static int write_partition(const struct tfm_model *m)
{
	uint32_t K = m->nclients;
	uint64_t *counts = calloc(6 * (uint64_t)(K ? K : 1), sizeof *counts);
	const char **names = calloc(K ? K : 1, sizeof *names);
	if (!counts || !names) {
		free(counts);
		free(names);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	struct fedrun_partition_report r = {.clients = K, .name = names};
	for (uint32_t k = 0; k < K; k++)
		names[k] = m->clients[k].name;
	for (int s = 0; s < 3; s++) {
		if (m->all[s].absent)
			continue;
		uint64_t *sent = counts + 2 * s * (uint64_t)K, *tok = sent + K;
		r.sentences[s] = sent;
		r.tokens[s] = tok;
		for (uint32_t k = 0; k < K; k++) {
			const struct tfm_split *sp = &m->clients[k].split[s];
			sent[k] = sp->absent ? UINT64_MAX : sp->n;
			for (uint32_t i = 0; i < sp->n; i++)
				tok[k] += (uint64_t)sp->slen[i] + sp->tlen[i];
		}
	}
	int rc = fedrun_partition_report_write(m->host, &r);
	free(counts);
	free(names);
	return rc;
}

int tfm_data_load(struct tfm_model *m, json_t *model_config, json_t *tok_config,
		  json_t *data_config)
{
	(void)model_config;
	struct data_cfg c = {0};
	struct synth_cfg sc = {0};
	struct raw(*raw)[3] = NULL;
	char **files = NULL;
	uint32_t nfiles = 0;
	int rc = 0;
	uint32_t K = 0;
	json_t *clients = NULL;
	struct fedrun_records_format fmt = {0};
	if (data_config) {
		if ((rc = fedrun_opts_parse(data_spec, data_config, "data", &c)) < 0)
			return rc;
		/* Records name their sides by data.src and data.tgt (jsonl
		 * fields) unless data.fields says otherwise. */
		const struct fedrun_records_roles roles = {
		    {"src", "tgt"}, {true, true}, {c.src, c.tgt}};
		if ((rc = fedrun_records_config(data_config, "data", &roles, &fmt)) < 0)
			return rc;
		if (c.synthetic && fmt.kind != FEDRUN_RECORDS_TEXT)
			return fedrun_error(FEDRUN_ECONFIG,
					    "data.format: only for \"clients\" (files), not "
					    "\"synthetic\"");
		if (!!c.clients == !!c.synthetic)
			return fedrun_error(FEDRUN_ECONFIG,
					    "data: give exactly one of \"clients\" (parallel "
					    "files) and \"synthetic\" (a generated task)");
		if (c.synthetic) {
			if ((rc = fedrun_opts_parse(synth_spec, c.synthetic, "data.synthetic",
						    &sc)) < 0)
				return rc;
			if (sc.min_len > sc.max_len)
				return fedrun_error(FEDRUN_ECONFIG,
						    "data.synthetic: min_len (%lld) is larger than "
						    "max_len (%lld)",
						    (long long)sc.min_len, (long long)sc.max_len);
			K = (uint32_t)sc.clients;
		} else {
			clients = c.clients;
			if (fmt.kind == FEDRUN_RECORDS_TEXT && (!c.src || !c.tgt))
				return fedrun_error(
				    FEDRUN_ECONFIG,
				    "data: \"src\" and \"tgt\" (the languages: file "
				    "suffixes, e.g. \"en\" and \"de\") are required "
				    "with \"clients\"");
			K = (uint32_t)json_array_size(clients);
			if (K == 0)
				return fedrun_error(FEDRUN_ECONFIG, "data.clients: empty list");
		}
	}
	m->nclients = K;
	m->clients = calloc(K ? K : 1, sizeof *m->clients);
	raw = calloc(K ? K : 1, sizeof *raw);
	files = calloc(2 * (size_t)(K ? K : 1), sizeof *files);
	if (!m->clients || !raw || !files) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	uint64_t seed = m->host->seed(m->host->ctx);
	for (uint32_t k = 0; k < K && rc == 0; k++) {
		struct tfm_client *cl = &m->clients[k];
		if (c.synthetic) {
			snprintf(cl->name, sizeof cl->name, "client%u", k);
			for (uint32_t s = 0; s < 3 && rc == 0; s++)
				rc = synth_split(&sc, seed, s, k, &raw[k][s]);
			continue;
		}
		char where[64];
		snprintf(where, sizeof where, "data.clients[%u]", k);
		json_t *e = json_array_get(clients, k);
		if (!json_is_object(e)) {
			char got[64];
			rc = fedrun_error(FEDRUN_ECONFIG, "%s: expected an object, got %s", where,
					  fedrun_json_describe(e, got, sizeof got));
			break;
		}
		struct client_cfg cc = {0};
		if ((rc = fedrun_opts_parse(client_spec, e, where, &cc)) < 0)
			break;
		snprintf(cl->name, sizeof cl->name, "%s", cc.name);
		for (uint32_t j = 0; j < k; j++)
			if (!strcmp(m->clients[j].name, cl->name)) {
				rc = fedrun_error(FEDRUN_ECONFIG,
						  "%s.name: \"%s\" is also the name of client %u",
						  where, cl->name, j);
				break;
			}
		for (uint32_t s = 0; s < 3 && rc == 0; s++) {
			if (!cc.files[s])
				continue;
			char w2[96];
			snprintf(w2, sizeof w2, "%s.%s", where, split_name[s]);
			if (fmt.kind != FEDRUN_RECORDS_TEXT) {
				rc = read_pair_records(c.dir, cc.files[s], &fmt,
						       s == 0 ? (uint64_t)c.max_train_pairs : 0,
						       w2, &raw[k][s]);
				continue;
			}
			rc = read_pair_files(c.dir, cc.files[s], c.src, c.tgt,
					     s == 0 ? (uint64_t)c.max_train_pairs : 0, w2,
					     &raw[k][s]);
			if (rc == 0 && s == 0 && !c.max_train_pairs) {
				char *full = fedrun_path_resolve(c.dir, cc.files[s]);
				size_t l = full ? strlen(full) + 64 : 0;
				files[nfiles] = full ? malloc(l) : NULL;
				files[nfiles + 1] = full ? malloc(l) : NULL;
				if (!files[nfiles] || !files[nfiles + 1]) {
					free(full);
					rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
					break;
				}
				snprintf(files[nfiles], l, "%s.%s", full, c.src);
				snprintf(files[nfiles + 1], l, "%s.%s", full, c.tgt);
				nfiles += 2;
				free(full);
			}
		}
	}
	if (rc < 0)
		goto out;
	/* With max_train_pairs the files hold more than the training data:
	 * the tokenizer then learns from the lines themselves. */
	bool use_files = !c.synthetic && !c.max_train_pairs && nfiles > 0;
	if ((rc = make_tokenizer(m, tok_config, raw, (const char *const *)files,
				 use_files ? nfiles : 0, fmt.kind != FEDRUN_RECORDS_TEXT)) < 0)
		goto out;
	for (uint32_t k = 0; k < K && rc == 0; k++)
		for (uint32_t s = 0; s < 3 && rc == 0; s++)
			rc = encode_split(m, &raw[k][s], s, m->clients[k].name,
					  &m->clients[k].split[s]);
	if (rc == 0)
		rc = build_all(m);
	if (rc == 0)
		rc = write_partition(m);
out:
	for (uint32_t k = 0; raw && k < K; k++)
		for (int s = 0; s < 3; s++) {
			lines_free(&raw[k][s].src);
			lines_free(&raw[k][s].tgt);
		}
	for (uint32_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	free(raw);
	return rc;
}
