/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the transformer's beam search and greedy decoding
 * (plugins/models/transformer/beam.c) on toy models.
 *
 * The toy model's next-token distribution is a pseudo-random function of the
 * sentence and of the WHOLE prefix (a hash of bos y_1 .. y_t seeds the
 * logits, normalised by log-softmax), as the model itself reconstructs it
 * from the rows' previous prefixes through the parent indices it is given.
 * A search that follows a wrong parent, reorders rows wrongly or adds the
 * wrong log-probability therefore reports hypotheses whose log-probability
 * differs from the toy's own log-probability of the same tokens, or which
 * are not the best, and the tests below see it:
 *   - beam 1 equals greedy (tokens, length, logprob, number of steps) for
 *     many seeds, vocabularies, max lengths and length penalties;
 *   - a beam as wide as every hypothesis equals exhaustive enumeration of all
 *     sequences (best tokens and score), for len_penalty 0, 0.6, 1 and -0.5;
 *   - narrow beams over vocabularies of up to 64 tokens equal a plain
 *     reference beam search (all candidates sorted, no early stop);
 *   - every reported hypothesis was a prefix the model saw in a row of its
 *     sentence, and its logprob/score are the toy's own;
 *   - eos is forced at max_len, finished sentences' rows are parked;
 *   - ties go to the lower token, then the lower row;
 *   - rows that carry nothing get NaN from the toy, so reading them fails;
 *   - bad arguments, callback errors and NaN are errors, not crashes;
 *   - tfm_max_len follows fairseq's max-len-a/b rule. */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "../plugins/models/transformer/beam.h"

