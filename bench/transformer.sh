#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Transformer speed against PyTorch in the same run, on the "small" preset
# of issue 5: vocabulary 8000, width 256, 3+3 layers, 4 heads, feed-forward
# 1024, post-norm, one embedding matrix for source, target and output.
#
# Training: target tokens per second, batches of 64 pairs of 20 source and
# 20 target tokens, dropout 0.1, label smoothing 0.1, Adam. fedrun
# (bench/transformer) runs one model on 1 thread, one model on as many
# threads as there are cores, and one model per core (one worker each, as
# the engine trains one client per worker); PyTorch (bench/transformer_torch.py,
# nn.Transformer) runs one model with 1 or as many intra-op threads
# (torch.set_num_threads) as cores, times 1 or as many OpenBLAS threads
# (OPENBLAS_NUM_THREADS, which set_num_threads does not change), times
# OMP_WAIT_POLICY unset or passive: its best is the peer.
#
# Decoding: sentences per second over 256 random source sentences of 20
# tokens in batches of 64, every sentence decoded for exactly 30 steps
# (eos forbidden before the last step), greedy and beam 4; each side on 1
# thread and on as many as cores (PyTorch: intra-op and BLAS threads
# alike, OMP_WAIT_POLICY=passive as fedrun), best against best.
#
# bf16 (after decoding): training only, fedrun with --precision bf16 on
# the same three settings and PyTorch under
# torch.autocast("cpu", dtype=torch.bfloat16) (transformer_torch.py
# --autocast) on the same eight, beside the best FP32 figures and the
# machine's bf16 ceiling measured in the same run (bench/dnnl_gemm: oneDNN's
# best square bf16 product on 1 core and on all), with the CPU model and the
# kernels fedrun's bf16 products ran (amx_bf16 or avx512_bf16). Without
# bench/dnnl_gemm (no oneDNN) the section says so and is skipped.
#
# Every speed is from the median step (training) or batch (decoding), which
# a few slow ones, when another process takes a core, do not move.
#
# Usage: bench/transformer.sh [STEPS [REPS]]
#   STEPS timed training steps per setting (default 20, after 3 of warm-up),
#   REPS  passes over the 256 decoding sentences (default 1, after one
#         untimed batch).
# From the build directory after `make bench`; needs python3-torch
# (apt-get install python3-torch) for /usr/bin/python3. Both sides use the
# same OpenBLAS and run under the same environment (OPENBLAS_CORETYPE, if
# set, applies to both; it is printed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
steps=${1:-20}
reps=${2:-1}
cores=$(nproc)
[ -x bench/transformer ] ||
	{ echo "transformer.sh: run 'make bench' in the build directory first" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
	{ echo "transformer.sh: PyTorch missing: apt-get install python3-torch" >&2; exit 1; }
val() { sed -n "s/^$1 //p" "$2"; }
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a ? b : a) }'; }
ratio() { awk -v o="$1" -v p="$2" 'BEGIN { printf "%.2f", o / p }'; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
settings="1"
[ "$cores" -gt 1 ] && settings="1 $cores"
dec="--sentences 256 --batch 64 --len 20 --max-len 30 --steps $reps"

echo "transformer: vocab 8000, dim 256, 3+3 layers, 4 heads, ffn 1024, post-norm, tied embeddings"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}; $cores cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- training ----
bench/transformer --mode sgemm >"$out/sgemm"
bench/transformer --workers 1 --threads 1 --steps "$steps" >"$out/w1t1"
bench/transformer --workers 1 --threads "$cores" --steps "$steps" >"$out/w1tn"
bench/transformer --workers "$cores" --steps "$steps" >"$out/wn"
for wp in unset passive; do
	for b in $settings; do
		if [ $wp = passive ]; then
			OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=$b /usr/bin/python3 \
				"$here/transformer_torch.py" --threads "$(echo $settings | tr ' ' ,)" \
				--steps "$steps" >"$out/torch-$wp-$b"
		else
			env -u OMP_WAIT_POLICY OPENBLAS_NUM_THREADS=$b /usr/bin/python3 \
				"$here/transformer_torch.py" --threads "$(echo $settings | tr ' ' ,)" \
				--steps "$steps" >"$out/torch-$wp-$b"
		fi
	done
