#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Secure aggregation's cost (issue 40): one round of gru-lm (small preset:
# embed = hidden = 300, tied, over a generated corpus of VOCAB words, so
# that the update has gru-lm small's size on a PTB-like vocabulary), every
# client of the population in the round, one local epoch, one thread, in
# one process: ours (the "secagg" section, SecAgg+'s sparse graph by
# default) against the peer, the same round without secure aggregation.
# For each number of clients: CPU seconds of the round with and without
# (the run's, less those of a run of 0 rounds) and their ratio; bytes of the round (pushed and pulled) with and without and
# their ratio; the client side's protocol seconds (mean over clients, all
# four stages) as a share of a client's local epoch (the peer's round
# seconds over its clients); the server's protocol seconds, and those over
# n log2 n (flat when the server's cost grows as n log n). Goal: a client
# overhead under 10% of a local epoch at 100 clients.
# Usage: bench/secagg.sh [CLIENTS ("10 100 1000")] [GRAPH ("sparse")]
#   LINES_PER_CLIENT (420: Penn Treebank's training sentences over 100
#   clients, as in FedAtt), VOCAB (10000), BITS (32)
# Run from the build directory (it uses ./fedrun and plugins/.libs).
set -eu
clients=${1:-"10 100 1000"}
graph=${2:-sparse}
lpc=${LINES_PER_CLIENT:-420}
vocab=${VOCAB:-10000}
bits=${BITS:-32}
fedrun=${FEDRUN:-./fedrun}
export FEDRUN_PLUGIN_PATH=${FEDRUN_PLUGIN_PATH:-$PWD/plugins/.libs}
work=$(mktemp -d "${TMPDIR:-/tmp}/fedrun-secagg.XXXXXX")
trap 'rm -rf "$work"' EXIT
corpus() { # LINES: the training text, 6 to 12 words each from VOCAB, every word once
	awk -v L="$1" -v V="$vocab" 'BEGIN { srand(1); for (w = 0; w < V; w += 10) {
		s = ""; for (j = 0; j < 10; j++) s = s (j ? " " : "") "w" (w + j); print s }
		for (i = 0; i < L; i++) { n = 6 + int(rand() * 7); s = "";
		for (j = 0; j < n; j++) s = s (j ? " " : "") "w" int(rand() * rand() * V); print s } }' \
		>"$work/train.txt"
	head -n 200 "$work/train.txt" >"$work/valid.txt"
}
pipeline() { # CLIENTS
	cat >"$work/p.json" <<JSON
{"name": "secagg-bench", "seed": 1, "rounds": 1,
 "model": {"plugin": "gru-lm", "preset": "small", "tied": true, "bptt": 20},
 "data": {"train": "$work/train.txt", "valid": "$work/valid.txt", "test": "$work/valid.txt",
          "partition": {"scheme": "iid", "clients": $1}},
 "clients": {"fraction": 1, "epochs": 1, "batch": 2,
             "optimizer": {"name": "sgd", "lr": 0.5, "clip_norm": 1.0}},
 "aggregator": {"plugin": "fedavg"},
 "eval": {"every": 0, "final_test": false},
 "output": {"dir": "$work/run", "checkpoint_every": 0, "overwrite": true}}
JSON
}
cpu() { # ARGS: runs fedrun; prints its user + system CPU seconds
	/usr/bin/time -f "%U %S" -o "$work/time" "$fedrun" -q --threads 1 "$work/p.json" "$@" \
		>/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
	awk '{ print $1 + $2 }' "$work/time"
}
run() { # ARGS: sets secs (the round's CPU seconds: the run's, less a run of 0
	# rounds, whose setup is the same) and bytes (pushed and pulled)
	setup=$(cpu "$@" --set rounds=0)
	secs=$(awk -v a="$(cpu "$@")" -v b="$setup" 'BEGIN { print a - b }')
	bytes=$(grep '"metric":"clients"' "$work/run/metrics.jsonl" |
		sed 's/.*"bytes_push":\([0-9]*\),"bytes_pull":\([0-9]*\).*/\1 \2/' | awk '{ print $1 + $2 }')
}
# A metric's sum over the clients (CLIENT "c") or the server's ("s").
sum_metric() { # WHO PATTERN
	awk -v who="$1" -v pat="$2" '$0 ~ "\"metric\":\"" pat "\"" {
		c = ($0 ~ /"client":null/) ? "s" : "c"; if (c != who) next
		v = $0; sub(/.*"value":/, "", v); sub(/,.*/, "", v); t += v }
		END { printf "%.6f", t }' "$work/run/metrics.jsonl"
}
grep -m1 "model name" /proc/cpuinfo | sed 's/.*: /cpu: /'
echo "gru-lm small (vocabulary $vocab), one round of every client, 1 epoch, 1 thread;" \
	"secagg: graph $graph, $bits bits; peer: the same round without secure aggregation"
printf '%8s %9s %9s %7s %12s %12s %8s %9s %9s %12s\n' clients "sa s" "plain s" ratio \
	"sa MB" "plain MB" ratio "client %" "server s" "srv/nlogn us"
for n in $clients; do
	corpus $((lpc * n))
	pipeline "$n"
	run
	ps=$secs pb=$bytes
	run --set "secagg={\"graph\": \"$graph\", \"bits\": $bits, \"clip\": 1}"
	cs=$(sum_metric c 'secagg\\.[a-z]*\\.seconds')
	ss=$(sum_metric s 'secagg\\.[a-z]*\\.seconds')
	awk -v n="$n" -v s="$secs" -v p="$ps" -v b="$bytes" -v pb="$pb" -v cs="$cs" -v ss="$ss" \
		'BEGIN { epoch = p / n; printf "%8d %9.2f %9.2f %7.3f %12.3f %12.3f %8.5f %9.2f %9.3f %12.3f\n",
		n, s, p, s / p, b / 1e6, pb / 1e6, b / pb, 100 * (cs / n) / epoch, ss,
		1e6 * ss / (n * log(n) / log(2)) }'
done
