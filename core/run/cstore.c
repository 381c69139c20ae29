/* SPDX-License-Identifier: Apache-2.0 */
/* The clients' kept state between the rounds they train: the optimizer
 * moments of clients.optimizer_state "keep" and, with push selection, each
 * client's own parameters (run/run.h, struct client_state). In memory, or
 * on disk (clients.state_store): one file a client, DIR/clients/<id>.
 * safetensors, read when the client trains and written back after, so
 * that a process holds the state of the clients training now and its
 * memory does not grow with the population (cross-device populations
 * have 10^5 to 10^6 clients; gru-lm's Adam moments are megabytes each).
 * Checkpoints refer to the files by hard link (checkpoint.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* syncfs */
#endif
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/io_internal.h"
#include "run/run.h"

/* "auto" keeps a client's state on disk from this many bytes: below it a
 * file a client costs more (a file system entry, a write each round) than
 * the memory it frees. */
#define CSTORE_AUTO_BYTES (64u << 10)

static uint64_t state_bytes(const struct run *r)
{
	uint64_t b = 0;
	if (r->cfg.optim_state == OPTIM_STATE_KEEP)
		b += r->optim_floats * sizeof(float);
	if (run_push(r))
		b += r->layout->total * sizeof(float);
	return b;
}

int cstore_init(struct run *r)
{
	r->cstore_disk = false;
	if (!run_keeps_clients(r) || state_bytes(r) == 0)
		return 0;
	if (r->cfg.state_store == STATE_STORE_DISK)
		r->cstore_disk = true;
	else if (r->cfg.state_store == STATE_STORE_AUTO)
		r->cstore_disk = state_bytes(r) >= CSTORE_AUTO_BYTES;
	/* Only a run has a directory (validate and the tests' runs without
	 * one keep the state in memory). */
	if (!r->run_dir)
		r->cstore_disk = false;
	if (!r->cstore_disk)
		return 0;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/clients", r->run_dir);
	int rc = fedrun_mkdir_p(dir);
	return rc < 0 ? fedrun_error_wrap(rc, "clients.state_store: ") : 0;
}

void cstore_path(const struct run *r, uint32_t client, char *buf, size_t n)
{
	snprintf(buf, n, "%s/clients/%" PRIu32 ".safetensors", r->run_dir, client);
}

/* The buffers of a client's state, zeroed (a client that has not
 * trained). Parameters are made when it has trained (client.c). */
