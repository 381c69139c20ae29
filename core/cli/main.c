/* SPDX-License-Identifier: Apache-2.0 */
/* The fedrun command: run, validate and list plugins. Only here do error
 * codes become exit statuses and messages. */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/fedrun.h"
#include "fedrun/pipeline.h"
#include "commands.h"
#include "cmd_bleu.h"
#include "cmd_check_aggregator.h"
#include "cmd_new.h"
#include "cmd_translate.h"
#include "cmd_lm.h"
#include "cmd_certs.h"
#include "cmd_export_hf.h"

static volatile int interrupted;
/* Whether on_signal answers the first signal on stderr (rank 0 only, or
 * every rank would), and whether stderr is a terminal, where a rewritten
 * progress line may wait for its newline. */
static int signal_answer, signal_tty;

/* --peer-timeout, seconds: long beyond any pause of a live rank (the
 * transport's beats go on while a rank computes), short beside a batch
 * job's hours. At most a week. */
#define PEER_TIMEOUT_DEFAULT 300
#define PEER_TIMEOUT_MAX 604800

static void on_signal(int sig)
{
	/* The first signal is answered at once (write(2): async-signal-safe);
	 * the run stops after the round it is in. */
	static const char sigint[] = "\nfedrun: stopping after this round (a checkpoint is "
				     "written); Ctrl-C again to abort\n";
	static const char sigterm[] = "\nfedrun: terminated: stopping after this round (a "
				      "checkpoint is written); a second signal aborts\n";
	int saved = errno;
	if (!interrupted && signal_answer) {
		const char *m = sig == SIGINT ? sigint : sigterm;
		size_t n = sig == SIGINT ? sizeof sigint - 1 : sizeof sigterm - 1;
		if (!signal_tty) /* no progress line to end */
			m++, n--;
		ssize_t w = write(STDERR_FILENO, m, n);
		(void)w;
	}
	interrupted = 1;
	/* A second signal ends the process at once. */
	signal(sig, SIG_DFL);
	errno = saved;
}

/* Whether this process is rank 0 (or alone): the ranks' launchers name
 * each process's rank (the variables core/engine/dist.c knows them by). */
static int rank_zero(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return strcmp(v, "0") == 0;
	}
	return 1;
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"Usage: fedrun [OPTIONS] PIPELINE.json\n"
		"       fedrun run [OPTIONS] PIPELINE.json\n"
		"       fedrun validate [--set PATH=VALUE | --unset PATH]... PIPELINE.json\n"
		"       fedrun plugins\n"
		"       fedrun bleu [OPTIONS] REF HYP\n"
		"       fedrun translate [OPTIONS] RUN_DIR|PIPELINE.json < SOURCE > OUTPUT\n"
		"       fedrun check-aggregator [OPTIONS] NAME|FILE.so\n"
		"       fedrun new aggregator NAME [DIR] | experiment [--model M] NAME.json\n"
		"       fedrun score [OPTIONS] RUN_DIR < TEXT\n"
		"       fedrun sample [OPTIONS] RUN_DIR\n"
		"       fedrun export-hf [OPTIONS] RUN_DIR DIR\n"
		"       fedrun certs init|server|client|revoke|crl [OPTIONS] DIR ...\n"
		"\n"
		"Options:\n"
		"  -t, --threads N        worker threads (default: number of CPUs)\n"
		"  -s, --set PATH=VALUE   override a pipeline key (repeatable)\n"
		"      --unset PATH       remove a pipeline key, so its default applies\n"
		"                         (repeatable; in order with --set)\n"
		"  -b, --backend NAME     where the model computes: cpu, cuda (the same as\n"
		"                         --set model.backend=NAME)\n"
		"  -r, --resume           continue the run from its last checkpoint\n"
		"  -q, --quiet            no progress or status lines on stderr; results still\n"
		"                         print (RUN/log.txt has the lines)\n"
		"      --allow-plugin-paths  load plugins from files the pipeline names\n"
		"                         (\"path\" keys, the python aggregator's \"file\"):\n"
		"                         runs their code\n"
		"      --peer-timeout SECONDS  under mpirun, fail when another rank is not\n"
		"                         heard from this long (default 300; 0: wait forever)\n"
		"  -h, --help             this help\n"
		"  -V, --version          version and plugin ABI\n"
		"\n"
		"Exit status: 0 success, 1 the run failed, 2 usage, pipeline or input file error,\n"
		"3 a plugin could not be loaded, 130 interrupted (a checkpoint written, or stopped\n"
		"before the first round having written nothing, the run directory as it was).\n"
		"Under mpirun or srun the processes share one run (fedrun(1), RUNNING ON MANY NODES).\n"
		"See fedrun(1), fedrun-pipeline(5) and fedrun-plugin(7).\n");
}

