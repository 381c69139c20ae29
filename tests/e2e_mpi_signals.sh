#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Signals to the ranks of a run over several processes. SIGTERM to a worker
# rank (a preempted node) stops the whole job after a round, as one to rank 0
# does: rank 0 writes the checkpoint, every rank exits 130, and --resume
# ends with the model of a run never stopped. A rank stopped (SIGSTOP) is
# given up on after --peer-timeout: the job ends non-zero with a message
# naming the rank instead of waiting forever, and resumes from its last
# checkpoint. Skipped (77) as tests/e2e_mpi.sh is.
. "$top_srcdir/tests/lib.sh"
mpi_env
# The ranks' scratch directories (and Open MPI's) under the test's own: a
# rank killed with SIGKILL cannot remove its own.
export TMPDIR="$work"
p="$top_srcdir/tests/pipelines/dp_greater.json"
# Long enough that no job ends by itself while the test waits on it.
long="--set rounds=100000 --set eval.every=0 --set model.dim=20000"

# start DIR NP [ARGS...]: starts the long job in the background and waits
# for its second checkpoint. $job is the pid of timeout(1), which ends a job
# that goes on regardless after 120 s (status 124), so that no test hangs.
start() {
	dir=$1
	np=$2
	shift 2
	timeout -k 10 120 mpirun $mpi_x -np "$np" "$FEDRUN" -q "$@" "$p" --set output.dir="$work/$dir" $long >"$dir.out" 2>&1 &
	job=$!
	await_checkpoint "$dir" 2 $job
	[ "$(newest "$dir")" -ge 2 ] || { kill $job; cat "$dir.out"; die "$dir: the job did not start"; }
}

# rank_pid DIR RANK: the pid of the job's process of that rank (found by
# its run directory, which no other job on the machine has).
rank_pid() {
	for pid in $(pgrep -f "output.dir=$work/$1 --set rounds=100000"); do
		grep -qz "^OMPI_COMM_WORLD_RANK=$2\$" /proc/"$pid"/environ 2>/dev/null && echo "$pid"
	done | head -n 1
}

# finish DIR: waits for $job and sets $st to its status; then ends what
# is left of the job (a stopped rank that mpirun could not end).
finish() {
	st=0
	wait $job || st=$?
	for pid in $(pgrep -f "output.dir=$work/$1 --set rounds=100000"); do
		kill -s CONT "$pid" 2>/dev/null
		kill -9 "$pid" 2>/dev/null
	done
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
finish term
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

# SIGSTOP to rank 1 of 3, with a short peer timeout: rank 0, waiting for
# rank 1's clients, gives up on it after 5 s, naming it; the job ends with
# status 1 (that of a failed run) and the checkpoints are whole. Without
# the timeout the others waited forever, each spinning a core.
start stop 3 --peer-timeout 5
victim=$(rank_pid stop 1)
[ -n "$victim" ] || { kill $job; die "no process of rank 1 found"; }
kill -s STOP "$victim"
finish stop
[ $st -ne 124 ] || { tail -n 20 stop.out; die "SIGSTOP to rank 1: the job hung"; }
[ $st -ne 0 ] || die "SIGSTOP to rank 1: the job ended with status 0"
grep -q "rank 0 has heard nothing from rank 1 for [0-9.]* s (stopped, or its node unreachable): giving up after the peer timeout of 5 s" stop.out ||
	{ cat stop.out; die "SIGSTOP to rank 1: no message naming it"; }
at=$(newest stop)
resumed stop "$at"
echo "SIGSTOP to rank 1: the job gave up on it after 5 s (status $st); resumed from round $at, the same model"

# A rank that computes for longer than the peer timeout is not given up on:
# its transport beats on. One client a round, of 8 steps over 4 million
# parameters (seconds here): one rank trains it while the other waits.
heavy="--set model.dim=4000000 --set data.groups.0.samples=64 --set data.groups.1.samples=64"
timeout -k 10 120 mpirun $mpi_x -np 2 "$FEDRUN" -q --threads 1 --peer-timeout 2 "$p" \
	--set output.dir=busy --set rounds=2 --set clients.fraction=0.01 --set eval.every=0 \
	--set output.checkpoint_every=0 $heavy >busy.out 2>&1 ||
	{ cat busy.out; die "a rank computing longer than --peer-timeout was given up on"; }
! grep -q "heard nothing" busy.out || { cat busy.out; die "a busy rank was called silent"; }
echo "a rank busy for longer than --peer-timeout 2: the run went through"
