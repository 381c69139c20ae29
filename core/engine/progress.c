/* SPDX-License-Identifier: Apache-2.0 */
/* What a run says while it runs (fedrun(1), PROGRESS): a line as each
 * phase of setup and of the end starts, and one per round, always in
 * RUN/log.txt and, unless --quiet, on stderr. On a terminal the round's
 * line is rewritten in place; elsewhere (a file, a pipe, a batch job's
 * log) every line is a line of its own, flushed at once. Only rank 0 of a
 * run over several processes speaks. */
#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "dist.h"
#include "engine.h"

void run_log_line(struct run *r, const char *lvl, const char *line)
{
	if (r->log) {
		fprintf(r->log, "[%.3f] %s: %s\n", run_now() - r->t0, lvl, line);
		return;
	}
	/* Plugins log while they are created, before the run directory is
	 * open: keep the lines for log.txt. */
	char entry[2200];
	int n = snprintf(entry, sizeof entry, "[%.3f] %s: %s\n", run_now() - r->t0, lvl, line);
	char *more = n > 0 ? realloc(r->pending_log, r->pending_len + (size_t)n + 1) : NULL;
	if (more) {
		memcpy(more + r->pending_len, entry, (size_t)n + 1);
		r->pending_log = more;
		r->pending_len += (size_t)n;
	}
}

void run_progress_break(struct run *r)
{
	if (r->prog.open) {
		fputc('\n', stderr);
		fflush(stderr);
		r->prog.open = false;
	}
}

/* One line: in log.txt, and unless --quiet on stderr; a round's line
 * (`round`) on a terminal replaces the one before, cut to the terminal's
 * width (a line that wraps could not be rewritten). */
static void say(struct run *r, const char *line, bool round)
{
	if (!r->prog.on || dist_rank(r) > 0)
		return;
	pthread_mutex_lock(&r->lock);
	run_log_line(r, "info", line);
	if (r->log)
		fflush(r->log);
	if (!r->opts->quiet) {
		if (round && r->opts->progress) {
			struct winsize ws;
			int width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1
					    ? ws.ws_col - 1
					    : 1 << 20;
			fprintf(stderr, "\r%.*s\033[K", width, line);
			r->prog.open = true;
		} else {
			run_progress_break(r);
			fprintf(stderr, "%s\n", line);
		}
		fflush(stderr);
	}
	pthread_mutex_unlock(&r->lock);
}

void run_status(struct run *r, const char *fmt, ...)
{
	char msg[1024], line[1100];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(line, sizeof line, "%s ...", msg);
	say(r, line, false);
}

/* "12m05s", or past an hour "3h07m". */
static void duration(char *buf, size_t n, double secs)
{
	long s = secs >= 0 && secs < 1e9 ? lround(secs) : secs >= 1e9 ? 1000000000L : 0;
	if (s < 3600)
		snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
	else
		snprintf(buf, n, "%ldh%02ldm", s / 3600, s / 60 % 60);
}

/* The work of a phase's client (epochs2 epochs or steps2 steps of its own)
 * against that of a round's client (clients.epochs or clients.steps); 1
 * when they count differently. */
static double work_ratio(const struct run *r, int64_t epochs2, int64_t steps2)
{
	if (r->cfg.steps > 0)
		return steps2 > 0 ? (double)steps2 / (double)r->cfg.steps : 1;
	return steps2 == 0 && epochs2 > 0 && r->cfg.epochs > 0
		       ? (double)epochs2 / (double)r->cfg.epochs
		       : 1;
}

/* Seconds the run still needs after round r->round, estimated from what
 * this process timed:
 *  - each round left at the mean time of the rounds it ran, their
 *    evaluations left out (their checkpoints in);
 *  - each evaluation left (every eval.every rounds, and the last round)
 *    at the time of the last one (round 0's at first);
 *  - after the rounds: the test evaluation (eval.final_test) at that time
 *    too (another split of the same clients); the model-by-domain table
 *    (eval.matrix) at that time for each of its 1 + N models (a model on
 *    every client is about one evaluation); fine-tuning and the domain
 *    experts run their clients on rank 0's workers, a wave of as many as
 *    there are workers at a time, each wave at the time of one wave of a
 *    round (the round's time over its waves), scaled by their epochs or
 *    steps against the rounds'.
 * Evaluations count nothing before one was timed, nor in a run that
 * evaluates only at the end (eval.every 0). */
static double eta(const struct run *r)
{
	const struct run_cfg *c = &r->cfg;
	uint32_t total = (uint32_t)c->rounds, done = r->round, left = total - done;
	double per = r->prog.rounds ? r->prog.work / r->prog.rounds : 0;
	double ev = r->prog.eval > 0 ? r->prog.eval : 0;
	uint32_t evals = 0;
	if (c->eval_every > 0 && left > 0) {
		uint32_t every = (uint32_t)c->eval_every;
		evals = total / every - done / every + (total % every != 0);
	}
	double s = left * per + evals * ev;
	if (c->final_test)
		s += ev;
	uint32_t nft = c->finetune ? r->nft : 0, nex = c->expert ? r->nex : 0;
	if (c->eval_matrix)
		s += (1 + nft) * ev;
	uint32_t m = run_clients_per_round(r), lanes = r->nworkers ? r->nworkers : 1;
	uint32_t all_lanes = lanes * dist_nranks(r);
	double waves = m ? ceil((double)m / all_lanes) : 1;
	double client = per / waves;
	if (nft)
		s += ceil((double)nft / lanes) * client * work_ratio(r, c->ft_epochs, c->ft_steps);
	if (nex)
		s += ceil((double)nex / lanes) * client * work_ratio(r, c->ex_epochs, c->ex_steps);
	return s;
}

void run_progress(struct run *r, double secs)
{
	r->prog.work += secs - r->prog.round_eval;
	r->prog.rounds++;
	char line[2048], el[32], left[32];
	size_t n = 0;
	n += (size_t)snprintf(line + n, sizeof line - n, "round %u/%" PRId64 "  train loss %.4f",
			      r->round, r->cfg.rounds, r->prog.train_loss);
	if (!isnan(r->prog.eval_loss))
		n += (size_t)snprintf(line + n, sizeof line - n, "  %s loss %.4f",
				      run_split_name(r->cfg.eval_split), r->prog.eval_loss);
	/* The unit is the model's (struct fedrun_train_stats.samples, named
	 * by its ops' samples_unit): the text models count tokens. */
	if (r->prog.samples > 0 && r->prog.train > 0) {
		const char *unit = FEDRUN_MODEL_HAS(r->model_ops, samples_unit)
					   ? r->model_ops->samples_unit
					   : NULL;
		n += (size_t)snprintf(line + n, sizeof line - n, "  %.0f %.20s/s",
				      (double)r->prog.samples / r->prog.train,
				      unit ? unit : "samples");
	}
	duration(el, sizeof el, r->wall_base + (run_now() - r->t0));
	duration(left, sizeof left, eta(r));
	snprintf(line + n, sizeof line - n, "  elapsed %s  ETA %s", el, left);
	say(r, line, true);
}
