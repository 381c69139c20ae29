/* SPDX-License-Identifier: Apache-2.0 */
/* gru-lm outside training: the vocabulary a run keeps (RUN/vocab.txt, with
 * the text options in RUN/pipeline.json) and the two ops that use it,
 * score (perplexity of new text, computed as a split's evaluation is) and
 * sample (text drawn from the model), for fedrun score and fedrun sample. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gru_lm.h"

const char *gru_lm_run_dir(const struct fedrun_host *host)
{
	if (host->size >= offsetof(struct fedrun_host, run_dir) + sizeof(void *) && host->run_dir)
		return host->run_dir(host->ctx);
	return NULL;
}

static bool host_flag(const struct fedrun_host *h, size_t off, bool (*const *fn)(void *))
{
	return h->size >= off + sizeof(void *) && *fn && (*fn)(h->ctx);
}

/* Whether the files at paths a and b hold the same bytes (b may be absent:
 * *b_exists says). */
static int same_file(const char *a, const char *b, bool *same, bool *b_exists)
{
	char *x = NULL, *y = NULL;
	size_t nx, ny;
	int rc = fedrun_read_file(a, &x, &nx);
	*b_exists = false;
	*same = false;
	if (rc == 0 && fedrun_read_file(b, &y, &ny) == 0) {
		*b_exists = true;
		*same = nx == ny && memcmp(x, y, nx) == 0;
	}
	fedrun_error_clear();
	free(x);
	free(y);
	return rc;
}

/* At create: RUN/vocab.txt may be replaced only when it is absent, already
 * the same bytes, or (output.overwrite) the user's to lose. The bytes are
 * compared through a file of the run's vocabulary written and removed
 * here, so that a run that fails to set up leaves the directory as it was
 * (the host removes it when it made it and it is empty); the file itself is
 * written by gru_lm_keep_vocab once the run works. */
int gru_lm_check_vocab(struct gru_lm *m)
{
	const struct fedrun_host *h = m->host;
	const char *dir = gru_lm_run_dir(h);
	char *path = fedrun_path_resolve(dir, "vocab.txt");
	char *tmp = fedrun_path_resolve(dir, ".vocab.txt.new");
	int rc = path && tmp ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	bool same = false, exists = false;
	if (rc == 0)
		rc = fedrun_vocab_save(m->vocab, tmp);
	if (rc == 0)
		rc = same_file(tmp, path, &same, &exists);
	if (tmp)
		remove(tmp);
	if (rc == 0 && exists && !same) {
		if (host_flag(h, offsetof(struct fedrun_host, resuming), &h->resuming))
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "cannot resume: %s is not the vocabulary this pipeline's "
					  "data gives, which the run's checkpoints were trained with",
					  path);
		else if (!host_flag(h, offsetof(struct fedrun_host, overwrite), &h->overwrite))
			rc = fedrun_error(FEDRUN_EIO,
					  "data.vocab: %s exists and is not this run's vocabulary: "
					  "set output.overwrite to true to replace it, or choose "
					  "another output.dir",
					  path);
		else
			h->log(h->ctx, FEDRUN_LOG_WARN,
			       "data.vocab: %s holds another vocabulary; the run replaces it "
			       "(output.overwrite)",
			       path);
	}
	if (rc == 0 && !same) {
		m->vocab_path = path;
		path = NULL;
	}
	free(path);
	free(tmp);
	return rc;
}

int gru_lm_keep_vocab(struct gru_lm *m)
{
	int rc = 0;
	pthread_mutex_lock(&m->vocab_lock);
	if (m->vocab_path) {
		rc = fedrun_vocab_save(m->vocab, m->vocab_path);
		free(m->vocab_path);
		m->vocab_path = NULL;
	}
	pthread_mutex_unlock(&m->vocab_lock);
	return rc;
}

int gru_lm_read_run(struct gru_lm *m)
{
	const char *dir = gru_lm_run_dir(m->host);
	char *vpath = fedrun_path_resolve(dir, "vocab.txt");
	char *ppath = fedrun_path_resolve(dir, "pipeline.json");
	int rc = vpath && ppath ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	json_t *pipeline = NULL;
	if (rc == 0 && access(vpath, R_OK) != 0)
		rc = fedrun_error(FEDRUN_ENOENT,
				  "%s: no vocabulary (a gru-lm run keeps it there since fedrun "
				  "score and sample came; an older run has none: run it again)",
				  vpath);
	if (rc == 0 && (rc = fedrun_vocab_load(vpath, &m->own_vocab)) == 0)
		m->vocab = m->own_vocab;
	if (rc == 0) {
		json_error_t je;
		if (!(pipeline = json_load_file(ppath, 0, &je)))
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: %s", ppath, je.text);
	}
	/* The run's copy holds the data keys as the run read them (defaults
	 * written back); only how text is cut matters here. */
	json_t *data = json_object_get(pipeline, "data");
	if (rc == 0)
		rc = fedrun_text_opts_from_json(json_is_object(data) ? data : NULL, "data",
						&m->text);
	if (rc < 0 && pipeline)
		fedrun_error_wrap(rc, "%s: ", ppath);
	json_decref(pipeline);
	free(vpath);
	free(ppath);
	return rc;
}

