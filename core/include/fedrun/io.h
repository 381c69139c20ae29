/* SPDX-License-Identifier: Apache-2.0 */
/* Files: atomic writes, directories, and the safetensors format. */
#ifndef FEDRUN_IO_H
#define FEDRUN_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "fedrun/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a directory and its parents (mode 0777 & ~umask). */
int fedrun_mkdir_p(const char *dir);

/* Atomic file writing: data goes to "<path>.tmp.<pid>", which commit()
 * fsyncs and renames over path (then fsyncs the directory); abort() removes
 * it. A crash leaves either the old file or the new one, never half of it. */
struct fedrun_atomic_file {
	FILE *fp;    /* write here */
	char *path;  /* owned */
	char *tmp;   /* owned */
};
int fedrun_atomic_open(struct fedrun_atomic_file *af, const char *path);
int fedrun_atomic_commit(struct fedrun_atomic_file *af);
void fedrun_atomic_abort(struct fedrun_atomic_file *af);
/* Writes a whole buffer atomically. */
int fedrun_write_file_atomic(const char *path, const void *data, size_t n);

/* The most bytes fedrun reads from one file or stream (4 GiB). */
#define FEDRUN_READ_MAX (UINT64_C(4) << 30)
/* Reads a whole file into a new NUL-terminated buffer (free with free()).
 * Only regular files of at most FEDRUN_READ_MAX bytes: a FIFO, device or
 * directory is refused at once (never waited on). */
int fedrun_read_file(const char *path, char **data, size_t *n);
/* Opens a file for reading with the same checks (regular file, size),
 * for readers that stream it; *fp is closed by the caller. */
int fedrun_open_read(const char *path, FILE **fp);
/* The same from an open stream; `name` is for messages. At most
 * FEDRUN_READ_MAX bytes. */
int fedrun_read_stream(FILE *fp, const char *name, char **data, size_t *n);
/* The same for text: a NUL byte is refused (FEDRUN_EINVAL, naming the line)
 * as soon as it is read, so `cmd < /dev/zero` stops at its first byte. */
int fedrun_read_text_stream(FILE *fp, const char *name, char **data, size_t *n);
/* Reads the next line of text from `fp` into *buf (grown as needed; *cap is
 * its size; free with free()), without its "\n" and NUL-terminated; *len is
 * its length. Returns 1 for a line, 0 at the end of the stream, or
 * FEDRUN_EINVAL for a NUL byte (refused as soon as it is read) or a line of
 * more than `max` bytes (stopped there, *len then max + 1: memory stays
 * bounded), FEDRUN_EIO or FEDRUN_ENOMEM; messages name `name` and the line
 * number `lineno`. */
int fedrun_read_line(FILE *fp, const char *name, uint64_t lineno, size_t max, char **buf,
		     size_t *cap, size_t *len);
/* Whether the open file `fd` (named `path`) is one fedrun reads: a regular
 * file of at most FEDRUN_READ_MAX bytes. 0, FEDRUN_EINVAL (with a message)
 * or FEDRUN_EIO. */
int fedrun_file_check(const char *path, int fd);

/* ---- safetensors ----
 * 8-byte little-endian header length N, N bytes of JSON header, then the
 * tensor data. fedrun's own files use F32, F64, U8, U64 and I64; the reader
 * also takes the other dtypes of Hugging Face's files (F16, BF16, BOOL and
 * the other integers), and fedrun_st_to_f32 turns F16 and BF16 (and F32)
 * into floats. A file without fedrun's checksum entry (every Hugging Face
 * file) is read; what must be fedrun's own (a checkpoint to resume, a run's
 * final model) is checked for the entry with fedrun_st_checksum_kind. */

enum fedrun_dtype {
	FEDRUN_F32, FEDRUN_F64, FEDRUN_U8, FEDRUN_U64, FEDRUN_I64,
	/* Hugging Face's (appended: the values above are kept) */
	FEDRUN_F16, FEDRUN_BF16, FEDRUN_BOOL, FEDRUN_I8, FEDRUN_I16, FEDRUN_I32, FEDRUN_U16,
	FEDRUN_U32
};

