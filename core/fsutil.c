/* Directories, whole-file reads and atomic writes (see fedrun/io.h). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fedrun/error.h"
#include "fedrun/io.h"

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

int fedrun_atomic_commit(struct fedrun_atomic_file *af)
{
	int rc = 0;
	if (fflush(af->fp) != 0 || ferror(af->fp) || fsync(fileno(af->fp)) != 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot write '%s': %s", af->tmp, strerror(errno));
	if (fclose(af->fp) != 0 && rc == 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot write '%s': %s", af->tmp, strerror(errno));
	af->fp = NULL;
	if (rc == 0 && rename(af->tmp, af->path) != 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot rename '%s' to '%s': %s", af->tmp, af->path,
				  strerror(errno));
	if (rc == 0)
		sync_dir_of(af->path);
	else
		unlink(af->tmp);
	free(af->path);
	free(af->tmp);
	af->path = af->tmp = NULL;
	return rc;
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

int fedrun_read_stream(FILE *fp, const char *name, char **data, size_t *n)
{
	*data = NULL;
	*n = 0;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		len += fread(buf + len, 1, cap - len, fp);
		if (len < cap)
			break;
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

int fedrun_read_file(const char *path, char **data, size_t *n)
{
	*data = NULL;
	*n = 0;
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return fedrun_error(errno == ENOENT ? FEDRUN_ENOENT : FEDRUN_EIO,
				    "cannot open '%s': %s", path, strerror(errno));
	int rc = fedrun_read_stream(fp, path, data, n);
	fclose(fp);
	return rc;
}
