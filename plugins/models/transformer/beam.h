/* SPDX-License-Identifier: Apache-2.0 */
/* Beam search and greedy decoding for the transformer, generic over a step
 * callback with the contract of tfm_decode_step (net.h), so that they can be
 * tested with toy models and run unchanged on the real incremental decoder.
 *
 * The step callback
 * -----------------
 * step(ud, t, tokens, parent, logprobs) is called for t = 0, 1, 2, ... with
 * a fixed number of rows: B * beam for tfm_beam_search, B for tfm_greedy.
 * Row r belongs to sentence r / beam (r for greedy).
 *   - tokens (rows): the token at position t of each row's prefix; bos for
 *     every row at t = 0.
 *   - parent (rows): NULL at t = 0; then parent[r] is the row of step t-1
 *     whose prefix row r continues (always a row of the same sentence). The
 *     callback reorders its state (key/value cache) accordingly: the prefix
 *     of row r at step t is the prefix of row parent[r] at step t-1 followed
 *     by tokens[r]. Greedy passes parent[r] = r.
 *   - logprobs (rows, V): the callback writes log P(next token | prefix) of
 *     each row. Values must be log-probabilities (<= 0, -INFINITY allowed for
 *     impossible tokens); NaN in a row the search uses is FEDRUN_ENUMERIC.
 *   - returns 0 or a negative FEDRUN_E* code (with fedrun_error), which the
 *     search returns after prefixing "step T: " to the message.
 * The batch shape never changes: rows that carry nothing (a sentence that
 * has finished, a beam slot with no hypothesis) are still passed, with
 * token eos and parent[r] = r. Conversely, at t >= 1 a row whose token is
 * eos always carries nothing (live prefixes never contain eos): the search
 * never reads its logprobs, so the callback may skip computing that row.
 * The search stops calling step as soon as every sentence has finished, so
 * the number of calls is at most max(max_len[b]).
 *
 * Beam search (tfm_beam_search)
 * -----------------------------
 * Hypotheses are token sequences y_1 .. y_n without bos whose last token is
 * eos; logprob = sum of log P(y_i | bos y_1 .. y_{i-1}) accumulated in
 * double, and score = logprob / n^len_penalty (n counts the eos; len_penalty
 * 0 scores the raw logprob). This is fairseq's length normalisation
 * (fairseq/sequence_generator.py, `eos_scores /= (step + 1) ** len_penalty`,
 * Ott et al. 2019), a simpler form of the lp(Y) = ((5+|Y|)/6)^alpha of Wu et
 * al. 2016 (GNMT, sec. 7, eq. 14).
 *
 * Step t extends every live prefix (t tokens after bos) by one token:
 *   1. At t = 0 only beam slot 0 of each sentence is live (the others would
 *      be copies of it and the first expansion would pick duplicates).
 *   2. For each sentence, the candidates are (live row, token) pairs with a
 *      finite cumulative logprob; when t = max_len[b] - 1 only eos is a
 *      candidate (the hypothesis reaches max_len[b] tokens, eos included).
 *   3. The `beam` best candidates by cumulative logprob are kept, ties going
 *      to the lower token id, then to the lower row (fully deterministic).
 *      A kept candidate whose token is eos becomes a finished hypothesis
 *      (length t + 1) and takes no beam slot in the next step; the others
 *      fill slots 0, 1, ... in that order, and the remaining slots are empty
 *      (-inf, not live). Unlike fairseq, which takes 2 * beam candidates to
 *      refill the slots of finished ones, the beam is not refilled: this
 *      makes beam 1 exactly greedy search for every len_penalty.
 *   4. The best finished hypothesis of the sentence is kept: highest score,
 *      and among equal scores the one found first (earlier step, then the
 *      order of step 3).
 *   5. A sentence stops when it has no live prefix left, or when it has a
 *      finished hypothesis whose score is >= an upper bound on the score of
 *      every hypothesis that could still be finished from its live prefixes.
 *      Since log-probabilities are <= 0, a live prefix of length l with
 *      cumulative logprob L <= 0 can only end in a hypothesis of length n in
 *      [l + 1, max_len[b]] with logprob <= L, hence score <= L / n^alpha <=
 *      max(L / (l+1)^alpha, L / max_len[b]^alpha) (L / n^alpha is monotonic
 *      in n). With len_penalty 0 this is "the best finished beats the best
 *      live prefix"; with len_penalty > 0 the bound is L / max_len^alpha, so
 *      sentences usually run close to max_len. Given log-probabilities
 *      <= 0, as the contract requires, the rule is exact: the result is the
 *      best hypothesis this process would find if every sentence ran to
 *      max_len[b]. (As a safeguard, once a logprob > 0 has been seen in a
 *      live row of a sentence, that sentence no longer stops early and runs
 *      until its beam empties, at the latest at step max_len[b] - 1.)
 * The beam, once as wide as the number of candidates of every step (e.g.
 * V^(max_len-1)), keeps every prefix, and the search is then exhaustive.
 *
 * Greedy search (tfm_greedy) is a separate argmax loop with rows = B (the
 * lowest token id among equal maxima; only eos at step max_len[b] - 1); its
 * score is the logprob (length normalisation does not change the argmax).
 *
 * Errors: FEDRUN_EINVAL for bad arguments (NULL pointers, beam 0, V 0,
 * bos/eos outside [0, V), max_len[b] 0, a non-finite len_penalty, B * beam
 * overflowing), FEDRUN_ENOMEM, FEDRUN_ENUMERIC for NaN logprobs or a sentence
 * left with no hypothesis of finite logprob, and the callback's own codes.
 * best[] need not be initialised on entry (it is overwritten); on error
 * every best[b] is zeroed (tokens NULL), so tfm_hyp_free(best, B) is safe
 * after any return. */
