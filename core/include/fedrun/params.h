/* SPDX-License-Identifier: Apache-2.0 */
/* The parameter arena and its layout table.
 * A model's parameters live in one contiguous float array; the layout names
 * each tensor and gives its offset, size and shape (llm.c style). Gradients,
 * updates and optimizer moments share the same layout. */
#ifndef FEDRUN_PARAMS_H
#define FEDRUN_PARAMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FEDRUN_NAME_MAX 128 /* bytes of a tensor name, NUL included */
#define FEDRUN_DIMS_MAX 4
/* Tensors start on multiples of this many floats (64 bytes), so that every
 * tensor is aligned for vector loads; the padding is zero and never sent. */
#define FEDRUN_TENSOR_ALIGN 16

struct fedrun_tensor_info {
	char name[FEDRUN_NAME_MAX]; /* hierarchical: "gru.0.w_ih" */
	uint64_t offset;            /* in floats, from the arena start */
	uint64_t numel;
	uint32_t ndim;
	uint64_t shape[FEDRUN_DIMS_MAX];
};

struct fedrun_layout {
	uint32_t n;                       /* number of tensors */
	uint32_t cap;                     /* private: allocated entries */
	struct fedrun_tensor_info *t;     /* owned, n entries */
	uint64_t total;                   /* arena size in floats (padding included) */
};

/* Caller-owned struct; fini frees what add allocated. */
void fedrun_layout_init(struct fedrun_layout *l);
void fedrun_layout_fini(struct fedrun_layout *l);
/* Appends a tensor. Names must be unique and shorter than FEDRUN_NAME_MAX;
 * 1 <= ndim <= FEDRUN_DIMS_MAX; every dimension >= 1. */
int fedrun_layout_add(struct fedrun_layout *l, const char *name, uint32_t ndim,
		      const uint64_t *shape);
/* Index of the tensor called `name`, or -1. */
int64_t fedrun_layout_find(const struct fedrun_layout *l, const char *name);
/* Number of floats that travel when every tensor is sent (no padding). */
uint64_t fedrun_layout_numel(const struct fedrun_layout *l);
/* Deep copy into a caller-owned, initialised-or-not struct. */
int fedrun_layout_copy(struct fedrun_layout *dst, const struct fedrun_layout *src);

/* Aligned float arrays for arenas (64-byte aligned, zero-filled). Free with
 * fedrun_arena_free. */
float *fedrun_arena_alloc(uint64_t nfloats);
void fedrun_arena_free(float *p);

#ifdef __cplusplus
}
#endif
#endif
