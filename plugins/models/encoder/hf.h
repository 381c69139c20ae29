/* SPDX-License-Identifier: Apache-2.0 */
/* Hugging Face model directories in and out, for the `encoder` model plugin
 * and `fedrun export-hf`: config.json to struct enc_cfg and back, the
 * parameters of model.safetensors by name into a layout of net.h (and a
 * layout's parameters out), and the tokenizer's files. Only libfedrun is
 * used (not the network, not a backend), so that the fedrun command links
 * this file alone. Internal to the plugin (not installed).
 *
 * Name rule (hf_load_params): a name's canonical form drops one leading
 * "bert." (ENC_BERT) or "distilbert." (ENC_DISTILBERT), and in the file a
 * LayerNorm's ".gamma" / ".beta" (old TF-converted checkpoints) reads as
 * ".weight" / ".bias". A layout tensor and a file tensor match when their
 * canonical forms are equal: the layout's "bert.encoder.layer.0.output.
 * dense.weight" is the file's "bert.encoder.layer.0.output.dense.weight"
 * (a BertFor* model saved) or "encoder.layer.0.output.dense.weight" (a
 * BertModel saved alone), and BASE's bare names take a BertFor* file's
 * body. Two file tensors of one canonical name are an error.
 *
 * Body and head: the body is what the canonical name puts under
 * "embeddings.", "encoder." (BERT) or "transformer." (DistilBERT); the rest
 * (BERT's pooler, the task heads, and every LoRA adapter) is the head.
 *   - a body tensor the file lacks, or of another shape than the layout's,
 *     is an error naming it and both shapes; a body tensor of the file that
 *     the layout does not have (a layer more than config.json says) too;
 *   - a head tensor the file lacks keeps the caller's initialisation
 *     (loaded[i] = 0, listed in the report): BertForMaskedLM's checkpoint
 *     fine-tuned to classify has no pooler or classifier, as transformers
 *     reports "newly initialized";
 *   - a head tensor of another shape (a classifier of another number of
 *     labels) keeps its initialisation too (listed, with both shapes), as
 *     transformers' ignore_mismatched_sizes: the labels are the task's;
 *   - a file tensor the layout does not use (cls.predictions.* when
 *     classifying, cls.seq_relationship.*, a pooler when tagging) is
 *     skipped and listed; the buffers "embeddings.position_ids" and
 *     "embeddings.token_type_ids" are not parameters and skipped silently;
 *   - the tied MLM decoder ("cls.predictions.decoder.weight",
 *     "vocab_projector.weight"; "cls.predictions.decoder.bias" tied to
 *     "cls.predictions.bias") is no tensor of the layout: with task MLM it
 *     must equal the word embeddings (its bias the bias) value for value,
 *     else the error says the file's decoder is not tied (fedrun's MLM head
 *     is); with another task it is skipped as any unused head.
 * Floats in the file may be F32, F16 or BF16 (converted exactly); another
 * dtype is an error naming the tensor.
 *
 * Files read: DIR/model.safetensors, or DIR/model.safetensors.index.json
 * with its shards (its "weight_map": every shard named is read, every
 * tensor must be in the shard the map gives). DIR/pytorch_model.bin (a
 * pickle) alone is refused: only safetensors is read.
 *
 * Writing (hf_write_dir): config.json (architectures by the task:
 * BertModel, BertForSequenceClassification, BertForTokenClassification,
 * BertForMaskedLM, and DistilBert's), model.safetensors ({"format": "pt"}
 * metadata besides fedrun's checksum, which transformers ignores; the
 * layout's names, F32; without the tied decoder, as save_pretrained),
 * vocab.txt, tokenizer_config.json and special_tokens_map.json. LoRA
 * adapters are merged: W + (alpha / r) B A (Hu et al. 2021, eq. 3) for each
 * "P.lora_A.weight", "P.lora_B.weight" pair, which are not written, so that
 * plain transformers (without PEFT) loads the model. transformers_version is
 * left out of config.json (a config without it loads; fedrun wrote it).
 *
 * Messages name the directory and file. Every function returns 0 or a
 * negative FEDRUN_E* code with fedrun_error's message. */
#ifndef FEDRUN_ENCODER_HF_H
#define FEDRUN_ENCODER_HF_H

#include <stdint.h>
#include "fedrun/params.h"
#include "net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* BERT's tokenizer options (tokenizer_config.json; BertTokenizer's
 * defaults when absent). */
struct hf_tok_opts {
	int do_lower_case;          /* 1 */
	int strip_accents;          /* -1: null (strip when lowercasing), 0, 1 */
	int tokenize_chinese_chars; /* 1 */
	uint32_t model_max_length;  /* 0: not given */
};
void hf_tok_opts_default(struct hf_tok_opts *o);

