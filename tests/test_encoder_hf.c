/* SPDX-License-Identifier: Apache-2.0 */
/* Hugging Face model directories (plugins/models/encoder/hf.[ch]) on the
 * fixtures of tests/data/hf/: config.json, the name rule and its errors,
 * half-precision files, shards, the tied decoder, writing a directory
 * (LoRA merged) and a run's hf/ exported; and parity: every fixture loaded
 * into net.h's layout (enc_layout) and run by enc_forward gives the
 * reference's hidden states, pooler output and head logits to 1e-5
 * relative (normwise per tensor, as tests/nn_testutil.h's tu_err, over the
 * positions before each row's length).
 * Also the helper of tests/e2e_export_hf.sh:
 *   test_encoder_hf make-run FIXTURE RUN   a fake run of FIXTURE's model
 *   test_encoder_hf compare FIXTURE DIR    DIR's parameters are FIXTURE's */
#include "config.h"
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fedrun/fedrun.h"
#include "hf.h"
#include "net.h"
#include "nn_testutil.h"

static char tmpdir[256];
static char fixtures[1024];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/fedrun-hf-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *fx(const char *name)
{
	static char buf[8][1200];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", fixtures, name);
	return buf[k];
}

static const char *tmp(const char *name)
{
	static char buf[8][600];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
	return buf[k];
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

/* A layout of a file's float tensors, in its order, named as the file
 * names them with `prefix` before, and their values (no check asserts:
 * the helper modes of main use it outside a test too). */
static int layout_load(const char *path, const char *prefix, struct fedrun_layout *l, float **p)
{
	struct fedrun_st_file f;
	int rc = fedrun_st_read(&f, path);
	fedrun_layout_init(l);
	*p = NULL;
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < f.n && rc == 0; i++) {
		char name[FEDRUN_NAME_MAX];
		if (f.t[i].dtype == FEDRUN_I64)
			continue;
		snprintf(name, sizeof name, "%s%s", prefix, f.t[i].name);
		rc = fedrun_layout_add(l, name, f.t[i].ndim, f.t[i].shape);
	}
	if (rc == 0 && !(*p = fedrun_arena_alloc(l->total)))
		rc = FEDRUN_ENOMEM;
	for (uint32_t i = 0, k = 0; i < f.n && rc == 0; i++)
		if (f.t[i].dtype != FEDRUN_I64)
			rc = fedrun_st_to_f32(&f.t[i], *p + l->t[k++].offset);
	fedrun_st_fini(&f);
	return rc;
}

static void layout_of(const char *path, const char *prefix, struct fedrun_layout *l, float **p)
{
	ck_assert_msg(layout_load(path, prefix, l, p) == 0, "%s: %s", path, fedrun_error_message());
}

static void cfg_of(const char *dir, enum enc_task task, struct enc_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->task = task;
	ck_assert_msg(hf_read_config(dir, c, NULL, NULL) == 0, "%s", fedrun_error_message());
}

static void assert_same(const struct fedrun_layout *l, const float *a, const float *b)
{
	for (uint32_t i = 0; i < l->n; i++)
		ck_assert_msg(memcmp(a + l->t[i].offset, b + l->t[i].offset, l->t[i].numel * 4) == 0,
			      "tensor %s differs", l->t[i].name);
}

/* ---- config.json ---- */

