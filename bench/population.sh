#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Populations of clients with kept state: gru-lm with clients.optimizer_state
# "keep" (SGD momentum: one float per parameter and client), 100 clients a
# round, populations of 1,000, 10,000 and 100,000 clients, a checkpoint
# every round. For each population and clients.state_store ("disk": a file
# a client, "memory": every trained client's state in RAM, fedrun's only
# way before the store), the run's peak resident memory and its seconds a
# round (metrics' wall clock, last round minus round 1, over the rounds
# between), the ratio of disk's to memory's, and disk's against its
# 1,000-client run. The
# corpus is generated for each population, two lines a client (6 to 12
# words from 1,000), so that a round's work is the same whatever the
# population: only the clients that are not training grow in number.
# With LINES set (say 200000), every population shares one corpus of that
# many lines instead: the same data spread over more clients, so that the
# dataset's memory is the same and a round's work shrinks with the clients'
# share of it.
# Usage: [LINES=N] bench/population.sh [ROUNDS (8)] [POPULATIONS ("1000 10000 100000")]
# Run from the build directory (it uses ./fedrun and plugins/.libs).
set -eu
rounds=${1:-8}
pops=${2:-"1000 10000 100000"}
fedrun=${FEDRUN:-./fedrun}
export FEDRUN_PLUGIN_PATH=${FEDRUN_PLUGIN_PATH:-$PWD/plugins/.libs}
work=$(mktemp -d "${TMPDIR:-/tmp}/fedrun-pop.XXXXXX")
trap 'rm -rf "$work"' EXIT
corpus() { # LINES: the training text
	awk -v L="$1" 'BEGIN { srand(1); for (i = 0; i < L; i++) { n = 6 + int(rand() * 7); s = "";
		for (j = 0; j < n; j++) s = s (j ? " " : "") "w" int(rand() * rand() * 1000); print s } }' \
		>"$work/train.txt"
}
corpus 2000
cp "$work/train.txt" "$work/valid.txt"
cat >"$work/p.json" <<JSON
{"name": "population", "seed": 1, "rounds": $rounds,
 "model": {"plugin": "gru-lm", "embed": 128, "hidden": 128, "tied": true, "bptt": 20},
 "data": {"train": "$work/train.txt", "valid": "$work/valid.txt", "test": "$work/valid.txt",
          "partition": {"scheme": "iid", "clients": 1000}},
 "clients": {"epochs": 1, "batch": 2, "optimizer_state": "keep",
             "optimizer": {"name": "sgd", "lr": 0.5, "momentum": 0.5, "clip_norm": 1.0}},
 "aggregator": {"plugin": "fedavg"},
 "eval": {"every": 0, "final_test": false},
 "output": {"dir": "$work/run", "checkpoint_every": 1, "keep": 2, "overwrite": true}}
JSON
peak_kib() { # runs fedrun ARGS; prints its peak RSS in KiB (GNU time's %M)
	/usr/bin/time -f %M -o "$work/rss" "$fedrun" -q "$@" >/dev/null 2>"$work/err" ||
		{ cat "$work/err" >&2; exit 1; }
	cat "$work/rss"
}
grep -m1 "model name" /proc/cpuinfo | sed 's/.*: /cpu: /'
echo "gru-lm, 100 clients a round, $rounds rounds, a checkpoint every round, 1 thread;" \
	"corpus: ${LINES:-two lines a client} ${LINES:+lines for every population}"
dataset_kib() { # POPULATION: fedrun validate's peak RSS, the dataset and model without a round
	/usr/bin/time -f %M -o "$work/rss" "$fedrun" validate "$work/p.json" \
		--set data.partition.clients="$1" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
	cat "$work/rss"
}
run_store() { # POPULATION STORE: sets rss (KiB) and t (s a round)
	frac=$(awk -v n="$1" 'BEGIN { printf "%.10g", 100 / n }')
	rss=$(peak_kib --threads 1 "$work/p.json" --set data.partition.clients="$1" \
		--set clients.fraction="$frac" --set clients.state_store="$2")
	t=$(awk -F, -v R="$rounds" 'NR > 1 && $4 == "train_loss" && $2 == "" { w[$1] = $9 }
		END { printf "%.3f", (w[R] - w[1]) / (R - 1) }' "$work/run/metrics.csv")
}
# Ours ("disk") and the peer ("memory") side by side for each population,
# their ratio, and ours against ours at the first population.
printf '%9s %9s %9s %7s %9s %9s %7s %9s %9s %9s\n' clients "disk MiB" "mem MiB" ratio \
	"disk s/r" "mem s/r" ratio "MiB vs 1" "s/r vs 1" "valid MiB"
base_rss= base_t=
for n in $pops; do
	corpus "${LINES:-$((2 * n))}"
	run_store "$n" disk
	drss=$rss dt=$t
	run_store "$n" memory
	[ -n "$base_rss" ] || { base_rss=$drss; base_t=$dt; }
	v=$(dataset_kib "$n")
	awk -v n="$n" -v dm="$drss" -v mm="$rss" -v dt="$dt" -v mt="$t" -v m0="$base_rss" \
		-v t0="$base_t" -v v="$v" 'BEGIN { printf "%9d %9.1f %9.1f %7.3f %9.3f %9.3f %7.3f %9.2f %9.2f %9.1f\n",
		n, dm / 1024, mm / 1024, dm / mm, dt, mt, dt / mt, dm / m0, dt / t0, v / 1024 }'
done
