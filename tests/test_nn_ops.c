/* SPDX-License-Identifier: Apache-2.0 */
/* Each op of the CPU backend against its plain double-precision reference
 * (core/nn/ref_*.c) on random shapes, odd sizes included, plus the backend
 * table, argument checks, the dropout stream contract, the fast exp/tanh
 * against libm, and bitwise independence of the OpenMP thread count.
 * Tolerances are normwise (tu_err: the largest error over the largest
 * reference value) and stated at each check. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "fedrun/backend.h"
#include "fedrun/error.h"
#include "fedrun/rng.h"
#include "fedrun/vec.h"
#include "../core/nn/fastmath.h"
#include "../core/nn/ref.h"
#include "nn_testutil.h"

static const struct fedrun_backend_ops *be;
static void *ctx;

static void setup(void)
{
	be = fedrun_backend_cpu();
	ck_assert_int_eq(be->ctx_create(NULL, &ctx), 0);
}

static void teardown(void)
{
	be->ctx_destroy(ctx);
}

/* ---- the table ---------------------------------------------------------- */

START_TEST(test_table)
{
	ck_assert_uint_eq(be->size, sizeof(struct fedrun_backend_ops));
	ck_assert_str_eq(be->name, "cpu");
	/* Every member after name is a function pointer and must be set. */
	const char *p = (const char *)be + offsetof(struct fedrun_backend_ops, ctx_create);
	const char *end = (const char *)be + be->size;
	for (; p + sizeof(void (*)(void)) <= end; p += sizeof(void (*)(void))) {
		void (*fn)(void);
		memcpy(&fn, p, sizeof fn);
		ck_assert_ptr_nonnull(fn);
	}
	ck_assert(FEDRUN_BACKEND_HAS(be, act_backward));

	struct fedrun_backend_ctx_cfg cfg = {.size = sizeof cfg, .threads = 2};
	void *c2 = NULL;
	ck_assert_int_eq(be->ctx_create(&cfg, &c2), 0);
	void *mem = NULL;
	ck_assert_int_eq(be->alloc(c2, 1001, &mem), 0);
	ck_assert_uint_eq((uintptr_t)mem % 64, 0);
	for (int i = 0; i < 1001; i++)
		ck_assert_int_eq(((unsigned char *)mem)[i], 0);
	char host[16] = "fedrun backend", back[16] = {0};
	ck_assert_int_eq(be->to_device(c2, mem, host, sizeof host), 0);
	ck_assert_int_eq(be->copy(c2, (char *)mem + 500, mem, sizeof host), 0);
	ck_assert_int_eq(be->to_host(c2, back, (char *)mem + 500, sizeof back), 0);
	ck_assert_str_eq(back, "fedrun backend");
	ck_assert_int_eq(be->zero(c2, mem, sizeof host), 0);
	ck_assert_int_eq(((unsigned char *)mem)[3], 0);
	be->free_mem(c2, mem);
	be->ctx_destroy(c2);
}
END_TEST

/* As runs set it (engine.c): one BLAS thread a product, threads from
 * fedrun's own loops. Another CBLAS keeps its own setting. */
static void blas_serial(void)
{
	if (fedrun_backend_cpu_set_blas_threads(1) == FEDRUN_EUNSUPPORTED)
		fedrun_error_clear();
}

