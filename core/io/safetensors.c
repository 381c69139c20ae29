/* SPDX-License-Identifier: Apache-2.0 */
/* The safetensors format (Hugging Face): an 8-byte little-endian header
 * length, a JSON header naming each tensor's dtype, shape and byte range,
 * then the raw data. fedrun adds a "fedrun.checksum" metadata entry so that
 * a corrupted checkpoint is refused, not loaded: "h2:" and 16 hex digits, a
 * hash of the header without that entry (compact, keys sorted: the round
 * number and the tensors' names, shapes and offsets) and of the data
 * section. Files of fedrun 0.1.0 before it have 16 hex digits, a hash of the
 * data section alone (FEDRUN_ST_CHECKSUM_DATA). */
#include "config.h"
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "io_internal.h"

#define HEADER_MAX (UINT64_C(100) << 20)
#define CHECKSUM_KEY "fedrun.checksum"
#define CHECKSUM_V2 "h2:"

static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	[FEDRUN_F32] = {"F32", 4}, [FEDRUN_F64] = {"F64", 8}, [FEDRUN_U8] = {"U8", 1},
	[FEDRUN_U64] = {"U64", 8}, [FEDRUN_I64] = {"I64", 8},
	[FEDRUN_F16] = {"F16", 2}, [FEDRUN_BF16] = {"BF16", 2}, [FEDRUN_BOOL] = {"BOOL", 1},
	[FEDRUN_I8] = {"I8", 1}, [FEDRUN_I16] = {"I16", 2}, [FEDRUN_I32] = {"I32", 4},
	[FEDRUN_U16] = {"U16", 2}, [FEDRUN_U32] = {"U32", 4},
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

const char *fedrun_dtype_name(enum fedrun_dtype d)
{
	return (size_t)d < NDTYPES ? dtypes[d].name : "?";
}

size_t fedrun_dtype_size(enum fedrun_dtype d)
{
	return (size_t)d < NDTYPES ? dtypes[d].size : 0;
}

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

float fedrun_bf16_to_f32(uint16_t h)
{
	return bits_f32((uint32_t)h << 16);
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits. Every
 * value is a float: normals rebias the exponent, subnormals (m 2^-24) are
 * normalised, infinities and NaNs keep their fraction (a NaN's payload,
 * its quiet bit the float's). */
float fedrun_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	if (e == 0x1f)
		return bits_f32(sign | UINT32_C(0xff) << 23 | m << 13);
	if (e == 0) {
		if (m == 0)
			return bits_f32(sign);
		int32_t x = 127 - 14; /* 2^-14 x 0.m: shift m up to a leading 1 */
		while (!(m & 0x400)) {
			m <<= 1;
			x--;
		}
		return bits_f32(sign | (uint32_t)x << 23 | (m & 0x3ff) << 13);
	}
	return bits_f32(sign | (e - 15 + 127) << 23 | m << 13);
}

int fedrun_st_to_f32(const struct fedrun_st_tensor *t, float *out)
{
	const unsigned char *p = t->data;
	switch (t->dtype) {
	case FEDRUN_F32:
		if (t->bytes)
			memcpy(out, p, t->bytes);
		return 0;
	case FEDRUN_F16:
	case FEDRUN_BF16:
		for (uint64_t i = 0; i < t->bytes / 2; i++) {
			uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8); /* little-endian */
			out[i] = t->dtype == FEDRUN_F16 ? fedrun_f16_to_f32(h) : fedrun_bf16_to_f32(h);
		}
		return 0;
	default:
		return fedrun_error(FEDRUN_EFORMAT, "tensor '%s': dtype %s, not a float (F32, F16 "
				    "or BF16)", t->name, fedrun_dtype_name(t->dtype));
	}
}

void fedrun_st_init(struct fedrun_st_file *f)
{
	memset(f, 0, sizeof *f);
}

void fedrun_st_fini(struct fedrun_st_file *f)
{
	for (uint32_t i = 0; i < f->n; i++)
		free(f->t[i].name);
	free(f->t);
	json_decref(f->meta);
	free(f->buf);
	memset(f, 0, sizeof *f);
}

