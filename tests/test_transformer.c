/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the transformer model plugin, loaded as the engine loads it
 * (tests/fakehost.c), and of its batching (batch.c, compiled in):
 *  - options: presets fill the sizes and write them back, overrides win,
 *    unknown keys, a dim that heads do not divide, clients together with
 *    synthetic, and bad tokenizer settings are errors naming the key;
 *  - data: misaligned source/target files are an error naming both files
 *    and their line counts; a missing file names the client and file; a
 *    client without "train" has n_k = 0 but is evaluated; max_len drops
 *    long training pairs; the words vocabulary is written to the run
 *    directory when the host has one;
 *  - batching: every pair in exactly one batch, the token budget
 *    respected (rows x longest side, a longer pair alone), batches of
 *    similar length, the padded arrays laid out as the network expects;
 *  - training: the batch order is a function of (seed, round, client):
 *    two runs give the same bits, another round other bits; evaluation
 *    gives loss/nll/ppl everywhere, bleu/chrf only where eval_bleu says,
 *    and a trained copy model decodes its inputs. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/fedrun.h"
#include "fakehost.h"
#include "transformer.h"

static struct fedrun_registry *reg;

static void teardown(void)
{
	fedrun_registry_destroy(reg);
	reg = NULL;
}

static const struct fedrun_model_ops *ops(void)
{
	const struct fedrun_plugin *p = fakehost_plugin(&reg, FEDRUN_KIND_MODEL, "transformer");
	return p->ops;
}

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_transformer.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *name, const char *text)
{
	char path[160];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(text, fp);
	fclose(fp);
}

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);
	ck_assert_msg(j != NULL, "bad JSON in the test: %s", err.text);
	return j;
}

/* create() with the given sections; returns the code, *m the model. */
static int try_create(struct fakehost *fh, json_t *mc, json_t *dc, void **m)
{
	*m = NULL;
	return ops()->create(&fh->host, mc, dc, m);
}

static const char *synth_data =
    "{\"synthetic\": {\"task\": \"copy\", \"clients\": 2, \"vocab\": 6, \"min_len\": 2, "
    "\"max_len\": 5, \"train\": 40, \"valid\": 8, \"test\": 8}}";

static void expect_error(const char *model, const char *data, const char *needle)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	json_t *mc = parse(model), *dc = data ? parse(data) : NULL;
	void *m;
	int rc = try_create(&fh, mc, dc, &m);
	ck_assert_msg(rc < 0, "create accepted %s / %s", model, data ? data : "null");
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(fedrun_error_message(), needle), "message \"%s\" lacks \"%s\"",
		      fedrun_error_message(), needle);
	json_decref(mc);
	json_decref(dc);
}

