/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoints (everything --resume needs: θ, aggregator state, clients'
 * optimizer state), the final model, and "init" from a safetensors file.
 * All are safetensors files written atomically. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "run/run.h"

#define CLIENT_PREFIX "__client__."

uint32_t run_statefuls(const struct run *r, struct stateful out[RUN_STATEFULS_MAX])
{
	uint32_t n = 0;
#define HAS_OP(ops, type, member) \
	((ops) && (ops)->size >= offsetof(type, member) + sizeof(void *) && (ops)->member)
	if (HAS_OP(r->agg_ops, struct fedrun_aggregator_ops, state))
		out[n++] = (struct stateful){"__aggregator__.", r->agg_ops->state, r->aggregator.state};
	if (HAS_OP(r->sel_ops, struct fedrun_selector_ops, state)) {
		out[n++] = (struct stateful){"__selector__.", r->sel_ops->state, r->selector.state};
		if (r->push_selector != r->selector.state)
			out[n++] = (struct stateful){"__selector_push__.", r->sel_ops->state,
						     r->push_selector};
	}
	if (HAS_OP(r->priv_ops, struct fedrun_privacy_ops, state))
		out[n++] = (struct stateful){"__privacy__.", r->priv_ops->state, r->privacy.state};
#undef HAS_OP
	return n;
}

static void ckpt_path(const struct run *r, uint32_t round, char *buf, size_t n)
{
	snprintf(buf, n, "%s/checkpoints/round-%06u.safetensors", r->cfg.dir, round);
}

/* With the clients' state on disk (cstore.c), a checkpoint's directory of
 * hard links to the store's files as they were at its round. */
static void links_path(const char *dir, uint32_t round, char *buf, size_t n)
{
	snprintf(buf, n, "%s/checkpoints/round-%06u.clients", dir, round);
}

/* dst becomes another name of src (a hard link: no copy, and a file the
 * store replaces later keeps its old contents here); where the file
 * system has no hard links (or dst lies on another), a copy. */
static int link_or_copy(const char *src, const char *dst)
{
	if (link(src, dst) == 0)
		return 0;
	if (errno != EXDEV && errno != EPERM && errno != EMLINK && errno != ENOTSUP)
		return fedrun_error(FEDRUN_EIO, "cannot link %s to %s: %s", src, dst, strerror(errno));
	char *data = NULL;
	size_t n = 0;
	int rc = fedrun_read_file(src, &data, &n);
	if (rc == 0)
		rc = fedrun_write_file_atomic(dst, data, n);
	free(data);
	return rc;
}

/* The checkpoint's links to every stored client's file, made in a
 * temporary directory and renamed into place before the checkpoint file
 * that needs them is written. */
