/* SPDX-License-Identifier: Apache-2.0 */
/* The encoder network of the `encoder` model plugin: BERT (Devlin et al.
 * 2019, "BERT: Pre-training of deep bidirectional Transformers for language
 * understanding", NAACL, sec. 3 and appendix A) and DistilBERT (Sanh et al.
 * 2019), as Hugging Face transformers implements them (BertModel,
 * DistilBertModel and their task heads), so that its checkpoints load
 * tensor for tensor. Written against the backend vtable (fedrun/backend.h);
 * internal to the plugin (not installed).
 *
 * Architecture
 *   - Embeddings: word + learned position (+ token type, BERT only), then
 *     LayerNorm, then dropout.
 *   - Layers (post-norm, as Vaswani et al. 2017 sec. 3.1):
 *         h = LayerNorm(x + Dropout(SelfAttention(x)))
 *         y = LayerNorm(h + Dropout(W2 act(W1 h + b1) + b2))
 *     multi-head self-attention over the non-padding keys of each row
 *     (a row's keys are its first len tokens), attention dropout on the
 *     weights; act = the exact GELU (FEDRUN_ACT_GELU_ERF; HF "gelu"), or
 *     FEDRUN_ACT_GELU ("gelu_new") or ReLU ("relu") by the config.
 *   - Heads (cfg.task):
 *       ENC_TASK_BASE     none: the last hidden states (and BERT's pooler)
 *       ENC_TASK_CLASSIFY one label per row from position 0 ([CLS]):
 *                         BERT: pooler tanh(W_p h0 + b_p), dropout,
 *                         classifier; DistilBERT: pre_classifier, ReLU,
 *                         dropout, classifier. Loss: mean cross-entropy.
 *       ENC_TASK_TAG      one label per position: dropout, classifier on
 *                         every hidden state; positions with label < 0
 *                         are ignored (first-subword labelling puts -1 on
 *                         the others). Loss: mean over labelled positions.
 *       ENC_TASK_MLM      transform (dense, act, LayerNorm), then logits =
 *                         t E^T + b with E the word embeddings (tied);
 *                         positions with label < 0 are ignored.
 *   - LayerNorm eps from the config (HF: 1e-12).
 *
 * Parameter layout: the tensor names and shapes are those of the Hugging
 * Face model's state_dict (PyTorch's (out,in) for weights):
 *   BASE      BertModel / DistilBertModel: "embeddings.word_embeddings.weight",
 *             "encoder.layer.0.attention.self.query.weight", ...,
 *             "pooler.dense.weight" (BERT);
 *             "embeddings.word_embeddings.weight",
 *             "transformer.layer.0.attention.q_lin.weight", ... (DistilBERT)
 *   CLASSIFY  BertForSequenceClassification ("bert." + BertModel's names,
 *             "classifier.weight", "classifier.bias");
 *             DistilBertForSequenceClassification ("distilbert." + ...,
 *             "pre_classifier.*", "classifier.*")
 *   TAG       BertForTokenClassification (no pooler) /
 *             DistilBertForTokenClassification: "classifier.*"
 *   MLM       BertForMaskedLM (no pooler; "cls.predictions.transform.dense.*",
 *             "cls.predictions.transform.LayerNorm.*", "cls.predictions.bias";
 *             the decoder weight is the word embeddings and not a tensor of
 *             its own) / DistilBertForMaskedLM ("vocab_transform.*",
 *             "vocab_layer_norm.*", "vocab_projector.bias").
 *   LoRA (Hu et al. 2021, sec. 4.1: h = W0 x + (alpha / r) B A x, A (r,in)
 *   Kaiming-uniform as PEFT, B (out,r) zero): for each adapted linear
 *   "P.weight" the tensors "P.lora_A.weight" (r,in) and "P.lora_B.weight"
 *   (out,r), PEFT's names without its "base_model.model." prefix.
 *
 *   Arena order (net.c): the embeddings (word, position, token type,
 *   LayerNorm); then per layer the q, k, v weights, the q, k, v biases
 *   (adjacent: one fused (N,3D) projection when D*D and D are multiples of
 *   FEDRUN_TENSOR_ALIGN, i.e. D a multiple of 16; other dims work, with a
 *   product per part), the attention output dense and its LayerNorm, ffn1,
 *   ffn2, the output LayerNorm, then the layer's adapters (A, B for each
 *   target in ENC_LORA_* bit order); then the pooler, then the head. A
 *   checkpoint reader maps by name, never by position.
 *   LoRA has no dropout of its own (PEFT's lora_dropout 0); lora_alpha is
 *   any finite nonzero value.
 *
 * Dropout as HF: BERT on the embeddings, the attention weights, the
 * attention block's and the feed-forward block's outputs; DistilBERT the
 * same but for the attention block's output (its TransformerBlock adds
 * out_lin's output to x without dropout). Masks are drawn in that order,
 * layer by layer, then the head's (cls_dropout), so that a pass is a
 * function of the stream's state.
 *
 * Freezing: the caller passes a per-tensor `trainable` mask; the backward
 * pass computes no gradient for a frozen tensor (its grad entries are left
 * untouched) and stops below the lowest layer that has a trainable tensor
 * (enc_tensor_layer; the adapters count in their layer): that layer's
 * input gradient is not formed and no layer below it, nor the
 * embeddings, is visited. The MLM decoder is the word embeddings, a
 * tensor of layer -1: training it means the full backward pass.
 *
 * Batches: labels at padding positions (t >= len) must be < 0 for TAG and
 * MLM (FEDRUN_EINVAL otherwise); type_ids must be NULL for DistilBERT;
 * cfg.labels is not read for BASE and MLM.
 *
 * Memory, threads: as the transformer's net.h: params and grad are device
 * memory of the work object's backend; batches and outputs are host
 * memory; one thread at a time per work object. The backend needs the
 * Transformer layers, softmax_xent_db and prox_grad (ABI 1.11 for the
 * exact GELU). Work memory, kept for the largest batch seen: per token
 * and layer about (9 + 2 F/D) D floats (+ 2r per adapter), the attention
 * weights (B H T T floats a layer, a quarter more with attention
 * dropout), about 12 D + F per token for the embeddings, the head and
 * the gradients, and the head's logits: tokens x labels, or for MLM a chunk
 * of at most 512 positions x vocab (only the labelled positions go
 * through the MLM head in enc_forward_backward; enc_forward computes
 * every position's, chunk by chunk, into the caller's array). */
