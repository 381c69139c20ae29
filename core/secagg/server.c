/* SPDX-License-Identifier: Apache-2.0 */
/* The server's side of a secure-aggregation round (secagg.h): it routes
 * keys and encrypted shares, adds the masked inputs as they come, and
 * removes the masks from the sum with the secrets it reconstructs
 * (Bonawitz et al. 2017, Fig. 4, the server's part of rounds 0-2 and 4;
 * Bell et al. 2020, Alg. 2, over a sparse graph). U1 .. U4 are the
 * clients that survived each stage, as in the paper. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "fedrun/error.h"
#include "internal.h"

enum { IN_U1 = 1, IN_U2 = 2, IN_U3 = 4, IN_U4 = 8 };
#define FAILED (SECAGG_DONE + 1)

struct inbox { /* the ciphertexts addressed to one client */
	uint32_t n, cap;
	uint32_t *from;
	uint8_t (*ct)[SECAGG_CT_BYTES];
};

struct shareset { /* the shares of one client's secret that came back */
	uint32_t n;
	uint32_t *x;
	uint8_t (*s)[SECAGG_SHARE_BYTES];
};

struct secagg_server {
	struct secagg_params p;
	struct secagg_graph g;
	struct secagg_shamir sh;
	uint32_t stage;
	uint8_t *in; /* per client: IN_U* */
	uint8_t (*cpk)[32], (*spk)[32], (*commit)[32];
	struct inbox *inbox;
	struct shareset *shares; /* per owner: b (in U3) or s^SK (in U2 \ U3) */
	uint64_t *acc;		 /* Σ y_u over U3 */
	uint32_t *nbuf;		 /* scratch: a neighbour list */
	uint32_t *seen;		 /* scratch: a stamp per client */
	uint32_t stamp;
};

int secagg_server_create(const struct secagg_params *p, struct secagg_server **out)
{
	*out = NULL;
	int rc = secagg_params_check(p);
	if (rc < 0 || (rc = secagg_sodium_init()) < 0)
		return rc;
	struct secagg_server *s = calloc(1, sizeof *s);
	if (!s)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	s->p = *p;
	s->stage = SECAGG_ADVERTISE;
	secagg_shamir_init(&s->sh);
	if ((rc = secagg_graph_init(&s->g, p)) < 0) {
		secagg_server_destroy(s);
		return rc;
	}
	const size_t n = p->n;
	s->in = calloc(n, 1);
	s->cpk = calloc(n, 32);
	s->spk = calloc(n, 32);
	s->commit = calloc(n, 32);
	s->inbox = calloc(n, sizeof *s->inbox);
	s->shares = calloc(n, sizeof *s->shares);
	s->acc = calloc(p->dim, sizeof *s->acc);
	s->nbuf = calloc(n, sizeof *s->nbuf);
	s->seen = calloc(n, sizeof *s->seen);
	if (!s->in || !s->cpk || !s->spk || !s->commit || !s->inbox || !s->shares || !s->acc ||
	    !s->nbuf || !s->seen) {
		secagg_server_destroy(s);
		return fedrun_error(FEDRUN_ENOMEM,
				    "out of memory for a secure-aggregation round of %u clients",
				    p->n);
	}
	*out = s;
	return 0;
}

void secagg_server_destroy(struct secagg_server *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; s->inbox && i < s->p.n; i++) {
		free(s->inbox[i].from);
		free(s->inbox[i].ct);
	}
	for (uint32_t i = 0; s->shares && i < s->p.n; i++) {
		free(s->shares[i].x);
		if (s->shares[i].s)
			sodium_memzero(s->shares[i].s,
				       (size_t)s->p.num_shares * SECAGG_SHARE_BYTES);
		free(s->shares[i].s);
	}
	secagg_graph_fini(&s->g);
	secagg_shamir_fini(&s->sh);
	free(s->in);
	free(s->cpk);
	free(s->spk);
	free(s->commit);
	free(s->inbox);
	free(s->shares);
	free(s->acc);
	free(s->nbuf);
	free(s->seen);
	free(s);
}

