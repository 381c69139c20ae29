/* SPDX-License-Identifier: Apache-2.0 */
/* Text data for word language models: vocabularies, tokenised corpora, client
 * partitions (iid shards, one client per file, Dirichlet over categories) and
 * batching for truncated back-propagation through time. */
#ifndef FEDRUN_TEXT_H
#define FEDRUN_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <jansson.h>
#include "fedrun/host.h"
#include "fedrun/records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- corpus format -------------------------------------------------------
 * A corpus file is UTF-8 text with one sentence per line. Tokens are
 * separated by ASCII white space (space, tab, CR, VT, FF); with the
 * whitespace tokenizer (the default) no other tokenisation is done, with
 * 13a or intl each line goes through sacreBLEU's tokenizer of that name
 * first (fedrun/bleu.h), so that punctuation becomes tokens of its own. Lines holding only white space are skipped: they are
 * not sentences. Each sentence gets the end-of-sentence token <eos> appended,
 * so a sentence of n words is n + 1 tokens. Words outside the vocabulary, and
 * the literal word "<unk>", become <unk>; the literal word "<eos>" becomes
 * <eos>. Invalid UTF-8 and NUL bytes are errors naming the file, line and
 * byte column; so is a file with no sentence at all. */

/* Fixed ids of the special tokens in every vocabulary. */
#define FEDRUN_VOCAB_UNK 0u
#define FEDRUN_VOCAB_EOS 1u
#define FEDRUN_VOCAB_UNK_WORD "<unk>"
#define FEDRUN_VOCAB_EOS_WORD "<eos>"

/* How a line is cut into tokens (data.tokenizer). */
enum fedrun_text_tokenizer {
	FEDRUN_TEXT_TOK_WHITESPACE = 0, /* the runs of non-blank bytes, as described above */
	FEDRUN_TEXT_TOK_13A = 1,	/* sacreBLEU's 13a (fedrun_bleu_tokenize), then spaces */
	FEDRUN_TEXT_TOK_INTL = 2	/* sacreBLEU's intl: Unicode punctuation and symbols */
};

/* How words are read from corpus files. Caller-owned plain data. */
struct fedrun_text_opts {
	/* whitespace: fold ASCII A-Z to a-z (other letters are kept); 13a and
	 * intl: Python's str.lower() of the line before it is cut (Unicode
	 * case folding, as sacreBLEU's lowercase). */
	bool lowercase;
	uint32_t tokenizer; /* enum fedrun_text_tokenizer */
	/* data.format: NULL or kind text for text files (the format above);
	 * tsv or jsonl: each record's text is a line (fedrun/records.h). */
	const struct fedrun_records_format *format;
};

/* The data.tokenizer and data.lowercase keys of `section` (JSON path
 * `path`), which must be absent or valid; other keys are not looked at.
 * What a model needs to read new text as its training data was read. */
int fedrun_text_opts_from_json(json_t *section, const char *path, struct fedrun_text_opts *out);

/* ---- vocabulary ----------------------------------------------------------
 * A bijection between words and ids 0 .. size-1, with <unk> = 0 and
 * <eos> = 1 always present, and a count per word.
 *
 * Privacy. Building the vocabulary from the training files of all clients
 * (fedrun_vocab_build over every client's file) means that whoever builds it
 * sees every word that occurs in any client's data and its count: in a real
 * deployment the server would learn each client's word set, names and rare
 * words included, before training starts. fedrun does it in the clear because
 * it simulates federated learning in one process. A deployment needs either a
 * vocabulary from public data (fedrun_vocab_load), or a private protocol:
 * FedNMT (Wang et al. 2021, sec. 2.3) builds a "federated vocabulary" in
 * which clients send their local vocabularies encrypted (Paillier
 * homomorphic encryption) and the server learns only the order of words by
 * total count, not the counts; its result is the vocabulary built here from
 * the union of the clients' data. fedrun_fedvocab_order (fedrun/fedvocab.h)
 * runs that protocol. */
struct fedrun_vocab;

