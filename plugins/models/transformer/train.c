/* SPDX-License-Identifier: Apache-2.0 */
/* The transformer's loops: local training over token-count batches (the
 * clients' optimizer through the backend's optim_step, with the
 * inverse_sqrt or noam warm-up schedules computed on the host and
 * FedProx's proximal term through its prox_grad), evaluation (loss, nll,
 * perplexity, and BLEU and chrF by decoding), and decoding for `fedrun
 * translate`. Each call sends the engine's host arrays to the worker's
 * device copies at its start and brings back what it changed at its end
 * (struct tfm_worker). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "beam.h"
#include "expert.h"
#include "transformer.h"

int tfm_worker_create(void *model, void **worker)
{
	struct tfm_model *m = model;
	struct tfm_worker *w = calloc(1, sizeof *w);
	if (!w)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = tfm_work_create(&m->cfg, m->layout, m->be, &w->w);
	if (rc < 0)
		rc = fedrun_error_wrap(rc, "model.backend \"%s\": ", m->backend);
	const uint64_t bytes = m->layout->total * sizeof(float);
	if (rc == 0)
		rc = m->be->alloc(tfm_work_ctx(w->w), bytes, (void **)&w->grad);
	if (rc == 0)
		rc = m->be->alloc(tfm_work_ctx(w->w), bytes, (void **)&w->params);
	if (rc == 0)
		rc = mdev_declare_params(m->be, tfm_work_ctx(w->w), w->params,
					 m->layout->total);
	if (rc < 0) {
		tfm_worker_destroy(m, w);
		return rc;
	}
	*worker = w;
	return 0;
}

void tfm_worker_destroy(void *model, void *worker)
{
	struct tfm_model *m = model;
	struct tfm_worker *w = worker;
	if (!w)
		return;
	if (w->w) {
		void *ctx = tfm_work_ctx(w->w);
		void *arrays[] = {w->params, w->grad, w->state, w->anchor};
		for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
			if (arrays[i])
				m->be->free_mem(ctx, arrays[i]);
	}
	tfm_work_destroy(w->w);
	tfm_batchbuf_free(&w->bb);
	free(w);
}

int tfm_send_params(struct tfm_model *m, struct tfm_worker *w, const float *params)
{
	return tfm_work_to_device(w->w, w->params, params, m->layout->total * sizeof(float));
}

struct mdev_xfer tfm_xfer(const struct tfm_worker *w)
{
	struct mdev_xfer x;
	tfm_work_xfer(w->w, &x.h2d, &x.d2h);
	return x;
}

void tfm_report_xfer(struct tfm_model *m, struct tfm_worker *w, int64_t client,
		     const struct mdev_xfer *before)
{
	const struct mdev_xfer now = tfm_xfer(w);
	mdev_report(m->host, m->report_xfer, client, before, &now);
}

static int get_worker(struct tfm_model *m, void *worker, struct tfm_worker **w, bool *temp)
{
	*temp = !worker;
	if (worker) {
		*w = worker;
		return 0;
	}
	return tfm_worker_create(m, (void **)w);
}

/* The schedule's step before this call's first update: the host's
 * sched_step (ABI 1.2: the run's global step, or the optimizer's own
 * count), or for older hosts the optimizer's own count. */
static uint64_t sched_base(const struct fedrun_train_args *a)
{
#if FEDRUN_ABI_MINOR >= 2
	if (a->size >= offsetof(struct fedrun_train_args, sched_step) + sizeof a->sched_step)
		return a->sched_step;
#endif
	return *a->optim_step;
}

/* The train args' host arrays on the device: parameters, optimizer state
 * (sf floats) and, with FedProx, the anchor. */
static int send_train_arrays(struct tfm_model *m, struct tfm_worker *w,
			     const struct fedrun_train_args *args, const float *params, uint64_t sf,
			     bool prox)
{
	void *ctx = tfm_work_ctx(w->w);
	const uint64_t n = m->layout->total;
	if (sf && !args->optim_state)
		return fedrun_error(FEDRUN_EINVAL, "transformer: no optimizer state from the host");
	int rc = mdev_reserve(m->be, ctx, &w->state, &w->state_cap, sf);
	if (rc == 0 && prox && !w->anchor)
		rc = m->be->alloc(ctx, n * sizeof(float), (void **)&w->anchor);
	if (rc == 0)
		rc = tfm_send_params(m, w, params);
	if (rc == 0)
		rc = tfm_work_to_device(w->w, w->state, args->optim_state, sf * sizeof(float));
	if (rc == 0 && prox)
		rc = tfm_work_to_device(w->w, w->anchor, args->prox_anchor, n * sizeof(float));
	return rc;
}