int secagg_server_stage(const struct secagg_server *s)
{
	return (int)s->stage;
}

bool secagg_server_included(const struct secagg_server *s, uint32_t u)
{
	return u < s->p.n && (s->in[u] & IN_U3);
}

static bool linked(const struct secagg_server *s, uint32_t u, uint32_t v)
{
	return secagg_graph_linked(&s->g, u, v);
}

/* The clients of `set` among u's neighbours, into s->nbuf; returns how many. */
static uint32_t neighbours_in(struct secagg_server *s, uint32_t u, uint8_t set, uint8_t not_set)
{
	uint32_t k = secagg_graph_neighbours(&s->g, u, s->nbuf), m = 0;
	for (uint32_t i = 0; i < k; i++)
		if ((s->in[s->nbuf[i]] & set) && !(s->in[s->nbuf[i]] & not_set))
			s->nbuf[m++] = s->nbuf[i];
	return m;
}

static int recv_advertise(struct secagg_server *s, struct secagg_rbuf *r, uint32_t u)
{
	const uint8_t *cpk = secagg_rb_bytes(r, 32), *spk = secagg_rb_bytes(r, 32);
	int rc = secagg_rb_end(r, "advertised keys");
	if (rc < 0)
		return rc;
	/* Refused here rather than by each neighbour later: a key of small
	 * order would make u's shares (or its masks) readable by anyone. */
	if (!secagg_key_ok(cpk) || !secagg_key_ok(spk))
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: client %u advertised a public key of small order: "
				    "refused",
				    u);
	memcpy(s->cpk[u], cpk, 32);
	memcpy(s->spk[u], spk, 32);
	s->in[u] |= IN_U1;
	return 0;
}

static int inbox_add(struct inbox *b, uint32_t from, const uint8_t *ct)
{
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? 2 * b->cap : 8;
		uint32_t *f = realloc(b->from, (size_t)cap * sizeof *f);
		if (!f)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		b->from = f;
		uint8_t(*c)[SECAGG_CT_BYTES] = realloc(b->ct, (size_t)cap * SECAGG_CT_BYTES);
		if (!c)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		b->ct = c;
		b->cap = cap;
	}
	b->from[b->n] = from;
	memcpy(b->ct[b->n++], ct, SECAGG_CT_BYTES);
	return 0;
}

/* u's shares: exactly one ciphertext for each neighbour that advertised
 * keys (checked whole before any is routed). */
static int recv_shares(struct secagg_server *s, struct secagg_rbuf *r, uint32_t u)
{
	const uint8_t *commit = secagg_rb_bytes(r, 32);
	uint32_t count = secagg_rb_u32(r);
	const uint32_t want = neighbours_in(s, u, IN_U1, 0);
	if (r->bad || count != want)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: client %u sent shares for %u clients, it has %u neighbours with "
		    "keys",
		    u, count, want);
	const size_t start = r->pos;
	s->stamp++;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t v = secagg_rb_u32(r);
		secagg_rb_bytes(r, SECAGG_CT_BYTES);
		if (r->bad)
			break;
		if (v >= s->p.n || !linked(s, u, v) || !(s->in[v] & IN_U1) ||
		    s->seen[v] == s->stamp)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: client %u sent shares for client %u, not a neighbour "
			    "with keys (or twice)",
			    u, v);
		s->seen[v] = s->stamp;
	}
	int rc = secagg_rb_end(r, "shares");
	if (rc < 0)
		return rc;
	r->pos = start;
	uint32_t added = 0;
	for (; added < count && rc == 0; added++) {
		uint32_t v = secagg_rb_u32(r);
		rc = inbox_add(&s->inbox[v], u, secagg_rb_bytes(r, SECAGG_CT_BYTES));
	}
	if (rc < 0) {
		/* u is not in U2: take back the ciphertexts already routed
		 * (each the last of its distinct neighbour's inbox), or those
		 * neighbours would mask with u and the sum would be wrong. */
		r->pos = start;
		for (uint32_t i = 0; i + 1 < added; i++) {
			s->inbox[secagg_rb_u32(r)].n--;
			secagg_rb_bytes(r, SECAGG_CT_BYTES);
		}
		return rc;
	}
	memcpy(s->commit[u], commit, 32);
	s->in[u] |= IN_U2;
	return 0;
}

