/* Loading pipeline files and applying --set overrides. */
#include "config.h"
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

int fedrun_pipeline_set(json_t *root, const char *assignment)
{
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment)
		return fedrun_error(FEDRUN_EINVAL, "--set %s: expected PATH=VALUE", assignment);
	char *path = strndup(assignment, (size_t)(eq - assignment));
	if (!path)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	/* strtok_r below skips empty components: "..", a leading or a trailing
	 * dot would otherwise set nothing, silently. */
	if (path[0] == '.' || path[strlen(path) - 1] == '.' || strstr(path, "..")) {
		free(path);
		return fedrun_error(FEDRUN_EINVAL, "--set %s: empty path component", assignment);
	}
	json_t *value = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	if (!value)
		value = json_string(eq + 1);
	if (!value) { /* JSON text holds UTF-8 only */
		free(path);
		return fedrun_error(FEDRUN_EINVAL, "--set %s: the value is not valid UTF-8", assignment);
	}
	int rc = 0;
	json_t *node = root;
	char *save = NULL;
	char *part = strtok_r(path, ".", &save);
	while (part) {
		char *next = strtok_r(NULL, ".", &save);
		if (json_is_array(node)) {
			char *end;
			long idx = strtol(part, &end, 10);
			if (*end || idx < 0 || (size_t)idx >= json_array_size(node)) {
				rc = fedrun_error(FEDRUN_EINVAL, "--set %s: '%s' is not an index of the array",
						  assignment, part);
				break;
			}
			if (!next) {
				if (json_array_set(node, (size_t)idx, value) < 0)
					rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
				break;
			}
			node = json_array_get(node, (size_t)idx);
		} else if (json_is_object(node)) {
			/* (jansson refuses a key that is not UTF-8, and frees
			 * what json_object_set_new was given) */
			if (!next) {
				if (json_object_set(node, part, value) < 0)
					rc = fedrun_error(FEDRUN_EINVAL, "--set %s: '%s' is not a valid key "
							  "(not UTF-8)", assignment, part);
				break;
			}
			json_t *child = json_object_get(node, part);
			if (!child) {
				if (json_object_set_new(node, part, json_object()) < 0) {
					rc = fedrun_error(FEDRUN_EINVAL, "--set %s: '%s' is not a valid key "
							  "(not UTF-8)", assignment, part);
					break;
				}
				child = json_object_get(node, part);
			}
			node = child;
		} else {
			rc = fedrun_error(FEDRUN_EINVAL, "--set %s: cannot descend into '%s', which is not an object",
					  assignment, part);
			break;
		}
		part = next;
	}
	json_decref(value);
	free(path);
	return rc;
}