START_TEST(test_presets)
{
	static const struct {
		const char *preset;
		int64_t enc, dim, heads, ffn;
	} want[] = {{"tiny", 2, 64, 4, 256}, {"small", 3, 256, 4, 1024}, {"base", 6, 512, 8, 2048}};
	for (size_t i = 0; i < 3; i++) {
		struct fakehost fh;
		fakehost_init(&fh, 1);
		char mj[160];
		snprintf(mj, sizeof mj,
			 "{\"preset\": \"%s\", \"tokenizer\": {\"type\": \"words\"}}",
			 want[i].preset);
		json_t *mc = parse(mj), *dc = parse(synth_data);
		void *m;
		ck_assert_msg(try_create(&fh, mc, dc, &m) == 0, "%s", fedrun_error_message());
		ck_assert_int_eq(json_integer_value(json_object_get(mc, "encoder_layers")),
				 want[i].enc);
		ck_assert_int_eq(json_integer_value(json_object_get(mc, "decoder_layers")),
				 want[i].enc);
		ck_assert_int_eq(json_integer_value(json_object_get(mc, "dim")), want[i].dim);
		ck_assert_int_eq(json_integer_value(json_object_get(mc, "heads")), want[i].heads);
		ck_assert_int_eq(json_integer_value(json_object_get(mc, "ffn")), want[i].ffn);
		/* the decode defaults are written back too */
		ck_assert_int_eq(
		    json_integer_value(json_object_get(json_object_get(mc, "decode"), "beam")), 4);
		const struct fedrun_layout *l = ops()->layout(m);
		/* tie "all": one embedding matrix, no output matrix */
		ck_assert_int_lt(fedrun_layout_find(l, "encoder.embed.weight"), 0);
		ck_assert_int_ge(fedrun_layout_find(l, "decoder.embed.weight"), 0);
		for (uint32_t t = 0; t < l->n; t++)
			ck_assert(!strncmp(l->t[t].name, "encoder.", 8) ||
				  !strncmp(l->t[t].name, "decoder.", 8));
		ck_assert_uint_eq(ops()->num_clients(m), 2);
		ck_assert_uint_eq(ops()->client_size(m, 0), 40);
		ops()->destroy(m);
		json_decref(mc);
		json_decref(dc);
	}
	/* overrides win over the preset; untied has three matrices */
	struct fakehost fh;
	fakehost_init(&fh, 1);
	json_t *mc = parse("{\"preset\": \"base\", \"encoder_layers\": 1, \"decoder_layers\": 1, "
			   "\"dim\": 32, \"heads\": 2, \"ffn\": 16, \"tie_embeddings\": \"none\", "
			   "\"tokenizer\": {\"type\": \"words\"}}"),
	       *dc = parse(synth_data);
	void *m;
	ck_assert_msg(try_create(&fh, mc, dc, &m) == 0, "%s", fedrun_error_message());
	const struct fedrun_layout *l = ops()->layout(m);
	int64_t e = fedrun_layout_find(l, "encoder.embed.weight");
	ck_assert_int_ge(e, 0);
	ck_assert_uint_eq(l->t[e].shape[1], 32);
	ck_assert_int_ge(fedrun_layout_find(l, "decoder.output.weight"), 0);
	ck_assert_int_lt(fedrun_layout_find(l, "encoder.layers.1.ffn.fc1.weight"), 0);
	ops()->destroy(m);
	json_decref(mc);
	json_decref(dc);
}
END_TEST

START_TEST(test_option_errors)
{
	expect_error("{\"preset\": \"tiny\", \"colour\": 1}", synth_data, "colour");
	expect_error("{\"preset\": \"huge\"}", synth_data, "model.preset");
	expect_error("{\"preset\": \"tiny\", \"dim\": 30, \"heads\": 4}", synth_data,
		     "multiple of heads");
	expect_error("{\"preset\": \"tiny\", \"dropout\": 1}", synth_data, "model.dropout");
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"bytes\"}}", synth_data,
		     "model.tokenizer.type");
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\", \"vocab\": "
		     "\"/nonexistent/vocab.txt\"}}",
		     synth_data, "/nonexistent/vocab.txt");
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\", \"split\": "
		     "\"commas\"}}",
		     synth_data, "model.tokenizer.split");
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"sentencepiece\", "
		     "\"split\": \"punctuation\"}}",
		     synth_data, "model.tokenizer.split");
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\", \"unknown\": "
		     "\"characters\"}}",
		     synth_data, "model.tokenizer.unknown");
	expect_error("{\"preset\": \"tiny\", \"decode\": {\"beam\": 0}}", synth_data,
		     "model.decode.beam");
	expect_error("{\"preset\": \"tiny\", \"bleu\": {\"tokenize\": \"zh\"}}", synth_data,
		     "model.bleu.tokenize");
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\"}}",
		     "{\"synthetic\": {}, \"clients\": []}", "exactly one of");
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\"}}",
		     "{\"synthetic\": {\"min_len\": 5, \"max_len\": 3}}", "min_len");
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\"}}",
		     "{\"clients\": [{\"name\": \"a\", \"train\": \"x\"}]}", "\"src\" and \"tgt\"");
	/* without data the tokenizer cannot be trained */
	expect_error("{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\"}}", NULL,
		     "\"vocab\"");
