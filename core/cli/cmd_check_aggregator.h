/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun check-aggregator`: runs an aggregator plugin through its ops on
 * synthetic updates and reports the properties of the FedAvg family it has
 * (see fedrun-check-aggregator(1)). */
#ifndef FEDRUN_CLI_CMD_CHECK_AGGREGATOR_H
#define FEDRUN_CLI_CMD_CHECK_AGGREGATOR_H

/* argv[0] is "check-aggregator". Writes one line per property on stdout and
 * any error on stderr; returns the exit status (0 every property checked
 * holds, 1 one fails, 2 usage, 3 the plugin could not be loaded) and never
 * exits. */
int fedrun_cmd_check_aggregator(int argc, char **argv);

#endif
