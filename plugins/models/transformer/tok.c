/* SPDX-License-Identifier: Apache-2.0 */
/* The transformer's tokenizers: words (split at white space, and at
 * punctuation when asked) over a fedrun_vocab, or
 * SentencePiece through spm.h when fedrun was built with it. */
#include "config.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>
#include <fedrun/fedvocab.h>
#include "tok.h"
#ifdef HAVE_SENTENCEPIECE
#include "spm.h"
#endif

#define PAD_WORD "<pad>"
#define BOS_WORD "<bos>"

struct tfm_tok {
	int type;
	struct fedrun_vocab *v; /* words */
#ifdef HAVE_SENTENCEPIECE
	struct tfm_spm *spm;
#endif
	int32_t pad, bos, eos, unk;
	uint32_t size;
	int split; /* words: TFM_SPLIT_* */
	int chars; /* words: an unknown word spelled in characters */
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* TFM_SPLIT_PUNCT: inside a run of non-blank characters every ASCII
 * punctuation character is a token of its own, and so is each run of other
 * characters between them ('_' counts as a letter, so identifiers stay
 * whole). A token that follows the previous one without white space
 * carries the joiner in front of it, and decoding glues it back on: the
 * convention of OpenNMT's tokenizer ("aggressive" mode with joiner
 * annotation), so "Open file..." is "Open", "file", "\uffed.", "\uffed.",
 * "\uffed." and decodes to itself (white space runs become one space). */
#define JOINER "\xef\xbf\xad" /* U+FFED HALFWIDTH BLACK SQUARE */
#define JOINER_LEN 3

static int is_punct(char ch)
{
	unsigned char c = (unsigned char)ch;
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '^') ||
	       c == '`' || (c >= '{' && c <= '~');
}

/* Walks the tokens of one line (s, len). */
struct word_iter {
	const char *s;
	size_t len, i;
	int split;
	char *buf; /* a joined token's spelling; free it when done */
	size_t cap;
	/* the last token without its joiner, and whether it had one */
	const char *bare;
	size_t bare_len;
	int joined;
	char ch[JOINER_LEN + 4]; /* one character of it (spell) */
};

/* The next token's spelling as a vocabulary holds it (*w, *n: borrowed
 * until the next call): 1, or 0 at the end of the line, or < 0 (out of
 * memory). */
static int next_word(struct word_iter *it, const char **w, size_t *n)
{
	const char *s = it->s;
	size_t i = it->i, len = it->len;
	while (i < len && is_space(s[i]))
		i++;
	if (i >= len) {
		it->i = i;
		return 0;
	}
	/* no white space skipped and not the line's first token */
	int joined = it->split == TFM_SPLIT_PUNCT && i == it->i && i > 0;
	size_t j = i + 1;
	if (it->split != TFM_SPLIT_PUNCT)
		while (j < len && !is_space(s[j]))
			j++;
	else if (!is_punct(s[i]))
		while (j < len && !is_space(s[j]) && !is_punct(s[j]))
			j++;
	it->i = j;
	it->bare = s + i;
	it->bare_len = j - i;
	it->joined = joined;
	if (!joined) {
		*w = s + i;
		*n = j - i;
		return 1;
	}
	size_t need = JOINER_LEN + (j - i);
	if (need > it->cap) {
		size_t cap = need < 64 ? 64 : 2 * need;
		char *b = realloc(it->buf, cap);
		if (!b)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		it->buf = b;
		it->cap = cap;
	}
	memcpy(it->buf, JOINER, JOINER_LEN);
	memcpy(it->buf + JOINER_LEN, s + i, j - i);
	*w = it->buf;
	*n = need;
	return 1;
}

/* The characters of the last token (unknown = "characters"): each UTF-8
 * sequence (a byte that starts none, alone) as a token of its own, glued
 * to the one before it (the joiner in front) but for the first, which is
 * glued when the token was: so that decoding spells the word back. Calls
 * fn(ud, spelling, length) for each; stops at its first non-zero return. */
