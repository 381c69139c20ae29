/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline reader and the engine's validation of its own sections:
 * the first line of the input is a --set assignment (or, starting with
 * '-', an --unset path), the rest the pipeline file. Plugins are not
 * created (their option parsing is fedrun_opts_parse, which the core
 * sections exercise). */
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/pipeline.h"
#include "../../core/pipeline/run_cfg.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t first = nl ? (size_t)(nl - data) : 0;
	char set[256];
	size_t sl = first < sizeof set - 1 ? first : sizeof set - 1;
	memcpy(set, data, sl);
	set[sl] = '\0';
	size_t skip = nl ? first + 1 : 0;
	json_t *root;
	if (fedrun_pipeline_load(fuzz_file(0, data + skip, size - skip), &root) == 0) {
		if (sl > 0 && !memchr(set, '\0', sl))
			(void)(set[0] == '-' ? fedrun_pipeline_unset(root, set + 1)
					     : fedrun_pipeline_set(root, set));
		struct run_cfg cfg;
		(void)run_config_parse(root, &cfg);
		json_decref(root);
	}
	fedrun_error_clear();
	return 0;
}
