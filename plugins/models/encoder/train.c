/* SPDX-License-Identifier: Apache-2.0 */
/* The encoder's loops: local training (the clients' optimizer through the
 * backend's optim_step, FedProx's proximal term through its prox_grad) on
 * the trainable tensors only, and evaluation (loss, accuracy and macro-F1
 * for classify and tag, loss, perplexity and accuracy of the masked
 * wordpieces for mlm). Each call sends the engine's host arrays to the
 * worker's device copies at its start and brings back what it changed at
 * its end. With frozen tensors the network's arena (w->params) holds the
 * frozen values, sent once per worker, and the trainable tensors are
 * copied between it and the engine's arena (w->tparams) tensor by tensor. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "encoder.h"

int enc_worker_create(void *model, void **out)
{
	struct enc_model *m = model;
	struct enc_worker *w = calloc(1, sizeof *w);
	if (!w)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	struct fedrun_backend_ctx_cfg cc = mdev_ctx_cfg(m->device, m->deterministic, m->precision);
	int rc = enc_work_create_cfg(&m->cfg, m->full, m->be, &cc, &w->w);
	if (rc == 0) {
		w->ctx = enc_work_ctx(w->w);
		const uint64_t nf = m->full->total * sizeof(float);
		rc = m->be->alloc(w->ctx, nf, (void **)&w->params);
		if (rc == 0)
			rc = m->be->alloc(w->ctx, nf, (void **)&w->grad);
		if (rc == 0 && !m->all_trainable) {
			const uint64_t nt = m->layout.total * sizeof(float);
			rc = m->be->alloc(w->ctx, nt, (void **)&w->tparams);
			if (rc == 0)
				rc = m->be->alloc(w->ctx, nt, (void **)&w->tgrad);
			if (rc == 0)
				rc = m->be->zero(w->ctx, w->tparams, nt);
			if (rc == 0)
				rc = m->be->zero(w->ctx, w->tgrad, nt);
		} else {
			w->tparams = w->params;
			w->tgrad = w->grad;
		}
		if (rc == 0)
			rc = mdev_declare_params(m->be, w->ctx, w->params, m->full->total);
	}
	if (rc < 0) {
		enc_worker_destroy(m, w);
		return rc;
	}
	*out = w;
	return 0;
}

void enc_worker_destroy(void *model, void *worker)
{
	struct enc_model *m = model;
	struct enc_worker *w = worker;
	if (!w)
		return;
	if (w->ctx) {
		const struct fedrun_backend_ops *be = m->be;
		if (w->tparams && w->tparams != w->params)
			be->free_mem(w->ctx, w->tparams);
		if (w->tgrad && w->tgrad != w->grad)
			be->free_mem(w->ctx, w->tgrad);
		if (w->params)
			be->free_mem(w->ctx, w->params);
		if (w->grad)
			be->free_mem(w->ctx, w->grad);
		if (w->state)
			be->free_mem(w->ctx, w->state);
		if (w->anchor)
			be->free_mem(w->ctx, w->anchor);
	}
	enc_work_destroy(w->w);
	free(w->ids), free(w->len), free(w->labels), free(w->pred);
	free(w);
}

static int get_worker(struct enc_model *m, void *worker, struct enc_worker **w, bool *temp)
{
	*temp = !worker;
	if (worker) {
		*w = worker;
		return 0;
	}
	return enc_worker_create(m, (void **)w);
}

/* Copies every trainable tensor between the engine's arena `t` and the
 * network's `full` (to_full: t -> full, else full -> t), device memory. */