int fedrun_exit_status(int rc)
{
	switch (rc) {
	case 0: return 0;
	case FEDRUN_ECONFIG:
	case FEDRUN_EINVAL:
	case FEDRUN_ENOENT:
	case FEDRUN_EFORMAT: return 2; /* a malformed input file is invalid input */
	case FEDRUN_EABI:
	case FEDRUN_EPLUGIN: return 3;
	case FEDRUN_EINTERRUPTED: return 130;
	default: return 1;
	}
}

int fedrun_cli_fail(const char *cmd, int rc)
{
	const char *msg = fedrun_error_message();
	fprintf(stderr, "fedrun%s%s: %s\n", cmd ? " " : "", cmd ? cmd : "",
		*msg ? msg : fedrun_strerror(rc));
	return fedrun_exit_status(rc);
}

static int fail(int rc)
{
	return fedrun_cli_fail(NULL, rc);
}

struct plist_row {
	int n;
};

static void print_plugin(void *ud, const char *file, const struct fedrun_plugin *p,
			 const char *error, int shadowed)
{
	struct plist_row *row = ud;
	if (row->n++ == 0)
		printf("%-14s %-11s %-8s %-5s %s\n", "NAME", "KIND", "VERSION", "ABI", "FILE");
	if (!p) {
		printf("%-14s %-11s %-8s %-5s %s\n    refused: %s\n", "-", "-", "-", "-", file, error);
		return;
	}
	printf("%-14s %-11s %-8s %u.%-3u %s%s\n    %s\n", p->name, fedrun_kind_name(p->kind),
	       p->version, p->abi_major, p->abi_minor, file, shadowed ? " (shadowed)" : "",
	       p->summary);
}

static int cmd_plugins(void)
{
	struct fedrun_registry *reg;
	int rc = fedrun_registry_create(NULL, &reg);
	if (rc < 0)
		return fail(rc);
	struct plist_row row = {0};
	rc = fedrun_registry_scan(reg, print_plugin, &row);
	if (row.n == 0)
		printf("no plugins found (searched $FEDRUN_PLUGIN_PATH and %s)\n", fedrun_plugin_dir());
	fedrun_registry_destroy(reg);
	return rc < 0 ? fail(rc) : 0;
}

/* The last of the n --set/--unset options whose path the message is
 * about ("clients.bogus: unknown key" for --set clients.bogus=1, or
 * "model.tokenizer.vocab_size: ..." for --set model.tokenizer={...}):
 * the message begins with the path, then ':' or '.'. -1 if none. */
static int blamed_option(const char *msg, const char *const *sets, int n)
{
	for (int i = n; i-- > 0;) {
		const char *eq = strchr(sets[i], '=');
		size_t len = eq ? (size_t)(eq - sets[i]) : strlen(sets[i]);
		if (len && strncmp(msg, sets[i], len) == 0 && (msg[len] == ':' || msg[len] == '.'))
			return i;
	}
	return -1;
}

