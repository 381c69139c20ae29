#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/test_gpu_models on the CUDA backend: gru-lm's and the
# transformer's loss, gradient and local steps against the CPU backend.
# Exits 77 (SKIP) where the plugin is not built or no GPU is present.
exec "${top_builddir:-.}/tests/test_gpu_models" cuda