static int shuttle(const struct enc_model *m, struct enc_worker *w, float *t, float *full,
		   bool to_full)
{
	if (m->all_trainable)
		return 0;
	for (uint32_t i = 0; i < m->layout.n; i++) {
		const struct fedrun_tensor_info *ti = &m->layout.t[i];
		float *a = t + ti->offset, *b = full + m->full->t[m->full_of[i]].offset;
		int rc = m->be->copy(w->ctx, to_full ? b : a, to_full ? a : b,
				     ti->numel * sizeof(float));
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The engine's parameters (host, layout.total) into the network's arena:
 * the frozen tensors once per worker, the trainable ones every call. */
static int send_params(struct enc_model *m, struct enc_worker *w, const float *params)
{
	int rc = 0;
	if (!m->all_trainable && !w->frozen_sent) {
		rc = mdev_to_device(m->be, w->ctx, &w->xfer, w->params, m->frozen,
				    m->full->total * sizeof(float));
		w->frozen_sent = rc == 0;
	}
	if (rc == 0)
		rc = mdev_to_device(m->be, w->ctx, &w->xfer, w->tparams, params,
				    m->layout.total * sizeof(float));
	return rc < 0 ? rc : shuttle(m, w, w->tparams, w->params, true);
}

int enc_train(void *model, void *worker, const struct fedrun_train_args *args, float *params,
	      struct fedrun_train_stats *stats)
{
	struct enc_model *m = model;
	stats->loss = 0;
	stats->samples = 0;
	if (args->client >= m->nclients)
		return fedrun_error(FEDRUN_EINVAL, "encoder: no client %u", args->client);
	const struct enc_split *s = &m->split[FEDRUN_SPLIT_TRAIN];
	const uint64_t first = s->client_start[args->client];
	const uint64_t cn = s->client_start[args->client + 1] - first;
	if (cn == 0)
		return 0;
	const uint32_t B = args->batch < cn ? args->batch : (uint32_t)cn;
	const uint64_t nb = (cn + B - 1) / B;
	uint64_t *perm = malloc(cn * sizeof *perm), *bperm = malloc(nb * sizeof *bperm);
	if (!perm || !bperm) {
		free(perm);
		free(bperm);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	struct enc_worker *w = NULL;
	bool temp = false;
	int rc = get_worker(m, worker, &w, &temp);
	if (rc < 0)
		goto out;
	const struct mdev_xfer x0 = w->xfer;
	/* Example order, dropout and MLM masks: streams of (seed, round,
	 * client), the same whichever thread runs the client. */
	struct fedrun_rng shuf, drop, mask;
	fedrun_rng_init(&shuf, args->seed, FEDRUN_RNG_SHUFFLE, args->round, args->client);
	fedrun_rng_init(&drop, args->seed, FEDRUN_RNG_DROPOUT, args->round, args->client);
	fedrun_rng_init(&mask, args->seed, ENC_RNG_TRAIN_MASK, args->round, args->client);
	const uint64_t steps = args->steps ? args->steps : (uint64_t)args->epochs * nb;
	const uint64_t n = m->layout.total, nf = m->full->total;
	const uint64_t sf = fedrun_optim_state_floats(args->optim, n);
	const bool prox = mdev_has_prox(args);
	const struct fedrun_backend_ops *be = m->be;
	if (sf && !args->optim_state) {
		rc = fedrun_error(FEDRUN_EINVAL, "encoder: no optimizer state from the host");
		goto out;
	}
	if ((rc = mdev_reserve(be, w->ctx, &w->state, &w->state_cap, sf)) < 0 || (rc = send_params(m, w, params)) < 0 ||
	    (rc = mdev_to_device(be, w->ctx, &w->xfer, w->state, args->optim_state,
				 sf * sizeof(float))) < 0)
		goto out;
	if (prox) {
		if (!w->anchor && (rc = be->alloc(w->ctx, n * sizeof(float), (void **)&w->anchor)) < 0)
			goto out;
		if ((rc = mdev_to_device(be, w->ctx, &w->xfer, w->anchor, args->prox_anchor,
					 n * sizeof(float))) < 0)
			goto out;
	}
	double loss_sum = 0;
	uint64_t count = 0, seen = 0, updates = 0;
	for (uint64_t k = 0; k < steps; k++) {
		if (k % nb == 0) { /* a new epoch, a new order (Fisher-Yates) */
			/* batching "random": of the examples, cut into batches;
			 * "length": of the batches of the length-sorted examples */
			const bool by_len = m->batching == ENC_BATCH_LENGTH;
			for (uint64_t i = 0; i < cn; i++)
				perm[i] = s->order[first + i];
			for (uint64_t i = 0; i < nb; i++)
				bperm[i] = i;
			uint64_t *v = by_len ? bperm : perm, nv = by_len ? nb : cn;
			for (uint64_t i = nv - 1; i > 0; i--) {
				uint64_t j = fedrun_rng_below(&shuf, i + 1);
				uint64_t t = v[i];
				v[i] = v[j];
				v[j] = t;
			}
		}
		const uint64_t b0 = bperm[k % nb] * B;
		const uint32_t bn = (uint32_t)(cn - b0 < B ? cn - b0 : B);
		struct enc_batch b;
		if ((rc = enc_batch_fill(m, w, s, perm + b0, bn, &mask, &b)) < 0)
			goto out;
		if ((rc = be->zero(w->ctx, w->grad, nf * sizeof(float))) < 0)
			goto out;
		double ls = 0;
		uint64_t c = 0;
		if ((rc = enc_forward_backward(w->w, w->params, &b, &drop, w->grad,
					       m->all_trainable ? NULL : m->trainable, &ls, &c,
					       NULL)) < 0)
			goto out;
		seen += bn;
		if (c == 0)
			continue;
		if ((rc = shuttle(m, w, w->tgrad, w->grad, false)) < 0)
			goto out;
		/* FedProx (Li et al. 2020, eq. 2) on the trainable tensors. */
		if (prox && (rc = be->prox_grad(w->ctx, n, (float)args->prox_mu, w->tparams,
						w->anchor, w->tgrad)) < 0)
			goto out;
		if ((rc = be->optim_step(w->ctx, args->optim, args->optim->lr, n, w->tparams,
					 w->tgrad, w->state, args->optim_step, false)) < 0)
			goto out;
		if ((rc = shuttle(m, w, w->tparams, w->params, true)) < 0)
			goto out;
		updates++;
		loss_sum += ls;
		count += c;
	}
	if ((rc = mdev_to_host(be, w->ctx, &w->xfer, params, w->tparams, n * sizeof(float))) < 0 ||
	    (rc = mdev_to_host(be, w->ctx, &w->xfer, args->optim_state, w->state,
			       sf * sizeof(float))) < 0)
		goto out;
	stats->loss = count ? loss_sum / (double)count : 0;
	stats->samples = seen;
	(void)updates;
	mdev_report(m->host, m->report_xfer, args->client, &x0, &w->xfer);
out:
	if (temp)
		enc_worker_destroy(m, w);
	free(perm);
	free(bperm);
	return rc;
}

/* ---- evaluation ---- */

struct tally {
	double loss;
	uint64_t count, correct;
	uint32_t L;
	uint64_t *tp, *fp, *fn; /* per label (classify, tag) */
};

static void tally_pred(struct tally *t, int32_t gold, int32_t pred)
{
	if (gold < 0)
		return;
	t->correct += gold == pred;
	if (!t->L)
		return;
	if (gold == pred) {
		t->tp[gold]++;
	} else {
		t->fn[gold]++;
		if (pred >= 0 && (uint32_t)pred < t->L)
			t->fp[pred]++;
	}
}

/* Macro-F1: the mean over the labels that occur in the gold labels or the
 * predictions of 2 tp / (2 tp + fp + fn) (scikit-learn's
 * f1_score(average="macro") over those labels). */
static double macro_f1(const struct tally *t)
{
	double sum = 0;
	uint32_t n = 0;
	for (uint32_t c = 0; c < t->L; c++) {
		uint64_t d = 2 * t->tp[c] + t->fp[c] + t->fn[c];
		if (!d)
			continue;
		sum += 2.0 * (double)t->tp[c] / (double)d;
		n++;
	}
	return n ? sum / n : 0;
}

static void put(struct fedrun_eval *out, const char *name, double v)
{
	if (out->n < FEDRUN_METRICS_MAX) {
		snprintf(out->m[out->n].name, sizeof out->m[out->n].name, "%s", name);
		out->m[out->n++].value = v;
	}
}

int enc_evaluate(void *model, void *worker, const float *params, enum fedrun_split split,
		 int64_t client, struct fedrun_eval *out)
{
	struct enc_model *m = model;
	if ((unsigned)split > 2)
		return fedrun_error(FEDRUN_EINVAL, "encoder: no split %d", (int)split);
	const struct enc_split *s = &m->split[split];
	if (!s->present)
		return FEDRUN_ENOENT;
	const uint64_t *idx;
	uint64_t cnt;
	if (client == FEDRUN_ALL_CLIENTS) {
		idx = s->pooled;
		cnt = s->n;
	} else {
		if (client < 0 || (uint64_t)client >= m->nclients || !s->client_start)
			return FEDRUN_ENOENT;
		idx = s->order + s->client_start[client];
		cnt = s->client_start[client + 1] - s->client_start[client];
		if (!cnt)
			return FEDRUN_ENOENT;
	}
	struct tally t = {.L = m->cfg.task == ENC_TASK_MLM ? 0 : m->cfg.labels};
	if (t.L && (!(t.tp = calloc(t.L, sizeof *t.tp)) || !(t.fp = calloc(t.L, sizeof *t.fp)) ||
		    !(t.fn = calloc(t.L, sizeof *t.fn)))) {
		free(t.tp), free(t.fp);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	struct enc_worker *w = NULL;
	bool temp = false;
	int rc = get_worker(m, worker, &w, &temp);
	if (rc == 0)
		rc = send_params(m, w, params);
	for (uint64_t i0 = 0; rc == 0 && i0 < cnt; i0 += m->eval_batch) {
		uint32_t bn = (uint32_t)(cnt - i0 < m->eval_batch ? cnt - i0 : m->eval_batch);
		struct enc_batch b;
		if ((rc = enc_batch_fill(m, w, s, idx + i0, bn, NULL, &b)) < 0)
			break;
		double ls = 0;
		uint64_t c = 0;
		if ((rc = enc_forward_backward(w->w, w->params, &b, NULL, NULL, NULL, &ls, &c,
					       w->pred)) < 0)
			break;
		t.loss += ls;
		t.count += c;
		if (m->cfg.task == ENC_TASK_CLASSIFY)
			for (uint32_t r = 0; r < bn; r++)
				tally_pred(&t, b.labels[r], w->pred[r]);
		else
			for (uint64_t p = 0; p < (uint64_t)bn * b.T; p++)
				tally_pred(&t, b.labels[p], w->pred[p]);
	}
	if (rc == 0) {
		out->n = 0;
		double loss = t.count ? t.loss / (double)t.count : 0;
		put(out, "loss", loss);
		if (m->cfg.task == ENC_TASK_MLM)
			put(out, "ppl", exp(loss));
		put(out, "accuracy", t.count ? (double)t.correct / (double)t.count : 0);
		if (t.L)
			put(out, m->cfg.task == ENC_TASK_TAG ? "f1" : "macro_f1", macro_f1(&t));
		put(out, m->cfg.task == ENC_TASK_CLASSIFY ? "examples" : "positions",
		    (double)t.count);
	}
	if (temp)
		enc_worker_destroy(m, w);
	free(t.tp), free(t.fp), free(t.fn);
	return rc;
}
