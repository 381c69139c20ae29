/* SPDX-License-Identifier: Apache-2.0 */
/* Paillier encryption on GMP (see paillier.h): key generation from the
 * system's random source, encryption, CRT decryption and the homomorphic
 * operations the federated vocabulary needs. */
#include "config.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "fedrun/csprng.h"
#include "fedrun/error.h"
#include "privacy/paillier.h"

static void wipe_bytes(void *p, size_t n)
{
	/* volatile, so that the compiler cannot drop the stores as dead */
	volatile unsigned char *v = p;
	for (size_t i = 0; i < n; i++)
		v[i] = 0;
}

void paillier_mpz_wipe(mpz_t x)
{
	/* every allocated limb, not only the used ones: a value that shrank
	 * leaves its old high limbs behind. GMP's own temporaries are freed
	 * without wiping; see FEDERATED VOCABULARY in fedrun-privacy(7). */
	mp_size_t alloc = x->_mp_alloc;
	if (alloc > 0) {
		mp_limb_t *l = mpz_limbs_modify(x, alloc);
		wipe_bytes(l, (size_t)alloc * sizeof *l);
		mpz_limbs_finish(x, 0);
	}
	mpz_clear(x);
}

/* `nbytes` bytes from getrandom(2) as a big-endian integer. */
static int random_bytes_mpz(mpz_t out, size_t nbytes)
{
	uint8_t buf[PAILLIER_MAX_BITS / 8 + 8];
	if (nbytes > sizeof buf)
		return fedrun_error(FEDRUN_EINVAL, "paillier: %zu random bytes asked, at most %zu",
				    nbytes, sizeof buf);
	int rc = fedrun_getrandom(buf, nbytes);
	if (rc == 0)
		mpz_import(out, nbytes, 1, 1, 1, 0, buf);
	wipe_bytes(buf, nbytes);
	return rc;
}

int paillier_random_below(mpz_t out, const mpz_t bound)
{
	size_t bits = mpz_sizeinbase(bound, 2);
	size_t nbytes = (bits + 7) / 8;
	for (;;) {
		int rc = random_bytes_mpz(out, nbytes);
		if (rc < 0)
			return rc;
		/* keep the bound's bit length: each try succeeds with
		 * probability above 1/2 */
		mpz_fdiv_r_2exp(out, out, bits);
		if (mpz_cmp(out, bound) < 0)
			return 0;
	}
}

bool paillier_stopped(const struct paillier_stop *stop)
{
	return stop && stop->fn && stop->fn(stop->arg);
}

/* The prime search below sieves with the odd primes under 2^16: a
 * candidate survives with probability about 0.1, so that most composites
 * cost no Miller-Rabin test. */
#define SIEVE_LIMIT 65536u
#define SIEVE_WINDOW 4096u /* candidates per random start */

struct sieve {
	uint32_t *primes;
	uint32_t n;
	uint8_t *mark; /* SIEVE_WINDOW flags: candidate k has a small factor */
};

static void sieve_fini(struct sieve *s)
{
	free(s->primes);
	/* the marks tell the secret primes' residues */
	if (s->mark)
		wipe_bytes(s->mark, SIEVE_WINDOW);
	free(s->mark);
}

static int sieve_init(struct sieve *s)
{
	memset(s, 0, sizeof *s);
	uint8_t *comp = calloc(SIEVE_LIMIT, 1);
	s->primes = malloc(SIEVE_LIMIT / 2 * sizeof *s->primes);
	s->mark = malloc(SIEVE_WINDOW);
	if (!comp || !s->primes || !s->mark) {
		free(comp);
		sieve_fini(s);
		return fedrun_error(FEDRUN_ENOMEM, "paillier: out of memory for the prime sieve");
	}
	for (uint32_t i = 3; i < SIEVE_LIMIT; i += 2) {
		if (comp[i])
			continue;
		s->primes[s->n++] = i;
		if (i < SIEVE_LIMIT / i) /* i^2 below the limit, without overflow */
			for (uint32_t j = i * i; j < SIEVE_LIMIT; j += 2 * i)
				comp[j] = 1;
	}
	free(comp);
	return 0;
}

