/* SPDX-License-Identifier: Apache-2.0 */
/* Records of tsv and jsonl data files (data.format), read one line at a
 * time; labels; and the partition.tsv table. See fedrun/records.h. */
#include "config.h"
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/host.h"
#include "fedrun/io.h"
#include "fedrun/opts.h"
#include "fedrun/records.h"
#include "text_internal.h"

#define NR FEDRUN_RECORDS_ROLES
/* The longest line read (memory stays bounded on a file without newlines). */
#define LINE_MAX_BYTES ((size_t)1 << 30)
/* Columns a role may name: 0 .. MAX_COLUMN - 1. */
#define MAX_COLUMN 64

/* ---- configuration ---- */

static const char *const kind_name[] = {"text", "tsv", "jsonl"};

static int role_index(const struct fedrun_records_roles *roles, const char *key)
{
	for (int i = 0; i < NR; i++)
		if (roles->name[i] && strcmp(roles->name[i], key) == 0)
			return i;
	return -1;
}

static int unknown_role(const char *path, const char *what, const char *key,
			const struct fedrun_records_roles *roles)
{
	return fedrun_error(FEDRUN_ECONFIG, "%s.%s.%s: unknown key (known: %s%s%s)", path, what,
			    key, roles->name[0], roles->name[1] ? ", " : "",
			    roles->name[1] ? roles->name[1] : "");
}

/* data.columns: role -> 0-based column. */
static int config_columns(json_t *section, const char *path,
			  const struct fedrun_records_roles *roles, struct fedrun_records_format *f)
{
	json_t *cols = json_object_get(section, "columns");
	char got[64];
	if (cols && !json_is_object(cols))
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.columns: expected an object such as {\"%s\": 0}, got %s", path,
				    roles->name[0], fedrun_json_describe(cols, got, sizeof got));
	const char *key;
	json_t *v;
	json_object_foreach(cols, key, v) {
		int i = role_index(roles, key);
		if (i < 0)
			return unknown_role(path, "columns", key, roles);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= MAX_COLUMN)
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.columns.%s: expected a column number 0 to %d (0 is "
					    "the first), got %s",
					    path, key, MAX_COLUMN - 1, fedrun_json_describe(v, got, sizeof got));
		f->column[i] = json_integer_value(v);
	}
	for (int i = 0; i < NR; i++)
		if (f->column[i] < 0 && roles->required[i])
			f->column[i] = i;
	if (f->column[0] >= 0 && f->column[0] == f->column[1])
		return fedrun_error(FEDRUN_ECONFIG, "%s.columns: %s and %s are both column %" PRId64,
				    path, roles->name[0], roles->name[1], f->column[0]);
	json_t *out = json_object();
	for (int i = 0; out && i < NR; i++)
		if (f->column[i] >= 0 &&
		    json_object_set_new(out, roles->name[i], json_integer(f->column[i])) < 0) {
			json_decref(out);
			out = NULL;
		}
	if (!out || json_object_set_new(section, "columns", out) < 0 ||
	    json_object_set_new(section, "header", json_boolean(f->header)) < 0)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	return 0;
}

/* data.fields: role -> field name. */
static int config_fields(json_t *section, const char *path,
			 const struct fedrun_records_roles *roles, struct fedrun_records_format *f)
{
	json_t *fields = json_object_get(section, "fields");
	char got[64];
	if (fields && !json_is_object(fields))
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.fields: expected an object such as {\"%s\": \"%s\"}, got %s",
				    path, roles->name[0],
				    roles->field[0] ? roles->field[0] : roles->name[0],
				    fedrun_json_describe(fields, got, sizeof got));
	const char *key;
	json_t *v;
	json_object_foreach(fields, key, v) {
		int i = role_index(roles, key);
		if (i < 0)
			return unknown_role(path, "fields", key, roles);
		if (!json_is_string(v) || !*json_string_value(v))
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.fields.%s: expected a field name, got %s", path, key,
					    fedrun_json_describe(v, got, sizeof got));
		f->field[i] = json_string_value(v);
	}
	for (int i = 0; i < NR; i++) {
		if (f->field[i] || !roles->required[i])
			continue;
		if (!roles->field[i])
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.fields.%s: required key is missing (the field that "
					    "holds the %s text)",
					    path, roles->name[i], roles->name[i]);
		f->field[i] = roles->field[i];
	}
	if (f->field[0] && f->field[1] && strcmp(f->field[0], f->field[1]) == 0)
		return fedrun_error(FEDRUN_ECONFIG, "%s.fields: %s and %s are both field \"%s\"",
				    path, roles->name[0], roles->name[1], f->field[0]);
	/* Written back as strings the section owns, so that f's stay valid. */
	json_t *out = json_object();
	for (int i = 0; out && i < NR; i++)
		if (f->field[i] &&
		    json_object_set_new(out, roles->name[i], json_string(f->field[i])) < 0) {
			json_decref(out);
			out = NULL;
		}
	if (!out || json_object_set_new(section, "fields", out) < 0)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (int i = 0; i < NR; i++)
		if (f->field[i])
			f->field[i] = json_string_value(json_object_get(out, roles->name[i]));
	return 0;
}

