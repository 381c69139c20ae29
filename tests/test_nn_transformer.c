/* SPDX-License-Identifier: Apache-2.0 */
/* The Transformer layers of the nn backend: layer norm, attention (key
 * padding and causal masks, dropout on the weights, fused and strided
 * layouts), positional encodings, label-smoothed cross-entropy, and the
 * warm-up learning-rate schedules. Each CPU op is compared with its double
 * reference (core/nn/ref_*.c) on random odd shapes; gradients are checked
 * by central differences of the double reference forward, as in
 * tests/test_nn_grad.c (h = 1e-5: truncation and rounding errors near
 * 1e-10, so the numerical gradient serves as exact); masks are checked to
 * hide exactly what they should, and dropout masks to be a pure function of
 * the stream. Tolerances are normwise (tu_err) and stated at each check;
 * NN_TEST_VERBOSE=1 prints every error measured. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/backend.h"
#include "fedrun/error.h"
#include "fedrun/optim.h"
#include "fedrun/rng.h"
#include "../core/nn/ref.h"
#include "nn_testutil.h"

#define FD_H 1e-5
/* Float analytic gradients against the numerical ones (observed up to
 * 2.1e-7), and the double reference gradients (observed up to 1.5e-10). */
#define TOL_FD_CPU 1e-5
#define TOL_FD_REF 1e-7

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

