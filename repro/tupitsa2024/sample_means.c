/* SPDX-License-Identifier: Apache-2.0 */
/* sample_means DATA_SEED DIM VALID_SAMPLES GROUP...: the sample means that
 * meanest draws (plugins/models/meanest.c: sample j of client k is
 * mean + std·N(0, 1) from the stream (data.seed, FEDRUN_RNG_DATA, j, k), the
 * validation samples from j = 2^31), one line per client ("c" and its
 * training mean), then "v" and the target's (client 0) validation mean.
 * GROUP is CLIENTS:SAMPLES:MEAN0,MEAN1,... (std 1).
 * Build: cc -O2 -I../.. -I../../core/include sample_means.c ../../core/util/rng.c -lm */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/rng.h"

static void mean_of(uint64_t seed, uint32_t client, uint32_t base, long count, int d,
		    const float *mu, double *out)
{
	for (int i = 0; i < d; i++)
		out[i] = 0;
	for (long s = 0; s < count; s++) {
		struct fedrun_rng r;
		fedrun_rng_init(&r, seed, FEDRUN_RNG_DATA, base + (uint32_t)s, client);
		for (int i = 0; i < d; i++)
			out[i] += (double)(mu[i] + (float)fedrun_rng_normal(&r));
	}
	for (int i = 0; i < d; i++)
		out[i] /= (double)count;
}

int main(int argc, char **argv)
{
	if (argc < 5)
		return fprintf(stderr, "usage: %s DATA_SEED DIM VALID_SAMPLES GROUP...\n", argv[0]), 2;
	uint64_t seed = strtoull(argv[1], NULL, 10);
	int d = atoi(argv[2]);
	long nval = atol(argv[3]);
	float *mu = calloc(d, sizeof *mu), *mu0 = calloc(d, sizeof *mu0);
	double *m = calloc(d, sizeof *m);
	uint32_t client = 0;
	for (int g = 4; g < argc; g++) {
		char *p = argv[g];
		long clients = strtol(p, &p, 10), samples = strtol(p + 1, &p, 10);
		p++;
		for (int i = 0; i < d; i++) {
			mu[i] = strtof(p, &p);
			if (*p == ',')
				p++;
			else if (i == 0) /* one number: every coordinate */
				for (int k = 1; k < d; k++)
					mu[k] = mu[0];
			if (i == 0 && *p == 0)
				break;
		}
		if (g == 4)
			memcpy(mu0, mu, d * sizeof *mu);
		for (long c = 0; c < clients; c++, client++) {
			mean_of(seed, client, 0, samples, d, mu, m);
			printf("c");
			for (int i = 0; i < d; i++)
				printf(" %.17g", m[i]);
			printf("\n");
		}
	}
	mean_of(seed, 0, UINT32_C(0x80000000), nval, d, mu0, m);
	printf("v");
	for (int i = 0; i < d; i++)
		printf(" %.17g", m[i]);
	printf("\n");
	return 0;
}