/* A prime of exactly `bits` bits with its two top bits set, so that the
 * product of two has exactly 2 bits bits, and p = 3 (mod 4), half of an
 * admissible modulus (DJN 2010, sec. 4.1; see paillier_keygen_unchecked).
 * The search is fedrun's own rather than mpz_nextprime, which cannot be
 * stopped: at 4096 bits a prime takes seconds, so `stop` is asked before
 * every Miller-Rabin test. From a random start x = 3 (mod 4), the
 * candidates x + 4k, k < SIEVE_WINDOW, are sieved; a window without a
 * prime gets a fresh start. */
static int random_prime(mpz_t p, uint32_t bits, struct sieve *s, const struct paillier_stop *stop)
{
	mpz_t x;
	mpz_init(x);
	int rc = 0;
	while (rc == 0) {
		if ((rc = random_bytes_mpz(x, bits / 8)) < 0)
			break;
		mpz_setbit(x, bits - 1);
		mpz_setbit(x, bits - 2);
		mpz_setbit(x, 1);
		mpz_setbit(x, 0);
		memset(s->mark, 0, SIEVE_WINDOW);
		for (uint32_t i = 0; i < s->n; i++) {
			/* x + 4k = 0 (mod q) for k = -x / 4 (mod q); 1/4 is
			 * ((q + 1) / 2)^2 since q is odd */
			uint64_t q = s->primes[i], r = mpz_fdiv_ui(x, q);
			uint64_t inv2 = (q + 1) / 2, inv4 = inv2 * inv2 % q;
			for (uint64_t k = (q - r) % q * inv4 % q; k < SIEVE_WINDOW; k += q)
				s->mark[k] = 1;
		}
		for (uint32_t k = 0; k < SIEVE_WINDOW; k++) {
			if (s->mark[k])
				continue;
			if (paillier_stopped(stop)) {
				rc = FEDRUN_EINTERRUPTED;
				break;
			}
			mpz_add_ui(p, x, 4 * (unsigned long)k);
			if (mpz_sizeinbase(p, 2) != bits)
				break; /* past the top: a fresh start */
			/* trial division, Baillie-PSW and 26 Miller-Rabin rounds
			 * (GMP 6.2; before, 50 rounds): an error below 2^-100.
			 * A composite mostly fails the first round. */
			if (mpz_probab_prime_p(p, 50) > 0)
				goto out;
		}
	}
out:
	paillier_mpz_wipe(x);
	return rc;
}

static void priv_init(struct paillier_priv *k)
{
	mpz_inits(k->p, k->q, k->p2, k->q2, k->hp, k->hq, k->qinv, NULL);
}

void paillier_priv_fini(struct paillier_priv *k)
{
	paillier_mpz_wipe(k->p);
	paillier_mpz_wipe(k->q);
	paillier_mpz_wipe(k->p2);
	paillier_mpz_wipe(k->q2);
	paillier_mpz_wipe(k->hp);
	paillier_mpz_wipe(k->hq);
	paillier_mpz_wipe(k->qinv);
}

void paillier_pub_fini(struct paillier_pub *pub)
{
	mpz_clears(pub->n, pub->n2, pub->hn, NULL);
}

/* A uniform unit of Z_n: [1, n) prime to n (an r sharing a factor with n
 * comes with probability about 2^-(bits/2)). */
static int random_unit(mpz_t out, const mpz_t n)
{
	mpz_t g;
	mpz_init(g);
	int rc;
	for (;;) {
		if ((rc = paillier_random_below(out, n)) < 0)
			break;
		mpz_gcd(g, out, n);
		if (mpz_sgn(out) != 0 && mpz_cmp_ui(g, 1) == 0)
			break;
	}
	mpz_clear(g);
	return rc;
}

/* h_n = h^n mod n^2 for h = -x^2 mod n, x a random unit (DJN 2010, sec.
 * 4.1): h generates the squares' subgroup up to sign, and h_n its n-th
 * powers, which encryption's randomizer ranges over. */
static int make_hn(struct paillier_pub *pub)
{
	mpz_t x;
	mpz_init(x);
	int rc = random_unit(x, pub->n);
	if (rc == 0) {
		mpz_mul(x, x, x);
		mpz_mod(x, x, pub->n);
		mpz_sub(x, pub->n, x);
		mpz_powm(pub->hn, x, pub->n, pub->n2);
	}
	paillier_mpz_wipe(x);
	return rc;
}

size_t paillier_pub_bytes(uint32_t bits)
{
	return 3 * (((size_t)bits + 7) / 8);
}