/* Options for building a vocabulary. */
struct fedrun_vocab_opts {
	uint32_t max_size;  /* cap on entries, <unk> and <eos> included; 0: none */
	uint64_t min_count; /* words seen fewer times are left out; 0 or 1: none */
	struct fedrun_text_opts text;
};

/* New vocabulary holding only <unk> and <eos>. Free with _destroy. */
int fedrun_vocab_create(struct fedrun_vocab **out);
void fedrun_vocab_destroy(struct fedrun_vocab *v);

/* Counts the words of `n` corpus files and keeps the most frequent ones:
 * ids 2, 3, ... go to words by count descending, ties broken by byte order
 * (memcmp of the UTF-8 bytes, so "B" < "a" < "b"). Words below min_count are
 * dropped; then the list is cut to max_size - 2 words. The count of <eos> is
 * the number of sentences; the count of <unk> the number of tokens that the
 * resulting vocabulary maps to <unk>. */
int fedrun_vocab_build(const char *const *files, uint32_t n, const struct fedrun_vocab_opts *opts,
		       struct fedrun_vocab **out);

/* Reads a vocabulary file: one word per line, optionally followed by a tab
 * and a decimal count ("word\t123"). <unk> and <eos> get ids 0 and 1 whether
 * or not the file lists them (and wherever it lists them); the other words
 * get ids 2, 3, ... in file order. Blank lines are ignored. Errors (naming
 * file and line): a word with white space in it, a bad count, a duplicate
 * word, invalid UTF-8, a file with no word. */
int fedrun_vocab_load(const char *path, struct fedrun_vocab **out);

/* Writes "word\tcount" lines in id order (so <unk> and <eos> first), which
 * _load reads back with the same ids. Atomic (see io.h). */
int fedrun_vocab_save(const struct fedrun_vocab *v, const char *path);

/* Number of entries, <unk> and <eos> included. */
uint32_t fedrun_vocab_size(const struct fedrun_vocab *v);
/* The word of `id` (borrowed, NUL-terminated, valid until destroy); NULL
 * when id >= size. */
const char *fedrun_vocab_word(const struct fedrun_vocab *v, uint32_t id);
/* The count recorded for `id` (0 when unknown). */
uint64_t fedrun_vocab_count(const struct fedrun_vocab *v, uint32_t id);
/* Id of the `len` bytes at `word`, or FEDRUN_VOCAB_UNK when absent. */
uint32_t fedrun_vocab_lookup(const struct fedrun_vocab *v, const char *word, size_t len);
/* True when the `len` bytes at `word` are an entry; *id (may be NULL) gets
 * its id. */
bool fedrun_vocab_find(const struct fedrun_vocab *v, const char *word, size_t len, uint32_t *id);
/* Adds `word` with `count` if absent (its id becomes size - 1) or adds
 * `count` to its count; *id (may be NULL) gets its id. */
int fedrun_vocab_add(struct fedrun_vocab *v, const char *word, size_t len, uint64_t count,
		     uint32_t *id);

/* ---- tokenised corpus ----------------------------------------------------
 * Every token id of a corpus in one uint32 array, sentence after sentence,
 * with one offset per sentence: sentence s is ids[sent_off[s] ..
 * sent_off[s + 1]), its last token <eos>. 4 bytes per token and 12 per
 * sentence: the Brown corpus (1.16 M words, 57 k sentences) takes 5.6 MB. */
struct fedrun_corpus {
	uint32_t *ids;	     /* owned, n_tokens entries */
	uint64_t n_tokens;   /* <eos> included */
	uint64_t *sent_off;  /* owned, n_sent + 1 entries; sent_off[0] = 0 */
	uint32_t *sent_file; /* owned: which file (0, 1, ...) each sentence is from */
	uint64_t n_sent;
	uint32_t n_files;	       /* files read so far */
	uint64_t n_unk;		       /* tokens that became <unk> */
	/* Labels (format tsv or jsonl with a label): when the caller sets
	 * labels (borrowed) before reading, each sentence's label id goes to
	 * sent_label (owned, n_sent entries); otherwise both stay NULL. */
	struct fedrun_labels *labels;
	uint32_t *sent_label;
	uint64_t cap_tokens, cap_sent; /* private */
};

