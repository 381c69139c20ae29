/* SPDX-License-Identifier: Apache-2.0 */
/* Declarative validation of pipeline sections (see fedrun/opts.h). */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "util/suggest.h"
#include "internal.h"

static _Thread_local char base_dir[4096];

void fedrun_opts_set_base_dir(const char *dir)
{
	snprintf(base_dir, sizeof base_dir, "%s", dir ? dir : "");
}

const char *opts_base_dir(void)
{
	return base_dir;
}

char *fedrun_path_resolve(const char *base, const char *path)
{
	if (!base || !*base || path[0] == '/')
		return strdup(path);
	size_t n = strlen(base) + strlen(path) + 2;
	char *out = malloc(n);
	if (out)
		snprintf(out, n, "%s/%s", base, path);
	return out;
}

char *fedrun_json_describe(const json_t *v, char *buf, size_t n)
{
	char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	if (!s) {
		snprintf(buf, n, "%s", v ? "a value" : "nothing");
		return buf;
	}
	if (strlen(s) > 48)
		snprintf(buf, n, "%.44s...", s);
	else
		snprintf(buf, n, "%s", s);
	free(s);
	return buf;
}

static void format_range(const struct fedrun_opt *o, char *buf, size_t n)
{
	char lo[32], hi[32];
	if (isinf(o->min))
		snprintf(lo, sizeof lo, "-inf");
	else
		snprintf(lo, sizeof lo, "%.10g", o->min);
	if (isinf(o->max))
		snprintf(hi, sizeof hi, "inf");
	else
		snprintf(hi, sizeof hi, "%.10g", o->max);
	snprintf(buf, n, "%c%s, %s%c",
		 (o->flags & FEDRUN_OPT_MIN_OPEN) || isinf(o->min) ? '(' : '[', lo, hi,
		 (o->flags & FEDRUN_OPT_MAX_OPEN) || isinf(o->max) ? ')' : ']');
}

static bool in_range(const struct fedrun_opt *o, double x)
{
	if (o->flags & FEDRUN_OPT_MIN_OPEN ? !(x > o->min) : !(x >= o->min))
		return false;
	if (o->flags & FEDRUN_OPT_MAX_OPEN ? !(x < o->max) : !(x <= o->max))
		return false;
	return true;
}

/* Index of `s` among '|'-separated `choices`, or -1. */
static int choice_index(const char *choices, const char *s)
{
	size_t len = strlen(s);
	int i = 0;
	for (const char *p = choices; p; i++) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);
		if (n == len && strncmp(p, s, n) == 0)
			return i;
		p = bar ? bar + 1 : NULL;
	}
	return -1;
}