#ifndef HAVE_SENTENCEPIECE
	expect_error("{\"preset\": \"tiny\"}", synth_data, "built without");
#endif
}
END_TEST

static char *data_json(const char *clients)
{
	static char buf[1024];
	snprintf(buf, sizeof buf,
		 "{\"src\": \"en\", \"tgt\": \"de\", \"dir\": \"%s\", "
		 "\"clients\": %s}",
		 dir, clients);
	return buf;
}

START_TEST(test_data_errors)
{
	make_dir();
	write_file("a.en", "one two\nthree\nfour five six\n");
	write_file("a.de", "eins zwei\ndrei\n");
	write_file("b.en", "x y\n");
	write_file("b.de", "x y\n");
	const char *words = "{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\"}}";
	expect_error(words, data_json("[{\"name\": \"c\", \"train\": \"a\"}]"), "has 3 lines but");
	expect_error(words, data_json("[{\"name\": \"c\", \"train\": \"a\"}]"), "/a.de has 2");
	expect_error(words, data_json("[{\"name\": \"c\", \"train\": \"b\", \"test\": \"zz\"}]"),
		     "data.clients[0].test");
	expect_error(words, data_json("[{\"name\": \"c\", \"train\": \"b\", \"test\": \"zz\"}]"),
		     "zz.en");
	expect_error(words,
		     data_json("[{\"name\": \"c\", \"train\": \"b\"}, {\"name\": \"c\", \"train\": "
			       "\"b\"}]"),
		     "also the name");
	expect_error(words, data_json("[{\"train\": \"b\"}]"), "data.clients[0].name");
	expect_error(words, data_json("[3]"), "data.clients[0]");
	remove_dir();
}
END_TEST

START_TEST(test_clients_and_maxlen)
{
	make_dir();
	write_file("t.en", "a b\na b c d e f g\nc\n");
	write_file("t.de", "A B\nA B C\nC\n");
	write_file("v.en", "a\nb c\n");
	write_file("v.de", "A\nB C\n");
	struct fakehost fh;
	fakehost_init(&fh, 1);
	json_t *mc = parse("{\"preset\": \"tiny\", \"max_len\": 4, \"eval_bleu\": \"all\", "
			   "\"decode\": {\"beam\": 2}, \"tokenizer\": {\"type\": \"words\"}}");
	json_t *dc = parse(data_json("[{\"name\": \"tr\", \"train\": \"t\", \"valid\": \"v\"}, "
				     "{\"name\": \"ev\", \"valid\": \"v\", \"test\": \"v\"}]"));
	void *m;
	ck_assert_msg(try_create(&fh, mc, dc, &m) == 0, "%s", fedrun_error_message());
	ck_assert_uint_eq(ops()->num_clients(m), 2);
	ck_assert_uint_eq(ops()->client_size(m, 0), 2); /* the 7-word pair dropped */
	ck_assert_uint_eq(ops()->client_size(m, 1), 0);
	/* vocabulary: 4 specials + a..g, A..C */
	ck_assert_uint_eq(((struct tfm_model *)m)->cfg.vocab, 4 + 7 + 3);
	const struct fedrun_layout *l = ops()->layout(m);
	float *p = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(ops()->init_params(m, 1, p), 0);
	struct fedrun_eval ev;
	ck_assert_int_eq(ops()->evaluate(m, NULL, p, FEDRUN_SPLIT_VALID, 1, &ev), 0);
	ck_assert_str_eq(ev.m[0].name, "loss");
	bool bleu = false, ppl = false;
	for (uint32_t i = 0; i < ev.n; i++) {
		bleu |= !strcmp(ev.m[i].name, "bleu");
		ppl |= !strcmp(ev.m[i].name, "ppl");
		ck_assert(isfinite(ev.m[i].value));
	}
	ck_assert(bleu && ppl);
	/* client 0 has no test split; the union has */
	ck_assert_int_eq(ops()->evaluate(m, NULL, p, FEDRUN_SPLIT_TEST, 0, &ev), FEDRUN_ENOENT);
	ck_assert_int_eq(ops()->evaluate(m, NULL, p, FEDRUN_SPLIT_TEST, FEDRUN_ALL_CLIENTS, &ev),
			 0);
	fedrun_arena_free(p);
	ops()->destroy(m);
	json_decref(mc);
	json_decref(dc);
	remove_dir();
}
END_TEST

