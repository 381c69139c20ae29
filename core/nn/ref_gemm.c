/* SPDX-License-Identifier: Apache-2.0 */
/* Reference matrix product: the textbook triple loop in double, the oracle
 * for the CPU backend's sgemm and everything built on it. */
#include "config.h"
#include "ref.h"

void nn_ref_gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double *a,
		 int lda, const double *b, int ldb, double beta, double *c, int ldc)
{
	for (int i = 0; i < m; i++) {
		for (int j = 0; j < n; j++) {
			double s = 0.0;
			for (int p = 0; p < k; p++) {
				double av = trans_a ? a[(long)p * lda + i] : a[(long)i * lda + p];
				double bv = trans_b ? b[(long)j * ldb + p] : b[(long)p * ldb + j];
				s += av * bv;
			}
			double *cij = c + (long)i * ldc + j;
			*cij = alpha * s + (beta == 0.0 ? 0.0 : beta * *cij);
		}
	}
}
