/* SPDX-License-Identifier: Apache-2.0 */
/* Every op of a backend compared with the built-in CPU backend on the same
 * random inputs, ggml's test-backend-ops for fedrun: inputs go to each
 * backend's device memory with to_device, results come back with to_host.
 *
 *   test_backend_ops [BACKEND]     (else $FEDRUN_TEST_BACKEND, else "cuda")
 *
 * Exit status: 0 all comparisons pass, 1 one failed, 77 (automake's SKIP)
 * when the backend is not installed or ctx_create fails (no GPU, no
 * driver). Environment: FEDRUN_TEST_SEED (the input stream's seed, printed),
 * FEDRUN_TEST_DEVICE (cfg.device), FEDRUN_TEST_BIG=1 (the large shapes also
 * against "cpu"), FEDRUN_TEST_TOLERANT=1 (the tolerances below also against
 * "cpu"), and FEDRUN_TEST_BACKEND_PERTURB=1, which changes one float of the
 * tested backend's first result before it is compared, so that
 * tests/backend_ops_perturb.sh can show that a wrong value fails the run.
 *
 * Tolerances. A float result a of the tested backend passes against the
 * CPU's b when |a - b| <= atol + rtol |b|, rtol = 1e-4 (RTOL), and
 * atol = 1e-5 (ATOL) times the scale of the rounding error of that output,
 * taken from the size of the terms that make it up rather than from the
 * result, which may cancel to near 0:
 *  - products (sgemm, linear): s = sqrt(k) |alpha| max|A| max|B| +
 *    |beta| max|C|, k the length of the dot products;
 *  - activations: max(1, max|x|) for relu and gelu, 1 for tanh and
 *    sigmoid; their gradients max|dy| max|f'|;
 *  - layernorm: dx sqrt(D) max(rstd) max|gain| max|dy|, the mean
 *    sqrt(D) max|x|;
 *  - the GRU's y: sqrt(T (I + H)) max(1, max|y|) (h and the gates are
 *    O(1));
 *  - posenc: 1 + |scale| max|x|, plus 4 FLT_EPSILON (pos0 + T), the
 *    rounding of an angle to float at that position (the CPU computes
 *    the encoding in double);
 *  - other outputs: s = sqrt(K) max|b| over the array, K the length of
 *    the longest sum behind one element (the reduced dimension, T for a
 *    recurrence, N for a column sum); for a parameter gradient, which is
 *    accumulated into prefilled values, max|b - prefill|, the size of the
 *    gradient itself (the add of the prefill is covered by rtol).
 * The backend's sums run in another order than the CPU's and it must not
 * use TF32, so these allow fp32 rounding differences only. Calibrated with
 * the double-precision oracles of core/nn/ref_*.c rounded to float as the
 * tested backend: over 8 seeds the CPU's own error used at most 0.09 of a
 * tolerance (act_backward in the tails of tanh and sigmoid, layernorm's
 * dx and the products 0.06 to 0.09, the losses, GRU and attention below
 * 0.02), which leaves a margin for a second implementation's rounding.
 * Losses (double):
 * |a - b| <= 1e-6 (|b| + 1). Exactly equal: dropout masks (also the mask
 * part of the attention cache), the stream state after a draw, counts,
 * *step, embedding_forward, zero, copy, to_device and to_host, a gradient
 * the optimizer zeroed, and every 0 that the spec makes exact (hidden
 * attention keys, queries that see no key, rows of ignored targets). NaN
 * passes only against NaN: buffers are prefilled with NaN where an op must
 * not read (gaps between rows, C when beta = 0) or must write everything.
 * Against the CPU backend itself both tolerances are 0: the harness must
 * then see the same bits. */
#include "config.h"
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fedrun/backend.h"
#include "fedrun/error.h"
#include "fedrun/optim.h"
#include "fedrun/plugin.h"
#include "fedrun/rng.h"

/* FP32 tolerances, or bf16's and tf32's for the products of a bf16 or a
 * tf32 context (below) */
#define RTOL (!cur_prod ? 1e-4 : precision == FEDRUN_PRECISION_TF32 ? TF32_RTOL : BF16_RTOL)
#define ATOL (!cur_prod ? 1e-5 : precision == FEDRUN_PRECISION_TF32 ? TF32_ATOL : BF16_ATOL)
/* bf16 (FEDRUN_TEST_PRECISION=bf16): each operand of a product is rounded
 * to 8 significant bits, a relative error of at most u = 2^-8 each, so a
 * term a_i b_i is off by at most (2u + u^2) |a_i b_i| and an element of C
 * by (2u + u^2) sum |a_i b_i| <= (2u + u^2) k max|A| max|B|. The errors of
 * the k terms have random signs (round to nearest even), so their sum
 * grows as sqrt(k): its standard deviation is at most 2u/sqrt(3) sqrt(k)
 * max|A| max|B|, and 4u times the harness's scale sqrt(k) max|A| max|B|
 * is about 7 of those deviations. rtol 2u + u^2 is the bound of one term.
 * The composite ops (linear, GRU, attention) use the same scales as their
 * FP32 checks with these coefficients; every other op of a bf16 context
 * is FP32 and must give the FP32 context's bits exactly. */
#define BF16_U (1.0 / 256)
#define BF16_ATOL (4 * BF16_U)
#define BF16_RTOL (2 * BF16_U + BF16_U * BF16_U)
/* tf32 (FEDRUN_TEST_PRECISION=tf32, GPU backends): the tensor cores read
 * each operand with 11 significant bits (10 stored), u = 2^-11 when
 * rounded to nearest; NVIDIA's cuBLAS may instead drop the 13 low bits
 * (PyTorch's notes on TF32: "only the first 10 bits of the input mantissa
 * are read"), an error below 2u = 2^-10, still of either sign with the
 * sign of the operand. With e = 2^-10 per operand the derivation of bf16's
 * gives atol 4e (the sum of k errors of random sign, sqrt(k)) and rtol
 * 2e + e^2 (one term); sums are FP32 as there. */
#define TF32_E (1.0 / 1024)
#define TF32_ATOL (4 * TF32_E)
#define TF32_RTOL (2 * TF32_E + TF32_E * TF32_E)
#define LOSS_TOL 1e-6
#define EXIT_SKIP 77
#define DEFAULT_SEED 20240601u

/* ---- the two backends ------------------------------------------------- */

struct side {
	const struct fedrun_backend_ops *ops;
	void *ctx;
};
static struct side sd[2]; /* [0]: the CPU reference, [1]: the backend under test */
static const char *tested_name;
static int side; /* which side RUN2 is calling */
#define OPS (sd[side].ops)
#define CTX (sd[side].ctx)

static bool exact;	      /* tested against the CPU backend: tolerances 0 */
static uint32_t precision;    /* FEDRUN_TEST_PRECISION of the tested context */
static bool cur_prod;	      /* the current op is a product of a bf16 or tf32 context */
static bool big;	      /* the large shapes too */
static bool perturb;	      /* FEDRUN_TEST_BACKEND_PERTURB */
static bool perturbed;	      /* done: only one float is changed */
static struct fedrun_rng rnd; /* the inputs */
static int failures;

/* ---- results per op --------------------------------------------------- */

struct op_stat {
	const char *op;
	double max_abs, max_rel; /* over every float or double compared */
	double worst;		 /* max |a - b| / tolerance */
	unsigned checks, fails;
	bool printed;
};
static struct op_stat stats[64];
static int nstats;
static struct op_stat *cur;
static char case_desc[256];

/* The ops whose products a bf16 (tf32) context computes in bf16 (tf32) */
static bool bf16_op(const char *name)
{
	static const char *const prods[] = {"sgemm", "sgemm_strided_batched", "linear_forward",
					    "linear_backward", "gru_forward", "gru_backward",
					    "attn_forward", "attn_backward"};
	for (size_t i = 0; i < sizeof prods / sizeof prods[0]; i++)
		if (strcmp(name, prods[i]) == 0)
			return true;
	return false;
}

static void op(const char *name)
{
	cur_prod = precision != FEDRUN_PRECISION_FP32 && bf16_op(name);
	for (int i = 0; i < nstats; i++)
		if (strcmp(stats[i].op, name) == 0) {
			cur = &stats[i];
			return;
		}
	if (nstats == (int)(sizeof stats / sizeof stats[0]))
		abort();
	cur = &stats[nstats++];
	memset(cur, 0, sizeof *cur);
	cur->op = name;
}

static void case_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void case_set(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(case_desc, sizeof case_desc, fmt, ap);
	va_end(ap);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	printf("  FAIL %s [%s]: ", cur->op, case_desc);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	cur->fails++;
	failures++;
}

