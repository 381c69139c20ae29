/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the model plugins gru-lm, transformer and encoder (header only, so that
 * the check programs and benchmarks that compile a model's network get it
 * too): the backend a model runs on, named by its "backend" option, and the
 * host<->device copies of a worker, counted so that a run can report the
 * bytes that cross (the metrics backend.h2d_bytes and backend.d2h_bytes).
 *
 * The models keep the rules of fedrun/backend.h: what they hand to an op as
 * device memory comes from the backend's alloc, host code never reads or
 * writes it, and everything crosses with to_device / to_host. */
#ifndef FEDRUN_MODELS_DEVICE_H
#define FEDRUN_MODELS_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fedrun/fedrun.h>

/* Bytes a worker has copied, host to device and device to host. */
struct mdev_xfer {
	uint64_t h2d, d2h;
};

/* to_device of `bytes` bytes (none: no call), counted in x. */
static inline int mdev_to_device(const struct fedrun_backend_ops *be, void *ctx,
				 struct mdev_xfer *x, void *dst, const void *src, uint64_t bytes)
{
	if (!bytes)
		return 0;
	int rc = be->to_device(ctx, dst, src, bytes);
	if (rc == 0)
		x->h2d += bytes;
	return rc;
}

/* to_host of `bytes` bytes (none: no call), counted in x. */
static inline int mdev_to_host(const struct fedrun_backend_ops *be, void *ctx, struct mdev_xfer *x,
			       void *dst, const void *src, uint64_t bytes)
{
	if (!bytes)
		return 0;
	int rc = be->to_host(ctx, dst, src, bytes);
	if (rc == 0)
		x->d2h += bytes;
	return rc;
}

/* Whether the train args ask for FedProx's proximal term (ABI 1.0's
 * members checked against the host's size). */
static inline bool mdev_has_prox(const struct fedrun_train_args *a)
{
	return a->size >= offsetof(struct fedrun_train_args, prox_anchor) + sizeof a->prox_anchor &&
	       a->prox_mu > 0 && a->prox_anchor;
}

/* Device room for `floats` floats at *p (capacity *cap floats, grown by a
 * new allocation; the old contents are not kept): a worker's optimizer
 * state, whose size depends on the round's optimizer. */
static inline int mdev_reserve(const struct fedrun_backend_ops *be, void *ctx, float **p,
			       uint64_t *cap, uint64_t floats)
{
	if (floats <= *cap)
		return 0;
	if (*p)
		be->free_mem(ctx, *p);
	*p = NULL;
	*cap = 0;
	int rc = be->alloc(ctx, floats * sizeof(float), (void **)p);
	if (rc == 0)
		*cap = floats;
	return rc;
}

/* The model option "precision" (fedrun-models(7), PRECISION): its choices
 * in enum fedrun_precision order, for a FEDRUN_OPT_CHOICE. */
#define MDEV_PRECISIONS "fp32|bf16|tf32"

/* A worker's context settings from the model's "device", "deterministic"
 * and "precision" options (fedrun-models(7), BACKENDS). */
static inline struct fedrun_backend_ctx_cfg mdev_ctx_cfg(int32_t device, bool deterministic,
							 uint32_t precision)
{
	/* threads 0: the OpenMP threads of the calling thread, which the
	 * engine sets to --threads divided among the workers that train or
	 * evaluate at once (run_parallel_for), so that a round of one client
	 * uses every thread and a round of many one each. The CPU kernels give
	 * the same bits for any count (backend.h). */
	struct fedrun_backend_ctx_cfg cfg = {.size = sizeof cfg,
					     .threads = 0,
					     .device = device,
					     .allow_nondeterministic = !deterministic,
					     .precision = precision};
	return cfg;
}

/* Tells a worker's context where its parameters are (device memory of n
 * floats), so that a bf16 context makes their bf16 copies once per step. */
