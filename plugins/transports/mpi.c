/* SPDX-License-Identifier: Apache-2.0 */
/* The "mpi" transport (fedrun/transport.h): the processes of a run started
 * by mpirun or srun exchange fedrun's messages through MPI. Built with
 * configure --with-mpi; the only fedrun code that links MPI.
 *
 * Messages of any size: a length, then pieces of at most 1 GiB (MPI counts
 * are ints). The communicator is a duplicate of MPI_COMM_WORLD whose errors
 * return (MPI_ERRORS_RETURN), so that a failed call becomes a message that
 * names the peer; whether a dead peer is noticed is the MPI runtime's
 * business (Open MPI ends the whole job and names the rank that died).
 *
 * Waiting. MPI's blocking calls poll without a pause, so that a rank
 * waiting for a busy one (rank 0 evaluating, a rank training its clients)
 * kept a core at 100%, and one waiting for a stopped process (SIGSTOP, a
 * hung node whose connections stay open) did so forever. Every call here
 * is nonblocking instead, and tested: while a message has not begun, with
 * sleeps that grow with the wait (to 10 ms); once it is under way, without
 * a pause, as its bytes move only as fast as the library is called. A
 * large point-to-point message begins with the receiver's word that it is
 * there, so that a sender does not spin while the receiver is busy.
 *
 * Liveness (peer_timeout, fedrun --peer-timeout): a thread of the
 * transport beats, once a second, between rank 0 and each other rank (a
 * star: 2 (N - 1) one-byte messages a second for N ranks), and a wait
 * fails once a peer has not been heard for the timeout. A busy rank beats
 * on; a stopped or unreachable one does not. The thread needs
 * MPI_THREAD_MULTIPLE. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mpi.h>
#include <fedrun/fedrun.h>

#define PIECE ((size_t)1 << 30)
#define DATA_TAG(tag) ((int)(tag) + 1024)
#define GO_TAG(tag) ((int)(tag) + 2048)
/* Messages up to this size go without the receiver's word: they are sent
 * eagerly (buffered by the library) or are short to wait for. */
#define SMALL ((size_t)64 << 10)

#define MS ((int64_t)1000000)
#define SPIN_NS (1 * MS) /* a wait tests without a pause this long first */
#define NAP_MAX_NS (10 * MS)
#define CHECK_NS (100 * MS) /* how often a wait looks at the peers' beats */

static MPI_Comm comm = MPI_COMM_NULL;
static MPI_Comm beat_comm = MPI_COMM_NULL; /* the beats only */
static int my_rank, nranks, we_init, provided;
static char description[256];

/* Liveness. heard[r]: when a beat of rank r last came (CLOCK_MONOTONIC
 * nanoseconds; rank 0 hears every rank, the others rank 0). */
static _Atomic int64_t timeout_ns; /* 0: wait forever */
static int64_t period_ns;
static _Atomic int64_t *heard;
static _Atomic int64_t beat_ran; /* when the beating thread last ran */
static pthread_t beater;
static bool beating;
static bool beat_quit; /* under beat_lock */
static pthread_mutex_t beat_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t beat_cond;
/* A peer timed out: its requests are left pending, and nothing here calls
 * MPI again (the beats stop too), so that the library never touches their
 * buffers; MPI_Finalize, which waits for every rank, is not called (the
 * launcher ends the job when this process exits without it). */
static atomic_bool gone;
static char gone_msg[640]; /* list (384) + the text around it */
/* What the control messages of the call under way (one at a time) are
 * sent from and received into: static, as a pending request may outlive
 * the call when a peer times out. */
static unsigned long long ctl_len;
static char ctl_go;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nap(int64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000),
			      .tv_nsec = (long)(ns % 1000000000)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		; /* a signal's flag is read at the round's end, not here */
}

static int mpi_fail(int err, const char *what, int peer)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof msg, "MPI error %d", err);
	if (peer >= 0)
		return fedrun_error(FEDRUN_EIO, "MPI %s with rank %d failed: %s", what, peer, msg);
	return fedrun_error(FEDRUN_EIO, "MPI %s failed: %s", what, msg);
}

