/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin loader: dlopen, the entry symbol, and every ABI check, in the
 * order DESIGN.md section 2 gives, each refusal naming the file and both
 * values. */
#include "config.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/suggest.h"
#include "fedrun/io.h"
#include "fedrun/registry.h"
#include "plugin_internal.h"

/* FEDRUN_PLUGINDIR: the configured plugin directory, kept in a header
 * the build rewrites when the prefix changes (Makefile.am). */
#include "fedrun_dirs.h"

/* sizeof the ABI 1.0 descriptor: what a plugin must at least declare. */
#define DESCRIPTOR_MIN_SIZE (offsetof(struct fedrun_plugin, ops) + sizeof(void *))

/* A plugin file as the process loaded it, shared by every registry that
 * finds it (fedrun's own, and those of the backends and the transport, each
 * of which searches the path): dlopen runs a file's constructors and the
 * host its checks once per process, whatever spelling of the path (a
 * directory listed twice, through a link) leads to the file. Found by
 * device and inode; unloaded when the last registry that holds it goes. */
struct loaded {
	dev_t dev;
	ino_t ino;
	void *dl; /* NULL: refused */
	uint32_t n;
	const struct fedrun_plugin **plugins;
	int rc;	   /* refused: the error, and its message */
	char *msg; /* (NULL when out of memory: fedrun_strerror) */
	uint32_t refs;
};

static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static struct loaded **loaded; /* each its own allocation: pointers stay */
static uint32_t nloaded, caploaded;

/* The directories warn_writable warned about, by device and inode. */
struct dir_id {
	dev_t dev;
	ino_t ino;
};
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dir_id *warned;
static uint32_t nwarned, capwarned;

/* Warns, once per directory and process, when `dir` (st: its status) is
 * writable by everyone: anyone could put a .so there, or replace one, that
 * fedrun would load and so run. The sticky bit does not make it safe: it
 * keeps others from replacing a file, not from adding one, and the search
 * loads every .so it meets. A warning, not a refusal: the user chose the
 * path, and a shared machine may offer no better place. */
static void warn_writable(const char *dir, const struct stat *st)
{
	if (!S_ISDIR(st->st_mode) || !(st->st_mode & S_IWOTH))
		return;
	pthread_mutex_lock(&warned_lock);
	bool seen = false;
	for (uint32_t i = 0; i < nwarned && !seen; i++)
		seen = warned[i].dev == st->st_dev && warned[i].ino == st->st_ino;
	if (!seen && nwarned == capwarned) {
		uint32_t cap = capwarned ? 2 * capwarned : 8;
		struct dir_id *more = realloc(warned, cap * sizeof *more);
		if (more) {
			warned = more;
			capwarned = cap;
		}
	}
	/* out of memory: the warning may come again, which is better than
	 * never */
	if (!seen && nwarned < capwarned)
		warned[nwarned++] = (struct dir_id){st->st_dev, st->st_ino};
	pthread_mutex_unlock(&warned_lock);
	if (!seen)
		fprintf(stderr,
			"fedrun: warning: plugin directory '%s' is writable by everyone (mode "
			"%04o): anyone can place code there that fedrun loads and runs (chmod "
			"o-w it)\n",
			dir, (unsigned)(st->st_mode & 07777));
}

/* warn_writable for the directory that holds `file`. */
static void warn_writable_dir_of(const char *file)
{
	char *dir = strdup(file);
	if (!dir)
		return;
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0'; /* a file of / */
	else if (slash)
		*slash = '\0';
	struct stat st;
	const char *d = slash ? dir : ".";
	if (stat(d, &st) == 0)
		warn_writable(d, &st);
	free(dir);
}

/* A file as one registry reached it: the path it found it by. */
struct module {
	char *file;
	struct loaded *l;
};

struct fedrun_registry {
	char **dirs; /* search directories, in order */
	uint32_t ndirs;
	bool allow_files; /* fedrun_registry_find may load a file it is given */
	struct module *mods;
	uint32_t nmods, capmods;
};

const char *fedrun_version(void)
{
	return PACKAGE_VERSION;
}

const char *fedrun_plugin_dir(void)
{
	return FEDRUN_PLUGINDIR;
}

