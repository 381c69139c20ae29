/* SPDX-License-Identifier: Apache-2.0 */
/* Test plugin: a model with the domain-expert op gate_fit but without
 * gate_size, gate_evaluate and gate_translate (ABI 1.6: all four or none).
 * The required model ops are stubs: the loader refuses it before any runs. */
#include "common.h"

static int m_create(const struct fedrun_host *h, json_t *mc, json_t *dc, void **m)
{
	*m = NULL;
	return 0;
}

static const struct fedrun_layout *m_layout(void *m)
{
	return NULL;
}

static int m_init(void *m, uint64_t seed, float *p)
{
	return 0;
}

static uint32_t m_clients(void *m)
{
	return 0;
}

static uint64_t m_size(void *m, uint32_t c)
{
	return 0;
}

static int m_train(void *m, void *w, const struct fedrun_train_args *a, float *p,
		   struct fedrun_train_stats *s)
{
	return 0;
}

static int m_evaluate(void *m, void *w, const float *p, enum fedrun_split sp, int64_t c,
		      struct fedrun_eval *o)
{
	return 0;
}

static int m_gate_fit(void *m, void *w, const float *g, const float *p, uint32_t c,
		      const struct fedrun_gate_opts *o, float *gate, struct fedrun_eval *out)
{
	return 0;
}

static const struct fedrun_model_ops ops = {.size = sizeof ops, .create = m_create,
					    .destroy = t_destroy, .layout = m_layout,
					    .init_params = m_init, .num_clients = m_clients,
					    .client_size = m_size, .train = m_train,
					    .evaluate = m_evaluate, .gate_fit = m_gate_fit};
static const struct fedrun_plugin desc =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_MODEL, "half_gate", "0", "test", &ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &desc : NULL;
}
