/* SPDX-License-Identifier: Apache-2.0 */
/* The federated vocabulary (fedrun/fedvocab.h): FedNMT's protocol (Wang et
 * al. 2021, sec. 2.3) run in one process, one group of functions per role
 * (party_*, server_*, holder_*), each given only what that role would
 * receive over the wire: public key and ciphertexts as bytes, ranks. */
#include "config.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/csprng.h"
#include "fedrun/error.h"
#include "fedrun/fedvocab.h"
#ifdef HAVE_GMP
#include "privacy/fedvocab_internal.h"
#include "privacy/paillier.h"
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#define WHAT "federated vocabulary"

void fedrun_fedvocab_opts_init(struct fedrun_fedvocab_opts *opts)
{
	memset(opts, 0, sizeof *opts);
	opts->size = sizeof *opts;
	opts->key_bits = 2048;
	opts->key_holder = 0;
	opts->min_count = 1;
	opts->threads = 0;
}

void fedrun_fedvocab_transcript_fini(struct fedrun_fedvocab_transcript *tr)
{
	if (!tr)
		return;
	free(tr->pubkey);
	free(tr->party_ct);
	free(tr->masked_ct);
	free(tr->ranks);
	memset(tr, 0, sizeof *tr);
}

void fedrun_fedvocab_words_free(char **words, uint64_t n)
{
	if (!words)
		return;
	for (uint64_t i = 0; i < n; i++)
		free(words[i]);
	free(words);
}

#ifndef HAVE_GMP

int fedrun_fedvocab_order(const struct fedrun_fedvocab_party *parties, uint32_t n_parties,
			  const struct fedrun_fedvocab_opts *opts, char ***words_out,
			  uint64_t *n_out, struct fedrun_fedvocab_transcript *tr)
{
	(void)parties, (void)n_parties, (void)opts, (void)words_out, (void)n_out, (void)tr;
	return fedrun_error(FEDRUN_EUNSUPPORTED,
			    WHAT ": fedrun was built without GMP (configure --with-gmp)");
}

#else

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct fedrun_fedvocab_entry *const *x = a, *const *y = b;
	return strcmp((*x)->word, (*y)->word);
}

static void *alloc_array(uint64_t n, size_t size)
{
	if (n > SIZE_MAX / size)
		return NULL;
	return malloc(n ? (size_t)n * size : 1);
}

/* ---- parallel loops ---------------------------------------------------- */

/* The first error of a parallel loop. fedrun's error messages are per
 * thread, so a worker's message is copied here and raised again on the
 * calling thread by par_err_raise. */
struct par_err {
	int rc;
	char msg[1024];
};

static void par_err_set(struct par_err *e, int rc)
{
#pragma omp critical(fedvocab_par_err)
	{
		if (e->rc == 0) {
			e->rc = rc;
			snprintf(e->msg, sizeof e->msg, "%s", fedrun_error_message());
		}
	}
}

/* Whether an iteration may start (no error yet); reads are atomic. */
static bool par_err_none(const struct par_err *e)
{
	int rc;
#pragma omp atomic read
	rc = e->rc;
	return rc == 0;
}

static int par_err_raise(const struct par_err *e)
{
	return e->rc ? fedrun_error(e->rc, "%s", e->msg) : 0;
}

/* Whether the caller asked the run to stop (opts.interrupted), recorded as
 * the loop's error: the iterations left are skipped. */
static bool par_stop(struct par_err *e, const struct paillier_stop *stop)
{
	if (!paillier_stopped(stop))
		return false;
	par_err_set(e, fedrun_error(FEDRUN_EINTERRUPTED, WHAT ": interrupted"));
	return true;
}

/* The thread count of a run: opts.threads, or OpenMP's default for 0; at
 * most FEDVOCAB_MAX_THREADS (each thread holds its own GMP temporaries, and
 * libgomp fails on absurd team sizes). */
#define FEDVOCAB_MAX_THREADS 1024
static int run_threads(uint32_t threads)
{
#ifdef _OPENMP
	if (threads > FEDVOCAB_MAX_THREADS)
		threads = FEDVOCAB_MAX_THREADS;
	return threads ? (int)threads : omp_get_max_threads();
#else
	(void)threads;
	return 1;
#endif
}

