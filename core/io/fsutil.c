/* SPDX-License-Identifier: Apache-2.0 */
/* Directories, whole-file reads and atomic writes (see fedrun/io.h). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "io_internal.h"

int fedrun_mkdir_p(const char *dir)
{
	char *p = strdup(dir);
	if (!p)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0777) != 0 && errno != EEXIST) {
				int rc = fedrun_error(FEDRUN_EIO, "cannot create directory '%s': %s",
						      p, strerror(errno));
				free(p);
				return rc;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	int ok = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
	free(p);
	if (!ok)
		return fedrun_error(FEDRUN_EIO, "'%s' is not a directory", dir);
	return 0;
}

int fedrun_atomic_open(struct fedrun_atomic_file *af, const char *path)
{
	memset(af, 0, sizeof af[0]);
	size_t n = strlen(path) + 32;
	af->path = strdup(path);
	af->tmp = malloc(n);
	if (!af->path || !af->tmp) {
		free(af->path);
		free(af->tmp);
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	snprintf(af->tmp, n, "%s.tmp.%ld", path, (long)getpid());
	af->fp = fopen(af->tmp, "wb");
	if (!af->fp) {
		int rc = fedrun_error(FEDRUN_EIO, "cannot write '%s': %s", af->tmp, strerror(errno));
		free(af->path);
		free(af->tmp);
		memset(af, 0, sizeof af[0]);
		return rc;
	}
	return 0;
}

static void sync_dir_of(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return;
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(copy);
}

/* sync: fsync the file and its directory; without, the rename is atomic
 * but not durable (io_internal.h). */
