/* SPDX-License-Identifier: Apache-2.0 */
/* gru-lm's loops: local training by truncated BPTT with the hidden state
 * carried across the windows of a client's stream (SGD or Adam through the
 * backend's optim_step, FedProx's proximal term through its prox_grad),
 * evaluation (mean NLL per token and perplexity), and the loss gradient
 * that meritfed asks for. Each call sends the engine's host arrays to the
 * worker's device copies at its start and brings back what it changed at
 * its end (gru_lm.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "gru_lm.h"

static double now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* Rows of the BPTT layout for a stream of n tokens: the requested batch,
 * or fewer for a stream too short to give each row two tokens (a client
 * with little held-out text still gets evaluated). 0 when n < 2. */
static uint32_t rows_for(uint64_t n, uint32_t batch)
{
	uint64_t most = n / 2;
	return most < batch ? (uint32_t)most : batch;
}

/* A worker for the call: the engine's, or a temporary one where the caller
 * has none (worker_create is optional for hosts). */
static int get_worker(struct gru_lm *m, void *worker, struct gru_lm_worker **w, bool *temp)
{
	*temp = !worker;
	if (worker) {
		*w = worker;
		return 0;
	}
	return gru_lm_worker_create(m, (void **)w);
}

/* The train args' host arrays on the device: parameters, optimizer state
 * (sf floats) and, with FedProx, the anchor. */
static int send_train_arrays(struct gru_lm *m, struct gru_lm_worker *w,
			     const struct fedrun_train_args *args, const float *params, uint64_t sf,
			     bool prox)
{
	const uint64_t n = m->layout.total;
	if (sf && !args->optim_state)
		return fedrun_error(FEDRUN_EINVAL, "gru-lm: no optimizer state from the host");
	int rc = mdev_reserve(m->be, w->ctx, &w->state, &w->state_cap, sf);
	if (rc == 0 && prox && !w->anchor)
		rc = m->be->alloc(w->ctx, n * sizeof(float), (void **)&w->anchor);
	if (rc == 0)
		rc = gru_lm_send(m, w, w->params, params, n);
	if (rc == 0)
		rc = gru_lm_send(m, w, w->state, args->optim_state, sf);
	if (rc == 0 && prox)
		rc = gru_lm_send(m, w, w->anchor, args->prox_anchor, n);
	return rc;
}

int gru_lm_train(void *model, void *worker, const struct fedrun_train_args *args, float *params,
		 struct fedrun_train_stats *stats)
{
	struct gru_lm *m = model;
	struct fedrun_stream s;
	if (!m->td)
		return fedrun_error(FEDRUN_EINVAL, "gru-lm: created without data, nothing to train");
	int rc = gru_lm_keep_vocab(m);
	if (rc == 0)
		rc = fedrun_textdata_stream(m->td, FEDRUN_SPLIT_TRAIN, args->client, &s);
	if (rc < 0)
		return rc;
	stats->loss = 0;
	stats->samples = 0;
	uint32_t B = rows_for(s.n_tokens, args->batch);
	if (B == 0)
		return 0; /* fewer than two tokens: nothing to predict */
	struct fedrun_bptt it;
	if ((rc = fedrun_bptt_init(&it, &s, B, m->bptt)) < 0)
		return rc;
	struct gru_lm_worker *w;
	bool temp;
	if ((rc = get_worker(m, worker, &w, &temp)) < 0)
		return rc;
	const struct mdev_xfer x0 = w->xfer;
	if ((rc = gru_lm_worker_reserve(m, w, (uint64_t)m->bptt * B, B)) < 0)
		goto out;

