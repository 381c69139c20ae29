/* SPDX-License-Identifier: Apache-2.0 */
/* After the last round: domain experts (FedNMT paper, sec. 2.5). Each chosen
 * client trains a private model M_P from the run's initial parameters on its
 * own training data (with the clients' batch and optimizer), then fits the
 * gate λ(x) of the mixture λ(x) M_G + (1 − λ(x)) M_P with the global model
 * M_G (the run's final one), both models frozen; the mixture is evaluated on
 * the client's valid and test splits. The model does the scoring through its
 * ABI 1.6 gate ops; here only the phase: training, metrics
 * ("expert.<metric>", with the client's name as "model"), and
 * RUN/experts/client-K.safetensors (the private model and its gate,
 * "__expert.gate"). expert.private gives a client's private model instead
 * (a model trained elsewhere: its local baseline), which is then not
 * trained here. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"

int run_expert_clients(struct run *r)
{
	if (!r->cfg.expert)
		return 0;
	if (!FEDRUN_MODEL_HAS_EXPERT(r->model_ops))
		return fedrun_error(FEDRUN_ECONFIG,
				    "expert: model '%s' has no domain-expert gate ops (gate_size, "
				    "gate_fit, gate_evaluate, gate_translate; ABI 1.6): remove the "
				    "expert section or use a model that has them (transformer)",
				    r->model.desc->name);
	int rc = run_clients_resolve(r, r->cfg.ex_clients, "expert", &r->ex_list, &r->nex);
	if (rc < 0 || !r->cfg.ex_private)
		return rc;
	/* expert.private: each name a chosen client (by name or clientN) */
	if (!(r->ex_private = calloc(r->nex ? r->nex : 1, sizeof *r->ex_private)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	const char *key;
	json_t *v;
	json_object_foreach(r->cfg.ex_private, key, v) {
		int64_t c = run_client_by_name(r, key);
		if (c < 0)
			return fedrun_error(FEDRUN_ECONFIG,
					    "expert.private.%s: no client of that name (give the "
					    "name of data.clients, or clientN)",
					    key);
		uint32_t i = 0;
		while (i < r->nex && r->ex_list[i] != c)
			i++;
		if (i == r->nex)
			return fedrun_error(FEDRUN_ECONFIG,
					    "expert.private.%s: that client has no domain expert "
					    "(it is not among expert.clients)",
					    key);
		r->ex_private[i] = json_string_value(v);
	}
	return 0;
}

struct ex_ctx {
	const float *theta0; /* the run's initial parameters */
	uint32_t gate_n;
	float **given;	     /* per ex_list entry: its expert.private model, or NULL */
};

/* "expert.<name>" events of one evaluation. */
static int report(struct run *r, uint32_t c, int split, const struct fedrun_eval *e)
{
	char buf[32], name[64];
	const char *model = run_client_name(r, c, buf, sizeof buf);
	for (uint32_t j = 0; j < e->n && j < FEDRUN_METRICS_MAX; j++) {
		if (strcmp(e->m[j].name, "loss") == 0)
			continue; /* the same as nll */
		snprintf(name, sizeof name, "expert.%s", e->m[j].name);
		int rc = run_event_model(r, c, split, name, model, e->m[j].value);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The private model of client ex_list[i] into params. */
static int train_private(struct run *r, struct worker *w, uint32_t c, const float *theta0,
			 float *params, double *loss)
{
	const struct fedrun_layout *l = r->layout;
	memcpy(params, theta0, l->total * sizeof(float));
	uint64_t nopt = fedrun_optim_state_floats(&r->cfg.optim, l->total), step = 0;
	float *optim = NULL;
	if (nopt && !(optim = fedrun_arena_alloc(nopt)))
		return fedrun_error(FEDRUN_ENOMEM, "expert: out of memory for client %u's optimizer state", c);
	if (optim)
		memset(optim, 0, nopt * sizeof *optim);
	/* "Round" rounds + 2: its own streams, apart from the rounds' and
	 * fine-tuning's (rounds + 1); a fresh optimizer and schedule. */
	struct fedrun_train_args args = {
		.size = sizeof args, .round = (uint32_t)r->cfg.rounds + 2, .client = c,
		.seed = (uint64_t)r->cfg.seed, .epochs = (uint32_t)r->cfg.ex_epochs,
		.steps = (uint64_t)r->cfg.ex_steps, .batch = (uint32_t)r->cfg.batch,
		.optim = &r->cfg.optim, .optim_state = optim, .optim_step = &step,
		.prox_mu = 0, .prox_anchor = NULL, .sched_step = 0};
	struct fedrun_train_stats stats = {0};
	int rc = r->model_ops->train(r->model.state, w->model_worker, &args, params, &stats);
	fedrun_arena_free(optim);
	if (rc < 0)
		return fedrun_error_wrap(rc, "expert: client %u: training the private model: ", c);
	for (uint32_t t = 0; t < l->n; t++)
		if (!fedrun_vec_finite(l->t[t].numel, params + l->t[t].offset, NULL))
			return fedrun_error(FEDRUN_ENUMERIC,
					    "expert: client %u: the private model's training produced "
					    "non-finite values in tensor '%s' (try a smaller "
					    "clients.optimizer.lr)", c, l->t[t].name);
	*loss = stats.loss;
	return 0;
}

static int expert_client(struct run *r, struct worker *w, uint32_t i, void *p)
{
	const struct ex_ctx *x = p;
	const uint32_t c = r->ex_list[i];
	char buf[32];
	float *priv = fedrun_arena_alloc(r->layout->total);
	float *gate = calloc(x->gate_n, sizeof *gate);
	int rc = priv && gate ? 0 : fedrun_error(FEDRUN_ENOMEM, "expert: out of memory for client %u", c);
	double loss = 0;
	if (rc == 0 && x->given[i]) {
		/* expert.private: trained elsewhere; no training loss */
		memcpy(priv, x->given[i], r->layout->total * sizeof *priv);
	} else if (rc == 0) {
		rc = train_private(r, w, c, x->theta0, priv, &loss);
		if (rc == 0)
			rc = run_event_model(r, c, FEDRUN_SPLIT_TRAIN, "expert.train_loss",
					     run_client_name(r, c, buf, sizeof buf), loss);
	}
	struct fedrun_eval e = {0};
	const struct fedrun_gate_opts go = {.size = sizeof go,
					    .steps = (uint32_t)r->cfg.ex_gate_steps,
					    .lr = r->cfg.ex_gate_lr};
	if (rc == 0 && (rc = r->model_ops->gate_fit(r->model.state, w->model_worker, r->theta, priv,
						    c, &go, gate, &e)) < 0)
		fedrun_error_wrap(rc, "expert: client %u: fitting the gate: ", c);
	if (rc == 0) {
		/* the fit's own λ (on train) apart from the evaluations' */
		for (uint32_t j = 0; j < e.n && j < FEDRUN_METRICS_MAX; j++)
			if (strcmp(e.m[j].name, "lambda") == 0)
				snprintf(e.m[j].name, sizeof e.m[j].name, "gate_lambda");
		rc = report(r, c, FEDRUN_SPLIT_TRAIN, &e);
	}
	static const int splits[] = {FEDRUN_SPLIT_VALID, FEDRUN_SPLIT_TEST};
	for (size_t s = 0; s < 2 && rc == 0; s++) {
		e.n = 0;
		rc = r->model_ops->gate_evaluate(r->model.state, w->model_worker, r->theta, priv, gate,
						 (enum fedrun_split)splits[s], c, &e);
		if (rc == FEDRUN_ENOENT) { /* no such split: nothing to report */
			fedrun_error_clear();
			rc = 0;
			continue;
		}
		if (rc < 0)
			fedrun_error_wrap(rc, "expert: client %u: evaluating the mixture on %s: ", c,
					  splits[s] == FEDRUN_SPLIT_VALID ? "valid" : "test");
		else
			rc = report(r, c, splits[s], &e);
	}
	if (rc == 0)
		rc = run_client_model_write(r, "experts", "expert", c, priv, "__expert.gate", gate,
					    x->gate_n);
	fedrun_arena_free(priv);
	free(gate);
	return rc;
}

/* The run's initial parameters, as the run made them: from its init file
 * or the model's init_params with the run's seed. */
static int initial_params(struct run *r, float *theta0)
{
	if (!r->cfg.init) {
		int rc = r->model_ops->init_params(r->model.state, (uint64_t)r->cfg.seed, theta0);
		return rc < 0 ? fedrun_error_wrap(rc, "expert: model '%s': initialisation: ",
						  r->model.desc->name)
			      : 0;
	}
	int rc = params_load(r, r->cfg.init, theta0, "init");
	return rc < 0 ? fedrun_error_wrap(rc, "expert: ") : 0;
}

/* The models of expert.private, read before the clients run in parallel:
 * x->given[i] for ex_list[i] (NULL: trained here). */
static int given_private(struct run *r, struct ex_ctx *x)
{
	if (!(x->given = calloc(r->nex, sizeof *x->given)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; r->ex_private && i < r->nex; i++) {
		if (!r->ex_private[i])
			continue;
		char buf[32], what[96];
		const char *name = run_client_name(r, r->ex_list[i], buf, sizeof buf);
		snprintf(what, sizeof what, "expert.private.%s", name);
		if (!(x->given[i] = fedrun_arena_alloc(r->layout->total)))
			return fedrun_error(FEDRUN_ENOMEM, "%s: out of memory", what);
		int rc = params_load(r, r->ex_private[i], x->given[i], what);
		if (rc < 0)
			return rc;
		r->host.log(r, FEDRUN_LOG_INFO, "domain expert of client %s: private model from %s",
			    name, r->ex_private[i]);
	}
	return 0;
}

int run_experts(struct run *r)
{
	if (!r->cfg.expert || r->nex == 0)
		return 0;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/experts", r->cfg.dir);
	int rc = fedrun_mkdir_p(dir);
	if (rc < 0)
		return rc;
	struct ex_ctx x = {.gate_n = r->model_ops->gate_size(r->model.state)};
	if (x.gate_n == 0)
		return fedrun_error(FEDRUN_EPLUGIN, "expert: model '%s' has a gate of 0 floats",
				    r->model.desc->name);
	float *theta0 = fedrun_arena_alloc(r->layout->total);
	if (!theta0)
		return fedrun_error(FEDRUN_ENOMEM, "expert: out of memory for the initial parameters");
	rc = initial_params(r, theta0);
	x.theta0 = theta0;
	if (rc == 0)
		rc = given_private(r, &x);
	if (rc == 0) {
		run_status(r,
			   "domain experts for %u clients: private models from the initial "
			   "parameters (or expert.private), gates of %u floats",
			   r->nex, x.gate_n);
		r->metric_prefix = "expert.";
		rc = run_parallel_for(r, r->nex, expert_client, &x);
		r->metric_prefix = NULL;
	}
	if (rc == 0)
		rc = metrics_flush_round(r, r->round);
	for (uint32_t i = 0; x.given && i < r->nex; i++)
		fedrun_arena_free(x.given[i]);
	free(x.given);
	fedrun_arena_free(theta0);
	return rc;
}