static int links_write(struct run *r)
{
	char dir[4096], tmp[4200], src[4096], dst[4400];
	links_path(r->cfg.dir, r->round, dir, sizeof dir);
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
	int rc = cstore_sync(r);
	(void)cstore_remove_dir(tmp);
	if (rc == 0 && mkdir(tmp, 0777) != 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot create %s: %s", tmp, strerror(errno));
	for (uint32_t i = 0; rc == 0 && i < r->ncstates; i++) {
		const struct client_state *cs = &r->cstates[i];
		if (!cs->stored)
			continue;
		cstore_path(r, cs->client, src, sizeof src);
		snprintf(dst, sizeof dst, "%s/%" PRIu32 ".safetensors", tmp, cs->client);
		rc = link_or_copy(src, dst);
	}
	if (rc == 0) {
		(void)cstore_remove_dir(dir); /* a checkpoint of this round written before */
		if (rename(tmp, dir) != 0)
			rc = fedrun_error(FEDRUN_EIO, "cannot rename %s to %s: %s", tmp, dir,
					  strerror(errno));
	}
	if (rc < 0)
		(void)cstore_remove_dir(tmp);
	return rc;
}

static int add_meta(struct fedrun_st_file *f, const struct run *r, uint32_t round)
{
	char num[32];
	snprintf(num, sizeof num, "%u", round);
	int rc = fedrun_st_meta_set(f, "fedrun.round", num);
	snprintf(num, sizeof num, "%" PRId64, r->cfg.seed);
	if (rc == 0)
		rc = fedrun_st_meta_set(f, "fedrun.seed", num);
	if (rc == 0)
		rc = fedrun_st_meta_set(f, "fedrun.model", r->model.desc->name);
	if (rc == 0)
		rc = fedrun_st_meta_set(f, "fedrun.version", PACKAGE_VERSION);
	return rc;
}

static int round_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Removes the checkpoints beyond the newest output.keep, found by name in
 * the directory: they need not be checkpoint_every apart (a signal writes
 * one whatever the round, and with checkpoint_every 0 it is the only one). */
static void prune(const struct run *r)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/checkpoints", r->cfg.dir);
	DIR *d = opendir(path);
	uint32_t *rounds = NULL, n = 0, cap = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		unsigned rd;
		char tail[32];
		if (sscanf(e->d_name, "round-%u.%31s", &rd, tail) != 2 || strcmp(tail, "safetensors") != 0)
			continue;
		if (n == cap) {
			uint32_t *more = realloc(rounds, (cap = cap ? 2 * cap : 16) * sizeof *rounds);
			if (!more)
				break; /* pruning is best effort */
			rounds = more;
		}
		rounds[n++] = rd;
	}
	if (d)
		closedir(d);
	if (n > 1)
		qsort(rounds, n, sizeof *rounds, round_desc);
	for (uint32_t i = (uint32_t)r->cfg.ckpt_keep; i < n; i++) {
		ckpt_path(r, rounds[i], path, sizeof path);
		unlink(path);
		links_path(r->cfg.dir, rounds[i], path, sizeof path);
		(void)cstore_remove_dir(path); /* best effort, as the rest */
	}
	free(rounds);
}

/* ---- temporary files left by killed writes ---------------------------- */

/* Folders of a run directory and the files fedrun writes there atomically
 * (fedrun_atomic_open: through "NAME.tmp.PID", renamed over NAME). */
enum tmp_folder { TMP_RUN, TMP_ROUNDS, TMP_CLIENTS, TMP_STORE, TMP_LINKS };

/* Whether `base` (len bytes) is a file fedrun writes atomically in a
 * folder of kind `k`: the run directory's own files (metrics.jsonl and
 * metrics.csv too: earlier versions rewrote them so on resume),
 * round-NNNNNN.safetensors in checkpoints/, client-N.safetensors in
 * finetuned/ and experts/, each named exactly as fedrun names it. */
static bool atomic_name(const char *base, size_t len, enum tmp_folder k)
{
	static const char *const own[] = {"pipeline.json", "metrics.jsonl", "metrics.csv",
					  "final.safetensors", "eval_matrix.tsv"};
	if (k == TMP_RUN) {
		for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
			if (strlen(own[i]) == len && memcmp(own[i], base, len) == 0)
				return true;
		return false;
	}
	const char *pre = k == TMP_ROUNDS || k == TMP_LINKS ? "round-" : k == TMP_STORE ? "" : "client-";
	size_t np = strlen(pre);
	if (len <= np || len > 40 || (np && memcmp(base, pre, np) != 0))
		return false;
	unsigned long v = 0;
	size_t i = np;
	for (; i < len && i < np + 10 && base[i] >= '0' && base[i] <= '9'; i++)
		v = 10 * v + (unsigned long)(base[i] - '0');
	if (i == np || v > UINT32_MAX)
		return false;
	/* The name fedrun gives that number: no other spelling of it. */
	char want[48];
	int n = snprintf(want, sizeof want,
			 k == TMP_ROUNDS  ? "round-%06lu.safetensors"
			 : k == TMP_LINKS ? "round-%06lu.clients"
			 : k == TMP_STORE ? "%lu.safetensors"
					  : "client-%lu.safetensors",
			 v);
	return n > 0 && (size_t)n == len && memcmp(want, base, len) == 0;
}