	/* Dropout masks come from one stream per (seed, round, client), drawn
	 * in the order of the windows, so a client's training is the same
	 * whichever thread runs it. */
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, args->seed, FEDRUN_RNG_DROPOUT, args->round, args->client);
	const uint64_t steps = args->steps ? args->steps : (uint64_t)args->epochs * it.windows;
	const uint64_t n = m->layout.total;
	const uint64_t sf = fedrun_optim_state_floats(args->optim, n);
	const bool prox = mdev_has_prox(args);
	const struct fedrun_backend_ops *be = m->be;
	double loss_sum = 0, t0 = now();
	uint64_t tokens = 0;
	if ((rc = send_train_arrays(m, w, args, params, sf, prox)) < 0)
		goto out;
	/* Zeroed here when it may not be (after loss_grad, or an error);
	 * each step's update then leaves it zero (optim_step with
	 * zero_grad), with no pass of its own, for this call's next step and
	 * the next call. */
	if (!w->grad_zero && (rc = be->zero(w->ctx, w->grad, n * sizeof(float))) < 0)
		goto out;
	for (uint64_t k = 0; k < steps; k++) {
		uint64_t win = k % it.windows;
		struct gru_lm_pass p = {.fresh = win == 0, /* a new epoch starts from h = 0 */
					.train = true,
					.dropout = m->dropout,
					.rng = &rng,
					.grad_scale = 1.0f};
		p.T = fedrun_bptt_window(&it, win, w->in_u, w->tgt_u);
		p.B = B;
		double loss;
		uint64_t count;
		if ((rc = gru_lm_window(m, w, w->params, &p, &loss, &count)) < 0)
			goto out;
		/* FedProx (Li et al. 2020, eq. 2): the local objective gains
		 * μ/2·||w − w_t||², whose gradient μ(w − w_t) joins the loss's
		 * before clipping and the step (fedrun_prox_grad's μ, a float). */
		if (prox && (rc = be->prox_grad(w->ctx, n, (float)args->prox_mu, w->params,
						w->anchor, w->grad)) < 0)
			goto out;
		if ((rc = be->optim_step(w->ctx, args->optim, args->optim->lr, n, w->params,
					 w->grad, w->state, args->optim_step, true)) < 0)
			goto out;
		w->grad_zero = true;
		loss_sum += loss * (double)count;
		tokens += count;
	}
	/* The trained parameters and the optimizer state back to the host. */
	if ((rc = mdev_to_host(be, w->ctx, &w->xfer, params, w->params, n * sizeof(float))) < 0 ||
	    (rc = mdev_to_host(be, w->ctx, &w->xfer, args->optim_state, w->state,
			       sf * sizeof(float))) < 0)
		goto out;
	double secs = now() - t0;
	stats->loss = tokens ? loss_sum / (double)tokens : 0;
	stats->samples = tokens;
	/* Wall-clock speed: a metric only, never an input to training, so
	 * final.safetensors stays a function of the pipeline alone. */
	if (m->speed_metric && secs > 0 && tokens)
		m->host->metric(m->host->ctx, "gru_lm.tokens_per_s", args->client, NULL,
				(double)tokens / secs);
	mdev_report(m->host, m->report_xfer, args->client, &x0, &w->xfer);
out:
	if (temp)
		gru_lm_worker_destroy(m, w);
	return rc;
}

/* Rows [r0, r1) of the layout `it` as a sequence of windows of their own,
 * state carried, with the parameters in w->params: adds their summed loss
 * and target count, and with with_grad their share of the gradient of the
 * split's mean loss (each window's mean-loss gradient times its share of
 * the `total` targets). */
static int group_loss(struct gru_lm *m, struct gru_lm_worker *w, const struct fedrun_bptt *it,
		      uint32_t r0, uint32_t r1, bool with_grad, double total, double *sum,
		      uint64_t *cnt)
{
	const uint32_t B = it->batch, g = r1 - r0;
	int rc = gru_lm_worker_reserve(m, w, (uint64_t)m->bptt * B, B);
	for (uint64_t win = 0; rc == 0 && win < it->windows; win++) {
		struct gru_lm_pass p = {.fresh = win == 0, .train = with_grad, .dropout = 0};
		p.T = fedrun_bptt_window(it, win, w->in_u, w->tgt_u); /* (T,B) */
		p.B = g;
		/* Keep rows r0 .. r1 - 1, (T,g): each entry moves to a lower
		 * index than any still to be read. */
		for (uint32_t t = 0; t < p.T; t++)
			for (uint32_t b = 0; b < g; b++) {
				w->in_u[t * g + b] = w->in_u[(uint64_t)t * B + r0 + b];
				w->tgt_u[t * g + b] = w->tgt_u[(uint64_t)t * B + r0 + b];
			}
		p.grad_scale = (float)((double)p.T * g / total);
		double l;
		uint64_t c;
		rc = gru_lm_window(m, w, w->params, &p, &l, &c);
		*sum += l * (double)c;
		*cnt += c;
	}
	return rc;
}

