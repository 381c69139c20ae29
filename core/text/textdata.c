/* SPDX-License-Identifier: Apache-2.0 */
/* A pipeline's "data" section for word language models: which files, how
 * they become clients, and the vocabulary; parsed with fedrun_opts_parse and
 * built into one tokenised corpus per split with per-client ranges.
 *
 * Keys (JSON path "data"):
 *   train      file or array of files: the training data, pooled and then
 *              partitioned; with scheme "files", client k's file is train[k]
 *   valid,test file or array of files (optional): held by the server
 *              (pooled) unless partition.eval is "clients"; with scheme
 *              "files", an array of as many files as clients is per client
 *              and a single file the server's (eval is not used)
 *   clients    instead of train/valid/test/partition: an array of
 *              {"name", "train", "valid", "test"}, one client each, every
 *              file key a file or an array of files (valid, test optional)
 *   partition  {"scheme": "iid" | "files" | "dirichlet" | "quantity"
 *               (default "iid"; quantity: Dirichlet client sizes),
 *               "clients": K (required but for files),
 *               "alpha": Dirichlet concentration (dirichlet and quantity
 *               only, required),
 *               "min_sentences": floor per client (dirichlet and quantity
 *               only, default 1),
 *               "seed": partition seed (default: the run's seed),
 *               "eval": "server" | "clients" (default "server")}
 *   vocab      {"file": vocabulary file, or built from every client's
 *               training data when absent; "size": cap including <unk> and
 *               <eos>, 0 for none (default 0); "min_count": (default 1);
 *               size and min_count only without file}
 *   lowercase  fold ASCII letters of the corpus to lower case (default
 *              false; Unicode, str.lower(), with tokenizer 13a or intl); a
 *              vocabulary file is taken as it is
 *   tokenizer  "whitespace" (default, not written back), "13a" or "intl":
 *              how lines are cut (fedrun_text_opts_from_json, text_opts.c)
 *   format     "text" (default: one sentence a line), "tsv" or "jsonl":
 *              every file is records, the sentence in "columns"/"fields"
 *              key "text" and, optionally, a category in key "label";
 *              "header" (tsv): the first line is skipped (fedrun/records.h)
 */
#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/records.h"
#include "fedrun/text.h"
#include "text_internal.h"

#define NSPLIT 3

static const char *const split_key[NSPLIT] = {"train", "valid", "test"};

struct split {
	bool present; /* any file given */
	struct fedrun_corpus c;
	uint64_t *client_sent; /* K + 1 entries, or NULL: server only */
	bool *client_has;      /* K entries, or NULL: all clients have it */
};

struct fedrun_textdata {
	struct fedrun_vocab *vocab;
	uint32_t clients;
	char **name; /* K names, owned */
	struct split split[NSPLIT];
	struct fedrun_labels *labels; /* the records' labels, or NULL */
	/* Categories of the training sentences, for partition.tsv: the
	 * labels, else with scheme "dirichlet" the train files (n_cat names,
	 * owned); n_cat 0: none. */
	uint32_t n_cat;
	char **cat_name;
};

/* A list of borrowed file names. */
struct files {
	const char **f;
	uint32_t n;
};

static void files_free(struct files *fl)
{
	free(fl->f);
	fl->f = NULL;
	fl->n = 0;
}

static int files_push(struct files *fl, const char *f)
{
	const char **g = realloc(fl->f, (fl->n + 1) * sizeof g[0]);
	if (!g)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	g[fl->n++] = f;
	fl->f = g;
	return 0;
}

/* `section.key`: a file or a non-empty array of files, appended to fl.
 * Absent: nothing. */
static int resolve_files(json_t *section, const char *key, const char *path, struct files *fl)
{
	return fedrun_opts_files(section, key, path, &fl->f, &fl->n);
}

/* ---- options ---- */

enum {
	SCHEME_IID = FEDRUN_PARTITION_IID,
	SCHEME_FILES = FEDRUN_PARTITION_FILES,
	SCHEME_DIRICHLET = FEDRUN_PARTITION_DIRICHLET,
	SCHEME_QUANTITY = FEDRUN_PARTITION_QUANTITY
};
enum { EVAL_SERVER = FEDRUN_PARTITION_EVAL_SERVER, EVAL_CLIENTS = FEDRUN_PARTITION_EVAL_CLIENTS };

