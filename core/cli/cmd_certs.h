/* SPDX-License-Identifier: Apache-2.0 */
#ifndef FEDRUN_CMD_CERTS_H
#define FEDRUN_CMD_CERTS_H

/* fedrun certs init|server|client|revoke|crl DIR ...: see fedrun-certs(1). */
int fedrun_cmd_certs(int argc, char **argv);

#endif
