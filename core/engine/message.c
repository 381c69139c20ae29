/* SPDX-License-Identifier: Apache-2.0 */
/* Push/pull message format (little-endian host order, checked by magic):
 *   header (48 bytes) | n_sent uint32 tensor indices, padded to 8 bytes |
 *   the sent tensors' floats, in index order. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "message.h"

#define MAGIC "FRM1"

struct header {
	char magic[4];
	uint32_t kind;
	uint32_t round;
	uint32_t client;
	uint64_t n_samples;
	double train_loss;
	uint32_t n_tensors; /* of the layout, to catch a layout mismatch */
	uint32_t n_sent;
	uint64_t payload_floats;
};

_Static_assert(sizeof(struct header) == 48, "message header is 48 bytes");

static size_t index_bytes(uint32_t n_sent)
{
	return ((size_t)n_sent * 4 + 7) / 8 * 8;
}

int msg_encode(enum msg_kind kind, uint32_t round, uint32_t client, uint64_t n_samples,
	       double train_loss, const struct fedrun_layout *l, const float *arena,
	       const uint8_t *mask, void **buf, size_t *len)
{
	uint32_t n_sent = 0;
	uint64_t floats = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		if (!mask || mask[i]) {
			n_sent++;
			floats += l->t[i].numel;
		}
	}
	size_t total = sizeof(struct header) + index_bytes(n_sent) + floats * sizeof(float);
	char *out = malloc(total);
	if (!out)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for a %zu-byte message", total);
	struct header h = {.kind = kind, .round = round, .client = client,
			   .n_samples = n_samples, .train_loss = train_loss,
			   .n_tensors = l->n, .n_sent = n_sent, .payload_floats = floats};
	memcpy(h.magic, MAGIC, 4);
	memcpy(out, &h, sizeof h);
	uint32_t *idx = (uint32_t *)(out + sizeof h);
	memset(idx, 0, index_bytes(n_sent));
	float *data = (float *)(out + sizeof h + index_bytes(n_sent));
	for (uint32_t i = 0, k = 0; i < l->n; i++) {
		if (mask && !mask[i])
			continue;
		idx[k++] = i;
		memcpy(data, arena + l->t[i].offset, l->t[i].numel * sizeof(float));
		data += l->t[i].numel;
	}
	*buf = out;
	*len = total;
	return 0;
}

int msg_decode(const void *buf, size_t len, const struct fedrun_layout *l, struct msg_view *view)
{
	struct header h;
	if (len < sizeof h)
		return fedrun_error(FEDRUN_EFORMAT, "message of %zu bytes is shorter than its header", len);
	memcpy(&h, buf, sizeof h);
	if (memcmp(h.magic, MAGIC, 4) != 0)
		return fedrun_error(FEDRUN_EFORMAT, "message has a bad magic number");
	if (h.n_tensors != l->n || h.n_sent > l->n)
		return fedrun_error(FEDRUN_EFORMAT, "message from client %u is for a model of %u tensors, not %u",
				    h.client, h.n_tensors, l->n);
	size_t head = sizeof h + index_bytes(h.n_sent);
	if (len < head || (len - head) / sizeof(float) != h.payload_floats ||
	    (len - head) % sizeof(float) != 0)
		return fedrun_error(FEDRUN_EFORMAT, "message from client %u has %zu bytes, its header implies %zu",
				    h.client, len, head + (size_t)h.payload_floats * sizeof(float));
	const uint32_t *idx = (const uint32_t *)((const char *)buf + sizeof h);
	const float *data = (const float *)((const char *)buf + head);
	for (uint32_t i = 0; i < l->n; i++)
		view->tensor[i] = NULL;
	uint64_t used = 0;
	for (uint32_t k = 0; k < h.n_sent; k++) {
		uint32_t i = idx[k];
		if (i >= l->n || (k > 0 && i <= idx[k - 1]))
			return fedrun_error(FEDRUN_EFORMAT, "message from client %u lists tensor %u out of order",
					    h.client, i);
		if (used + l->t[i].numel > h.payload_floats)
			return fedrun_error(FEDRUN_EFORMAT, "message from client %u is short of data for tensor %s",
					    h.client, l->t[i].name);
		view->tensor[i] = data + used;
		used += l->t[i].numel;
	}
	if (used != h.payload_floats)
		return fedrun_error(FEDRUN_EFORMAT, "message from client %u carries %llu extra floats",
				    h.client, (unsigned long long)(h.payload_floats - used));
	view->kind = h.kind;
	view->round = h.round;
	view->client = h.client;
	view->n_samples = h.n_samples;
	view->train_loss = h.train_loss;
	view->n_sent = h.n_sent;
	return 0;
}
