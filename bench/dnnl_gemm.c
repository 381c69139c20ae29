/* SPDX-License-Identifier: Apache-2.0 */
/* bench/dnnl_gemm: the machine's bf16 matrix-product ceiling, oneDNN's best
 * square product, to put the bf16 training figures of bench/gru_lm.sh and
 * bench/transformer.sh beside (and FP32's through the same library, for
 * comparison).
 *
 * Usage: bench/dnnl_gemm [--threads N] [--reps R] [--sizes S1,S2,...]
 * Defaults: N = the number of online cores, R = 5, sizes 1024,2048,4096.
 *
 * For each type (bf16: bf16 source and weights, f32 destination; fp32: f32
 * everything), on 1 thread and on N (omp_set_num_threads before the
 * primitive is made, which oneDNN's OpenMP runtime reads then and at each
 * execution), for each size n: one matmul primitive (n x n) x (n x n),
 * the weights in the layout the primitive prefers (format_tag_any),
 * converted from a plain f32 matrix by a reorder outside the timing, as
 * the source is; one untimed execution, then R timed, each waited for
 * (dnnl_stream_wait). The figure is 2 n^3 over the best time, and the
 * ceiling the best over the sizes. The scratchpad is oneDNN's (default
 * mode).
 *
 * Prints "<type>_gflops_<t>_<n> X" for every combination, then
 * "bf16_gflops_1 X", "bf16_gflops_N X", "fp32_gflops_1 X",
 * "fp32_gflops_N X" (the best over the sizes), "<type>_impl S" (the
 * implementation oneDNN chose for the largest size on N threads: e.g.
 * brg:avx512_core_amx_bf16, or brg:avx512_core_bf16 under
 * DNNL_MAX_CPU_ISA=AVX512_CORE_BF16), "threads N" and "dnnl_version V".
 * On a CPU without AMX or AVX512-BF16 (or DNNL_MAX_CPU_ISA below them)
 * oneDNN still runs bf16, through a slow converting kernel (impl gemm:jit):
 * that is not the ceiling of fedrun's bf16 path, which refuses such a CPU.
 * Exits 1 with a message naming the oneDNN call that failed. */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

enum { MAX_SIZES = 8 };

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Prints what failed and returns 1 (the exit status) unless s is success. */
static int bad(dnnl_status_t s, const char *what, const char *type, int n)
{
	if (s == dnnl_success)
		return 0;
	fprintf(stderr, "bench/dnnl_gemm: %s (%s, n = %d): %s\n", what, type, n,
		dnnl_status2str(s));
	return 1;
}

/* A plain n x n f32 matrix in `mem` (engine memory, oneDNN-allocated)
 * filled with small values, reordered into `dst` (any type and layout). */
static int fill(dnnl_engine_t eng, dnnl_stream_t st, const dnnl_memory_desc_t *dst_md,
		dnnl_memory_t dst, int n, int salt, const char *type)
{
	dnnl_memory_desc_t f;
	dnnl_dims_t d = {n, n};
	dnnl_memory_t mem = NULL;
	dnnl_primitive_desc_t rpd = NULL;
	dnnl_primitive_t r = NULL;
	void *h = NULL;
	int rc = bad(dnnl_memory_desc_init_by_tag(&f, 2, d, dnnl_f32, dnnl_ab), "f32 descriptor",
		     type, n);
	if (!rc)
		rc = bad(dnnl_memory_create(&mem, &f, eng, DNNL_MEMORY_ALLOCATE), "f32 memory", type,
			 n);
	if (!rc)
		rc = bad(dnnl_memory_get_data_handle(mem, &h), "data handle", type, n);
	if (!rc) {
		float *p = h;
		for (long i = 0; i < (long)n * n; i++)
			p[i] = (float)((i * 7 + salt) % 13 - 6) * 0.0625f;
		rc = bad(dnnl_reorder_primitive_desc_create(&rpd, &f, eng, dst_md, eng, NULL),
			 "reorder descriptor", type, n);
	}
	if (!rc)
		rc = bad(dnnl_primitive_create(&r, rpd), "reorder primitive", type, n);
	if (!rc) {
		dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, mem}, {DNNL_ARG_TO, dst}};
		rc = bad(dnnl_primitive_execute(r, st, 2, a), "reorder", type, n);
	}
	if (!rc)
		rc = bad(dnnl_stream_wait(st), "stream wait", type, n);
	if (r)
		dnnl_primitive_destroy(r);
	if (rpd)
		dnnl_primitive_desc_destroy(rpd);
	if (mem)
		dnnl_memory_destroy(mem);
	return rc;
}

/* Best GFLOP/s of reps products n^3 of type `dt` (source and weights) on
 * `threads` threads; the implementation's name into impl. */