/* The PID of `name` when it is the temporary file of an atomic write of a
 * file fedrun writes in a folder of kind k ("NAME.tmp.PID", PID as getpid
 * gives it: digits, no leading zero), else 0. */
static long tmp_pid(const char *name, enum tmp_folder k)
{
	const char *t = strstr(name, ".tmp.");
	if (!t || !atomic_name(name, (size_t)(t - name), k))
		return 0;
	const char *d = t + 5;
	size_t nd = strspn(d, "0123456789");
	if (nd == 0 || nd > 10 || d[nd] != '\0' || d[0] == '0')
		return 0;
	long pid = strtol(d, NULL, 10);
	return pid <= INT32_MAX ? pid : 0;
}

void run_remove_stale_tmp(struct run *r)
{
	static const struct {
		const char *sub;
		enum tmp_folder kind;
	} folders[] = {{"", TMP_RUN},	       {"/checkpoints", TMP_ROUNDS},
		       {"/finetuned", TMP_CLIENTS}, {"/experts", TMP_CLIENTS},
		       {"/clients", TMP_STORE},	       {"/checkpoints", TMP_LINKS}};
	char gone[512] = "";
	size_t used = 0;
	uint32_t n = 0, listed = 0;
	for (size_t f = 0; f < sizeof folders / sizeof folders[0]; f++) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s%s", r->cfg.dir, folders[f].sub);
		DIR *d = opendir(dir);
		for (struct dirent *e; d && (e = readdir(d));) {
			long pid = tmp_pid(e->d_name, folders[f].kind);
			/* A process of that PID may be writing it still (another
			 * fedrun in this directory): only a dead writer's file
			 * goes. */
			if (pid == 0 || pid == (long)getpid() ||
			    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
				continue;
			struct stat st;
			char sub[8200];
			snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
			/* a checkpoint's links (cstore.c) are a directory */
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			    (folders[f].kind == TMP_LINKS
				 ? !S_ISDIR(st.st_mode) || cstore_remove_dir(sub) < 0
				 : !S_ISREG(st.st_mode) || unlinkat(dirfd(d), e->d_name, 0) != 0))
				continue;
			n++;
			/* One line of at most a few names, however many went. */
			int w = snprintf(gone + used, sizeof gone - used, "%s%s%s%s", n > 1 ? ", " : "",
					 folders[f].sub[0] ? folders[f].sub + 1 : "",
					 folders[f].sub[0] ? "/" : "", e->d_name);
			if (listed < 4 && w > 0 && (size_t)w < sizeof gone - used) {
				used += (size_t)w;
				listed++;
			} else {
				gone[used] = '\0';
			}
		}
		if (d)
			closedir(d);
	}
	if (n > 0)
		r->host.log(r, FEDRUN_LOG_WARN,
			    "%s: removed %u temporary file%s that a killed fedrun left: %s%s", r->cfg.dir,
			    n, n > 1 ? "s" : "", gone, n > listed ? ", ..." : "");
}