static int spell(struct word_iter *it, int (*fn)(void *, const char *, size_t), void *ud)
{
	const unsigned char *p = (const unsigned char *)it->bare;
	size_t n = it->bare_len, i = 0;
	int rc = 0;
	while (i < n && rc == 0) {
		size_t k = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 1;
		if (k > n - i)
			k = 1;
		for (size_t m = 1; m < k; m++)
			if ((p[m] & 0xc0) != 0x80)
				k = 1;
		size_t o = 0;
		if (i > 0 || it->joined) {
			memcpy(it->ch, JOINER, JOINER_LEN);
			o = JOINER_LEN;
		}
		memcpy(it->ch + o, p, k);
		rc = fn(ud, it->ch, o + k);
		p += k;
		i += k;
	}
	return rc;
}

/* Adds <pad> and <bos> if the vocabulary lacks them and fills in the ids. */
static int words_finish(struct fedrun_vocab *v, int split, int chars, struct tfm_tok **out)
{
	uint32_t pad, bos;
	int rc = fedrun_vocab_add(v, PAD_WORD, strlen(PAD_WORD), 0, &pad);
	if (rc == 0)
		rc = fedrun_vocab_add(v, BOS_WORD, strlen(BOS_WORD), 0, &bos);
	if (rc < 0) {
		fedrun_vocab_destroy(v);
		return rc;
	}
	struct tfm_tok *t = calloc(1, sizeof *t);
	if (!t) {
		fedrun_vocab_destroy(v);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	t->type = TFM_TOK_WORDS;
	t->v = v;
	t->split = split;
	t->chars = chars;
	t->pad = (int32_t)pad;
	t->bos = (int32_t)bos;
	t->eos = (int32_t)FEDRUN_VOCAB_EOS;
	t->unk = (int32_t)FEDRUN_VOCAB_UNK;
	t->size = fedrun_vocab_size(v);
	*out = t;
	return 0;
}

/* Counts one token into the vocabulary cnt (spell's callback). */
static int count_one(void *cnt, const char *w, size_t n)
{
	return fedrun_vocab_add(cnt, w, n, 1, NULL);
}

/* Counts the words of lines[0 .. n) (split: TFM_SPLIT_*; chars: and the
 * characters of each, as spell() makes them) into a new vocabulary (ids 0
 * and 1, <unk> and <eos>, count the spellings "<unk>" and "<eos>" in the
 * text). */
static int words_count(const char *const *lines, uint64_t n, int split, int chars,
		       struct fedrun_vocab **out)
{
	struct fedrun_vocab *cnt;
	int rc = fedrun_vocab_create(&cnt);
	if (rc < 0)
		return rc;
	struct word_iter it = {.split = split};
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		const char *w;
		size_t wn;
		it.s = lines[i];
		it.len = strlen(lines[i]);
		it.i = 0;
		while (rc == 0 && (rc = next_word(&it, &w, &wn)) == 1) {
			rc = fedrun_vocab_add(cnt, w, wn, 1, NULL);
			/* every word's characters too: they spell the words
			 * the vocabulary will lack, which are not known yet */
			if (rc == 0 && chars)
				rc = spell(&it, count_one, cnt);
		}
	}
	free(it.buf);
	if (rc < 0) {
		fedrun_vocab_destroy(cnt);
		return rc;
	}
	*out = cnt;
	return 0;
}

/* The counted words that may enter a vocabulary: not the specials, seen at
 * least min_count times. *list: a new array of k entries whose words are
 * borrowed from cnt. */
static int words_candidates(const struct fedrun_vocab *cnt, uint64_t min_count,
			    struct fedrun_fedvocab_entry **list, uint32_t *k)
{
	uint32_t N = fedrun_vocab_size(cnt), n = 0;
	struct fedrun_fedvocab_entry *l = calloc(N ? N : 1, sizeof *l);
	if (!l)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t id = 2; id < N; id++) {
		const char *w = fedrun_vocab_word(cnt, id);
		if (!strcmp(w, PAD_WORD) || !strcmp(w, BOS_WORD))
			continue;
		if (fedrun_vocab_count(cnt, id) < min_count)
			continue;
		l[n].word = w;
		l[n++].count = fedrun_vocab_count(cnt, id);
	}
	*list = l;
	*k = n;
	return 0;
}

