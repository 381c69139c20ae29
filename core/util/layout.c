/* SPDX-License-Identifier: Apache-2.0 */
/* The layout table of the parameter arena, and aligned arena allocation. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/params.h"

void fedrun_layout_init(struct fedrun_layout *l)
{
	memset(l, 0, sizeof *l);
}

void fedrun_layout_fini(struct fedrun_layout *l)
{
	free(l->t);
	memset(l, 0, sizeof *l);
}

int fedrun_layout_add(struct fedrun_layout *l, const char *name, uint32_t ndim,
		      const uint64_t *shape)
{
	if (!name || !*name || strlen(name) >= FEDRUN_NAME_MAX)
		return fedrun_error(FEDRUN_EINVAL, "tensor name must have 1 to %d bytes",
				    FEDRUN_NAME_MAX - 1);
	if (ndim < 1 || ndim > FEDRUN_DIMS_MAX)
		return fedrun_error(FEDRUN_EINVAL, "tensor %s: %u dimensions (1 to %d allowed)",
				    name, ndim, FEDRUN_DIMS_MAX);
	if (fedrun_layout_find(l, name) >= 0)
		return fedrun_error(FEDRUN_EINVAL, "tensor %s: name used twice", name);
	uint64_t numel = 1;
	for (uint32_t d = 0; d < ndim; d++) {
		if (shape[d] == 0 || shape[d] > (UINT64_C(1) << 40) / numel)
			return fedrun_error(FEDRUN_EINVAL, "tensor %s: bad dimension %u",
					    name, d);
		numel *= shape[d];
	}
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? 2 * l->cap : 16;
		struct fedrun_tensor_info *t = realloc(l->t, cap * sizeof *t);
		if (!t)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		l->t = t;
		l->cap = cap;
	}
	struct fedrun_tensor_info *ti = &l->t[l->n++];
	memset(ti, 0, sizeof *ti);
	strcpy(ti->name, name);
	ti->offset = l->total;
	ti->numel = numel;
	ti->ndim = ndim;
	memcpy(ti->shape, shape, ndim * sizeof *shape);
	l->total += (numel + FEDRUN_TENSOR_ALIGN - 1) / FEDRUN_TENSOR_ALIGN * FEDRUN_TENSOR_ALIGN;
	return 0;
}

int64_t fedrun_layout_find(const struct fedrun_layout *l, const char *name)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (strcmp(l->t[i].name, name) == 0)
			return i;
	return -1;
}

uint64_t fedrun_layout_numel(const struct fedrun_layout *l)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < l->n; i++)
		n += l->t[i].numel;
	return n;
}

int fedrun_layout_copy(struct fedrun_layout *dst, const struct fedrun_layout *src)
{
	fedrun_layout_init(dst);
	if (src->n == 0)
		return 0;
	dst->t = malloc(src->n * sizeof *dst->t);
	if (!dst->t)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	memcpy(dst->t, src->t, src->n * sizeof *dst->t);
	dst->n = dst->cap = src->n;
	dst->total = src->total;
	return 0;
}

float *fedrun_arena_alloc(uint64_t nfloats)
{
	void *p = NULL;
	size_t bytes = (size_t)(nfloats ? nfloats : 1) * sizeof(float);
	bytes = (bytes + 63) / 64 * 64;
	if (posix_memalign(&p, 64, bytes) != 0)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

void fedrun_arena_free(float *p)
{
	free(p);
}
