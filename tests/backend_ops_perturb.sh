#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The harness can fail: with FEDRUN_TEST_BACKEND_PERTURB=1 it changes one
# float of the tested backend's first result (an sgemm) before comparing,
# and the run against the CPU backend must then exit 1, both with exact
# comparison and with the tolerances used for other backends
# (FEDRUN_TEST_TOLERANT=1).
prog="${top_builddir:-.}/tests/test_backend_ops"
for tolerant in 0 1; do
	out=$(FEDRUN_TEST_BACKEND_PERTURB=1 FEDRUN_TEST_TOLERANT=$tolerant "$prog" cpu 2>&1)
	status=$?
	if [ "$status" -ne 1 ] || ! printf '%s\n' "$out" | grep -q '^  FAIL sgemm '; then
		printf '%s\n' "$out"
		echo "backend_ops_perturb: exit status $status with a perturbed sgemm result" \
			"(tolerant=$tolerant); expected 1 and a FAIL line for sgemm"
		exit 1
	fi
	printf '%s\n' "$out" | grep '^  FAIL'
done
echo "a perturbed result fails the run, as it must"