static void pass(void)
{
	cur->checks++;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Prints the ops measured since the last report, and the time they took. */
static void report(void)
{
	static double t_last;
	const double t = now();
	bool any = false;
	for (int i = 0; i < nstats; i++) {
		struct op_stat *s = &stats[i];
		if (s->printed)
			continue;
		s->printed = true;
		any = true;
		printf("%-22s %5u checks  max abs err %.3g  max rel err %.3g  (worst err/tol "
		       "%.3g)  %s\n",
		       s->op, s->checks, s->max_abs, s->max_rel, s->worst,
		       s->fails ? "FAIL" : "PASS");
	}
	if (any)
		printf("%47s(%.2f s)\n", "", t - t_last);
	t_last = t;
	fflush(stdout);
}

/* ---- host scratch and device buffers, freed at the end of each case ---- */

/* A buffer in both backends' device memory: d[0] from the CPU's alloc,
 * d[1] from the tested backend's; h the host data both were filled from
 * (NULL: left as alloc made it), kept to measure accumulated increments. */
struct pair {
	void *d[2];
	uint64_t bytes[2];
	const void *h;
};

#define MAX_TRACK 256
static void *tmps[MAX_TRACK];
static int ntmps;
static struct pair *pairs[MAX_TRACK];
static int npairs;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	printf("FATAL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static void *tmp(uint64_t bytes)
{
	if (ntmps == MAX_TRACK)
		die("too many host buffers in one case");
	void *p = calloc(1, bytes ? bytes : 1);
	if (!p)
		die("out of host memory (%" PRIu64 " bytes)", bytes);
	return tmps[ntmps++] = p;
}

static void case_end(void)
{
	for (int i = 0; i < npairs; i++) {
		for (int s = 0; s < 2; s++)
			sd[s].ops->free_mem(sd[s].ctx, pairs[i]->d[s]);
		free(pairs[i]);
	}
	npairs = 0;
	for (int i = 0; i < ntmps; i++)
		free(tmps[i]);
	ntmps = 0;
}

/* Device memory of b0 bytes on the CPU side and b1 on the tested one. */
static struct pair *pair_alloc2(uint64_t b0, uint64_t b1)
{
	if (npairs == MAX_TRACK)
		die("too many device buffers in one case");
	struct pair *p = calloc(1, sizeof *p);
	if (!p)
		die("out of host memory");
	pairs[npairs++] = p;
	for (int s = 0; s < 2; s++) {
		p->bytes[s] = s ? b1 : b0;
		int rc = sd[s].ops->alloc(sd[s].ctx, p->bytes[s] ? p->bytes[s] : 1, &p->d[s]);
		if (rc)
			die("%s alloc of %" PRIu64 " bytes: %s", s ? tested_name : "cpu",
			    p->bytes[s], fedrun_error_message());
	}
	return p;
}

/* Device memory on both sides holding a copy of host (bytes). */
static struct pair *dput(const void *host, uint64_t bytes)
{
	struct pair *p = pair_alloc2(bytes, bytes);
	p->h = host;
	for (int s = 0; s < 2 && bytes; s++) {
		int rc = sd[s].ops->to_device(sd[s].ctx, p->d[s], host, bytes);
		if (rc)
			die("%s to_device: %s", s ? tested_name : "cpu", fedrun_error_message());
	}
	return p;
}

/* Host copies of `bytes` bytes at byte offset `off` of p, one per side. */
static void fetch(const struct pair *p, uint64_t off, uint64_t bytes, void **h0, void **h1)
{
	void *h[2];
	for (int s = 0; s < 2; s++) {
		h[s] = tmp(bytes);
		int rc =
		    bytes ? sd[s].ops->to_host(sd[s].ctx, h[s], (const char *)p->d[s] + off, bytes)
			  : 0;
		if (rc)
			die("%s to_host: %s", s ? tested_name : "cpu", fedrun_error_message());
	}
	*h0 = h[0];
	*h1 = h[1];
}

/* The device pointer of the side being called; NULL for a NULL pair. */
static void *pdev(const struct pair *p)
{
	return p ? p->d[side] : NULL;
}
#define F(p) ((float *)pdev(p))
#define I32(p) ((int32_t *)pdev(p))
#define U8(p) ((uint8_t *)pdev(p))

/* ---- random inputs ----------------------------------------------------- */

static uint32_t urand(uint32_t lo, uint32_t hi) /* in [lo, hi] */
{
	return lo + (uint32_t)fedrun_rng_below(&rnd, (uint64_t)hi - lo + 1);
}

static float *hrand(uint64_t n, double lo, double hi)
{
	float *v = tmp(n * sizeof *v);
	for (uint64_t i = 0; i < n; i++)
		v[i] = (float)(lo + (hi - lo) * fedrun_rng_uniform(&rnd));
	return v;
}

static float *hfill(uint64_t n, float value)
{
	float *v = tmp(n * sizeof *v);
	for (uint64_t i = 0; i < n; i++)
		v[i] = value;
	return v;
}

static struct pair *drand(uint64_t n, double lo, double hi)
{
	return dput(hrand(n, lo, hi), n * sizeof(float));
}

/* n floats of NaN: for outputs that must be written in full, and for
 * C when beta == 0. */
static struct pair *dnan(uint64_t n)
{
	return dput(hfill(n, NAN), n * sizeof(float));
}

/* (rows, cols) random values in [-1, 1) with row stride ld inside a
 * NaN-filled buffer, batch times, stride floats apart: the gaps hold NaN so
 * that a backend reading them shows. */
static float *hstrided(int batch, int64_t stride, int rows, int cols, int ld, uint64_t n)
{
	float *v = hfill(n, NAN);
	for (int b = 0; b < batch; b++)
		for (int r = 0; r < rows; r++)
			for (int c = 0; c < cols; c++)
				v[b * stride + (int64_t)r * ld + c] =
				    (float)(2 * fedrun_rng_uniform(&rnd) - 1);
	return v;
}

static int32_t *hids(uint32_t n, uint32_t V)
{
	int32_t *v = tmp((uint64_t)n * sizeof *v);
	for (uint32_t i = 0; i < n; i++)
		v[i] = (int32_t)urand(0, V - 1);
	return v;
}

/* Targets in [0, V), about a fifth of them negative (ignored). */
static int32_t *htargets(uint32_t N, uint32_t V, bool all_ignored)
{
	int32_t *t = hids(N, V);
	for (uint32_t i = 0; i < N; i++)
		if (all_ignored || urand(0, 4) == 0)
			t[i] = urand(0, 1) ? -1 : -100;
	return t;
}

static double maxabs(const float *v, uint64_t n) /* NaN skipped */
{
	double m = 0;
	for (uint64_t i = 0; i < n; i++)
		if (fabs((double)v[i]) > m)
			m = fabs((double)v[i]);
	return m;
}

/* ---- comparisons -------------------------------------------------------- */

static void note_err(double d, double b, double tol_nominal, double tol)
{
	double rel = d / fmax(fabs(b), tol_nominal > 0 ? tol_nominal : FLT_MIN);
	cur->max_abs = fmax(cur->max_abs, d);
	cur->max_rel = fmax(cur->max_rel, rel);
	double ratio = tol > 0 ? d / tol : (d > 0 ? INFINITY : 0);
	cur->worst = fmax(cur->worst, ratio);
}

/* ref (CPU) against tst over n floats; atol the nominal absolute tolerance
 * (0 against the CPU itself). */
static bool cmp_core(const char *what, const float *ref, float *tst, uint64_t n, double atol)
{
	for (uint64_t j = 0; perturb && !perturbed && j < n; j++) {
		uint64_t i = (n / 2 + j) % n; /* the middle one, or the next finite one */
		if (isfinite(tst[i])) { /* by more than the tolerance, whatever it is */
			double by = fmax(0.01 * (1.0 + fabs(tst[i])),
					 2 * (atol + RTOL * fabs(ref[i])));
			tst[i] += (float)by;
			perturbed = true;
		}
	}
	const bool ex = exact && !cur_prod;
	const double at = ex ? 0 : atol, rt = ex ? 0 : RTOL;
	uint64_t bad = 0, first = 0;
	for (uint64_t i = 0; i < n; i++) {
		double b = ref[i], a = tst[i];
		if (isnan(a) || isnan(b)) {
			if (!(isnan(a) && isnan(b)) && !bad++)
				first = i;
			continue;
		}
		if (a == b) { /* inf == inf too */
			note_err(0, b, atol, at + rt * fabs(b));
			continue;
		}
		double d = fabs(a - b), tol = at + rt * fabs(b);
		note_err(d, b, atol, tol);
		if (!(d <= tol) && !bad++)
			first = i;
	}
	if (bad) {
		fail("%s: %" PRIu64 " of %" PRIu64 " floats differ; first [%" PRIu64
		     "] = %.9g, cpu %.9g (atol %.3g, rtol %.3g)",
		     what, bad, n, first, (double)tst[first], (double)ref[first], at, rt);
		return false;
	}
	pass();
	return true;
}

/* n floats at float offset off of p, with an explicit nominal atol. */
static bool cmp_atol(const char *what, const struct pair *p, uint64_t off, uint64_t n, double atol)
{
	void *a, *b;
	fetch(p, off * sizeof(float), n * sizeof(float), &a, &b);
	return cmp_core(what, a, b, n, atol);
}

/* atol = ATOL sqrt(K) max|cpu result|. */
static bool cmp_k(const char *what, const struct pair *p, uint64_t off, uint64_t n, double K)
{
	void *a, *b;
	fetch(p, off * sizeof(float), n * sizeof(float), &a, &b);
	return cmp_core(what, a, b, n, ATOL * sqrt(K) * maxabs(a, n));
}

/* An accumulated gradient: atol = ATOL sqrt(K) max|cpu result - prefill|. */
static bool cmp_acc(const char *what, const struct pair *p, uint64_t n, double K)
{
	void *a, *b;
	fetch(p, 0, n * sizeof(float), &a, &b);
	const float *ref = a, *pre = p->h;
	double m = 0;
	for (uint64_t i = 0; i < n; i++)
		m = fmax(m, fabs((double)ref[i] - (pre ? pre[i] : 0.0f)));
	return cmp_core(what, a, b, n, ATOL * sqrt(K) * m);
}

/* Where the CPU result is exactly 0 the spec makes it exact (hidden keys,
 * queries with no key): the tested one must be 0 too. */
static bool cmp_zeros(const char *what, const struct pair *p, uint64_t off, uint64_t n)
{
	void *a, *b;
	fetch(p, off * sizeof(float), n * sizeof(float), &a, &b);
	const float *ref = a, *tst = b;
	for (uint64_t i = 0; i < n; i++)
		if (ref[i] == 0.0f && tst[i] != 0.0f) {
			fail("%s: [%" PRIu64 "] = %.9g where the cpu has an exact 0", what, i,
			     (double)tst[i]);
			return false;
		}
	pass();
	return true;
}

/* The rows of ignored targets (negative) must be exactly 0. */
static bool cmp_zero_rows(const char *what, const struct pair *p, const int32_t *targets,
			  uint32_t N, uint32_t V)
{
	void *a, *b;
	fetch(p, 0, (uint64_t)N * V * sizeof(float), &a, &b);
	const float *tst = b;
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t j = 0; targets[i] < 0 && j < V; j++)
			if (tst[(uint64_t)i * V + j] != 0.0f) {
				fail("%s: row %u (target %d) column %u is %.9g, must be 0", what, i,
				     targets[i], j, (double)tst[(uint64_t)i * V + j]);
				return false;
			}
	pass();
	return true;
}

/* Every float of the tested result is 0 (either sign). */
static bool cmp_allzero(const char *what, const struct pair *p, uint64_t n)
{
	void *a, *b;
	fetch(p, 0, n * sizeof(float), &a, &b);
	const float *tst = b;
	for (uint64_t i = 0; i < n; i++)
		if (tst[i] != 0.0f) {
			fail("%s: [%" PRIu64 "] = %.9g, must be 0", what, i, (double)tst[i]);
			return false;
		}
	pass();
	return true;
}

static bool cmp_bytes(const char *what, const struct pair *p, uint64_t off, uint64_t bytes)
{
	void *a, *b;
	fetch(p, off, bytes, &a, &b);
	const unsigned char *ref = a, *tst = b;
	for (uint64_t i = 0; i < bytes; i++)
		if (ref[i] != tst[i]) {
			fail("%s: byte %" PRIu64 " of %" PRIu64 " is %u, cpu %u (must be exact)",
			     what, i, bytes, tst[i], ref[i]);
			return false;
		}
	pass();
	return true;
}

static bool cmp_loss(const char *what, double ref, double tst)
{
	double tol = exact ? 0 : LOSS_TOL * (fabs(ref) + 1);
	double d = fabs(tst - ref);
	if (tst == ref)
		d = 0;
	note_err(d, ref, LOSS_TOL, tol);
	if (!(d <= tol)) {
		fail("%s: %.17g, cpu %.17g (tolerance %.3g)", what, tst, ref, tol);
		return false;
	}
	pass();
	return true;
}

static bool cmp_u64(const char *what, uint64_t ref, uint64_t tst)
{
	if (ref != tst) {
		fail("%s: %" PRIu64 ", cpu %" PRIu64 " (must be exact)", what, tst, ref);
		return false;
	}
	pass();
	return true;
}

/* The stream after a draw: key and counter exact, the buffer when a word of
 * it is still to be used, and the Box-Muller spare, which a draw of u32
 * words leaves alone. */
static bool cmp_rng(const char *what, const struct fedrun_rng *ref, const struct fedrun_rng *tst)
{
	bool same = memcmp(ref->key, tst->key, sizeof ref->key) == 0 &&
		    memcmp(ref->ctr, tst->ctr, sizeof ref->ctr) == 0 && ref->pos == tst->pos &&
		    (ref->pos >= 4 || memcmp(ref->buf + ref->pos, tst->buf + ref->pos,
					     (4 - ref->pos) * sizeof ref->buf[0]) == 0) &&
		    ref->have_spare == tst->have_spare &&
		    (!ref->have_spare || ref->spare == tst->spare);
	if (!same) {
		fail("%s: left at ctr %08x %08x %08x %08x pos %u, cpu %08x %08x %08x %08x pos %u",
		     what, tst->ctr[0], tst->ctr[1], tst->ctr[2], tst->ctr[3], tst->pos,
		     ref->ctr[0], ref->ctr[1], ref->ctr[2], ref->ctr[3], ref->pos);
		return false;
	}
	pass();
	return true;
}

/* ---- calling both backends ---------------------------------------------- */

static int rc2[2];
static char msg2[2][512];

static void run_note(int s)
{
	if (rc2[s])
		snprintf(msg2[s], sizeof msg2[s], "%s", fedrun_error_message());
}

static bool run_ok(const char *call)
{
	if (rc2[0]) {
		fail("%s on the cpu (the reference) returned %s: %s", call, fedrun_err_name(rc2[0]),
		     msg2[0]);
		return false;
	}
	if (rc2[1]) {
		fail("%s returned %s: %s", call, fedrun_err_name(rc2[1]), msg2[1]);
		return false;
	}
	return true;
}

/* Evaluates expr (an int-returning op call written with OPS, CTX and the
 * F/I32/U8 device pointers of the side) on the CPU, then on the tested
 * backend; true when both returned 0. */
#define RUN2(label, expr)                                                                          \
	(side = 0, rc2[0] = (expr), run_note(0), side = 1, rc2[1] = (expr), run_note(1),           \
	 run_ok(label))

/* Whether the tested table has member m (the CPU's has all of them). */
#define HAS(m) FEDRUN_BACKEND_HAS(sd[1].ops, m)

static bool has_or_note(bool has, const char *name)
{
	if (!has)
		printf("%-22s not in the table of %s: skipped\n", name, tested_name);
	return has;
}

/* ---- contexts and memory ------------------------------------------------ */

static int32_t device_index(void)
{
	const char *e = getenv("FEDRUN_TEST_DEVICE");
	return e ? (int32_t)atoi(e) : 0;
}

static void t_contexts(void)
{
	const struct fedrun_backend_ops *o = sd[1].ops;
	struct fedrun_backend_ctx_cfg full = {
	    .size = sizeof full, .threads = 1, .device = device_index()};
	/* a caller built before cfg.device existed */
	struct fedrun_backend_ctx_cfg old = {
	    .size = offsetof(struct fedrun_backend_ctx_cfg, device), .threads = 2};
	const struct fedrun_backend_ctx_cfg *cfgs[] = {NULL, &full, &old};
	const char *names[] = {"cfg NULL", "cfg threads 1", "cfg without device"};
	for (int i = 0; i < 3; i++) {
		case_set("%s", names[i]);
		op("ctx_create");
		void *c = NULL, *mem = NULL;
		int rc = o->ctx_create(cfgs[i], &c);
		if (rc) {
			fail("returned %s: %s", fedrun_err_name(rc), fedrun_error_message());
			continue;
		}
		pass();
		/* the new context works: a round trip through its memory */
		unsigned char in[77], out[77] = {0};
		for (int j = 0; j < 77; j++)
			in[j] = (unsigned char)(j * 37 + 11);
		rc = o->alloc(c, sizeof in, &mem);
		if (!rc)
			rc = o->to_device(c, mem, in, sizeof in);
		if (!rc)
			rc = o->to_host(c, out, mem, sizeof out);
		if (rc)
			fail("alloc/to_device/to_host in the new context: %s",
			     fedrun_error_message());
		else if (memcmp(in, out, sizeof in))
			fail("round trip through the new context changed the bytes");
		else
			pass();
		if (mem)
			o->free_mem(c, mem);
		op("ctx_destroy");
		o->ctx_destroy(c);
		pass();
	}
	report();
}

static void t_memory(void)
{
	static const uint64_t sizes[] = {1, 3, 64, 1001, 65541, 1u << 22};
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		uint64_t n = sizes[i];
		case_set("%" PRIu64 " bytes", n);
		op("alloc");
		struct pair *p = pair_alloc2(n, n);
		if ((uintptr_t)p->d[1] % 64)
			fail("%p not 64-byte aligned", p->d[1]);
		else
			pass();
		cmp_bytes("zero-filled", p, 0, n);

		/* to_device and to_host, at odd offsets and lengths */
		op("to_device");
		unsigned char *h = tmp(n);
		for (uint64_t j = 0; j < n; j++)
			h[j] = (unsigned char)urand(0, 255);
		uint64_t off = n > 8 ? urand(1, 7) : 0, len = n - off - (n > 16 ? urand(0, 5) : 0);
		for (int s = 0; s < 2; s++)
			if (sd[s].ops->to_device(sd[s].ctx, (char *)p->d[s] + off, h, len))
				fail("%s to_device: %s", s ? tested_name : "cpu",
				     fedrun_error_message());
		cmp_bytes("after to_device", p, 0, n);
		op("to_host");
		cmp_bytes("to_host from an offset", p, off / 2, n - off / 2);

		/* zero a sub-range */
		op("zero");
		uint64_t zo = n > 4 ? urand(0, 3) : 0,
			 zl = n > 8 ? urand(1, (uint32_t)(n - zo - 1)) : 1;
		zl = zl > n - zo ? n - zo : zl;
		if (RUN2("zero", OPS->zero(CTX, (char *)pdev(p) + zo, zl)))
			cmp_bytes("after zero", p, 0, n);

		/* copy between buffers and within one, unaligned */
		op("copy");
		struct pair *q = dput(hrand((n + 3) / 4, -1, 1), n);
		uint64_t co = n > 8 ? urand(0, 5) : 0, cl = n - co - (n > 8 ? urand(0, 2) : 0);
		if (RUN2("copy", OPS->copy(CTX, (char *)pdev(q) + co, pdev(p), cl)))
			cmp_bytes("copy into another buffer", q, 0, n);
		if (n >= 16 &&
		    RUN2("copy", OPS->copy(CTX, pdev(q), (char *)pdev(q) + n / 2 + 1, n / 2 - 1)))
			cmp_bytes("copy within a buffer", q, 0, n);

		op("free_mem");
		case_end(); /* frees p and q on both sides */
		pass();
	}
	report();
}

