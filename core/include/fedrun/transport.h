/* SPDX-License-Identifier: Apache-2.0 */
/* The transport between the processes of one run: a plugin of kind
 * FEDRUN_KIND_TRANSPORT whose ops member points at a struct
 * fedrun_transport_ops. fedrun ships one, "mpi" (plugins/transports/mpi.c,
 * built with configure --with-mpi); libfedrun itself never links a
 * transport library. The engine (core/engine/dist.c) loads it when the
 * process was started by a launcher (mpirun, srun) and moves through it only
 * opaque byte buffers: the push and pull messages fedrun serializes and
 * counts in one process, and the engine's own bookkeeping.
 *
 * Rules
 *
 *  - The table's first member is its size, as the transport was built.
 *    Members are only ever added at the end. Every member of ABI 1.0
 *    (up to `describe`) is required.
 *  - Calls come from one thread of each process (the one that called
 *    init); the engine's worker threads never call a transport.
 *  - Every op returns 0 or a negative FEDRUN_E* code with a message
 *    recorded by fedrun_error() that names the peer rank. A transport never
 *    exits, aborts or prints; when a peer is gone it returns FEDRUN_EIO (if
 *    its runtime lets it: an MPI runtime may end the job itself).
 *  - Buffers of any size (beyond 2 GiB too) are the transport's business.
 *  - Ranks are 0 .. nranks − 1; rank 0 is the server.
 */
#ifndef FEDRUN_TRANSPORT_H
#define FEDRUN_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fedrun_transport_ops {
	uint32_t size; /* sizeof(struct fedrun_transport_ops) as built */
	/* Joins the job once per process (later calls return the same):
	 * *rank and *nranks. `threads` is the number of threads the process
	 * will run (the transport is still only called from one). */
	int (*init)(uint32_t threads, uint32_t *rank, uint32_t *nranks);
	/* Leaves the job; called once when the process is done with it
	 * (fedrun registers it to run at exit). */
	void (*finalize)(void);
	/* `root` sends *len bytes from *buf to every rank. Elsewhere *buf
	 * gets a new buffer (free with free(); NULL when *len is 0) and *len
	 * its size. */
	int (*bcast)(void **buf, size_t *len, uint32_t root);
	/* Point to point, in order per (peer, tag); tag < 1024. recv
	 * allocates *buf (free with free(); NULL when *len is 0). */
	int (*send)(const void *buf, size_t len, uint32_t to, uint32_t tag);
	int (*recv)(void **buf, size_t *len, uint32_t from, uint32_t tag);
	/* A one-line description for the log ("Open MPI v4.1.4, 4 ranks on 2
	 * hosts"); static or the transport's own storage. */
	const char *(*describe)(void);
	/* ABI 1.7, optional: from now on an op that waits (for any peer,
	 * however long the peer computes) fails with FEDRUN_EIO, a message
	 * naming each rank not heard from for `seconds` and for how long,
	 * once there is one; 0: wait forever, as a transport without this op
	 * does. Called once after init, before any exchange. Returns 0, or
	 * a negative code with a message when the transport cannot tell (the
	 * engine warns and goes on). A transport whose peer timed out may
	 * skip finalize's wait for every rank, so that the launcher ends the
	 * job when the process exits. */
	int (*peer_timeout)(uint32_t seconds);
};

#ifdef __cplusplus
}
#endif
#endif
