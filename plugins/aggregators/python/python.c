/* SPDX-License-Identifier: Apache-2.0 */
/* python: an aggregator written as a Python class (fedrun-python(7)).
 *
 *   "aggregator": {"plugin": "python", "file": "fednova.py", "class": "FedNova", ...}
 *
 * The plugin embeds CPython: the interpreter starts once per process, with
 * no signal handlers of its own (fedrun handles SIGINT and SIGTERM) and the
 * process locale left alone, and stays until the process exits (it cannot
 * be started twice). create() runs `file`, instantiates `class` with the
 * section's other keys as a dict; aggregate() calls its aggregate(model,
 * updates, round) with numpy arrays that are views of fedrun's memory: the
 * updates read-only, the model writable, updated in place. No float is
 * copied on the way in or out. Each call holds the GIL (PyGILState_Ensure),
 * so any thread may call. The "file" key runs the file's code: the core
 * takes it only with --allow-plugin-paths, as it does a "path" key
 * (core/plugin/registry.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>
#include "../common.h"

/* Python glue, run once per process as module _fedrun_glue: the objects
 * the class sees and the description of an exception. */
static const char glue_src[] =
	"import importlib.util, sys, traceback\n"
	"class Update:\n"
	"    '''One client's update; fedrun-python(7).'''\n"
	"    __slots__ = ('client', 'samples', 'weight', 'steps', 'loss', 'tensors')\n"
	"    def __init__(self, client, samples, steps, loss, tensors):\n"
	"        self.client = client\n"
	"        self.samples = samples\n"
	"        self.weight = float(samples)\n"
	"        self.steps = steps\n"
	"        self.loss = loss\n"
	"        self.tensors = tensors\n"
	"    def __repr__(self):\n"
	"        return 'Update(client=%d, samples=%d, steps=%r, tensors=%s)' % (\n"
	"            self.client, self.samples, self.steps, sorted(self.tensors))\n"
	"class Round:\n"
	"    '''What the class knows about the round; fedrun-python(7).'''\n"
	"    __slots__ = ('round', 'rounds', 'num_clients', 'sampled', 'seed', '_metric')\n"
	"    def __init__(self, rnd, rounds, num_clients, sampled, seed, metric):\n"
	"        self.round = rnd\n"
	"        self.rounds = rounds\n"
	"        self.num_clients = num_clients\n"
	"        self.sampled = sampled\n"
	"        self.seed = seed\n"
	"        self._metric = metric\n"
	"    def metric(self, name, value, client=None, tensor=None):\n"
	"        if self._metric is None:\n"
	"            raise RuntimeError('Round.metric: the round is over')\n"
	"        self._metric(str(name), float(value), -1 if client is None else int(client),\n"
	"                     None if tensor is None else str(tensor))\n"
	"def load(path, modname, clsname):\n"
	"    spec = importlib.util.spec_from_file_location(modname, path)\n"
	"    if spec is None:\n"
	"        raise ImportError('not a Python file: %s' % path)\n"
	"    mod = importlib.util.module_from_spec(spec)\n"
	"    sys.modules[modname] = mod\n"
	"    try:\n"
	"        spec.loader.exec_module(mod)\n"
	"    except BaseException:\n"
	"        del sys.modules[modname]\n"
	"        raise\n"
	"    cls = getattr(mod, clsname, None)\n"
	"    if isinstance(cls, type):\n"
	"        return cls, None\n"
	"    names = sorted(n for n, v in vars(mod).items()\n"
	"                   if isinstance(v, type) and v.__module__ == modname)\n"
	"    return None, ', '.join(names) or 'none'\n"
	"def describe(e, path):\n"
	"    frames = traceback.extract_tb(e.__traceback__)\n"
	"    mine = [f for f in frames if f.filename == path]\n"
	"    if isinstance(e, SyntaxError) and e.filename:\n"
	"        where = '%s:%s' % (e.filename, e.lineno)\n"
	"    elif frames:\n"
	"        f = frames[-1]\n"
	"        where = '%s:%d in %s' % (f.filename, f.lineno, f.name)\n"
	"        if mine and mine[-1] is not f:\n"
	"            where += ' (from %s:%d in %s)' % (path, mine[-1].lineno, mine[-1].name)\n"
	"    else:\n"
	"        where = path\n"
	"    last = traceback.format_exception_only(type(e), e)[-1].strip()\n"
	"    full = ''.join(traceback.format_exception(type(e), e, e.__traceback__))\n"
	"    return where, last, full\n";