/* ---- matrix products ------------------------------------------------------ */

struct gemm_case {
	bool ta, tb;
	int m, n, k, pad_a, pad_b, pad_c;
	float alpha, beta;
	int batch;		 /* strided batched only */
	int gap_a, gap_b, gap_c; /* floats between problems beyond one matrix */
	bool bcast_b;		 /* stride_b = 0 */
};

/* Random shapes for products: sizes in [1, 33], padding 0..4. */
static struct gemm_case gemm_random(bool ta, bool tb)
{
	static const float alphas[] = {1.0f, -0.7f, 2.5f}, betas[] = {0.0f, 1.0f, 0.3f};
	struct gemm_case g = {.ta = ta, .tb = tb, .batch = 1};
	g.m = (int)urand(1, 33), g.n = (int)urand(1, 33), g.k = (int)urand(1, 33);
	g.pad_a = (int)urand(0, 4), g.pad_b = (int)urand(0, 4), g.pad_c = (int)urand(0, 4);
	g.alpha = alphas[urand(0, 2)];
	g.beta = betas[urand(0, 2)];
	return g;
}

static void gemm_run(const struct gemm_case *g, bool batched)
{
	const int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
	const int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
	const int lda = (ac > 1 ? ac : 1) + g->pad_a, ldb = (bc > 1 ? bc : 1) + g->pad_b;
	const int ldc = (g->n > 1 ? g->n : 1) + g->pad_c;
	const int batch = batched ? g->batch : 1;
	const int64_t sa = (int64_t)ar * lda + g->gap_a,
		      sb = g->bcast_b ? 0 : (int64_t)br * ldb + g->gap_b,
		      sc = (int64_t)g->m * ldc + g->gap_c;
	const uint64_t na = (uint64_t)((batch - 1) * sa + (int64_t)ar * lda);
	const uint64_t nb = (uint64_t)((batch - 1) * sb + (int64_t)br * ldb);
	const uint64_t nc = (uint64_t)((batch - 1) * sc + (int64_t)g->m * ldc);
	case_set("ta=%d tb=%d m=%d n=%d k=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g batch=%d%s",
		 g->ta, g->tb, g->m, g->n, g->k, lda, ldb, ldc, (double)g->alpha, (double)g->beta,
		 batch, g->bcast_b ? " stride_b=0" : "");
	struct pair *a = dput(hstrided(batch, sa, ar, ac, lda, na + 1), (na + 1) * sizeof(float));
	struct pair *b = dput(hstrided(batch, sb, br, bc, ldb, nb + 1), (nb + 1) * sizeof(float));
	struct pair *c = g->beta == 0.0f ? dnan(nc + 1)
					 : dput(hstrided(batch, sc, g->m, g->n, ldc, nc + 1),
						(nc + 1) * sizeof(float));
	bool ok = batched ? RUN2("sgemm_strided_batched",
				 OPS->sgemm_strided_batched(CTX, g->ta, g->tb, g->m, g->n, g->k,
							    g->alpha, F(a), lda, sa, F(b), ldb, sb,
							    g->beta, F(c), ldc, sc, batch))
			  : RUN2("sgemm", OPS->sgemm(CTX, g->ta, g->tb, g->m, g->n, g->k, g->alpha,
						     F(a), lda, F(b), ldb, g->beta, F(c), ldc));
	if (ok) {
		double s =
		    fabs(g->alpha) * sqrt((double)g->k) * maxabs(a->h, na) * maxabs(b->h, nb) +
		    (g->beta != 0.0f ? fabs(g->beta) * maxabs(c->h, nc) : 0.0);
		cmp_atol("C", c, 0, nc + 1, ATOL * s);
	}
	case_end();
}

static void t_sgemm(void)
{
	op("sgemm");
	for (int t = 0; t < 4; t++) {
		bool ta = t & 1, tb = t & 2;
		for (int r = 0; r < 6; r++) {
			struct gemm_case g = gemm_random(ta, tb);
			if (r == 0)
				g.beta = 0.0f; /* NaN in C must not show */
			gemm_run(&g, false);
		}
		/* awkward shapes: ones, a row, a column, k = 0, m = 0 */
		struct gemm_case aw[] = {
		    {ta, tb, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f, 1, 0, 0, 0, false},
		    {ta, tb, 1, 37, 5, 3, 0, 2, -1.0f, 1.0f, 1, 0, 0, 0, false},
		    {ta, tb, 37, 1, 1, 0, 5, 0, 0.5f, 0.3f, 1, 0, 0, 0, false},
		    {ta, tb, 6, 5, 0, 0, 0, 1, 1.0f, 0.5f, 1, 0, 0, 0, false},
		    {ta, tb, 6, 5, 0, 0, 0, 1, 1.0f, 0.0f, 1, 0, 0, 0, false},
		    {ta, tb, 0, 5, 3, 0, 0, 0, 1.0f, 0.0f, 1, 0, 0, 0, false},
		};
		for (unsigned i = 0; i < sizeof aw / sizeof aw[0]; i++)
			gemm_run(&aw[i], false);
		if (big) {
			struct gemm_case g = {ta,   tb,	  512, 512, 512, 8, 0,	  3,
					      1.0f, 0.0f, 1,   0,   0,	 0, false};
			gemm_run(&g, false);
		}
	}
	report();

	op("sgemm_strided_batched");
	for (int t = 0; t < 4; t++) {
		bool ta = t & 1, tb = t & 2;
		for (int r = 0; r < 4; r++) {
			struct gemm_case g = gemm_random(ta, tb);
			g.batch = (int)urand(1, 5);
			g.gap_a = (int)urand(0, 7), g.gap_b = (int)urand(0, 7),
			g.gap_c = (int)urand(0, 7);
			g.bcast_b = r == 3;
			if (r == 1)
				g.beta = 0.0f;
			gemm_run(&g, true);
		}
		if (big) { /* the heads of an attention: 64 products of 64 x 64 x 64 */
			struct gemm_case g = {ta,     tb,   64, 64, 64, 0, 0,	 0,
					      0.125f, 0.0f, 64, 0,  0,	0, false};
			gemm_run(&g, true);
		}
	}
	report();
}