START_TEST(test_blas_threads)
{
	ck_assert_int_eq(fedrun_backend_cpu_set_blas_threads(0), FEDRUN_EINVAL);
	int rc = fedrun_backend_cpu_set_blas_threads(1);
	if (rc == FEDRUN_EUNSUPPORTED) {
		ck_assert_uint_eq(fedrun_backend_cpu_blas_threads(), 0);
		return;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(fedrun_backend_cpu_blas_threads(), 1);
#ifdef _OPENMP
	omp_set_num_threads(3); /* kept, whichever OpenBLAS build this is */
#endif
	ck_assert_int_eq(fedrun_backend_cpu_set_blas_threads(2), 0);
	ck_assert_uint_eq(fedrun_backend_cpu_blas_threads(), 2);
#ifdef _OPENMP
	ck_assert_int_eq(omp_get_max_threads(), 3);
#endif
}
END_TEST

/* ---- fast math ---------------------------------------------------------- */

/* The fused GRU loops rest on these; errors of a few float ulps are what a
 * libm gives, and are far below the tolerances of the tests below. */
START_TEST(test_fastmath)
{
	double e_exp = 0, e_sig = 0, e_tanh = 0;
	for (double v = -90.0; v <= 90.0; v += 0.000731) {
		float x = (float)v;
		if (x > -87.0f && x < 88.0f) {
			double ex = exp((double)x);
			e_exp = fmax(e_exp, fabs(nn_expf(x) - ex) / ex);
		}
		double s = 1.0 / (1.0 + exp(-(double)x));
		if (x > -80.0f) /* below, sigmoid is under 2e-35: absolute error only */
			e_sig = fmax(e_sig, fabs(nn_sigmoidf(x) - s) / s);
		e_tanh = fmax(e_tanh, fabs(nn_tanhf(x) - tanh((double)x)));
	}
	/* relative 4e-7 is about 3 ulp; tanh absolute 2e-7 */
	ck_assert_msg(e_exp < 4e-7, "exp rel err %g", e_exp);
	ck_assert_msg(e_sig < 4e-7, "sigmoid rel err %g", e_sig);
	ck_assert_msg(e_tanh < 2e-7, "tanh abs err %g", e_tanh);
	/* Saturation: no inf or NaN far outside the clamp. */
	ck_assert(nn_sigmoidf(-1000.0f) >= 0.0f && nn_sigmoidf(-1000.0f) < 1e-37f);
	ck_assert(nn_sigmoidf(1000.0f) == 1.0f);
	ck_assert(nn_tanhf(-1000.0f) == -1.0f && nn_tanhf(1000.0f) == 1.0f);
	ck_assert(nn_tanhf(0.0f) == 0.0f);
	/* NaN in, NaN out (no int conversion of a NaN: UBSan checks that);
	 * infinities saturate. */
	ck_assert(isnan(nn_expf(NAN)) && isnan(nn_sigmoidf(NAN)) && isnan(nn_tanhf(NAN)));
	ck_assert(nn_expf(-INFINITY) < 1e-37f && nn_expf(INFINITY) > 1e38f);
	ck_assert(nn_sigmoidf(INFINITY) == 1.0f && nn_tanhf(-INFINITY) == -1.0f);
}
END_TEST

/* ---- gemm --------------------------------------------------------------- */

static const int sizes[] = {1, 3, 7, 33};
#define NSIZES 4

/* Error of the (m,n) matrix c (row stride ldc) against ref, and whether the
 * padding between rows kept its bits (NaN included) from before. */
static double gemm_err(const float *c, const double *ref, const float *before, int m, int n,
		       int ldc, bool *pad_ok)
{
	float *pc = malloc((size_t)m * n * sizeof *pc);
	double *pr = malloc((size_t)m * n * sizeof *pr);
	*pad_ok = true;
	for (int i = 0; i < m; i++) {
		memcpy(pc + (size_t)i * n, c + (size_t)i * ldc, n * sizeof *pc);
		memcpy(pr + (size_t)i * n, ref + (size_t)i * ldc, n * sizeof *pr);
		if (memcmp(c + (size_t)i * ldc + n, before + (size_t)i * ldc + n,
			   (ldc - n) * sizeof *c))
			*pad_ok = false;
	}
	double e = tu_err(pc, pr, (uint64_t)m * n, 1e-30);
	free(pc), free(pr);
	return e;
}

/* One product of every shape in sizes^3 with transposes from _i, padded
 * leading dimensions, alpha 0.7 and beta 0 (C filled with NaN, which beta = 0
 * must ignore) or 1.3. Single-precision sgemm sums k <= 33 products of
 * entries in [-1, 1); normwise errors observed up to 1.1e-6 (where beta C
 * nearly cancels the product): 1e-5 allows for any BLAS's blocking. */
START_TEST(test_sgemm)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, 11, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	bool ta = _i & 1, tb = _i & 2;
	float beta = (_i & 4) ? 1.3f : 0.0f;
	for (int im = 0; im < NSIZES; im++)
		for (int in = 0; in < NSIZES; in++)
			for (int ik = 0; ik < NSIZES; ik++) {
				int m = sizes[im], n = sizes[in], k = sizes[ik];
				int lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
				uint64_t na = (uint64_t)(ta ? k : m) * lda;
				uint64_t nb = (uint64_t)(tb ? n : k) * ldb;
				uint64_t nc = (uint64_t)m * ldc;
				float *a = tu_rand(&r, na, -1, 1), *b = tu_rand(&r, nb, -1, 1);
				float *c = beta != 0.0f ? tu_rand(&r, nc, -1, 1) : tu_fill(nc, NAN);
				double *da = tu_dbl(a, na), *db = tu_dbl(b, nb),
				       *dc = tu_dbl(c, nc);
				float *c0 = malloc(nc * sizeof *c0);
				memcpy(c0, c, nc * sizeof *c0);
				ck_assert_int_eq(be->sgemm(ctx, ta, tb, m, n, k, 0.7f, a, lda, b,
							   ldb, beta, c, ldc),
						 0);
				nn_ref_gemm(ta, tb, m, n, k, 0.7, da, lda, db, ldb, beta, dc, ldc);
				bool pad_ok;
				char what[64];
				snprintf(what, sizeof what, "C (m=%d n=%d k=%d)", m, n, k);
				TU_ASSERT_ERR(gemm_err(c, dc, c0, m, n, ldc, &pad_ok), 1e-5, what);
				ck_assert_msg(pad_ok, "padding of C changed");
				free(a), free(b), free(c), free(c0), free(da), free(db), free(dc);
			}
}
END_TEST

/* Batched product with padded strides and a broadcast (stride 0) B; the
 * same tolerance as one product (observed 1.6e-7). */
START_TEST(test_sgemm_batched)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, 12, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	bool ta = _i & 1, tb = _i & 2;
	const int m = 7, n = 5, k = 33, batch = 3;
	int lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
	int64_t sa = (int64_t)(ta ? k : m) * lda + 5, sb = (_i & 4) ? 0 : (tb ? n : k) * ldb + 1;
	int64_t sc = (int64_t)m * ldc + 2;
	uint64_t na = (uint64_t)sa * batch, nb = (uint64_t)(sb ? sb : (tb ? n : k) * ldb) * batch;
	uint64_t nc = (uint64_t)sc * batch;
	float *a = tu_rand(&r, na, -1, 1), *b = tu_rand(&r, nb, -1, 1), *c = tu_rand(&r, nc, -1, 1);
	double *da = tu_dbl(a, na), *db = tu_dbl(b, nb), *dc = tu_dbl(c, nc);
	ck_assert_int_eq(be->sgemm_strided_batched(ctx, ta, tb, m, n, k, -0.5f, a, lda, sa, b, ldb,
						   sb, 0.25f, c, ldc, sc, batch),
			 0);
	for (int i = 0; i < batch; i++)
		nn_ref_gemm(ta, tb, m, n, k, -0.5, da + i * sa, lda, db + i * sb, ldb, 0.25,
			    dc + i * sc, ldc);
	TU_ASSERT_ERR(tu_err(c, dc, nc, 1e-30), 1e-5, "C");
	free(a), free(b), free(c), free(da), free(db), free(dc);
}
END_TEST

/* Products large enough to run in blocks (core/nn/gemm.c: 128 rows or
 * columns of C, along the longer side) on contexts of 1, 2 and 3 threads:
 * the same bits on each (the blocks depend on the shape alone), and the
 * reference's values (a wrong block offset would be far off), with padded
 * leading dimensions, a partial last block, both sides cut, beta 0 (C full
 * of NaN) and 1.3, and the linear layer, which cuts its three products the
 * same way. Sums of k <= 129 products of entries in [-1, 1): 1e-5 as in
 * test_sgemm (observed up to 3e-7). */
