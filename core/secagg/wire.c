/* SPDX-License-Identifier: Apache-2.0 */
/* The byte layout of secure aggregation's messages: a 16-byte header
 * ("FSA1", stage, round, sender) and little-endian fields, written into a
 * growing buffer and read back with bounds checks. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "internal.h"

static const uint8_t magic[4] = {'F', 'S', 'A', '1'};

uint8_t *secagg_wb_reserve(struct secagg_wbuf *w, size_t n)
{
	if (w->nomem)
		return NULL;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *p = realloc(w->p, cap);
		if (!p) {
			w->nomem = true;
			return NULL;
		}
		w->p = p;
		w->cap = cap;
	}
	uint8_t *at = w->p + w->len;
	w->len += n;
	return at;
}

void secagg_wb_bytes(struct secagg_wbuf *w, const void *p, size_t n)
{
	uint8_t *at = secagg_wb_reserve(w, n);
	if (at)
		memcpy(at, p, n);
}

void secagg_wb_u32(struct secagg_wbuf *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	secagg_wb_bytes(w, b, 4);
}

void secagg_wb_header(struct secagg_wbuf *w, uint32_t stage, uint32_t round, uint32_t sender)
{
	secagg_wb_bytes(w, magic, 4);
	secagg_wb_u32(w, stage);
	secagg_wb_u32(w, round);
	secagg_wb_u32(w, sender);
}

int secagg_wb_finish(struct secagg_wbuf *w, void **msg, size_t *len)
{
	if (w->nomem) {
		free(w->p);
		*w = (struct secagg_wbuf){0};
		return fedrun_error(FEDRUN_ENOMEM,
				    "out of memory for a secure-aggregation message");
	}
	*msg = w->p;
	*len = w->len;
	*w = (struct secagg_wbuf){0};
	return 0;
}

const uint8_t *secagg_rb_bytes(struct secagg_rbuf *r, size_t n)
{
	if (r->bad || n > r->len - r->pos) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *at = r->p + r->pos;
	r->pos += n;
	return at;
}

uint32_t secagg_rb_u32(struct secagg_rbuf *r)
{
	const uint8_t *b = secagg_rb_bytes(r, 4);
	return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
		       (uint32_t)b[3] << 24
		 : 0;
}

static const char *stage_name(uint32_t stage)
{
	switch (stage) {
	case SECAGG_ADVERTISE:
		return "advertise";
	case SECAGG_SHARE:
		return "share";
	case SECAGG_MASKED:
		return "masked input";
	case SECAGG_UNMASK:
		return "unmask";
	default:
		return "unknown";
	}
}

int secagg_rb_header(struct secagg_rbuf *r, const void *msg, size_t len, uint32_t stage,
		     uint32_t round, uint32_t *sender, const char *what)
{
	*r = (struct secagg_rbuf){.p = msg, .len = msg ? len : 0};
	const uint8_t *m = secagg_rb_bytes(r, 4);
	uint32_t st = secagg_rb_u32(r), rd = secagg_rb_u32(r);
	*sender = secagg_rb_u32(r);
	if (r->bad || memcmp(m, magic, 4) != 0)
		return fedrun_error(FEDRUN_EINVAL, "secagg: %s: not a secure-aggregation message",
				    what);
	if (st != stage)
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: %s: a message of the %s stage, expected %s", what,
				    stage_name(st), stage_name(stage));
	if (rd != round)
		return fedrun_error(FEDRUN_EINVAL, "secagg: %s: a message of round %u in round %u",
				    what, rd, round);
	return 0;
}

int secagg_rb_end(const struct secagg_rbuf *r, const char *what)
{
	if (r->bad)
		return fedrun_error(FEDRUN_EINVAL, "secagg: %s: the message is truncated", what);
	if (r->pos != r->len)
		return fedrun_error(FEDRUN_EINVAL,
				    "secagg: %s: %zu bytes after the end of the message", what,
				    r->len - r->pos);
	return 0;
}
