/* SPDX-License-Identifier: Apache-2.0 */
/* bench/aggregate: what fedavg's aggregation costs.
 *
 * 1. The kernel: fedavg over K = 10 and 100 updates of --floats floats (one
 *    tensor), through the plugin's ops as the engine calls them, once with
 *    aggregate() (all updates at once) and once streamed (begin, accumulate
 *    8 updates at a time, finish): GB/s of update bytes read, against the
 *    bandwidth of a parallel memcpy on the same threads (the peer: the
 *    roofline of a kernel that reads each update once).
 * 2. Whole rounds: fedrun on a meanest pipeline (problem "quadratic", whose
 *    local step costs little beside the update's traffic; --dim floats per
 *    update; 10,000 clients; 3 rounds) sampling 10, 100, 1,000 and 10,000
 *    clients per round: peak resident memory (from wait4) and seconds per
 *    round (from the metrics' wall clock, round 3 minus round 1, halved),
 *    with fedavg (streaming) and with the same fedavg built as an ABI 1.2
 *    plugin (bench/fedavg_abi12.so: the host holds the round's updates),
 *    the peer. The run's clients stay the same, so what grows is only the
 *    round.
 *
 * Usage: bench/aggregate [--threads N] [--floats N] [--dim N] [--fedrun PATH]
 *                        [--peer-dir DIR] [--skip-kernel]
 * (FEDRUN_PLUGIN_PATH must name the plugin directory, as for fedrun). */
#include "config.h"
#include <getopt.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fedrun/fedrun.h"

static double now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* Best of `reps` runs of a parallel memcpy of n floats: GB/s copied. */
static double copy_bandwidth(float *dst, const float *src, uint64_t n, int reps)
{
	double best = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = now();
#pragma omp parallel
		{
			int nt = omp_get_num_threads(), id = omp_get_thread_num();
			uint64_t lo = n * (uint64_t)id / (uint64_t)nt, hi = n * (uint64_t)(id + 1) / (uint64_t)nt;
			memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
		}
		double gbs = (double)n * sizeof(float) / (now() - t0) / 1e9;
		if (gbs > best)
			best = gbs;
	}
	return best;
}

static void no_log(void *ctx, enum fedrun_log_level l, const char *fmt, ...)
{
}

static int no_metric(void *ctx, const char *name, int64_t client, const char *tensor, double v)
{
	return 0;
}

static uint32_t one(void *ctx)
{
	return 1;
}

static uint64_t seed(void *ctx)
{
	return 1;
}

/* Best of `reps` fedavg aggregations of k updates of n floats, with
 * aggregate() (chunk 0) or streamed `chunk` updates per accumulate: GB/s of
 * update bytes read. */