int fedrun_records_config(json_t *section, const char *path,
			  const struct fedrun_records_roles *roles,
			  struct fedrun_records_format *f)
{
	memset(f, 0, sizeof *f);
	for (int i = 0; i < NR; i++) {
		f->column[i] = -1;
		f->role[i] = roles->name[i];
	}
	json_t *fmt = json_object_get(section, "format");
	char got[64];
	if (fmt) {
		const char *s = json_is_string(fmt) ? json_string_value(fmt) : "";
		f->kind = -1;
		for (int k = 0; k < 3; k++)
			if (strcmp(s, kind_name[k]) == 0)
				f->kind = k;
		if (f->kind < 0)
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.format: expected \"text\", \"tsv\" or \"jsonl\", got %s",
					    path, fedrun_json_describe(fmt, got, sizeof got));
	}
	static const char *const only[3][2] = {
	    {"columns", "tsv"}, {"header", "tsv"}, {"fields", "jsonl"}};
	for (int i = 0; i < 3; i++)
		if (json_object_get(section, only[i][0]) && strcmp(kind_name[f->kind], only[i][1]))
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.%s: only with \"format\": \"%s\" (the format is \"%s\")",
					    path, only[i][0], only[i][1], kind_name[f->kind]);
	if (f->kind == FEDRUN_RECORDS_TSV) {
		json_t *h = json_object_get(section, "header");
		if (h && !json_is_boolean(h))
			return fedrun_error(FEDRUN_ECONFIG, "%s.header: expected true or false, got %s",
					    path, fedrun_json_describe(h, got, sizeof got));
		f->header = h && json_is_true(h);
		return config_columns(section, path, roles, f);
	}
	if (f->kind == FEDRUN_RECORDS_JSONL)
		return config_fields(section, path, roles, f);
	return 0;
}

/* ---- reading ---- */

struct reader {
	const char *path;
	const struct fedrun_records_format *f;
	uint64_t line, first_line;
	uint32_t ncols; /* columns of the first line (tsv), 0 before it */
	char *buf[NR];	/* jsonl: the values, spaces for tabs and newlines */
	size_t cap[NR];
};

static int check_text(const struct reader *r, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		size_t k = *p < 0x80 && *p ? 1 : text_utf8_len(p, end);
		if (k == 0)
			return fedrun_error(FEDRUN_EFORMAT, "%s:%" PRIu64 ": %s at byte %zu", r->path,
					    r->line, *p ? "invalid UTF-8" : "a NUL byte",
					    (size_t)(p - (const unsigned char *)s) + 1);
		p += k;
	}
	return 0;
}

