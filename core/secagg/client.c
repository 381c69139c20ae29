/* SPDX-License-Identifier: Apache-2.0 */
/* One client's side of a secure-aggregation round (secagg.h): Bonawitz et
 * al. 2017, Fig. 4 (rounds 0, 1, 2 and 4 of the semi-honest protocol:
 * AdvertiseKeys, ShareKeys, MaskedInputCollection, Unmasking), over the
 * neighbours of SecAgg+ (Bell et al. 2020, Alg. 2) when the graph is
 * sparse. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "fedrun/error.h"
#include "internal.h"

enum { NB_KEYS = 1, NB_CT = 2 }; /* it advertised keys; its shares came (U2) */
#define FAILED (SECAGG_DONE + 1)

struct nb {
	uint32_t id;
	uint8_t state;
	uint8_t mark; /* unmasking: 1 survivor, 2 dropped */
	uint8_t cpk[32], spk[32];
	uint8_t ct[SECAGG_CT_BYTES]; /* its shares for us, as they came */
};

struct secagg_client {
	struct secagg_params p;
	uint32_t id;
	uint32_t stage; /* the call it accepts next */
	struct secagg_shamir sh;
	struct secagg_rand rnd;
	uint8_t c_sk[32], c_pk[32], s_sk[32], s_pk[32], b[32];
	uint8_t own_b[SECAGG_SHARE_BYTES]; /* our own share of b (kept, never sent
					      encrypted) */
	uint32_t nnb;
	struct nb *nb; /* ascending id */
};