static double dot(const double *a, const double *b, uint64_t n)
{
	double s = 0.0;
	for (uint64_t i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

typedef double (*loss_fn)(void *ud);

/* Central differences of f over the n doubles at p, one at a time. */
static double *fd_grad(loss_fn f, void *ud, double *p, uint64_t n)
{
	double *g = tu_dzeros(n);
	for (uint64_t i = 0; i < n; i++) {
		double keep = p[i];
		p[i] = keep + FD_H;
		double lp = f(ud);
		p[i] = keep - FD_H;
		double lm = f(ud);
		p[i] = keep;
		g[i] = (lp - lm) / (2 * FD_H);
	}
	return g;
}

#define CHECK_GRAD(f, ud, p, n, cpu, ref, what)                                                    \
	do {                                                                                       \
		double *fd_ = fd_grad((f), (ud), (p), (n));                                        \
		TU_ASSERT_ERR(tu_err((cpu), fd_, (n), 1e-12), TOL_FD_CPU, what " (cpu)");          \
		TU_ASSERT_ERR(tu_err_d((ref), fd_, (n), 1e-12), TOL_FD_REF, what " (ref)");        \
		free(fd_);                                                                         \
	} while (0)

/* ---- the table ---------------------------------------------------------- */

START_TEST(test_table_members)
{
	ck_assert(FEDRUN_BACKEND_HAS(be, layernorm_forward));
	ck_assert(FEDRUN_BACKEND_HAS(be, attn_backward));
	ck_assert(FEDRUN_BACKEND_HAS(be, label_smoothed_xent));
	/* a table built before these members existed does not have them */
	struct fedrun_backend_ops old = *be;
	old.size = (uint32_t)offsetof(struct fedrun_backend_ops, layernorm_forward);
	ck_assert(FEDRUN_BACKEND_HAS(&old, act_backward));
	ck_assert(!FEDRUN_BACKEND_HAS(&old, layernorm_forward));
	ck_assert(!FEDRUN_BACKEND_HAS(&old, label_smoothed_xent));
}
END_TEST

/* ---- layer norm: against the reference ---------------------------------- */

/* Rows sit on an offset of 5 with spread 2 (so the mean matters), and the
 * gradients start non-zero (they must accumulate). Mean and variance are
 * float sums over D <= 1000 terms in fixed lanes; observed normwise errors
 * up to 1.7e-7 for the mean, 6e-7 for y and 1.2e-6 for dx: 1e-6 and 1e-5
 * leave room for other compilers while a wrong term shows as 1e-2 or
 * more. */
START_TEST(test_layernorm)
{
	static const uint32_t Ns[] = {1, 3, 7, 33}, Ds[] = {1, 3, 17, 33, 1000};
	const uint32_t N = Ns[_i % 4], D = Ds[(_i / 4) % 5];
	const bool gain = _i % 3 != 1, bias = _i % 3 != 2;
	const float eps = 1e-5f;
	const uint64_t n = (uint64_t)N * D;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 41, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *x = tu_rand(&r, n, 3, 7), *g = gain ? tu_rand(&r, D, 0.5, 1.5) : NULL;
	float *bb = bias ? tu_rand(&r, D, -1, 1) : NULL, *y = tu_fill(n, NAN);
	float *cache = tu_fill(2 * N, NAN), *dy = tu_rand(&r, n, -1, 1), *dx = tu_fill(n, NAN);
	float *dg = tu_rand(&r, D, -1, 1), *db = tu_rand(&r, D, -1, 1);
	double *X = tu_dbl(x, n), *G = gain ? tu_dbl(g, D) : NULL,
	       *Bv = bias ? tu_dbl(bb, D) : NULL;
	double *Y = tu_dzeros(n), *M = tu_dzeros(N), *R = tu_dzeros(N), *DY = tu_dbl(dy, n);
	double *DX = tu_dzeros(n), *DG = tu_dbl(dg, D), *DB = tu_dbl(db, D);

	ck_assert_int_eq(be->layernorm_forward(ctx, N, D, eps, x, g, bb, y, cache), 0);
	nn_ref_layernorm_forward(N, D, eps, X, G, Bv, Y, M, R);
	TU_ASSERT_ERR(tu_err(y, Y, n, 1e-30), 1e-5, "y");
	TU_ASSERT_ERR(tu_err(cache, M, N, 1e-30), 1e-6, "mean");
	TU_ASSERT_ERR(tu_err(cache + N, R, N, 1e-30), 1e-5, "rstd");
	ck_assert_int_eq(be->layernorm_backward(ctx, N, D, x, g, cache, dy, dx, gain ? dg : NULL,
						bias ? db : NULL),
			 0);
	/* a parameter without a gradient buffer keeps its old values */
	nn_ref_layernorm_backward(N, D, eps, X, G, DY, DX, gain ? DG : NULL, bias ? DB : NULL);
	TU_ASSERT_ERR(tu_err(dx, DX, n, 1e-30), 1e-5, "dx");
	TU_ASSERT_ERR(tu_err(dg, DG, D, 1e-30), 1e-5, "dgain");
	TU_ASSERT_ERR(tu_err(db, DB, D, 1e-30), 1e-5, "dbias");
	/* dx in place over dy: the same bits */
	ck_assert_int_eq(be->layernorm_backward(ctx, N, D, x, g, cache, dy, dy, NULL, NULL), 0);
	ck_assert_mem_eq(dx, dy, n * sizeof *dx);
	free(x), free(g), free(bb), free(y), free(cache), free(dy), free(dx), free(dg), free(db);
	free(X), free(G), free(Bv), free(Y), free(M), free(R), free(DY), free(DX), free(DG),
	    free(DB);
}
END_TEST

START_TEST(test_layernorm_args)
{
	float x[6] = {1, 2, 3, 4, 5, 6}, y[6], c[4];
	ck_assert_int_eq(be->layernorm_forward(ctx, 2, 0, 1e-5f, x, NULL, NULL, y, c),
			 FEDRUN_EINVAL);
	ck_assert_int_eq(be->layernorm_forward(ctx, 2, 3, -1.0f, x, NULL, NULL, y, c),
			 FEDRUN_EINVAL);
	ck_assert_int_eq(be->layernorm_forward(ctx, 2, 3, 1e-5f, x, NULL, NULL, y, NULL),
			 FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "layernorm_forward"));
	/* a constant row normalizes to 0 (variance 0, rstd = 1/sqrt(eps)) */
	float k[3] = {2, 2, 2}, yk[3], ck[2];
	ck_assert_int_eq(be->layernorm_forward(ctx, 1, 3, 1e-5f, k, NULL, NULL, yk, ck), 0);
	ck_assert(yk[0] == 0.0f && yk[1] == 0.0f && yk[2] == 0.0f);
	ck_assert(ck[0] == 2.0f && isfinite(ck[1]));
}
END_TEST

/* ---- attention: data in four layouts ------------------------------------ */

enum attn_layout {
	L_DENSE,  /* q, k, v each (B,T,D) */
	L_PADDED, /* row strides beyond D, the pads NaN: never read, never written */
	L_QKV,	  /* self-attention on one fused (B,T,3D) projection */
	L_KV	  /* q dense, k and v in one fused (B,Tk,2D) projection */
};

struct attn_case {
	uint32_t B, H, Tq, Tk, dh;
	bool causal;
	int lens; /* 0: key_len NULL; 1: random in [1, Tk]; 2: also one 0 */
	float p;
	enum attn_layout layout;
};

static const struct attn_case acases[] = {
    {1, 1, 1, 1, 1, false, 0, 0.0f, L_DENSE},
    {2, 3, 5, 7, 4, false, 1, 0.0f, L_DENSE},	 /* cross-attention, padding */
    {3, 2, 7, 7, 5, true, 1, 0.0f, L_QKV},	 /* decoder self-attention */
    {3, 2, 6, 9, 3, false, 2, 0.0f, L_KV},	 /* encoder-decoder, one empty source */
    {2, 4, 9, 5, 3, true, 0, 0.0f, L_PADDED},	 /* causal, Tq > Tk: early queries see nothing */
    {2, 2, 5, 8, 3, true, 1, 0.0f, L_PADDED},	 /* causal, Tq < Tk (incremental decoding) */
    {2, 3, 11, 11, 7, true, 1, 0.3f, L_QKV},	 /* dropout on the weights */
    {4, 2, 13, 17, 16, false, 2, 0.1f, L_DENSE}, /* dropout and an empty sequence */
    {2, 8, 33, 33, 8, true, 1, 0.1f, L_DENSE},	 /* rows of 33: lanes and tails */
    {1, 2, 40, 300, 5, false, 1, 0.0f, L_KV},	 /* long keys: H Tq Tk > NN_PAR_MIN */
};
#define NACASES (sizeof acases / sizeof acases[0])

/* The arrays of one attention problem. Inputs live in up to three arenas
 * (a[]), q, k, v pointing into them at offsets; the gradient arenas (ga[])
 * have the same structure. Double copies (A[], GA[]) feed the reference. */
struct attn_data {
	struct fedrun_attn_dims d;
	int na;
	uint64_t alen[3];
	float *a[3], *ga[3];
	double *A[3], *GA[3];
	int qa, ka, va;		   /* arena of q, k, v */
	uint64_t qo, ko, vo;	   /* offsets in their arenas */
	int32_t *len;		   /* (B) or NULL */
	float *out, *dout, *cache; /* (B,Tq,D) (B,Tq,D) */
	double *OUT, *DOUT, *P;	   /* reference out, dout, probabilities */
	uint64_t nout, nP;
	uint8_t *mask; /* CPU dropout mask (inside cache) or NULL */
	struct fedrun_rng stream;
};

static void attn_make(struct attn_data *t, const struct attn_case *c, uint32_t seed)
{
	memset(t, 0, sizeof *t);
	const uint32_t D = c->H * c->dh;
	t->d = (struct fedrun_attn_dims){.batch = c->B,
					 .heads = c->H,
					 .tq = c->Tq,
					 .tk = c->Tk,
					 .dh = c->dh,
					 .causal = c->causal,
					 .dropout = c->p};
	const uint64_t rq = (uint64_t)c->B * c->Tq, rk = (uint64_t)c->B * c->Tk;
	switch (c->layout) {
	case L_DENSE:
	case L_PADDED: {
		uint32_t pad = c->layout == L_PADDED;
		t->d.ldq = pad ? D + 3 : 0, t->d.ldk = pad ? D + 1 : 0, t->d.ldv = pad ? D + 2 : 0;
		t->na = 3;
		t->alen[0] = rq * (D + 3 * pad), t->alen[1] = rk * (D + pad);
		t->alen[2] = rk * (D + 2 * pad);
		t->qa = 0, t->ka = 1, t->va = 2;
		break;
	}
	case L_QKV:
		ck_assert_uint_eq(c->Tq, c->Tk);
		t->d.ldq = t->d.ldk = t->d.ldv = 3 * D;
		t->na = 1, t->alen[0] = rq * 3 * D;
		t->qa = t->ka = t->va = 0, t->ko = D, t->vo = 2 * D;
		break;
	case L_KV:
		t->d.ldk = t->d.ldv = 2 * D;
		t->na = 2, t->alen[0] = rq * D, t->alen[1] = rk * 2 * D;
		t->qa = 0, t->ka = t->va = 1, t->vo = D;
		break;
	}
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_PLUGIN, 2, 0);
	for (int i = 0; i < t->na; i++) {
		/* entries of about 1.5: scores of a few units, peaked softmaxes */
		t->a[i] = tu_rand(&r, t->alen[i], -1.5, 1.5);
		t->ga[i] = tu_fill(t->alen[i], NAN);
		t->GA[i] = tu_dzeros(t->alen[i]);
	}
	if (c->layout == L_PADDED) { /* NaN pads: reading one would show */
		const uint32_t ld[3] = {D + 3, D + 1, D + 2};
		for (int i = 0; i < 3; i++)
			for (uint64_t e = 0; e < t->alen[i]; e++)
				if (e % ld[i] >= D)
					t->a[i][e] = NAN;
	}
	for (int i = 0; i < t->na; i++)
		t->A[i] = tu_dbl(t->a[i], t->alen[i]);
	if (c->lens) {
		t->len = malloc(c->B * sizeof *t->len);
		for (uint32_t b = 0; b < c->B; b++)
			t->len[b] = 1 + (int32_t)fedrun_rng_below(&r, c->Tk);
		t->len[0] = (int32_t)c->Tk;
		if (c->lens == 2)
			t->len[c->B - 1] = 0;
	}
	t->nout = rq * D;
	t->nP = (uint64_t)c->B * c->H * c->Tq * c->Tk;
	t->out = tu_fill(t->nout, NAN);
	t->dout = tu_rand(&r, t->nout, -1, 1);
	t->cache = tu_fill(be->attn_cache_floats(ctx, &t->d), NAN);
	t->OUT = tu_dzeros(t->nout);
	t->DOUT = tu_dbl(t->dout, t->nout);
	t->P = tu_dzeros(t->nP);
	fedrun_rng_init(&t->stream, seed, FEDRUN_RNG_DROPOUT, 1, 2);
}