static int recv_masked(struct secagg_server *s, struct secagg_rbuf *r, uint32_t u)
{
	const uint64_t bytes = secagg_input_bytes(&s->p);
	const uint8_t *y = secagg_rb_bytes(r, bytes);
	int rc = secagg_rb_end(r, "masked input");
	if (rc < 0)
		return rc;
	const uint32_t nb = secagg_ring_bytes(s->p.bits);
	uint64_t e[1024];
	for (uint64_t i = 0; i < s->p.dim; i += 1024) {
		const uint64_t m = s->p.dim - i < 1024 ? s->p.dim - i : 1024;
		secagg_ring_unpack(s->p.bits, y + i * nb, m, e);
		for (uint64_t j = 0; j < m; j++)
			s->acc[i + j] += e[j];
	}
	s->in[u] |= IN_U3;
	return 0;
}

/* u's shares of its neighbours' secrets (and of its own b): b of those in
 * U3, s^SK of those in U2 \ U3, one each. */
static int recv_unmask(struct secagg_server *s, struct secagg_rbuf *r, uint32_t u)
{
	uint32_t count = secagg_rb_u32(r);
	if (r->bad || count > s->p.num_shares)
		return fedrun_error(FEDRUN_EINVAL, "secagg: client %u sent %u shares, more than %u",
				    u, count, s->p.num_shares);
	const size_t start = r->pos;
	s->stamp++;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t v = secagg_rb_u32(r), kind = secagg_rb_u32(r);
		secagg_rb_bytes(r, SECAGG_SHARE_BYTES);
		if (r->bad)
			break;
		if (v >= s->p.n || (v != u && !linked(s, u, v)) || !(s->in[v] & IN_U2) ||
		    s->seen[v] == s->stamp)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: client %u sent a share of client %u, which it cannot "
			    "hold (or twice)",
			    u, v);
		const uint32_t want = s->in[v] & IN_U3 ? SECAGG_SHARE_B : SECAGG_SHARE_SK;
		if (kind != want)
			return fedrun_error(FEDRUN_EINVAL,
					    "secagg: client %u sent the wrong kind of share of "
					    "client %u",
					    u, v);
		s->seen[v] = s->stamp;
	}
	int rc = secagg_rb_end(r, "unmasking shares");
	if (rc < 0)
		return rc;
	r->pos = start;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t v = secagg_rb_u32(r);
		secagg_rb_u32(r);
		const uint8_t *sh = secagg_rb_bytes(r, SECAGG_SHARE_BYTES);
		struct shareset *ss = &s->shares[v];
		if (!ss->x) {
			ss->x = malloc((size_t)s->p.num_shares * sizeof *ss->x);
			ss->s = malloc((size_t)s->p.num_shares * SECAGG_SHARE_BYTES);
			if (!ss->x || !ss->s)
				return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		if (ss->n < s->p.num_shares) {
			ss->x[ss->n] = u + 1;
			memcpy(ss->s[ss->n++], sh, SECAGG_SHARE_BYTES);
		}
	}
	s->in[u] |= IN_U4;
	return 0;
}