static inline int mdev_declare_params(const struct fedrun_backend_ops *be, void *ctx,
				      const float *params, uint64_t n)
{
	return FEDRUN_BACKEND_HAS(be, declare_params) ? be->declare_params(ctx, params, n) : 0;
}

/* The backend of a model's "backend" option (JSON path model.backend):
 * found with fedrun_backend_find, checked to have the ops that keep
 * training on the device (optim_step, prox_grad), and asked for one
 * context, so that a backend without its device fails when the model is
 * created (fedrun validate, or before round 0) with the backend's own
 * message. */
static inline int mdev_backend_open(const char *name, int32_t device, bool deterministic,
				    uint32_t precision, const struct fedrun_backend_ops **out)
{
	const struct fedrun_backend_ops *be;
	int rc = fedrun_backend_find(name, &be);
	if (rc == FEDRUN_ENOENT) /* a pipeline error, as an unknown value is */
		return fedrun_error_wrap(FEDRUN_ECONFIG,
					 "model.backend: no backend \"%s\": ", name);
	if (rc < 0)
		return fedrun_error_wrap(rc, "model.backend \"%s\": ", name);
	if (!FEDRUN_BACKEND_HAS(be, optim_step) || !FEDRUN_BACKEND_HAS(be, prox_grad))
		return fedrun_error(FEDRUN_ECONFIG,
				    "model.backend \"%s\": the backend has no optim_step or "
				    "prox_grad op (built for an older fedrun), which the model "
				    "needs to train with its parameters in device memory",
				    name);
	if (precision != FEDRUN_PRECISION_FP32 && !FEDRUN_BACKEND_HAS(be, declare_params))
		return fedrun_error(
		    FEDRUN_ECONFIG,
		    "model.precision \"%s\": the backend \"%s\" was built for an "
		    "older fedrun (plugin ABI before 1.10) and computes in fp32 only",
		    fedrun_precision_name(precision), name);
	struct fedrun_backend_ctx_cfg cfg = mdev_ctx_cfg(device, deterministic, precision);
	void *ctx = NULL;
	if ((rc = be->ctx_create(&cfg, &ctx)) < 0) {
		if (precision != FEDRUN_PRECISION_FP32)
			return fedrun_error_wrap(FEDRUN_ECONFIG, "model.precision \"%s\": ",
						 fedrun_precision_name(precision));
		return fedrun_error_wrap(rc, "model.backend \"%s\": ", name);
	}
	be->ctx_destroy(ctx);
	*out = be;
	return 0;
}

/* "fp32", or "bf16 (oneDNN amx_bf16 kernels)" on the CPU backend: the
 * precision and the kernels that run it, for a model's summary log line. */
static inline const char *mdev_precision_text(const struct fedrun_backend_ops *be,
					      uint32_t precision, char *buf, size_t n)
{
	const char *isa = NULL;
	if (precision == FEDRUN_PRECISION_BF16 && be == fedrun_backend_cpu())
		isa = fedrun_backend_cpu_bf16_isa();
	if (isa)
		snprintf(buf, n, "%s (oneDNN %s kernels)", fedrun_precision_name(precision), isa);
	else
		snprintf(buf, n, "%s", fedrun_precision_name(precision));
	return buf;
}

/* Reports the bytes copied since `before` as metrics of `client` (or -1),
 * where the run wants them (report: the backend is not "cpu", whose device
 * memory is host memory: its runs' metrics stay as they were). */
static inline void mdev_report(const struct fedrun_host *host, bool report, int64_t client,
			       const struct mdev_xfer *before, const struct mdev_xfer *now)
{
	if (!report || !host || !host->metric)
		return;
	host->metric(host->ctx, "backend.h2d_bytes", client, NULL,
		     (double)(now->h2d - before->h2d));
	host->metric(host->ctx, "backend.d2h_bytes", client, NULL,
		     (double)(now->d2h - before->d2h));
}

