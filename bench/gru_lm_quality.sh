#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# gru-lm against PyTorch on quality: the small configuration (vocabulary
# 10,000, embed = hidden = 300, one GRU layer, tied, dropout 0.2, batch 20,
# BPTT 35, SGD at lr 20 with clipping at 0.25, as PyTorch's
# word_language_model trains) trained centrally on the Brown union for the
# same number of windows in the same order, then the validation perplexity
# of each (10 rows, state carried). fedrun runs it as one client for one
# round of clients.steps windows; the peer is bench/gru_lm_quality_torch.py.
# Initial weights and dropout masks come from each framework's own random
# numbers, so the two runs are equal in distribution, not in bits.
#
# With lr 20 and under one epoch, one seed's perplexity moves by several
# percent with the initial weights and dropout masks on either side, so the
# comparison is of the mean over seeds (each seed once per side).
#
# Usage: bench/gru_lm_quality.sh [STEPS [CORPUS_DIR [SEEDS]]]
#   (default 1000 windows, data/brown/out, seeds "1 2 3"; build the corpus
#   with data/brown/build.sh)
# From the build directory; needs python3-torch for /usr/bin/python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
steps=${1:-1000}
corpus=$(cd "${2:-$here/../data/brown/out}" && pwd)
seeds=${3:-1 2 3}
FEDRUN=${FEDRUN:-$PWD/fedrun}
FEDRUN_PLUGIN_PATH=${FEDRUN_PLUGIN_PATH:-$PWD/plugins/.libs}
export FEDRUN_PLUGIN_PATH
[ -f "$corpus/train.txt" ] || { echo "gru_lm_quality.sh: no $corpus/train.txt (data/brown/build.sh)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "centralized training on $corpus/train.txt: $steps windows of 20 x 35 tokens"
printf '%-6s %14s %9s %14s %9s %8s\n' seed "fedrun ppl" "seconds" "PyTorch ppl" "seconds" ratio
sum_o=0 sum_p=0 n=0
for seed in $seeds; do
	cat >"$out/central.json" <<JSON
{
  "name": "gru-lm-central", "seed": $seed, "rounds": 1,
  "model": { "plugin": "gru-lm", "embed": 300, "hidden": 300, "layers": 1, "tied": true,
             "dropout": 0.2, "bptt": 35, "eval_batch": 10, "speed_metric": false },
  "data": { "train": ["$corpus/train.txt"], "valid": "$corpus/valid.txt",
            "partition": { "scheme": "files" }, "vocab": { "size": 10000 } },
  "clients": { "fraction": 1.0, "epochs": 0, "steps": $steps, "batch": 20,
               "optimizer": { "name": "sgd", "lr": 20, "clip_norm": 0.25 } },
  "aggregator": { "plugin": "fedavg" },
  "eval": { "every": 1, "final_test": false },
  "output": { "dir": "$out/run-$seed", "checkpoint_every": 0 }
}
JSON
	t0=$(date +%s)
	"$FEDRUN" -q --threads 1 "$out/central.json" >/dev/null
	t1=$(date +%s)
	get() { grep "\"round\":1,\"client\":null,\"split\":\"valid\",\"metric\":\"$1\"" \
		"$out/run-$seed/metrics.jsonl" | sed 's/.*"value":\([^,]*\),.*/\1/'; }
	ours=$(get ppl)
	# PyTorch at its fastest setting in bench/gru_lm.sh: one thread of its
	# own, OpenBLAS on its default (all cores).
	/usr/bin/python3 "$here/gru_lm_quality_torch.py" "$corpus/train.txt" "$corpus/valid.txt" \
		--steps "$steps" --threads 1 --seed "$seed" >"$out/torch"
	peer=$(sed -n 's/^torch_valid_ppl //p' "$out/torch")
	# Both must have predicted the same validation tokens (same vocabulary
	# size, same layout), or the perplexities are not comparable.
	[ "$(get tokens)" = "$(sed -n 's/^torch_valid_tokens //p' "$out/torch")" ] ||
		{ echo "gru_lm_quality.sh: fedrun and PyTorch predicted different tokens" >&2; exit 1; }
	printf '%-6s %14.2f %9d %14.2f %9.0f %8.3f\n' "$seed" "$ours" $((t1 - t0)) "$peer" \
		"$(sed -n 's/^torch_train_secs //p' "$out/torch")" "$(awk -v o="$ours" -v p="$peer" 'BEGIN { print o / p }')"
	sum_o=$(awk -v a="$sum_o" -v b="$ours" 'BEGIN { print a + b }')
	sum_p=$(awk -v a="$sum_p" -v b="$peer" 'BEGIN { print a + b }')
	n=$((n + 1))
done
awk -v o="$sum_o" -v p="$sum_p" -v n="$n" 'BEGIN { printf "%-6s %14.2f %9s %14.2f %9s %8.3f (%+.1f%%)\n", "mean", o / n, "", p / n, "", o / p, 100 * (o / p - 1) }'
echo "validation tokens predicted by each: $(get tokens); fedrun seconds include reading the corpus and evaluating, PyTorch's are training only"
