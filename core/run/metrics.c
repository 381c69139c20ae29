/* SPDX-License-Identifier: Apache-2.0 */
/* The run's metrics: events collected during a round (from the engine and
 * from plugins through host->metric), written at the round's end in a fixed
 * order to metrics.jsonl and its CSV view metrics.csv. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "run/run.h"

static const char *split_names[] = {"train", "valid", "test"};

const char *run_split_name(int split)
{
	return split >= 0 && split < 3 ? split_names[split] : "";
}

#define SERVER UINT32_MAX /* metric_event.client of the server's events */

#define CSV_HEADER "round,client,split,metric,tensor,value,bytes_push,bytes_pull,wall,model\n"

/* FNV-1a. */
static uint32_t str_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

const char *run_str(const struct run *r, uint32_t id)
{
	return id > 0 && id < r->nstrings ? r->strtab[id] : ""; /* id 0 is "" */
}

/* Rebuilds the hash set with `cap` slots. */
static int rehash(struct run *r, uint32_t cap)
{
	uint32_t *t = malloc((size_t)cap * sizeof *t);
	if (!t)
		return -1;
	memset(t, 0xff, (size_t)cap * sizeof *t);
	for (uint32_t id = 1; id < r->nstrings; id++) {
		uint32_t j = str_hash(r->strtab[id], strlen(r->strtab[id])) & (cap - 1);
		while (t[j] != UINT32_MAX)
			j = (j + 1) & (cap - 1);
		t[j] = id;
	}
	free(r->slots);
	r->slots = t;
	r->capslots = cap;
	return 0;
}

/* The id of s cut to max - 1 bytes (as the fixed-size fields of earlier
 * versions cut it); UINT32_MAX without memory. Called under r->lock. */
static uint32_t intern(struct run *r, const char *s, size_t max)
{
	size_t len = strnlen(s ? s : "", max - 1);
	if (len == 0)
		return 0;
	if (r->nstrings == 0) { /* id 0 is "" */
		if (!(r->strtab = malloc(16 * sizeof *r->strtab)))
			return UINT32_MAX;
		r->strtab[0] = NULL;
		r->capstrings = 16;
		r->nstrings = 1;
	}
	if (2 * (r->nstrings + 1) > r->capslots && rehash(r, r->capslots ? 2 * r->capslots : 64) < 0)
		return UINT32_MAX;
	uint32_t j = str_hash(s, len) & (r->capslots - 1);
	for (; r->slots[j] != UINT32_MAX; j = (j + 1) & (r->capslots - 1)) {
		const char *t = r->strtab[r->slots[j]];
		if (strncmp(t, s, len) == 0 && t[len] == '\0')
			return r->slots[j];
	}
	if (r->nstrings == r->capstrings) {
		char **t = realloc(r->strtab, 2 * (size_t)r->capstrings * sizeof *t);
		if (!t)
			return UINT32_MAX;
		r->strtab = t;
		r->capstrings *= 2;
	}
	char *copy = strndup(s, len);
	if (!copy)
		return UINT32_MAX;
	r->strtab[r->nstrings] = copy;
	r->slots[j] = r->nstrings;
	return r->nstrings++;
}

void run_strings_free(struct run *r)
{
	for (uint32_t id = 1; id < r->nstrings; id++)
		free(r->strtab[id]);
	free(r->strtab);
	free(r->slots);
	r->strtab = NULL;
	r->slots = NULL;
	r->nstrings = r->capstrings = r->capslots = 0;
}

