/* Paillier encryption on GMP (see paillier.h): key generation from the
 * system's random source, encryption, CRT decryption and the homomorphic
 * operations the federated vocabulary needs. */
#include "config.h"
#include <string.h>
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

/* A prime of exactly `bits` bits with its two top bits set, so that the
 * product of two has exactly 2 bits bits. */
static int random_prime(mpz_t p, uint32_t bits)
{
	for (;;) {
		int rc = random_bytes_mpz(p, bits / 8);
		if (rc < 0)
			return rc;
		mpz_setbit(p, bits - 1);
		mpz_setbit(p, bits - 2);
		mpz_nextprime(p, p);
		/* mpz_nextprime's test is probabilistic: 50 more Miller-Rabin
		 * rounds put the error below 2^-100 */
		if (mpz_sizeinbase(p, 2) == bits && mpz_probab_prime_p(p, 50) > 0)
			return 0;
	}
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
	mpz_clears(pub->n, pub->n2, NULL);
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

int paillier_keygen_unchecked(uint32_t bits, const char *what, struct paillier_pub *pub,
			      struct paillier_priv *priv)
{
	if (bits < 256 || bits > PAILLIER_MAX_BITS || bits % 16)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: a Paillier key of %u bits; the size must be a multiple "
				    "of 16 from 256 to %u",
				    what, bits, PAILLIER_MAX_BITS);
	mpz_inits(pub->n, pub->n2, NULL);
	priv_init(priv);
	pub->bits = bits;
	int rc;
	do {
		if ((rc = random_prime(priv->p, bits / 2)) < 0 ||
		    (rc = random_prime(priv->q, bits / 2)) < 0)
			break;
		/* p and q of the same size make gcd(pq, (p-1)(q-1)) = 1 as
		 * soon as p != q */
	} while (mpz_cmp(priv->p, priv->q) == 0);
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
	return 0;
}

int paillier_keygen(uint32_t bits, const char *what, struct paillier_pub *pub,
		    struct paillier_priv *priv)
{
	if (bits < PAILLIER_MIN_BITS)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: a Paillier key of %u bits is too small; at least %u bits "
				    "(112-bit security)",
				    what, bits, PAILLIER_MIN_BITS);
	return paillier_keygen_unchecked(bits, what, pub, priv);
}

/* r^n mod n^2 for a fresh r in [1, n) prime to n. */
static int random_rn(const struct paillier_pub *pub, mpz_t out)
{
	mpz_t g;
	mpz_init(g);
	int rc;
	for (;;) {
		if ((rc = paillier_random_below(out, pub->n)) < 0)
			break;
		/* r = 0, or an r sharing a factor with n (probability about
		 * 2^-(bits/2)), is not a unit */
		mpz_gcd(g, out, pub->n);
		if (mpz_sgn(out) != 0 && mpz_cmp_ui(g, 1) == 0)
			break;
	}
	mpz_clear(g);
	if (rc == 0)
		mpz_powm(out, out, pub->n, pub->n2);
	return rc;
}

int paillier_encrypt(const struct paillier_pub *pub, const mpz_t m, mpz_t c)
{
	if (mpz_sgn(m) < 0 || mpz_cmp(m, pub->n) >= 0)
		return fedrun_error(FEDRUN_EINVAL,
				    "paillier: a plaintext outside [0, n) for a %u-bit key",
				    pub->bits);
	mpz_t rn;
	mpz_init(rn);
	int rc = random_rn(pub, rn);
	if (rc == 0) {
		/* g^m = (1 + n)^m = 1 + m n mod n^2 */
		mpz_mul(c, m, pub->n);
		mpz_add_ui(c, c, 1);
		mpz_mul(c, c, rn);
		mpz_mod(c, c, pub->n2);
	}
	paillier_mpz_wipe(rn);
	return rc;
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

int paillier_rerandomize(const struct paillier_pub *pub, mpz_t c, const mpz_t a)
{
	mpz_t rn;
	mpz_init(rn);
	int rc = random_rn(pub, rn);
	if (rc == 0)
		paillier_add(pub, c, a, rn);
	paillier_mpz_wipe(rn);
	return rc;
}

size_t paillier_ct_bytes(const struct paillier_pub *pub)
{
	return (2 * (size_t)pub->bits + 7) / 8;
}

void paillier_ct_export(const struct paillier_pub *pub, const mpz_t c, uint8_t *buf)
{
	size_t len = paillier_ct_bytes(pub), used = (mpz_sizeinbase(c, 2) + 7) / 8;
	if (mpz_sgn(c) == 0)
		used = 0;
	memset(buf, 0, len - used);
	if (used)
		mpz_export(buf + (len - used), NULL, 1, 1, 1, 0, c);
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