START_TEST(test_gemm_blocks)
{
	blas_serial();
	static const int shapes[][3] = {{300, 777, 129}, {700, 40, 100}, {257, 256, 64}};
	struct fedrun_rng r;
	fedrun_rng_init(&r, 14, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	bool ta = _i & 1, tb = _i & 2;
	float beta = (_i & 4) ? 1.3f : 0.0f;
	void *cs[3];
	for (int t = 0; t < 3; t++) {
		struct fedrun_backend_ctx_cfg k = {.size = sizeof k, .threads = (uint32_t)t + 1};
		ck_assert_int_eq(be->ctx_create(&k, &cs[t]), 0);
	}
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
		uint64_t na = (uint64_t)(ta ? k : m) * lda, nb = (uint64_t)(tb ? n : k) * ldb;
		uint64_t nc = (uint64_t)m * ldc;
		float *a = tu_rand(&r, na, -1, 1), *b = tu_rand(&r, nb, -1, 1);
		float *c0 = beta != 0.0f ? tu_rand(&r, nc, -1, 1) : tu_fill(nc, NAN);
		double *da = tu_dbl(a, na), *db = tu_dbl(b, nb), *dc = tu_dbl(c0, nc);
		nn_ref_gemm(ta, tb, m, n, k, 0.7, da, lda, db, ldb, beta, dc, ldc);
		float *c[3];
		for (int t = 0; t < 3; t++) {
			c[t] = malloc(nc * sizeof *c[t]);
			memcpy(c[t], c0, nc * sizeof *c0);
			ck_assert_int_eq(be->sgemm(cs[t], ta, tb, m, n, k, 0.7f, a, lda, b, ldb,
						   beta, c[t], ldc),
					 0);
		}
		char what[64];
		snprintf(what, sizeof what, "C (m=%d n=%d k=%d)", m, n, k);
		bool pad_ok;
		TU_ASSERT_ERR(gemm_err(c[0], dc, c0, m, n, ldc, &pad_ok), 1e-5, what);
		ck_assert_msg(pad_ok, "padding of C changed (m=%d n=%d k=%d)", m, n, k);
		for (int t = 1; t < 3; t++)
			ck_assert_msg(memcmp(c[0], c[t], nc * sizeof *c0) == 0,
				      "%s: 1 and %d threads give other bits", what, t + 1);
		for (int t = 0; t < 3; t++)
			free(c[t]);
		free(a), free(b), free(c0), free(da), free(db), free(dc);
	}
	/* linear: N x in -> out, every product above the blocking threshold */
	const uint32_t N = 640, in = 96, out = 300;
	float *x = tu_rand(&r, N * in, -1, 1), *w = tu_rand(&r, out * in, -1, 1);
	float *bias = tu_rand(&r, out, -1, 1), *dy = tu_rand(&r, N * out, -1, 1);
	float *y[3], *dx[3], *dw[3], *dbias[3];
	for (int t = 0; t < 3; t++) {
		y[t] = tu_zeros(N * out), dx[t] = tu_fill(N * in, NAN);
		dw[t] = tu_zeros(out * in), dbias[t] = tu_zeros(out);
		ck_assert_int_eq(be->linear_forward(cs[t], N, in, out, x, w, bias, y[t]), 0);
		ck_assert_int_eq(
		    be->linear_backward(cs[t], N, in, out, x, w, dy, dx[t], dw[t], dbias[t]), 0);
	}
	double *X = tu_dbl(x, N * in), *W = tu_dbl(w, out * in), *Bv = tu_dbl(bias, out);
	double *Y = tu_dzeros(N * out), *DY = tu_dbl(dy, N * out), *DX = tu_dzeros(N * in);
	double *DW = tu_dzeros(out * in), *DB = tu_dzeros(out);
	nn_ref_linear_forward(N, in, out, X, W, Bv, Y);
	nn_ref_linear_backward(N, in, out, X, W, DY, DX, DW, DB);
	TU_ASSERT_ERR(tu_err(y[0], Y, N * out, 1e-30), 1e-5, "linear forward");
	TU_ASSERT_ERR(tu_err(dx[0], DX, N * in, 1e-30), 1e-5, "linear dx");
	TU_ASSERT_ERR(tu_err(dw[0], DW, out * in, 1e-30), 1e-5, "linear dw");
	for (int t = 1; t < 3; t++) {
		ck_assert_mem_eq(y[0], y[t], N * out * sizeof(float));
		ck_assert_mem_eq(dx[0], dx[t], N * in * sizeof(float));
		ck_assert_mem_eq(dw[0], dw[t], out * in * sizeof(float));
		ck_assert_mem_eq(dbias[0], dbias[t], out * sizeof(float));
	}
	for (int t = 0; t < 3; t++) {
		free(y[t]), free(dx[t]), free(dw[t]), free(dbias[t]);
		be->ctx_destroy(cs[t]);
	}
	free(x), free(w), free(bias), free(dy);
	free(X), free(W), free(Bv), free(Y), free(DY), free(DX), free(DW), free(DB);
}
END_TEST

START_TEST(test_sgemm_args)
{
	float a[16] = {0}, b[16] = {0}, c[16] = {0};
	ck_assert_int_eq(be->sgemm(ctx, false, false, 2, 2, 3, 1, a, 2, b, 2, 0, c, 2),
			 FEDRUN_EINVAL); /* lda < k */
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "lda=2"));
	ck_assert_int_eq(be->sgemm(ctx, false, true, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2),
			 FEDRUN_EINVAL); /* transposed B: ldb < k */
	ck_assert_int_eq(be->sgemm(ctx, false, false, -1, 2, 3, 1, a, 3, b, 2, 0, c, 2),
			 FEDRUN_EINVAL);
	ck_assert_int_eq(be->sgemm(ctx, false, false, 2, 2, 2, 1, NULL, 2, b, 2, 0, c, 2),
			 FEDRUN_EINVAL);
	/* empty products are fine */
	ck_assert_int_eq(be->sgemm(ctx, false, false, 0, 2, 2, 1, NULL, 2, NULL, 2, 0, NULL, 2), 0);
	ck_assert_int_eq(be->sgemm_strided_batched(ctx, false, false, 2, 2, 2, 1, a, 2, -1, b, 2, 0,
						   0, c, 2, 4, 2),
			 FEDRUN_EINVAL);
}
END_TEST

/* ---- linear ------------------------------------------------------------- */

/* Forward, then backward with dw and db already holding values (they must
 * accumulate). The sums run over at most 33 terms of size one or less, as
 * in the sgemm test (observed errors up to 2.2e-7): 1e-5. */
