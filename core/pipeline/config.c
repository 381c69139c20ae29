/* SPDX-License-Identifier: Apache-2.0 */
/* The core's pipeline sections: top level, clients, eval and output. Plugin
 * sections (model, data, selector, privacy, aggregator) are checked by their
 * plugins; here only their "plugin" and "path" keys. */
#include "config.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "run_cfg.h"

struct top {
	const char *name;
	int64_t seed, rounds;
	const char *init;
	json_t *model, *data, *clients, *selector, *privacy, *aggregator, *eval, *output, *attack, *finetune,
	    *expert, *secagg;
};

#define O(key, type, st, field, flags, lo, hi, def, defs, choices) \
	{key, type, offsetof(st, field), flags, lo, hi, def, defs, choices}

static const struct fedrun_opt top_spec[] = {
	O("name", FEDRUN_OPT_STRING, struct top, name, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("seed", FEDRUN_OPT_INT, struct top, seed, 0, 0, 9007199254740991.0, 0, NULL, NULL),
	O("rounds", FEDRUN_OPT_INT, struct top, rounds, FEDRUN_OPT_REQUIRED, 0, 1e9, 0, NULL, NULL),
	/* Read (and checked readable) by the engine only in a fresh run: a
	 * resumed one does not need it any more. */
	O("init", FEDRUN_OPT_PATH, struct top, init, FEDRUN_OPT_OPTIONAL | FEDRUN_OPT_UNREAD, 0, 0, 0,
	  NULL, NULL),
	O("model", FEDRUN_OPT_OBJECT, struct top, model, FEDRUN_OPT_REQUIRED, 0, 0, 0, NULL, NULL),
	O("data", FEDRUN_OPT_OBJECT, struct top, data, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("clients", FEDRUN_OPT_OBJECT, struct top, clients, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("selector", FEDRUN_OPT_OBJECT, struct top, selector, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("privacy", FEDRUN_OPT_ANY, struct top, privacy, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("aggregator", FEDRUN_OPT_OBJECT, struct top, aggregator, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("eval", FEDRUN_OPT_OBJECT, struct top, eval, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("output", FEDRUN_OPT_OBJECT, struct top, output, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("attack", FEDRUN_OPT_ANY, struct top, attack, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("finetune", FEDRUN_OPT_ANY, struct top, finetune, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("expert", FEDRUN_OPT_ANY, struct top, expert, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	/* checked by the engine (core/engine/secure.c) */
	O("secagg", FEDRUN_OPT_ANY, struct top, secagg, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	FEDRUN_OPT_END_,
};

static const struct fedrun_opt clients_spec[] = {
	O("fraction", FEDRUN_OPT_NUMBER, struct run_cfg, fraction, FEDRUN_OPT_MIN_OPEN, 0, 1, 1.0, NULL, NULL),
	O("epochs", FEDRUN_OPT_INT, struct run_cfg, epochs, 0, 0, 1e6, 1, NULL, NULL),
	O("steps", FEDRUN_OPT_INT, struct run_cfg, steps, 0, 0, 1e12, 0, NULL, NULL),
	O("batch", FEDRUN_OPT_INT, struct run_cfg, batch, 0, 1, 1e9, 32, NULL, NULL),
	O("optimizer_state", FEDRUN_OPT_CHOICE, struct run_cfg, optim_state, 0, 0, 0, 0, "keep", "reset|keep|continue"),
	O("lr_clock", FEDRUN_OPT_CHOICE, struct run_cfg, lr_clock, 0, 0, 0, 0, "global", "global|client"),
	O("state_store", FEDRUN_OPT_CHOICE, struct run_cfg, state_store, 0, 0, 0, 0, "auto", "auto|memory|disk"),
	/* parsed on its own (optim_spec), listed here so that an unknown
	 * key's message names it among the known ones */
	O("optimizer", FEDRUN_OPT_OBJECT, struct run_cfg, optim_section, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	FEDRUN_OPT_END_,
};

struct optim_json {
	int kind;
	double lr, momentum, weight_decay, beta1, beta2, eps, clip_norm;
	bool nesterov;
};

static const struct fedrun_opt optim_spec[] = {
	O("name", FEDRUN_OPT_CHOICE, struct optim_json, kind, 0, 0, 0, 0, "sgd", "sgd|adam|adamw"),
	O("lr", FEDRUN_OPT_NUMBER, struct optim_json, lr, FEDRUN_OPT_MIN_OPEN, 0, 1e6, 0.1, NULL, NULL),
	O("momentum", FEDRUN_OPT_NUMBER, struct optim_json, momentum, FEDRUN_OPT_MAX_OPEN, 0, 1, 0, NULL, NULL),
	O("nesterov", FEDRUN_OPT_BOOL, struct optim_json, nesterov, 0, 0, 0, 0, NULL, NULL),
	O("weight_decay", FEDRUN_OPT_NUMBER, struct optim_json, weight_decay, 0, 0, 1e6, 0, NULL, NULL),
	O("beta1", FEDRUN_OPT_NUMBER, struct optim_json, beta1, FEDRUN_OPT_MAX_OPEN, 0, 1, 0.9, NULL, NULL),
	O("beta2", FEDRUN_OPT_NUMBER, struct optim_json, beta2, FEDRUN_OPT_MAX_OPEN, 0, 1, 0.999, NULL, NULL),
	O("eps", FEDRUN_OPT_NUMBER, struct optim_json, eps, FEDRUN_OPT_MIN_OPEN, 0, 1, 1e-8, NULL, NULL),
	O("clip_norm", FEDRUN_OPT_NUMBER, struct optim_json, clip_norm, 0, 0, 1e12, 0, NULL, NULL),
	FEDRUN_OPT_END_,
};

static const struct fedrun_opt eval_spec[] = {
	O("every", FEDRUN_OPT_INT, struct run_cfg, eval_every, 0, 0, 1e9, 1, NULL, NULL),
	O("split", FEDRUN_OPT_CHOICE, struct run_cfg, eval_split, 0, 0, 0, 0, "valid", "train|valid|test"),
	O("clients", FEDRUN_OPT_BOOL, struct run_cfg, eval_clients, 0, 0, 0, 0, NULL, NULL),
	O("final_test", FEDRUN_OPT_BOOL, struct run_cfg, final_test, 0, 0, 0, 1, NULL, NULL),
	O("matrix", FEDRUN_OPT_BOOL, struct run_cfg, eval_matrix, 0, 0, 0, 0, NULL, NULL),
	O("matrix_split", FEDRUN_OPT_CHOICE, struct run_cfg, matrix_split, 0, 0, 0, 0, "test", "train|valid|test"),
	FEDRUN_OPT_END_,
};

struct ft_json {
	int64_t epochs, steps, batch;
	json_t *optimizer, *clients;
};

static const struct fedrun_opt finetune_spec[] = {
	O("epochs", FEDRUN_OPT_INT, struct ft_json, epochs, FEDRUN_OPT_OPTIONAL, 1, 1e6, 0, NULL, NULL),
	O("steps", FEDRUN_OPT_INT, struct ft_json, steps, FEDRUN_OPT_OPTIONAL, 1, 1e12, 0, NULL, NULL),
	O("batch", FEDRUN_OPT_INT, struct ft_json, batch, FEDRUN_OPT_OPTIONAL, 1, 1e9, 0, NULL, NULL),
	O("optimizer", FEDRUN_OPT_OBJECT, struct ft_json, optimizer, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("clients", FEDRUN_OPT_ANY, struct ft_json, clients, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	FEDRUN_OPT_END_,
};

static const struct fedrun_opt output_spec[] = {
	O("dir", FEDRUN_OPT_STRING, struct run_cfg, dir, 0, 0, 0, 0, NULL, NULL),
	O("checkpoint_every", FEDRUN_OPT_INT, struct run_cfg, ckpt_every, 0, 0, 1e9, 1, NULL, NULL),
	O("keep", FEDRUN_OPT_INT, struct run_cfg, ckpt_keep, 0, 1, 1e9, 2, NULL, NULL),
	O("overwrite", FEDRUN_OPT_BOOL, struct run_cfg, overwrite, 0, 0, 0, 0, NULL, NULL),
	FEDRUN_OPT_END_,
};

/* Gets or creates the object section `key` of root. */
static json_t *section(json_t *root, const char *key)
{
	json_t *s = json_object_get(root, key);
	if (!s) {
		s = json_object();
		json_object_set_new(root, key, s);
	}
	return s;
}

static void optim_from_json(const struct optim_json *oj, struct fedrun_optim_cfg *o)
{
	*o = (struct fedrun_optim_cfg){
		.kind = (enum fedrun_optimizer_kind)oj->kind, .lr = oj->lr,
		.momentum = oj->momentum, .nesterov = oj->nesterov,
		.weight_decay = oj->weight_decay, .beta1 = oj->beta1, .beta2 = oj->beta2,
		.eps = oj->eps, .clip_norm = oj->clip_norm};
}

/* The "clients" key of section sec (named what): "all", the default,
 * written back, or a non-empty list of client names or indices, checked
 * against the model's clients once it exists (run_finetune_clients). */
static int clients_choice(json_t *sec, const char *what, json_t **clients)
{
	char got[64];
	json_t *c = json_object_get(sec, "clients");
	if (!c) {
		json_object_set_new(sec, "clients", json_string("all"));
		c = json_object_get(sec, "clients");
	}
	if (json_is_string(c)) {
		if (strcmp(json_string_value(c), "all") != 0)
			return fedrun_error(FEDRUN_ECONFIG,
					    "%s.clients: expected \"all\" or a list of client names or indices, got \"%s\"",
					    what, json_string_value(c));
	} else if (json_is_array(c)) {
		size_t i;
		json_t *e;
		if (json_array_size(c) == 0)
			return fedrun_error(FEDRUN_ECONFIG, "%s.clients: the list is empty", what);
		json_array_foreach(c, i, e)
			if (!json_is_string(e) && !(json_is_integer(e) && json_integer_value(e) >= 0))
				return fedrun_error(FEDRUN_ECONFIG,
						    "%s.clients[%zu]: expected a client name or index, got %s",
						    what, i, fedrun_json_describe(e, got, sizeof got));
	} else {
		return fedrun_error(FEDRUN_ECONFIG,
				    "%s.clients: expected \"all\" or a list of client names or indices, got %s",
				    what, fedrun_json_describe(c, got, sizeof got));
	}
	*clients = c;
	return 0;
}

struct ex_json {
	int64_t steps, gate_steps;
	double gate_lr;
	json_t *clients, *private;
};

static const struct fedrun_opt expert_spec[] = {
	O("steps", FEDRUN_OPT_INT, struct ex_json, steps, FEDRUN_OPT_OPTIONAL, 1, 1e12, 0, NULL, NULL),
	O("gate_steps", FEDRUN_OPT_INT, struct ex_json, gate_steps, 0, 0, 1e9, 200, NULL, NULL),
	O("gate_lr", FEDRUN_OPT_NUMBER, struct ex_json, gate_lr, FEDRUN_OPT_MIN_OPEN, 0, 1e6, 0.01, NULL, NULL),
	O("clients", FEDRUN_OPT_ANY, struct ex_json, clients, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	O("private", FEDRUN_OPT_OBJECT, struct ex_json, private, FEDRUN_OPT_OPTIONAL, 0, 0, 0, NULL, NULL),
	FEDRUN_OPT_END_,
};

/* expert.private: {"client name": "file", ...}, every value a readable
 * file name, resolved as every path of the pipeline (the section then holds
 * the resolved names). Which names are clients the engine checks. */
static int expert_private_parse(json_t *priv)
{
	size_t n = json_object_size(priv);
	if (n == 0)
		return 0;
	struct fedrun_opt *spec = calloc(n + 1, sizeof *spec);
	const char **paths = calloc(n, sizeof *paths);
	int rc = spec && paths ? 0 : fedrun_error(FEDRUN_ENOMEM, "out of memory");
	const char *key;
	json_t *v;
	size_t i = 0;
	json_object_foreach(priv, key, v) {
		if (rc < 0)
			break;
		spec[i].key = key;
		spec[i].type = FEDRUN_OPT_PATH;
		spec[i].offset = i * sizeof *paths;
		spec[i].flags = FEDRUN_OPT_REQUIRED;
		i++;
	}
	if (rc == 0)
		rc = fedrun_opts_parse(spec, priv, "expert.private", paths);
	free(spec);
	free(paths);
	return rc;
}

/* The optional "expert" section (FedNMT sec. 2.5, domain experts): the
 * private models' training, steps (default: what a client trained in the
 * run, rounds x clients.steps, or rounds x clients.epochs epochs), with
 * the clients' batch and optimizer; the gate's gate_steps and gate_lr;
 * clients as finetune's. */
static int expert_parse(json_t *root, struct run_cfg *cfg)
{
	json_t *ex = json_object_get(root, "expert");
	char got[64];
	if (!ex || json_is_null(ex))
		return 0; /* absent: not added, as finetune */
	if (!json_is_object(ex))
		return fedrun_error(FEDRUN_ECONFIG, "expert: expected an object or null, got %s",
				    fedrun_json_describe(ex, got, sizeof got));
	struct ex_json ej;
	int rc = fedrun_opts_parse(expert_spec, ex, "expert", &ej);
	if (rc < 0 || (rc = clients_choice(ex, "expert", &ej.clients)) < 0 ||
	    (ej.private && (rc = expert_private_parse(ej.private)) < 0))
		return rc;
	cfg->expert = true;
	cfg->ex_private = ej.private;
	if (json_object_get(ex, "steps")) {
		cfg->ex_steps = ej.steps;
	} else if (cfg->steps > 0) {
		cfg->ex_steps = cfg->rounds * cfg->steps;
	} else {
		cfg->ex_epochs = cfg->rounds * cfg->epochs;
		if (cfg->ex_epochs > UINT32_MAX)
			return fedrun_error(FEDRUN_ECONFIG,
					    "expert: rounds x clients.epochs = %lld epochs is too many; "
					    "give expert.steps",
					    (long long)cfg->ex_epochs);
	}
	if (cfg->ex_steps == 0 && cfg->ex_epochs == 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "expert: the run has 0 rounds, so the private models would not "
				    "train: give expert.steps");
	cfg->ex_gate_steps = ej.gate_steps;
	cfg->ex_gate_lr = ej.gate_lr;
	cfg->ex_clients = ej.clients;
	return 0;
}

/* The optional "finetune" section: epochs or steps (default: epochs 1),
 * batch (default clients.batch), optimizer (default clients.optimizer) and
 * clients ("all", the default, or a list checked against the model's
 * clients once it exists). */
static int finetune_parse(json_t *root, struct run_cfg *cfg)
{
	json_t *ft = json_object_get(root, "finetune");
	char got[64];
	if (!ft || json_is_null(ft))
		return 0; /* absent: not added, so older runs' pipelines still match */
	if (!json_is_object(ft))
		return fedrun_error(FEDRUN_ECONFIG, "finetune: expected an object or null, got %s",
				    fedrun_json_describe(ft, got, sizeof got));
	struct ft_json fj;
	int rc = fedrun_opts_parse(finetune_spec, ft, "finetune", &fj);
	if (rc < 0)
		return rc;
	bool has_e = json_object_get(ft, "epochs"), has_s = json_object_get(ft, "steps");
	if (has_e && has_s)
		return fedrun_error(FEDRUN_ECONFIG, "finetune: give epochs or steps, not both");
	if (!has_e && !has_s) {
		fj.epochs = 1;
		json_object_set_new(ft, "epochs", json_integer(1));
	}
	cfg->finetune = true;
	cfg->ft_epochs = has_s ? 0 : fj.epochs;
	cfg->ft_steps = has_s ? fj.steps : 0;
	cfg->ft_batch = json_object_get(ft, "batch") ? fj.batch : cfg->batch;
	if (!json_object_get(ft, "batch"))
		json_object_set_new(ft, "batch", json_integer(cfg->batch));
	if (fj.optimizer) {
		struct optim_json oj;
		if ((rc = fedrun_opts_parse(optim_spec, fj.optimizer, "finetune.optimizer", &oj)) < 0)
			return rc;
		optim_from_json(&oj, &cfg->ft_optim);
	} else {
		cfg->ft_optim = cfg->optim;
		json_object_set(ft, "optimizer", json_object_get(json_object_get(root, "clients"), "optimizer"));
	}
	if ((rc = clients_choice(ft, "finetune", &fj.clients)) < 0)
		return rc;
	cfg->ft_clients = fj.clients;
	return 0;
}

int run_config_parse(json_t *root, struct run_cfg *cfg)
{
	struct top top;
	memset(cfg, 0, sizeof *cfg);
	int rc = fedrun_opts_parse(top_spec, root, "", &top);
	if (rc < 0)
		return rc;
	cfg->name = top.name ? top.name : "run";
	/* The name is the default run directory's last component (runs/NAME):
	 * one component, which cannot lead out of runs/. */
	size_t nlen = strlen(cfg->name);
	bool ctl = false;
	for (const unsigned char *c = (const unsigned char *)cfg->name; *c; c++)
		ctl |= *c < 0x20 || *c == 0x7f;
	if (nlen == 0 || nlen > 200 || strchr(cfg->name, '/') || ctl ||
	    strcmp(cfg->name, ".") == 0 || strcmp(cfg->name, "..") == 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "name: \"%.60s%s\" cannot name a run directory (runs/NAME): 1 to "
				    "200 characters, no '/' or control characters, not \".\" or "
				    "\"..\" (output.dir chooses the directory freely)",
				    cfg->name, nlen > 60 ? "..." : "");
	if (!top.name)
		json_object_set_new(root, "name", json_string("run"));
	cfg->seed = top.seed;
	cfg->rounds = top.rounds;
	cfg->init = top.init;

	json_t *clients = section(root, "clients");
	json_t *optim = json_object_get(clients, "optimizer");
	if (optim)
		json_incref(optim), json_object_del(clients, "optimizer");
	else
		optim = json_object();
	struct optim_json oj;
	rc = fedrun_opts_parse(clients_spec, clients, "clients", cfg);
	if (rc == 0)
		rc = fedrun_opts_parse(optim_spec, optim, "clients.optimizer", &oj);
	if (rc == 0)
		optim_from_json(&oj, &cfg->optim);
	json_object_set_new(clients, "optimizer", optim);
	if (rc < 0)
		return rc;
	if (cfg->epochs == 0 && cfg->steps == 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "clients: epochs and steps are both 0: clients would not train");
	if (cfg->epochs > 0 && cfg->steps > 0)
		return fedrun_error(FEDRUN_ECONFIG,
				    "clients: give epochs or steps, not both (set epochs to 0 to use steps)");

	rc = fedrun_opts_parse(eval_spec, section(root, "eval"), "eval", cfg);
	if (rc == 0)
		rc = finetune_parse(root, cfg);
	if (rc == 0)
		rc = expert_parse(root, cfg);
	if (rc < 0)
		return rc;
	json_t *output = section(root, "output");
	if (!json_object_get(output, "dir")) {
		char dir[512];
		snprintf(dir, sizeof dir, "runs/%s", cfg->name);
		json_object_set_new(output, "dir", json_string(dir));
	}
	rc = fedrun_opts_parse(output_spec, output, "output", cfg);
	if (rc < 0)
		return rc;
	if (!*cfg->dir)
		return fedrun_error(FEDRUN_ECONFIG, "output.dir: must not be empty");

	/* Defaults for the plugin sections. */
	if (!json_object_get(section(root, "selector"), "plugin"))
		json_object_set_new(section(root, "selector"), "plugin", json_string("all"));
	if (!json_object_get(section(root, "aggregator"), "plugin"))
		json_object_set_new(section(root, "aggregator"), "plugin", json_string("fedavg"));
	json_t *attack = json_object_get(root, "attack");
	if (!attack) {
		json_object_set_new(root, "attack", json_null());
	} else if (!json_is_null(attack) && !json_is_object(attack)) {
		char got[64];
		return fedrun_error(FEDRUN_ECONFIG, "attack: expected an object or null, got %s",
				    fedrun_json_describe(attack, got, sizeof got));
	}
	json_t *priv = json_object_get(root, "privacy");
	if (!priv) {
		json_object_set_new(root, "privacy", json_null());
	} else if (!json_is_null(priv) && !json_is_object(priv)) {
		char got[64];
		return fedrun_error(FEDRUN_ECONFIG, "privacy: expected an object or null, got %s",
				    fedrun_json_describe(priv, got, sizeof got));
	}
	/* No null default for secagg: the resolved pipeline of a run from
	 * before the key existed stays the same for --resume. */
	json_t *sa = json_object_get(root, "secagg");
	if (sa && !json_is_null(sa) && !json_is_object(sa)) {
		char got[64];
		return fedrun_error(FEDRUN_ECONFIG, "secagg: expected an object or null, got %s",
				    fedrun_json_describe(sa, got, sizeof got));
	}
	return 0;
}