const char *fedrun_kind_name(uint32_t kind)
{
	switch (kind) {
	case FEDRUN_KIND_AGGREGATOR: return "aggregator";
	case FEDRUN_KIND_MODEL: return "model";
	case FEDRUN_KIND_SELECTOR: return "selector";
	case FEDRUN_KIND_PRIVACY: return "privacy";
	case FEDRUN_KIND_BACKEND: return "backend";
	case FEDRUN_KIND_TRANSPORT: return "transport";
	default: return "unknown";
	}
}

/* The ops a kind requires, by offset in its table. */
struct required_op {
	size_t offset;
	const char *name;
};
#define REQ(type, member) {offsetof(struct type, member), #member}
static const struct required_op agg_req[] = {
	REQ(fedrun_aggregator_ops, create), REQ(fedrun_aggregator_ops, destroy),
	REQ(fedrun_aggregator_ops, aggregate), {0, NULL}};
static const struct required_op sel_req[] = {
	REQ(fedrun_selector_ops, create), REQ(fedrun_selector_ops, destroy),
	REQ(fedrun_selector_ops, select), {0, NULL}};
static const struct required_op priv_req[] = {
	REQ(fedrun_privacy_ops, create), REQ(fedrun_privacy_ops, destroy),
	REQ(fedrun_privacy_ops, apply), {0, NULL}};
static const struct required_op model_req[] = {
	REQ(fedrun_model_ops, create), REQ(fedrun_model_ops, destroy),
	REQ(fedrun_model_ops, layout), REQ(fedrun_model_ops, init_params),
	REQ(fedrun_model_ops, num_clients), REQ(fedrun_model_ops, client_size),
	REQ(fedrun_model_ops, train), REQ(fedrun_model_ops, evaluate), {0, NULL}};

/* Smallest ops table of each kind at ABI 1.0, and its required members. */
static const struct {
	size_t min_size;
	const struct required_op *req;
} kinds[] = {
	[FEDRUN_KIND_AGGREGATOR] = {offsetof(struct fedrun_aggregator_ops, state) + sizeof(void *), agg_req},
	[FEDRUN_KIND_MODEL] = {offsetof(struct fedrun_model_ops, loss_grad) + sizeof(void *), model_req},
	[FEDRUN_KIND_SELECTOR] = {offsetof(struct fedrun_selector_ops, select) + sizeof(void *), sel_req},
	[FEDRUN_KIND_PRIVACY] = {offsetof(struct fedrun_privacy_ops, apply) + sizeof(void *), priv_req},
	/* Backends: their ops table is defined with the nn engine. */
	[FEDRUN_KIND_BACKEND] = {sizeof(uint32_t), NULL},
	/* Transports: their table is checked where it is loaded (engine/dist.c). */
	[FEDRUN_KIND_TRANSPORT] = {sizeof(uint32_t), NULL},
};

static int valid_name(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return 0;
	return 1;
}