START_TEST(test_linear)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, 13, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	const uint32_t N = (uint32_t)sizes[_i % NSIZES], in = (uint32_t)sizes[(_i / 4) % NSIZES];
	const uint32_t out = _i < 16 ? 7 : 1;
	const bool bias = _i % 3 != 0;
	float *x = tu_rand(&r, N * in, -1, 1), *w = tu_rand(&r, out * in, -1, 1);
	float *b = bias ? tu_rand(&r, out, -1, 1) : NULL, *y = tu_zeros(N * out);
	float *dy = tu_rand(&r, N * out, -1, 1), *dx = tu_fill(N * in, NAN);
	float *dw = tu_rand(&r, out * in, -1, 1), *db = tu_rand(&r, out, -1, 1);
	double *X = tu_dbl(x, N * in), *W = tu_dbl(w, out * in), *Bv = bias ? tu_dbl(b, out) : NULL;
	double *Y = tu_dzeros(N * out), *DY = tu_dbl(dy, N * out), *DX = tu_dzeros(N * in);
	double *DW = tu_dbl(dw, out * in), *DB = tu_dbl(db, out);

	ck_assert_int_eq(be->linear_forward(ctx, N, in, out, x, w, b, y), 0);
	nn_ref_linear_forward(N, in, out, X, W, Bv, Y);
	TU_ASSERT_ERR(tu_err(y, Y, N * out, 1e-30), 1e-5, "forward");
	ck_assert_int_eq(be->linear_backward(ctx, N, in, out, x, w, dy, dx, dw, db), 0);
	nn_ref_linear_backward(N, in, out, X, W, DY, DX, DW, DB);
	TU_ASSERT_ERR(tu_err(dx, DX, N * in, 1e-30), 1e-5, "dx");
	TU_ASSERT_ERR(tu_err(dw, DW, out * in, 1e-30), 1e-5, "dw");
	TU_ASSERT_ERR(tu_err(db, DB, out, 1e-30), 1e-5, "db");
	free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(db);
	free(X), free(W), free(Bv), free(Y), free(DY), free(DX), free(DW), free(DB);
}
END_TEST

/* ---- embedding ---------------------------------------------------------- */

/* Lookup is a copy: exact. The scatter-add sums up to N floats per entry in
 * float onto a random start (observed errors up to 3.4e-7 normwise for
 * N = 300): 4e-6. Ids repeat (V < N) so that the accumulation is
 * exercised. */
START_TEST(test_embedding)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, 14, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	static const uint32_t Ns[] = {1, 7, 33, 300}, Ds[] = {1, 3, 33, 300};
	const uint32_t N = Ns[_i % 4], D = Ds[_i / 4], V = 5;
	int32_t *ids = malloc(N * sizeof *ids);
	for (uint32_t i = 0; i < N; i++)
		ids[i] = (int32_t)fedrun_rng_below(&r, V);
	float *w = tu_rand(&r, V * D, -1, 1), *out = tu_zeros(N * D);
	float *dout = tu_rand(&r, N * D, -1, 1), *dw = tu_rand(&r, V * D, -1, 1);
	double *W = tu_dbl(w, V * D), *OUT = tu_dzeros(N * D), *DOUT = tu_dbl(dout, N * D);
	double *DW = tu_dbl(dw, V * D);
	ck_assert_int_eq(be->embedding_forward(ctx, N, V, D, ids, w, out), 0);
	nn_ref_embedding_forward(N, D, ids, W, OUT);
	ck_assert(tu_err(out, OUT, N * D, 1e-30) == 0.0);
	ck_assert_int_eq(be->embedding_backward(ctx, N, V, D, ids, dout, dw), 0);
	nn_ref_embedding_backward(N, D, ids, DOUT, DW);
	TU_ASSERT_ERR(tu_err(dw, DW, V * D, 1e-30), 4e-6, "dw");

	ids[N - 1] = (int32_t)V;
	ck_assert_int_eq(be->embedding_forward(ctx, N, V, D, ids, w, out), FEDRUN_EINVAL);
	ids[N - 1] = -1;
	ck_assert_int_eq(be->embedding_backward(ctx, N, V, D, ids, dout, dw), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "outside"));
	free(ids), free(w), free(out), free(dout), free(dw), free(W), free(OUT), free(DOUT),
	    free(DW);
}
END_TEST

/* ---- GRU ---------------------------------------------------------------- */

struct gru_case {
	uint32_t T, B, I, H;
	bool h0, bias, dy, dhT;
};

static const struct gru_case gru_cases[] = {
    {1, 1, 1, 1, true, true, true, true},
    {3, 7, 5, 33, true, true, true, true},
    {7, 3, 33, 17, false, true, true, false},
    {2, 1, 3, 64, true, false, false, true},
    {5, 4, 1, 3, false, false, true, true},
    {4, 33, 7, 300, true, true, true, true},  /* B H > NN_PAR_MIN: threaded loops */
    {9, 2, 11, 257, true, true, true, false}, /* H crosses a 256-unit chunk */
    {20, 16, 64, 300, true, true, true, true}, /* products over all steps in blocks */
};
#define NGRU (sizeof gru_cases / sizeof gru_cases[0])

struct gru_data {
	struct fedrun_gru_dims d;
	uint64_t nx, nh, ny, nwi, nwh, nb;
	float *x, *h0, *y, *w_ih, *w_hh, *b_ih, *b_hh, *dy, *dhT, *cache;
	float *dx, *dh0, *gw_ih, *gw_hh, *gb_ih, *gb_hh;
};

static void gru_data_make(struct gru_data *g, const struct gru_case *c, uint32_t seed)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_PLUGIN, 1, 0);
	memset(g, 0, sizeof *g);
	g->d = (struct fedrun_gru_dims){c->T, c->B, c->I, c->H};
	g->nx = (uint64_t)c->T * c->B * c->I;
	g->nh = (uint64_t)c->B * c->H;
	g->ny = (uint64_t)c->T * g->nh;
	g->nwi = 3ull * c->H * c->I;
	g->nwh = 3ull * c->H * c->H;
	g->nb = 3ull * c->H;
	/* Weights of PyTorch's initial scale U(-1/sqrt(H), 1/sqrt(H)) times
	 * two, so that the gates leave their linear range. */
	double s = 2.0 / sqrt((double)c->H);
	g->x = tu_rand(&r, g->nx, -1, 1);
	g->h0 = c->h0 ? tu_rand(&r, g->nh, -1, 1) : NULL;
	g->w_ih = tu_rand(&r, g->nwi, -s, s);
	g->w_hh = tu_rand(&r, g->nwh, -s, s);
	g->b_ih = c->bias ? tu_rand(&r, g->nb, -s, s) : NULL;
	g->b_hh = c->bias ? tu_rand(&r, g->nb, -s, s) : NULL;
	g->dy = c->dy ? tu_rand(&r, g->ny, -1, 1) : NULL;
	g->dhT = c->dhT ? tu_rand(&r, g->nh, -1, 1) : NULL;
	g->y = tu_fill(g->ny, NAN);
	g->cache = tu_fill(be->gru_cache_floats(ctx, &g->d), NAN);
	g->dx = tu_fill(g->nx, NAN);
	g->dh0 = tu_fill(g->nh, NAN);
	/* parameter gradients start non-zero: they must accumulate */
	g->gw_ih = tu_rand(&r, g->nwi, -1, 1);
	g->gw_hh = tu_rand(&r, g->nwh, -1, 1);
	g->gb_ih = tu_rand(&r, g->nb, -1, 1);
	g->gb_hh = tu_rand(&r, g->nb, -1, 1);
}

