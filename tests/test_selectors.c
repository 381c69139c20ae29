/* SPDX-License-Identifier: Apache-2.0 */
/* The selectors dp_greater, dp_less (Passban et al. 2022, eqs. 2 and 3) and
 * random with count "median", through their ops with a fake host: masks on
 * constructed updates over several rounds and clients, the quantile, the
 * checkpointed per-client state, concurrent calls, metrics and bad configs;
 * and meanest's "tensors" option that the end-to-end test relies on. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/fedrun.h"
#include "fakehost.h"
#include "../plugins/selectors/common.h"

static struct fedrun_registry *reg;

static void teardown(void)
{
	fedrun_registry_destroy(reg);
	reg = NULL;
}

static json_t *cfg(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	ck_assert_msg(j != NULL, "bad test JSON %s: %s", text, e.text);
	return j;
}

static const struct fedrun_selector_ops *selector(const char *name)
{
	return fakehost_plugin(&reg, FEDRUN_KIND_SELECTOR, name)->ops;
}

/* ---- the test model ---------------------------------------------------
 * Groups: 5 encoder tensors (an odd count), 4 decoder tensors (even), and 2
 * tensors that match no prefix; sizes differ so that params_sent is not a
 * multiple of the tensor count. Tensors of a group are interleaved with
 * the others' in the layout, to check that grouping is by name. */
#define NT 11
#define NCLIENTS 4
static const char *const tnames[NT] = {
    "encoder.emb",  "decoder.emb",  "encoder.l0.w", "decoder.l0.w", "encoder.l0.b", "head.w",
    "decoder.l0.b", "encoder.l1.w", "decoder.out",  "encoder.l1.b", "scale"};
/* Tensor indices of each group, in layout order. */
static const uint32_t enc[5] = {0, 2, 4, 7, 9}, dec[4] = {1, 3, 6, 8}, oth[2] = {5, 10};

static void model_layout(struct fedrun_layout *l)
{
	fedrun_layout_init(l);
	for (uint32_t i = 0; i < NT; i++) {
		uint64_t n = 3 + 5 * (uint64_t)i;
		ck_assert_int_eq(fedrun_layout_add(l, tnames[i], 1, &n), 0);
	}
}

/* The update pattern of (client, round): per group, the norms of the
 * tensors' changes are a permutation of 1..m (scaled per client and round)
 * and the expected dp_greater mask is the same permutation of the mask of
 * the norms at or above the median, written out by hand: 1..5 -> median 3;
 * 1..4 -> median 2.5; 1..2 -> median 1.5. dp_less expects the complement. */
static void pattern(uint32_t client, uint32_t round, double *norm, uint8_t *greater)
{
	static const uint8_t m5[5] = {0, 0, 1, 1, 1}, m4[4] = {0, 0, 1, 1}, m2[2] = {0, 1};
	const uint32_t *members[3] = {enc, dec, oth};
	const uint8_t *masks[3] = {m5, m4, m2};
	const uint32_t sizes[3] = {5, 4, 2};
	double scale = 0.5 * (client + 1) * round;
	for (int g = 0; g < 3; g++) {
		uint32_t m = sizes[g], a = (client + round) % 2 ? m - 1 : 1, b = client + 2 * round;
		for (uint32_t j = 0; j < m; j++) {
			uint32_t t = members[g][(a * j + b) % m];
			norm[t] = (j + 1) * scale;
			greater[t] = masks[g][j];
		}
	}
}

/* What the test knows of each client: its parameters after its last round
 * (w_{r−1}), as the selector should remember them. */
struct sim {
	const struct fedrun_layout *l;
	float *prev[NCLIENTS];
	bool seen[NCLIENTS];
	float *before, *after;
};

static void sim_init(struct sim *s, const struct fedrun_layout *l)
{
	memset(s, 0, sizeof *s);
	s->l = l;
	for (int c = 0; c < NCLIENTS; c++)
		ck_assert_ptr_nonnull(s->prev[c] = fedrun_arena_alloc(l->total));
	ck_assert_ptr_nonnull(s->before = fedrun_arena_alloc(l->total));
	ck_assert_ptr_nonnull(s->after = fedrun_arena_alloc(l->total));
}

static void sim_fini(struct sim *s)
{
	for (int c = 0; c < NCLIENTS; c++)
		fedrun_arena_free(s->prev[c]);
	fedrun_arena_free(s->before);
	fedrun_arena_free(s->after);
}

/* Fills s->before (θ_t as received: unrelated to w_{r−1}, so that a
 * selector comparing with it would pick other tensors) and s->after for
 * client c in `round`: w_{r−1} plus, in the first element of each tensor, the
 * pattern's norm, so ||w_r − w_{r−1}|| is exactly that norm (the values are
 * small multiples of 1/2, exact in float). In the client's first round,
 * `after` is arbitrary. Sets `want` to the dp_greater mask. */
static void sim_prepare(struct sim *s, uint32_t c, uint32_t round, uint8_t *want)
{
	const struct fedrun_layout *l = s->l;
	for (uint64_t i = 0; i < l->total; i++)
		s->before[i] = (float)((i * 7 + round) % 11) - 5;
	if (!s->seen[c]) {
		for (uint64_t i = 0; i < l->total; i++)
			s->after[i] = (float)((i * 3 + c) % 13);
		memset(want, 1, NT);
		return;
	}
	double norm[NT];
	pattern(c, round, norm, want);
	memcpy(s->after, s->prev[c], l->total * sizeof(float));
	for (uint32_t t = 0; t < NT; t++)
		s->after[l->t[t].offset] += (float)norm[t];
}

static void sim_commit(struct sim *s, uint32_t c)
{
	memcpy(s->prev[c], s->after, s->l->total * sizeof(float));
	s->seen[c] = true;
}

static void check_metrics(const struct fakehost *fh, const struct fedrun_layout *l, uint32_t c,
			  const uint8_t *mask)
{
	uint64_t sent = 0, params = 0, all = 0;
	for (uint32_t t = 0; t < l->n; t++) {
		all += l->t[t].numel;
		sent += mask[t];
		params += mask[t] ? l->t[t].numel : 0;
	}
	ck_assert_double_eq(fakehost_metric(fh, "selector.sent", c, NULL), (double)sent);
	ck_assert_double_eq(fakehost_metric(fh, "selector.params_sent", c, NULL), (double)params);
	ck_assert_double_eq_tol(fakehost_metric(fh, "selector.saving", c, NULL),
				1.0 - (double)params / (double)all, 1e-15);
}

