#!/bin/sh
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
# Usage: bench/gru_lm_quality.sh [STEPS [CORPUS_DIR [SEED]]]
#   (default 1000 windows, data/brown/out, seed 1; build the corpus with
#   data/brown/build.sh)
# From the build directory; needs python3-torch for /usr/bin/python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
steps=${1:-1000}
corpus=$(cd "${2:-$here/../data/brown/out}" && pwd)
seed=${3:-1}
FEDRUN=${FEDRUN:-$PWD/fedrun}
FEDRUN_PLUGIN_PATH=${FEDRUN_PLUGIN_PATH:-$PWD/plugins/.libs}
export FEDRUN_PLUGIN_PATH
[ -f "$corpus/train.txt" ] || { echo "gru_lm_quality.sh: no $corpus/train.txt (data/brown/build.sh)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
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
  "output": { "dir": "$out/run", "checkpoint_every": 0 }
}
JSON
t0=$(date +%s)
"$FEDRUN" -q --threads 1 "$out/central.json" >/dev/null
t1=$(date +%s)
get() { grep "\"round\":1,\"client\":null,\"split\":\"valid\",\"metric\":\"$1\"" "$out/run/metrics.jsonl" |
	sed 's/.*"value":\([^,]*\),.*/\1/'; }
ours=$(get ppl)
ours_tokens=$(get tokens)
# PyTorch at its fastest setting in bench/gru_lm.sh: one thread of its own,
# OpenBLAS on its default (all cores).
/usr/bin/python3 "$here/gru_lm_quality_torch.py" "$corpus/train.txt" "$corpus/valid.txt" \
	--steps "$steps" --threads 1 --seed "$seed" >"$out/torch"
peer=$(sed -n 's/^torch_valid_ppl //p' "$out/torch")
echo "centralized training on $corpus/train.txt: $steps windows of 20 x 35 tokens, seed $seed"
echo "validation tokens predicted: fedrun $ours_tokens, PyTorch $(sed -n 's/^torch_valid_tokens //p' "$out/torch")"
printf '%-32s %10s %10s\n' "" "valid ppl" "seconds"
printf '%-32s %10.2f %10d\n' "fedrun gru-lm (1 thread)" "$ours" $((t1 - t0))
printf '%-32s %10.2f %10.0f\n' "PyTorch (1 thread, BLAS default)" "$peer" "$(sed -n 's/^torch_train_secs //p' "$out/torch")"
awk -v o="$ours" -v p="$peer" 'BEGIN { printf "ratio fedrun / PyTorch: %.3f (%+.1f%%)\n", o / p, 100 * (o / p - 1) }'
