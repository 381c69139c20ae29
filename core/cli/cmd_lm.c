/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun score [OPTIONS] RUN_DIR < TEXT` and `fedrun sample [OPTIONS]
 * RUN_DIR`: a language model's run (gru-lm) measured on new text, or made to
 * write some, through the model's score and sample ops (ABI 1.9). Standard
 * input is read as fedrun translate reads it (fedrun_translate_read).
 * Return exit statuses, never exit. */
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
#include "cmd_lm.h"
#include "cmd_translate.h"
#include "run_model.h"

static void usage(FILE *fp, bool score)
{
	if (score)
		fputs("usage: fedrun score [OPTIONS] RUN_DIR < TEXT\n"
		      "Scores standard input, one sentence a line, with a language model's run:\n"
		      "prints the predicted tokens, those outside the vocabulary, the\n"
		      "cross-entropy (nats per token) and the perplexity, computed as the run\n"
		      "evaluates its test split.\n"
		      "\n"
		      "      --per-line          each line on its own: prints its log-probability\n"
		      "                          (natural log) and its tokens, one line per line\n",
		      fp);
	else
		fputs("usage: fedrun sample [OPTIONS] RUN_DIR\n"
		      "Writes text drawn from a language model's run on standard output.\n"
		      "\n"
		      "  -n, --tokens N          tokens to draw, <eos> (a newline) included\n"
		      "                          (default 100)\n"
		      "  -T, --temperature T     draw from softmax(logits / T) (default 1);\n"
		      "                          0: always the most probable token\n"
		      "  -s, --seed S            the draws' seed (default 0): the same seed, the\n"
		      "                          same text\n"
		      "  -p, --prompt TEXT       read TEXT (one line) first and continue it\n",
		      fp);
	fputs("  -c, --checkpoint FILE   parameters (default: RUN_DIR/final.safetensors)\n", fp);
	if (score)
		fputs("      --max-line-bytes N  refuse a line longer than N bytes (default\n"
		      "                          1048576)\n",
		      fp);
	fputs("  -t, --threads N         threads the model may use (default 1)\n"
	      "      --backend NAME      where the model computes (cpu, cuda); default:\n"
	      "                          the backend the run's pipeline names\n"
	      "      --allow-plugin-paths  load the model plugin from the file the run's\n"
	      "                          pipeline names (its \"path\" key): runs its code\n"
	      "  -h, --help              this help\n",
	      fp);
}

struct cli {
	bool score, per_line, allow_plugin_paths;
	const char *target, *checkpoint, *backend, *prompt;
	double threads, max_line_bytes, tokens, temperature, seed;
};

static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option longopts[] = {
	    {"checkpoint", required_argument, NULL, 'c'},
	    {"threads", required_argument, NULL, 't'},
	    {"backend", required_argument, NULL, 'E'},
	    {"allow-plugin-paths", no_argument, NULL, 'P'},
	    {"help", no_argument, NULL, 'h'},
	    {"per-line", no_argument, NULL, 'L'},
	    {"max-line-bytes", required_argument, NULL, 'M'},
	    {"tokens", required_argument, NULL, 'n'},
	    {"temperature", required_argument, NULL, 'T'},
	    {"seed", required_argument, NULL, 's'},
	    {"prompt", required_argument, NULL, 'p'},
	    {NULL, 0, NULL, 0}};
	const char *cmd = c->score ? "score" : "sample";
	c->threads = 1;
	c->max_line_bytes = 1 << 20;
	c->tokens = 100;
	c->temperature = 1;
	c->seed = 0;
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, c->score ? "c:t:h" : "c:t:n:T:s:p:h", longopts, NULL)) !=
	       -1) {
		int bad = 0;
		bool integer = false;
		/* score's options and sample's are not each other's */
		if (c->score ? strchr("nTsp", o) != NULL : o == 'L' || o == 'M')
			o = '?';
		switch (o) {
		case 'c': c->checkpoint = optarg; break;
		case 'E': c->backend = optarg; break;
		case 'P': c->allow_plugin_paths = true; break;
		case 'L': c->per_line = true; break;
		case 'p': c->prompt = optarg; break;
		case 't':
			integer = true;
			bad = run_model_parse_num(cmd, "--threads", optarg, 1, 1024, &c->threads);
			break;
		case 'M':
			integer = true;
			bad = run_model_parse_num(cmd, "--max-line-bytes", optarg, 1, 1 << 30,
						  &c->max_line_bytes);
			break;
		case 'n':
			integer = true;
			bad = run_model_parse_num(cmd, "--tokens", optarg, 0, 1e8, &c->tokens);
			break;
		case 'T':
			bad = run_model_parse_num(cmd, "--temperature", optarg, 0, 1e6,
						  &c->temperature);
			break;
		case 's':
			integer = true;
			bad = run_model_parse_num(cmd, "--seed", optarg, 0, 9007199254740992.0,
						  &c->seed);
			break;
		case 'h': usage(stdout, c->score); return 1;
		default: usage(stderr, c->score); return -1;
		}
		if (bad)
			return -1;
		double v = o == 't' ? c->threads : o == 'M' ? c->max_line_bytes
					       : o == 'n' ? c->tokens : c->seed;
		if (integer && floor(v) != v) {
			fprintf(stderr, "fedrun %s: -%c: expected an integer, got '%s'\n", cmd, o,
				optarg);
			return -1;
		}
	}
	if (optind != argc - 1) {
		usage(stderr, c->score);
		return -1;
	}
	c->target = argv[optind];
	return 0;
}

/* The lines of standard input, kept (whole-text scoring) or scored a batch
 * at a time (--per-line). */
struct lines {
	char **v;
	uint32_t n, cap;
	const struct run_model *rm;
	bool per_line;
	uint64_t tokens, oov;
	double logprob;
};

static int print_per_line(struct lines *L, char **lines, const uint64_t *lineno, uint32_t n)
{
	const struct run_model *rm = L->rm;
	double *lp = calloc(n, sizeof *lp);
	uint64_t *nt = calloc(n, sizeof *nt);
	struct fedrun_lm_score sc = {.size = sizeof sc, .line_logprob = lp, .line_tokens = nt};
	int rc = lp && nt ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0)
		rc = rm->ops->score(rm->model, rm->worker, rm->params, (const char *const *)lines, n,
				    &sc);
	if (rc < 0)
		fedrun_error_wrap(rc, "standard input, lines %" PRIu64 "-%" PRIu64 ": ", lineno[0],
				  lineno[n - 1]);
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		printf("%.17g\t%" PRIu64 "\n", lp[i], nt[i]);
	if (rc == 0) {
		L->tokens += sc.tokens;
		L->oov += sc.oov;
		L->logprob -= sc.loss * (double)sc.tokens;
		if (fflush(stdout) != 0 || ferror(stdout))
			rc = fedrun_error(FEDRUN_EIO, "standard output: %s", strerror(errno));
	}
	free(lp);
	free(nt);
	return rc;
}

static int take_lines(void *ctx, char **lines, const uint64_t *lineno, uint32_t n)
{
	struct lines *L = ctx;
	if (L->per_line)
		return print_per_line(L, lines, lineno, n);
	if (L->n + n > L->cap) {
		uint32_t cap = L->cap ? 2 * L->cap : 1024;
		while (cap < L->n + n)
			cap *= 2;
		char **v = realloc(L->v, cap * sizeof *v);
		if (!v)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		L->v = v;
		L->cap = cap;
	}
	for (uint32_t i = 0; i < n; i++) {
		L->v[L->n++] = lines[i];
		lines[i] = NULL; /* ours now */
	}
	return 0;
}

static int score(const struct cli *c, const struct run_model *rm)
{
	struct lines L = {.rm = rm, .per_line = c->per_line};
	int rc = fedrun_translate_read(stdin, (size_t)c->max_line_bytes, 1024, take_lines, &L);
	if (rc == 0 && !c->per_line) {
		struct fedrun_lm_score sc = {.size = sizeof sc};
		rc = rm->ops->score(rm->model, rm->worker, rm->params, (const char *const *)L.v, L.n,
				    &sc);
		if (rc < 0)
			fedrun_error_wrap(rc, "standard input: ");
		else
			printf("tokens\t%" PRIu64 "\noov\t%" PRIu64 "\ncross_entropy\t%.17g\n"
			       "perplexity\t%.17g\n",
			       sc.tokens, sc.oov, sc.loss, exp(sc.loss));
	} else if (rc == 0) {
		/* the totals, where they do not mix with the lines */
		fprintf(stderr,
			"fedrun score: %" PRIu64 " tokens, %" PRIu64 " outside the vocabulary, "
			"log-probability %.17g\n",
			L.tokens, L.oov, L.logprob);
	}
	if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
		rc = fedrun_error(FEDRUN_EIO, "standard output: %s", strerror(errno));
	for (uint32_t i = 0; i < L.n; i++)
		free(L.v[i]);
	free(L.v);
	return rc;
}

static int sample(const struct cli *c, const struct run_model *rm)
{
	size_t bad;
	if (c->prompt && !fedrun_utf8_valid(c->prompt, strlen(c->prompt), &bad))
		return fedrun_error(FEDRUN_EINVAL, "--prompt: invalid UTF-8 at byte %zu", bad + 1);
	if (c->prompt && strpbrk(c->prompt, "\n\r"))
		return fedrun_error(FEDRUN_EINVAL, "--prompt: one line, without a newline");
	struct fedrun_sample_opts so = {.size = sizeof so,
					.tokens = (uint32_t)c->tokens,
					.temperature = c->temperature,
					.seed = (uint64_t)c->seed,
					.prompt = c->prompt};
	char *text = NULL;
	int rc = rm->ops->sample(rm->model, rm->worker, rm->params, &so, &text);
	if (rc == 0 && text)
		fputs(text, stdout);
	free(text);
	if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
		rc = fedrun_error(FEDRUN_EIO, "standard output: %s", strerror(errno));
	return rc;
}

static int run(const struct cli *c)
{
	struct run_model rm;
	int rc = run_model_open(&rm, c->target, c->checkpoint, c->backend, c->allow_plugin_paths,
				(uint32_t)c->threads);
	const struct fedrun_plugin *d = rm.desc;
	if (rc == 0 && !(c->score ? FEDRUN_MODEL_HAS(rm.ops, score)
				  : FEDRUN_MODEL_HAS(rm.ops, sample)))
		rc = fedrun_error(FEDRUN_EINVAL,
				  "%s: model '%s' (%s, ABI %u.%u) is not a language model that "
				  "fedrun %s can use: it has no %s op (gru-lm has)",
				  rm.pipe_path, d->name, rm.loaded_from, d->abi_major, d->abi_minor,
				  c->score ? "score" : "sample", c->score ? "score" : "sample");
	if (rc == 0)
		rc = run_model_create(&rm, true);
	if (rc == 0)
		rc = c->score ? score(c, &rm) : sample(c, &rm);
	run_model_close(&rm);
	return rc;
}

static int command(int argc, char **argv, bool is_score)
{
	struct cli c = {.score = is_score};
	int a = parse_args(argc, argv, &c);
	if (a != 0)
		return a > 0 ? 0 : 2;
	int rc = run(&c);
	if (rc < 0)
		return fedrun_cli_fail(is_score ? "score" : "sample", rc);
	return 0;
}

int fedrun_cmd_score(int argc, char **argv)
{
	return command(argc, argv, true);
}

int fedrun_cmd_sample(int argc, char **argv)
{
	return command(argc, argv, false);
}
