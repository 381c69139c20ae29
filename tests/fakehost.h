/* SPDX-License-Identifier: Apache-2.0 */
/* A host for testing plugins without the engine: records metrics, logs to
 * stderr, and optionally forwards loss_grad to a test function. */
#ifndef TESTS_FAKEHOST_H
#define TESTS_FAKEHOST_H

#include "fedrun/fedrun.h"

#define FAKEHOST_MAX_METRICS 4096

struct fakehost_metric {
	char name[64];
	int64_t client;
	char tensor[FEDRUN_NAME_MAX];
	double value;
};

struct fakehost {
	struct fedrun_host host;
	uint64_t seed;
	uint32_t nmetrics;
	struct fakehost_metric metrics[FAKEHOST_MAX_METRICS];
	int (*loss_grad)(void *ud, int64_t client, enum fedrun_split split, const float *params,
			 float *grad, double *loss);
	void *ud;
};

void fakehost_init(struct fakehost *fh, uint64_t seed);
/* The value of the last metric `name` for client and tensor (NULL: any);
 * NAN when absent. */
double fakehost_metric(const struct fakehost *fh, const char *name, int64_t client,
		       const char *tensor);
/* Loads plugin `name` of `kind` from the build's plugin directory. */
const struct fedrun_plugin *fakehost_plugin(struct fedrun_registry **reg, uint32_t kind,
					    const char *name);

#endif