/* Whether client c takes part in `round`: not everyone every round, so that
 * w_{r−1} comes from different earlier rounds; client 3 first joins in
 * round 3. */
static bool takes_part(uint32_t c, uint32_t round)
{
	return c == 3 ? round >= 3 : (c + round) % 3 != 0;
}

/* Runs rounds [from, to] of the simulation through `st`, checking every
 * mask against the pattern (dp_greater) or its complement (dp_less). */
static void run_rounds(const struct fedrun_selector_ops *ops, void *st, struct fakehost *fh,
		       struct sim *s, uint32_t from, uint32_t to, bool greater)
{
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .rounds = 10, .num_clients = NCLIENTS, .seed = 9, .layout = s->l};
	for (uint32_t r = from; r <= to; r++) {
		ri.round = r;
		for (uint32_t c = 0; c < NCLIENTS; c++) {
			if (!takes_part(c, r))
				continue;
			uint8_t want[NT], mask[NT];
			bool first = !s->seen[c];
			sim_prepare(s, c, r, want);
			if (!greater && !first)
				for (int t = 0; t < NT; t++)
					want[t] = !want[t];
			memset(mask, 7, sizeof mask);
			ck_assert_int_eq(ops->select(st, &ri, c, s->before, s->after, mask), 0);
			for (int t = 0; t < NT; t++)
				ck_assert_msg(mask[t] == want[t],
					      "round %u client %u tensor %s: sent %u, expected %u",
					      r, c, tnames[t], mask[t], want[t]);
			check_metrics(fh, s->l, c, mask);
			sim_commit(s, c);
		}
	}
}

static void check_dp(const char *name, bool greater)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	model_layout(&l);
	const struct fedrun_selector_ops *ops = selector(name);
	json_t *c = cfg("{\"max_clients\": 4}");
	void *st;
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), 0);
	/* The resolved pipeline shows the defaults. */
	ck_assert_double_eq(json_number_value(json_object_get(c, "quantile")), 0.5);
	ck_assert_str_eq(json_string_value(json_object_get(c, "reference")), "previous");
	ck_assert_str_eq(json_string_value(json_object_get(c, "measure")), "norm");
	ck_assert_str_eq(json_string_value(json_object_get(c, "fraction_by")), "tensors");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(c, "groups"), 1)),
			 "decoder.");
	struct sim s;
	sim_init(&s, &l);
	run_rounds(ops, st, &fh, &s, 1, 6, greater);
	/* Every client took part at least twice, so masks other than "all"
	 * were checked for each. */
	ops->destroy(st);
	sim_fini(&s);
	json_decref(c);
	fedrun_layout_fini(&l);
}

START_TEST(test_dp_greater_median)
{
	check_dp("dp_greater", true);
}
END_TEST

START_TEST(test_dp_less_median)
{
	check_dp("dp_less", false);
}
END_TEST

/* dp_greater and dp_less split every update between them: the same
 * threshold, >= on one side and < on the other (eqs. 2 and 3). */
START_TEST(test_dp_complementary)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	model_layout(&l);
	json_t *c = cfg("{\"reference\": \"received\", \"quantile\": 0.37}");
	void *g, *s;
	ck_assert_int_eq(selector("dp_greater")->create(&fh.host, c, &l, &g), 0);
	ck_assert_int_eq(selector("dp_less")->create(&fh.host, c, &l, &s), 0);
	float *before = fedrun_arena_alloc(l.total), *after = fedrun_arena_alloc(l.total);
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, 4, FEDRUN_RNG_PLUGIN, 0, 0);
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .round = 1, .rounds = 1, .num_clients = 1, .layout = &l};
	for (int trial = 0; trial < 20; trial++) {
		for (uint64_t i = 0; i < l.total; i++) {
			before[i] = (float)fedrun_rng_normal(&rng);
			after[i] = before[i] + (float)fedrun_rng_normal(&rng) * (float)(i % 5);
		}
		uint8_t mg[NT], ml[NT];
		ck_assert_int_eq(selector("dp_greater")->select(g, &ri, 0, before, after, mg), 0);
		ck_assert_int_eq(selector("dp_less")->select(s, &ri, 0, before, after, ml), 0);
		for (int t = 0; t < NT; t++)
			ck_assert_uint_eq(mg[t] + ml[t], 1);
	}
	fedrun_arena_free(before);
	fedrun_arena_free(after);
	selector("dp_greater")->destroy(g);
	selector("dp_less")->destroy(s);
	json_decref(c);
	fedrun_layout_fini(&l);
}
END_TEST

/* One select on a layout of one group's tensors with the given change
 * norms (reference "received": w_{r−1} is `before`). */
static void select_norms(const char *name, const char *config, const double *norm, uint32_t n,
			 uint8_t *mask)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	fedrun_layout_init(&l);
	for (uint32_t i = 0; i < n; i++) {
		char tn[32];
		uint64_t one = 1;
		snprintf(tn, sizeof tn, "t%u", i);
		ck_assert_int_eq(fedrun_layout_add(&l, tn, 1, &one), 0);
	}
	float *before = fedrun_arena_alloc(l.total), *after = fedrun_arena_alloc(l.total);
	for (uint32_t i = 0; i < n; i++)
		after[l.t[i].offset] = (float)-norm[i]; /* the norm of a negative change */
	json_t *c = cfg(config);
	void *st;
	const struct fedrun_selector_ops *ops = selector(name);
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), 0);
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .round = 1, .rounds = 1, .num_clients = 1, .layout = &l};
	ck_assert_int_eq(ops->select(st, &ri, 0, before, after, mask), 0);
	ops->destroy(st);
	json_decref(c);
	fedrun_arena_free(before);
	fedrun_arena_free(after);
	fedrun_layout_fini(&l);
}

#define RECV "{\"reference\": \"received\""
static void expect_mask(const char *name, const char *config, const double *norm, uint32_t n,
			const char *want)
{
	uint8_t mask[16];
	char got[17] = {0};
	select_norms(name, config, norm, n, mask);
	for (uint32_t i = 0; i < n; i++)
		got[i] = mask[i] ? '1' : '0';
	ck_assert_msg(strcmp(got, want) == 0, "%s %s: sent %s, expected %s", name, config, got,
		      want);
}

/* The quantile is linear interpolation between order statistics: with
 * norms 1..5, q = 0.25 gives θ = 2 and q = 0.6 gives θ = 3.4. */