int checkpoint_write(struct run *r)
{
	char dir[4096], path[4096];
	snprintf(dir, sizeof dir, "%s/checkpoints", r->cfg.dir);
	int rc = fedrun_mkdir_p(dir);
	if (rc < 0)
		return rc;
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	char name[FEDRUN_NAME_MAX + 64]; /* fedrun_st_add copies it */
	uint64_t *steps = NULL, one = 1;
	rc = add_meta(&f, r, r->round);
	/* The clients' state by reference: the files of round-N.clients/. */
	if (rc == 0 && r->cstore_disk)
		rc = fedrun_st_meta_set(&f, "fedrun.client_state", "files");
	if (rc == 0 && r->cstore_disk)
		rc = links_write(r);
	if (rc == 0)
		rc = fedrun_st_add_layout(&f, r->layout, r->theta);
	if (rc == 0)
		rc = fedrun_st_add(&f, "__server__.step", FEDRUN_U64, 1, &one, &r->global_step);
	if (rc == 0 && run_push(r)) {
		rc = fedrun_st_add(&f, "__server__.init", FEDRUN_F32, 1, &r->layout->total, r->theta_init);
		if (rc == 0)
			rc = fedrun_st_add(&f, "__server__.last", FEDRUN_F32, 1, &r->layout->total,
					   r->theta_last);
	}

	struct stateful sf[RUN_STATEFULS_MAX];
	const struct fedrun_state_blob *blobs[4] = {NULL};
	uint32_t nblobs[4] = {0}, nsf = run_statefuls(r, sf), total = 0;
	for (uint32_t j = 0; rc == 0 && j < nsf; j++) {
		rc = sf[j].state(sf[j].st, &blobs[j], &nblobs[j]);
		total += nblobs[j];
	}
	steps = calloc(r->ncstates + 1, sizeof *steps);
	if (rc == 0 && !steps)
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	for (uint32_t j = 0; rc == 0 && j < nsf; j++)
		for (uint32_t i = 0; rc == 0 && i < nblobs[j]; i++) {
			snprintf(name, sizeof name, "%s%s", sf[j].prefix, blobs[j][i].name);
			const void *data = blobs[j][i].data;
			if (r->blob_overlay)
				data = r->blob_overlay(r, sf[j].prefix, i, data, blobs[j][i].bytes);
			rc = fedrun_st_add(&f, name, FEDRUN_U8, 1, &blobs[j][i].bytes, data);
		}
	for (uint32_t i = 0; rc == 0 && i < r->ncstates; i++) {
		const struct client_state *cs = &r->cstates[i];
		steps[i] = cs->step;
		snprintf(name, sizeof name, CLIENT_PREFIX "%u.step", cs->client);
		rc = fedrun_st_add(&f, name, FEDRUN_U64, 1, &one, &steps[i]);
		if (rc == 0 && cs->optim) {
			snprintf(name, sizeof name, CLIENT_PREFIX "%u.optim", cs->client);
			rc = fedrun_st_add(&f, name, FEDRUN_F32, 1, &r->optim_floats, cs->optim);
		}
		if (rc == 0 && cs->params) {
			snprintf(name, sizeof name, CLIENT_PREFIX "%u.params", cs->client);
			rc = fedrun_st_add(&f, name, FEDRUN_F32, 1, &r->layout->total, cs->params);
		}
		/* on disk: its state is round-N.clients/<client>.safetensors */
		if (rc == 0 && r->cstore_disk && cs->stored) {
			static const uint8_t yes = 1;
			snprintf(name, sizeof name, CLIENT_PREFIX "%u.file", cs->client);
			rc = fedrun_st_add(&f, name, FEDRUN_U8, 1, &one, &yes);
		}
	}
	if (rc == 0) {
		ckpt_path(r, r->round, path, sizeof path);
		rc = fedrun_st_write(&f, path);
	}
	fedrun_st_fini(&f);
	free(steps);
	if (rc == 0)
		prune(r);
	return rc;
}

int checkpoint_latest(const char *dir, uint32_t *round, char **path)
{
	char cdir[4096];
	snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
	DIR *d = opendir(cdir);
	*round = 0;
	*path = NULL;
	if (!d)
		return fedrun_error(FEDRUN_ENOENT, "%s: no checkpoints to resume from", dir);
	struct dirent *e;
	unsigned best = 0;
	int found = 0;
	while ((e = readdir(d)) != NULL) {
		unsigned rd;
		char tail[32];
		if (sscanf(e->d_name, "round-%u.%31s", &rd, tail) == 2 &&
		    strcmp(tail, "safetensors") == 0 && (!found || rd > best)) {
			best = rd;
			found = 1;
		}
	}
	closedir(d);
	if (!found)
		return fedrun_error(FEDRUN_ENOENT, "%s: no checkpoints to resume from", cdir);
	size_t n = strlen(cdir) + 64;
	*path = malloc(n);
	if (!*path)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	snprintf(*path, n, "%s/round-%06u.safetensors", cdir, best);
	*round = best;
	return 0;
}

