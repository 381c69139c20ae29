/* SPDX-License-Identifier: Apache-2.0 */
/* Softmax cross-entropy over logits on the CPU backend, loss and gradient in
 * one pass per row: -log softmax(l)[t] = log sum_j e^{l_j - m} + m - l_t with
 * m the row's maximum. The mean is summed in fixed blocks of rows, so it
 * does not depend on the thread count, and each row's sum in fixed lanes,
 * so it does not depend on the vector width either. */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"
#include "fastmath.h"

#define XENT_BLOCK 16 /* rows per partial sum */

/* Lanes of the row sum: element j adds into lane j % XENT_LANES, and the
 * lanes are added in order at the end, so the sum's rounding is fixed by
 * the source, not by the vector width the compiler picks: the same bits on
 * every machine. */
#define XENT_LANES 16

/* Loss of one row; when dl is not NULL (it may be l itself) writes the
 * row's gradient (softmax - onehot) * k * scale and, when f is not NULL,
 * adds it to f (V). */
NN_SIMD_CLONES
static double xent_row(uint32_t V, const float *l, int32_t t, float *dl, float k, float scale,
		       float *f)
{
	/* The maximum, lane by lane too: plain selects vectorize where an
	 * OpenMP max reduction over floats does not (Clang). */
	const uint32_t vm = V - V % XENT_LANES;
	float mx[XENT_LANES];
	for (uint32_t q = 0; q < XENT_LANES; q++)
		mx[q] = l[0];
	for (uint32_t j0 = 0; j0 < vm; j0 += XENT_LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < XENT_LANES; q++)
			mx[q] = l[j0 + q] > mx[q] ? l[j0 + q] : mx[q];
	}
	float m = l[0];
	for (uint32_t j = vm; j < V; j++)
		m = l[j] > m ? l[j] : m;
	for (uint32_t q = 0; q < XENT_LANES; q++)
		m = mx[q] > m ? mx[q] : m;
	const float lt = l[t];
	float lane[XENT_LANES] = {0};
	for (uint32_t j0 = 0; j0 < vm; j0 += XENT_LANES) {
		float e[XENT_LANES];
#pragma omp simd
		for (uint32_t q = 0; q < XENT_LANES; q++) {
			e[q] = nn_expf(l[j0 + q] - m);
			lane[q] += e[q];
		}
		if (dl)
			memcpy(dl + j0, e, sizeof e);
	}
	for (uint32_t j = vm; j < V; j++) {
		float e = nn_expf(l[j] - m);
		lane[j - vm] += e;
		if (dl)
			dl[j] = e;
	}
	float s = 0.0f;
	for (uint32_t q = 0; q < XENT_LANES; q++)
		s += lane[q];
	if (dl) {
		/* d = (e_j k / s - k [j = t]) scale, the same float operations
		 * as scaling dl by k / s, subtracting k at the target, then
		 * multiplying the array by scale (x 1 is exact); f, the column
		 * sums of the current run of rows, gets d while it is in a
		 * register instead of in a later pass over dlogits. */
		const float ks = k / s;
		const uint32_t tu = (uint32_t)t;
		if (f) {
#pragma omp simd
			for (uint32_t j = 0; j < V; j++) {
				float d = dl[j] * ks;
				d = j == tu ? d - k : d;
				d *= scale;
				dl[j] = d;
				f[j] += d;
			}
		} else {
#pragma omp simd
			for (uint32_t j = 0; j < V; j++) {
				float d = dl[j] * ks;
				d = j == tu ? d - k : d;
				dl[j] = d * scale;
			}
		}
	}
	return log((double)s) + (double)m - (double)lt;
}

/* Rows per partial column sum: the runs of nn_cpu_colsum_acc, so that the
 * bias gradient has its bits. A run holds whole blocks of the loss. */
#define XENT_RUN NN_COLSUM_RUN
_Static_assert(XENT_RUN % XENT_BLOCK == 0, "a run of the column sums holds whole loss blocks");

/* Column sums of the runs' partials, added to db exactly as
 * nn_cpu_colsum_acc adds them: per column, a double from 0 that each run's
 * float sum joins in run order, then rounded to float and added. */
