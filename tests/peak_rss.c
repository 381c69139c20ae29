/* SPDX-License-Identifier: Apache-2.0 */
/* peak_rss COMMAND [ARG...]: runs COMMAND, then prints its peak resident
 * memory in KiB (getrusage's ru_maxrss, from wait4) on file descriptor 3,
 * and exits with its status. For tests of memory that must not grow. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: peak_rss COMMAND [ARG...]\n");
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("peak_rss: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror("peak_rss: exec");
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("peak_rss: wait4");
		return 2;
	}
	FILE *out = fdopen(3, "w");
	if (!out) {
		perror("peak_rss: file descriptor 3");
		return 2;
	}
	fprintf(out, "%ld\n", ru.ru_maxrss);
	fclose(out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