static uint64_t mix64(uint64_t x)
{
	/* splitmix64's finaliser (Steele, Lea & Flood 2014). */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

enum { TOY_RANDOM, TOY_UNIFORM };

/* A toy model and the record of what the search asked it. */
struct toy {
	uint32_t B, beam, rows, V, max_t;
	int32_t bos, eos;
	uint64_t seed;
	int kind;
	double eos_bias;  /* added to eos's logit */
	int eos_never;	  /* eos has log-probability -inf */
	uint32_t fail_at; /* return FEDRUN_EIO at this step (UINT32_MAX: never) */
	uint32_t nan_at;  /* write a NaN at this step (UINT32_MAX: never) */
	uint32_t calls;
	/* hist (max_t, rows, max_t + 1): the prefix (bos first) of each row at
	 * each step, as the toy reconstructs it through the parents. */
	int32_t *hist;
	int32_t *tok_log, *par_log; /* (max_t, rows): what step t was given */
};

static void toy_init(struct toy *m, uint32_t B, uint32_t beam, uint32_t V, uint32_t max_t,
		     uint64_t seed)
{
	*m = (struct toy){.B = B,
			  .beam = beam,
			  .rows = B * beam,
			  .V = V,
			  .max_t = max_t,
			  .bos = 1,
			  .eos = 2,
			  .seed = seed,
			  .fail_at = UINT32_MAX,
			  .nan_at = UINT32_MAX};
	ck_assert_uint_le(V, 64);
	m->hist = calloc((size_t)max_t * m->rows * (max_t + 1), sizeof *m->hist);
	m->tok_log = calloc((size_t)max_t * m->rows, sizeof *m->tok_log);
	m->par_log = calloc((size_t)max_t * m->rows, sizeof *m->par_log);
	ck_assert(m->hist && m->tok_log && m->par_log);
}

static void toy_fini(struct toy *m)
{
	free(m->hist);
	free(m->tok_log);
	free(m->par_log);
}

static int32_t *hist_at(const struct toy *m, uint32_t t, uint32_t r)
{
	return m->hist + ((size_t)t * m->rows + r) * (m->max_t + 1);
}

/* log P(. | prefix) of sentence b; prefix[0] is bos, n >= 1 tokens. */
static void toy_dist(const struct toy *m, uint32_t b, const int32_t *prefix, uint32_t n, float *out)
{
	if (m->kind == TOY_UNIFORM) {
		for (uint32_t v = 0; v < m->V; v++)
			out[v] = (float)-log((double)m->V);
		return;
	}
	uint64_t h = mix64(m->seed ^ mix64(b + 1));
	for (uint32_t i = 0; i < n; i++)
		h = mix64(h ^ (uint64_t)(uint32_t)prefix[i] ^ ((uint64_t)i << 32));
	double x[64], mx = -INFINITY, sum = 0.0;
	for (uint32_t v = 0; v < m->V; v++) {
		x[v] = 4.0 * ((double)(mix64(h + v) >> 11) / 9007199254740992.0) - 2.0;
		if ((int32_t)v == m->eos)
			x[v] = m->eos_never ? -INFINITY : x[v] + m->eos_bias;
		if (x[v] > mx)
			mx = x[v];
	}
	for (uint32_t v = 0; v < m->V; v++)
		sum += exp(x[v] - mx);
	for (uint32_t v = 0; v < m->V; v++)
		out[v] = (float)(x[v] - mx - log(sum));
}

/* The toy's log-probability of tokens[0..n-1] after bos, summed in double
 * in order, as the search sums it. */
static double toy_logprob(const struct toy *m, uint32_t b, const int32_t *tokens, uint32_t n)
{
	int32_t prefix[64];
	float lp[64];
	double L = 0.0;
	ck_assert_uint_lt(n, 64);
	prefix[0] = m->bos;
	for (uint32_t i = 0; i < n; i++) {
		toy_dist(m, b, prefix, i + 1, lp);
		L += (double)lp[tokens[i]];
		prefix[i + 1] = tokens[i];
	}
	return L;
}

/* Checks the arguments of step t: tokens in range, bos and no parent at
 * t = 0, then parents within each row's sentence. Returns an error message
 * or NULL (one ck_assert per call: check's assertions are slow in loops). */
static const char *toy_check(const struct toy *m, uint32_t t, const int32_t *tokens,
			     const int32_t *parent)
{
	if (t >= m->max_t)
		return "step called past the longest max_len";
	if ((t == 0) != (parent == NULL))
		return "parent must be NULL at step 0 and only then";
	for (uint32_t r = 0; r < m->rows; r++) {
		if (tokens[r] < 0 || tokens[r] >= (int32_t)m->V)
			return "token out of range";
		if (t == 0 && tokens[r] != m->bos)
			return "a token of step 0 is not bos";
		if (t > 0 && (parent[r] < 0 || parent[r] >= (int32_t)m->rows))
			return "parent out of range";
		if (t > 0 && (uint32_t)parent[r] / m->beam != r / m->beam)
			return "a row continues a row of another sentence";
		if (t > 0 && tokens[r] == m->eos && parent[r] != (int32_t)r)
			return "a row that carries nothing (eos) does not continue itself";
	}
	return NULL;
}

static int toy_step(void *ud, uint32_t t, const int32_t *tokens, const int32_t *parent,
		    float *logprobs)
{
	struct toy *m = ud;
	const char *bad = t == m->calls ? toy_check(m, t, tokens, parent) : "steps out of order";
	ck_assert_msg(bad == NULL, "step %u: %s", t, bad);
	m->calls++;
	for (uint32_t r = 0; r < m->rows; r++) {
		int32_t *p = hist_at(m, t, r);
		m->tok_log[(size_t)t * m->rows + r] = tokens[r];
		if (t == 0) {
			p[0] = m->bos;
			continue;
		}
		m->par_log[(size_t)t * m->rows + r] = parent[r];
		memcpy(p, hist_at(m, t - 1, (uint32_t)parent[r]), t * sizeof *p);
		p[t] = tokens[r];
	}
	if (t == m->fail_at)
		return fedrun_error(FEDRUN_EIO, "toy failure");
	/* Rows that carry nothing get NaN: the search must not read them. */
	for (uint32_t r = 0; r < m->rows; r++)
		if (t > 0 && tokens[r] == m->eos)
			for (uint32_t v = 0; v < m->V; v++)
				logprobs[(size_t)r * m->V + v] = NAN;
		else
			toy_dist(m, r / m->beam, hist_at(m, t, r), t + 1,
				 logprobs + (size_t)r * m->V);
	if (t == m->nan_at)
		for (uint32_t r = 0; r < m->rows; r++)
			logprobs[(size_t)r * m->V + m->V / 2 + 1] = NAN;
	return 0;
}

/* Checks that h is a well-formed hypothesis of sentence b (eos last and
 * only there, within max_len), that it was the prefix of a row of its
 * sentence at the step that ended it, and that its logprob and score are
 * the toy's. */
static void check_hyp(const struct toy *m, uint32_t b, const struct tfm_hyp *h, uint32_t max_len,
		      double alpha)
{
	ck_assert_ptr_nonnull(h->tokens);
	ck_assert_uint_ge(h->len, 1);
	ck_assert_uint_le(h->len, max_len);
	for (uint32_t i = 0; i + 1 < h->len; i++)
		ck_assert_int_ne(h->tokens[i], m->eos);
	ck_assert_int_eq(h->tokens[h->len - 1], m->eos);
	uint32_t t = h->len - 1, found = 0;
	ck_assert_uint_lt(t, m->calls);
	for (uint32_t j = 0; j < m->beam && !found; j++) {
		const int32_t *p = hist_at(m, t, b * m->beam + j);
		found = p[0] == m->bos && memcmp(p + 1, h->tokens, t * sizeof *p) == 0;
	}
	ck_assert_msg(found, "sentence %u: the hypothesis of length %u was no row's prefix", b,
		      h->len);
	double L = toy_logprob(m, b, h->tokens, h->len);
	ck_assert_msg(fabs(h->logprob - L) <= 1e-12 * (1 + fabs(L)),
		      "sentence %u: logprob %.17g, the toy gives %.17g", b, h->logprob, L);
	double s = L / pow((double)h->len, alpha);
	ck_assert_msg(fabs(h->score - s) <= 1e-12 * (1 + fabs(s)),
		      "sentence %u: score %.17g, expected %.17g", b, h->score, s);
}

/* (1) Beam 1 is greedy: same hypotheses and the same number of steps. */
START_TEST(test_beam1_is_greedy)
{
	const double alphas[] = {0.0, 0.6, 1.0};
	uint64_t rng = 12345;
	for (uint32_t seed = 0; seed < 60; seed++) {
		const uint32_t B = 1 + seed % 5;
		uint32_t max_len[5], max_t = 0;
		for (uint32_t b = 0; b < B; b++) {
			rng = mix64(rng);
			max_len[b] = 1 + (uint32_t)(rng % 14);
			if (max_len[b] > max_t)
				max_t = max_len[b];
		}
		const uint32_t V = 3 + (seed * 7) % 50; /* V >= 16 uses the lanes */
		struct toy g, m;
		toy_init(&g, B, 1, V, max_t, seed);
		toy_init(&m, B, 1, V, max_t, seed);
		g.eos_bias = m.eos_bias = (double)(seed % 5) * 0.5 - 1.0;
		struct tfm_hyp hg[5], hb[5];
		ck_assert_int_eq(tfm_greedy(B, max_len, V, g.bos, g.eos, toy_step, &g, hg), 0);
		struct tfm_search_opts o = {.beam = 1, .len_penalty = alphas[seed % 3]};
		ck_assert_int_eq(tfm_beam_search(&o, B, max_len, V, m.bos, m.eos, toy_step, &m, hb),
				 0);
		ck_assert_uint_eq(g.calls, m.calls);
		for (uint32_t b = 0; b < B; b++) {
			check_hyp(&g, b, &hg[b], max_len[b], 0.0);
			check_hyp(&m, b, &hb[b], max_len[b], o.len_penalty);
			ck_assert_uint_eq(hg[b].len, hb[b].len);
			ck_assert_mem_eq(hg[b].tokens, hb[b].tokens, hg[b].len * sizeof(int32_t));
			ck_assert(hg[b].logprob == hb[b].logprob);
			ck_assert(hg[b].score == hg[b].logprob);
		}
		tfm_hyp_free(hg, B);
		tfm_hyp_free(hb, B);
		toy_fini(&g);
		toy_fini(&m);
	}
}
END_TEST

/* Exhaustive search of sentence b: every sequence of non-eos tokens
 * followed by eos, of length <= max_len. */
struct exh {
	const struct toy *m;
	uint32_t b, max_len;
	double alpha, best_score;
	int32_t best[16], cur[16];
	uint32_t best_len, count;
};

static void exh_walk(struct exh *e, uint32_t d, double L)
{
	int32_t prefix[17];
	float lp[64];
	prefix[0] = e->m->bos;
	memcpy(prefix + 1, e->cur, d * sizeof *prefix);
	toy_dist(e->m, e->b, prefix, d + 1, lp);
	double s = (L + (double)lp[e->m->eos]) / pow((double)(d + 1), e->alpha);
	e->count++;
	if (s > e->best_score) {
		e->best_score = s;
		memcpy(e->best, e->cur, d * sizeof *e->cur);
		e->best[d] = e->m->eos;
		e->best_len = d + 1;
	}
	if (d + 1 >= e->max_len)
		return;
	for (uint32_t v = 0; v < e->m->V; v++) {
		if ((int32_t)v == e->m->eos)
			continue;
		e->cur[d] = (int32_t)v;
		exh_walk(e, d + 1, L + (double)lp[v]);
	}
}

/* One case of (2): sentences of max_len M and M - 1 over V tokens, a beam of
 * V^(M-1), which holds every candidate of every step. Returns whether the
 * search stopped before step M - 1. */
static int exhaustive_case(uint32_t V, uint32_t M, double alpha, double eos_bias, uint32_t seed)
{
	uint32_t beam = 1;
	for (uint32_t i = 0; i + 1 < M; i++)
		beam *= V;
	const uint32_t B = 2, max_len[2] = {M, M - 1};
	struct toy m;
	toy_init(&m, B, beam, V, M, 1000 * V + 100 * M + seed);
	m.eos = (int32_t)(seed % V);
	m.bos = (int32_t)((seed + 1) % V);
	m.eos_bias = eos_bias;
	struct tfm_search_opts o = {.beam = beam, .len_penalty = alpha};
	struct tfm_hyp h[2];
	ck_assert_int_eq(tfm_beam_search(&o, B, max_len, V, m.bos, m.eos, toy_step, &m, h), 0);
	for (uint32_t b = 0; b < B; b++) {
		struct exh e = {.m = &m,
				.b = b,
				.max_len = max_len[b],
				.alpha = alpha,
				.best_score = -INFINITY};
		exh_walk(&e, 0, 0.0);
		check_hyp(&m, b, &h[b], max_len[b], alpha);
		ck_assert_msg(h[b].len == e.best_len &&
				  memcmp(h[b].tokens, e.best, e.best_len * sizeof(int32_t)) == 0,
			      "V %u max_len %u alpha %g eos_bias %g seed %u sentence %u: beam "
			      "found a hypothesis of length %u score %.17g, exhaustive search one "
			      "of length %u score %.17g",
			      V, max_len[b], alpha, eos_bias, seed, b, h[b].len, h[b].score,
			      e.best_len, e.best_score);
		ck_assert(fabs(h[b].score - e.best_score) <= 1e-12 * (1 + fabs(e.best_score)));
	}
	int early = m.calls < M;
	tfm_hyp_free(h, B);
	toy_fini(&m);
	return early;
}

/* (2) A beam that holds every hypothesis is exhaustive search, for several
 * length penalties (negative too) and eos probabilities. The early stop must
 * leave the result unchanged; with len_penalty 0 it must also have happened
 * (fewer steps than max_len) at least once. */
START_TEST(test_wide_beam_is_exhaustive)
{
	const double alphas[] = {0.0, 1.0, 0.6, -0.5};
	const double biases[] = {-2.5, -1.0, 0.0, 1.5};
	uint32_t early = 0, cases = 0;
	for (uint32_t V = 3; V <= 4; V++)
		for (uint32_t M = 4; M <= 5; M++)
			for (uint32_t ai = 0; ai < 4; ai++)
				for (uint32_t bi = 0; bi < 4; bi++)
					for (uint32_t seed = 0; seed < 25; seed++) {
						int e = exhaustive_case(V, M, alphas[ai],
									biases[bi], seed);
						early += alphas[ai] == 0.0 && e;
						cases++;
					}
	ck_assert_uint_eq(cases, 2 * 2 * 4 * 4 * 25);
	ck_assert_uint_gt(early, 0);
}
END_TEST

/* (4) Beams narrower than the hypothesis space: every hypothesis is a
 * prefix the model saw, with the model's own logprob and score. */
START_TEST(test_hyps_follow_parents)
{
	const double alphas[] = {0.0, 0.6, 1.0, 2.0};
	for (uint32_t seed = 0; seed < 80; seed++) {
		const uint32_t B = 1 + seed % 4, beam = 2 + seed % 5, V = 4 + (seed * 5) % 45;
		uint32_t max_len[4] = {3 + seed % 11, 12, 1, 7}, max_t = 0;
		for (uint32_t b = 0; b < B; b++)
			if (max_len[b] > max_t)
				max_t = max_len[b];
		struct toy m;
		toy_init(&m, B, beam, V, max_t, 77 + seed);
		m.eos_bias = (double)(seed % 3) - 1.0;
		struct tfm_search_opts o = {.beam = beam, .len_penalty = alphas[seed % 4]};
		struct tfm_hyp h[4];
		ck_assert_int_eq(tfm_beam_search(&o, B, max_len, V, m.bos, m.eos, toy_step, &m, h),
				 0);
		for (uint32_t b = 0; b < B; b++)
			check_hyp(&m, b, &h[b], max_len[b], o.len_penalty);
		tfm_hyp_free(h, B);
		toy_fini(&m);
	}
}
END_TEST

/* A plain reference of beam.h's beam search for one sentence: every
 * candidate scored from its prefix, all of them sorted, no early stop (the
 * search's stop is exact, so running to max_len must not change the
 * result), prefixes kept as token arrays rather than rows and parents. */
struct ref_cand {
	double s;
	int32_t tok;
	uint32_t slot;
};

static int ref_cmp(const void *pa, const void *pb)
{
	const struct ref_cand *a = pa, *b = pb;
	if (a->s != b->s)
		return a->s > b->s ? -1 : 1;
	if (a->tok != b->tok)
		return a->tok < b->tok ? -1 : 1;
	return a->slot < b->slot ? -1 : a->slot > b->slot;
}

static void ref_beam(const struct toy *m, uint32_t b, uint32_t beam, uint32_t max_len, double alpha,
		     struct tfm_hyp *out)
{
	enum { MAXB = 8, MAXT = 16 };
	int32_t live[MAXB][MAXT + 1], next[MAXB][MAXT + 1];
	double L[MAXB], nL[MAXB];
	struct ref_cand c[MAXB * 64];
	float lp[64];
	uint32_t n_live = 1;
	ck_assert(beam <= MAXB && max_len <= MAXT);
	live[0][0] = m->bos;
	L[0] = 0.0;
	*out = (struct tfm_hyp){.score = -INFINITY};
	for (uint32_t t = 0; t < max_len && n_live > 0; t++) {
		uint32_t nc = 0;
		for (uint32_t j = 0; j < n_live; j++) {
			toy_dist(m, b, live[j], t + 1, lp);
			for (uint32_t v = 0; v < m->V; v++)
				if (t + 1 < max_len || (int32_t)v == m->eos)
					c[nc++] =
					    (struct ref_cand){L[j] + (double)lp[v], (int32_t)v, j};
		}
		qsort(c, nc, sizeof c[0], ref_cmp);
		uint32_t kept = 0;
		for (uint32_t i = 0; i < nc && i < beam; i++) {
			if (c[i].tok == m->eos) {
				double sc = c[i].s / pow((double)(t + 1), alpha);
				if (out->tokens == NULL || sc > out->score) {
					free(out->tokens);
					out->tokens = malloc((t + 1) * sizeof(int32_t));
					ck_assert_ptr_nonnull(out->tokens);
					memcpy(out->tokens, live[c[i].slot] + 1,
					       t * sizeof(int32_t));
					out->tokens[t] = m->eos;
					*out = (struct tfm_hyp){out->tokens, t + 1, sc, c[i].s};
				}
				continue;
			}
			memcpy(next[kept], live[c[i].slot], (t + 1) * sizeof(int32_t));
			next[kept][t + 1] = c[i].tok;
			nL[kept++] = c[i].s;
		}
		memcpy(live, next, sizeof live);
		memcpy(L, nL, sizeof L);
		n_live = kept;
	}
}

/* The search equals the reference for narrow beams and vocabularies of up
 * to 64 tokens (which use every path of the row scans). */
START_TEST(test_matches_reference)
{
	const double alphas[] = {0.0, 0.6, 1.0, -0.5};
	for (uint32_t seed = 0; seed < 200; seed++) {
		const uint32_t B = 1 + seed % 3, beam = 1 + (seed * 3) % 8;
		const uint32_t V = 3 + (seed * 13) % 62;
		uint32_t max_len[3], max_t = 0;
		for (uint32_t b = 0; b < B; b++) {
			max_len[b] = 1 + (seed * 7 + b * 5) % 15;
			if (max_len[b] > max_t)
				max_t = max_len[b];
		}
		const double alpha = alphas[seed % 4];
		struct toy m;
		toy_init(&m, B, beam, V, max_t, 5000 + seed);
		m.eos = (int32_t)(seed % V);
		m.bos = (int32_t)((seed + 2) % V);
		m.eos_bias = 0.5 * (double)(seed % 7) - 1.5;
		struct tfm_search_opts o = {.beam = beam, .len_penalty = alpha};
		struct tfm_hyp h[3];
		ck_assert_int_eq(tfm_beam_search(&o, B, max_len, V, m.bos, m.eos, toy_step, &m, h),
				 0);
		for (uint32_t b = 0; b < B; b++) {
			struct tfm_hyp r;
			ref_beam(&m, b, beam, max_len[b], alpha, &r);
			ck_assert_msg(h[b].len == r.len &&
					  memcmp(h[b].tokens, r.tokens, r.len * sizeof(int32_t)) ==
					      0 &&
					  h[b].logprob == r.logprob,
				      "seed %u (V %u beam %u max_len %u alpha %g) sentence %u: "
				      "search length %u logprob %.17g, reference length %u "
				      "logprob %.17g",
				      seed, V, beam, max_len[b], alpha, b, h[b].len, h[b].logprob,
				      r.len, r.logprob);
			tfm_hyp_free(&r, 1);
		}
		tfm_hyp_free(h, B);
		toy_fini(&m);
	}
}
END_TEST

/* (3) With eos unlikely, every hypothesis runs to its max_len and ends in
 * the forced eos; the rows of finished sentences are parked (eos, their own
 * row) and the search stops after the longest sentence. */
START_TEST(test_eos_forced_at_max_len)
{
	const uint32_t B = 4, max_len[4] = {1, 2, 5, 9};
	for (uint32_t beam = 0; beam <= 3; beam++) {
		struct toy m;
		toy_init(&m, B, beam ? beam : 1, 6, 9, 4242 + beam);
		m.eos_bias = -40.0;
		struct tfm_hyp h[4];
		if (beam == 0) {
			ck_assert_int_eq(tfm_greedy(B, max_len, 6, m.bos, m.eos, toy_step, &m, h),
					 0);
		} else {
			struct tfm_search_opts o = {.beam = beam, .len_penalty = 0.0};
			ck_assert_int_eq(
			    tfm_beam_search(&o, B, max_len, 6, m.bos, m.eos, toy_step, &m, h), 0);
		}
		ck_assert_uint_eq(m.calls, 9);
		for (uint32_t b = 0; b < B; b++) {
			ck_assert_uint_eq(h[b].len, max_len[b]);
			check_hyp(&m, b, &h[b], max_len[b], 0.0);
			ck_assert(h[b].logprob < -39.0);
			for (uint32_t t = max_len[b]; t < m.calls; t++)
				for (uint32_t j = 0; j < m.beam; j++) {
					uint32_t r = b * m.beam + j;
					ck_assert_int_eq(m.tok_log[(size_t)t * m.rows + r], m.eos);
					ck_assert_int_eq(m.par_log[(size_t)t * m.rows + r],
							 (int32_t)r);
				}
		}
		tfm_hyp_free(h, B);
		toy_fini(&m);
	}
}
END_TEST

/* Ties (a uniform model): the lower token first, then the lower row. */
START_TEST(test_ties)
{
	const uint32_t V = 5, max_len = 4;
	struct toy m;
	toy_init(&m, 1, 3, V, max_len, 0);
	m.kind = TOY_UNIFORM;
	m.eos = 4;
	m.bos = 3;
	struct tfm_search_opts o = {.beam = 3, .len_penalty = 0.0};
	struct tfm_hyp h;
	ck_assert_int_eq(tfm_beam_search(&o, 1, &max_len, V, m.bos, m.eos, toy_step, &m, &h), 0);
	/* Step 0 keeps tokens 0, 1, 2 of row 0; at step 1 every candidate
	 * ties and the lower token wins over the lower row: (0, row 0),
	 * (0, row 1), (0, row 2). eos (token 4) loses every tie, so it only
	 * comes at the forced step, where (eos, row 0) wins. */
	ck_assert_uint_ge(m.calls, 3);
	const int32_t tok1[3] = {0, 1, 2}, par1[3] = {0, 0, 0};
	const int32_t tok2[3] = {0, 0, 0}, par2[3] = {0, 1, 2};
	ck_assert_mem_eq(m.tok_log + 3, tok1, sizeof tok1);
	ck_assert_mem_eq(m.par_log + 3, par1, sizeof par1);
	ck_assert_mem_eq(m.tok_log + 6, tok2, sizeof tok2);
	ck_assert_mem_eq(m.par_log + 6, par2, sizeof par2);
	const int32_t want[4] = {0, 0, 0, 4};
	ck_assert_uint_eq(h.len, 4);
	ck_assert_mem_eq(h.tokens, want, sizeof want);
	tfm_hyp_free(&h, 1);
	toy_fini(&m);

	toy_init(&m, 1, 1, V, max_len, 0);
	m.kind = TOY_UNIFORM;
	m.eos = 4;
	m.bos = 3;
	ck_assert_int_eq(tfm_greedy(1, &max_len, V, m.bos, m.eos, toy_step, &m, &h), 0);
	ck_assert_uint_eq(h.len, 4);
	ck_assert_mem_eq(h.tokens, want, sizeof want);
	tfm_hyp_free(&h, 1);
	toy_fini(&m);
}
END_TEST

/* (5) Bad arguments are FEDRUN_EINVAL with a message, before any step. */
START_TEST(test_bad_arguments)
{
	struct toy m;
	toy_init(&m, 2, 2, 5, 4, 1);
	const uint32_t ml[2] = {4, 4}, ml0[2] = {4, 0};
	struct tfm_search_opts o = {.beam = 2, .len_penalty = 1.0};
	struct tfm_search_opts o0 = {.beam = 0, .len_penalty = 1.0};
	struct tfm_search_opts onan = {.beam = 2, .len_penalty = NAN};
	struct tfm_hyp h[2];
	struct {
		int rc;
		const char *what;
	} cases[] = {
	    {tfm_beam_search(&o0, 2, ml, 5, 1, 2, toy_step, &m, h), "beam size is 0"},
	    {tfm_beam_search(&o, 2, ml, 0, 1, 2, toy_step, &m, h), "vocabulary size is 0"},
	    {tfm_beam_search(&o, 2, ml0, 5, 1, 2, toy_step, &m, h), "sentence 1 is 0"},
	    {tfm_beam_search(&onan, 2, ml, 5, 1, 2, toy_step, &m, h), "not finite"},
	    {tfm_beam_search(NULL, 2, ml, 5, 1, 2, toy_step, &m, h), "options are NULL"},
	    {tfm_beam_search(&o, 2, NULL, 5, 1, 2, toy_step, &m, h), "must not be NULL"},
	    {tfm_beam_search(&o, 2, ml, 5, 1, 2, NULL, &m, h), "must not be NULL"},
	    {tfm_beam_search(&o, 2, ml, 5, 1, 2, toy_step, &m, NULL), "must not be NULL"},
	    {tfm_beam_search(&o, 2, ml, 5, 5, 2, toy_step, &m, h), "bos 5"},
	    {tfm_beam_search(&o, 2, ml, 5, 1, -1, toy_step, &m, h), "eos -1"},
	    {tfm_greedy(2, ml, 0, 1, 2, toy_step, &m, h), "vocabulary size is 0"},
	    {tfm_greedy(2, ml0, 5, 1, 2, toy_step, &m, h), "sentence 1 is 0"},
	    {tfm_greedy(2, ml, 5, 1, 7, toy_step, &m, h), "eos 7"},
	    {tfm_greedy(2, ml, 5, 1, 2, NULL, &m, h), "must not be NULL"},
	};
	/* The message of the last call only; each case is re-run for its own. */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_int_eq(cases[i].rc, FEDRUN_EINVAL);
	ck_assert_int_eq(tfm_beam_search(&o0, 2, ml, 5, 1, 2, toy_step, &m, h), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), cases[0].what));
	ck_assert_int_eq(tfm_beam_search(&o, 2, ml0, 5, 1, 2, toy_step, &m, h), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), cases[2].what));
	ck_assert_int_eq(tfm_greedy(2, ml, 0, 1, 2, toy_step, &m, h), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), cases[10].what));
	ck_assert_int_eq(tfm_beam_search(&o, 2, ml, 5, 5, 2, toy_step, &m, h), FEDRUN_EINVAL);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), cases[8].what));
	ck_assert_ptr_null(h[0].tokens);
	ck_assert_ptr_null(h[1].tokens);
	ck_assert_uint_eq(m.calls, 0);
	/* No sentences: nothing to do, no step. */
	ck_assert_int_eq(tfm_beam_search(&o, 0, NULL, 5, 1, 2, toy_step, &m, NULL), 0);
	ck_assert_int_eq(tfm_greedy(0, NULL, 5, 1, 2, toy_step, &m, NULL), 0);
	ck_assert_uint_eq(m.calls, 0);
	toy_fini(&m);
}
END_TEST