START_TEST(test_config)
{
	struct enc_cfg c;
	char **labels;
	uint32_t n;
	memset(&c, 0, sizeof c);
	c.task = ENC_TASK_CLASSIFY;
	ck_assert_int_eq(hf_read_config(fx("bert-classify"), &c, &labels, &n), 0);
	ck_assert_int_eq(c.arch, ENC_BERT);
	ck_assert_uint_eq(c.vocab, 103);
	ck_assert_uint_eq(c.dim, 16);
	ck_assert_uint_eq(c.layers, 2);
	ck_assert_uint_eq(c.heads, 4);
	ck_assert_uint_eq(c.ffn, 37);
	ck_assert_uint_eq(c.max_pos, 64);
	ck_assert_uint_eq(c.type_vocab, 2);
	ck_assert_int_eq(c.act, FEDRUN_ACT_GELU_ERF);
	ck_assert(c.ln_eps == 1e-12f && c.dropout == 0.1f && c.attn_dropout == 0.1f);
	ck_assert(c.cls_dropout == 0.1f); /* classifier_dropout null: hidden's */
	ck_assert(c.init_range == 0.02f);
	ck_assert_int_eq(c.pad_id, 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(labels[2], "LABEL_2");
	hf_labels_free(labels, n);

	/* DistilBERT: seq_classif_dropout when classifying, dropout else */
	memset(&c, 0, sizeof c);
	c.task = ENC_TASK_CLASSIFY;
	ck_assert_int_eq(hf_read_config(fx("distilbert"), &c, NULL, NULL), 0);
	ck_assert_int_eq(c.arch, ENC_DISTILBERT);
	ck_assert_uint_eq(c.type_vocab, 0);
	ck_assert_uint_eq(c.ffn, 37);
	ck_assert(c.cls_dropout == 0.2f && c.ln_eps == 1e-12f);
	c.task = ENC_TASK_TAG;
	ck_assert_int_eq(hf_read_config(fx("distilbert"), &c, NULL, NULL), 0);
	ck_assert(c.cls_dropout == 0.1f);

	/* refused: another model type, with the message the issue gives */
	char want[1400];
	ck_assert_int_eq(hf_read_config(fx("bad-model-type"), &c, NULL, NULL), FEDRUN_EFORMAT);
	snprintf(want, sizeof want, "%s/config.json: model_type \"roberta\": only bert and "
		 "distilbert are supported", fx("bad-model-type"));
	ck_assert_str_eq(fedrun_error_message(), want);

	/* refused: edits of a good config */
	make_tmpdir();
	struct {
		const char *sed, *msg;
	} bad[] = {
	    {"s/\"absolute\"/\"relative_key\"/", "position_embedding_type \"relative_key\""},
	    {"s/\"gelu\"/\"swish\"/", "\"hidden_act\": \"swish\": only gelu"},
	    {"/\"hidden_size\"/d", "\"hidden_size\" is missing"},
	    {"s/\"num_attention_heads\": 4/\"num_attention_heads\": 3/", "3 heads do not divide"},
	    {"s/\"hidden_dropout_prob\": 0.1/\"hidden_dropout_prob\": 1.5/", "hidden_dropout_prob"},
	    {"s/\"pad_token_id\": 0/\"pad_token_id\": 103/", "pad_token_id 103"},
	};
	for (size_t e = 0; e < sizeof bad / sizeof *bad; e++) {
		sh("mkdir -p %s/c && sed '%s' %s/config.json >%s/c/config.json", tmpdir, bad[e].sed,
		   fx("bert-classify"), tmpdir);
		ck_assert_int_ne(hf_read_config(tmp("c"), &c, NULL, NULL), 0);
		ck_assert_msg(strstr(fedrun_error_message(), bad[e].msg) != NULL, "%zu: %s", e,
			      fedrun_error_message());
	}
	remove_tmpdir();
}
END_TEST

/* ---- model.safetensors ---- */

/* Every fixture into the layout of its own file: the same bits, nothing
 * reported; then across classes by the name rule. */
START_TEST(test_load_names)
{
	struct fedrun_layout l;
	float *want, *got;
	struct enc_cfg c;
	char *report;
	const char *dirs[] = {"bert", "bert-classify", "bert-tag", "bert-mlm", "distilbert",
			      "distilbert-classify", "distilbert-tag", "distilbert-mlm"};
	const enum enc_task tasks[] = {ENC_TASK_BASE, ENC_TASK_CLASSIFY, ENC_TASK_TAG, ENC_TASK_MLM};
	for (int d = 0; d < 8; d++) {
		char path[1400];
		snprintf(path, sizeof path, "%s/model.safetensors", fx(dirs[d]));
		layout_of(path, "", &l, &want);
		got = fedrun_arena_alloc(l.total);
		cfg_of(fx(dirs[d]), tasks[d % 4], &c);
		uint8_t loaded[64];
		ck_assert_msg(hf_load_params(fx(dirs[d]), &c, &l, got, loaded, &report) == 0, "%s: %s",
			      dirs[d], fedrun_error_message());
		ck_assert_msg(report == NULL, "%s: %s", dirs[d], report);
		for (uint32_t i = 0; i < l.n; i++)
			ck_assert(loaded[i] == 1);
		assert_same(&l, want, got);
		fedrun_arena_free(got);
		fedrun_arena_free(want);
		fedrun_layout_fini(&l);
	}

	/* A classifier from a BertModel saved alone: "bert.X" from "X"; the
	 * head keeps its initialisation (loaded 0, listed). */
	layout_of(fx("bert-classify/model.safetensors"), "", &l, &want);
	got = fedrun_arena_alloc(l.total);
	for (uint64_t i = 0; i < l.total; i++)
		got[i] = 7.0f;
	cfg_of(fx("bert"), ENC_TASK_CLASSIFY, &c);
	uint8_t loaded[64];
	ck_assert_int_eq(hf_load_params(fx("bert"), &c, &l, got, loaded, &report), 0);
	ck_assert_ptr_nonnull(report);
	ck_assert_msg(strstr(report, "2 tensors kept their initialisation: classifier.bias, "
			     "classifier.weight") != NULL, "%s", report);
	free(report);
	for (uint32_t i = 0; i < l.n; i++) {
		bool head = strncmp(l.t[i].name, "classifier.", 11) == 0;
		ck_assert_int_eq(loaded[i], !head);
		if (head)
			ck_assert(got[l.t[i].offset] == 7.0f);
		else
			ck_assert_mem_eq(got + l.t[i].offset, want + l.t[i].offset, l.t[i].numel * 4);
	}
	/* ... and from the MLM checkpoint: its MLM head skipped and listed,
	 * the pooler it lacks kept */
	ck_assert_int_eq(hf_load_params(fx("bert-mlm"), &c, &l, got, loaded, &report), 0);
	ck_assert_msg(strstr(report, "skipped 5 tensors the task does not use: "
			     "cls.predictions.bias, cls.predictions.transform") != NULL,
		      "%s", report);
	ck_assert_msg(strstr(report, "4 tensors kept their initialisation: bert.pooler.dense.bias, "
			     "bert.pooler.dense.weight, classifier.") != NULL, "%s", report);
	free(report);
	fedrun_arena_free(got);
	fedrun_arena_free(want);
	fedrun_layout_fini(&l);

	/* A classifier of another number of labels: kept, both shapes said. */
	layout_of(fx("bert-tag/model.safetensors"), "", &l, &want); /* 5 labels */
	got = fedrun_arena_alloc(l.total);
	cfg_of(fx("bert-classify"), ENC_TASK_TAG, &c);
	ck_assert_int_eq(hf_load_params(fx("bert-classify"), &c, &l, got, NULL, &report), 0);
	ck_assert_msg(strstr(report, "classifier.weight (the file's 3x16, the task's 5x16)") != NULL,
		      "%s", report);
	free(report);
	/* BASE's bare names take a BertFor* file's body */
	fedrun_arena_free(got);
	fedrun_arena_free(want);
	fedrun_layout_fini(&l);
	layout_of(fx("distilbert/model.safetensors"), "", &l, &want);
	got = fedrun_arena_alloc(l.total);
	cfg_of(fx("distilbert"), ENC_TASK_BASE, &c);
	ck_assert_int_eq(hf_load_params(fx("distilbert-tag"), &c, &l, got, NULL, &report), 0);
	ck_assert_msg(report && strstr(report, "skipped 2 tensors the task does not use: "
				       "classifier.bias, classifier.weight"), "%s", report);
	free(report);
	assert_same(&l, want, got);
	fedrun_arena_free(got);
	fedrun_arena_free(want);
	fedrun_layout_fini(&l);
}
END_TEST

/* F16 and BF16 files load to their F32 twin's values rounded (BF16:
 * to nearest even, exactly; F16: within half an F16 ulp); the I64
 * position_ids buffer is skipped without a word. */
START_TEST(test_load_half)
{
	const char *half[] = {"bert-bf16", "distilbert-f16"}, *twin[] = {"bert", "distilbert"};
	for (int h = 0; h < 2; h++) {
		struct fedrun_layout l;
		float *want, *got;
		struct enc_cfg c;
		char *report, path[1400];
		snprintf(path, sizeof path, "%s/model.safetensors", fx(twin[h]));
		layout_of(path, "", &l, &want);
		got = fedrun_arena_alloc(l.total);
		cfg_of(fx(half[h]), ENC_TASK_BASE, &c);
		ck_assert_msg(hf_load_params(fx(half[h]), &c, &l, got, NULL, &report) == 0, "%s",
			      fedrun_error_message());
		ck_assert_msg(report == NULL, "%s", report);
		for (uint32_t i = 0; i < l.n; i++)
			for (uint64_t k = 0; k < l.t[i].numel; k++) {
				float w = want[l.t[i].offset + k], g = got[l.t[i].offset + k];
				if (h == 0) {
					uint32_t u;
					memcpy(&u, &w, 4);
					u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
					memcpy(&w, &u, 4);
					ck_assert_msg(g == w, "%s[%" PRIu64 "]", l.t[i].name, k);
				} else {
					double tol = fmax(fabs(w) * ldexp(1, -11), ldexp(1, -25));
					ck_assert_msg(fabs(g - w) <= tol, "%s[%" PRIu64 "]: %g, %g",
						      l.t[i].name, k, g, w);
				}
			}
		fedrun_arena_free(got);
		fedrun_arena_free(want);
		fedrun_layout_fini(&l);
	}
}
END_TEST

START_TEST(test_load_errors)
{
	struct fedrun_layout l;
	float *p, *q;
	struct enc_cfg c;
	char want[2048];
	make_tmpdir();
	/* bad-shape: the tensor and both shapes */
	cfg_of(fx("bad-shape"), ENC_TASK_BASE, &c);
	sh("mkdir %s/good && cp %s/config.json %s/vocab.txt %s/model.safetensors %s/good",
	   tmpdir, fx("bad-shape"), fx("bad-model-type"), fx("bad-model-type"), tmpdir);
	layout_of(tmp("good/model.safetensors"), "", &l, &p);
	ck_assert_int_eq(hf_load_params(fx("bad-shape"), &c, &l, p, NULL, NULL), FEDRUN_EFORMAT);
	snprintf(want, sizeof want, "%s/model.safetensors: tensor "
		 "'encoder.layer.0.intermediate.dense.weight': the model (config.json) has 11x8, "
		 "the file's 'encoder.layer.0.intermediate.dense.weight' 10x8", fx("bad-shape"));
	ck_assert_str_eq(fedrun_error_message(), want);
	ck_assert_int_eq(hf_load_params(tmp("good"), &c, &l, p, NULL, NULL), 0);

	/* a body tensor missing, or one layer too many in the file */
	struct fedrun_layout more;
	fedrun_layout_init(&more);
	uint64_t shape[1] = {8};
	for (uint32_t i = 0; i < l.n; i++)
		fedrun_layout_add(&more, l.t[i].name, l.t[i].ndim, l.t[i].shape);
	fedrun_layout_add(&more, "encoder.layer.1.output.dense.bias", 1, shape);
	q = fedrun_arena_alloc(more.total);
	ck_assert_int_eq(hf_load_params(tmp("good"), &c, &more, q, NULL, NULL), FEDRUN_EFORMAT);
	ck_assert_msg(strstr(fedrun_error_message(), "tensor 'encoder.layer.1.output.dense.bias' "
			     "(8) of the model is missing"), "%s", fedrun_error_message());
	fedrun_arena_free(q);
	fedrun_layout_fini(&more);
	fedrun_layout_init(&more);
	for (uint32_t i = 0; i < l.n; i++)
		if (strcmp(l.t[i].name, "encoder.layer.0.output.dense.bias") != 0)
			fedrun_layout_add(&more, l.t[i].name, l.t[i].ndim, l.t[i].shape);
	q = fedrun_arena_alloc(more.total);
	ck_assert_int_eq(hf_load_params(tmp("good"), &c, &more, q, NULL, NULL), FEDRUN_EFORMAT);
	ck_assert_msg(strstr(fedrun_error_message(), "'encoder.layer.0.output.dense.bias' is not "
			     "part of the model config.json describes"), "%s", fedrun_error_message());
	fedrun_arena_free(q);
	fedrun_layout_fini(&more);

	/* pytorch_model.bin alone, and nothing at all */
	sh("mkdir %s/pt && cp %s/config.json %s/pt && echo x >%s/pt/pytorch_model.bin", tmpdir,
	   tmp("good"), tmpdir, tmpdir);
	ck_assert_int_eq(hf_load_params(tmp("pt"), &c, &l, p, NULL, NULL), FEDRUN_EFORMAT);
	ck_assert_msg(strstr(fedrun_error_message(), "only model.safetensors is read, not "
			     "pytorch_model.bin"), "%s", fedrun_error_message());
	sh("rm %s/pt/pytorch_model.bin", tmpdir);
	ck_assert_int_eq(hf_load_params(tmp("pt"), &c, &l, p, NULL, NULL), FEDRUN_ENOENT);

	/* "bert.X" and "X" both in one file: ambiguous */
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	for (uint32_t i = 0; i < l.n; i++)
		fedrun_st_add(&f, l.t[i].name, FEDRUN_F32, l.t[i].ndim, l.t[i].shape, p + l.t[i].offset);
	fedrun_st_add(&f, "bert.pooler.dense.bias", FEDRUN_F32, 1, shape, p);
	sh("mkdir %s/two && cp %s/config.json %s/two", tmpdir, tmp("good"), tmpdir);
	ck_assert_int_eq(fedrun_st_write(&f, tmp("two/model.safetensors")), 0);
	fedrun_st_fini(&f);
	ck_assert_int_eq(hf_load_params(tmp("two"), &c, &l, p, NULL, NULL), FEDRUN_EFORMAT);
	ck_assert_msg(strstr(fedrun_error_message(), "are one tensor by their names"), "%s",
		      fedrun_error_message());
	fedrun_arena_free(p);
	fedrun_layout_fini(&l);
	remove_tmpdir();
}
END_TEST

/* A sharded checkpoint (model.safetensors.index.json) loads as the whole
 * one; a shard that lacks what the map says is refused. Old LayerNorm
 * names (gamma, beta) read as weight and bias. */
START_TEST(test_load_shards)
{
	struct fedrun_layout l;
	float *want, *got;
	struct enc_cfg c;
	make_tmpdir();
	layout_of(fx("bert-classify/model.safetensors"), "", &l, &want);
	cfg_of(fx("bert-classify"), ENC_TASK_CLASSIFY, &c);
	sh("mkdir %s/s && cp %s/config.json %s/s", tmpdir, fx("bert-classify"), tmpdir);
	FILE *idx = fopen(tmp("s/model.safetensors.index.json"), "w");
	ck_assert_ptr_nonnull(idx);
	fputs("{\"metadata\": {\"total_size\": 1}, \"weight_map\": {", idx);
	struct fedrun_st_file sf[2];
	fedrun_st_init(&sf[0]);
	fedrun_st_init(&sf[1]);
	for (uint32_t i = 0; i < l.n; i++) {
		char name[FEDRUN_NAME_MAX + 8];
		snprintf(name, sizeof name, "%s", l.t[i].name);
		char *g = strstr(name, "LayerNorm.weight");
		if (g)
			strcpy(g, "LayerNorm.gamma");
		fedrun_st_add(&sf[i % 2], name, FEDRUN_F32, l.t[i].ndim, l.t[i].shape,
			      want + l.t[i].offset);
		fprintf(idx, "%s\"%s\": \"model-0000%u-of-00002.safetensors\"", i ? ", " : "", name,
			i % 2 + 1);
	}
	fputs("}}\n", idx);
	fclose(idx);
	ck_assert_int_eq(fedrun_st_write(&sf[0], tmp("s/model-00001-of-00002.safetensors")), 0);
	ck_assert_int_eq(fedrun_st_write(&sf[1], tmp("s/model-00002-of-00002.safetensors")), 0);
	got = fedrun_arena_alloc(l.total);
	char *report;
	ck_assert_msg(hf_load_params(tmp("s"), &c, &l, got, NULL, &report) == 0, "%s",
		      fedrun_error_message());
	ck_assert_ptr_null(report);
	assert_same(&l, want, got);
	/* the shards swapped: each holds what the map puts in the other */
	sh("cd %s/s && mv model-00001-of-00002.safetensors x && mv model-00002-of-00002.safetensors "
	   "model-00001-of-00002.safetensors && mv x model-00002-of-00002.safetensors", tmpdir);
	ck_assert_int_eq(hf_load_params(tmp("s"), &c, &l, got, NULL, NULL), FEDRUN_EFORMAT);
	ck_assert_msg(strstr(fedrun_error_message(), "weight_map for this shard"), "%s",
		      fedrun_error_message());
	fedrun_st_fini(&sf[0]);
	fedrun_st_fini(&sf[1]);
	fedrun_arena_free(got);
	fedrun_arena_free(want);
	fedrun_layout_fini(&l);
	remove_tmpdir();
}
END_TEST

/* The MLM decoder in the file: accepted when tied (equal to the word
 * embeddings), refused when not. */
START_TEST(test_load_tied)
{
	struct fedrun_layout l;
	float *p;
	struct enc_cfg c;
	make_tmpdir();
	layout_of(fx("bert-mlm/model.safetensors"), "", &l, &p);
	cfg_of(fx("bert-mlm"), ENC_TASK_MLM, &c);
	int64_t we = fedrun_layout_find(&l, "bert.embeddings.word_embeddings.weight");
	int64_t bias = fedrun_layout_find(&l, "cls.predictions.bias");
	ck_assert(we >= 0 && bias >= 0);
	for (int untie = 0; untie < 2; untie++) {
		float *dec = malloc(l.t[we].numel * 4);
		memcpy(dec, p + l.t[we].offset, l.t[we].numel * 4);
		dec[5] += untie;
		struct fedrun_st_file f;
		fedrun_st_init(&f);
		fedrun_st_add_layout(&f, &l, p);
		fedrun_st_add(&f, "cls.predictions.decoder.weight", FEDRUN_F32, 2, l.t[we].shape, dec);
		fedrun_st_add(&f, "cls.predictions.decoder.bias", FEDRUN_F32, 1, l.t[bias].shape,
			      p + l.t[bias].offset);
		sh("mkdir -p %s/t && cp %s/config.json %s/t", tmpdir, fx("bert-mlm"), tmpdir);
		ck_assert_int_eq(fedrun_st_write(&f, tmp("t/model.safetensors")), 0);
		fedrun_st_fini(&f);
		float *q = fedrun_arena_alloc(l.total);
		char *report = NULL;
		int rc = hf_load_params(tmp("t"), &c, &l, q, NULL, &report);
		if (untie) {
			ck_assert_int_eq(rc, FEDRUN_EFORMAT);
			ck_assert_msg(strstr(fedrun_error_message(), "'cls.predictions.decoder.weight' "
					     "differs from 'bert.embeddings.word_embeddings.weight'"),
				      "%s", fedrun_error_message());
		} else {
			ck_assert_msg(rc == 0 && !report, "%s", fedrun_error_message());
			assert_same(&l, p, q);
		}
		fedrun_arena_free(q);
		free(dec);
	}
	fedrun_arena_free(p);
	fedrun_layout_fini(&l);
	remove_tmpdir();
}
END_TEST

/* ---- writing ---- */

START_TEST(test_write_dir)
{
	struct fedrun_layout l;
	float *p, *q;
	struct enc_cfg c;
	char **labels;
	uint32_t nl;
	make_tmpdir();
	const char *dirs[] = {"bert-classify", "distilbert-tag", "bert-mlm", "distilbert"};
	const enum enc_task tasks[] = {ENC_TASK_CLASSIFY, ENC_TASK_TAG, ENC_TASK_MLM, ENC_TASK_BASE};
	for (int d = 0; d < 4; d++) {
		char path[1400];
		snprintf(path, sizeof path, "%s/model.safetensors", fx(dirs[d]));
		layout_of(path, "", &l, &p);
		memset(&c, 0, sizeof c);
		c.task = tasks[d];
		ck_assert_int_eq(hf_read_config(fx(dirs[d]), &c, &labels, &nl), 0);
		c.labels = tasks[d] == ENC_TASK_CLASSIFY || tasks[d] == ENC_TASK_TAG ? nl : 0;
		snprintf(path, sizeof path, "%s/vocab.txt", fx(dirs[d]));
		sh("rm -rf %s/out", tmpdir);
		ck_assert_msg(hf_write_dir(tmp("out"), &c, &l, p, path, labels, NULL) == 0, "%s",
			      fedrun_error_message());
		/* config.json reads back the same; the parameters the same bits */
		struct enc_cfg c2;
		char **labels2;
		uint32_t nl2;
		memset(&c2, 0, sizeof c2);
		c2.task = tasks[d];
		c2.labels = c.labels;
		ck_assert_int_eq(hf_read_config(tmp("out"), &c2, &labels2, &nl2), 0);
		ck_assert_mem_eq(&c, &c2, sizeof c);
		ck_assert_uint_eq(nl2, c.labels);
		hf_labels_free(labels2, nl2);
		q = fedrun_arena_alloc(l.total);
		ck_assert_int_eq(hf_load_params(tmp("out"), &c, &l, q, NULL, NULL), 0);
		assert_same(&l, p, q);
		fedrun_arena_free(q);
		struct fedrun_st_file f;
		ck_assert_int_eq(fedrun_st_read(&f, tmp("out/model.safetensors")), 0);
		ck_assert_str_eq(fedrun_st_meta_get(&f, "format"), "pt");
		ck_assert_uint_eq(f.n, l.n);
		fedrun_st_fini(&f);
		sh("cmp -s %s/vocab.txt %s/out/vocab.txt", fx(dirs[d]), tmpdir);
		sh("grep -q '\"do_lower_case\": true' %s/out/tokenizer_config.json", tmpdir);
		sh("grep -q '\"mask_token\": \"\\[MASK\\]\"' %s/out/special_tokens_map.json", tmpdir);
		sh("grep -q '\"torch_dtype\": \"float32\"' %s/out/config.json", tmpdir);
		hf_labels_free(labels, nl);
		fedrun_arena_free(p);
		fedrun_layout_fini(&l);
	}
	sh("grep -q '\"initializer_range\": 0.02,' %s/out/config.json", tmpdir);

	/* DIR not empty: refused, left as it was; a bad vocabulary: nothing
	 * left (neither DIR nor a temporary directory beside it) */
	layout_of(fx("bert/model.safetensors"), "", &l, &p);
	cfg_of(fx("bert"), ENC_TASK_BASE, &c);
	ck_assert_int_eq(hf_write_dir(tmp("out"), &c, &l, p, fx("bert/vocab.txt"), NULL, NULL),
			 FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "exists and is not empty"), "%s",
		      fedrun_error_message());
	sh("cmp -s %s/out/vocab.txt %s/vocab.txt", tmpdir, fx("distilbert"));
	sh("mkdir %s/empty", tmpdir);
	ck_assert_int_eq(hf_write_dir(tmp("empty/"), &c, &l, p, fx("bert/vocab.txt"), NULL, NULL), 0);
	sh("head -n 5 %s >%s/v5", fx("bert/vocab.txt"), tmpdir);
	ck_assert_int_eq(hf_write_dir(tmp("new"), &c, &l, p, tmp("v5"), NULL, NULL), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "5 tokens, the model's vocabulary has 103"),
		      "%s", fedrun_error_message());
	sh("test ! -e %s/new && test -z \"$(ls -d %s/new.* 2>/dev/null)\"", tmpdir, tmpdir);
	fedrun_arena_free(p);
	fedrun_layout_fini(&l);
	remove_tmpdir();
}
END_TEST