/* ---- batching --------------------------------------------------------- */

static void random_split(struct tfm_split *s, uint32_t n, uint32_t maxlen, uint64_t seed)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, 0, 0);
	memset(s, 0, sizeof *s);
	s->n = n;
	s->src = calloc(n, sizeof *s->src);
	s->tgt = calloc(n, sizeof *s->tgt);
	s->slen = calloc(n, sizeof *s->slen);
	s->tlen = calloc(n, sizeof *s->tlen);
	for (uint32_t i = 0; i < n; i++) {
		s->slen[i] = (uint32_t)fedrun_rng_below(&r, maxlen + 1);
		s->tlen[i] = (uint32_t)fedrun_rng_below(&r, maxlen + 1);
		s->src[i] = malloc((s->slen[i] + 1) * sizeof(int32_t));
		s->tgt[i] = malloc((s->tlen[i] + 1) * sizeof(int32_t));
		for (uint32_t t = 0; t < s->slen[i]; t++)
			s->src[i][t] = 4 + (int32_t)fedrun_rng_below(&r, 10);
		for (uint32_t t = 0; t < s->tlen[i]; t++)
			s->tgt[i][t] = 4 + (int32_t)fedrun_rng_below(&r, 10);
	}
	ck_assert_int_eq(tfm_batch_sort(s), 0);
}

static void free_split(struct tfm_split *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		free(s->src[i]);
		free(s->tgt[i]);
	}
	free(s->src);
	free(s->tgt);
	free(s->slen);
	free(s->tlen);
	free(s->order);
}

