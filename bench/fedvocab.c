/* SPDX-License-Identifier: Apache-2.0 */
/* bench/fedvocab: what the federated vocabulary costs at the scale of a
 * real run (FedNMT's reproduction: about 45,000 words, 2 clients, 2048-bit
 * keys): seconds for one fedrun_fedvocab_order on --words words.
 *
 * Usage: bench/fedvocab [--words N] [--parties N] [--threads N] [--bits N]
 * There is no peer: it prints our figure only. */
#include "config.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "fedrun/fedrun.h"
#include "fedrun/fedvocab.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	unsigned long nw = 45000, np = 2, threads = 2, bits = 2048;
	static const struct option lo[] = {{"words", required_argument, NULL, 'w'},
					   {"parties", required_argument, NULL, 'p'},
					   {"threads", required_argument, NULL, 't'},
					   {"bits", required_argument, NULL, 'b'},
					   {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		unsigned long v = ch == '?' ? 0 : strtoul(optarg, NULL, 10);
		if (ch == '?' || v == 0) {
			fprintf(stderr, "usage: bench/fedvocab [--words N] [--parties N] "
					"[--threads N] [--bits N]\n");
			return 2;
		}
		*(ch == 'w' ? &nw : ch == 'p' ? &np : ch == 't' ? &threads : &bits) = v;
	}
#ifdef _OPENMP
	omp_set_num_threads((int)threads);
#endif
	/* word i: party i % np surely has it (so the union is every word), the
	 * others with probability 1/2; counts 1 .. 1000 */
	char **words = calloc(nw, sizeof *words);
	struct fedrun_fedvocab_entry *e = calloc(np * nw, sizeof *e);
	struct fedrun_fedvocab_party *pt = calloc(np, sizeof *pt);
	struct fedrun_rng g;
	fedrun_rng_init(&g, 1, FEDRUN_RNG_DATA, 0, 0);
	for (unsigned long i = 0; i < nw; i++) {
		char buf[32];
		snprintf(buf, sizeof buf, "w%lu", i);
		words[i] = strdup(buf);
	}
	for (unsigned long p = 0; p < np; p++) {
		pt[p].entries = e + p * nw;
		for (unsigned long i = 0; i < nw; i++)
			if (i % np == p || fedrun_rng_below(&g, 2) == 0)
				e[p * nw + pt[p].n++] = (struct fedrun_fedvocab_entry){
				    words[i], 1 + fedrun_rng_below(&g, 1000)};
	}
	struct fedrun_fedvocab_opts o;
	fedrun_fedvocab_opts_init(&o);
	o.key_bits = (uint32_t)bits;
	o.threads = (uint32_t)threads;
	char **out;
	uint64_t n;
	double t0 = now();
	int rc = fedrun_fedvocab_order(pt, (uint32_t)np, &o, &out, &n, NULL);
	double dt = now() - t0;
	if (rc < 0) {
		fprintf(stderr, "bench/fedvocab: %s\n", fedrun_error_message());
		return 1;
	}
	printf("federated vocabulary: %lu words, %lu parties, %lu-bit key, %lu threads: "
	       "%.2f s (%.3f ms a word)\n",
	       nw, np, bits, threads, dt, dt * 1e3 / (double)nw);
	fedrun_fedvocab_words_free(out, n);
	for (unsigned long i = 0; i < nw; i++)
		free(words[i]);
	free(words);
	free(e);
	free(pt);
	return 0;
}