int checkpoint_round(const struct fedrun_st_file *f, const char *path, uint32_t *round)
{
	const char *v = fedrun_st_meta_get(f, "fedrun.round");
	if (!v)
		return fedrun_error(FEDRUN_EFORMAT, "%s: not a fedrun checkpoint (no fedrun.round)", path);
	char *end;
	unsigned long n = strtoul(v, &end, 10);
	if (*v < '0' || *v > '9' || *end || n > UINT32_MAX)
		return fedrun_error(FEDRUN_EFORMAT, "%s: fedrun.round is \"%.20s\", not a round number",
				    path, v);
	/* A checkpoint's name says its round too: they must agree. */
	const char *base = strrchr(path, '/');
	unsigned named;
	char tail[32];
	if (sscanf(base ? base + 1 : path, "round-%u.%31s", &named, tail) == 2 &&
	    strcmp(tail, "safetensors") == 0 && named != n)
		return fedrun_error(FEDRUN_EFORMAT, "%s: fedrun.round is %lu, the file's name says %u",
				    path, n, named);
	*round = (uint32_t)n;
	return 0;
}

/* A client's state from the checkpoint's file links/<client>.safetensors:
 * linked into the store (on disk) or read (in memory). */
static int client_file_load(struct run *r, const char *links, struct client_state *cs)
{
	char src[4200], dst[4096];
	snprintf(src, sizeof src, "%s/%" PRIu32 ".safetensors", links, cs->client);
	if (access(src, R_OK) != 0)
		return fedrun_error(FEDRUN_EFORMAT,
				    "cannot resume: client %u's kept state %s is missing: %s",
				    cs->client, src, strerror(errno));
	if (!r->cstore_disk)
		return cstore_read(r, cs, src);
	cstore_path(r, cs->client, dst, sizeof dst);
	int rc = link_or_copy(src, dst);
	if (rc == 0)
		cs->stored = true;
	return rc;
}

/* Whether `name` is the client entry CLIENT_PREFIX "<client>.<what>" as
 * checkpoint_write spells it, and if so its client and kind. */
static bool client_entry(const char *name, unsigned *client, char what[16])
{
	char want[64];
	if (sscanf(name, CLIENT_PREFIX "%u.%15s", client, what) != 2)
		return false;
	snprintf(want, sizeof want, CLIENT_PREFIX "%u.%s", *client, what);
	return strcmp(want, name) == 0;
}

