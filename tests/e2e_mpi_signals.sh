#!/bin/sh
# Signals to the ranks of a run over several processes. SIGTERM to a worker
# rank (a preempted node) stops the whole job after a round, as one to rank 0
# does: rank 0 writes the checkpoint, every rank exits 130, and --resume
# ends with the model of a run never stopped. Skipped (77) as
# tests/e2e_mpi.sh is.
. "$top_srcdir/tests/lib.sh"
mpi_env
p="$top_srcdir/tests/pipelines/dp_greater.json"
# Long enough that no job ends by itself while the test waits on it.
long="--set rounds=100000 --set eval.every=0 --set model.dim=20000"

newest() {
	ls "$1/checkpoints" 2>/dev/null | sed -n 's/^round-0*\([0-9][0-9]*\)\.safetensors$/\1/p' |
		sort -n | tail -n 1 | grep . || echo 0
}

# start DIR NP [ARGS...]: starts the long job in the background and waits
# for its second checkpoint. $job is the pid of timeout(1), which ends a job
# that goes on regardless after 120 s (status 124), so that no test hangs.
start() {
	dir=$1
	np=$2
	shift 2
	timeout -k 10 120 mpirun $mpi_x -np "$np" "$FEDRUN" -q "$@" "$p" --set output.dir="$work/$dir" $long >"$dir.out" 2>&1 &
	job=$!
	i=0
	while [ "$(newest "$dir")" -lt 2 ] && [ $i -lt 1200 ] && kill -0 $job 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
	done
	[ "$(newest "$dir")" -ge 2 ] || { kill $job; cat "$dir.out"; die "$dir: the job did not start"; }
}

# rank_pid DIR RANK: the pid of the job's process of that rank (found by
# its run directory, which no other job on the machine has).
rank_pid() {
	for pid in $(pgrep -f "output.dir=$work/$1 --set rounds=100000"); do
		grep -qz "^OMPI_COMM_WORLD_RANK=$2\$" /proc/"$pid"/environ 2>/dev/null && echo "$pid"
	done | head -n 1
}

# finish: waits for $job and sets $st to its status.
finish() {
	st=0
	wait $job || st=$?
}

# resumed DIR ROUND: --resume to ROUND + 2 gives the model of a run that
# went there in one go.
resumed() {
	mpirun $mpi_x -np 2 "$FEDRUN" -q --resume "$p" --set output.dir="$1" \
		--set rounds=$(($2 + 2)) --set eval.every=0 --set model.dim=20000 >"$1.resume" 2>&1 ||
		{ cat "$1.resume"; die "$1: --resume failed"; }
	run_ok --threads 2 "$p" --set output.dir="$1-ref" --set rounds=$(($2 + 2)) --set eval.every=0 \
		--set model.dim=20000
	cmp -s "$1/final.safetensors" "$1-ref/final.safetensors" || die "$1: the resumed model differs"
}

# SIGTERM to rank 1 of 3.
start term 3
victim=$(rank_pid term 1)
[ -n "$victim" ] || { kill $job; die "no process of rank 1 found"; }
kill -s TERM "$victim"
finish
[ $st -eq 130 ] || { tail -n 20 term.out; die "SIGTERM to rank 1: exit $st, expected 130"; }
grep -q "interrupted (a signal to rank 1) after round [0-9]*; .*continue with --resume" term.out ||
	{ cat term.out; die "SIGTERM to rank 1: rank 0 does not say so"; }
# Every rank exits as one process would: the other workers' line too.
grep -q "rank 2: the job was interrupted after round" term.out ||
	{ cat term.out; die "SIGTERM to rank 1: rank 2 did not stop as interrupted"; }
at=$(newest term)
grep -q "interrupted (a signal to rank 1) after round $at;" term.out ||
	die "SIGTERM to rank 1: the newest checkpoint ($at) is not the round it stopped after"
resumed term "$at"
echo "SIGTERM to rank 1: the job stopped after round $at with status 130; resumed, the same model"
