/* Subcommands of the fedrun command, each in its own file. */
#ifndef FEDRUN_COMMANDS_H
#define FEDRUN_COMMANDS_H

/* Maps a FEDRUN_E* code to the documented exit status. */
int fedrun_exit_status(int rc);

#endif
