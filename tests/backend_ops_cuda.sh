#!/bin/sh
# Every op of the CUDA backend plugin against the CPU backend
# (tests/test_backend_ops.c). Exits 77 (SKIP) where the plugin is not built
# (configure without --with-cuda) or ctx_create finds no GPU or driver.
exec "${top_builddir:-.}/tests/test_backend_ops" cuda