static int product(dnnl_engine_t eng, dnnl_data_type_t dt, int threads, int n, int reps,
		   double *gflops, char *impl, size_t impl_size)
{
	const char *type = dt == dnnl_bf16 ? "bf16" : "fp32";
#ifdef _OPENMP
	omp_set_num_threads(threads);
#else
	(void)threads;
#endif
	dnnl_dims_t d = {n, n};
	dnnl_memory_desc_t a, w_any, c;
	const dnnl_memory_desc_t *w;
	dnnl_matmul_desc_t md;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_t p = NULL;
	dnnl_stream_t st = NULL;
	dnnl_memory_t ma = NULL, mw = NULL, mc = NULL;
	int rc = bad(dnnl_memory_desc_init_by_tag(&a, 2, d, dt, dnnl_ab), "source descriptor", type,
		     n);
	if (!rc)
		rc = bad(dnnl_memory_desc_init_by_tag(&w_any, 2, d, dt, dnnl_format_tag_any),
			 "weights descriptor", type, n);
	if (!rc)
		rc = bad(dnnl_memory_desc_init_by_tag(&c, 2, d, dnnl_f32, dnnl_ab),
			 "destination descriptor", type, n);
	if (!rc)
		rc = bad(dnnl_matmul_desc_init(&md, &a, &w_any, NULL, &c), "matmul descriptor", type,
			 n);
	if (!rc)
		rc = bad(dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL), "matmul primitive "
			 "descriptor", type, n);
	if (!rc) {
		const char *s = NULL;
		rc = bad(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s),
			 "implementation query", type, n);
		snprintf(impl, impl_size, "%s", s ? s : "?");
	}
	if (!rc) {
		w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
		if (!w) {
			fprintf(stderr, "bench/dnnl_gemm: weights layout query (%s, n = %d) failed\n",
				type, n);
			rc = 1;
		}
	}
	if (!rc)
		rc = bad(dnnl_primitive_create(&p, pd), "matmul primitive", type, n);
	if (!rc)
		rc = bad(dnnl_stream_create(&st, eng, dnnl_stream_default_flags), "stream", type, n);
	if (!rc)
		rc = bad(dnnl_memory_create(&ma, &a, eng, DNNL_MEMORY_ALLOCATE), "source memory", type,
			 n);
	if (!rc)
		rc = bad(dnnl_memory_create(&mw, w, eng, DNNL_MEMORY_ALLOCATE), "weights memory",
			 type, n);
	if (!rc)
		rc = bad(dnnl_memory_create(&mc, &c, eng, DNNL_MEMORY_ALLOCATE),
			 "destination memory", type, n);
	/* Operands converted once, outside the timing. */
	if (!rc)
		rc = fill(eng, st, &a, ma, n, 1, type);
	if (!rc)
		rc = fill(eng, st, w, mw, n, 5, type);
	*gflops = 0;
	dnnl_exec_arg_t args[] = {
	    {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, mc}};
	for (int r = 0; !rc && r <= reps; r++) {
		double t0 = now();
		rc = bad(dnnl_primitive_execute(p, st, 3, args), "matmul", type, n);
		if (!rc)
			rc = bad(dnnl_stream_wait(st), "stream wait", type, n);
		double g = 2.0 * n * (double)n * n / (now() - t0) / 1e9;
		if (!rc && r > 0 && g > *gflops) /* r = 0: untimed */
			*gflops = g;
	}
	if (mc)
		dnnl_memory_destroy(mc);
	if (mw)
		dnnl_memory_destroy(mw);
	if (ma)
		dnnl_memory_destroy(ma);
	if (st)
		dnnl_stream_destroy(st);
	if (p)
		dnnl_primitive_destroy(p);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench/dnnl_gemm [--threads N] [--reps R] [--sizes S1,S2,...]\n");
}

int main(int argc, char **argv)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = cores > 0 ? (int)cores : 1, reps = 5, sizes[MAX_SIZES] = {1024, 2048, 4096};
	int nsizes = 3;
	static const struct option lo[] = {{"threads", 1, 0, 'T'},
					   {"reps", 1, 0, 'r'},
					   {"sizes", 1, 0, 's'},
					   {0, 0, 0, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		char *end;
		long v;
		switch (ch) {
		case 'T':
		case 'r':
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 1 || v > 4096) {
				fprintf(stderr, "bench/dnnl_gemm: --%s: expected 1 to 4096, got '%s'\n",
					ch == 'T' ? "threads" : "reps", optarg);
				return 2;
			}
			*(ch == 'T' ? &threads : &reps) = (int)v;
			break;
		case 's': {
			const char *s = optarg;
			nsizes = 0;
			for (;;) {
				v = strtol(s, &end, 10);
				if (end == s || (*end != ',' && *end != '\0') || v < 16 || v > 32768 ||
				    nsizes == MAX_SIZES) {
					fprintf(stderr, "bench/dnnl_gemm: --sizes: expected up to %d "
							"sizes 16 to 32768 separated by commas, got "
							"'%s'\n",
						MAX_SIZES, optarg);
					return 2;
				}
				sizes[nsizes++] = (int)v;
				if (*end == '\0')
					break;
				s = end + 1;
			}
			break;
		}
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc) {
		usage();
		return 2;
	}
	dnnl_engine_t eng;
	if (bad(dnnl_engine_create(&eng, dnnl_cpu, 0), "engine", "cpu", 0))
		return 1;
	const dnnl_version_t *ver = dnnl_version();
	printf("dnnl_version %d.%d.%d\n", ver->major, ver->minor, ver->patch);
	printf("threads %d\n", threads);
	static const dnnl_data_type_t types[] = {dnnl_bf16, dnnl_f32};
	int rc = 0;
	for (int ti = 0; !rc && ti < 2; ti++) {
		const char *type = types[ti] == dnnl_bf16 ? "bf16" : "fp32";
		double best[2] = {0, 0};
		char impl[256] = "?";
		for (int k = 0; !rc && k < 2; k++) {
			int t = k ? threads : 1;
			for (int si = 0; !rc && si < nsizes; si++) {
				double g;
				char im[256];
				rc = product(eng, types[ti], t, sizes[si], reps, &g, im, sizeof im);
				if (rc)
					break;
				printf("%s_gflops_%d_%d %.1f\n", type, t, sizes[si], g);
				fflush(stdout);
				if (g > best[k])
					best[k] = g;
				if (k && si == nsizes - 1)
					snprintf(impl, sizeof impl, "%s", im);
			}
		}
		if (!rc) {
			printf("%s_gflops_1 %.1f\n", type, best[0]);
			printf("%s_gflops_N %.1f\n", type, best[1]);
			printf("%s_impl %s\n", type, impl);
		}
	}
	dnnl_engine_destroy(eng);
	return rc;
}
