/* SPDX-License-Identifier: Apache-2.0 */
/* Push and pull messages: the bytes that travel between server and clients.
 * Even in one process they are real serialized buffers, so traffic is
 * counted exactly and a distributed transport can ship the same bytes.
 * Internal to libfedrun. */
#ifndef FEDRUN_MESSAGE_H
#define FEDRUN_MESSAGE_H

#include <stddef.h>
#include <stdint.h>
#include "fedrun/params.h"

enum msg_kind { MSG_PUSH = 1, MSG_PULL = 2 };

struct msg_view {
	uint32_t kind, round, client;
	uint64_t n_samples;
	double train_loss;
	uint32_t n_sent;
	const float **tensor; /* layout->n entries; NULL = not sent; caller-owned array */
};

/* Serializes the tensors of `arena` whose mask entry is set (mask NULL: all)
 * into a new buffer *buf (free with free()) of *len bytes. */
int msg_encode(enum msg_kind kind, uint32_t round, uint32_t client, uint64_t n_samples,
	       double train_loss, const struct fedrun_layout *l, const float *arena,
	       const uint8_t *mask, void **buf, size_t *len);

/* Checks a received buffer against the layout and points view->tensor[i]
 * into it (no copy). view->tensor must have room for l->n pointers. */
int msg_decode(const void *buf, size_t len, const struct fedrun_layout *l,
	       struct msg_view *view);

#endif
