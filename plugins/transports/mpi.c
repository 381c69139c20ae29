/* The "mpi" transport (fedrun/transport.h): the processes of a run started
 * by mpirun or srun exchange fedrun's messages through MPI. Built with
 * configure --with-mpi; the only fedrun code that links MPI.
 *
 * Messages of any size: a length, then pieces of at most 1 GiB (MPI counts
 * are ints). The communicator is a duplicate of MPI_COMM_WORLD whose errors
 * return (MPI_ERRORS_RETURN), so that a failed call becomes a message that
 * names the peer; whether a dead peer is noticed is the MPI runtime's
 * business (Open MPI ends the whole job and names the rank that died). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <fedrun/fedrun.h>

#define PIECE ((size_t)1 << 30)
#define DATA_TAG(tag) ((int)(tag) + 1024)

static MPI_Comm comm = MPI_COMM_NULL;
static int my_rank, nranks, we_init;
static char description[256];

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
		int inited = 0, provided = 0, err;
		MPI_Initialized(&inited);
		if (!inited) {
			err = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
			if (err != MPI_SUCCESS)
				return fedrun_error(FEDRUN_EIO, "MPI_Init_thread failed (error %d)", err);
			we_init = 1;
		}
		if ((err = MPI_Comm_dup(MPI_COMM_WORLD, &comm)) != MPI_SUCCESS)
			return mpi_fail(err, "communicator", -1);
		MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
		MPI_Comm_rank(comm, &my_rank);
		MPI_Comm_size(comm, &nranks);
		describe_job();
	}
	*rank = (uint32_t)my_rank;
	*size = (uint32_t)nranks;
	return 0;
}

static void mpi_finalize(void)
{
	int done = 0;
	MPI_Finalized(&done);
	if (done)
		return;
	if (comm != MPI_COMM_NULL)
		MPI_Comm_free(&comm);
	if (we_init)
		MPI_Finalize();
}

static int mpi_bcast(void **buf, size_t *len, uint32_t root)
{
	unsigned long long n = my_rank == (int)root ? (unsigned long long)*len : 0;
	int err = MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, (int)root, comm);
	if (err != MPI_SUCCESS)
		return mpi_fail(err, "broadcast", (int)root);
	char *p = *buf;
	if (my_rank != (int)root) {
		p = NULL;
		if (n > 0 && !(p = malloc((size_t)n)))
			return fedrun_error(FEDRUN_ENOMEM, "out of memory for a %llu-byte message", n);
	}
	for (size_t at = 0; at < n; at += PIECE) {
		size_t k = n - at < PIECE ? n - at : PIECE;
		if ((err = MPI_Bcast(p + at, (int)k, MPI_BYTE, (int)root, comm)) != MPI_SUCCESS) {
			if (my_rank != (int)root)
				free(p);
			return mpi_fail(err, "broadcast", (int)root);
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
	unsigned long long n = len;
	int err = MPI_Send(&n, 1, MPI_UNSIGNED_LONG_LONG, (int)to, (int)tag, comm);
	for (size_t at = 0; err == MPI_SUCCESS && at < len; at += PIECE) {
		size_t k = len - at < PIECE ? len - at : PIECE;
		err = MPI_Send((const char *)buf + at, (int)k, MPI_BYTE, (int)to, DATA_TAG(tag), comm);
	}
	return err == MPI_SUCCESS ? 0 : mpi_fail(err, "send", (int)to);
}

static int mpi_recv(void **buf, size_t *len, uint32_t from, uint32_t tag)
{
	unsigned long long n = 0;
	int err = MPI_Recv(&n, 1, MPI_UNSIGNED_LONG_LONG, (int)from, (int)tag, comm,
			   MPI_STATUS_IGNORE);
	if (err != MPI_SUCCESS)
		return mpi_fail(err, "receive", (int)from);
	char *p = NULL;
	if (n > 0 && !(p = malloc((size_t)n)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for a %llu-byte message from rank %u",
				    n, from);
	for (size_t at = 0; at < n; at += PIECE) {
		size_t k = n - at < PIECE ? n - at : PIECE;
		err = MPI_Recv(p + at, (int)k, MPI_BYTE, (int)from, DATA_TAG(tag), comm,
			       MPI_STATUS_IGNORE);
		if (err != MPI_SUCCESS) {
			free(p);
			return mpi_fail(err, "receive", (int)from);
		}
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
};

static const struct fedrun_plugin mpi_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_TRANSPORT, "mpi", "1.0.0",
    "the processes of a run started by mpirun or srun talk through MPI", &mpi_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &mpi_plugin : NULL;
}