static int bench_fedavg(const struct fedrun_aggregator_ops *ops, uint32_t k, uint64_t n,
			uint32_t chunk, int reps, double *gbs)
{
	struct fedrun_layout l;
	fedrun_layout_init(&l);
	int rc = fedrun_layout_add(&l, "w", 1, &n);
	if (rc < 0)
		return rc;
	float *theta = fedrun_arena_alloc(l.total);
	float **upd = calloc(k, sizeof *upd);
	const float **tens = calloc(k, sizeof *tens);
	struct fedrun_update *u = calloc(k, sizeof *u);
	if (!theta || !upd || !tens || !u)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for %u updates", k);
	for (uint32_t j = 0; j < k; j++) {
		if (!(upd[j] = fedrun_arena_alloc(n)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory for %u updates of %llu floats",
					    k, (unsigned long long)n);
		for (uint64_t i = 0; i < n; i += 1024) /* touch every page */
			upd[j][i] = 1e-3f * (float)j;
		tens[j] = upd[j];
		u[j] = (struct fedrun_update){.client = j, .n_samples = 1 + j, .tensor = &tens[j]};
	}
	struct fedrun_host host = {.size = sizeof host, .log = no_log, .metric = no_metric,
				   .threads = one, .seed = seed};
	json_t *cfg = json_object();
	void *st;
	if ((rc = ops->create(&host, cfg, &l, &st)) < 0)
		return rc;
	struct fedrun_round_info ri = {.size = sizeof ri, .round = 1, .rounds = 1, .num_clients = k,
				       .seed = 1, .layout = &l, .sampled = k};
	*gbs = 0;
	for (int r = 0; r < reps && rc == 0; r++) {
		double t0 = now();
		if (chunk == 0) {
			rc = ops->aggregate(st, &ri, u, k, theta);
		} else {
			rc = ops->begin(st, &ri);
			for (uint32_t at = 0; at < k && rc == 0; at += chunk)
				rc = ops->accumulate(st, &ri, u + at, k - at < chunk ? k - at : chunk);
			if (rc == 0)
				rc = ops->finish(st, &ri, theta);
		}
		double g = (double)k * (double)n * sizeof(float) / (now() - t0) / 1e9;
		if (g > *gbs)
			*gbs = g;
	}
	ops->destroy(st);
	json_decref(cfg);
	for (uint32_t j = 0; j < k; j++)
		fedrun_arena_free(upd[j]);
	free(upd);
	free(tens);
	free(u);
	fedrun_arena_free(theta);
	fedrun_layout_fini(&l);
	return rc;
}

/* The wall clock of round `round` in a run's metrics.jsonl; -1 if absent. */
static double round_wall(const char *run, uint32_t round)
{
	char path[PATH_MAX], line[4096], key[32];
	snprintf(path, sizeof path, "%s/metrics.jsonl", run);
	snprintf(key, sizeof key, "{\"round\":%u,", round);
	FILE *fp = fopen(path, "r");
	double wall = -1;
	if (!fp)
		return -1;
	while (fgets(line, sizeof line, fp)) {
		const char *w = strstr(line, "\"wall\":");
		if (strncmp(line, key, strlen(key)) == 0 && w)
			wall = strtod(w + 7, NULL);
	}
	fclose(fp);
	return wall;
}

/* The run's clients. */
#define RUN_CLIENTS 10000

/* Runs fedrun on a meanest pipeline of RUN_CLIENTS clients, `clients` of
 * them sampled each round, aggregated by `aggregator`; sets the child's peak
 * resident memory in MiB and the seconds per round. */
static int rounds_run(const char *fedrun, const char *aggregator, uint32_t clients, uint64_t dim,
		      int threads, const char *dir, double *mib, double *per_round)
{
	char pipeline[2 * PATH_MAX], path[PATH_MAX], run[PATH_MAX], thr[16];
	snprintf(path, sizeof path, "%s/%s-%u.json", dir, aggregator, clients);
	snprintf(run, sizeof run, "%s/run-%s-%u", dir, aggregator, clients);
	snprintf(pipeline, sizeof pipeline,
		 "{\"name\": \"agg\", \"seed\": 1, \"rounds\": 3,"
		 " \"model\": {\"plugin\": \"meanest\", \"problem\": \"quadratic\", \"dim\": %llu},"
		 " \"data\": {\"groups\": [{\"clients\": %u, \"mean\": 1, \"valid_samples\": 0}]},"
		 " \"clients\": {\"fraction\": %.17g, \"epochs\": 1, \"batch\": 1},"
		 " \"aggregator\": {\"plugin\": \"%s\"},"
		 " \"eval\": {\"every\": 0, \"final_test\": false},"
		 " \"output\": {\"dir\": \"%s\", \"checkpoint_every\": 0}}",
		 (unsigned long long)dim, RUN_CLIENTS, (double)clients / RUN_CLIENTS, aggregator, run);
	FILE *fp = fopen(path, "w");
	if (!fp)
		return -1;
	fputs(pipeline, fp);
	fclose(fp);
	snprintf(thr, sizeof thr, "%d", threads);
	pid_t pid = fork();
	if (pid == 0) {
		execl(fedrun, fedrun, "-q", "--threads", thr, path, (char *)NULL);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	*mib = (double)ru.ru_maxrss / 1024.0;
	double w1 = round_wall(run, 1), w3 = round_wall(run, 3);
	*per_round = w1 >= 0 && w3 >= 0 ? (w3 - w1) / 2 : -1;
	return 0;
}

int main(int argc, char **argv)
{
	int threads = 2, skip_kernel = 0;
	uint64_t n = 10000000, dim = 250000;
	const char *fedrun = "./fedrun", *peer_dir = "bench/.libs";
	static const struct option opts[] = {{"threads", required_argument, NULL, 't'},
					     {"floats", required_argument, NULL, 'n'},
					     {"dim", required_argument, NULL, 'd'},
					     {"fedrun", required_argument, NULL, 'f'},
					     {"peer-dir", required_argument, NULL, 'p'},
					     {"skip-kernel", no_argument, NULL, 's'},
					     {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "t:n:d:f:p:s", opts, NULL)) != -1) {
		switch (c) {
		case 't': threads = atoi(optarg); break;
		case 'n': n = strtoull(optarg, NULL, 10); break;
		case 'd': dim = strtoull(optarg, NULL, 10); break;
		case 'f': fedrun = optarg; break;
		case 'p': peer_dir = optarg; break;
		case 's': skip_kernel = 1; break;
		default:
			fprintf(stderr,
				"usage: %s [--threads N] [--floats N] [--dim N] [--fedrun PATH] "
				"[--peer-dir DIR] [--skip-kernel]\n",
				argv[0]);
			return 2;
		}
	}
	if (threads < 1 || n < 1 || dim < 1) {
		fprintf(stderr, "aggregate: --threads, --floats and --dim must be positive\n");
		return 2;
	}
	omp_set_num_threads(threads);
	/* The peer plugin's directory joins the search path (absolute). */
	char peer[PATH_MAX];
	if (!realpath(peer_dir, peer)) {
		fprintf(stderr, "aggregate: %s: no such directory (make bench builds it)\n", peer_dir);
		return 1;
	}
	const char *env = getenv("FEDRUN_PLUGIN_PATH");
	size_t len = strlen(peer) + (env ? strlen(env) : 0) + 2;
	char *path = malloc(len);
	if (!path)
		return 1;
	snprintf(path, len, "%s%s%s", env ? env : "", env ? ":" : "", peer);
	setenv("FEDRUN_PLUGIN_PATH", path, 1);
	free(path);

	/* The rounds first: a child's peak memory starts from its parent's
	 * (Linux carries the high-water mark across fork and exec), and the
	 * kernel benchmark below takes gigabytes. */
	char dir[] = "/tmp/fedrun-bench-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	printf("rounds of meanest (quadratic): %d clients, %llu floats per update (%.0f KB), "
	       "%d threads\n",
	       RUN_CLIENTS, (unsigned long long)dim, (double)dim * 4 / 1000, threads);
	printf("%-15s %-28s %-28s %10s\n", "", "fedavg (streaming)", "fedavg_abi12 (peer)", "");
	printf("%-15s %12s %15s %12s %15s %10s\n", "clients/round", "peak MiB", "s/round",
	       "peak MiB", "s/round", "peak ratio");
	const uint32_t cs[] = {10, 100, 1000, 10000};
	int rc = 0;
	for (size_t i = 0; i < 4 && rc == 0; i++) {
		double m1, s1, m2, s2;
		if (rounds_run(fedrun, "fedavg", cs[i], dim, threads, dir, &m1, &s1) < 0 ||
		    rounds_run(fedrun, "fedavg_abi12", cs[i], dim, threads, dir, &m2, &s2) < 0) {
			fprintf(stderr, "aggregate: the fedrun run with %u clients failed\n", cs[i]);
			rc = 1;
			break;
		}
		printf("%-15u %12.1f %15.3f %12.1f %15.3f %10.2f\n", cs[i], m1, s1, m2, s2, m1 / m2);
		fflush(stdout);
	}
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0 || rc != 0)
		return 1;
	if (!skip_kernel) {
		struct fedrun_registry *reg;
		const struct fedrun_plugin *p;
		if (fedrun_registry_create(NULL, &reg) < 0 ||
		    fedrun_registry_find(reg, FEDRUN_KIND_AGGREGATOR, "fedavg", NULL, &p, NULL) < 0) {
			fprintf(stderr, "aggregate: %s\n", fedrun_error_message());
			return 1;
		}
		/* The copy peer: a buffer as large as 10 updates. */
		uint64_t cn = 10 * n;
		float *src = fedrun_arena_alloc(cn), *dst = fedrun_arena_alloc(cn);
		if (!src || !dst) {
			fprintf(stderr, "aggregate: out of memory\n");
			return 1;
		}
		for (uint64_t i = 0; i < cn; i += 1024)
			src[i] = dst[i] = 1.0f;
		double copy = copy_bandwidth(dst, src, cn, 5);
		fedrun_arena_free(src);
		fedrun_arena_free(dst);

		printf("\nfedavg aggregation, %llu floats per update, %d threads\n",
		       (unsigned long long)n, threads);
		printf("%-8s %-22s %12s %18s %8s\n", "updates", "path", "fedavg GB/s",
		       "memcpy GB/s (peer)", "ratio");
		const uint32_t ks[] = {10, 100};
		for (size_t i = 0; i < 2; i++) {
			for (int streamed = 0; streamed <= 1; streamed++) {
				double g = 0;
				if (bench_fedavg(p->ops, ks[i], n, streamed ? 8 : 0, 5, &g) < 0) {
					fprintf(stderr, "aggregate: %s\n", fedrun_error_message());
					return 1;
				}
				printf("%-8u %-22s %12.2f %18.2f %8.2f\n", ks[i],
				       streamed ? "accumulate, 8 a call" : "aggregate, all at once", g,
				       copy, g / copy);
			}
		}
		fedrun_registry_destroy(reg);
	}
	return 0;
}