static void attn_free(struct attn_data *t)
{
	for (int i = 0; i < t->na; i++)
		free(t->a[i]), free(t->ga[i]), free(t->A[i]), free(t->GA[i]);
	free(t->len), free(t->out), free(t->dout), free(t->cache), free(t->OUT), free(t->DOUT);
	free(t->P);
}

#define Q(t) ((t)->a[(t)->qa] + (t)->qo)
#define K(t) ((t)->a[(t)->ka] + (t)->ko)
#define V(t) ((t)->a[(t)->va] + (t)->vo)
#define GQ(t) ((t)->ga[(t)->qa] + (t)->qo)
#define GK(t) ((t)->ga[(t)->ka] + (t)->ko)
#define GV(t) ((t)->ga[(t)->va] + (t)->vo)
#define RQ(t) ((t)->A[(t)->qa] + (t)->qo)
#define RK(t) ((t)->A[(t)->ka] + (t)->ko)
#define RV(t) ((t)->A[(t)->va] + (t)->vo)
#define RGQ(t) ((t)->GA[(t)->qa] + (t)->qo)
#define RGK(t) ((t)->GA[(t)->ka] + (t)->ko)
#define RGV(t) ((t)->GA[(t)->va] + (t)->vo)

/* CPU forward and backward; the mask then points into the cache. */
static void attn_run_cpu(struct attn_data *t)
{
	struct fedrun_rng s = t->stream;
	ck_assert_int_eq(
	    be->attn_forward(ctx, &t->d, Q(t), K(t), V(t), t->len, &s, t->out, t->cache), 0);
	t->mask = t->d.dropout > 0.0f ? (uint8_t *)(t->cache + t->nP) : NULL;
	ck_assert_int_eq(be->attn_backward(ctx, &t->d, Q(t), K(t), V(t), t->len, t->cache, t->dout,
					   GQ(t), GK(t), GV(t)),
			 0);
}

static void attn_run_ref(struct attn_data *t)
{
	nn_ref_attn_forward(&t->d, RQ(t), RK(t), RV(t), t->len, t->mask, t->OUT, t->P);
	nn_ref_attn_backward(&t->d, RQ(t), RK(t), RV(t), t->len, t->mask, t->DOUT, RGQ(t), RGK(t),
			     RGV(t));
}

/* The D used columns of `rows` rows of stride ld, as a dense float or
 * double array. */
static float *gather_f(const float *a, uint64_t rows, uint32_t D, uint32_t ld)
{
	float *o = malloc((rows && D ? rows * D : 1) * sizeof *o);
	for (uint64_t r = 0; r < rows; r++)
		memcpy(o + r * D, a + r * ld, D * sizeof *o);
	return o;
}

static double *gather_d(const double *a, uint64_t rows, uint32_t D, uint32_t ld)
{
	double *o = malloc((rows && D ? rows * D : 1) * sizeof *o);
	for (uint64_t r = 0; r < rows; r++)
		memcpy(o + r * D, a + r * ld, D * sizeof *o);
	return o;
}

static double grad_err(const struct attn_data *t, const float *g, const double *G, uint64_t rows,
		       uint32_t ld)
{
	const uint32_t D = t->d.heads * t->d.dh;
	ld = ld ? ld : D;
	float *a = gather_f(g, rows, D, ld);
	double *b = gather_d(G, rows, D, ld);
	double e = tu_err(a, b, rows * D, 1e-6);
	free(a), free(b);
	return e;
}

/* ---- attention: against the reference ----------------------------------- */

/* Outputs, probabilities and the three gradients against the reference.
 * The CPU kernel rounds scores in float sgemms over dh terms, the fast exp
 * (3 ulp) and the products with V over up to Tk terms: observed normwise
 * errors up to 2e-7 (P, out) and 2.5e-7 (gradients); tolerance 1e-5. The
 * dropout mask is the reference dropout's draw from the same stream, and
 * the stream ends where dropout_forward over B H Tq Tk elements leaves it.
 * Pads of strided layouts keep their NaN bits. */
START_TEST(test_attn)
{
	const struct attn_case *c = &acases[_i];
	struct attn_data t;
	attn_make(&t, c, 200 + (uint32_t)_i);
	attn_run_cpu(&t);
	if (t.mask) {
		uint8_t *m = malloc(t.nP);
		double *zx = tu_dzeros(t.nP), *zy = tu_dzeros(t.nP);
		struct fedrun_rng s1 = t.stream, s2 = t.stream;
		nn_ref_dropout_forward(t.nP, c->p, &s1, zx, zy, m);
		ck_assert_mem_eq(m, t.mask, t.nP);
		float *fx = tu_zeros(t.nP), *fy = tu_zeros(t.nP);
		uint8_t *m2 = malloc(t.nP);
		struct fedrun_rng s3 = t.stream;
		ck_assert_int_eq(
		    be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, &s2, t.out, t.cache),
		    0);
		ck_assert_int_eq(be->dropout_forward(ctx, t.nP, c->p, &s3, fx, fy, m2), 0);
		ck_assert_mem_eq(s2.ctr, s3.ctr, sizeof s2.ctr);
		ck_assert_uint_eq(s2.pos, s3.pos);
		free(m), free(zx), free(zy), free(fx), free(fy), free(m2);
	}
	attn_run_ref(&t);
	const uint32_t D = c->H * c->dh;
	const uint64_t rq = (uint64_t)c->B * c->Tq, rk = (uint64_t)c->B * c->Tk;
	TU_ASSERT_ERR(tu_err(t.out, t.OUT, t.nout, 1e-6), 1e-5, "out");
	TU_ASSERT_ERR(tu_err(t.cache, t.P, t.nP, 1e-6), 1e-5, "P");
	TU_ASSERT_ERR(grad_err(&t, GQ(&t), RGQ(&t), rq, t.d.ldq), 1e-5, "dq");
	TU_ASSERT_ERR(grad_err(&t, GK(&t), RGK(&t), rk, t.d.ldk), 1e-5, "dk");
	TU_ASSERT_ERR(grad_err(&t, GV(&t), RGV(&t), rk, t.d.ldv), 1e-5, "dv");
	if (c->layout == L_PADDED) {
		const uint32_t ld[3] = {D + 3, D + 1, D + 2};
		for (int i = 0; i < 3; i++)
			for (uint64_t e = 0; e < t.alen[i]; e++)
				if (e % ld[i] >= D)
					ck_assert_msg(isnan(t.ga[i][e]), "pad %d/%llu written", i,
						      (unsigned long long)e);
	} else {
		/* every gradient entry written */
		for (int i = 0; i < t.na; i++)
			for (uint64_t e = 0; e < t.alen[i]; e++)
				ck_assert_msg(isfinite(t.ga[i][e]), "grad %d/%llu not written", i,
					      (unsigned long long)e);
	}
	attn_free(&t);
}
END_TEST

