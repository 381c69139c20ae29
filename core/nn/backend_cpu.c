/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in CPU backend: its execution contexts, host memory standing in
 * for device memory, the ops table that gathers the kernels of core/nn/,
 * and control of the CBLAS library's own threads. */
#include "config.h"
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "fedrun/error.h"
#include "fedrun/optim.h"
#include "fedrun/params.h"
#include "cpu.h"

static int cpu_ctx_create(const struct fedrun_backend_ctx_cfg *cfg, void **ctx)
{
	if (!ctx)
		return fedrun_error(FEDRUN_EINVAL, "cpu backend: NULL ctx pointer");
	struct nn_cpu_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return fedrun_error(FEDRUN_ENOMEM, "cpu backend: context");
	/* Read only the members the caller's struct has. */
	if (cfg &&
	    cfg->size >= offsetof(struct fedrun_backend_ctx_cfg, threads) + sizeof cfg->threads)
		c->threads = cfg->threads;
	if (cfg &&
	    cfg->size >= offsetof(struct fedrun_backend_ctx_cfg, precision) + sizeof cfg->precision)
		c->precision = cfg->precision;
	int rc = 0;
	if (c->precision == FEDRUN_PRECISION_BF16)
		rc = nn_bf16_create(c);
	else if (c->precision != FEDRUN_PRECISION_FP32)
		rc = fedrun_error(FEDRUN_EUNSUPPORTED,
				  "cpu backend: no precision %s on the CPU (fp32 or bf16)",
				  fedrun_precision_name(c->precision));
	if (rc) {
		free(c);
		return rc;
	}
	*ctx = c;
	return 0;
}

static void cpu_ctx_destroy(void *ctx)
{
	if (ctx)
		nn_bf16_destroy(ctx);
	free(ctx);
}

static int cpu_alloc(void *ctx, uint64_t bytes, void **p)
{
	if (!p)
		return fedrun_error(FEDRUN_EINVAL, "cpu backend alloc: NULL result pointer");
	if (bytes > SIZE_MAX - 64)
		return fedrun_error(FEDRUN_ENOMEM, "cpu backend alloc: %llu bytes",
				    (unsigned long long)bytes);
	*p = fedrun_arena_alloc((bytes + sizeof(float) - 1) / sizeof(float));
	if (!*p)
		return fedrun_error(FEDRUN_ENOMEM, "cpu backend alloc: %llu bytes",
				    (unsigned long long)bytes);
	return 0;
}

static void cpu_free_mem(void *ctx, void *p)
{
	fedrun_arena_free(p);
}

static int cpu_zero(void *ctx, void *p, uint64_t bytes)
{
	if (bytes && !p)
		return fedrun_error(FEDRUN_EINVAL, "cpu backend zero: NULL pointer");
	if (bytes)
		memset(p, 0, bytes);
	nn_bf16_written(ctx, p, bytes);
	return 0;
}

static int cpu_copy(void *ctx, void *dst, const void *src, uint64_t bytes)
{
	if (bytes && (!dst || !src))
		return fedrun_error(FEDRUN_EINVAL, "cpu backend copy: NULL pointer");
	if (bytes)
		memcpy(dst, src, bytes);
	nn_bf16_written(ctx, dst, bytes);
	return 0;
}

static int cpu_optim_step(void *ctx, const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
			  float *params, float *grad, float *state, uint64_t *step, bool zero_grad)
{
	if (!cfg || !step || (n && (!params || !grad)))
		return fedrun_error(FEDRUN_EINVAL, "cpu backend optim_step: NULL argument");
	if (n && fedrun_optim_state_floats(cfg, n) && !state)
		return fedrun_error(FEDRUN_EINVAL, "cpu backend optim_step: NULL state");
	(zero_grad ? fedrun_optim_step_zero : fedrun_optim_step)(cfg, lr, n, params, grad, state,
								 step);
	nn_bf16_written(ctx, params, n * sizeof *params);
	return 0;
}

static int cpu_prox_grad(void *ctx, uint64_t n, float mu, const float *params, const float *anchor,
			 float *grad)
{
	if (n && (!params || !anchor || !grad))
		return fedrun_error(FEDRUN_EINVAL, "cpu backend prox_grad: NULL argument");
		/* the loop of fedrun_prox_grad, for the same floats */
#pragma omp parallel for schedule(static) if (n >= 65536)
	for (uint64_t i = 0; i < n; i++)
		grad[i] += mu * (params[i] - anchor[i]);
	return 0;
}

