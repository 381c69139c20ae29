#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every op of the CUDA backend plugin against the CPU backend
# (tests/test_backend_ops.c), deterministic (the default) and with
# allow_nondeterministic (its atomic embedding backward). Exits 77 (SKIP)
# where the plugin is not built (configure without --with-cuda) or
# ctx_create finds no GPU or driver.
t="${top_builddir:-.}/tests/test_backend_ops"
"$t" cuda || exit $?
FEDRUN_TEST_NONDETERMINISTIC=1 "$t" cuda
