/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun score` and `fedrun sample`: a language model's run on new text
 * (see fedrun-score(1), fedrun-sample(1)). */
#ifndef FEDRUN_CLI_CMD_LM_H
#define FEDRUN_CLI_CMD_LM_H

/* argv[0] is "score" / "sample". Write on stdout, errors on stderr; return
 * the exit status and never exit. */
int fedrun_cmd_score(int argc, char **argv);
int fedrun_cmd_sample(int argc, char **argv);

#endif