int checkpoint_load(struct run *r, const char *path)
{
	uint8_t *has_file = NULL; /* by client: its state is a file (on disk) */
	uint32_t *params_at = NULL, *optim_at = NULL; /* by client: index in f.t */
	struct fedrun_st_file f;
	int rc = fedrun_st_read(&f, path);
	if (rc < 0)
		return rc;
	/* Everything resume reads is covered by the checksum (header and
	 * data), and the round is checked against the file's name. */
	if (fedrun_st_checksum_kind(&f) != FEDRUN_ST_CHECKSUM_FULL) {
		rc = fedrun_error(FEDRUN_EFORMAT,
				  "%s: no checksum over its header and data (a file this fedrun did "
				  "not write, or its checksum entry is damaged): not resumed",
				  path);
		goto out;
	}
	uint32_t want;
	if ((rc = checkpoint_round(&f, path, &want)) < 0)
		goto out;
	if (run_push(r)) {
		const char *names[2] = {"__server__.init", "__server__.last"};
		float *dst[2] = {r->theta_init, r->theta_last};
		for (int j = 0; j < 2; j++) {
			const struct fedrun_st_tensor *t = fedrun_st_find(&f, names[j]);
			if (!t || t->dtype != FEDRUN_F32 || t->bytes != r->layout->total * sizeof(float)) {
				rc = fedrun_error(FEDRUN_EFORMAT, "%s: '%s' is %s", path, names[j],
						  t ? "of another size" : "missing");
				goto out;
			}
			memcpy(dst[j], t->data, t->bytes);
		}
	}
	const char *model = fedrun_st_meta_get(&f, "fedrun.model");
	if (!model) {
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: not a fedrun checkpoint (no fedrun.model)", path);
		goto out;
	}
	if (strcmp(model, r->model.desc->name) != 0) {
		rc = fedrun_error(FEDRUN_EFORMAT, "%s: a checkpoint of model '%s', the pipeline has '%s'",
				  path, model, r->model.desc->name);
		goto out;
	}
	r->round = want;
	const struct fedrun_st_tensor *gs = fedrun_st_find(&f, "__server__.step");
	if (!gs || gs->dtype != FEDRUN_U64 || gs->bytes != 8) {
		rc = fedrun_error(FEDRUN_EFORMAT,
				  "%s: the server's global step '__server__.step' is %s (checkpoints "
				  "written before fedrun saved it cannot be resumed)",
				  path, gs ? "not one u64" : "missing");
		goto out;
	}
	memcpy(&r->global_step, gs->data, 8);
	rc = fedrun_st_load_layout(&f, r->layout, r->theta, "__");
	if (rc < 0) {
		fedrun_error_wrap(rc, "%s: ", path);
		goto out;
	}
	struct stateful sf[RUN_STATEFULS_MAX];
	uint32_t nsf = run_statefuls(r, sf);
	for (uint32_t j = 0; j < nsf; j++) {
		const struct fedrun_state_blob *blobs = NULL;
		uint32_t nblobs = 0;
		if ((rc = sf[j].state(sf[j].st, &blobs, &nblobs)) < 0)
			goto out;
		for (uint32_t i = 0; i < nblobs; i++) {
			char name[FEDRUN_NAME_MAX + 64];
			snprintf(name, sizeof name, "%s%s", sf[j].prefix, blobs[i].name);
			const struct fedrun_st_tensor *t = fedrun_st_find(&f, name);
			if (!t || t->bytes != blobs[i].bytes) {
				rc = fedrun_error(FEDRUN_EFORMAT, "%s: plugin state '%s' is %s", path, name,
						  t ? "of another size" : "missing");
				goto out;
			}
			memcpy(blobs[i].data, t->data, t->bytes);
		}
	}
	/* The clients' state by reference (checkpoint_write with the state
	 * on disk): the files of round-N.clients/. The store starts again
	 * from those files. */
	const char *kind = fedrun_st_meta_get(&f, "fedrun.client_state");
	const bool files = kind && strcmp(kind, "files") == 0;
	char links[4096];
	links_path(r->cfg.dir, want, links, sizeof links);
	if (r->cstore_disk) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/clients", r->run_dir);
		if ((rc = cstore_clear(r->run_dir)) < 0 || (rc = fedrun_mkdir_p(dir)) < 0)
			goto out;
	}
	/* Each client's parameters, optimizer state and file mark, found in
	 * one pass: looking each up by name (fedrun_st_find goes through the
	 * list) made resuming 100,000 clients quadratic (41 s for a round of
	 * 0.5 s). */
	params_at = malloc(((size_t)r->num_clients + 1) * sizeof *params_at);
	optim_at = malloc(((size_t)r->num_clients + 1) * sizeof *optim_at);
	has_file = calloc((size_t)r->num_clients + 1, 1);
	if (!params_at || !optim_at || !has_file) {
		rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		goto out;
	}
	memset(params_at, 0xff, ((size_t)r->num_clients + 1) * sizeof *params_at);
	memset(optim_at, 0xff, ((size_t)r->num_clients + 1) * sizeof *optim_at);
	for (uint32_t i = 0; i < f.n; i++) {
		unsigned client;
		char what[16];
		if (!client_entry(f.t[i].name, &client, what) || client >= r->num_clients)
			continue;
		if (strcmp(what, "params") == 0)
			params_at[client] = i;
		else if (strcmp(what, "optim") == 0)
			optim_at[client] = i;
		else if (strcmp(what, "file") == 0)
			has_file[client] = 1;
	}
	for (uint32_t i = 0; i < f.n; i++) {
		unsigned client;
		char what[16];
		if (sscanf(f.t[i].name, CLIENT_PREFIX "%u.%15s", &client, what) != 2 ||
		    strcmp(what, "step") != 0)
			continue;
		if (client >= r->num_clients || f.t[i].dtype != FEDRUN_U64 || f.t[i].bytes != 8) {
			rc = fedrun_error(FEDRUN_EFORMAT, "%s: bad client state '%s'", path, f.t[i].name);
			goto out;
		}
		struct client_state *cs = run_client_state(r, client, &rc);
		if (!cs)
			goto out;
		memcpy(&cs->step, f.t[i].data, 8);
		if (files) {
			if (has_file[client] && (rc = client_file_load(r, links, cs)) < 0)
				goto out;
			continue;
		}
		/* State in the checkpoint itself: into the store (on disk, a
		 * file written now). */
		if ((rc = cstore_checkout(r, cs)) < 0)
			goto out;
		const struct fedrun_st_tensor *pt =
			params_at[client] != UINT32_MAX ? &f.t[params_at[client]] : NULL;
		if (pt && run_push(r)) {
			if (pt->dtype != FEDRUN_F32 || pt->bytes != r->layout->total * sizeof(float)) {
				rc = fedrun_error(FEDRUN_EFORMAT, "%s: client %u parameters are of another size",
						  path, client);
				goto out;
			}
			if (!cs->params && !(cs->params = fedrun_arena_alloc(r->layout->total))) {
				cstore_drop(r, cs);
				rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
				goto out;
			}
			memcpy(cs->params, pt->data, pt->bytes);
		}
		if (cs->optim) {
			const struct fedrun_st_tensor *t =
				optim_at[client] != UINT32_MAX ? &f.t[optim_at[client]] : NULL;
			if (!t || t->dtype != FEDRUN_F32 || t->bytes != r->optim_floats * sizeof(float)) {
				cstore_drop(r, cs);
				rc = fedrun_error(FEDRUN_EFORMAT, "%s: client %u optimizer state is %s",
						  path, client, t ? "of another size" : "missing");
				goto out;
			}
			memcpy(cs->optim, t->data, t->bytes);
		}
		if ((rc = cstore_checkin(r, cs)) < 0)
			goto out;
	}
	rc = 0;
