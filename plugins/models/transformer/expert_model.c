/* SPDX-License-Identifier: Apache-2.0 */
/* The transformer's domain expert (FedNMT sec. 2.5; the gate itself in
 * expert.c): a client's private model M_P mixed with the global model M_G
 * token by token, weighted by λ(x) = (1 + tanh θ·x) / 2 of the source
 * sentence's features x = (mean of M_G's source token embeddings, 1).
 * Here: the features, both models' per-token log-probabilities on a split
 * (tfm_forward_token_nll, the same values the model's own evaluation adds
 * up), the fit of θ on the client's training split, the mixture's
 * evaluation and its decoding (tfm_decode_ids with a struct tfm_mix). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "expert.h"
#include "transformer.h"

uint32_t tfm_expert_gate_size(void *model)
{
	const struct tfm_model *m = model;
	return m->cfg.dim + 1;
}

/* The source embedding matrix (V,D) of params: encoder.embed.weight, or
 * with tie_embeddings "all" the shared decoder.embed.weight. */
static const float *src_embed(const struct tfm_model *m, const float *params)
{
	int64_t i = fedrun_layout_find(m->layout, "encoder.embed.weight");
	if (i < 0)
		i = fedrun_layout_find(m->layout, "decoder.embed.weight");
	return i < 0 ? NULL : params + m->layout->t[i].offset;
}

/* x (D + 1) = the mean of E's rows of the len source tokens (their raw
 * rows, without the sqrt(D) scale or positions; zeros for an empty
 * sentence), then 1, the bias feature. */
static void features(const struct tfm_model *m, const float *E, const int32_t *ids,
		     uint32_t len, double *x)
{
	const uint32_t D = m->cfg.dim;
	memset(x, 0, D * sizeof *x);
	for (uint32_t t = 0; t < len; t++) {
		const float *row = E + (uint64_t)ids[t] * D;
		for (uint32_t j = 0; j < D; j++)
			x[j] += row[j];
	}
	for (uint32_t j = 0; len && j < D; j++)
		x[j] /= len;
	x[D] = 1.0;
}

int tfm_expert_z(const struct tfm_model *m, const float *global, const float *gate,
		 int32_t *const *ids, const uint32_t *len, uint32_t n, double *z)
{
	const float *E = src_embed(m, global);
	const uint32_t G = m->cfg.dim + 1;
	double *x = malloc(G * sizeof *x), *th = malloc(G * sizeof *th);
	int rc = x && th ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0 && !E)
		rc = fedrun_error(FEDRUN_EINVAL, "transformer: expert: no source embedding tensor");
	for (uint32_t j = 0; j < G && rc == 0; j++)
		th[j] = gate[j];
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		features(m, E, ids[i], len[i], x);
		z[i] = tfm_gate_z(th, x, G);
	}
	free(x);
	free(th);
	return rc;
}

/* The gate's data over split s, sentences in s->order (the batches'
 * order), and both models' nll sums as the model's evaluation has them. */
struct gate_set {
	struct tfm_gate_data d;
	double *x, *lg, *lp;
	uint32_t *ntok;
	uint64_t tokens;
	double nll_g, nll_p; /* sums */
};

static void gate_set_free(struct gate_set *g)
{
	free(g->x);
	free(g->lg);
	free(g->lp);
	free(g->ntok);
	memset(g, 0, sizeof *g);
}

/* lp (tokens) = log p of every target token of s under params (host),
 * batch by batch as the model's evaluation cuts them; *nll_sum their
 * negated sum as it adds them up. */
static int token_logprobs(struct tfm_model *m, struct tfm_worker *w, const float *params,
			  const struct tfm_split *s, double *lp, double *nll_sum)
{
	uint32_t *start = NULL, nb = 0;
	int rc = tfm_send_params(m, w, params);
	if (rc == 0)
		rc = tfm_batch_plan(s, m->eval_batch, &start, &nb);
	uint64_t k = 0;
	*nll_sum = 0.0;
	for (uint32_t bi = 0; bi < nb && rc == 0; bi++) {
		struct tfm_batch b;
		double nl = 0.0;
		uint64_t nt = 0;
		if ((rc = tfm_batch_fill(m, s, s->order + start[bi], start[bi + 1] - start[bi],
					 &w->bb, &b)) < 0 ||
		    (rc = tfm_forward_token_nll(w->w, w->params, &b, lp + k, &nl, &nt)) < 0)
			break;
		for (uint64_t i = k; i < k + nt; i++)
			lp[i] = -lp[i];
		k += nt;
		*nll_sum += nl;
	}
	free(start);
	return rc;
}

