/* SPDX-License-Identifier: Apache-2.0 */
/* Finite-difference gradient checks of every layer of the nn backend: gemm,
 * linear, embedding, GRU (inputs, h0, all weights and biases, several
 * steps), softmax cross-entropy, dropout (fixed mask) and the activations.
 *
 * Each check takes a scalar loss L = sum(R * output) (R random, so that every
 * output element matters), or the layer's own loss for cross-entropy, and
 * differentiates it numerically by central differences
 *   dL/dp ~ (L(p + h) - L(p - h)) / 2h
 * with the forward evaluated in DOUBLE by the reference ops, at the same
 * (float-valued) point the CPU backend sees. With h = 1e-5 the truncation
 * error, h^2 |L'''| / 6, and the rounding error, 1e-16 |L| / h, are both
 * near 1e-10, far below the float precision of the backend, so the numerical
 * gradient serves as exact. Against it:
 *   - the CPU backend's analytic gradients (float), tolerance 1e-5
 *     normwise (tu_err: largest error over largest gradient entry), room for
 *     float rounding through sums and recurrences (observed up to 2.2e-7) while
 *     a wrong term shows as 1e-2 or more;
 *   - the reference backward (double), tolerance 1e-7, which validates the
 *     oracle that tests/test_nn_ops.c compares the CPU ops with. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/backend.h"
#include "fedrun/rng.h"
#include "../core/nn/ref.h"
#include "nn_testutil.h"

#define FD_H 1e-5
#define TOL_CPU 1e-5
#define TOL_REF 1e-7

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

typedef double (*loss_fn)(void *ud);

/* Central differences of f over the n doubles at p, perturbed in place one
 * at a time and restored. */
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