static int add_entry(struct fedrun_st_file *f, const char *name, enum fedrun_dtype dtype,
		     uint32_t ndim, const uint64_t *shape, const void *data)
{
	if (ndim > 8)
		return fedrun_error(FEDRUN_EINVAL, "tensor %s: too many dimensions", name);
	if (f->n == f->cap) {
		uint32_t cap = f->cap ? 2 * f->cap : 16;
		struct fedrun_st_tensor *t = realloc(f->t, cap * sizeof *t);
		if (!t)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		f->t = t;
		f->cap = cap;
	}
	struct fedrun_st_tensor *t = &f->t[f->n];
	memset(t, 0, sizeof *t);
	t->name = strdup(name);
	if (!t->name)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	t->dtype = dtype;
	t->ndim = ndim;
	t->bytes = dtypes[dtype].size;
	for (uint32_t d = 0; d < ndim; d++) {
		t->shape[d] = shape[d];
		t->bytes *= shape[d];
	}
	t->data = data;
	f->n++;
	return 0;
}

/* A name used twice is refused by fedrun_st_write, in the hash table of
 * its header: looking each name up here, in a list, made a checkpoint of
 * 100,000 clients' states (a few entries each) quadratic in the clients
 * (0.5 s of a round without checkpoint, 23 s with). */
int fedrun_st_add(struct fedrun_st_file *f, const char *name, enum fedrun_dtype dtype,
		  uint32_t ndim, const uint64_t *shape, const void *data)
{
	return add_entry(f, name, dtype, ndim, shape, data);
}

int fedrun_st_meta_set(struct fedrun_st_file *f, const char *key, const char *value)
{
	if (!f->meta && !(f->meta = json_object()))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	if (json_object_set_new(f->meta, key, json_string(value)) != 0)
		return fedrun_error(FEDRUN_EINVAL, "bad metadata %s", key);
	return 0;
}

const struct fedrun_st_tensor *fedrun_st_find(const struct fedrun_st_file *f, const char *name)
{
	for (uint32_t i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

const char *fedrun_st_meta_get(const struct fedrun_st_file *f, const char *key)
{
	return f->meta ? json_string_value(json_object_get(f->meta, key)) : NULL;
}

/* 64-bit FNV-1a over 8-byte words of the data section, streamed: the same
 * value however the data is cut into pieces. Not cryptographic: it detects
 * corruption and truncation, not tampering. */
struct hasher {
	uint64_t h;
	unsigned char carry[8];
	unsigned nc;
};

static void hash_init(struct hasher *hs)
{
	hs->h = UINT64_C(0xcbf29ce484222325);
	hs->nc = 0;
}

static void hash_word(struct hasher *hs, const unsigned char *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
	hs->h = (hs->h ^ w) * UINT64_C(0x100000001b3);
}

static void hash_update(struct hasher *hs, const void *data, uint64_t n)
{
	const unsigned char *p = data;
	while (n && hs->nc) {
		hs->carry[hs->nc++] = *p++;
		n--;
		if (hs->nc == 8) {
			hash_word(hs, hs->carry);
			hs->nc = 0;
		}
	}
	for (; n >= 8; n -= 8, p += 8)
		hash_word(hs, p);
	while (n--)
		hs->carry[hs->nc++] = *p++;
}

static uint64_t hash_final(struct hasher *hs)
{
	for (unsigned i = 0; i < hs->nc; i++)
		hs->h = (hs->h ^ hs->carry[i]) * UINT64_C(0x100000001b3);
	return hs->h;
}

static void hash_hex(uint64_t h, char out[17])
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	snprintf(out, 17, "%016" PRIx64, h);
}

/* The "h2:" checksum of a header (its checksum entry left out) and of the
 * data: the tensors of a file being written (f), or a file's data section
 * read (data, n). -1 when out of memory. */
static int header_sum(json_t *hdr, const struct fedrun_st_file *f, const char *data, uint64_t n,
		      char out[24])
{
	/* The entry is taken out for the dump and put back: a copy of the
	 * header, for a checkpoint of many clients' entries, cost a fifth of
	 * writing it. */
	json_t *meta = json_object_get(hdr, "__metadata__");
	json_t *entry = json_incref(json_object_get(meta, CHECKSUM_KEY));
	if (entry)
		json_object_del(meta, CHECKSUM_KEY);
	char *canon = json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS);
	if (entry && json_object_set_new(meta, CHECKSUM_KEY, entry) != 0) {
		free(canon);
		return -1;
	}
	if (!canon)
		return -1;
	struct hasher hs;
	hash_init(&hs);
	uint64_t len = strlen(canon);
	unsigned char len_le[8];
	for (int b = 0; b < 8; b++)
		len_le[b] = (unsigned char)(len >> (8 * b));
	hash_update(&hs, len_le, 8);
	hash_update(&hs, canon, len);
	free(canon);
	if (f)
		for (uint32_t i = 0; i < f->n; i++)
			hash_update(&hs, f->t[i].data, f->t[i].bytes);
	else
		hash_update(&hs, data, n);
	char hex[17];
	hash_hex(hash_final(&hs), hex);
	snprintf(out, 24, CHECKSUM_V2 "%s", hex);
	return 0;
}

