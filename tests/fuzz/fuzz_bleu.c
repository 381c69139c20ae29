/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun bleu`: its reader (UTF-8 and NUL checks, line splitting) and
 * BLEU and chrF with every tokenizer, corpus and sentence level. The first
 * byte picks the options; the rest, cut at its first 0xff byte (never in
 * UTF-8), gives the reference and the hypothesis. (make fuzz closes the
 * target's standard output and error: -close_fd_mask=3.) */
#include <stdio.h>
#include <string.h>
#include "fedrun/error.h"
#include "../../core/cli/cmd_bleu.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned o = data[0];
	data++, size--;
	const uint8_t *cut = memchr(data, 0xff, size);
	size_t rl = cut ? (size_t)(cut - data) : size / 2;
	const char *ref = fuzz_file(0, data, rl);
	const char *hyp = fuzz_file(1, data + rl + (cut ? 1 : 0), size - rl - (cut ? 1 : 0));
	static const char *const toks[] = {"13a", "intl", "none", "13a"};
	char *argv[12];
	int argc = 0;
	char a0[] = "bleu", at[] = "-t", al[] = "-l", as[] = "-s", ab[] = "-b", ar[] = "-r";
	char tok[8];
	snprintf(tok, sizeof tok, "%s", toks[o & 3]);
	argv[argc++] = a0;
	argv[argc++] = at;
	argv[argc++] = tok;
	if (o & 4)
		argv[argc++] = al;
	if (o & 8)
		argv[argc++] = as;
	if (o & 16)
		argv[argc++] = ab;
	char r2[64];
	if (o & 32) { /* the reference twice: two references */
		snprintf(r2, sizeof r2, "%s", ref);
		argv[argc++] = ar;
		argv[argc++] = r2;
	}
	char p1[64], p2[64];
	snprintf(p1, sizeof p1, "%s", ref);
	snprintf(p2, sizeof p2, "%s", hyp);
	argv[argc++] = p1;
	argv[argc++] = p2;
	argv[argc] = NULL;
	(void)fedrun_cmd_bleu(argc, argv);
	fedrun_error_clear();
	return 0;
}