int secagg_server_receive(struct secagg_server *s, const void *msg, size_t len)
{
	if (s->stage < SECAGG_ADVERTISE || s->stage > SECAGG_UNMASK)
		return fedrun_error(FEDRUN_ESTATE,
				    "secagg: the server takes no more messages this round");
	struct secagg_rbuf r;
	uint32_t u;
	int rc = secagg_rb_header(&r, msg, len, s->stage, s->p.round, &u, "a client's message");
	if (rc < 0)
		return rc;
	static const uint8_t before[] = {0, 0, IN_U1, IN_U2, IN_U3},
			     mine[] = {0, IN_U1, IN_U2, IN_U3, IN_U4};
	if (u >= s->p.n)
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: a message from client %u of a round of %u", u, s->p.n);
	if (before[s->stage] && !(s->in[u] & before[s->stage]))
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: client %u dropped out of the round before; its message is "
		    "refused",
		    u);
	if (s->in[u] & mine[s->stage])
		return fedrun_error(FEDRUN_EINVAL, "secagg: client %u sent its message twice", u);
	switch (s->stage) {
	case SECAGG_ADVERTISE:
		return recv_advertise(s, &r, u);
	case SECAGG_SHARE:
		return recv_shares(s, &r, u);
	case SECAGG_MASKED:
		return recv_masked(s, &r, u);
	default:
		return recv_unmask(s, &r, u);
	}
}

int secagg_server_close(struct secagg_server *s)
{
	static const char *const what[] = {"", "advertise keys", "share keys", "masked input",
					   "unmasking"};
	static const uint8_t mine[] = {0, IN_U1, IN_U2, IN_U3, IN_U4};
	if (s->stage < SECAGG_ADVERTISE || s->stage > SECAGG_UNMASK)
		return fedrun_error(FEDRUN_ESTATE, "secagg: no stage to close");
	uint32_t alive = 0;
	for (uint32_t u = 0; u < s->p.n; u++)
		alive += (s->in[u] & mine[s->stage]) != 0;
	if (alive < s->p.threshold) {
		const uint32_t stage = s->stage;
		s->stage = FAILED;
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: round %u: only %u of %u clients took part in the %s stage, "
		    "fewer than the threshold %u (at most %u may drop out): the round "
		    "fails",
		    s->p.round, alive, s->p.n, what[stage], s->p.threshold,
		    s->p.n - s->p.threshold);
	}
	s->stage++;
	return 0;
}

int secagg_server_message(struct secagg_server *s, uint32_t u, void **msg, size_t *len)
{
	static const uint8_t need[] = {0, 0, IN_U1, IN_U2, IN_U3};
	if (s->stage < SECAGG_SHARE || s->stage > SECAGG_UNMASK)
		return fedrun_error(FEDRUN_ESTATE, "secagg: the server has no message to send now");
	if (u >= s->p.n || !(s->in[u] & need[s->stage]))
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: client %u dropped out; no message for it", u);
	struct secagg_wbuf w = {0};
	secagg_wb_header(&w, s->stage, s->p.round, SECAGG_SERVER);
	if (s->stage == SECAGG_SHARE) {
		uint32_t k = neighbours_in(s, u, IN_U1, 0);
		secagg_wb_u32(&w, k);
		for (uint32_t i = 0; i < k; i++) {
			secagg_wb_u32(&w, s->nbuf[i]);
			secagg_wb_bytes(&w, s->cpk[s->nbuf[i]], 32);
			secagg_wb_bytes(&w, s->spk[s->nbuf[i]], 32);
		}
	} else if (s->stage == SECAGG_MASKED) {
		const struct inbox *b = &s->inbox[u];
		secagg_wb_u32(&w, b->n);
		for (uint32_t i = 0; i < b->n; i++) {
			secagg_wb_u32(&w, b->from[i]);
			secagg_wb_bytes(&w, b->ct[i], SECAGG_CT_BYTES);
		}
	} else { /* survivors (u first), then the dropped */
		uint32_t k = neighbours_in(s, u, IN_U3, 0);
		secagg_wb_u32(&w, k + 1);
		secagg_wb_u32(&w, u);
		for (uint32_t i = 0; i < k; i++)
			secagg_wb_u32(&w, s->nbuf[i]);
		k = neighbours_in(s, u, IN_U2, IN_U3);
		secagg_wb_u32(&w, k);
		for (uint32_t i = 0; i < k; i++)
			secagg_wb_u32(&w, s->nbuf[i]);
	}
	return secagg_wb_finish(&w, msg, len);
}