/* Caller-owned struct; fini frees what read allocated. */
void fedrun_corpus_init(struct fedrun_corpus *c);
void fedrun_corpus_fini(struct fedrun_corpus *c);
/* Appends the sentences of one file, mapped through `v`; they get file index
 * c->n_files, which is then incremented. On error the corpus is unchanged. */
int fedrun_corpus_read(struct fedrun_corpus *c, const struct fedrun_vocab *v, const char *path,
		       const struct fedrun_text_opts *opts);

/* Appends line[0..len) (no newline) as one sentence, tokenised as a corpus
 * file's line is; a line without a token adds nothing. `where` and `line`
 * name it in errors (invalid UTF-8, NUL). Returns 1 when a sentence was
 * added, 0 for a blank line, or an error (the corpus is then unchanged). */
int fedrun_corpus_add_line(struct fedrun_corpus *c, const struct fedrun_vocab *v, const char *text,
			   size_t len, const struct fedrun_text_opts *opts, const char *where,
			   uint64_t line);

/* ---- partitions ----------------------------------------------------------
 * A partition assigns each sentence s of a corpus a client assign[s] in
 * [0, clients). All are deterministic functions of their arguments: the
 * random numbers come from fedrun_rng streams (seed, FEDRUN_RNG_DATA, round,
 * stream) with round FEDRUN_TEXT_RNG_ROUND for shuffling sentences and
 * FEDRUN_TEXT_RNG_ROUND + 1 for Dirichlet proportions; `stream` separates
 * the draws of different splits (fedrun_textdata uses the split number). */
#define FEDRUN_TEXT_RNG_ROUND 0x54455854u /* "TEXT" */

enum fedrun_partition_scheme {
	FEDRUN_PARTITION_IID = 0,      /* shuffled shards of nearly equal size */
	FEDRUN_PARTITION_FILES = 1,    /* client k = file k */
	FEDRUN_PARTITION_DIRICHLET = 2, /* Dir(alpha) over categories (files) */
	FEDRUN_PARTITION_QUANTITY = 3   /* Dir(alpha) over the client sizes */
};

enum { FEDRUN_PARTITION_EVAL_SERVER = 0, FEDRUN_PARTITION_EVAL_CLIENTS = 1 };

/* A data section's "partition" object (fedrun-models(7), data keys):
 * scheme ("iid", "files", "dirichlet", "quantity"), clients, alpha,
 * min_sentences, seed, eval ("server", "clients"). */
struct fedrun_partition_opts {
	int scheme;	       /* enum fedrun_partition_scheme */
	int eval;	       /* FEDRUN_PARTITION_EVAL_* */
	int64_t clients;       /* 0: not given (scheme "files") */
	int64_t min_sentences; /* >= 1 for dirichlet and quantity, else 0 */
	int64_t seed;	       /* -1: not given (the pipeline's seed) */
	double alpha;	       /* NAN unless dirichlet or quantity */
};

/* Parses section.partition (JSON path path.partition; an absent one is
 * added as {} and takes the defaults, written back as any option's) and
 * checks that the keys fit the scheme: alpha required for dirichlet and
 * quantity and refused otherwise, min_sentences only for them (default
 * 1), clients required unless the scheme is files. FEDRUN_ECONFIG names
 * the key. */
int fedrun_partition_opts_parse(json_t *section, const char *path,
				struct fedrun_partition_opts *po);

/* IID shards as in the FedAtt paper (sec. IV-A, "Data Partitioning"): the
 * sentences are shuffled and cut into `clients` runs whose sizes differ by
 * at most one sentence (the first n mod clients get one more). Needs
 * n_sent >= clients, so that every client gets a sentence. */
int fedrun_partition_iid(uint64_t n_sent, uint32_t clients, uint64_t seed, uint32_t stream,
			 uint32_t *assign);

