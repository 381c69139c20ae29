#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every op of the CUDA backend plugin in a bf16 context against the CPU
# backend's FP32 (tests/test_backend_ops.c, FEDRUN_TEST_PRECISION=bf16):
# the products with bf16's tolerances, every other op with FP32's. Exits 77
# (SKIP) where the plugin is not built or ctx_create finds no GPU, or a GPU
# without bf16 tensor cores (compute capability below 8.0).
FEDRUN_TEST_PRECISION=bf16 exec "${top_builddir:-.}/tests/test_backend_ops" cuda