#ifndef FEDRUN_ENCODER_NET_H
#define FEDRUN_ENCODER_NET_H

#include <stdint.h>
#include "fedrun/backend.h"
#include "fedrun/params.h"
#include "fedrun/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

enum enc_arch { ENC_BERT = 0, ENC_DISTILBERT = 1 };
enum enc_task { ENC_TASK_BASE = 0, ENC_TASK_CLASSIFY = 1, ENC_TASK_TAG = 2, ENC_TASK_MLM = 3 };

/* Which linear maps of every layer get LoRA adapters (a bit set). */
enum {
	ENC_LORA_Q = 1u << 0,
	ENC_LORA_K = 1u << 1,
	ENC_LORA_V = 1u << 2,
	ENC_LORA_O = 1u << 3,   /* attention output projection */
	ENC_LORA_FFN1 = 1u << 4, /* intermediate.dense / ffn.lin1 */
	ENC_LORA_FFN2 = 1u << 5  /* output.dense / ffn.lin2 */
};

struct enc_cfg {
	enum enc_arch arch;
	enum enc_task task;
	uint32_t vocab, max_pos;
	uint32_t type_vocab; /* BERT's token types (2); 0 for DistilBERT */
	uint32_t dim, layers, heads, ffn; /* dim % heads == 0 */
	uint32_t labels;      /* CLASSIFY and TAG: >= 2 (1 is refused); else 0 */
	float ln_eps;         /* > 0; HF 1e-12 */
	int act;              /* enum fedrun_act: GELU_ERF, GELU or RELU */
	/* dropout probabilities in [0, 1): hidden (embeddings, sublayers),
	 * attention weights, and the classifier's (BERT's
	 * classifier_dropout, else hidden; DistilBERT's seq_classif_dropout
	 * for CLASSIFY, dropout for TAG) */
	float dropout, attn_dropout, cls_dropout;
	int32_t pad_id;       /* in [0, vocab); its embedding row starts at 0 */
	float init_range;     /* HF initializer_range: N(0, init_range) init */
	uint32_t lora_r;      /* 0: no adapters */
	float lora_alpha;     /* scaling alpha / r */
	uint32_t lora_targets; /* ENC_LORA_* bits; nonzero when lora_r > 0 */
	/* where the backend context runs, as struct tfm_cfg's */
	int32_t device;
	int nondeterministic;
	uint32_t precision; /* enum fedrun_precision */
};

/* 0, or FEDRUN_EINVAL with a message naming the field. */
int enc_cfg_check(const struct enc_cfg *c);

/* The layout above into a new malloc'd struct (free with enc_layout_free). */
int enc_layout(const struct enc_cfg *c, struct fedrun_layout **out);
void enc_layout_free(struct fedrun_layout *l);

/* Layer of tensor i of a layout from enc_layout: -1 for the embeddings,
 * 0 .. layers-1 for the encoder layers, `layers` for the pooler and the
 * heads. For freezing (the embeddings and the first k layers) and
 * selectors. */