/* The peers that have not been heard for the timeout, as one error naming
 * each and for how long; 0 when there is none. */
static int check_peers(int64_t t)
{
	int64_t limit = atomic_load(&timeout_ns);
	if (!beating || limit == 0)
		return 0;
	/* The beating thread itself did not run for a while: this process was
	 * stopped or starved, and the beats that came meanwhile are not read
	 * yet. Its next turn counts them (or gives the peers a fresh term). */
	if (t - atomic_load(&beat_ran) > 3 * period_ns)
		return 0;
	char list[384] = "";
	size_t at = 0;
	int silent = 0, named = 0;
	for (int p = 0; p < nranks; p++) {
		if (p == my_rank || (my_rank != 0 && p != 0))
			continue;
		int64_t quiet = t - atomic_load(&heard[p]);
		if (quiet <= limit)
			continue;
		if (silent++ == 0 || at < sizeof list - 80) {
			at += (size_t)snprintf(list + at, sizeof list - at, "%srank %d for %.1f s",
					       named ? ", " : "", p, (double)quiet / 1e9);
			named++;
		}
	}
	if (silent == 0)
		return 0;
	if (named < silent)
		snprintf(list + at, sizeof list - at, " and %d more", silent - named);
	snprintf(gone_msg, sizeof gone_msg,
		 "rank %d has heard nothing from %s (stopped, or %s unreachable): giving up after "
		 "the peer timeout of %lld s (fedrun --peer-timeout)",
		 my_rank, list, silent == 1 ? "its node" : "their nodes",
		 (long long)(limit / 1000000000));
	atomic_store(&gone, true);
	return fedrun_error(FEDRUN_EIO, "%s", gone_msg);
}

/* Waits for *req. `patient`: the message may not have begun, and the peer
 * may be busy for long: tests after sleeps of 1/16 of the wait so far, at
 * most 10 ms, so that a waiting rank leaves its core to others and answers
 * at most that late. Otherwise the bytes are under way: tests without a
 * pause. Either way a peer silent for the timeout ends the wait. */
static int wait_for(MPI_Request *req, bool patient, const char *what, int peer)
{
	const int64_t start = now_ns();
	int64_t check = start + CHECK_NS;
	for (;;) {
		int done = 0;
		int err = MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (err != MPI_SUCCESS)
			return mpi_fail(err, what, peer);
		if (done)
			return 0;
		int64_t t = now_ns();
		if (t >= check) {
			int rc = check_peers(t);
			if (rc < 0)
				return rc;
			check = t + CHECK_NS;
		}
		if (patient && t - start > SPIN_NS) {
			int64_t s = (t - start) / 16;
			nap(s < NAP_MAX_NS ? s : NAP_MAX_NS);
		}
	}
}

/* Starts a nonblocking call's request (err: what starting it returned)
 * and waits for it. */
static int finish(int err, MPI_Request *req, bool patient, const char *what, int peer)
{
	return err == MPI_SUCCESS ? wait_for(req, patient, what, peer) : mpi_fail(err, what, peer);
}

static int gone_error(void)
{
	return fedrun_error(FEDRUN_EIO, "%s", gone_msg);
}

static void describe_job(void)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;
	if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS)
		snprintf(lib, sizeof lib, "MPI");
	lib[strcspn(lib, ",\n")] = '\0'; /* "Open MPI v4.1.4" */
	/* Hosts: the processes that share memory with no lower rank. */
	MPI_Comm local;
	int lrank = 0, hosts = 0;
	if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, my_rank, MPI_INFO_NULL, &local) ==
	    MPI_SUCCESS) {
		MPI_Comm_rank(local, &lrank);
		MPI_Comm_free(&local);
		int leader = lrank == 0;
		MPI_Allreduce(&leader, &hosts, 1, MPI_INT, MPI_SUM, comm);
	}
	snprintf(description, sizeof description, "%.200s, %d ranks on %d host%s", lib, nranks,
		 hosts, hosts == 1 ? "" : "s");
}