/* The tokens of lines[0..n) as a corpus (blank lines add nothing). */
static int read_lines(const struct gru_lm *m, const char *const *lines, uint32_t n,
		      struct fedrun_corpus *c)
{
	fedrun_corpus_init(c);
	for (uint32_t i = 0; i < n; i++) {
		int rc = fedrun_corpus_add_line(c, m->vocab, lines[i], strlen(lines[i]), &m->text,
						"line", i + 1);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Each line alone: <eos> (the token before any sentence of a stream) then
 * the line's tokens, its own <eos> last, in one row from a fresh state; the
 * log-probability is minus the summed loss of its tokens. */
static int score_lines(struct gru_lm *m, struct gru_lm_worker *w, const float *params,
		       const char *const *lines, uint32_t n, struct fedrun_lm_score *out)
{
	int rc = 0;
	double sum = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct fedrun_corpus c;
		fedrun_corpus_init(&c);
		uint64_t off[2] = {0, 0};
		int got = fedrun_corpus_add_line(&c, m->vocab, lines[i], strlen(lines[i]),
						 &m->text, "line", i + 1);
		out->line_logprob[i] = 0;
		out->line_tokens[i] = 0;
		uint32_t *ids = got > 0 ? malloc((c.n_tokens + 1) * sizeof *ids) : NULL;
		if (got < 0) {
			rc = got;
		} else if (got > 0 && !ids) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		} else if (got > 0) {
			ids[0] = FEDRUN_VOCAB_EOS;
			memcpy(ids + 1, c.ids, c.n_tokens * sizeof *ids);
			off[1] = c.n_tokens + 1;
			struct fedrun_stream s = {ids, c.n_tokens + 1, 1, off};
			double loss;
			uint64_t cnt;
			rc = gru_lm_stream_loss(m, w, params, &s, 1, false, false, &loss, &cnt);
			if (rc == 0) {
				out->line_logprob[i] = -loss * (double)cnt;
				out->line_tokens[i] = cnt;
				out->tokens += cnt;
				out->oov += c.n_unk;
				sum += loss * (double)cnt;
			}
		}
		free(ids);
		fedrun_corpus_fini(&c);
	}
	out->loss = out->tokens ? sum / (double)out->tokens : 0;
	return rc;
}

static bool is_lm_score_v1(const struct fedrun_lm_score *out)
{
	return out->size >= offsetof(struct fedrun_lm_score, line_tokens) + sizeof(void *);
}

int gru_lm_score(void *model, void *worker, const float *params, const char *const *lines,
		 uint32_t n, struct fedrun_lm_score *out)
{
	struct gru_lm *m = model;
	if (!is_lm_score_v1(out))
		return fedrun_error(FEDRUN_EINVAL, "gru-lm: score: struct fedrun_lm_score too small");
	out->loss = 0;
	out->tokens = out->oov = 0;
	struct gru_lm_worker *w = worker;
	int rc = w ? 0 : gru_lm_worker_create(m, (void **)&w);
	if (rc < 0)
		return rc;
	if (out->line_logprob) {
		rc = score_lines(m, w, params, lines, n, out);
	} else {
		/* One text, read as a split is and evaluated by the same call
		 * as the run's own evaluation (its eval_batch rows, bptt and
		 * eval_groups), so that the loss is the run's test loss when
		 * the lines are its test file. */
		struct fedrun_corpus c;
		rc = read_lines(m, lines, n, &c);
		struct fedrun_stream s = {c.ids, c.n_tokens, c.n_sent, c.sent_off};
		if (rc == 0)
			rc = gru_lm_stream_loss(m, w, params, &s, m->eval_batch, false, true,
						&out->loss, &out->tokens);
		if (rc == FEDRUN_ENOENT)
			fedrun_error_wrap(rc, "the text has ");
		out->oov = c.n_unk;
		fedrun_corpus_fini(&c);
	}
	if (!worker)
		gru_lm_worker_destroy(m, w);
	return rc;
}

