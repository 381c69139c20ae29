/* SPDX-License-Identifier: Apache-2.0 */
/* Preloaded into fedrun by tests (LD_PRELOAD): the first time the process
 * opens a file whose path ends with $SIGNAL_ON_OPEN, it raises signal
 * $SIGNAL_ON_OPEN_SIG (a number; SIGTERM without it) in itself, just after
 * the open. A test then signals a run at a chosen point of its work (while
 * it reads its checkpoint, while it reads its metrics) instead of after a
 * guessed time, which a faster or slower machine would miss. */
#define _GNU_SOURCE 1 /* RTLD_NEXT, open64 */
#include "config.h"
/* Fortified headers define open() inline; this file defines it itself. */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static void maybe_raise(const char *path)
{
	static int done;
	const char *want = getenv("SIGNAL_ON_OPEN");
	if (done || !want || !*want || !path)
		return;
	size_t n = strlen(path), w = strlen(want);
	if (n < w || strcmp(path + n - w, want) != 0)
		return;
	done = 1;
	const char *sig = getenv("SIGNAL_ON_OPEN_SIG");
	raise(sig && *sig ? atoi(sig) : SIGTERM);
}

typedef int (*open_fn)(const char *, int, ...);
typedef FILE *(*fopen_fn)(const char *, const char *);

/* A mode follows the flags only when the call creates a file. */
static mode_t mode_arg(int flags, va_list ap)
{
#ifdef O_TMPFILE
	if ((flags & O_TMPFILE) == O_TMPFILE)
		return va_arg(ap, mode_t);
#endif
	return flags & O_CREAT ? va_arg(ap, mode_t) : 0;
}

/* Each wrapper calls libc's function, then maybe_raise once it opened. */
static int open_via(const char *name, const char *path, int flags, mode_t mode)
{
	open_fn real = (open_fn)(void (*)(void))dlsym(RTLD_NEXT, name);
	int fd = real ? real(path, flags, mode) : -1;
	if (fd >= 0)
		maybe_raise(path);
	return fd;
}

static FILE *fopen_via(const char *name, const char *path, const char *how)
{
	fopen_fn real = (fopen_fn)(void (*)(void))dlsym(RTLD_NEXT, name);
	FILE *fp = real ? real(path, how) : NULL;
	if (fp)
		maybe_raise(path);
	return fp;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return open_via("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return open_via("open64", path, flags, mode);
}

FILE *fopen(const char *path, const char *how)
{
	return fopen_via("fopen", path, how);
}

FILE *fopen64(const char *path, const char *how)
{
	return fopen_via("fopen64", path, how);
}
