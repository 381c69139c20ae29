/* SPDX-License-Identifier: Apache-2.0 */
/* The text readers of the language models: a vocabulary file, and a
 * corpus read with the vocabulary built from the same text. */
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/text.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(0, data, size);
	struct fedrun_vocab *v = NULL;
	if (fedrun_vocab_load(path, &v) == 0)
		fedrun_vocab_destroy(v);
	v = NULL;
	struct fedrun_vocab_opts vo;
	memset(&vo, 0, sizeof vo);
	vo.max_size = 1000;
	const char *files[1] = {path};
	if (fedrun_vocab_build(files, 1, &vo, &v) == 0) {
		struct fedrun_corpus c;
		fedrun_corpus_init(&c);
		(void)fedrun_corpus_read(&c, v, path, &vo.text);
		fedrun_corpus_fini(&c);
		fedrun_vocab_destroy(v);
	}
	fedrun_error_clear();
	return 0;
}