static int create(const struct secagg_params *p, uint32_t id, const uint64_t *test_seed,
		  struct secagg_client **out)
{
	*out = NULL;
	int rc = secagg_params_check(p);
	if (rc < 0)
		return rc;
	if (id >= p->n)
		return fedrun_error(FEDRUN_EINVAL, "secagg: client %u of a round of %u", id, p->n);
	if ((rc = secagg_sodium_init()) < 0)
		return rc;
	struct secagg_client *c = calloc(1, sizeof *c);
	if (!c)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	c->p = *p;
	c->id = id;
	c->stage = SECAGG_ADVERTISE;
	secagg_shamir_init(&c->sh);
	if (test_seed)
		secagg_rand_init_insecure_test(&c->rnd, *test_seed, id);
	else if ((rc = secagg_rand_init(&c->rnd)) < 0)
		goto fail;
	struct secagg_graph g;
	if ((rc = secagg_graph_init(&g, p)) < 0)
		goto fail;
	uint32_t *ids = malloc((size_t)secagg_graph_degree(&g) * sizeof *ids);
	c->nb = calloc(secagg_graph_degree(&g), sizeof *c->nb);
	if (!ids || !c->nb) {
		free(ids);
		secagg_graph_fini(&g);
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	c->nnb = secagg_graph_neighbours(&g, id, ids);
	for (uint32_t j = 0; j < c->nnb; j++)
		c->nb[j].id = ids[j];
	free(ids);
	secagg_graph_fini(&g);
	*out = c;
	return 0;
fail:
	secagg_client_destroy(c);
	return rc;
}

int secagg_client_create(const struct secagg_params *p, uint32_t id, struct secagg_client **out)
{
	return create(p, id, NULL, out);
}

int secagg_client_create_insecure_test(const struct secagg_params *p, uint32_t id, uint64_t seed,
				       struct secagg_client **out)
{
	return create(p, id, &seed, out);
}

void secagg_client_destroy(struct secagg_client *c)
{
	if (!c)
		return;
	if (c->nb) {
		sodium_memzero(c->nb, (size_t)c->nnb * sizeof *c->nb);
		free(c->nb);
	}
	secagg_shamir_fini(&c->sh);
	secagg_rand_fini(&c->rnd);
	sodium_memzero(c, sizeof *c); /* the keys */
	free(c);
}

static struct nb *find_nb(struct secagg_client *c, uint32_t id)
{
	uint32_t lo = 0, hi = c->nnb;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->nb[mid].id == id)
			return &c->nb[mid];
		if (c->nb[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Whether the call may run now; a refused call (or any failure after)
 * ends the client's round. */
static int expect(struct secagg_client *c, uint32_t stage, const char *what)
{
	if (c->stage == stage)
		return 0;
	c->stage = FAILED;
	return fedrun_error(FEDRUN_ESTATE, "secagg: client %u: %s out of order: refused", c->id,
			    what);
}

static int fail(struct secagg_client *c, int rc)
{
	c->stage = FAILED;
	return rc;
}

/* Round 0 (AdvertiseKeys): c_u^PK for the shares' encryption and s_u^PK
 * for the pairwise masks, fresh each round. */
int secagg_client_advertise(struct secagg_client *c, void **msg, size_t *len)
{
	int rc = expect(c, SECAGG_ADVERTISE, "advertise");
	if (rc < 0)
		return rc;
	secagg_rand_bytes(&c->rnd, c->c_sk, 32);
	secagg_rand_bytes(&c->rnd, c->s_sk, 32);
	crypto_scalarmult_base(c->c_pk, c->c_sk);
	crypto_scalarmult_base(c->s_pk, c->s_sk);
	struct secagg_wbuf w = {0};
	secagg_wb_header(&w, SECAGG_ADVERTISE, c->p.round, c->id);
	secagg_wb_bytes(&w, c->c_pk, 32);
	secagg_wb_bytes(&w, c->s_pk, 32);
	if ((rc = secagg_wb_finish(&w, msg, len)) < 0)
		return fail(c, rc);
	c->stage = SECAGG_SHARE;
	return 0;
}

/* The associated data of the shares u sends v: round, u, v. */
static void share_ad(uint8_t ad[12], uint32_t round, uint32_t from, uint32_t to)
{
	const uint32_t v[3] = {round, from, to};
	for (int i = 0; i < 3; i++)
		for (int b = 0; b < 4; b++)
			ad[4 * i + b] = (uint8_t)(v[i] >> (8 * b));
}

/* The key of the shares between us and neighbour v: BLAKE2b of their
 * X25519 agreement on the c keys (Bonawitz et al. 2017, Fig. 4, round 1:
 * AE.enc(KA.agree(c_u^SK, c_v^PK), ...)). */
static int share_key(struct secagg_client *c, const struct nb *v, uint8_t key[32])
{
	uint8_t shared[32];
	int rc = secagg_agree(shared, c->c_sk, v->cpk);
	if (rc < 0)
		return fedrun_error_wrap(rc, "client %u's encryption key: ", v->id);
	secagg_kdf(key, "fedrun-secagg-share-key", c->p.round, shared, c->c_pk, v->cpk);
	sodium_memzero(shared, sizeof shared);
	return 0;
}

/* What a server message says of one neighbour: its keys (refused where
 * one is of small order: the server should have, and may not be honest),
 * or its shares for us. */
static int take_keys(struct secagg_client *c, struct nb *v, const uint8_t *e)
{
	if (!secagg_key_ok(e) || !secagg_key_ok(e + 32))
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: client %u: client %u's keys: a public key of small "
				    "order: refused",
				    c->id, v->id);
	memcpy(v->cpk, e, 32);
	memcpy(v->spk, e + 32, 32);
	return 0;
}

static int take_ct(struct secagg_client *c, struct nb *v, const uint8_t *e)
{
	(void)c;
	memcpy(v->ct, e, SECAGG_CT_BYTES);
	return 0;
}

/* The header of a message from the server: stage, round and sender checked
 * (a message that another client wrote, relayed as the server's, is
 * refused). */
static int server_header(struct secagg_client *c, struct secagg_rbuf *r, const void *msg,
			 size_t len, uint32_t stage, const char *what)
{
	uint32_t sender;
	int rc = secagg_rb_header(r, msg, len, stage, c->p.round, &sender, what);
	if (rc < 0)
		return rc;
	if (sender != SECAGG_SERVER)
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: client %u: %s: sent by client %u, not the server: "
				    "refused",
				    c->id, what, sender);
	return 0;
}

/* Reads a server message of `stage` that lists neighbours: a count, then
 * (id, `entry` bytes) each, from neighbours in state `need`, each once;
 * marks them `set` and hands each entry to take. */
static int parse_list(struct secagg_client *c, const void *msg, size_t len, uint32_t stage,
		      const char *what, size_t entry, uint8_t need, uint8_t set, uint32_t *count,
		      int (*take)(struct secagg_client *, struct nb *, const uint8_t *))
{
	struct secagg_rbuf r;
	int rc = server_header(c, &r, msg, len, stage, what);
	if (rc < 0)
		return rc;
	*count = secagg_rb_u32(&r);
	if (*count > c->nnb)
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: client %u: %s: %u clients, it has %u neighbours",
				    c->id, what, *count, c->nnb);
	for (uint32_t i = 0; i < *count && !r.bad; i++) {
		uint32_t id = secagg_rb_u32(&r);
		const uint8_t *e = secagg_rb_bytes(&r, entry);
		if (r.bad)
			break;
		struct nb *v = find_nb(c, id);
		if (!v || (v->state & need) != need)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: client %u: %s: client %u is not a neighbour that may "
			    "send them",
			    c->id, what, id);
		if (v->state & set)
			return fedrun_error(FEDRUN_EINVAL, "secagg: client %u: %s: client %u twice",
					    c->id, what, id);
		if ((rc = take(c, v, e)) < 0)
			return rc;
		v->state |= set;
	}
	return secagg_rb_end(&r, what);
}