/* ---- work memory of the networks (transformer/net.c, encoder/net.c) ---- */

/* Carves 64-byte aligned arrays out of one allocation: a first pass with
 * base NULL counts the floats (n), a second with base = the allocation
 * assigns them. */
struct mdev_carve {
	float *base;
	uint64_t n; /* floats used */
};

static inline float *mdev_take(struct mdev_carve *k, uint64_t floats)
{
	float *p = k->base ? k->base + k->n : NULL;
	k->n += (floats + 15) & ~(uint64_t)15;
	return p;
}

static inline uint8_t *mdev_take_bytes(struct mdev_carve *k, uint64_t bytes)
{
	return (uint8_t *)mdev_take(k, (bytes + 3) / 4);
}

/* Host room for n int32s (ids staged for one to_device) in *buf, of *cap
 * entries, grown as needed; NULL (error set) when out of memory. */
static inline int32_t *mdev_stage(int32_t **buf, uint64_t *cap, uint64_t n)
{
	if (n > *cap) {
		int32_t *p = realloc(*buf, n * sizeof *p);
		if (!p) {
			fedrun_error(FEDRUN_ENOMEM, "out of memory");
			return NULL;
		}
		*buf = p;
		*cap = n;
	}
	return *buf;
}

/* Device zeros: at least n floats (or int32 ids) in *p, of *cap: alloc
 * zero-fills, and the callers never write them. */
static inline int mdev_grow_zeros(const struct fedrun_backend_ops *be, void *ctx, void **p,
				  uint64_t *cap, uint64_t n)
{
	if (n <= *cap)
		return 0;
	if (*p)
		be->free_mem(ctx, *p);
	*p = NULL;
	*cap = 0;
	int rc = be->alloc(ctx, n * sizeof(float), p);
	if (rc < 0)
		return rc;
	*cap = n;
	return 0;
}

/* ---- a network's hold on its backend (transformer/net.c, encoder/net.c) ---- */

/* What a network's work object keeps of its backend: the context, the
 * bytes it has copied, device zeros (y += a x through prox_grad, and bias
 * rows broadcast through embedding_forward of a one-row table), a scratch
 * row for biases and column sums, the host staging of a batch's ids, and
 * the one allocation its activations are carved from (mdev_carve). */
struct mdev_net {
	const struct fedrun_backend_ops *be;
	void *ctx;
	struct mdev_xfer xfer;
	float *zeros; /* zcap floats of 0, never written */
	uint64_t zcap;
	int32_t *zids; /* zidcap ids 0, never written */
	uint64_t zidcap;
	float *prow;   /* the scratch row */
	int32_t *hbuf; /* host: ids staged for one to_device */
	uint64_t hcap; /* its int32s */
	float *mem;    /* the activations */
};

/* Creates the backend context (ctx_cfg) and a scratch row of prow_floats
 * floats. On failure what was made is left for mdev_net_close. */
static inline int mdev_net_open(struct mdev_net *n, const struct fedrun_backend_ops *be,
				const struct fedrun_backend_ctx_cfg *ctx_cfg, uint64_t prow_floats)
{
	n->be = be;
	int rc = be->ctx_create(ctx_cfg, &n->ctx);
	if (rc < 0) {
		n->ctx = NULL;
		return fedrun_error_wrap(rc, "backend %s: ", be->name ? be->name : "?");
	}
	return be->alloc(n->ctx, prow_floats * sizeof(float), (void **)&n->prow);
}

/* Frees the device arrays and the context (what the network keeps in the
 * context besides these must be freed first); a zeroed n is a no-op. */
static inline void mdev_net_close(struct mdev_net *n)
{
	if (n->be && n->ctx) {
		void *arrays[] = {n->mem, n->zeros, n->zids, n->prow};
		for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
			if (arrays[i])
				n->be->free_mem(n->ctx, arrays[i]);
		n->be->ctx_destroy(n->ctx);
	}
	free(n->hbuf);
	memset(n, 0, sizeof *n);
}