/* LoRA adapters are merged: W + (alpha / r) B A, the adapters not written. */
START_TEST(test_write_lora)
{
	struct fedrun_layout l, big;
	float *p;
	struct enc_cfg c;
	make_tmpdir();
	layout_of(fx("distilbert/model.safetensors"), "", &l, &p);
	cfg_of(fx("distilbert"), ENC_TASK_BASE, &c);
	c.lora_r = 2;
	c.lora_alpha = 3;
	fedrun_layout_copy(&big, &l);
	uint64_t sa[2] = {2, 16}, sb[2] = {16, 2};
	fedrun_layout_add(&big, "transformer.layer.1.attention.q_lin.lora_A.weight", 2, sa);
	fedrun_layout_add(&big, "transformer.layer.1.attention.q_lin.lora_B.weight", 2, sb);
	float *q = fedrun_arena_alloc(big.total);
	for (uint32_t i = 0; i < l.n; i++)
		memcpy(q + big.t[i].offset, p + l.t[i].offset, l.t[i].numel * 4);
	const struct fedrun_tensor_info *A = &big.t[l.n], *B = &big.t[l.n + 1];
	for (int k = 0; k < 32; k++) {
		q[A->offset + k] = 0.01f * (float)(k - 16);
		q[B->offset + k] = 0.02f * (float)(k % 5);
	}
	ck_assert_int_eq(hf_write_dir(tmp("out"), &c, &big, q, fx("distilbert/vocab.txt"), NULL,
				      NULL), 0);
	float *r = fedrun_arena_alloc(l.total);
	ck_assert_int_eq(hf_load_params(tmp("out"), &c, &l, r, NULL, NULL), 0);
	int64_t w = fedrun_layout_find(&l, "transformer.layer.1.attention.q_lin.weight");
	for (uint32_t i = 0; i < l.n; i++)
		if ((int64_t)i != w)
			ck_assert_mem_eq(r + l.t[i].offset, p + l.t[i].offset, l.t[i].numel * 4);
	for (int o = 0; o < 16; o++)
		for (int j = 0; j < 16; j++) {
			double ba = 0;
			for (int k = 0; k < 2; k++)
				ba += (double)q[B->offset + o * 2 + k] * q[A->offset + k * 16 + j];
			double want = p[l.t[w].offset + o * 16 + j] + 1.5 * ba;
			ck_assert(fabs(r[l.t[w].offset + o * 16 + j] - want) <= 1e-7 * fmax(1, fabs(want)));
		}
	struct fedrun_st_file f;
	ck_assert_int_eq(fedrun_st_read(&f, tmp("out/model.safetensors")), 0);
	ck_assert_uint_eq(f.n, l.n);
	fedrun_st_fini(&f);
	/* a rank the config does not say is refused */
	c.lora_r = 4;
	ck_assert_int_eq(hf_write_dir(tmp("out2"), &c, &big, q, fx("distilbert/vocab.txt"), NULL,
				      NULL), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "LoRA rank 2, the config's 4"), "%s",
		      fedrun_error_message());
	fedrun_arena_free(r);
	fedrun_arena_free(q);
	fedrun_arena_free(p);
	fedrun_layout_fini(&big);
	fedrun_layout_fini(&l);
	remove_tmpdir();
}
END_TEST

