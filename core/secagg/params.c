/* SPDX-License-Identifier: Apache-2.0 */
/* What every party of a secure-aggregation round agrees on, checked once
 * for all of them. */
#include "config.h"
#include <stdint.h>
#include "fedrun/error.h"
#include "internal.h"

int secagg_params_check(const struct secagg_params *p)
{
	if (p->n < 2)
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: a round needs at least 2 clients, got %u", p->n);
	if (p->n > (1u << 24))
		return fedrun_error(FEDRUN_EINVAL, "secagg: at most %u clients a round, got %u",
				    1u << 24, p->n);
	if (p->bits < SECAGG_MIN_BITS || p->bits > SECAGG_MAX_BITS)
		return fedrun_error(FEDRUN_EINVAL, "secagg: bits must be in [%u, %u], got %u",
				    SECAGG_MIN_BITS, SECAGG_MAX_BITS, p->bits);
	/* The keystream of one mask: at most 2^32 ChaCha20 blocks. */
	if (p->dim == 0 || p->dim > ((uint64_t)1 << 34))
		return fedrun_error(FEDRUN_EINVAL, "secagg: an input of %llu elements (1 to 2^34)",
				    (unsigned long long)p->dim);
	/* The sum and every unpacked input are dim 64-bit words in memory. */
	if (p->dim > SIZE_MAX / sizeof(uint64_t))
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: an input of %llu elements does not fit in memory here",
				    (unsigned long long)p->dim);
	if (p->graph == SECAGG_COMPLETE) {
		if (p->num_shares != p->n)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: the complete graph shares each secret among all %u "
			    "clients, not %u",
			    p->n, p->num_shares);
	} else if (p->graph == SECAGG_SPARSE) {
		if (p->num_shares < 3 || p->num_shares > p->n || p->num_shares % 2 == 0)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "secagg: num_shares must be odd and in [3, %u] (the clients of "
			    "a round), got %u",
			    p->n, p->num_shares);
	} else {
		return fedrun_error(FEDRUN_EINVAL, "secagg: unknown graph %u", p->graph);
	}
	/* t > num_shares / 2: two disjoint sets of t holders cannot both
	 * exist, so no server can collect t b-shares and t s^SK-shares of one
	 * client from honest ones, each of which answers one unmasking
	 * request a round. */
	if (p->threshold <= p->num_shares / 2 || p->threshold > p->num_shares)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "secagg: threshold must be in [%u, %u] (more than half of num_shares "
		    "%u), got %u",
		    p->num_shares / 2 + 1, p->num_shares, p->num_shares, p->threshold);
	return 0;
}

uint64_t secagg_input_bytes(const struct secagg_params *p)
{
	return p->dim * secagg_ring_bytes(p->bits);
}

uint32_t secagg_default_shares(uint32_t n)
{
	uint32_t lg = 0;
	while (lg < 32 && ((uint64_t)1 << lg) < n)
		lg++;
	uint32_t k = 2 * lg + 1;
	uint32_t most = n % 2 ? n : n - 1;
	return k < most ? k : most;
}