static int gate_set_build(struct tfm_model *m, struct tfm_worker *w, const float *global,
			  const float *priv, const struct tfm_split *s, struct gate_set *g)
{
	const uint32_t G = m->cfg.dim + 1;
	memset(g, 0, sizeof *g);
	for (uint32_t i = 0; i < s->n; i++)
		g->tokens += s->tlen[i] + 1;
	const size_t n1 = s->n ? s->n : 1, t1 = g->tokens ? g->tokens : 1;
	g->x = malloc(n1 * G * sizeof *g->x);
	g->ntok = malloc(n1 * sizeof *g->ntok);
	g->lg = malloc(t1 * sizeof *g->lg);
	g->lp = malloc(t1 * sizeof *g->lp);
	const float *E = src_embed(m, global);
	int rc = g->x && g->ntok && g->lg && g->lp ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0 && !E)
		rc = fedrun_error(FEDRUN_EINVAL, "transformer: expert: no source embedding tensor");
	for (uint32_t k = 0; k < s->n && rc == 0; k++) {
		const uint32_t i = s->order[k];
		features(m, E, s->src[i], s->slen[i], g->x + (size_t)k * G);
		g->ntok[k] = s->tlen[i] + 1;
	}
	if (rc == 0)
		rc = token_logprobs(m, w, global, s, g->lg, &g->nll_g);
	if (rc == 0)
		rc = token_logprobs(m, w, priv, s, g->lp, &g->nll_p);
	if (rc < 0) {
		gate_set_free(g);
		return rc;
	}
	g->d = (struct tfm_gate_data){
	    .n = s->n, .dim = G, .x = g->x, .ntok = g->ntok, .lg = g->lg, .lp = g->lp};
	return 0;
}

static int get_worker(struct tfm_model *m, void *worker, struct tfm_worker **w)
{
	if (worker) {
		*w = worker;
		return 0;
	}
	return tfm_worker_create(m, (void **)w);
}

int tfm_expert_fit(void *model, void *worker, const float *global, const float *priv,
		   uint32_t client, uint32_t steps, double lr, float *gate, struct fedrun_eval *out)
{
	struct tfm_model *m = model;
	int rc;
	const struct tfm_split *s = tfm_split_get(m, FEDRUN_SPLIT_TRAIN, client, &rc);
	if (!s)
		return rc;
	if (s->n == 0)
		return fedrun_error(FEDRUN_ENOENT,
				    "transformer: %s: no training pairs to fit the expert's gate on",
				    m->clients[client].name);
	struct tfm_worker *w;
	if ((rc = get_worker(m, worker, &w)) < 0)
		return rc;
	const struct mdev_xfer x0 = tfm_xfer(w);
	struct gate_set g;
	const uint32_t G = m->cfg.dim + 1;
	double *th = calloc(G, sizeof *th), n0 = 0, n1 = 0, lam = 0;
	if (!th)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	else if ((rc = gate_set_build(m, w, global, priv, s, &g)) == 0) {
		/* θ starts at 0 (λ = 1/2); what is kept is its float rounding,
		 * and the end NLL reported is that of the kept gate. */
		rc = tfm_gate_fit(&g.d, steps, lr, th, &n0, NULL);
		for (uint32_t j = 0; j < G && rc == 0; j++) {
			gate[j] = (float)th[j];
			th[j] = gate[j];
		}
		if (rc == 0)
			rc = tfm_gate_nll(&g.d, th, &n1, NULL, &lam);
		gate_set_free(&g);
	}
	if (rc == 0) {
		out->n = 0;
		tfm_eval_put(out, "gate_nll_start", n0);
		tfm_eval_put(out, "gate_nll_end", n1);
		tfm_eval_put(out, "lambda", lam);
		tfm_report_xfer(m, w, client, &x0);
	}
	free(th);
	if (w != worker)
		tfm_worker_destroy(m, w);
	return rc;
}

/* The mixture's second model for decoding n sources: the gate's z of
 * each (from global's embeddings), and a worker of its own holding priv.
 * Undo with mix_close, which counts the worker's copies on w's. */