/* ---- linear --------------------------------------------------------------- */

static void linear_run(uint32_t N, uint32_t in, uint32_t out, bool with_b, bool with_dx,
		       bool with_db)
{
	case_set("N=%u in=%u out=%u b=%s dx=%s db=%s", N, in, out, with_b ? "yes" : "NULL",
		 with_dx ? "yes" : "NULL", with_db ? "yes" : "NULL");
	const uint64_t nx = (uint64_t)N * in, nw = (uint64_t)out * in, ny = (uint64_t)N * out;
	struct pair *x = drand(nx, -1, 1), *w = drand(nw, -1, 1);
	struct pair *b = with_b ? drand(out, -1, 1) : NULL, *y = dnan(ny);
	op("linear_forward");
	if (RUN2("linear_forward", OPS->linear_forward(CTX, N, in, out, F(x), F(w), F(b), F(y))))
		cmp_atol("y", y, 0, ny,
			 ATOL * (sqrt((double)in) * maxabs(x->h, nx) * maxabs(w->h, nw) +
				 (b ? maxabs(b->h, out) : 0)));
	op("linear_backward");
	struct pair *dy = drand(ny, -1, 1), *dx = with_dx ? dnan(nx) : NULL;
	struct pair *dw = drand(nw, -1, 1), *db = with_db ? drand(out, -1, 1) : NULL;
	if (RUN2("linear_backward",
		 OPS->linear_backward(CTX, N, in, out, F(x), F(w), F(dy), F(dx), F(dw), F(db)))) {
		const double mdy = maxabs(dy->h, ny);
		if (dx)
			cmp_atol("dx", dx, 0, nx,
				 ATOL * sqrt((double)out) * mdy * maxabs(w->h, nw));
		cmp_acc("dw (accumulated)", dw, nw, N);
		if (db)
			cmp_acc("db (accumulated)", db, out, N);
	}
	case_end();
}

static void t_linear(void)
{
	for (int r = 0; r < 6; r++) {
		uint32_t N = urand(1, 40), in = urand(1, 40), out = urand(1, 40);
		linear_run(N, in, out, r % 2, r % 3 != 1, r % 4 != 2);
	}
	linear_run(1, 1, 1, true, true, true);
	linear_run(1, 17, 3, false, false, false);
	linear_run(67, 1, 5, true, true, true);
	if (big)
		linear_run(1024, 512, 512, true, true, true);
	report();
}

/* ---- embedding ------------------------------------------------------------- */

static void embedding_run(uint32_t N, uint32_t V, uint32_t D)
{
	case_set("N=%u V=%u D=%u", N, V, D);
	const uint64_t nw = (uint64_t)V * D, no = (uint64_t)N * D;
	int32_t *ids = hids(N, V);
	ids[0] = 0;
	ids[N - 1] = (int32_t)V - 1;
	struct pair *id = dput(ids, N * sizeof *ids), *w = drand(nw, -1, 1), *out = dnan(no);
	op("embedding_forward");
	if (RUN2("embedding_forward", OPS->embedding_forward(CTX, N, V, D, I32(id), F(w), F(out))))
		cmp_bytes("out (exact)", out, 0, no * sizeof(float));
	op("embedding_backward");
	struct pair *dout = drand(no, -1, 1), *dw = drand(nw, -1, 1);
	if (RUN2("embedding_backward",
		 OPS->embedding_backward(CTX, N, V, D, I32(id), F(dout), F(dw))))
		cmp_acc("dw (accumulated)", dw, nw, N);
	case_end();
}

static void t_embedding(void)
{
	embedding_run(40, 5, 7); /* every id repeated */
	embedding_run(1, 1, 1);
	embedding_run(3, 1, 4); /* one id, three times */
	for (int r = 0; r < 3; r++) {
		uint32_t N = urand(2, 60), V = urand(1, 50), D = urand(1, 40);
		embedding_run(N, V, D);
	}
	if (big)
		embedding_run(4096, 1000, 512);
	report();
}

/* ---- GRU ------------------------------------------------------------------ */

struct gru_case {
	uint32_t T, B, I, H;
	bool h0;
	int bias; /* 0 none, 1 both, 2 b_ih only, 3 b_hh only */
	bool dy, dhT, dx, dh0;
	bool skip_dw_ih; /* g.w_ih NULL */
};

static void gru_run(const struct gru_case *c)
{
	static const char *bias_names[] = {"none", "both", "b_ih only", "b_hh only"};
	case_set("T=%u B=%u I=%u H=%u h0=%s biases=%s dy=%s dhT=%s dx=%s dh0=%s%s", c->T, c->B,
		 c->I, c->H, c->h0 ? "yes" : "NULL", bias_names[c->bias], c->dy ? "yes" : "NULL",
		 c->dhT ? "yes" : "NULL", c->dx ? "yes" : "NULL", c->dh0 ? "yes" : "NULL",
		 c->skip_dw_ih ? " g.w_ih=NULL" : "");
	struct fedrun_gru_dims d = {.steps = c->T, .batch = c->B, .input = c->I, .hidden = c->H};
	const uint32_t H = c->H, H3 = 3 * H;
	const uint64_t nx = (uint64_t)c->T * c->B * c->I, ny = (uint64_t)c->T * c->B * H,
		       nh = (uint64_t)c->B * H;
	const double ws = 1.0 / sqrt((double)H); /* PyTorch's initialisation range */
	struct pair *x = drand(nx, -1, 1), *h0 = c->h0 ? drand(nh, -1, 1) : NULL;
	struct pair *wih = drand((uint64_t)H3 * c->I, -ws, ws),
		    *whh = drand((uint64_t)H3 * H, -ws, ws);
	struct pair *bih = c->bias == 1 || c->bias == 2 ? drand(H3, -ws, ws) : NULL;
	struct pair *bhh = c->bias == 1 || c->bias == 3 ? drand(H3, -ws, ws) : NULL;
	struct pair *y = dnan(ny);

	op("gru_cache_floats");
	uint64_t cf[2];
	for (int s = 0; s < 2; s++)
		cf[s] = sd[s].ops->gru_cache_floats(sd[s].ctx, &d);
	if (!cf[1]) {
		fail("0 floats");
		case_end();
		return;
	}
	pass();
	struct pair *cache = pair_alloc2(cf[0] * sizeof(float), cf[1] * sizeof(float));

	op("gru_forward");
	/* the weights struct must point at the side's memory: built per call */
#define GRU_W                                                                                      \
	(struct fedrun_gru_weights)                                                                \
	{                                                                                          \
		.w_ih = F(wih), .w_hh = F(whh), .b_ih = F(bih), .b_hh = F(bhh)                     \
	}
	if (!RUN2("gru_forward", OPS->gru_forward(CTX, &d, &GRU_W, F(x), F(h0), F(y), F(cache)))) {
		case_end();
		return;
	}
	/* h and the gates are O(1) whatever the size of y */
	void *y0, *y1;
	fetch(y, 0, ny * sizeof(float), &y0, &y1);
	cmp_core("y", y0, y1, ny, ATOL * sqrt((double)c->T * (c->I + H)) * fmax(1, maxabs(y0, ny)));

	op("gru_backward");
	struct pair *dy = c->dy ? drand(ny, -1, 1) : NULL, *dhT = c->dhT ? drand(nh, -1, 1) : NULL;
	struct pair *dx = c->dx ? dnan(nx) : NULL, *dh0 = c->dh0 ? dnan(nh) : NULL;
	struct pair *gwih = c->skip_dw_ih ? NULL : drand((uint64_t)H3 * c->I, -1, 1);
	struct pair *gwhh = drand((uint64_t)H3 * H, -1, 1);
	struct pair *gbih = bih ? drand(H3, -1, 1) : NULL, *gbhh = bhh ? drand(H3, -1, 1) : NULL;
#define GRU_G                                                                                      \
	(struct fedrun_gru_grads)                                                                  \
	{                                                                                          \
		.w_ih = F(gwih), .w_hh = F(gwhh), .b_ih = F(gbih), .b_hh = F(gbhh)                 \
	}
	if (RUN2("gru_backward", OPS->gru_backward(CTX, &d, &GRU_W, F(x), F(h0), F(y), F(cache),
						   F(dy), F(dhT), F(dx), F(dh0), &GRU_G))) {
		const double K = (double)c->T * (c->I + H3), KB = (double)c->T * c->B;
		if (dx)
			cmp_k("dx", dx, 0, nx, K);
		if (dh0)
			cmp_k("dh0", dh0, 0, nh, K);
		if (gwih)
			cmp_acc("dw_ih (accumulated)", gwih, (uint64_t)H3 * c->I, KB * H);
		cmp_acc("dw_hh (accumulated)", gwhh, (uint64_t)H3 * H, KB * H);
		if (gbih)
			cmp_acc("db_ih (accumulated)", gbih, H3, KB * H);
		if (gbhh)
			cmp_acc("db_hh (accumulated)", gbhh, H3, KB * H);
	}
#undef GRU_W
#undef GRU_G
	case_end();
}

static void t_gru(void)
{
	static const struct gru_case cases[] = {
	    {5, 3, 4, 6, true, 1, true, true, true, true, false},
	    {1, 1, 1, 1, false, 0, true, false, true, true, false},  /* T = B = I = H = 1 */
	    {1, 4, 3, 7, true, 2, false, true, true, false, false},  /* dy NULL: dhT only */
	    {7, 1, 5, 9, false, 3, true, false, false, true, false}, /* B = 1, odd H */
	    {4, 2, 6, 5, true, 1, true, true, false, false, true},   /* dx, dh0 NULL */
	    {3, 5, 8, 13, false, 1, true, true, true, true, false},
	    {6, 2, 3, 4, true, 0, false, false, true, true, false}, /* no gradient in */
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
		gru_run(&cases[i]);
	for (int r = 0; r < 2; r++) {
		struct gru_case c = {
		    .h0 = r == 0, .bias = 1, .dy = true, .dhT = r == 1, .dx = true, .dh0 = true};
		c.T = urand(1, 8), c.B = urand(1, 6), c.I = urand(1, 12), c.H = urand(1, 17);
		gru_run(&c);
	}
	if (big) {
		struct gru_case c = {35, 20, 200, 200, true, 1, true, true, true, true, false};
		gru_run(&c);
	}
	report();
}

/* ---- dropout --------------------------------------------------------------- */

/* A stream that has been used: `used` words taken from its buffer (so
 * that a draw must discard the rest), its block counter at ctr0. */
static struct fedrun_rng rng_state(uint32_t purpose, uint32_t ctr0, uint32_t used)
{
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1234, purpose, 3, 17);
	r.ctr[0] = ctr0;
	for (uint32_t i = 0; i < used; i++)
		(void)fedrun_rng_u32(&r);
	return r;
}

