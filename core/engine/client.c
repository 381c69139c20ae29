/* SPDX-License-Identifier: Apache-2.0 */
/* One client's turn in a round: from the push message to the pull
 * message (DESIGN.md section 4). Called by the round (engine.c) in one
 * process and by the ranks of a distributed run (dist.c), so that neither
 * calls the other for it. */
#include "config.h"
#include <string.h>
#include "attack.h"
#include "engine.h"
#include "message.h"
#include "secure.h"

int engine_first_bad_tensor(const struct fedrun_layout *l, const float *arena, const char **name)
{
	for (uint32_t i = 0; i < l->n; i++) {
		if (!fedrun_vec_finite(l->t[i].numel, arena + l->t[i].offset, NULL)) {
			*name = l->t[i].name;
			return 1;
		}
	}
	return 0;
}

static int train_client(struct run *r, struct worker *w, uint32_t i, struct round_ctx *rc_,
			struct client_state *cs)
{
	const struct fedrun_layout *l = r->layout;
	uint32_t c = rc_->clients[i];
	int rc = 0;
	const void *push = rc_->push;
	size_t push_len = rc_->push_len;
	if (run_push(r)) {
		/* The client starts from its own parameters (θ_0 before it first
		 * trains); the selector picks the tensors of θ_t pushed to it,
		 * from their change since θ_{t−1}. */
		memcpy(w->params, cs->params ? cs->params : r->theta_init, l->total * sizeof(float));
		memset(w->mask, 0, l->n);
		struct fedrun_round_info push_info = rc_->info;
		push_info.direction = FEDRUN_PUSH;
		rc = r->sel_ops->select(r->push_selector, &push_info, c, r->theta_last, r->theta, w->mask);
		if (rc < 0)
			return fedrun_error_wrap(rc, "client %u: selector '%s' (push): ", c,
						 r->selector.desc->name);
		rc = msg_encode(MSG_PUSH, rc_->info.round, c, 0, 0, l, r->theta, w->mask,
				&rc_->push_own[i], &rc_->push_own_len[i]);
		if (rc < 0)
			return rc;
		push = rc_->push_own[i];
		push_len = rc_->push_own_len[i];
	}
	struct msg_view view = {.tensor = w->view};
	rc = msg_decode(push, push_len, l, &view);
	if (rc < 0)
		return fedrun_error_wrap(rc, "client %u: push message: ", c);
	for (uint32_t t = 0; t < l->n; t++)
		if (view.tensor[t])
			memcpy(w->params + l->t[t].offset, view.tensor[t], l->t[t].numel * sizeof(float));
	memcpy(w->before, w->params, l->total * sizeof(float));

