# SPDX-License-Identifier: Apache-2.0
# The bf16 section's shared pieces, sourced (not run) by bench/gru_lm.sh and
# bench/transformer.sh: the machine's bf16 ceiling (bench/dnnl_gemm), the
# section's header, its rows (tokens/s, GFLOP/s and the fraction of the
# ceiling on 1 core and on all) and the closing lines. POSIX sh; val(),
# $out (the caller's temporary directory) and $cores come from the caller.

# bf16_ceiling: bench/dnnl_gemm into $out/dnnl and bf16_c1 / bf16_cn set
# to its 1-core and all-core bf16 figures; says why and returns 1 when there
# is no ceiling to measure (no oneDNN, or a failure), so that the caller
# skips its bf16 rows.
bf16_ceiling() {
	if [ ! -x bench/dnnl_gemm ]; then
		echo "bf16: bench/dnnl_gemm is missing (fedrun built without oneDNN: install libdnnl-dev," \
			"reconfigure and 'make bench'); no bf16 rows"
		return 1
	fi
	if ! bench/dnnl_gemm >"$out/dnnl" 2>"$out/dnnl.err"; then
		echo "bf16: bench/dnnl_gemm failed: $(cat "$out/dnnl.err"); no bf16 rows"
		return 1
	fi
	bf16_c1=$(val bf16_gflops_1 "$out/dnnl")
	bf16_cn=$(val bf16_gflops_N "$out/dnnl")
}

# bf16_max A B: the larger.
bf16_max() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a ? b : a) }'; }

# bf16_refused FILE: says that fedrun's bf16 training failed, with its
# message (a CPU with neither amx_bf16 nor avx512_bf16, DNNL_MAX_CPU_ISA
# below them, libfedrun without oneDNN).
bf16_refused() {
	echo "bf16: fedrun's bf16 training failed: $(cat "$1"); no bf16 rows"
}

# bf16_header ISA: the CPU, the kernels fedrun's bf16 products ran
# (fedrun_backend_cpu_bf16_isa()) and oneDNN's choice for the ceiling.
bf16_header() {
	echo "bf16: CPU $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1);" \
		"DNNL_MAX_CPU_ISA=${DNNL_MAX_CPU_ISA:-(unset)}"
	echo "  fedrun's bf16 products: $1; ceiling: oneDNN $(val dnnl_version "$out/dnnl") matmul," \
		"bf16 x bf16 -> f32, best square 1024/2048/4096, $(val bf16_impl "$out/dnnl")"
	echo "  shares of the bf16 ceiling: on 1 core (ceil 1c) and on $cores (ceil ${cores}c)"
	printf '  %-68s %9s %8s %10s %10s\n' "" "tokens/s" "GFLOP/s" "ceil 1c" "ceil ${cores}c"
}

# bf16_row LABEL TOKENS_PER_S MFLOP_PER_TOKEN
bf16_row() {
	awk -v l="$1" -v t="$2" -v f="$3" -v c1="$bf16_c1" -v cn="$bf16_cn" 'BEGIN {
		g = t * f / 1000
		printf "  %-68s %9.0f %8.1f %9.1f%% %9.1f%%\n", l, t, g, 100 * g / c1, 100 * g / cn }'
}

# bf16_footer FEDRUN_BF16 FEDRUN_FP32 TORCH_AUTOCAST (best tokens/s each)
bf16_footer() {
	printf '  bf16 ceiling (bench/dnnl_gemm): %s GFLOP/s on 1 core, %s on %s cores;' \
		"$bf16_c1" "$bf16_cn" "$cores"
	printf ' FP32 through oneDNN: %s and %s (%s)\n' "$(val fp32_gflops_1 "$out/dnnl")" \
		"$(val fp32_gflops_N "$out/dnnl")" "$(val fp32_impl "$out/dnnl")"
	awk -v b="$1" -v f="$2" -v a="$3" 'BEGIN {
		printf "  ratio, fedrun bf16 best / fedrun FP32 best: %.2f\n", b / f
		printf "  ratio, fedrun bf16 best / PyTorch autocast best: %.2f\n", b / a }'
}