/* The learning rate of update number `step` (1-based). */
static double lr_at(const struct tfm_model *m, const struct fedrun_optim_cfg *o, uint64_t step)
{
	switch (m->lr_schedule) {
	case TFM_LR_INVERSE_SQRT:
		return fedrun_lr_inverse_sqrt(step, o->lr, m->warmup, m->warmup_init_lr);
	case TFM_LR_NOAM: /* clients.optimizer.lr is the factor */
		return fedrun_lr_noam(step, m->cfg.dim, m->warmup, o->lr);
	default:
		return o->lr;
	}
}

int tfm_train(void *model, void *worker, const struct fedrun_train_args *args, float *params,
	      struct fedrun_train_stats *stats)
{
	struct tfm_model *m = model;
	stats->loss = 0;
	stats->samples = 0;
	if (args->client >= m->nclients)
		return fedrun_error(FEDRUN_EINVAL, "transformer: no client %u", args->client);
	const struct tfm_split *s = &m->clients[args->client].split[FEDRUN_SPLIT_TRAIN];
	if (s->absent || s->n == 0)
		return 0; /* an evaluation-only client */
	uint32_t *start = NULL, nb = 0, *perm = NULL;
	int rc = tfm_batch_plan(s, args->batch, &start, &nb);
	if (rc < 0)
		return rc;
	struct tfm_worker *w = NULL;
	bool temp = false;
	if (!(perm = malloc(nb * sizeof *perm))) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = get_worker(m, worker, &w, &temp)) < 0)
		goto out;
	const struct mdev_xfer x0 = tfm_xfer(w);
	/* The batch order of each epoch and the dropout masks come from
	 * streams of (seed, round, client): the same whichever thread runs
	 * the client. */
	struct fedrun_rng shuf, drop;
	fedrun_rng_init(&shuf, args->seed, FEDRUN_RNG_SHUFFLE, args->round, args->client);
	fedrun_rng_init(&drop, args->seed, FEDRUN_RNG_DROPOUT, args->round, args->client);
	const uint64_t steps = args->steps ? args->steps : (uint64_t)args->epochs * nb;
	const uint64_t n = m->layout->total;
	const uint64_t sf = fedrun_optim_state_floats(args->optim, n);
	const bool prox = mdev_has_prox(args);
	const uint64_t base = sched_base(args);
	const struct fedrun_backend_ops *be = m->be;
	void *ctx = tfm_work_ctx(w->w);
	uint64_t updates = 0;
	double loss_sum = 0;
	uint64_t tokens = 0;
	if ((rc = send_train_arrays(m, w, args, params, sf, prox)) < 0)
		goto out;
	for (uint64_t k = 0; k < steps; k++) {
		if (k % nb == 0) { /* a new epoch, a new order */
			for (uint32_t i = 0; i < nb; i++)
				perm[i] = i;
			fedrun_rng_shuffle_u32(&shuf, perm, nb);
		}
		uint32_t bi = perm[k % nb];
		struct tfm_batch b;
		if ((rc = tfm_batch_fill(m, s, s->order + start[bi], start[bi + 1] - start[bi],
					 &w->bb, &b)) < 0)
			goto out;
		if ((rc = be->zero(ctx, w->grad, n * sizeof(float))) < 0)
			goto out;
		double ls = 0;
		uint64_t nt = 0;
		if ((rc = tfm_forward_backward(w->w, w->params, &b, &drop, w->grad, &ls, NULL,
					       &nt)) < 0)
			goto out;
		if (nt == 0)
			continue;
		/* FedProx (Li et al. 2020, eq. 2): the gradient of μ/2·||w −
		 * w_t||² joins the loss's before clipping and the step
		 * (fedrun_prox_grad's μ, a float). */
		if (prox && (rc = be->prox_grad(ctx, n, (float)args->prox_mu, w->params, w->anchor,
						w->grad)) < 0)
			goto out;
		double lr = lr_at(m, args->optim, base + updates + 1);
		if (updates++ == 0) /* the rate of the round's first update, logged */
			m->host->metric(m->host->ctx, "lr", args->client, NULL, lr);
		if ((rc = be->optim_step(ctx, args->optim, lr, n, w->params, w->grad, w->state,
					 args->optim_step, false)) < 0)
			goto out;
		loss_sum += ls;
		tokens += nt;
	}
	/* The trained parameters and the optimizer state back to the host. */
	if ((rc = tfm_work_to_host(w->w, params, w->params, n * sizeof(float))) < 0 ||
	    (rc = tfm_work_to_host(w->w, args->optim_state, w->state, sf * sizeof(float))) < 0)
		goto out;
	stats->loss = tokens ? loss_sum / (double)tokens : 0;
	stats->samples = tokens;
	tfm_report_xfer(m, w, args->client, &x0);