static double dot(const double *a, const double *b, uint64_t n)
{
	double s = 0.0;
	for (uint64_t i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/* Checks the float gradient `cpu` and the double one `ref` (either may be
 * NULL) against the numerical gradient of f over p. */
#define CHECK_GRAD(f, ud, p, n, cpu, ref, what)                                                    \
	do {                                                                                       \
		double *fd_ = fd_grad((f), (ud), (p), (n));                                        \
		if (cpu)                                                                           \
			TU_ASSERT_ERR(tu_err((cpu), fd_, (n), 1e-12), TOL_CPU, what " (cpu)");     \
		if (ref)                                                                           \
			TU_ASSERT_ERR(tu_err_d((ref), fd_, (n), 1e-12), TOL_REF, what " (ref)");   \
		free(fd_);                                                                         \
	} while (0)

/* ---- gemm --------------------------------------------------------------- */

struct gemm_prob {
	bool ta, tb;
	int m, n, k;
	double alpha, *A, *B, *R, *C;
};

static double gemm_loss(void *ud)
{
	struct gemm_prob *g = ud;
	nn_ref_gemm(g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->A, g->ta ? g->m : g->k, g->B,
		    g->tb ? g->k : g->n, 0.0, g->C, g->n);
	return dot(g->R, g->C, (uint64_t)g->m * g->n);
}

/* The gradients of C = alpha op(A) op(B) are themselves products, computed
 * here with the backend's sgemm: with A' = op(A), B' = op(B),
 * dA' = alpha R B'^T and dB' = alpha A'^T R, transposed back when A or B is
 * stored transposed. This checks every transpose flag of sgemm. */
START_TEST(test_gemm_grad)
{
	const bool ta = _i & 1, tb = _i & 2;
	const int m = 3, n = 4, k = 5;
	const float alpha = 0.7f;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *a = tu_rand(&r, m * k, -1, 1), *b = tu_rand(&r, k * n, -1, 1);
	float *rr = tu_rand(&r, m * n, -1, 1), *da = tu_zeros(m * k), *db = tu_zeros(k * n);
	const int lda = ta ? m : k, ldb = tb ? k : n;
	if (!ta) /* dA (m,k) = alpha R (m,n) B'^T */
		ck_assert_int_eq(
		    be->sgemm(ctx, false, !tb, m, k, n, alpha, rr, n, b, ldb, 0.0f, da, k), 0);
	else /* dA (k,m) = alpha B' (k,n) R^T */
		ck_assert_int_eq(
		    be->sgemm(ctx, tb, true, k, m, n, alpha, b, ldb, rr, n, 0.0f, da, m), 0);
	if (!tb) /* dB (k,n) = alpha A'^T (k,m) R */
		ck_assert_int_eq(
		    be->sgemm(ctx, !ta, false, k, n, m, alpha, a, lda, rr, n, 0.0f, db, n), 0);
	else /* dB (n,k) = alpha R^T (n,m) A' */
		ck_assert_int_eq(
		    be->sgemm(ctx, true, ta, n, k, m, alpha, rr, n, a, lda, 0.0f, db, k), 0);
	struct gemm_prob g = {ta,
			      tb,
			      m,
			      n,
			      k,
			      alpha,
			      tu_dbl(a, m * k),
			      tu_dbl(b, k * n),
			      tu_dbl(rr, m * n),
			      tu_dzeros(m * n)};
	CHECK_GRAD(gemm_loss, &g, g.A, (uint64_t)m * k, da, (double *)NULL, "dA");
	CHECK_GRAD(gemm_loss, &g, g.B, (uint64_t)k * n, db, (double *)NULL, "dB");
	free(a), free(b), free(rr), free(da), free(db), free(g.A), free(g.B), free(g.R), free(g.C);
}
END_TEST

/* ---- linear ------------------------------------------------------------- */

struct linear_prob {
	uint32_t N, in, out;
	double *x, *w, *b, *R, *y;
};

static double linear_loss(void *ud)
{
	struct linear_prob *p = ud;
	nn_ref_linear_forward(p->N, p->in, p->out, p->x, p->w, p->b, p->y);
	return dot(p->R, p->y, (uint64_t)p->N * p->out);
}

START_TEST(test_linear_grad)
{
	const uint32_t N = 5, in = 3, out = 4;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 2, FEDRUN_RNG_PLUGIN, 0, 0);
	float *x = tu_rand(&r, N * in, -1, 1), *w = tu_rand(&r, out * in, -1, 1);
	float *b = tu_rand(&r, out, -1, 1), *rr = tu_rand(&r, N * out, -1, 1);
	float *dx = tu_zeros(N * in), *dw = tu_zeros(out * in), *db = tu_zeros(out);
	ck_assert_int_eq(be->linear_backward(ctx, N, in, out, x, w, rr, dx, dw, db), 0);
	struct linear_prob p = {N,
				in,
				out,
				tu_dbl(x, N * in),
				tu_dbl(w, out * in),
				tu_dbl(b, out),
				tu_dbl(rr, N * out),
				tu_dzeros(N * out)};
	double *DX = tu_dzeros(N * in), *DW = tu_dzeros(out * in), *DB = tu_dzeros(out);
	nn_ref_linear_backward(N, in, out, p.x, p.w, p.R, DX, DW, DB);
	CHECK_GRAD(linear_loss, &p, p.x, N * in, dx, DX, "dx");
	CHECK_GRAD(linear_loss, &p, p.w, out * in, dw, DW, "dw");
	CHECK_GRAD(linear_loss, &p, p.b, out, db, DB, "db");
	free(x), free(w), free(b), free(rr), free(dx), free(dw), free(db);
	free(p.x), free(p.w), free(p.b), free(p.R), free(p.y), free(DX), free(DW), free(DB);
}
END_TEST

/* ---- embedding ---------------------------------------------------------- */

struct emb_prob {
	uint32_t N, D;
	const int32_t *ids;
	double *w, *R, *out;
};

static double emb_loss(void *ud)
{
	struct emb_prob *p = ud;
	nn_ref_embedding_forward(p->N, p->D, p->ids, p->w, p->out);
	return dot(p->R, p->out, (uint64_t)p->N * p->D);
}

/* Ids repeat and one row of the table is never used (its gradient is 0). */
START_TEST(test_embedding_grad)
{
	const uint32_t N = 9, V = 5, D = 3;
	const int32_t ids[9] = {0, 3, 3, 1, 0, 4, 3, 1, 0};
	struct fedrun_rng r;
	fedrun_rng_init(&r, 3, FEDRUN_RNG_PLUGIN, 0, 0);
	float *w = tu_rand(&r, V * D, -1, 1), *rr = tu_rand(&r, N * D, -1, 1);
	float *dw = tu_zeros(V * D);
	ck_assert_int_eq(be->embedding_backward(ctx, N, V, D, ids, rr, dw), 0);
	struct emb_prob p = {N, D, ids, tu_dbl(w, V * D), tu_dbl(rr, N * D), tu_dzeros(N * D)};
	double *DW = tu_dzeros(V * D);
	nn_ref_embedding_backward(N, D, ids, p.R, DW);
	CHECK_GRAD(emb_loss, &p, p.w, V * D, dw, DW, "dw");
	for (uint32_t j = 0; j < D; j++)
		ck_assert(dw[2 * D + j] == 0.0f);
	free(w), free(rr), free(dw), free(p.w), free(p.R), free(p.out), free(DW);
}
END_TEST

/* ---- GRU ---------------------------------------------------------------- */

struct gru_prob {
	struct fedrun_gru_dims d;
	double *x, *h0, *w_ih, *w_hh, *b_ih, *b_hh, *R, *S, *y;
};

/* L = sum(R * y) + sum(S * y[T-1]): the second term reaches the final state
 * through dhT. */
static double gru_loss(void *ud)
{
	struct gru_prob *p = ud;
	struct nn_ref_gru_weights w = {p->w_ih, p->w_hh, p->b_ih, p->b_hh};
	const uint64_t BH = (uint64_t)p->d.batch * p->d.hidden, ny = BH * p->d.steps;
	nn_ref_gru_forward(&p->d, &w, p->x, p->h0, p->y);
	return dot(p->R, p->y, ny) + dot(p->S, p->y + ny - BH, BH);
}

struct gru_grad_case {
	uint32_t T, B, I, H;
	bool h0, bias;
};

static const struct gru_grad_case gcases[] = {
    {4, 3, 5, 7, true, true},  /* several steps, odd sizes */
    {6, 2, 3, 4, false, true}, /* h0 = NULL: zeros */
    {3, 1, 1, 1, true, false}, /* scalar GRU without biases */
};

START_TEST(test_gru_grad)
{
	const struct gru_grad_case *c = &gcases[_i];
	const uint64_t nx = (uint64_t)c->T * c->B * c->I, nh = (uint64_t)c->B * c->H;
	const uint64_t ny = c->T * nh, nwi = 3ull * c->H * c->I, nwh = 3ull * c->H * c->H;
	const uint64_t nb = 3ull * c->H;
	const double s = 2.0 / sqrt((double)c->H);
	struct fedrun_rng r;
	fedrun_rng_init(&r, 4, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *x = tu_rand(&r, nx, -1, 1), *h0 = c->h0 ? tu_rand(&r, nh, -1, 1) : NULL;
	float *w_ih = tu_rand(&r, nwi, -s, s), *w_hh = tu_rand(&r, nwh, -s, s);
	float *b_ih = c->bias ? tu_rand(&r, nb, -s, s) : NULL;
	float *b_hh = c->bias ? tu_rand(&r, nb, -s, s) : NULL;
	float *rr = tu_rand(&r, ny, -1, 1), *ss = tu_rand(&r, nh, -1, 1);

	/* CPU backend: forward, then backward with dy = R and dhT = S. */
	struct fedrun_gru_dims d = {c->T, c->B, c->I, c->H};
	float *y = tu_zeros(ny), *cache = tu_zeros(be->gru_cache_floats(ctx, &d));
	float *dx = tu_zeros(nx), *dh0 = tu_zeros(nh), *gwi = tu_zeros(nwi), *gwh = tu_zeros(nwh);
	float *gbi = tu_zeros(nb), *gbh = tu_zeros(nb);
	struct fedrun_gru_weights w = {w_ih, w_hh, b_ih, b_hh};
	struct fedrun_gru_grads g = {gwi, gwh, c->bias ? gbi : NULL, c->bias ? gbh : NULL};
	ck_assert_int_eq(be->gru_forward(ctx, &d, &w, x, h0, y, cache), 0);
	ck_assert_int_eq(be->gru_backward(ctx, &d, &w, x, h0, y, cache, rr, ss, dx, dh0, &g), 0);

	/* Reference, in double. */
	struct gru_prob p = {d,
			     tu_dbl(x, nx),
			     c->h0 ? tu_dbl(h0, nh) : NULL,
			     tu_dbl(w_ih, nwi),
			     tu_dbl(w_hh, nwh),
			     c->bias ? tu_dbl(b_ih, nb) : NULL,
			     c->bias ? tu_dbl(b_hh, nb) : NULL,
			     tu_dbl(rr, ny),
			     tu_dbl(ss, nh),
			     tu_dzeros(ny)};
	double *DX = tu_dzeros(nx), *DH0 = tu_dzeros(nh), *GWI = tu_dzeros(nwi);
	double *GWH = tu_dzeros(nwh), *GBI = tu_dzeros(nb), *GBH = tu_dzeros(nb);
	struct nn_ref_gru_weights rw = {p.w_ih, p.w_hh, p.b_ih, p.b_hh};
	struct nn_ref_gru_grads rg = {GWI, GWH, GBI, GBH};
	ck_assert_int_eq(nn_ref_gru_backward(&d, &rw, p.x, p.h0, p.R, p.S, DX, DH0, &rg), 0);

	CHECK_GRAD(gru_loss, &p, p.x, nx, dx, DX, "dx");
	if (c->h0)
		CHECK_GRAD(gru_loss, &p, p.h0, nh, dh0, DH0, "dh0");
	CHECK_GRAD(gru_loss, &p, p.w_ih, nwi, gwi, GWI, "dw_ih");
	CHECK_GRAD(gru_loss, &p, p.w_hh, nwh, gwh, GWH, "dw_hh");
	if (c->bias) {
		CHECK_GRAD(gru_loss, &p, p.b_ih, nb, gbi, GBI, "db_ih");
		CHECK_GRAD(gru_loss, &p, p.b_hh, nb, gbh, GBH, "db_hh");
	}

	free(x), free(h0), free(w_ih), free(w_hh), free(b_ih), free(b_hh), free(rr), free(ss);
	free(y), free(cache), free(dx), free(dh0), free(gwi), free(gwh), free(gbi), free(gbh);
	free(p.x), free(p.h0), free(p.w_ih), free(p.w_hh), free(p.b_ih), free(p.b_hh);
	free(p.R), free(p.S), free(p.y), free(DX), free(DH0), free(GWI), free(GWH), free(GBI),
	    free(GBH);
}
END_TEST

/* ---- softmax cross-entropy ---------------------------------------------- */

struct xent_prob {
	uint32_t N, V;
	const int32_t *t;
	double *l;
};

static double xent_loss(void *ud)
{
	struct xent_prob *p = ud;
	return nn_ref_softmax_xent(p->N, p->V, p->l, p->t, NULL, NULL);
}

/* The loss itself is L (a mean over the 5 counted rows; row 2 is ignored
 * and must get a zero gradient). */
START_TEST(test_xent_grad)
{
	const uint32_t N = 6, V = 5;
	const int32_t t[6] = {0, 4, -1, 2, 2, 1};
	struct fedrun_rng r;
	fedrun_rng_init(&r, 5, FEDRUN_RNG_PLUGIN, 0, 0);
	float *l = tu_rand(&r, N * V, -3, 3), *dl = tu_zeros(N * V);
	double loss;
	ck_assert_int_eq(be->softmax_xent(ctx, N, V, l, t, &loss, NULL, dl), 0);
	struct xent_prob p = {N, V, t, tu_dbl(l, N * V)};
	double *DL = tu_dzeros(N * V);
	nn_ref_softmax_xent(N, V, p.l, t, NULL, DL);
	CHECK_GRAD(xent_loss, &p, p.l, N * V, dl, DL, "dlogits");
	for (uint32_t j = 0; j < V; j++)
		ck_assert(dl[2 * V + j] == 0.0f);
	free(l), free(dl), free(p.l), free(DL);
}
END_TEST

/* softmax_xent_db's bias gradient: the loss of logits l + b (b broadcast
 * over the rows) times scale, differentiated numerically in b; db is
 * accumulated onto values it already holds. */
struct xent_db_prob {
	uint32_t N, V;
	const int32_t *t;
	const double *l;
	double scale, *b, *lb;
};

static double xent_db_loss(void *ud)
{
	struct xent_db_prob *p = ud;
	for (uint32_t i = 0; i < p->N; i++)
		for (uint32_t j = 0; j < p->V; j++)
			p->lb[i * p->V + j] = p->l[i * p->V + j] + p->b[j];
	return p->scale * nn_ref_softmax_xent(p->N, p->V, p->lb, p->t, NULL, NULL);
}

START_TEST(test_xent_db_grad)
{
	const uint32_t N = 37, V = 5; /* two runs of the column sums */
	int32_t t[37];
	for (uint32_t i = 0; i < N; i++)
		t[i] = i % 7 == 3 ? -1 : (int32_t)((i * 3) % V);
	struct fedrun_rng r;
	fedrun_rng_init(&r, 6, FEDRUN_RNG_PLUGIN, 0, 0);
	float *b = tu_rand(&r, V, -1, 1), *l = tu_rand(&r, N * V, -3, 3);
	float *lb = tu_zeros(N * V), *dl = tu_zeros(N * V), *db = tu_zeros(V);
	float db0[5];
	for (uint32_t j = 0; j < V; j++)
		db0[j] = db[j] = 0.25f * (float)j;
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t j = 0; j < V; j++)
			lb[i * V + j] = l[i * V + j] + b[j];
	double loss;
	ck_assert_int_eq(be->softmax_xent_db(ctx, N, V, lb, t, 0.7f, &loss, NULL, dl, db), 0);
	for (uint32_t j = 0; j < V; j++)
		db[j] -= db0[j];
	struct xent_db_prob p = {N, V, t, tu_dbl(l, N * V), 0.7f, tu_dbl(b, V), tu_dzeros(N * V)};
	CHECK_GRAD(xent_db_loss, &p, p.b, V, db, NULL, "db");
	free(b), free(l), free(lb), free(dl), free(db), free((double *)p.l), free(p.b), free(p.lb);
}
END_TEST

/* ---- dropout ------------------------------------------------------------ */

struct drop_prob {
	uint64_t n;
	double p;
	struct fedrun_rng rng; /* copied before each forward: a fixed mask */
	double *x, *R, *y;
	uint8_t *mask;
};

static double drop_loss(void *ud)
{
	struct drop_prob *p = ud;
	struct fedrun_rng r = p->rng;
	nn_ref_dropout_forward(p->n, p->p, &r, p->x, p->y, p->mask);
	return dot(p->R, p->y, p->n);
}

START_TEST(test_dropout_grad)
{
	const uint64_t n = 37;
	const float pr = 0.3f;
	struct fedrun_rng r, stream;
	fedrun_rng_init(&r, 6, FEDRUN_RNG_PLUGIN, 0, 0);
	fedrun_rng_init(&stream, 6, FEDRUN_RNG_DROPOUT, 1, 2);
	float *x = tu_rand(&r, n, -1, 1), *rr = tu_rand(&r, n, -1, 1);
	float *y = tu_zeros(n), *dx = tu_zeros(n);
	uint8_t *mask = malloc(n);
	struct fedrun_rng s1 = stream;
	ck_assert_int_eq(be->dropout_forward(ctx, n, pr, &s1, x, y, mask), 0);
	ck_assert_int_eq(be->dropout_backward(ctx, n, pr, mask, rr, dx), 0);
	struct drop_prob p = {n, pr, stream, tu_dbl(x, n), tu_dbl(rr, n), tu_dzeros(n), malloc(n)};
	double *DX = tu_dzeros(n);
	drop_loss(&p); /* fills p.mask */
	nn_ref_dropout_backward(n, pr, p.mask, p.R, DX);
	CHECK_GRAD(drop_loss, &p, p.x, n, dx, DX, "dx");
	free(x), free(rr), free(y), free(dx), free(mask), free(p.x), free(p.R), free(p.y);
	free(p.mask), free(DX);
}
END_TEST

/* ---- activations -------------------------------------------------------- */

struct act_prob {
	enum fedrun_act act;
	uint64_t n;
	double *x, *R, *y;
};

static double act_loss(void *ud)
{
	struct act_prob *p = ud;
	nn_ref_act_forward(p->act, p->n, p->x, p->y);
	return dot(p->R, p->y, p->n);
}

/* Inputs stay at least 0.01 away from ReLU's kink at 0, far beyond h. */
START_TEST(test_act_grad)
{
	const enum fedrun_act act = (enum fedrun_act)_i;
	const uint64_t n = 33;
	struct fedrun_rng r;
	fedrun_rng_init(&r, 7, FEDRUN_RNG_PLUGIN, 0, (uint32_t)_i);
	float *x = tu_rand(&r, n, -4, 4), *rr = tu_rand(&r, n, -1, 1), *dx = tu_zeros(n);
	for (uint64_t i = 0; i < n; i++)
		if (fabsf(x[i]) < 0.01f)
			x[i] = 0.5f;
	ck_assert_int_eq(be->act_backward(ctx, act, n, x, rr, dx), 0);
	struct act_prob p = {act, n, tu_dbl(x, n), tu_dbl(rr, n), tu_dzeros(n)};
	double *DX = tu_dzeros(n);
	nn_ref_act_backward(act, n, p.x, p.R, DX);
	CHECK_GRAD(act_loss, &p, p.x, n, dx, DX, "dx");
	free(x), free(rr), free(dx), free(p.x), free(p.R), free(p.y), free(DX);
}
END_TEST

static Suite *nn_grad_suite(void)
{
	Suite *s = suite_create("nn_grad");
	TCase *tc = tcase_create("finite_differences");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_gemm_grad, 0, 4);
	tcase_add_test(tc, test_linear_grad);
	tcase_add_test(tc, test_embedding_grad);
	tcase_add_loop_test(tc, test_gru_grad, 0, (int)(sizeof gcases / sizeof gcases[0]));
	tcase_add_test(tc, test_xent_grad);
	tcase_add_test(tc, test_xent_db_grad);
	tcase_add_test(tc, test_dropout_grad);
	tcase_add_loop_test(tc, test_act_grad, 0, FEDRUN_ACT_LAST + 1);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(nn_grad_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