/* Checks one descriptor; index for messages. */
static int check_plugin(const char *file, uint32_t index, const struct fedrun_plugin *p)
{
	if (p->abi_major != FEDRUN_ABI_MAJOR)
		return fedrun_error(FEDRUN_EABI,
				    "%s: plugin #%u was built for ABI major %u, this fedrun has ABI %d.%d",
				    file, index, p->abi_major, FEDRUN_ABI_MAJOR, FEDRUN_ABI_MINOR);
	if (p->abi_minor > FEDRUN_ABI_MINOR)
		return fedrun_error(FEDRUN_EABI,
				    "%s: plugin #%u needs ABI %u.%u, newer than this fedrun's %d.%d",
				    file, index, p->abi_major, p->abi_minor, FEDRUN_ABI_MAJOR,
				    FEDRUN_ABI_MINOR);
	if (p->size < DESCRIPTOR_MIN_SIZE)
		return fedrun_error(FEDRUN_EABI,
				    "%s: plugin #%u declares a descriptor of %u bytes, ABI %d.%d needs at least %zu",
				    file, index, p->size, FEDRUN_ABI_MAJOR, p->abi_minor,
				    (size_t)DESCRIPTOR_MIN_SIZE);
	if (!valid_name(p->name))
		return fedrun_error(FEDRUN_EABI, "%s: plugin #%u has an invalid name (want [a-z0-9_-]+)",
				    file, index);
	if (p->kind < 1 || p->kind > FEDRUN_KIND_MAX_)
		return fedrun_error(FEDRUN_EABI,
				    "%s: plugin '%s' has unknown kind %u (this fedrun knows 1 to %d)",
				    file, p->name, p->kind, FEDRUN_KIND_MAX_);
	const uint32_t *ops_size = p->ops;
	if (!ops_size)
		return fedrun_error(FEDRUN_EABI, "%s: plugin '%s' (%s) has no ops table", file,
				    p->name, fedrun_kind_name(p->kind));
	if (*ops_size < kinds[p->kind].min_size)
		return fedrun_error(FEDRUN_EABI,
				    "%s: plugin '%s' (%s) declares an ops table of %u bytes, ABI %d.%d needs at least %zu",
				    file, p->name, fedrun_kind_name(p->kind), *ops_size,
				    FEDRUN_ABI_MAJOR, p->abi_minor, kinds[p->kind].min_size);
	for (const struct required_op *r = kinds[p->kind].req; r && r->name; r++) {
		void *fn;
		memcpy(&fn, (const char *)p->ops + r->offset, sizeof fn);
		if (!fn)
			return fedrun_error(FEDRUN_EABI,
					    "%s: plugin '%s' (%s) lacks the required op '%s'", file,
					    p->name, fedrun_kind_name(p->kind), r->name);
	}
	if (p->kind == FEDRUN_KIND_AGGREGATOR) {
		/* ABI 1.3 streaming: begin, accumulate and finish come together. */
		const struct fedrun_aggregator_ops *ops = p->ops;
		if (ops->size >= offsetof(struct fedrun_aggregator_ops, finish) + sizeof(void *)) {
			int have = (ops->begin != NULL) + (ops->accumulate != NULL) + (ops->finish != NULL);
			if (have != 0 && have != 3)
				return fedrun_error(FEDRUN_EABI,
						    "%s: plugin '%s' (aggregator) has %d of the streaming ops "
						    "begin, accumulate and finish: all three or none",
						    file, p->name, have);
		}
	}
	if (p->kind == FEDRUN_KIND_MODEL) {
		/* ABI 1.6 domain experts: gate_size, gate_fit, gate_evaluate and
		 * gate_translate come together (only the members the table's
		 * size covers are read). */
		const struct fedrun_model_ops *ops = p->ops;
		static const struct {
			const char *name;
			size_t offset;
		} gate_ops[] = {
		    {"gate_size", offsetof(struct fedrun_model_ops, gate_size)},
		    {"gate_fit", offsetof(struct fedrun_model_ops, gate_fit)},
		    {"gate_evaluate", offsetof(struct fedrun_model_ops, gate_evaluate)},
		    {"gate_translate", offsetof(struct fedrun_model_ops, gate_translate)},
		};
		int have = 0;
		const char *missing = NULL;
		for (size_t i = 0; i < sizeof gate_ops / sizeof gate_ops[0]; i++) {
			void *fn = NULL;
			if (ops->size >= gate_ops[i].offset + sizeof fn)
				memcpy(&fn, (const char *)ops + gate_ops[i].offset, sizeof fn);
			if (fn)
				have++;
			else if (!missing)
				missing = gate_ops[i].name;
		}
		if (have != 0 && have != 4)
			return fedrun_error(FEDRUN_EABI,
					    "%s: plugin '%s' (model) has %d of the domain-expert ops "
					    "gate_size, gate_fit, gate_evaluate and gate_translate (it lacks "
					    "'%s'): all four or none",
					    file, p->name, have, missing);
	}
	if (!p->version || !p->summary)
		return fedrun_error(FEDRUN_EABI, "%s: plugin '%s' lacks a version or summary", file,
				    p->name);
	return 0;
}

static struct module *find_loaded(struct fedrun_registry *reg, const char *file)
{
	for (uint32_t i = 0; i < reg->nmods; i++)
		if (strcmp(reg->mods[i].file, file) == 0)
			return &reg->mods[i];
	return NULL;
}

/* A module's result: its plugins, or its refusal raised again. */
static int module_result(const struct module *m, const struct fedrun_plugin *const **plugins,
			 uint32_t *n)
{
	const struct loaded *l = m->l;
	if (!l->dl)
		return l->msg ? fedrun_error(l->rc, "%s", l->msg)
			      : fedrun_error(l->rc, "%s: %s", m->file, fedrun_strerror(l->rc));
	*plugins = l->plugins;
	*n = l->n;
	return 0;
}

/* dlopens `file` and checks every plugin in it into l (l->dl stays NULL
 * when refused, the file unloaded again). */