struct data_opts {
	json_t *train, *valid, *test, *clients, *partition, *vocab;
	bool lowercase;
	int tokenizer;
	json_t *format, *columns, *fields, *header; /* fedrun_records_config's */
};

static const struct fedrun_opt data_spec[] = {
    {"train", FEDRUN_OPT_ANY, offsetof(struct data_opts, train), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,
     NULL},
    {"valid", FEDRUN_OPT_ANY, offsetof(struct data_opts, valid), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,
     NULL},
    {"test", FEDRUN_OPT_ANY, offsetof(struct data_opts, test), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,
     NULL},
    {"clients", FEDRUN_OPT_ARRAY, offsetof(struct data_opts, clients), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"partition", FEDRUN_OPT_OBJECT, offsetof(struct data_opts, partition), FEDRUN_OPT_OPTIONAL, 0,
     0, 0, NULL, NULL},
    {"vocab", FEDRUN_OPT_OBJECT, offsetof(struct data_opts, vocab), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"lowercase", FEDRUN_OPT_BOOL, offsetof(struct data_opts, lowercase), 0, 0, 0, 0, NULL, NULL},
    TEXT_TOKENIZER_OPT(struct data_opts, tokenizer),
    FEDRUN_RECORDS_OPTS(struct data_opts),
    FEDRUN_OPT_END_,
};

struct vocab_opts {
	const char *file;
	int64_t size, min_count;
};

static const struct fedrun_opt vocab_spec[] = {
    {"file", FEDRUN_OPT_PATH, offsetof(struct vocab_opts, file), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,
     NULL},
    {"size", FEDRUN_OPT_INT, offsetof(struct vocab_opts, size), 0, 0, 4294967295.0, 0, NULL, NULL},
    {"min_count", FEDRUN_OPT_INT, offsetof(struct vocab_opts, min_count), 0, 1, 1e18, 1, NULL,
     NULL},
    FEDRUN_OPT_END_,
};

struct client_opts {
	const char *name;
	json_t *train, *valid, *test;
};

static const struct fedrun_opt client_spec[] = {
    {"name", FEDRUN_OPT_STRING, offsetof(struct client_opts, name), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"train", FEDRUN_OPT_ANY, offsetof(struct client_opts, train), FEDRUN_OPT_REQUIRED, 0, 0, 0,
     NULL, NULL},
    {"valid", FEDRUN_OPT_ANY, offsetof(struct client_opts, valid), FEDRUN_OPT_OPTIONAL, 0, 0, 0,
     NULL, NULL},
    {"test", FEDRUN_OPT_ANY, offsetof(struct client_opts, test), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL,
     NULL},
    FEDRUN_OPT_END_,
};

/* ---- building ---- */

void fedrun_textdata_destroy(struct fedrun_textdata *td)
{
	if (!td)
		return;
	fedrun_vocab_destroy(td->vocab);
	for (uint32_t k = 0; td->name && k < td->clients; k++)
		free(td->name[k]);
	free(td->name);
	fedrun_labels_destroy(td->labels);
	for (uint32_t c = 0; c < td->n_cat; c++)
		free(td->cat_name[c]);
	free(td->cat_name);
	for (int s = 0; s < NSPLIT; s++) {
		fedrun_corpus_fini(&td->split[s].c);
		free(td->split[s].client_sent);
		free(td->split[s].client_has);
	}
	free(td);
}