/* Skipping gradients: NULL dq, dk or dv leaves the others as they were. */
START_TEST(test_attn_optional)
{
	struct attn_data t;
	attn_make(&t, &acases[6], 7);
	attn_run_cpu(&t);
	const uint64_t n = t.alen[0];
	float *full = malloc(n * sizeof *full);
	memcpy(full, t.ga[0], n * sizeof *full);
	const uint32_t D = t.d.heads * t.d.dh;
	for (int skip = 0; skip < 3; skip++) {
		float *g = tu_fill(n, NAN);
		ck_assert_int_eq(be->attn_backward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, t.cache,
						   t.dout, skip == 0 ? NULL : g,
						   skip == 1 ? NULL : g + D,
						   skip == 2 ? NULL : g + 2 * D),
				 0);
		for (uint64_t e = 0; e < n; e++) {
			uint32_t part = (uint32_t)(e % (3 * D)) / D;
			if (part == (uint32_t)skip)
				ck_assert(isnan(g[e]));
			else
				ck_assert(memcmp(&g[e], &full[e], sizeof *g) == 0);
		}
		free(g);
	}
	free(full);
	attn_free(&t);
}
END_TEST

/* ---- attention: the masks ------------------------------------------------ */

/* Hidden keys get probability exactly 0, visible rows sum to 1, queries
 * that see no key give exactly 0; changing hidden keys and values, or any
 * key and value in a query's future, leaves its output the same bits, and
 * hidden keys get exactly zero gradient. */
START_TEST(test_attn_masks)
{
	const struct attn_case *c = &acases[_i];
	struct attn_data t;
	attn_make(&t, c, 300 + (uint32_t)_i);
	attn_run_cpu(&t);
	const uint32_t D = c->H * c->dh;
	const uint32_t ldk = t.d.ldk ? t.d.ldk : D, ldv = t.d.ldv ? t.d.ldv : D;
	for (uint32_t b = 0; b < c->B; b++) {
		const int64_t len = t.len ? (int64_t)t.len[b] : (int64_t)c->Tk;
		for (uint32_t h = 0; h < c->H; h++)
			for (uint32_t i = 0; i < c->Tq; i++) {
				const float *p =
				    t.cache + (((uint64_t)b * c->H + h) * c->Tq + i) * c->Tk;
				double s = 0.0;
				int seen = 0;
				for (uint32_t j = 0; j < c->Tk; j++) {
					bool vis =
					    j < len && (!c->causal ||
							(int64_t)j <= (int64_t)i + c->Tk - c->Tq);
					if (!vis)
						ck_assert_msg(p[j] == 0.0f, "b%u h%u i%u j%u: %g",
							      b, h, i, j, (double)p[j]);
					seen += vis;
					s += p[j];
				}
				if (seen)
					ck_assert_msg(fabs(s - 1.0) < 1e-6, "row sum %g", s);
				else
					for (uint32_t e = 0; e < c->dh; e++)
						ck_assert(t.out[((uint64_t)b * c->Tq + i) * D +
								(uint64_t)h * c->dh + e] == 0.0f);
			}
		for (int64_t j = len; j < c->Tk; j++)
			for (uint32_t e = 0; e < D; e++) {
				ck_assert(GK(&t)[((uint64_t)b * c->Tk + j) * ldk + e] == 0.0f);
				ck_assert(GV(&t)[((uint64_t)b * c->Tk + j) * ldv + e] == 0.0f);
			}
	}
	/* Perturb hidden keys and values: the output does not move. With a
	 * causal mask, key j is in the future of every query i < j - (Tk -
	 * Tq); perturbing the last key must leave all those outputs alone. */
	float *out0 = malloc(t.nout * sizeof *out0);
	memcpy(out0, t.out, t.nout * sizeof *out0);
	for (uint32_t b = 0; b < c->B; b++) {
		const int64_t len = t.len ? (int64_t)t.len[b] : (int64_t)c->Tk;
		for (int64_t j = len; j < c->Tk; j++)
			for (uint32_t e = 0; e < D; e++) {
				K(&t)[((uint64_t)b * c->Tk + j) * ldk + e] += 3.0f;
				V(&t)[((uint64_t)b * c->Tk + j) * ldv + e] -= 5.0f;
			}
	}
	struct fedrun_rng s0 = t.stream;
	ck_assert_int_eq(
	    be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, &s0, t.out, t.cache), 0);
	ck_assert_mem_eq(out0, t.out, t.nout * sizeof *out0);
	if (c->causal) {
		const uint32_t j = c->Tk - 1; /* the last key */
		for (uint32_t b = 0; b < c->B; b++)
			for (uint32_t e = 0; e < D; e++) {
				K(&t)[((uint64_t)b * c->Tk + j) * ldk + e] += 1.0f;
				V(&t)[((uint64_t)b * c->Tk + j) * ldv + e] += 2.0f;
			}
		struct fedrun_rng s = t.stream;
		ck_assert_int_eq(
		    be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, &s, t.out, t.cache), 0);
		/* query i sees key j iff j <= i + Tk - Tq */
		int64_t first = (int64_t)j - ((int64_t)c->Tk - c->Tq); /* first query that sees j */
		uint64_t changed = 0;
		for (uint32_t b = 0; b < c->B; b++)
			for (uint32_t i = 0; i < c->Tq; i++) {
				const float *o0 = out0 + ((uint64_t)b * c->Tq + i) * D;
				const float *o1 = t.out + ((uint64_t)b * c->Tq + i) * D;
				if ((int64_t)i < first)
					ck_assert_msg(memcmp(o0, o1, D * sizeof *o0) == 0,
						      "query %u of %u saw key %u", i, b, j);
				else
					changed += memcmp(o0, o1, D * sizeof *o0) != 0;
			}
		/* and it does reach the queries that may see it: sequence 0
		 * always has all Tk keys */
		if (first < (int64_t)c->Tq)
			ck_assert_uint_gt(changed, 0);
	}
	free(out0);
	attn_free(&t);
}
END_TEST

/* ---- attention: dropout streams ------------------------------------------ */

/* The dropout mask of the weights is a function of the stream alone: the
 * same stream gives the same bits of out and cache, another client's
 * stream another mask; p = 0 leaves the stream untouched. */
