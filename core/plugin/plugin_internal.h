/* SPDX-License-Identifier: Apache-2.0 */
/* What the loader offers the rest of libfedrun and no plugin or program. */
#ifndef FEDRUN_PLUGIN_INTERNAL_H
#define FEDRUN_PLUGIN_INTERNAL_H

#include <jansson.h>
#include "fedrun/registry.h"

/* The keys of a plugin's pipeline section that name code the plugin runs
 * (the python aggregator's "file"): like a "path" key, such a key is taken
 * only when the registry may load files (--allow-plugin-paths). Returns 0,
 * or FEDRUN_EPLUGIN naming `section_path`.key and the file. */
int registry_check_code_keys(const struct fedrun_registry *reg, const struct fedrun_plugin *p,
			     json_t *section, const char *section_path);

#endif