static int atomic_commit(struct fedrun_atomic_file *af, bool sync)
{
	int rc = 0;
	if (fflush(af->fp) != 0 || ferror(af->fp) || (sync && fsync(fileno(af->fp)) != 0))
		rc = fedrun_error(FEDRUN_EIO, "cannot write '%s': %s", af->tmp, strerror(errno));
	if (fclose(af->fp) != 0 && rc == 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot write '%s': %s", af->tmp, strerror(errno));
	af->fp = NULL;
	if (rc == 0 && rename(af->tmp, af->path) != 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot rename '%s' to '%s': %s", af->tmp, af->path,
				  strerror(errno));
	if (rc == 0 && sync)
		sync_dir_of(af->path);
	else if (rc < 0)
		unlink(af->tmp);
	free(af->path);
	free(af->tmp);
	af->path = af->tmp = NULL;
	return rc;
}

int fedrun_atomic_commit(struct fedrun_atomic_file *af)
{
	return atomic_commit(af, true);
}

int io_atomic_commit_nosync(struct fedrun_atomic_file *af)
{
	return atomic_commit(af, false);
}

void fedrun_atomic_abort(struct fedrun_atomic_file *af)
{
	if (af->fp) {
		fclose(af->fp);
		unlink(af->tmp);
	}
	free(af->path);
	free(af->tmp);
	memset(af, 0, sizeof af[0]);
}

int fedrun_write_file_atomic(const char *path, const void *data, size_t n)
{
	struct fedrun_atomic_file af;
	int rc = fedrun_atomic_open(&af, path);
	if (rc < 0)
		return rc;
	if (n && fwrite(data, 1, n, af.fp) != n) {
		rc = fedrun_error(FEDRUN_EIO, "cannot write '%s': %s", af.tmp, strerror(errno));
		fedrun_atomic_abort(&af);
		return rc;
	}
	return fedrun_atomic_commit(&af);
}

/* Reads fp whole; with `text`, fails at the first NUL byte read. */
static int read_stream(FILE *fp, const char *name, bool text, char **data, size_t *n)
{
	*data = NULL;
	*n = 0;
	size_t cap = 1 << 16, len = 0, lines = 1;
	char *buf = malloc(cap + 1);
	while (buf) {
		size_t got = fread(buf + len, 1, cap - len, fp);
		if (text && got > 0) {
			const char *nul = memchr(buf + len, '\0', got);
			const char *end = nul ? nul : buf + len + got;
			for (const char *p = buf + len; (p = memchr(p, '\n', (size_t)(end - p)));
			     p++)
				lines++;
			if (nul) {
				free(buf);
				return fedrun_error(FEDRUN_EINVAL,
						    "'%s', line %zu: a NUL byte (not text)", name,
						    lines);
			}
		}
		len += got;
		if (len < cap)
			break;
		if (cap >= FEDRUN_READ_MAX) { /* a stream: stdin from /dev/zero */
			free(buf);
			return fedrun_error(FEDRUN_EINVAL,
					    "'%s': more than the %llu GiB fedrun reads", name,
					    (unsigned long long)(FEDRUN_READ_MAX >> 30));
		}
		char *bigger = realloc(buf, 2 * cap + 1);
		if (!bigger) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	if (!buf)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory reading '%s'", name);
	if (ferror(fp)) {
		free(buf);
		return fedrun_error(FEDRUN_EIO, "cannot read '%s': %s", name, strerror(errno));
	}
	buf[len] = '\0';
	*data = buf;
	*n = len;
	return 0;
}

int fedrun_read_stream(FILE *fp, const char *name, char **data, size_t *n)
{
	return read_stream(fp, name, false, data, n);
}

int fedrun_read_text_stream(FILE *fp, const char *name, char **data, size_t *n)
{
	return read_stream(fp, name, true, data, n);
}

int fedrun_read_line(FILE *fp, const char *name, uint64_t lineno, size_t max, char **buf,
		     size_t *cap, size_t *len)
{
	size_t n = 0;
	int c;
	*len = 0;
	while ((c = getc(fp)) != EOF && c != '\n') {
		*len = n;
		if (c == 0)
			return fedrun_error(FEDRUN_EINVAL,
					    "%s, line %" PRIu64
					    ": a NUL byte at byte %zu (not text)",
					    name, lineno, n + 1);
		if (n >= max) {
			*len = n + 1;
			return fedrun_error(FEDRUN_EINVAL,
					    "%s, line %" PRIu64 ": longer than %zu bytes", name,
					    lineno, max);
		}
		if (n + 1 >= *cap) {
			size_t nc = *cap ? 2 * *cap : 256;
			char *p = realloc(*buf, nc);
			if (!p)
				return fedrun_error(FEDRUN_ENOMEM,
						    "%s, line %" PRIu64 ": out of memory", name,
						    lineno);
			*buf = p;
			*cap = nc;
		}
		(*buf)[n++] = (char)c;
	}
	if (ferror(fp))
		return fedrun_error(FEDRUN_EIO, "cannot read %s: %s", name, strerror(errno));
	if (c == EOF && n == 0)
		return 0;
	if (!*buf || n + 1 > *cap) { /* an empty line before any byte was stored */
		char *p = realloc(*buf, 256);
		if (!p)
			return fedrun_error(FEDRUN_ENOMEM, "%s, line %" PRIu64 ": out of memory",
					    name, lineno);
		*buf = p;
		*cap = 256;
	}
	(*buf)[n] = '\0';
	*len = n;
	return 1;
}

int fedrun_file_check(const char *path, int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return fedrun_error(FEDRUN_EIO, "cannot read '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fedrun_error(FEDRUN_EINVAL, "'%s' is not a regular file (%s): fedrun reads files only",
				    path,
				    S_ISDIR(st.st_mode)    ? "a directory"
				    : S_ISFIFO(st.st_mode) ? "a FIFO"
				    : S_ISCHR(st.st_mode)  ? "a character device"
				    : S_ISBLK(st.st_mode)  ? "a block device"
				    : S_ISSOCK(st.st_mode) ? "a socket"
							   : "not a file");
	if ((uint64_t)st.st_size > FEDRUN_READ_MAX)
		return fedrun_error(FEDRUN_EINVAL, "'%s' is %lld bytes, more than the %llu GiB fedrun reads",
				    path, (long long)st.st_size,
				    (unsigned long long)(FEDRUN_READ_MAX >> 30));
	return 0;
}

int fedrun_open_read(const char *path, FILE **out)
{
	*out = NULL;
	/* O_NONBLOCK: opening a FIFO does not wait for a writer; the check
	 * then refuses it (and devices), and reading is blocking again. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	/* A file that cannot be had (missing, unreadable, under a
	 * non-directory) is a missing input, not an I/O failure. */
	if (fd < 0)
		return fedrun_error(errno == ENOENT || errno == EACCES || errno == EPERM ||
						    errno == ENOTDIR || errno == ELOOP ||
						    errno == ENAMETOOLONG
					    ? FEDRUN_ENOENT
					    : FEDRUN_EIO,
				    "cannot open '%s': %s", path, strerror(errno));
	int rc = fedrun_file_check(path, fd);
	int fl = fcntl(fd, F_GETFL);
	if (rc == 0 && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
		rc = fedrun_error(FEDRUN_EIO, "cannot read '%s': %s", path, strerror(errno));
	FILE *fp = rc == 0 ? fdopen(fd, "rb") : NULL;
	if (rc == 0 && !fp)
		rc = fedrun_error(FEDRUN_EIO, "cannot read '%s': %s", path, strerror(errno));
	if (!fp) {
		close(fd);
		return rc;
	}
	*out = fp;
	return 0;
}

int fedrun_read_file(const char *path, char **data, size_t *n)
{
	*data = NULL;
	*n = 0;
	FILE *fp;
	int rc = fedrun_open_read(path, &fp);
	if (rc < 0)
		return rc;
	rc = fedrun_read_stream(fp, path, data, n);
	fclose(fp);
	return rc;
}