/* The mask as FEDRUN_DROPOUT_THRESHOLD defines it: the words that n calls
 * of fedrun_rng_u32 return once the buffer is discarded. Checks the CPU
 * reference against the spec, so that the tested backend is held to the
 * spec and not merely to the CPU. */
static void dropout_spec_check(const struct fedrun_rng *before, float p, uint64_t n,
			       const struct pair *mask, const struct fedrun_rng *after)
{
	struct fedrun_rng r = *before;
	r.pos = 4;
	const uint32_t thr = FEDRUN_DROPOUT_THRESHOLD(p);
	const uint8_t *m = mask->d[0];
	for (uint64_t i = 0; i < n; i++)
		if (m[i] != (fedrun_rng_u32(&r) >= thr)) {
			fail("the cpu's mask [%" PRIu64 "] differs from the spec's", i);
			return;
		}
	r.pos = 4;
	if (memcmp(r.ctr, after->ctr, sizeof r.ctr) || after->pos != 4)
		fail("the cpu's stream after the draw differs from the spec's");
	else
		pass();
}

static void dropout_run(uint64_t n, float p, bool inplace, uint32_t ctr0, uint32_t used)
{
	case_set("n=%" PRIu64 " p=%g %s ctr0=%#x used=%u", n, (double)p,
		 inplace ? "y=x" : "y separate", ctr0, used);
	struct fedrun_rng before = rng_state(FEDRUN_RNG_DROPOUT, ctr0, used),
			  r[2] = {before, before};
	struct pair *x = drand(n, -1, 1), *y = inplace ? x : dnan(n);
	struct pair *mask = dput(memset(tmp(n), 0xAB, n), n); /* must be overwritten */
	op("dropout_forward");
	if (!RUN2("dropout_forward",
		  OPS->dropout_forward(CTX, n, p, &r[side], F(x), F(y), U8(mask)))) {
		case_end();
		return;
	}
	cmp_bytes("mask (exact)", mask, 0, n);
	cmp_rng("stream after the draw", &r[0], &r[1]);
	dropout_spec_check(&before, p, n, mask, &r[0]);
	cmp_k("y", y, 0, n, 1);

	op("dropout_backward");
	struct pair *dy = drand(n, -1, 1), *dx = inplace ? dy : dnan(n);
	if (RUN2("dropout_backward", OPS->dropout_backward(CTX, n, p, U8(mask), F(dy), F(dx))))
		cmp_k(inplace ? "dx (= dy)" : "dx", dx, 0, n, 1);
	case_end();
}

static void t_dropout(void)
{
	static const float ps[] = {0.0f, 0.1f, 0.5f};
	struct {
		uint64_t n;
		bool inplace;
		uint32_t ctr0, used;
	} cases[] = {
	    {1, false, 0, 0},
	    {3, true, 5, 1},
	    {4, false, 9, 3},
	    {5, true, 0, 2},
	    {1000, false, 77, 0},
	    {4097, true, 3, 1},
	    {4099, false, 0xFFFFFFF0u, 2}, /* the block counter crosses 2^32 */
	};
	for (unsigned k = 0; k < sizeof ps / sizeof ps[0]; k++) {
		for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
			dropout_run(cases[i].n, ps[k], cases[i].inplace, cases[i].ctr0,
				    cases[i].used);
		if (big)
			dropout_run((1u << 20) + 3, ps[k], k == 1, 12345, 1);
	}
	report();
}

/* ---- softmax cross-entropy --------------------------------------------------- */

enum dl_mode { DL_SEPARATE, DL_ALIAS, DL_NULL };
static const char *dl_names[] = {"separate", "= logits", "NULL"};

/* softmax_xent, and softmax_xent_db when db_mode >= 0 (0: db NULL, 1: db). */
static void xent_run(uint32_t N, uint32_t V, bool all_ignored, enum dl_mode dl, bool want_loss,
		     bool want_count, int db_mode, float scale)
{
	const bool fused = db_mode >= 0;
	case_set("N=%u V=%u%s dlogits %s loss %s count %s%s%s scale=%g", N, V,
		 all_ignored ? " all ignored" : "", dl_names[dl], want_loss ? "yes" : "NULL",
		 want_count ? "yes" : "NULL", fused ? " db " : "",
		 fused ? (db_mode ? "yes" : "NULL") : "", (double)scale);
	const uint64_t nl = (uint64_t)N * V;
	int32_t *t = htargets(N, V, all_ignored);
	struct pair *tg = dput(t, N * sizeof *t), *lg = drand(nl, -5, 5);
	struct pair *dlg = dl == DL_SEPARATE ? dnan(nl) : dl == DL_ALIAS ? lg : NULL;
	struct pair *db = fused && db_mode ? drand(V, -1, 1) : NULL;
	double loss[2] = {NAN, NAN};
	uint64_t count[2] = {UINT64_MAX, UINT64_MAX};
	op(fused ? "softmax_xent_db" : "softmax_xent");
	bool ok =
	    fused
		? RUN2("softmax_xent_db",
		       OPS->softmax_xent_db(CTX, N, V, F(lg), I32(tg), scale,
					    want_loss ? &loss[side] : NULL,
					    want_count ? &count[side] : NULL, F(dlg), F(db)))
		: RUN2("softmax_xent",
		       OPS->softmax_xent(CTX, N, V, F(lg), I32(tg), want_loss ? &loss[side] : NULL,
					 want_count ? &count[side] : NULL, F(dlg)));
	if (ok) {
		if (want_loss)
			cmp_loss("loss", loss[0], loss[1]);
		if (want_count)
			cmp_u64("count", count[0], count[1]);
		if (all_ignored && want_loss && loss[1] != 0.0)
			fail("loss %g with every target ignored (must be 0)", loss[1]);
		if (all_ignored && want_count && count[1] != 0)
			fail("count %" PRIu64 " with every target ignored", count[1]);
		if (dlg) {
			cmp_k("dlogits", dlg, 0, nl, V);
			cmp_zero_rows("dlogits of ignored rows", dlg, t, N, V);
		}
		if (db)
			cmp_acc("db (accumulated)", db, V, N);
	}
	case_end();
}

static void t_xent(void)
{
	for (int r = 0; r < 6; r++) {
		uint32_t N = urand(1, 40), V = urand(1, 50);
		xent_run(N, V, false, (enum dl_mode)(r % 3), r != 4, r != 5, -1, 1.0f);
	}
	xent_run(1, 1, false, DL_SEPARATE, true, true, -1, 1.0f);
	xent_run(7, 9, true, DL_SEPARATE, true, true, -1, 1.0f); /* loss 0, count 0, dlogits 0 */
	xent_run(5, 3, true, DL_ALIAS, true, true, -1, 1.0f);
	if (big)
		xent_run(256, 8000, false, DL_ALIAS, true, true, -1, 1.0f);
	report();
}

static void t_xent_db(void)
{
	if (!has_or_note(HAS(softmax_xent_db), "softmax_xent_db"))
		return;
	static const float scales[] = {1.0f, 0.5f, 2.5f};
	for (int r = 0; r < 6; r++) {
		uint32_t N = urand(1, 40), V = urand(1, 50);
		xent_run(N, V, false, r % 2 ? DL_ALIAS : DL_SEPARATE, r != 4, r != 5, r % 3 != 2,
			 scales[r % 3]);
	}
	xent_run(1, 1, false, DL_SEPARATE, true, true, 1, 0.5f);
	xent_run(6, 11, true, DL_SEPARATE, true, true, 1, 2.0f);   /* db unchanged */
	xent_run(70, 13, false, DL_SEPARATE, true, true, 1, 1.0f); /* more rows than a run */
	xent_run(9, 5, false, DL_NULL, true, true, 0, 1.0f);	   /* evaluation */
	if (big)
		xent_run(256, 8000, false, DL_ALIAS, true, true, 1, 1.0f / 256);
	report();
}

/* ---- activations ------------------------------------------------------------- */

static void act_run(enum fedrun_act act, uint64_t n, bool inplace)
{
	static const char *names[] = {"relu", "gelu", "tanh", "sigmoid", "gelu_erf"};
	case_set("%s n=%" PRIu64 " %s", names[act], n, inplace ? "in place" : "separate");
	float *hx = hrand(n, -6, 6);
	struct pair *x = dput(hx, n * sizeof *hx);
	/* backward needs the forward's input: in place, forward works on a copy */
	struct pair *xin = inplace ? dput(hx, n * sizeof *hx) : x, *y = inplace ? xin : dnan(n);
	/* atol from the size of the terms, not of the result: GELU's tail
	 * (x near -6) is a tiny difference of O(|x|) terms */
	const bool gelu = act == FEDRUN_ACT_GELU || act == FEDRUN_ACT_GELU_ERF;
	const double sy = act == FEDRUN_ACT_RELU || gelu ? fmax(1, maxabs(hx, n)) : 1;
	op("act_forward");
	if (RUN2("act_forward", OPS->act_forward(CTX, act, n, F(xin), F(y))))
		cmp_atol("y", y, 0, n, ATOL * sy);
	op("act_backward");
	struct pair *dy = drand(n, -1, 1), *dx = inplace ? dy : dnan(n);
	const double sdx = maxabs(dy->h, n) * (gelu ? 1.2 : 1.0); /* max |f'| */
	if (RUN2("act_backward", OPS->act_backward(CTX, act, n, F(x), F(dy), F(dx))))
		cmp_atol(inplace ? "dx (= dy)" : "dx", dx, 0, n, ATOL * sdx);
	case_end();
}

static void t_act(void)
{
	for (int a = FEDRUN_ACT_RELU; a <= FEDRUN_ACT_LAST; a++) {
		static const uint64_t ns[] = {1, 7, 1000, 10007};
		for (unsigned i = 0; i < sizeof ns / sizeof ns[0]; i++)
			act_run((enum fedrun_act)a, ns[i], i % 2);
		if (big)
			act_run((enum fedrun_act)a, 1u << 20, true);
	}
	report();
}

/* ---- layer norm --------------------------------------------------------------- */

struct ln_case {
	uint32_t N, D;
	float eps;
	bool gain, bias;
	enum dl_mode dx; /* DL_ALIAS: dx = dy */
	bool dgain, dbias;
};