/* (6) A callback's error comes back with its message and the step; NaN
 * and a sentence without any possible hypothesis are FEDRUN_ENUMERIC;
 * best[] owns nothing afterwards. */
START_TEST(test_callback_errors)
{
	const uint32_t ml[2] = {6, 6};
	for (uint32_t greedy = 0; greedy <= 1; greedy++) {
		for (uint32_t what = 0; what < 3; what++) {
			struct toy m;
			toy_init(&m, 2, greedy ? 1 : 3, 37, 6, 9);
			m.eos_bias = -40.0; /* no sentence ends before step 2 */
			if (what == 0)
				m.fail_at = 2;
			else if (what == 1)
				m.nan_at = 2;
			else
				m.eos_never = 1;
			struct tfm_search_opts o = {.beam = 3, .len_penalty = 1.0};
			struct tfm_hyp h[2] = {{0}};
			int rc =
			    greedy ? tfm_greedy(2, ml, m.V, m.bos, m.eos, toy_step, &m, h)
				   : tfm_beam_search(&o, 2, ml, m.V, m.bos, m.eos, toy_step, &m, h);
			const char *msg = fedrun_error_message();
			if (what == 0) {
				ck_assert_int_eq(rc, FEDRUN_EIO);
				ck_assert_ptr_nonnull(strstr(msg, "toy failure"));
				ck_assert_ptr_nonnull(strstr(msg, "step 2"));
				ck_assert_uint_eq(m.calls, 3);
			} else if (what == 1) {
				ck_assert_int_eq(rc, FEDRUN_ENUMERIC);
				ck_assert_ptr_nonnull(strstr(msg, "token 19 in row 0 is NaN"));
				ck_assert_uint_eq(m.calls, 3);
			} else {
				ck_assert_int_eq(rc, FEDRUN_ENUMERIC);
				ck_assert_ptr_nonnull(strstr(msg, "no hypothesis"));
				ck_assert_uint_eq(m.calls, 6);
			}
			ck_assert_ptr_null(h[0].tokens);
			ck_assert_ptr_null(h[1].tokens);
			ck_assert_uint_eq(h[0].len, 0);
			toy_fini(&m);
		}
	}
}
END_TEST