static void runs_to_db(const void *ctx, uint32_t runs, uint32_t V, const float *f, float *db)
{
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)runs * V >= NN_PAR_MIN)
	for (uint32_t j = 0; j < V; j++) {
		double s = 0.0;
		for (uint32_t r = 0; r < runs; r++)
			s += f[(uint64_t)r * V + j];
		db[j] += (float)s;
	}
}

/* softmax_xent and softmax_xent_db: the loss over blocks of XENT_BLOCK
 * rows, added in block order; with db, each run of XENT_RUN rows sums its
 * gradient rows into its own partial as they are written. */
static int xent(void *ctx, uint32_t N, uint32_t V, const float *logits, const int32_t *targets,
		float scale, double *loss, uint64_t *count, float *dlogits, float *db)
{
	if (N && (!V || !logits || !targets))
		return fedrun_error(FEDRUN_EINVAL, "softmax_xent: V = 0 or NULL logits/targets");
	if (db && !dlogits)
		return fedrun_error(FEDRUN_EINVAL, "softmax_xent_db: db without dlogits");
	uint64_t cnt = 0;
	for (uint32_t i = 0; i < N; i++) {
		if (targets[i] >= 0 && (uint32_t)targets[i] >= V)
			return fedrun_error(FEDRUN_EINVAL,
					    "softmax_xent: targets[%u] = %d outside [0, %u)", i,
					    targets[i], V);
		cnt += targets[i] >= 0;
	}
	const uint32_t nb = (N + XENT_BLOCK - 1) / XENT_BLOCK;
	const uint32_t runs = (N + XENT_RUN - 1) / XENT_RUN;
	double *part = malloc((nb ? nb : 1) * sizeof *part);
	float *fr = db && N ? malloc((uint64_t)runs * V * sizeof *fr) : NULL;
	if (!part || (db && N && !fr)) {
		free(part);
		free(fr);
		return fedrun_error(FEDRUN_ENOMEM, "softmax_xent: %u partial sums", nb);
	}
	const float k = cnt ? 1.0f / (float)cnt : 0.0f;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if ((uint64_t)N * V >= NN_PAR_MIN)
	for (uint32_t run = 0; run < runs; run++) {
		float *f = fr ? fr + (uint64_t)run * V : NULL; /* (V) */
		if (f)
			for (uint32_t j = 0; j < V; j++)
				f[j] = 0.0f;
		for (uint32_t blk = run * (XENT_RUN / XENT_BLOCK);
		     blk < nb && blk < (run + 1) * (XENT_RUN / XENT_BLOCK); blk++) {
			uint32_t i1 =
			    N - blk * XENT_BLOCK < XENT_BLOCK ? N : (blk + 1) * XENT_BLOCK;
			double s = 0.0;
			for (uint32_t i = blk * XENT_BLOCK; i < i1; i++) {
				const float *l = logits + (uint64_t)i * V;		/* (V) */
				float *dl = dlogits ? dlogits + (uint64_t)i * V : NULL; /* (V) */
				if (targets[i] < 0) {
					if (dl)
						memset(dl, 0, V * sizeof *dl);
					/* the zeros join the sum as in colsum_acc */
					for (uint32_t j = 0; f && j < V; j++)
						f[j] += 0.0f;
					continue;
				}
				s += xent_row(V, l, targets[i], dl, k, scale, f);
			}
			part[blk] = s;
		}
	}
	double total = 0.0;
	for (uint32_t blk = 0; blk < nb; blk++)
		total += part[blk];
	free(part);
	if (fr) {
		runs_to_db(ctx, runs, V, fr, db);
		free(fr);
	}
	if (loss)
		*loss = cnt ? total / (double)cnt : 0.0;
	if (count)
		*count = cnt;
	return 0;
}

int nn_cpu_softmax_xent(void *ctx, uint32_t N, uint32_t V, const float *logits,
			const int32_t *targets, double *loss, uint64_t *count, float *dlogits)
{
	return xent(ctx, N, V, logits, targets, 1.0f, loss, count, dlogits, NULL);
}

int nn_cpu_softmax_xent_db(void *ctx, uint32_t N, uint32_t V, const float *logits,
			   const int32_t *targets, float scale, double *loss, uint64_t *count,
			   float *dlogits, float *db)
{
	return xent(ctx, N, V, logits, targets, scale, loss, count, dlogits, db);
}
