/* SPDX-License-Identifier: Apache-2.0 */
/* gaussian: DP-FedAvg (McMahan, Ramage, Talwar and Zhang 2018, "Learning
 * Differentially Private Recurrent Language Models"): clients clip their
 * update to L2 norm C and Gaussian noise of standard deviation z·C is added,
 * by each client ("local") or by the server to the average ("central"),
 * with an RDP accountant (fedrun/rdp.h) reporting (ε, δ) after every round.
 * Mode "fedatt" keeps FedAtt's randomisation (eq. 6 of Ji et al. 2019), which
 * carries no guarantee. See fedrun-privacy(7) for what each mode promises. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>
#include <fedrun/rdp.h>
#include "noise.h"

enum { MODE_LOCAL, MODE_CENTRAL, MODE_FEDATT };
#define MODE_CHOICES "local|central|fedatt"

struct gaussian {
	const struct fedrun_host *host;
	int mode, noise;
	double clip, z, delta; /* local, central */
	double sigma, beta;    /* fedatt */

	/* The accountant: RDP accumulated over the rounds so far at each
	 * order, checkpointed with the count of rounds. */
	const double *orders;
	size_t norders;
	uint64_t rounds;
	double *rdp;
	/* RDP of one round at rate step_q, computed once per rate. */
	double *rdp_step, step_q;
	struct fedrun_state_blob blobs[2];
	bool logged;
};

/* clang-format off */
static const struct fedrun_opt gaussian_mode_spec[] = {
    {"mode", FEDRUN_OPT_CHOICE, offsetof(struct gaussian, mode), FEDRUN_OPT_REQUIRED, 0, 0, 0, NULL,
     MODE_CHOICES},
    FEDRUN_OPT_END_,
};

/* Keys of modes local and central. */
static const struct fedrun_opt gaussian_dp_spec[] = {
    {"mode", FEDRUN_OPT_CHOICE, offsetof(struct gaussian, mode), FEDRUN_OPT_REQUIRED, 0, 0, 0, NULL,
     MODE_CHOICES},
    {"clip", FEDRUN_OPT_NUMBER, offsetof(struct gaussian, clip),
     FEDRUN_OPT_REQUIRED | FEDRUN_OPT_MIN_OPEN, 0, 1e6, 0, NULL, NULL},
    /* At least 1e-6: below it the accountant's divergences overflow (at
     * 5e-324 z² is 0 and round 1 failed on a NaN); ε is beyond any
     * meaning long before. */
    {"noise_multiplier", FEDRUN_OPT_NUMBER, offsetof(struct gaussian, z),
     FEDRUN_OPT_REQUIRED, 1e-6, 1e6, 0, NULL, NULL},
    {"delta", FEDRUN_OPT_NUMBER, offsetof(struct gaussian, delta),
     FEDRUN_OPT_MIN_OPEN | FEDRUN_OPT_MAX_OPEN, 0, 1, 1e-5, NULL, NULL},
    {"noise", FEDRUN_OPT_CHOICE, offsetof(struct gaussian, noise), 0, 0, 0, 0, "secure",
     NOISE_CHOICES},
    FEDRUN_OPT_END_,
};

/* Keys of mode fedatt. */
static const struct fedrun_opt gaussian_fedatt_spec[] = {
    {"mode", FEDRUN_OPT_CHOICE, offsetof(struct gaussian, mode), FEDRUN_OPT_REQUIRED, 0, 0, 0, NULL,
     MODE_CHOICES},
    {"sigma", FEDRUN_OPT_NUMBER, offsetof(struct gaussian, sigma), FEDRUN_OPT_REQUIRED, 0, 1e6, 0,
     NULL, NULL},
    {"beta", FEDRUN_OPT_NUMBER, offsetof(struct gaussian, beta), 0, 0, 1e6, 1.0, NULL, NULL},
    {"noise", FEDRUN_OPT_CHOICE, offsetof(struct gaussian, noise), 0, 0, 0, 0, "secure",
     NOISE_CHOICES},
    FEDRUN_OPT_END_,
};
/* clang-format on */

static bool spec_has(const struct fedrun_opt *spec, const char *key)
{
	for (; spec->key; spec++)
		if (strcmp(spec->key, key) == 0)
			return true;
	return false;
}

/* Reads "mode" first, so that a key of the other modes gets a message that
 * says which mode it belongs to rather than "unknown key". */