out:
	free(has_file);
	free(params_at);
	free(optim_at);
	fedrun_st_fini(&f);
	return rc;
}

int final_write(struct run *r)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/final.safetensors", r->cfg.dir);
	struct fedrun_st_file f;
	fedrun_st_init(&f);
	int rc = add_meta(&f, r, r->round);
	if (rc == 0)
		rc = fedrun_st_add_layout(&f, r->layout, r->theta);
	if (rc == 0)
		rc = fedrun_st_write(&f, path);
	fedrun_st_fini(&f);
	return rc;
}

static void shape_str(const uint64_t *shape, uint32_t ndim, char *buf, size_t n)
{
	size_t a = 0;
	buf[0] = 0;
	for (uint32_t d = 0; d < ndim && a < n; d++)
		a += (size_t)snprintf(buf + a, n - a, "%s%" PRIu64, d ? "x" : "", shape[d]);
}

/* A parameters file (`what`: the pipeline key that named it) whose tensors
 * have other shapes than the model's: names the first such tensor and the likely cause. When only the first dimension
 * differs, by the same sizes for every such tensor, that is the vocabulary
 * (embeddings are vocabulary x width): the model was built with another
 * tokenizer than the run that wrote the file. Returns 0 when the shapes
 * agree (fedrun_st_load_layout reports any other misfit). */