START_TEST(test_attn_dropout_streams)
{
	struct attn_data t;
	attn_make(&t, &acases[6], 11);
	const uint64_t nc = be->attn_cache_floats(ctx, &t.d);
	ck_assert_uint_eq(nc, t.nP + (t.nP + 3) / 4);
	float *out2 = tu_zeros(t.nout), *cache2 = tu_zeros(nc);
	struct fedrun_rng s1, s2;
	fedrun_rng_init(&s1, 5, FEDRUN_RNG_DROPOUT, 1, 7);
	fedrun_rng_init(&s2, 5, FEDRUN_RNG_DROPOUT, 1, 7);
	ck_assert_int_eq(
	    be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, &s1, t.out, t.cache), 0);
	ck_assert_int_eq(be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, &s2, out2, cache2),
			 0);
	ck_assert_mem_eq(t.out, out2, t.nout * sizeof *out2);
	ck_assert_mem_eq(t.cache, cache2, t.nP * sizeof *cache2 + t.nP); /* P, then mask bytes */
	/* the stream moved on: the next call draws another mask */
	ck_assert_int_eq(be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, &s2, out2, cache2),
			 0);
	ck_assert(memcmp(t.cache + t.nP, cache2 + t.nP, t.nP) != 0);
	fedrun_rng_init(&s2, 5, FEDRUN_RNG_DROPOUT, 1, 8);
	ck_assert_int_eq(be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, &s2, out2, cache2),
			 0);
	ck_assert(memcmp(t.cache + t.nP, cache2 + t.nP, t.nP) != 0);
	/* about 1 - p kept (within 5 standard deviations) */
	uint64_t kept = 0;
	const uint8_t *m = (const uint8_t *)(t.cache + t.nP);
	for (uint64_t i = 0; i < t.nP; i++)
		kept += m[i];
	const double p = t.d.dropout, sd = sqrt(t.nP * p * (1 - p));
	ck_assert(fabs((double)kept - t.nP * (1 - p)) <= 5 * sd);
	/* p = 0: the stream is not used, the cache has no mask part */
	t.d.dropout = 0.0f;
	ck_assert_uint_eq(be->attn_cache_floats(ctx, &t.d), t.nP);
	struct fedrun_rng s3 = s1;
	ck_assert_int_eq(be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, &s3, out2, cache2),
			 0);
	ck_assert_mem_eq(&s3, &s1, sizeof s3);
	ck_assert_int_eq(
	    be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), t.len, NULL, out2, cache2), 0);
	free(out2), free(cache2);
	attn_free(&t);
}
END_TEST

START_TEST(test_attn_args)
{
	struct attn_data t;
	attn_make(&t, &acases[1], 3);
	struct fedrun_rng s = t.stream;
	struct fedrun_attn_dims d = t.d;
#define FWD(dd, len, rng)                                                                          \
	be->attn_forward(ctx, &(dd), Q(&t), K(&t), V(&t), (len), (rng), t.out, t.cache)
	d.dh = 0;
	ck_assert_int_eq(FWD(d, t.len, &s), FEDRUN_EINVAL);
	d = t.d, d.ldq = d.heads * d.dh - 1;
	ck_assert_int_eq(FWD(d, t.len, &s), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "ldq"));
	d = t.d, d.dropout = 1.0f;
	ck_assert_int_eq(FWD(d, t.len, &s), FEDRUN_EINVAL);
	d = t.d, d.dropout = 0.5f;
	ck_assert_int_eq(FWD(d, t.len, NULL), FEDRUN_EINVAL);
	d = t.d, d.scale = INFINITY;
	ck_assert_int_eq(FWD(d, t.len, &s), FEDRUN_EINVAL);
	int32_t bad[2] = {3, (int32_t)t.d.tk + 1};
	ck_assert_int_eq(FWD(t.d, bad, &s), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "key_len[1]"));
	bad[1] = -1;
	ck_assert_int_eq(be->attn_backward(ctx, &t.d, Q(&t), K(&t), V(&t), bad, t.cache, t.dout,
					   GQ(&t), GK(&t), GV(&t)),
			 FEDRUN_EINVAL);
	ck_assert_int_eq(be->attn_forward(ctx, NULL, Q(&t), K(&t), V(&t), NULL, &s, t.out, t.cache),
			 FEDRUN_EINVAL);
	ck_assert_int_eq(be->attn_forward(ctx, &t.d, Q(&t), K(&t), V(&t), NULL, &s, t.out, NULL),
			 FEDRUN_EINVAL);
	/* an explicit scale equal to the default gives the same bits */
	float *o2 = tu_zeros(t.nout);
	ck_assert_int_eq(FWD(t.d, t.len, &s), 0);
	d = t.d, d.scale = (float)(1.0 / sqrt((double)t.d.dh));
	ck_assert_int_eq(be->attn_forward(ctx, &d, Q(&t), K(&t), V(&t), t.len, &s, o2, t.cache), 0);
	ck_assert_mem_eq(o2, t.out, t.nout * sizeof *o2);
#undef FWD
	free(o2);
	attn_free(&t);
}
END_TEST

/* ---- positional encodings ------------------------------------------------ */

/* Against sin and cos in double: the float results are within half an ulp
 * of values below sqrt(D) |x| + 1 (observed 8e-8 normwise); 1e-6. In
 * place and x = NULL agree with the out-of-place result. */