struct pyagg {
	struct aggr_base base; /* name "python": checks, θ_t, python.step_norm */
	const struct fedrun_host *host;
	char *file, *cls;      /* owned */
	PyObject *obj;         /* the instance */
	PyObject *aggregate;   /* its bound aggregate method */
	/* Per call: the memoryviews under the arrays handed to Python (the
	 * updates' then the model's), to see that none outlives the call. */
	PyObject **views;
	const char **view_tensor;
	int64_t *view_client; /* -1: the model's */
	uint32_t nviews, capviews;
};

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static PyObject *glue; /* _fedrun_glue, once per process */
static unsigned long module_serial;

/* libpython is a dependency of this plugin, which the host dlopens with
 * RTLD_LOCAL: extension modules (numpy's) that do not link libpython
 * themselves need its symbols global. The handle is kept, so libpython
 * stays loaded (the plugin is linked -z nodelete too). */
static int libpython_global(void)
{
	Dl_info info;
	if (!dladdr((void *)Py_InitializeEx, &info) || !info.dli_fname)
		return fedrun_error(FEDRUN_EPLUGIN, "python: cannot find the Python library loaded");
	if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD))
		return fedrun_error(FEDRUN_EPLUGIN, "python: %s: %s", info.dli_fname, dlerror());
	return 0;
}

static int start_interpreter(void)
{
	int rc = libpython_global();
	if (rc < 0)
		return rc;
	PyPreConfig pre;
	PyPreConfig_InitPythonConfig(&pre);
	pre.configure_locale = 0; /* the process's locale is fedrun's */
	pre.utf8_mode = 1;
	PyStatus s = Py_PreInitialize(&pre);
	if (!PyStatus_Exception(s)) {
		PyConfig cfg;
		PyConfig_InitPythonConfig(&cfg);
		cfg.install_signal_handlers = 0;
		cfg.parse_argv = 0;
		s = Py_InitializeFromConfig(&cfg);
		PyConfig_Clear(&cfg);
	}
	if (PyStatus_Exception(s))
		return fedrun_error(FEDRUN_EPLUGIN, "python: cannot start the interpreter: %s",
				    s.err_msg ? s.err_msg : "unknown error");
	/* print() must not reach fedrun's standard output. */
	PyRun_SimpleString("import sys\nsys.stdout = sys.stderr\n");
	PyEval_SaveThread(); /* every call takes the GIL with PyGILState_Ensure */
	return 0;
}

/* Turns the pending Python exception into a fedrun error `code` (ENOMEM
 * for MemoryError), "what: file:line in function: Type: message"; the whole
 * traceback goes to the run log. Holds the GIL. */
static int py_fail(const struct pyagg *st, int code, const char *what)
{
	PyObject *type, *val, *tb;
	PyErr_Fetch(&type, &val, &tb);
	PyErr_NormalizeException(&type, &val, &tb);
	if (!val)
		return fedrun_error(code, "%s: failed with no Python exception", what);
	if (tb)
		PyException_SetTraceback(val, tb);
	if (PyErr_GivenExceptionMatches(type, PyExc_MemoryError))
		code = FEDRUN_ENOMEM;
	PyObject *d = glue ? PyObject_CallMethod(glue, "describe", "Os", val,
					 st && st->file ? st->file : "")
			   : NULL;
	const char *where, *last, *full;
	int rc;
	if (d && PyArg_ParseTuple(d, "sss", &where, &last, &full)) {
		size_t len = strlen(full);
		while (len > 0 && full[len - 1] == '\n')
			len--;
		if (st && st->host)
			st->host->log(st->host->ctx, FEDRUN_LOG_INFO, "%s: %.*s", what, (int)len, full);
		rc = fedrun_error(code, "%s: %s: %s", what, where, last);
	} else {
		PyErr_Clear();
		PyObject *str = PyObject_Str(val);
		const char *m = str ? PyUnicode_AsUTF8(str) : NULL;
		if (!m)
			PyErr_Clear();
		rc = fedrun_error(code, "%s: %s", what, m ? m : "a Python exception");
		Py_XDECREF(str);
	}
	Py_XDECREF(d);
	Py_XDECREF(type);
	Py_XDECREF(val);
	Py_XDECREF(tb);
	return rc;
}

