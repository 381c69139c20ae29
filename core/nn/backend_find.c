/* SPDX-License-Identifier: Apache-2.0 */
/* fedrun_backend_find: the backend a model asks for by name. Backends other
 * than the built-in CPU one are plugins (kind FEDRUN_KIND_BACKEND), loaded
 * from the plugin search path through a registry of their own that lives
 * as long as the process: a backend's ops may be in use by any model at any
 * time, so nothing here ever unloads them. */
#include "config.h"
#include <pthread.h>
#include <string.h>
#include "fedrun/backend.h"
#include "fedrun/error.h"
#include "fedrun/plugin.h"
#include "fedrun/registry.h"

static pthread_mutex_t find_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fedrun_registry *backend_reg;

int fedrun_backend_find(const char *name, const struct fedrun_backend_ops **out)
{
	if (!name || !out)
		return fedrun_error(FEDRUN_EINVAL, "backend: NULL name or result pointer");
	if (strcmp(name, "cpu") == 0) {
		*out = fedrun_backend_cpu();
		return 0;
	}
	pthread_mutex_lock(&find_lock);
	int rc = 0;
	if (!backend_reg)
		rc = fedrun_registry_create(NULL, &backend_reg);
	const struct fedrun_plugin *p = NULL;
	if (rc == 0)
		rc = fedrun_registry_find(backend_reg, FEDRUN_KIND_BACKEND, name, NULL, &p, NULL);
	pthread_mutex_unlock(&find_lock);
	if (rc < 0)
		return rc;
	const struct fedrun_backend_ops *ops = p->ops;
	/* Every member of ABI 1.0 (up to act_backward) is required. */
	if (!ops || ops->size < offsetof(struct fedrun_backend_ops, act_backward) +
				    sizeof ops->act_backward)
		return fedrun_error(FEDRUN_EABI,
				    "backend '%s': ops table of %u bytes, at least %zu required", name,
				    ops ? ops->size : 0,
				    offsetof(struct fedrun_backend_ops, act_backward) +
					sizeof ops->act_backward);
	*out = ops;
	return 0;
}
