/* SPDX-License-Identifier: Apache-2.0 */
/* The encoder-decoder Transformer network (Vaswani et al. 2017, "Attention
 * is all you need", NeurIPS): parameter layout and initialisation, one
 * training/evaluation pass (forward and full backward) over a batch of
 * sentence pairs, and incremental decoding with a key/value cache for
 * greedy and beam search. Written against the backend vtable
 * (fedrun/backend.h); internal to the transformer plugin (not installed).
 *
 * Architecture (sec. 3.1, Figure 1)
 *   - Embeddings scaled by sqrt(dim) plus sinusoidal positions (sec. 3.4,
 *     3.5), then dropout (sec. 5.4).
 *   - Encoder layer: self-attention block, feed-forward block. Decoder
 *     layer: causal self-attention block, encoder-decoder ("cross")
 *     attention block, feed-forward block. Multi-head attention as
 *     sec. 3.2.2 (h heads of dim / h features), feed-forward
 *     FFN(x) = max(0, x W1 + b1) W2 + b2 (sec. 3.3, eq. 2)
 *     (or GELU instead of max(0, .), cfg.activation).
 *   - Post-norm (pre_norm = 0, the paper's sec. 3.1, sec. 5.4):
 *         y = LayerNorm(x + Dropout(Sublayer(x)));
 *     pre-norm (pre_norm = 1, Wang et al. 2019 / fairseq's
 *     --encoder-normalize-before):
 *         y = x + Dropout(Sublayer(LayerNorm(x))),
 *     with one more layer norm after the last layer of each stack
 *     (encoder.norm, decoder.norm).
 *   - Output: logits = decoder output . E_out^T (no bias), loss =
 *     label-smoothed cross-entropy (Szegedy et al. 2016, sec. 7; Vaswani
 *     sec. 5.4) averaged over the batch's target tokens, padding ignored.
 *   - Dropout: `dropout` on the embeddings and on every sublayer output
 *     before the residual sum; `attn_dropout` on the attention weights;
 *     `relu_dropout` on the feed-forward hidden units (after the ReLU), as
 *     fairseq's --dropout, --attention-dropout, --activation-dropout.
 *   - Layer norms use eps = 1e-5 (PyTorch's default).
 *
 * Parameter layout (struct fedrun_layout; every name starts with
 * "encoder." or "decoder.", so that selectors can group them). D = dim,
 * F = ffn, V = vocab; shapes are PyTorch's (nn.Linear weights (out,in)):
 *
 *   encoder.embed.weight                           (V,D)  absent if tie ALL
 *   encoder.layers.N.self_attn.{q,k,v}_proj.weight (D,D)  three, adjacent
 *   encoder.layers.N.self_attn.{q,k,v}_proj.bias   (D)    three, adjacent
 *   encoder.layers.N.self_attn.out_proj.{weight,bias}     (D,D), (D)
 *   encoder.layers.N.self_attn_norm.{weight,bias}  (D)
 *   encoder.layers.N.ffn.fc1.{weight,bias}         (F,D), (F)
 *   encoder.layers.N.ffn.fc2.{weight,bias}         (D,F), (D)
 *   encoder.layers.N.ffn_norm.{weight,bias}        (D)
 *   encoder.norm.{weight,bias}                     (D)    pre-norm only
 *   decoder.embed.weight                           (V,D)
 *   decoder.layers.N.self_attn.*, self_attn_norm.* as the encoder's
 *   decoder.layers.N.cross_attn.{q,k,v,out}_proj.{weight,bias}, adjacent
 *                                                  as self_attn's
 *   decoder.layers.N.cross_attn_norm.{weight,bias}
 *   decoder.layers.N.ffn.*, ffn_norm.*             as the encoder's
 *   decoder.norm.{weight,bias}                     (D)    pre-norm only
 *   decoder.output.weight                          (V,D)  only if tie NONE
 *
 * Tying (sec. 3.4): TFM_TIE_ALL: one matrix, "decoder.embed.weight",
 * serves as source embedding, target embedding and output projection (no
 * "encoder.embed.weight", no "decoder.output.weight"); TFM_TIE_DECODER:
 * encoder.embed.weight is separate, decoder.embed.weight is also the
 * output projection; TFM_TIE_NONE: three matrices. Gradients of a shared
 * matrix add up.
 *
 * Because the q, k, v weights (and biases) of an attention block follow
 * each other, the arena holds them as one (3D,D) matrix when D*D (and D)
 * are multiples of FEDRUN_TENSOR_ALIGN floats (true for D a multiple of
 * 16): the self-attention then uses ONE fused projection (N,3D), and the
 * cross-attention one fused (N,2D) projection for k, v. Other dims work
 * too, with one product per part.
 *
 * Work memory, kept for the largest batch seen: per source token and
 * encoder layer about (8 + F/D) D floats, per target token and decoder
 * layer (12 + F/D) D (+ 2D per source token), the attention weights
 * (B H Tq Tk per attention), a few scratch arrays of tokens x max(3D, F)
 * and min(target tokens, 512) x vocab floats of logits; for decoding,
 * rows x max_steps x 2D floats of key/value cache per decoder layer, plus
 * one more for reordering.
 *
 * Memory (fedrun/backend.h): params and grad are DEVICE memory of the work
 * object's backend (its alloc, under the work object's context,
 * tfm_work_ctx; on the CPU backend any host array); activations and caches
 * too. Everything else the functions below take is HOST memory: the
 * batches (token ids, lengths, targets), the decoding tokens, parents and
 * log-probabilities, forward_logits' logits. The network touches device
 * memory only through backend ops; host arrays cross with one to_device
 * per pass or decoding step and the log-probabilities with one to_host per
 * step. Threads: a work object is used by one thread at a time. */
