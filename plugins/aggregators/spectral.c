/* SPDX-License-Identifier: Apache-2.0 */
/* Largest singular value by Golub-Kahan-Lanczos bidiagonalisation (Golub and
 * Van Loan, "Matrix Computations", 4th ed., section 10.4): k steps build
 * orthonormal U_k, V_k and an upper bidiagonal B_k with A V_k = U_k B_k,
 * whose largest singular value rises to σ_max(A) far faster than power
 * iteration does when the top singular values are close (Lanczos needs about
 * the square root of the steps). Full reorthogonalisation keeps the bases
 * orthogonal, so no spurious copies appear. The estimate is σ_max of the
 * k x (k + 1) bidiagonal [B_k, β_k e_k], from the largest eigenvalue of a
 * k x k tridiagonal matrix by Sturm-sequence bisection. */
#include "config.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include "fedrun/error.h"
#include "fedrun/rng.h"
#include "spectral.h"

/* Matrices smaller than this are not worth a parallel region. */
#define PAR_MIN (1u << 16)
/* Columns per task of the transposed product. */
#define COL_BLOCK 256
/* Two successive estimates this close (relative) end the iteration. */
#define REL_TOL 1e-13

/* y = A x, each row summed in order: deterministic whatever the threads. */
static void mat_vec(uint64_t rows, uint64_t cols, const float *a, const double *x, double *y)
{
#pragma omp parallel for schedule(static) if (rows * cols >= PAR_MIN)
	for (uint64_t r = 0; r < rows; r++) {
		const float *ar = a + r * cols;
		double s = 0;
		for (uint64_t c = 0; c < cols; c++)
			s += ar[c] * x[c];
		y[r] = s;
	}
}

/* y = Aᵀ x: each task owns a block of columns and walks the rows in order,
 * so every sum has one fixed order. */
static void mat_tvec(uint64_t rows, uint64_t cols, const float *a, const double *x, double *y)
{
	uint64_t nb = (cols + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(static) if (rows * cols >= PAR_MIN)
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t lo = b * COL_BLOCK, hi = lo + COL_BLOCK < cols ? lo + COL_BLOCK : cols;
		for (uint64_t c = lo; c < hi; c++)
			y[c] = 0;
		for (uint64_t r = 0; r < rows; r++) {
			const float *ar = a + r * cols;
			double xr = x[r];
			for (uint64_t c = lo; c < hi; c++)
				y[c] += ar[c] * xr;
		}
	}
}

static double ddot(uint64_t n, const double *x, const double *y)
{
	double s = 0;
	for (uint64_t i = 0; i < n; i++)
		s += x[i] * y[i];
	return s;
}

static void daxpy(uint64_t n, double a, const double *x, double *y)
{
	for (uint64_t i = 0; i < n; i++)
		y[i] += a * x[i];
}

/* Removes from x its components along the k orthonormal vectors q (stored
 * one after another). Classical Gram-Schmidt done twice: "twice is enough"
 * (Giraud, Langou, Rozloznik 2005) to stay orthogonal to working accuracy. */
static void reorth(uint64_t n, double *x, const double *q, uint32_t k)
{
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < k; i++)
			daxpy(n, -ddot(n, x, q + (uint64_t)i * n), q + (uint64_t)i * n, x);
}

/* How many eigenvalues of the symmetric tridiagonal matrix with diagonal d
 * and off-diagonal e (m - 1 entries) are below x: the negative pivots of
 * the LDLᵀ factorisation of T - xI (Sturm count). */
static uint32_t sturm_below(uint32_t m, const double *d, const double *e, double x)
{
	uint32_t count = 0;
	double q = 1;
	for (uint32_t j = 0; j < m; j++) {
		q = d[j] - x - (j ? e[j - 1] * e[j - 1] / q : 0);
		if (q == 0)
			q = -DBL_MIN; /* a zero pivot counts as just below */
		count += q < 0;
	}
	return count;
}

/* σ_max of the k x (k + 1) upper bidiagonal matrix C = [B_k, β_k e_k] with
 * diagonal alpha[0..k) and superdiagonal beta[0..k): C = U_kᵀ A V_{k+1}, so
 * σ_max(C) <= σ_max(A), and it is already exact when U_k spans the column
 * space (a wide A after `rows` steps), where B_k alone is not. Computed as
 * the square root of the largest eigenvalue of CCᵀ =
 * tridiag(β_{j-1} α_j; α_j² + β_j²; β_j α_{j+1}). */