/* Client v's secret from the shares that came back. */
static int recover(struct secagg_server *s, uint32_t v, const char *what, uint8_t out[32])
{
	const struct shareset *ss = &s->shares[v];
	if (ss->n < s->p.threshold)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: round %u: client %u's %s has %u of the %u shares it needs "
		    "(too many of its neighbours dropped out): the round fails",
		    s->p.round, v, what, ss->n, s->p.threshold);
	int rc = secagg_shamir_combine(&s->sh, s->p.threshold, ss->x,
				       (const uint8_t(*)[SECAGG_SHARE_BYTES])ss->s, ss->n, out);
	return rc < 0 ? fedrun_error_wrap(rc, "round %u, client %u's %s: ", s->p.round, v, what)
		      : 0;
}

/* Bonawitz et al. 2017, Fig. 4, round 4 (server): z = Σ_{u ∈ U3} y_u −
 * Σ_{u ∈ U3} PRG(b_u) + Σ over dropped v and their neighbours u in U3 of
 * the pairwise masks u added for v. Each recovered secret is checked
 * against what its owner published (s^PK, the commitment to b). */
int secagg_server_sum(struct secagg_server *s, uint64_t *out)
{
	if (s->stage != SECAGG_DONE)
		return fedrun_error(FEDRUN_ESTATE,
				    "secagg: the sum before the unmasking stage closed");
	uint8_t secret[32], check[32];
	struct secagg_masks masks = {0}; /* every mask to remove, then one pass */
	int rc = 0;
	for (uint32_t v = 0; v < s->p.n && rc == 0; v++) {
		if (!(s->in[v] & IN_U3))
			continue;
		if ((rc = recover(s, v, "self-mask seed", secret)) < 0)
			break;
		secagg_commit(check, s->p.round, v, secret);
		if (sodium_memcmp(check, s->commit[v], 32) != 0) {
			rc = fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: round %u: client %u's self-mask seed does not match its "
			    "commitment (corrupt shares): the round fails",
			    s->p.round, v);
			break;
		}
		rc = secagg_masks_self(&masks, &s->p, secret, -1);
	}
	for (uint32_t v = 0; v < s->p.n && rc == 0; v++) {
		if (!(s->in[v] & IN_U2) || (s->in[v] & IN_U3))
			continue;
		if ((rc = recover(s, v, "mask key", secret)) < 0)
			break;
		crypto_scalarmult_base(check, secret);
		if (sodium_memcmp(check, s->spk[v], 32) != 0) {
			rc = fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: round %u: client %u's mask key does not match its public "
			    "key (corrupt shares): the round fails",
			    s->p.round, v);
			break;
		}
		uint32_t k = neighbours_in(s, v, IN_U3, 0);
		for (uint32_t i = 0; i < k && rc == 0; i++) {
			uint32_t u = s->nbuf[i];
			rc = secagg_masks_pair(&masks, &s->p, u, v, secret, s->spk[u], s->spk[u],
					       s->spk[v], -1);
		}
	}
	sodium_memzero(secret, sizeof secret);
	if (rc == 0)
		secagg_masks_apply(&masks, s->acc, s->p.dim, s->p.bits);
	secagg_masks_fini(&masks);
	if (rc < 0) {
		s->stage = FAILED;
		return rc;
	}
	const uint64_t mask = secagg_ring_mask(s->p.bits);
	for (uint64_t i = 0; i < s->p.dim; i++)
		out[i] = s->acc[i] & mask;
	s->stage = FAILED; /* the sum once: the masks are gone from acc */
	return 0;
}