/* ---- a run's hf/ and fedrun export-hf ---- */

/* A fake run of a fixture's model, as the encoder plugin and the engine
 * leave it: pipeline.json, hf/ (the embeddings frozen out of the
 * travelling layout, so in hf/frozen.safetensors), final.safetensors of the
 * rest (with fedrun's checksum). */
static int make_run(const char *fixture, const char *run)
{
	struct fedrun_layout l, trav;
	float *p;
	struct enc_cfg c;
	char path[1400], **labels;
	uint32_t nl;
	snprintf(path, sizeof path, "%s/model.safetensors", fixture);
	int rc = layout_load(path, "", &l, &p);
	if (rc < 0)
		return rc;
	memset(&c, 0, sizeof c);
	c.task = ENC_TASK_CLASSIFY;
	if ((rc = hf_read_config(fixture, &c, &labels, &nl)) < 0)
		return rc;
	c.labels = nl;
	if (fedrun_mkdir_p(run) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/pipeline.json", run);
	if ((rc = fedrun_write_file_atomic(path, "{}\n", 3)) < 0)
		return rc;
	uint8_t travels[64];
	fedrun_layout_init(&trav);
	for (uint32_t i = 0; i < l.n; i++)
		if ((travels[i] = !strstr(l.t[i].name, "embeddings.")))
			fedrun_layout_add(&trav, l.t[i].name, l.t[i].ndim, l.t[i].shape);
	snprintf(path, sizeof path, "%s/vocab.txt", fixture);
	if ((rc = hf_write_run_meta(run, &c, &l, p, travels, path, labels, NULL)) < 0)
		return rc;
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	fedrun_st_meta_set(&f, "fedrun.round", "3");
	uint64_t one = 1, step = 9;
	fedrun_st_add(&f, "__server__.step", FEDRUN_U64, 1, &one, &step);
	for (uint32_t i = 0; i < l.n; i++)
		if (travels[i])
			fedrun_st_add(&f, l.t[i].name, FEDRUN_F32, l.t[i].ndim, l.t[i].shape,
				      p + l.t[i].offset);
	snprintf(path, sizeof path, "%s/final.safetensors", run);
	rc = fedrun_st_write(&f, path);
	fedrun_st_fini(&f);
	hf_labels_free(labels, nl);
	fedrun_arena_free(p);
	fedrun_layout_fini(&l);
	fedrun_layout_fini(&trav);
	return rc;
}

/* DIR's parameters are the fixture's, bit for bit; 0 or 1. */
static int compare(const char *fixture, const char *dir)
{
	struct fedrun_layout l;
	float *p;
	struct enc_cfg c;
	char path[1400];
	snprintf(path, sizeof path, "%s/model.safetensors", fixture);
	if (layout_load(path, "", &l, &p) < 0)
		return 1;
	memset(&c, 0, sizeof c);
	c.task = ENC_TASK_CLASSIFY;
	if (hf_read_config(dir, &c, NULL, NULL) < 0)
		return 1;
	float *q = fedrun_arena_alloc(l.total);
	int bad = hf_load_params(dir, &c, &l, q, NULL, NULL) < 0;
	for (uint32_t i = 0; !bad && i < l.n; i++)
		bad = memcmp(p + l.t[i].offset, q + l.t[i].offset, l.t[i].numel * 4) != 0;
	fedrun_arena_free(p);
	fedrun_arena_free(q);
	fedrun_layout_fini(&l);
	return bad;
}

START_TEST(test_export)
{
	make_tmpdir();
	ck_assert_msg(make_run(fx("distilbert-classify"), tmp("run")) == 0, "%s",
		      fedrun_error_message());
	sh("test -f %s/run/hf/frozen.safetensors && test -f %s/run/hf/fedrun.json", tmpdir, tmpdir);
	ck_assert_msg(hf_export_run(tmp("run"), NULL, tmp("out")) == 0, "%s", fedrun_error_message());
	ck_assert_int_eq(compare(fx("distilbert-classify"), tmp("out")), 0);
	sh("grep -q DistilBertForSequenceClassification %s/out/config.json", tmpdir);
	/* the run's hf/ written again (a resumed run) replaces the old */
	ck_assert_int_eq(make_run(fx("distilbert-classify"), tmp("run")), 0);
	sh("test -z \"$(ls -d %s/run/hf.* 2>/dev/null)\"", tmpdir);

	/* errors */
	ck_assert_int_eq(hf_export_run(tmp("run"), NULL, tmp("out")), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "out exists and is not empty"), "%s",
		      fedrun_error_message());
	ck_assert_int_eq(hf_export_run(tmpdir, NULL, tmp("o2")), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "not a run directory (no pipeline.json)"),
		      "%s", fedrun_error_message());
	sh("mkdir %s/r2 && echo {} >%s/r2/pipeline.json", tmpdir, tmpdir);
	ck_assert_int_eq(hf_export_run(tmp("r2"), NULL, tmp("o2")), FEDRUN_EINVAL);
	ck_assert_msg(strstr(fedrun_error_message(), "the run's model is not an encoder"), "%s",
		      fedrun_error_message());
	sh("cp -r %s/run/hf %s/r2/ && mkdir %s/r2/checkpoints && "
	   "cp %s/run/final.safetensors %s/r2/checkpoints/round-000002.safetensors", tmpdir, tmpdir,
	   tmpdir, tmpdir, tmpdir);
	ck_assert_int_eq(hf_export_run(tmp("r2"), NULL, tmp("o2")), FEDRUN_ENOENT);
	ck_assert_msg(strstr(fedrun_error_message(), "the run has not finished; its last "
			     "checkpoint is round 2 (--round 2 exports it)"), "%s",
		      fedrun_error_message());
	ck_assert_int_eq(hf_export_run(tmp("r2"), tmp("r2/checkpoints/round-000002.safetensors"),
				       tmp("o2")), 0);
	sh("head -c 3000 %s/run/final.safetensors >%s/r2/final.safetensors", tmpdir, tmpdir);
	ck_assert_int_eq(hf_export_run(tmp("r2"), NULL, tmp("o3")), FEDRUN_EFORMAT);
	ck_assert_msg(strstr(fedrun_error_message(), "truncated"), "%s", fedrun_error_message());
	/* a checkpoint fedrun did not write (no checksum) */
	ck_assert_int_eq(hf_export_run(tmp("r2"), fx("distilbert-classify/model.safetensors"),
				       tmp("o3")), FEDRUN_EFORMAT);
	ck_assert_msg(strstr(fedrun_error_message(), "not a checkpoint this fedrun wrote"), "%s",
		      fedrun_error_message());
	sh("test ! -e %s/o3 && test -z \"$(ls -d %s/o3.* 2>/dev/null)\"", tmpdir, tmpdir);
	remove_tmpdir();
}
END_TEST