START_TEST(test_posenc)
{
	static const uint32_t Bs[] = {1, 3}, Ts[] = {1, 7, 50}, Ds[] = {1, 6, 33, 512};
	const uint32_t B = Bs[_i % 2], T = Ts[(_i / 2) % 3], D = Ds[(_i / 6) % 4];
	const uint32_t pos0 = _i % 5 == 0 ? 1000 : 0;
	const uint64_t n = (uint64_t)B * T * D;
	const float scale = sqrtf((float)D);
	struct fedrun_rng r;
	fedrun_rng_init(&r, 51, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *x = tu_rand(&r, n, -0.1, 0.1), *y = tu_fill(n, NAN), *pe = tu_fill(n, NAN);
	double *X = tu_dbl(x, n), *Y = tu_dzeros(n), *PE = tu_dzeros(n);
	ck_assert_int_eq(be->posenc_forward(ctx, B, T, D, pos0, scale, x, y), 0);
	nn_ref_posenc_forward(B, T, D, pos0, scale, X, Y);
	TU_ASSERT_ERR(tu_err(y, Y, n, 1e-30), 1e-6, "y");
	ck_assert_int_eq(be->posenc_forward(ctx, B, T, D, pos0, scale, NULL, pe), 0);
	nn_ref_posenc_forward(B, T, D, pos0, scale, NULL, PE);
	TU_ASSERT_ERR(tu_err(pe, PE, n, 1e-30), 1e-6, "PE");
	/* PE(pos, 0) = sin(pos), PE(pos, 1) = cos(pos) */
	ck_assert(fabs(pe[0] - sin((double)pos0)) < 1e-7);
	if (D > 1)
		ck_assert(fabs(pe[1] - cos((double)pos0)) < 1e-7);
	ck_assert_int_eq(be->posenc_forward(ctx, B, T, D, pos0, scale, x, x), 0);
	ck_assert_mem_eq(x, y, n * sizeof *x);
	float *dx = tu_fill(n, NAN);
	ck_assert_int_eq(be->posenc_backward(ctx, B, T, D, scale, y, dx), 0);
	for (uint64_t i = 0; i < n; i++)
		ck_assert(dx[i] == scale * y[i]);
	ck_assert_int_eq(be->posenc_forward(ctx, B, T, D, 0, NAN, x, y), FEDRUN_EINVAL);
	free(x), free(y), free(pe), free(X), free(Y), free(PE), free(dx);
}
END_TEST

/* ---- label-smoothed cross-entropy ---------------------------------------- */

/* Loss, NLL and gradient against the definition, with padding rows. Float
 * log-sum-exps and logit sums of up to V terms: the smoothing term
 * log Z - mean(l) of logits in [-20, 20] loses most (observed 2.6e-7
 * relative on the loss, 1.1e-8 on the NLL): 2e-6 and 1e-6; the gradient
 * 1e-5 normwise (observed 1.5e-6). In place gives the same bits. With
 * eps = 0 it is softmax_xent. */
START_TEST(test_ls_xent)
{
	static const uint32_t Ns[] = {1, 3, 7, 33}, Vs[] = {1, 2, 33, 1000};
	static const float epss[] = {0.0f, 0.1f, 1.0f};
	const uint32_t N = Ns[_i % 4], V = Vs[(_i / 4) % 4];
	const float eps = epss[_i / 16];
	const uint64_t n = (uint64_t)N * V;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 61, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *l = tu_rand(&r, n, -20, 20), *dl = tu_fill(n, NAN);
	int32_t *t = malloc(N * sizeof *t);
	for (uint32_t i = 0; i < N; i++)
		t[i] = (i % 3 == 2) ? -1 : (int32_t)fedrun_rng_below(&r, V);
	double *L = tu_dbl(l, n), *DL = tu_dzeros(n);
	double loss, nll, rloss, rnll;
	uint64_t cnt, rcnt;
	ck_assert_int_eq(be->label_smoothed_xent(ctx, N, V, eps, l, t, &loss, &nll, &cnt, dl), 0);
	rloss = nn_ref_label_smoothed_xent(N, V, eps, L, t, &rnll, &rcnt, DL);
	ck_assert_uint_eq(cnt, rcnt);
	TU_ASSERT_ERR(fabs(loss - rloss) / fmax(fabs(rloss), 1.0), 2e-6, "loss");
	TU_ASSERT_ERR(fabs(nll - rnll) / fmax(fabs(rnll), 1.0), 1e-6, "nll");
	/* floor 0.01: with V = 1 every gradient is 0 up to rounding of
	 * 1 / count, the scale of the entries */
	TU_ASSERT_ERR(tu_err(dl, DL, n, 1e-2), 1e-5, "dlogits");
	for (uint32_t i = 2; i < N; i += 3)
		for (uint32_t j = 0; j < V; j++)
			ck_assert(dl[(uint64_t)i * V + j] == 0.0f);
	/* the NLL is the plain cross-entropy */
	double xl;
	ck_assert_int_eq(be->softmax_xent(ctx, N, V, l, t, &xl, NULL, NULL), 0);
	ck_assert(fabs(xl - nll) <= 1e-6 * fmax(fabs(xl), 1.0));
	if (eps == 0.0f) {
		float *dx = tu_zeros(n);
		ck_assert_int_eq(be->softmax_xent(ctx, N, V, l, t, NULL, NULL, dx), 0);
		double *DX = tu_dbl(dx, n);
		TU_ASSERT_ERR(tu_err(dl, DX, n, 1e-2), 1e-6, "eps 0 = softmax_xent");
		free(dx), free(DX);
	}
	/* loss only, then in place */
	double loss2, nll2;
	ck_assert_int_eq(be->label_smoothed_xent(ctx, N, V, eps, l, t, &loss2, &nll2, NULL, NULL),
			 0);
	ck_assert(loss2 == loss && nll2 == nll);
	ck_assert_int_eq(be->label_smoothed_xent(ctx, N, V, eps, l, t, &loss2, NULL, NULL, l), 0);
	ck_assert(loss2 == loss);
	ck_assert_mem_eq(l, dl, n * sizeof *l);
	free(l), free(dl), free(t), free(L), free(DL);
}
END_TEST

START_TEST(test_ls_xent_edges)
{
	float l[6] = {1000.0f, -1000.0f, 0.0f, 88.0f, 89.0f, -3.0e38f}, dl[6];
	int32_t t[2] = {1, 2};
	double loss, nll;
	uint64_t cnt;
	ck_assert_int_eq(be->label_smoothed_xent(ctx, 2, 3, 0.1f, l, t, &loss, &nll, &cnt, dl), 0);
	ck_assert(isfinite(nll) && cnt == 2);
	for (int i = 0; i < 6; i++)
		ck_assert(isfinite(dl[i]));
	/* every row padding: zeros */
	int32_t pad[2] = {-1, -1};
	ck_assert_int_eq(be->label_smoothed_xent(ctx, 2, 3, 0.1f, l, pad, &loss, &nll, &cnt, dl),
			 0);
	ck_assert(loss == 0.0 && nll == 0.0 && cnt == 0);
	for (int i = 0; i < 6; i++)
		ck_assert(dl[i] == 0.0f);
	/* uniform logits: nll = smooth term = log V, so loss = log V */
	float u[4] = {0.5f, 0.5f, 0.5f, 0.5f};
	int32_t t1[1] = {3};
	ck_assert_int_eq(be->label_smoothed_xent(ctx, 1, 4, 0.3f, u, t1, &loss, &nll, NULL, NULL),
			 0);
	ck_assert(fabs(loss - log(4.0)) < 1e-6 && fabs(nll - log(4.0)) < 1e-6);
	ck_assert_int_eq(be->label_smoothed_xent(ctx, 2, 3, 1.5f, l, t, &loss, &nll, &cnt, dl),
			 FEDRUN_EINVAL);
	int32_t bad[2] = {0, 3};
	ck_assert_int_eq(be->label_smoothed_xent(ctx, 2, 3, 0.1f, l, bad, &loss, &nll, &cnt, dl),
			 FEDRUN_EINVAL);
}
END_TEST

/* ---- threads ---------------------------------------------------------------- */

/* Contexts of 1 and 2 OpenMP threads give the same bits, on sizes above
 * NN_PAR_MIN so that the parallel regions run. */
START_TEST(test_threads_bitwise)
{
	void *c1, *c2;
	struct fedrun_backend_ctx_cfg k1 = {.size = sizeof k1, .threads = 1},
				      k2 = {.size = sizeof k2, .threads = 2};
	ck_assert_int_eq(be->ctx_create(&k1, &c1), 0);
	ck_assert_int_eq(be->ctx_create(&k2, &c2), 0);
	void *cs[2] = {c1, c2};
	struct fedrun_rng r;
	fedrun_rng_init(&r, 71, FEDRUN_RNG_PLUGIN, 0, 0);

	const uint32_t N = 301, D = 97;
	const uint64_t n = (uint64_t)N * D;
	float *x = tu_rand(&r, n, -2, 2), *g = tu_rand(&r, D, 0, 2), *bb = tu_rand(&r, D, -1, 1);
	float *dy = tu_rand(&r, n, -1, 1), *y[2], *cache[2], *dx[2], *dg[2], *db[2];
	for (int i = 0; i < 2; i++) {
		y[i] = tu_zeros(n), cache[i] = tu_zeros(2 * N), dx[i] = tu_zeros(n);
		dg[i] = tu_zeros(D), db[i] = tu_zeros(D);
		ck_assert_int_eq(
		    be->layernorm_forward(cs[i], N, D, 1e-5f, x, g, bb, y[i], cache[i]), 0);
		ck_assert_int_eq(
		    be->layernorm_backward(cs[i], N, D, x, g, cache[i], dy, dx[i], dg[i], db[i]),
		    0);
	}
	ck_assert_mem_eq(y[0], y[1], n * sizeof(float));
	ck_assert_mem_eq(dx[0], dx[1], n * sizeof(float));
	ck_assert_mem_eq(dg[0], dg[1], D * sizeof(float));
	ck_assert_mem_eq(db[0], db[1], D * sizeof(float));

	struct attn_data a[2];
	for (int i = 0; i < 2; i++) {
		attn_make(&a[i], &acases[8], 17);
		struct fedrun_rng s = a[i].stream;
		ck_assert_int_eq(be->attn_forward(cs[i], &a[i].d, Q(&a[i]), K(&a[i]), V(&a[i]),
						  a[i].len, &s, a[i].out, a[i].cache),
				 0);
		ck_assert_int_eq(be->attn_backward(cs[i], &a[i].d, Q(&a[i]), K(&a[i]), V(&a[i]),
						   a[i].len, a[i].cache, a[i].dout, GQ(&a[i]),
						   GK(&a[i]), GV(&a[i])),
				 0);
	}
	ck_assert_mem_eq(a[0].out, a[1].out, a[0].nout * sizeof(float));
	ck_assert_mem_eq(a[0].cache, a[1].cache,
			 be->attn_cache_floats(ctx, &a[0].d) * sizeof(float));
	for (int k = 0; k < 3; k++)
		ck_assert_mem_eq(a[0].ga[k], a[1].ga[k], a[0].alen[k] * sizeof(float));

	const uint32_t V = 97;
	int32_t *t = malloc(N * sizeof *t);
	for (uint32_t i = 0; i < N; i++)
		t[i] = i % 5 == 4 ? -1 : (int32_t)fedrun_rng_below(&r, V);
	double l[2], nl[2];
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(
		    be->label_smoothed_xent(cs[i], N, V, 0.1f, x, t, &l[i], &nl[i], NULL, dx[i]),
		    0);
	ck_assert(memcmp(&l[0], &l[1], sizeof l[0]) == 0);
	ck_assert(memcmp(&nl[0], &nl[1], sizeof nl[0]) == 0);
	ck_assert_mem_eq(dx[0], dx[1], n * sizeof(float));

	for (int i = 0; i < 2; i++) {
		free(y[i]), free(cache[i]), free(dx[i]), free(dg[i]), free(db[i]);
		attn_free(&a[i]);
	}
	free(x), free(g), free(bb), free(dy), free(t);
	be->ctx_destroy(c1);
	be->ctx_destroy(c2);
}
END_TEST

/* ---- gradients by finite differences ----------------------------------------- */

struct ln_prob {
	uint32_t N, D;
	double eps, *x, *g, *b, *R, *y;
};

static double ln_loss(void *ud)
{
	struct ln_prob *p = ud;
	nn_ref_layernorm_forward(p->N, p->D, p->eps, p->x, p->g, p->b, p->y, NULL, NULL);
	return dot(p->R, p->y, (uint64_t)p->N * p->D);
}

/* L = sum(R * y) with R random. eps is large (0.1) next to the row
 * variance (about 0.3), so that the eps term is checked too. */
START_TEST(test_layernorm_grad)
{
	const uint32_t N = 4, D = _i ? 19 : 7;
	const uint64_t n = (uint64_t)N * D;
	const float eps = 0.1f;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 81, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *x = tu_rand(&r, n, -1, 1), *g = tu_rand(&r, D, 0.5, 1.5), *b = tu_rand(&r, D, -1, 1);
	float *rr = tu_rand(&r, n, -1, 1), *y = tu_zeros(n), *cache = tu_zeros(2 * N);
	float *dx = tu_zeros(n), *dg = tu_zeros(D), *db = tu_zeros(D);
	ck_assert_int_eq(be->layernorm_forward(ctx, N, D, eps, x, g, b, y, cache), 0);
	ck_assert_int_eq(be->layernorm_backward(ctx, N, D, x, g, cache, rr, dx, dg, db), 0);
	struct ln_prob p = {
	    N, D, eps, tu_dbl(x, n), tu_dbl(g, D), tu_dbl(b, D), tu_dbl(rr, n), tu_dzeros(n)};
	double *DX = tu_dzeros(n), *DG = tu_dzeros(D), *DB = tu_dzeros(D);
	nn_ref_layernorm_backward(N, D, eps, p.x, p.g, p.R, DX, DG, DB);
	CHECK_GRAD(ln_loss, &p, p.x, n, dx, DX, "dx");
	CHECK_GRAD(ln_loss, &p, p.g, D, dg, DG, "dgain");
	CHECK_GRAD(ln_loss, &p, p.b, D, db, DB, "dbias");
	free(x), free(g), free(b), free(rr), free(y), free(cache), free(dx), free(dg), free(db);
	free(p.x), free(p.g), free(p.b), free(p.R), free(p.y), free(DX), free(DG), free(DB);
}
END_TEST

/* Small problems: every input entry is perturbed. */
static const struct attn_case gcases[] = {
    {2, 2, 4, 5, 3, false, 1, 0.0f, L_DENSE}, /* key padding */
    {3, 2, 5, 5, 3, true, 1, 0.0f, L_QKV},    /* causal + padding, fused q, k, v */
    {2, 2, 4, 6, 2, true, 2, 0.0f, L_KV},     /* causal Tq < Tk, an empty sequence */
    {2, 2, 5, 5, 3, true, 1, 0.4f, L_DENSE},  /* causal + padding + dropout (fixed mask) */
};

static double attn_loss(void *ud)
{
	struct attn_data *t = ud;
	nn_ref_attn_forward(&t->d, RQ(t), RK(t), RV(t), t->len, t->mask, t->OUT, NULL);
	return dot(t->DOUT, t->OUT, t->nout);
}

/* L = sum(dout * out), w.r.t. every entry of every input arena (so the
 * fused layouts are checked as the (B,T,3D) or (B,T,2D) matrices that a
 * fused projection's backward receives). */
START_TEST(test_attn_grad)
{
	struct attn_data t;
	attn_make(&t, &gcases[_i], 400 + (uint32_t)_i);
	attn_run_cpu(&t);
	attn_run_ref(&t);
	static const char *cpu[3] = {"arena 0 (cpu)", "arena 1 (cpu)", "arena 2 (cpu)"};
	static const char *ref[3] = {"arena 0 (ref)", "arena 1 (ref)", "arena 2 (ref)"};
	for (int i = 0; i < t.na; i++) {
		double *fd = fd_grad(attn_loss, &t, t.A[i], t.alen[i]);
		TU_ASSERT_ERR(tu_err(t.ga[i], fd, t.alen[i], 1e-12), TOL_FD_CPU, cpu[i]);
		TU_ASSERT_ERR(tu_err_d(t.GA[i], fd, t.alen[i], 1e-12), TOL_FD_REF, ref[i]);
		free(fd);
	}
	attn_free(&t);
}
END_TEST

struct lsx_prob {
	uint32_t N, V;
	double eps;
	const int32_t *t;
	double *l;
};

static double lsx_loss(void *ud)
{
	struct lsx_prob *p = ud;
	return nn_ref_label_smoothed_xent(p->N, p->V, p->eps, p->l, p->t, NULL, NULL, NULL);
}

START_TEST(test_ls_xent_grad)
{
	const uint32_t N = 6, V = 7;
	const int32_t t[6] = {0, 6, -1, 2, 2, -5};
	const float eps = 0.1f;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 91, FEDRUN_RNG_PLUGIN, 0, 0);
	float *l = tu_rand(&r, N * V, -3, 3), *dl = tu_zeros(N * V);
	double loss;
	ck_assert_int_eq(be->label_smoothed_xent(ctx, N, V, eps, l, t, &loss, NULL, NULL, dl), 0);
	struct lsx_prob p = {N, V, eps, t, tu_dbl(l, N * V)};
	double *DL = tu_dzeros(N * V);
	nn_ref_label_smoothed_xent(N, V, eps, p.l, t, NULL, NULL, DL);
	CHECK_GRAD(lsx_loss, &p, p.l, N * V, dl, DL, "dlogits");
	for (uint32_t j = 0; j < V; j++)
		ck_assert(dl[2 * V + j] == 0.0f && dl[5 * V + j] == 0.0f);
	free(l), free(dl), free(p.l), free(DL);
}
END_TEST