static int parse_one(const struct fedrun_opt *o, json_t *section, const char *path,
		     json_t *v, void *out)
{
	char *field = (char *)out + o->offset;
	char got[64], range[96];
	fedrun_json_describe(v, got, sizeof got);

	switch (o->type) {
	case FEDRUN_OPT_BOOL:
		if (!json_is_boolean(v))
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: expected true or false, got %s",
					    path, *path ? "." : "", o->key, got);
		*(bool *)field = json_is_true(v);
		return 0;
	case FEDRUN_OPT_INT: {
		double x;
		if (json_is_integer(v))
			x = (double)json_integer_value(v);
		else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)))
			x = json_real_value(v);
		else
			x = NAN;
		format_range(o, range, sizeof range);
		if (isnan(x) || !in_range(o, x))
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: expected an integer in %s, got %s",
					    path, *path ? "." : "", o->key, range, got);
		*(int64_t *)field = json_is_integer(v) ? json_integer_value(v) : (int64_t)x;
		return 0;
	}
	case FEDRUN_OPT_NUMBER: {
		format_range(o, range, sizeof range);
		if (!json_is_number(v) || !in_range(o, json_number_value(v)))
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: expected a number in %s, got %s",
					    path, *path ? "." : "", o->key, range, got);
		*(double *)field = json_number_value(v);
		return 0;
	}
	case FEDRUN_OPT_STRING:
		if (!json_is_string(v))
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: expected a string, got %s",
					    path, *path ? "." : "", o->key, got);
		*(const char **)field = json_string_value(v);
		return 0;
	case FEDRUN_OPT_CHOICE: {
		int i = json_is_string(v) ? choice_index(o->choices, json_string_value(v)) : -1;
		if (i < 0) {
			char list[256];
			snprintf(list, sizeof list, "%s", o->choices);
			for (char *p = list; *p; p++)
				if (*p == '|')
					*p = ',';
			char near[64];
			int has = json_is_string(v) && suggest_among(json_string_value(v),
									 o->choices, '|', near,
									 sizeof near);
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: expected one of {%s}, got %s%s%s%s",
					    path, *path ? "." : "", o->key, list, got,
					    has ? "; did you mean \"" : "", has ? near : "",
					    has ? "\"?" : "");
		}
		*(int *)field = i;
		return 0;
	}
	case FEDRUN_OPT_PATH: {
		if (!json_is_string(v) || !*json_string_value(v))
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: expected a file name, got %s",
					    path, *path ? "." : "", o->key, got);
		char *full = fedrun_path_resolve(base_dir, json_string_value(v));
		if (!full)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		if (!(o->flags & FEDRUN_OPT_UNREAD) && access(full, R_OK) != 0) {
			int rc = fedrun_error(FEDRUN_ENOENT, "%s%s%s: cannot read file '%s': %s",
					      path, *path ? "." : "", o->key, full, strerror(errno));
			free(full);
			return rc;
		}
		json_object_set_new(section, o->key, json_string(full));
		free(full);
		*(const char **)field = json_string_value(json_object_get(section, o->key));
		return 0;
	}
	case FEDRUN_OPT_OBJECT:
		if (!json_is_object(v))
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: expected an object, got %s",
					    path, *path ? "." : "", o->key, got);
		*(json_t **)field = v;
		return 0;
	case FEDRUN_OPT_ARRAY:
		if (!json_is_array(v))
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: expected an array, got %s",
					    path, *path ? "." : "", o->key, got);
		*(json_t **)field = v;
		return 0;
	case FEDRUN_OPT_ANY:
		*(json_t **)field = v;
		return 0;
	}
	return fedrun_error(FEDRUN_EINVAL, "%s%s%s: bad option type", path, *path ? "." : "", o->key);
}

static json_t *default_value(const struct fedrun_opt *o)
{
	switch (o->type) {
	case FEDRUN_OPT_BOOL: return json_boolean(o->def != 0);
	case FEDRUN_OPT_INT: return json_integer((json_int_t)o->def);
	case FEDRUN_OPT_NUMBER: return json_real(o->def);
	case FEDRUN_OPT_STRING:
	case FEDRUN_OPT_CHOICE:
	case FEDRUN_OPT_PATH: return o->def_str ? json_string(o->def_str) : NULL;
	default: return NULL;
	}
}

