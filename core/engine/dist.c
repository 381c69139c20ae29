/* SPDX-License-Identifier: Apache-2.0 */
/* A run over several processes (dist.h): the protocol between rank 0 (the
 * server) and the worker ranks, on top of a transport plugin. Buffers are
 * in the byte order of the machines, which must all be the same kind
 * (checked with a magic number). */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/transport.h"
#include "dist.h"
#include "message.h"

#define DIST_MAGIC 0x46524431u /* "FRD1" */

enum { TAG_STATUS = 1, TAG_CHUNK = 2, TAG_STATE = 3 };
enum {
	CMD_START = 1,
	CMD_ROUND = 2,
	CMD_STATE = 3,
	CMD_STOP = 4,
	CMD_FAIL = 5,
	CMD_NEXT = 6,
	CMD_INTERRUPT = 7 /* a signal stopped the run after a checkpoint: every rank exits 130 */
};

/* A change a worker made to a client-side plugin's state (blob i of the
 * stateful plugin j, bytes [off, off + len)), kept by rank 0 until the
 * checkpoint is written. */
struct blob_run {
	uint32_t j, i;
	uint64_t off, len;
	const uint8_t *data; /* into a received buffer */
};

/* A worker's copy of a client-side plugin's state as it started, to find
 * what its clients changed. */
struct snap {
	uint32_t n;
	uint64_t *bytes;
	uint8_t **data;
};

struct dist {
	const struct fedrun_transport_ops *t;
	uint32_t rank, nranks;
	char *scratch; /* worker ranks */
	bool stopped;  /* rank 0: the workers were told */
	bool serving;  /* worker ranks: past setup, logging as "rank N" */
	uint32_t asked; /* rank 0: the lowest worker rank a signal reached, UINT32_MAX: none */
	uint64_t sent, received; /* transport bytes (this rank) */
	struct snap snaps[RUN_STATEFULS_MAX];
	/* rank 0, between dist_gather_state and dist_gather_done */
	void **bufs;
	uint32_t nbufs;
	struct blob_run *runs;
	uint32_t nruns, capruns;
	void **merged;
	uint32_t nmerged;
};

/* The transport, once per process: MPI can be joined once, and its
 * finalize runs at exit, so the plugin stays loaded (as backends do). */
static struct fedrun_registry *transport_reg;
static const struct fedrun_transport_ops *transport;
static uint32_t proc_rank, proc_nranks;

/* ---- buffers ---------------------------------------------------------- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void put(struct wbuf *b, const void *data, size_t n)
{
	if (b->oom || n == 0)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void put32(struct wbuf *b, uint32_t v) { put(b, &v, sizeof v); }
static void put64(struct wbuf *b, uint64_t v) { put(b, &v, sizeof v); }

struct rbuf {
	const uint8_t *p;
	size_t len, at;
	bool bad;
};

static const void *get(struct rbuf *b, size_t n)
{
	if (b->bad || n > b->len - b->at) {
		b->bad = true;
		return NULL;
	}
	const void *p = b->p + b->at;
	b->at += n;
	return p;
}

static uint32_t get32(struct rbuf *b)
{
	uint32_t v = 0;
	const void *p = get(b, sizeof v);
	if (p)
		memcpy(&v, p, sizeof v);
	return v;
}

static uint64_t get64(struct rbuf *b)
{
	uint64_t v = 0;
	const void *p = get(b, sizeof v);
	if (p)
		memcpy(&v, p, sizeof v);
	return v;
}

static int bad_message(uint32_t from, const char *what)
{
	return fedrun_error(FEDRUN_EFORMAT, "rank %u sent a malformed %s message", from, what);
}

/* ---- transport, with byte counts -------------------------------------- */

static int tsend(struct dist *d, struct wbuf *b, uint32_t to, uint32_t tag)
{
	if (b->oom)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for a message to rank %u", to);
	d->sent += b->len;
	return d->t->send(b->p, b->len, to, tag);
}

static int trecv(struct dist *d, void **buf, size_t *len, uint32_t from, uint32_t tag)
{
	int rc = d->t->recv(buf, len, from, tag);
	if (rc == 0)
		d->received += *len;
	return rc;
}

/* Rank 0 sends b; the others receive into *buf and *len. */
static int tbcast(struct dist *d, struct wbuf *b, void **buf, size_t *len)
{
	if (d->rank == 0) {
		if (b->oom)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory for a broadcast");
		void *p = b->p;
		size_t n = b->len;
		d->sent += n * (d->nranks - 1);
		return d->t->bcast(&p, &n, 0);
	}
	int rc = d->t->bcast(buf, len, 0);
	if (rc == 0)
		d->received += *len;
	return rc;
}

struct hdr {
	uint32_t magic, cmd, round, m, chunk, flags;
	uint64_t global_step, push_len;
};

static void put_hdr(struct wbuf *b, uint32_t cmd, const struct run *r, uint32_t m, uint32_t chunk,
		    uint64_t push_len)
{
	struct hdr h = {.magic = DIST_MAGIC, .cmd = cmd, .round = r->round, .m = m, .chunk = chunk,
			.flags = run_push(r), .global_step = r->global_step, .push_len = push_len};
	put(b, &h, sizeof h);
}

static int get_hdr(struct rbuf *b, struct hdr *h)
{
	const void *p = get(b, sizeof *h);
	if (!p)
		return bad_message(0, "command");
	memcpy(h, p, sizeof *h);
	if (h->magic != DIST_MAGIC)
		return fedrun_error(FEDRUN_EFORMAT,
				    "rank 0 speaks another protocol or byte order (magic %08x): every "
				    "rank must run the same fedrun on the same kind of machine",
				    h->magic);
	return 0;
}

