/* SPDX-License-Identifier: Apache-2.0 */
/* SentencePiece subword tokenizers for the transformer model: a C interface
 * to Debian's libsentencepiece (C++, 0.1.97) that trains a model on text
 * files, loads it, and turns text into token ids and back.
 *
 * Every function returns 0 or a negative FEDRUN_E* code with a message from
 * fedrun_error() that names the file involved; no C++ exception crosses this
 * interface and nothing is printed (SentencePiece's own logging is turned
 * down to errors by the first training, see tfm_spm_train).
 *
 * Built only when configure found sentencepiece (config.h and automake
 * conditional HAVE_SENTENCEPIECE). A module using it adds $(tfm_spm_sources)
 * to its sources, $(tfm_spm_libs) to its libraries and, since it is then
 * linked as C++, $(tfm_cxx_module_flags) to its LDFLAGS (see spm.inc). */
#ifndef TFM_SPM_H
#define TFM_SPM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Special ids of every model tfm_spm_train writes. */
enum { TFM_SPM_PAD = 0, TFM_SPM_UNK = 1, TFM_SPM_BOS = 2, TFM_SPM_EOS = 3 };

struct tfm_spm_train_opts {
	/* Number of pieces, the 4 special ones included (> 4). Training fails
	 * with FEDRUN_EINVAL and a message giving the largest possible value
	 * when the text cannot fill that many (SentencePiece's hard limit). */
	uint32_t vocab_size;
	/* "unigram" (Kudo 2018) or "bpe" (Sennrich et al. 2016); NULL =
	 * "unigram". */
	const char *model_type;
	/* Share of the characters of the text that get a piece of their own
	 * (the rarest others become unk), in (0, 1]; 0 = 1.0. */
	double character_coverage;
	/* Training threads; 0 = 1. For a given count the output is the same
	 * on every run, but a unigram model depends on the count: its EM
	 * statistics are summed per thread, so scores differ in the last
	 * digits (toy-english, 200 pieces: same pieces, 1 vs 4 threads), which
	 * can tip close choices between pieces. BPE training ignores it
	 * (single-threaded in SentencePiece, google/sentencepiece#941) apart
	 * from the count recorded in the model's trainer_spec. */
	uint32_t threads;
	/* Seeds SentencePiece's (process-wide) random generator before
	 * training. The options used here draw no random numbers, so the model
	 * does not depend on it. */
	uint64_t seed;
	/* What messages call the text, e.g. "the generated training text"
	 * when the files are temporary; NULL: the files' names. */
	const char *text_name;
};

/* Trains a model on the lines of n text files (UTF-8, one sentence a line;
 * the line ends "\n" or "\r\n" are not part of the text; empty lines are
 * ignored) and writes it to model_path atomically (a temporary file in the
 * same directory renamed over it): a failed or interrupted training leaves
 * any earlier file there unchanged. Special ids: pad 0, unk 1, bos 2, eos 3.
 * SentencePiece's defaults otherwise: NFKC normalization (nmt_nfkc), runs of
 * whitespace collapsed, lines longer than 4192 bytes skipped. The same
 * files and options give the same bytes. Errors: FEDRUN_ENOENT / FEDRUN_EIO
 * (an input file cannot be read, the model cannot be written), FEDRUN_EINVAL
 * (bad options, no text, vocab_size too large or too small for the text). */
int tfm_spm_train(const char *const *files, uint32_t n, const struct tfm_spm_train_opts *o,
		  const char *model_path);

/* A loaded model. Encoding and decoding do not modify it: several threads
 * may use one model at once (SentencePieceProcessor's encoding is
 * thread-safe, google/sentencepiece#207 and #657). */
struct tfm_spm;

/* Loads a .model file (any SentencePiece model, not only ours: check the
 * special ids below). *out is freed with tfm_spm_destroy. Errors:
 * FEDRUN_ENOENT / FEDRUN_EIO (cannot read), FEDRUN_EFORMAT (empty,
 * truncated or not a SentencePiece model). */
int tfm_spm_load(const char *path, struct tfm_spm **out);
void tfm_spm_destroy(struct tfm_spm *s);

/* Number of pieces (ids are 0 .. size-1). */
uint32_t tfm_spm_size(const struct tfm_spm *s);
/* The special ids, -1 when the model has none (pad, bos and eos can be
 * disabled in models trained elsewhere; ours have 0, 1, 2, 3). */
int32_t tfm_spm_pad(const struct tfm_spm *s);
int32_t tfm_spm_unk(const struct tfm_spm *s);
int32_t tfm_spm_bos(const struct tfm_spm *s);
int32_t tfm_spm_eos(const struct tfm_spm *s);
/* The file the model was loaded from (borrowed), for messages. */
const char *tfm_spm_path(const struct tfm_spm *s);

/* Splits len bytes of UTF-8 text into piece ids, without bos or eos.
 * *ids is a new malloc'd array of *n ids (never NULL on success, even when
 * *n is 0; the caller frees it); on failure *ids is NULL and *n 0. Text
 * that is not valid UTF-8, and characters the model does not know, become
 * unk; a newline is whitespace. */
int tfm_spm_encode(const struct tfm_spm *s, const char *text, size_t len, int32_t **ids,
		   uint32_t *n);

/* Joins n piece ids into text: *text is a new malloc'd NUL-terminated
 * string (the caller frees it). pad, bos and eos decode to nothing, unk to
 * " \u2047 " (SentencePiece's unk surface). decode(encode(x)) gives x back
 * for text that NFKC leaves unchanged, without leading, trailing or
 * repeated spaces, and whose characters the model knows. An id outside
 * 0 .. size-1 is FEDRUN_EINVAL. */
int tfm_spm_decode(const struct tfm_spm *s, const int32_t *ids, uint32_t n, char **text);

#ifdef __cplusplus
}
#endif
#endif
