/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun translate`: translates standard input with a run's model and a
 * checkpoint (see fedrun(1), TRANSLATE). */
#ifndef FEDRUN_CLI_CMD_TRANSLATE_H
#define FEDRUN_CLI_CMD_TRANSLATE_H

#include <stdint.h>
#include <stdio.h>

/* argv[0] is "translate". Writes translations on stdout and any error on
 * stderr; returns the exit status and never exits. */
int fedrun_cmd_translate(int argc, char **argv);

/* translate's input: reads `in` line by line (each at most max_bytes
 * without its newline; a trailing CR dropped; a NUL byte refused at once,
 * invalid UTF-8 refused, each naming its line) and hands emit batches of
 * `batch` lines (the last one shorter) with their line numbers; emit's
 * lines are freed after it returns. Returns 0, emit's error, or the
 * input's (FEDRUN_EINVAL with a message). */
int fedrun_translate_read(FILE *in, size_t max_bytes, uint32_t batch,
			  int (*emit)(void *ctx, char **lines, const uint64_t *lineno, uint32_t n),
			  void *ctx);

#endif
