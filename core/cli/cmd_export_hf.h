/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun export-hf`: an encoder run's model as a Hugging Face model
 * directory (see fedrun-export-hf(1)). */
#ifndef FEDRUN_CLI_CMD_EXPORT_HF_H
#define FEDRUN_CLI_CMD_EXPORT_HF_H

/* argv[0] is "export-hf". Errors on stderr; returns the exit status and
 * never exits. */
int fedrun_cmd_export_hf(int argc, char **argv);

#endif
