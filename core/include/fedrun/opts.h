/* SPDX-License-Identifier: Apache-2.0 */
/* Declarative parsing of a pipeline section into a C struct.
 * Used by the core for its own sections and by plugins for theirs, so that
 * every section is validated the same way: unknown keys, wrong types and
 * out-of-range values are errors naming the JSON path, and missing keys get
 * their defaults written back into the section (the resolved pipeline). */
#ifndef FEDRUN_OPTS_H
#define FEDRUN_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

enum fedrun_opt_type {
	FEDRUN_OPT_BOOL,   /* stored as bool */
	FEDRUN_OPT_INT,    /* stored as int64_t; JSON integer (or integral real) */
	FEDRUN_OPT_NUMBER, /* stored as double; finite */
	FEDRUN_OPT_STRING, /* stored as const char * borrowed from the section */
	FEDRUN_OPT_CHOICE, /* stored as int: index into the '|'-separated choices */
	FEDRUN_OPT_PATH,   /* string naming a readable file; const char * */
	FEDRUN_OPT_OBJECT, /* stored as json_t * (borrowed); checked by the caller */
	FEDRUN_OPT_ARRAY,  /* stored as json_t * (borrowed); checked by the caller */
	FEDRUN_OPT_ANY     /* stored as json_t * (borrowed); checked by the caller */
};

enum fedrun_opt_flags {
	FEDRUN_OPT_REQUIRED = 1u << 0, /* no default: missing is an error */
	FEDRUN_OPT_MIN_OPEN = 1u << 1, /* range excludes min */
	FEDRUN_OPT_MAX_OPEN = 1u << 2, /* range excludes max */
	FEDRUN_OPT_OPTIONAL = 1u << 3, /* may be absent and has no default;
					  stored as NULL / left untouched */
	FEDRUN_OPT_UNREAD = 1u << 4    /* PATH: resolved, but not checked to be
					  readable; the caller checks when it
					  reads (e.g. not on --resume) */
};

struct fedrun_opt {
	const char *key;
	enum fedrun_opt_type type;
	size_t offset;       /* of the field in the caller's struct */
	unsigned flags;
	double min, max;     /* INT and NUMBER ranges (inclusive unless *_OPEN) */
	double def;          /* BOOL (0/1), INT and NUMBER default */
	const char *def_str; /* STRING, CHOICE and PATH default (may be NULL) */
	const char *choices; /* CHOICE: "frobenius|spectral" */
};

#define FEDRUN_OPT_END_ {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL}

/* Parses `section` (a JSON object at JSON path `path`, e.g. "aggregator")
 * against `spec` (terminated by an entry with key NULL) into `out`.
 * Keys "plugin" and "path" are reserved for the core and skipped. Missing
 * keys with defaults are added to `section`. Returns 0 or FEDRUN_ECONFIG with
 * a message such as
 *   aggregator.epsilon: expected a number in (0, 10], got "big" */
int fedrun_opts_parse(const struct fedrun_opt *spec, json_t *section,
		      const char *path, void *out);

/* Directory against which relative FEDRUN_OPT_PATH values are resolved (the
 * pipeline file's directory); NULL for the working directory. Per thread;
 * the string is copied. Resolved paths are written back into the section. */
void fedrun_opts_set_base_dir(const char *dir);

/* Joins `base` and a relative `path` into a new string (absolute paths and
 * a NULL base are copied as they are). Free with free(); NULL if no memory. */
char *fedrun_path_resolve(const char *base, const char *path);

/* The files of `section.key` (JSON path path.key): a file name or a
 * non-empty array of them, each checked and resolved as a FEDRUN_OPT_PATH
 * (the resolved names replace the originals in the section), appended to
 * *files (realloc'd; *n entries; the strings are borrowed from the
 * section). An absent key appends nothing. FEDRUN_ECONFIG names the entry
 * ("data.train[2]: ...") on a bad value or a missing file. */
int fedrun_opts_files(json_t *section, const char *key, const char *path, const char ***files,
		      uint32_t *n);

/* Describes a JSON value for messages: "a string (\"half\")", "null", ...
 * Writes at most `n` bytes into buf and returns buf. */
char *fedrun_json_describe(const json_t *v, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