static int load_file(const char *file, struct loaded *l)
{
	int rc;
	void *dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return fedrun_error(FEDRUN_EPLUGIN, "%s: cannot load: %s", file, dlerror());
	fedrun_plugin_entry_fn entry;
	void *sym = dlsym(dl, FEDRUN_PLUGIN_ENTRY);
	memcpy(&entry, &sym, sizeof entry);
	if (!sym) {
		rc = fedrun_error(FEDRUN_EABI, "%s: no symbol '%s': not a fedrun plugin", file,
				  FEDRUN_PLUGIN_ENTRY);
		goto close_dl;
	}
	const struct fedrun_plugin **list = NULL;
	uint32_t count = 0;
	for (;;) {
		const struct fedrun_plugin *p = entry(count);
		if (!p)
			break;
		if (count >= 1024) {
			rc = fedrun_error(FEDRUN_EABI, "%s: more than 1024 plugins", file);
			goto free_list;
		}
		rc = check_plugin(file, count, p);
		if (rc < 0)
			goto free_list;
		const struct fedrun_plugin **bigger = realloc(list, (count + 1) * sizeof *list);
		if (!bigger) {
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			goto free_list;
		}
		list = bigger;
		list[count++] = p;
	}
	if (count == 0) {
		rc = fedrun_error(FEDRUN_EABI, "%s: entry point lists no plugins", file);
		goto free_list;
	}
	l->dl = dl;
	l->n = count;
	l->plugins = list;
	return 0;
free_list:
	free(list);
close_dl:
	dlclose(dl);
	return rc;
}

/* The process's entry for the file `st` describes (by device and inode),
 * loaded now when no registry holds it yet; one more reference. A refused
 * file has an entry too (l->rc). Under loaded_lock. */
static int loaded_get(const char *file, const struct stat *st, struct loaded **out)
{
	*out = NULL;
	for (uint32_t i = 0; i < nloaded; i++)
		if (loaded[i]->dev == st->st_dev && loaded[i]->ino == st->st_ino) {
			loaded[i]->refs++;
			*out = loaded[i];
			return 0;
		}
	if (nloaded == caploaded) {
		uint32_t cap = caploaded ? 2 * caploaded : 16;
		struct loaded **more = realloc(loaded, cap * sizeof *more);
		if (!more)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		loaded = more;
		caploaded = cap;
	}
	struct loaded *l = calloc(1, sizeof *l);
	if (!l)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->refs = 1;
	/* A refusal is kept too: loading the file again would run its
	 * constructors again, for the same answer. */
	if ((l->rc = load_file(file, l)) < 0)
		l->msg = strdup(fedrun_error_message());
	loaded[nloaded++] = l;
	*out = l;
	return 0;
}

/* One reference less; the last unloads the file. Under loaded_lock. */
static void loaded_put(struct loaded *l)
{
	if (--l->refs > 0)
		return;
	for (uint32_t i = 0; i < nloaded; i++)
		if (loaded[i] == l) {
			loaded[i] = loaded[--nloaded];
			break;
		}
	if (l->dl)
		dlclose(l->dl);
	free(l->plugins);
	free(l->msg);
	free(l);
	if (nloaded == 0) {
		free(loaded);
		loaded = NULL;
		caploaded = 0;
	}
}