/* Dirichlet proportions as in Hsu et al. 2019 and FedNLP: for each of
 * n_cat categories, p_c ~ Dir(alpha * 1_K) over the K = clients clients,
 * drawn as normalised Gamma(alpha, 1) variables (in log space, so that tiny
 * alpha does not underflow to 0/0). props is n_cat * clients doubles,
 * row-major; each row sums to 1. Small alpha: each category goes to few
 * clients; large alpha (100+): nearly uniform. */
int fedrun_partition_dirichlet_props(uint32_t n_cat, uint32_t clients, double alpha, uint64_t seed,
				     uint32_t stream, double *props);

/* Assigns sentences by per-category proportions: the sentences of category
 * c (category[s] == c) are shuffled and cut at floor(n_c * cumsum(p_c)), as
 * FedNLP's label-Dirichlet partition does. Categories are < n_cat;
 * category NULL puts every sentence in category 0. */
int fedrun_partition_by_props(uint64_t n_sent, const uint32_t *category, uint32_t n_cat,
			      uint32_t clients, const double *props, uint64_t seed, uint32_t stream,
			      uint32_t *assign);

/* Dirichlet partition with a floor: draws proportions and assigns until
 * every client has at least min_sent sentences (min_sent >= 1), redrawing
 * the proportions up to 1000 times (Hsu et al. redraw the same way). Fails
 * with FEDRUN_EINVAL when n_sent < clients * min_sent, and with a message
 * advising a larger alpha or fewer clients when no draw succeeded. props
 * (may be NULL) receives the proportions that were used. */
int fedrun_partition_dirichlet(uint64_t n_sent, const uint32_t *category, uint32_t n_cat,
			       uint32_t clients, double alpha, uint64_t min_sent, uint64_t seed,
			       uint32_t stream, uint32_t *assign, double *props);

/* Quantity skew (FedNLP): client sizes q ~ Dir(alpha * 1_K), categories
 * ignored. The sentences are shuffled and cut into consecutive shards,
 * client k taking positions [floor(N Q_{k-1}), floor(N Q_k)) of the
 * shuffled order, Q_k = q_0 + ... + q_k and the last client up to N, so the
 * sizes are within one of q_k N and sum to N. The floor, the redraws and
 * the errors are fedrun_partition_dirichlet's (it is that partition with
 * one category); props (may be NULL) receives the K proportions. */
int fedrun_partition_quantity(uint64_t n_sent, uint32_t clients, double alpha, uint64_t min_sent,
			      uint64_t seed, uint32_t stream, uint32_t *assign, double *props);

/* Reorders the sentences of `c` so that each client's sentences are
 * contiguous, clients in order 0, 1, ..., sentences of one client in their
 * corpus order (stable). client_sent (clients + 1 entries, out) gets the
 * first sentence of each client: client k owns sentences client_sent[k] ..
 * client_sent[k + 1]. */
int fedrun_corpus_group(struct fedrun_corpus *c, const uint32_t *assign, uint32_t clients,
			uint64_t *client_sent);

/* ---- streams and truncated BPTT -------------------------------------------
 * A stream is a borrowed view of a contiguous run of sentences. */
struct fedrun_stream {
	const uint32_t *ids; /* n_tokens ids */
	uint64_t n_tokens;
	uint64_t n_sent;
	const uint64_t *sent_off; /* n_sent + 1 offsets; subtract sent_off[0] */
};

/* Sentence i of a stream: *len tokens at the returned pointer (<eos> last);
 * NULL when i >= n_sent. */
const uint32_t *fedrun_stream_sentence(const struct fedrun_stream *s, uint64_t i, uint64_t *len);

/* Truncated BPTT over a stream, as PyTorch's word_language_model example
 * does it (batchify + get_batch): the stream is cut into `batch` rows of
 * L = n_tokens / batch consecutive tokens (the n_tokens mod batch last tokens
 * are dropped), row b = ids[b L .. (b + 1) L). Window w covers time steps
 * t0 = w * bptt .. t0 + T - 1 with T = min(bptt, L - 1 - t0); its input at
 * (t, b) is row b's token t0 + t and its target the next token of that row.
 * Windows = ceil((L - 1) / bptt); a stream shorter than 2 * batch tokens has
 * none. Plain data, read-only after init: share it between threads. */