#ifndef FEDRUN_TRANSFORMER_NET_H
#define FEDRUN_TRANSFORMER_NET_H

#include <stdint.h>
#include "fedrun/backend.h"
#include "fedrun/params.h"
#include "fedrun/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TFM_TIE_NONE = 0, TFM_TIE_DECODER = 1, TFM_TIE_ALL = 2 };

/* Layer-norm epsilon of every layer norm of the network. */
#define TFM_LN_EPS 1e-5f

struct tfm_cfg {
	uint32_t vocab; /* shared source/target vocabulary, >= 1 */
	uint32_t enc_layers, dec_layers, dim, heads, ffn; /* dim % heads == 0 */
	/* probabilities in [0, 1); label_smoothing in [0, 1] */
	float dropout, attn_dropout, relu_dropout, label_smoothing;
	int tie;      /* TFM_TIE_NONE, TFM_TIE_DECODER, TFM_TIE_ALL */
	int pre_norm; /* 0 post-norm (Vaswani), 1 pre-norm */
	/* special tokens, each in [0, vocab). pad_id's embedding row starts
	 * at 0 (fairseq's padding_idx); bos_id and eos_id are the caller's
	 * business (tgt_in starts with bos, tgt_out ends with eos); the
	 * network itself does not read them. */
	int32_t pad_id, bos_id, eos_id;
	/* Added to the spec: the feed-forward activation, FEDRUN_ACT_RELU
	 * (0, the default: Vaswani eq. 2) or FEDRUN_ACT_GELU (fairseq's
	 * --activation-fn gelu; smooth, which the gradient tests use). */
	int activation;
	/* Where a work object's backend context runs (tfm_work_create): the
	 * device index, and whether the backend may use nondeterministic
	 * ops (fedrun_backend_ctx_cfg); 0, 0 by default. */
	int32_t device;
	int nondeterministic;
	/* The precision of the products (enum fedrun_precision; 0 FP32). */
	uint32_t precision;
};

/* Checks a configuration: 0, or FEDRUN_EINVAL with a message naming the
 * field. Every function below that takes a cfg checks it. */
int tfm_cfg_check(const struct tfm_cfg *c);