static int tsv_record(struct reader *r, char *s, size_t n, const char **value, size_t *len)
{
	const struct fedrun_records_format *f = r->f;
	char *col[MAX_COLUMN];
	size_t clen[MAX_COLUMN];
	uint32_t nc = 0;
	int64_t want = f->column[0] > f->column[1] ? f->column[0] : f->column[1];
	for (char *p = s, *end = s + n;; nc++) {
		char *tab = memchr(p, '\t', (size_t)(end - p));
		if (nc <= want) {
			col[nc] = p;
			clen[nc] = (size_t)((tab ? tab : end) - p);
		}
		if (!tab) {
			nc++;
			break;
		}
		*tab = '\0';
		p = tab + 1;
	}
	if (r->ncols == 0) {
		r->ncols = nc;
		r->first_line = r->line;
	} else if (nc != r->ncols) {
		return fedrun_error(FEDRUN_EFORMAT,
				    "%s:%" PRIu64 ": %u column%s, but line %" PRIu64
				    " has %u (format \"tsv\": columns are separated by tabs)",
				    r->path, r->line, nc, nc == 1 ? "" : "s", r->first_line, r->ncols);
	}
	for (int i = 0; i < NR; i++) {
		if (f->column[i] < 0)
			continue;
		if (f->column[i] >= nc)
			return fedrun_error(FEDRUN_EFORMAT,
					    "%s:%" PRIu64 ": %u column%s: no column %" PRId64
					    " (%s; 0 is the first)",
					    r->path, r->line, nc, nc == 1 ? "" : "s", f->column[i],
					    f->role[i]);
		value[i] = col[f->column[i]];
		len[i] = clen[f->column[i]];
	}
	return 0;
}

/* Copies a JSON string into role i's buffer, tabs, CRs and newlines as
 * spaces (a record is one line of text). */
static int fold_value(struct reader *r, int i, const char *s, size_t n)
{
	if (n + 1 > r->cap[i]) {
		size_t cap = n + 1 < 256 ? 256 : 2 * (n + 1);
		char *b = realloc(r->buf[i], cap);
		if (!b)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		r->buf[i] = b;
		r->cap[i] = cap;
	}
	for (size_t j = 0; j < n; j++)
		r->buf[i][j] = s[j] == '\t' || s[j] == '\n' || s[j] == '\r' ? ' ' : s[j];
	r->buf[i][n] = '\0';
	return 0;
}

static int jsonl_record(struct reader *r, const char *s, size_t n, const char **value,
			size_t *len)
{
	const struct fedrun_records_format *f = r->f;
	json_error_t err;
	json_t *o = json_loadb(s, n, 0, &err);
	if (!o)
		return fedrun_error(FEDRUN_EFORMAT,
				    "%s:%" PRIu64 ":%d: not a JSON object: %s (format \"jsonl\": one "
				    "object a line)",
				    r->path, r->line, err.column, err.text);
	char got[64];
	int rc = 0;
	if (!json_is_object(o))
		rc = fedrun_error(FEDRUN_EFORMAT,
				  "%s:%" PRIu64 ": expected a JSON object, got %s (format \"jsonl\")",
				  r->path, r->line, fedrun_json_describe(o, got, sizeof got));
	for (int i = 0; i < NR && rc == 0; i++) {
		if (!f->field[i])
			continue;
		json_t *v = json_object_get(o, f->field[i]);
		char num[32];
		if (!v) {
			rc = fedrun_error(FEDRUN_EFORMAT, "%s:%" PRIu64 ": no field \"%s\" (%s)",
					  r->path, r->line, f->field[i], f->role[i]);
		} else if (json_is_string(v)) {
			rc = fold_value(r, i, json_string_value(v), json_string_length(v));
		} else if (json_is_integer(v) && i > 0 && !strcmp(f->role[i], "label")) {
			snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
			rc = fold_value(r, i, num, strlen(num));
		} else {
			rc = fedrun_error(FEDRUN_EFORMAT,
					  "%s:%" PRIu64 ": field \"%s\" (%s) is %s, expected a string",
					  r->path, r->line, f->field[i], f->role[i],
					  fedrun_json_describe(v, got, sizeof got));
		}
		if (rc == 0) {
			value[i] = r->buf[i];
			len[i] = strlen(r->buf[i]);
		}
	}
	json_decref(o);
	return rc;
}

