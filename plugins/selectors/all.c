/* SPDX-License-Identifier: Apache-2.0 */
/* all: every tensor of every update travels (the FedAvg default). */
#include <string.h>
#include <fedrun/fedrun.h>

static int all_create(const struct fedrun_host *host, json_t *config,
		      const struct fedrun_layout *layout, void **state)
{
	static const struct fedrun_opt spec[] = {FEDRUN_OPT_END_};
	*state = (void *)layout;
	return fedrun_opts_parse(spec, config, "selector", NULL);
}

static void all_destroy(void *state)
{
	(void)state;
}

static int all_select(void *state, const struct fedrun_round_info *round, uint32_t client,
		      const float *before, const float *after, uint8_t *mask)
{
	memset(mask, 1, round->layout->n);
	return 0;
}

static const struct fedrun_selector_ops all_ops = {
	.size = sizeof(struct fedrun_selector_ops),
	.create = all_create,
	.destroy = all_destroy,
	.select = all_select,
};

static const struct fedrun_plugin all_plugin = FEDRUN_PLUGIN_INIT(
	FEDRUN_KIND_SELECTOR, "all", "1.0.0", "send every tensor", &all_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &all_plugin : NULL;
}