START_TEST(test_dp_quantile_masks)
{
	const double five[5] = {5, 1, 4, 2, 3}, four[4] = {40, 10, 30, 20};
	expect_mask("dp_greater", RECV "}", five, 5, "10101");
	expect_mask("dp_less", RECV "}", five, 5, "01010");
	expect_mask("dp_greater", RECV ", \"quantile\": 0.25}", five, 5, "10111");
	/* q = 0.6: θ = 3.4 by interpolation (a nearest-rank quantile would
	 * give 3 and send it). */
	expect_mask("dp_greater", RECV ", \"quantile\": 0.6}", five, 5, "10100");
	expect_mask("dp_less", RECV ", \"quantile\": 0.6}", five, 5, "01011");
	/* Even count: the median is the mean of the middle two (25), so half
	 * go, not the lower median's n/2 + 1. */
	expect_mask("dp_greater", RECV "}", four, 4, "1010");
	expect_mask("dp_less", RECV "}", four, 4, "0101");
	expect_mask("dp_greater", RECV ", \"quantile\": 1}", four, 4, "1000");
	expect_mask("dp_less", RECV ", \"quantile\": 1}", four, 4, "0111");
	expect_mask("dp_greater", RECV ", \"quantile\": 0}", four, 4, "1111");
	expect_mask("dp_less", RECV ", \"quantile\": 0}", four, 4, "0000");
	/* Ties at θ go with dp_greater (eq. 2 has >=). */
	const double tied[4] = {2, 2, 2, 2}, some[5] = {1, 3, 3, 3, 9};
	expect_mask("dp_greater", RECV "}", tied, 4, "1111");
	expect_mask("dp_less", RECV "}", tied, 4, "0000");
	expect_mask("dp_greater", RECV "}", some, 5, "01111");
	/* Names match no default prefix: one group. A single tensor is its
	 * own median and travels with dp_greater. */
	const double one[1] = {7};
	expect_mask("dp_greater", RECV "}", one, 1, "1");
	expect_mask("dp_less", RECV "}", one, 1, "0");
}
END_TEST

/* The norm option: changes (3, 0) and (2, 2) rank one way by L2 (3 >
 * 2.83) and the other by L1 (3 < 4). */
START_TEST(test_dp_norm_l1)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	fedrun_layout_init(&l);
	uint64_t two = 2;
	ck_assert_int_eq(fedrun_layout_add(&l, "a", 1, &two), 0);
	ck_assert_int_eq(fedrun_layout_add(&l, "b", 1, &two), 0);
	float *before = fedrun_arena_alloc(l.total), *after = fedrun_arena_alloc(l.total);
	after[l.t[0].offset] = 3;
	after[l.t[1].offset] = after[l.t[1].offset + 1] = -2;
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .round = 1, .num_clients = 1, .layout = &l};
	const char *configs[2] = {RECV "}", RECV ", \"norm\": \"l1\"}"};
	const uint8_t want[2][2] = {{1, 0}, {0, 1}};
	for (int k = 0; k < 2; k++) {
		json_t *c = cfg(configs[k]);
		void *st;
		uint8_t mask[2];
		ck_assert_int_eq(selector("dp_greater")->create(&fh.host, c, &l, &st), 0);
		ck_assert_int_eq(selector("dp_greater")->select(st, &ri, 0, before, after, mask),
				 0);
		ck_assert_mem_eq(mask, want[k], 2);
		selector("dp_greater")->destroy(st);
		json_decref(c);
	}
	fedrun_arena_free(before);
	fedrun_arena_free(after);
	fedrun_layout_fini(&l);
}
END_TEST

/* ---- measure "mean" and fraction_by "parameters" ----------------------
 * Random layouts of three groups whose tensors differ in size; each tensor
 * changes in its first element only, by a whole number d, so its change
 * norm is |d| exactly (ties included: d is drawn from a few values). The
 * expected mask is computed here directly: with "tensors" the q-quantile of
 * the group's measures as the manual defines it, with "parameters" the
 * threshold, among the group's measures, whose tensors below it hold the
 * share of the group's parameters nearest to q (the lower one on ties). */
#define WT 24

/* One select of client 0 in round 1 through a new `name` selector. */
static void select_once(struct fakehost *fh, const char *name, const char *config,
			const struct fedrun_layout *l, const float *before, const float *after,
			uint8_t *mask)
{
	json_t *c = cfg(config);
	void *st;
	const struct fedrun_selector_ops *ops = selector(name);
	ck_assert_int_eq(ops->create(&fh->host, c, l, &st), 0);
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .round = 1, .rounds = 1, .num_clients = 1, .layout = l};
	ck_assert_int_eq(ops->select(st, &ri, 0, before, after, mask), 0);
	ops->destroy(st);
	json_decref(c);
}
static double direct_quantile(const double *v, uint32_t m, double q)
{
	double s[WT];
	memcpy(s, v, m * sizeof *s);
	for (uint32_t i = 1; i < m; i++) /* insertion sort */
		for (uint32_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
			double x = s[j];
			s[j] = s[j - 1];
			s[j - 1] = x;
		}
	double h = q * (double)(m - 1);
	uint32_t lo = (uint32_t)floor(h);
	return lo >= m - 1 ? s[m - 1] : s[lo] + (h - lo) * (s[lo + 1] - s[lo]);
}

static double direct_by_parameters(const double *v, const uint64_t *w, uint32_t m, double q)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < m; i++)
		total += w[i];
	double best = INFINITY, theta = 0, best_below = 0;
	for (uint32_t t = 0; t < m; t++) {
		uint64_t below = 0;
		for (uint32_t i = 0; i < m; i++)
			below += v[i] < v[t] ? w[i] : 0;
		double d = fabs((double)below - q * (double)total);
		if (d < best || (d == best && (double)below < best_below)) {
			best = d;
			best_below = (double)below;
			theta = v[t];
		}
	}
	return theta;
}

/* The expected mask of dp_greater for one group g of a random layout (see
 * above), and, with "parameters" and distinct measures, the check that the
 * share below θ (dp_less's) is within half a tensor of q, or that the
 * tensor of the largest measure is what is left above it (θ is at most the
 * largest measure, even where q W is nearer to all of the group). */
