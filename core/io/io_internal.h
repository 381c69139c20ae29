/* SPDX-License-Identifier: Apache-2.0 */
/* Writers of core/io for the library's own use, not exported: atomic
 * writes that skip fsync, for files whose durability a later sync covers
 * (the clients' state store, core/run/cstore.c, syncs before a checkpoint
 * refers to its files). */
#ifndef FEDRUN_IO_INTERNAL_H
#define FEDRUN_IO_INTERNAL_H

#include "fedrun/io.h"

/* fedrun_atomic_commit without fsync: the file appears whole or not at
 * all, but a power loss may lose it. */
int io_atomic_commit_nosync(struct fedrun_atomic_file *af);
/* fedrun_st_write without fsync (io_atomic_commit_nosync). */
int io_st_write_nosync(const struct fedrun_st_file *f, const char *path);

#endif
