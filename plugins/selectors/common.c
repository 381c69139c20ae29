/* SPDX-License-Identifier: Apache-2.0 */
/* Shared internals of the selectors (see common.h): groups of tensors by
 * name prefix, the quantile that gives a group's threshold, and the
 * traffic metrics every selector reports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"

static const char *const default_prefixes[] = {"encoder.", "decoder."};
#define NDEFAULT (sizeof default_prefixes / sizeof default_prefixes[0])

static int check_prefixes(json_t *arr, const char *path, const char *key)
{
	char got[64];
	if (!json_is_array(arr))
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.%s: expected an array of name prefixes, got %s", path, key,
				    fedrun_json_describe(arr, got, sizeof got));
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *e = json_array_get(arr, i);
		if (!json_is_string(e) || json_string_length(e) == 0 ||
		    json_string_length(e) >= FEDRUN_NAME_MAX)
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.%s[%zu]: expected a non-empty name prefix shorter "
					    "than %d bytes, got %s",
					    path, key, i, FEDRUN_NAME_MAX,
					    fedrun_json_describe(e, got, sizeof got));
		for (size_t j = 0; j < i; j++)
			if (strcmp(json_string_value(e),
				   json_string_value(json_array_get(arr, j))) == 0)
				return fedrun_error(FEDRUN_ECONFIG,
						    "%s.%s[%zu]: \"%s\" repeats %s.%s[%zu]", path,
						    key, i, json_string_value(e), path, key, j);
	}
	return 0;
}

static uint32_t group_of(json_t *arr, const char *name)
{
	size_t np = json_array_size(arr);
	for (size_t k = 0; k < np; k++) {
		const char *p = json_string_value(json_array_get(arr, k));
		if (strncmp(name, p, strlen(p)) == 0)
			return (uint32_t)k;
	}
	return (uint32_t)np;
}

int selgroups_init(struct selgroups *g, json_t *section, const char *path, const char *key,
		   bool write_default, const struct fedrun_layout *layout)
{
	memset(g, 0, sizeof *g);
	json_t *arr = json_object_get(section, key), *def = NULL;
	int rc;
	if (arr) {
		if ((rc = check_prefixes(arr, path, key)) < 0)
			return rc;
	} else {
		if (!(def = json_array()))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		for (size_t k = 0; k < NDEFAULT; k++)
			if (json_array_append_new(def, json_string(default_prefixes[k])) < 0) {
				json_decref(def);
				return fedrun_error(FEDRUN_ENOMEM, "out of memory");
			}
		arr = def;
	}
	g->n = (uint32_t)json_array_size(arr) + 1;
	uint32_t nt = layout->n;
	uint32_t *of = malloc((nt ? nt : 1) * sizeof *of);
	g->start = calloc(g->n + 1, sizeof *g->start);
	g->member = malloc((nt ? nt : 1) * sizeof *g->member);
	if (!of || !g->start || !g->member) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	/* Counting sort of the tensors by group keeps layout order inside a
	 * group. */
	for (uint32_t i = 0; i < nt; i++) {
		of[i] = group_of(arr, layout->t[i].name);
		g->start[of[i] + 1]++;
	}
	for (uint32_t k = 0; k < g->n; k++)
		g->start[k + 1] += g->start[k];
	uint32_t *fill = calloc(g->n, sizeof *fill);
	if (!fill) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < nt; i++)
		g->member[g->start[of[i]] + fill[of[i]]++] = i;
	free(fill);
	free(of);
	of = NULL;
	if (def && write_default) {
		if (json_object_set_new(section, key, def) < 0) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto fail;
		}
	} else {
		json_decref(def);
	}
	return 0;
fail:
	free(of);
	json_decref(def);
	selgroups_fini(g);
	return rc;
}

void selgroups_fini(struct selgroups *g)
{
	free(g->start);
	free(g->member);
	memset(g, 0, sizeof *g);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double selgroups_quantile(double *v, uint32_t m, double q)
{
	qsort(v, m, sizeof *v, cmp_double);
	double h = q * (double)(m - 1);
	uint32_t lo = (uint32_t)floor(h);
	if (lo >= m - 1)
		return v[m - 1];
	double f = h - (double)lo;
	if (f == 0)
		return v[lo];
	double theta = v[lo] + f * (v[lo + 1] - v[lo]);
	/* Rounding must not carry θ outside the two order statistics it lies
	 * between, or a tensor could switch sides of the threshold. */
	return theta < v[lo] ? v[lo] : theta > v[lo + 1] ? v[lo + 1] : theta;
}

static int cmp_weighted(const void *a, const void *b)
{
	double x = ((const struct selgroups_weighted *)a)->value;
	double y = ((const struct selgroups_weighted *)b)->value;
	return (x > y) - (x < y);
}

double selgroups_weighted_threshold(struct selgroups_weighted *v, uint32_t m, double q)
{
	qsort(v, m, sizeof *v, cmp_weighted);
	uint64_t total = 0;
	for (uint32_t j = 0; j < m; j++)
		total += v[j].weight;
	double target = q * (double)total, best = INFINITY;
	uint64_t below = 0; /* C_j */
	uint32_t k = 0;
	for (uint32_t j = 0; j < m; j++) {
		/* Within a run of equal values the weight below a threshold is
		 * the same whatever the order qsort left them in. */
		if (j == 0 || v[j - 1].value < v[j].value) {
			double d = fabs((double)below - target);
			if (d < best) {
				best = d;
				k = j;
			}
		}
		below += v[j].weight;
	}
	return v[k].value;
}

int selgroups_report(const struct fedrun_host *host, const struct fedrun_layout *layout,
		     uint32_t client, const uint8_t *mask)
{
	uint64_t sent = 0, params = 0, all = 0;
	for (uint32_t i = 0; i < layout->n; i++) {
		all += layout->t[i].numel;
		if (mask[i]) {
			sent++;
			params += layout->t[i].numel;
		}
	}
	int rc = host->metric(host->ctx, "selector.sent", client, NULL, (double)sent);
	if (rc == 0)
		rc = host->metric(host->ctx, "selector.params_sent", client, NULL, (double)params);
	if (rc == 0)
		rc = host->metric(host->ctx, "selector.saving", client, NULL,
				  all ? 1.0 - (double)params / (double)all : 0.0);
	return rc;
}