/* Mean NLL per predicted token of a stream (forward only, no dropout) at
 * the host parameters `params`, and with with_grad its gradient in w->grad.
 * The `batch` rows (eval_batch for a split) are split into eval_groups fixed groups computed
 * independently (their losses added in group order), so that with
 * `parallel` the groups run on the run's threads and give the same bits as
 * one after the other: the grouping, never the thread count, decides the
 * result. Each worker that computes a group has the parameters sent to
 * its own device copy; the copies of the other groups' temporary workers
 * are counted in w->xfer. */
int gru_lm_stream_loss(struct gru_lm *m, struct gru_lm_worker *w, const float *params,
		       const struct fedrun_stream *s, uint32_t batch, bool with_grad, bool parallel,
		       double *loss, uint64_t *tokens)
{
	uint32_t B = rows_for(s->n_tokens, batch);
	if (B == 0)
		return fedrun_error(FEDRUN_ENOENT, "%llu tokens, too few to predict one",
				    (unsigned long long)s->n_tokens);
	struct fedrun_bptt it;
	int rc = fedrun_bptt_init(&it, s, B, m->bptt);
	if (rc < 0)
		return rc;
	const double total = (double)fedrun_bptt_targets(&it);
	const uint32_t G = m->eval_groups < B ? m->eval_groups : B;
	double sums[GRU_LM_MAX_GROUPS] = {0};
	uint64_t cnts[GRU_LM_MAX_GROUPS] = {0};
	int rcs[GRU_LM_MAX_GROUPS] = {0};
	char *msgs[GRU_LM_MAX_GROUPS] = {NULL};
	struct mdev_xfer xfers[GRU_LM_MAX_GROUPS] = {{0, 0}};
	if (with_grad) {
		if ((rc = gru_lm_worker_reserve(m, w, (uint64_t)m->bptt * B, B)) < 0)
			return rc;
		if ((rc = m->be->zero(w->ctx, w->grad, m->layout.total * sizeof(float))) < 0)
			return rc;
	}
	if ((rc = gru_lm_send(m, w, w->params, params, m->layout.total)) < 0)
		return rc;
	uint32_t nt = parallel && !with_grad ? m->host->threads(m->host->ctx) : 1;
	nt = nt < 1 ? 1 : nt > G ? G : nt;
	(void)nt;
#pragma omp parallel for schedule(static, 1) num_threads(nt) if (nt > 1)
	for (uint32_t k = 0; k < G; k++) {
		/* Group 0 uses the caller's worker, the others their own. */
		struct gru_lm_worker *gw = w;
		int r = k == 0 || nt == 1 ? 0 : gru_lm_worker_create(m, (void **)&gw);
		if (r == 0 && gw != w)
			r = gru_lm_send(m, gw, gw->params, params, m->layout.total);
		if (r == 0)
			r = group_loss(m, gw, &it, k * B / G, (k + 1) * B / G, with_grad, total,
				       &sums[k], &cnts[k]);
		if (gw != w) {
			xfers[k] = gw->xfer;
			gru_lm_worker_destroy(m, gw);
		}
		if (r < 0) {
			rcs[k] = r;
			msgs[k] = strdup(fedrun_error_message());
		}
	}
	double sum = 0;
	uint64_t cnt = 0;
	for (uint32_t k = 0; k < G; k++) {
		w->xfer.h2d += xfers[k].h2d;
		w->xfer.d2h += xfers[k].d2h;
		if (rcs[k] < 0 && rc == 0)
			rc = fedrun_error(rcs[k], "%s", msgs[k] ? msgs[k] : "gru-lm: evaluation");
		free(msgs[k]);
		sum += sums[k];
		cnt += cnts[k];
	}
	if (rc < 0)
		return rc;
	*loss = cnt ? sum / (double)cnt : 0;
	*tokens = cnt;
	return 0;
}

