/* bench/aggregate: fedavg's aggregation throughput, in GB/s of update bytes
 * read, against the memory-copy bandwidth measured in the same run with the
 * same threads (the roofline a streaming kernel can approach). Then the
 * peak memory of meanest runs with 100 sampled clients out of 100, 1,000
 * and 10,000, which must not grow with the number of clients.
 *
 * Usage: bench/aggregate [--threads N] [--floats N] [--fedrun PATH]
 * (FEDRUN_PLUGIN_PATH must name the plugin directory, as for fedrun). */
#include "config.h"
#include <getopt.h>
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

/* Best of `reps` fedavg aggregations of k updates of n floats: GB/s of
 * update bytes read. */
static int bench_fedavg(const struct fedrun_aggregator_ops *ops, uint32_t k, uint64_t n, int reps,
			double *gbs)
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
				       .seed = 1, .layout = &l};
	*gbs = 0;
	for (int r = 0; r < reps && rc == 0; r++) {
		double t0 = now();
		rc = ops->aggregate(st, &ri, u, k, theta);
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

/* Runs fedrun on a meanest pipeline with `clients` clients of whom 100 are
 * sampled each round; returns the child's peak resident memory in MiB. */
static double meanest_peak_mib(const char *fedrun, uint32_t clients, const char *dir)
{
	char pipeline[2048], path[512];
	snprintf(path, sizeof path, "%s/mem-%u.json", dir, clients);
	snprintf(pipeline, sizeof pipeline,
		 "{\"name\": \"mem\", \"seed\": 1, \"rounds\": 5,"
		 " \"model\": {\"plugin\": \"meanest\", \"problem\": \"gaussian\", \"dim\": 1000},"
		 " \"data\": {\"groups\": [{\"clients\": %u, \"mean\": 1, \"samples\": 200}]},"
		 " \"clients\": {\"fraction\": %.17g, \"epochs\": 1, \"batch\": 20},"
		 " \"eval\": {\"every\": 0, \"final_test\": false},"
		 " \"output\": {\"dir\": \"%s/run-%u\", \"checkpoint_every\": 0}}",
		 clients, 100.0 / clients, dir, clients);
	FILE *fp = fopen(path, "w");
	if (!fp)
		return -1;
	fputs(pipeline, fp);
	fclose(fp);
	pid_t pid = fork();
	if (pid == 0) {
		execl(fedrun, fedrun, "-q", "--threads", "2", path, (char *)NULL);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
	int threads = 2;
	uint64_t n = 10000000;
	const char *fedrun = "./fedrun";
	static const struct option opts[] = {{"threads", required_argument, NULL, 't'},
					     {"floats", required_argument, NULL, 'n'},
					     {"fedrun", required_argument, NULL, 'f'},
					     {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "t:n:f:", opts, NULL)) != -1) {
		switch (c) {
		case 't': threads = atoi(optarg); break;
		case 'n': n = strtoull(optarg, NULL, 10); break;
		case 'f': fedrun = optarg; break;
		default: fprintf(stderr, "usage: %s [--threads N] [--floats N] [--fedrun PATH]\n", argv[0]); return 2;
		}
	}
	omp_set_num_threads(threads);
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

	printf("fedavg aggregation, %llu floats per update, %d threads\n", (unsigned long long)n, threads);
	printf("%-8s %14s %18s %8s\n", "updates", "fedavg GB/s", "memcpy GB/s (peer)", "ratio");
	const uint32_t ks[] = {10, 100};
	for (size_t i = 0; i < 2; i++) {
		double g = 0;
		if (bench_fedavg(p->ops, ks[i], n, 5, &g) < 0) {
			fprintf(stderr, "aggregate: %s\n", fedrun_error_message());
			return 1;
		}
		printf("%-8u %14.2f %18.2f %8.2f\n", ks[i], g, copy, g / copy);
	}
	fedrun_registry_destroy(reg);

	char dir[] = "/tmp/fedrun-bench-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	printf("\nmeanest peak memory, 100 clients sampled per round (dim 1000, 200 samples each)\n");
	printf("%-10s %12s\n", "clients", "peak MiB");
	const uint32_t cs[] = {100, 1000, 10000};
	for (size_t i = 0; i < 3; i++) {
		double mib = meanest_peak_mib(fedrun, cs[i], dir);
		if (mib < 0) {
			fprintf(stderr, "aggregate: the fedrun run with %u clients failed\n", cs[i]);
			return 1;
		}
		printf("%-10u %12.1f\n", cs[i], mib);
	}
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
