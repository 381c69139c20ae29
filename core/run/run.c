/* SPDX-License-Identifier: Apache-2.0 */
/* The run layer's services (run/run.h): the clock, the workers and their
 * thread pool, and the state kept of clients across rounds. */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "run/run.h"

double run_now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* ---- client state kept across rounds --------------------------------- */

struct client_state *run_client_state(struct run *r, uint32_t client, int *rc)
{
	uint32_t lo = 0, hi = r->ncstates;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (r->cstates[mid].client < client)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->ncstates && r->cstates[lo].client == client)
		return &r->cstates[lo];
	struct client_state *cs = realloc(r->cstates, (r->ncstates + 1) * sizeof *cs);
	if (!cs) {
		*rc = fedrun_error(FEDRUN_ENOMEM, "out of memory for client state");
		return NULL;
	}
	r->cstates = cs;
	memmove(&cs[lo + 1], &cs[lo], (r->ncstates - lo) * sizeof *cs);
	r->ncstates++;
	cs[lo] = (struct client_state){.client = client};
	/* Its optim and params come with cstore_checkout. */
	return &cs[lo];
}

/* ---- a small thread pool: parallel for with deterministic errors ------ */

struct pfor {
	struct run *r;
	uint32_t n;
	atomic_uint next;
	int (*fn)(struct run *r, struct worker *w, uint32_t i, void *ctx);
	void *ctx;
	int *rcs; /* per item */
	char **msgs;
	uint32_t omp_threads;
};

struct pfor_arg {
	struct pfor *pf;
	struct worker *w;
};

static void *pfor_thread(void *p)
{
	struct pfor_arg *a = p;
	struct pfor *pf = a->pf;
#ifdef _OPENMP
	omp_set_num_threads((int)pf->omp_threads);
#endif
	for (;;) {
		uint32_t i = atomic_fetch_add(&pf->next, 1);
		if (i >= pf->n)
			break;
		fedrun_error_clear();
		int rc = pf->fn(pf->r, a->w, i, pf->ctx);
		if (rc < 0) {
			pf->rcs[i] = rc;
			pf->msgs[i] = strdup(fedrun_error_message());
			atomic_store(&pf->next, pf->n); /* stop handing out work */
		}
	}
	return NULL;
}

/* The threads of workers 1 .. n, started when a phase first needs them and
 * kept until run_workers_destroy: a run of many small phases (a round of
 * 30,000 clients trains in chunks of 8) would otherwise start and join a
 * thread each time, which costs some 90 ms a thread under AddressSanitizer
 * (its thread set-up and tear-down map and unmap memory). */
struct run_pool {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	uint32_t n;	      /* threads started: workers 1 .. n */
	pthread_t *tids;      /* [nworkers] */
	struct pool_arg *pa;  /* [nworkers] */
	uint64_t gen;	      /* the phase published last */
	uint32_t nt;	      /* workers 0 .. nt-1 take part in it */
	uint32_t busy;	      /* of workers 1 .. nt-1, those not yet done */
	struct pfor_arg *args; /* the phase's, per worker */
	bool quit;
};

struct pool_arg {
	struct run_pool *pool;
	uint32_t t;
	uint64_t seen; /* the last phase it looked at */
};