int fedrun_records_read(const char *path, const struct fedrun_records_format *f, uint64_t max,
			fedrun_record_fn fn, void *ud)
{
	if (f->kind != FEDRUN_RECORDS_TSV && f->kind != FEDRUN_RECORDS_JSONL)
		return fedrun_error(FEDRUN_EINVAL, "%s: not a records format (%d)", path, f->kind);
	FILE *fp;
	int rc = fedrun_open_read(path, &fp);
	if (rc < 0)
		return rc;
	struct reader r = {.path = path, .f = f};
	char *line = NULL;
	size_t cap = 0, n;
	uint64_t records = 0;
	bool header = f->kind == FEDRUN_RECORDS_TSV && f->header;
	while (!max || records < max) {
		rc = fedrun_read_line(fp, path, r.line + 1, LINE_MAX_BYTES, &line, &cap, &n);
		if (rc <= 0)
			break;
		r.line++;
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (n == 0)
			continue;
		if ((rc = check_text(&r, line, n)) < 0)
			break;
		const char *value[NR] = {NULL, NULL};
		size_t len[NR] = {0, 0};
		rc = f->kind == FEDRUN_RECORDS_TSV ? tsv_record(&r, line, n, value, len)
						   : jsonl_record(&r, line, n, value, len);
		if (rc < 0)
			break;
		if (header) {
			header = false;
			continue;
		}
		if ((rc = fn(ud, r.line, value, len)) < 0)
			break;
		records++;
	}
	if (rc > 0)
		rc = 0;
	free(line);
	for (int i = 0; i < NR; i++)
		free(r.buf[i]);
	fclose(fp);
	return rc;
}

/* ---- labels ---- */

struct fedrun_labels {
	json_t *ids; /* label -> id */
	char **name;
	uint32_t n, cap;
};

int fedrun_labels_create(struct fedrun_labels **out)
{
	struct fedrun_labels *l = calloc(1, sizeof *l);
	if (l && !(l->ids = json_object())) {
		free(l);
		l = NULL;
	}
	*out = l;
	return l ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
}

void fedrun_labels_destroy(struct fedrun_labels *l)
{
	if (!l)
		return;
	json_decref(l->ids);
	for (uint32_t i = 0; i < l->n; i++)
		free(l->name[i]);
	free(l->name);
	free(l);
}

int fedrun_labels_id(struct fedrun_labels *l, const char *s, size_t len, uint32_t *id)
{
	char *key = strndup(s, len);
	if (!key)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	json_t *v = json_object_get(l->ids, key);
	if (v) {
		*id = (uint32_t)json_integer_value(v);
		free(key);
		return 0;
	}
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? 2 * l->cap : 16;
		char **nm = realloc(l->name, cap * sizeof nm[0]);
		if (!nm) {
			free(key);
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		l->name = nm;
		l->cap = cap;
	}
	if (json_object_set_new(l->ids, key, json_integer(l->n)) < 0) {
		free(key);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	l->name[l->n] = key;
	*id = l->n++;
	return 0;
}

uint32_t fedrun_labels_count(const struct fedrun_labels *l)
{
	return l ? l->n : 0;
}

const char *fedrun_labels_name(const struct fedrun_labels *l, uint32_t id)
{
	return l && id < l->n ? l->name[id] : NULL;
}

/* ---- partition.tsv ---- */

/* A cell: tabs and newlines of a name would break the table. */
static void put_cell(FILE *fp, const char *s)
{
	for (; *s; s++)
		fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, fp);
}

/* ---- partition.svg: the figure of partition.tsv ---- */

/* A name as SVG text. */
static void put_xml(FILE *fp, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", fp); break;
		case '<': fputs("&lt;", fp); break;
		case '>': fputs("&gt;", fp); break;
		case '"': fputs("&quot;", fp); break;
		default: fputc((unsigned char)*s < 0x20 ? ' ' : *s, fp);
		}
	}
}

/* A step of 1, 2 or 5 times a power of ten giving about 5 ticks up to max. */
static uint64_t tick_step(uint64_t max)
{
	uint64_t step = 1;
	while (step * 10 <= max / 5 + 1 && step <= UINT64_MAX / 10)
		step *= 10;
	if (step * 5 <= max / 5 + 1)
		return step * 5;
	if (step * 2 <= max / 5 + 1)
		return step * 2;
	return step;
}

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x < y) - (x > y);
}

/* Bars wider than this many clients would be narrower than a pixel. */
#define SVG_MAX_BARS 800

/* The training sentences of each client as bars, stacked by category when
 * there are categories; past SVG_MAX_BARS clients, the clients ranked by
 * their training sentences, largest first (every k-th, no categories).
 * Plain SVG 1.1, so any browser or image viewer shows it, without gnuplot
 * at run time (fedrun-plot partition draws the table with gnuplot). */