static int cpu_declare_params(void *ctx, const float *p, uint64_t n)
{
	if (n && !p)
		return fedrun_error(FEDRUN_EINVAL, "cpu backend declare_params: NULL pointer");
	if (ctx)
		nn_bf16_declare(ctx, p, n);
	return 0;
}

/* clang-format off: kernel-style tab indent for the table */
static const struct fedrun_backend_ops cpu_ops = {
    .size = sizeof(struct fedrun_backend_ops),
    .name = "cpu",
    .ctx_create = cpu_ctx_create,
    .ctx_destroy = cpu_ctx_destroy,
    .alloc = cpu_alloc,
    .free_mem = cpu_free_mem,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .to_device = cpu_copy,
    .to_host = cpu_copy,
    .sgemm = nn_cpu_sgemm,
    .sgemm_strided_batched = nn_cpu_sgemm_strided_batched,
    .linear_forward = nn_cpu_linear_forward,
    .linear_backward = nn_cpu_linear_backward,
    .embedding_forward = nn_cpu_embedding_forward,
    .embedding_backward = nn_cpu_embedding_backward,
    .gru_cache_floats = nn_cpu_gru_cache_floats,
    .gru_forward = nn_cpu_gru_forward,
    .gru_backward = nn_cpu_gru_backward,
    .dropout_forward = nn_cpu_dropout_forward,
    .dropout_backward = nn_cpu_dropout_backward,
    .softmax_xent = nn_cpu_softmax_xent,
    .act_forward = nn_cpu_act_forward,
    .act_backward = nn_cpu_act_backward,
    .layernorm_forward = nn_cpu_layernorm_forward,
    .layernorm_backward = nn_cpu_layernorm_backward,
    .attn_cache_floats = nn_cpu_attn_cache_floats,
    .attn_forward = nn_cpu_attn_forward,
    .attn_backward = nn_cpu_attn_backward,
    .posenc_forward = nn_cpu_posenc_forward,
    .posenc_backward = nn_cpu_posenc_backward,
    .label_smoothed_xent = nn_cpu_label_smoothed_xent,
    .softmax_xent_db = nn_cpu_softmax_xent_db,
    .optim_step = cpu_optim_step,
    .prox_grad = cpu_prox_grad,
    .declare_params = cpu_declare_params,
};
/* clang-format on */

const char *fedrun_precision_name(uint32_t precision)
{
	switch (precision) {
	case FEDRUN_PRECISION_FP32:
		return "fp32";
	case FEDRUN_PRECISION_BF16:
		return "bf16";
	case FEDRUN_PRECISION_TF32:
		return "tf32";
	default:
		return "?";
	}
}

const struct fedrun_backend_ops *fedrun_backend_cpu(void)
{
	return &cpu_ops;
}

/* OpenBLAS's cblas.h includes openblas_config.h, which defines
 * OPENBLAS_VERSION; other CBLAS libraries have no standard thread control. */
int fedrun_backend_cpu_set_blas_threads(uint32_t n)
{
	if (n < 1 || n > INT32_MAX)
		return fedrun_error(FEDRUN_EINVAL, "BLAS threads: %u outside [1, %d]", n,
				    INT32_MAX);
#ifdef OPENBLAS_VERSION
#ifdef _OPENMP
	/* An OpenMP build of OpenBLAS sets the caller's OpenMP default to n as
	 * well; fedrun's own loops keep theirs. */
	int omp_saved = omp_get_max_threads();
#endif
	openblas_set_num_threads((int)n);
#ifdef _OPENMP
	omp_set_num_threads(omp_saved);
#endif
	return 0;
#else
	return fedrun_error(FEDRUN_EUNSUPPORTED,
			    "BLAS threads: this CBLAS has no thread control; set its own "
			    "environment variable instead");
#endif
}

uint32_t fedrun_backend_cpu_blas_threads(void)
{
#ifdef OPENBLAS_VERSION
	int n = openblas_get_num_threads();
	return n > 0 ? (uint32_t)n : 0;
#else
	return 0;
#endif
}
