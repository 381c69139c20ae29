/* SPDX-License-Identifier: Apache-2.0 */
/* Beam search and greedy decoding over a step callback (tfm_decode_step's
 * contract); beam.h states the exact semantics, the stopping rule and why it
 * is exact. Rows stay B * beam throughout so that the caller's batch shape
 * is fixed; back-pointers of every step rebuild a finished hypothesis. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "beam.h"

void tfm_hyp_free(struct tfm_hyp *h, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(h[i].tokens);
		h[i] = (struct tfm_hyp){0};
	}
}

uint32_t tfm_max_len(double max_len_a, double max_len_b, uint32_t src_len, uint32_t cap)
{
	uint32_t hi = cap ? cap : UINT32_MAX;
	double x = max_len_a * ((double)src_len + 1.0) + max_len_b;
	if (!(x >= 0.0))
		return 1;
	/* N = floor(x) + 1 <= hi, tested in double before any conversion. */
	if (x >= (double)hi - 1.0)
		return hi;
	return (uint32_t)x + 1;
}

static int check_args(const char *who, uint32_t B, const uint32_t *max_len, uint32_t V, int32_t bos,
		      int32_t eos, tfm_step_fn step, const struct tfm_hyp *best)
{
	if (B == 0)
		return 0;
	if (!max_len || !step || !best)
		return fedrun_error(FEDRUN_EINVAL, "%s: max_len, step and best must not be NULL",
				    who);
	if (V == 0)
		return fedrun_error(FEDRUN_EINVAL, "%s: vocabulary size is 0", who);
	if (bos < 0 || (uint32_t)bos >= V || eos < 0 || (uint32_t)eos >= V)
		return fedrun_error(FEDRUN_EINVAL,
				    "%s: bos %d and eos %d must be token ids in [0, %u)", who,
				    (int)bos, (int)eos, V);
	for (uint32_t b = 0; b < B; b++)
		if (max_len[b] == 0)
			return fedrun_error(FEDRUN_EINVAL,
					    "%s: max_len of sentence %u is 0 (it must be >= 1, "
					    "eos included)",
					    who, b);
	return 0;
}

/* *out = rows * V floats. */
static int alloc_logprobs(const char *who, uint32_t rows, uint32_t V, float **out)
{
	if ((size_t)rows > SIZE_MAX / sizeof(float) / V)
		return fedrun_error(FEDRUN_EINVAL, "%s: %u rows x %u tokens overflow", who, rows,
				    V);
	*out = malloc((size_t)rows * V * sizeof(float));
	if (!*out)
		return fedrun_error(FEDRUN_ENOMEM, "%s: no memory for %u x %u log-probabilities",
				    who, rows, V);
	return 0;
}

static int nan_error(const char *who, uint32_t t, uint32_t row, uint32_t v)
{
	return fedrun_error(FEDRUN_ENUMERIC,
			    "%s: step %u: log-probability of token %u in row %u "
			    "is NaN",
			    who, t, v, row);
}

static int no_hyp_error(const char *who, uint32_t b, uint32_t t)
{
	return fedrun_error(FEDRUN_ENUMERIC,
			    "%s: sentence %u has no hypothesis of finite log-probability (every "
			    "continuation at step %u was -inf)",
			    who, b, t);
}

/* Row scans in 16 lanes with `omp simd` (as core/nn/lanes.h does): at -O2
 * the compiler vectorises no reduction by itself, and these passes over
 * (rows, V) are most of the search's time. MAX keeps m when x is NaN. */
#define LANES 16
#define MAX(m, x) ((x) > (m) ? (x) : (m))

/* Largest x[i] (NaN ignored; -inf if none); *nan set if some x[i] is NaN. */
static float row_max(const float *x, uint32_t n, int *nan)
{
	const uint32_t nm = n - n % LANES;
	float m[LANES];
	int bad[LANES];
	for (uint32_t q = 0; q < LANES; q++) {
		m[q] = -INFINITY;
		bad[q] = 0;
	}
	for (uint32_t i = 0; i < nm; i += LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < LANES; q++) {
			bad[q] |= x[i + q] != x[i + q];
			m[q] = MAX(m[q], x[i + q]);
		}
	}
	for (uint32_t i = nm; i < n; i++) {
		bad[0] |= x[i] != x[i];
		m[0] = MAX(m[0], x[i]);
	}
	int any = 0;
	float r = -INFINITY;
	for (uint32_t q = 0; q < LANES; q++) {
		any |= bad[q];
		r = MAX(r, m[q]);
	}
	*nan = any;
	return r;
}