static void want_group(uint32_t g, uint32_t n, const uint32_t *group, const uint64_t *size,
		       const double *delta, bool mean, bool by_params, double q, uint8_t *want)
{
	double v[WT];
	uint64_t w[WT], total = 0, below = 0, largest = 0;
	uint32_t m = 0, idx[WT];
	for (uint32_t i = 0; i < n; i++)
		if (group[i] == g) {
			v[m] = mean ? delta[i] / sqrt((double)size[i]) : delta[i];
			w[m] = size[i];
			idx[m++] = i;
		}
	double theta = by_params ? direct_by_parameters(v, w, m, q) : direct_quantile(v, m, q);
	bool distinct = true;
	uint32_t top = 0;
	for (uint32_t j = 0; j < m; j++) {
		want[idx[j]] = v[j] >= theta;
		total += w[j];
		below += v[j] < theta ? w[j] : 0;
		largest = w[j] > largest ? w[j] : largest;
		top = v[j] > v[top] ? j : top;
		for (uint32_t k = j + 1; k < m; k++)
			distinct = distinct && v[j] != v[k];
	}
	if (!by_params || !distinct)
		return;
	double off = fabs((double)below - q * (double)total);
	ck_assert_msg(2 * off <= (double)largest ||
			  (below + w[top] == total && off <= (double)w[top]),
		      "group %u: %llu of %llu parameters below θ, q %g", g,
		      (unsigned long long)below, (unsigned long long)total, q);
	ck_assert(off <= (double)largest);
}

START_TEST(test_dp_fraction_by_parameters)
{
	static const char *const prefix[3] = {"encoder.", "decoder.", "head."};
	static const char *const measures[2] = {"norm", "mean"};
	static const char *const by[2] = {"tensors", "parameters"};
	static const double qs[3] = {0.5, 0.3, 0.8};
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, 11, FEDRUN_RNG_PLUGIN, 0, 0);
	for (int trial = 0; trial < 40; trial++) {
		uint32_t n = 3 + fedrun_rng_u32(&rng) % (WT - 3), group[WT];
		uint64_t size[WT];
		double delta[WT];
		struct fedrun_layout l;
		fedrun_layout_init(&l);
		for (uint32_t i = 0; i < n; i++) {
			char name[32];
			group[i] = i < 3 ? i : fedrun_rng_u32(&rng) % 3;
			snprintf(name, sizeof name, "%st%u", prefix[group[i]], i);
			/* sizes from 1 to 40, and 1 to 400 for a quarter of them */
			uint32_t big = fedrun_rng_u32(&rng) % 4 == 0;
			size[i] = 1 + fedrun_rng_u32(&rng) % (big ? 400 : 40);
			ck_assert_int_eq(fedrun_layout_add(&l, name, 1, &size[i]), 0);
			/* every other trial from 5 values: ties */
			delta[i] = (double)(1 + fedrun_rng_u32(&rng) % (trial % 2 ? 5 : 1000));
		}
		float *before = fedrun_arena_alloc(l.total), *after = fedrun_arena_alloc(l.total);
		for (uint64_t i = 0; i < l.total; i++)
			before[i] = after[i] = (float)(i % 7);
		for (uint32_t i = 0; i < n; i++)
			after[l.t[i].offset] -= (float)delta[i];
		for (int k = 0; k < 2 * 2 * 3 * 2; k++) {
			int mi = k / 12, bi = k / 6 % 2, qi = k / 2 % 3, greater = k % 2;
			const char *name = greater ? "dp_greater" : "dp_less";
			char text[160];
			snprintf(
			    text, sizeof text,
			    RECV
			    ", \"measure\": \"%s\", \"fraction_by\": \"%s\", \"quantile\": %g}",
			    measures[mi], by[bi], qs[qi]);
			uint8_t want[WT], mask[WT];
			for (uint32_t g = 0; g < 3; g++)
				want_group(g, n, group, size, delta, mi, bi, qs[qi], want);
			struct fakehost fh;
			fakehost_init(&fh, 1);
			select_once(&fh, name, text, &l, before, after, mask);
			for (uint32_t i = 0; i < n; i++)
				ck_assert_msg(
				    mask[i] == (greater ? want[i] : !want[i]),
				    "trial %d, %s %s: tensor %u (size %llu, change %g): sent %u",
				    trial, name, text, i, (unsigned long long)size[i], delta[i],
				    mask[i]);
			check_metrics(&fh, &l, 0, mask);
		}
		fedrun_arena_free(before);
		fedrun_arena_free(after);
		fedrun_layout_fini(&l);
	}
}
END_TEST

/* By hand: sizes 10, 20, 30, 40 with change norms 4, 3, 2, 1. Half the
 * tensors (median 2.5) is the two of norms 3 and 4, 30 of 100 parameters;
 * half the parameters (50) is nearest to the 40 below θ = 2 (the cuts are
 * at 0, 40, 70 and 90), so dp_less sends the tensor of norm 1 alone and
 * dp_greater the other 60 parameters. With norms 3, 4, 5, 5 measure "mean"
 * gives 3/√10 = 0.95, 4/√20 = 0.89, 5/√30 = 0.91, 5/√40 = 0.79: the largest
 * tensor lowest, so the median sends the first and third where the norm's
 * sends the last two. */