done

echo
echo "training: target tokens/s, batches of 64 pairs of 20+20 tokens, dropout 0.1, label smoothing 0.1, Adam"
fpt=$(val mflop_per_token "$out/w1t1")
line() { printf '  %-64s %9.0f %8.1f\n' "$1" "$2" "$(awk -v t="$2" -v f="$fpt" 'BEGIN { print t * f / 1000 }')"; }
printf '  %-64s %9s %8s\n' "" "tokens/s" "GFLOP/s"
line "fedrun, 1 model, 1 thread" "$(val tokens_per_s "$out/w1t1")"
line "fedrun, 1 model, $cores threads" "$(val tokens_per_s "$out/w1tn")"
line "fedrun, $cores models (workers), 1 thread each" "$(val tokens_per_s "$out/wn")"
ours=0
for f in w1t1 w1tn wn; do ours=$(best "$ours" "$(val tokens_per_s "$out/$f")"); done
peer=0
for wp in unset passive; do
	for b in $settings; do
		for t in $settings; do
			tps=$(val "torch_threads_${t}_tokens_per_s" "$out/torch-$wp-$b")
			line "PyTorch $(val torch_version "$out/torch-$wp-$b"), $t thread(s), BLAS $b, OMP_WAIT_POLICY $wp" "$tps"
			peer=$(best "$peer" "$tps")
		done
	done
done
echo "  matrix-product work: $fpt MFLOP per target token (forward + backward)"
sg=$(val sgemm_gflops "$out/sgemm")
echo "  sgemm 1024^3 on one OpenBLAS thread: $sg GFLOP/s; fedrun on 1 thread reaches $(awk -v t="$(val tokens_per_s "$out/w1t1")" -v f="$fpt" -v s="$sg" 'BEGIN { printf "%.0f%%", 100 * t * f / 1000 / s }') of it"
echo "  last training loss (label-smoothed, per token): fedrun $(val last_loss "$out/w1t1"), PyTorch $(val torch_threads_1_last_loss "$out/torch-unset-1")"
echo "  ratio, fedrun best / PyTorch best: $(ratio "$ours" "$peer")"
echo "  ratio, one model on the whole machine (fedrun $cores threads / PyTorch best): $(ratio "$(val tokens_per_s "$out/w1tn")" "$peer")"
echo "  ratio, one core each (fedrun 1 thread / PyTorch 1 thread, BLAS 1): $(ratio "$(val tokens_per_s "$out/w1t1")" \
	"$(best "$(val torch_threads_1_tokens_per_s "$out/torch-unset-1")" "$(val torch_threads_1_tokens_per_s "$out/torch-passive-1")")")"
train_ours=$ours
train_peer=$peer

# ---- decoding ----
echo
echo "decoding: sentences/s, 256 sentences of 20 tokens in batches of 64, 30 steps each (eos only at the last)"
for mode in greedy beam; do
	for t in $settings; do
		bench/transformer --mode $mode --threads "$t" $dec >"$out/dec-$mode-$t"
		OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=$t /usr/bin/python3 "$here/transformer_torch.py" \
			--mode $mode --threads "$t" --batch 64 --len 20 --max-len 30 \
			--sentences 256 --steps "$reps" >"$out/tdec-$mode-$t"
	done
	name=$([ $mode = greedy ] && echo greedy || echo "beam 4")
	ours=0
	peer=0
	for t in $settings; do
		o=$(val sentences_per_s "$out/dec-$mode-$t")
		p=$(val "torch_threads_${t}_sentences_per_s" "$out/tdec-$mode-$t")
		printf '  %-64s %9.1f\n' "$name: fedrun, $t thread(s)" "$o"
		printf '  %-64s %9.1f\n' "$name: PyTorch, $t thread(s), BLAS $t" "$p"
		ours=$(best "$ours" "$o")
		peer=$(best "$peer" "$p")
	done
	echo "  $name: ratio, fedrun best / PyTorch best: $(ratio "$ours" "$peer")"