static inline int mdev_net_to_device(struct mdev_net *n, void *dst, const void *src, uint64_t bytes)
{
	return mdev_to_device(n->be, n->ctx, &n->xfer, dst, src, bytes);
}

static inline int mdev_net_to_host(struct mdev_net *n, void *dst, const void *src, uint64_t bytes)
{
	return mdev_to_host(n->be, n->ctx, &n->xfer, dst, src, bytes);
}

/* y (len) += a x: prox_grad's y + a (x - 0) with the zeros as anchor, the
 * same bits as y + a x (x - 0 is x, signed zeros too). */
static inline int mdev_net_add(struct mdev_net *n, uint64_t len, float a, const float *x, float *y)
{
	int rc = mdev_grow_zeros(n->be, n->ctx, (void **)&n->zeros, &n->zcap, len);
	return rc < 0 ? rc : n->be->prox_grad(n->ctx, len, a, x, n->zeros, y);
}

/* Every row of y (N, Q) = row (Q): embedding_forward of row 0 of a
 * one-row table, N times (copies, bit for bit). */
static inline int mdev_net_bcast(struct mdev_net *n, uint64_t N, uint64_t Q, const float *row,
				 float *y)
{
	int rc = mdev_grow_zeros(n->be, n->ctx, (void **)&n->zids, &n->zidcap, N);
	return rc < 0
		   ? rc
		   : n->be->embedding_forward(n->ctx, (uint32_t)N, 1, (uint32_t)Q, n->zids, row, y);
}

/* c = alpha op(a) op(b) + beta c, the backend's sgemm with 64-bit sizes. */
static inline int mdev_net_mm(struct mdev_net *n, bool ta, bool tb, uint64_t m, uint64_t nn,
			      uint64_t k, float alpha, const float *a, uint64_t lda, const float *b,
			      uint64_t ldb, float beta, float *c, uint64_t ldc)
{
	return n->be->sgemm(n->ctx, ta, tb, (int)m, (int)nn, (int)k, alpha, a, (int)lda, b,
			    (int)ldb, beta, c, (int)ldc);
}

/* ---- layouts of the networks --------------------------------------------- */

/* A new empty layout in *l for a network's *_layout (out: the caller's
 * result argument, checked here). */
static inline int mdev_layout_new(struct fedrun_layout **l, struct fedrun_layout **out,
				  const char *who)
{
	if (!out)
		return fedrun_error(FEDRUN_EINVAL, "%s: NULL out", who);
	*l = malloc(sizeof **l);
	if (!*l)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory");
	fedrun_layout_init(*l);
	return 0;
}

static inline void mdev_layout_free(struct fedrun_layout *l)
{
	if (!l)
		return;
	fedrun_layout_fini(l);
	free(l);
}

/* l into *out when rc (what building it returned) is 0, else freed. */
static inline int mdev_layout_done(struct fedrun_layout *l, int rc, struct fedrun_layout **out)
{
	if (rc < 0) {
		mdev_layout_free(l);
		return rc;
	}
	*out = l;
	return 0;
}

/* The index in l of tensor `name`, which must have numel floats (else an
 * error naming the model `who`, the tensor and both sizes). */
static inline int mdev_layout_find(const struct fedrun_layout *l, const char *who, const char *name,
				   uint64_t numel, int64_t *idx)
{
	int64_t i = fedrun_layout_find(l, name);
	*idx = -1;
	if (i < 0)
		return fedrun_error(FEDRUN_EINVAL, "%s: layout has no tensor %s", who, name);
	if (l->t[i].numel != numel)
		return fedrun_error(FEDRUN_EINVAL, "%s: tensor %s has %llu floats, expected %llu",
				    who, name, (unsigned long long)l->t[i].numel,
				    (unsigned long long)numel);
	*idx = i;
	return 0;
}

#endif