static int st_write(const struct fedrun_st_file *f, const char *path, bool sync)
{
	int rc = FEDRUN_ENOMEM;
	json_t *hdr = json_object(), *meta = json_object();
	char *text = NULL;
	if (!hdr || !meta)
		goto out_json;

	uint64_t off = 0;
	if (f->meta) {
		const char *k;
		json_t *v;
		json_object_foreach(f->meta, k, v)
			json_object_set(meta, k, v);
	}
	json_object_del(meta, CHECKSUM_KEY);
	json_object_set(hdr, "__metadata__", meta);
	for (uint32_t i = 0; i < f->n; i++) {
		const struct fedrun_st_tensor *t = &f->t[i];
		if (json_object_get(hdr, t->name)) { /* "__metadata__" too */
			rc = fedrun_error(FEDRUN_EINVAL, "%s: tensor %s: name used twice", path,
					  t->name);
			goto out;
		}
		json_t *shape = json_array();
		for (uint32_t d = 0; d < t->ndim; d++)
			json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
		json_t *e = json_pack("{s:s, s:o, s:[I,I]}", "dtype", dtypes[t->dtype].name,
				      "shape", shape, "data_offsets", (json_int_t)off,
				      (json_int_t)(off + t->bytes));
		if (!e || json_object_set_new(hdr, t->name, e) != 0)
			goto out_json;
		off += t->bytes;
	}
	char sum[24];
	if (header_sum(hdr, f, NULL, 0, sum) < 0)
		goto out_json;
	json_object_set_new(meta, CHECKSUM_KEY, json_string(sum));
	text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!text)
		goto out_json;

	/* Pad the header with spaces so that the data starts 8-byte aligned. */
	uint64_t hlen = strlen(text), padded = (hlen + 7) / 8 * 8;
	unsigned char len_le[8];
	for (int b = 0; b < 8; b++)
		len_le[b] = (unsigned char)(padded >> (8 * b));

	struct fedrun_atomic_file af;
	rc = fedrun_atomic_open(&af, path);
	if (rc < 0)
		goto out;
	int ok = fwrite(len_le, 1, 8, af.fp) == 8 && fwrite(text, 1, hlen, af.fp) == hlen;
	for (uint64_t p = hlen; ok && p < padded; p++)
		ok = fputc(' ', af.fp) != EOF;
	for (uint32_t i = 0; ok && i < f->n; i++)
		ok = f->t[i].bytes == 0 ||
		     fwrite(f->t[i].data, 1, f->t[i].bytes, af.fp) == f->t[i].bytes;
	if (!ok) {
		rc = fedrun_error(FEDRUN_EIO, "cannot write '%s'", af.tmp);
		fedrun_atomic_abort(&af);
		goto out;
	}
	rc = sync ? fedrun_atomic_commit(&af) : io_atomic_commit_nosync(&af);
	goto out;
out_json:
	rc = fedrun_error(FEDRUN_ENOMEM, "out of memory writing '%s'", path);
out:
	free(text);
	json_decref(meta);
	json_decref(hdr);
	return rc;
}

int fedrun_st_write(const struct fedrun_st_file *f, const char *path)
{
	return st_write(f, path, true);
}