static void gru_data_free(struct gru_data *g)
{
	float *all[] = {g->x,	g->h0,	  g->y,	 g->w_ih, g->w_hh,  g->b_ih,  g->b_hh,	g->dy,
			g->dhT, g->cache, g->dx, g->dh0,  g->gw_ih, g->gw_hh, g->gb_ih, g->gb_hh};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		free(all[i]);
}

static int gru_run(void *c, struct gru_data *g)
{
	struct fedrun_gru_weights w = {g->w_ih, g->w_hh, g->b_ih, g->b_hh};
	struct fedrun_gru_grads gr = {g->gw_ih, g->gw_hh, g->gb_ih, g->gb_hh};
	int rc = be->gru_forward(c, &g->d, &w, g->x, g->h0, g->y, g->cache);
	if (rc)
		return rc;
	return be->gru_backward(c, &g->d, &w, g->x, g->h0, g->y, g->cache, g->dy, g->dhT, g->dx,
				g->dh0, &gr);
}

/* Forward states and every gradient against the double reference. The
 * float kernel differs from it by rounding in sums of up to max(I, 3H)
 * terms per step, and by the fast exp (3 ulp), carried through T steps of a
 * contracting recurrence: observed normwise errors are at most 6e-7; 2e-5
 * leaves room for other BLAS blockings, while any wrong term (a gate
 * swapped, a bias missed, a step off by one) shows as an error of order
 * 0.01 to 1. */
START_TEST(test_gru)
{
	const struct gru_case *c = &gru_cases[_i];
	struct gru_data g;
	gru_data_make(&g, c, 100 + (uint32_t)_i);
	double *X = tu_dbl(g.x, g.nx), *H0 = g.h0 ? tu_dbl(g.h0, g.nh) : NULL;
	double *WI = tu_dbl(g.w_ih, g.nwi), *WH = tu_dbl(g.w_hh, g.nwh);
	double *BI = g.b_ih ? tu_dbl(g.b_ih, g.nb) : NULL,
	       *BH = g.b_hh ? tu_dbl(g.b_hh, g.nb) : NULL;
	double *DY = g.dy ? tu_dbl(g.dy, g.ny) : NULL, *DHT = g.dhT ? tu_dbl(g.dhT, g.nh) : NULL;
	double *Y = tu_dzeros(g.ny), *DX = tu_dzeros(g.nx), *DH0 = tu_dzeros(g.nh);
	double *GWI = tu_dbl(g.gw_ih, g.nwi), *GWH = tu_dbl(g.gw_hh, g.nwh);
	double *GBI = tu_dbl(g.gb_ih, g.nb), *GBH = tu_dbl(g.gb_hh, g.nb);
	struct nn_ref_gru_weights rw = {WI, WH, BI, BH};
	struct nn_ref_gru_grads rg = {GWI, GWH, GBI, GBH};

	ck_assert_int_eq(gru_run(ctx, &g), 0);
	nn_ref_gru_forward(&g.d, &rw, X, H0, Y);
	ck_assert_int_eq(nn_ref_gru_backward(&g.d, &rw, X, H0, DY, DHT, DX, DH0, &rg), 0);

	const double tol = 2e-5;
	TU_ASSERT_ERR(tu_err(g.y, Y, g.ny, 1e-30), tol, "y");
	TU_ASSERT_ERR(tu_err(g.dx, DX, g.nx, 1e-6), tol, "dx");
	TU_ASSERT_ERR(tu_err(g.dh0, DH0, g.nh, 1e-6), tol, "dh0");
	TU_ASSERT_ERR(tu_err(g.gw_ih, GWI, g.nwi, 1e-30), tol, "dw_ih");
	TU_ASSERT_ERR(tu_err(g.gw_hh, GWH, g.nwh, 1e-30), tol, "dw_hh");
	TU_ASSERT_ERR(tu_err(g.gb_ih, GBI, g.nb, 1e-30), tol, "db_ih");
	TU_ASSERT_ERR(tu_err(g.gb_hh, GBH, g.nb, 1e-30), tol, "db_hh");

	gru_data_free(&g);
	free(X), free(H0), free(WI), free(WH), free(BI), free(BH), free(DY), free(DHT);
	free(Y), free(DX), free(DH0), free(GWI), free(GWH), free(GBI), free(GBH);
}
END_TEST

/* Skipped gradients (NULL dx, dh0 and grads) leave the rest unchanged, and
 * bad dimensions are refused. */
START_TEST(test_gru_optional)
{
	struct gru_data g;
	gru_data_make(&g, &gru_cases[1], 7);
	struct fedrun_gru_weights w = {g.w_ih, g.w_hh, g.b_ih, g.b_hh};
	float *y2 = tu_zeros(g.ny);
	ck_assert_int_eq(be->gru_forward(ctx, &g.d, &w, g.x, g.h0, g.y, g.cache), 0);
	ck_assert_int_eq(
	    be->gru_backward(ctx, &g.d, &w, g.x, g.h0, g.y, g.cache, g.dy, g.dhT, NULL, NULL, NULL),
	    0);
	/* a second forward into the used cache gives the same states */
	ck_assert_int_eq(be->gru_forward(ctx, &g.d, &w, g.x, g.h0, y2, g.cache), 0);
	ck_assert_mem_eq(g.y, y2, g.ny * sizeof *y2);

	struct fedrun_gru_dims bad = g.d;
	bad.hidden = 0;
	ck_assert_int_eq(be->gru_forward(ctx, &bad, &w, g.x, g.h0, g.y, g.cache), FEDRUN_EINVAL);
	ck_assert_int_eq(be->gru_forward(ctx, &g.d, &w, g.x, g.h0, g.y, NULL), FEDRUN_EINVAL);
	free(y2);
	gru_data_free(&g);
}
END_TEST

/* The same data through contexts of 1 and 2 OpenMP threads give the same
 * bits: every element-wise kernel writes each float from one thread, and
 * reductions run in a fixed order (fedrun's reproducibility rule). */
