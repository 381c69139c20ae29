/* SPDX-License-Identifier: Apache-2.0 */
/* Reference scaled dot-product attention (Vaswani et al. 2017, eq. 1) in
 * double, element by element: every hidden key gets the score -infinity,
 * tested key by key against both masks, rather than the prefix the CPU
 * kernel relies on; the backward pass applies the softmax Jacobian
 * dS_j = P_j (dP_j - sum_k P_k dP_k) entry by entry. */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ref.h"

struct geo {
	uint32_t B, H, Tq, Tk, dh, D, ldq, ldk, ldv;
	double scale, keep; /* keep = 1 / (1 - p) */
};

static struct geo geo_of(const struct fedrun_attn_dims *d)
{
	struct geo g = {d->batch, d->heads, d->tq, d->tk, d->dh, d->heads * d->dh, 0, 0, 0, 0, 0};
	g.ldq = d->ldq ? d->ldq : g.D;
	g.ldk = d->ldk ? d->ldk : g.D;
	g.ldv = d->ldv ? d->ldv : g.D;
	g.scale = d->scale != 0.0f ? d->scale : 1.0 / sqrt((double)d->dh);
	g.keep = 1.0 / (1.0 - (double)d->dropout);
	return g;
}

static int visible(const struct fedrun_attn_dims *d, const int32_t *key_len, uint32_t b, uint32_t i,
		   uint32_t j)
{
	if (key_len && (int64_t)j >= key_len[b])
		return 0;
	if (d->causal && (int64_t)j > (int64_t)i + d->tk - d->tq)
		return 0;
	return 1;
}

/* P (Tk) of query i of (b, h), before dropout; returns 0 when it sees no
 * key (P = 0). */
static int probs_row(const struct fedrun_attn_dims *d, const struct geo *g, const double *q,
		     const double *k, const int32_t *key_len, uint32_t b, uint32_t h, uint32_t i,
		     double *p)
{
	const double *qi = q + ((uint64_t)b * g->Tq + i) * g->ldq + (uint64_t)h * g->dh;
	double m = -INFINITY;
	for (uint32_t j = 0; j < g->Tk; j++) {
		const double *kj = k + ((uint64_t)b * g->Tk + j) * g->ldk + (uint64_t)h * g->dh;
		double s = 0.0;
		for (uint32_t c = 0; c < g->dh; c++)
			s += qi[c] * kj[c];
		p[j] = visible(d, key_len, b, i, j) ? g->scale * s : -INFINITY;
		m = fmax(m, p[j]);
	}
	if (m == -INFINITY) {
		for (uint32_t j = 0; j < g->Tk; j++)
			p[j] = 0.0;
		return 0;
	}
	double z = 0.0;
	for (uint32_t j = 0; j < g->Tk; j++)
		z += p[j] = exp(p[j] - m); /* exp(-inf) = 0 */
	for (uint32_t j = 0; j < g->Tk; j++)
		p[j] /= z;
	return 1;
}

static double dropped(const struct geo *g, const uint8_t *mask, uint64_t idx, double p)
{
	return mask ? (mask[idx] ? p * g->keep : 0.0) : p;
}

void nn_ref_attn_forward(const struct fedrun_attn_dims *d, const double *q, const double *k,
			 const double *v, const int32_t *key_len, const uint8_t *mask, double *out,
			 double *probs)
{
	const struct geo g = geo_of(d);
	double *p = malloc(g.Tk * sizeof *p);
	for (uint32_t b = 0; b < g.B; b++)
		for (uint32_t h = 0; h < g.H; h++)
			for (uint32_t i = 0; i < g.Tq; i++) {
				const uint64_t row = (((uint64_t)b * g.H + h) * g.Tq + i) * g.Tk;
				probs_row(d, &g, q, k, key_len, b, h, i, p);
				if (probs)
					memcpy(probs + row, p, g.Tk * sizeof *p);
				double *o =
				    out + ((uint64_t)b * g.Tq + i) * g.D + (uint64_t)h * g.dh;
				for (uint32_t c = 0; c < g.dh; c++) {
					double s = 0.0;
					for (uint32_t j = 0; j < g.Tk; j++)
						s += dropped(&g, mask, row + j, p[j]) *
						     v[((uint64_t)b * g.Tk + j) * g.ldv +
						       (uint64_t)h * g.dh + c];
					o[c] = s;
				}
			}
	free(p);
}

void nn_ref_attn_backward(const struct fedrun_attn_dims *d, const double *q, const double *k,
			  const double *v, const int32_t *key_len, const uint8_t *mask,
			  const double *dout, double *dq, double *dk, double *dv)
{
	const struct geo g = geo_of(d);
	double *p = malloc(g.Tk * sizeof *p), *dp = malloc(g.Tk * sizeof *dp);
	/* written, not accumulated: clear the D columns of every row first */
	for (uint64_t r = 0; r < (uint64_t)g.B * g.Tq; r++)
		for (uint32_t c = 0; dq && c < g.D; c++)
			dq[r * g.ldq + c] = 0.0;
	for (uint64_t r = 0; r < (uint64_t)g.B * g.Tk; r++)
		for (uint32_t c = 0; c < g.D; c++) {
			if (dk)
				dk[r * g.ldk + c] = 0.0;
			if (dv)
				dv[r * g.ldv + c] = 0.0;
		}
	for (uint32_t b = 0; b < g.B; b++)
		for (uint32_t h = 0; h < g.H; h++)
			for (uint32_t i = 0; i < g.Tq; i++) {
				const uint64_t row = (((uint64_t)b * g.H + h) * g.Tq + i) * g.Tk;
				const uint64_t hq = ((uint64_t)b * g.Tq + i),
					       off = (uint64_t)h * g.dh;
				const double *doi = dout + hq * g.D + off;
				probs_row(d, &g, q, k, key_len, b, h, i, p);
				/* dP'_j = dO_i . v_j; dV_j += P'_j dO_i; dP_j = dP'_j m_j keep */
				double sum = 0.0;
				for (uint32_t j = 0; j < g.Tk; j++) {
					const uint64_t kr = (uint64_t)b * g.Tk + j;
					double s = 0.0, pj = dropped(&g, mask, row + j, p[j]);
					for (uint32_t c = 0; c < g.dh; c++) {
						s += doi[c] * v[kr * g.ldv + off + c];
						if (dv)
							dv[kr * g.ldv + off + c] += pj * doi[c];
					}
					dp[j] = dropped(&g, mask, row + j, s);
					sum += p[j] * dp[j];
				}
				for (uint32_t j = 0; j < g.Tk; j++) {
					const uint64_t kr = (uint64_t)b * g.Tk + j;
					double ds = g.scale * p[j] * (dp[j] - sum);
					for (uint32_t c = 0; c < g.dh; c++) {
						if (dq)
							dq[hq * g.ldq + off + c] +=
							    ds * k[kr * g.ldk + off + c];
						if (dk)
							dk[kr * g.ldk + off + c] +=
							    ds * q[hq * g.ldq + off + c];
					}
				}
			}
	free(p), free(dp);
}