/* x as `len` big-endian bytes, zero-padded on the left (x < 2^(8 len)). */
static void export_fixed(const mpz_t x, uint8_t *buf, size_t len)
{
	size_t used = mpz_sgn(x) ? (mpz_sizeinbase(x, 2) + 7) / 8 : 0;
	memset(buf, 0, len - used);
	if (used)
		mpz_export(buf + (len - used), NULL, 1, 1, 1, 0, x);
}

void paillier_pub_export(const struct paillier_pub *pub, uint8_t *buf)
{
	size_t nb = ((size_t)pub->bits + 7) / 8;
	export_fixed(pub->n, buf, nb);
	export_fixed(pub->hn, buf + nb, 2 * nb);
}

int paillier_pub_import(const uint8_t *buf, uint32_t bits, const char *what,
			struct paillier_pub *pub)
{
	size_t nb = ((size_t)bits + 7) / 8;
	mpz_inits(pub->n, pub->n2, pub->hn, NULL);
	mpz_import(pub->n, nb, 1, 1, 1, 0, buf);
	mpz_import(pub->hn, 2 * nb, 1, 1, 1, 0, buf + nb);
	mpz_mul(pub->n2, pub->n, pub->n);
	pub->bits = bits;
	mpz_t g;
	mpz_init(g);
	mpz_gcd(g, pub->hn, pub->n);
	bool ok = mpz_sizeinbase(pub->n, 2) == bits && mpz_odd_p(pub->n) && mpz_sgn(pub->hn) > 0 &&
		  mpz_cmp(pub->hn, pub->n2) < 0 && mpz_cmp_ui(g, 1) == 0;
	mpz_clear(g);
	if (!ok) {
		paillier_pub_fini(pub);
		return fedrun_error(FEDRUN_EFORMAT,
				    "%s: the published key is no %u-bit Paillier key (n odd of "
				    "%u bits, h_n a unit below n^2)",
				    what, bits, bits);
	}
	return 0;
}

/* h = L_p(g^(p-1) mod p^2)^-1 mod p with g = n + 1 and L_p(x) = (x-1)/p
 * (the CRT form of Paillier's mu). */
static void crt_h(const mpz_t n, const mpz_t p, const mpz_t p2, mpz_t h)
{
	mpz_t t;
	mpz_init(t);
	mpz_add_ui(h, n, 1);
	mpz_sub_ui(t, p, 1);
	mpz_powm(h, h, t, p2);
	mpz_sub_ui(h, h, 1);
	mpz_divexact(h, h, p);
	mpz_invert(h, h, p);
	paillier_mpz_wipe(t);
}

int paillier_keygen_unchecked(uint32_t bits, const char *what, const struct paillier_stop *stop,
			      struct paillier_pub *pub, struct paillier_priv *priv)
{
	if (bits < 256 || bits > PAILLIER_MAX_BITS || bits % 16)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: a Paillier key of %u bits; the size must be a multiple "
				    "of 16 from 256 to %u",
				    what, bits, PAILLIER_MAX_BITS);
	mpz_inits(pub->n, pub->n2, pub->hn, NULL);
	priv_init(priv);
	pub->bits = bits;
	/* An admissible modulus as DJN choose it: p, q = 3 (mod 4) and
	 * gcd(p - 1, q - 1) = 2. Then the squares mod n form a cyclic group of
	 * odd order (p-1)(q-1)/4 without -1, and h = -x^2 of make_hn generates
	 * the group of Jacobi symbol 1 (of order (p-1)(q-1)/2) when x^2
	 * generates the squares, the group DJN's short-exponent argument
	 * ranges the randomizer h_n^alpha over.
	 * gcd(p - 1, q - 1) = 2 also rules out p = q, and p and q of the same
	 * size then make gcd(pq, (p-1)(q-1)) = 1. */
	struct sieve s;
	int rc = sieve_init(&s);
	mpz_t g, pm, qm;
	mpz_inits(g, pm, qm, NULL);
	while (rc == 0) {
		if ((rc = random_prime(priv->p, bits / 2, &s, stop)) < 0 ||
		    (rc = random_prime(priv->q, bits / 2, &s, stop)) < 0)
			break;
		mpz_sub_ui(pm, priv->p, 1);
		mpz_sub_ui(qm, priv->q, 1);
		mpz_gcd(g, pm, qm);
		if (mpz_cmp_ui(g, 2) == 0)
			break;
	}
	sieve_fini(&s);
	paillier_mpz_wipe(pm);
	paillier_mpz_wipe(qm);
	paillier_mpz_wipe(g);
	if (rc == FEDRUN_EINTERRUPTED) {
		paillier_pub_fini(pub);
		paillier_priv_fini(priv);
		return fedrun_error(rc, "%s: interrupted while making a Paillier key of %u bits", what,
				    bits);
	}
	if (rc < 0) {
		paillier_pub_fini(pub);
		paillier_priv_fini(priv);
		return fedrun_error_wrap(rc, "%s: Paillier key generation: ", what);
	}
	mpz_mul(pub->n, priv->p, priv->q);
	mpz_mul(pub->n2, pub->n, pub->n);
	mpz_mul(priv->p2, priv->p, priv->p);
	mpz_mul(priv->q2, priv->q, priv->q);
	crt_h(pub->n, priv->p, priv->p2, priv->hp);
	crt_h(pub->n, priv->q, priv->q2, priv->hq);
	mpz_invert(priv->qinv, priv->q, priv->p);
	if ((rc = make_hn(pub)) < 0) {
		paillier_pub_fini(pub);
		paillier_priv_fini(priv);
		return fedrun_error_wrap(rc, "%s: Paillier key generation: ", what);
	}
	return 0;
}

