/* SPDX-License-Identifier: Apache-2.0 */
/* Reference GRU layer: PyTorch's equations (fedrun/backend.h) evaluated
 * element by element in double, and backpropagation through time written
 * straight from the chain rule, one (step, batch row) at a time. Nothing is
 * shared with the CPU kernel's fused layout, so that the two check each
 * other. */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "ref.h"

static double sigmoid(double v)
{
	return 1.0 / (1.0 + exp(-v));
}

/* Row `row` of the (rows, cols) matrix m times vector v, plus bias[row]. */
static double rowdot(const double *m, uint32_t row, uint32_t cols, const double *v,
		     const double *bias)
{
	double s = bias ? bias[row] : 0.0;
	for (uint32_t k = 0; k < cols; k++)
		s += m[(uint64_t)row * cols + k] * v[k];
	return s;
}

/* One step for one batch row; also returns the gates when r, z, n, hn are
 * not NULL (each H). */
static void ref_cell(uint32_t I, uint32_t H, const struct nn_ref_gru_weights *w, const double *x,
		     const double *h, double *hout, double *r, double *z, double *n, double *hn)
{
	for (uint32_t j = 0; j < H; j++) {
		double ar = rowdot(w->w_ih, j, I, x, w->b_ih) + rowdot(w->w_hh, j, H, h, w->b_hh);
		double az =
		    rowdot(w->w_ih, H + j, I, x, w->b_ih) + rowdot(w->w_hh, H + j, H, h, w->b_hh);
		double xn = rowdot(w->w_ih, 2 * H + j, I, x, w->b_ih);
		double hnj = rowdot(w->w_hh, 2 * H + j, H, h, w->b_hh);
		double rj = sigmoid(ar), zj = sigmoid(az);
		double nj = tanh(xn + rj * hnj);
		hout[j] = (1.0 - zj) * nj + zj * h[j];
		if (r) {
			r[j] = rj;
			z[j] = zj;
			n[j] = nj;
			hn[j] = hnj;
		}
	}
}

void nn_ref_gru_forward(const struct fedrun_gru_dims *d, const struct nn_ref_gru_weights *w,
			const double *x, const double *h0, double *y)
{
	const uint32_t T = d->steps, B = d->batch, I = d->input, H = d->hidden;
	double *zero = calloc(H, sizeof *zero);
	if (!zero)
		return;
	for (uint32_t t = 0; t < T; t++)
		for (uint32_t b = 0; b < B; b++) {
			const double *h = t ? y + ((uint64_t)(t - 1) * B + b) * H
					    : (h0 ? h0 + (uint64_t)b * H : zero);
			ref_cell(I, H, w, x + ((uint64_t)t * B + b) * I, h,
				 y + ((uint64_t)t * B + b) * H, NULL, NULL, NULL, NULL);
		}
	free(zero);
}

int nn_ref_gru_backward(const struct fedrun_gru_dims *d, const struct nn_ref_gru_weights *w,
			const double *x, const double *h0, const double *dy, const double *dhT,
			double *dx, double *dh0, const struct nn_ref_gru_grads *g)
{
	const uint32_t T = d->steps, B = d->batch, I = d->input, H = d->hidden;
	const uint64_t TBH = (uint64_t)T * B * H;
	double *y = calloc(TBH, sizeof *y), *r = calloc(TBH, sizeof *r);
	double *z = calloc(TBH, sizeof *z), *n = calloc(TBH, sizeof *n);
	double *hn = calloc(TBH, sizeof *hn), *zero = calloc(H, sizeof *zero);
	double *dh = calloc((uint64_t)B * H, sizeof *dh), *dhp = calloc(H, sizeof *dhp);
	double *ga = calloc(3 * (uint64_t)H, sizeof *ga); /* d/d(W_ih x + b_ih) */
	double *gb = calloc(3 * (uint64_t)H, sizeof *gb); /* d/d(W_hh h + b_hh) */
	int rc = 0;
	if (!y || !r || !z || !n || !hn || !zero || !dh || !dhp || !ga || !gb) {
		rc = fedrun_error(FEDRUN_ENOMEM, "ref gru backward");
		goto out;
	}

	/* Forward again, keeping the gates. */
	for (uint32_t t = 0; t < T; t++)
		for (uint32_t b = 0; b < B; b++) {
			uint64_t o = ((uint64_t)t * B + b) * H;
			const double *h =
			    t ? y + o - (uint64_t)B * H : (h0 ? h0 + (uint64_t)b * H : zero);
			ref_cell(I, H, w, x + ((uint64_t)t * B + b) * I, h, y + o, r + o, z + o,
				 n + o, hn + o);
		}

	if (dhT)
		memcpy(dh, dhT, (uint64_t)B * H * sizeof *dh);
	for (uint32_t t = T; t-- > 0;) {
		for (uint32_t b = 0; b < B; b++) {
			uint64_t o = ((uint64_t)t * B + b) * H;
			const double *h =
			    t ? y + o - (uint64_t)B * H : (h0 ? h0 + (uint64_t)b * H : zero);
			const double *xt = x + ((uint64_t)t * B + b) * I;
			double *dhb = dh + (uint64_t)b * H;
			for (uint32_t j = 0; j < H; j++) {
				/* h' = (1 - z) n + z h */
				double dht = dhb[j] + (dy ? dy[o + j] : 0.0);
				double rj = r[o + j], zj = z[o + j], nj = n[o + j];
				double dn = dht * (1.0 - zj);
				double dz = dht * (h[j] - nj);
				/* n = tanh(xn + r hn) */
				double dpre_n = dn * (1.0 - nj * nj);
				double dr = dpre_n * hn[o + j];
				double dpre_r = dr * rj * (1.0 - rj);
				double dpre_z = dz * zj * (1.0 - zj);
				ga[j] = dpre_r;
				ga[H + j] = dpre_z;
				ga[2 * H + j] = dpre_n;
				gb[j] = dpre_r;
				gb[H + j] = dpre_z;
				gb[2 * H + j] = dpre_n * rj;
				dhp[j] = dht * zj; /* the direct path of h' = ... + z h */
			}
			for (uint32_t i = 0; i < 3 * H; i++) {
				if (g && g->b_ih)
					g->b_ih[i] += ga[i];
				if (g && g->b_hh)
					g->b_hh[i] += gb[i];
				for (uint32_t k = 0; g && g->w_ih && k < I; k++)
					g->w_ih[(uint64_t)i * I + k] += ga[i] * xt[k];
				for (uint32_t k = 0; g && g->w_hh && k < H; k++)
					g->w_hh[(uint64_t)i * H + k] += gb[i] * h[k];
			}
			for (uint32_t k = 0; dx && k < I; k++) {
				double s = 0.0;
				for (uint32_t i = 0; i < 3 * H; i++)
					s += ga[i] * w->w_ih[(uint64_t)i * I + k];
				dx[((uint64_t)t * B + b) * I + k] = s;
			}
			for (uint32_t k = 0; k < H; k++) {
				double s = dhp[k];
				for (uint32_t i = 0; i < 3 * H; i++)
					s += gb[i] * w->w_hh[(uint64_t)i * H + k];
				dhb[k] = s;
			}
		}
	}
	if (dh0)
		memcpy(dh0, dh, (uint64_t)B * H * sizeof *dh0);
out:
	free(y);
	free(r);
	free(z);
	free(n);
	free(hn);
	free(zero);
	free(dh);
	free(dhp);
	free(ga);
	free(gb);
	return rc;
}