/* Whether some x[i] >= thr. */
static int row_any_ge(const float *x, uint32_t n, float thr)
{
	const uint32_t nm = n - n % LANES;
	int f[LANES] = {0};
	for (uint32_t i = 0; i < nm; i += LANES) {
#pragma omp simd
		for (uint32_t q = 0; q < LANES; q++)
			f[q] |= x[i + q] >= thr;
	}
	int any = 0;
	for (uint32_t i = nm; i < n; i++)
		any |= x[i] >= thr;
	for (uint32_t q = 0; q < LANES; q++)
		any |= f[q];
	return any;
}

/* ---- beam search ---- */

/* A continuation of live row `row` by token `tok`, cumulative logprob s. */
struct cand {
	double s;
	int32_t tok;
	uint32_t row;
};

/* The order of beam.h, step 3: higher score, then lower token, then lower
 * row. */
static int cand_better(const struct cand *a, const struct cand *b)
{
	if (a->s != b->s)
		return a->s > b->s;
	if (a->tok != b->tok)
		return a->tok < b->tok;
	return a->row < b->row;
}

/* Inserts c into top[0..*n-1] (sorted best first, at most k entries). */
static void topk_push(struct cand *top, uint32_t *n, uint32_t k, const struct cand *c)
{
	uint32_t i = *n;
	if (i == k) {
		if (!cand_better(c, &top[k - 1]))
			return;
		i = k - 1;
	} else {
		(*n)++;
	}
	while (i > 0 && cand_better(c, &top[i - 1])) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = *c;
}

struct beam_state {
	uint32_t B, beam, rows, V;
	int32_t eos;
	double alpha;
	double *live, *next_live; /* (rows) cumulative logprob, -inf if not live */
	/* hist_tok/hist_par (cap_steps, rows): the tokens and parents passed at
	 * step t+1 are row t, i.e. what step t selected. */
	int32_t *hist_tok, *hist_par;
	uint32_t cap_steps;
	float *lp;		/* (rows, V) */
	struct cand *top;	/* (beam) */
	unsigned char *done;	/* (B) */
	unsigned char *nobound; /* (B) a logprob > 0 was seen: no early stop */
	unsigned char *have;	/* (B) best[b] holds a finished hypothesis */
};

static void beam_state_free(struct beam_state *st)
{
	free(st->live);
	free(st->next_live);
	free(st->hist_tok);
	free(st->hist_par);
	free(st->lp);
	free(st->top);
	free(st->done);
	free(st->nobound);
	free(st->have);
}

/* Makes room for the selections of step t (row t of the history). */
static int hist_reserve(struct beam_state *st, uint32_t t)
{
	if (t < st->cap_steps)
		return 0;
	uint32_t cap = st->cap_steps ? st->cap_steps * 2 : 16;
	if (cap <= t)
		cap = t + 1;
	if ((size_t)cap > SIZE_MAX / sizeof(int32_t) / st->rows)
		return fedrun_error(FEDRUN_ENOMEM, "beam search: history of %u steps overflows",
				    cap);
	size_t bytes = (size_t)cap * st->rows * sizeof(int32_t);
	int32_t *tok = realloc(st->hist_tok, bytes);
	if (tok)
		st->hist_tok = tok;
	int32_t *par = realloc(st->hist_par, bytes);
	if (par)
		st->hist_par = par;
	if (!tok || !par)
		return fedrun_error(FEDRUN_ENOMEM, "beam search: no memory for %u steps of history",
				    cap);
	st->cap_steps = cap;
	return 0;
}

static double len_norm(double logprob, uint32_t len, double alpha)
{
	return alpha == 0.0 ? logprob : logprob / pow((double)len, alpha);
}

/* Records a finished hypothesis (live row `row` of step t followed by eos,
 * cumulative logprob s) in best if it is strictly better than what best
 * holds. */
