/* SPDX-License-Identifier: Apache-2.0 */
/* The spectral norm (largest singular value) of a float matrix, for FedAtt's
 * "spectral" distance: what the authors' code computes with
 * scipy.linalg.norm(ord=2). */
#ifndef FEDATT_SPECTRAL_H
#define FEDATT_SPECTRAL_H

#include <stdint.h>

/* Most Lanczos steps taken; bounds the memory to (2 * this + 1) vectors. */
#define FEDATT_LANCZOS_MAX 128

/* σ_max of the rows x cols row-major matrix a, into *sigma. Golub-Kahan-Lanczos
 * bidiagonalisation with full reorthogonalisation, in double, from a fixed
 * start vector: deterministic, and independent of the number of threads.
 * It stops when two successive estimates agree to 1e-13 (relative), when
 * the Krylov space is invariant (then the value is exact up to rounding), or
 * after min(rows, cols, FEDATT_LANCZOS_MAX) steps; *steps (may be NULL)
 * receives the number taken. */
int fedatt_spectral_norm(uint64_t rows, uint64_t cols, const float *a, double *sigma,
			 uint32_t *steps);

#endif