/* ---- party ------------------------------------------------------------- */

/* Party p's entries sorted by word, checked: no NULL word, no count of 0,
 * no word twice. *out: a new array of borrowed pointers. */
static int party_sorted(const struct fedrun_fedvocab_party *pt, uint32_t p,
			const struct fedrun_fedvocab_entry ***out)
{
	if (pt->n && !pt->entries)
		return fedrun_error(FEDRUN_EINVAL, WHAT ": party %u: %llu entries but no array", p,
				    (unsigned long long)pt->n);
	const struct fedrun_fedvocab_entry **s = alloc_array(pt->n, sizeof *s);
	if (!s)
		return fedrun_error(FEDRUN_ENOMEM, WHAT ": party %u: out of memory", p);
	for (uint64_t i = 0; i < pt->n; i++) {
		const struct fedrun_fedvocab_entry *e = &pt->entries[i];
		if (!e->word || e->count == 0) {
			free(s);
			return fedrun_error(FEDRUN_EINVAL,
					    WHAT ": party %u, entry %llu: %s (every entry is a "
						 "word seen at least once)",
					    p, (unsigned long long)i,
					    e->word ? "a count of 0" : "no word");
		}
		s[i] = e;
	}
	qsort(s, (size_t)pt->n, sizeof *s, cmp_entry);
	for (uint64_t i = 1; i < pt->n; i++)
		if (strcmp(s[i - 1]->word, s[i]->word) == 0) {
			int rc =
			    fedrun_error(FEDRUN_EINVAL, WHAT ": party %u lists the word '%s' twice",
					 p, s[i]->word);
			free(s);
			return rc;
		}
	*out = s;
	return 0;
}

/* Party p's message to the server: E(count of w) for every word w of the
 * union (E(0) where it never saw w), nu ciphertexts into out; the words in
 * parallel on nt threads, each with its own temporaries and randomness. */
static int party_encrypt(const struct paillier_enc *enc,
			 const struct fedrun_fedvocab_entry *const *s, uint64_t ns,
			 const char *const *uni, uint64_t nu, int nt,
			 const struct paillier_stop *stop, uint8_t *out)
{
	size_t len = paillier_ct_bytes(enc->pub);
	uint64_t *counts = alloc_array(nu, sizeof *counts);
	if (!counts)
		return fedrun_error(FEDRUN_ENOMEM, WHAT ": party: out of memory");
	for (uint64_t w = 0, j = 0; w < nu; w++) {
		counts[w] = 0;
		if (j < ns && strcmp(s[j]->word, uni[w]) == 0)
			counts[w] = s[j++]->count;
	}
	struct par_err err = {0};
	(void)nt;
#pragma omp parallel num_threads(nt)
	{
		mpz_t m, c;
		mpz_inits(m, c, NULL);
#pragma omp for schedule(dynamic, 64)
		for (int64_t w = 0; w < (int64_t)nu; w++) {
			if (!par_err_none(&err) || par_stop(&err, stop))
				continue;
			mpz_import(m, 1, 1, sizeof counts[w], 0, 0, &counts[w]);
			int rc = paillier_encrypt(enc, m, c);
			if (rc == 0)
				paillier_ct_export(enc->pub, c, out + (uint64_t)w * len);
			else
				par_err_set(&err, rc);
		}
		paillier_mpz_wipe(m);
		mpz_clear(c);
	}
	memset(counts, 0, (size_t)nu * sizeof *counts);
	free(counts);
	return par_err_raise(&err);
}

/* ---- key holder -------------------------------------------------------- */

struct holder_val {
	mpz_t v;
	uint64_t i;
};

