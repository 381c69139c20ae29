/* SPDX-License-Identifier: Apache-2.0 */
/* Client partitions of a corpus's sentences: iid shards (FedAtt),
 * Dirichlet allocation over categories (Hsu et al. 2019; FedNLP) and
 * Dirichlet client sizes (FedNLP's quantity skew), each a pure function of
 * its arguments and the seed. */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stddef.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/rng.h"
#include "fedrun/text.h"

/* Redraws of the Dirichlet proportions before giving up on the floor: as
 * many as use 2^23 Gamma variates (n_cat x clients a draw), and at least
 * 1000. A redraw only computes the client sizes its proportions give (no
 * shuffle), so the budget costs about a second at worst; the draws are the
 * same stream as when the budget was 1000, so every partition found within
 * 1000 draws is unchanged. */
#define DIRICHLET_MIN_TRIES 1000
#define DIRICHLET_VARIATES (UINT64_C(1) << 23)

int fedrun_partition_iid(uint64_t n_sent, uint32_t clients, uint64_t seed, uint32_t stream,
			 uint32_t *assign)
{
	if (clients == 0)
		return fedrun_error(FEDRUN_EINVAL, "partition: zero clients");
	if (n_sent > UINT32_MAX)
		return fedrun_error(FEDRUN_EINVAL, "partition: %llu sentences: at most %u",
				    (unsigned long long)n_sent, UINT32_MAX);
	if (n_sent < clients)
		return fedrun_error(FEDRUN_EINVAL,
				    "partition: %llu sentences cannot be split over %u clients "
				    "(each needs at least one)",
				    (unsigned long long)n_sent, clients);
	uint32_t *perm = malloc(n_sent * sizeof perm[0]);
	if (!perm)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < n_sent; i++)
		perm[i] = (uint32_t)i;
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, FEDRUN_TEXT_RNG_ROUND, stream);
	fedrun_rng_shuffle_u32(&r, perm, n_sent);
	/* Shard k is positions [k q + min(k, extra), ...) of the shuffled order:
	 * the first `extra` shards hold q + 1 sentences, the rest q. */
	uint64_t q = n_sent / clients, extra = n_sent % clients, i = 0;
	for (uint32_t k = 0; k < clients; k++) {
		uint64_t size = q + (k < extra);
		for (uint64_t j = 0; j < size; j++)
			assign[perm[i++]] = k;
	}
	free(perm);
	return 0;
}

/* One draw of p ~ Dir(alpha 1_K) into p[0..K). Gamma(alpha) variables are
 * normalised (the standard construction); for alpha < 1 the boost
 * Gamma(a) = Gamma(a + 1) U^(1/a) (Marsaglia and Tsang 2000) is taken in
 * log space, because U^(1/a) underflows to 0 for every k when a is tiny. */
static void draw_dirichlet(struct fedrun_rng *r, uint32_t K, double alpha, double *p)
{
	double max = -INFINITY;
	for (uint32_t k = 0; k < K; k++) {
		double lg;
		if (alpha >= 1.0) {
			lg = log(fedrun_rng_gamma(r, alpha));
		} else {
			double u = fedrun_rng_uniform(r);
			lg = log(fedrun_rng_gamma(r, alpha + 1.0)) + log(u) / alpha;
		}
		p[k] = lg;
		if (lg > max)
			max = lg;
	}
	double sum = 0;
	for (uint32_t k = 0; k < K; k++) {
		p[k] = exp(p[k] - max);
		sum += p[k];
	}
	for (uint32_t k = 0; k < K; k++)
		p[k] /= sum;
}

static int check_alpha(uint32_t clients, double alpha)
{
	if (clients == 0)
		return fedrun_error(FEDRUN_EINVAL, "partition: zero clients");
	if (!(alpha > 0) || !isfinite(alpha))
		return fedrun_error(FEDRUN_EINVAL,
				    "partition: Dirichlet alpha must be a positive number, got %g",
				    alpha);
	return 0;
}

int fedrun_partition_dirichlet_props(uint32_t n_cat, uint32_t clients, double alpha, uint64_t seed,
				     uint32_t stream, double *props)
{
	int rc = check_alpha(clients, alpha);
	if (rc < 0)
		return rc;
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, FEDRUN_TEXT_RNG_ROUND + 1, stream);
	for (uint32_t c = 0; c < n_cat; c++)
		draw_dirichlet(&r, clients, alpha, props + (uint64_t)c * clients);
	return 0;
}

/* Where client k's share of a category of n sentences ends, the
 * proportions up to k summing to cum: floor(n cum), n for the last client. */
static uint64_t cut_end(double cum, uint64_t n, bool last)
{
	uint64_t to = last ? n : (uint64_t)floor(cum * (double)n);
	return to > n ? n : to;
}

/* The client sizes fedrun_partition_by_props gives with `props`, from the
 * categories' sizes count[0..n_cat) alone. */
