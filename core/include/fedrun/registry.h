/* SPDX-License-Identifier: Apache-2.0 */
/* Finding and loading plugins.
 * Search order: an explicit file (the pipeline's "path" key), then each
 * directory of $FEDRUN_PLUGIN_PATH (a colon-separated list), then the
 * compiled-in plugin directory. Within a directory, files are visited in
 * name order. A file that fails any check is refused whole. */
#ifndef FEDRUN_REGISTRY_H
#define FEDRUN_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include "fedrun/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fedrun_registry;

/* Creates a registry searching $FEDRUN_PLUGIN_PATH and then `plugindir`
 * (NULL: the compiled-in directory, fedrun_plugin_dir()). */
int fedrun_registry_create(const char *plugindir, struct fedrun_registry **out);
/* Whether fedrun_registry_find may load a file it is given (a pipeline's
 * "path" key): off by default, since loading a plugin runs its code and a
 * pipeline file is data; fedrun's --allow-plugin-paths turns it on.
 * Relative entries of $FEDRUN_PLUGIN_PATH are ignored (with a warning on
 * standard error), as the dynamic linker ignores them for programs it
 * does not trust. fedrun_registry_open loads what it is asked to. A
 * directory searched, or holding a file loaded, that everyone may write to
 * is used with a warning on standard error, once per directory and
 * process. */
void fedrun_registry_allow_files(struct fedrun_registry *reg, bool allow);
/* Releases the registry's plugin files: one that no other registry of the
 * process holds is unloaded. Descriptors obtained from it must not be used
 * after. */
void fedrun_registry_destroy(struct fedrun_registry *reg);

/* Loads one file and checks every plugin in it. On success *n plugins are in
 * *plugins (borrowed, valid until destroy). On failure the message names the
 * file and both values of the failed check. A file is loaded and checked
 * once per process, whichever registry and whichever path (by device and
 * inode) reach it; its refusal is kept as well. */
int fedrun_registry_open(struct fedrun_registry *reg, const char *file,
			 const struct fedrun_plugin *const **plugins, uint32_t *n);

/* Finds the plugin of `kind` called `name`: in `file` when not NULL, else in
 * the search path. *found_file (may be NULL) receives the file (borrowed). */
int fedrun_registry_find(struct fedrun_registry *reg, uint32_t kind, const char *name,
			 const char *file, const struct fedrun_plugin **plugin,
			 const char **found_file);

/* Visits every plugin file in the search path, in search order: for each
 * plugin, visit(ud, file, plugin, NULL); for a refused file, visit(ud, file,
 * NULL, message). A plugin name seen earlier in the path shadows later ones;
 * `shadowed` tells. */
typedef void (*fedrun_registry_visit_fn)(void *ud, const char *file,
					 const struct fedrun_plugin *plugin,
					 const char *error, int shadowed);
int fedrun_registry_scan(struct fedrun_registry *reg, fedrun_registry_visit_fn visit,
			 void *ud);

/* "aggregator", "model", ...; "unknown" otherwise. */
const char *fedrun_kind_name(uint32_t kind);
/* The compiled-in plugin directory. */
const char *fedrun_plugin_dir(void);
/* The library's version string. */
const char *fedrun_version(void);

#ifdef __cplusplus
}
#endif
#endif
