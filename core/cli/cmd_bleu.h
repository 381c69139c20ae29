/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun bleu`: scores a hypothesis file against reference files with
 * BLEU and chrF exactly as sacreBLEU 2.6.0 does (see fedrun-bleu(1)). */
#ifndef FEDRUN_CLI_CMD_BLEU_H
#define FEDRUN_CLI_CMD_BLEU_H

/* argv[0] is "bleu". Prints the scores on stdout and any error on stderr;
 * returns the exit status (0, 1 for bad input, 2 for bad usage) and never
 * exits. */
int fedrun_cmd_bleu(int argc, char **argv);

#endif