static int split_loss(struct gru_lm *m, struct gru_lm_worker *w, const float *params,
		      enum fedrun_split split, int64_t client, bool with_grad, bool parallel,
		      double *loss, uint64_t *tokens)
{
	struct fedrun_stream s;
	if (!m->td)
		return fedrun_error(FEDRUN_EINVAL, "gru-lm: created without data, nothing to evaluate");
	int rc = gru_lm_keep_vocab(m);
	if (rc == 0)
		rc = fedrun_textdata_stream(m->td, split, client, &s);
	if (rc < 0)
		return rc;
	/* fedrun score computes its loss with the same call (score.c). */
	rc = gru_lm_stream_loss(m, w, params, &s, m->eval_batch, with_grad, parallel, loss, tokens);
	if (rc == FEDRUN_ENOENT)
		fedrun_error_wrap(rc, "gru-lm: %s data of %s has ",
				  split == FEDRUN_SPLIT_TRAIN	? "training"
				  : split == FEDRUN_SPLIT_VALID ? "validation"
								: "test",
				  client == FEDRUN_ALL_CLIENTS
				      ? "all clients"
				      : fedrun_textdata_client_name(m->td, (uint32_t)client));
	return rc;
}

static void put(struct fedrun_eval *out, const char *name, double v)
{
	if (out->n >= FEDRUN_METRICS_MAX)
		return;
	snprintf(out->m[out->n].name, sizeof out->m[out->n].name, "%s", name);
	out->m[out->n++].value = v;
}

int gru_lm_evaluate(void *model, void *worker, const float *params, enum fedrun_split split,
		    int64_t client, struct fedrun_eval *out)
{
	struct gru_lm *m = model;
	struct gru_lm_worker *w;
	bool temp;
	int rc = get_worker(m, worker, &w, &temp);
	if (rc < 0)
		return rc;
	double loss;
	uint64_t tokens;
	const struct mdev_xfer x0 = w->xfer;
	/* Only the server's evaluation of the union runs its groups in
	 * parallel: clients are evaluated in parallel already. */
	rc = split_loss(m, w, params, split, client, false, client == FEDRUN_ALL_CLIENTS, &loss,
			&tokens);
	if (rc == 0) {
		out->n = 0;
		put(out, "loss", loss);
		put(out, "ppl", exp(loss));
		put(out, "tokens", (double)tokens);
		mdev_report(m->host, m->report_xfer, client, &x0, &w->xfer);
	}
	if (temp)
		gru_lm_worker_destroy(m, w);
	return rc;
}

int gru_lm_loss_grad(void *model, void *worker, const float *params, enum fedrun_split split,
		     int64_t client, float *grad, double *loss)
{
	struct gru_lm *m = model;
	struct gru_lm_worker *w;
	bool temp;
	int rc = get_worker(m, worker, &w, &temp);
	if (rc < 0)
		return rc;
	uint64_t tokens;
	const struct mdev_xfer x0 = w->xfer;
	rc = split_loss(m, w, params, split, client, grad != NULL, false, loss, &tokens);
	if (rc == 0 && grad)
		rc = mdev_to_host(m->be, w->ctx, &w->xfer, grad, w->grad,
				  m->layout.total * sizeof(float));
	if (rc == 0)
		mdev_report(m->host, m->report_xfer, client, &x0, &w->xfer);
	if (temp)
		gru_lm_worker_destroy(m, w);
	return rc;
}
