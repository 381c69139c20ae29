/* SPDX-License-Identifier: Apache-2.0 */
/* Secure aggregation in the round engine (secure.h): the pipeline's
 * "secagg" section, and the protocol's four stages around a round's
 * training. The clients quantise their updates onto the ring Z_{2^bits}
 * (weighted by their samples, or by 1), with one more element per tensor
 * that carries the weight when the client sends the tensor (0 when it
 * does not: a client uploads every tensor, as pull selection is refused),
 * so that the server learns per tensor only Σ w_k Δ_k and Σ w_k over the
 * survivors: their weighted mean, which the aggregator gets as the
 * round's one update. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "attack.h"
#include "secure.h"

/* The options of the "secagg" section (man 5 fedrun-pipeline). */
struct secure_cfg {
	int64_t bits;
	double clip;
	int graph;		       /* enum secagg_graph_kind: "complete" | "sparse" */
	int64_t num_shares, threshold; /* 0: derived from the round's size */
	bool graph_given;	       /* "graph" was in the section */
};

#define O(key, type, field, flags, lo, hi, def, defs, choices)                                     \
	{                                                                                          \
		key, type, offsetof(struct secure_cfg, field), flags, lo, hi, def, defs, choices   \
	}
static const struct fedrun_opt secure_spec[] = {
    O("bits", FEDRUN_OPT_INT, bits, 0, 8, 64, 32, NULL, NULL),
    O("clip", FEDRUN_OPT_NUMBER, clip, FEDRUN_OPT_MIN_OPEN, 0, 1e30, 1.0, NULL, NULL),
    O("graph", FEDRUN_OPT_CHOICE, graph, 0, 0, 0, 0, "sparse", "complete|sparse"),
    O("num_shares", FEDRUN_OPT_INT, num_shares, FEDRUN_OPT_OPTIONAL, 3, 16777216, 0, NULL, NULL),
    O("threshold", FEDRUN_OPT_INT, threshold, FEDRUN_OPT_OPTIONAL, 2, 16777216, 0, NULL, NULL),
    FEDRUN_OPT_END_,
};
#undef O

/* The aggregators whose rule is a function of the round's weighted mean
 * update alone: what secure aggregation reveals. */
static const char *const sum_based[] = {"fedavg", "fedprox", "fedopt"};

/* Reads the section and the aggregator's "weights" (samples or uniform;
 * 1 for uniform). Everything but what needs the secagg library. */
static int read_cfg(struct run *r, uint32_t nranks, json_t *sec, struct secure_cfg *cfg,
		    bool *uniform)
{
	*cfg = (struct secure_cfg){0};
	/* before the parse, which writes the defaults into the section */
	cfg->graph_given = json_object_get(sec, "graph") != NULL;
	int rc = fedrun_opts_parse(secure_spec, sec, "secagg", cfg);
	if (rc < 0)
		return rc;
	const char *agg = r->aggregator.desc->name;
	bool ok = false;
	for (size_t i = 0; i < sizeof sum_based / sizeof *sum_based; i++)
		ok |= strcmp(agg, sum_based[i]) == 0;
	if (!ok)
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "secagg: aggregator '%s' needs the clients' updates one by one; secure "
		    "aggregation reveals only their weighted sum (use fedavg, fedprox or "
		    "fedopt)",
		    agg);
	const char *w = json_string_value(
	    json_object_get(json_object_get(r->pipeline, "aggregator"), "weights"));
	if (w && strcmp(w, "samples") != 0 && strcmp(w, "uniform") != 0)
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "secagg: aggregator.weights \"%s\": under secure aggregation a client's "
		    "weight must be known before it trains (samples or uniform)",
		    w);
	*uniform = w && strcmp(w, "uniform") == 0;
	if (attack_needs_all(r->attack))
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "secagg: the attack needs every client's update on the server, which "
		    "secure aggregation hides");
	/* A tensor's sum is over the clients that sent it, with Σ w: one
	 * sender's tensor is revealed exactly, and the counts say which
	 * tensors how many chose. The counts are only known once the sum is
	 * unmasked, so a check then would come too late for a curious server:
	 * the upload must be every tensor of every client. */
	if (r->cfg.direction != DIR_PUSH && strcmp(r->selector.desc->name, "all") != 0)
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "secagg: selector '%s' picks per client the tensors it uploads, and a "
		    "tensor that only one client sends would be revealed exactly by the sum; "
		    "under secure aggregation the upload must be every tensor (selector "
		    "\"all\", or selector.direction \"push\")",
		    r->selector.desc->name);
	if (nranks > 1)
		return fedrun_error(
		    FEDRUN_EUNSUPPORTED,
		    "secagg: secure aggregation runs in one process for now, not over %u", nranks);
	if (run_clients_per_round(r) < 2)
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "secagg: a round of %u client has nothing to hide its update in "
		    "(clients.fraction: at least 2 clients a round)",
		    run_clients_per_round(r));
	return 0;
}