/* A token drawn from softmax(logits / T); T == 0: the first most probable. */
static uint32_t draw(const float *logits, uint32_t V, double T, struct fedrun_rng *r,
		     double *scratch)
{
	uint32_t best = 0;
	for (uint32_t i = 1; i < V; i++)
		if (logits[i] > logits[best])
			best = i;
	if (T <= 0)
		return best;
	double sum = 0;
	for (uint32_t i = 0; i < V; i++)
		sum += scratch[i] = exp(((double)logits[i] - logits[best]) / T);
	double u = fedrun_rng_uniform(r) * sum, acc = 0;
	for (uint32_t i = 0; i < V; i++) {
		acc += scratch[i];
		if (u < acc)
			return i;
	}
	return best; /* rounding: u at the very top */
}

/* Appends the word of id (a newline for <eos>) to the text in *buf. */
static int put_word(const struct gru_lm *m, uint32_t id, char **buf, size_t *len, size_t *cap)
{
	const char *word = id == FEDRUN_VOCAB_EOS ? "\n" : fedrun_vocab_word(m->vocab, id);
	size_t wl = strlen(word), sep = id != FEDRUN_VOCAB_EOS && *len && (*buf)[*len - 1] != '\n';
	if (*len + sep + wl + 2 > *cap) {
		size_t c = 2 * (*len + sep + wl + 2);
		char *b = realloc(*buf, c);
		if (!b)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		*buf = b;
		*cap = c;
	}
	if (sep)
		(*buf)[(*len)++] = ' ';
	memcpy(*buf + *len, word, wl + 1);
	*len += wl;
	return 0;
}

/* The model reads <eos> (what comes before any sentence), then the prompt's
 * tokens, one step each with the state carried; each drawn token is read
 * next. Draws come from the stream (seed, FEDRUN_RNG_PLUGIN, 0, 0). */
int gru_lm_sample(void *model, void *worker, const float *params,
		  const struct fedrun_sample_opts *opts, char **out)
{
	struct gru_lm *m = model;
	*out = NULL;
	if (opts->size < offsetof(struct fedrun_sample_opts, prompt) + sizeof(void *))
		return fedrun_error(FEDRUN_EINVAL, "gru-lm: sample: struct fedrun_sample_opts too small");
	struct fedrun_corpus c;
	fedrun_corpus_init(&c);
	int rc = 0;
	if (opts->prompt)
		rc = fedrun_corpus_add_line(&c, m->vocab, opts->prompt, strlen(opts->prompt),
					    &m->text, "--prompt", 1);
	if (rc > 0)
		c.n_tokens--; /* the prompt goes on: not its <eos> */
	struct gru_lm_worker *w = worker;
	if (rc >= 0)
		rc = w ? 0 : gru_lm_worker_create(m, (void **)&w);
	if (rc < 0) {
		fedrun_corpus_fini(&c);
		return rc;
	}
	float *logits = malloc(m->V * sizeof *logits);
	double *scratch = malloc(m->V * sizeof *scratch);
	size_t len = 0, cap = 64;
	char *buf = calloc(cap, 1);
	if (!logits || !scratch || !buf)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0)
		rc = gru_lm_worker_reserve(m, w, 1, 1);
	if (rc == 0)
		rc = gru_lm_send(m, w, w->params, params, m->layout.total);
	struct fedrun_rng r;
	fedrun_rng_init(&r, opts->seed, FEDRUN_RNG_PLUGIN, 0, 0);
	uint32_t next = FEDRUN_VOCAB_EOS;
	for (uint64_t k = 0; rc == 0 && k < c.n_tokens + opts->tokens; k++) {
		struct gru_lm_pass p = {.T = 1, .B = 1, .fresh = k == 0};
		w->in_u[0] = next;
		w->tgt_u[0] = 0;
		rc = gru_lm_next_logits(m, w, w->params, &p, logits);
		if (rc < 0)
			break;
		if (k < c.n_tokens) {
			next = c.ids[k];
			continue;
		}
		next = draw(logits, m->V, opts->temperature, &r, scratch);
		rc = put_word(m, next, &buf, &len, &cap);
	}
	if (rc == 0 && len && buf[len - 1] != '\n')
		rc = put_word(m, FEDRUN_VOCAB_EOS, &buf, &len, &cap);
	if (rc == 0) {
		*out = buf;
		buf = NULL;
	}
	free(buf);
	free(logits);
	free(scratch);
	fedrun_corpus_fini(&c);
	if (!worker)
		gru_lm_worker_destroy(m, w);
	return rc;
}