struct fedrun_bptt {
	const uint32_t *ids; /* borrowed from the stream */
	uint64_t row_len;    /* L */
	uint32_t batch;	     /* B */
	uint32_t bptt;
	uint64_t windows;
};

int fedrun_bptt_init(struct fedrun_bptt *it, const struct fedrun_stream *s, uint32_t batch,
		     uint32_t bptt);
/* Fills input and target, each T * batch ids in time-major order (T, B):
 * input[t * B + b]. Both hold at least bptt * batch ids. Returns T (1 ..
 * bptt), or 0 when w >= windows. */
uint32_t fedrun_bptt_window(const struct fedrun_bptt *it, uint64_t w, uint32_t *input,
			    uint32_t *target);
/* Number of predicted tokens over all windows: (L - 1) * B. */
uint64_t fedrun_bptt_targets(const struct fedrun_bptt *it);

/* ---- a pipeline's "data" section -------------------------------------------
 * fedrun_textdata builds the vocabulary, reads the train, valid and test
 * files, and partitions them into clients, from the "data" section of a
 * pipeline (its keys are listed at the top of core/textdata.c and in
 * fedrun-pipeline(5)). What a model plugin such as gru-lm calls from its
 * create(); typical use:
 *
 *     fedrun_textdata_from_json(data_config, "data", host->seed(host->ctx), &td);
 *     n_k = tokens of fedrun_textdata_stream(td, FEDRUN_SPLIT_TRAIN, k, &s);
 *     train: fedrun_bptt_init(&it, &s, args->batch, bptt), then windows
 *            0 .. it.windows - 1 in order, carrying the hidden state;
 *     evaluate: the same over FEDRUN_SPLIT_VALID/TEST, passing FEDRUN_ENOENT
 *            on when the client has no such split.
 *
 * Token ids mean nothing without the vocabulary: a model should save it
 * (fedrun_vocab_save) beside its checkpoints. After creation everything is
 * read-only, so worker threads may read streams concurrently. */
struct fedrun_textdata;

/* Parses `section` (JSON path `path`, normally "data") with fedrun_opts_parse
 * (defaults are written back; relative files are resolved against the
 * fedrun_opts_set_base_dir directory and written back resolved) and builds
 * everything. `seed` is the run's seed, used unless data.partition.seed is
 * given. section is borrowed; *out is owned by the caller. */
int fedrun_textdata_from_json(json_t *section, const char *path, uint64_t seed,
			      struct fedrun_textdata **out);
void fedrun_textdata_destroy(struct fedrun_textdata *td);

/* Borrowed, valid until destroy. */
const struct fedrun_vocab *fedrun_textdata_vocab(const struct fedrun_textdata *td);
uint32_t fedrun_textdata_num_clients(const struct fedrun_textdata *td);
/* The client's name: the file name without directory and extension for the
 * "files" scheme, the "name" of a "clients" entry, else "client<k>".
 * Borrowed; NULL when client is out of range. */
const char *fedrun_textdata_client_name(const struct fedrun_textdata *td, uint32_t client);
/* The stream of `split` of `client`, or of all clients' data when client is
 * FEDRUN_ALL_CLIENTS. FEDRUN_ENOENT (with a message) when the split is not
 * there: no such file given, or valid/test held by the server only (not
 * partitioned) and a single client asked for. A client may have an empty
 * stream (n_tokens 0) in valid/test. */
int fedrun_textdata_stream(const struct fedrun_textdata *td, enum fedrun_split split,
			   int64_t client, struct fedrun_stream *out);
/* Writes RUN/partition.tsv (fedrun/records.h) in a run: each client's
 * sentences and tokens (<eos> included) of every split held by clients,
 * and its training sentences per category (the labels of format tsv or
 * jsonl; else, with scheme "dirichlet", the train files). */
int fedrun_textdata_partition_write(const struct fedrun_textdata *td, const struct fedrun_host *h);

#ifdef __cplusplus
}
#endif
#endif