static int mpi_init(uint32_t threads, uint32_t *rank, uint32_t *size)
{
	(void)threads; /* the engine's worker threads never call MPI */
	if (comm == MPI_COMM_NULL) {
		int inited = 0, err;
		MPI_Initialized(&inited);
		if (!inited) {
			/* MULTIPLE for the beating thread; the engine's calls
			 * all come from one thread. */
			err = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
			if (err != MPI_SUCCESS)
				return fedrun_error(FEDRUN_EIO, "MPI_Init_thread failed (error %d)", err);
			we_init = 1;
		} else {
			MPI_Query_thread(&provided);
		}
		if ((err = MPI_Comm_dup(MPI_COMM_WORLD, &comm)) != MPI_SUCCESS)
			return mpi_fail(err, "communicator", -1);
		MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
		/* Made here, by every rank, whether or not the beats run:
		 * creating a communicator takes every rank. */
		if ((err = MPI_Comm_dup(MPI_COMM_WORLD, &beat_comm)) != MPI_SUCCESS)
			return mpi_fail(err, "communicator", -1);
		MPI_Comm_set_errhandler(beat_comm, MPI_ERRORS_RETURN);
		MPI_Comm_rank(comm, &my_rank);
		MPI_Comm_size(comm, &nranks);
		describe_job();
	}
	*rank = (uint32_t)my_rank;
	*size = (uint32_t)nranks;
	return 0;
}

/* ---- the beats ---------------------------------------------------------- */

/* The ranks a rank beats with: rank 0 with every other, the others with
 * rank 0. */
static int npeers(void)
{
	return my_rank == 0 ? nranks - 1 : 1;
}

static int peer(int i)
{
	return my_rank == 0 ? i + 1 : 0;
}

static MPI_Request *beat_req; /* npeers() receives, then npeers() sends */
static char *beat_in;
static const char beat_out = 0;