static void *pool_thread(void *p)
{
	struct pool_arg *a = p;
	struct run_pool *pool = a->pool;
	pthread_mutex_lock(&pool->mu);
	for (;;) {
		while (!pool->quit && pool->gen == a->seen)
			pthread_cond_wait(&pool->go, &pool->mu);
		if (pool->quit)
			break;
		a->seen = pool->gen;
		if (a->t >= pool->nt)
			continue;
		struct pfor_arg *arg = &pool->args[a->t];
		pthread_mutex_unlock(&pool->mu);
		pfor_thread(arg);
		pthread_mutex_lock(&pool->mu);
		if (--pool->busy == 0)
			pthread_cond_signal(&pool->done);
	}
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

static void pool_destroy(struct run *r)
{
	struct run_pool *pool = r->pool;
	if (!pool)
		return;
	pthread_mutex_lock(&pool->mu);
	pool->quit = true;
	pthread_cond_broadcast(&pool->go);
	pthread_mutex_unlock(&pool->mu);
	for (uint32_t t = 1; t <= pool->n; t++)
		pthread_join(pool->tids[t], NULL);
	pthread_cond_destroy(&pool->go);
	pthread_cond_destroy(&pool->done);
	pthread_mutex_destroy(&pool->mu);
	free(pool->tids);
	free(pool->pa);
	free(pool);
	r->pool = NULL;
}

/* Workers 1 .. want-1 started (as many as the system gives); returns the
 * workers there are, the calling thread's included. */
static uint32_t pool_grow(struct run *r, uint32_t want)
{
	if (want <= 1)
		return 1;
	struct run_pool *pool = r->pool;
	if (!pool) {
		pool = calloc(1, sizeof *pool);
		if (!pool)
			return 1;
		pool->tids = calloc(r->nworkers, sizeof *pool->tids);
		pool->pa = calloc(r->nworkers, sizeof *pool->pa);
		if (!pool->tids || !pool->pa) {
			free(pool->tids);
			free(pool->pa);
			free(pool);
			return 1;
		}
		pthread_mutex_init(&pool->mu, NULL);
		pthread_cond_init(&pool->go, NULL);
		pthread_cond_init(&pool->done, NULL);
		r->pool = pool;
	}
	while (pool->n + 1 < want) {
		uint32_t t = pool->n + 1;
		/* no phase runs now: gen is stable, and the thread waits for
		 * the next one */
		pool->pa[t] = (struct pool_arg){pool, t, pool->gen};
		if (pthread_create(&pool->tids[t], NULL, pool_thread, &pool->pa[t]) != 0)
			break;
		pool->n = t;
	}
	return pool->n + 1;
}

/* Runs items [first, end) of pf on workers 0 .. nt-1, each with `omp`
 * OpenMP threads; the calling thread is worker 0, which runs them all if
 * no other thread starts. The items' errors land in pf->rcs. */
static void pfor_phase(struct pfor *pf, uint32_t first, uint32_t end, uint32_t nt, uint32_t omp,
		       struct pfor_arg *args)
{
	struct run *r = pf->r;
	atomic_store(&pf->next, first);
	pf->n = end;
	pf->omp_threads = omp;
	uint32_t have = pool_grow(r, nt);
	if (nt > have)
		nt = have;
	for (uint32_t t = 0; t < nt; t++)
		args[t] = (struct pfor_arg){pf, &r->workers[t]};
	struct run_pool *pool = r->pool;
	if (nt > 1) {
		pthread_mutex_lock(&pool->mu);
		pool->args = args;
		pool->nt = nt;
		pool->busy = nt - 1;
		pool->gen++;
		pthread_cond_broadcast(&pool->go);
		pthread_mutex_unlock(&pool->mu);
	}
#ifdef _OPENMP
	int saved = omp_get_max_threads();
#endif
	pfor_thread(&args[0]);
#ifdef _OPENMP
	omp_set_num_threads(saved);
#endif
	if (nt > 1) {
		pthread_mutex_lock(&pool->mu);
		while (pool->busy > 0)
			pthread_cond_wait(&pool->done, &pool->mu);
		pthread_mutex_unlock(&pool->mu);
	}
}

int run_parallel_for(struct run *r, uint32_t n,
			int (*fn)(struct run *, struct worker *, uint32_t, void *), void *ctx)
{
	if (n == 0)
		return 0;
	uint32_t nt = r->nworkers < n ? r->nworkers : n;
	uint32_t threads = r->opts->threads ? r->opts->threads : 1;
	struct pfor pf = {.r = r, .n = n, .fn = fn, .ctx = ctx};
	atomic_init(&pf.next, 0);
	pf.rcs = calloc(n, sizeof *pf.rcs);
	pf.msgs = calloc(n, sizeof *pf.msgs);
	struct pfor_arg *args = calloc(nt, sizeof *args);
	int rc = 0;
	if (!pf.rcs || !pf.msgs || !args) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	/* The items that fill every worker run with threads/nt threads each;
	 * the rest (n mod nt, fewer than the workers) then run with their
	 * share of all the threads, where that is more: the fifth of five
	 * clients on two threads trains on both rather than beside an idle
	 * worker. Items give the same bits on any number of threads. */
	uint32_t per = threads / nt ? threads / nt : 1, rest = n % nt;
	uint32_t split = rest && threads / rest > per ? n - rest : n;
	pfor_phase(&pf, 0, split, nt, per, args);
	uint32_t bad = 0; /* the first item that failed, or n */
	while (bad < split && pf.rcs[bad] >= 0)
		bad++;
	if (bad == split && split < n) { /* none of the first phase failed */
		pfor_phase(&pf, split, n, rest, threads / rest, args);
		while (bad < n && pf.rcs[bad] >= 0)
			bad++;
	}
	if (bad < n)
		rc = fedrun_error(pf.rcs[bad], "%s", pf.msgs[bad] ? pf.msgs[bad] : "");
out:
	if (pf.msgs)
		for (uint32_t i = 0; i < n; i++)
			free(pf.msgs[i]);
	free(pf.msgs);
	free(pf.rcs);
	free(args);
	return rc;
}

/* Chooses max(1, floor(C·K)) clients without replacement, sorted by id,
 * among the K clients that have training data (evaluation-only clients,
 * client_size 0, are never sampled). */
uint32_t run_clients_per_round(const struct run *r)
{
	uint32_t want = (uint32_t)floor(r->cfg.fraction * r->ntrainable + 1e-9);
	return r->ntrainable == 0 ? 0 : want < 1 ? 1 : want;
}

/* ---- workers ---------------------------------------------------------- */

int run_workers_create(struct run *r)
{
	uint32_t n = r->opts->threads ? r->opts->threads : 1;
	r->workers = calloc(n, sizeof *r->workers);
	if (!r->workers)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	r->nworkers = n;
	for (uint32_t i = 0; i < n; i++) {
		struct worker *w = &r->workers[i];
		w->params = fedrun_arena_alloc(r->layout->total);
		w->before = fedrun_arena_alloc(r->layout->total);
		w->mask = calloc(r->layout->n, 1);
		w->view = calloc(r->layout->n, sizeof *w->view);
		if (r->optim_floats && r->cfg.optim_state != OPTIM_STATE_KEEP)
			w->optim_scratch = fedrun_arena_alloc(r->optim_floats);
		if (!w->params || !w->before || !w->mask || !w->view ||
		    (r->optim_floats && r->cfg.optim_state != OPTIM_STATE_KEEP && !w->optim_scratch))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory for worker buffers");
		if (r->model_ops->worker_create) {
			int rc = r->model_ops->worker_create(r->model.state, &w->model_worker);
			if (rc < 0)
				return fedrun_error_wrap(rc, "model '%s': ", r->model.desc->name);
		}
	}
	return 0;
}

void run_workers_destroy(struct run *r)
{
	pool_destroy(r); /* its threads use the workers */
	for (uint32_t i = 0; i < r->nworkers; i++) {
		struct worker *w = &r->workers[i];
		if (w->model_worker && r->model_ops->worker_destroy)
			r->model_ops->worker_destroy(r->model.state, w->model_worker);
		fedrun_arena_free(w->params);
		fedrun_arena_free(w->before);
		fedrun_arena_free(w->optim_scratch);
		free(w->mask);
		free(w->view);
	}
	free(r->workers);
	r->workers = NULL;
	r->nworkers = 0;
}