static int cmd_run(int argc, char **argv, int validate_only)
{
	static const struct option longopts[] = {
		{"threads", required_argument, NULL, 't'}, {"set", required_argument, NULL, 's'},
		{"resume", no_argument, NULL, 'r'},        {"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
		{"allow-plugin-paths", no_argument, NULL, 'P'}, {"backend", required_argument, NULL, 'b'},
		{"peer-timeout", required_argument, NULL, 'T'}, {"unset", required_argument, NULL, 'U'},
		{NULL, 0, NULL, 0}};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct fedrun_run_opts opts = {.threads = cpus > 0 ? (uint32_t)cpus : 1,
				       .progress = isatty(STDERR_FILENO) != 0,
				       .interrupt = &interrupted,
				       .peer_timeout = PEER_TIMEOUT_DEFAULT};
	/* --set and --unset, in the order given; unset[i]: sets[i] is a path
	 * to remove */
	const char **sets = calloc((size_t)argc + 1, sizeof *sets);
	bool *unset = calloc((size_t)argc + 1, sizeof *unset);
	const char *backend = NULL;
	int nsets = 0, c;
	bool allow_paths = false;
	if (!sets || !unset) {
		free(sets);
		free(unset);
		return fail(fedrun_error(FEDRUN_ENOMEM, "out of memory"));
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "t:s:b:rqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 't': {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (*end || n < 1 || n > 1024) {
				free(sets), free(unset);
				fprintf(stderr, "fedrun: --threads: expected an integer in [1, 1024], got '%s'\n",
					optarg);
				return 2;
			}
			opts.threads = (uint32_t)n;
			break;
		}
		case 'T': {
			char *end;
			errno = 0;
			long n = strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || n < 0 || n > PEER_TIMEOUT_MAX) {
				free(sets), free(unset);
				fprintf(stderr,
					"fedrun: --peer-timeout: expected seconds, an integer in "
					"[0, %d], got '%s'\n",
					PEER_TIMEOUT_MAX, optarg);
				return 2;
			}
			opts.peer_timeout = (uint32_t)n;
			break;
		}
		case 's': sets[nsets++] = optarg; break;
		case 'U': unset[nsets] = true, sets[nsets++] = optarg; break;
		case 'b': backend = optarg; break;
		case 'r': opts.resume = true; break;
		case 'q': opts.quiet = true; break;
		case 'P': allow_paths = true; break;
		case 'h': usage(stdout); free(sets), free(unset); return 0;
		case 'V':
			printf("fedrun %s (plugin ABI %d.%d)\n", fedrun_version(), FEDRUN_ABI_MAJOR,
			       FEDRUN_ABI_MINOR);
			free(sets), free(unset);
			return 0;
		default: usage(stderr); free(sets), free(unset); return 2;
		}
	}
	/* `fedrun --threads 2 validate p.json`: the options of run and validate
	 * may come before the subcommand too (getopt moved the words after
	 * them). Another subcommand takes its own options after its name. */
	if (argc - optind == 2 && (!strcmp(argv[optind], "run") || !strcmp(argv[optind], "validate"))) {
		validate_only = argv[optind][0] == 'v';
		optind++;
	} else if (argc - optind >= 1 &&
		   (!strcmp(argv[optind], "plugins") || !strcmp(argv[optind], "bleu") ||
		    !strcmp(argv[optind], "translate") || !strcmp(argv[optind], "run") ||
		    !strcmp(argv[optind], "check-aggregator") || !strcmp(argv[optind], "new") ||
		    !strcmp(argv[optind], "score") || !strcmp(argv[optind], "sample") ||
		    !strcmp(argv[optind], "validate"))) {
		fprintf(stderr, "fedrun: the options of '%s' go after its name: fedrun %s [OPTIONS] ...\n",
			argv[optind], argv[optind]);
		free(sets), free(unset);
		return 2;
	}
	if (optind != argc - 1) {
		if (optind == argc)
			fprintf(stderr, "fedrun: missing the pipeline file\n");
		else
			fprintf(stderr, "fedrun: expected one pipeline file, got %d arguments: %s %s%s\n",
				argc - optind, argv[optind], argv[optind + 1], argc - optind > 2 ? " ..." : "");
		usage(stderr);
		free(sets), free(unset);
		return 2;
	}
	const char *file = argv[optind];
	json_t *pipeline = NULL;
	struct fedrun_registry *reg = NULL;
	char *dircopy = strdup(file);
	int rc = dircopy ? fedrun_pipeline_load(file, &pipeline)
			 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	/* --backend is model.backend, set before the --set overrides */
	if (rc == 0 && backend) {
		json_t *model = json_object_get(pipeline, "model");
		if (!json_is_object(model))
			rc = fedrun_error(FEDRUN_ECONFIG, "--backend %s: the pipeline has no model "
							  "section",
					  backend);
		else if (json_object_set_new(model, "backend", json_string(backend)) < 0)
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	for (int i = 0; rc == 0 && i < nsets; i++)
		rc = unset[i] ? fedrun_pipeline_unset(pipeline, sets[i])
			      : fedrun_pipeline_set(pipeline, sets[i]);
	if (rc == 0)
		rc = fedrun_registry_create(NULL, &reg);
	if (rc == 0)
		fedrun_registry_allow_files(reg, allow_paths);
	if (rc == 0) {
		opts.base_dir = dirname(dircopy);
		/* validate too: creating the plugins can take long (a federated
		 * vocabulary's key), and plugins that ask host->interrupted stop
		 * there with the same status as a run */
		signal_answer = !validate_only && rank_zero(); /* (no round to finish) */
		signal_tty = opts.progress;
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		if (validate_only) {
			rc = fedrun_pipeline_validate(pipeline, &opts, reg);
			/* a signal that came where nothing asks for it still
			 * stops with its status rather than "valid" */
			if (rc == 0 && interrupted)
				rc = fedrun_error(FEDRUN_EINTERRUPTED, "interrupted");
			if (rc == 0)
				printf("%s: valid\n", file);
		} else {
			rc = fedrun_pipeline_run(pipeline, &opts, reg);
		}
	}
	/* Name the pipeline in every message about it, and the --set or
	 * --unset whose key the message is about. */
	if (rc < 0 && !strstr(fedrun_error_message(), file)) {
		int blame = blamed_option(fedrun_error_message(), sets, nsets);
		if (blame >= 0)
			fedrun_error_wrap(rc, "%s %s %s: ", file, unset[blame] ? "--unset" : "--set",
					  sets[blame]);
		else
			fedrun_error_wrap(rc, "%s: ", file);
	}
	int status = rc < 0 ? fail(rc) : 0;
	json_decref(pipeline);
	fedrun_registry_destroy(reg);
	free(dircopy);
	free(sets);
	free(unset);
	return status;
}