/* The max_len rule: fairseq's int(a * (src_len + 1) + b) tokens, + eos. */
START_TEST(test_max_len)
{
	ck_assert_uint_eq(tfm_max_len(1.2, 10.0, 0, 0), 12); /* int(11.2) + 1 */
	ck_assert_uint_eq(tfm_max_len(1.2, 10.0, 4, 0), 17); /* int(16) + 1 */
	ck_assert_uint_eq(tfm_max_len(0.0, 200.0, 9, 0), 201);
	ck_assert_uint_eq(tfm_max_len(2.0, 0.0, 3, 0), 9);
	ck_assert_uint_eq(tfm_max_len(0.0, 0.0, 5, 0), 1);  /* eos only */
	ck_assert_uint_eq(tfm_max_len(-1.0, 0.5, 5, 0), 1); /* negative: 0 tokens */
	ck_assert_uint_eq(tfm_max_len(NAN, 1.0, 5, 0), 1);
	ck_assert_uint_eq(tfm_max_len(1.2, 10.0, 100, 50), 50);
	ck_assert_uint_eq(tfm_max_len(1.0, 0.0, 48, 50), 50); /* int(49) + 1 = cap */
	ck_assert_uint_eq(tfm_max_len(1.0, 0.0, 47, 50), 49);
	ck_assert_uint_eq(tfm_max_len(1e300, 0.0, 7, 0), UINT32_MAX);
	ck_assert_uint_eq(tfm_max_len(INFINITY, 0.0, 7, 9), 9);
}
END_TEST

static Suite *beam_suite(void)
{
	Suite *s = suite_create("beam");
	TCase *tc = tcase_create("search");
	tcase_add_test(tc, test_beam1_is_greedy);
	tcase_add_test(tc, test_wide_beam_is_exhaustive);
	tcase_add_test(tc, test_hyps_follow_parents);
	tcase_add_test(tc, test_eos_forced_at_max_len);
	tcase_add_test(tc, test_ties);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_callback_errors);
	tcase_add_test(tc, test_max_len);
	tcase_add_test(tc, test_matches_reference);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(beam_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
