/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA backend plugin (kind FEDRUN_KIND_BACKEND, name "cuda"): the ops
 * table of fedrun/backend.h over the kernels of the .cu files beside this
 * one. Models reach it with fedrun_backend_find("cuda"); a context is one
 * CUDA stream with its own cuBLAS handle. */
#include "config.h"
#include "fedrun/plugin.h"
#include "cuda_backend.h"

/* clang-format off: kernel-style tab indent for the table */
static const struct fedrun_backend_ops cuda_ops = {
    .size = sizeof(struct fedrun_backend_ops),
    .name = "cuda",
    .ctx_create = cu_ctx_create,
    .ctx_destroy = cu_ctx_destroy,
    .alloc = cu_alloc,
    .free_mem = cu_free_mem,
    .zero = cu_zero,
    .copy = cu_copy,
    .to_device = cu_to_device,
    .to_host = cu_to_host,
    .sgemm = cu_sgemm,
    .sgemm_strided_batched = cu_sgemm_strided_batched,
    .linear_forward = cu_linear_forward,
    .linear_backward = cu_linear_backward,
    .embedding_forward = cu_embedding_forward,
    .embedding_backward = cu_embedding_backward,
    .gru_cache_floats = cu_gru_cache_floats,
    .gru_forward = cu_gru_forward,
    .gru_backward = cu_gru_backward,
    .dropout_forward = cu_dropout_forward,
    .dropout_backward = cu_dropout_backward,
    .softmax_xent = cu_softmax_xent,
    .act_forward = cu_act_forward,
    .act_backward = cu_act_backward,
    .layernorm_forward = cu_layernorm_forward,
    .layernorm_backward = cu_layernorm_backward,
    .attn_cache_floats = cu_attn_cache_floats,
    .attn_forward = cu_attn_forward,
    .attn_backward = cu_attn_backward,
    .posenc_forward = cu_posenc_forward,
    .posenc_backward = cu_posenc_backward,
    .label_smoothed_xent = cu_label_smoothed_xent,
    .softmax_xent_db = cu_softmax_xent_db,
    .optim_step = cu_optim_step,
    .prox_grad = cu_prox_grad,
    .declare_params = cu_declare_params,
};

static const struct fedrun_plugin cuda_plugin = FEDRUN_PLUGIN_INIT(
    FEDRUN_KIND_BACKEND, "cuda", "1.0.0",
    "NVIDIA GPUs: cuBLAS products (FP32, TF32, BF16), CUDA kernels, deterministic by default",
    &cuda_ops);
/* clang-format on */

const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index);
const struct fedrun_plugin *fedrun_plugin_entry(uint32_t index)
{
	return index == 0 ? &cuda_plugin : NULL;
}