static int gaussian_parse(struct gaussian *st, json_t *config)
{
	if (!json_is_object(config))
		return fedrun_opts_parse(gaussian_mode_spec, config, "privacy", st);
	if (!json_object_get(config, "mode"))
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "privacy.mode: required key is missing (\"central\" or \"local\" for "
		    "DP-FedAvg with clipping and accounting, \"fedatt\" for FedAtt's "
		    "randomisation, which is not differentially private)");
	json_t *only = json_pack("{sO}", "mode", json_object_get(config, "mode"));
	if (!only)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = fedrun_opts_parse(gaussian_mode_spec, only, "privacy", st);
	json_decref(only);
	if (rc < 0)
		return rc;
	const struct fedrun_opt *spec =
	    st->mode == MODE_FEDATT ? gaussian_fedatt_spec : gaussian_dp_spec;
	const struct fedrun_opt *other =
	    st->mode == MODE_FEDATT ? gaussian_dp_spec : gaussian_fedatt_spec;
	static const char *names[] = {"local", "central", "fedatt"};
	const char *why = st->mode == MODE_FEDATT
			      ? "only modes \"local\" and \"central\" clip and account"
			      : "mode \"fedatt\" takes sigma and beta; here the noise is "
				"noise_multiplier × clip";
	const char *key;
	json_t *v;
	/* clang-format off */
	json_object_foreach(config, key, v) {
		if (!spec_has(spec, key) && spec_has(other, key))
			return fedrun_error(FEDRUN_ECONFIG, "privacy.%s: not used with mode \"%s\" (%s)",
					    key, names[st->mode], why);
	}
	/* clang-format on */
	return fedrun_opts_parse(spec, config, "privacy", st);
}

static void gaussian_destroy(void *state)
{
	struct gaussian *st = state;
	if (!st)
		return;
	free(st->rdp);
	free(st->rdp_step);
	free(st);
}

static void gaussian_describe(const struct gaussian *st, enum fedrun_log_level level)
{
	const struct fedrun_host *h = st->host;
	if (st->mode == MODE_FEDATT)
		h->log(
		    h->ctx, level,
		    "privacy gaussian: mode fedatt, beta*N(0, sigma^2) with sigma %g, beta %g, no "
		    "clipping: no differential privacy guarantee; noise %s",
		    st->sigma, st->beta, noise_name(st->noise));
	else
		h->log(
		    h->ctx, level,
		    "privacy gaussian: mode %s, clip %g, noise multiplier %g (std %g on the %s), "
		    "delta %g; noise %s",
		    st->mode == MODE_LOCAL ? "local" : "central", st->clip, st->z, st->z * st->clip,
		    st->mode == MODE_LOCAL ? "client's update" : "sum of updates", st->delta,
		    noise_name(st->noise));
}

static int gaussian_create(const struct fedrun_host *host, json_t *config,
			   const struct fedrun_layout *layout, void **state)
{
	(void)layout;
	struct gaussian *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	int rc = gaussian_parse(st, config);
	if (rc < 0)
		goto fail;
	st->orders = fedrun_rdp_default_orders(&st->norders);
	st->rdp = calloc(st->norders, sizeof *st->rdp);
	st->rdp_step = calloc(st->norders, sizeof *st->rdp_step);
	if (!st->rdp || !st->rdp_step) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	st->step_q = -1;
	st->blobs[0] = (struct fedrun_state_blob){"rounds", &st->rounds, sizeof st->rounds};
	st->blobs[1] = (struct fedrun_state_blob){"rdp", st->rdp, st->norders * sizeof *st->rdp};
	gaussian_describe(st, FEDRUN_LOG_INFO);
	if (st->noise == NOISE_REPRODUCIBLE)
		host->log(
		    host->ctx, FEDRUN_LOG_WARN,
		    "privacy gaussian: noise \"reproducible\" is derived from the seed: anyone "
		    "who knows it can subtract the noise, so it protects nothing (for "
		    "experiments only)");
	*state = st;
	return 0;
fail:
	gaussian_destroy(st);
	return rc;
}

static int gaussian_apply(void *state, const struct fedrun_round_info *round, uint32_t client,
			  const uint8_t *mask, float *delta)
{
	struct gaussian *st = state;
	const struct fedrun_layout *l = round->layout;
	struct noise_src src;
	int rc;
	if (st->mode == MODE_FEDATT) {
		/* eq. 6 of the FedAtt paper: β·N(0, σ²) on each entry */
		if ((rc = noise_src_init(&src, st->noise, round, client)) < 0)
			return rc;
		noise_add(&src, l, mask, delta, false, st->beta * st->sigma);
		noise_src_fini(&src);
		return 0;
	}
	if (st->mode == MODE_CENTRAL) {
		/* The noise on the average is calibrated to a mean over m
		 * updates of every tensor: a tensor sent by fewer clients
		 * would be averaged over fewer and need more noise. */
		for (uint32_t i = 0; i < l->n; i++)
			if (!mask[i])
				return fedrun_error(
				    FEDRUN_ECONFIG,
				    "privacy.mode: \"central\" needs every tensor of every "
				    "update (selector \"all\"), but client %u does not send "
				    "'%s'",
				    client, l->t[i].name);
	}
	/* Clipping bounds one client's contribution to L2 norm C (McMahan et
	 * al. 2018, algorithm 1, ClipFn). */
	if ((rc = noise_clip(l, mask, delta, false, st->clip, client)) < 0)
		return rc;
	if (st->mode == MODE_LOCAL) {
		if ((rc = noise_src_init(&src, st->noise, round, client)) < 0)
			return rc;
		noise_add(&src, l, mask, delta, false, st->z * st->clip);
		noise_src_fini(&src);
	}
	return 0;
}

