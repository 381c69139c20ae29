/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun translate [OPTIONS] RUN_DIR|PIPELINE`: loads the model plugin of a
 * run's resolved pipeline with a checkpoint of the run, reads source
 * sentences on stdin (one a line) and writes exactly one translation line per
 * input line on stdout. Returns an exit status, never exits. */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/fedrun.h"
#include "commands.h"
#include "cmd_translate.h"
#include "run_model.h"

static void usage(FILE *fp)
{
	fputs("usage: fedrun translate [OPTIONS] RUN_DIR|PIPELINE.json\n"
	      "Translates standard input, one sentence a line, with a run's model;\n"
	      "writes one line per input line on standard output.\n"
	      "\n"
	      "  -c, --checkpoint FILE   parameters (default: RUN_DIR/final.safetensors)\n"
	      "  -e, --expert K|FILE     translate with client K's domain expert: the\n"
	      "                          mixture of the model and the private model and\n"
	      "                          gate of RUN_DIR/experts/client-K.safetensors (or\n"
	      "                          FILE), see the pipeline's expert section\n"
	      "  -b, --beam N            beam size, 1 = greedy\n"
	      "      --len-penalty A     length penalty: score / length^A\n"
	      "      --max-len-a A       maximum length = A * source length + B\n"
	      "      --max-len-b B\n"
	      "      --batch N           sentences decoded at once\n"
	      "      --long cut|refuse|keep  a line of more source tokens than the\n"
	      "                          model decodes (the transformer's max_len):\n"
	      "                          translate its first tokens with a warning (cut,\n"
	      "                          default), stop with an error (refuse), or\n"
	      "                          translate it whole, as evaluation does (keep)\n"
	      "      --max-line-bytes N  refuse a line longer than N bytes (default\n"
	      "                          1048576); memory stays bounded on any input\n"
	      "  -t, --threads N         threads the model may use (default 1)\n"
	      "      --backend NAME      where the model computes (cpu, cuda); default:\n"
	      "                          the backend the run's pipeline names\n"
	      "      --allow-plugin-paths  load the model plugin from the file the run's\n"
	      "                          pipeline names (its \"path\" key): runs its code\n"
	      "  -h, --help              this help\n"
	      "Defaults of the decoding options: the pipeline's model.decode section.\n",
	      fp);
}

static int parse_num(const char *opt, const char *arg, double lo, double hi, double *out)
{
	return run_model_parse_num("translate", opt, arg, lo, hi, out);
}

/* Decoding defaults: the pipeline's model.decode (the transformer's keys),
 * else fairseq-like values. */
static void decode_defaults(json_t *model, struct fedrun_decode_opts *d)
{
	*d = (struct fedrun_decode_opts){.size = sizeof *d, .beam = 4, .len_penalty = 1.0,
					 .max_len_a = 1.2, .max_len_b = 10, .batch = 32};
	json_t *dec = json_object_get(model, "decode"), *v;
	if (!json_is_object(dec))
		return;
	if (json_is_integer(v = json_object_get(dec, "beam")) && json_integer_value(v) >= 1)
		d->beam = (uint32_t)json_integer_value(v);
	if (json_is_number(v = json_object_get(dec, "len_penalty")))
		d->len_penalty = json_number_value(v);
	if (json_is_number(v = json_object_get(dec, "max_len_a")))
		d->max_len_a = json_number_value(v);
	if (json_is_number(v = json_object_get(dec, "max_len_b")))
		d->max_len_b = json_number_value(v);
	if (json_is_integer(v = json_object_get(dec, "batch")) && json_integer_value(v) >= 1)
		d->batch = (uint32_t)json_integer_value(v);
}

struct cli {
	const char *target, *checkpoint, *backend, *expert;
	double beam, len_penalty, max_len_a, max_len_b, batch, threads; /* NAN: not given */
	double max_line_bytes;
	uint32_t long_src; /* enum fedrun_long_src */
	bool allow_plugin_paths;
};

static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option longopts[] = {
		{"checkpoint", required_argument, NULL, 'c'}, {"beam", required_argument, NULL, 'b'},
		{"len-penalty", required_argument, NULL, 'L'}, {"max-len-a", required_argument, NULL, 'A'},
		{"max-len-b", required_argument, NULL, 'B'},  {"batch", required_argument, NULL, 'n'},
		{"threads", required_argument, NULL, 't'},    {"help", no_argument, NULL, 'h'},
		{"allow-plugin-paths", no_argument, NULL, 'P'}, {"backend", required_argument, NULL, 'E'},
		{"expert", required_argument, NULL, 'e'},
		{"long", required_argument, NULL, 'G'}, {"max-line-bytes", required_argument, NULL, 'M'},
		{NULL, 0, NULL, 0}};
	*c = (struct cli){.beam = NAN, .len_penalty = NAN, .max_len_a = NAN, .max_len_b = NAN,
			  .batch = NAN, .threads = 1, .max_line_bytes = 1 << 20,
			  .long_src = FEDRUN_LONG_CUT};
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "c:b:t:e:h", longopts, NULL)) != -1) {
		int bad = 0;
		switch (o) {
		case 'c': c->checkpoint = optarg; break;
		case 'e': c->expert = optarg; break;
		case 'b': bad = parse_num("--beam", optarg, 1, 1024, &c->beam); break;
		case 'L': bad = parse_num("--len-penalty", optarg, 0, 100, &c->len_penalty); break;
		case 'A': bad = parse_num("--max-len-a", optarg, 0, 1e6, &c->max_len_a); break;
		case 'B': bad = parse_num("--max-len-b", optarg, 0, 1e6, &c->max_len_b); break;
		case 'n': bad = parse_num("--batch", optarg, 1, 1e6, &c->batch); break;
		case 't': bad = parse_num("--threads", optarg, 1, 1024, &c->threads); break;
		case 'P': c->allow_plugin_paths = true; break;
		case 'E': c->backend = optarg; break;
		case 'M': bad = parse_num("--max-line-bytes", optarg, 1, 1 << 30, &c->max_line_bytes); break;
		case 'G':
			if (!strcmp(optarg, "cut") || !strcmp(optarg, "refuse") ||
			    !strcmp(optarg, "keep")) {
				c->long_src = optarg[0] == 'c'	 ? FEDRUN_LONG_CUT
					      : optarg[0] == 'r' ? FEDRUN_LONG_REFUSE
								 : FEDRUN_LONG_KEEP;
				break;
			}
			fprintf(stderr,
				"fedrun translate: --long: expected cut, refuse or keep, got '%s'\n",
				optarg);
			return -1;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -1;
		}
		if (bad)
			return -1;
		const double iv = o == 'b' ? c->beam : o == 'n' ? c->batch : o == 't' ? c->threads : c->max_line_bytes;
		if ((o == 'b' || o == 'n' || o == 't' || o == 'M') && floor(iv) != iv) {
			fprintf(stderr, "fedrun translate: -%c: expected an integer, got '%s'\n", o, optarg);
			return -1;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return -1;
	}
	c->target = argv[optind];
	return 0;
}

/* A domain expert (--expert): the private model and its gate. */
struct expert {
	float *params, *gate; /* NULL: no expert */
};

/* Translates `n` lines (lineno[i] the input line number of lines[i]);
 * empty lines stay empty without reaching the model. Newlines in a
 * translation become spaces: one output line per input line. A line the
 * model cut gets a warning, one it refused names its line. */
/* What translate_batch needs besides the lines (its ctx). */
struct batch_ctx {
	const struct fedrun_model_ops *ops;
	void *model, *worker;
	const float *params;
	const struct expert *ex;
	const struct fedrun_decode_opts *d;
};

static int translate_batch(void *ctx, char **lines, const uint64_t *lineno, uint32_t n)
{
	const struct batch_ctx *b = ctx;
	const struct fedrun_model_ops *ops = b->ops;
	const struct expert *ex = b->ex;
	void *model = b->model, *worker = b->worker;
	const float *params = b->params;
	const struct fedrun_decode_opts *dopts = b->d;
	const char **src = calloc(n ? n : 1, sizeof *src);
	char **out = calloc(n ? n : 1, sizeof *out);
	uint32_t *pos = calloc(n ? n : 1, sizeof *pos);
	uint32_t *ntok = calloc(n ? n : 1, sizeof *ntok), max_src = 0;
	struct fedrun_decode_opts dd = *dopts, *d = &dd;
	dd.src_tokens = ntok;
	dd.max_src = &max_src;
	int rc = 0;
	if (!src || !out || !pos || !ntok) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto done;
	}
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++)
		if (lines[i][0]) {
			pos[m] = i;
			src[m++] = lines[i];
		}
	if (m > 0) {
		rc = ex->params ? ops->gate_translate(model, worker, params, ex->params, ex->gate, d,
						      src, m, out)
				: ops->translate(model, worker, params, d, src, m, out);
		for (uint32_t j = 0; j < m && max_src > 0; j++) {
			if (ntok[j] <= max_src)
				continue;
			if (rc < 0) {
				fedrun_error_wrap(rc, "standard input, line %" PRIu64 ": ",
						  lineno[pos[j]]);
				goto done;
			}
			fprintf(stderr,
				"fedrun translate: warning: standard input, line %" PRIu64
				": %u source tokens, cut to the model's %u (--long refuse to stop)\n",
				lineno[pos[j]], ntok[j], max_src);
		}
		if (rc < 0) {
			fedrun_error_wrap(rc, "standard input, lines %" PRIu64 "-%" PRIu64 ": ",
					  lineno[0], lineno[n - 1]);
			goto done;
		}
	}
	for (uint32_t i = 0, j = 0; i < n; i++) {
		if (j < m && pos[j] == i) {
			for (char *p = out[j] ? out[j] : ""; *p; p++)
				if (*p == '\n' || *p == '\r')
					*p = ' ';
			fputs(out[j] ? out[j] : "", stdout);
			j++;
		}
		fputc('\n', stdout);
	}
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = fedrun_error(FEDRUN_EIO, "standard output: %s", strerror(errno));
done:
	if (out)
		for (uint32_t i = 0; i < n; i++)
			free(out[i]);
	free(out);
	free(src);
	free(pos);
	free(ntok);
	return rc;
}

/* --expert K|FILE: RUN_DIR/experts/client-K.safetensors when arg is a
 * client number, else the file; its layout tensors are the private model,
 * "__expert.gate" the gate (the model's gate_size floats). */
static int expert_load(const char *arg, const char *rundir, const struct fedrun_model_ops *ops,
		       void *model, const struct fedrun_plugin *desc,
		       const struct fedrun_layout *l, struct expert *ex)
{
	if (!FEDRUN_MODEL_HAS_EXPERT(ops))
		return fedrun_error(FEDRUN_EUNSUPPORTED,
				    "--expert: model '%s' (ABI %u.%u) has no domain-expert gate ops",
				    desc->name, desc->abi_major, desc->abi_minor);
	char path[4096];
	size_t digits = strspn(arg, "0123456789");
	if (digits > 0 && digits < 10 && arg[digits] == 0)
		snprintf(path, sizeof path, "%s/experts/client-%s.safetensors", rundir, arg);
	else
		snprintf(path, sizeof path, "%s", arg);
	struct fedrun_st_file f;
	int rc = fedrun_st_read(&f, path);
	if (rc < 0)
		return fedrun_error_wrap(rc, "--expert %s: ", arg);
	const uint32_t G = ops->gate_size(model);
	const struct fedrun_st_tensor *t = fedrun_st_find(&f, "__expert.gate");
	if (!t || t->dtype != FEDRUN_F32 || t->ndim != 1 || t->shape[0] != G)
		rc = fedrun_error(FEDRUN_EINVAL,
				  "--expert: %s has no F32 tensor \"__expert.gate\" of %u floats (the "
				  "gate of model '%s'): not a domain expert of this model",
				  path, G, desc->name);
	if (rc == 0 && (!(ex->params = fedrun_arena_alloc(l->total)) ||
			!(ex->gate = malloc(G * sizeof *ex->gate))))
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0) {
		memcpy(ex->gate, t->data, G * sizeof *ex->gate);
		if ((rc = fedrun_st_load_layout(&f, l, ex->params, "__")) < 0)
			fedrun_error_wrap(rc, "--expert: %s does not fit model '%s': ", path,
					  desc->name);
	}
	fedrun_st_fini(&f);
	return rc;
}

int fedrun_translate_read(FILE *in, size_t max_bytes, uint32_t batch,
			  int (*emit)(void *ctx, char **lines, const uint64_t *lineno, uint32_t n),
			  void *ctx)
{
	char **lines = calloc(batch ? batch : 1, sizeof *lines), *line = NULL;
	uint64_t *linenos = calloc(batch ? batch : 1, sizeof *linenos), lineno = 0;
	size_t cap = 0, len = 0;
	uint32_t n = 0;
	int rc = lines && linenos ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory"), got = 0;
	/* Line by line, each line bounded and checked as it is read: memory
	 * stays that of one batch whatever comes in. */
	while (rc == 0 &&
	       (got = fedrun_read_line(in, "standard input", lineno + 1, max_bytes, &line, &cap, &len)) == 1) {
		lineno++;
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = 0;
		size_t bad;
		if (!fedrun_utf8_valid(line, len, &bad)) {
			rc = fedrun_error(FEDRUN_EINVAL,
					  "standard input, line %" PRIu64 ": invalid UTF-8 at byte %zu",
					  lineno, bad + 1);
			break;
		}
		if (!(lines[n] = strdup(line))) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		linenos[n] = lineno;
		if (++n == batch) {
			rc = emit(ctx, lines, linenos, n);
			for (uint32_t i = 0; i < n; i++) {
				free(lines[i]);
				lines[i] = NULL;
			}
			n = 0;
		}
	}
	if (rc == 0 && got < 0) {
		rc = got;
		if (len > max_bytes)
			fedrun_error_wrap(rc, "--max-line-bytes: ");
	}
	if (rc == 0 && n > 0)
		rc = emit(ctx, lines, linenos, n);
	for (uint32_t i = 0; lines && i < n; i++)
		free(lines[i]);
	free(lines);
	free(linenos);
	free(line);
	return rc;
}

static int run(const struct cli *c)
{
	struct run_model rm;
	struct expert ex = {NULL, NULL};
	struct fedrun_decode_opts d = {.size = sizeof d, .batch = 1};
	int rc = run_model_open(&rm, c->target, c->checkpoint, c->backend, c->allow_plugin_paths,
				(uint32_t)c->threads);
	if (rc < 0)
		goto out;
	const struct fedrun_plugin *desc = rm.desc;
	if (!FEDRUN_MODEL_HAS(rm.ops, translate)) {
		rc = fedrun_error(FEDRUN_EUNSUPPORTED,
				  "model '%s' (%s, ABI %u.%u) cannot translate: it has no translate op",
				  desc->name, rm.loaded_from, desc->abi_major, desc->abi_minor);
		goto out;
	}
	if ((rc = run_model_create(&rm, false)) < 0)
		goto out;
	if (c->expert &&
	    (rc = expert_load(c->expert, rm.rundir, rm.ops, rm.model, desc, rm.layout, &ex)) < 0)
		goto out;

	decode_defaults(rm.msec, &d);
	if (!isnan(c->beam))
		d.beam = (uint32_t)c->beam;
	if (!isnan(c->len_penalty))
		d.len_penalty = c->len_penalty;
	if (!isnan(c->max_len_a))
		d.max_len_a = c->max_len_a;
	if (!isnan(c->max_len_b))
		d.max_len_b = c->max_len_b;
	if (!isnan(c->batch))
		d.batch = (uint32_t)c->batch;
	d.long_src = c->long_src;

	struct batch_ctx bc = {rm.ops, rm.model, rm.worker, rm.params, &ex, &d};
	rc = fedrun_translate_read(stdin, (size_t)c->max_line_bytes, d.batch, translate_batch, &bc);
out:
	run_model_close(&rm);
	fedrun_arena_free(ex.params);
	free(ex.gate);
	return rc;
}

int fedrun_cmd_translate(int argc, char **argv)
{
	struct cli c;
	int a = parse_args(argc, argv, &c);
	if (a != 0)
		return a > 0 ? 0 : 2;
	int rc = run(&c);
	if (rc < 0)
		return fedrun_cli_fail("translate", rc);
	return 0;
}
