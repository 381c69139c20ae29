/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline's "secagg" section: the round engine runs secure
 * aggregation (core/secagg/) over the clients' updates, in one process,
 * and hands the aggregator one update, the survivors' weighted mean, in
 * place of the clients' (man 5 fedrun-pipeline, SECURE AGGREGATION;
 * fedrun-privacy(7)). Internal to core/engine/. */
#ifndef FEDRUN_ENGINE_SECURE_H
#define FEDRUN_ENGINE_SECURE_H

#include <stddef.h>
#include <stdint.h>
#include "engine.h"

/* The client of the one update a secure round's aggregator gets: none. The
 * aggregator's per-client metrics about it are not written. */
#define SECURE_CLIENT UINT32_MAX

struct secure;

/* Reads the pipeline's "secagg" section (null or absent: *out NULL) and
 * checks it against the run: a sum-based aggregator (fedavg, fedprox,
 * fedopt) weighing by samples or uniformly, no server-side attack, one
 * process (nranks: the run's processes), at least 2 clients a round.
 * Refused where fedrun was built without libsodium or GMP. */
int secure_create(struct run *r, uint32_t nranks, struct secure **out);
void secure_destroy(struct secure *s);

/* A round of m clients (ids `clients`, sorted): the protocol's first two
 * stages (keys and their shares), before the clients train. */
int secure_round_begin(struct secure *s, struct run *r, uint32_t round, const uint32_t *clients,
		       uint32_t m);
/* Client i of the round (its position in `clients`): quantises the
 * tensors of its update `delta` that mask marks and masks them into *msg
 * (malloc'd). n_samples: its training samples (its weight). Worker
 * threads may call it at once for different i. */
int secure_client_input(struct secure *s, uint32_t i, const uint8_t *mask, const float *delta,
			uint64_t n_samples, void **msg, size_t *len);
/* The server adds client i's masked input to its sum (in client order). */
int secure_server_add(struct secure *s, uint32_t i, const void *msg, size_t len);
/* Unmasking: writes the survivors' weighted mean of each tensor into mean
 * (a layout arena), points update->tensor at it (NULL: nobody sent the
 * tensor) and sets the update's weight (the sum of the survivors'); writes
 * the protocol's metrics and adds its traffic to r->bytes_push and
 * r->bytes_pull. */
int secure_round_finish(struct secure *s, struct run *r, float *mean, const float **tensor,
			struct fedrun_update *update);
/* Frees what a round holds (after it ends, or fails). */
void secure_round_end(struct secure *s);

#endif
