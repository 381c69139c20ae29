/* SPDX-License-Identifier: Apache-2.0 */
/* Attacking clients (see attack.h): bit flipping (−Δ), Gaussian noise,
 * "A Little Is Enough" (Baruch, Baruch, Goldberg 2019) and inner product
 * manipulation (Xie, Koyejo, Gupta 2020), the attacks of the MeritFed
 * experiments (Gorbunov 2024 slides). */
#include "config.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "attack.h"

struct attack_cfg {
	int type;
	double fraction, scale, sigma, z, epsilon;
	json_t *clients;
};

static const struct fedrun_opt attack_spec[] = {
	{"type", FEDRUN_OPT_CHOICE, offsetof(struct attack_cfg, type), FEDRUN_OPT_REQUIRED, 0, 0, 0,
	 NULL, "bitflip|noise|alie|ipm"},
	{"fraction", FEDRUN_OPT_NUMBER, offsetof(struct attack_cfg, fraction), FEDRUN_OPT_OPTIONAL, 0,
	 1, 0, NULL, NULL},
	{"clients", FEDRUN_OPT_ARRAY, offsetof(struct attack_cfg, clients), FEDRUN_OPT_OPTIONAL, 0, 0,
	 0, NULL, NULL},
	{"scale", FEDRUN_OPT_NUMBER, offsetof(struct attack_cfg, scale), 0, 0, 1e6, 1.0, NULL, NULL},
	{"sigma", FEDRUN_OPT_NUMBER, offsetof(struct attack_cfg, sigma), 0, 0, 1e6, 1.0, NULL, NULL},
	{"z", FEDRUN_OPT_NUMBER, offsetof(struct attack_cfg, z), FEDRUN_OPT_OPTIONAL, 0, 100, 0, NULL,
	 NULL},
	{"epsilon", FEDRUN_OPT_NUMBER, offsetof(struct attack_cfg, epsilon), 0, 0, 1e6, 0.1, NULL, NULL},
	FEDRUN_OPT_END_,
};

int attack_parse(json_t *section, uint32_t num_clients, uint64_t seed, struct attack *a)
{
	memset(a, 0, sizeof *a);
	a->z = NAN;
	if (!section || json_is_null(section))
		return 0;
	struct attack_cfg c = {.fraction = NAN};
	int rc = fedrun_opts_parse(attack_spec, section, "attack", &c);
	if (rc < 0)
		return rc;
	json_t *frac = json_object_get(section, "fraction");
	if (!!frac == !!c.clients)
		return fedrun_error(FEDRUN_ECONFIG, "attack: give either fraction or clients");
	if (!(a->is_attacker = calloc(num_clients, 1)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	a->num_clients = num_clients;
	if (c.clients) {
		size_t i;
		json_t *v;
		json_array_foreach(c.clients, i, v) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) >= num_clients) {
				attack_fini(a);
				return fedrun_error(FEDRUN_ECONFIG,
						    "attack.clients[%zu]: expected a client id in [0, %u]", i,
						    num_clients - 1);
			}
			a->is_attacker[json_integer_value(v)] = 1;
		}
	} else {
		/* ⌊fraction·K⌋ attackers, a random subset from (seed, ATTACK). */
		uint32_t m = (uint32_t)floor(json_number_value(frac) * num_clients + 1e-9);
		uint32_t *ids = malloc((size_t)num_clients * sizeof *ids);
		if (!ids) {
			attack_fini(a);
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		for (uint32_t k = 0; k < num_clients; k++)
			ids[k] = k;
		struct fedrun_rng rng;
		fedrun_rng_init(&rng, seed, FEDRUN_RNG_ATTACK, 0, 0);
		fedrun_rng_shuffle_u32(&rng, ids, num_clients);
		for (uint32_t k = 0; k < m; k++)
			a->is_attacker[ids[k]] = 1;
		free(ids);
	}
	for (uint32_t k = 0; k < num_clients; k++)
		a->count += a->is_attacker[k];
	a->type = (enum attack_type)(c.type + 1);
	a->scale = c.scale;
	a->sigma = c.sigma;
	a->epsilon = c.epsilon;
	if (json_object_get(section, "z"))
		a->z = c.z;
	return 0;
}

void attack_fini(struct attack *a)
{
	free(a->is_attacker);
	memset(a, 0, sizeof *a);
}

void attack_client(const struct attack *a, uint64_t seed, uint32_t round, uint32_t client,
		   const struct fedrun_layout *l, const uint8_t *mask, float *delta)
{
	struct fedrun_rng rng;
	fedrun_rng_init(&rng, seed, FEDRUN_RNG_ATTACK, round, client);
	for (uint32_t i = 0; i < l->n; i++) {
		if (!mask[i])
			continue;
		float *x = delta + l->t[i].offset;
		if (a->type == ATTACK_BITFLIP)
			fedrun_vec_scale(l->t[i].numel, (float)-a->scale, x);
		else if (a->type == ATTACK_NOISE)
			for (uint64_t j = 0; j < l->t[i].numel; j++)
				x[j] += (float)(a->sigma * fedrun_rng_normal(&rng));
	}
}

/* Φ^{-1}(p) by bisection on erfc: accurate to 1e-12, used once a round. */
static double normal_quantile(double p)
{
	double lo = -40, hi = 40;
	for (int i = 0; i < 200; i++) {
		double mid = 0.5 * (lo + hi);
		if (0.5 * erfc(-mid / sqrt(2.0)) < p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

bool attack_needs_all(const struct attack *a)
{
	return a->type == ATTACK_ALIE || a->type == ATTACK_IPM;
}

int attack_server(const struct attack *a, const struct fedrun_layout *l, struct fedrun_update *u,
		  uint32_t n)
{
	if (!attack_needs_all(a))
		return 0;
	uint32_t bad = 0;
	for (uint32_t k = 0; k < n; k++)
		bad += a->is_attacker[u[k].client];
	if (bad == 0 || bad == n)
		return 0; /* nobody to imitate or nobody to fool */
	double z = a->z;
	if (isnan(z)) {
		/* Baruch et al. 2019, Algorithm 3: s = ⌊n/2 + 1⌋ − f supporters
		 * needed, z = Φ^{-1}((n − s)/n). */
		double s = floor(n / 2.0 + 1) - bad;
		z = s < n ? normal_quantile((n - s) / (double)n) : 0;
	}
	for (uint32_t i = 0; i < l->n; i++) {
		uint64_t len = l->t[i].numel;
		for (uint64_t j = 0; j < len; j++) {
			double s1 = 0, s2 = 0;
			uint32_t m = 0;
			for (uint32_t k = 0; k < n; k++) {
				if (a->is_attacker[u[k].client] || !u[k].tensor[i])
					continue;
				double x = u[k].tensor[i][j];
				s1 += x;
				s2 += x * x;
				m++;
			}
			if (m == 0)
				continue;
			double mean = s1 / m, var = m > 1 ? (s2 - s1 * s1 / m) / (m - 1) : 0;
			float v = a->type == ATTACK_IPM ? (float)(-a->epsilon * mean)
							: (float)(mean - z * sqrt(var > 0 ? var : 0));
			for (uint32_t k = 0; k < n; k++)
				if (a->is_attacker[u[k].client] && u[k].tensor[i])
					((float *)u[k].tensor[i])[j] = v; /* the engine's buffer */
		}
	}
	return 0;
}