START_TEST(test_batching)
{
	static const uint32_t budgets[] = {1, 7, 40, 100, 1000, 100000};
	for (uint32_t trial = 0; trial < 4; trial++) {
		struct tfm_split s;
		random_split(&s, 50 + 37 * trial, 3 + 9 * trial, trial);
		/* the order is sorted by longest side */
		for (uint32_t i = 1; i < s.n; i++)
			ck_assert_uint_le(tfm_pair_len(&s, s.order[i - 1]),
					  tfm_pair_len(&s, s.order[i]));
		for (size_t bi = 0; bi < sizeof budgets / sizeof budgets[0]; bi++) {
			uint32_t *start, nb, budget = budgets[bi];
			ck_assert_int_eq(tfm_batch_plan(&s, budget, &start, &nb), 0);
			uint32_t *seen = calloc(s.n, sizeof *seen);
			ck_assert_uint_eq(start[0], 0);
			ck_assert_uint_eq(start[nb], s.n);
			for (uint32_t b = 0; b < nb; b++) {
				uint32_t rows = start[b + 1] - start[b], longest = 0;
				ck_assert_uint_ge(rows, 1);
				for (uint32_t i = start[b]; i < start[b + 1]; i++) {
					seen[s.order[i]]++;
					uint32_t l = tfm_pair_len(&s, s.order[i]);
					longest = l > longest ? l : longest;
				}
				ck_assert_msg(rows == 1 || (uint64_t)rows * longest <= budget,
					      "batch %u: %u rows x %u > %u", b, rows, longest,
					      budget);
				/* greedy: the next pair would not have fit */
				if (b + 1 < nb) {
					uint32_t l = tfm_pair_len(&s, s.order[start[b + 1]]);
					uint32_t lg = l > longest ? l : longest;
					ck_assert_uint_gt((uint64_t)(rows + 1) * lg, budget);
				}
			}
			for (uint32_t i = 0; i < s.n; i++)
				ck_assert_msg(seen[i] == 1, "pair %u in %u batches", i, seen[i]);
			free(seen);
			free(start);
		}
		/* the padded arrays */
		struct tfm_model m = {.cfg = {.pad_id = 2, .bos_id = 3, .eos_id = 1}};
		struct tfm_batchbuf bb = {0};
		struct tfm_batch b;
		uint32_t idx[5] = {0, 4, 2, 3, 1};
		ck_assert_int_eq(tfm_batch_fill(&m, &s, idx, 5, &bb, &b), 0);
		ck_assert_uint_eq(b.B, 5);
		for (uint32_t r = 0; r < 5; r++) {
			uint32_t i = idx[r];
			ck_assert_int_eq(b.src_len[r], (int32_t)s.slen[i] + 1);
			ck_assert_int_eq(b.tgt_len[r], (int32_t)s.tlen[i] + 1);
			ck_assert_uint_ge(b.Ts, s.slen[i] + 1);
			ck_assert_uint_ge(b.Tt, s.tlen[i] + 1);
			for (uint32_t t = 0; t < b.Ts; t++)
				ck_assert_int_eq(b.src[r * b.Ts + t], t < s.slen[i]    ? s.src[i][t]
								      : t == s.slen[i] ? 1
										       : 2);
			ck_assert_int_eq(b.tgt_in[r * b.Tt], 3);
			for (uint32_t t = 0; t < b.Tt; t++) {
				int32_t out = t < s.tlen[i] ? s.tgt[i][t] : t == s.tlen[i] ? 1 : -1;
				ck_assert_int_eq(b.tgt_out[r * b.Tt + t], out);
				if (t + 1 < b.Tt)
					ck_assert_int_eq(b.tgt_in[r * b.Tt + t + 1],
							 t < s.tlen[i] ? s.tgt[i][t] : 2);
			}
		}
		tfm_batchbuf_free(&bb);
		free_split(&s);
	}
}
END_TEST

/* ---- training --------------------------------------------------------- */

static void *synth_model(struct fakehost *fh, const char *task, json_t **mcp)
{
	json_t *mc = parse("{\"preset\": \"tiny\", \"dim\": 32, \"heads\": 2, \"ffn\": 64, "
			   "\"encoder_layers\": 1, \"decoder_layers\": 1, \"dropout\": 0.1, "
			   "\"label_smoothing\": 0, \"decode\": {\"beam\": 1}, "
			   "\"lr_schedule\": \"inverse_sqrt\", \"warmup\": 20, "
			   "\"tokenizer\": {\"type\": \"words\"}}");
	char dj[256];
	snprintf(dj, sizeof dj,
		 "{\"synthetic\": {\"task\": \"%s\", \"clients\": 2, \"vocab\": 6, "
		 "\"min_len\": 2, \"max_len\": 5, \"train\": 300, \"valid\": 20, \"test\": 20}}",
		 task);
	json_t *dc = parse(dj);
	void *m;
	ck_assert_msg(try_create(fh, mc, dc, &m) == 0, "%s", fedrun_error_message());
	json_decref(dc);
	if (mcp)
		*mcp = mc;
	else
		json_decref(mc);
	return m;
}