/* ---- parity with the reference (net.c) ---- */

/* The expected tensor `name` of an expected file, F64 or I64, as doubles
 * (a new array); *n its elements. */
static double *expected(const struct fedrun_st_file *f, const char *name, uint64_t *n)
{
	const struct fedrun_st_tensor *t = fedrun_st_find(f, name);
	ck_assert_msg(t != NULL, "no %s in the expected outputs", name);
	ck_assert(t->dtype == FEDRUN_F64 || t->dtype == FEDRUN_I64);
	*n = t->bytes / 8;
	double *d = malloc(t->bytes);
	for (uint64_t i = 0; i < *n; i++) {
		if (t->dtype == FEDRUN_F64) {
			memcpy(&d[i], (const char *)t->data + 8 * i, 8);
		} else {
			int64_t v;
			memcpy(&v, (const char *)t->data + 8 * i, 8);
			d[i] = (double)v;
		}
	}
	return d;
}

/* got (B, T, w) against want (B, T, w) over the positions t < len[b]:
 * the normwise relative error (asserted < 1e-5), and the largest
 * elementwise difference, printed. */
static void compare_rows(const char *what, const float *got, const double *want, uint32_t B,
			 uint32_t T, uint64_t w, const int32_t *len)
{
	uint64_t n = 0;
	float *a = malloc((uint64_t)B * T * w * sizeof *a);
	double *r = malloc((uint64_t)B * T * w * sizeof *r), maxd = 0;
	for (uint32_t b = 0; b < B; b++)
		for (uint32_t t = 0; t < (len ? (uint32_t)len[b] : T); t++)
			for (uint64_t k = 0; k < w; k++, n++) {
				uint64_t at = ((uint64_t)b * T + t) * w + k;
				a[n] = got[at];
				r[n] = want[at];
				maxd = fmax(maxd, fabs((double)got[at] - want[at]));
			}
	double e = tu_err(a, r, n, 1e-30);
	printf("  %-40s normwise %.3g, max |diff| %.3g (%" PRIu64 " values)\n", what, e, maxd, n);
	ck_assert_msg(e < 1e-5, "%s: relative error %g", what, e);
	free(a);
	free(r);
}

