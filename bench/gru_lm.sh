#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# gru-lm training speed against PyTorch in the same run, on the small
# configuration of the FedAtt paper: vocabulary 10,000, embed = hidden =
# 300, one GRU layer, tied decoder, batch 20, BPTT 35, dropout 0.2, SGD
# with momentum and clipping. fedrun runs as its engine does (one client
# per worker thread, BLAS on one thread each), with 1 worker and with as
# many as the machine has cores; PyTorch trains one model with 1 or as many
# threads as there are cores, for its own ops and for its BLAS, and its
# best is the peer. Speeds come from the median window. Also the
# machine's sgemm speed, measured by bench/gru_lm in the same run, and the
# fraction of it that training reaches.
#
# Then a bf16 section: fedrun with model.precision bf16 (bench/gru_lm
# --precision bf16, 1 worker and one per core) and PyTorch under
# torch.autocast("cpu", dtype=torch.bfloat16) (gru_lm_torch.py --autocast,
# the same thread pairs), beside the best FP32 figures above and the
# machine's bf16 ceiling measured in the same run (bench/dnnl_gemm: oneDNN's
# best square bf16 product on 1 core and on all), with the CPU model and
# the kernels fedrun's bf16 products ran (amx_bf16 or avx512_bf16). Without
# bench/dnnl_gemm (no oneDNN) the section says so and is skipped.
#
# Usage: bench/gru_lm.sh [WINDOWS]   (default 40 windows of 700 tokens per run)
# From the build directory after `make bench`; needs python3-torch
# (apt-get install python3-torch) for /usr/bin/python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
windows=${1:-40}
cores=$(nproc)
FEDRUN_PLUGIN_PATH=${FEDRUN_PLUGIN_PATH:-$PWD/plugins/.libs}
export FEDRUN_PLUGIN_PATH
[ -x bench/gru_lm ] || { echo "gru_lm.sh: run 'make bench' in the build directory first" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
	{ echo "gru_lm.sh: PyTorch missing: apt-get install python3-torch" >&2; exit 1; }
val() { sed -n "s/^$1 //p" "$2"; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

bench/gru_lm --workers 1 --windows "$windows" >"$out/w1"
bench/gru_lm --workers "$cores" --windows "$windows" >"$out/wn"
# PyTorch's intra-op threads (torch.set_num_threads) and the threads of
# the OpenBLAS it multiplies with (OPENBLAS_NUM_THREADS, which
# set_num_threads does not change) are set apart: every pair is tried and
# the best is the peer.
settings="1"
[ "$cores" -gt 1 ] && settings="1 $cores"
for b in $settings; do
	for t in $settings; do
		OPENBLAS_NUM_THREADS=$b /usr/bin/python3 "$here/gru_lm_torch.py" --threads "$t" \
			--windows "$windows" >"$out/torch-$t-$b"
	done
done

head -n 1 "$out/w1"
printf '%-44s %10s %9s %9s\n' "" "tokens/s" "GFLOP/s" "of sgemm"
for f in w1 wn; do
	n=$([ $f = w1 ] && echo 1 || echo "$cores")
	printf '%-44s %10.0f %9.1f %8.0f%%\n' "fedrun gru-lm, $n worker(s), BLAS 1 thread" \
		"$(val tokens_per_s "$out/$f")" "$(val train_gflops "$out/$f")" \
		"$(awk -v x="$(val fraction_of_sgemm "$out/$f")" 'BEGIN { print 100 * x }')"
done
fpt=$(val mflop_per_token "$out/w1")
best=0
for b in $settings; do
	for t in $settings; do
		tps=$(val "torch_threads_${t}_tokens_per_s" "$out/torch-$t-$b")
		printf '%-44s %10.0f %9.1f\n' "PyTorch $(val torch_version "$out/torch-$t-$b"), $t thread(s), BLAS $b" \
			"$tps" "$(awk -v t="$tps" -v f="$fpt" 'BEGIN { print t * f / 1000 }')"
		best=$(awk -v a="$best" -v b="$tps" 'BEGIN { print (b > a ? b : a) }')
	done
done
printf 'sgemm 1024^3, one BLAS thread per core: %.1f GFLOP/s on 1 core, %.1f on %s at once\n' \
	"$(val sgemm_gflops "$out/w1")" "$(val sgemm_gflops "$out/wn")" "$cores"
printf 'matrix-product work: %s MFLOP per token (forward + backward)\n' "$fpt"
ours=$(val tokens_per_s "$out/wn")
t1=$(val torch_threads_1_tokens_per_s "$out/torch-1-1")
o1=$(val tokens_per_s "$out/w1")
awk -v o="$ours" -v b="$best" -v c="$cores" 'BEGIN { printf "ratio, fedrun %s workers / PyTorch best: %.2f\n", c, o / b }'
awk -v o="$o1" -v b="$t1" 'BEGIN { printf "ratio, one core each (fedrun 1 worker / PyTorch 1 thread, BLAS 1): %.2f\n", o / b }'

# ---- bf16 ----
# fedrun with model.precision bf16 on the same settings as the rows above,
# PyTorch's training step under torch.autocast("cpu", dtype=torch.bfloat16)
# on the same thread pairs, and the machine's bf16 ceiling (bench/dnnl_gemm,
# oneDNN's best square product on 1 core and on all): each figure's share
# of it, and the best of each side against FP32's and against each other.
. "$here/bf16_rows.sh"
bf16_section() {
	echo
	bf16_ceiling || return 0
	for f in w1 wn; do
		n=$([ $f = w1 ] && echo 1 || echo "$cores")
		bench/gru_lm --workers "$n" --windows "$windows" --precision bf16 \
			>"$out/bf16-$f" 2>"$out/bf16.err" || { bf16_refused "$out/bf16.err"; return 0; }
	done
	for b in $settings; do
		for t in $settings; do
			OPENBLAS_NUM_THREADS=$b /usr/bin/python3 "$here/gru_lm_torch.py" --threads "$t" \
				--windows "$windows" --autocast >"$out/autocast-$t-$b"
		done
	done
	bf16_header "$(val bf16_isa "$out/bf16-w1")"
	ours16=0
	ours32=0
	for f in w1 wn; do
		n=$([ $f = w1 ] && echo 1 || echo "$cores")
		bf16_row "fedrun gru-lm bf16, $n worker(s), BLAS 1 thread" \
			"$(val tokens_per_s "$out/bf16-$f")" "$fpt"
		ours16=$(bf16_max "$ours16" "$(val tokens_per_s "$out/bf16-$f")")
		ours32=$(bf16_max "$ours32" "$(val tokens_per_s "$out/$f")")
	done
	ac=0
	for b in $settings; do
		for t in $settings; do
			tps=$(val "torch_threads_${t}_tokens_per_s" "$out/autocast-$t-$b")
			bf16_row "PyTorch autocast bf16, $t thread(s), BLAS $b" "$tps" "$fpt"
			ac=$(bf16_max "$ac" "$tps")
		done
	done
	bf16_row "fedrun gru-lm bf16, best" "$ours16" "$fpt"
	bf16_row "fedrun gru-lm FP32, best" "$ours32" "$fpt"
	bf16_row "PyTorch $(val torch_version "$out/torch-1-1") FP32, best" "$best" "$fpt"
	bf16_row "PyTorch $(val torch_version "$out/torch-1-1") autocast bf16, best" "$ac" "$fpt"
	bf16_footer "$ours16" "$ours32" "$ac"
	echo "  (PyTorch's autocast runs nn.GRU's fused op in FP32, as it is not on autocast's bf16 list;" \
		"its decoder's linear is bf16)"
}
bf16_section