static int partition_svg(const struct fedrun_partition_report *r, char **text, size_t *len)
{
	static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
					      "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
					      "#9c755f", "#bab0ac"};
	const uint32_t K = r->clients;
	const uint64_t *train = r->sentences[0];
	bool ranked = K > SVG_MAX_BARS;
	uint32_t bars = ranked ? SVG_MAX_BARS : K;
	uint64_t *sorted = NULL;
	if (ranked) {
		if (!(sorted = malloc((size_t)K * sizeof *sorted)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		for (uint32_t k = 0; k < K; k++)
			sorted[k] = train[k] == UINT64_MAX ? 0 : train[k];
		qsort(sorted, K, sizeof *sorted, cmp_u64_desc);
	}
	/* bar b: client k (or rank), its height */
	uint64_t max = 1;
	for (uint32_t b = 0; b < bars; b++) {
		uint64_t v = ranked ? sorted[(uint64_t)b * K / bars]
				    : (train[b] == UINT64_MAX ? 0 : train[b]);
		if (v > max)
			max = v;
	}
	uint64_t step = tick_step(max), top = (max + step - 1) / step * step;
	const double W = 760, H = 300, left = 70, bottom = 50, upper = 40;
	bool legend = !ranked && r->n_cat > 0;
	double right = legend ? 170 : 20;
	double pw = W - left - right, ph = H - upper - bottom, bw = pw / bars;
	FILE *fp = open_memstream(text, len);
	if (!fp) {
		free(sorted);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	fprintf(fp,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"font-family=\"sans-serif\" font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\" stroke=\"none\"/>\n"
		"<text x=\"%.0f\" y=\"20\" font-size=\"13\">Training sentences per client "
		"(%u clients%s)</text>\n",
		W, H, left, K, ranked ? ", ranked by size" : "");
	/* the y axis, its ticks and grid */
	for (uint64_t t = 0; t <= top; t += step) {
		double y = upper + ph - ph * (double)t / (double)top;
		fprintf(fp,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%" PRIu64 "</text>\n",
			left, y, left + pw, y, left - 4, y + 4, t);
		if (t > UINT64_MAX - step)
			break;
	}
	for (uint32_t b = 0; b < bars; b++) {
		double x = left + b * bw, wid = bw > 2 ? bw * 0.85 : bw;
		if (ranked || r->n_cat == 0) {
			uint64_t v = ranked ? sorted[(uint64_t)b * K / bars]
					    : (train[b] == UINT64_MAX ? 0 : train[b]);
			double hgt = ph * (double)v / (double)top;
			fprintf(fp,
				"<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
				"fill=\"%s\" stroke=\"none\"/>\n",
				x, upper + ph - hgt, wid, hgt, palette[0]);
			continue;
		}
		double base = 0;
		for (uint32_t c = 0; c < r->n_cat; c++) {
			uint64_t v = r->cat_sentences[(uint64_t)b * r->n_cat + c];
			double hgt = ph * (double)v / (double)top;
			if (v)
				fprintf(fp,
					"<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
					"height=\"%.2f\" fill=\"%s\" stroke=\"none\"/>\n",
					x, upper + ph - base - hgt, wid, hgt,
					palette[c % (sizeof palette / sizeof palette[0])]);
			base += hgt;
		}
	}
	/* client names under the bars when they fit, else the rank or index
	 * every tenth of the way */
	if (!ranked && K <= 16) {
		for (uint32_t k = 0; k < K; k++) {
			fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
				left + (k + 0.5) * bw, upper + ph + 14);
			put_xml(fp, r->name[k]);
			fputs("</text>\n", fp);
		}
	} else {
		for (uint32_t i = 0; i <= 10; i++) {
			uint64_t at = (uint64_t)i * (K - 1) / 10;
			double x = left + ((double)at * bars / K + 0.5) * bw;
			fprintf(fp,
				"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%" PRIu64
				"</text>\n",
				x, upper + ph + 14, at + (ranked ? 1 : 0));
		}
		fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
			left + pw / 2, upper + ph + 32,
			ranked ? "rank (1: the largest client)" : "client (index)");
	}
	fprintf(fp,
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
		left, upper + ph, left + pw, upper + ph);
	if (legend) {
		uint32_t shown = r->n_cat < 20 ? r->n_cat : 20;
		for (uint32_t c = 0; c < shown; c++) {
			double y = upper + 12 * c;
			fprintf(fp,
				"<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" "
				"fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">",
				W - right + 12, y, palette[c % (sizeof palette / sizeof palette[0])],
				W - right + 26, y + 9);
			put_xml(fp, r->cat_name[c]);
			fputs("</text>\n", fp);
		}
		if (shown < r->n_cat)
			fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\">and %u more</text>\n",
				W - right + 12, upper + 12 * shown + 9, r->n_cat - shown);
	}
	fputs("</svg>\n", fp);
	free(sorted);
	if (fclose(fp) != 0 || !*text) {
		free(*text);
		*text = NULL;
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	return 0;
}