static void props_sizes(uint32_t n_cat, uint32_t clients, const uint64_t *count,
			const double *props, uint64_t *size)
{
	memset(size, 0, clients * sizeof size[0]);
	for (uint32_t c = 0; c < n_cat; c++) {
		const double *p = props + (uint64_t)c * clients;
		double cum = 0;
		uint64_t from = 0;
		for (uint32_t k = 0; k < clients; k++) {
			cum += p[k];
			uint64_t to = cut_end(cum, count[c], k + 1 == clients);
			if (to > from) {
				size[k] += to - from;
				from = to;
			}
		}
	}
}

int fedrun_partition_by_props(uint64_t n_sent, const uint32_t *category, uint32_t n_cat,
			      uint32_t clients, const double *props, uint64_t seed, uint32_t stream,
			      uint32_t *assign)
{
	if (clients == 0)
		return fedrun_error(FEDRUN_EINVAL, "partition: zero clients");
	if (n_sent > UINT32_MAX)
		return fedrun_error(FEDRUN_EINVAL, "partition: %llu sentences: at most %u",
				    (unsigned long long)n_sent, UINT32_MAX);
	for (uint64_t s = 0; category && s < n_sent; s++)
		if (category[s] >= n_cat)
			return fedrun_error(FEDRUN_EINVAL,
					    "partition: sentence %llu has category %u of %u",
					    (unsigned long long)s, category[s], n_cat);
	if (n_cat == 0 && n_sent > 0)
		return fedrun_error(FEDRUN_EINVAL, "partition: sentences but no categories");
	/* Sentences grouped by category, each group in corpus order. */
	uint64_t *start = calloc((uint64_t)n_cat + 1, sizeof start[0]);
	uint32_t *idx = malloc((n_sent ? n_sent : 1) * sizeof idx[0]);
	if (!start || !idx) {
		free(start);
		free(idx);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	for (uint64_t s = 0; s < n_sent; s++)
		start[(category ? category[s] : 0) + 1]++;
	for (uint32_t c = 0; c < n_cat; c++)
		start[c + 1] += start[c];
	for (uint64_t s = 0; s < n_sent; s++)
		idx[start[category ? category[s] : 0]++] = (uint32_t)s;
	for (uint32_t c = n_cat; c > 0; c--)
		start[c] = start[c - 1];
	start[0] = 0;

	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, FEDRUN_TEXT_RNG_ROUND, stream);
	for (uint32_t c = 0; c < n_cat; c++) {
		uint32_t *v = idx + start[c];
		uint64_t n = start[c + 1] - start[c], from = 0;
		const double *p = props + (uint64_t)c * clients;
		fedrun_rng_shuffle_u32(&r, v, n);
		/* Cut the shuffled category at floor(n * cumsum(p)), as
		 * np.split(idx, (np.cumsum(p) * n).astype(int)[:-1]) does in
		 * FedNLP; the last client takes the rest, so rounding never
		 * loses a sentence. */
		double cum = 0;
		for (uint32_t k = 0; k < clients; k++) {
			cum += p[k];
			uint64_t to = cut_end(cum, n, k + 1 == clients);
			for (; from < to; from++)
				assign[v[from]] = k;
		}
	}
	free(start);
	free(idx);
	return 0;
}

int fedrun_partition_dirichlet(uint64_t n_sent, const uint32_t *category, uint32_t n_cat,
			       uint32_t clients, double alpha, uint64_t min_sent, uint64_t seed,
			       uint32_t stream, uint32_t *assign, double *props_out)
{
	int rc = check_alpha(clients, alpha);
	if (rc < 0)
		return rc;
	if (min_sent == 0)
		min_sent = 1;
	if (n_sent / clients < min_sent)
		return fedrun_error(FEDRUN_EINVAL,
				    "partition: %llu sentences cannot give each of %u clients "
				    "at least %llu",
				    (unsigned long long)n_sent, clients,
				    (unsigned long long)min_sent);
	double *props = malloc((uint64_t)n_cat * clients * sizeof props[0]);
	uint64_t *size = malloc(clients * sizeof size[0]);
	uint64_t *count = calloc(n_cat ? n_cat : 1, sizeof count[0]);
	if (!props || !size || !count) {
		free(props);
		free(size);
		free(count);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	for (uint64_t s = 0; s < n_sent; s++) {
		uint32_t c = category ? category[s] : 0;
		if (c >= n_cat) { /* fedrun_partition_by_props names it */
			rc = fedrun_partition_by_props(n_sent, category, n_cat, clients, props, seed,
						       stream, assign);
			goto out;
		}
		count[c]++;
	}
	/* One stream of proportions across tries, so that each try is a new
	 * draw and the whole sequence is still fixed by the seed. */
	struct fedrun_rng r;
	fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, FEDRUN_TEXT_RNG_ROUND + 1, stream);
	uint64_t max_tries = DIRICHLET_VARIATES / ((uint64_t)(n_cat ? n_cat : 1) * clients);
	if (max_tries < DIRICHLET_MIN_TRIES)
		max_tries = DIRICHLET_MIN_TRIES;
	uint64_t tries;
	for (tries = 0; tries < max_tries; tries++) {
		for (uint32_t c = 0; c < n_cat; c++)
			draw_dirichlet(&r, clients, alpha, props + (uint64_t)c * clients);
		props_sizes(n_cat, clients, count, props, size);
		uint64_t smallest = size[0];
		for (uint32_t k = 1; k < clients; k++)
			if (size[k] < smallest)
				smallest = size[k];
		if (smallest >= min_sent)
			break;
	}
	if (tries == max_tries) {
		char need[64] = "no sentence";
		if (min_sent > 1)
			snprintf(need, sizeof need, "fewer than %llu sentences",
				 (unsigned long long)min_sent);
		char over[64] = "client sizes";
		if (category)
			snprintf(over, sizeof over, "%u categories", n_cat);
		rc = fedrun_error(FEDRUN_EINVAL,
				  "partition: in each of %llu draws of Dirichlet(alpha = %g) over %s, "
				  "some of the %u clients got %s; use a larger alpha or fewer clients",
				  (unsigned long long)max_tries, alpha, over, clients, need);
		goto out;
	}
	rc = fedrun_partition_by_props(n_sent, category, n_cat, clients, props, seed, stream,
				       assign);
	if (rc < 0)
		goto out;
	if (props_out)
		memcpy(props_out, props, (uint64_t)n_cat * clients * sizeof props[0]);
out:
	free(props);
	free(size);
	free(count);
	return rc;
}