static int wc_cmp(const void *a, const void *b)
{
	const struct fedrun_fedvocab_entry *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->word, y->word); /* byte order, as fedrun_vocab_build */
}

/* The vocabulary from words already in order: <unk>, <eos>, <pad>, <bos>,
 * then words[0 .. k) with their counts (counts NULL: 0) up to max_size
 * entries (0: no cap). Shared by the plaintext and federated paths, so
 * both give the same ids. */
static int words_assemble(const char *const *words, const uint64_t *counts, uint64_t k,
			  uint32_t max_size, int split, int chars, struct tfm_tok **out)
{
	struct fedrun_vocab *v;
	int rc = fedrun_vocab_create(&v);
	if (rc < 0)
		return rc;
	if ((rc = fedrun_vocab_add(v, PAD_WORD, strlen(PAD_WORD), 0, NULL)) < 0 ||
	    (rc = fedrun_vocab_add(v, BOS_WORD, strlen(BOS_WORD), 0, NULL)) < 0)
		goto fail;
	for (uint64_t i = 0; i < k && rc == 0; i++) {
		if (max_size && fedrun_vocab_size(v) >= max_size)
			break;
		rc = fedrun_vocab_add(v, words[i], strlen(words[i]), counts ? counts[i] : 0, NULL);
	}
	if (rc < 0)
		goto fail;
	return words_finish(v, split, chars, out);
fail:
	fedrun_vocab_destroy(v);
	return rc;
}

int tfm_tok_words_train(const char *const *lines, uint64_t n, uint32_t max_size, uint64_t min_count,
			int split, int chars, struct tfm_tok **out)
{
	struct fedrun_vocab *cnt;
	struct fedrun_fedvocab_entry *list = NULL;
	const char **words = NULL;
	uint64_t *counts = NULL;
	uint32_t k = 0;
	int rc = words_count(lines, n, split, chars, &cnt);
	if (rc < 0)
		return rc;
	if ((rc = words_candidates(cnt, min_count, &list, &k)) < 0)
		goto out;
	qsort(list, k, sizeof *list, wc_cmp);
	words = malloc((k ? k : 1) * sizeof *words);
	counts = malloc((k ? k : 1) * sizeof *counts);
	if (!words || !counts) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < k; i++) {
		words[i] = list[i].word;
		counts[i] = list[i].count;
	}
	rc = words_assemble(words, counts, k, max_size, split, chars, out);
out:
	free(words);
	free(counts);
	free(list);
	fedrun_vocab_destroy(cnt);
	return rc;
}

int tfm_tok_words_train_federated(const char *const *const *lines, const uint64_t *n,
				  uint32_t nclients, const struct tfm_tok_fed *f,
				  struct tfm_tok **out)
{
	struct fedrun_vocab **cnt = calloc(nclients ? nclients : 1, sizeof *cnt);
	struct fedrun_fedvocab_party *pt = calloc(nclients ? nclients : 1, sizeof *pt);
	char **words = NULL;
	uint64_t nw = 0;
	int rc = cnt && pt ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	/* each client's local table, min_count not applied: only the
	 * totals decide it, inside the protocol */
	for (uint32_t k = 0; k < nclients && rc == 0; k++) {
		uint32_t nk = 0;
		struct fedrun_fedvocab_entry *e = NULL;
		if ((rc = words_count(lines[k], n[k], f->split, f->chars, &cnt[k])) == 0 &&
		    (rc = words_candidates(cnt[k], 1, &e, &nk)) == 0) {
			pt[k].entries = e;
			pt[k].n = nk;
		}
	}
	if (rc == 0) {
		struct fedrun_fedvocab_opts o;
		fedrun_fedvocab_opts_init(&o);
		o.key_bits = f->key_bits;
		o.key_holder = f->key_holder;
		o.min_count = f->min_count;
		o.threads = f->threads;
		o.interrupted = f->interrupted;
		o.interrupted_arg = f->ctx;
		rc = fedrun_fedvocab_order(pt, nclients, &o, &words, &nw, NULL);
	}
	/* no party learns the totals: the vocabulary's counts are 0 */
	if (rc == 0)
		rc = words_assemble((const char *const *)words, NULL, nw, f->max_size, f->split,
				    f->chars, out);
	fedrun_fedvocab_words_free(words, nw);
	for (uint32_t k = 0; cnt && pt && k < nclients; k++) {
		free((void *)pt[k].entries);
		fedrun_vocab_destroy(cnt[k]);
	}
	free(cnt);
	free(pt);
	return rc;
}

