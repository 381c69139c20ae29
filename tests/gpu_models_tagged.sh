#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/test_gpu_models on the tagged test backend: the CPU backend's
# arithmetic behind device pointers the host cannot touch, so every
# difference from the CPU run must be exactly 0.
FEDRUN_PLUGIN_PATH="$FEDRUN_PLUGIN_PATH:$top_builddir/tests/.libs"
export FEDRUN_PLUGIN_PATH
exec "${top_builddir:-.}/tests/test_gpu_models" tagged
