#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The op-by-op comparison run against the CPU backend itself: a self-check
# of the harness (tests/test_backend_ops.c), which must find every result
# bit for bit equal. Runs on every machine.
exec "${top_builddir:-.}/tests/test_backend_ops" cpu