static int init_misfit(const struct fedrun_st_file *f, const struct fedrun_layout *l,
		       const char *path, const char *what)
{
	const struct fedrun_tensor_info *first = NULL;
	const struct fedrun_st_tensor *first_s = NULL;
	bool vocab = true;
	for (uint32_t i = 0; i < l->n; i++) {
		const struct fedrun_tensor_info *t = &l->t[i];
		const struct fedrun_st_tensor *s = fedrun_st_find(f, t->name);
		if (!s || s->dtype != FEDRUN_F32)
			continue;
		bool rest = s->ndim == t->ndim; /* the same but for dimension 0 */
		for (uint32_t d = 1; rest && d < t->ndim; d++)
			rest = s->shape[d] == t->shape[d];
		if (rest && (t->ndim == 0 || s->shape[0] == t->shape[0]))
			continue;
		if (!first) {
			first = t;
			first_s = s;
		}
		vocab = vocab && rest && t->ndim > 0 && t->shape[0] == first->shape[0] &&
			s->shape[0] == first_s->shape[0];
	}
	if (!first)
		return 0;
	char want[96], got[96], tok[4200];
	shape_str(first->shape, first->ndim, want, sizeof want);
	shape_str(first_s->shape, first_s->ndim, got, sizeof got);
#define MISFIT_(...)                                                                          \
	fedrun_error(FEDRUN_EFORMAT, "%s: tensor '%s' is %s in %s, the model has %s: " __VA_ARGS__)
	if (!vocab)
		return MISFIT_("the model's options (preset, sizes) differ from those of the model the "
			       "file holds: use the model section of the run that wrote it",
			       what, first->name, got, path, want);
	/* The init run's tokenizer, when the file lies in a run directory. */
	const char *slash = strrchr(path, '/');
	int dl = slash ? (int)(slash - path) + 1 : 0;
	snprintf(tok, sizeof tok, "%.*sspm.model", dl, path);
	bool spm = access(tok, R_OK) == 0;
	if (!spm)
		snprintf(tok, sizeof tok, "%.*svocab.txt", dl, path);
	if (spm || access(tok, R_OK) == 0)
		return MISFIT_("was the model built with the init run's tokenizer? set "
			       "model.tokenizer.%s to %s",
			       what, first->name, got, path, want, spm ? "model" : "vocab", tok);
	return MISFIT_("was the model built with the tokenizer (vocabulary) the file was trained "
		       "with? set model.tokenizer.model to that run's spm.model",
		       what, first->name, got, path, want);
#undef MISFIT_
}

int params_load(struct run *r, const char *path, float *dst, const char *what)
{
	struct fedrun_st_file f;
	int rc = fedrun_st_read(&f, path);
	if (rc < 0)
		return fedrun_error_wrap(rc, "%s: ", what);
	if (fedrun_st_checksum_kind(&f) == FEDRUN_ST_CHECKSUM_NONE)
		r->host.log(r, FEDRUN_LOG_WARN,
			    "%s: %s has no fedrun checksum (not written by fedrun, or its entry is "
			    "damaged): nothing verifies its contents",
			    what, path);
	if ((rc = init_misfit(&f, r->layout, path, what)) < 0) {
		fedrun_st_fini(&f);
		return rc;
	}
	rc = fedrun_st_load_layout(&f, r->layout, dst, "__");
	fedrun_st_fini(&f);
	if (rc < 0)
		return fedrun_error_wrap(rc, "%s: %s: ", what, path);
	return 0;
}

int init_load(struct run *r, const char *path)
{
	return params_load(r, path, r->theta, "init");
}