out:
	if (temp)
		tfm_worker_destroy(m, w);
	free(perm);
	free(start);
	return rc;
}

/* Sums of loss, nll and target tokens over a split at the parameters in
 * w->params; with grad, the gradient of the split's mean loss into
 * w->grad. */
static int split_loss(struct tfm_model *m, struct tfm_worker *w, const struct tfm_split *s,
		      bool with_grad, double *loss, double *nll, uint64_t *ntok)
{
	uint32_t *start = NULL, nb = 0;
	int rc = tfm_batch_plan(s, m->eval_batch, &start, &nb);
	if (rc < 0)
		return rc;
	*loss = *nll = 0;
	*ntok = 0;
	uint64_t total = 0;
	for (uint32_t i = 0; i < s->n; i++)
		total += s->tlen[i] + 1;
	const struct fedrun_backend_ops *be = m->be;
	void *ctx = tfm_work_ctx(w->w);
	const uint64_t bytes = m->layout->total * sizeof(float);
	float *g = NULL;
	if (with_grad && (rc = be->zero(ctx, w->grad, bytes)) == 0)
		rc = be->alloc(ctx, bytes, (void **)&g);
	for (uint32_t bi = 0; bi < nb && rc == 0; bi++) {
		struct tfm_batch b;
		if ((rc = tfm_batch_fill(m, s, s->order + start[bi], start[bi + 1] - start[bi],
					 &w->bb, &b)) < 0)
			break;
		double l = 0, nl = 0;
		uint64_t nt = 0;
		if (g && (rc = be->zero(ctx, g, bytes)) < 0)
			break;
		if ((rc = tfm_forward_backward(w->w, w->params, &b, NULL, g, &l, &nl, &nt)) < 0)
			break;
		/* the batch's mean-loss gradient, weighted by its share of
		 * the split's tokens */
		if (g && nt &&
		    (rc = tfm_work_axpy(w->w, m->layout->total, (float)((double)nt / (double)total),
					g, w->grad)) < 0)
			break;
		*loss += l;
		*nll += nl;
		*ntok += nt;
	}
	if (g)
		be->free_mem(ctx, g);
	free(start);
	return rc;
}

/* The step callback's model: one network, or with w2 the domain
 * expert's mixture (expert.h) of the global model (w) and the private one
 * (w2), row r weighted by the gate of its sentence, z[r / beam]. */
struct step_ud {
	struct tfm_work *w;
	const float *params;
	struct tfm_work *w2;
	const float *params2;
	float *lp2;	  /* (rows, V): the private model's log-probabilities */
	const double *z;  /* (B) */
	uint32_t beam, V;
	uint64_t rows; /* B * beam, as tfm_encode was given */
};

static int step_cb(void *ud, uint32_t t, const int32_t *tokens, const int32_t *parent,
		   float *logprobs)
{
	struct step_ud *u = ud;
	int rc = tfm_decode_step(u->w, u->params, t, tokens, parent, logprobs);
	if (rc < 0 || !u->w2)
		return rc;
	if ((rc = tfm_decode_step(u->w2, u->params2, t, tokens, parent, u->lp2)) < 0)
		return rc;
	for (uint64_t r = 0; r < u->rows; r++) {
		double ll, lr;
		tfm_gate_log_lambda(u->z[r / u->beam], &ll, &lr);
		float *a = logprobs + r * u->V;
		const float *b = u->lp2 + r * u->V;
		for (uint32_t j = 0; j < u->V; j++)
			a[j] = (float)tfm_mix_logprob(ll, lr, a[j], b[j]);
	}
	return 0;
}

