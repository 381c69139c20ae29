/* SPDX-License-Identifier: Apache-2.0 */
/* A host for testing plugins without the engine (see fakehost.h). */
#include "config.h"
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "fakehost.h"

static void fh_log(void *ctx, enum fedrun_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int fh_error(void *ctx, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return fedrun_error(code, "%s", msg);
}

static int fh_metric(void *ctx, const char *name, int64_t client, const char *tensor, double value)
{
	struct fakehost *fh = ctx;
	if (fh->nmetrics == FAKEHOST_MAX_METRICS)
		return 0;
	struct fakehost_metric *m = &fh->metrics[fh->nmetrics++];
	snprintf(m->name, sizeof m->name, "%s", name);
	snprintf(m->tensor, sizeof m->tensor, "%s", tensor ? tensor : "");
	m->client = client;
	m->value = value;
	return 0;
}

static int fh_loss_grad(void *ctx, int64_t client, enum fedrun_split split, const float *params,
			float *grad, double *loss)
{
	struct fakehost *fh = ctx;
	if (!fh->loss_grad)
		return fedrun_error(FEDRUN_EUNSUPPORTED, "fake host: no loss_grad");
	return fh->loss_grad(fh->ud, client, split, params, grad, loss);
}

static uint32_t fh_threads(void *ctx)
{
	return 1;
}

static uint64_t fh_seed(void *ctx)
{
	return ((struct fakehost *)ctx)->seed;
}

void fakehost_init(struct fakehost *fh, uint64_t seed)
{
	memset(fh, 0, sizeof *fh);
	fh->seed = seed;
	fh->host = (struct fedrun_host){.size = sizeof fh->host, .abi_minor = FEDRUN_ABI_MINOR,
					.ctx = fh, .log = fh_log, .error = fh_error,
					.metric = fh_metric, .loss_grad = fh_loss_grad,
					.threads = fh_threads, .seed = fh_seed};
}

double fakehost_metric(const struct fakehost *fh, const char *name, int64_t client,
		       const char *tensor)
{
	for (uint32_t i = fh->nmetrics; i-- > 0;) {
		const struct fakehost_metric *m = &fh->metrics[i];
		if (strcmp(m->name, name) == 0 && m->client == client &&
		    (!tensor || strcmp(m->tensor, tensor) == 0))
			return m->value;
	}
	return NAN;
}

const struct fedrun_plugin *fakehost_plugin(struct fedrun_registry **reg, uint32_t kind,
					    const char *name)
{
	if (!*reg)
		ck_assert_int_eq(fedrun_registry_create(PLUGIN_DIR, reg), 0);
	const struct fedrun_plugin *p = NULL;
	int rc = fedrun_registry_find(*reg, kind, name, NULL, &p, NULL);
	ck_assert_msg(rc == 0, "cannot load %s: %s", name, fedrun_error_message());
	return p;
}