/* Starts the interpreter once, imports numpy's C API and runs the glue.
 * Called with the GIL not held; returns with it held (*gil) on success. */
static int py_enter(PyGILState_STATE *gil)
{
	pthread_mutex_lock(&start_lock);
	int rc = 0;
	if (!Py_IsInitialized())
		rc = start_interpreter();
	if (rc == 0) {
		*gil = PyGILState_Ensure();
		if (!glue) {
			if (_import_array() < 0)
				rc = py_fail(NULL, FEDRUN_EPLUGIN, "python: import numpy");
			PyObject *code = rc == 0 ? Py_CompileString(glue_src, "<fedrun>", Py_file_input)
						 : NULL;
			if (rc == 0 && code)
				glue = PyImport_ExecCodeModule("_fedrun_glue", code);
			if (rc == 0 && !glue)
				rc = py_fail(NULL, FEDRUN_EPLUGIN, "python: the plugin's glue");
			Py_XDECREF(code);
		}
		if (rc < 0)
			PyGILState_Release(*gil);
	}
	pthread_mutex_unlock(&start_lock);
	return rc;
}

struct pyagg_cfg {
	const char *file, *cls;
};

static const struct fedrun_opt pyagg_spec[] = {
	{"file", FEDRUN_OPT_PATH, offsetof(struct pyagg_cfg, file), FEDRUN_OPT_REQUIRED, 0, 0, 0,
	 NULL, NULL},
	{"class", FEDRUN_OPT_STRING, offsetof(struct pyagg_cfg, cls), FEDRUN_OPT_REQUIRED, 0, 0, 0,
	 NULL, NULL},
	FEDRUN_OPT_END_,
};

/* The section's "file" and "class" (checked by fedrun_opts_parse; the
 * resolved file written back), and the other keys as a JSON text for the
 * class's options. */