#ifndef FEDRUN_TFM_BEAM_H
#define FEDRUN_TFM_BEAM_H

#include <stdint.h>

typedef int (*tfm_step_fn)(void *ud, uint32_t t, const int32_t *tokens, const int32_t *parent,
			   float *logprobs);

struct tfm_search_opts {
	uint32_t beam;	    /* >= 1; beam 1 gives greedy's hypotheses */
	double len_penalty; /* alpha in score = logprob / len^alpha; 0 = none */
};

/* One hypothesis: tokens (len, malloc'd, owned by the struct; no bos, eos
 * last), logprob = sum of the token log-probabilities, score as above. */
struct tfm_hyp {
	int32_t *tokens;
	uint32_t len;
	double score;
	double logprob;
};

/* B sentences, max_len[b] >= 1 tokens (eos included) each, vocabulary V,
 * bos and eos ids. Writes best[b] = the best finished hypothesis of sentence
 * b (free with tfm_hyp_free). B = 0 returns 0 without calling step. */
int tfm_beam_search(const struct tfm_search_opts *o, uint32_t B, const uint32_t *max_len,
		    uint32_t V, int32_t bos, int32_t eos, tfm_step_fn step, void *ud,
		    struct tfm_hyp *best);

/* Greedy decoding with rows = B; same arguments and results as
 * tfm_beam_search with beam 1 except score == logprob. */
int tfm_greedy(uint32_t B, const uint32_t *max_len, uint32_t V, int32_t bos, int32_t eos,
	       tfm_step_fn step, void *ud, struct tfm_hyp *best);

/* max_len of a sentence whose source has src_len tokens (eos not counted):
 * N = int(max_len_a * (src_len + 1) + max_len_b) + 1, i.e. at most
 * int(a * (src_len + 1) + b) tokens before eos, as fairseq's --max-len-a
 * and --max-len-b (fairseq/sequence_generator.py: its src_lengths count the
 * source's eos, and eos is forced at step max_len, after max_len tokens).
 * A negative or NaN a * (src_len + 1) + b counts as 0, so N >= 1; cap > 0
 * bounds N (e.g. the decoder's position limit), cap 0 does not. */
uint32_t tfm_max_len(double max_len_a, double max_len_b, uint32_t src_len, uint32_t cap);

/* Frees h[0..n-1].tokens and zeroes the structs; h may be NULL when n = 0. */
void tfm_hyp_free(struct tfm_hyp *h, uint32_t n);

#endif
