#!/bin/sh
# Populations of clients with kept state: gru-lm with clients.optimizer_state
# "keep" (SGD momentum: one float per parameter and client), 100 clients a
# round, populations of 1,000, 10,000 and 100,000 clients, a checkpoint
# every round. For each population and clients.state_store ("disk": a file
# a client, "memory": every trained client's state in RAM, fedrun's only
# way before the store), the run's peak resident memory and its seconds a
# round (metrics' wall clock, last round minus round 1, over the rounds
# between), and the ratios to the 1,000-client run of the same store. The
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
printf '%-8s %10s %10s %12s %10s %11s %11s\n' store clients "peak MiB" "validate MiB" s/round "peak ratio" "time ratio"
for store in disk memory; do
	base_rss= base_t=
	for n in $pops; do
		corpus "${LINES:-$((2 * n))}"
		frac=$(awk -v n="$n" 'BEGIN { printf "%.10g", 100 / n }')
		rss=$(peak_kib --threads 1 "$work/p.json" --set data.partition.clients="$n" \
			--set clients.fraction="$frac" --set clients.state_store=$store)
		t=$(awk -F, -v R="$rounds" 'NR > 1 && $4 == "train_loss" && $2 == "" { w[$1] = $9 }
			END { printf "%.3f", (w[R] - w[1]) / (R - 1) }' "$work/run/metrics.csv")
		[ -n "$base_rss" ] || { base_rss=$rss; base_t=$t; }
		v=$(dataset_kib "$n")
		awk -v s=$store -v n="$n" -v m="$rss" -v v="$v" -v t="$t" -v m0="$base_rss" -v t0="$base_t" \
			'BEGIN { printf "%-8s %10d %10.1f %12.1f %10.3f %11.2f %11.2f\n", s, n, m / 1024, v / 1024, t, m / m0, t / t0 }'
	done
done