START_TEST(test_parity)
{
	static const char *const tasks[] = {"", "-classify", "-tag", "-mlm"};
	const char *arch = _i / 4 ? "distilbert" : "bert";
	enum enc_task task = (enum enc_task)(_i % 4);
	char dir[1400], path[1400], what[128];
	snprintf(dir, sizeof dir, "%s/%s%s", fixtures, arch, tasks[task]);
	struct enc_cfg c;
	char **labels;
	uint32_t nl;
	memset(&c, 0, sizeof c);
	c.task = task;
	ck_assert_msg(hf_read_config(dir, &c, &labels, &nl) == 0, "%s", fedrun_error_message());
	hf_labels_free(labels, nl);
	c.labels = task == ENC_TASK_CLASSIFY || task == ENC_TASK_TAG ? nl : 0;
	struct fedrun_layout *l;
	ck_assert_msg(enc_layout(&c, &l) == 0, "%s", fedrun_error_message());
	float *p = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(enc_init(&c, l, 1, p), 0);
	uint8_t *loaded = calloc(l->n, 1);
	char *report;
	ck_assert_msg(hf_load_params(dir, &c, l, p, loaded, &report) == 0, "%s",
		      fedrun_error_message());
	ck_assert_msg(report == NULL, "%s", report);
	for (uint32_t i = 0; i < l->n; i++)
		ck_assert_msg(loaded[i], "%s: %s not loaded", dir, l->t[i].name);

	struct fedrun_st_file f;
	snprintf(path, sizeof path, "%s/%s-expected.safetensors", fixtures, arch);
	ck_assert_int_eq(fedrun_st_read(&f, path), 0);
	uint64_t n;
	double *ids = expected(&f, "input_ids", &n), *mask = expected(&f, "attention_mask", &n);
	uint32_t B = (uint32_t)fedrun_st_find(&f, "input_ids")->shape[0], T = (uint32_t)(n / B);
	int32_t *id32 = malloc(n * 4), *ty32 = malloc(n * 4), len[8] = {0};
	double *ty = c.arch == ENC_BERT ? expected(&f, "token_type_ids", &n) : NULL;
	for (uint64_t i = 0; i < n; i++) {
		id32[i] = (int32_t)ids[i];
		ty32[i] = ty ? (int32_t)ty[i] : 0;
		len[i / T] += mask[i] != 0;
	}
	struct enc_batch b = {.B = B, .T = T, .ids = id32, .len = len, .type_ids = ty ? ty32 : NULL};
	struct enc_work *w;
	ck_assert_msg(enc_work_create(&c, l, fedrun_backend_cpu(), &w) == 0, "%s",
		      fedrun_error_message());
	uint64_t V = task == ENC_TASK_MLM ? c.vocab : c.labels;
	float *hidden = malloc((uint64_t)(c.layers + 1) * B * T * c.dim * sizeof *hidden);
	float *pooled = malloc((uint64_t)B * c.dim * sizeof *pooled);
	float *logits = malloc((uint64_t)B * T * (V ? V : 1) * sizeof *logits);
	bool pool = c.arch == ENC_BERT && (task == ENC_TASK_BASE || task == ENC_TASK_CLASSIFY);
	ck_assert_msg(enc_forward(w, p, &b, hidden, pool ? pooled : NULL,
				  task != ENC_TASK_BASE ? logits : NULL) == 0,
		      "%s", fedrun_error_message());
	printf("%s:\n", dir);
	for (uint32_t k = 0; k <= c.layers; k++) {
		char name[32];
		snprintf(name, sizeof name, "hidden_states.%u", k);
		double *want = expected(&f, name, &n);
		snprintf(what, sizeof what, "%s%s %s", arch, tasks[task], name);
		compare_rows(what, hidden + (uint64_t)k * B * T * c.dim, want, B, T, c.dim, len);
		free(want);
	}
	if (pool) {
		double *want = expected(&f, "pooler_output", &n);
		snprintf(what, sizeof what, "%s%s pooler_output", arch, tasks[task]);
		compare_rows(what, pooled, want, B, 1, c.dim, NULL);
		free(want);
	}
	if (task != ENC_TASK_BASE) {
		static const char *const names[] = {"", "classify.logits", "tag.logits", "mlm.logits"};
		double *want = expected(&f, names[task], &n);
		snprintf(what, sizeof what, "%s%s %s", arch, tasks[task], names[task]);
		if (task == ENC_TASK_CLASSIFY)
			compare_rows(what, logits, want, B, 1, V, NULL);
		else
			compare_rows(what, logits, want, B, T, V, len);
		free(want);
	}
	free(hidden);
	free(pooled);
	free(logits);
	enc_work_destroy(w);
	free(ids);
	free(mask);
	free(ty);
	free(id32);
	free(ty32);
	fedrun_st_fini(&f);
	free(loaded);
	fedrun_arena_free(p);
	enc_layout_free(l);
}
END_TEST