struct fedrun_st_tensor {
	char *name;     /* owned */
	enum fedrun_dtype dtype;
	uint32_t ndim;
	uint64_t shape[8];
	uint64_t bytes;
	const void *data; /* writer: borrowed; reader: points into the file buffer */
};

struct fedrun_st_file {
	uint32_t n, cap;
	struct fedrun_st_tensor *t; /* owned */
	json_t *meta;               /* "__metadata__": string -> string; owned */
	char *buf;                  /* reader: the file contents; owned */
	size_t buf_len;
};

void fedrun_st_init(struct fedrun_st_file *f);
void fedrun_st_fini(struct fedrun_st_file *f);
/* Writer: adds a tensor whose data is borrowed until write, which refuses
 * a name used twice (or "__metadata__"). Constant time: files of many
 * tensors (a checkpoint of many clients' states) are written in linear
 * time. */
int fedrun_st_add(struct fedrun_st_file *f, const char *name, enum fedrun_dtype dtype,
		  uint32_t ndim, const uint64_t *shape, const void *data);
/* Writer: sets a metadata entry (copied). */
int fedrun_st_meta_set(struct fedrun_st_file *f, const char *key, const char *value);
/* Writes atomically. Output is a pure function of the tensors and metadata
 * (in insertion order), so equal models give equal bytes. */
int fedrun_st_write(const struct fedrun_st_file *f, const char *path);
/* Reads and validates the whole file: header bounds, JSON, dtypes, shapes
 * against byte ranges, ranges inside the file and not overlapping. */
int fedrun_st_read(struct fedrun_st_file *f, const char *path);
/* The tensor called name, or NULL. It looks through the tensors in order:
 * for all of a large file's tensors, walk f->t instead. */
const struct fedrun_st_tensor *fedrun_st_find(const struct fedrun_st_file *f,
					      const char *name);
/* The dtype's name in a header ("F32", "BF16", ...), and its element size
 * in bytes. */
const char *fedrun_dtype_name(enum fedrun_dtype d);
size_t fedrun_dtype_size(enum fedrun_dtype d);
/* A float tensor's elements (t->bytes / its size of them) as floats into
 * out: F32 copied, BF16 exactly (the 16 bits above 16 zero bits), F16
 * exactly (subnormals, infinities and NaN payloads kept). Any other dtype
 * is FEDRUN_EFORMAT naming the tensor (nothing written). The data may be
 * unaligned (files of other writers need not pad their header). */
int fedrun_st_to_f32(const struct fedrun_st_tensor *t, float *out);
/* The float of one F16 or BF16 bit pattern, exactly as above. */
float fedrun_f16_to_f32(uint16_t h);
float fedrun_bf16_to_f32(uint16_t h);
/* Metadata value or NULL. */
const char *fedrun_st_meta_get(const struct fedrun_st_file *f, const char *key);
/* What the "fedrun.checksum" entry of a file read covers. fedrun_st_read
 * refuses a file whose entry is present but does not match (or is not a
 * string, or FEDRUN_ST_CHECKSUM_BAD); a file without one (not written by
 * fedrun, or its entry's key damaged) is read, and NONE says that nothing
 * verified it. */
enum fedrun_st_checksum {
	FEDRUN_ST_CHECKSUM_NONE = 0, /* no entry */
	FEDRUN_ST_CHECKSUM_DATA = 1, /* fedrun 0.1.0 before: the data section only */
	FEDRUN_ST_CHECKSUM_FULL = 2, /* the header (metadata, tensor entries) and data */
	FEDRUN_ST_CHECKSUM_BAD = 3   /* an entry of no known form */
};
enum fedrun_st_checksum fedrun_st_checksum_kind(const struct fedrun_st_file *f);

/* Saves every tensor of a layout from an arena (F32), padding excluded. */
int fedrun_st_add_layout(struct fedrun_st_file *f, const struct fedrun_layout *l,
			 const float *arena);
/* Loads every tensor of a layout into an arena; the file must have each
 * tensor with the same shape and dtype F32. Tensors in the file that are not
 * in the layout are an error unless their name starts with `ignore_prefix`. */
int fedrun_st_load_layout(const struct fedrun_st_file *f, const struct fedrun_layout *l,
			  float *arena, const char *ignore_prefix);

#ifdef __cplusplus
}
#endif
#endif