/* The decoder has no position limit of its own; this bounds runaway
 * hypotheses. */
#define TFM_DECODE_CAP 1024

static _Thread_local const uint32_t *order_len;
static int by_src_len(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	if (order_len[i] != order_len[j])
		return order_len[i] < order_len[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Decodes the k sentences idx[0 .. k) as one batch with worker w, at the
 * parameters in w->params; with mix, the mixture of w's model and w2's
 * (w2->params), sentence i weighted by mix->z[i]. */
static int decode_chunk(struct tfm_model *m, struct tfm_worker *w, const struct tfm_decode *d,
			int32_t *const *src, const uint32_t *slen, const uint32_t *idx, uint32_t k,
			const struct tfm_mix *mix, struct tfm_worker *w2, char **out)
{
	const uint32_t beam = d->beam ? d->beam : 1;
	uint32_t Ts = 1, steps = 1;
	for (uint32_t r = 0; r < k; r++)
		if (slen[idx[r]] + 1 > Ts)
			Ts = slen[idx[r]] + 1;
	int32_t *sbuf = malloc((size_t)k * Ts * sizeof *sbuf), *lens = malloc(k * sizeof *lens);
	uint32_t *maxl = malloc(k * sizeof *maxl);
	struct tfm_hyp *hyp = calloc(k, sizeof *hyp);
	int rc = sbuf && lens && maxl && hyp ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t r = 0; r < k && rc == 0; r++) {
		uint32_t i = idx[r], a = slen[i];
		int32_t *row = sbuf + (size_t)r * Ts;
		if (a)
			memcpy(row, src[i], a * sizeof *row);
		row[a] = m->cfg.eos_id;
		for (uint32_t t = a + 1; t < Ts; t++)
			row[t] = m->cfg.pad_id;
		lens[r] = (int32_t)(a + 1);
		maxl[r] = tfm_max_len(d->max_len_a, d->max_len_b, a, TFM_DECODE_CAP);
		if (maxl[r] > steps)
			steps = maxl[r];
	}
	if (rc == 0)
		rc = tfm_encode(w->w, w->params, k, Ts, sbuf, lens, beam, steps);
	struct step_ud u = {.w = w->w,
			    .params = w->params,
			    .beam = beam,
			    .V = m->cfg.vocab,
			    .rows = (uint64_t)k * beam};
	double *z = NULL;
	if (rc == 0 && mix) {
		u.w2 = w2->w;
		u.params2 = w2->params;
		u.lp2 = malloc((size_t)k * beam * m->cfg.vocab * sizeof *u.lp2);
		u.z = z = malloc(k * sizeof *z);
		rc = u.lp2 && z ? tfm_encode(w2->w, w2->params, k, Ts, sbuf, lens, beam, steps)
				: fedrun_error(FEDRUN_ENOMEM, "out of memory");
		for (uint32_t r = 0; r < k && rc == 0; r++)
			z[r] = mix->z[idx[r]];
	}
	if (rc == 0) {
		struct tfm_search_opts so = {.beam = beam, .len_penalty = d->len_penalty};
		rc = beam == 1 ? tfm_greedy(k, maxl, m->cfg.vocab, m->cfg.bos_id, m->cfg.eos_id,
					    step_cb, &u, hyp)
			       : tfm_beam_search(&so, k, maxl, m->cfg.vocab, m->cfg.bos_id,
						 m->cfg.eos_id, step_cb, &u, hyp);
		for (uint32_t r = 0; r < k && rc == 0; r++)
			rc = tfm_tok_decode(m->tok, hyp[r].tokens, hyp[r].len, &out[idx[r]]);
		tfm_hyp_free(hyp, k);
	}
	free(u.lp2);
	free(z);
	free(sbuf);
	free(lens);
	free(maxl);
	free(hyp);
	return rc;
}

int tfm_decode_ids(struct tfm_model *m, struct tfm_worker *w, const float *params,
		   const struct tfm_decode *d, int32_t *const *src, const uint32_t *slen,
		   uint32_t n, uint32_t threads, const struct tfm_mix *mix, char **out)
{
	uint32_t *ord = malloc((n ? n : 1) * sizeof *ord);
	if (!ord)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	/* Sentences sorted by source length, then cut into batches: each
	 * batch is decoded on its own, so the translations do not depend on
	 * how batches are spread over threads. */
	for (uint32_t i = 0; i < n; i++)
		ord[i] = i;
	order_len = slen;
	qsort(ord, n, sizeof *ord, by_src_len);
	order_len = NULL;
	const uint32_t B = d->batch ? d->batch : 1, nb = (uint32_t)(((uint64_t)n + B - 1) / B);
	uint32_t nt = threads < 1 ? 1 : threads > nb ? nb : threads;
	int *rcs = calloc(nb ? nb : 1, sizeof *rcs);
	char **msgs = calloc(nb ? nb : 1, sizeof *msgs);
	struct mdev_xfer *xf = calloc(nt, sizeof *xf); /* the helper threads' copies */
	int rc = rcs && msgs && xf ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (rc == 0) {
#pragma omp parallel num_threads(nt) if (nt > 1)
		{
			struct tfm_worker *tw = w, *tw2 = mix ? mix->w : NULL;
			int wr = 0, me = 0;
#ifdef _OPENMP
			me = omp_get_thread_num();
			/* each helper thread's worker gets its own copy of
			 * the parameters (and of the mixture's second model) */
			if (me > 0 && (wr = tfm_worker_create(m, (void **)&tw)) == 0 &&
			    (wr = tfm_send_params(m, tw, params)) < 0) {
				tfm_worker_destroy(m, tw);
				tw = w;
			}
			if (me > 0 && mix && wr == 0) {
				tw2 = NULL;
				if ((wr = tfm_worker_create(m, (void **)&tw2)) == 0 &&
				    (wr = tfm_send_params(m, tw2, mix->params)) < 0) {
					tfm_worker_destroy(m, tw2);
					tw2 = NULL;
				}
			}
#endif
#pragma omp for schedule(dynamic, 1)
			for (uint32_t c = 0; c < nb; c++) {
				uint32_t i0 = c * B, k = n - i0 < B ? n - i0 : B;
				int r = wr < 0
					    ? wr
					    : decode_chunk(m, tw, d, src, slen, ord + i0, k, mix,
							   tw2, out);
				if (r < 0) {
					rcs[c] = r;
					msgs[c] = strdup(fedrun_error_message());
				}
			}
			if (tw != w && wr == 0) {
				xf[me] = tfm_xfer(tw);
				tfm_worker_destroy(m, tw);
			}
			if (mix && tw2 && tw2 != mix->w) {
				const struct mdev_xfer x2 = tfm_xfer(tw2);
				xf[me].h2d += x2.h2d;
				xf[me].d2h += x2.d2h;
				tfm_worker_destroy(m, tw2);
			}
		}
		for (uint32_t c = 0; c < nb; c++) {
			if (rcs[c] < 0 && rc == 0)
				rc = fedrun_error(rcs[c], "%s",
						  msgs[c] ? msgs[c] : "transformer: decoding");
			free(msgs[c]);
		}
		/* counted with w's own, so that a call reports them all */
		for (uint32_t t = 1; t < nt; t++)
			tfm_work_xfer_add(w->w, xf[t].h2d, xf[t].d2h);
	}
	free(xf);
	free(rcs);
	free(msgs);
	free(ord);
	return rc;
}

void tfm_eval_put(struct fedrun_eval *out, const char *name, double v)
{
	if (out->n >= FEDRUN_METRICS_MAX)
		return;
	snprintf(out->m[out->n].name, sizeof out->m[out->n].name, "%s", name);
	out->m[out->n++].value = v;
}

int tfm_split_bleu(struct tfm_model *m, struct tfm_worker *w, const float *params,
		   const struct tfm_split *s, uint32_t threads, const struct tfm_mix *mix,
		   double *bleu, double *chrf)
{
	char **hyp = calloc(s->n ? s->n : 1, sizeof *hyp);
	if (!hyp)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = tfm_decode_ids(m, w, params, &m->decode, s->src, s->slen, s->n, threads, mix, hyp);
	if (rc == 0) {
		struct fedrun_bleu_opts bo;
		fedrun_bleu_opts_init(&bo);
		bo.tokenize = (enum fedrun_bleu_tokenizer)m->bleu_tok;
		const char *const *refs[1] = {(const char *const *)s->ref};
		struct fedrun_bleu_score bs;
		rc = fedrun_bleu_corpus_score(&bo, s->n, (const char *const *)hyp, 1, refs, &bs);
		struct fedrun_chrf_opts co;
		fedrun_chrf_opts_init(&co);
		struct fedrun_chrf_score cs;
		if (rc == 0)
			rc = fedrun_chrf_corpus_score(&co, s->n, (const char *const *)hyp, 1, refs,
						      &cs);
		if (rc == 0) {
			*bleu = bs.score;
			*chrf = cs.score;
		}
	}
	for (uint32_t i = 0; i < s->n; i++)
		free(hyp[i]);
	free(hyp);
	return rc;
}

const struct tfm_split *tfm_eval_split(struct tfm_model *m, enum fedrun_split split,
				       int64_t client, int *rc)
{
	const struct tfm_split *s = tfm_split_get(m, split, client, rc);
	if (s && s->n == 0) {
		*rc = fedrun_error(FEDRUN_ENOENT, "transformer: %s: the %s split has no pairs",
				   client < 0 ? "all clients" : m->clients[client].name,
				   split == FEDRUN_SPLIT_TRAIN	 ? "train"
				   : split == FEDRUN_SPLIT_VALID ? "valid"
								 : "test");
		return NULL;
	}
	return s;
}

bool tfm_eval_bleu(const struct tfm_model *m, enum fedrun_split split)
{
	return split != FEDRUN_SPLIT_TRAIN &&
	       (m->eval_bleu == TFM_EVAL_BLEU_ALL ||
		(m->eval_bleu == TFM_EVAL_BLEU_TEST && split == FEDRUN_SPLIT_TEST));
}

int tfm_evaluate(void *model, void *worker, const float *params, enum fedrun_split split,
		 int64_t client, struct fedrun_eval *out)
{
	struct tfm_model *m = model;
	int rc;
	const struct tfm_split *s = tfm_eval_split(m, split, client, &rc);
	if (!s)
		return rc;
	struct tfm_worker *w;
	bool temp;
	if ((rc = get_worker(m, worker, &w, &temp)) < 0)
		return rc;
	double loss, nll;
	uint64_t ntok;
	const struct mdev_xfer x0 = tfm_xfer(w);
	rc = tfm_send_params(m, w, params);
	if (rc == 0)
		rc = split_loss(m, w, s, false, &loss, &nll, &ntok);
	if (rc == 0) {
		out->n = 0;
		tfm_eval_put(out, "loss", ntok ? loss / (double)ntok : 0);
		tfm_eval_put(out, "nll", ntok ? nll / (double)ntok : 0);
		tfm_eval_put(out, "ppl", exp(ntok ? nll / (double)ntok : 0));
		tfm_eval_put(out, "tokens", (double)ntok);
	}
	if (rc == 0 && tfm_eval_bleu(m, split)) {
		double b = 0, c = 0;
		/* Only the server's evaluation of the union decodes on the
		 * run's threads: clients are evaluated in parallel already. */
		uint32_t nt = client == FEDRUN_ALL_CLIENTS ? m->host->threads(m->host->ctx) : 1;
		if ((rc = tfm_split_bleu(m, w, params, s, nt, NULL, &b, &c)) == 0) {
			tfm_eval_put(out, "bleu", b);
			tfm_eval_put(out, "chrf", c);
		}
	}
	if (rc == 0)
		tfm_report_xfer(m, w, client, &x0);
	if (temp)
		tfm_worker_destroy(m, w);
	return rc;
}

int tfm_loss_grad(void *model, void *worker, const float *params, enum fedrun_split split,
		  int64_t client, float *grad, double *loss)
{
	struct tfm_model *m = model;
	int rc;
	const struct tfm_split *s = tfm_split_get(m, split, client, &rc);
	if (!s)
		return rc;
	struct tfm_worker *w;
	bool temp;
	if ((rc = get_worker(m, worker, &w, &temp)) < 0)
		return rc;
	double l, nl;
	uint64_t nt;
	const struct mdev_xfer x0 = tfm_xfer(w);
	rc = tfm_send_params(m, w, params);
	if (rc == 0)
		rc = split_loss(m, w, s, grad != NULL, &l, &nl, &nt);
	if (rc == 0) {
		*loss = nt ? l / (double)nt : 0;
		if (grad)
			rc =
			    tfm_work_to_host(w->w, grad, w->grad, m->layout->total * sizeof(float));
	}
	if (rc == 0)
		tfm_report_xfer(m, w, client, &x0);
	if (temp)
		tfm_worker_destroy(m, w);
	return rc;
}