int enc_tensor_layer(const struct enc_cfg *c, const struct fedrun_layout *l, uint32_t i);

/* Initial parameters (l->total floats, padding zero), a deterministic
 * function of (seed, layout): tensor i draws from fedrun_rng_init(seed,
 * FEDRUN_RNG_INIT, 0, i). HF's _init_weights: linear and embedding
 * weights N(0, init_range), the pad_id row 0, biases 0, LayerNorm 1 and 0;
 * LoRA A Kaiming-uniform (a = sqrt 5: U(-1/sqrt(in), 1/sqrt(in))), B 0. */
int enc_init(const struct enc_cfg *c, const struct fedrun_layout *l, uint64_t seed, float *params);

/* A batch of B rows of T tokens, right-padded; host memory, borrowed for
 * the call. */
struct enc_batch {
	uint32_t B, T;		 /* >= 1; T <= max_pos */
	const int32_t *ids;	 /* (B,T) in [0, vocab); pad_id after len */
	const int32_t *len;	 /* (B) in [1, T] */
	const int32_t *type_ids; /* (B,T) in [0, type_vocab), or NULL: all 0 */
	/* CLASSIFY: (B) in [0, labels); TAG: (B,T) in [0, labels) or < 0
	 * (ignored; padding must be < 0); MLM: (B,T) in [0, vocab) or < 0;
	 * BASE: unused (NULL) */
	const int32_t *labels;
};

struct enc_work;

/* As tfm_work_create / tfm_work_create_cfg. */
int enc_work_create(const struct enc_cfg *c, const struct fedrun_layout *l,
		    const struct fedrun_backend_ops *be, struct enc_work **out);
int enc_work_create_cfg(const struct enc_cfg *c, const struct fedrun_layout *l,
			const struct fedrun_backend_ops *be,
			const struct fedrun_backend_ctx_cfg *ctx_cfg, struct enc_work **out);
void enc_work_destroy(struct enc_work *w); /* NULL is fine */
void *enc_work_ctx(const struct enc_work *w);
int enc_work_to_device(struct enc_work *w, void *dst, const void *src, uint64_t bytes);
int enc_work_to_host(struct enc_work *w, void *dst, const void *src, uint64_t bytes);
/* As tfm_work_xfer, tfm_work_xfer_add and tfm_work_axpy (added with net.c,
 * for the plugin's backend.*_bytes metrics and device-side sums): the
 * bytes copied so far by the work object (its own copies and the
 * to_device / to_host above), copies made elsewhere added to the count,
 * and y (n) += a x in device memory, the bits of y[i] + a x[i]. */
void enc_work_xfer(const struct enc_work *w, uint64_t *h2d, uint64_t *d2h);
void enc_work_xfer_add(struct enc_work *w, uint64_t h2d, uint64_t d2h);
int enc_work_axpy(struct enc_work *w, uint64_t n, float a, const float *x, float *y);

/* Forward pass of the task head over b, and the backward pass when grad
 * != NULL: grad (layout total floats) += d(mean loss)/d(params) for every
 * tensor with trainable[i] != 0 (trainable NULL: all), ACCUMULATED (the
 * caller zeroes grad). rng: the dropout stream (NULL: no dropout). Sums:
 * *loss_sum (cross-entropy summed over the labelled rows or positions),
 * *count (how many), each may be NULL. pred (host, may be NULL): the
 * argmax label of each row (CLASSIFY, B entries) or position (TAG and
 * MLM, B*T entries; -1 where the label is < 0). Not for BASE
 * (FEDRUN_EINVAL). A batch without labelled positions gives zeros, pred
 * all -1, and leaves grad unchanged. */
int enc_forward_backward(struct enc_work *w, const float *params, const struct enc_batch *b,
			 struct fedrun_rng *rng, float *grad, const uint8_t *trainable,
			 double *loss_sum, uint64_t *count, int32_t *pred);

/* Forward without dropout, for parity tests and feature extraction (host
 * outputs, each may be NULL): hidden (layers + 1, B, T, dim), the
 * embeddings' output then every layer's (HF's output_hidden_states);
 * pooled (B, dim), BERT's pooler output (BASE and CLASSIFY of BERT only,
 * else FEDRUN_EINVAL when non-NULL); logits, the head's: CLASSIFY (B,
 * labels), TAG (B, T, labels), MLM (B, T, vocab). Positions at or after a
 * row's len hold values too (its queries see the row's keys) but are
 * unspecified by the reference's padding and not compared. */
int enc_forward(struct enc_work *w, const float *params, const struct enc_batch *b, float *hidden,
		float *pooled, float *logits);

#ifdef __cplusplus
}
#endif
#endif