START_TEST(test_threads_bitwise)
{
	blas_serial();
	void *c1, *c2;
	struct fedrun_backend_ctx_cfg k1 = {.size = sizeof k1, .threads = 1},
				      k2 = {.size = sizeof k2, .threads = 2};
	ck_assert_int_eq(be->ctx_create(&k1, &c1), 0);
	ck_assert_int_eq(be->ctx_create(&k2, &c2), 0);
	for (int ci = 5; ci <= 7; ci += 2) { /* threaded loops; blocked products */
		struct gru_data a, b;
		gru_data_make(&a, &gru_cases[ci], 9);
		gru_data_make(&b, &gru_cases[ci], 9);
		ck_assert_int_eq(gru_run(c1, &a), 0);
		ck_assert_int_eq(gru_run(c2, &b), 0);
		ck_assert_mem_eq(a.y, b.y, a.ny * sizeof(float));
		ck_assert_mem_eq(a.dx, b.dx, a.nx * sizeof(float));
		ck_assert_mem_eq(a.dh0, b.dh0, a.nh * sizeof(float));
		ck_assert_mem_eq(a.gw_ih, b.gw_ih, a.nwi * sizeof(float));
		ck_assert_mem_eq(a.gw_hh, b.gw_hh, a.nwh * sizeof(float));
		ck_assert_mem_eq(a.gb_ih, b.gb_ih, a.nb * sizeof(float));
		ck_assert_mem_eq(a.gb_hh, b.gb_hh, a.nb * sizeof(float));
		gru_data_free(&a);
		gru_data_free(&b);
	}

	struct fedrun_rng r;
	fedrun_rng_init(&r, 5, FEDRUN_RNG_PLUGIN, 0, 0);
	const uint32_t N = 301, V = 97;
	float *l = tu_rand(&r, (uint64_t)N * V, -8, 8);
	float *d1 = tu_zeros((uint64_t)N * V), *d2 = tu_zeros((uint64_t)N * V);
	int32_t *t = malloc(N * sizeof *t);
	for (uint32_t i = 0; i < N; i++)
		t[i] = (int32_t)fedrun_rng_below(&r, V);
	double l1, l2;
	ck_assert_int_eq(be->softmax_xent(c1, N, V, l, t, &l1, NULL, d1), 0);
	ck_assert_int_eq(be->softmax_xent(c2, N, V, l, t, &l2, NULL, d2), 0);
	ck_assert(memcmp(&l1, &l2, sizeof l1) == 0);
	ck_assert_mem_eq(d1, d2, (uint64_t)N * V * sizeof *d1);
	float *b1 = tu_zeros(V), *b2 = tu_zeros(V);
	ck_assert_int_eq(be->softmax_xent_db(c1, N, V, l, t, 0.5f, &l1, NULL, d1, b1), 0);
	ck_assert_int_eq(be->softmax_xent_db(c2, N, V, l, t, 0.5f, &l2, NULL, d2, b2), 0);
	ck_assert(memcmp(&l1, &l2, sizeof l1) == 0);
	ck_assert_mem_eq(d1, d2, (uint64_t)N * V * sizeof *d1);
	ck_assert_mem_eq(b1, b2, V * sizeof *b1);
	free(b1), free(b2);
	free(l), free(d1), free(d2), free(t);
	be->ctx_destroy(c1);
	be->ctx_destroy(c2);
}
END_TEST

/* ---- dropout ------------------------------------------------------------ */

/* The mask is exactly the reference's (same stream words), the stream ends
 * where the reference leaves it, y matches to float rounding of x / (1-p)
 * (1e-6 normwise; observed 1e-7), and the kept fraction is within 5 standard deviations
 * of 1 - p. Sizes not a multiple of 4 exercise the partial last block; a
 * stream with buffered words checks that they are discarded. */
START_TEST(test_dropout)
{
	static const uint64_t ns[] = {1, 3, 7, 33, 4097, 100003};
	static const float ps[] = {0.0f, 0.1f, 0.5f, 0.9f};
	const uint64_t n = ns[_i % 6];
	const float p = ps[_i / 6];
	struct fedrun_rng data;
	fedrun_rng_init(&data, 3, FEDRUN_RNG_PLUGIN, 0, 0);
	float *x = tu_rand(&data, n, -1, 1), *y = tu_fill(n, NAN);
	double *X = tu_dbl(x, n), *Y = tu_dzeros(n);
	uint8_t *mask = malloc(n), *MASK = malloc(n);
	struct fedrun_rng r1, r2;
	fedrun_rng_init(&r1, 42, FEDRUN_RNG_DROPOUT, 3, 17);
	(void)fedrun_rng_u32(&r1); /* leave three words buffered */
	r2 = r1;
	ck_assert_int_eq(be->dropout_forward(ctx, n, p, &r1, x, y, mask), 0);
	nn_ref_dropout_forward(n, p, &r2, X, Y, MASK);
	ck_assert_mem_eq(mask, MASK, n);
	/* the same position in the stream (buf is stale once pos == 4) */
	ck_assert_mem_eq(r1.key, r2.key, sizeof r1.key);
	ck_assert_mem_eq(r1.ctr, r2.ctr, sizeof r1.ctr);
	ck_assert_uint_eq(r1.pos, 4);
	ck_assert_uint_eq(r2.pos, 4);
	ck_assert_uint_eq(fedrun_rng_u32(&r1), fedrun_rng_u32(&r2));
	TU_ASSERT_ERR(tu_err(y, Y, n, 1e-30), 1e-6, "y");
	uint64_t kept = 0;
	for (uint64_t i = 0; i < n; i++)
		kept += mask[i];
	double sd = sqrt(n * (double)p * (1 - p));
	ck_assert_msg(fabs((double)kept - n * (1.0 - p)) <= 5 * sd + 1e-9, "kept %llu of %llu",
		      (unsigned long long)kept, (unsigned long long)n);

	float *dy = tu_rand(&data, n, -1, 1), *dx = tu_fill(n, NAN);
	double *DY = tu_dbl(dy, n), *DX = tu_dzeros(n);
	ck_assert_int_eq(be->dropout_backward(ctx, n, p, mask, dy, dx), 0);
	nn_ref_dropout_backward(n, p, MASK, DY, DX);
	TU_ASSERT_ERR(tu_err(dx, DX, n, 1e-30), 1e-6, "dx");
	/* in place */
	ck_assert_int_eq(be->dropout_backward(ctx, n, p, mask, dy, dy), 0);
	ck_assert_mem_eq(dx, dy, n * sizeof *dx);
	free(x), free(y), free(X), free(Y), free(mask), free(MASK), free(dy), free(dx), free(DY),
	    free(DX);
}
END_TEST