/* ---- opening ---------------------------------------------------------- */

static const char *launcher(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
					   "PMI_SIZE"};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
		if (getenv(vars[i]))
			return vars[i];
	return NULL;
}

static int load_transport(uint32_t threads, const char *why)
{
	if (transport)
		return 0;
	int rc = transport_reg ? 0 : fedrun_registry_create(NULL, &transport_reg);
	const struct fedrun_plugin *p = NULL;
	if (rc == 0)
		rc = fedrun_registry_find(transport_reg, FEDRUN_KIND_TRANSPORT, "mpi", NULL, &p, NULL);
	if (rc < 0)
		return fedrun_error_wrap(rc,
					 "%s: this process was started by a launcher, but the 'mpi' "
					 "transport cannot be loaded (build fedrun with configure "
					 "--with-mpi, or set FEDRUN_TRANSPORT=none to run each process "
					 "alone): ",
					 why);
	const struct fedrun_transport_ops *t = p->ops;
	if (!t || t->size < offsetof(struct fedrun_transport_ops, describe) + sizeof t->describe ||
	    !t->init || !t->finalize || !t->bcast || !t->send || !t->recv || !t->describe)
		return fedrun_error(FEDRUN_EABI, "transport 'mpi': incomplete ops table");
	if ((rc = t->init(threads, &proc_rank, &proc_nranks)) < 0)
		return fedrun_error_wrap(rc, "transport 'mpi': ");
	atexit(t->finalize);
	transport = t;
	return 0;
}