	/* The optimizer state and its step count (clients.optimizer_state):
	 * the client's own (keep), or a zeroed scratch whose bias correction
	 * starts at 0 (reset) or at the server's global step (continue). */
	float *optim = w->optim_scratch;
	uint64_t scratch_step = r->cfg.optim_state == OPTIM_STATE_CONTINUE ? r->global_step : 0;
	uint64_t *step = &scratch_step;
	if (r->cfg.optim_state == OPTIM_STATE_KEEP) {
		optim = cs->optim;
		step = &cs->step;
	} else if (optim) {
		memset(optim, 0, r->optim_floats * sizeof(float));
	}
	const uint64_t step0 = *step;
	struct fedrun_train_args args = {
		.size = sizeof args, .round = rc_->info.round, .client = c,
		.seed = (uint64_t)r->cfg.seed, .epochs = (uint32_t)r->cfg.epochs,
		.steps = (uint64_t)r->cfg.steps, .batch = (uint32_t)r->cfg.batch,
		.optim = &r->cfg.optim, .optim_state = optim, .optim_step = step,
		.prox_mu = r->cfg.hints.prox_mu, .prox_anchor = w->before,
		.sched_step = r->cfg.lr_clock == LR_CLOCK_GLOBAL ? r->global_step : step0};
	struct fedrun_train_stats stats = {0};
	rc = r->model_ops->train(r->model.state, w->model_worker, &args, w->params, &stats);
	if (rc < 0)
		return fedrun_error_wrap(rc, "client %u: training: ", c);
	rc_->updates[i] = *step - step0;
	rc_->samples[i] = stats.samples;
	const char *bad;
	if (engine_first_bad_tensor(l, w->params, &bad))
		return fedrun_error(FEDRUN_ENUMERIC,
				    "round %u, client %u: training produced non-finite values in tensor '%s' "
				    "(try a smaller clients.optimizer.lr)", rc_->info.round, c, bad);
	if (run_push(r)) {
		if (!cs->params && !(cs->params = fedrun_arena_alloc(l->total)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory for client %u's parameters", c);
		memcpy(cs->params, w->params, l->total * sizeof(float));
	}

	if (r->cfg.direction == DIR_PUSH) {
		memset(w->mask, 1, l->n);
	} else {
		memset(w->mask, 0, l->n);
		rc = r->sel_ops->select(r->selector.state, &rc_->info, c, w->before, w->params, w->mask);
		if (rc < 0)
			return fedrun_error_wrap(rc, "client %u: selector '%s': ", c, r->selector.desc->name);
	}
	/* Δ_k = θ_k − θ_t, against the server's θ_t: with push selection the
	 * client did not start from all of θ_t, and the server combines what
	 * the client's model is, as Passban et al. do. */
	fedrun_vec_sub(l->total, w->params, r->theta, w->params);
	if (r->priv_ops) {
		rc = r->priv_ops->apply(r->privacy.state, &rc_->info, c, w->mask, w->params);
		if (rc < 0)
			return fedrun_error_wrap(rc, "client %u: privacy '%s': ", c, r->privacy.desc->name);
		for (uint32_t t = 0; t < l->n; t++)
			if (w->mask[t] && !fedrun_vec_finite(l->t[t].numel, w->params + l->t[t].offset, NULL))
				return fedrun_error(FEDRUN_ENUMERIC,
						    "round %u, client %u: privacy '%s' produced non-finite values in tensor '%s'",
						    rc_->info.round, c, r->privacy.desc->name, l->t[t].name);
	}
	if (attack_by(r->attack, c))
		attack_client(r->attack, rc_->info.seed, rc_->info.round, c, l, w->mask, w->params);
	const uint64_t n_samples = r->model_ops->client_size(r->model.state, c);
	if (r->secure) {
		/* The selected tensors go masked; the pull message keeps the
		 * rest (samples, loss) and no tensor. */
		rc = secure_client_input(r->secure, rc_->base + i, w->mask, w->params, n_samples,
					 &rc_->masked[i], &rc_->masked_len[i]);
		if (rc < 0)
			return fedrun_error_wrap(rc, "client %u: secure aggregation: ", c);
		memset(w->mask, 0, l->n);
	}
	rc = msg_encode(MSG_PULL, rc_->info.round, c, n_samples, stats.loss, l, w->params, w->mask,
			&rc_->pull[i], &rc_->pull_len[i]);
	if (rc < 0)
		return rc;
	return 0;
}

int engine_train_client(struct run *r, struct worker *w, uint32_t i, void *p)
{
	struct round_ctx *rc_ = p;
	struct client_state *cs = NULL;
	int rc = 0;
	if (!run_keeps_clients(r))
		return train_client(r, w, i, rc_, NULL);
	if (!(cs = run_client_state(r, rc_->clients[i], &rc))) /* created before */
		return rc;
	/* Its kept state is in memory only while it trains (cstore.c). A
	 * failed round keeps the state of the round before: a resume starts
	 * from a checkpoint, which refers to such files. */
	if ((rc = cstore_checkout(r, cs)) < 0)
		return rc;
	rc = train_client(r, w, i, rc_, cs);
	if (rc < 0) {
		cstore_drop(r, cs);
		return rc;
	}
	return cstore_checkin(r, cs);
}

void engine_round_info(const struct run *r, uint32_t round, uint32_t sampled,
		       struct fedrun_round_info *info)
{
	*info = (struct fedrun_round_info){
		.size = sizeof *info, .round = round, .rounds = (uint32_t)r->cfg.rounds,
		.num_clients = r->num_clients, .seed = (uint64_t)r->cfg.seed, .layout = r->layout,
		.sampled = sampled, .fraction = r->cfg.fraction, .direction = FEDRUN_PULL,
		.num_trainable = r->ntrainable};
}

