/* SPDX-License-Identifier: Apache-2.0 */
/* Streams and truncated back-propagation through time: a client's token
 * stream laid out as `batch` parallel rows and cut into windows of `bptt`
 * steps, the layout of PyTorch's word_language_model (batchify, get_batch). */
#include "config.h"
#include "fedrun/error.h"
#include "fedrun/text.h"

const uint32_t *fedrun_stream_sentence(const struct fedrun_stream *s, uint64_t i, uint64_t *len)
{
	if (i >= s->n_sent) {
		*len = 0;
		return NULL;
	}
	uint64_t base = s->sent_off[0];
	*len = s->sent_off[i + 1] - s->sent_off[i];
	return s->ids + (s->sent_off[i] - base);
}

int fedrun_bptt_init(struct fedrun_bptt *it, const struct fedrun_stream *s, uint32_t batch,
		     uint32_t bptt)
{
	if (batch == 0 || bptt == 0)
		return fedrun_error(FEDRUN_EINVAL, "bptt: batch (%u) and bptt (%u) must be >= 1",
				    batch, bptt);
	it->ids = s->ids;
	it->batch = batch;
	it->bptt = bptt;
	it->row_len = s->n_tokens / batch;
	/* Each row of L tokens gives L - 1 (input, target) pairs. */
	it->windows = it->row_len >= 2 ? (it->row_len - 1 + bptt - 1) / bptt : 0;
	return 0;
}

uint32_t fedrun_bptt_window(const struct fedrun_bptt *it, uint64_t w, uint32_t *input,
			    uint32_t *target)
{
	if (w >= it->windows)
		return 0;
	uint64_t t0 = w * it->bptt;
	uint64_t left = it->row_len - 1 - t0;
	uint32_t T = left < it->bptt ? (uint32_t)left : it->bptt;
	uint32_t B = it->batch;
	/* (T, B), time-major: row b is the stream's b-th block of L tokens. */
	for (uint32_t b = 0; b < B; b++) {
		const uint32_t *row = it->ids + (uint64_t)b * it->row_len + t0;
		for (uint32_t t = 0; t < T; t++) {
			input[(uint64_t)t * B + b] = row[t];
			target[(uint64_t)t * B + b] = row[t + 1];
		}
	}
	return T;
}

uint64_t fedrun_bptt_targets(const struct fedrun_bptt *it)
{
	return it->row_len >= 2 ? (it->row_len - 1) * it->batch : 0;
}