int io_st_write_nosync(const struct fedrun_st_file *f, const char *path)
{
	return st_write(f, path, false);
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

#define BAD(...) do { rc = fedrun_error(FEDRUN_EFORMAT, __VA_ARGS__); goto fail; } while (0)

enum fedrun_st_checksum fedrun_st_checksum_kind(const struct fedrun_st_file *f)
{
	const char *v = f->meta ? json_string_value(json_object_get(f->meta, CHECKSUM_KEY)) : NULL;
	if (!v)
		return FEDRUN_ST_CHECKSUM_NONE;
	size_t pre = strncmp(v, CHECKSUM_V2, 3) == 0 ? 3 : 0;
	if (strlen(v) != pre + 16 || strspn(v + pre, "0123456789abcdef") != 16)
		return FEDRUN_ST_CHECKSUM_BAD;
	return pre ? FEDRUN_ST_CHECKSUM_FULL : FEDRUN_ST_CHECKSUM_DATA;
}

int fedrun_st_read(struct fedrun_st_file *f, const char *path)
{
	fedrun_st_init(f);
	uint64_t (*ranges)[2] = NULL;
	json_t *hdr = NULL;
	int rc = fedrun_read_file(path, &f->buf, &f->buf_len);
	if (rc < 0)
		return rc;
	if (f->buf_len < 8)
		BAD("%s: not a safetensors file (%zu bytes, truncated?)", path, f->buf_len);
	uint64_t hlen = 0;
	for (int b = 7; b >= 0; b--)
		hlen = hlen << 8 | (unsigned char)f->buf[b];
	if (hlen > HEADER_MAX || hlen > f->buf_len - 8)
		BAD("%s: header length %" PRIu64 " exceeds the file (%zu bytes): truncated or "
		    "not a safetensors file", path, hlen, f->buf_len);
	json_error_t jerr;
	hdr = json_loadb(f->buf + 8, hlen, JSON_REJECT_DUPLICATES, &jerr);
	if (!hdr || !json_is_object(hdr))
		BAD("%s: header is not a JSON object (%s)", path, hdr ? "wrong type" : jerr.text);
	const char *data = f->buf + 8 + hlen;
	uint64_t data_len = f->buf_len - 8 - hlen;

	size_t nt = json_object_size(hdr);
	ranges = calloc(nt ? nt : 1, sizeof *ranges);
	if (!ranges)
		BAD("%s: out of memory", path);
	size_t nr = 0;
	const char *key;
	json_t *v;
	json_object_foreach(hdr, key, v) {
		if (strcmp(key, "__metadata__") == 0) {
			if (!json_is_object(v))
				BAD("%s: __metadata__ is not an object", path);
			f->meta = json_incref(v);
			continue;
		}
		json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
		       *off = json_object_get(v, "data_offsets");
		if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(sh) ||
		    !json_is_array(off) || json_array_size(off) != 2 ||
		    !json_is_integer(json_array_get(off, 0)) || !json_is_integer(json_array_get(off, 1)))
			BAD("%s: tensor '%s': malformed header entry", path, key);
		size_t d;
		for (d = 0; d < NDTYPES; d++)
			if (strcmp(dtypes[d].name, json_string_value(dt)) == 0)
				break;
		if (d == NDTYPES)
			BAD("%s: tensor '%s': unsupported dtype %s", path, key, json_string_value(dt));
		uint64_t shape[8];
		size_t nd = json_array_size(sh);
		if (nd > 8)
			BAD("%s: tensor '%s': %zu dimensions (at most 8)", path, key, nd);
		uint64_t numel = 1;
		for (size_t i = 0; i < nd; i++) {
			json_t *s = json_array_get(sh, i);
			if (!json_is_integer(s) || json_integer_value(s) < 0 ||
			    (uint64_t)json_integer_value(s) > (UINT64_C(1) << 40))
				BAD("%s: tensor '%s': bad shape", path, key);
			shape[i] = (uint64_t)json_integer_value(s);
			numel *= shape[i];
			if (numel > (UINT64_C(1) << 40))
				BAD("%s: tensor '%s': bad shape", path, key);
		}
		json_int_t b0 = json_integer_value(json_array_get(off, 0));
		json_int_t b1 = json_integer_value(json_array_get(off, 1));
		if (b0 < 0 || b1 < b0 || (uint64_t)b1 > data_len)
			BAD("%s: tensor '%s': data [%lld, %lld) lies outside the %" PRIu64
			    " data bytes: truncated file?", path, key, (long long)b0, (long long)b1,
			    data_len);
		if ((uint64_t)(b1 - b0) != numel * dtypes[d].size)
			BAD("%s: tensor '%s': %lld bytes for %" PRIu64 " elements of %s", path, key,
			    (long long)(b1 - b0), numel, dtypes[d].name);
		rc = add_entry(f, key, (enum fedrun_dtype)d, (uint32_t)nd, shape, data + b0);
		if (rc < 0)
			goto fail;
		ranges[nr][0] = (uint64_t)b0;
		ranges[nr][1] = (uint64_t)b1;
		nr++;
	}
	qsort(ranges, nr, sizeof *ranges, cmp_range);
	uint64_t pos = 0;
	for (size_t i = 0; i < nr; i++) {
		if (ranges[i][0] != pos)
			BAD("%s: tensor data overlaps or leaves a gap at byte %" PRIu64, path, pos);
		pos = ranges[i][1];
	}
	if (pos != data_len)
		BAD("%s: %" PRIu64 " bytes after the last tensor", path, data_len - pos);

	json_t *sum = f->meta ? json_object_get(f->meta, CHECKSUM_KEY) : NULL;
	if (sum) {
		const char *want = json_string_value(sum);
		char got[24];
		if (!want)
			BAD("%s: the checksum entry %s is not a string: the file is damaged", path,
			    CHECKSUM_KEY);
		if (fedrun_st_checksum_kind(f) == FEDRUN_ST_CHECKSUM_FULL) {
			if (header_sum(hdr, NULL, data, data_len, got) < 0)
				BAD("%s: out of memory", path);
		} else if (fedrun_st_checksum_kind(f) == FEDRUN_ST_CHECKSUM_DATA) {
			struct hasher hs;
			hash_init(&hs);
			hash_update(&hs, data, data_len);
			hash_hex(hash_final(&hs), got);
		} else {
			BAD("%s: the checksum entry %s is malformed (\"%.40s\"): the file is damaged",
			    path, CHECKSUM_KEY, want);
		}
		/* The computed sum is not printed: with it, re-sealing an edited
		 * file would take one run and a text editor. */
		if (strcmp(got, want) != 0)
			BAD("%s: checksum mismatch (the file says %s; its header and data do not "
			    "give it): the file is corrupted",
			    path, want);
	}
	free(ranges);
	json_decref(hdr);
	return 0;
fail:
	free(ranges);
	json_decref(hdr);
	fedrun_st_fini(f);
	return rc;
}

