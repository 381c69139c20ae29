/* SPDX-License-Identifier: Apache-2.0 */
/* main() for the fuzz targets without libFuzzer: runs the target once on
 * each file named (directories: each file in them), so that `make check`
 * replays the seeds and every input that once crashed (tests/fuzz/corpus/
 * and tests/fuzz/regress/). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "%s: cannot open\n", path);
		return 1;
	}
	size_t cap = 4096, n = 0;
	unsigned char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += got;
		if (n == cap) {
			unsigned char *more = realloc(buf, cap *= 2);
			if (!more)
				free(buf);
			buf = more;
		}
	}
	fclose(fp);
	if (!buf)
		return 1;
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int bad = 0, runs = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			struct dirent **list;
			int n = scandir(argv[i], &list, NULL, alphasort);
			for (int k = 0; k < n; k++) {
				char path[4096];
				snprintf(path, sizeof path, "%s/%s", argv[i], list[k]->d_name);
				if (list[k]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
					bad |= run_file(path);
					runs++;
				}
				free(list[k]);
			}
			free(list);
		} else {
			bad |= run_file(argv[i]);
			runs++;
		}
	}
	printf("%s: %d inputs\n", argv[0], runs);
	return bad;
}
