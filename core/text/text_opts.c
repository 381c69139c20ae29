/* SPDX-License-Identifier: Apache-2.0 */
/* How new text is read as a model's training text was: data.tokenizer and
 * data.lowercase of a data section, without the rest of it (whose files
 * fedrun score and fedrun sample neither need nor may still find). */
#include "config.h"
#include <stddef.h>
#include "fedrun/error.h"
#include "fedrun/opts.h"
#include "fedrun/text.h"
#include "text_internal.h"

struct text_keys {
	bool lowercase;
	int tokenizer;
};

static const struct fedrun_opt text_spec[] = {
    {"lowercase", FEDRUN_OPT_BOOL, offsetof(struct text_keys, lowercase), 0, 0, 0, 0, NULL, NULL},
    TEXT_TOKENIZER_OPT(struct text_keys, tokenizer),
    FEDRUN_OPT_END_,
};

int fedrun_text_opts_from_json(json_t *section, const char *path, struct fedrun_text_opts *out)
{
	json_t *keys = json_object();
	if (!keys)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = 0;
	for (const struct fedrun_opt *o = text_spec; o->key && rc == 0; o++) {
		json_t *v = json_object_get(section, o->key);
		if (v && json_object_set(keys, o->key, v) < 0)
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	struct text_keys k = {false, FEDRUN_TEXT_TOK_WHITESPACE};
	if (rc == 0)
		rc = fedrun_opts_parse(text_spec, keys, path ? path : "data", &k);
	json_decref(keys);
	if (rc == 0)
		*out = (struct fedrun_text_opts){.lowercase = k.lowercase,
						 .tokenizer = (uint32_t)k.tokenizer};
	return rc;
}
