/* SPDX-License-Identifier: Apache-2.0 */
/* A run over several processes (ranks): rank 0 is the server, and every
 * rank, rank 0 included, trains the sampled clients it owns (client c
 * belongs to rank c mod N, for the whole run, so that what a client keeps
 * between rounds stays where it trains). The bytes go through a transport
 * plugin (fedrun/transport.h), loaded when a launcher started the process.
 * See fedrun(1), RUNNING ON MANY NODES, and the README, "Running at scale".
 *
 * Every wait of a worker rank is a broadcast from rank 0, and rank 0
 * receives everything the workers send before it does anything else, so
 * that rank 0 can always end the run with one broadcast. */
#ifndef FEDRUN_DIST_H
#define FEDRUN_DIST_H

#include "engine.h"

/* dist_agree and dist_start on a worker rank: the run stopped on rank 0's
 * word (rank 0 reports why); the worker ends with status 0. When a signal
 * stopped it, the workers get FEDRUN_EINTERRUPTED instead, as rank 0 does. */
#define DIST_QUIT 1

/* Joins the job when a launcher started this process (Open MPI's, PMI or
 * PMIx's variables; FEDRUN_TRANSPORT=mpi or none overrides): r->dist with
 * more than one rank, else NULL. The transport comes from a registry of
 * its own that lives as long as the process (MPI is joined once). */
int dist_open(struct run *r);
void dist_close(struct run *r);
/* 0 in one process. */
uint32_t dist_rank(const struct run *r);
/* 1 in one process. */
uint32_t dist_nranks(const struct run *r);
/* Whether this process trains `client`. */
bool dist_owns(const struct run *r, uint32_t client);
/* Worker ranks past setting up (their warnings are their own; before,
 * rank 0 logs the same). */
bool dist_worker_logging(const struct run *r);
/* Worker ranks: the private directory their plugins write into. */
const char *dist_scratch(const struct run *r);

/* Collective: every rank's status after setting up. Rank 0 gets its own
 * error, or the first failed worker's (named by rank); a worker gets
 * DIST_QUIT when any rank failed, else 0. */
int dist_agree(struct run *r, int rc);

/* Collective, once rank 0 holds θ: the workers get what they start from
 * (the checkpoint rank 0 resumes from, `ckpt`, or θ_0 for push
 * selection) and report back. `rc` is a worker's status so far. */
int dist_start(struct run *r, const char *ckpt, int rc);

/* Rank 0: announces round `round` (its m clients, chunks of `chunk`) with
 * the push message (and θ_{t−1} for push selection). */
int dist_round(struct run *r, const struct round_ctx *ctx, uint32_t m, uint32_t chunk);
/* Rank 0 (and in one process): trains the clients of ctx->clients[0 .. n)
 * it owns, then receives the others' pull messages, update counts and
 * metric events into ctx, and returns the first failure in client order;
 * `more`: another chunk of the round follows (the workers wait for the
 * word to train it). */
int dist_train_chunk(struct run *r, struct round_ctx *ctx, uint32_t n, bool more);

/* Rank 0, before a checkpoint: the workers' client state (optimizer
 * state, step counts, own parameters) and the plugin state they changed;
 * checkpoint_write then writes them. dist_gather_done frees them. */
int dist_gather_state(struct run *r);
void dist_gather_done(struct run *r);

/* Rank 0, at a round's end: the lowest worker rank that a signal (SIGINT,
 * SIGTERM: opts->interrupt) reached by the time it answered the round's
 * last chunk, or UINT32_MAX. Rank 0's own signal is the caller's to read. */
uint32_t dist_interrupted_rank(const struct run *r);

/* Rank 0: the run is over (rc 0), failed (the workers end quietly), or was
 * interrupted (rc FEDRUN_EINTERRUPTED, after a checkpoint: the workers
 * end with the same code). Once. */
void dist_stop(struct run *r, int rc);

/* Worker ranks: follows rank 0's rounds until it stops the run. Returns
 * DIST_QUIT then, or a transport error. */
int dist_serve(struct run *r);

#endif