/* The mask is a function of (seed, round, client) only. */
START_TEST(test_dropout_streams)
{
	const uint64_t n = 1000;
	float *x = tu_fill(n, 1.0f), *y = tu_zeros(n);
	uint8_t *m1 = malloc(n), *m2 = malloc(n), *m3 = malloc(n);
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1, FEDRUN_RNG_DROPOUT, 2, 3);
	ck_assert_int_eq(be->dropout_forward(ctx, n, 0.5f, &r, x, y, m1), 0);
	fedrun_rng_init(&r, 1, FEDRUN_RNG_DROPOUT, 2, 3);
	ck_assert_int_eq(be->dropout_forward(ctx, n, 0.5f, &r, x, y, m2), 0);
	ck_assert_mem_eq(m1, m2, n);
	fedrun_rng_init(&r, 1, FEDRUN_RNG_DROPOUT, 2, 4);
	ck_assert_int_eq(be->dropout_forward(ctx, n, 0.5f, &r, x, y, m3), 0);
	ck_assert(memcmp(m1, m3, n) != 0);
	ck_assert_int_eq(be->dropout_forward(ctx, n, 1.0f, &r, x, y, m3), FEDRUN_EINVAL);
	ck_assert_int_eq(be->dropout_forward(ctx, n, NAN, &r, x, y, m3), FEDRUN_EINVAL);
	free(x), free(y), free(m1), free(m2), free(m3);
}
END_TEST

/* ---- softmax cross-entropy ---------------------------------------------- */

/* Loss and gradient against the reference, with some ignored rows. The
 * loss is a mean of log-sum-exps of up to V terms in float: 1e-6 relative
 * (observed 8e-9); gradients are softmax probabilities over count: 1e-5
 * normwise (observed 1.7e-7; the fast exp is within 3 ulp). In-place must
 * give the same bits as out-of-place. */
