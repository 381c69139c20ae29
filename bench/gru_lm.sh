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