int fedrun_partition_quantity(uint64_t n_sent, uint32_t clients, double alpha, uint64_t min_sent,
			      uint64_t seed, uint32_t stream, uint32_t *assign, double *props)
{
	return fedrun_partition_dirichlet(n_sent, NULL, 1, clients, alpha, min_sent, seed, stream,
					  assign, props);
}

/* ---- the partition section ---- */

static const struct fedrun_opt partition_spec[] = {
    {"scheme", FEDRUN_OPT_CHOICE, offsetof(struct fedrun_partition_opts, scheme), 0, 0, 0, 0, "iid",
     "iid|files|dirichlet|quantity"},
    {"clients", FEDRUN_OPT_INT, offsetof(struct fedrun_partition_opts, clients),
     FEDRUN_OPT_OPTIONAL, 1, 1e6, 0, NULL, NULL},
    {"alpha", FEDRUN_OPT_NUMBER, offsetof(struct fedrun_partition_opts, alpha),
     FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_MIN_OPEN, 0, 1e9, 0, NULL, NULL},
    {"min_sentences", FEDRUN_OPT_INT, offsetof(struct fedrun_partition_opts, min_sentences),
     FEDRUN_OPT_OPTIONAL, 1, 1e9, 0, NULL, NULL},
    {"seed", FEDRUN_OPT_INT, offsetof(struct fedrun_partition_opts, seed), FEDRUN_OPT_OPTIONAL, 0,
     9007199254740992.0, 0, NULL, NULL},
    {"eval", FEDRUN_OPT_CHOICE, offsetof(struct fedrun_partition_opts, eval), 0, 0, 0, 0,
     "server", "server|clients"},
    FEDRUN_OPT_END_,
};

int fedrun_partition_opts_parse(json_t *section, const char *path,
				struct fedrun_partition_opts *po)
{
	char ppath[128];
	snprintf(ppath, sizeof ppath, "%s.partition", path);
	json_t *p = json_object_get(section, "partition");
	if (!p) {
		p = json_object();
		if (!p || json_object_set_new(section, "partition", p) < 0)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	po->clients = 0;
	po->alpha = NAN;
	po->seed = -1;
	po->min_sentences = 0;
	int rc = fedrun_opts_parse(partition_spec, p, ppath, po);
	if (rc < 0)
		return rc;
	const bool dir = po->scheme == FEDRUN_PARTITION_DIRICHLET ||
			 po->scheme == FEDRUN_PARTITION_QUANTITY;
	const char *scheme = po->scheme == FEDRUN_PARTITION_QUANTITY ? "quantity" : "dirichlet";
	if (!dir && po->min_sentences)
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.min_sentences: only for schemes \"dirichlet\" and "
				    "\"quantity\" (iid shards differ by at most one sentence)",
				    ppath);
	if (dir && !po->min_sentences) {
		po->min_sentences = 1;
		json_object_set_new(p, "min_sentences", json_integer(1));
	}
	if (dir && isnan(po->alpha))
		return fedrun_error(FEDRUN_ECONFIG, "%s.alpha: required key is missing (scheme \"%s\")",
				    ppath, scheme);
	if (!dir && !isnan(po->alpha))
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.alpha: only for schemes \"dirichlet\" and \"quantity\"", ppath);
	if (po->scheme != FEDRUN_PARTITION_FILES && po->clients == 0)
		return fedrun_error(FEDRUN_ECONFIG, "%s.clients: required key is missing", ppath);
	return 0;
}