static void ln_run(const struct ln_case *c)
{
	case_set("N=%u D=%u eps=%g gain=%s bias=%s dx %s dgain=%s dbias=%s", c->N, c->D,
		 (double)c->eps, c->gain ? "yes" : "NULL", c->bias ? "yes" : "NULL",
		 c->dx == DL_ALIAS ? "= dy" : dl_names[c->dx], c->dgain ? "yes" : "NULL",
		 c->dbias ? "yes" : "NULL");
	const uint32_t N = c->N, D = c->D;
	const uint64_t n = (uint64_t)N * D;
	/* rows off centre, as activations are: the mean must be taken out well */
	float *hx = hrand(n, -2, 2);
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t j = 0; j < D; j++)
			hx[(uint64_t)i * D + j] += 0.5f * (float)(i % 7);
	struct pair *x = dput(hx, n * sizeof *hx);
	struct pair *gain = c->gain ? drand(D, 0.5, 1.5) : NULL,
		    *bias = c->bias ? drand(D, -1, 1) : NULL;
	struct pair *y = dnan(n), *cache = dnan(2 * (uint64_t)N);
	op("layernorm_forward");
	if (!RUN2("layernorm_forward", OPS->layernorm_forward(CTX, N, D, c->eps, F(x), F(gain),
							      F(bias), F(y), F(cache)))) {
		case_end();
		return;
	}
	cmp_k("y", y, 0, n, D);
	cmp_atol("cache mean", cache, 0, N, ATOL * sqrt((double)D) * maxabs(hx, n));
	cmp_k("cache rstd", cache, N, N, D);
	op("layernorm_backward");
	struct pair *dy = drand(n, -1, 1);
	struct pair *dx = c->dx == DL_SEPARATE ? dnan(n) : c->dx == DL_ALIAS ? dy : NULL;
	struct pair *dgain = c->dgain ? drand(D, -1, 1) : NULL,
		    *dbias = c->dbias ? drand(D, -1, 1) : NULL;
	if (RUN2("layernorm_backward", OPS->layernorm_backward(CTX, N, D, F(x), F(gain), F(cache),
							       F(dy), F(dx), F(dgain), F(dbias)))) {
		/* dx = rstd (g - mean(g) - xhat mean(g xhat)), g = gain dy: its
		 * terms are of size rstd |gain dy|, and it may cancel to near 0
		 * (D = 2 with eps = 0 gives exactly 0), so atol comes from the
		 * terms, not from dx */
		void *st0, *st1;
		fetch(cache, N * sizeof(float), N * sizeof(float), &st0, &st1);
		const double sdx =
		    maxabs(st0, N) * (gain ? maxabs(gain->h, D) : 1.0) * maxabs(dy->h, n);
		if (dx)
			cmp_atol(c->dx == DL_ALIAS ? "dx (= dy)" : "dx", dx, 0, n,
				 ATOL * sqrt((double)D) * sdx);
		if (dgain)
			cmp_acc("dgain (accumulated)", dgain, D, N);
		if (dbias)
			cmp_acc("dbias (accumulated)", dbias, D, N);
	}
	case_end();
}

