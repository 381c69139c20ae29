/* SPDX-License-Identifier: Apache-2.0 */
/* Tokenised corpora: every token id in one uint32 array with sentence
 * offsets, so that a client's data is a contiguous run of it and a hundred
 * clients cost nothing more than the corpus itself. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/text.h"
#include "text_internal.h"

void fedrun_corpus_init(struct fedrun_corpus *c)
{
	memset(c, 0, sizeof *c);
}

void fedrun_corpus_fini(struct fedrun_corpus *c)
{
	free(c->ids);
	free(c->sent_off);
	free(c->sent_file);
	free(c->sent_label);
	memset(c, 0, sizeof *c);
}

static int reserve_tokens(struct fedrun_corpus *c, uint64_t more)
{
	if (c->n_tokens + more <= c->cap_tokens)
		return 0;
	uint64_t cap = c->cap_tokens ? c->cap_tokens : 4096;
	while (cap < c->n_tokens + more)
		cap *= 2;
	uint32_t *ids = realloc(c->ids, cap * sizeof ids[0]);
	if (!ids)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	c->ids = ids;
	c->cap_tokens = cap;
	return 0;
}

/* Room for sentence n_sent + 1: its end offset and its file. */
static int reserve_sentence(struct fedrun_corpus *c)
{
	if (c->n_sent + 2 <= c->cap_sent)
		return 0;
	uint64_t cap = c->cap_sent ? 2 * c->cap_sent : 1024;
	uint64_t *off = realloc(c->sent_off, cap * sizeof off[0]);
	if (off)
		c->sent_off = off;
	uint32_t *file = realloc(c->sent_file, cap * sizeof file[0]);
	if (file)
		c->sent_file = file;
	uint32_t *label = c->labels ? realloc(c->sent_label, cap * sizeof label[0]) : NULL;
	if (label)
		c->sent_label = label;
	if (!off || !file || (c->labels && !label))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	c->cap_sent = cap;
	return 0;
}

struct reader {
	struct fedrun_corpus *c;
	const struct fedrun_vocab *v;
	uint32_t label; /* of the sentence being read */
};

static int read_label(void *ud, const char *label, size_t len)
{
	struct reader *r = ud;
	return fedrun_labels_id(r->c->labels, label, len, &r->label);
}

static int read_token(void *ud, const char *word, size_t len)
{
	struct reader *r = ud;
	struct fedrun_corpus *c = r->c;
	int rc = reserve_tokens(c, 1);
	if (rc < 0)
		return rc;
	if (!word) {
		c->ids[c->n_tokens++] = FEDRUN_VOCAB_EOS;
		rc = reserve_sentence(c);
		if (rc < 0)
			return rc;
		c->sent_file[c->n_sent] = c->n_files;
		if (c->labels)
			c->sent_label[c->n_sent] = r->label;
		c->sent_off[++c->n_sent] = c->n_tokens;
		return 0;
	}
	uint32_t id;
	if (!fedrun_vocab_find(r->v, word, len, &id)) {
		id = FEDRUN_VOCAB_UNK;
		c->n_unk++;
	}
	c->ids[c->n_tokens++] = id;
	return 0;
}

/* Reads a file (path) or one line (text, len, line) into c; on error
 * forgets what it added. */
static int corpus_add(struct fedrun_corpus *c, const struct fedrun_vocab *v, const char *path,
		      const char *text, size_t len, uint64_t line,
		      const struct fedrun_text_opts *opts)
{
	int rc = reserve_sentence(c);
	if (rc < 0)
		return rc;
	c->sent_off[0] = 0;
	uint64_t n_tokens = c->n_tokens, n_sent = c->n_sent, n_unk = c->n_unk;
	struct reader r = {c, v, 0};
	if (text)
		rc = text_scan_line(path, line, text, len, opts, read_token, &r);
	else if (c->labels && opts && opts->format && opts->format->kind != FEDRUN_RECORDS_TEXT)
		rc = text_scan_records(path, opts, read_token, read_label, &r);
	else
		rc = text_scan_file(path, opts, read_token, &r);
	if (rc < 0) {
		c->n_tokens = n_tokens;
		c->n_sent = n_sent;
		c->n_unk = n_unk;
	}
	return rc;
}

int fedrun_corpus_read(struct fedrun_corpus *c, const struct fedrun_vocab *v, const char *path,
		       const struct fedrun_text_opts *opts)
{
	int rc = corpus_add(c, v, path, NULL, 0, 0, opts);
	if (rc < 0)
		return rc;
	c->n_files++;
	return 0;
}

int fedrun_corpus_add_line(struct fedrun_corpus *c, const struct fedrun_vocab *v, const char *text,
			   size_t len, const struct fedrun_text_opts *opts, const char *where,
			   uint64_t line)
{
	return corpus_add(c, v, where, text ? text : "", len, line, opts);
}

int fedrun_corpus_group(struct fedrun_corpus *c, const uint32_t *assign, uint32_t clients,
			uint64_t *client_sent)
{
	if (clients == 0)
		return fedrun_error(FEDRUN_EINVAL, "partition: zero clients");
	for (uint64_t s = 0; s < c->n_sent; s++)
		if (assign[s] >= clients)
			return fedrun_error(FEDRUN_EINVAL,
					    "partition: sentence %llu assigned to client %u of %u",
					    (unsigned long long)s, assign[s], clients);
	/* Counting sort of sentences by client: client_sent[k] is first the
	 * number of sentences of client k - 1, then a running start. */
	memset(client_sent, 0, (clients + 1) * sizeof client_sent[0]);
	for (uint64_t s = 0; s < c->n_sent; s++)
		client_sent[assign[s] + 1]++;
	for (uint32_t k = 0; k < clients; k++)
		client_sent[k + 1] += client_sent[k];

	uint64_t cap_sent = c->n_sent + 1;
	uint32_t *ids = malloc((c->n_tokens ? c->n_tokens : 1) * sizeof ids[0]);
	uint64_t *off = malloc(cap_sent * sizeof off[0]);
	uint32_t *file = malloc(cap_sent * sizeof file[0]);
	uint64_t *next = malloc(clients * sizeof next[0]);
	uint64_t *order = malloc((c->n_sent ? c->n_sent : 1) * sizeof order[0]);
	uint32_t *label = c->sent_label ? malloc(cap_sent * sizeof label[0]) : NULL;
	if (!ids || !off || !file || !next || !order || (c->sent_label && !label)) {
		free(label);
		free(ids);
		free(off);
		free(file);
		free(next);
		free(order);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	memcpy(next, client_sent, clients * sizeof next[0]);
	for (uint64_t s = 0; s < c->n_sent; s++)
		order[next[assign[s]]++] = s;
	uint64_t t = 0;
	off[0] = 0;
	for (uint64_t i = 0; i < c->n_sent; i++) {
		uint64_t s = order[i], len = c->sent_off[s + 1] - c->sent_off[s];
		memcpy(ids + t, c->ids + c->sent_off[s], len * sizeof ids[0]);
		t += len;
		off[i + 1] = t;
		file[i] = c->sent_file[s];
		if (label)
			label[i] = c->sent_label[s];
	}
	free(next);
	free(order);
	free(c->ids);
	free(c->sent_off);
	free(c->sent_file);
	free(c->sent_label);
	c->sent_label = label;
	c->ids = ids;
	c->sent_off = off;
	c->sent_file = file;
	c->cap_tokens = c->n_tokens ? c->n_tokens : 1;
	c->cap_sent = cap_sent;
	return 0;
}
