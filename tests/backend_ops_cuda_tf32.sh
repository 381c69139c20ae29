#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every op of the CUDA backend plugin in a tf32 context against the CPU
# backend's FP32 (tests/test_backend_ops.c, FEDRUN_TEST_PRECISION=tf32):
# the products with tf32's tolerances, every other op with FP32's. Exits 77
# (SKIP) where the plugin is not built or ctx_create finds no GPU, or a GPU
# without tf32 tensor cores (compute capability below 8.0).
FEDRUN_TEST_PRECISION=tf32 exec "${top_builddir:-.}/tests/test_backend_ops" cuda