static int parse_config(json_t *config, struct pyagg *st, char **options)
{
	json_t *mine = json_object(), *rest = json_object();
	int rc = mine && rest ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	const char *key;
	json_t *v;
	json_object_foreach(config, key, v) {
		if (rc < 0 || strcmp(key, "plugin") == 0 || strcmp(key, "path") == 0)
			continue;
		bool own = strcmp(key, "file") == 0 || strcmp(key, "class") == 0;
		if (json_object_set(own ? mine : rest, key, v) < 0)
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	struct pyagg_cfg c;
	if (rc == 0)
		rc = fedrun_opts_parse(pyagg_spec, mine, AGGR_PATH, &c);
	if (rc == 0) {
		json_object_set(config, "file", json_object_get(mine, "file"));
		st->file = strdup(c.file);
		st->cls = strdup(c.cls);
		*options = json_dumps(rest, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!st->file || !st->cls || !*options)
			rc = fedrun_error(FEDRUN_ENOMEM, "out of memory");
	}
	json_decref(mine);
	json_decref(rest);
	return rc;
}

/* Loads the file, finds the class and instantiates it with the options
 * (JSON text, decoded by Python's json module). Holds the GIL. */
static int instantiate(struct pyagg *st, const char *options)
{
	char modname[64], what[512];
	snprintf(modname, sizeof modname, "fedrun_aggregator_%lu", ++module_serial);
	PyObject *r = PyObject_CallMethod(glue, "load", "sss", st->file, modname, st->cls);
	if (!r)
		return py_fail(st, FEDRUN_ECONFIG, AGGR_PATH ".file");
	PyObject *cls = PyTuple_GetItem(r, 0), *others = PyTuple_GetItem(r, 1);
	if (cls == Py_None) {
		const char *list = PyUnicode_AsUTF8(others);
		int rc = fedrun_error(FEDRUN_ECONFIG,
				      AGGR_PATH ".class: %s defines no class '%s' (its classes: %s)",
				      st->file, st->cls, list ? list : "?");
		PyErr_Clear();
		Py_DECREF(r);
		return rc;
	}
	PyObject *json = PyImport_ImportModule("json");
	PyObject *opts = json ? PyObject_CallMethod(json, "loads", "s", options) : NULL;
	Py_XDECREF(json);
	snprintf(what, sizeof what, "%s(options)", st->cls);
	st->obj = opts ? PyObject_CallOneArg(cls, opts) : NULL;
	Py_XDECREF(opts);
	Py_DECREF(r);
	if (!st->obj)
		return py_fail(st, FEDRUN_ECONFIG, what);
	st->aggregate = PyObject_GetAttrString(st->obj, "aggregate");
	if (!st->aggregate || !PyCallable_Check(st->aggregate)) {
		PyErr_Clear();
		return fedrun_error(FEDRUN_ECONFIG,
				    AGGR_PATH ".class: %s (%s) has no method aggregate(self, model, "
				    "updates, round)",
				    st->cls, st->file);
	}
	return 0;
}

static void pyagg_destroy(void *state)
{
	struct pyagg *st = state;
	if (!st)
		return;
	if (st->obj || st->aggregate) {
		PyGILState_STATE g = PyGILState_Ensure();
		Py_CLEAR(st->aggregate);
		Py_CLEAR(st->obj);
		PyGILState_Release(g);
	}
	aggr_base_fini(&st->base);
	free(st->views);
	free(st->view_tensor);
	free(st->view_client);
	free(st->file);
	free(st->cls);
	free(st);
}

static int pyagg_create(const struct fedrun_host *host, json_t *config,
			const struct fedrun_layout *layout, void **state)
{
	struct pyagg *st = calloc(1, sizeof *st);
	if (!st)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	st->host = host;
	char *options = NULL;
	int rc = aggr_base_init(&st->base, "python", host, layout);
	if (rc == 0)
		rc = parse_config(config, st, &options);
	PyGILState_STATE gil;
	if (rc == 0 && (rc = py_enter(&gil)) == 0) {
		rc = instantiate(st, options);
		PyGILState_Release(gil);
	}
	free(options);
	if (rc < 0) {
		pyagg_destroy(st);
		return rc;
	}
	*state = st;
	return 0;
}

/* Round.metric's C side: self is a capsule of the state. Reports
 * "python.NAME". */
static PyObject *metric_cb(PyObject *self, PyObject *args)
{
	const struct pyagg *st = PyCapsule_GetPointer(self, "fedrun.pyagg");
	const char *name, *tensor;
	double value;
	long long client;
	if (!st || !PyArg_ParseTuple(args, "sdLz", &name, &value, &client, &tensor))
		return NULL;
	char full[160];
	if (snprintf(full, sizeof full, "python.%s", name) >= (int)sizeof full) {
		PyErr_Format(PyExc_ValueError, "metric name too long: %.40s...", name);
		return NULL;
	}
	if (aggr_metric(&st->base, full, client, tensor, value) < 0) {
		PyErr_SetString(PyExc_RuntimeError, fedrun_error_message());
		return NULL;
	}
	Py_RETURN_NONE;
}

static PyMethodDef metric_def = {"metric", metric_cb, METH_VARARGS,
				 "Reports a metric of the round (fedrun-python(7))."};

/* A numpy array over `numel` floats at `data` shaped as tensor t, on a
 * memoryview of that memory (writable or not) kept in st->views. */
static PyObject *view_array(struct pyagg *st, const struct fedrun_tensor_info *t, float *data,
			    bool writable, int64_t client)
{
	if (st->nviews == st->capviews) {
		uint32_t c = st->capviews ? 2 * st->capviews : 64;
		PyObject **v = realloc(st->views, c * sizeof *v);
		if (v)
			st->views = v;
		const char **n = realloc(st->view_tensor, c * sizeof *n);
		if (n)
			st->view_tensor = n;
		int64_t *k = realloc(st->view_client, c * sizeof *k);
		if (k)
			st->view_client = k;
		if (!v || !n || !k)
			return PyErr_NoMemory();
		st->capviews = c;
	}
	PyObject *mv = PyMemoryView_FromMemory((char *)data, (Py_ssize_t)(t->numel * sizeof *data),
					       writable ? PyBUF_WRITE : PyBUF_READ);
	if (!mv)
		return NULL;
	npy_intp dims[FEDRUN_DIMS_MAX];
	for (uint32_t d = 0; d < t->ndim; d++)
		dims[d] = (npy_intp)t->shape[d];
	PyObject *a = PyArray_New(&PyArray_Type, (int)t->ndim, dims, NPY_FLOAT32, NULL, data, 0,
				  writable ? NPY_ARRAY_CARRAY : NPY_ARRAY_CARRAY_RO, NULL);
	if (!a) {
		Py_DECREF(mv);
		return NULL;
	}
	Py_INCREF(mv); /* one for the array (stolen), one for st->views */
	if (PyArray_SetBaseObject((PyArrayObject *)a, mv) < 0) {
		Py_DECREF(mv);
		Py_DECREF(mv);
		Py_DECREF(a);
		return NULL;
	}
	st->views[st->nviews] = mv;
	st->view_tensor[st->nviews] = t->name;
	st->view_client[st->nviews] = client;
	st->nviews++;
	return a;
}

/* dict[key] = value, value's reference given to the dict; false on error. */
static bool put(PyObject *dict, const char *key, PyObject *value)
{
	if (!value)
		return false;
	int rc = PyDict_SetItemString(dict, key, value);
	Py_DECREF(value);
	return rc == 0;
}

/* The call's arguments: model (dict of writable views of params), updates
 * (list of Update, each with the views of the tensors it sent) and round. */
static int build_args(struct pyagg *st, const struct fedrun_round_info *round,
		      const struct fedrun_update *u, uint32_t n, float *params, PyObject **model,
		      PyObject **updates, PyObject **rnd)
{
	const struct fedrun_layout *l = &st->base.layout;
	const uint64_t *steps =
		round->size >= offsetof(struct fedrun_round_info, client_steps) +
				       sizeof round->client_steps
			? round->client_steps
			: NULL;
	*model = PyDict_New();
	*updates = PyList_New(n);
	if (!*model || !*updates)
		return -1;
	for (uint32_t i = 0; i < l->n; i++)
		if (!put(*model, l->t[i].name,
			 view_array(st, &l->t[i], params + l->t[i].offset, true, -1)))
			return -1;
	PyObject *update_cls = PyObject_GetAttrString(glue, "Update");
	if (!update_cls)
		return -1;
	int rc = 0;
	for (uint32_t k = 0; k < n && rc == 0; k++) {
		PyObject *tensors = PyDict_New();
		for (uint32_t i = 0; tensors && i < l->n; i++)
			if (u[k].tensor[i] &&
			    !put(tensors, l->t[i].name,
				 view_array(st, &l->t[i], (float *)u[k].tensor[i], false, u[k].client)))
				Py_CLEAR(tensors);
		PyObject *step = steps ? PyLong_FromUnsignedLongLong(steps[k]) : Py_NewRef(Py_None);
		PyObject *up = tensors && step ? PyObject_CallFunction(update_cls, "IKOdO", u[k].client,
								       (unsigned long long)u[k].n_samples,
								       step, u[k].train_loss, tensors)
					       : NULL;
		Py_XDECREF(step);
		Py_XDECREF(tensors);
		if (!up)
			rc = -1;
		else
			PyList_SET_ITEM(*updates, k, up);
	}
	Py_DECREF(update_cls);
	if (rc < 0)
		return rc;
	PyObject *cap = PyCapsule_New(st, "fedrun.pyagg", NULL);
	PyObject *fn = cap ? PyCFunction_New(&metric_def, cap) : NULL;
	Py_XDECREF(cap);
	PyObject *round_cls = fn ? PyObject_GetAttrString(glue, "Round") : NULL;
	*rnd = round_cls ? PyObject_CallFunction(round_cls, "IIIIKO", round->round, round->rounds,
						 round->num_clients, round->sampled,
						 (unsigned long long)round->seed, fn)
			 : NULL;
	Py_XDECREF(round_cls);
	Py_XDECREF(fn);
	return *rnd ? 0 : -1;
}

/* Reports the dict aggregate returned, {name: number}, as python.NAME. */
static int report(struct pyagg *st, PyObject *res, const char *what)
{
	if (res == Py_None)
		return 0;
	if (!PyDict_Check(res))
		return fedrun_error(FEDRUN_ESTATE,
				    "%s returned %s: expected None or a dict of metrics {name: number}",
				    what, Py_TYPE(res)->tp_name);
	PyObject *key, *val;
	Py_ssize_t pos = 0;
	while (PyDict_Next(res, &pos, &key, &val)) {
		const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		double x = PyFloat_AsDouble(val);
		if (!name || PyErr_Occurred()) {
			PyErr_Clear();
			return fedrun_error(FEDRUN_ESTATE,
					    "%s returned a metric that is not {str: number}", what);
		}
		char full[160];
		if (snprintf(full, sizeof full, "python.%s", name) >= (int)sizeof full)
			return fedrun_error(FEDRUN_ESTATE, "%s: metric name too long: %.40s...", what,
					    name);
		int rc = aggr_metric(&st->base, full, -1, NULL, x);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* After the call: every array handed to Python must be gone with its
 * arguments (the memory is fedrun's, borrowed for the call only). A view
 * still referenced is an error naming it. Drops st->views. */
static int check_released(struct pyagg *st, const char *what)
{
	int rc = 0;
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		uint32_t i = 0;
		while (i < st->nviews && Py_REFCNT(st->views[i]) == 1)
			i++;
		if (i == st->nviews)
			break;
		if (pass == 0) {
			PyGC_Collect(); /* a reference cycle the class left */
			continue;
		}
		if (st->view_client[i] < 0)
			rc = fedrun_error(FEDRUN_ESTATE,
					  "%s kept model['%s'] (or a view of it) after returning: the "
					  "arrays are fedrun's memory, lent for the call; keep a copy "
					  "(numpy.array(x)) instead",
					  what, st->view_tensor[i]);
		else
			rc = fedrun_error(FEDRUN_ESTATE,
					  "%s kept the tensor '%s' of client %lld (or a view of it) "
					  "after returning: the arrays are fedrun's memory, lent for "
					  "the call; keep a copy (numpy.array(x)) instead",
					  what, st->view_tensor[i], (long long)st->view_client[i]);
	}
	if (rc == 0)
		for (uint32_t i = 0; i < st->nviews; i++)
			Py_DECREF(st->views[i]);
	/* else the views stay referenced: their memory must never be freed
	 * under them... it will be, but the run stops here. */
	st->nviews = 0;
	return rc;
}

static int pyagg_aggregate(void *state, const struct fedrun_round_info *round,
			   const struct fedrun_update *u, uint32_t n, float *params)
{
	struct pyagg *st = state;
	int rc = aggr_begin(&st->base, round, u, n, params);
	if (rc < 0)
		return rc;
	char what[192];
	snprintf(what, sizeof what, "%s.aggregate", st->cls);
	PyGILState_STATE gil = PyGILState_Ensure();
	PyObject *model = NULL, *updates = NULL, *rnd = NULL, *res = NULL;
	st->nviews = 0;
	if (build_args(st, round, u, n, params, &model, &updates, &rnd) < 0)
		rc = py_fail(st, FEDRUN_ENOMEM, what);
	else if (!(res = PyObject_CallFunctionObjArgs(st->aggregate, model, updates, rnd, NULL)))
		rc = py_fail(st, FEDRUN_ESTATE, what);
	if (rnd && PyObject_SetAttrString(rnd, "_metric", Py_None) < 0)
		PyErr_Clear();
	Py_XDECREF(model);
	Py_XDECREF(updates);
	Py_XDECREF(rnd);
	if (rc == 0)
		rc = report(st, res, what);
	Py_XDECREF(res);
	int kept = check_released(st, what);
	if (rc == 0)
		rc = kept;
	PyGILState_Release(gil);
	if (rc < 0)
		return rc;
	return aggr_end(&st->base, params);
}

static const struct fedrun_aggregator_ops pyagg_ops = {
	.size = sizeof(struct fedrun_aggregator_ops),
	.create = pyagg_create,
	.destroy = pyagg_destroy,
	.aggregate = pyagg_aggregate,
};

static const struct fedrun_plugin pyagg_plugin =
	FEDRUN_PLUGIN_INIT(FEDRUN_KIND_AGGREGATOR, "python", "1.0.0",
			   "an aggregator written as a Python class over numpy views", &pyagg_ops);

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &pyagg_plugin : NULL;
}