static int cmp_val_desc(const void *a, const void *b)
{
	const struct holder_val *x = a, *y = b;
	int c = mpz_cmp(y->v, x->v);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Whether the key holder may order the masked values by their residues mod
 * p: they are a T + b for one a < 2^64 and one b (server_mask), totals
 * T < 2^96, so two of them differ by less than 2^160 in absolute value;
 * with p > 2^162 their differences mod p, taken in (-p/2, p/2), are the
 * exact differences. Half of a CRT decryption per value; test keys whose p
 * is smaller decrypt fully. */
static bool holder_mod_p(const struct paillier_priv *priv)
{
	return mpz_sizeinbase(priv->p, 2) > 163;
}

/* The values mod p, made exact differences from value 0: v - v_0 mod p in
 * (-p/2, p/2) (see holder_mod_p). */
static void holder_center(const struct paillier_priv *priv, struct holder_val *val, uint64_t n)
{
	if (n == 0)
		return;
	mpz_t v0, half;
	mpz_init_set(v0, val[0].v);
	mpz_init(half);
	mpz_fdiv_q_2exp(half, priv->p, 1);
	for (uint64_t k = 0; k < n; k++) {
		mpz_sub(val[k].v, val[k].v, v0);
		mpz_mod(val[k].v, val[k].v, priv->p);
		if (mpz_cmp(val[k].v, half) > 0)
			mpz_sub(val[k].v, val[k].v, priv->p);
	}
	paillier_mpz_wipe(v0);
	mpz_clear(half);
}

/* Decrypts the n masked ciphertexts (in parallel on nt threads) and
 * answers only their dense ranks (0: the largest value; equal values, equal
 * ranks). */
static int holder_rank(const struct paillier_pub *pub, const struct paillier_priv *priv,
		       const uint8_t *ct, uint64_t n, int nt, const struct paillier_stop *stop,
		       uint64_t *ranks)
{
	const bool mod_p = holder_mod_p(priv);
	size_t len = paillier_ct_bytes(pub);
	struct holder_val *val = alloc_array(n, sizeof *val);
	if (!val)
		return fedrun_error(FEDRUN_ENOMEM, WHAT ": key holder: out of memory");
	for (uint64_t k = 0; k < n; k++) {
		mpz_init(val[k].v);
		val[k].i = k;
	}
	struct par_err err = {0};
	(void)nt;
#pragma omp parallel num_threads(nt)
	{
		mpz_t c;
		mpz_init(c);
#pragma omp for schedule(dynamic, 64)
		for (int64_t k = 0; k < (int64_t)n; k++) {
			if (!par_err_none(&err) || par_stop(&err, stop))
				continue;
			int rc =
			    paillier_ct_import(pub, ct + (uint64_t)k * len, WHAT ": key holder", c);
			if (rc == 0 && mod_p)
				paillier_decrypt_mod_p(priv, c, val[k].v);
			else if (rc == 0)
				paillier_decrypt(pub, priv, c, val[k].v);
			else
				par_err_set(&err, rc);
		}
		mpz_clear(c);
	}
	int rc = par_err_raise(&err);
	uint64_t k = n;
	if (rc == 0 && mod_p)
		holder_center(priv, val, n);
	if (rc == 0) {
		qsort(val, (size_t)n, sizeof *val, cmp_val_desc);
		uint64_t r = 0;
		for (uint64_t i = 0; i < n; i++) {
			if (i > 0 && mpz_cmp(val[i].v, val[i - 1].v) != 0)
				r++;
			ranks[val[i].i] = r;
		}
	}
	for (uint64_t i = 0; i < k; i++)
		paillier_mpz_wipe(val[i].v);
	free(val);
	return rc;
}

/* ---- server ------------------------------------------------------------ */

/* The server's secrets: the affine mask x -> a x + b applied to every total
 * (a in [1, 2^64), b uniform below n - 2^161, so a x + b < n for any total
 * x < 2^96 and the order of the totals is kept exactly), and the
 * permutation: union word w travels at position perm[w]. */
struct server {
	const struct paillier_pub *pub;
	const struct paillier_enc *enc; /* pub's table */
	int nt;				/* threads */
	const struct paillier_stop *stop;
	mpz_t *acc;			/* nu running sums E(T_w) */
	uint64_t nu;
	mpz_t a, b;
	uint64_t *perm;
};

static void server_fini(struct server *s)
{
	if (s->acc)
		for (uint64_t w = 0; w < s->nu; w++)
			mpz_clear(s->acc[w]);
	free(s->acc);
	paillier_mpz_wipe(s->a);
	paillier_mpz_wipe(s->b);
	free(s->perm);
}

/* The public union of the parties' word sets, sorted by byte order (so
 * that its order tells nothing of who sent which word); pointers borrowed
 * from the parties' sorted tables. */
static int server_union(const struct fedrun_fedvocab_entry *const *const *sorted,
			const struct fedrun_fedvocab_party *parties, uint32_t np, const char ***out,
			uint64_t *nout)
{
	uint64_t total = 0;
	for (uint32_t p = 0; p < np; p++)
		total += parties[p].n;
	const char **u = alloc_array(total, sizeof *u);
	if (!u)
		return fedrun_error(FEDRUN_ENOMEM, WHAT ": server: out of memory");
	uint64_t k = 0;
	for (uint32_t p = 0; p < np; p++)
		for (uint64_t i = 0; i < parties[p].n; i++)
			u[k++] = sorted[p][i]->word;
	qsort(u, (size_t)k, sizeof *u, cmp_str);
	uint64_t n = 0;
	for (uint64_t i = 0; i < k; i++)
		if (n == 0 || strcmp(u[n - 1], u[i]) != 0)
			u[n++] = u[i];
	*out = u;
	*nout = n;
	return 0;
}

static int server_init(struct server *s, const struct paillier_enc *enc, int nt,
		       const struct paillier_stop *stop, uint64_t nu)
{
	const struct paillier_pub *pub = enc->pub;
	memset(s, 0, sizeof *s);
	s->pub = pub;
	s->enc = enc;
	s->nt = nt;
	s->stop = stop;
	mpz_inits(s->a, s->b, NULL);
	s->acc = alloc_array(nu, sizeof *s->acc);
	s->perm = alloc_array(nu + 1, sizeof *s->perm);
	if (!s->acc || !s->perm)
		return fedrun_error(FEDRUN_ENOMEM, WHAT ": server: out of memory");
	s->nu = nu;
	for (uint64_t w = 0; w < nu; w++)
		mpz_init_set_ui(s->acc[w], 1); /* 1 = E(0; r = 1) */
	/* a in [1, 2^64), b in [0, n - 2^161) */
	mpz_t bound;
	mpz_init_set_ui(bound, 1);
	mpz_mul_2exp(bound, bound, 64);
	mpz_sub_ui(bound, bound, 1);
	int rc = paillier_random_below(s->a, bound);
	mpz_add_ui(s->a, s->a, 1);
	mpz_set_ui(bound, 1);
	mpz_mul_2exp(bound, bound, 161);
	mpz_sub(bound, pub->n, bound);
	if (rc == 0)
		rc = paillier_random_below(s->b, bound);
	mpz_clear(bound);
	return rc;
}

/* Adds one party's nu ciphertexts into the running sums. */
static int server_receive(struct server *s, uint32_t p, const uint8_t *ct)
{
	size_t len = paillier_ct_bytes(s->pub);
	char what[64];
	snprintf(what, sizeof what, WHAT ": server: from party %u", p);
	const struct paillier_stop *stop = s->stop;
	struct par_err err = {0};
#pragma omp parallel num_threads(s->nt)
	{
		mpz_t c;
		mpz_init(c);
#pragma omp for schedule(static)
		for (int64_t w = 0; w < (int64_t)s->nu; w++) {
			if (!par_err_none(&err) || par_stop(&err, stop))
				continue;
			int rc = paillier_ct_import(s->pub, ct + (uint64_t)w * len, what, c);
			if (rc == 0)
				paillier_add(s->pub, s->acc[w], s->acc[w], c);
			else
				par_err_set(&err, rc);
		}
		mpz_clear(c);
	}
	return par_err_raise(&err);
}

/* A uniform permutation of 0 .. n-1 (Fisher-Yates) from a stream keyed by
 * getrandom(2). */
static int server_shuffle(uint64_t *perm, uint64_t n)
{
	struct fedrun_csprng g;
	int rc = fedrun_csprng_init(&g);
	if (rc < 0)
		return rc;
	for (uint64_t i = 0; i < n; i++)
		perm[i] = i;
	for (uint64_t i = n; i > 1; i--) {
		/* uniform in [0, i): reject the top partial block of 2^64 */
		uint64_t lim = UINT64_MAX - UINT64_MAX % i, x;
		do
			x = fedrun_csprng_u64(&g);
		while (x >= lim);
		uint64_t j = x % i, t = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = t;
	}
	fedrun_csprng_fini(&g);
	return 0;
}

/* The message to the key holder: E(a T_w + b), re-randomised, word w at
 * position perm[w]; with min_count > 1 one more, E(a min_count + b), at
 * position perm[nu], the threshold the words' ranks are compared with. */
static int server_mask(struct server *s, uint64_t min_count, uint8_t *out, uint64_t *n_masked)
{
	uint64_t n = s->nu + (min_count > 1);
	*n_masked = n;
	int rc = server_shuffle(s->perm, n);
	if (rc < 0)
		return rc;
	size_t len = paillier_ct_bytes(s->pub);
	const struct paillier_stop *stop = s->stop;
	struct par_err err = {0};
#pragma omp parallel num_threads(s->nt)
	{
		mpz_t c, t;
		mpz_inits(c, t, NULL);
#pragma omp for schedule(dynamic, 64)
		for (int64_t w = 0; w < (int64_t)n; w++) {
			if (!par_err_none(&err) || par_stop(&err, stop))
				continue;
			int wrc;
			if ((uint64_t)w < s->nu) {
				paillier_mul_plain(s->pub, c, s->acc[w], s->a);
				paillier_add_plain(s->pub, c, c, s->b);
				wrc = paillier_rerandomize(s->enc, c, c);
			} else {
				mpz_import(t, 1, 1, sizeof min_count, 0, 0, &min_count);
				mpz_mul(t, t, s->a);
				mpz_add(t, t, s->b);
				wrc = paillier_encrypt(s->enc, t, c);
			}
			if (wrc == 0)
				paillier_ct_export(s->pub, c, out + s->perm[w] * len);
			else
				par_err_set(&err, wrc);
		}
		paillier_mpz_wipe(t);
		mpz_clear(c);
	}
	return par_err_raise(&err);
}

struct ranked {
	uint64_t rank, w;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	/* the union is in byte order, so its index is the strcmp tie-break */
	return (x->w > y->w) - (x->w < y->w);
}

/* Un-shuffles the ranks and orders the words by (rank, strcmp); with a
 * threshold, keeps the words ranked at or above it (total >= min_count). */
static int server_order(const struct server *s, const char *const *uni, const uint64_t *ranks,
			bool threshold, char ***words_out, uint64_t *n_out)
{
	struct ranked *r = alloc_array(s->nu, sizeof *r);
	if (!r)
		return fedrun_error(FEDRUN_ENOMEM, WHAT ": server: out of memory");
	uint64_t limit = threshold ? ranks[s->perm[s->nu]] : UINT64_MAX, k = 0;
	for (uint64_t w = 0; w < s->nu; w++) {
		uint64_t rank = ranks[s->perm[w]];
		if (rank <= limit)
			r[k++] = (struct ranked){rank, w};
	}
	qsort(r, (size_t)k, sizeof *r, cmp_ranked);
	char **words = alloc_array(k, sizeof *words);
	int rc = words ? 0 : fedrun_error(FEDRUN_ENOMEM, WHAT ": server: out of memory");
	uint64_t i = 0;
	for (; i < k && rc == 0; i++)
		if (!(words[i] = strdup(uni[r[i].w])))
			rc = fedrun_error(FEDRUN_ENOMEM, WHAT ": server: out of memory");
	free(r);
	if (rc < 0) {
		fedrun_fedvocab_words_free(words, i);
		return rc;
	}
	*words_out = words;
	*n_out = k;
	return 0;
}

/* ---- the run ----------------------------------------------------------- */

static int check_opts(const struct fedrun_fedvocab_opts *opts, uint32_t np, uint32_t min_bits,
		      struct fedrun_fedvocab_opts *o)
{
	fedrun_fedvocab_opts_init(o);
	if (opts) {
		if (opts->size < offsetof(struct fedrun_fedvocab_opts, key_bits))
			return fedrun_error(FEDRUN_EINVAL,
					    WHAT ": opts.size is %zu; fill the options with "
						 "fedrun_fedvocab_opts_init",
					    opts->size);
		memcpy(o, opts, opts->size < sizeof *o ? opts->size : sizeof *o);
		o->size = sizeof *o;
	}
	if (o->key_bits < min_bits)
		return fedrun_error(FEDRUN_EINVAL,
				    WHAT ": a key of %u bits is too small; key_bits must be at "
					 "least %u",
				    o->key_bits, min_bits);
	if (o->key_bits > PAILLIER_MAX_BITS)
		return fedrun_error(FEDRUN_EINVAL,
				    WHAT ": a key of %u bits is too large; key_bits must be at "
					 "most %u (larger keys take minutes to make)",
				    o->key_bits, PAILLIER_MAX_BITS);
	if (o->key_holder >= np)
		return fedrun_error(FEDRUN_EINVAL,
				    WHAT ": key_holder %u is not a party (there are %u, from 0)",
				    o->key_holder, np);
	return 0;
}

struct run {
	const struct fedrun_fedvocab_entry ***sorted; /* per party, its own */
	const char **uni;
	uint64_t nu;
	struct paillier_pub holder_pub, pub; /* the key holder's; the published */
	struct paillier_priv priv;
	struct paillier_enc enc; /* pub's table, for parties and server */
	bool have_key, have_pub, have_enc;
	int nt; /* threads */
	struct paillier_stop stop; /* opts.interrupted */
	uint8_t *pubkey, *party_ct, *masked;
	uint64_t *ranks;
};

static int run_keys(struct run *r, uint32_t bits, uint32_t min_bits)
{
	/* key holder: makes the pair, publishes n */
	int rc =
	    min_bits >= PAILLIER_MIN_BITS
		? paillier_keygen(bits, WHAT ": key holder", &r->stop, &r->holder_pub, &r->priv)
		: paillier_keygen_unchecked(bits, WHAT ": key holder", &r->stop, &r->holder_pub,
					    &r->priv);
	if (rc < 0)
		return rc;
	r->have_key = true;
	if (!(r->pubkey = calloc(1, paillier_pub_bytes(bits))))
		return fedrun_error(FEDRUN_ENOMEM, WHAT ": out of memory");
	paillier_pub_export(&r->holder_pub, r->pubkey);
	/* everyone else: reads it, and who encrypts (the parties, the server)
	 * builds h_n's table from it; here, in one process, they share one */
	if ((rc = paillier_pub_import(r->pubkey, bits, WHAT, &r->pub)) < 0)
		return rc;
	r->have_pub = true;
	if ((rc = paillier_enc_init(&r->enc, &r->pub, (uint32_t)r->nt, &r->stop)) == 0)
		r->have_enc = true;
	else if (rc == FEDRUN_EINTERRUPTED)
		fedrun_error_wrap(rc, WHAT ": ");
	return rc;
}

/* Parties to server: each party's ciphertexts, summed as they arrive; kept
 * in r->party_ct when a transcript is asked for. */
static int run_collect(struct run *r, struct server *srv,
		       const struct fedrun_fedvocab_party *parties, uint32_t np, bool keep)
{
	size_t len = paillier_ct_bytes(&r->pub);
	uint64_t per = r->nu * len;
	r->party_ct = alloc_array(keep ? np : 1, per ? per : 1);
	if (!r->party_ct)
		return fedrun_error(FEDRUN_ENOMEM, WHAT ": out of memory");
	int rc = 0;
	for (uint32_t p = 0; p < np && rc == 0; p++) {
		uint8_t *msg = r->party_ct + (keep ? p * per : 0);
		rc = party_encrypt(&r->enc, r->sorted[p], parties[p].n, r->uni, r->nu, r->nt,
				   &r->stop, msg);
		if (rc == 0)
			rc = server_receive(srv, p, msg);
	}
	return rc;
}

static void run_fini(struct run *r, uint32_t np)
{
	if (r->sorted)
		for (uint32_t p = 0; p < np; p++)
			free(r->sorted[p]);
	free(r->sorted);
	free(r->uni);
	if (r->have_key) {
		paillier_pub_fini(&r->holder_pub);
		paillier_priv_fini(&r->priv);
	}
	if (r->have_enc)
		paillier_enc_fini(&r->enc);
	if (r->have_pub)
		paillier_pub_fini(&r->pub);
	free(r->pubkey);
	free(r->party_ct);
	free(r->masked);
	free(r->ranks);
}

static void run_transcript(struct run *r, uint32_t np, uint64_t n_masked,
			   struct fedrun_fedvocab_transcript *tr)
{
	memset(tr, 0, sizeof *tr);
	tr->key_bits = r->pub.bits;
	tr->pubkey_len = paillier_pub_bytes(r->pub.bits);
	tr->ct_len = paillier_ct_bytes(&r->pub);
	tr->n_parties = np;
	tr->n_union = r->nu;
	tr->n_masked = n_masked;
	/* the run's buffers change hands */
	tr->pubkey = r->pubkey;
	tr->party_ct = r->party_ct;
	tr->masked_ct = r->masked;
	tr->ranks = r->ranks;
	r->pubkey = r->party_ct = r->masked = NULL;
	r->ranks = NULL;
}

int fedvocab_order_min_bits(const struct fedrun_fedvocab_party *parties, uint32_t n_parties,
			    const struct fedrun_fedvocab_opts *opts, uint32_t min_bits,
			    char ***words_out, uint64_t *n_out,
			    struct fedrun_fedvocab_transcript *tr)
{
	if (n_parties == 0 || !parties || !words_out || !n_out)
		return fedrun_error(FEDRUN_EINVAL, WHAT ": %s",
				    n_parties ? "NULL argument" : "no party");
	struct fedrun_fedvocab_opts o;
	int rc = check_opts(opts, n_parties, min_bits, &o);
	if (rc < 0)
		return rc;
	struct run r = {0};
	r.nt = run_threads(o.threads);
	r.stop = (struct paillier_stop){o.interrupted, o.interrupted_arg};
	struct server srv = {0};
	bool have_srv = false;
	if (!(r.sorted = calloc(n_parties, sizeof *r.sorted))) {
		rc = fedrun_error(FEDRUN_ENOMEM, WHAT ": out of memory");
		goto out;
	}
	for (uint32_t p = 0; p < n_parties; p++)
		if ((rc = party_sorted(&parties[p], p, &r.sorted[p])) < 0)
			goto out;
	if ((rc = server_union((const struct fedrun_fedvocab_entry *const *const *)r.sorted,
			       parties, n_parties, &r.uni, &r.nu)) < 0 ||
	    (rc = run_keys(&r, o.key_bits, min_bits)) < 0)
		goto out;
	have_srv = true;
	if ((rc = server_init(&srv, &r.enc, r.nt, &r.stop, r.nu)) < 0 ||
	    (rc = run_collect(&r, &srv, parties, n_parties, tr != NULL)) < 0)
		goto out;
	uint64_t n_masked;
	size_t len = paillier_ct_bytes(&r.pub);
	if (!(r.masked = alloc_array(r.nu + 1, len)) ||
	    !(r.ranks = alloc_array(r.nu + 1, sizeof *r.ranks))) {
		rc = fedrun_error(FEDRUN_ENOMEM, WHAT ": out of memory");
		goto out;
	}
	if ((rc = server_mask(&srv, o.min_count, r.masked, &n_masked)) < 0 ||
	    (rc = holder_rank(&r.holder_pub, &r.priv, r.masked, n_masked, r.nt, &r.stop,
			      r.ranks)) < 0 ||
	    (rc = server_order(&srv, r.uni, r.ranks, o.min_count > 1, words_out, n_out)) < 0)
		goto out;
	if (tr)
		run_transcript(&r, n_parties, n_masked, tr);
out:
	if (have_srv)
		server_fini(&srv);
	run_fini(&r, n_parties);
	return rc;
}

int fedrun_fedvocab_order(const struct fedrun_fedvocab_party *parties, uint32_t n_parties,
			  const struct fedrun_fedvocab_opts *opts, char ***words_out,
			  uint64_t *n_out, struct fedrun_fedvocab_transcript *tr)
{
	return fedvocab_order_min_bits(parties, n_parties, opts, PAILLIER_MIN_BITS, words_out,
				       n_out, tr);
}

#endif
