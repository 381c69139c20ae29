/* SPDX-License-Identifier: Apache-2.0 */
/* bench/backend_gemm: the matrix-product rate of a backend
 * (fedrun_backend_find), the ceiling against which training's rate is put
 * (bench/gpu.sh: the fraction of it that transformer training reaches).
 *
 * Usage: bench/backend_gemm [--precision fp32|bf16|tf32] [BACKEND [SIZE...]]
 *        (default: fp32 cuda 1024 2048 4096 8192)
 * --precision: the context's (ctx_cfg.precision). In bf16 (and tf32) A and
 * B are declared as parameters (declare_params), so that a bf16 backend
 * converts them once, in the untimed product: the rate is that of its bf16
 * products proper (cuBLAS's, on cuda), the ceiling for bf16 training. The
 * lines printed are the same in every precision.
 * For each SIZE n: C (n,n) = A B with random A, B in device memory; one
 * untimed product, then 10 timed back to back, waited for with a to_host
 * of one float. Prints "sgemm n GFLOPS" lines (2 n^3 flops a product) and
 * "sgemm_gflops_best G". Also the products of a transformer-base training
 * step (4096 tokens: d 512, ffn 2048, vocabulary 8000), as "shape m n k
 * GFLOPS". */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fedrun/backend.h"
#include "fedrun/error.h"
#include "fedrun/rng.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* GFLOP/s of C (m,n) = op(A) op(B), A (m,k) or transposed; -1 on error. */
static bool declare; /* declare A and B as parameters */

static double rate(const struct fedrun_backend_ops *be, void *ctx, bool ta, bool tb, int m,
		   int n, int k)
{
	float *a = NULL, *b, *c = NULL, probe;
	uint64_t na = (uint64_t)m * k, nb = (uint64_t)k * n, nc = (uint64_t)m * n;
	double r = -1;
	float *h = malloc((na > nb ? na : nb) * sizeof *h);
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, 1, FEDRUN_RNG_PLUGIN, 0, 0);
	/* A and B in one block, the parameters of a declare_params */
	if (!h || be->alloc(ctx, (na + nb) * 4, (void **)&a) < 0 ||
	    be->alloc(ctx, nc * 4, (void **)&c) < 0)
		goto out;
	b = a + na;
	for (uint64_t i = 0; i < na; i++)
		h[i] = (float)fedrun_rng_uniform(&rng) - 0.5f;
	if (be->to_device(ctx, a, h, na * 4) < 0)
		goto out;
	for (uint64_t i = 0; i < nb; i++)
		h[i] = (float)fedrun_rng_uniform(&rng) - 0.5f;
	if (be->to_device(ctx, b, h, nb * 4) < 0)
		goto out;
	if (declare && be->declare_params(ctx, a, na + nb) < 0)
		goto out;
	const int lda = ta ? m : k, ldb = tb ? k : n;
	if (be->sgemm(ctx, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n) < 0 ||
	    be->to_host(ctx, &probe, c, 4) < 0)
		goto out;
	const int reps = 10;
	double t0 = now();
	for (int i = 0; i < reps; i++)
		if (be->sgemm(ctx, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n) < 0)
			goto out;
	if (be->to_host(ctx, &probe, c, 4) < 0)
		goto out;
	r = 2.0 * m * n * (double)k * reps / (now() - t0) / 1e9;
out:
	free(h);
	if (declare)
		be->declare_params(ctx, NULL, 0);
	if (a)
		be->free_mem(ctx, a);
	if (c)
		be->free_mem(ctx, c);
	return r;
}

int main(int argc, char **argv)
{
	struct fedrun_backend_ctx_cfg cfg = {.size = sizeof cfg};
	if (argc > 1 && strcmp(argv[1], "--precision") == 0) {
		const char *p = argc > 2 ? argv[2] : "";
		if (strcmp(p, "fp32") == 0)
			cfg.precision = FEDRUN_PRECISION_FP32;
		else if (strcmp(p, "bf16") == 0)
			cfg.precision = FEDRUN_PRECISION_BF16;
		else if (strcmp(p, "tf32") == 0)
			cfg.precision = FEDRUN_PRECISION_TF32;
		else {
			fprintf(stderr, "backend_gemm: --precision: expected fp32, bf16 or tf32\n");
			return 2;
		}
		argc -= 2;
		argv += 2;
	}
	const char *name = argc > 1 ? argv[1] : "cuda";
	const struct fedrun_backend_ops *be;
	void *ctx = NULL;
	if (fedrun_backend_find(name, &be) < 0 || be->ctx_create(&cfg, &ctx) < 0) {
		fprintf(stderr, "backend_gemm: %s\n", fedrun_error_message());
		return 77;
	}
	declare = cfg.precision != FEDRUN_PRECISION_FP32 && FEDRUN_BACKEND_HAS(be, declare_params);
	int def[] = {1024, 2048, 4096, 8192}, nd = argc > 2 ? argc - 2 : 4;
	double best = 0;
	for (int i = 0; i < nd; i++) {
		int n = argc > 2 ? atoi(argv[i + 2]) : def[i];
		double r = rate(be, ctx, false, false, n, n, n);
		if (r < 0) {
			fprintf(stderr, "backend_gemm: %s\n", fedrun_error_message());
			return 1;
		}
		printf("sgemm %d %.1f\n", n, r);
		best = r > best ? r : best;
	}
	printf("sgemm_gflops_best %.1f\n", best);
	/* a transformer-base step's products, 4096 tokens */
	static const struct {
		const char *what;
		bool ta, tb;
		int m, n, k;
	} s[] = {{"qkv_fwd", false, true, 4096, 1536, 512},
		 {"ffn1_fwd", false, true, 4096, 2048, 512},
		 {"ffn2_fwd", false, true, 4096, 512, 2048},
		 {"ffn1_dw", true, false, 2048, 512, 4096},
		 {"logits_fwd", false, true, 4096, 8000, 512},
		 {"logits_dx", false, false, 4096, 512, 8000}};
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
		double r = rate(be, ctx, s[i].ta, s[i].tb, s[i].m, s[i].n, s[i].k);
		printf("shape %s %d %d %d %.1f\n", s[i].what, s[i].m, s[i].n, s[i].k, r);
	}
	be->ctx_destroy(ctx);
	return 0;
}