int paillier_keygen(uint32_t bits, const char *what, const struct paillier_stop *stop,
		    struct paillier_pub *pub, struct paillier_priv *priv)
{
	if (bits < PAILLIER_MIN_BITS)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: a Paillier key of %u bits is too small; at least %u bits "
				    "(112-bit security)",
				    what, bits, PAILLIER_MIN_BITS);
	return paillier_keygen_unchecked(bits, what, stop, pub, priv);
}

/* ---- the fixed-base table of h_n -------------------------------------- */

/* The limbs of a value below n^2, so that no product reallocates. */
static void init_mod_n2(mpz_t x, const struct paillier_pub *pub)
{
	mpz_init2(x, 2 * (mp_bitcnt_t)pub->bits + GMP_NUMB_BITS);
}

void paillier_enc_fini(struct paillier_enc *enc)
{
	if (enc->table)
		for (size_t k = 0; k < (size_t)enc->windows * 255; k++)
			mpz_clear(enc->table[k]);
	free(enc->table);
	memset(enc, 0, sizeof *enc);
}

int paillier_enc_init(struct paillier_enc *enc, const struct paillier_pub *pub, uint32_t threads,
		      const struct paillier_stop *stop)
{
	memset(enc, 0, sizeof *enc);
	enc->pub = pub;
	enc->alpha_bits = (pub->bits + 1) / 2;
	enc->windows = (enc->alpha_bits + 7) / 8;
	size_t nt = (size_t)enc->windows * 255;
	if (!(enc->table = malloc(nt * sizeof *enc->table)))
		return fedrun_error(FEDRUN_ENOMEM, "paillier: no memory for the encryption table");
	for (size_t k = 0; k < nt; k++)
		init_mod_n2(enc->table[k], pub);
	/* column 1 of each window: h_n^(2^(8 i)), 8 squarings from the last */
	mpz_set(enc->table[0], pub->hn);
	for (uint32_t i = 1; i < enc->windows; i++) {
		mpz_ptr b = enc->table[(size_t)i * 255];
		mpz_set(b, enc->table[(size_t)(i - 1) * 255]);
		for (int s = 0; s < 8; s++) {
			mpz_mul(b, b, b);
			mpz_tdiv_r(b, b, pub->n2);
		}
	}
	/* the windows' other columns are independent of each other */
	int nth = threads ? (int)threads : 1;
#ifdef _OPENMP
	if (!threads)
		nth = omp_get_max_threads();
#endif
	(void)nth;
	const int64_t nw = enc->windows;
	/* a row is 254 products: asking `stop` once per row is cheap, and
	 * prompt (8192-bit keys build 512 rows in seconds) */
	bool stopped = false;
#pragma omp parallel for schedule(static) num_threads(nth)
	for (int64_t i = 0; i < nw; i++) {
		bool give_up;
#pragma omp atomic read
		give_up = stopped;
		if (!give_up && paillier_stopped(stop)) {
#pragma omp atomic write
			stopped = true;
			give_up = true;
		}
		if (give_up)
			continue;
		mpz_t *row = enc->table + (size_t)i * 255;
		mpz_t t;
		init_mod_n2(t, pub);
		for (int j = 1; j < 255; j++) {
			mpz_mul(t, row[j - 1], row[0]);
			mpz_tdiv_r(row[j], t, pub->n2);
		}
		mpz_clear(t);
	}
	if (stopped) {
		paillier_enc_fini(enc);
		return fedrun_error(FEDRUN_EINTERRUPTED,
				    "paillier: interrupted while building the encryption table");
	}
	return 0;
}

