/* SPDX-License-Identifier: Apache-2.0 */
/* Bias helpers of the CPU backend: broadcasting a bias over the rows of a
 * matrix (before an sgemm with beta = 1) and summing gradient rows into a
 * bias gradient. */
#include "config.h"
#include <string.h>
#include "cpu.h"
#include "fastmath.h"

/* Columns per block of colsum_acc: one block is a thread's unit of work and
 * its double accumulators stay in registers or L1. */
#define COL_BLOCK 64
/* Rows summed in float before their sum joins the double total (the
 * cross-entropy's fused column sums use the same runs). */
#define COL_RUN NN_COLSUM_RUN

void nn_cpu_rows_fill(const void *ctx, uint64_t rows, uint32_t cols, uint64_t ld, const float *b,
		      float *y)
{
	int nt = nn_cpu_threads(ctx);
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if (rows * cols >= NN_PAR_MIN)
	for (uint64_t r = 0; r < rows; r++) {
		if (b)
			memcpy(y + r * ld, b, cols * sizeof *y);
		else
			memset(y + r * ld, 0, cols * sizeof *y);
	}
}

/* s (len) += sum of rows [0, rows) of x (row stride ld), in float over
 * runs of COL_RUN rows (vector adds), each run then added in double: the
 * double conversions, slow in vector code, happen once per run. */
NN_SIMD_CLONES
static void colsum_block(uint64_t rows, uint32_t len, uint64_t ld, const float *x, double *s)
{
	float f[COL_BLOCK];
	for (uint64_t r0 = 0; r0 < rows; r0 += COL_RUN) {
		uint64_t r1 = rows - r0 < COL_RUN ? rows : r0 + COL_RUN;
		for (uint32_t j = 0; j < len; j++)
			f[j] = 0.0f;
		for (uint64_t r = r0; r < r1; r++) {
			const float *xr = x + r * ld;
#pragma omp simd
			for (uint32_t j = 0; j < len; j++)
				f[j] += xr[j];
		}
		for (uint32_t j = 0; j < len; j++)
			s[j] += f[j];
	}
}

void nn_cpu_colsum_acc(const void *ctx, uint64_t rows, uint32_t cols, uint64_t ld, const float *x,
		       float *acc)
{
	uint32_t nb = (cols + COL_BLOCK - 1) / COL_BLOCK;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
	/* Each block of columns is summed over all rows in row order by one
	 * thread: the same bits for any number of threads. */
#pragma omp parallel for schedule(static) num_threads(nt) if (rows * cols >= NN_PAR_MIN)
	for (uint32_t blk = 0; blk < nb; blk++) {
		uint32_t c0 = blk * COL_BLOCK;
		uint32_t len = cols - c0 < COL_BLOCK ? cols - c0 : COL_BLOCK;
		double s[COL_BLOCK] = {0};
		colsum_block(rows, len, ld, x + c0, s);
		for (uint32_t j = 0; j < len; j++)
			acc[c0 + j] += (float)s[j];
	}
}