static void t_layernorm(void)
{
	bool f = has_or_note(HAS(layernorm_forward), "layernorm_forward");
	bool b = has_or_note(HAS(layernorm_backward), "layernorm_backward");
	if (!f || !b)
		return;
	const struct ln_case cases[] = {
	    {6, 1, 1e-5f, true, true, DL_SEPARATE, true, true}, /* D = 1: y = bias */
	    {5, 7, 1e-5f, false, false, DL_ALIAS, true, true},	/* no gain, no bias */
	    {3, 33, 1e-5f, true, false, DL_SEPARATE, false, true},
	    {4, 33, 1e-5f, false, true, DL_NULL, true, false},
	    {4, 1024, 1e-5f, true, true, DL_ALIAS, true, true},
	    {1, 2, 0.0f, true, true, DL_SEPARATE, true, true}, /* eps 0 */
	    {9, 64, 1e-6f, true, true, DL_SEPARATE, false, false},
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ln_run(&cases[i]);
	for (int r = 0; r < 3; r++) {
		struct ln_case c = {.eps = 1e-5f,
				    .gain = r != 1,
				    .bias = r != 2,
				    .dx = (enum dl_mode)(r % 2),
				    .dgain = true,
				    .dbias = true};
		c.N = urand(1, 40), c.D = urand(2, 80);
		ln_run(&c);
	}
	if (big) {
		struct ln_case c = {4096, 512, 1e-5f, true, true, DL_ALIAS, true, true};
		ln_run(&c);
	}
	report();
}

/* ---- attention ------------------------------------------------------------------ */

enum attn_layout {
	L_SEP, /* q, k, v separate, ld = D (given as 0) */
	L_QKV, /* one fused (B T, 3D) projection, ld = 3D */
	L_KV,  /* q separate, k and v one fused (B Tk, 2D), ld = 2D */
	L_PAD  /* separate, rows longer than D (NaN in the extra columns) */
};
enum attn_keylen {
	KL_NULL,
	KL_RAND, /* each in [1, Tk], the last one Tk */
	KL_ZERO	 /* the first 0, the last Tk, others random */
};

struct attn_case {
	uint32_t B, H, Tq, Tk, dh;
	enum attn_layout layout;
	bool causal;
	enum attn_keylen kl;
	float scale, dropout;
	bool dq, dk, dv;
	bool rng_at_p0; /* dropout 0 with a stream, which must stay untouched */
};

static void attn_run(const struct attn_case *c)
{
	static const char *lay[] = {"separate", "fused qkv ld=3D", "fused kv ld=2D", "padded rows"};
	static const char *kls[] = {"NULL", "random", "with a 0"};
	case_set("B=%u H=%u Tq=%u Tk=%u dh=%u %s%s key_len %s scale=%g dropout=%g dq/dk/dv=%d%d%d",
		 c->B, c->H, c->Tq, c->Tk, c->dh, lay[c->layout], c->causal ? " causal" : "",
		 kls[c->kl], (double)c->scale, (double)c->dropout, c->dq, c->dk, c->dv);
	const uint32_t B = c->B, Tq = c->Tq, Tk = c->Tk, D = c->H * c->dh;
	struct fedrun_attn_dims d = {.batch = B,
				     .heads = c->H,
				     .tq = Tq,
				     .tk = Tk,
				     .dh = c->dh,
				     .causal = c->causal,
				     .scale = c->scale,
				     .dropout = c->dropout};
	const uint64_t rq = (uint64_t)B * Tq, rk = (uint64_t)B * Tk; /* rows */
	/* inputs, and gradient buffers of the same layout (NaN outside [0, D)) */
	struct pair *q, *k, *v, *dq = NULL, *dk = NULL, *dv = NULL;
	uint64_t ok_ = 0, ov = 0; /* float offsets of k and v in their buffers */
	uint32_t ldq, ldk, ldv;
	switch (c->layout) {
	case L_QKV:
		ldq = ldk = ldv = 3 * D;
		q = k = v = dput(hstrided(1, 0, (int)rq, (int)(3 * D), (int)(3 * D), rq * 3 * D),
				 rq * 3 * D * sizeof(float));
		ok_ = D, ov = 2 * D;
		dq = dk = dv = dnan(rq * 3 * D);
		break;
	case L_KV:
		ldq = D, ldk = ldv = 2 * D;
		q = drand(rq * D, -1, 1);
		k = v = drand(rk * 2 * D, -1, 1);
		ov = D;
		dq = dnan(rq * D);
		dk = dv = dnan(rk * 2 * D);
		break;
	case L_PAD:
		ldq = D + 3, ldk = D + 1, ldv = D + 5;
		q = dput(hstrided(1, 0, (int)rq, (int)D, (int)ldq, rq * ldq),
			 rq * ldq * sizeof(float));
		k = dput(hstrided(1, 0, (int)rk, (int)D, (int)ldk, rk * ldk),
			 rk * ldk * sizeof(float));
		v = dput(hstrided(1, 0, (int)rk, (int)D, (int)ldv, rk * ldv),
			 rk * ldv * sizeof(float));
		dq = dnan(rq * ldq), dk = dnan(rk * ldk), dv = dnan(rk * ldv);
		break;
	default:
		ldq = ldk = ldv = D;
		q = drand(rq * D, -1, 1), k = drand(rk * D, -1, 1), v = drand(rk * D, -1, 1);
		dq = dnan(rq * D), dk = dnan(rk * D), dv = dnan(rk * D);
		break;
	}
	if (c->layout != L_SEP)
		d.ldq = ldq, d.ldk = ldk, d.ldv = ldv;
	const uint64_t nq = rq * ldq, nk = c->layout == L_KV ? rk * 2 * D : rk * ldk;
	struct pair *kl = NULL;
	if (c->kl != KL_NULL) {
		int32_t *h = tmp(B * sizeof *h);
		for (uint32_t b = 0; b < B; b++)
			h[b] = (int32_t)urand(1, Tk);
		h[B - 1] = (int32_t)Tk;
		if (c->kl == KL_ZERO)
			h[0] = 0;
		kl = dput(h, B * sizeof *h);
	}
	const uint64_t n = (uint64_t)B * c->H * Tq * Tk;
	const uint64_t spec_floats = n + (c->dropout > 0 ? (n + 3) / 4 : 0);

	op("attn_cache_floats");
	uint64_t cf[2];
	for (int s = 0; s < 2; s++)
		cf[s] = sd[s].ops->attn_cache_floats(sd[s].ctx, &d);
	if (cf[0] != spec_floats)
		fail("the cpu says %" PRIu64 " floats, the spec %" PRIu64, cf[0], spec_floats);
	if (cf[1] < spec_floats) {
		fail("%" PRIu64 " floats, less than the spec's %" PRIu64, cf[1], spec_floats);
		case_end();
		return;
	}
	pass();
	struct pair *cache = pair_alloc2(cf[0] * sizeof(float), cf[1] * sizeof(float));
	for (int s = 0; s < 2; s++) /* P must be written in full */
		sd[s].ops->to_device(sd[s].ctx, cache->d[s], hfill(n, NAN), n * sizeof(float));
	struct pair *out = dnan(rq * D);
	const bool use_rng = c->dropout > 0 || c->rng_at_p0;
	struct fedrun_rng before = rng_state(FEDRUN_RNG_DROPOUT, 41, 1), r[2] = {before, before};

	op("attn_forward");
	if (!RUN2("attn_forward", OPS->attn_forward(CTX, &d, F(q), F(k) + ok_, F(v) + ov, I32(kl),
						    use_rng ? &r[side] : NULL, F(out), F(cache)))) {
		case_end();
		return;
	}
	cmp_k("out", out, 0, rq * D, (double)Tk + c->dh);
	cmp_zeros("out of queries that see no key", out, 0, rq * D);
	cmp_k("cache P", cache, 0, n, c->dh);
	cmp_zeros("cache P of hidden keys", cache, 0, n);
	if (c->dropout > 0) {
		cmp_bytes("cache mask (exact)", cache, n * sizeof(float), n);
		dropout_spec_check(&before, c->dropout, n,
				   &(struct pair){{(float *)cache->d[0] + n, NULL}, {0, 0}, NULL},
				   &r[0]);
	}
	if (use_rng)
		cmp_rng(c->dropout > 0 ? "stream after the draw" : "stream (p = 0: unused)", &r[0],
			&r[1]);

	op("attn_backward");
	struct pair *dout = drand(rq * D, -1, 1);
	if (!c->dq)
		dq = NULL;
	if (!c->dk)
		dk = NULL;
	if (!c->dv)
		dv = NULL;
	if (RUN2("attn_backward",
		 OPS->attn_backward(CTX, &d, F(q), F(k) + ok_, F(v) + ov, I32(kl), F(cache),
				    F(dout), F(dq), dk ? F(dk) + ok_ : NULL,
				    dv ? F(dv) + ov : NULL))) {
		const double K = (double)Tq + Tk + c->dh;
		/* compare whole buffers: NaN columns outside [0, D) must stay */
		if (c->layout == L_QKV) {
			struct pair *g = dq ? dq : dk ? dk : dv;
			if (g) {
				cmp_k("dqkv", g, 0, nq, K);
				cmp_zeros("dqkv zeros (hidden keys)", g, 0, nq);
			}
		} else {
			if (dq)
				cmp_k("dq", dq, 0, nq, K);
			if (c->layout == L_KV && (dk || dv)) {
				struct pair *g = dk ? dk : dv;
				cmp_k("dkv", g, 0, nk, K);
				cmp_zeros("dkv rows of hidden keys", g, 0, nk);
			} else {
				if (dk) {
					cmp_k("dk", dk, 0, rk * ldk, K);
					cmp_zeros("dk rows of hidden keys", dk, 0, rk * ldk);
				}
				if (dv) {
					cmp_k("dv", dv, 0, rk * ldv, K);
					cmp_zeros("dv rows of hidden keys", dv, 0, rk * ldv);
				}
			}
		}
	}
	case_end();
}

static void t_attention(void)
{
	bool ok = has_or_note(HAS(attn_cache_floats), "attn_cache_floats");
	ok = has_or_note(HAS(attn_forward), "attn_forward") && ok;
	ok = has_or_note(HAS(attn_backward), "attn_backward") && ok;
	if (!ok)
		return;
	const struct attn_case cases[] = {
	    {2, 2, 5, 5, 4, L_SEP, false, KL_NULL, 0.0f, 0.0f, true, true, true, false},
	    {2, 3, 6, 6, 5, L_QKV, true, KL_RAND, 0.0f, 0.0f, true, true, true, false},
	    {3, 2, 4, 7, 3, L_KV, false, KL_ZERO, 0.3f, 0.0f, true, true, true, true},
	    {2, 2, 3, 8, 4, L_SEP, true, KL_NULL, 0.0f, 0.0f, true, true, true,
	     false}, /* Tq < Tk */
	    {2, 2, 6, 3, 4, L_PAD, true, KL_RAND, 0.0f, 0.0f, true, true, true,
	     false}, /* Tq > Tk */
	    {3, 2, 1, 9, 8, L_KV, false, KL_ZERO, 0.0f, 0.0f, true, true, true, false}, /* Tq = 1 */
	    {2, 1, 1, 1, 1, L_SEP, true, KL_NULL, 1.5f, 0.0f, true, true, true, false}, /* ones */
	    {2, 3, 7, 7, 4, L_QKV, true, KL_ZERO, 0.0f, 0.1f, true, true, true, false},
	    {2, 2, 5, 9, 6, L_KV, false, KL_RAND, 0.0f, 0.5f, true, false, true, false},
	    {1, 1, 5, 5, 3, L_PAD, false, KL_NULL, 0.0f, 0.1f, true, false, false, false},
	    {2, 2, 4, 4, 2, L_QKV, false, KL_RAND, 0.0f, 0.0f, false, true, false, false},
	    {2, 2, 3, 7, 5, L_PAD, true, KL_ZERO, 0.0f, 0.5f, false, true, true, false},
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
		attn_run(&cases[i]);
	for (int r = 0; r < 2; r++) {
		struct attn_case c = {.layout = r ? L_KV : L_QKV,
				      .causal = r == 0,
				      .kl = r ? KL_RAND : KL_NULL,
				      .dropout = r ? 0.1f : 0.0f,
				      .dq = true,
				      .dk = true,
				      .dv = true};
		c.B = urand(1, 4), c.H = urand(1, 4), c.Tq = urand(1, 12);
		c.Tk = r ? urand(1, 12) : c.Tq; /* the fused layout is self-attention */
		c.dh = urand(1, 9);
		attn_run(&c);
	}
	if (big) { /* Transformer base: self-attention of the decoder, and cross-attention */
		struct attn_case s = {8,       8,    64,   64,	 64,   L_QKV, true,
				      KL_RAND, 0.0f, 0.1f, true, true, true,  false};
		struct attn_case x = {8,       8,    64,   48,	 64,   L_KV, false,
				      KL_RAND, 0.0f, 0.0f, true, true, true, false};
		attn_run(&s);
		attn_run(&x);
	}
	report();
}

/* ---- positional encoding ---------------------------------------------------------- */

enum pe_mode { PE_SEPARATE, PE_INPLACE, PE_XNULL };

static void posenc_run(uint32_t B, uint32_t T, uint32_t D, uint32_t pos0, float scale,
		       enum pe_mode mode)
{
	static const char *modes[] = {"separate", "y = x", "x NULL"};
	case_set("B=%u T=%u D=%u pos0=%u scale=%g %s", B, T, D, pos0, (double)scale, modes[mode]);
	const uint64_t n = (uint64_t)B * T * D;
	struct pair *x = mode == PE_XNULL ? NULL : drand(n, -1, 1);
	struct pair *y = mode == PE_INPLACE ? x : dnan(n);
	const double s = fabs(scale) * (x ? maxabs(x->h, n) : 0) + 1;
	op("posenc_forward");
	if (RUN2("posenc_forward", OPS->posenc_forward(CTX, B, T, D, pos0, scale, F(x), F(y))))
		cmp_atol("y", y, 0, n, ATOL * s + 4 * FLT_EPSILON * ((double)pos0 + T));
	op("posenc_backward");
	struct pair *dy = drand(n, -1, 1), *dx = mode == PE_INPLACE ? dy : dnan(n);
	if (RUN2("posenc_backward", OPS->posenc_backward(CTX, B, T, D, scale, F(dy), F(dx))))
		cmp_k(mode == PE_INPLACE ? "dx (= dy)" : "dx", dx, 0, n, 1);
	case_end();
}

static void t_posenc(void)
{
	bool f = has_or_note(HAS(posenc_forward), "posenc_forward");
	bool b = has_or_note(HAS(posenc_backward), "posenc_backward");
	if (!f || !b)
		return;
	posenc_run(2, 5, 8, 0, sqrtf(8), PE_SEPARATE);
	posenc_run(3, 4, 7, 3, 1.0f, PE_INPLACE); /* odd D */
	posenc_run(1, 6, 1, 0, 2.0f, PE_XNULL);	  /* D = 1 */
	posenc_run(2, 3, 2, 1000, 1.0f, PE_SEPARATE);
	posenc_run(2, 9, 33, 17, 0.5f, PE_XNULL);
	posenc_run(1, 1, 300, 511, sqrtf(300), PE_INPLACE); /* one step of a decoder */
	if (big)
		posenc_run(8, 64, 512, 0, sqrtf(512), PE_INPLACE);
	report();
}

/* ---- label-smoothed cross-entropy --------------------------------------------------- */

static void lsx_run(uint32_t N, uint32_t V, float eps, bool all_ignored, enum dl_mode dl,
		    bool want_loss, bool want_nll, bool want_count)
{
	case_set("N=%u V=%u eps=%g%s dlogits %s loss/nll/count %d%d%d", N, V, (double)eps,
		 all_ignored ? " all ignored" : "", dl_names[dl], want_loss, want_nll, want_count);
	const uint64_t nl = (uint64_t)N * V;
	int32_t *t = htargets(N, V, all_ignored);
	struct pair *tg = dput(t, N * sizeof *t), *lg = drand(nl, -5, 5);
	struct pair *dlg = dl == DL_SEPARATE ? dnan(nl) : dl == DL_ALIAS ? lg : NULL;
	double loss[2] = {NAN, NAN}, nll[2] = {NAN, NAN};
	uint64_t count[2] = {UINT64_MAX, UINT64_MAX};
	op("label_smoothed_xent");
	if (RUN2("label_smoothed_xent",
		 OPS->label_smoothed_xent(
		     CTX, N, V, eps, F(lg), I32(tg), want_loss ? &loss[side] : NULL,
		     want_nll ? &nll[side] : NULL, want_count ? &count[side] : NULL, F(dlg)))) {
		if (want_loss)
			cmp_loss("loss", loss[0], loss[1]);
		if (want_nll)
			cmp_loss("nll", nll[0], nll[1]);
		if (want_count)
			cmp_u64("count", count[0], count[1]);
		if (all_ignored && ((want_loss && loss[1] != 0) || (want_nll && nll[1] != 0)))
			fail("loss %g, nll %g with every target ignored (must be 0)", loss[1],
			     nll[1]);
		if (dlg) {
			cmp_k("dlogits", dlg, 0, nl, V);
			cmp_zero_rows("dlogits of ignored rows", dlg, t, N, V);
		}
	}
	case_end();
}

static void t_ls_xent(void)
{
	if (!has_or_note(HAS(label_smoothed_xent), "label_smoothed_xent"))
		return;
	static const float epss[] = {0.0f, 0.1f, 1.0f};
	for (unsigned e = 0; e < 3; e++) {
		float eps = epss[e];
		for (int r = 0; r < 3; r++) {
			uint32_t N = urand(1, 40), V = urand(2, 50);
			lsx_run(N, V, eps, false, (enum dl_mode)r, true, true, true);
		}
		uint32_t N = urand(1, 20), V = urand(1, 30);
		lsx_run(N, V, eps, false, DL_SEPARATE, e != 0, e != 1, e != 2);
		lsx_run(1, 1, eps, false, DL_SEPARATE, true, true, true);
		lsx_run(8, 6, eps, true, DL_ALIAS, true, true, true);
		if (big)
			lsx_run(256, 8000, eps, false, DL_ALIAS, true, true, true);
	}
	report();
}

/* ---- the optimizer ---------------------------------------------------------------- */

static void optim_run(const char *name, const struct fedrun_optim_cfg *cfg, uint64_t n,
		      uint64_t step0, int zero_mode /* 0 never, 1 always, 2 alternate */)
{
	const uint64_t ns = fedrun_optim_state_floats(cfg, n);
	struct pair *params = drand(n, -1, 1), *grad = dnan(n);
	struct pair *state = ns ? dput(hfill(ns, 0.0f), ns * sizeof(float)) : NULL;
	uint64_t step[2] = {step0, step0};
	for (int it = 0; it < 4; it++) {
		bool zero = zero_mode == 1 || (zero_mode == 2 && it % 2);
		const double lr = cfg->lr * (1.0 + 0.25 * it); /* a schedule: not cfg->lr */
		case_set("%s n=%" PRIu64 " step %" PRIu64 " zero_grad=%d lr=%g", name, n,
			 step[0] + 1, zero, lr);
		const float *hg = hrand(n, -1, 1);
		for (int s = 0; s < 2; s++)
			sd[s].ops->to_device(sd[s].ctx, grad->d[s], hg, n * sizeof(float));
		op("optim_step");
		if (!RUN2("optim_step", OPS->optim_step(CTX, cfg, lr, n, F(params), F(grad),
							F(state), &step[side], zero)))
			break;
		cmp_u64("*step", step[0], step[1]);
		cmp_k("params", params, 0, n, 1);
		if (ns == 2 * n) { /* Adam's m and v, whose sizes differ */
			cmp_k("state m", state, 0, n, 1);
			cmp_k("state v", state, n, n, 1);
		} else if (ns) {
			cmp_k("state (momentum)", state, 0, ns, 1);
		}
		/* without zero_grad the spec leaves grad's contents open */
		if (zero)
			cmp_allzero("grad zeroed", grad, n);
	}
	case_end();
}

static void t_optim(void)
{
	bool o = has_or_note(HAS(optim_step), "optim_step");
	bool p = has_or_note(HAS(prox_grad), "prox_grad");
	if (o) {
		/* (not struct fedrun_optim_cfg itself: it may grow) */
		static const struct {
			const char *name;
			enum fedrun_optimizer_kind kind;
			double lr, momentum;
			bool nesterov;
			double wd, beta1, beta2, eps, clip;
		} cfgs[] = {
		    {"sgd", FEDRUN_OPTIM_SGD, 0.1, 0, false, 0, 0.9, 0.999, 1e-8, 0},
		    {"sgd momentum", FEDRUN_OPTIM_SGD, 0.1, 0.9, false, 0, 0.9, 0.999, 1e-8, 0},
		    {"sgd nesterov wd", FEDRUN_OPTIM_SGD, 0.05, 0.9, true, 1e-2, 0.9, 0.999, 1e-8,
		     0},
		    {"sgd wd clip", FEDRUN_OPTIM_SGD, 0.5, 0, false, 1e-2, 0.9, 0.999, 1e-8, 1.0},
		    {"sgd momentum clip", FEDRUN_OPTIM_SGD, 0.5, 0.5, false, 0, 0.9, 0.999, 1e-8,
		     0.7},
		    {"adam", FEDRUN_OPTIM_ADAM, 1e-3, 0, false, 0, 0.9, 0.999, 1e-8, 0},
		    {"adam wd clip", FEDRUN_OPTIM_ADAM, 1e-2, 0, false, 1e-2, 0.9, 0.98, 1e-9, 0.5},
		    {"adamw", FEDRUN_OPTIM_ADAMW, 1e-2, 0, false, 1e-2, 0.9, 0.999, 1e-8, 0},
		    {"adamw clip off", FEDRUN_OPTIM_ADAMW, 5e-3, 0, false, 0.1, 0.8, 0.99, 1e-6,
		     1e6},
		};
		static const uint64_t ns[] = {1, 17, 4097};
		for (unsigned i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
			const struct fedrun_optim_cfg cfg = {.kind = cfgs[i].kind,
							     .lr = cfgs[i].lr,
							     .momentum = cfgs[i].momentum,
							     .nesterov = cfgs[i].nesterov,
							     .weight_decay = cfgs[i].wd,
							     .beta1 = cfgs[i].beta1,
							     .beta2 = cfgs[i].beta2,
							     .eps = cfgs[i].eps,
							     .clip_norm = cfgs[i].clip};
			for (unsigned j = 0; j < sizeof ns / sizeof ns[0]; j++)
				optim_run(cfgs[i].name, &cfg, ns[j], j == 2 ? 7 : 0,
					  (int)((i + j) % 3));
			if (big) /* more blocks of the norm than its stack holds */
				optim_run(cfgs[i].name, &cfg, 300007, 0, 2);
		}
		report();
	}
	if (p) {
		static const float mus[] = {0.01f, 1.0f, 0.0f};
		static const uint64_t ns[] = {1, 33, 5000};
		for (unsigned i = 0; i < 3; i++) {
			uint64_t n = ns[i];
			case_set("n=%" PRIu64 " mu=%g", n, (double)mus[i]);
			op("prox_grad");
			struct pair *pa = drand(n, -1, 1), *an = drand(n, -1, 1),
				    *g = drand(n, -1, 1);
			if (RUN2("prox_grad", OPS->prox_grad(CTX, n, mus[i], F(pa), F(an), F(g))))
				cmp_acc("grad (accumulated)", g, n, 1);
			case_end();
		}
		report();
	}
}

/* ---- errors: a NULL required pointer is a negative code, not a crash ------------------ */

static void expect_error(const char *what, int rc)
{
	case_set("%s", what);
	if (rc >= 0)
		fail("returned %d, expected a negative FEDRUN_E* code", rc);
	else if (!fedrun_error_message()[0])
		fail("returned %s without a message", fedrun_err_name(rc));
	else
		pass();
	fedrun_error_clear();
}

static void t_errors(void)
{
	const struct fedrun_backend_ops *o = sd[1].ops;
	void *c = sd[1].ctx;
	op("argument errors");
	side = 1;
	struct pair *a = drand(16, -1, 1), *b = drand(16, -1, 1);
	int32_t ids[2] = {0, 1};
	struct pair *t = dput(ids, sizeof ids);
	expect_error("ctx_create(cfg, NULL)", o->ctx_create(NULL, NULL));
	expect_error("sgemm with a NULL",
		     o->sgemm(c, false, false, 2, 2, 2, 1.0f, NULL, 2, F(a), 2, 0.0f, F(b), 2));
	expect_error("sgemm with lda < k",
		     o->sgemm(c, false, false, 2, 2, 4, 1.0f, F(a), 3, F(a), 2, 0.0f, F(b), 2));
	expect_error("linear_forward x NULL",
		     o->linear_forward(c, 2, 2, 2, NULL, F(a), NULL, F(b)));
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1, FEDRUN_RNG_DROPOUT, 0, 0);
	expect_error("dropout_forward rng NULL",
		     o->dropout_forward(c, 8, 0.5f, NULL, F(a), F(b), U8(t)));
	expect_error("dropout_forward p = 1",
		     o->dropout_forward(c, 8, 1.0f, &r, F(a), F(b), U8(t)));
	expect_error("softmax_xent logits NULL",
		     o->softmax_xent(c, 2, 2, NULL, I32(t), NULL, NULL, F(b)));
	if (FEDRUN_BACKEND_HAS(o, layernorm_forward))
		expect_error("layernorm_forward x NULL",
			     o->layernorm_forward(c, 2, 2, 1e-5f, NULL, NULL, NULL, F(b), F(a)));
	if (FEDRUN_BACKEND_HAS(o, attn_forward))
		expect_error("attn_forward dims NULL",
			     o->attn_forward(c, NULL, F(a), F(a), F(a), NULL, NULL, F(b), F(b)));
	if (FEDRUN_BACKEND_HAS(o, optim_step)) {
		uint64_t step = 0;
		expect_error("optim_step cfg NULL",
			     o->optim_step(c, NULL, 0.1, 4, F(a), F(b), NULL, &step, false));
	}
	case_end();
	report();
}

/* ---- the table and main ------------------------------------------------------------- */

static void t_table(void)
{
	const struct fedrun_backend_ops *o = sd[1].ops;
	op("table");
	case_set("%s", tested_name);
	/* Every member of ABI 1.0 must be set; later ones are optional. */
	const char *p = (const char *)o + offsetof(struct fedrun_backend_ops, ctx_create);
	const char *end = (const char *)o + offsetof(struct fedrun_backend_ops, act_backward) +
			  sizeof o->act_backward;
	bool all = o->name != NULL;
	for (; p + sizeof(void (*)(void)) <= end; p += sizeof(void (*)(void))) {
		void (*fn)(void);
		memcpy(&fn, p, sizeof fn);
		all = all && fn;
	}
	if (all)
		pass();
	else
		fail("a member of ABI 1.0 (or the name) is NULL");
	report();
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : getenv("FEDRUN_TEST_BACKEND");
	tested_name = name && *name ? name : "cuda";
	const char *e = getenv("FEDRUN_TEST_SEED");
	const uint64_t seed = e ? strtoull(e, NULL, 0) : DEFAULT_SEED;
	perturb = (e = getenv("FEDRUN_TEST_BACKEND_PERTURB")) && strcmp(e, "0") && *e;
	fedrun_rng_init(&rnd, seed, FEDRUN_RNG_DATA, 0, 0);

	sd[0].ops = fedrun_backend_cpu();
	int rc = fedrun_backend_find(tested_name, &sd[1].ops);
	if (rc == FEDRUN_ENOENT) {
		printf("SKIP: backend '%s' not found: %s\n", tested_name, fedrun_error_message());
		return EXIT_SKIP;
	}
	if (rc) {
		printf("FAIL: backend '%s': %s: %s\n", tested_name, fedrun_err_name(rc),
		       fedrun_error_message());
		return 1;
	}
	/* FEDRUN_TEST_NONDETERMINISTIC=1 tests the faster ops a backend may
	 * use when allowed to be nondeterministic (CUDA: atomic additions). */
	/* FEDRUN_TEST_PRECISION=bf16 (or tf32) tests the tested backend's
	 * context of that precision against the CPU's FP32. */
	if ((e = getenv("FEDRUN_TEST_PRECISION")) && *e) {
		if (strcmp(e, "bf16") == 0)
			precision = FEDRUN_PRECISION_BF16;
		else if (strcmp(e, "tf32") == 0)
			precision = FEDRUN_PRECISION_TF32;
		else if (strcmp(e, "fp32") != 0) {
			printf("FAIL: FEDRUN_TEST_PRECISION=%s: fp32, bf16 or tf32\n", e);
			return 1;
		}
	}
	struct fedrun_backend_ctx_cfg cfg = {
	    .size = sizeof cfg,
	    .device = device_index(),
	    .allow_nondeterministic =
		(e = getenv("FEDRUN_TEST_NONDETERMINISTIC")) && *e && strcmp(e, "0"),
	    .precision = precision};
	rc = sd[1].ops->ctx_create(&cfg, &sd[1].ctx);
	if (rc) {
		printf("SKIP: backend '%s': ctx_create returned %s: %s\n", tested_name,
		       fedrun_err_name(rc), fedrun_error_message());
		return EXIT_SKIP;
	}
	if ((rc = sd[0].ops->ctx_create(NULL, &sd[0].ctx))) {
		printf("FAIL: cpu ctx_create: %s\n", fedrun_error_message());
		sd[1].ops->ctx_destroy(sd[1].ctx);
		return 1;
	}
	exact = sd[1].ops == sd[0].ops &&
		!((e = getenv("FEDRUN_TEST_TOLERANT")) && *e && strcmp(e, "0"));
	big = sd[1].ops != sd[0].ops || ((e = getenv("FEDRUN_TEST_BIG")) && *e && strcmp(e, "0"));
	printf("backend '%s' (%s) against cpu: seed %" PRIu64 ", %s%s, %s shapes%s\n",
	       tested_name, fedrun_precision_name(precision), seed,
	       exact ? "exact (tolerances 0)" : "rtol 1e-4, atol 1e-5 x scale",
	       precision == FEDRUN_PRECISION_BF16   ? "; products: rtol 2^-7 + 2^-16, atol 2^-6 x scale"
	       : precision == FEDRUN_PRECISION_TF32 ? "; products: rtol 2^-9 + 2^-20, atol 2^-8 x scale"
						    : "",
	       big ? "small and large" : "small", perturb ? ", one result PERTURBED" : "");
	if (precision == FEDRUN_PRECISION_BF16 && sd[1].ops == sd[0].ops)
		printf("bf16 kernels: %s\n", fedrun_backend_cpu_bf16_isa());
	fflush(stdout);
	const clock_t t0 = clock();
	const double w0 = now();
	report(); /* starts the clock */

	t_table();
	t_contexts();
	t_memory();
	t_sgemm();
	t_linear();
	t_embedding();
	t_gru();
	t_dropout();
	t_xent();
	t_act();
	t_layernorm();
	t_attention();
	t_posenc();
	t_ls_xent();
	t_xent_db();
	t_optim();
	t_errors();

	sd[1].ops->ctx_destroy(sd[1].ctx);
	sd[0].ops->ctx_destroy(sd[0].ctx);
	printf("%s: %d failure%s, %.2f s (cpu time %.2f s)\n", failures ? "FAIL" : "PASS", failures,
	       failures == 1 ? "" : "s", now() - w0, (double)(clock() - t0) / CLOCKS_PER_SEC);
	return failures ? 1 : 0;
}