int tfm_tok_words_load(const char *path, int split, int chars, struct tfm_tok **out)
{
	struct fedrun_vocab *v;
	int rc = fedrun_vocab_load(path, &v);
	if (rc < 0)
		return rc;
	return words_finish(v, split, chars, out);
}

int tfm_tok_words_save(const struct tfm_tok *t, const char *path)
{
	if (t->type != TFM_TOK_WORDS)
		return fedrun_error(FEDRUN_EINVAL, "transformer: not a words tokenizer");
	return fedrun_vocab_save(t->v, path);
}

#ifndef HAVE_SENTENCEPIECE
static int no_spm(const char *what)
{
	return fedrun_error(FEDRUN_ECONFIG,
			    "%s: \"sentencepiece\" needs SentencePiece, and fedrun was built "
			    "without it (install libsentencepiece-dev and run configure "
			    "again), or use \"type\": \"words\"",
			    what);
}
#endif

int tfm_tok_spm_load(const char *path, const char *what, struct tfm_tok **out)
{
#ifdef HAVE_SENTENCEPIECE
	struct tfm_spm *s;
	(void)what;
	int rc = tfm_spm_load(path, &s);
	if (rc < 0)
		return rc;
	struct tfm_tok *t = calloc(1, sizeof *t);
	if (!t) {
		tfm_spm_destroy(s);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	t->type = TFM_TOK_SPM;
	t->spm = s;
	t->pad = tfm_spm_pad(s);
	t->bos = tfm_spm_bos(s);
	t->eos = tfm_spm_eos(s);
	t->unk = tfm_spm_unk(s);
	t->size = tfm_spm_size(s);
	*out = t;
	return 0;
#else
	(void)path;
	(void)out;
	return no_spm(what);
#endif
}

int tfm_tok_spm_train(const char *const *files, uint32_t n, uint32_t vocab_size,
		      const char *model_type, double character_coverage, uint64_t seed,
		      const char *text_name, const char *model_path, const char *what)
{
#ifdef HAVE_SENTENCEPIECE
	(void)what;
	struct tfm_spm_train_opts o = {.vocab_size = vocab_size,
				       .model_type = model_type,
				       .character_coverage = character_coverage,
				       .threads = 1,
				       .seed = seed,
				       .text_name = text_name};
	return tfm_spm_train(files, n, &o, model_path);
#else
	(void)files, (void)n, (void)vocab_size, (void)model_type, (void)character_coverage;
	(void)text_name;
	(void)seed, (void)model_path;
	return no_spm(what);
#endif
}

void tfm_tok_destroy(struct tfm_tok *t)
{
	if (!t)
		return;
	fedrun_vocab_destroy(t->v);
#ifdef HAVE_SENTENCEPIECE
	if (t->spm)
		tfm_spm_destroy(t->spm);
#endif
	free(t);
}

int tfm_tok_type(const struct tfm_tok *t)
{
	return t->type;
}
uint32_t tfm_tok_size(const struct tfm_tok *t)
{
	return t->size;
}
int32_t tfm_tok_pad(const struct tfm_tok *t)
{
	return t->pad;
}
int32_t tfm_tok_bos(const struct tfm_tok *t)
{
	return t->bos;
}
int32_t tfm_tok_eos(const struct tfm_tok *t)
{
	return t->eos;
}
int32_t tfm_tok_unk(const struct tfm_tok *t)
{
	return t->unk;
}

/* Whether `w` is a word of t's vocabulary (not a special's spelling). */
static bool lookup(const struct tfm_tok *t, const char *w, size_t n, uint32_t *id)
{
	return fedrun_vocab_find(t->v, w, n, id) && (int32_t)*id != t->pad &&
	       (int32_t)*id != t->bos && (int32_t)*id != t->eos && (int32_t)*id != t->unk;
}

/* The ids of one text being encoded. */
struct enc {
	const struct tfm_tok *t;
	int32_t *v;
	uint32_t k, cap;
};

/* Appends `id`. */
static int enc_push_id(struct enc *e, int32_t id)
{
	if (e->k == e->cap) {
		uint32_t cap = e->cap ? 2 * e->cap : 16;
		int32_t *nv = realloc(e->v, cap * sizeof *nv);
		if (!nv)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		e->v = nv;
		e->cap = cap;
	}
	e->v[e->k++] = id;
	return 0;
}

/* Appends the id of `w` (<unk> when t lacks it; spell's callback). */
static int enc_push(void *p, const char *w, size_t n)
{
	struct enc *e = p;
	uint32_t id;
	/* The specials' own spellings in text are words we do not know. */
	return enc_push_id(e, lookup(e->t, w, n, &id) ? (int32_t)id : e->t->unk);
}

int tfm_tok_encode(const struct tfm_tok *t, const char *text, size_t len, int32_t **ids,
		   uint32_t *n)
{
#ifdef HAVE_SENTENCEPIECE
	if (t->type == TFM_TOK_SPM)
		return tfm_spm_encode(t->spm, text, len, ids, n);
#endif
	struct enc e = {.t = t};
	struct word_iter it = {.s = text, .len = len, .split = t->split};
	const char *w;
	size_t wn;
	int rc;
	while ((rc = next_word(&it, &w, &wn)) == 1) {
		uint32_t id;
		if (lookup(t, w, wn, &id))
			rc = enc_push_id(&e, (int32_t)id);
		else if (t->chars) /* unknown: its characters */
			rc = spell(&it, enc_push, &e);
		else
			rc = enc_push_id(&e, t->unk);
		if (rc < 0)
			break;
	}
	free(it.buf);
	if (rc < 0) {
		free(e.v);
		return rc;
	}
	*ids = e.v;
	*n = e.k;
	return 0;
}

int tfm_tok_decode(const struct tfm_tok *t, const int32_t *ids, uint32_t n, char **text)
{
#ifdef HAVE_SENTENCEPIECE
	if (t->type == TFM_TOK_SPM) {
		/* the model's specials are dropped before SentencePiece sees
		 * them */
		int32_t *keep = malloc((n ? n : 1) * sizeof *keep);
		if (!keep)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		uint32_t k = 0;
		for (uint32_t i = 0; i < n; i++)
			if (ids[i] != t->pad && ids[i] != t->bos && ids[i] != t->eos)
				keep[k++] = ids[i];
		int rc = tfm_spm_decode(t->spm, keep, k, text);
		free(keep);
		return rc;
	}
#endif
	size_t len = 1;
	for (uint32_t i = 0; i < n; i++) {
		const char *w = fedrun_vocab_word(t->v, (uint32_t)ids[i]);
		len += (w ? strlen(w) : 5) + 1;
	}
	char *s = malloc(len), *p = s;
	if (!s)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		if (ids[i] == t->pad || ids[i] == t->bos || ids[i] == t->eos)
			continue;
		const char *w = ids[i] >= 0 ? fedrun_vocab_word(t->v, (uint32_t)ids[i]) : NULL;
		if (!w)
			w = FEDRUN_VOCAB_UNK_WORD;
		if (t->split == TFM_SPLIT_PUNCT && !strncmp(w, JOINER, JOINER_LEN))
			w += JOINER_LEN; /* glued to the previous token */
		else if (p != s)
			*p++ = ' ';
		size_t l = strlen(w);
		memcpy(p, w, l);
		p += l;
	}
	*p = 0;
	*text = s;
	return 0;
}
