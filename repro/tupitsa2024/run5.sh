#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run5.sh LABEL PIPELINE [--set k=v ...]: the pipeline over seeds 1..5
# (seed = s, data.seed = s + 4: the example itself is s = 1), runs under ${OUT:-/tmp/tupitsa2024}/LABEL/s<s>,
# then summarise.py over the five.
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
: "${FEDRUN:=$top/fedrun}"
: "${FEDRUN_PLUGIN_PATH:=$top/plugins/.libs}"
export FEDRUN_PLUGIN_PATH
label=$1 pipe=$2
shift 2
out=${OUT:-/tmp/tupitsa2024}/$label
rm -rf "$out"
mkdir -p "$out"
for s in 1 2 3 4 5; do
	"$FEDRUN" -q --threads 1 "$pipe" --set output.dir="$out/s$s" --set seed=$s \
		--set data.seed=$((s + 4)) --set output.checkpoint_every=0 "$@" >/dev/null
done
python3 "$here/summarise.py" "$label" "$out"/s1 "$out"/s2 "$out"/s3 "$out"/s4 "$out"/s5
