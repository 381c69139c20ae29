/* SPDX-License-Identifier: Apache-2.0 */
/* Subcommands of the fedrun command, each in its own file. */
#ifndef FEDRUN_COMMANDS_H
#define FEDRUN_COMMANDS_H

#include "fedrun/host.h"

/* Maps a FEDRUN_E* code to the documented exit status. */
int fedrun_exit_status(int rc);

/* Prints the last error as "fedrun CMD: message" ("fedrun: message" for
 * cmd NULL) on stderr and returns the exit status of rc. */
int fedrun_cli_fail(const char *cmd, int rc);

/* The host's log and error for the subcommands that create plugins outside
 * a run (translate, check-aggregator): warnings and errors to stderr, the
 * error recorded as fedrun_error() does. */
void fedrun_cli_log(void *ctx, enum fedrun_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int fedrun_cli_error(void *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
