/* SPDX-License-Identifier: Apache-2.0 */
/* Loading pipeline files and applying --set overrides. */
#include "config.h"
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "fedrun/io.h"
#include "fedrun/pipeline.h"

int fedrun_pipeline_load(const char *file, json_t **out)
{
	json_error_t jerr;
	char *text;
	size_t n;
	int rc = fedrun_read_file(file, &text, &n);
	if (rc < 0)
		return fedrun_error_wrap(rc, "%s: ", file);
	json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!root)
		return fedrun_error(FEDRUN_ECONFIG, "%s:%d:%d: %s", file, jerr.line, jerr.column,
				    jerr.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return fedrun_error(FEDRUN_ECONFIG, "%s: the pipeline must be a JSON object", file);
	}
	*out = root;
	return 0;
}

/* Walks `path` (dots between components, each a key of an object or an
 * index of an array) from root to the node that holds its last component:
 * *parent and *last (a pointer into path, which strtok_r cuts). With
 * create, missing objects on the way are made. `opt` and `arg` name the
 * option in messages ("--set", "a.b=1"). */
static int walk(json_t *root, char *path, bool create, const char *opt, const char *arg,
		json_t **parent, char **last)
{
	/* strtok_r below skips empty components: "..", a leading or a trailing
	 * dot would otherwise name another key, silently. */
	if (!*path || path[0] == '.' || path[strlen(path) - 1] == '.' || strstr(path, ".."))
		return fedrun_error(FEDRUN_EINVAL, "%s %s: empty path component", opt, arg);
	json_t *node = root;
	char *save = NULL;
	char *part = strtok_r(path, ".", &save);
	for (char *next; (next = strtok_r(NULL, ".", &save)); part = next) {
		json_t *child;
		if (json_is_array(node)) {
			char *end;
			long idx = strtol(part, &end, 10);
			if (*end || idx < 0 || (size_t)idx >= json_array_size(node))
				return fedrun_error(FEDRUN_EINVAL,
						    "%s %s: '%s' is not an index of the array", opt, arg,
						    part);
			child = json_array_get(node, (size_t)idx);
		} else if (json_is_object(node)) {
			child = json_object_get(node, part);
			if (!child && !create)
				return fedrun_error(FEDRUN_ECONFIG, "%s %s: the pipeline has no key '%s'",
						    opt, arg, part);
			/* (jansson refuses a key that is not UTF-8, and frees
			 * what json_object_set_new was given) */
			if (!child && (json_object_set_new(node, part, json_object()) < 0 ||
				       !(child = json_object_get(node, part))))
				return fedrun_error(FEDRUN_EINVAL,
						    "%s %s: '%s' is not a valid key (not UTF-8)", opt,
						    arg, part);
		} else {
			return fedrun_error(FEDRUN_EINVAL,
					    "%s %s: cannot descend into '%s', which is not an object",
					    opt, arg, part);
		}
		node = child;
	}
	if (!json_is_array(node) && !json_is_object(node))
		return fedrun_error(FEDRUN_EINVAL,
				    "%s %s: cannot descend into '%s', which is not an object", opt,
				    arg, part);
	*parent = node;
	*last = part;
	return 0;
}

int fedrun_pipeline_set(json_t *root, const char *assignment)
{
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment)
		return fedrun_error(FEDRUN_EINVAL, "--set %s: expected PATH=VALUE", assignment);
	char *path = strndup(assignment, (size_t)(eq - assignment));
	if (!path)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	json_t *value = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	if (!value)
		value = json_string(eq + 1);
	if (!value) { /* JSON text holds UTF-8 only */
		free(path);
		return fedrun_error(FEDRUN_EINVAL, "--set %s: the value is not valid UTF-8", assignment);
	}
	json_t *node;
	char *part;
	int rc = walk(root, path, true, "--set", assignment, &node, &part);
	if (rc == 0 && json_is_array(node)) {
		char *end;
		long idx = strtol(part, &end, 10);
		if (*end || idx < 0 || (size_t)idx >= json_array_size(node))
			rc = fedrun_error(FEDRUN_EINVAL, "--set %s: '%s' is not an index of the array",
					  assignment, part);
		else if (json_array_set(node, (size_t)idx, value) < 0)
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	} else if (rc == 0 && json_object_set(node, part, value) < 0) {
		rc = fedrun_error(FEDRUN_EINVAL, "--set %s: '%s' is not a valid key (not UTF-8)",
				  assignment, part);
	}
	json_decref(value);
	free(path);
	return rc;
}

int fedrun_pipeline_unset(json_t *root, const char *path_arg)
{
	char *path = strdup(path_arg);
	if (!path)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	json_t *node;
	char *part;
	int rc = walk(root, path, false, "--unset", path_arg, &node, &part);
	if (rc == 0 && json_is_array(node))
		rc = fedrun_error(FEDRUN_EINVAL,
				  "--unset %s: '%s' is an element of an array (set the array "
				  "with --set instead)",
				  path_arg, part);
	else if (rc == 0 && json_object_del(node, part) < 0)
		rc = fedrun_error(FEDRUN_ECONFIG, "--unset %s: the pipeline has no key '%s'",
				  path_arg, part);
	free(path);
	return rc;
}