int main(int argc, char **argv)
{
	/* A file size limit (ulimit -f) must not kill the process without a
	 * word: the write fails with EFBIG and the message names the file. */
	signal(SIGXFSZ, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "run") == 0)
		return cmd_run(argc - 1, argv + 1, 0);
	if (strcmp(cmd, "validate") == 0)
		return cmd_run(argc - 1, argv + 1, 1);
	if (strcmp(cmd, "plugins") == 0) {
		if (argc != 2) {
			usage(stderr);
			return 2;
		}
		return cmd_plugins();
	}
	if (strcmp(cmd, "bleu") == 0)
		return fedrun_cmd_bleu(argc - 1, argv + 1);
	if (strcmp(cmd, "translate") == 0)
		return fedrun_cmd_translate(argc - 1, argv + 1);
	if (strcmp(cmd, "check-aggregator") == 0)
		return fedrun_cmd_check_aggregator(argc - 1, argv + 1);
	if (strcmp(cmd, "new") == 0)
		return fedrun_cmd_new(argc - 1, argv + 1);
	if (strcmp(cmd, "score") == 0)
		return fedrun_cmd_score(argc - 1, argv + 1);
	if (strcmp(cmd, "sample") == 0)
		return fedrun_cmd_sample(argc - 1, argv + 1);
	if (strcmp(cmd, "export-hf") == 0)
		return fedrun_cmd_export_hf(argc - 1, argv + 1);
	if (strcmp(cmd, "certs") == 0)
		return fedrun_cmd_certs(argc - 1, argv + 1);
	if (strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	return cmd_run(argc, argv, 0);
}