size_t paillier_enc_table_bytes(const struct paillier_enc *enc)
{
	size_t limbs = 0;
	for (size_t k = 0; k < (size_t)enc->windows * 255; k++)
		limbs += (size_t)enc->table[k]->_mp_alloc;
	return limbs * sizeof(mp_limb_t) + (size_t)enc->windows * 255 * sizeof(mpz_t);
}

/* out = h_n^a mod n^2 for a = sum a[i] 2^(8 i), i < windows: one product
 * per nonzero byte. */
static void pow_bytes(const struct paillier_enc *enc, const uint8_t *a, mpz_t out, mpz_t t)
{
	bool first = true;
	for (uint32_t i = 0; i < enc->windows; i++) {
		if (!a[i])
			continue;
		mpz_srcptr f = enc->table[(size_t)i * 255 + a[i] - 1];
		if (first) {
			mpz_set(out, f);
			first = false;
		} else {
			mpz_mul(t, out, f);
			mpz_tdiv_r(out, t, enc->pub->n2);
		}
	}
	if (first)
		mpz_set_ui(out, 1);
}

/* A fresh short exponent as `windows` little-endian bytes, uniform in
 * [0, 2^alpha_bits). */
static int random_alpha(const struct paillier_enc *enc, uint8_t *a)
{
	int rc = fedrun_getrandom(a, enc->windows);
	if (rc == 0 && enc->alpha_bits % 8)
		a[enc->windows - 1] &= (uint8_t)((1u << (enc->alpha_bits % 8)) - 1);
	return rc;
}

int paillier_random_hna(const struct paillier_enc *enc, mpz_t out)
{
	uint8_t a[PAILLIER_MAX_BITS / 16 + 1];
	mpz_t t;
	init_mod_n2(t, enc->pub);
	int rc = random_alpha(enc, a);
	if (rc == 0)
		pow_bytes(enc, a, out, t);
	wipe_bytes(a, sizeof a);
	paillier_mpz_wipe(t);
	return rc;
}

/* c = (1 + m n) hna mod n^2. */
static void encrypt_with(const struct paillier_pub *pub, const mpz_t m, const mpz_t hna, mpz_t c)
{
	/* g^m = (1 + n)^m = 1 + m n mod n^2 */
	mpz_t g;
	init_mod_n2(g, pub);
	mpz_mul(g, m, pub->n);
	mpz_add_ui(g, g, 1);
	mpz_mul(c, g, hna);
	mpz_tdiv_r(c, c, pub->n2);
	paillier_mpz_wipe(g);
}

static int check_plain(const struct paillier_pub *pub, const mpz_t m)
{
	if (mpz_sgn(m) < 0 || mpz_cmp(m, pub->n) >= 0)
		return fedrun_error(FEDRUN_EINVAL,
				    "paillier: a plaintext outside [0, n) for a %u-bit key",
				    pub->bits);
	return 0;
}

int paillier_encrypt(const struct paillier_enc *enc, const mpz_t m, mpz_t c)
{
	int rc = check_plain(enc->pub, m);
	if (rc < 0)
		return rc;
	mpz_t r;
	init_mod_n2(r, enc->pub);
	if ((rc = paillier_random_hna(enc, r)) == 0)
		encrypt_with(enc->pub, m, r, c);
	paillier_mpz_wipe(r);
	return rc;
}

int paillier_encrypt_alpha(const struct paillier_enc *enc, const mpz_t m, const mpz_t alpha,
			   mpz_t c)
{
	int rc = check_plain(enc->pub, m);
	if (rc < 0)
		return rc;
	if (mpz_sgn(alpha) < 0 || mpz_sizeinbase(alpha, 2) > enc->alpha_bits)
		return fedrun_error(FEDRUN_EINVAL, "paillier: an exponent outside [0, 2^%u)",
				    enc->alpha_bits);
	uint8_t a[PAILLIER_MAX_BITS / 16 + 1];
	memset(a, 0, sizeof a);
	mpz_export(a, NULL, -1, 1, 0, 0, alpha);
	mpz_t r, t;
	init_mod_n2(r, enc->pub);
	init_mod_n2(t, enc->pub);
	pow_bytes(enc, a, r, t);
	encrypt_with(enc->pub, m, r, c);
	wipe_bytes(a, sizeof a);
	paillier_mpz_wipe(r);
	paillier_mpz_wipe(t);
	return 0;
}