static int finish(struct beam_state *st, uint32_t b, uint32_t t, uint32_t row, double s,
		  struct tfm_hyp *best)
{
	uint32_t len = t + 1;
	double score = len_norm(s, len, st->alpha);
	if (st->have[b] && !(score > best->score))
		return 0;
	int32_t *tok = malloc((size_t)len * sizeof *tok);
	if (!tok)
		return fedrun_error(FEDRUN_ENOMEM, "beam search: no memory for a hypothesis");
	tok[t] = st->eos;
	/* Positions t-1 .. 0 come from the selections of steps t-1 .. 0. */
	for (uint32_t i = t; i-- > 0;) {
		tok[i] = st->hist_tok[(size_t)i * st->rows + row];
		row = (uint32_t)st->hist_par[(size_t)i * st->rows + row];
	}
	free(best->tokens);
	*best = (struct tfm_hyp){.tokens = tok, .len = len, .score = score, .logprob = s};
	st->have[b] = 1;
	return 0;
}

/* Step 5 of beam.h: can a hypothesis finished from the live prefixes of
 * sentence b (length t + 1 after step t) still beat best->score? */
static int can_improve(const struct beam_state *st, uint32_t b, uint32_t t, uint32_t max_len,
		       const struct tfm_hyp *best)
{
	if (!st->have[b] || st->nobound[b])
		return 1;
	for (uint32_t j = 0; j < st->beam; j++) {
		double L = st->next_live[(size_t)b * st->beam + j];
		if (L == -INFINITY)
			continue;
		/* Finished at length n in [t + 2, max_len] with logprob <= L <= 0:
		 * L / n^alpha is monotonic in n, so its maximum is at an end. */
		double a = len_norm(L, t + 2, st->alpha), z = len_norm(L, max_len, st->alpha);
		if ((a > z ? a : z) > best->score)
			return 1;
	}
	return 0;
}

/* The rows of a finished sentence: eos, continuing themselves. */
static void beam_park(struct beam_state *st, uint32_t b, uint32_t t)
{
	for (uint32_t j = 0; j < st->beam; j++) {
		uint32_t r = b * st->beam + j;
		st->next_live[r] = -INFINITY;
		st->hist_tok[(size_t)t * st->rows + r] = st->eos;
		st->hist_par[(size_t)t * st->rows + r] = (int32_t)r;
	}
}

/* NaN in a row the search reads is an error; a positive value turns the
 * early stop of sentence b off (beam.h, step 5). */
static int scan_row(struct beam_state *st, uint32_t b, uint32_t t, uint32_t r, const float *lp)
{
	int nan;
	float mx = row_max(lp, st->V, &nan);
	if (mx > 0.0f)
		st->nobound[b] = 1;
	for (uint32_t v = 0; nan && v < st->V; v++)
		if (isnan(lp[v]))
			return nan_error("beam search", t, r, v);
	return 0;
}

/* A float that every token's logprob must reach for the candidate (row of
 * cumulative logprob L) to enter a full top list: below top's worst score
 * minus L, with a margin for the rounding of L + logprob in double; the
 * exact test is made in double afterwards. -inf while the list has room. */
static float entry_threshold(const struct cand *top, uint32_t n, uint32_t k, double L)
{
	if (n < k)
		return -INFINITY;
	double d = top[k - 1].s - L;
	d -= 1e-9 * (1.0 + fabs(d) + fabs(L));
	float f = (float)d;
	if ((double)f > d)
		f = nextafterf(f, -INFINITY);
	return f;
}

/* Selection of step t for sentence b from st->lp: finished hypotheses go to
 * best, live ones to next_live and the history row t. */