/* RDP of one round: the sampled Gaussian mechanism at rate q (central) or
 * the Gaussian mechanism, q = 1 (local). Cached per rate. */
static int gaussian_step(struct gaussian *st, double q)
{
	if (q == st->step_q)
		return 0;
	int rc = fedrun_rdp_sgm(q, st->z, 1, st->orders, st->norders, st->rdp_step);
	if (rc < 0)
		return rc;
	st->step_q = q;
	return 0;
}

static int gaussian_apply_server(void *state, const struct fedrun_round_info *round, uint32_t n,
				 float *delta)
{
	struct gaussian *st = state;
	const struct fedrun_host *h = st->host;
	if (!st->logged) { /* once: the number of clients is known from here */
		/* (ε, δ) with δ >= 1/K allows releasing one client's data
		 * outright; the bound is then meaningless. */
		if (st->mode != MODE_FEDATT && round->num_clients > 0 &&
		    st->delta >= 1.0 / round->num_clients)
			h->log(h->ctx, FEDRUN_LOG_WARN,
			       "privacy gaussian: delta %g is not below 1/K = 1/%u: such a delta "
			       "allows exposing a client outright; choose delta << 1/K",
			       st->delta, round->num_clients);
		st->logged = true;
	}
	if (st->mode == MODE_FEDATT)
		return 0;
	if (n == 0)
		return fedrun_error(
		    FEDRUN_EINVAL, "privacy gaussian: round %u aggregated no update", round->round);
	if (st->rounds + 1 != round->round)
		return fedrun_error(
		    FEDRUN_ESTATE,
		    "privacy gaussian: the accountant holds %llu rounds but this is "
		    "round %u (a checkpoint from another run?)",
		    (unsigned long long)st->rounds, round->round);
	double q = 1, std = st->z * st->clip;
	if (st->mode == MODE_CENTRAL) {
		/* Each client takes part with probability m/K, or the
		 * pipeline's fraction where that is larger. */
		uint32_t K = round->num_clients;
		if (round->size >= offsetof(struct fedrun_round_info, num_trainable) + sizeof(uint32_t) &&
		    round->num_trainable > 0)
			K = round->num_trainable; /* evaluation-only clients never take part */
		q = K ? (double)round->sampled / K : 1;
		if (round->fraction > q)
			q = round->fraction;
		if (q > 1)
			q = 1;
		/* The mean of n updates clipped to C: the sum's sensitivity
		 * is C, its noise N(0, (zC)²), the mean's N(0, (zC/n)²). */
		std = st->z * st->clip / n;
		struct noise_src src;
		int rc = noise_src_init(&src, st->noise, round, NOISE_SERVER);
		if (rc < 0)
			return rc;
		noise_add(&src, round->layout, NULL, delta, false, std);
		noise_src_fini(&src);
	}
	int rc = gaussian_step(st, q);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < st->norders; i++)
		st->rdp[i] += st->rdp_step[i];
	st->rounds++;

	double eps, order, eps_c, order_c;
	if ((rc = fedrun_rdp_to_eps(st->orders, st->rdp, st->norders, st->delta,
				    FEDRUN_RDP_IMPROVED, &eps, &order)) < 0 ||
	    (rc = fedrun_rdp_to_eps(st->orders, st->rdp, st->norders, st->delta, FEDRUN_RDP_CLASSIC,
				    &eps_c, &order_c)) < 0)
		return rc;
	const char *names[] = {"privacy.epsilon",	"privacy.epsilon_classic", "privacy.order",
			       "privacy.order_classic", "privacy.delta",	   "privacy.q",
			       "privacy.noise_std"};
	const double values[] = {eps, eps_c, order, order_c, st->delta, q, std};
	for (size_t i = 0; i < sizeof values / sizeof *values; i++)
		if ((rc = h->metric(h->ctx, names[i], -1, NULL, values[i])) < 0)
			return rc;
	return 0;
}

static int gaussian_state(void *state, const struct fedrun_state_blob **blobs, uint32_t *n)
{
	struct gaussian *st = state;
	*blobs = st->blobs;
	*n = 2;
	return 0;
}

static const struct fedrun_privacy_ops gaussian_ops = {
    .size = sizeof(struct fedrun_privacy_ops),
    .create = gaussian_create,
    .destroy = gaussian_destroy,
    .apply = gaussian_apply,
    .apply_server = gaussian_apply_server,
    .state = gaussian_state,
};

static const struct fedrun_plugin gaussian_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_PRIVACY, "gaussian", "2.0.0",
    "DP-FedAvg: clip to L2 norm C, add N(0, (zC)^2) locally or centrally, RDP accounting",
    &gaussian_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &gaussian_plugin : NULL;
}