START_TEST(test_dp_fraction_examples)
{
	const uint64_t size[4] = {10, 20, 30, 40};
	const double a[4] = {4, 3, 2, 1}, b[4] = {3, 4, 5, 5};
	const struct {
		const char *name, *config;
		const double *norm;
		const char *want;
	} cases[] = {
	    {"dp_greater", RECV "}", a, "1100"},
	    {"dp_less", RECV "}", a, "0011"},
	    {"dp_greater", RECV ", \"fraction_by\": \"parameters\"}", a, "1110"},
	    {"dp_less", RECV ", \"fraction_by\": \"parameters\"}", a, "0001"},
	    {"dp_greater", RECV ", \"fraction_by\": \"tensors\", \"measure\": \"norm\"}", a,
	     "1100"},
	    {"dp_greater", RECV "}", b, "0011"},
	    {"dp_greater", RECV ", \"measure\": \"mean\"}", b, "1010"},
	    {"dp_less", RECV ", \"measure\": \"mean\"}", b, "0101"},
	    /* mean measures 0.95, 0.89, 0.91, 0.79: cuts at 0, 40 (below
	     * 0.89), 60 (below 0.91), 90; 50 is as near to 40 as to 60, and
	     * the lower cut wins the tie */
	    {"dp_less", RECV ", \"measure\": \"mean\", \"fraction_by\": \"parameters\"}", b,
	     "0001"},
	    /* q 0.55: 55 is nearer to 60 */
	    {"dp_less",
	     RECV ", \"measure\": \"mean\", \"fraction_by\": \"parameters\", \"quantile\": 0.55}",
	     b, "0101"},
	    /* q 1: all but the tensor of the largest measure (the cut at 100
	     * is not one a threshold among the measures gives) */
	    {"dp_less", RECV ", \"fraction_by\": \"parameters\", \"quantile\": 1}", a, "0111"},
	    {"dp_greater", RECV ", \"fraction_by\": \"parameters\", \"quantile\": 0}", a, "1111"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct fakehost fh;
		fakehost_init(&fh, 1);
		struct fedrun_layout l;
		fedrun_layout_init(&l);
		for (int i = 0; i < 4; i++) {
			char tn[16]; /* "t" and any int: GCC -O1 cannot bound i */
			snprintf(tn, sizeof tn, "t%d", i);
			ck_assert_int_eq(fedrun_layout_add(&l, tn, 1, &size[i]), 0);
		}
		float *before = fedrun_arena_alloc(l.total), *after = fedrun_arena_alloc(l.total);
		for (int i = 0; i < 4; i++)
			after[l.t[i].offset] = (float)cases[k].norm[i];
		uint8_t mask[4];
		select_once(&fh, cases[k].name, cases[k].config, &l, before, after, mask);
		char got[5] = {0};
		for (int i = 0; i < 4; i++)
			got[i] = mask[i] ? '1' : '0';
		ck_assert_msg(strcmp(got, cases[k].want) == 0, "%s %s: sent %s, expected %s",
			      cases[k].name, cases[k].config, got, cases[k].want);
		fedrun_arena_free(before);
		fedrun_arena_free(after);
		fedrun_layout_fini(&l);
	}
}
END_TEST

START_TEST(test_quantile_function)
{
	double v[6];
	memcpy(v, (double[]){3, 1, 2}, 3 * sizeof *v);
	ck_assert_double_eq(selgroups_quantile(v, 3, 0.5), 2);
	memcpy(v, (double[]){4, 1, 3, 2}, 4 * sizeof *v);
	ck_assert_double_eq(selgroups_quantile(v, 4, 0.5), 2.5);
	ck_assert_double_eq(v[0], 1); /* sorted in place */
	memcpy(v, (double[]){4, 1, 3, 2}, 4 * sizeof *v);
	ck_assert_double_eq(selgroups_quantile(v, 4, 0), 1);
	ck_assert_double_eq(selgroups_quantile(v, 4, 1), 4);
	ck_assert_double_eq_tol(selgroups_quantile(v, 4, 0.25), 1.75, 1e-15);
	memcpy(v, (double[]){10, 20, 30, 40, 50, 60}, 6 * sizeof *v);
	ck_assert_double_eq_tol(selgroups_quantile(v, 6, 0.9), 55, 1e-12);
	v[0] = 8;
	ck_assert_double_eq(selgroups_quantile(v, 1, 0.5), 8);
	ck_assert_double_eq(selgroups_quantile(v, 1, 1), 8);
	/* θ stays between its two order statistics despite rounding. */
	memcpy(v, (double[]){1, nextafter(1, 2)}, 2 * sizeof *v);
	double t = selgroups_quantile(v, 2, 0.5);
	ck_assert(t >= v[0] && t <= v[1]);
}
END_TEST

/* Groups: custom prefixes, tensors in the first matching prefix, an empty
 * list (one group), and a model that matches none of the defaults. */
START_TEST(test_groups)
{
	struct fedrun_layout l;
	fedrun_layout_init(&l);
	const char *names[] = {"enc.a", "enc.b", "enc.x.c", "dec.a", "dec.b", "other"};
	for (int i = 0; i < 6; i++) {
		uint64_t n = 2;
		ck_assert_int_eq(fedrun_layout_add(&l, names[i], 1, &n), 0);
	}
	struct selgroups g;
	json_t *c = cfg("{\"groups\": [\"enc.x.\", \"enc.\", \"dec.\"]}");
	ck_assert_int_eq(selgroups_init(&g, c, "selector", "groups", true, &l), 0);
	ck_assert_uint_eq(g.n, 4);
	uint32_t want_start[5] = {0, 1, 3, 5, 6}, want_member[6] = {2, 0, 1, 3, 4, 5};
	ck_assert_mem_eq(g.start, want_start, sizeof want_start);
	ck_assert_mem_eq(g.member, want_member, sizeof want_member);
	selgroups_fini(&g);
	json_decref(c);

	c = cfg("{\"groups\": []}");
	ck_assert_int_eq(selgroups_init(&g, c, "selector", "groups", true, &l), 0);
	ck_assert_uint_eq(g.n, 1);
	ck_assert_uint_eq(g.start[1], 6);
	selgroups_fini(&g);
	json_decref(c);

	c = cfg("{}");
	ck_assert_int_eq(selgroups_init(&g, c, "selector", "groups", false, &l), 0);
	ck_assert_uint_eq(g.n, 3); /* encoder., decoder., the rest */
	ck_assert_uint_eq(g.start[2], 0);
	ck_assert_uint_eq(g.start[3], 6);
	ck_assert_ptr_null(json_object_get(c, "groups")); /* not written back */
	selgroups_fini(&g);
	json_decref(c);
	fedrun_layout_fini(&l);

	/* With dp_greater and groups ["enc."]: enc.* norms {1, 2, 3} and the
	 * rest {10, 20, 30}: medians 2 and 20 per group. */
	const double norm[6] = {1, 2, 3, 30, 10, 20};
	uint8_t mask[6];
	struct fakehost fh;
	fakehost_init(&fh, 1);
	fedrun_layout_init(&l);
	for (int i = 0; i < 6; i++) {
		uint64_t n = 1;
		ck_assert_int_eq(fedrun_layout_add(&l, names[i], 1, &n), 0);
	}
	float *before = fedrun_arena_alloc(l.total), *after = fedrun_arena_alloc(l.total);
	for (int i = 0; i < 6; i++)
		after[l.t[i].offset] = (float)norm[i];
	void *st;
	c = cfg(RECV ", \"groups\": [\"enc.\"]}");
	ck_assert_int_eq(selector("dp_greater")->create(&fh.host, c, &l, &st), 0);
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .round = 1, .num_clients = 1, .layout = &l};
	ck_assert_int_eq(selector("dp_greater")->select(st, &ri, 0, before, after, mask), 0);
	ck_assert_mem_eq(mask, ((uint8_t[]){0, 1, 1, 1, 0, 1}), 6);
	selector("dp_greater")->destroy(st);
	json_decref(c);
	/* All six as one group: median 6.5. */
	c = cfg(RECV ", \"groups\": []}");
	ck_assert_int_eq(selector("dp_greater")->create(&fh.host, c, &l, &st), 0);
	ck_assert_int_eq(selector("dp_greater")->select(st, &ri, 0, before, after, mask), 0);
	ck_assert_mem_eq(mask, ((uint8_t[]){0, 0, 0, 1, 1, 1}), 6);
	selector("dp_greater")->destroy(st);
	json_decref(c);
	fedrun_arena_free(before);
	fedrun_arena_free(after);
	fedrun_layout_fini(&l);
}
END_TEST