#if HAVE_SECAGG
#include "secagg/secagg.h"

enum { STAGES = 4 };

/* The protocol's seconds are the CPU seconds of the thread that computes a
 * stage (a client's, or the server's): what each party spends on it,
 * whatever else the machine runs (in one process the parties take turns
 * on the same cores, so the wall clock would mix them). */
static double cpu_now(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return run_now();
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static const char *const stage_name[STAGES] = {"advertise", "share", "masked", "unmask"};

struct secure {
	struct secure_cfg cfg;
	bool uniform;
	const struct fedrun_layout *layout;
	/* the round */
	struct secagg_params p;
	struct secagg_quant q;
	uint32_t m;
	const uint32_t *clients; /* borrowed from the round */
	struct secagg_client **cl;
	struct secagg_server *srv;
	void **masked_in; /* the server's message of the masked stage, per client */
	size_t *masked_in_len;
	uint64_t *clipped;	   /* coordinates clip changed, per client */
	double *sent, *got, *secs; /* [stage * m + i]: bytes and client seconds */
	double srv_secs[STAGES];
};

int secure_create(struct run *r, uint32_t nranks, struct secure **out)
{
	*out = NULL;
	json_t *sec = json_object_get(r->pipeline, "secagg");
	if (!json_is_object(sec))
		return 0;
	struct secure *s = calloc(1, sizeof *s);
	if (!s)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = read_cfg(r, nranks, sec, &s->cfg, &s->uniform);
	s->layout = r->layout;
	/* The parameters of a round of the run's size, checked now. */
	const uint32_t m = run_clients_per_round(r);
	struct secagg_params p = {
	    .n = m,
	    .graph = (uint32_t)s->cfg.graph,
	    .bits = (uint32_t)s->cfg.bits,
	    .dim = r->layout->total + r->layout->n,
	    .round = 1,
	    .seed = (uint64_t)r->cfg.seed,
	};
	/* A sparse graph needs 3 clients a round (num_shares is odd, at
	 * least 3); with 2, each is the other's only neighbour anyway, so
	 * the default is then the complete graph. */
	if (rc == 0 && m < 3 && s->cfg.graph == SECAGG_SPARSE) {
		if (s->cfg.graph_given) {
			rc = fedrun_error(FEDRUN_ECONFIG,
					  "secagg.graph \"sparse\" needs at least 3 clients a "
					  "round, and a round has %u: use \"complete\"",
					  m);
		} else {
			s->cfg.graph = SECAGG_COMPLETE;
			/* the run's record says what ran */
			json_object_set_new(sec, "graph", json_string("complete"));
		}
	}
	p.graph = (uint32_t)s->cfg.graph;
	p.num_shares = s->cfg.graph == SECAGG_COMPLETE ? m
		       : s->cfg.num_shares	       ? (uint32_t)s->cfg.num_shares
						       : secagg_default_shares(m);
	if (rc == 0 && s->cfg.graph == SECAGG_COMPLETE && s->cfg.num_shares &&
	    s->cfg.num_shares != (int64_t)m)
		rc = fedrun_error(
		    FEDRUN_ECONFIG,
		    "secagg.num_shares: the complete graph shares among all %u clients of a "
		    "round; leave num_shares out (or use graph \"sparse\")",
		    m);
	p.threshold = s->cfg.threshold ? (uint32_t)s->cfg.threshold : p.num_shares / 2 + 1;
	if (rc == 0 && (rc = secagg_params_check(&p)) < 0) {
		char why[512];
		snprintf(why, sizeof why, "%s", fedrun_error_message());
		rc = fedrun_error(FEDRUN_ECONFIG, "%s (a round has %u clients)", why, m);
	}
	s->p = p;
	if (rc < 0) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void secure_round_end(struct secure *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->m; i++) {
		if (s->cl)
			secagg_client_destroy(s->cl[i]);
		if (s->masked_in)
			free(s->masked_in[i]);
	}
	secagg_server_destroy(s->srv);
	free(s->cl);
	free(s->masked_in);
	free(s->masked_in_len);
	free(s->clipped);
	free(s->sent);
	free(s->got);
	free(s->secs);
	s->srv = NULL;
	s->cl = NULL;
	s->masked_in = NULL;
	s->masked_in_len = NULL;
	s->clipped = NULL;
	s->sent = s->got = s->secs = NULL;
	s->m = 0;
}

void secure_destroy(struct secure *s)
{
	secure_round_end(s);
	free(s);
}

static uint64_t weight_of(const struct secure *s, uint64_t n_samples)
{
	return s->uniform ? 1 : n_samples;
}

/* One stage for every client: the server's message (none in the first),
 * the client's answer, the server's receipt; then the server closes it. */
static int run_stage(struct secure *s, uint32_t stage)
{
	int rc = 0;
	const uint32_t k = stage - SECAGG_ADVERTISE, m = s->m;
	for (uint32_t i = 0; i < m && rc == 0; i++) {
		void *in = NULL, *out = NULL;
		size_t in_len = 0, out_len = 0;
		double t = cpu_now();
		if (stage > SECAGG_ADVERTISE)
			rc = secagg_server_message(s->srv, i, &in, &in_len);
		double t1 = cpu_now();
		if (rc == 0)
			rc = stage == SECAGG_ADVERTISE
				 ? secagg_client_advertise(s->cl[i], &out, &out_len)
			     : stage == SECAGG_SHARE
				 ? secagg_client_share(s->cl[i], in, in_len, &out, &out_len)
				 : secagg_client_unmask(s->cl[i], in, in_len, &out, &out_len);
		double t2 = cpu_now();
		if (rc == 0)
			rc = secagg_server_receive(s->srv, out, out_len);
		s->srv_secs[k] += (t1 - t) + (cpu_now() - t2);
		s->secs[k * m + i] += t2 - t1;
		s->got[k * m + i] += (double)in_len;
		s->sent[k * m + i] += (double)out_len;
		free(in);
		free(out);
	}
	double t = cpu_now();
	if (rc == 0)
		rc = secagg_server_close(s->srv);
	s->srv_secs[k] += cpu_now() - t;
	return rc;
}

int secure_round_begin(struct secure *s, struct run *r, uint32_t round, const uint32_t *clients,
		       uint32_t m)
{
	secure_round_end(s);
	s->p.round = round;
	s->p.n = m;
	s->clients = clients;
	uint64_t wmax = 0;
	for (uint32_t i = 0; i < m; i++)
		wmax += weight_of(s, r->model_ops->client_size(r->model.state, clients[i]));
	int rc = secagg_quant_init(&s->q, s->p.bits, s->cfg.clip, wmax);
	if (rc < 0)
		return fedrun_error_wrap(FEDRUN_ECONFIG, "round %u: ", round);
	s->cl = calloc(m, sizeof *s->cl);
	s->masked_in = calloc(m, sizeof *s->masked_in);
	s->masked_in_len = calloc(m, sizeof *s->masked_in_len);
	s->clipped = calloc(m, sizeof *s->clipped);
	s->sent = calloc((size_t)STAGES * m, sizeof *s->sent);
	s->got = calloc((size_t)STAGES * m, sizeof *s->got);
	s->secs = calloc((size_t)STAGES * m, sizeof *s->secs);
	s->m = m;
	memset(s->srv_secs, 0, sizeof s->srv_secs);
	if (!s->cl || !s->masked_in || !s->masked_in_len || !s->clipped || !s->sent || !s->got ||
	    !s->secs)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if ((rc = secagg_server_create(&s->p, &s->srv)) < 0)
		return fedrun_error_wrap(rc, "round %u: ", round);
	for (uint32_t i = 0; i < m && rc == 0; i++) {
		double t = cpu_now();
		rc = secagg_client_create(&s->p, i, &s->cl[i]);
		s->secs[i] += cpu_now() - t;
	}
	if (rc == 0)
		rc = run_stage(s, SECAGG_ADVERTISE);
	if (rc == 0)
		rc = run_stage(s, SECAGG_SHARE);
	/* The server's messages of the masked stage (the shares addressed to
	 * each client), for the clients to read when they have trained. */
	for (uint32_t i = 0; i < m && rc == 0; i++) {
		double t = cpu_now();
		rc = secagg_server_message(s->srv, i, &s->masked_in[i], &s->masked_in_len[i]);
		s->srv_secs[SECAGG_MASKED - 1] += cpu_now() - t;
	}
	return rc < 0 ? fedrun_error_wrap(rc, "round %u: ", round) : 0;
}

int secure_client_input(struct secure *s, uint32_t i, const uint8_t *mask, const float *delta,
			uint64_t n_samples, void **msg, size_t *len)
{
	const struct fedrun_layout *l = s->layout;
	const double t = cpu_now();
	uint64_t *x = malloc(s->p.dim * sizeof *x);
	if (!x)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for a masked update");
	const uint64_t w = weight_of(s, n_samples);
	uint64_t clipped = 0;
	for (uint32_t k = 0; k < l->n; k++) {
		const uint64_t off = l->t[k].offset, numel = l->t[k].numel;
		if (!mask[k]) {
			memset(x + off, 0, numel * sizeof *x);
			x[l->total + k] = 0;
			continue;
		}
		for (uint64_t j = 0; j < numel; j++)
			clipped += delta[off + j] > s->q.clip || delta[off + j] < -s->q.clip;
		secagg_quant_encode(&s->q, w, delta + off, numel, x + off);
		x[l->total + k] = w; /* Σ w over the senders of tensor k */
	}
	const size_t in_len = s->masked_in_len[i];
	int rc = secagg_client_mask(s->cl[i], s->masked_in[i], in_len, x, msg, len);
	free(x);
	free(s->masked_in[i]);
	s->masked_in[i] = NULL;
	const uint32_t k = SECAGG_MASKED - 1;
	s->clipped[i] = clipped;
	s->got[k * s->m + i] += (double)in_len;
	s->sent[k * s->m + i] += rc == 0 ? (double)*len : 0;
	s->secs[k * s->m + i] += cpu_now() - t;
	return rc;
}

int secure_server_add(struct secure *s, uint32_t i, const void *msg, size_t len)
{
	const double t = cpu_now();
	int rc = secagg_server_receive(s->srv, msg, len);
	s->srv_secs[SECAGG_MASKED - 1] += cpu_now() - t;
	return rc < 0 ? fedrun_error_wrap(rc, "round %u, client %u: ", s->p.round, s->clients[i])
		      : 0;
}

/* The round's metrics: per client and stage its bytes and seconds, the
 * server's, and what quantisation did. */
static int round_metrics(struct secure *s, struct run *r)
{
	char name[64];
	int rc = 0;
	for (uint32_t k = 0; k < STAGES && rc == 0; k++) {
		double sent = 0, got = 0;
		for (uint32_t i = 0; i < s->m && rc == 0; i++) {
			const size_t at = (size_t)k * s->m + i;
			sent += s->sent[at];
			got += s->got[at];
			snprintf(name, sizeof name, "secagg.%s.bytes_sent", stage_name[k]);
			rc = run_event(r, s->clients[i], -1, name, NULL, s->sent[at]);
			snprintf(name, sizeof name, "secagg.%s.bytes_received", stage_name[k]);
			if (rc == 0)
				rc = run_event(r, s->clients[i], -1, name, NULL, s->got[at]);
			snprintf(name, sizeof name, "secagg.%s.seconds", stage_name[k]);
			if (rc == 0)
				rc = run_event(r, s->clients[i], -1, name, NULL, s->secs[at]);
		}
		/* the server sends what the clients receive, and receives what
		 * they send */
		snprintf(name, sizeof name, "secagg.%s.bytes_sent", stage_name[k]);
		if (rc == 0)
			rc = run_event(r, -1, -1, name, NULL, got);
		snprintf(name, sizeof name, "secagg.%s.bytes_received", stage_name[k]);
		if (rc == 0)
			rc = run_event(r, -1, -1, name, NULL, sent);
		snprintf(name, sizeof name, "secagg.%s.seconds", stage_name[k]);
		if (rc == 0)
			rc = run_event(r, -1, -1, name, NULL, s->srv_secs[k]);
		r->bytes_push += (uint64_t)got;
		r->bytes_pull += (uint64_t)sent;
	}
	for (uint32_t i = 0; i < s->m && rc == 0; i++)
		rc = run_event(r, s->clients[i], -1, "secagg.clipped", NULL, (double)s->clipped[i]);
	if (rc == 0)
		rc = run_event(r, -1, -1, "secagg.quant_bound", NULL, secagg_quant_bound(&s->q));
	return rc;
}

int secure_round_finish(struct secure *s, struct run *r, float *mean, const float **tensor,
			struct fedrun_update *update)
{
	const struct fedrun_layout *l = s->layout;
	double t = cpu_now();
	int rc = secagg_server_close(s->srv);
	s->srv_secs[SECAGG_MASKED - 1] += cpu_now() - t;
	if (rc == 0)
		rc = run_stage(s, SECAGG_UNMASK);
	uint64_t *sum = rc == 0 ? malloc(s->p.dim * sizeof *sum) : NULL;
	if (rc == 0 && !sum)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory for the sum of a round");
	t = cpu_now();
	if (rc == 0)
		rc = secagg_server_sum(s->srv, sum);
	/* Per tensor: Σ w_k q(Δ_k) / (scale Σ w_k) over the senders. */
	uint64_t most = 0;
	for (uint32_t k = 0; k < l->n && rc == 0; k++) {
		const uint64_t wk = sum[l->total + k], off = l->t[k].offset;
		most = wk > most ? wk : most;
		tensor[k] = wk ? mean + off : NULL;
		for (uint64_t j = 0; wk && j < l->t[k].numel; j++)
			mean[off + j] =
			    (float)(secagg_quant_decode(&s->q, sum[off + j]) / (double)wk);
	}
	s->srv_secs[SECAGG_UNMASK - 1] += cpu_now() - t;
	free(sum);
	if (rc < 0)
		return fedrun_error_wrap(rc, "round %u: secure aggregation: ", s->p.round);
	*update =
	    (struct fedrun_update){.client = SECURE_CLIENT, .n_samples = most, .tensor = tensor};
	return round_metrics(s, r);
}

#else /* built without libsodium or GMP: the section is refused */

int secure_create(struct run *r, uint32_t nranks, struct secure **out)
{
	*out = NULL;
	json_t *sec = json_object_get(r->pipeline, "secagg");
	if (!json_is_object(sec))
		return 0;
	struct secure_cfg cfg;
	bool uniform;
	int rc = read_cfg(r, nranks, sec, &cfg, &uniform);
	return rc < 0 ? rc
		      : fedrun_error(
			    FEDRUN_EUNSUPPORTED,
			    "secagg: this fedrun was built without secure aggregation: install "
			    "libsodium-dev and libgmp-dev and run configure again");
}

void secure_destroy(struct secure *s)
{
	(void)s;
}

void secure_round_end(struct secure *s)
{
	(void)s;
}

static int absent(void)
{
	return fedrun_error(FEDRUN_EUNSUPPORTED, "secagg: built without secure aggregation");
}

int secure_round_begin(struct secure *s, struct run *r, uint32_t round, const uint32_t *clients,
		       uint32_t m)
{
	return absent();
}

int secure_client_input(struct secure *s, uint32_t i, const uint8_t *mask, const float *delta,
			uint64_t n_samples, void **msg, size_t *len)
{
	return absent();
}

int secure_server_add(struct secure *s, uint32_t i, const void *msg, size_t len)
{
	return absent();
}

int secure_round_finish(struct secure *s, struct run *r, float *mean, const float **tensor,
			struct fedrun_update *update)
{
	return absent();
}

#endif
