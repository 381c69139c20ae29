/* Bias helpers of the CPU backend: broadcasting a bias over the rows of a
 * matrix (before an sgemm with beta = 1) and summing gradient rows into a
 * bias gradient. */
#include "config.h"
#include <string.h>
#include "cpu.h"

/* Columns per block of colsum_acc: one block is a thread's unit of work and
 * its double accumulators stay in registers or L1. */
#define COL_BLOCK 64

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

void nn_cpu_colsum_acc(const void *ctx, uint64_t rows, uint32_t cols, uint64_t ld, const float *x,
		       float *acc)
{
	uint32_t nb = (cols + COL_BLOCK - 1) / COL_BLOCK;
	int nt = nn_cpu_threads(ctx);
	(void)nt;
	/* Each block of columns is summed over all rows in row order by one
	 * thread, in double: the same bits for any number of threads. */
#pragma omp parallel for schedule(static) num_threads(nt) if (rows * cols >= NN_PAR_MIN)
	for (uint32_t blk = 0; blk < nb; blk++) {
		uint32_t c0 = blk * COL_BLOCK;
		uint32_t len = cols - c0 < COL_BLOCK ? cols - c0 : COL_BLOCK;
		double s[COL_BLOCK] = {0};
		for (uint64_t r = 0; r < rows; r++) {
			const float *xr = x + r * ld + c0;
#pragma omp simd
			for (uint32_t j = 0; j < len; j++)
				s[j] += xr[j];
		}
		for (uint32_t j = 0; j < len; j++)
			acc[c0 + j] += (float)s[j];
	}
}