/* reference "received": w_{r−1} is what the client received, so masks are
 * selective from the first round on and no state is kept; "first":
 * "received" uses the received parameters only until a client has trained. */
START_TEST(test_dp_reference_received)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	model_layout(&l);
	struct sim s;
	sim_init(&s, &l);
	const struct fedrun_selector_ops *ops = selector("dp_greater");
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .round = 1, .num_clients = NCLIENTS, .layout = &l};
	const char *configs[2] = {RECV "}", "{\"first\": \"received\", \"max_clients\": 4}"};
	for (int k = 0; k < 2; k++) {
		json_t *c = cfg(configs[k]);
		void *st;
		ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), 0);
		const struct fedrun_state_blob *blobs;
		uint32_t n = 99;
		ck_assert_int_eq(ops->state(st, &blobs, &n), 0);
		ck_assert_uint_eq(n, k == 0 ? 0 : 5); /* "received" keeps nothing */
		uint8_t want[NT], mask[NT];
		/* The pattern relative to `before`, in round 1: sim_prepare sets
		 * `before` (a function of the round only), which then becomes
		 * the w_{r−1} that `after` is built from. */
		s.seen[2] = true;
		sim_prepare(&s, 2, 1, want);
		memcpy(s.prev[2], s.before, l.total * sizeof(float));
		sim_prepare(&s, 2, 1, want);
		ck_assert_int_eq(ops->select(st, &ri, 2, s.before, s.after, mask), 0);
		ck_assert_mem_eq(mask, want, NT);
		ops->destroy(st);
		json_decref(c);
	}
	sim_fini(&s);
	fedrun_layout_fini(&l);
}
END_TEST

/* The per-client references go through the state blobs: a selector that is
 * created afresh and restored in place, as --resume does, continues with
 * the same masks; one that is not restored sends everything. */
START_TEST(test_dp_state_roundtrip)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	model_layout(&l);
	const struct fedrun_selector_ops *ops = selector("dp_less");
	json_t *c = cfg("{\"max_clients\": 5}");
	void *a, *b, *fresh;
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &a), 0);
	struct sim s;
	sim_init(&s, &l);
	run_rounds(ops, a, &fh, &s, 1, 3, false);

	/* The checkpoint: a copy of every blob. */
	const struct fedrun_state_blob *blobs;
	uint32_t n;
	ck_assert_int_eq(ops->state(a, &blobs, &n), 0);
	ck_assert_uint_eq(n, 1 + 5);
	ck_assert_str_eq(blobs[0].name, "have");
	ck_assert_uint_eq(blobs[0].bytes, 5);
	ck_assert_mem_eq(blobs[0].data, ((uint8_t[]){1, 1, 1, 1, 0}), 5);
	void *saved[6];
	char names[6][32];
	uint64_t bytes[6];
	for (uint32_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof names[i], "%s", blobs[i].name);
		bytes[i] = blobs[i].bytes;
		ck_assert_ptr_nonnull(saved[i] = malloc(bytes[i]));
		memcpy(saved[i], blobs[i].data, bytes[i]);
	}
	ck_assert_str_eq(names[3], "ref.2");
	ck_assert_uint_eq(bytes[3], l.total * sizeof(float));
	ck_assert_mem_eq(saved[3], s.prev[2], l.total * sizeof(float));
	/* An empty slot is saved as zeros. */
	for (uint64_t i = 0; i < l.total; i++)
		ck_assert(((float *)saved[5])[i] == 0);

	/* The restore: same list, filled in place. */
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &b), 0);
	ck_assert_int_eq(ops->state(b, &blobs, &n), 0);
	ck_assert_uint_eq(n, 6);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_str_eq(blobs[i].name, names[i]);
		ck_assert_uint_eq(blobs[i].bytes, bytes[i]);
		memcpy(blobs[i].data, saved[i], bytes[i]);
	}
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &fresh), 0);

	/* Round 4 on the original, the restored and the fresh selector. */
	struct sim s2 = s;
	for (uint32_t r = 4; r <= 5; r++) {
		struct fedrun_round_info ri = {
		    .size = sizeof ri, .round = r, .num_clients = NCLIENTS, .layout = &l};
		for (uint32_t cl = 0; cl < NCLIENTS; cl++) {
			if (!takes_part(cl, r))
				continue;
			uint8_t want[NT], ma[NT], mb[NT], mf[NT];
			sim_prepare(&s2, cl, r, want);
			for (int t = 0; t < NT; t++)
				want[t] = !want[t];
			ck_assert_int_eq(ops->select(a, &ri, cl, s2.before, s2.after, ma), 0);
			ck_assert_int_eq(ops->select(b, &ri, cl, s2.before, s2.after, mb), 0);
			ck_assert_mem_eq(ma, want, NT);
			ck_assert_mem_eq(mb, want, NT);
			if (r == 4) {
				ck_assert_int_eq(
				    ops->select(fresh, &ri, cl, s2.before, s2.after, mf), 0);
				ck_assert_mem_eq(
				    mf, ((uint8_t[NT]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}), NT);
			}
			sim_commit(&s2, cl);
		}
	}
	/* After the restore, the next checkpoint lists the same blobs with the
	 * same contents as the original's. */
	const struct fedrun_state_blob *ba, *bb;
	uint32_t na, nb;
	ck_assert_int_eq(ops->state(a, &ba, &na), 0);
	ck_assert_int_eq(ops->state(b, &bb, &nb), 0);
	ck_assert_uint_eq(na, nb);
	for (uint32_t i = 0; i < na; i++) {
		ck_assert_uint_eq(ba[i].bytes, bb[i].bytes);
		ck_assert_mem_eq(ba[i].data, bb[i].data, ba[i].bytes);
	}
	for (uint32_t i = 0; i < 6; i++)
		free(saved[i]);
	ops->destroy(a);
	ops->destroy(b);
	ops->destroy(fresh);
	sim_fini(&s);
	json_decref(c);
	fedrun_layout_fini(&l);
}
END_TEST

/* ---- concurrency -------------------------------------------------------
 * select runs on worker threads, concurrently for different clients. The
 * fake host's metric store is not thread-safe, so these runs count metrics
 * under a lock of their own. */
