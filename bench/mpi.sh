#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/mpi.sh: the cost of running over several processes. gru-lm "small"
# (the FedAtt preset: embedding and hidden 300, vocabulary of the shipped
# toy-English corpus) on 16 clients, all of them every round, each training
# a fixed number of steps, so that a round is dominated by client
# training. On a machine of C cores it times rounds
#
#   - in one process with --threads C (the peer: fedrun without MPI),
#   - under mpirun -np 1 with --threads C,
#   - under mpirun -np C with --threads 1 (one rank per core),
#   - under mpirun -np 2 with --threads C/2 when C >= 4,
#   - under mpirun -np 4 with --threads C/4 when C >= 8,
#
# and prints seconds per round (rounds 2 to R: the first holds the
# tokenizer-free setup and first touches), the ratio to the in-process run,
# and the bytes moved: what the metrics count (push and pull messages) and
# what the transport sent and received (log.txt), which adds the workers'
# metric events and the round's commands. The final models are compared:
# every run must give the same bytes. --repeat N runs the whole set N times,
# each mpirun run right after its repetition's in-process run, and ends
# with each configuration's median ratio: a machine whose speed drifts
# between runs needs several repetitions to resolve a few percent.
#
# mpirun runs with --bind-to none (MPIRUN_FLAGS replaces it): by default
# Open MPI binds each of one or two ranks to a single core, which halves a
# two-thread rank.
#
# Usage: bench/mpi.sh [--quick] [--repeat N] [ROUNDS]   from a built tree with the MPI
# transport (configure --with-mpi); FEDRUN and FEDRUN_PLUGIN_PATH default to
# the tree's.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
FEDRUN=${FEDRUN:-$top/fedrun}
export FEDRUN_PLUGIN_PATH=${FEDRUN_PLUGIN_PATH:-$top/plugins/.libs}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rounds=6 steps=12 repeat=1
while [ $# -gt 0 ]; do
	case $1 in
	--quick) rounds=3 steps=3 ;;
	--repeat) [ $# -ge 2 ] || { echo "bench/mpi.sh: --repeat needs a count" >&2; exit 2; }
		repeat=$2; shift ;;
	--repeat=*) repeat=${1#--repeat=} ;;
	*) rounds=$1 ;;
	esac
	shift
done
case $repeat$rounds in *[!0-9]*) echo "bench/mpi.sh: --repeat and ROUNDS take whole numbers" >&2; exit 2 ;; esac
[ "$repeat" -ge 1 ] && [ "$rounds" -ge 2 ] || { echo "bench/mpi.sh: --repeat at least 1, ROUNDS at least 2" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench/mpi.sh: no mpirun (openmpi-bin)" >&2; exit 1; }
[ -e "$FEDRUN_PLUGIN_PATH/transport_mpi.so" ] ||
	{ echo "bench/mpi.sh: no transport_mpi.so in $FEDRUN_PLUGIN_PATH (configure --with-mpi)" >&2; exit 1; }
cores=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
d=$top/examples/data/toy-english
cat >"$out/p.json" <<JSON
{ "name": "bench-mpi", "seed": 1, "rounds": $rounds,
  "model": { "plugin": "gru-lm", "preset": "small" },
  "data": { "train": "$d/train.txt", "valid": "$d/valid.txt", "test": "$d/test.txt",
            "partition": { "scheme": "iid", "clients": 16 } },
  "clients": { "fraction": 1.0, "epochs": 0, "steps": $steps, "batch": 20,
               "optimizer": { "name": "sgd", "lr": 1.0, "clip_norm": 0.25 } },
  "aggregator": { "plugin": "fedavg" },
  "eval": { "every": 0, "final_test": false },
  "output": { "dir": "$out/run", "overwrite": true } }
JSON
# per_round DIR: seconds per round after the first (from metrics' wall).
per_round() {
	sed -n 's/.*"round":\([0-9]*\),"client":null,.*"metric":"clients".*"wall":\([0-9.e+-]*\).*/\1 \2/p' \
		"$1/metrics.jsonl" | awk 'NR == 1 { r0 = $1; w0 = $2 } { r = $1; w = $2 }
		END { printf "%.3f", (w - w0) / (r - r0) }'
}
counted() { # DIR: the bytes the metrics count, push and pull, all rounds
	sed -n 's/.*"metric":"clients".*"bytes_push":\([0-9]*\),"bytes_pull":\([0-9]*\).*/\1 \2/p' \
		"$1/metrics.jsonl" | awk '{ s += $1 + $2 } END { printf "%.0f", s }'
}
moved() { # DIR: what rank 0's transport sent and received
	sed -n 's/.*transport: rank 0 sent \([0-9]*\) bytes and received \([0-9]*\).*/\1 \2/p' "$1/log.txt" |
		awk '{ printf "%.0f", $1 + $2 }'
}
run() { # NAME NP THREADS: one run (NP 0: no mpirun)
	if [ "$2" = 0 ]; then
		"$FEDRUN" -q --threads "$3" "$out/p.json" --set output.dir="$out/$1" >/dev/null
	else
		mpirun --oversubscribe ${MPIRUN_FLAGS---bind-to none} -np "$2" "$FEDRUN" -q --threads "$3" "$out/p.json" \
			--set output.dir="$out/$1" >/dev/null
	fi
}
echo "== gru-lm small, 16 clients x $steps steps a round, $rounds rounds, $cores cores, $repeat repetition(s)"
# one repetition: the in-process run, then each mpirun configuration, so
# that a drift in the machine's speed reaches the runs compared in a
# repetition alike; each ratio is against that repetition's in-process run
configs="np1:1:$cores npc:$cores:1"
[ "$cores" -ge 4 ] && configs="$configs np2:2:$((cores / 2))"
[ "$cores" -ge 8 ] && configs="$configs np4:4:$((cores / 4))"
config() { # NAME:NP:THREADS, one word of $configs: sets name, np and th
	name=${1%%:*} np=${1#*:}
	th=${np#*:} np=${np%%:*}
}
i=1
while [ $i -le "$repeat" ]; do
	run local 0 "$cores"
	base=$(per_round "$out/local")
	[ "$repeat" -gt 1 ] && echo "-- repetition $i"
	echo "in-process --threads $cores: $base s/round, $(counted "$out/local") bytes counted"
	for c in $configs; do
		config "$c"
		run "$name" "$np" "$th"
		cmp -s "$out/local/final.safetensors" "$out/$name/final.safetensors" ||
			{ echo "bench/mpi.sh: mpirun -np $np --threads $th gave another final model" >&2; exit 1; }
		s=$(per_round "$out/$name")
		m=$(moved "$out/$name")
		echo "$name $s $base" >>"$out/ratios"
		awk -v s="$s" -v b="$base" -v l="mpirun -np $np --threads $th" -v c="$(counted "$out/$name")" -v m="${m:-0}" \
			'BEGIN { printf "%s: %s s/round | in-process %s | ratio %.3f (%+.1f%%) | bytes counted %s, moved by the transport %s\n",
				l, s, b, s / b, 100 * (s / b - 1), c, m }'
	done
	i=$((i + 1))
done
if [ "$repeat" -gt 1 ]; then
	echo "-- median ratio over $repeat repetitions (min, max)"
	for c in $configs; do
		config "$c"
		awk -v n="$name" '$1 == n { print $2 / $3 }' "$out/ratios" | sort -g |
			awk -v l="mpirun -np $np --threads $th" '{ r[NR] = $1 }
			END { m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
				printf "%s: %.3f (%+.1f%%), min %.3f, max %.3f\n", l, m, 100 * (m - 1), r[1], r[NR] }'
	done
fi
