#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/gpu.sh: the CUDA backend against fedrun's CPU backend on the same
# machine, and against the GPU's own FP32 GEMM rate measured in the same run.
#
#   - the GEMM ceiling: bench/backend_gemm cuda (cuBLAS SGEMM, FP32, no TF32),
#     and those of bf16 and tf32 contexts (--precision: cuBLAS's bf16
#     products with FP32 sums, operands converted beforehand; SGEMM on TF32
#     tensor cores);
#   - transformer training, "base" (Vaswani et al. 2017, Table 3: 6+6
#     layers, d 512, 8 heads, ffn 2048; vocabulary 8000, batches of 128
#     pairs of 32 tokens, 4096 target tokens a step, dropout 0.1, label
#     smoothing 0.1, Adam): target tokens per second on cuda and on cpu (one
#     worker on every core), the ratio, and the fraction of the GEMM ceiling
#     that training's matrix products reach (tokens/s x MFLOP/token); the
#     same on cuda in bf16 and tf32 (--precision), their speed-ups over
#     FP32 and the fractions of their own ceilings;
#   - decoding with the base network: greedy and beam 4, sentences per
#     second, batches of 64 sentences of 30 tokens;
#   - gru-lm training, the FedAtt presets small, medium and large (hidden
#     300, 650, 1500; 2 layers for medium and large; vocabulary 10000,
#     batch 20, bptt 35): tokens per second on cuda (1 and 8 workers, the
#     engine's clients a round in parallel on one GPU) and on cpu (one
#     client per core, as the engine runs them).
#
# Usage: bench/gpu.sh [--quick]   from a built tree, or with BENCH_BIN set
# to a folder holding backend_gemm, transformer and gru_lm (as
# tools/gpu-stage.sh stages them); FEDRUN_PLUGIN_PATH must reach the
# plugins. --quick: fewer steps, for a smoke test.
set -eu
bin=${BENCH_BIN:-bench}
steps=10 windows=40 cpu_steps=3
if [ "${1:-}" = --quick ]; then steps=3 windows=5 cpu_steps=1; fi
th=$(nproc)
get() { sed -n "s/^$1 //p" "$2" | tail -n 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== GEMM ceiling (cuBLAS SGEMM, FP32)"
"$bin/backend_gemm" cuda | tee "$out/gemm"
peak=$(get sgemm_gflops_best "$out/gemm")
for p in bf16 tf32; do
	echo "== GEMM ceiling ($p context: cuBLAS $p products, FP32 sums)"
	"$bin/backend_gemm" --precision "$p" cuda | tee "$out/gemm_$p"
done
peak_bf16=$(get sgemm_gflops_best "$out/gemm_bf16")
peak_tf32=$(get sgemm_gflops_best "$out/gemm_tf32")

base="--vocab 8000 --dim 512 --layers 6 --heads 8 --ffn 2048 --dropout 0.1 --label-smoothing 0.1"
echo "== transformer base, training (128 x 32 target tokens a step)"
"$bin/transformer" --mode train $base --batch 128 --len 32 --steps "$steps" --warmup 2 \
	--backend cuda >"$out/tc"
"$bin/transformer" --mode train $base --batch 128 --len 32 --steps "$cpu_steps" --warmup 1 \
	--threads "$th" --backend cpu >"$out/tp"
tc=$(get tokens_per_s "$out/tc") tp=$(get tokens_per_s "$out/tp")
mf=$(get mflop_per_token "$out/tc")
awk -v c="$tc" -v p="$tp" -v mf="$mf" -v peak="$peak" -v th="$th" 'BEGIN {
	printf "tokens_per_s cuda %.0f | cpu (%d threads) %.0f | speed-up %.1f\n", c, th, p, c / p
	printf "mflop_per_token %.1f | training GFLOP/s %.0f | fraction of the GEMM ceiling %.3f\n",
		mf, c * mf / 1e3, c * mf / 1e3 / peak }'
echo "last_loss cuda $(get last_loss "$out/tc") cpu $(get last_loss "$out/tp")"

echo "== transformer base, training on cuda in bf16 and tf32 (the same steps)"
for p in bf16 tf32; do
	"$bin/transformer" --mode train $base --batch 128 --len 32 --steps "$steps" --warmup 2 \
		--backend cuda --precision "$p" >"$out/tc_$p"
done
awk -v c="$tc" -v b="$(get tokens_per_s "$out/tc_bf16")" -v t="$(get tokens_per_s "$out/tc_tf32")" \
	-v mf="$mf" -v pb="$peak_bf16" -v pt="$peak_tf32" 'BEGIN {
	printf "tokens_per_s cuda fp32 %.0f | bf16 %.0f | tf32 %.0f | bf16/fp32 %.2f | tf32/fp32 %.2f\n",
		c, b, t, b / c, t / c
	printf "training GFLOP/s bf16 %.0f, fraction of the bf16 ceiling %.3f | tf32 %.0f, of the tf32 ceiling %.3f\n",
		b * mf / 1e3, b * mf / 1e3 / pb, t * mf / 1e3, t * mf / 1e3 / pt }'
echo "last_loss cuda fp32 $(get last_loss "$out/tc") bf16 $(get last_loss "$out/tc_bf16")" \
	"tf32 $(get last_loss "$out/tc_tf32")"

for mode in greedy beam; do
	echo "== transformer base, $mode decoding (64 sentences a batch, 30 tokens)"
	"$bin/transformer" --mode "$mode" $base --batch 64 --max-len 30 --sentences 256 \
		--steps 2 --backend cuda >"$out/dc"
	"$bin/transformer" --mode "$mode" $base --batch 64 --max-len 30 --sentences 64 \
		--steps 1 --threads "$th" --backend cpu >"$out/dp"
	awk -v c="$(get sentences_per_s "$out/dc")" -v p="$(get sentences_per_s "$out/dp")" \
		'BEGIN { printf "sentences_per_s cuda %.1f | cpu %.1f | speed-up %.1f\n", c, p, c / p }'
done

for preset in "small 300 1" "medium 650 2" "large 1500 2"; do
	set -- $preset
	echo "== gru-lm $1 (hidden $2, $3 layer(s)), training"
	g="--vocab 10000 --hidden $2 --layers $3 --batch 20 --bptt 35"
	"$bin/gru_lm" $g --windows "$windows" --workers 1 --backend cuda >"$out/g1"
	"$bin/gru_lm" $g --windows "$windows" --workers 8 --backend cuda >"$out/g8"
	"$bin/gru_lm" $g --windows 4 --workers "$th" --backend cpu >"$out/gp"
	awk -v a="$(get tokens_per_s "$out/g1")" -v b="$(get tokens_per_s "$out/g8")" \
		-v p="$(get tokens_per_s "$out/gp")" -v th="$th" 'BEGIN {
		printf "tokens_per_s cuda 1 worker %.0f | cuda 8 workers %.0f | cpu %d workers %.0f | speed-up %.1f\n",
			a, b, th, p, (a > b ? a : b) / p }'
done