struct pe_prob {
	uint32_t B, T, D;
	double scale, *x, *R, *y;
};

static double pe_loss(void *ud)
{
	struct pe_prob *p = ud;
	nn_ref_posenc_forward(p->B, p->T, p->D, 3, p->scale, p->x, p->y);
	return dot(p->R, p->y, (uint64_t)p->B * p->T * p->D);
}

START_TEST(test_posenc_grad)
{
	const uint32_t B = 2, T = 3, D = 5;
	const uint64_t n = (uint64_t)B * T * D;
	const float scale = sqrtf((float)D);
	struct fedrun_rng r;
	fedrun_rng_init(&r, 92, FEDRUN_RNG_PLUGIN, 0, 0);
	float *x = tu_rand(&r, n, -1, 1), *rr = tu_rand(&r, n, -1, 1), *dx = tu_zeros(n);
	ck_assert_int_eq(be->posenc_backward(ctx, B, T, D, scale, rr, dx), 0);
	struct pe_prob p = {B, T, D, scale, tu_dbl(x, n), tu_dbl(rr, n), tu_dzeros(n)};
	double *DX = tu_dzeros(n);
	for (uint64_t i = 0; i < n; i++)
		DX[i] = (double)scale * p.R[i];
	CHECK_GRAD(pe_loss, &p, p.x, n, dx, DX, "dx");
	free(x), free(rr), free(dx), free(p.x), free(p.R), free(p.y), free(DX);
}
END_TEST