/* A host function of a minor that has it, called; false otherwise. */
static bool host_flag(const struct fedrun_host *h, size_t off, bool (*const *fn)(void *))
{
	return h->size >= off + sizeof *fn && *fn && (*fn)(h->ctx);
}

/* Writes RUN/name atomically, unless a file there holds other bytes and is
 * the user's: a fresh run (not --resume) without output.overwrite refuses,
 * naming it, as the host does for the run's own files (a directory that
 * is no run may hold a partition.tsv of the user's). */
static int write_run_file(const struct fedrun_host *h, const char *dir, const char *name,
			  const char *text, size_t n)
{
	char *path = fedrun_path_resolve(dir, name);
	if (!path)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	char *old = NULL;
	size_t on = 0;
	int rc = 0;
	if (fedrun_read_file(path, &old, &on) < 0) {
		fedrun_error_clear(); /* none there (or unreadable: replaced) */
	} else if ((on != n || memcmp(old, text, n) != 0) &&
		   !host_flag(h, offsetof(struct fedrun_host, resuming), &h->resuming)) {
		if (!host_flag(h, offsetof(struct fedrun_host, overwrite), &h->overwrite))
			rc = fedrun_error(FEDRUN_EIO,
					  "%s exists and is not this run's: set output.overwrite to "
					  "true to replace it, or choose another output.dir",
					  path);
		else
			h->log(h->ctx, FEDRUN_LOG_WARN, "%s: the run replaces it (output.overwrite)",
			       path);
	}
	free(old);
	if (rc == 0)
		rc = fedrun_write_file_atomic(path, text, n);
	free(path);
	return rc;
}

int fedrun_partition_report_write(const struct fedrun_host *h,
				  const struct fedrun_partition_report *r)
{
	const char *dir = NULL;
	if (h->size >= offsetof(struct fedrun_host, run_dir) + sizeof h->run_dir && h->run_dir)
		dir = h->run_dir(h->ctx);
	if (!dir)
		return 0; /* no run: fedrun validate, fedrun translate */
	static const char *const split[3] = {"train", "valid", "test"};
	char *text = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&text, &n);
	if (!fp)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	fputs("client", fp);
	for (int s = 0; s < 3; s++)
		if (r->sentences[s])
			fprintf(fp, "\t%s_sentences\t%s_tokens", split[s], split[s]);
	for (uint32_t c = 0; c < r->n_cat; c++) {
		fputs("\tcategory:", fp);
		put_cell(fp, r->cat_name[c]);
	}
	fputc('\n', fp);
	for (uint32_t k = 0; k < r->clients; k++) {
		put_cell(fp, r->name[k]);
		for (int s = 0; s < 3; s++) {
			if (!r->sentences[s])
				continue;
			if (r->sentences[s][k] == UINT64_MAX)
				fputs("\t-\t-", fp);
			else
				fprintf(fp, "\t%" PRIu64 "\t%" PRIu64, r->sentences[s][k],
					r->tokens[s][k]);
		}
		for (uint32_t c = 0; c < r->n_cat; c++)
			fprintf(fp, "\t%" PRIu64, r->cat_sentences[(uint64_t)k * r->n_cat + c]);
		fputc('\n', fp);
	}
	if (fclose(fp) != 0 || !text) {
		free(text);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	int rc = write_run_file(h, dir, "partition.tsv", text, n);
	free(text);
	/* its figure beside it */
	if (rc == 0 && r->clients > 0 && r->sentences[0] && (rc = partition_svg(r, &text, &n)) == 0) {
		rc = write_run_file(h, dir, "partition.svg", text, n);
		free(text);
	}
	return rc;
}
