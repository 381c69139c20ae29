/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun translate`'s input reader (fedrun_translate_read): the bytes of
 * standard input to batches of checked lines. The first byte picks the line
 * limit and the batch size; every line handed on must be NUL-free valid
 * UTF-8 within the limit, without newline, and numbered in order,
 * whatever the input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/bleu.h"
#include "fedrun/error.h"
#include "../../core/cli/cmd_translate.h"
#include "fuzz.h"

struct seen {
	size_t max;
	uint64_t next; /* the line number the next line must have, at least */
};

static int check(void *ctx, char **lines, const uint64_t *lineno, uint32_t n)
{
	struct seen *s = ctx;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = strlen(lines[i]), bad;
		if (len > s->max || lineno[i] < s->next || strchr(lines[i], '\n') ||
		    !fedrun_utf8_valid(lines[i], len, &bad))
			abort(); /* the reader broke its contract: a finding */
		s->next = lineno[i] + 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct seen s = {.max = 1 + (data[0] & 31) * 8, .next = 1};
	const uint32_t batch = 1 + (data[0] >> 5);
	FILE *in = fopen(fuzz_file(0, data + 1, size - 1), "rb");
	if (!in)
		abort();
	(void)fedrun_translate_read(in, s.max, batch, check, &s);
	fclose(in);
	fedrun_error_clear();
	return 0;
}