done

# ---- bf16 ----
# Training only: fedrun with --precision bf16 on the three settings of the
# FP32 rows, PyTorch's step under torch.autocast("cpu", dtype=torch.bfloat16)
# on the same eight settings as its FP32 rows, the machine's bf16 ceiling
# (bench/dnnl_gemm), each figure's share of it, and the best of each side
# against FP32's and against each other.
. "$here/bf16_rows.sh"
bf16_section() {
	echo
	bf16_ceiling || return 0
	for f in w1t1 w1tn wn; do
		case $f in
		w1t1) a="--workers 1 --threads 1" ;;
		w1tn) a="--workers 1 --threads $cores" ;;
		wn) a="--workers $cores" ;;
		esac
		bench/transformer $a --steps "$steps" --precision bf16 >"$out/bf16-$f" 2>"$out/bf16.err" ||
			{ bf16_refused "$out/bf16.err"; return 0; }
	done
	for wp in unset passive; do
		for b in $settings; do
			if [ $wp = passive ]; then
				OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=$b /usr/bin/python3 \
					"$here/transformer_torch.py" --threads "$(echo $settings | tr ' ' ,)" \
					--steps "$steps" --autocast >"$out/autocast-$wp-$b"
			else
				env -u OMP_WAIT_POLICY OPENBLAS_NUM_THREADS=$b /usr/bin/python3 \
					"$here/transformer_torch.py" --threads "$(echo $settings | tr ' ' ,)" \
					--steps "$steps" --autocast >"$out/autocast-$wp-$b"
			fi
		done
	done
	echo "training in bf16: target tokens/s, the same batches and settings as above"
	bf16_header "$(val bf16_isa "$out/bf16-w1t1")"
	bf16_row "fedrun bf16, 1 model, 1 thread" "$(val tokens_per_s "$out/bf16-w1t1")" "$fpt"
	bf16_row "fedrun bf16, 1 model, $cores threads" "$(val tokens_per_s "$out/bf16-w1tn")" "$fpt"
	bf16_row "fedrun bf16, $cores models (workers), 1 thread each" \
		"$(val tokens_per_s "$out/bf16-wn")" "$fpt"
	ours16=0
	for f in w1t1 w1tn wn; do ours16=$(best "$ours16" "$(val tokens_per_s "$out/bf16-$f")"); done
	ac=0
	for wp in unset passive; do
		for b in $settings; do
			for t in $settings; do
				tps=$(val "torch_threads_${t}_tokens_per_s" "$out/autocast-$wp-$b")
				bf16_row "PyTorch autocast bf16, $t thread(s), BLAS $b, OMP_WAIT_POLICY $wp" \
					"$tps" "$fpt"
				ac=$(best "$ac" "$tps")
			done
		done
	done
	v=$(val torch_version "$out/torch-unset-1")
	bf16_row "fedrun bf16, best" "$ours16" "$fpt"
	bf16_row "fedrun FP32, best" "$train_ours" "$fpt"
	bf16_row "PyTorch $v FP32, best" "$train_peer" "$fpt"
	bf16_row "PyTorch $v autocast bf16, best" "$ac" "$fpt"
	bf16_footer "$ours16" "$train_ours" "$ac"
	echo "  last training loss (label-smoothed, per token): fedrun bf16 $(val last_loss "$out/bf16-w1t1")," \
		"PyTorch autocast $(val torch_threads_1_last_loss "$out/autocast-unset-1")"
}
bf16_section
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