/* Reads DIR/config.json into the architecture's fields of *cfg: arch,
 * vocab, max_pos, type_vocab, dim, layers, heads, ffn, ln_eps, act,
 * dropout, attn_dropout, cls_dropout, pad_id and init_range; the others
 * (task, labels, LoRA, device) are left as the caller set them, and
 * cfg->task is read (set it first): DistilBERT's classifier dropout is
 * seq_classif_dropout for ENC_TASK_CLASSIFY, dropout for the others.
 *   bert: vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
 *     intermediate_size, max_position_embeddings, type_vocab_size,
 *     layer_norm_eps, hidden_act ("gelu" the exact GELU, "gelu_new" the
 *     tanh one, "relu"), hidden_dropout_prob, attention_probs_dropout_prob,
 *     classifier_dropout (null: hidden_dropout_prob), pad_token_id,
 *     initializer_range; position_embedding_type must be "absolute".
 *   distilbert: vocab_size, dim, n_layers, n_heads, hidden_dim,
 *     max_position_embeddings, activation, dropout, attention_dropout,
 *     seq_classif_dropout, pad_token_id, initializer_range; LayerNorm eps
 *     1e-12 (fixed in DistilBERT); sinusoidal_pos_embds either way (the
 *     table is in the checkpoint as "embeddings.position_embeddings").
 * Any other model_type is refused. Missing numbers take transformers'
 * defaults where it has them (dropouts 0.1, layer_norm_eps 1e-12,
 * initializer_range 0.02, pad_token_id 0); the sizes are required.
 * labels (may be NULL): the id2label names in id order (new array of new
 * strings, free with hf_labels_free), *nlabels their number; 0 and NULL
 * without id2label. */
int hf_read_config(const char *dir, struct enc_cfg *cfg, char ***labels, uint32_t *nlabels);
void hf_labels_free(char **labels, uint32_t n);

/* DIR/tokenizer_config.json into *o (defaults first; no file: defaults). */
int hf_read_tok_opts(const char *dir, struct hf_tok_opts *o);

/* Loads DIR's model.safetensors into params (a layout of net.h for cfg,
 * l->total floats, already initialised by the caller: what the file lacks
 * keeps it), by the name rule above. loaded (may be NULL): l->n entries,
 * 1 for a tensor read from the file, 0 for one that kept its value.
 * report (may be NULL): a new string (free with free()) listing what was
 * skipped and what kept its initialisation, or NULL when nothing was. On
 * error params may be partly overwritten. */
int hf_load_params(const char *dir, const struct enc_cfg *cfg, const struct fedrun_layout *l,
		   float *params, uint8_t *loaded, char **report);

/* Writes a Hugging Face model directory DIR (see above). labels: cfg->labels
 * names for CLASSIFY and TAG (NULL: "LABEL_0", ...); vocab: a vocab.txt to
 * copy (cfg->vocab lines); tok: its options (NULL: defaults). The files go
 * to a new directory beside DIR that is renamed DIR at the end: DIR must
 * not exist or be empty, and an error leaves no file behind. */
int hf_write_dir(const char *dir, const struct enc_cfg *cfg, const struct fedrun_layout *l,
		 const float *params, const char *vocab, char *const *labels,
		 const struct hf_tok_opts *tok);

/* What the plugin writes into a run directory at create, so that `fedrun
 * export-hf RUN DIR` can write the run's model without the plugin:
 * RUN/hf/config.json, vocab.txt, tokenizer_config.json and
 * special_tokens_map.json as hf_write_dir's, RUN/hf/fedrun.json ({"task":
 * "classify"|"tag"|"mlm"|"base", "lora_r", "lora_alpha", "labels",
 * "frozen": the file or null}), and, when travels[i] == 0 for some tensor
 * (a tensor the run's checkpoints do not hold: frozen and left out of the
 * travelling layout), RUN/hf/frozen.safetensors with those tensors' values
 * from params. l and params: the full layout of net.h and its parameters
 * (as loaded: the frozen tensors never change); travels NULL: every tensor
 * is in the checkpoints. Replaces an RUN/hf of an earlier create (a
 * resumed run) as a whole. */
int hf_write_run_meta(const char *run_dir, const struct enc_cfg *cfg,
		      const struct fedrun_layout *l, const float *params, const uint8_t *travels,
		      const char *vocab, char *const *labels, const struct hf_tok_opts *tok);

/* `fedrun export-hf`'s work: RUN's checkpoint (NULL: RUN/final.safetensors)
 * and RUN/hf/ into the model directory DIR (hf_write_dir). */
int hf_export_run(const char *run_dir, const char *checkpoint, const char *dir);

/* Task names of fedrun.json ("classify", ...) and back (-1: unknown). */
const char *hf_task_name(enum enc_task t);
int hf_task_parse(const char *s);

#ifdef __cplusplus
}
#endif
#endif
