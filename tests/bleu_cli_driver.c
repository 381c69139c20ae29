/* SPDX-License-Identifier: Apache-2.0 */
/* Runs `fedrun bleu` (core/cli/cmd_bleu.c) as a program of its own, so that
 * tests/test_bleu_cli.sh can check its output and exit statuses before the
 * fedrun command links it. */
#include "config.h"
#include "../core/cli/cmd_bleu.h"

int main(int argc, char **argv)
{
	char name[] = "bleu";
	argv[0] = name;
	return fedrun_cmd_bleu(argc, argv);
}