static int event_add(struct run *r, int64_t client, int split, const char *name, const char *tensor,
		     const char *model, double value)
{
	pthread_mutex_lock(&r->lock);
	if (r->nevents == r->capevents) {
		uint32_t cap = r->capevents ? 2 * r->capevents : 256;
		struct metric_event *e = realloc(r->events, cap * sizeof *e);
		if (!e) {
			pthread_mutex_unlock(&r->lock);
			return fedrun_error(FEDRUN_ENOMEM, "out of memory recording metrics");
		}
		r->events = e;
		r->capevents = cap;
	}
	uint32_t n = intern(r, name, 48), t = intern(r, tensor, FEDRUN_NAME_MAX),
		 m = intern(r, model, 64);
	if (n == UINT32_MAX || t == UINT32_MAX || m == UINT32_MAX) {
		pthread_mutex_unlock(&r->lock);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory recording metrics");
	}
	r->events[r->nevents++] = (struct metric_event){
		.value = value, .client = client < 0 || client >= UINT32_MAX ? SERVER : (uint32_t)client, .seq = (uint32_t)r->seq++,
		.name = n, .tensor = t, .model = m, .split = split};
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int run_event(struct run *r, int64_t client, int split, const char *name, const char *tensor,
	      double value)
{
	return event_add(r, client, split, name, tensor, NULL, value);
}

int run_event_model(struct run *r, int64_t client, int split, const char *name,
		    const char *model, double value)
{
	return event_add(r, client, split, name, NULL, model, value);
}

int run_event_full(struct run *r, int64_t client, int split, const char *name, const char *tensor,
		   const char *model, double value)
{
	return event_add(r, client, split, name, tensor, model, value);
}

/* JSON string contents: client names come from plugins. */
static void json_str(FILE *fp, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
}

/* A CSV field: quoted when it holds a comma, quote or newline. */
static void csv_str(FILE *fp, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, fp);
		return;
	}
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

/* Server events first, then clients in id order; within one client, in the
 * order they were recorded (one client runs on one thread, so that order is
 * deterministic). */