START_TEST(test_xent)
{
	static const uint32_t Ns[] = {1, 3, 7, 33}, Vs[] = {1, 2, 33, 1000};
	const uint32_t N = Ns[_i % 4], V = Vs[_i / 4];
	struct fedrun_rng r;
	fedrun_rng_init(&r, 21, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *l = tu_rand(&r, (uint64_t)N * V, -20, 20);
	int32_t *t = malloc(N * sizeof *t);
	for (uint32_t i = 0; i < N; i++)
		t[i] = (i % 3 == 2) ? -100 : (int32_t)fedrun_rng_below(&r, V);
	float *dl = tu_fill((uint64_t)N * V, NAN);
	double *L = tu_dbl(l, (uint64_t)N * V), *DL = tu_dzeros((uint64_t)N * V);
	double loss, ref;
	uint64_t cnt, rcnt;
	ck_assert_int_eq(be->softmax_xent(ctx, N, V, l, t, &loss, &cnt, dl), 0);
	ref = nn_ref_softmax_xent(N, V, L, t, &rcnt, DL);
	ck_assert_uint_eq(cnt, rcnt);
	TU_ASSERT_ERR(fabs(loss - ref) / fmax(fabs(ref), 1.0), 1e-6, "loss");
	TU_ASSERT_ERR(tu_err(dl, DL, (uint64_t)N * V, 1e-30), 1e-5, "dlogits");
	/* loss only */
	double loss2;
	ck_assert_int_eq(be->softmax_xent(ctx, N, V, l, t, &loss2, NULL, NULL), 0);
	ck_assert(loss2 == loss);
	/* in place */
	ck_assert_int_eq(be->softmax_xent(ctx, N, V, l, t, &loss2, NULL, l), 0);
	ck_assert(loss2 == loss);
	ck_assert_mem_eq(l, dl, (uint64_t)N * V * sizeof *l);
	free(l), free(t), free(dl), free(L), free(DL);
}
END_TEST

START_TEST(test_xent_edges)
{
	/* huge logits stay finite; all rows ignored gives 0 and zero grads */
	float l[6] = {1000.0f, -1000.0f, 0.0f, 88.0f, 89.0f, -3.0e38f}, dl[6];
	int32_t t[2] = {1, 2};
	double loss;
	uint64_t cnt;
	ck_assert_int_eq(be->softmax_xent(ctx, 2, 3, l, t, &loss, &cnt, dl), 0);
	ck_assert(isfinite(loss));
	ck_assert_uint_eq(cnt, 2);
	for (int i = 0; i < 6; i++)
		ck_assert(isfinite(dl[i]));
	int32_t ign[2] = {-1, -7};
	ck_assert_int_eq(be->softmax_xent(ctx, 2, 3, l, ign, &loss, &cnt, dl), 0);
	ck_assert(loss == 0.0);
	ck_assert_uint_eq(cnt, 0);
	for (int i = 0; i < 6; i++)
		ck_assert(dl[i] == 0.0f);
	int32_t bad[2] = {0, 3};
	ck_assert_int_eq(be->softmax_xent(ctx, 2, 3, l, bad, &loss, &cnt, dl), FEDRUN_EINVAL);
}
END_TEST

/* softmax_xent_db against the reference (tolerances of test_xent; db is a
 * sum of N gradient rows of size about 1/count each: 1e-5 normwise), and
 * bit for bit against the unfused path it replaces in gru-lm:
 * softmax_xent, fedrun_vec_scale when scale != 1, then linear_backward's
 * column sum into a db that already holds values. N up to 301 crosses
 * several runs of the column sums (32 rows) with a partial last one;
 * every third row is ignored. In place gives the same bits. */
START_TEST(test_xent_db)
{
	static const uint32_t Ns[] = {1, 7, 33, 70, 301}, Vs[] = {1, 33, 1000};
	const uint32_t N = Ns[_i % 5], V = Vs[(_i / 5) % 3];
	const float scale = _i >= 15 ? 0.37f : 1.0f;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 23, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	const uint64_t nv = (uint64_t)N * V;
	float *l = tu_rand(&r, nv, -20, 20), *db0 = tu_rand(&r, V, -1, 1);
	int32_t *t = malloc(N * sizeof *t);
	for (uint32_t i = 0; i < N; i++)
		t[i] = (i % 3 == 2) ? -1 : (int32_t)fedrun_rng_below(&r, V);
	float *dl = tu_fill(nv, NAN), *db = malloc(V * sizeof *db);
	memcpy(db, db0, V * sizeof *db);
	double *L = tu_dbl(l, nv), *DL = tu_dzeros(nv), *DB = tu_dbl(db0, V);
	double loss, ref;
	uint64_t cnt, rcnt;
	ck_assert(FEDRUN_BACKEND_HAS(be, softmax_xent_db));
	ck_assert_int_eq(be->softmax_xent_db(ctx, N, V, l, t, scale, &loss, &cnt, dl, db), 0);
	ref = nn_ref_softmax_xent_db(N, V, L, t, scale, &rcnt, DL, DB);
	ck_assert_uint_eq(cnt, rcnt);
	TU_ASSERT_ERR(fabs(loss - ref) / fmax(fabs(ref), 1.0), 1e-6, "loss");
	TU_ASSERT_ERR(tu_err(dl, DL, nv, 1e-30), 1e-5, "dlogits");
	TU_ASSERT_ERR(tu_err(db, DB, V, 1e-30), 1e-5, "db");

	/* the unfused path, bit for bit */
	float *dl2 = tu_fill(nv, NAN), *db2 = malloc(V * sizeof *db2);
	memcpy(db2, db0, V * sizeof *db2);
	double loss2;
	ck_assert_int_eq(be->softmax_xent(ctx, N, V, l, t, &loss2, NULL, dl2), 0);
	if (scale != 1.0f)
		fedrun_vec_scale(nv, scale, dl2);
	ck_assert_int_eq(be->linear_backward(ctx, N, 0, V, NULL, NULL, dl2, NULL, NULL, db2), 0);
	ck_assert(memcmp(&loss, &loss2, sizeof loss) == 0);
	ck_assert_mem_eq(dl, dl2, nv * sizeof *dl);
	ck_assert_mem_eq(db, db2, V * sizeof *db);

	/* in place, and without db */
	memcpy(db2, db0, V * sizeof *db2);
	float *l2 = malloc(nv * sizeof *l2);
	memcpy(l2, l, nv * sizeof *l2);
	ck_assert_int_eq(be->softmax_xent_db(ctx, N, V, l2, t, scale, &loss2, NULL, l2, db2), 0);
	ck_assert(memcmp(&loss, &loss2, sizeof loss) == 0);
	ck_assert_mem_eq(l2, dl, nv * sizeof *dl);
	ck_assert_mem_eq(db2, db, V * sizeof *db);
	ck_assert_int_eq(be->softmax_xent_db(ctx, N, V, l, t, scale, &loss2, NULL, dl2, NULL), 0);
	ck_assert_mem_eq(dl2, dl, nv * sizeof *dl);
	/* db needs dlogits */
	ck_assert_int_eq(be->softmax_xent_db(ctx, N, V, l, t, scale, &loss2, NULL, NULL, db2),
			 FEDRUN_EINVAL);
	free(l), free(db0), free(t), free(dl), free(db), free(L), free(DL), free(DB), free(dl2),
	    free(db2), free(l2);
}
END_TEST

/* ---- activations -------------------------------------------------------- */

/* Each activation and its derivative. The fast tanh and sigmoid are within
 * 3 ulp, so forward values are within 1e-6 normwise (observed 9e-8). The
 * derivatives lose more to cancellation in 1 - tanh^2 and 1 + tanh for
 * large |x| (observed 8e-7 for GELU): 4e-6. In-place calls give the same
 * bits. */
START_TEST(test_act)
{
	const int nact = FEDRUN_ACT_LAST + 1;
	const enum fedrun_act act = (enum fedrun_act)(_i % nact);
	const uint64_t n = _i < nact ? 33 : 20001;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 31, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *x = tu_rand(&r, n, -6, 6), *y = tu_fill(n, NAN), *dy = tu_rand(&r, n, -1, 1);
	float *dx = tu_fill(n, NAN);
	double *X = tu_dbl(x, n), *Y = tu_dzeros(n), *DY = tu_dbl(dy, n), *DX = tu_dzeros(n);
	ck_assert_int_eq(be->act_forward(ctx, act, n, x, y), 0);
	nn_ref_act_forward(act, n, X, Y);
	TU_ASSERT_ERR(tu_err(y, Y, n, 1e-30), 1e-6, "forward");
	ck_assert_int_eq(be->act_backward(ctx, act, n, x, dy, dx), 0);
	nn_ref_act_backward(act, n, X, DY, DX);
	TU_ASSERT_ERR(tu_err(dx, DX, n, 1e-30), 4e-6, "backward");
	ck_assert_int_eq(be->act_backward(ctx, act, n, x, dy, dy), 0);
	ck_assert_mem_eq(dx, dy, n * sizeof *dx);
	ck_assert_int_eq(be->act_forward(ctx, act, n, x, x), 0);
	ck_assert_mem_eq(x, y, n * sizeof *x);
	ck_assert_int_eq(be->act_forward(ctx, (enum fedrun_act)9, n, x, y), FEDRUN_EINVAL);
	free(x), free(y), free(dy), free(dx), free(X), free(Y), free(DY), free(DX);
}
END_TEST

static Suite *nn_ops_suite(void)
{
	Suite *s = suite_create("nn_ops");
	TCase *tc = tcase_create("cpu");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_blas_threads);
	tcase_add_test(tc, test_fastmath);
	tcase_add_loop_test(tc, test_sgemm, 0, 8);
	tcase_add_loop_test(tc, test_sgemm_batched, 0, 8);
	tcase_add_loop_test(tc, test_gemm_blocks, 0, 8);
	tcase_add_test(tc, test_sgemm_args);
	tcase_add_loop_test(tc, test_linear, 0, 20);
	tcase_add_loop_test(tc, test_embedding, 0, 16);
	tcase_add_loop_test(tc, test_gru, 0, (int)NGRU);
	tcase_add_test(tc, test_gru_optional);
	tcase_add_test(tc, test_threads_bitwise);
	tcase_add_loop_test(tc, test_dropout, 0, 24);
	tcase_add_test(tc, test_dropout_streams);
	tcase_add_loop_test(tc, test_xent, 0, 16);
	tcase_add_test(tc, test_xent_edges);
	tcase_add_loop_test(tc, test_xent_db, 0, 30);
	tcase_add_loop_test(tc, test_act, 0, 2 * (FEDRUN_ACT_LAST + 1));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(nn_ops_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