static void train(void *m, void *w, float *p, uint32_t round, uint32_t client, uint64_t steps,
		  struct fedrun_train_stats *st)
{
	const struct fedrun_layout *l = ops()->layout(m);
	struct fedrun_optim_cfg oc = {
	    .kind = FEDRUN_OPTIM_ADAM, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-8};
	float *state = fedrun_arena_alloc(fedrun_optim_state_floats(&oc, l->total));
	uint64_t step = 0;
	struct fedrun_train_args a = {.size = sizeof a,
				      .round = round,
				      .client = client,
				      .seed = 7,
				      .steps = steps,
				      .batch = 120,
				      .optim = &oc,
				      .optim_state = state,
				      .optim_step = &step};
	ck_assert_msg(ops()->train(m, w, &a, p, st) == 0, "%s", fedrun_error_message());
	ck_assert_uint_eq(step, steps);
	fedrun_arena_free(state);
}

START_TEST(test_train_deterministic)
{
	struct fakehost fh;
	fakehost_init(&fh, 3);
	void *m = synth_model(&fh, "reverse", NULL);
	const struct fedrun_layout *l = ops()->layout(m);
	const uint64_t n = l->total;
	float *p0 = fedrun_arena_alloc(n), *q[3];
	ck_assert_int_eq(ops()->init_params(m, 1, p0), 0);
	void *w;
	ck_assert_int_eq(ops()->worker_create(m, &w), 0);
	struct fedrun_train_stats st[3];
	for (int k = 0; k < 3; k++) {
		q[k] = fedrun_arena_alloc(n);
		memcpy(q[k], p0, n * sizeof(float));
		/* k = 1 with a fresh worker: no state carried in the worker */
		void *wk = w;
		if (k == 1)
			ck_assert_int_eq(ops()->worker_create(m, &wk), 0);
		train(m, wk, q[k], k == 2 ? 2 : 1, 1, 6, &st[k]);
		if (k == 1)
			ops()->worker_destroy(m, wk);
	}
	ck_assert(memcmp(q[0], q[1], n * sizeof(float)) == 0);
	ck_assert(memcmp(q[0], q[2], n * sizeof(float)) != 0); /* another round */
	ck_assert(st[0].loss == st[1].loss && st[0].samples == st[1].samples);
	ck_assert(st[0].samples > 0);
	for (int k = 0; k < 3; k++)
		fedrun_arena_free(q[k]);
	fedrun_arena_free(p0);
	ops()->worker_destroy(m, w);
	ops()->destroy(m);
}
END_TEST

/* The schedule reads the host's sched_step (ABI 1.2): the first update of
 * a call uses step sched_step + 1, whatever the optimizer's own count;
 * a host that predates the field (a smaller args.size) gets the
 * optimizer's count + 1. The logged "lr" is that first update's rate. */
START_TEST(test_sched_step)
{
	struct fakehost fh;
	fakehost_init(&fh, 3);
	void *m = synth_model(&fh, "copy", NULL);
	const struct fedrun_layout *l = ops()->layout(m);
	float *p = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(ops()->init_params(m, 1, p), 0);
	struct fedrun_optim_cfg oc = {
	    .kind = FEDRUN_OPTIM_ADAM, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-8};
	float *state = fedrun_arena_alloc(fedrun_optim_state_floats(&oc, l->total));
	const uint64_t sched[] = {0, 7, 19, 20, 500};
	for (int i = 0; i < 5; i++) {
		for (int old = 0; old < 2; old++) {
			memset(state, 0, fedrun_optim_state_floats(&oc, l->total) * sizeof(float));
			uint64_t step = old ? sched[i] : 3; /* the optimizer's own count */
			struct fedrun_train_args a = {
			    .size = old ? (uint32_t)offsetof(struct fedrun_train_args, sched_step)
					: (uint32_t)sizeof a,
			    .round = 1, .client = 0, .seed = 7, .steps = 2, .batch = 120,
			    .optim = &oc, .optim_state = state, .optim_step = &step,
			    .sched_step = old ? 12345 : sched[i]};
			struct fedrun_train_stats st;
			ck_assert_msg(ops()->train(m, NULL, &a, p, &st) == 0, "%s", fedrun_error_message());
			double want = fedrun_lr_inverse_sqrt(sched[i] + 1, 0.01, 20, 0);
			double got = fakehost_metric(&fh, "lr", 0, NULL);
			ck_assert_msg(got == want, "sched_step %llu (%s host): lr %.17g, schedule %.17g",
				      (unsigned long long)sched[i], old ? "1.1" : "1.2", got, want);
			ck_assert_uint_eq(step, (old ? sched[i] : 3) + 2); /* two updates counted */
		}
	}
	fedrun_arena_free(state);
	fedrun_arena_free(p);
	ops()->destroy(m);
}
END_TEST