/* Round 1 (ShareKeys): t-of-(neighbours + 1) shares of s_u^SK and of a
 * fresh self-mask seed b_u, one ciphertext to each neighbour that
 * advertised keys; our own share of b kept. */
int secagg_client_share(struct secagg_client *c, const void *keys, size_t keys_len, void **msg,
			size_t *len)
{
	int rc = expect(c, SECAGG_SHARE, "share");
	if (rc < 0)
		return rc;
	uint32_t count = 0;
	if ((rc = parse_list(c, keys, keys_len, SECAGG_SHARE, "the neighbours' keys", 64, 0,
			     NB_KEYS, &count, take_keys)) < 0)
		return fail(c, rc);
	if (count + 1 < c->p.threshold)
		return fail(
		    c,
		    fedrun_error(FEDRUN_EINVAL,
				 "secagg: client %u: only %u of its %u neighbours advertised keys, "
				 "too few for the threshold %u",
				 c->id, count, c->nnb, c->p.threshold));
	const uint32_t h = count + 1; /* holders: us first, then the neighbours */
	uint32_t *xs = malloc((size_t)h * sizeof *xs);
	uint8_t(*sk_sh)[SECAGG_SHARE_BYTES] = malloc((size_t)h * SECAGG_SHARE_BYTES);
	uint8_t(*b_sh)[SECAGG_SHARE_BYTES] = malloc((size_t)h * SECAGG_SHARE_BYTES);
	struct nb **holder = malloc((size_t)h * sizeof *holder);
	struct secagg_wbuf w = {0};
	if (!xs || !sk_sh || !b_sh || !holder) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	xs[0] = c->id + 1;
	for (uint32_t j = 0, k = 1; j < c->nnb; j++)
		if (c->nb[j].state & NB_KEYS) {
			holder[k] = &c->nb[j];
			xs[k++] = c->nb[j].id + 1;
		}
	secagg_rand_bytes(&c->rnd, c->b, 32);
	if ((rc = secagg_shamir_split(&c->sh, c->s_sk, c->p.threshold, xs, h, &c->rnd, sk_sh)) <
		0 ||
	    (rc = secagg_shamir_split(&c->sh, c->b, c->p.threshold, xs, h, &c->rnd, b_sh)) < 0)
		goto out;
	memcpy(c->own_b, b_sh[0], SECAGG_SHARE_BYTES);
	uint8_t commit[32];
	secagg_commit(commit, c->p.round, c->id, c->b);
	secagg_wb_header(&w, SECAGG_SHARE, c->p.round, c->id);
	secagg_wb_bytes(&w, commit, 32);
	secagg_wb_u32(&w, count);
	for (uint32_t k = 1; k < h; k++) {
		const struct nb *v = holder[k];
		uint8_t key[32], pt[SECAGG_PT_BYTES], ad[12];
		if ((rc = share_key(c, v, key)) < 0)
			goto out;
		share_ad(ad, c->p.round, c->id, v->id);
		memcpy(pt, ad + 4, 8); /* from, to */
		memcpy(pt + 8, sk_sh[k], SECAGG_SHARE_BYTES);
		memcpy(pt + 8 + SECAGG_SHARE_BYTES, b_sh[k], SECAGG_SHARE_BYTES);
		secagg_wb_u32(&w, v->id);
		uint8_t *ct = secagg_wb_reserve(&w, SECAGG_CT_BYTES);
		if (ct) {
			secagg_rand_bytes(&c->rnd, ct, 24);
			crypto_aead_xchacha20poly1305_ietf_encrypt(ct + 24, NULL, pt, sizeof pt, ad,
								   sizeof ad, NULL, ct, key);
		}
		sodium_memzero(pt, sizeof pt);
		sodium_memzero(key, sizeof key);
	}
	rc = secagg_wb_finish(&w, msg, len);
out:
	free(w.p);
	if (sk_sh)
		sodium_memzero(sk_sh, (size_t)h * SECAGG_SHARE_BYTES);
	if (b_sh)
		sodium_memzero(b_sh, (size_t)h * SECAGG_SHARE_BYTES);
	free(xs);
	free(sk_sh);
	free(b_sh);
	free(holder);
	if (rc < 0)
		return fail(c, rc);
	c->stage = SECAGG_MASKED;
	return 0;
}