/* Builds the layout above into a new, malloc'd struct (free with
 * fedrun_layout_fini then free, or tfm_layout_free). */
int tfm_layout(const struct tfm_cfg *c, struct fedrun_layout **out);
void tfm_layout_free(struct fedrun_layout *l);

/* Initial parameters into params (l->total floats, the padding is zeroed),
 * a deterministic function of (seed, layout): tensor i draws from the
 * stream fedrun_rng_init(seed, FEDRUN_RNG_INIT, 0, i).
 *   - matrices of the attention and feed-forward blocks: Xavier-uniform
 *     (Glorot and Bengio 2010, eq. 16), U(-a, a), a = sqrt(6 / (fan_in +
 *     fan_out)), with the fused in-projection counted as one (3D,D)
 *     matrix as PyTorch's nn.MultiheadAttention does, a = sqrt(6 / 4D)
 *     for q, k and v (equal to fairseq's xavier_uniform_ with gain
 *     1/sqrt(2) on each (D,D) part); out_proj, fc1, fc2 a = sqrt(6 /
 *     (fan_in + fan_out)).
 *   - embeddings and an untied output matrix: N(0, D^-1/2) (fairseq's
 *     Embedding), the pad_id row of each embedding 0.
 *   - biases 0, layer-norm gains 1 and biases 0.
 * The layout must come from tfm_layout with the same cfg. */
int tfm_init(const struct tfm_cfg *c, const struct fedrun_layout *l, uint64_t seed, float *params);

/* One batch of sentence pairs; every array host memory, borrowed for the
 * call (the network sends them to the device). Rows are right-padded
 * (padding at the end). */
struct tfm_batch {
	uint32_t B, Ts, Tt;	/* pairs, source and target row lengths, >= 1 */
	const int32_t *src;	/* (B,Ts): tokens in [0, vocab), pad_id after src_len */
	const int32_t *src_len; /* (B): in [0, Ts] */
	const int32_t *tgt_in;	/* (B,Tt): bos y1 .. yn, then pad_id; in [0, vocab) */
	const int32_t *tgt_out; /* (B,Tt): y1 .. yn eos, then -1 (any negative
				   value: ignored); others in [0, vocab) */
	const int32_t *tgt_len; /* (B) = n + 1, in [0, Tt] */
};

/* Per-thread scratch: the backend context, the activations kept for the
 * backward pass (grown on demand to the largest batch seen) and the
 * decoding caches. */
struct tfm_work;

/* Makes a work object for (c, l) on backend be. The
 * backend context gets threads = 1 (one worker per core, as the engine
 * runs clients; the caller sets the BLAS threads). c and l are copied;
 * be is borrowed for the object's life. */
int tfm_work_create(const struct tfm_cfg *c, const struct fedrun_layout *l,
		    const struct fedrun_backend_ops *be, struct tfm_work **out);
/* The same with a given backend context configuration (NULL: the
 * backend's defaults, i.e. all OpenMP threads), e.g. for a benchmark that
 * runs one pass on all cores. */
int tfm_work_create_cfg(const struct tfm_cfg *c, const struct fedrun_layout *l,
			const struct fedrun_backend_ops *be,
			const struct fedrun_backend_ctx_cfg *ctx_cfg, struct tfm_work **out);
void tfm_work_destroy(struct tfm_work *w); /* NULL is fine */

/* The work object's backend context, for the caller's own device arrays
 * (alloc, ops) on the work object's thread. */
void *tfm_work_ctx(const struct tfm_work *w);
/* to_device and to_host under the work object's context, counted with
 * the copies the network makes itself (tfm_work_xfer). */