/* ---- learning-rate schedules ---------------------------------------------- */

START_TEST(test_lr_noam)
{
	/* the paper's base model: d = 512, 4000 warm-up steps */
	const double peak = 1.0 / sqrt(512.0 * 4000.0); /* 6.99e-4 at step 4000 */
	ck_assert(fabs(fedrun_lr_noam(4000, 512, 4000, 1.0) - peak) < 1e-15);
	ck_assert(fedrun_lr_noam(0, 512, 4000, 1.0) == 0.0);
	/* linear rise: step warmup^-1.5 d^-0.5 */
	ck_assert(fabs(fedrun_lr_noam(1, 512, 4000, 1.0) - peak / 4000.0) < 1e-15);
	ck_assert(fabs(fedrun_lr_noam(1000, 512, 4000, 2.0) - 2.0 * peak / 4.0) < 1e-15);
	/* decay: step^-0.5 d^-0.5; four times the steps, half the rate */
	ck_assert(fabs(fedrun_lr_noam(16000, 512, 4000, 1.0) - peak / 2.0) < 1e-15);
	double prev = 0.0;
	for (uint64_t s = 1; s <= 4000; s += 37) {
		double v = fedrun_lr_noam(s, 512, 4000, 1.0);
		ck_assert(v > prev);
		prev = v;
	}
	prev = fedrun_lr_noam(4000, 512, 4000, 1.0);
	for (uint64_t s = 4001; s <= 40000; s += 997) {
		double v = fedrun_lr_noam(s, 512, 4000, 1.0);
		ck_assert(v < prev);
		prev = v;
	}
	/* no warm-up: pure decay */
	ck_assert(fabs(fedrun_lr_noam(4, 16, 0, 1.0) - 0.125) < 1e-15);
}
END_TEST

START_TEST(test_lr_inverse_sqrt)
{
	/* fairseq's --lr 5e-4 --warmup-updates 4000 --warmup-init-lr 1e-7 */
	const double peak = 5e-4, init = 1e-7;
	ck_assert(fedrun_lr_inverse_sqrt(1, peak, 4000, init) == init);
	ck_assert(fabs(fedrun_lr_inverse_sqrt(2001, peak, 4000, init) - (init + peak) / 2) < 1e-15);
	ck_assert(fabs(fedrun_lr_inverse_sqrt(4001, peak, 4000, init) - peak) < 1e-15);
	ck_assert(fabs(fedrun_lr_inverse_sqrt(16001, peak, 4000, init) - peak / 2) < 1e-15);
	ck_assert(fabs(fedrun_lr_inverse_sqrt(4001, peak, 4000, 0.0) - peak) < 1e-15);
	ck_assert(fedrun_lr_inverse_sqrt(1, peak, 4000, 0.0) == 0.0);
	/* continuous at the end of the warm-up: the steps on either side
	 * differ from the peak by about peak / warmup */
	double a = fedrun_lr_inverse_sqrt(4000, peak, 4000, init);
	double b = fedrun_lr_inverse_sqrt(4002, peak, 4000, init);
	ck_assert(a < peak && b < peak && peak - a < 1e-3 * peak && peak - b < 1e-3 * peak);
	/* no warm-up */
	ck_assert(fedrun_lr_inverse_sqrt(1, peak, 0, init) == peak);
	ck_assert(fabs(fedrun_lr_inverse_sqrt(5, peak, 0, init) - peak / 2) < 1e-15);
}
END_TEST

static Suite *nn_transformer_suite(void)
{
	Suite *s = suite_create("nn_transformer");
	TCase *ops = tcase_create("ops");
	tcase_add_checked_fixture(ops, setup, teardown);
	tcase_set_timeout(ops, 60);
	tcase_add_test(ops, test_table_members);
	tcase_add_loop_test(ops, test_layernorm, 0, 20);
	tcase_add_test(ops, test_layernorm_args);
	tcase_add_loop_test(ops, test_attn, 0, (int)NACASES);
	tcase_add_test(ops, test_attn_optional);
	tcase_add_loop_test(ops, test_attn_masks, 0, (int)NACASES);
	tcase_add_test(ops, test_attn_dropout_streams);
	tcase_add_test(ops, test_attn_args);
	tcase_add_loop_test(ops, test_posenc, 0, 24);
	tcase_add_loop_test(ops, test_ls_xent, 0, 48);
	tcase_add_test(ops, test_ls_xent_edges);
	tcase_add_test(ops, test_threads_bitwise);
	suite_add_tcase(s, ops);

	TCase *grad = tcase_create("finite_differences");
	tcase_add_checked_fixture(grad, setup, teardown);
	tcase_set_timeout(grad, 60);
	tcase_add_loop_test(grad, test_layernorm_grad, 0, 2);
	tcase_add_loop_test(grad, test_attn_grad, 0, (int)(sizeof gcases / sizeof gcases[0]));
	tcase_add_test(grad, test_ls_xent_grad);
	tcase_add_test(grad, test_posenc_grad);
	suite_add_tcase(s, grad);

	TCase *lr = tcase_create("lr_schedules");
	tcase_add_test(lr, test_lr_noam);
	tcase_add_test(lr, test_lr_inverse_sqrt);
	suite_add_tcase(s, lr);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(nn_transformer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