static int make_scratch(struct dist *d)
{
	const char *tmp = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/fedrun-rank%u-XXXXXX", tmp && *tmp ? tmp : "/tmp", d->rank);
	if (!mkdtemp(path))
		return fedrun_error(FEDRUN_EIO, "rank %u: cannot create a directory in %s: %s", d->rank,
				    tmp && *tmp ? tmp : "/tmp", strerror(errno));
	if (!(d->scratch = strdup(path)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	return 0;
}

int dist_open(struct run *r)
{
	r->dist = NULL;
	const char *force = getenv("FEDRUN_TRANSPORT");
	const char *why = launcher();
	if (force && strcmp(force, "none") == 0)
		return 0;
	if (force && *force && strcmp(force, "mpi") != 0)
		return fedrun_error(FEDRUN_ECONFIG, "FEDRUN_TRANSPORT=%s: expected mpi or none", force);
	if (force && *force)
		why = "FEDRUN_TRANSPORT=mpi";
	if (!why)
		return 0;
	int rc = load_transport(r->opts->threads, why);
	if (rc < 0)
		return rc;
	/* mpirun binds each process to one core by default with 2 ranks or
	 * fewer: threads beyond the cores a rank may use only take turns. */
	cpu_set_t set;
	if (proc_rank == 0 && sched_getaffinity(0, sizeof set, &set) == 0 &&
	    (uint32_t)CPU_COUNT(&set) < r->opts->threads)
		r->host.log(r, FEDRUN_LOG_WARN,
			    "rank 0 may run on %d core%s but has %u threads: start the job with "
			    "mpirun --bind-to none, or --map-by slot:PE=%u (cores for each rank's threads)",
			    CPU_COUNT(&set), CPU_COUNT(&set) == 1 ? "" : "s", r->opts->threads,
			    r->opts->threads);
	if (proc_nranks < 2)
		return 0;
	/* Once per process, as the transport is joined once. */
	static bool watched;
	const struct fedrun_transport_ops *t = transport;
	if (!watched &&
	    t->size >=
		offsetof(struct fedrun_transport_ops, peer_timeout) + sizeof t->peer_timeout &&
	    t->peer_timeout) {
		watched = true;
		if (t->peer_timeout(r->opts->peer_timeout) < 0) {
			r->host.log(r, FEDRUN_LOG_WARN,
				    "transport 'mpi': %s; the ranks wait for each other without a "
				    "timeout",
				    fedrun_error_message());
			fedrun_error_clear();
		}
	}
	struct dist *d = calloc(1, sizeof *d);
	if (!d)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	d->t = transport;
	d->rank = proc_rank;
	d->nranks = proc_nranks;
	d->asked = UINT32_MAX;
	r->dist = d;
	if (d->rank > 0)
		return make_scratch(d);
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void snaps_free(struct dist *d)
{
	for (uint32_t j = 0; j < RUN_STATEFULS_MAX; j++) {
		for (uint32_t i = 0; i < d->snaps[j].n; i++)
			free(d->snaps[j].data[i]);
		free(d->snaps[j].data);
		free(d->snaps[j].bytes);
		d->snaps[j] = (struct snap){0};
	}
}

void dist_close(struct run *r)
{
	struct dist *d = r->dist;
	if (!d)
		return;
	if (d->rank == 0 && (d->sent || d->received))
		r->host.log(r, FEDRUN_LOG_INFO,
			    "transport: rank 0 sent %" PRIu64 " bytes and received %" PRIu64, d->sent,
			    d->received);
	dist_gather_done(r);
	snaps_free(d);
	if (d->scratch)
		nftw(d->scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d->scratch);
	free(d);
	r->dist = NULL;
}

uint32_t dist_rank(const struct run *r)
{
	return r->dist ? r->dist->rank : 0;
}

uint32_t dist_nranks(const struct run *r)
{
	return r->dist ? r->dist->nranks : 1;
}

bool dist_owns(const struct run *r, uint32_t client)
{
	return !r->dist || client % r->dist->nranks == r->dist->rank;
}

bool dist_worker_logging(const struct run *r)
{
	return r->dist && r->dist->rank > 0 && r->dist->serving;
}

const char *dist_scratch(const struct run *r)
{
	return r->dist ? r->dist->scratch : NULL;
}

/* ---- agreeing --------------------------------------------------------- */

/* Worker ranks: what rank 0's word h, other than the one expected,
 * means. A signal ends every rank with the status it gives one process, so
 * that a job stopped by a signal to any rank reads the same to the batch
 * system; a failure is rank 0's to report. */
static int worker_quit(const struct run *r, const struct hdr *h, const char *what)
{
	if (h->cmd == CMD_INTERRUPT)
		return fedrun_error(FEDRUN_EINTERRUPTED,
				    "rank %u: the job was interrupted after round %u; rank 0 wrote the "
				    "checkpoint",
				    r->dist->rank, h->round);
	if (h->cmd == CMD_FAIL || h->cmd == CMD_STOP)
		return DIST_QUIT;
	return bad_message(0, what);
}

int dist_agree(struct run *r, int rc)
{
	struct dist *d = r->dist;
	if (!d)
		return rc;
	if (d->rank > 0) {
		struct wbuf b = {0};
		const char *msg = rc < 0 ? fedrun_error_message() : "";
		put32(&b, DIST_MAGIC);
		put32(&b, (uint32_t)-rc);
		put(&b, msg, strlen(msg) + 1);
		int trc = tsend(d, &b, 0, TAG_STATUS);
		free(b.p);
		if (trc < 0)
			return trc;
		void *v = NULL;
		size_t len = 0;
		if ((trc = tbcast(d, NULL, &v, &len)) < 0)
			return trc;
		struct rbuf rb = {v, len, 0, false};
		struct hdr h;
		trc = get_hdr(&rb, &h);
		free(v);
		if (trc < 0)
			return trc;
		return h.cmd == CMD_START ? 0 : worker_quit(r, &h, "status");
	}
	/* Rank 0: hear everyone out, then say go or stop. */
	int first = rc;
	uint32_t bad_rank = 0;
	char *bad_msg = NULL;
	for (uint32_t k = 1; k < d->nranks; k++) {
		void *v = NULL;
		size_t len = 0;
		int trc = trecv(d, &v, &len, k, TAG_STATUS);
		if (trc < 0) {
			free(bad_msg);
			return trc; /* the job is broken: no broadcast can reach everyone */
		}
		struct rbuf rb = {v, len, 0, false};
		uint32_t magic = get32(&rb), code = get32(&rb);
		const char *msg = rb.bad ? NULL : (const char *)rb.p + rb.at;
		if (magic != DIST_MAGIC || !msg || memchr(msg, 0, len - rb.at) == NULL) {
			free(v);
			free(bad_msg);
			return bad_message(k, "status");
		}
		if (code != 0 && first == 0) {
			first = -(int)code;
			bad_rank = k;
			bad_msg = strdup(msg);
		}
		free(v);
	}
	struct wbuf b = {0};
	put_hdr(&b, first < 0 ? CMD_FAIL : CMD_START, r, 0, 0, 0);
	int trc = tbcast(d, &b, NULL, NULL);
	free(b.p);
	if (first < 0 && rc == 0) {
		first = fedrun_error(first, "rank %u: %s", bad_rank, bad_msg ? bad_msg : "failed");
	}
	free(bad_msg);
	if (first < 0)
		d->stopped = true;
	return first < 0 ? first : trc;
}

/* ---- starting --------------------------------------------------------- */

/* Worker ranks: the copy of the client-side plugins' state to compare
 * with at checkpoints. The aggregator runs on rank 0 only. */
static int snapshot(struct run *r)
{
	struct dist *d = r->dist;
	struct stateful sf[RUN_STATEFULS_MAX];
	uint32_t nsf = run_statefuls(r, sf);
	snaps_free(d);
	for (uint32_t j = 0; j < nsf; j++) {
		if (strcmp(sf[j].prefix, "__aggregator__.") == 0)
			continue;
		const struct fedrun_state_blob *blobs = NULL;
		uint32_t n = 0;
		int rc = sf[j].state(sf[j].st, &blobs, &n);
		if (rc < 0)
			return rc;
		struct snap *s = &d->snaps[j];
		s->data = calloc(n ? n : 1, sizeof *s->data);
		s->bytes = calloc(n ? n : 1, sizeof *s->bytes);
		if (!s->data || !s->bytes)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		s->n = n;
		for (uint32_t i = 0; i < n; i++) {
			s->bytes[i] = blobs[i].bytes;
			if (blobs[i].bytes && !(s->data[i] = malloc(blobs[i].bytes)))
				return fedrun_error(FEDRUN_ENOMEM,
						    "out of memory for a copy of plugin state");
			if (blobs[i].bytes)
				memcpy(s->data[i], blobs[i].data, blobs[i].bytes);
		}
	}
	return 0;
}

/* Worker ranks: the state of clients another rank trains goes. */
static void drop_unowned(struct run *r)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < r->ncstates; i++) {
		if (dist_owns(r, r->cstates[i].client))
			r->cstates[k++] = r->cstates[i];
		else
			cstore_forget(r, &r->cstates[i]);
	}
	r->ncstates = k;
}

static int worker_start(struct run *r, int rc)
{
	struct dist *d = r->dist;
	void *v = NULL;
	size_t len = 0;
	int trc = tbcast(d, NULL, &v, &len);
	if (trc < 0)
		return trc;
	struct rbuf rb = {v, len, 0, false};
	struct hdr h;
	if ((trc = get_hdr(&rb, &h)) < 0 || h.cmd != CMD_START) {
		free(v);
		return trc < 0 ? trc : worker_quit(r, &h, "start");
	}
	const uint64_t total = r->layout->total;
	if (rc == 0 && h.push_len > 0) {
		/* Resuming: the checkpoint rank 0 reads, read here the same way. */
		const void *ck = get(&rb, h.push_len);
		char path[4096];
		snprintf(path, sizeof path, "%s/resume.safetensors", d->scratch);
		rc = ck ? fedrun_write_file_atomic(path, ck, h.push_len) : bad_message(0, "start");
		if (rc == 0 && (rc = checkpoint_load(r, path)) == 0)
			drop_unowned(r);
		unlink(path);
	} else if (rc == 0 && run_push(r)) {
		const void *init = get(&rb, total * sizeof(float));
		if (!init)
			rc = bad_message(0, "start");
		else {
			memcpy(r->theta_init, init, total * sizeof(float));
			memcpy(r->theta_last, init, total * sizeof(float));
		}
	}
	free(v);
	if (rc == 0)
		rc = snapshot(r);
	d->serving = true;
	return dist_agree(r, rc);
}

int dist_start(struct run *r, const char *ckpt, int rc)
{
	struct dist *d = r->dist;
	if (!d)
		return rc;
	if (d->rank > 0)
		return worker_start(r, rc);
	struct wbuf b = {0};
	char *file = NULL;
	size_t n = 0;
	if (ckpt && (rc = fedrun_read_file(ckpt, &file, &n)) < 0)
		return rc;
	put_hdr(&b, CMD_START, r, 0, 0, ckpt ? n : 0);
	if (ckpt)
		put(&b, file, n);
	else if (run_push(r))
		put(&b, r->theta_init, r->layout->total * sizeof(float));
	free(file);
	rc = tbcast(d, &b, NULL, NULL);
	free(b.p);
	if (rc < 0)
		return rc;
	r->host.log(r, FEDRUN_LOG_INFO, "%u ranks (%s); client c trains on rank c mod %u",
		    d->nranks, d->t->describe(), d->nranks);
	return dist_agree(r, 0);
}

/* ---- a round ---------------------------------------------------------- */

int dist_round(struct run *r, const struct round_ctx *ctx, uint32_t m, uint32_t chunk)
{
	struct dist *d = r->dist;
	if (!d)
		return 0;
	struct wbuf b = {0};
	void *full = NULL;
	size_t full_len = 0;
	const void *push = ctx->push;
	size_t push_len = ctx->push_len;
	int rc = 0;
	if (run_push(r)) { /* each client's message is made where it trains, from θ_t */
		rc = msg_encode(MSG_PUSH, ctx->info.round, UINT32_MAX, 0, 0, r->layout, r->theta, NULL,
				&full, &full_len);
		push = full;
		push_len = full_len;
	}
	if (rc == 0) {
		struct hdr h = {.magic = DIST_MAGIC, .cmd = CMD_ROUND, .round = ctx->info.round,
				.m = m, .chunk = chunk, .flags = run_push(r),
				.global_step = r->global_step, .push_len = push_len};
		put(&b, &h, sizeof h);
		put(&b, ctx->clients, (size_t)m * sizeof *ctx->clients);
		put(&b, push, push_len);
		if (run_push(r))
			put(&b, r->theta_last, r->layout->total * sizeof(float));
		rc = tbcast(d, &b, NULL, NULL);
	}
	free(full);
	free(b.p);
	return rc;
}

/* The clients of a chunk that this rank owns, as a round_ctx of their own
 * (positions pos[] in the chunk). */
struct sub {
	struct round_ctx c;
	uint32_t *clients, *pos, k;
	_Atomic uint32_t bad; /* lowest failed index, UINT32_MAX: none */
};

static void sub_free(struct sub *s)
{
	for (uint32_t i = 0; s->c.pull && i < s->k; i++) {
		free(s->c.pull[i]);
		if (s->c.push_own)
			free(s->c.push_own[i]);
	}
	free(s->clients);
	free(s->pos);
	free(s->c.push_own);
	free(s->c.push_own_len);
	free(s->c.pull);
	free(s->c.pull_len);
	free(s->c.updates);
	free(s->c.samples);
}

static int train_one(struct run *r, struct worker *w, uint32_t i, void *p)
{
	struct sub *s = p;
	int rc = engine_train_client(r, w, i, &s->c);
	if (rc < 0) {
		uint32_t cur = atomic_load(&s->bad);
		while (i < cur && !atomic_compare_exchange_weak(&s->bad, &cur, i))
			;
	}
	return rc;
}

/* Trains the owned clients of ctx->clients[0 .. n); on failure s->bad is
 * the lowest failed index and the error is recorded. */
static int train_owned(struct run *r, const struct round_ctx *ctx, uint32_t n, struct sub *s)
{
	memset(s, 0, sizeof *s);
	atomic_init(&s->bad, UINT32_MAX);
	s->clients = malloc((n ? n : 1) * sizeof *s->clients);
	s->pos = malloc((n ? n : 1) * sizeof *s->pos);
	s->c = *ctx;
	s->c.push_own = calloc(n ? n : 1, sizeof *s->c.push_own);
	s->c.push_own_len = calloc(n ? n : 1, sizeof *s->c.push_own_len);
	s->c.pull = calloc(n ? n : 1, sizeof *s->c.pull);
	s->c.pull_len = calloc(n ? n : 1, sizeof *s->c.pull_len);
	s->c.updates = calloc(n ? n : 1, sizeof *s->c.updates);
	s->c.samples = calloc(n ? n : 1, sizeof *s->c.samples);
	if (!s->clients || !s->pos || !s->c.push_own || !s->c.push_own_len || !s->c.pull ||
	    !s->c.pull_len || !s->c.updates || !s->c.samples)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		if (dist_owns(r, ctx->clients[i])) {
			s->pos[s->k] = i;
			s->clients[s->k++] = ctx->clients[i];
		}
	s->c.clients = s->clients;
	int rc = 0;
	if (run_keeps_clients(r)) /* before the workers: the array may move */
		for (uint32_t i = 0; i < s->k && rc == 0; i++)
			if (!run_client_state(r, s->clients[i], &rc)) {
				atomic_store(&s->bad, i);
				return rc;
			}
	return s->k ? run_parallel_for(r, s->k, train_one, s) : 0;
}

/* A worker's answer for a chunk: status, whether a signal reached the
 * rank, then the lowest failed position and the message, or each trained
 * client's position, update and sample counts and message lengths, the
 * messages, and the metric events its clients recorded. */
static void put_str(struct wbuf *b, const char *s)
{
	uint32_t n = (uint32_t)strlen(s ? s : "");
	put32(b, n);
	put(b, s ? s : "", n);
}

static const char *get_str(struct rbuf *b, char *out, size_t cap)
{
	uint32_t n = get32(b);
	const char *p = get(b, n);
	if (!p || n >= cap) {
		b->bad = true;
		return NULL;
	}
	memcpy(out, p, n);
	out[n] = '\0';
	return out;
}

static int worker_chunk(struct run *r, const struct round_ctx *ctx, uint32_t n)
{
	struct dist *d = r->dist;
	struct sub s;
	int rc = train_owned(r, ctx, n, &s);
	struct wbuf b = {0};
	put32(&b, DIST_MAGIC);
	put32(&b, rc < 0 ? (uint32_t)-rc : 0);
	/* Every rank answers every chunk, and rank 0 decides at the round's
	 * end from all the answers: every rank stops after the same round. */
	put32(&b, r->opts->interrupt && *r->opts->interrupt ? 1u : 0u);
	if (rc < 0) {
		uint32_t bad = atomic_load(&s.bad);
		put32(&b, bad < s.k ? s.pos[bad] : 0);
		put_str(&b, fedrun_error_message());
	} else {
		put32(&b, s.k);
		for (uint32_t i = 0; i < s.k; i++) {
			put32(&b, s.pos[i]);
			put64(&b, s.c.updates[i]);
			put64(&b, s.c.samples[i]);
			put64(&b, run_push(r) ? s.c.push_own_len[i] : ctx->push_len);
			put64(&b, s.c.pull_len[i]);
		}
		for (uint32_t i = 0; i < s.k; i++)
			put(&b, s.c.pull[i], s.c.pull_len[i]);
		/* The events, in the order they were recorded. */
		put32(&b, r->nevents);
		for (uint32_t i = 0; i < r->nevents; i++) {
			const struct metric_event *e = &r->events[i];
			put32(&b, e->client);
			put32(&b, (uint32_t)e->split);
			put(&b, &e->value, sizeof e->value);
			put_str(&b, run_str(r, e->name));
			put_str(&b, run_str(r, e->tensor));
			put_str(&b, run_str(r, e->model));
		}
	}
	r->nevents = 0;
	sub_free(&s);
	int trc = tsend(d, &b, 0, TAG_CHUNK);
	free(b.p);
	return trc;
}

/* The failure first in client order among the ranks' answers. */
struct fail {
	uint32_t pos;
	int rc;
	char msg[4096];
};

static void fail_note(struct fail *f, uint32_t pos, int rc, uint32_t rank, const char *msg)
{
	if (pos >= f->pos)
		return;
	f->pos = pos;
	f->rc = rc;
	snprintf(f->msg, sizeof f->msg, "rank %u: %.4000s", rank, msg);
}

static uint32_t owner(const struct dist *d, uint32_t client)
{
	return client % d->nranks;
}

/* Rank 0: a worker's answer into ctx. The pull messages are copied out of
 * the received buffer, so that the round frees them as its own. */
static int take_chunk(struct run *r, uint32_t from, struct round_ctx *ctx, uint32_t n,
		      struct fail *f)
{
	struct dist *d = r->dist;
	void *v = NULL;
	size_t len = 0;
	int rc = trecv(d, &v, &len, from, TAG_CHUNK);
	if (rc < 0)
		return rc;
	struct rbuf b = {v, len, 0, false};
	uint32_t *pos = NULL;
	char msg[4096];
	if (get32(&b) != DIST_MAGIC) {
		rc = bad_message(from, "chunk");
		goto out;
	}
	uint32_t code = get32(&b);
	if (get32(&b) != 0 && from < d->asked)
		d->asked = from;
	if (code != 0) {
		uint32_t at = get32(&b);
		if (!get_str(&b, msg, sizeof msg))
			rc = bad_message(from, "chunk");
		else
			fail_note(f, at, -(int)code, from, msg);
		goto out;
	}
	uint32_t k = get32(&b);
	if (b.bad || k > n || !(pos = malloc((k ? k : 1) * sizeof *pos))) {
		rc = b.bad || k > n ? bad_message(from, "chunk") : fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < k; i++) {
		pos[i] = get32(&b);
		uint64_t updates = get64(&b), samples = get64(&b), push_len = get64(&b),
			 pull_len = get64(&b);
		if (b.bad || pos[i] >= n || owner(d, ctx->clients[pos[i]]) != from ||
		    ctx->pull[pos[i]]) {
			rc = bad_message(from, "chunk");
			goto out;
		}
		ctx->updates[pos[i]] = updates;
		ctx->samples[pos[i]] = samples;
		ctx->push_own_len[pos[i]] = (size_t)push_len;
		ctx->pull_len[pos[i]] = (size_t)pull_len;
	}
	for (uint32_t i = 0; i < k; i++) {
		size_t plen = ctx->pull_len[pos[i]];
		const void *p = get(&b, plen);
		void *copy = p ? malloc(plen ? plen : 1) : NULL;
		if (!copy) {
			rc = p ? fedrun_error(FEDRUN_ENOMEM, "out of memory") : bad_message(from, "chunk");
			goto out;
		}
		memcpy(copy, p, plen);
		ctx->pull[pos[i]] = copy;
	}
	uint32_t nev = get32(&b);
	for (uint32_t i = 0; i < nev && !b.bad && rc == 0; i++) {
		uint32_t client = get32(&b), split = get32(&b);
		double value = 0;
		const void *p = get(&b, sizeof value);
		char name[64], tensor[FEDRUN_NAME_MAX + 1], model[96];
		if (p)
			memcpy(&value, p, sizeof value);
		if (!get_str(&b, name, sizeof name) || !get_str(&b, tensor, sizeof tensor) ||
		    !get_str(&b, model, sizeof model))
			break;
		rc = run_event_full(r, client == UINT32_MAX ? -1 : (int64_t)client, (int32_t)split,
				    name, tensor, model, value);
	}
	if (rc == 0 && b.bad)
		rc = bad_message(from, "chunk");
out:
	free(pos);
	free(v);
	return rc;
}

int dist_train_chunk(struct run *r, struct round_ctx *ctx, uint32_t n, bool more)
{
	struct dist *d = r->dist;
	struct sub s;
	struct fail f = {.pos = UINT32_MAX};
	int rc = train_owned(r, ctx, n, &s);
	if (rc < 0 && !d) {
		sub_free(&s);
		return rc;
	}
	if (rc < 0) {
		uint32_t bad = atomic_load(&s.bad);
		fail_note(&f, bad < s.k ? s.pos[bad] : 0, rc, 0, fedrun_error_message());
	} else {
		for (uint32_t i = 0; i < s.k; i++) { /* the messages move into ctx */
			uint32_t p = s.pos[i];
			ctx->pull[p] = s.c.pull[i];
			ctx->pull_len[p] = s.c.pull_len[i];
			ctx->updates[p] = s.c.updates[i];
			ctx->samples[p] = s.c.samples[i];
			s.c.pull[i] = NULL;
			if (run_push(r)) {
				ctx->push_own[p] = s.c.push_own[i];
				ctx->push_own_len[p] = s.c.push_own_len[i];
				s.c.push_own[i] = NULL;
			}
		}
	}
	sub_free(&s);
	if (!d)
		return 0;
	/* Everyone's answer is received before anything fails, so that the
	 * workers are waiting for a broadcast when rank 0 stops the run. */
	for (uint32_t k = 1; k < d->nranks; k++)
		if ((rc = take_chunk(r, k, ctx, n, &f)) < 0)
			return rc; /* the transport or a worker is broken */
	if (f.rc < 0)
		return fedrun_error(f.rc, "%s", f.msg);
	for (uint32_t i = 0; i < n; i++)
		if (!ctx->pull[i])
			return fedrun_error(FEDRUN_EIO, "rank %u did not train client %u",
					    owner(d, ctx->clients[i]), ctx->clients[i]);
	if (!more)
		return 0;
	/* The workers wait for the word to train the next chunk (on failure
	 * dist_stop's word reaches them there instead). */
	struct wbuf b = {0};
	put_hdr(&b, CMD_NEXT, r, 0, 0, 0);
	rc = tbcast(d, &b, NULL, NULL);
	free(b.p);
	return rc;
}

/* ---- state at checkpoints ---------------------------------------------- */

/* Worker ranks: the state of their clients, and the bytes of the
 * client-side plugins' state that differ from the snapshot (runs of
 * changed bytes). */
static int worker_state(struct run *r)
{
	struct dist *d = r->dist;
	struct wbuf b = {0};
	const uint64_t total = r->layout->total;
	put32(&b, DIST_MAGIC);
	put32(&b, r->ncstates);
	int rc = 0;
	for (uint32_t i = 0; i < r->ncstates && rc == 0; i++) {
		struct client_state *cs = &r->cstates[i];
		/* from the rank's store when it keeps the state on disk */
		if ((rc = cstore_checkout(r, cs)) < 0)
			break;
		put32(&b, cs->client);
		put32(&b, (cs->optim ? 1u : 0u) | (cs->params ? 2u : 0u));
		put64(&b, cs->step);
		if (cs->optim)
			put(&b, cs->optim, r->optim_floats * sizeof(float));
		if (cs->params)
			put(&b, cs->params, total * sizeof(float));
		cstore_drop(r, cs);
	}
	struct stateful sf[RUN_STATEFULS_MAX];
	uint32_t nsf = run_statefuls(r, sf);
	for (uint32_t j = 0; j < nsf && rc == 0; j++) {
		const struct snap *sn = &d->snaps[j];
		if (strcmp(sf[j].prefix, "__aggregator__.") == 0)
			continue;
		const struct fedrun_state_blob *blobs = NULL;
		uint32_t n = 0;
		if ((rc = sf[j].state(sf[j].st, &blobs, &n)) < 0)
			break;
		if (n != sn->n) {
			rc = fedrun_error(FEDRUN_EPLUGIN,
					  "rank %u: plugin state '%s' changed from %u to %u pieces", d->rank,
					  sf[j].prefix, sn->n, n);
			break;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (blobs[i].bytes != sn->bytes[i]) {
				rc = fedrun_error(FEDRUN_EPLUGIN, "rank %u: plugin state '%s%s' changed size",
						  d->rank, sf[j].prefix, blobs[i].name);
				break;
			}
			const uint8_t *now = blobs[i].data, *was = sn->data[i];
			uint64_t len = blobs[i].bytes;
			for (uint64_t at = 0; at < len;) {
				if (now[at] == was[at]) {
					at++;
					continue;
				}
				/* Exactly the changed bytes: an unchanged byte
				 * here may be one another rank changed. */
				uint64_t end = at + 1;
				while (end < len && now[end] != was[end])
					end++;
				put32(&b, j);
				put32(&b, i);
				put64(&b, at);
				put64(&b, end - at);
				put(&b, now + at, end - at);
				at = end;
			}
		}
	}
	put32(&b, UINT32_MAX); /* the end of the runs */
	if (rc < 0) { /* one status instead: rank 0 reports it */
		free(b.p);
		b = (struct wbuf){0};
		put32(&b, DIST_MAGIC);
		put32(&b, UINT32_MAX);
		put_str(&b, fedrun_error_message());
	}
	int trc = tsend(d, &b, 0, TAG_STATE);
	free(b.p);
	return trc;
}

static int cmp_run(const void *a, const void *b)
{
	const struct blob_run *x = a, *y = b;
	if (x->j != y->j)
		return x->j < y->j ? -1 : 1;
	if (x->i != y->i)
		return x->i < y->i ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static const void *overlay(struct run *r, const char *prefix, uint32_t i, const void *data,
			   uint64_t bytes)
{
	struct dist *d = r->dist;
	struct stateful sf[RUN_STATEFULS_MAX];
	uint32_t nsf = run_statefuls(r, sf), j = 0;
	while (j < nsf && strcmp(sf[j].prefix, prefix) != 0)
		j++;
	/* The first run of blob (j, i): binary search in the sorted runs. */
	uint32_t lo = 0, hi = d->nruns;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct blob_run *x = &d->runs[mid];
		if (x->j < j || (x->j == j && x->i < i))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == d->nruns || d->runs[lo].j != j || d->runs[lo].i != i || d->nmerged == d->nruns)
		return data;
	uint8_t *m = malloc(bytes ? bytes : 1);
	if (!m)
		return data; /* checked in dist_gather_state: cannot happen silently */
	memcpy(m, data, bytes);
	for (uint32_t k = lo; k < d->nruns && d->runs[k].j == j && d->runs[k].i == i; k++)
		memcpy(m + d->runs[k].off, d->runs[k].data, d->runs[k].len);
	d->merged[d->nmerged++] = m;
	return m;
}

int dist_gather_state(struct run *r)
{
	struct dist *d = r->dist;
	if (!d)
		return 0;
	struct wbuf hb = {0};
	put_hdr(&hb, CMD_STATE, r, 0, 0, 0);
	int rc = tbcast(d, &hb, NULL, NULL);
	free(hb.p);
	if (rc < 0)
		return rc;
	const uint64_t total = r->layout->total;
	struct stateful sf[RUN_STATEFULS_MAX];
	uint32_t nsf = run_statefuls(r, sf);
	struct fail f = {.pos = UINT32_MAX};
	if (!(d->bufs = calloc(d->nranks, sizeof *d->bufs)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t k = 1; k < d->nranks; k++) {
		void *v = NULL;
		size_t len = 0;
		if ((rc = trecv(d, &v, &len, k, TAG_STATE)) < 0)
			return rc;
		d->bufs[d->nbufs++] = v;
		struct rbuf b = {v, len, 0, false};
		if (get32(&b) != DIST_MAGIC)
			return bad_message(k, "state");
		uint32_t ncs = get32(&b);
		if (ncs == UINT32_MAX) {
			char msg[4096];
			if (!get_str(&b, msg, sizeof msg))
				return bad_message(k, "state");
			fail_note(&f, k, FEDRUN_EPLUGIN, k, msg);
			continue;
		}
		for (uint32_t i = 0; i < ncs && !b.bad; i++) {
			uint32_t client = get32(&b), flags = get32(&b);
			uint64_t step = get64(&b);
			const void *optim = flags & 1 ? get(&b, r->optim_floats * sizeof(float)) : NULL;
			const void *params = flags & 2 ? get(&b, total * sizeof(float)) : NULL;
			if (b.bad || client >= r->num_clients || owner(d, client) != k)
				return bad_message(k, "state");
			struct client_state *cs = run_client_state(r, client, &rc);
			if (!cs)
				return rc;
			/* The message holds the client's whole state: its file (a
			 * checkpoint's before) is replaced, not read. */
			cs->stored = false;
			if ((rc = cstore_checkout(r, cs)) < 0)
				return rc;
			cs->step = step;
			if (optim && cs->optim)
				memcpy(cs->optim, optim, r->optim_floats * sizeof(float));
			if (params) {
				if (!cs->params && !(cs->params = fedrun_arena_alloc(total))) {
					cstore_drop(r, cs);
					return fedrun_error(FEDRUN_ENOMEM, "out of memory");
				}
				memcpy(cs->params, params, total * sizeof(float));
			}
			/* into rank 0's store, for the checkpoint to link */
			if ((rc = cstore_checkin(r, cs)) < 0)
				return rc;
		}
		for (;;) {
			uint32_t j = get32(&b);
			if (b.bad || j == UINT32_MAX)
				break;
			struct blob_run br = {.j = j, .i = get32(&b), .off = get64(&b), .len = get64(&b)};
			br.data = get(&b, br.len);
			if (b.bad || j >= nsf)
				return bad_message(k, "state");
			if (d->nruns == d->capruns) {
				uint32_t cap = d->capruns ? 2 * d->capruns : 64;
				struct blob_run *more = realloc(d->runs, cap * sizeof *more);
				if (!more)
					return fedrun_error(FEDRUN_ENOMEM, "out of memory");
				d->runs = more;
				d->capruns = cap;
			}
			d->runs[d->nruns++] = br;
		}
		if (b.bad)
			return bad_message(k, "state");
	}
	if (f.rc < 0)
		return fedrun_error(f.rc, "%s", f.msg);
	/* The runs must fit the blobs rank 0 writes. */
	for (uint32_t j = 0; j < nsf; j++) {
		const struct fedrun_state_blob *blobs = NULL;
		uint32_t n = 0;
		if ((rc = sf[j].state(sf[j].st, &blobs, &n)) < 0)
			return rc;
		for (uint32_t k = 0; k < d->nruns; k++)
			if (d->runs[k].j == j && (d->runs[k].i >= n ||
						  d->runs[k].off + d->runs[k].len > blobs[d->runs[k].i].bytes))
				return fedrun_error(FEDRUN_EPLUGIN,
						    "plugin state '%s': another rank holds it in another shape",
						    sf[j].prefix);
	}
	if (d->nruns > 1)
		qsort(d->runs, d->nruns, sizeof *d->runs, cmp_run);
	if (!(d->merged = calloc(d->nruns ? d->nruns : 1, sizeof *d->merged)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	r->blob_overlay = overlay;
	return 0;
}

void dist_gather_done(struct run *r)
{
	struct dist *d = r->dist;
	if (!d)
		return;
	r->blob_overlay = NULL;
	for (uint32_t i = 0; i < d->nmerged; i++)
		free(d->merged[i]);
	free(d->merged);
	for (uint32_t i = 0; i < d->nbufs; i++)
		free(d->bufs[i]);
	free(d->bufs);
	free(d->runs);
	d->merged = NULL;
	d->bufs = NULL;
	d->runs = NULL;
	d->nmerged = d->nbufs = d->nruns = d->capruns = 0;
}

/* ---- stopping and serving ---------------------------------------------- */

uint32_t dist_interrupted_rank(const struct run *r)
{
	return r->dist ? r->dist->asked : UINT32_MAX;
}

void dist_stop(struct run *r, int rc)
{
	struct dist *d = r->dist;
	if (!d || d->rank > 0 || d->stopped)
		return;
	d->stopped = true;
	bool failed = rc < 0;
	struct wbuf b = {0};
	put_hdr(&b, rc == FEDRUN_EINTERRUPTED ? CMD_INTERRUPT : failed ? CMD_FAIL : CMD_STOP, r, 0, 0, 0);
	char saved[4096];
	snprintf(saved, sizeof saved, "%s", fedrun_error_message());
	if (tbcast(d, &b, NULL, NULL) < 0 && failed)
		fedrun_error(FEDRUN_EIO, "%s", saved); /* keep the reason, not the echo */
	free(b.p);
}

static int worker_round(struct run *r, const struct hdr *h, struct rbuf *b)
{
	const struct fedrun_layout *l = r->layout;
	const uint32_t *clients = get(b, (size_t)h->m * sizeof *clients);
	const void *push = get(b, h->push_len);
	const void *last = h->flags ? get(b, l->total * sizeof(float)) : NULL;
	if (b->bad || h->chunk == 0 || (h->flags != 0) != run_push(r))
		return bad_message(0, "round");
	const float **views = calloc(l->n, sizeof *views);
	if (!views)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	struct msg_view v = {.tensor = views};
	int rc = msg_decode(push, h->push_len, l, &v);
	for (uint32_t t = 0; rc == 0 && t < l->n; t++) {
		if (!views[t]) {
			rc = bad_message(0, "round");
			break;
		}
		memcpy(r->theta + l->t[t].offset, views[t], l->t[t].numel * sizeof(float));
	}
	free(views);
	if (rc < 0)
		return rc;
	if (last)
		memcpy(r->theta_last, last, l->total * sizeof(float));
	r->round = h->round - 1;
	r->global_step = h->global_step;
	struct round_ctx ctx = {.push = push, .push_len = h->push_len};
	engine_round_info(r, h->round, h->m, &ctx.info);
	uint32_t *copy = malloc((h->m ? h->m : 1) * sizeof *copy);
	if (!copy)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	memcpy(copy, clients, (size_t)h->m * sizeof *copy);
	for (uint32_t base = 0; base < h->m && rc == 0; base += h->chunk) {
		uint32_t n = h->m - base < h->chunk ? h->m - base : h->chunk;
		ctx.clients = copy + base;
		if ((rc = worker_chunk(r, &ctx, n)) < 0 || base + n == h->m)
			break;
		void *word = NULL; /* go on, or stop */
		size_t len = 0;
		if ((rc = tbcast(r->dist, NULL, &word, &len)) < 0)
			break;
		struct rbuf nb = {word, len, 0, false};
		struct hdr next;
		rc = get_hdr(&nb, &next);
		free(word);
		if (rc == 0 && next.cmd != CMD_NEXT)
			rc = worker_quit(r, &next, "round");
	}
	free(copy);
	return rc;
}

int dist_serve(struct run *r)
{
	struct dist *d = r->dist;
	r->nevents = 0; /* rank 0 has its own copy of what setting up recorded */
	for (;;) {
		void *v = NULL;
		size_t len = 0;
		int rc = tbcast(d, NULL, &v, &len);
		if (rc < 0)
			return rc;
		struct rbuf b = {v, len, 0, false};
		struct hdr h;
		rc = get_hdr(&b, &h);
		if (rc == 0) {
			switch (h.cmd) {
			case CMD_ROUND: rc = worker_round(r, &h, &b); break;
			case CMD_STATE: rc = worker_state(r); break;
			default: rc = worker_quit(r, &h, "command");
			}
		}
		free(v);
		if (rc != 0)
			return rc;
	}
}
