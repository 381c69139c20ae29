/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun export-hf RUN DIR`: the model of an encoder run (its final
 * parameters or a checkpoint's, the frozen tensors of RUN/hf/, LoRA
 * adapters merged) written as a Hugging Face model directory, so that
 * transformers' from_pretrained(DIR) loads what fedrun fine-tuned. The work
 * is plugins/models/encoder/hf.c's (no plugin is loaded). */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/fedrun.h"
#include "commands.h"
#include "cmd_export_hf.h"
#include "run_model.h"
#include "../../plugins/models/encoder/hf.h"

static void usage(FILE *fp)
{
	fputs("Usage: fedrun export-hf [OPTIONS] RUN_DIR DIR\n"
	      "Writes the model of an encoder run as a Hugging Face model directory DIR\n"
	      "(config.json, model.safetensors, vocab.txt, tokenizer files), LoRA adapters\n"
	      "merged. DIR must not exist (or be empty).\n"
	      "\n"
	      "  -c, --checkpoint FILE   parameters (default: RUN_DIR/final.safetensors)\n"
	      "  -r, --round N           RUN_DIR/checkpoints/round-N.safetensors\n"
	      "  -h, --help              this help\n"
	      "\n"
	      "Exit status: 0 written, 1 an I/O error, 2 usage or input error.\n"
	      "See fedrun-export-hf(1).\n",
	      fp);
}

int fedrun_cmd_export_hf(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"checkpoint", required_argument, NULL, 'c'},
		{"round", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	const char *ckpt = NULL;
	double round = -1;
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "c:r:h", longopts, NULL)) != -1) {
		switch (o) {
		case 'c': ckpt = optarg; break;
		case 'r':
			if (run_model_parse_num("export-hf", "--round", optarg, 0, 1e9, &round) < 0)
				return 2;
			if (round != (double)(unsigned)round) {
				fprintf(stderr, "fedrun export-hf: --round: '%s' is not a whole number\n",
					optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "fedrun export-hf: expected RUN_DIR and DIR\n");
		usage(stderr);
		return 2;
	}
	if (ckpt && round >= 0) {
		fprintf(stderr, "fedrun export-hf: --checkpoint and --round: give one\n");
		return 2;
	}
	const char *run = argv[optind], *dir = argv[optind + 1];
	char path[4200];
	if (round >= 0) {
		snprintf(path, sizeof path, "%s/checkpoints/round-%06u.safetensors", run,
			 (unsigned)round);
		ckpt = path;
	}
	int rc = hf_export_run(run, ckpt, dir);
	if (rc < 0)
		return fedrun_cli_fail("export-hf", rc);
	return 0;
}
