#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/checkpoint.sh: what a checkpoint costs as the clients grow. One
# round of meanest ("gaussian", 2 floats, 4 samples a client, every client
# trains and keeps its step count: one checkpoint entry a client) for each
# number of clients, run without a checkpoint (the
# peer: output.checkpoint_every 0) and with one (checkpoint_every 1), then
# resumed from that checkpoint for a second round (which reads it, cuts the
# metrics back and writes the next). It prints the seconds of each run
# (wall clock and CPU, from /usr/bin/time when there is one, else the
# shell's clock), the checkpoint's size, and the ratio of the run with a
# checkpoint to the run without (CPU seconds, else wall clock): a
# checkpoint linear in the clients keeps that ratio flat as they grow.
#
# Usage: bench/checkpoint.sh [--threads N] [CLIENTS...]   (default 10000
# 100000) from a built tree; FEDRUN and FEDRUN_PLUGIN_PATH default to the
# tree's.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
FEDRUN=${FEDRUN:-$top/fedrun}
export FEDRUN_PLUGIN_PATH=${FEDRUN_PLUGIN_PATH:-$top/plugins/.libs}
threads=2
while [ $# -gt 0 ]; do
	case $1 in
	--threads) [ $# -ge 2 ] || { echo "bench/checkpoint.sh: --threads needs a count" >&2; exit 2; }
		threads=$2; shift ;;
	--threads=*) threads=${1#--threads=} ;;
	*) break ;;
	esac
	shift
done
sizes=${*:-10000 100000}
case "$threads $sizes" in *[!0-9\ ]*) echo "bench/checkpoint.sh: --threads and CLIENTS take whole numbers" >&2; exit 2 ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
timer=
[ -x /usr/bin/time ] && timer=/usr/bin/time
# timed NAME ARGS...: runs fedrun ARGS; prints "WALL CPU" in seconds (CPU
# "-" without /usr/bin/time).
timed() {
	name=$1
	shift
	if [ -n "$timer" ]; then
		$timer -f "%e %U %S" -o "$out/$name.time" "$FEDRUN" -q --threads "$threads" "$@" >/dev/null 2>"$out/$name.err" ||
			{ cat "$out/$name.err" >&2; exit 1; }
		awk '{ printf "%.2f %.2f", $1, $2 + $3 }' "$out/$name.time"
	else
		t0=$(date +%s.%N)
		"$FEDRUN" -q --threads "$threads" "$@" >/dev/null 2>"$out/$name.err" || { cat "$out/$name.err" >&2; exit 1; }
		t1=$(date +%s.%N)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f -", b - a }'
	fi
}
echo "== one round of meanest (gaussian, dim 2), every client trains, $threads threads"
printf '%-9s %21s %21s %7s %9s %21s\n' clients "no checkpoint s" "checkpoint s" ratio "ckpt MB" "resume +1 round s"
printf '%-9s %10s %10s %10s %10s %7s %9s %10s %10s\n' "" wall cpu wall cpu "" "" wall cpu
for n in $sizes; do
	cat >"$out/p.json" <<JSON
{ "name": "bench-checkpoint", "seed": 1, "rounds": 1,
  "model": { "plugin": "meanest", "problem": "gaussian", "dim": 2 },
  "data": { "groups": [ { "clients": $n, "mean": 0, "samples": 4, "valid_samples": 4 } ] },
  "clients": { "fraction": 1.0, "epochs": 1, "batch": 4,
               "optimizer": { "name": "sgd", "lr": 0.5 } },
  "aggregator": { "plugin": "fedavg" },
  "eval": { "every": 1 },
  "output": { "dir": "$out/run", "checkpoint_every": 1 } }
JSON
	rm -rf "$out/none" "$out/ck"
	none=$(timed none "$out/p.json" --set output.dir="$out/none" --set output.checkpoint_every=0)
	ck=$(timed ck "$out/p.json" --set output.dir="$out/ck")
	mb=$(wc -c <"$out/ck/checkpoints/round-000001.safetensors" | awk '{ printf "%.1f", $1 / 1e6 }')
	rm "$out/ck/final.safetensors"
	res=$(timed resume --resume "$out/p.json" --set output.dir="$out/ck" --set rounds=2)
	# The ratio of CPU seconds where there are: wall clock on a shared
	# machine moves with the other jobs.
	echo "$n $none $ck $mb $res" | awk '{ r = $3 == "-" ? $4 / $2 : $5 / $3
		printf "%-9s %10s %10s %10s %10s %7.2f %9s %10s %10s\n", $1, $2, $3, $4, $5, r, $6, $7, $8 }'
done
