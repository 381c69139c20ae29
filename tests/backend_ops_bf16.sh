#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The op-by-op harness on the CPU backend's bf16 contexts
# (FEDRUN_TEST_PRECISION=bf16: the products with bf16 tolerances, every
# other op exact), on each of its kernel families: (a) the default one,
# amx_bf16 on a CPU with AMX (else avx512_bf16), with the large shapes too;
# (b) DNNL_MAX_CPU_ISA=AVX512_CORE_BF16, the AVX512-BF16 kernels, large shapes too (products under 2^18
# multiply-adds do not reach oneDNN: bf16.c); (c) with
# oneDNN capped below both (AVX512_CORE_VNNI) a bf16 context is refused
# (the harness skips, naming the missing features); (d) a perturbed bf16
# sgemm result fails the run. Skips (77) where this machine cannot run
# bf16 at all: libfedrun built without oneDNN, or a CPU without
# avx512_bf16.
prog="${top_builddir:-.}/tests/test_backend_ops"
export FEDRUN_TEST_PRECISION=bf16
unset DNNL_MAX_CPU_ISA FEDRUN_TEST_BACKEND_PERTURB FEDRUN_TEST_TOLERANT

fail() {
	printf '%s\n' "$out"
	echo "FAIL: backend_ops_bf16: $*"
	exit 1
}

# (a) The default kernels, small and large shapes.
out=$(FEDRUN_TEST_BIG=1 "$prog" cpu 2>&1)
status=$?
if [ "$status" -eq 77 ]; then
	printf '%s\n' "$out"
	echo "SKIP: this machine cannot make a bf16 context (see the line above)"
	exit 77
fi
[ "$status" -eq 0 ] || fail "(a) default kernels, FEDRUN_TEST_BIG=1: exit status $status"
printf '%s\n' "$out" | grep -q '^backend .*small and large shapes' || fail "(a) the large shapes did not run"
if grep -q '^flags.* amx_bf16' /proc/cpuinfo 2>/dev/null; then
	want=amx_bf16
else
	echo "this CPU has no amx_bf16: the AMX part of (a) is skipped, the default must be avx512_bf16"
	want=avx512_bf16
fi
printf '%s\n' "$out" | grep -qx "bf16 kernels: $want" || fail "(a) the default kernels are not $want"
echo "(a) default: bf16 kernels $want, small and large shapes pass"

# (b) The AVX512-BF16 kernels, forced.
out=$(DNNL_MAX_CPU_ISA=AVX512_CORE_BF16 FEDRUN_TEST_BIG=1 "$prog" cpu 2>&1)
status=$?
[ "$status" -eq 0 ] || fail "(b) DNNL_MAX_CPU_ISA=AVX512_CORE_BF16: exit status $status"
printf '%s\n' "$out" | grep -qx "bf16 kernels: avx512_bf16" ||
	fail "(b) DNNL_MAX_CPU_ISA=AVX512_CORE_BF16 did not give the avx512_bf16 kernels"
echo "(b) DNNL_MAX_CPU_ISA=AVX512_CORE_BF16: bf16 kernels avx512_bf16 pass"

# (c) Neither: the context is refused, with the missing features named.
out=$(DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI "$prog" cpu 2>&1)
status=$?
[ "$status" -eq 77 ] || fail "(c) DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI: exit status $status, expected 77"
printf '%s\n' "$out" | grep '^SKIP: ' | grep -q 'neither amx_bf16 nor avx512_bf16' ||
	fail "(c) DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI: no SKIP line naming amx_bf16 and avx512_bf16"
echo "(c) DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI: refused: $(printf '%s\n' "$out" | grep '^SKIP: ')"

# (d) A perturbed result fails within bf16's tolerances too.
out=$(FEDRUN_TEST_BACKEND_PERTURB=1 "$prog" cpu 2>&1)
status=$?
[ "$status" -eq 1 ] && printf '%s\n' "$out" | grep -q '^  FAIL sgemm ' ||
	fail "(d) exit status $status with a perturbed bf16 sgemm result; expected 1 and a FAIL line for sgemm"
echo "(d) a perturbed result fails: $(printf '%s\n' "$out" | grep '^  FAIL sgemm ')"
