/* SPDX-License-Identifier: Apache-2.0 */
/* Attacking clients, for robustness experiments: the pipeline's "attack"
 * section makes some clients send corrupted updates. Bit flipping and noise
 * are applied by the attacker to its own update; ALIE and IPM need the
 * honest updates of the round, so the (omniscient) attack is applied on the
 * server after the updates arrive and before aggregation. Internal. */
#ifndef FEDRUN_ATTACK_H
#define FEDRUN_ATTACK_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "fedrun/fedrun.h"

enum attack_type { ATTACK_NONE, ATTACK_BITFLIP, ATTACK_NOISE, ATTACK_ALIE, ATTACK_IPM };

struct attack {
	enum attack_type type;
	double scale;   /* bitflip: the update sent is −scale·Δ */
	double sigma;   /* noise: Δ + N(0, σ²) */
	double z;       /* alie: μ − z·σ; NAN = from n and f (Baruch et al.) */
	double epsilon; /* ipm: −ε·mean of the honest updates */
	uint8_t *is_attacker; /* per client */
	uint32_t count, num_clients;
};

/* Parses the "attack" section (or null) for num_clients clients. */
int attack_parse(json_t *section, uint32_t num_clients, uint64_t seed, struct attack *a);
void attack_fini(struct attack *a);

static inline bool attack_by(const struct attack *a, uint32_t client)
{
	return a->type != ATTACK_NONE && a->is_attacker[client];
}

/* Client side (bitflip, noise): transforms an attacker's update in place. */
void attack_client(const struct attack *a, uint64_t seed, uint32_t round, uint32_t client,
		   const struct fedrun_layout *l, const uint8_t *mask, float *delta);

/* Server side (alie, ipm): rewrites the attackers' tensors of the round's
 * updates (whose data the engine owns) from the honest ones. */
int attack_server(const struct attack *a, const struct fedrun_layout *l,
		  struct fedrun_update *u, uint32_t n);
/* Whether attack_server needs the round's updates all at once (alie and ipm
 * imitate the honest clients' mean), which rules out streaming them. */
bool attack_needs_all(const struct attack *a);

#endif
