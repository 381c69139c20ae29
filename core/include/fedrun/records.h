/* SPDX-License-Identifier: Apache-2.0 */
/* Records of a data file in the formats a pipeline's data.format names:
 * "tsv" (tab-separated columns) and "jsonl" (one JSON object a line), read
 * line by line with errors naming file and line; the labels of labelled
 * text; and partition.tsv, the table of what each client holds. Shared by
 * the word language models' data (fedrun_textdata) and the transformer's. */
#ifndef FEDRUN_RECORDS_H
#define FEDRUN_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "fedrun/host.h"

#ifdef __cplusplus
extern "C" {
#endif

enum fedrun_records_kind {
	FEDRUN_RECORDS_TEXT = 0,  /* not records: the loader's own text files */
	FEDRUN_RECORDS_TSV = 1,	  /* columns separated by tabs; no quoting */
	FEDRUN_RECORDS_JSONL = 2  /* a JSON object a line, string fields */
};

#define FEDRUN_RECORDS_ROLES 2

/* What a loader reads from each record: up to two roles, e.g. "src" and
 * "tgt" (parallel text) or "text" and "label". Caller-owned plain data. */
struct fedrun_records_roles {
	const char *name[FEDRUN_RECORDS_ROLES];	 /* the keys of data.columns / data.fields */
	bool required[FEDRUN_RECORDS_ROLES];	 /* always read (else only when given) */
	const char *field[FEDRUN_RECORDS_ROLES]; /* jsonl: default field name, or NULL */
};

/* A resolved format; field strings are borrowed from the pipeline. */
struct fedrun_records_format {
	int kind;    /* enum fedrun_records_kind */
	bool header; /* tsv: the first line names the columns and is skipped */
	int64_t column[FEDRUN_RECORDS_ROLES];	 /* tsv: 0-based column, or -1: not read */
	const char *field[FEDRUN_RECORDS_ROLES]; /* jsonl: field name, or NULL: not read */
	const char *role[FEDRUN_RECORDS_ROLES];	 /* role names, for messages */
};

/* Reads data.format, data.columns, data.fields and data.header of
 * `section` (JSON path `path`; the caller's option spec lets those keys
 * through as FEDRUN_OPT_ANY) into *out. Without "format", or with "text",
 * kind is FEDRUN_RECORDS_TEXT and the other three keys are refused. tsv:
 * columns default to 0, 1, ... for the required roles in order; jsonl:
 * fields default to roles->field. The resolved columns or fields are
 * written back into the section. FEDRUN_ECONFIG on a bad value. */
/* The entries of a data section's option spec (fedrun/opts.h) that let
 * data.format, data.columns, data.fields and data.header through for
 * fedrun_records_config: members `format`, `columns`, `fields` and
 * `header` (json_t *) of the caller's struct type_. */
#define FEDRUN_RECORDS_OPTS(type_)                                                        \
	{"format", FEDRUN_OPT_ANY, offsetof(type_, format), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL}, \
	{"columns", FEDRUN_OPT_ANY, offsetof(type_, columns), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL}, \
	{"fields", FEDRUN_OPT_ANY, offsetof(type_, fields), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL}, \
	{"header", FEDRUN_OPT_ANY, offsetof(type_, header), FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL}

int fedrun_records_config(json_t *section, const char *path,
			  const struct fedrun_records_roles *roles,
			  struct fedrun_records_format *out);

/* Called for each record, in file order: value[i] is role i's text
 * (len[i] bytes, valid UTF-8 without NUL, NUL-terminated; in jsonl a tab,
 * CR or newline of a string becomes a space), or NULL for a role not read.
 * `line` is the record's line number (1-based). Valid until the next call.
 * A negative return stops the reading and is returned. */
typedef int (*fedrun_record_fn)(void *ud, uint64_t line, const char *const *value,
				const size_t *len);

/* Reads `path` line by line (streaming; an empty line, or one holding only
 * CR, is skipped; a CR before the newline is dropped). Errors
 * (FEDRUN_EFORMAT, "FILE:LINE: ..."): invalid UTF-8 or a NUL byte; tsv: a
 * line with fewer columns than a role needs, or another number of columns
 * than the first line; jsonl: a line that is not one JSON object, a missing
 * field, a value that is not a string (a label may also be an integer).
 * `max` > 0 stops after that many records. */
int fedrun_records_read(const char *path, const struct fedrun_records_format *f, uint64_t max,
			fedrun_record_fn fn, void *ud);

/* Labels: distinct strings numbered 0, 1, ... in order of first sight. */
struct fedrun_labels;
int fedrun_labels_create(struct fedrun_labels **out);
void fedrun_labels_destroy(struct fedrun_labels *l);
/* The id of the `len` bytes at `s` (UTF-8, no NUL), added when new. */
int fedrun_labels_id(struct fedrun_labels *l, const char *s, size_t len, uint32_t *id);
uint32_t fedrun_labels_count(const struct fedrun_labels *l);
/* Borrowed; NULL when id >= count. */
const char *fedrun_labels_name(const struct fedrun_labels *l, uint32_t id);

/* ---- partition.tsv ----------------------------------------------------------
 * The table a run directory gets at the start of a run (rank 0): one row
 * per client, its name, then for each split counted per client the
 * sentences (pairs, for a translation model) and tokens, then, when there
 * are categories, the client's training sentences of each category. See
 * fedrun(1), FILES. */
struct fedrun_partition_report {
	uint32_t clients;
	const char *const *name; /* clients names */
	/* Per split (train, valid, test): NULL when the split is not per
	 * client, else clients entries; UINT64_MAX: the client has none. */
	const uint64_t *sentences[3], *tokens[3];
	uint32_t n_cat;			/* 0: no categories */
	const char *const *cat_name;	/* n_cat names */
	const uint64_t *cat_sentences;	/* clients * n_cat, row k = client k */
};

/* Writes the table to RUN/partition.tsv atomically (fedrun_write_file_atomic)
 * when the host has a run directory (host->run_dir; rank 0's is the run's,
 * the other ranks' a private one); without one (fedrun validate), nothing. */
int fedrun_partition_report_write(const struct fedrun_host *h,
				  const struct fedrun_partition_report *r);

#ifdef __cplusplus
}
#endif
#endif