static int alloc_state(struct run *r, struct client_state *cs)
{
	if (r->cfg.optim_state == OPTIM_STATE_KEEP && r->optim_floats && !cs->optim &&
	    !(cs->optim = fedrun_arena_alloc(r->optim_floats)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory for client %u's state", cs->client);
	return 0;
}

static void free_state(struct client_state *cs)
{
	fedrun_arena_free(cs->optim);
	fedrun_arena_free(cs->params);
	cs->optim = cs->params = NULL;
}

void cstore_drop(struct run *r, struct client_state *cs)
{
	if (r->cstore_disk)
		free_state(cs);
}

/* Copies tensor `name` of f (count floats) to *dst, allocated when NULL. */
static int load_tensor(const struct fedrun_st_file *f, const char *path, const char *name,
		       uint64_t count, float **dst)
{
	const struct fedrun_st_tensor *t = fedrun_st_find(f, name);
	if (!t || t->dtype != FEDRUN_F32 || t->bytes != count * sizeof(float))
		return fedrun_error(FEDRUN_EFORMAT, "%s: '%s' is %s", path, name,
				    t ? "of another size" : "missing");
	if (!*dst && !(*dst = fedrun_arena_alloc(count)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	memcpy(*dst, t->data, t->bytes);
	return 0;
}

int cstore_read(struct run *r, struct client_state *cs, const char *path)
{
	struct fedrun_st_file f;
	int rc = fedrun_st_read(&f, path);
	if (rc < 0)
		return fedrun_error_wrap(rc, "client %u's kept state: ", cs->client);
	if (fedrun_st_checksum_kind(&f) != FEDRUN_ST_CHECKSUM_FULL)
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: client %u's kept state has no checksum", path,
				  cs->client);
	if (rc == 0 && r->cfg.optim_state == OPTIM_STATE_KEEP && r->optim_floats)
		rc = load_tensor(&f, path, "optim", r->optim_floats, &cs->optim);
	if (rc == 0 && run_push(r) && fedrun_st_find(&f, "params"))
		rc = load_tensor(&f, path, "params", r->layout->total, &cs->params);
	fedrun_st_fini(&f);
	return rc;
}

int cstore_checkout(struct run *r, struct client_state *cs)
{
	int rc = 0;
	if (r->cstore_disk && cs->stored) {
		char path[4096];
		cstore_path(r, cs->client, path, sizeof path);
		rc = cstore_read(r, cs, path);
	}
	if (rc == 0)
		rc = alloc_state(r, cs);
	if (rc < 0)
		cstore_drop(r, cs);
	return rc;
}

int cstore_write(const struct run *r, const struct client_state *cs, const char *path)
{
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	char id[16];
	snprintf(id, sizeof id, "%" PRIu32, cs->client);
	int rc = fedrun_st_meta_set(&f, "fedrun.client", id);
	if (rc == 0 && cs->optim)
		rc = fedrun_st_add(&f, "optim", FEDRUN_F32, 1, &r->optim_floats, cs->optim);
	if (rc == 0 && cs->params)
		rc = fedrun_st_add(&f, "params", FEDRUN_F32, 1, &r->layout->total, cs->params);
	/* Not synced here: checkpoint_write syncs the store before a
	 * checkpoint refers to its files, and a resume starts from those. */
	if (rc == 0)
		rc = io_st_write_nosync(&f, path);
	fedrun_st_fini(&f);
	return rc;
}

int cstore_checkin(struct run *r, struct client_state *cs)
{
	if (!r->cstore_disk)
		return 0;
	char path[4096];
	cstore_path(r, cs->client, path, sizeof path);
	int rc = cstore_write(r, cs, path);
	if (rc < 0)
		fedrun_error_wrap(rc, "client %u's kept state: ", cs->client);
	else
		cs->stored = true;
	cstore_drop(r, cs);
	return rc;
}

void cstore_forget(struct run *r, struct client_state *cs)
{
	char path[4096];
	if (r->cstore_disk && cs->stored) {
		cstore_path(r, cs->client, path, sizeof path);
		unlink(path);
	}
	cs->stored = false;
	free_state(cs);
}

int cstore_sync(const struct run *r)
{
	if (!r->cstore_disk)
		return 0;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/clients", r->run_dir);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fedrun_error(FEDRUN_EIO, "%s: %s", dir, strerror(errno));
	/* One sync of the file system for the files written since the last
	 * checkpoint, instead of an fsync per client file and round. */
#ifdef __linux__
	int rc = syncfs(fd) == 0 ? 0 : fedrun_error(FEDRUN_EIO, "%s: sync: %s", dir, strerror(errno));
#else
	sync(); /* no per-file-system sync: all of them */
	int rc = 0;
#endif
	close(fd);
	return rc;
}

/* Whether name is a store file: "<digits>.safetensors", or one of its
 * temporaries ("<digits>.safetensors.tmp.<pid>") when tmp. */
static bool store_name(const char *name, bool tmp)
{
	size_t d = strspn(name, "0123456789");
	if (d == 0 || d > 10 || strncmp(name + d, ".safetensors", 12) != 0)
		return false;
	const char *rest = name + d + 12;
	if (!*rest)
		return true;
	return tmp && strncmp(rest, ".tmp.", 5) == 0 && rest[5] &&
	       strspn(rest + 5, "0123456789") == strlen(rest + 5);
}

int cstore_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : fedrun_error(FEDRUN_EIO, "%s: %s", dir, strerror(errno));
	char path[4096];
	int rc = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!store_name(e->d_name, true))
			continue; /* only the store's own files go */
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (unlink(path) != 0 && errno != ENOENT && rc == 0)
			rc = fedrun_error(FEDRUN_EIO, "cannot remove %s: %s", path, strerror(errno));
	}
	closedir(d);
	if (rc == 0 && rmdir(dir) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST)
		rc = fedrun_error(FEDRUN_EIO, "cannot remove %s: %s", dir, strerror(errno));
	return rc;
}

int cstore_clear(const char *run_dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/clients", run_dir);
	return cstore_remove_dir(path);
}
