#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Streaming aggregation (ABI 1.3). With fedavg the clients of a round train
# a chunk at a time (4 per thread, at least 8) and each chunk's updates are
# summed into the aggregator before the next trains, so
#  - the result does not depend on the chunk: 1 and 3 threads (chunks of 8
#    and 12) give the same bits, for fedavg and fedopt;
#  - peak memory does not grow with the clients per round: 320 clients of
#    400 KB updates use about what 16 use, where holding the round's
#    updates would take 120 MB more;
#  - an aggregator that needs every update at once (trimmed_mean) still
#    gets them all, and a server-side attack (alie) turns streaming off.
. "$top_srcdir/tests/lib.sh"
pipeline() { # FILE CLIENTS DIM AGGREGATOR
	cat >"$1" <<JSON
{"name": "stream", "seed": 3, "rounds": 2,
 "model": {"plugin": "meanest", "problem": "gaussian", "dim": $3},
 "data": {"groups": [{"clients": $2, "mean": 1, "samples": 2, "valid_samples": 0}]},
 "clients": {"fraction": 1, "epochs": 1, "batch": 2, "optimizer": {"name": "sgd", "lr": 0.1}},
 "aggregator": $4,
 "eval": {"every": 0, "final_test": false},
 "output": {"dir": "out", "checkpoint_every": 0}}
JSON
}
for agg in '{"plugin": "fedavg"}' '{"plugin": "fedopt", "method": "adam"}' \
	'{"plugin": "trimmed_mean", "trim": 0.1}'; do
	pipeline p.json 50 3000 "$agg"
	run_ok --threads 1 p.json --set output.dir=t1
	run_ok --threads 3 p.json --set output.dir=t3
	cmp t1/final.safetensors t3/final.safetensors || die "$agg: --threads 1 and 3 differ"
	rm -rf t1 t3
done
# A server-side attack needs the whole round: it works with fedavg.
pipeline p.json 20 3000 '{"plugin": "fedavg"}'
run_ok --threads 2 p.json --set output.dir=alie --set 'attack={"type": "alie", "fraction": 0.2}'
run_ok --threads 2 p.json --set output.dir=clean
cmp -s alie/final.safetensors clean/final.safetensors && die "the alie attack changed nothing"

if sanitized; then
	echo "streaming: results do not depend on the chunk (memory not measured under sanitizers)"
	exit 0
fi
peak() { # CLIENTS: the run's peak resident memory in KiB
	pipeline p.json "$1" 100000 '{"plugin": "fedavg"}'
	"$top_builddir/tests/peak_rss" "$FEDRUN" -q --threads 2 p.json --set output.dir="m$1" \
		3>"rss$1" >/dev/null 2>"err$1" || { cat "err$1"; die "the run with $1 clients failed"; }
	cat "rss$1"
}
small=$(peak 16)
big=$(peak 320)
# 304 more updates of 400 KB would be 119 MB held at once.
[ "$big" -lt $((small + 30000)) ] ||
	die "peak memory grows with the clients per round: $small KiB with 16, $big KiB with 320"
echo "streaming: chunk-independent; peak memory $small KiB with 16 clients a round, $big KiB with 320"