/* Round 2 (MaskedInputCollection): y_u = x_u + PRG(b_u) + Σ_{v ∈ U2, u < v}
 * PRG(s_{u,v}) − Σ_{v ∈ U2, u > v} PRG(s_{v,u}) (mod 2^k), over the
 * neighbours whose shares came (Bonawitz et al. 2017, sec. 3 and Fig. 4,
 * round 2; Bell et al. 2020, Alg. 2). */
int secagg_client_mask(struct secagg_client *c, const void *cts, size_t cts_len, uint64_t *x,
		       void **msg, size_t *len)
{
	int rc = expect(c, SECAGG_MASKED, "masked input");
	if (rc < 0)
		return rc;
	uint32_t count = 0;
	if ((rc = parse_list(c, cts, cts_len, SECAGG_MASKED, "the shares addressed to it",
			     SECAGG_CT_BYTES, NB_KEYS, NB_CT, &count, take_ct)) < 0)
		return fail(c, rc);
	if (count + 1 < c->p.threshold)
		return fail(c,
			    fedrun_error(
				FEDRUN_EINVAL,
				"secagg: client %u: shares from only %u of its neighbours, too few "
				"for the threshold %u",
				c->id, count, c->p.threshold));
	struct secagg_masks masks = {0};
	rc = secagg_masks_self(&masks, &c->p, c->b, 1);
	for (uint32_t j = 0; j < c->nnb && rc == 0; j++) {
		const struct nb *v = &c->nb[j];
		if (v->state & NB_CT)
			rc = secagg_masks_pair(&masks, &c->p, c->id, v->id, c->s_sk, v->spk,
					       c->s_pk, v->spk, 1);
	}
	if (rc == 0) /* in place */
		secagg_masks_apply(&masks, x, c->p.dim, c->p.bits);
	secagg_masks_fini(&masks);
	struct secagg_wbuf w = {0};
	if (rc == 0) {
		secagg_wb_header(&w, SECAGG_MASKED, c->p.round, c->id);
		uint8_t *at = secagg_wb_reserve(&w, secagg_input_bytes(&c->p));
		if (at)
			secagg_ring_pack(c->p.bits, x, c->p.dim, at);
		rc = secagg_wb_finish(&w, msg, len);
	}
	if (rc < 0)
		return fail(c, rc);
	c->stage = SECAGG_UNMASK;
	return 0;
}