/* The error fixtures through net.h's layout: the messages the issue asks. */
START_TEST(test_parity_errors)
{
	struct enc_cfg c;
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(hf_read_config(fx("bad-model-type"), &c, NULL, NULL), FEDRUN_EFORMAT);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "model_type \"roberta\": only bert "
				     "and distilbert are supported"));
	cfg_of(fx("bad-shape"), ENC_TASK_BASE, &c);
	struct fedrun_layout *l;
	ck_assert_int_eq(enc_layout(&c, &l), 0);
	float *p = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(hf_load_params(fx("bad-shape"), &c, l, p, NULL, NULL), FEDRUN_EFORMAT);
	ck_assert_msg(strstr(fedrun_error_message(), "tensor 'encoder.layer.0.intermediate.dense."
			     "weight': the model (config.json) has 11x8, the file's "
			     "'encoder.layer.0.intermediate.dense.weight' 10x8"),
		      "%s", fedrun_error_message());
	fedrun_arena_free(p);
	enc_layout_free(l);
}
END_TEST

/* net.h's layout with LoRA adapters: the adapters start from their
 * initialisation (reported), and a model written with them merged (B = 0
 * at init, then set) reloads into the plain layout. */
START_TEST(test_lora_layout)
{
	struct enc_cfg c;
	make_tmpdir();
	cfg_of(fx("bert-classify"), ENC_TASK_CLASSIFY, &c);
	c.labels = 3;
	c.lora_r = 2;
	c.lora_alpha = 4;
	c.lora_targets = ENC_LORA_Q | ENC_LORA_FFN1;
	struct fedrun_layout *l, *plain;
	ck_assert_int_eq(enc_layout(&c, &l), 0);
	float *p = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(enc_init(&c, l, 3, p), 0);
	char *report;
	ck_assert_int_eq(hf_load_params(fx("bert-classify"), &c, l, p, NULL, &report), 0);
	ck_assert_msg(report && strstr(report, "8 LoRA adapter tensors start from their "
				       "initialisation"), "%s", report);
	free(report);
	ck_assert_int_eq(hf_write_dir(tmp("out"), &c, l, p, fx("bert-classify/vocab.txt"), NULL,
				      NULL), 0);
	struct enc_cfg c0 = c;
	c0.lora_r = 0;
	c0.lora_alpha = 0;
	c0.lora_targets = 0;
	ck_assert_int_eq(enc_layout(&c0, &plain), 0);
	float *q = fedrun_arena_alloc(plain->total);
	ck_assert_int_eq(hf_load_params(tmp("out"), &c0, plain, q, NULL, &report), 0);
	ck_assert_ptr_null(report);
	for (uint32_t i = 0; i < plain->n; i++) {
		int64_t k = fedrun_layout_find(l, plain->t[i].name);
		ck_assert(k >= 0);
		ck_assert_mem_eq(q + plain->t[i].offset, p + l->t[k].offset, plain->t[i].numel * 4);
	}
	fedrun_arena_free(q);
	enc_layout_free(plain);
	fedrun_arena_free(p);
	enc_layout_free(l);
	remove_tmpdir();
}
END_TEST