static double bidiag_sigma_max(uint32_t k, const double *alpha, const double *beta, double *d,
			       double *e)
{
	double hi = 0;
	for (uint32_t j = 0; j < k; j++) {
		d[j] = alpha[j] * alpha[j] + beta[j] * beta[j];
		if (j + 1 < k)
			e[j] = beta[j] * alpha[j + 1];
	}
	for (uint32_t j = 0; j < k; j++) { /* Gershgorin bound */
		double r = d[j] + (j ? fabs(e[j - 1]) : 0) + (j + 1 < k ? fabs(e[j]) : 0);
		if (r > hi)
			hi = r;
	}
	double lo = 0; /* CCᵀ is positive semidefinite */
	for (int it = 0; it < 200 && hi - lo > 2 * DBL_EPSILON * hi; it++) {
		double mid = 0.5 * (lo + hi);
		if (sturm_below(k, d, e, mid) == k)
			hi = mid;
		else
			lo = mid;
	}
	return sqrt(0.5 * (lo + hi));
}

int fedatt_spectral_norm(uint64_t rows, uint64_t cols, const float *a, double *sigma,
			 uint32_t *steps)
{
	double fro2 = 0;
	for (uint64_t i = 0; i < rows * cols; i++)
		fro2 += (double)a[i] * a[i];
	if (steps)
		*steps = 0;
	/* A vector, or zero: the 2-norm is the Euclidean norm. */
	if (fro2 == 0 || rows == 1 || cols == 1) {
		*sigma = sqrt(fro2);
		return 0;
	}
	uint64_t kmax = rows < cols ? rows : cols;
	if (kmax > FEDATT_LANCZOS_MAX)
		kmax = FEDATT_LANCZOS_MAX;
	/* Below this, a new direction is rounding noise: the Krylov space is
	 * invariant and the estimate exact. */
	const double tiny = 1e-13 * sqrt(fro2);

	double *u_all = malloc(kmax * rows * sizeof(double));
	double *v_all = malloc((kmax + 1) * cols * sizeof(double));
	double *work = malloc(4 * kmax * sizeof(double));
	if (!u_all || !v_all || !work) {
		free(u_all);
		free(v_all);
		free(work);
		return fedrun_error(FEDRUN_ENOMEM,
				    "fedatt: out of memory for the spectral norm "
				    "of a %llu x %llu tensor",
				    (unsigned long long)rows, (unsigned long long)cols);
	}
	double *alpha = work, *beta = work + kmax, *d = work + 2 * kmax, *e = work + 3 * kmax;

	/* A fixed pseudo-random start: the same bits every run, and almost
	 * surely not orthogonal to the top right singular vector (a constant
	 * start would be, for a matrix whose rows sum to zero). */
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, UINT64_C(0x5ec7a1), FEDRUN_RNG_PLUGIN + 1, 0, 0);
	for (uint64_t c = 0; c < cols; c++)
		v_all[c] = fedrun_rng_normal(&rng);
	double nv = sqrt(ddot(cols, v_all, v_all));
	for (uint64_t c = 0; c < cols; c++)
		v_all[c] /= nv;

	double est = 0, prev = 0;
	uint32_t k = 0, stable = 0;
	for (uint32_t j = 0; j < kmax; j++) {
		double *u = u_all + (uint64_t)j * rows, *v = v_all + (uint64_t)j * cols;
		mat_vec(rows, cols, a, v, u);
		if (j > 0)
			daxpy(rows, -beta[j - 1], u - rows, u);
		reorth(rows, u, u_all, j);
		alpha[j] = sqrt(ddot(rows, u, u));
		if (alpha[j] <= tiny)
			break;
		for (uint64_t r = 0; r < rows; r++)
			u[r] /= alpha[j];

		double *vn = v + cols;
		mat_tvec(rows, cols, a, u, vn);
		daxpy(cols, -alpha[j], v, vn);
		reorth(cols, vn, v_all, j + 1);
		beta[j] = sqrt(ddot(cols, vn, vn));
		k = j + 1;
		est = bidiag_sigma_max(k, alpha, beta, d, e);
		if (beta[j] <= tiny)
			break;
		for (uint64_t c = 0; c < cols; c++)
			vn[c] /= beta[j];
		if (fabs(est - prev) <= REL_TOL * est) {
			if (++stable >= 2)
				break;
		} else {
			stable = 0;
		}
		prev = est;
	}
	free(u_all);
	free(v_all);
	free(work);
	*sigma = est;
	if (steps)
		*steps = k;
	return 0;
}