int fedrun_registry_open(struct fedrun_registry *reg, const char *file,
			 const struct fedrun_plugin *const **plugins, uint32_t *n)
{
	struct module *m = find_loaded(reg, file);
	if (m)
		return module_result(m, plugins, n);
	int rc;
	/* dlopen would wait on a FIFO: plugins are regular files. */
	int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fedrun_error(FEDRUN_EPLUGIN, "%s: cannot load: %s", file, strerror(errno));
	struct stat st;
	rc = fedrun_file_check(file, fd);
	if (rc == 0 && fstat(fd, &st) != 0)
		rc = fedrun_error(FEDRUN_EIO, "cannot read '%s': %s", file, strerror(errno));
	close(fd);
	if (rc < 0)
		return fedrun_error_wrap(FEDRUN_EPLUGIN, "plugin: ");
	/* Before its code runs: the directory it is in, and the one it
	 * really is in when a link leads there. */
	warn_writable_dir_of(file);
	char *real = realpath(file, NULL);
	if (real && strcmp(real, file) != 0)
		warn_writable_dir_of(real);
	free(real);
	if (reg->nmods == reg->capmods) {
		uint32_t cap = reg->capmods ? 2 * reg->capmods : 16;
		struct module *mods = realloc(reg->mods, cap * sizeof *mods);
		if (!mods)
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		reg->mods = mods;
		reg->capmods = cap;
	}
	m = &reg->mods[reg->nmods];
	if (!(m->file = strdup(file)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	pthread_mutex_lock(&loaded_lock);
	rc = loaded_get(file, &st, &m->l);
	pthread_mutex_unlock(&loaded_lock);
	if (rc < 0) {
		free(m->file);
		return rc;
	}
	reg->nmods++;
	return module_result(m, plugins, n);
}

static int add_dir(struct fedrun_registry *reg, const char *dir)
{
	if (!*dir)
		return 0;
	char **dirs = realloc(reg->dirs, (reg->ndirs + 1) * sizeof *dirs);
	if (!dirs)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	reg->dirs = dirs;
	if (!(dirs[reg->ndirs] = strdup(dir)))
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	reg->ndirs++;
	return 0;
}

int fedrun_registry_create(const char *plugindir, struct fedrun_registry **out)
{
	struct fedrun_registry *reg = calloc(1, sizeof *reg);
	if (!reg)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	int rc = 0;
	const char *env = getenv("FEDRUN_PLUGIN_PATH");
	if (env) {
		char *copy = strdup(env), *save = NULL;
		if (!copy)
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
		for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && rc == 0;
		     d = strtok_r(NULL, ":", &save)) {
			/* As the dynamic linker does for programs it does not
			 * trust: a relative entry would load code from wherever
			 * fedrun happens to run. */
			if (d[0] != '/') {
				fprintf(stderr,
					"fedrun: warning: FEDRUN_PLUGIN_PATH entry '%s' is relative: "
					"ignored (give absolute directories)\n",
					d);
				continue;
			}
			rc = add_dir(reg, d);
		}
		free(copy);
	}
	if (rc == 0)
		rc = add_dir(reg, plugindir ? plugindir : FEDRUN_PLUGINDIR);
	if (rc < 0) {
		fedrun_registry_destroy(reg);
		return rc;
	}
	*out = reg;
	return 0;
}

void fedrun_registry_allow_files(struct fedrun_registry *reg, bool allow)
{
	reg->allow_files = allow;
}

void fedrun_registry_destroy(struct fedrun_registry *reg)
{
	if (!reg)
		return;
	pthread_mutex_lock(&loaded_lock);
	for (uint32_t i = 0; i < reg->nmods; i++) {
		loaded_put(reg->mods[i].l);
		free(reg->mods[i].file);
	}
	pthread_mutex_unlock(&loaded_lock);
	free(reg->mods);
	for (uint32_t i = 0; i < reg->ndirs; i++)
		free(reg->dirs[i]);
	free(reg->dirs);
	free(reg);
}

static int ends_with_so(const char *s)
{
	size_t n = strlen(s);
	return n > 3 && strcmp(s + n - 3, ".so") == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .so files of a directory, sorted by name; a missing directory has none. */
static int list_dir(const char *dir, char ***files, uint32_t *n)
{
	*files = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct stat st;
	if (fstat(dirfd(d), &st) == 0)
		warn_writable(dir, &st);
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d)) != NULL) {
		if (!ends_with_so(e->d_name))
			continue;
		char **bigger = realloc(*files, (*n + 1) * sizeof **files);
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		char *path = malloc(len);
		if (!bigger || !path) {
			free(path);
			if (bigger)
				*files = bigger;
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
			break;
		}
		*files = bigger;
		snprintf(path, len, "%s/%s", dir, e->d_name);
		(*files)[(*n)++] = path;
	}
	closedir(d);
	if (*n)
		qsort(*files, *n, sizeof **files, cmp_str);
	return rc;
}