/* Marks the ids of one list of the request (1 survivors, 2 dropped). */
static int mark_list(struct secagg_client *c, struct secagg_rbuf *r, uint8_t mark, bool *self)
{
	uint32_t n = secagg_rb_u32(r);
	if (n > c->nnb + 1)
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: client %u: an unmasking request of %u clients", c->id,
				    n);
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		uint32_t id = secagg_rb_u32(r);
		if (r->bad)
			break;
		if (id == c->id) {
			if (mark != 1 || *self)
				return fedrun_error(
				    FEDRUN_EINVAL,
				    "secagg: client %u: the unmasking request names it %s: refused",
				    c->id, mark == 1 ? "twice" : "as dropped");
			*self = true;
			continue;
		}
		struct nb *v = find_nb(c, id);
		if (!v || !(v->state & NB_CT))
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: client %u: the unmasking request names client %u, whose "
			    "shares it does not hold: refused",
			    c->id, id);
		if (v->mark && v->mark != mark)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: client %u: the server asks for both the self-mask share "
			    "and the mask-key share of client %u: refused, nothing revealed",
			    c->id, id);
		if (v->mark)
			return fedrun_error(FEDRUN_EINVAL,
					    "secagg: client %u: the unmasking request names "
					    "client %u twice: refused",
					    c->id, id);
		v->mark = mark;
	}
	return 0;
}

static int open_shares(struct secagg_client *c, const struct nb *v, uint8_t pt[SECAGG_PT_BYTES])
{
	uint8_t key[32], ad[12];
	int rc = share_key(c, v, key);
	if (rc < 0)
		return rc;
	share_ad(ad, c->p.round, v->id, c->id);
	unsigned long long n = 0;
	rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
	    pt, &n, NULL, v->ct + 24, SECAGG_CT_BYTES - 24, ad, sizeof ad, v->ct, key);
	sodium_memzero(key, sizeof key);
	if (rc != 0 || n != SECAGG_PT_BYTES || memcmp(pt, ad + 4, 8) != 0)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: client %u: the shares from client %u do not authenticate: "
		    "refused",
		    c->id, v->id);
	return 0;
}

/* Round 4 (Unmasking): a b share of each surviving neighbour (and our own),
 * an s^SK share of each dropped one; never both of one client, and one
 * answer a round (Bonawitz et al. 2017, Fig. 4, round 4). */
int secagg_client_unmask(struct secagg_client *c, const void *req, size_t req_len, void **msg,
			 size_t *len)
{
	int rc = expect(c, SECAGG_UNMASK, "unmask");
	if (rc < 0)
		return rc;
	c->stage = FAILED; /* one request a round, whatever comes of it */
	struct secagg_rbuf r;
	bool self = false;
	if ((rc = server_header(c, &r, req, req_len, SECAGG_UNMASK, "the unmasking request")) <
		0 ||
	    (rc = mark_list(c, &r, 1, &self)) < 0 || (rc = mark_list(c, &r, 2, &self)) < 0 ||
	    (rc = secagg_rb_end(&r, "the unmasking request")) < 0)
		return rc;
	if (!self)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: client %u: the unmasking request leaves it out: refused", c->id);
	uint32_t alive = 1, answers = 1;
	for (uint32_t j = 0; j < c->nnb; j++) {
		alive += c->nb[j].mark == 1;
		answers += c->nb[j].mark != 0;
	}
	if (alive < c->p.threshold)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: client %u: only %u of its neighbourhood survived, fewer than "
		    "the threshold %u: refused",
		    c->id, alive, c->p.threshold);
	struct secagg_wbuf w = {0};
	secagg_wb_header(&w, SECAGG_UNMASK, c->p.round, c->id);
	secagg_wb_u32(&w, answers);
	secagg_wb_u32(&w, c->id);
	secagg_wb_u32(&w, SECAGG_SHARE_B);
	secagg_wb_bytes(&w, c->own_b, SECAGG_SHARE_BYTES);
	uint8_t pt[SECAGG_PT_BYTES];
	for (uint32_t j = 0; j < c->nnb && rc == 0; j++) {
		const struct nb *v = &c->nb[j];
		if (!v->mark)
			continue;
		if ((rc = open_shares(c, v, pt)) < 0)
			break;
		secagg_wb_u32(&w, v->id);
		secagg_wb_u32(&w, v->mark == 1 ? SECAGG_SHARE_B : SECAGG_SHARE_SK);
		secagg_wb_bytes(&w, pt + 8 + (v->mark == 1 ? SECAGG_SHARE_BYTES : 0),
				SECAGG_SHARE_BYTES);
	}
	sodium_memzero(pt, sizeof pt);
	if (rc == 0)
		return secagg_wb_finish(&w, msg, len);
	if (w.p)
		sodium_memzero(w.p, w.len);
	free(w.p);
	return rc;
}