static int set_clients(struct fedrun_textdata *td, uint32_t K)
{
	td->clients = K;
	td->name = calloc(K, sizeof td->name[0]);
	if (!td->name)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (int s = 0; s < NSPLIT; s++) {
		td->split[s].client_sent = calloc((uint64_t)K + 1, sizeof(uint64_t));
		if (!td->split[s].client_sent)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	return 0;
}

static int set_name(struct fedrun_textdata *td, uint32_t k, const char *name)
{
	char buf[32];
	if (!name) {
		snprintf(buf, sizeof buf, "client%u", k);
		name = buf;
	}
	td->name[k] = strdup(name);
	return td->name[k] ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
}

/* "dir/a-news.train.txt" -> "a-news.train" (new string, or NULL) */
static char *name_of_file(const char *file)
{
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	const char *dot = strrchr(base, '.');
	size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	return strndup(base, len);
}

static int set_name_from_file(struct fedrun_textdata *td, uint32_t k, const char *file)
{
	td->name[k] = name_of_file(file);
	return td->name[k] ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
}

/* The categories partition.tsv counts: the labels, or the train files. */
static int set_categories(struct fedrun_textdata *td, uint32_t n, const struct files *train)
{
	td->cat_name = calloc(n ? n : 1, sizeof td->cat_name[0]);
	if (!td->cat_name)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t c = 0; c < n; c++) {
		td->cat_name[c] = td->labels ? strdup(fedrun_labels_name(td->labels, c))
					     : name_of_file(train->f[c]);
		if (!td->cat_name[c])
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		td->n_cat = c + 1;
	}
	return 0;
}