static const char *test_run_dir(void *ctx)
{
	(void)ctx;
	return dir;
}

START_TEST(test_learns_copy)
{
	struct fakehost fh;
	fakehost_init(&fh, 3);
	make_dir();
	fh.host.run_dir = test_run_dir;
	json_t *mc;
	void *m = synth_model(&fh, "copy", &mc);
	/* the vocabulary went to the run directory, its name (relative to
	 * the directory, which may be moved) into the section */
	char vocab[128];
	snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(mc, "tokenizer"), "vocab")),
	    "vocab.txt");
	ck_assert_int_eq(access(vocab, R_OK), 0);
	const struct fedrun_layout *l = ops()->layout(m);
	float *p = fedrun_arena_alloc(l->total);
	ck_assert_int_eq(ops()->init_params(m, 1, p), 0);
	void *w;
	ck_assert_int_eq(ops()->worker_create(m, &w), 0);
	struct fedrun_eval e0, e1;
	ck_assert_int_eq(ops()->evaluate(m, w, p, FEDRUN_SPLIT_TEST, 0, &e0), 0);
	struct fedrun_train_stats st;
	train(m, w, p, 1, 0, 500, &st);
	ck_assert_int_eq(ops()->evaluate(m, w, p, FEDRUN_SPLIT_TEST, 0, &e1), 0);
	fprintf(stderr, "copy: test bleu %g -> %g\n", e0.m[4].value, e1.m[4].value);
	/* loss, nll, ppl, tokens, bleu, chrf; ppl = exp(nll) */
	ck_assert_uint_eq(e1.n, 6);
	ck_assert_str_eq(e1.m[1].name, "nll");
	ck_assert_double_eq_tol(e1.m[2].value, exp(e1.m[1].value), 1e-9);
	ck_assert_str_eq(e1.m[4].name, "bleu");
	ck_assert_msg(e1.m[0].value < 0.5 * e0.m[0].value, "loss %g -> %g", e0.m[0].value,
		      e1.m[0].value);
	ck_assert_msg(e1.m[4].value > e0.m[4].value + 20, "bleu %g -> %g", e0.m[4].value,
		      e1.m[4].value);
	/* no BLEU on the validation split with eval_bleu "test" */
	ck_assert_int_eq(ops()->evaluate(m, w, p, FEDRUN_SPLIT_VALID, 0, &e1), 0);
	ck_assert_uint_eq(e1.n, 4);
	ck_assert_str_eq(ops()->client_name(m, 1), "client1");
	const uint64_t total = l->total;
	ops()->worker_destroy(m, w);
	ops()->destroy(m);

	/* As fedrun translate does it: the resolved model section, no data
	 * (so no clients, and the saved vocabulary, found relative to the run
	 * directory), the trained params. */
	fh.host.run_dir = NULL;
	fedrun_opts_set_base_dir(dir);
	void *t;
	ck_assert_msg(try_create(&fh, mc, NULL, &t) == 0, "%s", fedrun_error_message());
	fedrun_opts_set_base_dir(NULL);
	ck_assert_uint_eq(ops()->num_clients(t), 0);
	ck_assert_uint_eq(ops()->layout(t)->total, total);
	const char *src[3] = {"w1 w2 w3", "w4 w0 w5 w2 w2", "w3 w3 w1"};
	char *out[3];
	struct fedrun_decode_opts beam2 = {.size = sizeof beam2,
					   .beam = 2,
					   .len_penalty = 1.0,
					   .max_len_a = 1.2,
					   .max_len_b = 10,
					   .batch = 2};
	for (int k = 0; k < 2; k++) {
		ck_assert_msg(ops()->translate(t, NULL, p, k ? &beam2 : NULL, src, 3, out) == 0,
			      "%s", fedrun_error_message());
		for (int i = 0; i < 3; i++) {
			fprintf(stderr, "translate (%s): \"%s\" -> \"%s\"\n",
				k ? "beam 2" : "default", src[i], out[i]);
			ck_assert_str_eq(out[i], src[i]);
			free(out[i]);
		}
	}
	ops()->destroy(t);
	json_decref(mc);
	fedrun_arena_free(p);
	remove_dir();
}
END_TEST