static void free_list(char **files, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

/* Where a file comes in the search for plugin (kind, name) within its
 * directory (fedrun-plugin(7), SEARCH PATH): 0 for the file named after the
 * plugin (NAME.so or KIND_NAME.so, '-' read as '_': gru_lm.so,
 * backend_cuda.so), 2 for a file named for another kind (KIND_*.so:
 * backend_cuda.so when an aggregator is looked for), 1 for the rest; in
 * name order within each. So a search loads what it needs first, not every
 * file that sorts before it (a CUDA backend links cuBLAS, half a second to
 * load). */
static int file_rank(const char *path, uint32_t kind, const char *name)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t blen = strlen(base);
	if (blen <= 3)
		return 1;
	blen -= 3; /* ".so" */
	for (uint32_t k = 1; k <= FEDRUN_KIND_MAX_; k++) {
		const char *kn = fedrun_kind_name(k);
		size_t kl = strlen(kn);
		bool prefixed = blen > kl + 1 && strncmp(base, kn, kl) == 0 && base[kl] == '_';
		if (!prefixed)
			continue;
		if (k != kind)
			return 2;
		base += kl + 1; /* KIND_NAME.so: compare NAME */
		blen -= kl + 1;
		break;
	}
	size_t nlen = strlen(name);
	if (nlen != blen)
		return 1;
	for (size_t i = 0; i < nlen; i++)
		if (base[i] != (name[i] == '-' ? '_' : name[i]))
			return 1;
	return 0;
}

/* files (sorted by name) reordered for the search of (kind, name), into
 * order[]: by file_rank, then by name. */
static void search_order(char **files, uint32_t n, uint32_t kind, const char *name,
			 uint32_t *order)
{
	uint32_t m = 0;
	for (int rank = 0; rank <= 2; rank++)
		for (uint32_t f = 0; f < n; f++)
			if (file_rank(files[f], kind, name) == rank)
				order[m++] = f;
}

/* The section keys that name code a plugin runs, besides "path": a plugin
 * here reads them knowing nothing of --allow-plugin-paths (the host table
 * does not say), so the core refuses them for it. */
static const struct {
	uint32_t kind;
	const char *plugin, *key;
} code_keys[] = {
	{FEDRUN_KIND_AGGREGATOR, "python", "file"}, /* a Python file, run by the interpreter */
};

int registry_check_code_keys(const struct fedrun_registry *reg, const struct fedrun_plugin *p,
			     json_t *section, const char *section_path)
{
	if (reg->allow_files)
		return 0;
	for (size_t i = 0; i < sizeof code_keys / sizeof code_keys[0]; i++) {
		json_t *v = json_object_get(section, code_keys[i].key);
		if (p->kind != code_keys[i].kind || strcmp(p->name, code_keys[i].plugin) != 0 || !v)
			continue;
		return fedrun_error(FEDRUN_EPLUGIN,
				    "%s.%s: %s: a file of code named by the pipeline is run only "
				    "with --allow-plugin-paths (as a \"path\" key is loaded)",
				    section_path, code_keys[i].key,
				    json_is_string(v) ? json_string_value(v) : "(not a file name)");
	}
	return 0;
}

int fedrun_registry_find(struct fedrun_registry *reg, uint32_t kind, const char *name,
			 const char *file, const struct fedrun_plugin **plugin,
			 const char **found_file)
{
	const struct fedrun_plugin *const *list;
	uint32_t n;
	int rc;
	if (file) {
		if (!reg->allow_files)
			return fedrun_error(FEDRUN_EPLUGIN,
					    "%s: a plugin file named by the pipeline is loaded only "
					    "with --allow-plugin-paths (loading a plugin runs its code); "
					    "or put it in a directory of FEDRUN_PLUGIN_PATH",
					    file);
		rc = fedrun_registry_open(reg, file, &list, &n);
		if (rc < 0)
			return rc;
		for (uint32_t i = 0; i < n; i++) {
			if (list[i]->kind == kind && strcmp(list[i]->name, name) == 0) {
				*plugin = list[i];
				if (found_file)
					*found_file = find_loaded(reg, file)->file;
				return 0;
			}
		}
		struct suggest near;
		suggest_init(&near, name);
		for (uint32_t i = 0; i < n; i++)
			if (list[i]->kind == kind)
				suggest_add(&near, list[i]->name);
		return fedrun_error(FEDRUN_ENOENT, "%s holds no %s plugin called '%s'%s%s%s", file,
				    fedrun_kind_name(kind), name, near.best ? "; did you mean '" : "",
				    near.best ? near.best : "", near.best ? "'?" : "");
	}
	char refused[1024] = "";
	size_t rlen = 0;
	/* names of loaded plugins, which stay loaded with the registry */
	struct suggest near;
	suggest_init(&near, name);
	for (uint32_t d = 0; d < reg->ndirs; d++) {
		char **files;
		uint32_t nf;
		rc = list_dir(reg->dirs[d], &files, &nf);
		if (rc < 0)
			return rc;
		uint32_t *order = malloc((nf ? nf : 1) * sizeof *order);
		if (!order) {
			free_list(files, nf);
			return fedrun_error(FEDRUN_ENOMEM, "out of memory");
		}
		search_order(files, nf, kind, name, order);
		for (uint32_t o = 0; o < nf; o++) {
			const uint32_t f = order[o];
			if (fedrun_registry_open(reg, files[f], &list, &n) < 0) {
				if (rlen < sizeof refused - 1)
					rlen += snprintf(refused + rlen, sizeof refused - rlen,
							 "\n  refused: %s", fedrun_error_message());
				continue;
			}
			for (uint32_t i = 0; i < n; i++) {
				if (list[i]->kind == kind && strcmp(list[i]->name, name) == 0) {
					*plugin = list[i];
					if (found_file)
						*found_file = find_loaded(reg, files[f])->file;
					free(order);
					free_list(files, nf);
					return 0;
				}
				if (list[i]->kind == kind)
					suggest_add(&near, list[i]->name);
			}
		}
		free(order);
		free_list(files, nf);
	}
	char path[1024] = "";
	size_t plen = 0;
	for (uint32_t d = 0; d < reg->ndirs && plen < sizeof path - 1; d++)
		plen += snprintf(path + plen, sizeof path - plen, "%s%s", d ? ":" : "", reg->dirs[d]);
	return fedrun_error(FEDRUN_ENOENT,
			    "no %s plugin called '%s' in the plugin path %s (%s%s%s'fedrun plugins' "
			    "lists them)%s",
			    fedrun_kind_name(kind), name, path, near.best ? "did you mean '" : "",
			    near.best ? near.best : "", near.best ? "'? " : "", refused);
}