int tfm_work_to_device(struct tfm_work *w, void *dst, const void *src, uint64_t bytes);
int tfm_work_to_host(struct tfm_work *w, void *dst, const void *src, uint64_t bytes);
/* Bytes copied so far host to device and device to host. */
void tfm_work_xfer(const struct tfm_work *w, uint64_t *h2d, uint64_t *d2h);
/* Adds copies made elsewhere (another thread's work object) to the count. */
void tfm_work_xfer_add(struct tfm_work *w, uint64_t h2d, uint64_t d2h);
/* y (n) += a x, device memory: the bits of y[i] + a x[i]. */
int tfm_work_axpy(struct tfm_work *w, uint64_t n, float a, const float *x, float *y);

/* Forward pass over batch b, and the backward pass when grad != NULL:
 * grad (layout total floats) += d(mean loss)/d(params), the mean over the
 * batch's target tokens (ACCUMULATED: the caller zeroes grad; tied
 * matrices receive the sum of their uses). rng: the dropout stream, which
 * the pass advances (dropout masks in a fixed order, so the result is a
 * function of the stream's state); NULL = no dropout (evaluation).
 * Sums over the batch: *loss_sum (label smoothed), *nll_sum (plain
 * negative log-likelihood, for perplexity), *ntok (target tokens, the
 * non-negative entries of tgt_out); each may be NULL. A batch without
 * target tokens gives zeros and leaves grad unchanged. Returns 0 or a
 * negative FEDRUN_E* (bad token ids or lengths: FEDRUN_EINVAL). */
int tfm_forward_backward(struct tfm_work *w, const float *params, const struct tfm_batch *b,
			 struct fedrun_rng *rng, float *grad, double *loss_sum, double *nll_sum,
			 uint64_t *ntok);

/* Forward pass without dropout (as tfm_forward_backward with rng and grad
 * NULL) that also writes tok_nll (ntok doubles, host) = -log p(target) of
 * every target token, the non-negative entries of tgt_out in row order
 * (sentence by sentence, position by position): the very values whose sum
 * is *nll_sum, so that per-token scores agree with the model's evaluation.
 * The caller sizes tok_nll by counting tgt_out's targets. */
int tfm_forward_token_nll(struct tfm_work *w, const float *params, const struct tfm_batch *b,
			  double *tok_nll, double *nll_sum, uint64_t *ntok);

/* Forward pass without dropout that writes the logits of EVERY target
 * position, padding included, into logits (B*Tt, vocab) (host memory: they
 * are computed in device memory of that size, then copied).
 * tgt_out is not read (may be NULL). For tests and scoring. */
int tfm_forward_logits(struct tfm_work *w, const float *params, const struct tfm_batch *b,
		       float *logits);

/* Incremental decoding (sec. 3.2.3: the decoder is auto-regressive).
 * tfm_encode runs the encoder (no dropout) over B source sentences src
 * (B,Ts) with lengths src_len (B) (as in struct tfm_batch), computes each
 * decoder layer's cross-attention keys and values once, and sets up
 * rows = B * beam decoding rows with room for max_steps steps; row r
 * belongs to sentence r / beam. src and src_len are borrowed for the call
 * only (the lengths are copied). It ends any
 * previous decoding of w. */
int tfm_encode(struct tfm_work *w, const float *params, uint32_t B, uint32_t Ts, const int32_t *src,
	       const int32_t *src_len, uint32_t beam, uint32_t max_steps);
/* Step t (0-based, t = 0, 1, 2, ... in order, t < max_steps): tokens
 * (rows) are the tokens at position t (bos at t = 0), in [0, vocab).
 * parent (rows; NULL at t = 0, NULL = identity) says which row of step
 * t-1 each row continues: the self-attention cache of row r becomes that
 * of row parent[r] (beam search's reordering), so that row r then
 * behaves exactly as row parent[r] would have. parent[r] must belong to
 * the same sentence (parent[r] / beam == r / beam). Writes logprobs
 * (rows, vocab) = log softmax of each row's next-token distribution.
 * params must be the same array as given to tfm_encode. */
int tfm_decode_step(struct tfm_work *w, const float *params, uint32_t t, const int32_t *tokens,
		    const int32_t *parent, float *logprobs);

#ifdef __cplusplus
}
#endif
#endif