int fedrun_opts_parse(const struct fedrun_opt *spec, json_t *section, const char *path,
		      void *out)
{
	char got[64];
	if (!json_is_object(section))
		return fedrun_error(FEDRUN_ECONFIG, "%s: expected an object, got %s", *path ? path : "pipeline",
				    fedrun_json_describe(section, got, sizeof got));

	const char *key;
	json_t *v;
	json_object_foreach(section, key, v) {
		if (strcmp(key, "plugin") == 0 || strcmp(key, "path") == 0)
			continue;
		const struct fedrun_opt *o = spec;
		while (o->key && strcmp(o->key, key) != 0)
			o++;
		if (!o->key) {
			char known[512] = "";
			size_t len = 0;
			struct suggest near;
			suggest_init(&near, key);
			for (o = spec; o->key; o++) {
				suggest_add(&near, o->key);
				if (len < sizeof known - 1)
					len += snprintf(known + len, sizeof known - len, "%s%s",
							len ? ", " : "", o->key);
			}
			return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: unknown key%s%s%s (known: %s)", path,
					    *path ? "." : "", key, near.best ? "; did you mean '" : "",
					    near.best ? near.best : "", near.best ? "'?" : "",
					    *known ? known : "none");
		}
	}

	for (const struct fedrun_opt *o = spec; o->key; o++) {
		v = json_object_get(section, o->key);
		if (!v) {
			if (o->flags & FEDRUN_OPT_REQUIRED)
				return fedrun_error(FEDRUN_ECONFIG, "%s%s%s: required key is missing",
						    path, *path ? "." : "", o->key);
			if (o->flags & FEDRUN_OPT_OPTIONAL) {
				if (o->type >= FEDRUN_OPT_STRING && o->type != FEDRUN_OPT_CHOICE)
					*(void **)((char *)out + o->offset) = NULL;
				continue;
			}
			json_t *d = default_value(o);
			if (!d) {
				if (o->type >= FEDRUN_OPT_STRING && o->type != FEDRUN_OPT_CHOICE)
					*(void **)((char *)out + o->offset) = NULL;
				continue;
			}
			json_object_set_new(section, o->key, d);
			v = json_object_get(section, o->key);
			/* A default PATH is taken as given: it need not exist. */
			if (o->type == FEDRUN_OPT_PATH) {
				*(const char **)((char *)out + o->offset) = json_string_value(v);
				continue;
			}
		}
		int rc = parse_one(o, section, path, v, out);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- lists of files ---- */

static int files_push(const char ***files, uint32_t *n, const char *f)
{
	const char **g = realloc(*files, (*n + 1) * sizeof g[0]);
	if (!g)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	g[(*n)++] = f;
	*files = g;
	return 0;
}

/* Checks one file name through fedrun_opts_parse, so that it is resolved
 * against the pipeline's directory and reported like any other path; the
 * resolved name replaces the original in the pipeline and is returned
 * (borrowed from it). */
static int resolve_one(json_t *holder, const char *key, size_t index, const char *path, json_t *v,
		       const char **out)
{
	char label[96];
	if (json_is_array(holder))
		snprintf(label, sizeof label, "%s[%zu]", key, index);
	else
		snprintf(label, sizeof label, "%s", key);
	struct fedrun_opt spec[] = {
	    {label, FEDRUN_OPT_PATH, 0, FEDRUN_OPT_REQUIRED, 0, 0, 0, NULL, NULL},
	    FEDRUN_OPT_END_,
	};
	json_t *tmp = json_object();
	if (!tmp || json_object_set(tmp, label, v) < 0) {
		json_decref(tmp);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	const char *file;
	int rc = fedrun_opts_parse(spec, tmp, path, &file);
	if (rc == 0) {
		json_t *resolved = json_object_get(tmp, label);
		if (json_is_array(holder))
			rc = json_array_set(holder, index, resolved);
		else
			rc = json_object_set(holder, key, resolved);
		if (rc < 0)
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	json_decref(tmp);
	if (rc < 0)
		return rc;
	v = json_is_array(holder) ? json_array_get(holder, index) : json_object_get(holder, key);
	*out = json_string_value(v);
	return 0;
}

int fedrun_opts_files(json_t *section, const char *key, const char *path, const char ***files,
		      uint32_t *n)
{
	json_t *v = json_object_get(section, key);
	if (!v)
		return 0;
	const char *f;
	if (json_is_array(v)) {
		if (json_array_size(v) == 0)
			return fedrun_error(FEDRUN_ECONFIG, "%s.%s: empty array: expected files",
					    path, key);
		for (size_t i = 0; i < json_array_size(v); i++) {
			int rc = resolve_one(v, key, i, path, json_array_get(v, i), &f);
			if (rc == 0)
				rc = files_push(files, n, f);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	char got[64];
	if (!json_is_string(v))
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.%s: expected a file name or an array of them, got %s", path,
				    key, fedrun_json_describe(v, got, sizeof got));
	int rc = resolve_one(section, key, 0, path, v, &f);
	return rc < 0 ? rc : files_push(files, n, f);
}