/* Whether `file` (loaded, or refused: 0) holds a plugin of p's kind and name. */
static int provides(struct fedrun_registry *reg, const char *file, const struct fedrun_plugin *p)
{
	const struct fedrun_plugin *const *list;
	uint32_t n;
	if (fedrun_registry_open(reg, file, &list, &n) < 0) {
		fedrun_error_clear();
		return 0;
	}
	for (uint32_t i = 0; i < n; i++)
		if (list[i]->kind == p->kind && strcmp(list[i]->name, p->name) == 0)
			return 1;
	return 0;
}

int fedrun_registry_scan(struct fedrun_registry *reg, fedrun_registry_visit_fn visit, void *ud)
{
	struct seen {
		uint32_t kind;
		const char *name;
		int rank; /* of its file, for it (file_rank) */
	} *seen = NULL;
	uint32_t nseen = 0;
	int rc = 0;
	for (uint32_t d = 0; d < reg->ndirs && rc == 0; d++) {
		char **files;
		uint32_t nf;
		rc = list_dir(reg->dirs[d], &files, &nf);
		/* seen[first_here ..]: this directory's plugins, with their
		 * files; within it the search's order decides which one of a
		 * (kind, name) wins (search_order) */
		const uint32_t first_here = nseen;
		for (uint32_t f = 0; f < nf && rc == 0; f++) {
			const struct fedrun_plugin *const *list;
			uint32_t n;
			if (fedrun_registry_open(reg, files[f], &list, &n) < 0) {
				visit(ud, files[f], NULL, fedrun_error_message(), 0);
				continue;
			}
			for (uint32_t i = 0; i < n; i++) {
				int shadowed = 0;
				const int rank = file_rank(files[f], list[i]->kind, list[i]->name);
				for (uint32_t s = 0; s < nseen; s++) {
					if (seen[s].kind != list[i]->kind ||
					    strcmp(seen[s].name, list[i]->name) != 0)
						continue;
					/* an earlier directory's, or one this
					 * directory's search visits first */
					shadowed |= s < first_here || seen[s].rank <= rank;
				}
				for (uint32_t g = f + 1; g < nf && !shadowed; g++)
					if (file_rank(files[g], list[i]->kind, list[i]->name) < rank)
						shadowed = provides(reg, files[g], list[i]);
				visit(ud, files[f], list[i], NULL, shadowed);
				struct seen *bigger = realloc(seen, (nseen + 1) * sizeof *seen);
				if (!bigger) {
					rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
					break;
				}
				seen = bigger;
				seen[nseen].kind = list[i]->kind;
				seen[nseen].name = list[i]->name;
				seen[nseen].rank = rank;
				nseen++;
			}
		}
		free_list(files, nf);
	}
	free(seen);
	return rc;
}