/* m mod p from c: L_p(c^(p-1) mod p^2) hp mod p. */
static void crt_part(const mpz_t c, const mpz_t p, const mpz_t p2, const mpz_t h, mpz_t out)
{
	mpz_t e;
	mpz_init(e);
	mpz_sub_ui(e, p, 1);
	mpz_powm(out, c, e, p2);
	mpz_sub_ui(out, out, 1);
	mpz_divexact(out, out, p);
	mpz_mul(out, out, h);
	mpz_mod(out, out, p);
	paillier_mpz_wipe(e);
}

void paillier_decrypt(const struct paillier_pub *pub, const struct paillier_priv *k, const mpz_t c,
		      mpz_t m)
{
	mpz_t mp, mq;
	mpz_inits(mp, mq, NULL);
	crt_part(c, k->p, k->p2, k->hp, mp);
	crt_part(c, k->q, k->q2, k->hq, mq);
	/* m = mq + q ((mp - mq) q^-1 mod p) */
	mpz_sub(mp, mp, mq);
	mpz_mul(mp, mp, k->qinv);
	mpz_mod(mp, mp, k->p);
	mpz_mul(mp, mp, k->q);
	mpz_add(m, mp, mq);
	mpz_mod(m, m, pub->n);
	paillier_mpz_wipe(mp);
	paillier_mpz_wipe(mq);
}

void paillier_decrypt_mod_p(const struct paillier_priv *k, const mpz_t c, mpz_t m)
{
	crt_part(c, k->p, k->p2, k->hp, m);
}

void paillier_add(const struct paillier_pub *pub, mpz_t c, const mpz_t a, const mpz_t b)
{
	mpz_mul(c, a, b);
	mpz_mod(c, c, pub->n2);
}

void paillier_add_plain(const struct paillier_pub *pub, mpz_t c, const mpz_t a, const mpz_t k)
{
	mpz_t g;
	mpz_init(g);
	mpz_mul(g, k, pub->n);
	mpz_add_ui(g, g, 1);
	mpz_mul(c, a, g);
	mpz_mod(c, c, pub->n2);
	paillier_mpz_wipe(g);
}

void paillier_mul_plain(const struct paillier_pub *pub, mpz_t c, const mpz_t a, const mpz_t k)
{
	mpz_powm(c, a, k, pub->n2);
}

void paillier_neg(const struct paillier_pub *pub, mpz_t c, const mpz_t a)
{
	/* a is a unit mod n^2, so the inverse exists */
	mpz_invert(c, a, pub->n2);
}

int paillier_rerandomize(const struct paillier_enc *enc, mpz_t c, const mpz_t a)
{
	mpz_t r;
	init_mod_n2(r, enc->pub);
	int rc = paillier_random_hna(enc, r);
	if (rc == 0)
		paillier_add(enc->pub, c, a, r);
	paillier_mpz_wipe(r);
	return rc;
}

size_t paillier_ct_bytes(const struct paillier_pub *pub)
{
	return (2 * (size_t)pub->bits + 7) / 8;
}

void paillier_ct_export(const struct paillier_pub *pub, const mpz_t c, uint8_t *buf)
{
	export_fixed(c, buf, paillier_ct_bytes(pub));
}

int paillier_ct_import(const struct paillier_pub *pub, const uint8_t *buf, const char *what,
		       mpz_t c)
{
	mpz_import(c, paillier_ct_bytes(pub), 1, 1, 1, 0, buf);
	mpz_t g;
	mpz_init(g);
	mpz_gcd(g, c, pub->n);
	int ok = mpz_sgn(c) > 0 && mpz_cmp(c, pub->n2) < 0 && mpz_cmp_ui(g, 1) == 0;
	mpz_clear(g);
	if (!ok)
		return fedrun_error(FEDRUN_EFORMAT,
				    "%s: not a Paillier ciphertext of the %u-bit key (outside "
				    "[1, n^2) or not prime to n)",
				    what, pub->bits);
	return 0;
}