int fedrun_st_add_layout(struct fedrun_st_file *f, const struct fedrun_layout *l,
			 const float *arena)
{
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		int rc = fedrun_st_add(f, t->name, FEDRUN_F32, t->ndim, t->shape, arena + t->offset);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int fedrun_st_load_layout(const struct fedrun_st_file *f, const struct fedrun_layout *l,
			  float *arena, const char *ignore_prefix)
{
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		const struct fedrun_st_tensor *s = fedrun_st_find(f, t->name);
		if (!s)
			return fedrun_error(FEDRUN_EFORMAT, "tensor '%s' is missing", t->name);
		int same = s->dtype == FEDRUN_F32 && s->ndim == t->ndim;
		for (uint32_t d = 0; same && d < t->ndim; d++)
			same = s->shape[d] == t->shape[d];
		if (!same) {
			char want[96] = "", got[96] = "";
			size_t a = 0, b = 0;
			for (uint32_t d = 0; d < t->ndim; d++)
				a += snprintf(want + a, sizeof want - a, "%s%" PRIu64, d ? "x" : "", t->shape[d]);
			for (uint32_t d = 0; d < s->ndim && b < sizeof got; d++)
				b += snprintf(got + b, sizeof got - b, "%s%" PRIu64, d ? "x" : "", s->shape[d]);
			return fedrun_error(FEDRUN_EFORMAT, "tensor '%s': the model has F32 %s, the file %s %s",
					    t->name, want, dtypes[s->dtype].name, got);
		}
		memcpy(arena + t->offset, s->data, s->bytes);
	}
	for (uint32_t i = 0; i < f->n; i++) {
		if (ignore_prefix && strncmp(f->t[i].name, ignore_prefix, strlen(ignore_prefix)) == 0)
			continue;
		if (fedrun_layout_find(l, f->t[i].name) < 0)
			return fedrun_error(FEDRUN_EFORMAT, "tensor '%s' is not part of the model",
					    f->t[i].name);
	}
	return 0;
}
