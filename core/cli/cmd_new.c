/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun new aggregator NAME [DIR]` and `fedrun new experiment [--model M]
 * NAME.json`: write the files a new aggregator plugin or experiment starts
 * from, out of the templates compiled in from core/cli/templates/. Nothing
 * is ever replaced: every file is created with O_EXCL, an existing file or
 * non-empty directory is refused, and a failure removes what this call
 * wrote. Returns an exit status, never exits. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd_new.h"

#define NAME_MAX_LEN 64 /* a plugin name's limit (the registry's) */

static void usage(FILE *fp)
{
	fputs("usage: fedrun new aggregator NAME [DIR]\n"
	      "       fedrun new experiment [--model gru-lm|transformer] NAME.json\n"
	      "Writes the files a new plugin or experiment starts from; never replaces a file.\n"
	      "\n"
	      "  aggregator NAME [DIR]  DIR (default ./NAME, new or empty) gets NAME.c, a\n"
	      "                         complete weighted-mean aggregator with TODOs where\n"
	      "                         your rule goes, a Makefile (pkg-config fedrun),\n"
	      "                         NAME-test.json (a tiny run of it) and README.txt.\n"
	      "                         NAME: a lower-case letter, then lower-case letters,\n"
	      "                         digits or _ (at most 64)\n"
	      "  experiment NAME.json   a pipeline reading your data files, and\n"
	      "                         NAME.notes.txt saying which files and what to change\n"
	      "  -m, --model MODEL      the experiment's model: gru-lm (language model,\n"
	      "                         default) or transformer (translation)\n"
	      "  -h, --help             this help\n"
	      "See fedrun-new(1).\n",
	      fp);
}

static const char *template_text(const char *name)
{
	for (const struct cli_template *t = cli_templates; t->name; t++)
		if (strcmp(t->name, name) == 0)
			return t->text;
	return NULL;
}

/* text with every @NAME@ replaced by name; malloc'd, NULL without memory. */
static char *expand(const char *text, const char *name)
{
	static const char key[] = "@NAME@";
	size_t klen = sizeof key - 1, nlen = strlen(name), n = 0;
	for (const char *p = text; (p = strstr(p, key)); p += klen)
		n++;
	char *out = malloc(strlen(text) + n * nlen + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = text, *q; *p; p = q + klen) {
		q = strstr(p, key);
		if (!q) {
			strcpy(o, p);
			return out;
		}
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, name, nlen);
		o += nlen;
	}
	*o = '\0';
	return out;
}

/* The files one call writes, for the message and for removal on failure. */
struct written {
	char *path[8];
	int n;
};

static void unwrite(struct written *w)
{
	while (w->n > 0) {
		w->n--;
		unlink(w->path[w->n]);
		free(w->path[w->n]);
	}
}

static void written_free(struct written *w)
{
	for (int i = 0; i < w->n; i++)
		free(w->path[i]);
	w->n = 0;
}

/* Creates `path` (never replacing anything there, a dangling link
 * included) with template `tpl` for `name`. Returns 0 or an exit status
 * after a message. */
static int write_new(struct written *w, const char *path, const char *tpl, const char *name)
{
	const char *text = template_text(tpl);
	char *body = text ? expand(text, name) : NULL;
	char *copy = strdup(path);
	if (!body || !copy) {
		free(body);
		free(copy);
		fprintf(stderr, "fedrun new: %s\n", text ? "out of memory" : "missing template");
		return 1;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0) {
		int e = errno;
		if (e == EEXIST)
			fprintf(stderr, "fedrun new: %s exists: fedrun new never replaces a file\n",
				path);
		else
			fprintf(stderr, "fedrun new: %s: %s\n", path, strerror(e));
		free(body);
		free(copy);
		return e == EEXIST || e == ENOENT || e == ENOTDIR ? 2 : 1;
	}
	size_t len = strlen(body), off = 0;
	int e = 0;
	while (off < len) {
		ssize_t k = write(fd, body + off, len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			e = k < 0 ? errno : EIO;
			break;
		}
		off += (size_t)k;
	}
	if (close(fd) != 0 && !e)
		e = errno;
	free(body);
	if (e) {
		fprintf(stderr, "fedrun new: writing %s: %s\n", path, strerror(e));
		unlink(path);
		free(copy);
		return 1;
	}
	w->path[w->n++] = copy;
	return 0;
}

/* a (its first alen bytes), then b, then c: malloc'd, NULL without memory. */
static char *concat(const char *a, size_t alen, const char *b, const char *c)
{
	size_t blen = strlen(b), clen = strlen(c);
	char *p = malloc(alen + blen + clen + 1);
	if (p) {
		memcpy(p, a, alen);
		memcpy(p + alen, b, blen);
		memcpy(p + alen + blen, c, clen + 1);
	}
	return p;
}

static int valid_plugin_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > NAME_MAX_LEN || !(s[0] >= 'a' && s[0] <= 'z'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/* 1 when dir is a directory with nothing in it; else 0 with errno (ENOTEMPTY
 * for entries, ENOTDIR for a file). */
static int dir_is_empty(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int empty = 1;
	errno = 0;
	while (empty && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = 0;
	int rerr = errno;
	closedir(d);
	errno = empty ? rerr : ENOTEMPTY;
	return empty && !rerr;
}

static int new_aggregator(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "fedrun new aggregator: expected NAME [DIR], got %d arguments\n",
			argc - 1);
		usage(stderr);
		return 2;
	}
	const char *name = argv[1], *dir = argc == 3 ? argv[2] : argv[1];
	if (!valid_plugin_name(name)) {
		fprintf(stderr,
			"fedrun new aggregator: invalid name '%s': want a lower-case letter, then "
			"lower-case letters, digits or _ (at most %d characters), as a plugin "
			"name and a C identifier\n",
			name, NAME_MAX_LEN);
		return 2;
	}
	int made = 0;
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "fedrun new aggregator: %s exists and is not a directory\n",
				dir);
			return 2;
		}
		if (!dir_is_empty(dir)) {
			if (errno == ENOTEMPTY)
				fprintf(stderr,
					"fedrun new aggregator: %s exists and is not empty: fedrun "
					"new writes only into a new or empty directory\n",
					dir);
			else
				fprintf(stderr, "fedrun new aggregator: %s: %s\n", dir,
					strerror(errno));
			return 2;
		}
	} else if (mkdir(dir, 0777) == 0) {
		made = 1;
	} else {
		int e = errno;
		fprintf(stderr, "fedrun new aggregator: creating %s: %s\n", dir, strerror(e));
		return e == ENOENT || e == ENOTDIR || e == EEXIST ? 2 : 1;
	}
	char cfile[NAME_MAX_LEN + 8], test[NAME_MAX_LEN + 16];
	snprintf(cfile, sizeof cfile, "%s.c", name);
	snprintf(test, sizeof test, "%s-test.json", name);
	const char *files[][2] = {{"aggregator.c", cfile},
				  {"aggregator.mk", "Makefile"},
				  {"aggregator-test.json", test},
				  {"aggregator-README.txt", "README.txt"}};
	struct written w = {.n = 0};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof files / sizeof files[0]; i++) {
		char *path = concat(dir, strlen(dir), "/", files[i][1]);
		if (!path) {
			fputs("fedrun new: out of memory\n", stderr);
			rc = 1;
			break;
		}
		rc = write_new(&w, path, files[i][0], name);
		free(path);
	}
	if (rc) {
		unwrite(&w);
		if (made)
			rmdir(dir);
		return rc;
	}
	printf("fedrun new: wrote");
	for (int i = 0; i < w.n; i++)
		printf(" %s", w.path[i]);
	printf("\nBuild it and run it on a tiny problem (README.txt says more):\n"
	       "    cd %s && make && fedrun --allow-plugin-paths %s\n",
	       dir, test);
	written_free(&w);
	return 0;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int new_experiment(int argc, char **argv)
{
	const char *model = "gru-lm", *file = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
			if (++i == argc) {
				fprintf(stderr, "fedrun new experiment: %s needs a model\n", a);
				return 2;
			}
			model = argv[i];
		} else if (!strncmp(a, "--model=", 8)) {
			model = a + 8;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "fedrun new experiment: unknown option %s\n", a);
			usage(stderr);
			return 2;
		} else if (file) {
			fprintf(stderr, "fedrun new experiment: expected one NAME.json, got %s and %s\n",
				file, a);
			return 2;
		} else {
			file = a;
		}
	}
	if (!file) {
		fputs("fedrun new experiment: missing NAME.json\n", stderr);
		usage(stderr);
		return 2;
	}
	if (strcmp(model, "gru-lm") != 0 && strcmp(model, "transformer") != 0) {
		fprintf(stderr, "fedrun new experiment: --model %s: expected gru-lm or transformer\n",
			model);
		return 2;
	}
	/* NAME is the pipeline's name (and runs/NAME its output directory):
	 * the file's base name without .json, in characters that need no
	 * quoting in JSON or a shell. */
	size_t flen = strlen(file);
	size_t stem_end = has_suffix(file, ".json") ? flen - 5 : flen;
	const char *slash = strrchr(file, '/');
	size_t stem_start = slash ? (size_t)(slash - file) + 1 : 0;
	int ok = stem_end > stem_start && stem_end - stem_start <= 200 &&
		 file[stem_start] != '.' && file[stem_start] != '-';
	for (size_t i = stem_start; ok && i < stem_end; i++) {
		char c = file[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		     c == '_' || c == '-' || c == '.';
	}
	if (!ok) {
		fprintf(stderr,
			"fedrun new experiment: invalid name '%s': want NAME.json, NAME of letters, "
			"digits, _, - and . (not first), at most 200\n",
			file);
		return 2;
	}
	char *name = concat(file + stem_start, stem_end - stem_start, "", "");
	char *json = concat(file, stem_end, ".json", "");
	char *notes = concat(file, stem_end, ".notes.txt", "");
	if (!name || !json || !notes) {
		free(name);
		free(json);
		free(notes);
		fputs("fedrun new: out of memory\n", stderr);
		return 1;
	}
	char tjson[64], tnotes[64];
	snprintf(tjson, sizeof tjson, "experiment-%s.json", model);
	snprintf(tnotes, sizeof tnotes, "experiment-%s.txt", model);
	struct written w = {.n = 0};
	struct stat st;
	int rc = 0;
	/* Refuse before writing either file. */
	const char *both[] = {json, notes};
	for (int i = 0; rc == 0 && i < 2; i++)
		if (lstat(both[i], &st) == 0) {
			fprintf(stderr, "fedrun new: %s exists: fedrun new never replaces a file\n",
				both[i]);
			rc = 2;
		}
	if (rc == 0)
		rc = write_new(&w, json, tjson, name);
	if (rc == 0)
		rc = write_new(&w, notes, tnotes, name);
	if (rc) {
		unwrite(&w);
	} else {
		printf("fedrun new: wrote %s and %s (the files it reads, what to change)\n"
		       "Put your data where %s says, then:\n"
		       "    fedrun validate %s\n",
		       json, notes, notes, json);
		written_free(&w);
	}
	free(name);
	free(json);
	free(notes);
	return rc;
}

int fedrun_cmd_new(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *what = argv[1];
	if (!strcmp(what, "-h") || !strcmp(what, "--help")) {
		usage(stdout);
		return 0;
	}
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
	if (!strcmp(what, "aggregator"))
		return new_aggregator(argc - 1, argv + 1);
	if (!strcmp(what, "experiment"))
		return new_experiment(argc - 1, argv + 1);
	fprintf(stderr, "fedrun new: unknown kind '%s': expected aggregator or experiment\n", what);
	usage(stderr);
	return 2;
}