static pthread_mutex_t metric_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned metric_calls;

static int locked_metric(void *ctx, const char *name, int64_t client, const char *tensor,
			 double value)
{
	pthread_mutex_lock(&metric_lock);
	metric_calls++;
	pthread_mutex_unlock(&metric_lock);
	return 0;
}

#define PCLIENTS 8
#define PROUNDS 4
struct par_job {
	const struct fedrun_selector_ops *ops;
	void *st;
	const struct fedrun_layout *l;
	uint32_t client;
	uint8_t mask[PROUNDS][NT];
	int rc;
};

/* The parameters of client c after round r: tensor t changes by an amount
 * that depends on (c, r, t). */
static void par_params(const struct fedrun_layout *l, uint32_t c, uint32_t r, float *x)
{
	for (uint32_t t = 0; t < l->n; t++)
		for (uint64_t i = 0; i < l->t[t].numel; i++)
			x[l->t[t].offset + i] = (float)((c * 31 + r * (t * 7 + 3) + i) % 17);
}

static void *par_run(void *p)
{
	struct par_job *j = p;
	float *before = fedrun_arena_alloc(j->l->total), *after = fedrun_arena_alloc(j->l->total);
	for (uint32_t r = 1; r <= PROUNDS && j->rc == 0; r++) {
		struct fedrun_round_info ri = {
		    .size = sizeof ri, .round = r, .num_clients = PCLIENTS, .layout = j->l};
		par_params(j->l, j->client, r, after);
		j->rc = j->ops->select(j->st, &ri, j->client, before, after, j->mask[r - 1]);
	}
	fedrun_arena_free(before);
	fedrun_arena_free(after);
	return NULL;
}

START_TEST(test_dp_concurrent)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	fh.host.metric = locked_metric;
	struct fedrun_layout l;
	model_layout(&l);
	const struct fedrun_selector_ops *ops = selector("dp_greater");
	json_t *c = cfg("{\"max_clients\": 8}");
	void *seq, *par;
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &seq), 0);
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &par), 0);
	struct par_job jobs[PCLIENTS], ref[PCLIENTS];
	pthread_t tid[PCLIENTS];
	for (uint32_t k = 0; k < PCLIENTS; k++) {
		ref[k] = (struct par_job){.ops = ops, .st = seq, .l = &l, .client = k};
		par_run(&ref[k]);
		ck_assert_int_eq(ref[k].rc, 0);
		jobs[k] = (struct par_job){.ops = ops, .st = par, .l = &l, .client = k};
	}
	for (uint32_t k = 0; k < PCLIENTS; k++)
		ck_assert_int_eq(pthread_create(&tid[k], NULL, par_run, &jobs[k]), 0);
	for (uint32_t k = 0; k < PCLIENTS; k++)
		pthread_join(tid[k], NULL);
	int selective = 0;
	for (uint32_t k = 0; k < PCLIENTS; k++) {
		ck_assert_int_eq(jobs[k].rc, 0);
		ck_assert_mem_eq(jobs[k].mask, ref[k].mask, sizeof ref[k].mask);
		for (int t = 0; t < NT; t++)
			selective += !ref[k].mask[1][t];
	}
	ck_assert_int_gt(selective, 0);
	ck_assert_uint_eq(metric_calls, 2 * 3 * PCLIENTS * PROUNDS);
	ops->destroy(seq);
	ops->destroy(par);
	json_decref(c);
	fedrun_layout_fini(&l);
}
END_TEST

/* random with count "median": per group, as many tensors as dp_greater
 * sends with the median, ⌈m/2⌉ (3 of 5, 2 of 4, 1 of 2), chosen at random
 * within the group from the (seed, round, client) stream. */
START_TEST(test_random_median)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	model_layout(&l);
	const struct fedrun_selector_ops *ops = selector("random");
	json_t *c = cfg("{\"count\": \"median\"}");
	void *st;
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), 0);
	ck_assert_ptr_nonnull(json_object_get(c, "groups"));
	const uint32_t *members[3] = {enc, dec, oth};
	const uint32_t sizes[3] = {5, 4, 2}, want[3] = {3, 2, 1};
	uint32_t hits[NT] = {0};
	int differs = 0;
	for (uint32_t r = 1; r <= 30; r++)
		for (uint32_t cl = 0; cl < 4; cl++) {
			struct fedrun_round_info ri = {.size = sizeof ri,
						       .round = r,
						       .seed = 3,
						       .num_clients = 4,
						       .layout = &l};
			uint8_t mask[NT], again[NT];
			ck_assert_int_eq(ops->select(st, &ri, cl, NULL, NULL, mask), 0);
			for (int g = 0; g < 3; g++) {
				uint32_t sent = 0;
				for (uint32_t j = 0; j < sizes[g]; j++)
					sent += mask[members[g][j]];
				ck_assert_uint_eq(sent, want[g]);
			}
			for (int t = 0; t < NT; t++)
				hits[t] += mask[t];
			check_metrics(&fh, &l, cl, mask);
			ck_assert_int_eq(ops->select(st, &ri, cl, NULL, NULL, again), 0);
			ck_assert_mem_eq(mask, again, NT);
			ri.round = r + 100;
			ck_assert_int_eq(ops->select(st, &ri, cl, NULL, NULL, again), 0);
			differs += memcmp(mask, again, NT) != 0;
		}
	ck_assert_int_gt(differs, 60);
	/* Every tensor is chosen sometimes and skipped sometimes. */
	for (int t = 0; t < NT; t++)
		ck_assert(hits[t] > 0 && hits[t] < 120);
	ops->destroy(st);
	json_decref(c);

	/* count "fraction" is the old behaviour and ignores groups. */
	c = cfg("{\"fraction\": 0.3}");
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), 0);
	ck_assert_ptr_null(json_object_get(c, "groups"));
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .round = 1, .num_clients = 1, .layout = &l};
	uint8_t mask[NT];
	ck_assert_int_eq(ops->select(st, &ri, 0, NULL, NULL, mask), 0);
	uint32_t sent = 0;
	for (int t = 0; t < NT; t++)
		sent += mask[t];
	ck_assert_uint_eq(sent, 3);
	ops->destroy(st);
	json_decref(c);
	fedrun_layout_fini(&l);
}
END_TEST