static char *slurp(const char *path)
{
	char *data;
	size_t n;
	ck_assert_msg(fedrun_read_file(path, &data, &n) == 0, "%s", fedrun_error_message());
	return data;
}

/* A tokenizer file the pipeline gives is copied into the run directory,
 * byte for byte, and the section names the copy relative to it; created
 * again (a resumed run), the copy is left as it is; without a run
 * directory (validate, translate) the file is read where it is. */
START_TEST(test_tokenizer_in_run_dir)
{
	make_dir();
	char src[160], copy[160];
	snprintf(src, sizeof src, "%s/given.txt", dir);
	write_file("given.txt", "w0\t9\nw1\t8\nw2\t7\nw3\t6\nw4\t5\nw5\t4\n");
	char *want = slurp(src);
	/* the run directory (test_run_dir gives `dir`): dir/run */
	size_t dl = strlen(dir);
	ck_assert_uint_lt(dl + 5, sizeof dir);
	memcpy(dir + dl, "/run", 5);
	ck_assert_int_eq(fedrun_mkdir_p(dir), 0);
	snprintf(copy, sizeof copy, "%s/vocab.txt", dir);
	struct fakehost fh;
	fakehost_init(&fh, 1);
	fh.host.run_dir = test_run_dir;
	char mj[320];
	snprintf(mj, sizeof mj,
		 "{\"preset\": \"tiny\", \"tokenizer\": {\"type\": \"words\", \"vocab\": \"%s\"}}",
		 src);
	for (int k = 0; k < 2; k++) {
		json_t *mc = parse(mj), *dc = parse(synth_data);
		void *m;
		ck_assert_msg(try_create(&fh, mc, dc, &m) == 0, "%s", fedrun_error_message());
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_object_get(mc, "tokenizer"), "vocab")),
		    "vocab.txt");
		char *got = slurp(copy);
		ck_assert_str_eq(got, want);
		free(got);
		ops()->destroy(m);
		json_decref(mc);
		json_decref(dc);
	}
	/* no run directory: the given file, read where it is */
	fh.host.run_dir = NULL;
	unlink(copy);
	json_t *mc = parse(mj);
	void *m;
	ck_assert_msg(try_create(&fh, mc, NULL, &m) == 0, "%s", fedrun_error_message());
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(mc, "tokenizer"), "vocab")), src);
	ck_assert_int_ne(access(copy, F_OK), 0);
	ops()->destroy(m);
	json_decref(mc);
	free(want);
	dir[dl] = 0;
	remove_dir();
}
END_TEST

static Suite *transformer_suite(void)
{
	Suite *s = suite_create("transformer");
	TCase *tc = tcase_create("plugin");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_presets);
	tcase_add_test(tc, test_option_errors);
	tcase_add_test(tc, test_data_errors);
	tcase_add_test(tc, test_clients_and_maxlen);
	tcase_add_test(tc, test_batching);
	tcase_add_test(tc, test_train_deterministic);
	tcase_add_test(tc, test_sched_step);
	tcase_add_test(tc, test_learns_copy);
	tcase_add_test(tc, test_tokenizer_in_run_dir);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(transformer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
