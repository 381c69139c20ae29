/* What the engine's files (core/engine/) give each other: wiring the
 * plugins of a pipeline into a run, the phases after the last round, and
 * client names. Built on the run's API (run/run.h); nothing below the
 * engine includes this header. */
#ifndef FEDRUN_ENGINE_H
#define FEDRUN_ENGINE_H

#include "run/run.h"

/* ---- wiring.c: the host table and the plugins of a run ---- */

void run_host_init(struct run *r);
int run_plugins_create(struct run *r, struct fedrun_registry *reg);
void run_plugins_destroy(struct run *r);

/* ---- after.c: fine-tuning and the model-by-domain table ---- */

/* The name of client k: the model's client_name op, else "client<k>". */
const char *run_client_name(struct run *r, uint32_t k, char *buf, size_t len);
/* Resolves finetune.clients against the model's clients (r->ft_list). */
int run_finetune_clients(struct run *r);
/* Fine-tuning and the model-by-domain table, after the last round. */
int run_after(struct run *r);
/* Whether the outputs of run_after (fine-tuned models, the table) exist. */
bool run_after_done(const struct run *r);

#endif
