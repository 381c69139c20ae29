/* `fedrun translate`: translates standard input with a run's model and a
 * checkpoint (see fedrun(1), TRANSLATE). */
#ifndef FEDRUN_CLI_CMD_TRANSLATE_H
#define FEDRUN_CLI_CMD_TRANSLATE_H

/* argv[0] is "translate". Writes translations on stdout and any error on
 * stderr; returns the exit status and never exits. */
int fedrun_cmd_translate(int argc, char **argv);

#endif