static Suite *hf_suite(void)
{
	Suite *s = suite_create("encoder_hf");
	TCase *tc = tcase_create("hf");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_config);
	tcase_add_test(tc, test_load_names);
	tcase_add_test(tc, test_load_half);
	tcase_add_test(tc, test_load_errors);
	tcase_add_test(tc, test_load_shards);
	tcase_add_test(tc, test_load_tied);
	tcase_add_test(tc, test_write_dir);
	tcase_add_test(tc, test_write_lora);
	tcase_add_test(tc, test_export);
	suite_add_tcase(s, tc);
	TCase *pc = tcase_create("parity");
	tcase_set_timeout(pc, 120);
	tcase_add_loop_test(pc, test_parity, 0, 8); /* {bert, distilbert} x {base, classify, tag, mlm} */
	tcase_add_test(pc, test_parity_errors);
	tcase_add_test(pc, test_lora_layout);
	suite_add_tcase(s, pc);
	return s;
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	snprintf(fixtures, sizeof fixtures, "%s/tests/data/hf", top ? top : ".");
	if (argc == 4 && strcmp(argv[1], "make-run") == 0) {
		if (make_run(argv[2], argv[3]) != 0) {
			fprintf(stderr, "make-run: %s\n", fedrun_error_message());
			return 1;
		}
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "compare") == 0) {
		int bad = compare(argv[2], argv[3]);
		if (bad)
			fprintf(stderr, "compare: %s\n", fedrun_error_message());
		return bad;
	}
	SRunner *sr = srunner_create(hf_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
