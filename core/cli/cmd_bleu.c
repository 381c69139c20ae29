/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun bleu [OPTIONS] REF HYP`: reads one segment per line, scores the
 * hypotheses with BLEU and chrF through libfedrun and prints sacreBLEU's text
 * output (signature included). With --paired-bs, `fedrun bleu --paired-bs
 * REF HYP_A HYP_B` compares two systems by paired bootstrap resampling.
 * Returns an exit status, never exits. */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "cmd_bleu.h"

#define EXIT_INPUT 1 /* unreadable or inconsistent input */
#define EXIT_USAGE 2 /* bad command line */

/* sacreBLEU warns when this many hypotheses end in " ." (tokenized). */
#define TOKENIZED_WARN_LINES 100

enum { METRIC_BLEU = 1, METRIC_CHRF = 2 };

/* One input file split into lines, each NUL-terminated in place. */
struct text_file {
	const char *path;
	char *buf;   /* owned */
	char **line; /* owned array; entries point into buf */
	size_t n;
};

struct bleu_cli {
	struct fedrun_bleu_opts bleu;
	struct fedrun_chrf_opts chrf;
	unsigned metrics;
	bool sentence, score_only, short_sig;
	int width;
	const char **ref_paths;
	size_t nref_paths;
	/* --paired-bs: HYP is system A, hyp_b_path system B */
	bool paired;
	const char *hyp_b_path;
	size_t bs_samples;
	uint64_t bs_seed;
};

static void usage(FILE *fp)
{
	fputs("usage: fedrun bleu [OPTIONS] REF HYP\n"
	      "       fedrun bleu --paired-bs [OPTIONS] REF HYP_A HYP_B\n"
	      "Scores HYP against REF (one segment per line) with BLEU and chrF,\n"
	      "exactly as sacreBLEU " FEDRUN_SACREBLEU_VERSION " does. HYP may be '-' for stdin.\n"
	      "With --paired-bs, compares HYP_A with HYP_B: the scores, A - B and their\n"
	      "95% intervals by paired bootstrap resampling (sacreBLEU's --paired-bs).\n"
	      "\n"
	      "  -r, --ref FILE          one more reference file (repeatable)\n"
	      "  -m, --metric LIST       bleu, chrf or bleu,chrf (default: both)\n"
	      "  -t, --tokenize NAME     BLEU tokenizer: 13a (default), intl, none\n"
	      "  -l, --lowercase         case-insensitive scores\n"
	      "      --smooth METHOD     BLEU smoothing: exp (default), floor, add-k, none\n"
	      "      --smooth-value X    value for floor (0.1) and add-k (1)\n"
	      "  -s, --sentence          one score per segment (BLEU with effective order)\n"
	      "  -w, --width N           decimals printed (default 1)\n"
	      "  -b, --score-only        print the scores only\n"
	      "      --short             short signatures\n"
	      "      --paired-bs         paired bootstrap of HYP_A against HYP_B\n"
	      "      --paired-bs-n N     resamples (default 1000)\n"
	      "      --bs-seed S         seed of the resamples (default 12345)\n"
	      "  -h, --help              this help\n",
	      fp);
}

static void file_fini(struct text_file *f)
{
	free(f->buf);
	free(f->line);
	memset(f, 0, sizeof *f);
}

/* Reads a file as sacreBLEU does (UTF-8, lines split on "\n" only, each
 * line right-stripped of whitespace). Messages name the file and line. */
static int file_read(struct text_file *f, const char *path)
{
	size_t len, cap = 0;
	memset(f, 0, sizeof *f);
	f->path = strcmp(path, "-") ? path : "<stdin>";
	int rc =
	    strcmp(path, "-") ? fedrun_read_file(path, &f->buf, &len) : fedrun_read_text_stream(stdin, "standard input", &f->buf, &len);
	if (rc)
		return rc;
	for (size_t i = 0; i < len;) {
		char *nl = memchr(f->buf + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - f->buf) : len;
		size_t bad;
		if (f->n == cap) {
			cap = cap ? 2 * cap : 256;
			char **p = realloc(f->line, cap * sizeof p[0]);
			if (!p)
				return fedrun_error(FEDRUN_ENOMEM, "out of memory reading '%s'",
						    f->path);
			f->line = p;
		}
		char *line = f->buf + i;
		if (memchr(line, '\0', end - i))
			return fedrun_error(FEDRUN_EINVAL, "%s:%zu: contains a NUL byte", f->path,
					    f->n + 1);
		if (!fedrun_utf8_valid(line, end - i, &bad))
			return fedrun_error(FEDRUN_EINVAL, "%s:%zu: invalid UTF-8 at byte %zu",
					    f->path, f->n + 1, bad + 1);
		line[fedrun_utf8_rstrip(line, end - i)] = '\0';
		f->line[f->n++] = line;
		i = end + 1;
	}
	return 0;
}

static int parse_metrics(const char *arg, unsigned *metrics)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "bleu"))
			*metrics |= METRIC_BLEU;
		else if (!strcmp(tok, "chrf"))
			*metrics |= METRIC_CHRF;
		else
			rc = fedrun_error(FEDRUN_EINVAL,
					  "unknown metric '%s': expected bleu or chrf", tok);
	}
	if (!rc && !*metrics)
		rc = fedrun_error(FEDRUN_EINVAL, "no metric in '%s'", arg);
	free(copy);
	return rc;
}

static int parse_number(const char *arg, const char *what, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= lo && v <= hi))
		return fedrun_error(FEDRUN_EINVAL, "%s: expected a number in [%g, %g], got '%s'",
				    what, lo, hi, arg);
	*out = v;
	return 0;
}

/* An unsigned decimal integer in [lo, hi]. */
static int parse_uint(const char *arg, const char *what, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = arg[0] >= '0' && arg[0] <= '9' ? strtoull(arg, &end, 10) : 0;
	if (arg[0] < '0' || arg[0] > '9' || errno || *end || v < lo || v > hi)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: expected an integer in [%" PRIu64 ", %" PRIu64
				    "], got '%s'",
				    what, lo, hi, arg);
	*out = (uint64_t)v;
	return 0;
}

static int add_ref_path(struct bleu_cli *cli, const char *path)
{
	const char **p = realloc(cli->ref_paths, (cli->nref_paths + 1) * sizeof p[0]);
	if (!p)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	p[cli->nref_paths++] = path;
	cli->ref_paths = p;
	return 0;
}

/* Parses the command line; returns 0, EXIT_USAGE, or -1 after --help. */
static int parse_args(struct bleu_cli *cli, int argc, char **argv, const char **hyp_path)
{
	enum {
		OPT_SMOOTH = 256,
		OPT_SMOOTH_VALUE,
		OPT_SHORT,
		OPT_PAIRED_BS,
		OPT_PAIRED_BS_N,
		OPT_BS_SEED
	};
	static const struct option longopts[] = {
	    {"ref", required_argument, NULL, 'r'},
	    {"metric", required_argument, NULL, 'm'},
	    {"tokenize", required_argument, NULL, 't'},
	    {"lowercase", no_argument, NULL, 'l'},
	    {"smooth", required_argument, NULL, OPT_SMOOTH},
	    {"smooth-value", required_argument, NULL, OPT_SMOOTH_VALUE},
	    {"sentence", no_argument, NULL, 's'},
	    {"width", required_argument, NULL, 'w'},
	    {"score-only", no_argument, NULL, 'b'},
	    {"short", no_argument, NULL, OPT_SHORT},
	    {"paired-bs", no_argument, NULL, OPT_PAIRED_BS},
	    {"paired-bs-n", required_argument, NULL, OPT_PAIRED_BS_N},
	    {"bs-seed", required_argument, NULL, OPT_BS_SEED},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char **extra = NULL;
	size_t nextra = 0;
	int rc = 0, c;
	double v;
	uint64_t u;
	bool samples_set = false, seed_set = false;

	/* getopt keeps global state: 0 makes GNU getopt start afresh, so
	 * that the command can run more than once in one process. */
	optind = 0;
	opterr = 0;
	while (!rc && (c = getopt_long(argc, argv, ":r:m:t:lsw:bh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': {
			const char **p = realloc(extra, (nextra + 1) * sizeof p[0]);
			if (!p) {
				rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
				break;
			}
			extra = p;
			extra[nextra++] = optarg;
			break;
		}
		case 'm':
			rc = parse_metrics(optarg, &cli->metrics);
			break;
		case 't':
			rc = fedrun_bleu_tokenizer_parse(optarg, &cli->bleu.tokenize);
			break;
		case 'l':
			cli->bleu.lowercase = true;
			cli->chrf.lowercase = true;
			break;
		case OPT_SMOOTH:
			rc = fedrun_bleu_smooth_parse(optarg, &cli->bleu.smooth);
			break;
		case OPT_SMOOTH_VALUE:
			rc =
			    parse_number(optarg, "--smooth-value", 0, 1e9, &cli->bleu.smooth_value);
			break;
		case 's':
			cli->sentence = true;
			break;
		case 'w':
			rc = parse_number(optarg, "--width", 0, 20, &v);
			if (!rc && v != (int)v)
				rc = fedrun_error(FEDRUN_EINVAL,
						  "--width: expected an integer, got '%s'", optarg);
			cli->width = (int)v;
			break;
		case 'b':
			cli->score_only = true;
			break;
		case OPT_SHORT:
			cli->short_sig = true;
			break;
		case OPT_PAIRED_BS:
			cli->paired = true;
			break;
		case OPT_PAIRED_BS_N:
			/* the resample number is Philox's 32-bit round counter */
			rc = parse_uint(optarg, "--paired-bs-n", 1, UINT32_MAX, &u);
			cli->bs_samples = (size_t)u;
			samples_set = true;
			break;
		case OPT_BS_SEED:
			rc = parse_uint(optarg, "--bs-seed", 0, UINT64_MAX, &cli->bs_seed);
			seed_set = true;
			break;
		case 'h':
			usage(stdout);
			free(extra);
			return -1;
		case ':':
			rc = fedrun_error(FEDRUN_EINVAL, "option '%s' needs a value",
					  argv[optind - 1]);
			break;
		default:
			rc = fedrun_error(FEDRUN_EINVAL, "unknown option '%s'", argv[optind - 1]);
			break;
		}
	}
	if (!rc && !cli->paired && (samples_set || seed_set))
		rc = fedrun_error(FEDRUN_EINVAL, "%s needs --paired-bs",
				  samples_set ? "--paired-bs-n" : "--bs-seed");
	if (!rc && cli->paired && cli->sentence)
		rc = fedrun_error(
		    FEDRUN_EINVAL,
		    "--paired-bs compares corpus scores: it cannot go with --sentence");
	if (!rc && !cli->paired && argc - optind != 2)
		rc = fedrun_error(FEDRUN_EINVAL,
				  "expected REF and HYP files, got %d file argument%s",
				  argc - optind, argc - optind == 1 ? "" : "s");
	if (!rc && cli->paired && argc - optind != 3)
		rc = fedrun_error(FEDRUN_EINVAL,
				  "--paired-bs: expected REF, HYP_A and HYP_B files, got %d file "
				  "argument%s",
				  argc - optind, argc - optind == 1 ? "" : "s");
	if (!rc) {
		size_t dashes = !strcmp(argv[optind], "-") + !strcmp(argv[optind + 1], "-");
		if (cli->paired)
			dashes += !strcmp(argv[optind + 2], "-");
		for (size_t k = 0; k < nextra; k++)
			dashes += !strcmp(extra[k], "-");
		if (dashes > 1)
			rc = fedrun_error(FEDRUN_EINVAL,
					  "standard input ('-') can be read only once");
	}
	if (!rc) {
		rc = add_ref_path(cli, argv[optind]);
		for (size_t k = 0; k < nextra && !rc; k++)
			rc = add_ref_path(cli, extra[k]);
		*hyp_path = argv[optind + 1];
		if (cli->paired)
			cli->hyp_b_path = argv[optind + 2];
	}
	free(extra);
	if (!cli->metrics)
		cli->metrics = METRIC_BLEU | METRIC_CHRF;
	if (rc) {
		fprintf(stderr, "fedrun bleu: %s\n", fedrun_error_message());
		fputs("Try 'fedrun bleu --help'.\n", stderr);
		return EXIT_USAGE;
	}
	return 0;
}

/* The line's score part ("38.2") for --score-only. */
static const char *score_part(const char *line)
{
	const char *eq = strstr(line, " = ");
	if (!eq)
		return line;
	eq += 3;
	static char buf[64];
	size_t n = strcspn(eq, " ");
	if (n >= sizeof buf)
		n = sizeof buf - 1;
	memcpy(buf, eq, n);
	buf[n] = '\0';
	return buf;
}

/* sacreBLEU's print_single_results for text: the part before " = " of each
 * line is right-aligned so that the '=' signs line up. */
static void print_aligned(char lines[][FEDRUN_BLEU_LINE_MAX], size_t n)
{
	int w = 0;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(lines[i], '=');
		int len = eq ? (int)(eq - lines[i]) - 1 : 0;
		if (len > w)
			w = len;
	}
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(lines[i], '=');
		int len = eq ? (int)(eq - lines[i]) - 1 : 0;
		if (!eq || n == 1)
			printf("%s\n", lines[i]);
		else
			printf("%*s%.*s%s\n", w - len, "", len, lines[i], lines[i] + len);
	}
}

static int score_sentences(const struct bleu_cli *cli, const struct text_file *hyp,
			   const struct text_file *refs, size_t nrefs, const char **seg_refs)
{
	char line[FEDRUN_BLEU_LINE_MAX];
	struct fedrun_bleu_opts bopts = cli->bleu;
	/* sacreBLEU's --sentence-level turns effective order on */
	bopts.effective_order = true;
	for (size_t i = 0; i < hyp->n; i++) {
		int rc = 0;
		for (size_t r = 0; r < nrefs; r++)
			seg_refs[r] = refs[r].line[i];
		if (cli->metrics & METRIC_BLEU) {
			struct fedrun_bleu_score s;
			rc = fedrun_bleu_sentence_score(&bopts, hyp->line[i], nrefs, seg_refs, &s);
			if (!rc)
				rc = fedrun_bleu_format(&bopts, &s, cli->width, cli->short_sig,
							line, sizeof line);
			if (!rc)
				printf("%s\n", cli->score_only ? score_part(line) : line);
		}
		if (!rc && (cli->metrics & METRIC_CHRF)) {
			struct fedrun_chrf_score s;
			rc = fedrun_chrf_sentence_score(&cli->chrf, hyp->line[i], nrefs, seg_refs,
							&s);
			if (!rc)
				rc = fedrun_chrf_format(&cli->chrf, &s, cli->width, cli->short_sig,
							line, sizeof line);
			if (!rc)
				printf("%s\n", cli->score_only ? score_part(line) : line);
		}
		if (rc)
			return fedrun_error_wrap(rc, "%s:%zu: ", hyp->path, i + 1);
	}
	return 0;
}

static int score_corpus(const struct bleu_cli *cli, const struct text_file *hyp,
			const struct text_file *refs, size_t nrefs)
{
	char lines[2][FEDRUN_BLEU_LINE_MAX];
	size_t n = 0;
	int rc = 0;
	const char *const **streams = calloc(nrefs, sizeof streams[0]);
	if (!streams)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (size_t r = 0; r < nrefs; r++)
		streams[r] = (const char *const *)refs[r].line;
	const char *const *hyps = (const char *const *)hyp->line;
	if (cli->metrics & METRIC_BLEU) {
		struct fedrun_bleu_score s;
		rc = fedrun_bleu_corpus_score(&cli->bleu, hyp->n, hyps, nrefs, streams, &s);
		if (!rc)
			rc = fedrun_bleu_format(&cli->bleu, &s, cli->width, cli->short_sig,
						lines[n], sizeof lines[n]);
		n += !rc;
	}
	if (!rc && (cli->metrics & METRIC_CHRF)) {
		struct fedrun_chrf_score s;
		rc = fedrun_chrf_corpus_score(&cli->chrf, hyp->n, hyps, nrefs, streams, &s);
		if (!rc)
			rc = fedrun_chrf_format(&cli->chrf, &s, cli->width, cli->short_sig,
						lines[n], sizeof lines[n]);
		n += !rc;
	}
	free(streams);
	if (rc)
		return rc;
	if (cli->score_only) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", score_part(lines[i]));
	} else {
		print_aligned(lines, n);
	}
	return 0;
}

/* sacreBLEU's signature of a paired test: bs and seed follow nrefs
 * ("nrefs:1|bs:1000|seed:12345|case:..."; short "#:1|bs:1000|rs:12345|..."). */
static int paired_signature(const struct bleu_cli *cli, const char *sig, char *buf, size_t size)
{
	const char *bar = strchr(sig, '|');
	int len = bar ? (int)(bar - sig) : (int)strlen(sig);
	int m = snprintf(buf, size, "%.*s|bs:%zu|%s:%" PRIu64 "%s", len, sig, cli->bs_samples,
			 cli->short_sig ? "rs" : "seed", cli->bs_seed, bar ? bar : "");
	if (m < 0 || (size_t)m >= size)
		return fedrun_error(FEDRUN_EINVAL, "signature longer than %zu bytes", size - 1);
	return 0;
}

/* What the 95% interval of A - B decides, on the unrounded bounds. */
static const char *paired_verdict(const struct fedrun_paired_bootstrap *p, bool text)
{
	if (p->ci_diff.lo > 0)
		return text ? "A is better" : "A";
	if (p->ci_diff.hi < 0)
		return text ? "B is better" : "B";
	return text ? "no significant difference" : "neither";
}

/* One metric's result: with --score-only the tab-separated line
 *   METRIC A B DIFF LO HI MEAN A_LO A_HI B_LO B_HI BETTER
 * (fedrun-bleu(1)), otherwise NAME|SIGNATURE = A .. [..], B .., A-B ... */
static int paired_line(const struct bleu_cli *cli, const char *metric, const char *name,
		       const char *sig, const struct fedrun_paired_bootstrap *p, char *buf,
		       size_t size)
{
	const int w = cli->width;
	int m;
	if (cli->score_only) {
		m = snprintf(buf, size,
			     "%s\t%.*f\t%.*f\t%.*f\t%.*f\t%.*f\t%.*f\t%.*f\t%.*f\t%.*f\t%.*f\t%s",
			     metric, w, p->a, w, p->b, w, p->diff, w, p->ci_diff.lo, w,
			     p->ci_diff.hi, w, p->ci_diff.mean, w, p->ci_a.lo, w, p->ci_a.hi, w,
			     p->ci_b.lo, w, p->ci_b.hi, paired_verdict(p, false));
	} else {
		char psig[FEDRUN_BLEU_LINE_MAX];
		int rc = paired_signature(cli, sig, psig, sizeof psig);
		if (rc)
			return rc;
		m = snprintf(buf, size,
			     "%s|%s = A %.*f [%.*f, %.*f], B %.*f [%.*f, %.*f], A-B %.*f [%.*f, "
			     "%.*f], mean %.*f: %s",
			     name, psig, w, p->a, w, p->ci_a.lo, w, p->ci_a.hi, w, p->b, w,
			     p->ci_b.lo, w, p->ci_b.hi, w, p->diff, w, p->ci_diff.lo, w,
			     p->ci_diff.hi, w, p->ci_diff.mean, paired_verdict(p, true));
	}
	if (m < 0 || (size_t)m >= size)
		return fedrun_error(FEDRUN_EINVAL, "%s: output line longer than %zu bytes", metric,
				    size - 1);
	return 0;
}

/* --paired-bs: each metric's segment statistics for A and B, once, then
 * the resamples (fedrun_bleu_paired_bootstrap). */
static int score_paired(const struct bleu_cli *cli, const struct text_file *hyp_a,
			const struct text_file *hyp_b, const struct text_file *refs, size_t nrefs)
{
	char lines[2][FEDRUN_BLEU_LINE_MAX], sig[FEDRUN_BLEU_LINE_MAX];
	const size_t segs = hyp_a->n;
	const char *const *ha = (const char *const *)hyp_a->line;
	const char *const *hb = (const char *const *)hyp_b->line;
	struct fedrun_paired_bootstrap p;
	size_t n = 0;
	int rc = 0, nr = 0;
	const char *const **streams = calloc(nrefs, sizeof streams[0]);
	if (!streams)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (size_t r = 0; r < nrefs; r++)
		streams[r] = (const char *const *)refs[r].line;
	if (cli->metrics & METRIC_BLEU) {
		struct fedrun_bleu_stats *a = calloc(segs, sizeof a[0]),
					 *b = calloc(segs, sizeof b[0]);
		rc = a && b ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
		if (!rc &&
		    (rc = fedrun_bleu_corpus_stats(&cli->bleu, segs, ha, nrefs, streams, a, &nr)))
			rc = fedrun_error_wrap(rc, "%s: ", hyp_a->path);
		if (!rc &&
		    (rc = fedrun_bleu_corpus_stats(&cli->bleu, segs, hb, nrefs, streams, b, NULL)))
			rc = fedrun_error_wrap(rc, "%s: ", hyp_b->path);
		if (!rc)
			rc = fedrun_bleu_paired_bootstrap(&cli->bleu, segs, a, b, cli->bs_samples,
							  cli->bs_seed, &p, NULL);
		if (!rc)
			rc = fedrun_bleu_signature(&cli->bleu, nr, cli->short_sig, sig, sizeof sig);
		if (!rc)
			rc = paired_line(cli, "bleu", "BLEU", sig, &p, lines[n], sizeof lines[n]);
		n += !rc;
		free(a);
		free(b);
	}
	if (!rc && (cli->metrics & METRIC_CHRF)) {
		struct fedrun_chrf_stats *a = calloc(segs, sizeof a[0]),
					 *b = calloc(segs, sizeof b[0]);
		char name[32];
		/* CHRFScore's name: chrF<beta> and a '+' per word order */
		snprintf(name, sizeof name, "chrF%d%.*s", cli->chrf.beta, cli->chrf.word_order,
			 "++++++++++++++++");
		rc = a && b ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
		if (!rc &&
		    (rc = fedrun_chrf_corpus_stats(&cli->chrf, segs, ha, nrefs, streams, a, &nr)))
			rc = fedrun_error_wrap(rc, "%s: ", hyp_a->path);
		if (!rc &&
		    (rc = fedrun_chrf_corpus_stats(&cli->chrf, segs, hb, nrefs, streams, b, NULL)))
			rc = fedrun_error_wrap(rc, "%s: ", hyp_b->path);
		if (!rc)
			rc = fedrun_chrf_paired_bootstrap(&cli->chrf, segs, a, b, cli->bs_samples,
							  cli->bs_seed, &p, NULL);
		if (!rc)
			rc = fedrun_chrf_signature(&cli->chrf, nr, cli->short_sig, sig, sizeof sig);
		if (!rc)
			rc = paired_line(cli, "chrf", name, sig, &p, lines[n], sizeof lines[n]);
		n += !rc;
		free(a);
		free(b);
	}
	free(streams);
	if (rc)
		return rc;
	if (cli->score_only) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", lines[i]);
	} else {
		print_aligned(lines, n);
	}
	return 0;
}

/* Line counts must agree. An empty reference line is a reference of
 * length 0, as sacreBLEU counts it, not an error. */
static int check_inputs(const struct text_file *hyp, const struct text_file *refs, size_t nrefs)
{
	if (!hyp->n)
		return fedrun_error(FEDRUN_EINVAL, "%s: no lines to score", hyp->path);
	for (size_t r = 0; r < nrefs; r++)
		if (refs[r].n != hyp->n)
			return fedrun_error(
			    FEDRUN_EINVAL, "%s has %zu line%s but %s has %zu: one segment per line",
			    hyp->path, hyp->n, hyp->n == 1 ? "" : "s", refs[r].path, refs[r].n);
	return 0;
}

/* --paired-bs: B must have A's segments, one per line. */
static int check_paired(const struct text_file *a, const struct text_file *b,
			const struct text_file *refs, size_t nrefs)
{
	if (b->n != a->n)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "--paired-bs: %s (A) has %zu line%s but %s (B) has %zu: the two "
		    "systems must translate the same segments, one per line",
		    a->path, a->n, a->n == 1 ? "" : "s", b->path, b->n);
	return check_inputs(b, refs, nrefs);
}

static void warn_tokenized(const struct text_file *hyp)
{
	size_t count = 0;
	for (size_t i = 0; i < hyp->n; i++) {
		size_t len = strlen(hyp->line[i]);
		count += len >= 2 && !strcmp(hyp->line[i] + len - 2, " .");
	}
	if (count >= TOKENIZED_WARN_LINES)
		fprintf(stderr,
			"fedrun bleu: warning: %zu lines of %s end in a tokenized period (' .'); "
			"BLEU expects detokenized text, which scores differently\n",
			count, hyp->path);
}

int fedrun_cmd_bleu(int argc, char **argv)
{
	struct bleu_cli cli;
	memset(&cli, 0, sizeof cli);
	fedrun_bleu_opts_init(&cli.bleu);
	fedrun_chrf_opts_init(&cli.chrf);
	cli.width = 1;
	cli.bs_samples = FEDRUN_BOOTSTRAP_SAMPLES;
	cli.bs_seed = FEDRUN_BOOTSTRAP_SEED;

	const char *hyp_path = NULL;
	int status = parse_args(&cli, argc, argv, &hyp_path);
	if (status) {
		free(cli.ref_paths);
		return status < 0 ? 0 : status;
	}

	struct text_file hyp, hyp_b;
	memset(&hyp, 0, sizeof hyp);
	memset(&hyp_b, 0, sizeof hyp_b);
	struct text_file *refs = calloc(cli.nref_paths, sizeof refs[0]);
	const char **seg_refs = calloc(cli.nref_paths, sizeof seg_refs[0]);
	int rc = refs && seg_refs ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (size_t r = 0; r < cli.nref_paths && !rc; r++)
		rc = file_read(&refs[r], cli.ref_paths[r]);
	if (!rc)
		rc = file_read(&hyp, hyp_path);
	if (!rc && cli.paired)
		rc = file_read(&hyp_b, cli.hyp_b_path);
	if (!rc)
		rc = check_inputs(&hyp, refs, cli.nref_paths);
	if (!rc && cli.paired)
		rc = check_paired(&hyp, &hyp_b, refs, cli.nref_paths);
	if (!rc && (cli.metrics & METRIC_BLEU))
		warn_tokenized(&hyp);
	if (!rc && cli.paired && (cli.metrics & METRIC_BLEU))
		warn_tokenized(&hyp_b);
	if (!rc && cli.paired)
		rc = score_paired(&cli, &hyp, &hyp_b, refs, cli.nref_paths);
	else if (!rc && cli.sentence)
		rc = score_sentences(&cli, &hyp, refs, cli.nref_paths, seg_refs);
	else if (!rc)
		rc = score_corpus(&cli, &hyp, refs, cli.nref_paths);
	if (!rc && fflush(stdout) != 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot write the output: %s", strerror(errno));
	if (rc)
		fprintf(stderr, "fedrun bleu: %s\n", fedrun_error_message());

	file_fini(&hyp);
	file_fini(&hyp_b);
	for (size_t r = 0; refs && r < cli.nref_paths; r++)
		file_fini(&refs[r]);
	free(refs);
	free(seg_refs);
	free(cli.ref_paths);
	return rc ? EXIT_INPUT : 0;
}