static void *beat_main(void *arg)
{
	(void)arg;
	const int n = npeers();
	int64_t last = now_ns();
	pthread_mutex_lock(&beat_lock);
	while (!beat_quit && !atomic_load(&gone)) {
		int64_t t = now_ns();
		/* This process did not run for a while (stopped, its machine
		 * suspended, or starved): the peers' beats of that time are not
		 * read yet, so every peer gets a fresh term from now. */
		if (t - last > 3 * period_ns)
			for (int i = 0; i < n; i++)
				atomic_store(&heard[peer(i)], t);
		last = t;
		atomic_store(&beat_ran, t);
		for (int i = 0; i < n; i++) {
			MPI_Request *in = &beat_req[i], *out = &beat_req[n + i];
			int done = 0;
			while (*in != MPI_REQUEST_NULL &&
			       MPI_Test(in, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
				atomic_store(&heard[peer(i)], t);
				if (MPI_Irecv(&beat_in[i], 1, MPI_BYTE, peer(i), 0, beat_comm,
					      in) != MPI_SUCCESS)
					*in = MPI_REQUEST_NULL;
			}
			/* One beat in flight to each peer: a stopped one does
			 * not make them pile up. */
			done = 1;
			if (*out != MPI_REQUEST_NULL &&
			    MPI_Test(out, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
				done = 0;
			if (done && MPI_Isend(&beat_out, 1, MPI_BYTE, peer(i), 0, beat_comm, out) !=
					MPI_SUCCESS)
				*out = MPI_REQUEST_NULL;
		}
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		int64_t ns = until.tv_nsec + period_ns;
		until.tv_sec += (time_t)(ns / 1000000000);
		until.tv_nsec = (long)(ns % 1000000000);
		pthread_cond_timedwait(&beat_cond, &beat_lock, &until);
	}
	pthread_mutex_unlock(&beat_lock);
	return NULL;
}

static int mpi_peer_timeout(uint32_t seconds)
{
	atomic_store(&timeout_ns, (int64_t)seconds * 1000000000);
	if (seconds == 0 || beating || nranks < 2)
		return 0;
	if (provided < MPI_THREAD_MULTIPLE)
		return fedrun_error(
		    FEDRUN_EUNSUPPORTED,
		    "the MPI library does not provide MPI_THREAD_MULTIPLE, which the "
		    "beats of the peer timeout need");
	/* A beat a second, or four in the timeout when it is shorter. */
	period_ns = (int64_t)seconds * 1000000000 / 4;
	if (period_ns > 1000 * MS)
		period_ns = 1000 * MS;
	const int n = npeers();
	heard = calloc((size_t)nranks, sizeof *heard);
	beat_req = malloc(2 * (size_t)n * sizeof *beat_req);
	beat_in = calloc((size_t)n, 1);
	if (!heard || !beat_req || !beat_in)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	const int64_t t = now_ns();
	for (int p = 0; p < nranks; p++)
		atomic_init(&heard[p], t);
	atomic_store(&beat_ran, t);
	for (int i = 0; i < n; i++) {
		beat_req[n + i] = MPI_REQUEST_NULL;
		int err = MPI_Irecv(&beat_in[i], 1, MPI_BYTE, peer(i), 0, beat_comm, &beat_req[i]);
		if (err != MPI_SUCCESS)
			return mpi_fail(err, "receive", peer(i));
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&beat_cond, &ca);
	pthread_condattr_destroy(&ca);
	int err = pthread_create(&beater, NULL, beat_main, NULL);
	if (err != 0)
		return fedrun_error(FEDRUN_EIO, "cannot start the thread of the beats: %s",
				    strerror(err));
	beating = true;
	return 0;
}

static void beat_stop(void)
{
	if (!beating)
		return;
	pthread_mutex_lock(&beat_lock);
	beat_quit = true;
	pthread_cond_signal(&beat_cond);
	pthread_mutex_unlock(&beat_lock);
	pthread_join(beater, NULL);
	beating = false;
	if (!atomic_load(&gone)) {
		/* The receives of beats that will not come are cancelled; a
		 * beat still being sent is one byte the library delivers or
		 * drops at finalize. */
		const int n = npeers();
		for (int i = 0; i < n; i++) {
			if (beat_req[i] != MPI_REQUEST_NULL) {
				MPI_Cancel(&beat_req[i]);
				MPI_Wait(&beat_req[i], MPI_STATUS_IGNORE);
			}
			if (beat_req[n + i] != MPI_REQUEST_NULL)
				MPI_Request_free(&beat_req[n + i]);
		}
	}
	free(beat_req);
	free(beat_in);
	free((void *)heard);
	beat_req = NULL;
	beat_in = NULL;
	heard = NULL;
}

/* ---- the ops ------------------------------------------------------------ */

static void mpi_finalize(void)
{
	int done = 0;
	MPI_Finalized(&done);
	if (done)
		return;
	/* MPI_Finalize waits for every rank, without a timeout: a barrier
	 * first, watched, so that a peer that stopped after the last message
	 * makes this rank exit instead of hang. */
	if (!atomic_load(&gone) && comm != MPI_COMM_NULL) {
		MPI_Request rq;
		finish(MPI_Ibarrier(comm, &rq), &rq, true, "barrier", -1);
	}
	beat_stop();
	if (atomic_load(&gone))
		return;
	if (beat_comm != MPI_COMM_NULL)
		MPI_Comm_free(&beat_comm);
	if (comm != MPI_COMM_NULL)
		MPI_Comm_free(&comm);
	if (we_init)
		MPI_Finalize();
}

static int mpi_bcast(void **buf, size_t *len, uint32_t root)
{
	if (atomic_load(&gone))
		return gone_error();
	ctl_len = my_rank == (int)root ? (unsigned long long)*len : 0;
	MPI_Request rq;
	int rc = finish(MPI_Ibcast(&ctl_len, 1, MPI_UNSIGNED_LONG_LONG, (int)root, comm, &rq), &rq,
			true, "broadcast", (int)root);
	if (rc < 0)
		return rc;
	const unsigned long long n = ctl_len;
	char *p = *buf;
	if (my_rank != (int)root) {
		p = NULL;
		if (n > 0 && !(p = malloc((size_t)n)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory for a %llu-byte message", n);
	}
	/* Every rank is in the broadcast now (the engine broadcasts when the
	 * others wait for it): the bytes flow. */
	for (size_t at = 0; at < n; at += PIECE) {
		size_t k = n - at < PIECE ? n - at : PIECE;
		rc = finish(MPI_Ibcast(p + at, (int)k, MPI_BYTE, (int)root, comm, &rq), &rq,
			    n <= SMALL, "broadcast", (int)root);
		if (rc < 0) {
			if (my_rank != (int)root && !atomic_load(&gone))
				free(p); /* (a pending request may still write it) */
			return rc;
		}
	}
	if (my_rank != (int)root) {
		*buf = p;
		*len = (size_t)n;
	}
	return 0;
}

static int mpi_send(const void *buf, size_t len, uint32_t to, uint32_t tag)
{
	if (atomic_load(&gone))
		return gone_error();
	ctl_len = len;
	MPI_Request rq;
	int rc =
	    finish(MPI_Isend(&ctl_len, 1, MPI_UNSIGNED_LONG_LONG, (int)to, (int)tag, comm, &rq),
		   &rq, true, "send", (int)to);
	/* The receiver may be busy for long (rank 0 training its own
	 * clients) before it takes a large message: its word first. */
	if (rc == 0 && len > SMALL)
		rc = finish(MPI_Irecv(&ctl_go, 1, MPI_BYTE, (int)to, GO_TAG(tag), comm, &rq), &rq,
			    true, "send", (int)to);
	for (size_t at = 0; rc == 0 && at < len; at += PIECE) {
		size_t k = len - at < PIECE ? len - at : PIECE;
		rc = finish(MPI_Isend((const char *)buf + at, (int)k, MPI_BYTE, (int)to,
				      DATA_TAG(tag), comm, &rq),
			    &rq, len <= SMALL, "send", (int)to);
	}
	return rc;
}

static int mpi_recv(void **buf, size_t *len, uint32_t from, uint32_t tag)
{
	if (atomic_load(&gone))
		return gone_error();
	MPI_Request rq;
	int rc =
	    finish(MPI_Irecv(&ctl_len, 1, MPI_UNSIGNED_LONG_LONG, (int)from, (int)tag, comm, &rq),
		   &rq, true, "receive", (int)from);
	if (rc < 0)
		return rc;
	const unsigned long long n = ctl_len;
	char *p = NULL;
	if (n > 0 && !(p = malloc((size_t)n)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for a %llu-byte message from rank %u",
				    n, from);
	if (n > SMALL)
		rc = finish(MPI_Isend(&ctl_go, 1, MPI_BYTE, (int)from, GO_TAG(tag), comm, &rq), &rq,
			    true, "receive", (int)from);
	for (size_t at = 0; rc == 0 && at < n; at += PIECE) {
		size_t k = n - at < PIECE ? n - at : PIECE;
		rc =
		    finish(MPI_Irecv(p + at, (int)k, MPI_BYTE, (int)from, DATA_TAG(tag), comm, &rq),
			   &rq, n <= SMALL, "receive", (int)from);
	}
	if (rc < 0) {
		if (!atomic_load(&gone))
			free(p); /* (a pending request may still write it) */
		return rc;
	}
	*buf = p;
	*len = (size_t)n;
	return 0;
}

static const char *mpi_describe(void)
{
	return description;
}

static const struct fedrun_transport_ops mpi_ops = {
    .size = sizeof(struct fedrun_transport_ops),
    .init = mpi_init,
    .finalize = mpi_finalize,
    .bcast = mpi_bcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .describe = mpi_describe,
    .peer_timeout = mpi_peer_timeout,
};

static const struct fedrun_plugin mpi_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_TRANSPORT, "mpi", "1.0.0",
    "the processes of a run started by mpirun or srun talk through MPI", &mpi_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &mpi_plugin : NULL;
}