static int cmp_event(const void *a, const void *b)
{
	const struct metric_event *x = a, *y = b;
	if (x->client != y->client) /* the server (UINT32_MAX) first */
		return x->client == SERVER ? -1 : y->client == SERVER ? 1 : x->client < y->client ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Opens DIR/NAME for appending (created when missing). A symbolic link or
 * anything but a regular file is refused: a resumed run must not write
 * through a link that points out of its directory. */
static int open_append(const char *dir, const char *name, const char *header, FILE **out)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	*out = NULL;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
	struct stat st;
	if (fd < 0 && errno == ELOOP)
		return fedrun_error(FEDRUN_EIO,
				    "%s is a symbolic link: fedrun writes a run's files only in its "
				    "directory (remove the link)",
				    path);
	if (fd < 0 || fstat(fd, &st) != 0) {
		int rc = fedrun_error(FEDRUN_EIO, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fedrun_error(FEDRUN_EIO, "%s is not a regular file", path);
	}
	FILE *fp = fdopen(fd, "a");
	if (!fp) {
		int rc = fedrun_error(FEDRUN_EIO, "cannot write %s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	/* flushed now: the records are then appended to the descriptor */
	if (header && st.st_size == 0 && (fputs(header, fp) < 0 || fflush(fp) != 0)) {
		int rc = fedrun_error(FEDRUN_EIO, "cannot write %s: %s", path, strerror(errno));
		fclose(fp);
		return rc;
	}
	*out = fp;
	return 0;
}

int metrics_open(struct run *r)
{
	int rc = open_append(r->cfg.dir, "metrics.jsonl", NULL, &r->metrics);
	if (rc == 0)
		rc = open_append(r->cfg.dir, "metrics.csv", CSV_HEADER, &r->csv);
	if (rc == 0)
		rc = open_append(r->cfg.dir, "log.txt", NULL, &r->log);
	if (rc < 0)
		return rc;
	if (r->pending_log)
		fputs(r->pending_log, r->log);
	free(r->pending_log);
	r->pending_log = NULL;
	r->pending_len = 0;
	return 0;
}

void metrics_close(struct run *r)
{
	if (r->metrics)
		fclose(r->metrics);
	if (r->csv)
		fclose(r->csv);
	if (r->log)
		fclose(r->log);
	r->metrics = r->csv = r->log = NULL;
}

static void json_num(FILE *fp, double v)
{
	if (isfinite(v))
		fprintf(fp, "%.17g", v);
	else
		fputs("null", fp);
}

/* Appends n bytes to the end of fd (an O_APPEND file), all or nothing: a
 * failed write (a full disk, a file size limit) is cut back to the old end,
 * so that the file never ends inside a record. */
static int append_all(int fd, const char *dir, const char *name, const char *buf, size_t n,
		      off_t *old_end)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return fedrun_error(FEDRUN_EIO, "%s/%s: %s", dir, name, strerror(errno));
	*old_end = st.st_size;
	for (size_t done = 0; done < n;) {
		ssize_t w = write(fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;
			if (ftruncate(fd, *old_end) != 0)
				return fedrun_error(FEDRUN_EIO,
						    "%s/%s: cannot write metrics: %s, and cannot cut "
						    "the partial round off: %s",
						    dir, name, strerror(e), strerror(errno));
			return fedrun_error(FEDRUN_EIO,
					    "%s/%s: cannot write metrics: %s (the file keeps the rounds "
					    "before)",
					    dir, name, strerror(e));
		}
		done += (size_t)w;
	}
	return 0;
}

int metrics_flush_round(struct run *r, uint32_t round)
{
	double wall = r->wall_base + (run_now() - r->t0);
	if (r->nevents > 1) /* (qsort of a NULL array is undefined even for 0) */
		qsort(r->events, r->nevents, sizeof *r->events, cmp_event);
	/* The round's records are made in memory and appended whole, each
	 * file all or nothing (append_all). */
	char *jbuf = NULL, *cbuf = NULL;
	size_t jlen = 0, clen = 0;
	FILE *jm = open_memstream(&jbuf, &jlen), *cm = open_memstream(&cbuf, &clen);
	if (!jm || !cm) {
		if (jm)
			fclose(jm);
		if (cm)
			fclose(cm);
		free(jbuf);
		free(cbuf);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for the metrics of round %u", round);
	}
	for (uint32_t i = 0; i < r->nevents; i++) {
		const struct metric_event *e = &r->events[i];
		fprintf(jm, "{\"round\":%u,\"client\":", round);
		if (e->client != SERVER)
			fprintf(jm, "%" PRIu32, e->client);
		else
			fputs("null", jm);
		if (e->split >= 0)
			fprintf(jm, ",\"split\":\"%s\"", split_names[e->split]);
		else
			fputs(",\"split\":null", jm);
		const char *name = run_str(r, e->name), *tensor = run_str(r, e->tensor),
			   *model = run_str(r, e->model);
		fprintf(jm, ",\"metric\":\"%s\"", name);
		if (tensor[0])
			fprintf(jm, ",\"tensor\":\"%s\"", tensor);
		if (model[0]) {
			fputs(",\"model\":\"", jm);
			json_str(jm, model);
			fputc('"', jm);
		}
		fputs(",\"value\":", jm);
		json_num(jm, e->value);
		fprintf(jm, ",\"bytes_push\":%" PRIu64 ",\"bytes_pull\":%" PRIu64
				    ",\"wall\":%.3f}\n", r->bytes_push, r->bytes_pull, wall);

		fprintf(cm, "%u,", round);
		if (e->client != SERVER)
			fprintf(cm, "%" PRIu32, e->client);
		fprintf(cm, ",%s,%s,%s,%.17g,%" PRIu64 ",%" PRIu64 ",%.3f,",
			e->split >= 0 ? split_names[e->split] : "", name, tensor, e->value,
			r->bytes_push, r->bytes_pull, wall);
		csv_str(cm, model);
		fputc('\n', cm);
	}
	r->nevents = 0;
	r->seq = 0; /* seq orders the events of one flush */
	int rc = fclose(jm) | fclose(cm) ? fedrun_error(FEDRUN_ENOMEM, "out of memory for the "
								 "metrics of round %u", round)
					 : 0;
	off_t jend = 0, cend = 0;
	if (rc == 0)
		rc = append_all(fileno(r->metrics), r->cfg.dir, "metrics.jsonl", jbuf, jlen, &jend);
	/* both files end at the same round: the JSON lines go when the CSV
	 * ones cannot */
	if (rc == 0 && (rc = append_all(fileno(r->csv), r->cfg.dir, "metrics.csv", cbuf, clen,
					&cend)) < 0 &&
	    ftruncate(fileno(r->metrics), jend) != 0)
		fedrun_error_wrap(rc, "%s/metrics.jsonl keeps round %u: ", r->cfg.dir, round);
	free(jbuf);
	free(cbuf);
	if (rc == 0 && fflush(r->log) != 0)
		rc = fedrun_error(FEDRUN_EIO, "%s/log.txt: %s", r->cfg.dir, strerror(errno));
	return rc;
}

double metrics_round0_loss(const char *dir, int split)
{
	char path[4096], want[128];
	snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
	/* The line evaluate_server's event makes (metrics_flush_round). */
	int n = snprintf(want, sizeof want,
			 "{\"round\":0,\"client\":null,\"split\":\"%s\",\"metric\":\"loss\",\"value\":",
			 run_split_name(split));
	FILE *fp = fopen(path, "r");
	double loss = NAN;
	char *line = NULL;
	size_t cap = 0;
	/* Round 0's lines come first; the scan stops at the first other. */
	while (fp && getline(&line, &cap, fp) > 0 && strncmp(line, "{\"round\":0,", 11) == 0) {
		if (strncmp(line, want, (size_t)n) == 0) {
			char *end;
			double v = strtod(line + n, &end);
			if (end != line + n && *end == ',' && isfinite(v))
				loss = v;
			break;
		}
	}
	free(line);
	if (fp)
		fclose(fp);
	return loss;
}

/* The "wall" value of the metrics.jsonl line [line, end), or -1. */
static double line_wall(const char *line, const char *end)
{
	static const char key[] = "\"wall\":";
	for (const char *p = end - (sizeof key - 1); p >= line; p--)
		if (memcmp(p, key, sizeof key - 1) == 0) {
			char *e;
			double w = strtod(p + sizeof key - 1, &e);
			return e != p + sizeof key - 1 && e <= end && isfinite(w) && w >= 0 ? w : -1;
		}
	return -1;
}

/* The first bytes of a line that say its round: "{"round":" and at most 10
 * digits and a comma. */
#define HEAD_MAX 32
/* How much a scan reads at a time, and of the last line kept the most it
 * reads back for its wall time (the last field, a few dozen bytes). */
#define SCAN_CHUNK (1 << 16)
#define TAIL_MAX 4096

/* The round a metrics line starts with, from its first bytes head[0, n):
 * "{"round":R," in metrics.jsonl, "R," in metrics.csv; -1 when it does not
 * start so. Only the head is looked at: the line's length does not count. */
static int64_t line_round(const char *head, size_t n, int is_csv)
{
	static const char pre[] = "{\"round\":";
	size_t i = 0;
	if (!is_csv) {
		if (n < sizeof pre - 1 || memcmp(head, pre, sizeof pre - 1) != 0)
			return -1;
		i = sizeof pre - 1;
	}
	uint64_t v = 0;
	size_t digits = 0;
	for (; i < n && head[i] >= '0' && head[i] <= '9' && digits < 11; i++, digits++)
		v = 10 * v + (uint64_t)(head[i] - '0');
	return digits > 0 && digits <= 10 && i < n && head[i] == ',' && v <= UINT32_MAX ? (int64_t)v
											: -1;
}

/* One metrics file being cut: where it ends now, where it is cut. */
struct cut {
	int fd; /* -1: no such file */
	off_t size, keep;
};

/* Finds where the metrics file `name` is cut to keep the lines of rounds <=
 * round (a resumed run rewrites what came after its checkpoint): after the
 * last line before the first that is of a later round or not a metrics
 * line, or that is torn (no newline: the last line of a killed run).
 * `is_csv` keeps the header line. With `last_wall`, stores there the wall
 * time of the last line kept (left as it is when none has one).
 *
 * One pass over the file in pieces of SCAN_CHUNK bytes, each line looked at
 * by its first bytes only, so that time is linear in the size and memory
 * fixed (metrics of 100,000 clients are tens of MB; parsing each line with
 * sscanf measured the rest of the buffer each time: quadratic). Nothing is
 * written here: a signal (*stop set) between two pieces ends the scan with
 * FEDRUN_EINTERRUPTED and leaves the file as it was. */
static int cut_find(const char *dir, const char *name, uint32_t round, int is_csv,
		    double *last_wall, volatile int *stop, struct cut *c)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	c->fd = -1;
	c->size = c->keep = 0;
	/* O_NONBLOCK: a FIFO in its place is refused below, not waited on. */
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0
				       : fedrun_error(FEDRUN_EIO, "cannot open '%s': %s", path,
						      strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int rc = fedrun_error(FEDRUN_EIO, "'%s' is not a regular file", path);
		close(fd);
		return rc;
	}
	char *buf = malloc(SCAN_CHUNK);
	if (!buf) {
		close(fd);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory reading '%s'", path);
	}
	char head[HEAD_MAX];
	size_t hlen = 0;
	int header = is_csv, done = 0, rc = 0;
	off_t pos = 0, line = 0, keep = 0, last = -1, last_end = 0;
	while (!done) {
		if (stop && *stop) {
			rc = fedrun_error(FEDRUN_EINTERRUPTED, "interrupted while reading %s", path);
			break;
		}
		ssize_t got = read(fd, buf, SCAN_CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = fedrun_error(FEDRUN_EIO, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		if (got == 0)
			break; /* a torn last line is dropped */
		for (const char *p = buf, *end = buf + got; p < end;) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t seg = (size_t)((nl ? nl : end) - p);
			size_t take = seg < HEAD_MAX - hlen ? seg : HEAD_MAX - hlen;
			memcpy(head + hlen, p, take);
			hlen += take;
			if (!nl)
				break;
			off_t line_end = pos + (nl - buf) + 1;
			if (header) {
				header = 0;
			} else {
				int64_t rd = line_round(head, hlen, is_csv);
				if (rd < 0 || rd > round) {
					done = 1;
					break;
				}
				last = line;
				last_end = line_end;
			}
			keep = line = line_end;
			hlen = 0;
			p = nl + 1;
		}
		pos += got;
	}
	if (rc == 0 && last_wall && last >= 0) {
		/* The wall field ends the line: its last bytes, newline left out. */
		off_t len = last_end - 1 - last < TAIL_MAX ? last_end - 1 - last : TAIL_MAX;
		ssize_t got = pread(fd, buf, (size_t)len, last_end - 1 - len);
		double w = got == len ? line_wall(buf, buf + len) : -1;
		if (w >= 0)
			*last_wall = w;
	}
	free(buf);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	c->fd = fd;
	c->size = st.st_size;
	c->keep = keep;
	return 0;
}

int metrics_truncate(const char *dir, uint32_t round, double *wall, volatile int *stop)
{
	*wall = 0;
	struct cut jsonl, csv = {.fd = -1};
	int rc = cut_find(dir, "metrics.jsonl", round, 0, wall, stop, &jsonl);
	if (rc == 0)
		rc = cut_find(dir, "metrics.csv", round, 1, NULL, stop, &csv);
	if (rc == 0 && stop && *stop)
		rc = fedrun_error(FEDRUN_EINTERRUPTED, "interrupted while reading %s/metrics.csv", dir);
	/* Both files were read whole before either is cut: a signal or an
	 * error above leaves both as they were. Cutting in place writes no
	 * copy; a crash leaves the file whole or cut, both of which a resume
	 * cuts again. */
	struct cut *cuts[2] = {&jsonl, &csv};
	const char *names[2] = {"metrics.jsonl", "metrics.csv"};
	for (int i = 0; i < 2; i++) {
		struct cut *c = cuts[i];
		if (rc == 0 && c->fd >= 0 && c->keep < c->size &&
		    (ftruncate(c->fd, c->keep) != 0 || fsync(c->fd) != 0))
			rc = fedrun_error(FEDRUN_EIO, "cannot cut %s/%s back to round %u: %s", dir,
					  names[i], round, strerror(errno));
		if (c->fd >= 0)
			close(c->fd);
	}
	return rc;
}
