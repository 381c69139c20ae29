/* SPDX-License-Identifier: Apache-2.0 */
/* Who shares secrets and masks with whom. SecAgg (Bonawitz et al. 2017):
 * everyone with everyone. SecAgg+ (Bell et al. 2020, sec. 3.1): a sparse
 * graph of degree O(log n); like Flower's implementation we take the
 * Harary graph H(n, d) on a random permutation of the clients: on a ring
 * of the permuted clients, each is linked to the d/2 nearest on either
 * side. The permutation comes from the round's public seed, so that every
 * party computes the same graph; it keeps a server from choosing who
 * neighbours whom. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "fedrun/error.h"
#include "internal.h"

int secagg_graph_init(struct secagg_graph *g, const struct secagg_params *p)
{
	memset(g, 0, sizeof *g);
	g->n = p->n;
	g->complete = p->graph == SECAGG_COMPLETE;
	if (g->complete)
		return 0;
	g->half = (p->num_shares - 1) / 2;
	g->perm = malloc((size_t)p->n * sizeof *g->perm);
	g->pos = malloc((size_t)p->n * sizeof *g->pos);
	if (!g->perm || !g->pos) {
		secagg_graph_fini(g);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	/* Fisher-Yates with unbiased draws (rejection) from ChaCha20 keyed by
	 * BLAKE2b(seed, round). */
	uint8_t in[12], key[randombytes_SEEDBYTES];
	for (int i = 0; i < 8; i++)
		in[i] = (uint8_t)(p->seed >> (8 * i));
	for (int i = 0; i < 4; i++)
		in[8 + i] = (uint8_t)(p->round >> (8 * i));
	crypto_generichash(key, sizeof key, in, sizeof in, (const uint8_t *)"fedrun-secagg-graph",
			   19);
	uint32_t buf[256];
	uint32_t used = 256;
	uint32_t block = 0;
	for (uint32_t i = 0; i < p->n; i++)
		g->perm[i] = i;
	for (uint32_t i = p->n - 1; i > 0; i--) {
		const uint32_t bound = i + 1, limit = UINT32_MAX - UINT32_MAX % bound;
		uint32_t r;
		do {
			if (used == 256) {
				secagg_keystream(key, block, (uint8_t *)buf, sizeof buf);
				block += sizeof buf / 64;
				used = 0;
			}
			r = buf[used++];
		} while (r >= limit);
		uint32_t j = r % bound, tmp = g->perm[i];
		g->perm[i] = g->perm[j];
		g->perm[j] = tmp;
	}
	for (uint32_t i = 0; i < p->n; i++)
		g->pos[g->perm[i]] = i;
	return 0;
}

void secagg_graph_fini(struct secagg_graph *g)
{
	free(g->perm);
	free(g->pos);
	memset(g, 0, sizeof *g);
}

uint32_t secagg_graph_degree(const struct secagg_graph *g)
{
	return g->complete ? g->n - 1 : 2 * g->half;
}

bool secagg_graph_linked(const struct secagg_graph *g, uint32_t u, uint32_t v)
{
	if (u == v || u >= g->n || v >= g->n)
		return false;
	if (g->complete)
		return true;
	uint32_t a = g->pos[u], b = g->pos[v];
	uint32_t d = a > b ? a - b : b - a;
	if (g->n - d < d)
		d = g->n - d; /* distance around the ring */
	return d <= g->half;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

uint32_t secagg_graph_neighbours(const struct secagg_graph *g, uint32_t u, uint32_t *out)
{
	uint32_t k = 0;
	if (g->complete) {
		for (uint32_t v = 0; v < g->n; v++)
			if (v != u)
				out[k++] = v;
		return k;
	}
	const uint32_t a = g->pos[u];
	for (uint32_t d = 1; d <= g->half; d++) {
		out[k++] = g->perm[(a + d) % g->n];
		out[k++] = g->perm[(a + g->n - d) % g->n];
	}
	qsort(out, k, sizeof *out, cmp_u32);
	return k;
}