static int beam_select(struct beam_state *st, uint32_t b, uint32_t t, uint32_t max_len,
		       struct tfm_hyp *best)
{
	const uint32_t beam = st->beam, V = st->V, r0 = b * beam;
	const int forced = t + 1 >= max_len;
	uint32_t n = 0;
	for (uint32_t j = 0; j < beam; j++) {
		uint32_t r = r0 + j;
		double L = st->live[r];
		if (L == -INFINITY)
			continue;
		const float *lp = st->lp + (size_t)r * V;
		int rc = scan_row(st, b, t, r, lp);
		if (rc < 0)
			return rc;
		uint32_t v0 = forced ? (uint32_t)st->eos : 0, v1 = forced ? v0 + 1 : V;
		float thr = entry_threshold(st->top, n, beam, L);
		for (uint32_t blk = v0; blk < v1; blk += 64) {
			uint32_t end = v1 - blk < 64 ? v1 : blk + 64;
			/* Almost no block has a token that can enter the list. */
			int any = row_any_ge(lp + blk, end - blk, thr);
			for (uint32_t v = blk; any && v < end; v++) {
				if (!(lp[v] >= thr))
					continue;
				struct cand c = {
				    .s = L + (double)lp[v], .tok = (int32_t)v, .row = r};
				if (c.s == -INFINITY || (n == beam && c.s < st->top[beam - 1].s))
					continue;
				topk_push(st->top, &n, beam, &c);
				thr = entry_threshold(st->top, n, beam, L);
			}
		}
	}
	int32_t *tok = st->hist_tok + (size_t)t * st->rows,
		*par = st->hist_par + (size_t)t * st->rows;
	uint32_t slot = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct cand *c = &st->top[i];
		if (c->tok == st->eos) {
			int rc = finish(st, b, t, c->row, c->s, best);
			if (rc < 0)
				return rc;
			continue;
		}
		st->next_live[r0 + slot] = c->s;
		tok[r0 + slot] = c->tok;
		par[r0 + slot] = (int32_t)c->row;
		slot++;
	}
	const uint32_t nlive = slot;
	for (; slot < beam; slot++) {
		st->next_live[r0 + slot] = -INFINITY;
		tok[r0 + slot] = st->eos;
		par[r0 + slot] = (int32_t)(r0 + slot);
	}
	if (nlive == 0 || !can_improve(st, b, t, max_len, best)) {
		if (!st->have[b])
			return no_hyp_error("beam search", b, t);
		st->done[b] = 1;
		beam_park(st, b, t);
	}
	return 0;
}

static int beam_run(struct beam_state *st, const uint32_t *max_len, int32_t bos, tfm_step_fn step,
		    void *ud, struct tfm_hyp *best)
{
	int32_t *tok0 = malloc((size_t)st->rows * sizeof *tok0);
	if (!tok0)
		return fedrun_error(FEDRUN_ENOMEM, "beam search: no memory for %u rows", st->rows);
	for (uint32_t r = 0; r < st->rows; r++) {
		tok0[r] = bos;
		st->live[r] = r % st->beam == 0 ? 0.0 : -INFINITY;
	}
	int rc = 0;
	for (uint32_t t = 0;; t++) {
		uint32_t left = 0;
		for (uint32_t b = 0; b < st->B; b++)
			left += !st->done[b];
		if (left == 0)
			break;
		const int32_t *tokens = t == 0 ? tok0 : st->hist_tok + (size_t)(t - 1) * st->rows;
		const int32_t *parent = t == 0 ? NULL : st->hist_par + (size_t)(t - 1) * st->rows;
		rc = step(ud, t, tokens, parent, st->lp);
		if (rc < 0) {
			rc = fedrun_error_wrap(rc, "step %u: ", t);
			break;
		}
		/* The history may move: tokens/parent are not used past here. */
		if ((rc = hist_reserve(st, t)) < 0)
			break;
		for (uint32_t b = 0; b < st->B && rc == 0; b++) {
			if (st->done[b])
				beam_park(st, b, t);
			else
				rc = beam_select(st, b, t, max_len[b], &best[b]);
		}
		if (rc < 0)
			break;
		double *tmp = st->live;
		st->live = st->next_live;
		st->next_live = tmp;
	}
	free(tok0);
	return rc;
}

int tfm_beam_search(const struct tfm_search_opts *o, uint32_t B, const uint32_t *max_len,
		    uint32_t V, int32_t bos, int32_t eos, tfm_step_fn step, void *ud,
		    struct tfm_hyp *best)
{
	if (best)
		for (uint32_t b = 0; b < B; b++)
			best[b] = (struct tfm_hyp){0};
	if (!o)
		return fedrun_error(FEDRUN_EINVAL, "beam search: options are NULL");
	if (o->beam == 0)
		return fedrun_error(FEDRUN_EINVAL, "beam search: beam size is 0 (it must be >= 1)");
	if (!isfinite(o->len_penalty))
		return fedrun_error(FEDRUN_EINVAL, "beam search: len_penalty %g is not finite",
				    o->len_penalty);
	int rc = check_args("beam search", B, max_len, V, bos, eos, step, best);
	if (rc < 0 || B == 0)
		return rc;
	if (B > UINT32_MAX / o->beam)
		return fedrun_error(FEDRUN_EINVAL, "beam search: %u sentences x beam %u overflow",
				    B, o->beam);
	struct beam_state st = {
	    .B = B,
	    .beam = o->beam,
	    .rows = B * o->beam,
	    .V = V,
	    .eos = eos,
	    .alpha = o->len_penalty,
	};
	st.live = malloc((size_t)st.rows * sizeof *st.live);
	st.next_live = malloc((size_t)st.rows * sizeof *st.next_live);
	st.top = malloc((size_t)st.beam * sizeof *st.top);
	st.done = calloc(B, 1);
	st.nobound = calloc(B, 1);
	st.have = calloc(B, 1);
	rc = alloc_logprobs("beam search", st.rows, V, &st.lp);
	if (rc == 0 &&
	    (!st.live || !st.next_live || !st.top || !st.done || !st.nobound || !st.have))
		rc = fedrun_error(FEDRUN_ENOMEM, "beam search: no memory for %u rows", st.rows);
	if (rc == 0)
		rc = beam_run(&st, max_len, bos, step, ud, best);
	beam_state_free(&st);
	if (rc < 0)
		tfm_hyp_free(best, B);
	return rc;
}