static int read_files(struct fedrun_corpus *c, const struct fedrun_vocab *v, const struct files *fl,
		      const struct fedrun_text_opts *to)
{
	for (uint32_t i = 0; i < fl->n; i++) {
		int rc = fedrun_corpus_read(c, v, fl->f[i], to);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Per-client files: client k's files of split s are per[k].f[s]; they are
 * read in client order, so each client's sentences come out contiguous.
 * A split with files in server[s] is the server's alone. */
struct client_files {
	struct files f[NSPLIT];
};

static int build_per_client(struct fedrun_textdata *td, struct client_files *per,
			    const struct files *server, const struct fedrun_text_opts *to)
{
	for (int s = 0; s < NSPLIT; s++) {
		struct split *sp = &td->split[s];
		fedrun_corpus_init(&sp->c);
		sp->c.labels = td->labels;
		if (server[s].n) {
			/* One file for everyone: the server's. */
			free(sp->client_sent);
			sp->client_sent = NULL;
			sp->present = true;
			int rc = read_files(&sp->c, td->vocab, &server[s], to);
			if (rc < 0)
				return rc;
			continue;
		}
		for (uint32_t k = 0; k < td->clients; k++) {
			if (per[k].f[s].n)
				sp->present = true;
			else if (!sp->client_has) {
				sp->client_has = malloc(td->clients * sizeof(bool));
				if (!sp->client_has)
					return fedrun_error(FEDRUN_ENOMEM, "out of memory");
				memset(sp->client_has, 1, td->clients * sizeof(bool));
			}
		}
		for (uint32_t k = 0; k < td->clients; k++) {
			sp->client_sent[k] = sp->c.n_sent;
			if (sp->client_has)
				sp->client_has[k] = per[k].f[s].n > 0;
			int rc = read_files(&sp->c, td->vocab, &per[k].f[s], to);
			if (rc < 0)
				return rc;
		}
		sp->client_sent[td->clients] = sp->c.n_sent;
		if (!sp->present) {
			free(sp->client_sent);
			sp->client_sent = NULL;
		}
		int rc = s == 0 && td->labels
			     ? set_categories(td, fedrun_labels_count(td->labels), NULL)
			     : 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The category of each sentence for a Dirichlet partition. */
static const uint32_t *category(const struct fedrun_corpus *c)
{
	return c->sent_label ? c->sent_label : c->sent_file;
}

/* With partition.eval "clients", a held-out label takes the proportions of
 * the same training label: it must be one. */
static int check_labels(const struct fedrun_corpus *c, uint32_t n_cat,
			const struct fedrun_labels *l)
{
	for (uint64_t i = 0; i < c->n_sent; i++)
		if (c->sent_label[i] >= n_cat)
			return fedrun_error(FEDRUN_ECONFIG,
					    "label \"%s\" occurs in no training record: with "
					    "partition.eval \"clients\", each label's sentences are "
					    "split by the Dirichlet proportions of the training "
					    "sentences with that label",
					    fedrun_labels_name(l, c->sent_label[i]));
	return 0;
}

/* Pooled files partitioned by scheme (iid, dirichlet or quantity). */
static int build_pooled(struct fedrun_textdata *td, const struct files *pool,
			const struct fedrun_partition_opts *po, uint64_t seed,
			const struct fedrun_text_opts *to, const char *path)
{
	double *props = NULL;
	uint32_t *assign = NULL;
	uint32_t n_cat = 0; /* training categories: labels, or train files */
	int rc = 0;
	for (int s = 0; s < NSPLIT && rc == 0; s++) {
		struct split *sp = &td->split[s];
		fedrun_corpus_init(&sp->c);
		sp->c.labels = td->labels;
		sp->present = pool[s].n > 0;
		rc = read_files(&sp->c, td->vocab, &pool[s], to);
		if (s == 0)
			n_cat = td->labels ? fedrun_labels_count(td->labels) : sp->c.n_files;
	}
	if (rc == 0 && (td->labels || po->scheme == SCHEME_DIRICHLET))
		rc = set_categories(td, n_cat, &pool[0]);
	if (rc < 0)
		return rc;
	uint32_t K = td->clients;
	if (po->scheme == SCHEME_DIRICHLET || po->scheme == SCHEME_QUANTITY) {
		props = malloc((uint64_t)(n_cat ? n_cat : 1) * K * sizeof props[0]);
		if (!props)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	for (int s = 0; s < NSPLIT; s++) {
		struct split *sp = &td->split[s];
		if (s > 0 && (po->eval == EVAL_SERVER || !sp->present)) {
			free(sp->client_sent);
			sp->client_sent = NULL;
			continue;
		}
		free(assign);
		assign = malloc((sp->c.n_sent ? sp->c.n_sent : 1) * sizeof assign[0]);
		if (!assign) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		if (po->scheme == SCHEME_IID) {
			rc = fedrun_partition_iid(sp->c.n_sent, K, seed, (uint32_t)s, assign);
		} else if (po->scheme == SCHEME_QUANTITY) {
			/* Held-out splits are cut by the training sizes' proportions. */
			rc = s == 0 ? fedrun_partition_quantity(sp->c.n_sent, K, po->alpha,
								(uint64_t)po->min_sentences, seed,
								0, assign, props)
				    : fedrun_partition_by_props(sp->c.n_sent, NULL, 1, K, props,
								seed, (uint32_t)s, assign);
		} else if (s == 0) {
			rc = fedrun_partition_dirichlet(sp->c.n_sent, category(&sp->c), n_cat, K,
							po->alpha, (uint64_t)po->min_sentences,
							seed, 0, assign, props);
		} else if (td->labels) {
			rc = check_labels(&sp->c, n_cat, td->labels);
			if (rc == 0)
				rc = fedrun_partition_by_props(sp->c.n_sent, sp->c.sent_label,
							       n_cat, K, props, seed, (uint32_t)s,
							       assign);
		} else if (sp->c.n_files != td->split[0].c.n_files) {
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "%u files, but train has %u: with partition.eval "
					  "\"clients\", the Dirichlet proportions of train file i "
					  "are used for %s file i",
					  sp->c.n_files, td->split[0].c.n_files, split_key[s]);
		} else {
			/* The same proportions as train, so that a client's
			 * held-out data follows its training distribution. */
			rc = fedrun_partition_by_props(sp->c.n_sent, sp->c.sent_file, sp->c.n_files,
						       K, props, seed, (uint32_t)s, assign);
		}
		if (rc == 0)
			rc = fedrun_corpus_group(&sp->c, assign, K, sp->client_sent);
		if (rc < 0) {
			fedrun_error_wrap(rc, "%s.%s: ", path, split_key[s]);
			break;
		}
	}
	free(assign);
	free(props);
	return rc;
}

static int build_vocab(struct fedrun_textdata *td, const struct vocab_opts *vo,
		       const struct files *train, const struct fedrun_text_opts *to,
		       const char *path)
{
	int rc;
	if (vo->file) {
		rc = fedrun_vocab_load(vo->file, &td->vocab);
	} else {
		struct fedrun_vocab_opts bo = {(uint32_t)vo->size, (uint64_t)vo->min_count, *to};
		rc = fedrun_vocab_build(train->f, train->n, &bo, &td->vocab);
	}
	if (rc < 0) /* the file that failed is the vocabulary, or a training file it is built from */
		fedrun_error_wrap(rc, vo->file ? "%s.vocab: " : "%s.train (building the vocabulary): ",
				  path);
	return rc;
}

static int parse_vocab(json_t *section, const char *path, struct vocab_opts *vo)
{
	char vpath[128];
	snprintf(vpath, sizeof vpath, "%s.vocab", path);
	json_t *v = json_object_get(section, "vocab");
	if (!v) {
		v = json_object();
		if (!v || json_object_set_new(section, "vocab", v) < 0)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	bool sized = json_object_get(v, "size") || json_object_get(v, "min_count");
	int rc = fedrun_opts_parse(vocab_spec, v, vpath, vo);
	if (rc < 0)
		return rc;
	if (vo->file && sized)
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s: size and min_count apply when the vocabulary is built; "
				    "with a file the vocabulary is the file's",
				    vpath);
	if (vo->file) {
		/* The built-vocabulary defaults mean nothing here. */
		json_object_del(v, "size");
		json_object_del(v, "min_count");
	}
	if (vo->size == 1)
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.size: 1 is too small: <unk> and <eos> take 2 (0: no cap)",
				    vpath);
	return 0;
}

/* The "clients" form: one entry per client. */
static int parse_client_list(struct fedrun_textdata *td, json_t *list, const char *path,
			     struct client_files **out)
{
	size_t K = json_array_size(list);
	if (K == 0)
		return fedrun_error(FEDRUN_ECONFIG, "%s.clients: empty array", path);
	if (K > 1000000)
		return fedrun_error(FEDRUN_ECONFIG, "%s.clients: %zu clients, at most 1000000",
				    path, K);
	int rc = set_clients(td, (uint32_t)K);
	if (rc < 0)
		return rc;
	struct client_files *per = calloc(K, sizeof per[0]);
	if (!per)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	*out = per;
	for (size_t k = 0; k < K; k++) {
		char cpath[128];
		snprintf(cpath, sizeof cpath, "%s.clients[%zu]", path, k);
		json_t *entry = json_array_get(list, k);
		struct client_opts co;
		rc = fedrun_opts_parse(client_spec, entry, cpath, &co);
		if (rc < 0)
			return rc;
		for (int s = 0; s < NSPLIT && rc == 0; s++)
			rc = resolve_files(entry, split_key[s], cpath, &per[k].f[s]);
		if (rc == 0)
			rc = set_name(td, (uint32_t)k, co.name);
		if (rc < 0)
			return rc;
		for (size_t j = 0; j < k; j++)
			if (strcmp(td->name[j], td->name[k]) == 0)
				return fedrun_error(
				    FEDRUN_ECONFIG,
				    "%s.name: \"%s\" is also the name of clients[%zu]", cpath,
				    td->name[k], j);
	}
	return 0;
}

/* The "files" scheme: client k is train[k], with valid[k] and test[k] when
 * those are arrays of the same length. */
static int files_to_clients(struct fedrun_textdata *td, struct files *pool,
			    struct client_files **out, const char *path)
{
	uint32_t K = pool[0].n;
	int rc = set_clients(td, K);
	if (rc < 0)
		return rc;
	struct client_files *per = calloc(K, sizeof per[0]);
	if (!per)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	*out = per;
	for (uint32_t k = 0; k < K; k++) {
		rc = set_name_from_file(td, k, pool[0].f[k]);
		if (rc == 0)
			rc = files_push(&per[k].f[0], pool[0].f[k]);
		if (rc < 0)
			return rc;
	}
	files_free(&pool[0]);
	for (int s = 1; s < NSPLIT; s++) {
		if (pool[s].n == 0 || (pool[s].n == 1 && K > 1))
			continue; /* nothing, or the server's file */
		if (pool[s].n != K)
			return fedrun_error(
			    FEDRUN_ECONFIG,
			    "%s.%s: %u files for %u clients: with scheme \"files\", "
			    "give one file (held by the server) or one per client",
			    path, split_key[s], pool[s].n, K);
		for (uint32_t k = 0; k < K; k++) {
			rc = files_push(&per[k].f[s], pool[s].f[k]);
			if (rc < 0)
				return rc;
		}
		files_free(&pool[s]);
	}
	return 0;
}

static int build(struct fedrun_textdata *td, json_t *section, const char *path, uint64_t seed)
{
	struct data_opts d = {.tokenizer = FEDRUN_TEXT_TOK_WHITESPACE};
	struct fedrun_partition_opts po = {0};
	struct vocab_opts vo;
	struct files pool[NSPLIT] = {{0}};
	struct client_files *per = NULL;
	int rc = fedrun_opts_parse(data_spec, section, path, &d);
	if (rc < 0)
		return rc;
	static const struct fedrun_records_roles roles = {
	    {"text", "label"}, {true, false}, {"text", NULL}};
	struct fedrun_records_format fmt;
	if ((rc = fedrun_records_config(section, path, &roles, &fmt)) < 0)
		return rc;
	struct fedrun_text_opts to = {.lowercase = d.lowercase,
				      .tokenizer = (uint32_t)d.tokenizer,
				      .format = &fmt};
	if ((fmt.column[1] >= 0 || fmt.field[1]) && (rc = fedrun_labels_create(&td->labels)) < 0)
		return rc;

	if (d.clients) {
		const char *clash = d.train	  ? "train"
				    : d.valid	  ? "valid"
				    : d.test	  ? "test"
				    : d.partition ? "partition"
						  : NULL;
		if (clash)
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.%s: not allowed with %s.clients, which lists each "
					    "client's files",
					    path, clash, path);
		rc = parse_client_list(td, d.clients, path, &per);
	} else {
		if (!d.train)
			return fedrun_error(
			    FEDRUN_ECONFIG,
			    "%s.train: required key is missing (or give %s.clients)", path, path);
		for (int s = 0; s < NSPLIT && rc == 0; s++)
			rc = resolve_files(section, split_key[s], path, &pool[s]);
		if (rc == 0)
			rc = fedrun_partition_opts_parse(section, path, &po);
		if (rc < 0)
			goto out;
		if (po.seed >= 0)
			seed = (uint64_t)po.seed;
		if (po.scheme == SCHEME_FILES) {
			if (po.clients && po.clients != pool[0].n) {
				rc = fedrun_error(FEDRUN_ECONFIG,
						  "%s.partition.clients: %" PRId64 ", but scheme "
						  "\"files\" makes one client per train file (%u)",
						  path, po.clients, pool[0].n);
				goto out;
			}
			json_object_set_new(json_object_get(section, "partition"), "clients",
					    json_integer(pool[0].n));
			rc = files_to_clients(td, pool, &per, path);
		} else {
			rc = set_clients(td, (uint32_t)po.clients);
			for (uint32_t k = 0; k < td->clients && rc == 0; k++)
				rc = set_name(td, k, NULL);
		}
	}
	if (rc == 0)
		rc = parse_vocab(section, path, &vo);
	if (rc < 0)
		goto out;

	/* Every client's training files build the vocabulary: see the note on
	 * privacy in text.h. */
	if (per) {
		struct files all_train = {0};
		for (uint32_t k = 0; k < td->clients && rc == 0; k++)
			for (uint32_t i = 0; i < per[k].f[0].n && rc == 0; i++)
				rc = files_push(&all_train, per[k].f[0].f[i]);
		if (rc == 0)
			rc = build_vocab(td, &vo, &all_train, &to, path);
		files_free(&all_train);
		if (rc == 0)
			rc = build_per_client(td, per, pool, &to);
	} else {
		rc = build_vocab(td, &vo, &pool[0], &to, path);
		if (rc == 0)
			rc = build_pooled(td, pool, &po, seed, &to, path);
	}
out:
	for (int s = 0; s < NSPLIT; s++)
		files_free(&pool[s]);
	for (uint32_t k = 0; per && k < td->clients; k++)
		for (int s = 0; s < NSPLIT; s++)
			files_free(&per[k].f[s]);
	free(per);
	return rc;
}

int fedrun_textdata_from_json(json_t *section, const char *path, uint64_t seed,
			      struct fedrun_textdata **out)
{
	*out = NULL;
	if (!path)
		path = "data";
	struct fedrun_textdata *td = calloc(1, sizeof *td);
	if (!td)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = build(td, section, path, seed);
	if (rc < 0) {
		fedrun_textdata_destroy(td);
		return rc;
	}
	*out = td;
	return 0;
}

const struct fedrun_vocab *fedrun_textdata_vocab(const struct fedrun_textdata *td)
{
	return td->vocab;
}

uint32_t fedrun_textdata_num_clients(const struct fedrun_textdata *td)
{
	return td->clients;
}

const char *fedrun_textdata_client_name(const struct fedrun_textdata *td, uint32_t client)
{
	return client < td->clients ? td->name[client] : NULL;
}

int fedrun_textdata_stream(const struct fedrun_textdata *td, enum fedrun_split split,
			   int64_t client, struct fedrun_stream *out)
{
	memset(out, 0, sizeof *out);
	if ((unsigned)split >= NSPLIT)
		return fedrun_error(FEDRUN_EINVAL, "data: no split %d", (int)split);
	const struct split *sp = &td->split[split];
	const char *key = split_key[split];
	if (!sp->present)
		return fedrun_error(FEDRUN_ENOENT, "data: no %s data was given", key);
	uint64_t a = 0, b = sp->c.n_sent;
	if (client != FEDRUN_ALL_CLIENTS) {
		if (client < 0 || client >= td->clients)
			return fedrun_error(FEDRUN_EINVAL, "data: no client %" PRId64 " (of %u)",
					    client, td->clients);
		if (!sp->client_sent)
			return fedrun_error(FEDRUN_ENOENT,
					    "data: the %s data is held by the server, not by "
					    "clients (see partition.eval)",
					    key);
		if (sp->client_has && !sp->client_has[client])
			return fedrun_error(FEDRUN_ENOENT, "data: client %s has no %s data",
					    td->name[client], key);
		a = sp->client_sent[client];
		b = sp->client_sent[client + 1];
	}
	out->sent_off = sp->c.sent_off + a;
	out->ids = sp->c.ids + sp->c.sent_off[a];
	out->n_tokens = sp->c.sent_off[b] - sp->c.sent_off[a];
	out->n_sent = b - a;
	return 0;
}

int fedrun_textdata_partition_write(const struct fedrun_textdata *td, const struct fedrun_host *h)
{
	uint32_t K = td->clients;
	uint64_t *counts = calloc((uint64_t)K * (2 * NSPLIT + td->n_cat) + 1, sizeof counts[0]);
	if (!counts)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	uint64_t *per_cat = counts + 2 * NSPLIT * (uint64_t)K;
	struct fedrun_partition_report r = {.clients = K,
					    .name = (const char *const *)td->name,
					    .n_cat = td->n_cat,
					    .cat_name = (const char *const *)td->cat_name,
					    .cat_sentences = per_cat};
	for (int s = 0; s < NSPLIT; s++) {
		const struct split *sp = &td->split[s];
		if (!sp->present || !sp->client_sent)
			continue;
		uint64_t *sent = counts + 2 * s * (uint64_t)K, *tok = sent + K;
		r.sentences[s] = sent;
		r.tokens[s] = tok;
		for (uint32_t k = 0; k < K; k++) {
			uint64_t a = sp->client_sent[k], b = sp->client_sent[k + 1];
			bool has = !sp->client_has || sp->client_has[k];
			sent[k] = has ? b - a : UINT64_MAX;
			tok[k] = sp->c.sent_off[b] - sp->c.sent_off[a];
			for (uint64_t i = a; s == 0 && td->n_cat && i < b; i++) {
				uint32_t c = sp->c.sent_label ? sp->c.sent_label[i] : sp->c.sent_file[i];
				if (c < td->n_cat)
					per_cat[(uint64_t)k * td->n_cat + c]++;
			}
		}
	}
	int rc = fedrun_partition_report_write(h, &r);
	free(counts);
	return rc;
}