static void refuse(const char *plugin, const char *config, const char *want)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	model_layout(&l);
	json_t *c = cfg(config);
	void *st = NULL;
	ck_assert_int_eq(selector(plugin)->create(&fh.host, c, &l, &st), FEDRUN_ECONFIG);
	ck_assert_msg(strstr(fedrun_error_message(), want) == fedrun_error_message(),
		      "%s %s: message \"%s\" does not start with \"%s\"", plugin, config,
		      fedrun_error_message(), want);
	json_decref(c);
	fedrun_layout_fini(&l);
}

START_TEST(test_bad_configs)
{
	refuse("dp_greater", "{}", "selector.max_clients: required with reference \"previous\"");
	refuse("dp_less", "{\"max_clients\": 0}",
	       "selector.max_clients: expected an integer in [1, 65536], got 0");
	refuse("dp_greater", "{\"max_clients\": 2.5}", "selector.max_clients: expected an integer");
	refuse("dp_greater", RECV ", \"quantile\": 1.5}",
	       "selector.quantile: expected a number in [0, 1], got 1.5");
	refuse("dp_greater", "{\"reference\": \"last\", \"max_clients\": 1}",
	       "selector.reference: expected one of {previous,received}, got \"last\"");
	refuse("dp_greater", RECV ", \"norm\": \"l3\"}", "selector.norm: expected one of {l2,l1}");
	refuse("dp_less", RECV ", \"first\": \"none\"}",
	       "selector.first: expected one of {all,received}");
	refuse("dp_greater", RECV ", \"groups\": \"encoder.\"}",
	       "selector.groups: expected an array");
	refuse("dp_greater", RECV ", \"groups\": [\"encoder.\", 3]}",
	       "selector.groups[1]: expected a non-empty name prefix");
	refuse("dp_greater", RECV ", \"groups\": [\"\"]}",
	       "selector.groups[0]: expected a non-empty name prefix");
	refuse("dp_less", RECV ", \"groups\": [\"a.\", \"b.\", \"a.\"]}",
	       "selector.groups[2]: \"a.\" repeats selector.groups[0]");
	refuse("dp_greater", RECV ", \"threshold\": 1}", "selector.threshold: unknown key");
	refuse("random", "{\"count\": \"mean\"}",
	       "selector.count: expected one of {fraction,median}, got \"mean\"");
	refuse("random", "{\"count\": \"median\", \"groups\": [7]}",
	       "selector.groups[0]: expected a non-empty name prefix");
	refuse("random", "{\"groups\": {}}", "selector.groups: expected an array");
	refuse("random", "{\"median\": true}", "selector.median: unknown key");
}
END_TEST

/* More clients than slots is refused when the run starts, naming the key. */
START_TEST(test_dp_too_many_clients)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	struct fedrun_layout l;
	model_layout(&l);
	json_t *c = cfg("{\"max_clients\": 3}");
	void *st;
	const struct fedrun_selector_ops *ops = selector("dp_greater");
	ck_assert_int_eq(ops->create(&fh.host, c, &l, &st), 0);
	float *x = fedrun_arena_alloc(l.total);
	uint8_t mask[NT];
	struct fedrun_round_info ri = {
	    .size = sizeof ri, .round = 1, .num_clients = 4, .layout = &l};
	ck_assert_int_eq(ops->select(st, &ri, 0, x, x, mask), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "selector.max_clients: 3, but the run has 4 clients (dp_greater keeps one "
			 "reference per client)");
	ri.num_clients = 3;
	ck_assert_int_eq(ops->select(st, &ri, 2, x, x, mask), 0);
	fedrun_arena_free(x);
	ops->destroy(st);
	json_decref(c);
	fedrun_layout_fini(&l);
}
END_TEST

/* meanest's "tensors": x cut into named tensors without gaps in the arena. */
START_TEST(test_meanest_tensors)
{
	struct fakehost fh;
	fakehost_init(&fh, 1);
	const struct fedrun_model_ops *ops =
	    fakehost_plugin(&reg, FEDRUN_KIND_MODEL, "meanest")->ops;
	json_t *mc = cfg("{\"problem\": \"quadratic\", \"dim\": 100, \"init\": 1, "
			 "\"tensors\": [\"encoder.a\", \"encoder.b\", \"decoder.a\"]}");
	json_t *dc = cfg("{\"groups\": [{\"clients\": 2, \"mean\": 3}]}");
	void *m;
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), 0);
	const struct fedrun_layout *l = ops->layout(m);
	ck_assert_uint_eq(l->n, 3);
	ck_assert_str_eq(l->t[2].name, "decoder.a");
	ck_assert_uint_eq(l->t[0].numel, 32);
	ck_assert_uint_eq(l->t[1].offset, 32);
	ck_assert_uint_eq(l->t[2].offset, 64);
	ck_assert_uint_eq(l->t[2].numel, 36);
	ops->destroy(m);
	json_decref(mc);

	mc = cfg("{\"dim\": 4}");
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), 0);
	ck_assert_str_eq(ops->layout(m)->t[0].name, "x");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(mc, "tensors"), 0)), "x");
	ops->destroy(m);
	json_decref(mc);

	mc = cfg("{\"dim\": 30, \"tensors\": [\"a\", \"b\", \"c\"]}");
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "model.tensors: 3 tensors need model.dim > 32, got 30");
	json_decref(mc);
	mc = cfg("{\"dim\": 40, \"tensors\": [\"a\", \"a\"]}");
	ck_assert_int_eq(ops->create(&fh.host, mc, dc, &m), FEDRUN_ECONFIG);
	ck_assert_str_eq(fedrun_error_message(),
			 "model.tensors[1]: \"a\" repeats model.tensors[0]");
	json_decref(mc);
	json_decref(dc);
}
END_TEST

static Suite *selectors_suite(void)
{
	Suite *s = suite_create("selectors");
	TCase *tc = tcase_create("selectors");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dp_greater_median);
	tcase_add_test(tc, test_dp_less_median);
	tcase_add_test(tc, test_dp_complementary);
	tcase_add_test(tc, test_dp_quantile_masks);
	tcase_add_test(tc, test_dp_norm_l1);
	tcase_add_test(tc, test_dp_fraction_by_parameters);
	tcase_add_test(tc, test_dp_fraction_examples);
	tcase_add_test(tc, test_quantile_function);
	tcase_add_test(tc, test_groups);
	tcase_add_test(tc, test_dp_reference_received);
	tcase_add_test(tc, test_dp_state_roundtrip);
	tcase_add_test(tc, test_dp_concurrent);
	tcase_add_test(tc, test_random_median);
	tcase_add_test(tc, test_bad_configs);
	tcase_add_test(tc, test_dp_too_many_clients);
	tcase_add_test(tc, test_meanest_tensors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(selectors_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
