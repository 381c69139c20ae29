/* SPDX-License-Identifier: Apache-2.0 */
/* The scratch files of the fuzz targets (fuzz.h). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../../core/cli/commands.h"
#include "fuzz.h"

static void cleanup(void);
static char paths[4][64];

static void cleanup(void)
{
	for (int i = 0; i < 4; i++)
		if (paths[i][0])
			unlink(paths[i]);
}

const char *fuzz_file(int which, const void *data, size_t size)
{
	if (!paths[which][0]) {
		snprintf(paths[which], sizeof paths[which], "/tmp/fedrun-fuzz-%d-XXXXXX", which);
		int fd = mkstemp(paths[which]);
		if (fd < 0)
			abort();
		close(fd);
		static int registered;
		if (!registered++)
			atexit(cleanup);
	}
	FILE *fp = fopen(paths[which], "wb");
	if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0)
		abort();
	return paths[which];
}

/* The command files linked into targets (cmd_translate.c) call main.c's
 * error report; main.c, which has main(), is not linked, and no target
 * runs a command's main function to its exit status. */
int fedrun_cli_fail(const char *cmd, int rc)
{
	(void)cmd;
	return rc < 0;
}
