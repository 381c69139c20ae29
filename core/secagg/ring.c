/* SPDX-License-Identifier: Apache-2.0 */
/* The ring Z_{2^bits} of secure aggregation's inputs: fixed-point
 * quantisation of float updates onto it (and back), and its elements'
 * packing on the wire. */
#include "config.h"
#include <math.h>
#include <string.h>
#include "fedrun/error.h"
#include "internal.h"

int secagg_quant_init(struct secagg_quant *q, uint32_t bits, double clip, uint64_t wmax)
{
	if (bits < SECAGG_MIN_BITS || bits > SECAGG_MAX_BITS)
		return fedrun_error(FEDRUN_EINVAL, "secagg: bits must be in [%u, %u], got %u",
				    SECAGG_MIN_BITS, SECAGG_MAX_BITS, bits);
	if (!(clip > 0) || !isfinite(clip))
		return fedrun_error(FEDRUN_EINVAL, "secagg: clip must be a positive number, got %g",
				    clip);
	/* 2^(bits-1) - 1, exact (in double it rounds to 2^(bits-1) from 55 bits) */
	const uint64_t half = ((uint64_t)1 << (bits - 1)) - 1;
	if (wmax == 0 || wmax > half)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: the round's total weight %llu does not fit a ring of %u bits "
		    "(at most %llu): raise bits",
		    (unsigned long long)wmax, bits, (unsigned long long)half);
	/* The largest power of two scale with cap · wmax <= half, cap =
	 * round(clip · scale) the largest |round(x · scale)| of an x in [-clip,
	 * clip]: then no sum of inputs of total weight wmax wraps. The double
	 * estimate may be a power off either way: start one above, halve until
	 * the integer check holds. */
	int e;
	(void)frexp((double)half / (clip * (double)wmax), &e); /* 2^(e-1) <= . < 2^e */
	double scale = ldexp(1.0, e);
	uint64_t cap = 0;
	for (;; scale /= 2) {
		const double c = round(clip * scale);
		if (c >= ldexp(1.0, 63))
			continue;
		cap = (uint64_t)c;
		if ((unsigned __int128)cap * wmax <= half)
			break;
	}
	if (cap == 0 || clip * scale < 1)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: %u bits leave no room for clip %g with a total weight of %llu "
		    "(every value would round to 0): raise bits or lower clip",
		    bits, clip, (unsigned long long)wmax);
	*q = (struct secagg_quant){
	    .bits = bits, .clip = clip, .wmax = wmax, .scale = scale, .cap = (int64_t)cap};
	return 0;
}

void secagg_quant_encode(const struct secagg_quant *q, uint64_t w, const float *x, uint64_t n,
			 uint64_t *out)
{
	const uint64_t mask = secagg_ring_mask(q->bits);
	for (uint64_t i = 0; i < n; i++) {
		double v = x[i];
		v = v > q->clip ? q->clip : v < -q->clip ? -q->clip : v;
		/* |v| <= clip and rounding is monotone: |round(v scale)| <= cap =
		 * round(clip scale) < 2^63 (no overflow in llround), and cap w <=
		 * cap wmax <= 2^(bits-1) - 1. The clamp only guards that. */
		int64_t r = (int64_t)llround(v * q->scale);
		r = r > q->cap ? q->cap : r < -q->cap ? -q->cap : r;
		out[i] = ((uint64_t)r * w) & mask; /* two's complement modulo 2^bits */
	}
}

double secagg_quant_decode(const struct secagg_quant *q, uint64_t s)
{
	s &= secagg_ring_mask(q->bits);
	int64_t v;
	if (q->bits < 64 && s >= ((uint64_t)1 << (q->bits - 1)))
		v = (int64_t)(s - ((uint64_t)1 << (q->bits - 1))) -
		    (int64_t)((uint64_t)1 << (q->bits - 1));
	else
		v = (int64_t)s;
	return (double)v / q->scale;
}

double secagg_quant_bound(const struct secagg_quant *q)
{
	return 0.5 / q->scale;
}

/* Elements of 1, 2, 4 or 8 bytes are native words on a little-endian host:
 * copied whole (the masks' expansion reads gigabytes of them). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RING_NATIVE 1
#else
#define RING_NATIVE 0
#endif

#define RING_WORDS(T)                                                                              \
	static void pack_##T(const uint64_t *x, uint64_t n, uint64_t mask, uint8_t *out)           \
	{                                                                                          \
		for (uint64_t i = 0; i < n; i++) {                                                 \
			T v = (T)(x[i] & mask);                                                    \
			memcpy(out + i * sizeof v, &v, sizeof v);                                  \
		}                                                                                  \
	}                                                                                          \
	static void unpack_##T(const uint8_t *in, uint64_t n, uint64_t mask, uint64_t *x)          \
	{                                                                                          \
		for (uint64_t i = 0; i < n; i++) {                                                 \
			T v;                                                                       \
			memcpy(&v, in + i * sizeof v, sizeof v);                                   \
			x[i] = (uint64_t)v & mask;                                                 \
		}                                                                                  \
	}
RING_WORDS(uint8_t)
RING_WORDS(uint16_t)
RING_WORDS(uint32_t)
RING_WORDS(uint64_t)

/* The native packing of elements of nb bytes, or NULLs. */
struct ring_words {
	void (*pack)(const uint64_t *x, uint64_t n, uint64_t mask, uint8_t *out);
	void (*unpack)(const uint8_t *in, uint64_t n, uint64_t mask, uint64_t *x);
};
static const struct ring_words ring_words[9] = {
	[1] = {pack_uint8_t, unpack_uint8_t},
	[2] = {pack_uint16_t, unpack_uint16_t},
	[4] = {pack_uint32_t, unpack_uint32_t},
	[8] = {pack_uint64_t, unpack_uint64_t},
};

void secagg_ring_pack(uint32_t bits, const uint64_t *x, uint64_t n, uint8_t *out)
{
	const uint32_t nb = secagg_ring_bytes(bits);
	const uint64_t mask = secagg_ring_mask(bits);
	if (RING_NATIVE && ring_words[nb].pack)
		return ring_words[nb].pack(x, n, mask, out);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = x[i] & mask;
		for (uint32_t b = 0; b < nb; b++)
			out[i * nb + b] = (uint8_t)(v >> (8 * b));
	}
}

void secagg_ring_unpack(uint32_t bits, const uint8_t *in, uint64_t n, uint64_t *x)
{
	const uint32_t nb = secagg_ring_bytes(bits);
	const uint64_t mask = secagg_ring_mask(bits);
	if (RING_NATIVE && ring_words[nb].unpack)
		return ring_words[nb].unpack(in, n, mask, x);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = 0;
		for (uint32_t b = 0; b < nb; b++)
			v |= (uint64_t)in[i * nb + b] << (8 * b);
		x[i] = v & mask;
	}
}