static int mix_open(struct tfm_model *m, const float *global, const float *priv,
		    const float *gate, int32_t *const *ids, const uint32_t *len, uint32_t n,
		    struct tfm_mix *mix)
{
	double *z = malloc((n ? n : 1) * sizeof *z);
	*mix = (struct tfm_mix){.params = priv, .w = NULL, .z = z};
	int rc = z ? tfm_expert_z(m, global, gate, ids, len, n, z)
		   : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0)
		rc = tfm_worker_create(m, (void **)&mix->w);
	if (rc == 0)
		rc = tfm_send_params(m, mix->w, priv);
	return rc;
}

static void mix_close(struct tfm_model *m, struct tfm_worker *w, struct tfm_mix *mix)
{
	if (mix->w) {
		const struct mdev_xfer x2 = tfm_xfer(mix->w);
		tfm_work_xfer_add(w->w, x2.h2d, x2.d2h);
		tfm_worker_destroy(m, mix->w);
	}
	free((double *)mix->z);
	mix->w = NULL;
	mix->z = NULL;
}

/* Corpus BLEU and chrF of the mixture's translations of s. */
static int mix_bleu(struct tfm_model *m, struct tfm_worker *w, const float *global,
		    const float *priv, const float *gate, const struct tfm_split *s, double *bleu,
		    double *chrf)
{
	struct tfm_mix mix;
	int rc = mix_open(m, global, priv, gate, s->src, s->slen, s->n, &mix);
	if (rc == 0)
		rc = tfm_send_params(m, w, global);
	if (rc == 0)
		rc = tfm_split_bleu(m, w, global, s, 1, &mix, bleu, chrf);
	mix_close(m, w, &mix);
	return rc;
}

int tfm_expert_evaluate(void *model, void *worker, const float *global, const float *priv,
			const float *gate, enum fedrun_split split, int64_t client,
			struct fedrun_eval *out)
{
	struct tfm_model *m = model;
	int rc;
	const struct tfm_split *s = tfm_eval_split(m, split, client, &rc);
	if (!s)
		return rc;
	struct tfm_worker *w;
	if ((rc = get_worker(m, worker, &w)) < 0)
		return rc;
	const struct mdev_xfer x0 = tfm_xfer(w);
	const uint32_t G = m->cfg.dim + 1;
	double *th = malloc(G * sizeof *th), nll = 0, lam = 0;
	struct gate_set g = {0};
	if (!th)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t j = 0; rc == 0 && j < G; j++)
		th[j] = gate[j];
	if (rc == 0)
		rc = gate_set_build(m, w, global, priv, s, &g);
	if (rc == 0)
		rc = tfm_gate_nll(&g.d, th, &nll, NULL, &lam);
	if (rc == 0) {
		const double nt = g.tokens ? (double)g.tokens : 1.0;
		out->n = 0;
		tfm_eval_put(out, "loss", nll);
		tfm_eval_put(out, "nll", nll);
		tfm_eval_put(out, "ppl", exp(nll));
		tfm_eval_put(out, "lambda", lam);
		tfm_eval_put(out, "nll_global", g.nll_g / nt);
		tfm_eval_put(out, "nll_private", g.nll_p / nt);
		tfm_eval_put(out, "tokens", (double)g.tokens);
	}
	gate_set_free(&g);
	/* BLEU where the model's evaluation computes it (model.eval_bleu) */
	if (rc == 0 && tfm_eval_bleu(m, split)) {
		double b = 0, c = 0;
		if ((rc = mix_bleu(m, w, global, priv, gate, s, &b, &c)) == 0) {
			tfm_eval_put(out, "bleu", b);
			tfm_eval_put(out, "chrf", c);
		}
	}
	if (rc == 0)
		tfm_report_xfer(m, w, client, &x0);
	free(th);
	if (w != worker)
		tfm_worker_destroy(m, w);
	return rc;
}

int tfm_expert_translate_ids(struct tfm_model *m, struct tfm_worker *w, const float *global,
			     const float *priv, const float *gate, const struct tfm_decode *d,
			     int32_t *const *ids, const uint32_t *len, uint32_t n, uint32_t threads,
			     char **out)
{
	struct tfm_mix mix;
	int rc = mix_open(m, global, priv, gate, ids, len, n, &mix);
	if (rc == 0)
		rc = tfm_decode_ids(m, w, global, d, ids, len, n, threads, &mix, out);
	mix_close(m, w, &mix);
	return rc;
}