/* ---- greedy ---- */

int tfm_greedy(uint32_t B, const uint32_t *max_len, uint32_t V, int32_t bos, int32_t eos,
	       tfm_step_fn step, void *ud, struct tfm_hyp *best)
{
	if (best)
		for (uint32_t b = 0; b < B; b++)
			best[b] = (struct tfm_hyp){0};
	int rc = check_args("greedy search", B, max_len, V, bos, eos, step, best);
	if (rc < 0 || B == 0)
		return rc;
	float *lp = NULL;
	rc = alloc_logprobs("greedy search", B, V, &lp);
	int32_t *tokens = malloc((size_t)B * sizeof *tokens);
	int32_t *parent = malloc((size_t)B * sizeof *parent);
	uint32_t *cap = calloc(B, sizeof *cap);
	unsigned char *done = calloc(B, 1);
	if (rc == 0 && (!tokens || !parent || !cap || !done))
		rc = fedrun_error(FEDRUN_ENOMEM, "greedy search: no memory for %u rows", B);
	for (uint32_t b = 0; b < B && rc == 0; b++) {
		tokens[b] = bos;
		parent[b] = (int32_t)b;
	}
	for (uint32_t t = 0, left = B; rc == 0 && left > 0; t++) {
		rc = step(ud, t, tokens, t == 0 ? NULL : parent, lp);
		if (rc < 0) {
			rc = fedrun_error_wrap(rc, "step %u: ", t);
			break;
		}
		for (uint32_t b = 0; b < B && rc == 0; b++) {
			if (done[b]) {
				tokens[b] = eos;
				continue;
			}
			const float *row = lp + (size_t)b * V;
			/* The maximum, then its first position: the lowest id among
			 * ties. A row of -inf leaves arg at -1. */
			int nan;
			float mx = row_max(row, V, &nan);
			int32_t arg = -1;
			for (uint32_t v = 0; mx > -INFINITY && v < V; v++)
				if (row[v] == mx) {
					arg = (int32_t)v;
					break;
				}
			for (uint32_t v = 0; nan && v < V; v++)
				if (isnan(row[v])) {
					rc = nan_error("greedy search", t, b, v);
					break;
				}
			if (rc < 0)
				break;
			if (t + 1 >= max_len[b])
				arg = row[eos] > -INFINITY ? eos : -1;
			if (arg < 0) {
				rc = no_hyp_error("greedy search", b, t);
				break;
			}
			struct tfm_hyp *h = &best[b];
			if (h->len == cap[b]) {
				uint32_t c = cap[b] ? 2 * cap[b] : 16;
				if (c > max_len[b])
					c = max_len[b];
				int32_t *p = realloc(h->tokens, (size_t)c * sizeof *p);
				if (!p) {
					rc = fedrun_error(
					    FEDRUN_ENOMEM,
					    "greedy search: no memory for a hypothesis");
					break;
				}
				h->tokens = p;
				cap[b] = c;
			}
			h->tokens[h->len++] = arg;
			h->logprob += (double)row[arg];
			tokens[b] = arg;
			if (arg == eos) {
				h->score = h->logprob;
				done[b] = 1;
				left--;
			}
		}
	}
	free(lp);
	free(tokens);
	free(parent);
	free(cap);
	free(done);
	if (rc < 0)
		tfm_hyp_free(best, B);
	return rc;
}
