#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs the two Brown pipelines of examples/ (brown-fedavg.json: 100 iid
# clients, 10 a round, as in the FedAtt paper; brown-genres.json: one client
# per genre) for a few rounds and prints their validation perplexity after
# each round and the test perplexity at the end.
#
# Usage: data/brown/run-examples.sh [ROUNDS [THREADS]]   (default 5 rounds, 2 threads)
# Needs the corpus in data/brown/out (data/brown/build.sh data/brown/out)
# and a built fedrun: $FEDRUN (default ./fedrun) with its plugins in
# $FEDRUN_PLUGIN_PATH (default ./plugins/.libs). Runs go to runs/brown-*.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
rounds=${1:-5}
threads=${2:-2}
FEDRUN=${FEDRUN:-$top/fedrun}
FEDRUN_PLUGIN_PATH=${FEDRUN_PLUGIN_PATH:-$top/plugins/.libs}
export FEDRUN_PLUGIN_PATH
[ -f "$here/out/train.txt" ] ||
	{ echo "run-examples.sh: no corpus in $here/out: run data/brown/build.sh $here/out" >&2; exit 1; }
[ -x "$FEDRUN" ] || { echo "run-examples.sh: $FEDRUN is not built" >&2; exit 1; }

# ppl FILE SPLIT ROUND: the server's perplexity on SPLIT after ROUND.
ppl() {
	grep "\"round\":$3,\"client\":null,\"split\":\"$2\",\"metric\":\"ppl\"" "$1" | tail -n 1 |
		sed 's/.*"value":\([^,]*\),.*"wall":\([^}]*\)}/\1 \2/'
}

for ex in brown-fedavg brown-genres; do
	dir=runs/$ex-$rounds
	echo "== $ex: $rounds rounds, --threads $threads, run in $dir" >&2
	"$FEDRUN" -q --threads "$threads" "$top/examples/$ex.json" --set rounds="$rounds" \
		--set output.dir="$dir" --set output.overwrite=true >&2
done

printf '%-6s %14s %14s\n' round brown-fedavg brown-genres
r=0
while [ $r -le "$rounds" ]; do
	a=$(ppl "runs/brown-fedavg-$rounds/metrics.jsonl" valid $r | cut -d' ' -f1)
	b=$(ppl "runs/brown-genres-$rounds/metrics.jsonl" valid $r | cut -d' ' -f1)
	printf '%-6s %14.2f %14.2f\n' "$r" "$a" "$b"
	r=$((r + 1))
done
a=$(ppl "runs/brown-fedavg-$rounds/metrics.jsonl" test "$rounds")
b=$(ppl "runs/brown-genres-$rounds/metrics.jsonl" test "$rounds")
printf '%-6s %14.2f %14.2f\n' test "${a% *}" "${b% *}"
printf '%-6s %13.0fs %13.0fs\n' wall "${a#* }" "${b#* }"
