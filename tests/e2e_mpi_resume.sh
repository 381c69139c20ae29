#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs over several processes that stop and go on: a run stopped after
# round 5 under mpirun -np 3 and resumed under -np 2, or in one process,
# or the reverse, ends with the final model and metrics of a run never
# stopped; so does a run whose worker rank is killed (the job ends naming
# the rank, after the last complete round's checkpoint). The pipeline keeps
# state on the clients' side: optimizer moments (optimizer_state "keep"),
# dp_greater's reference models and, with selection in both directions,
# each client's own parameters. Only rank 0 writes the run directory.
# Skipped (77) as tests/e2e_mpi.sh is.
. "$top_srcdir/tests/lib.sh"
mpi_env
p="$top_srcdir/tests/pipelines/dp_greater.json"
both='selector={"plugin": "dp_greater", "max_clients": 12, "direction": "both"}'

mpi() {
	np=$1
	shift
	mpirun $mpi_x -np "$np" "$FEDRUN" -q "$@" >"$work/out" 2>&1 || {
		cat "$work/out"
		die "mpirun -np $np fedrun $* failed"
	}
}

# same REF STOPPED DIR WHAT: DIR has REF's final model (a run never
# stopped) and STOPPED's metrics (one process stopped after round 5 and
# resumed: a run that ends at round 5 evaluates there, one that goes on
# does not).
same() {
	cmp -s "$1/final.safetensors" "$3/final.safetensors" || die "$4: the final model differs"
	sed 's/"wall":[^,}]*//' "$2/metrics.jsonl" >"$work/m1"
	sed 's/"wall":[^,}]*//' "$3/metrics.jsonl" >"$work/m2"
	cmp -s "$work/m1" "$work/m2" || die "$4: the metrics differ"
}

for sel in pull both; do
	sets=
	[ $sel = both ] && sets=$both
	run_ok --threads 2 "$p" --set output.dir=ref-$sel ${sets:+--set "$sets"}
	run_ok --threads 2 "$p" --set output.dir=stop-$sel --set rounds=5 ${sets:+--set "$sets"}
	run_ok --threads 1 --resume "$p" --set output.dir=stop-$sel ${sets:+--set "$sets"}
	cmp -s ref-$sel/final.safetensors stop-$sel/final.safetensors || die "$sel: one process, resumed, differs"
	# 3 ranks, then 2
	mpi 3 "$p" --set output.dir=a-$sel --set rounds=5 ${sets:+--set "$sets"}
	[ -e a-$sel/checkpoints/round-000005.safetensors ] || die "$sel: no checkpoint of round 5"
	mpi 2 --resume "$p" --set output.dir=a-$sel ${sets:+--set "$sets"}
	same ref-$sel stop-$sel a-$sel "$sel: -np 3 then -np 2"
	# 4 ranks, then one process
	mpi 4 "$p" --set output.dir=b-$sel --set rounds=5 ${sets:+--set "$sets"}
	run_ok --threads 2 --resume "$p" --set output.dir=b-$sel ${sets:+--set "$sets"}
	same ref-$sel stop-$sel b-$sel "$sel: -np 4 then one process"
	# one process, then 3 ranks
	run_ok --threads 1 "$p" --set output.dir=c-$sel --set rounds=5 ${sets:+--set "$sets"}
	mpi 3 --resume "$p" --set output.dir=c-$sel ${sets:+--set "$sets"}
	same ref-$sel stop-$sel c-$sel "$sel: one process then -np 3"
	echo "$sel: stopped and resumed across 1 to 4 ranks, the same run"
done

# A worker rank killed: the job ends with a non-zero status and a message
# naming the rank; the checkpoints are whole and the run resumes.
# (timeout: a job that goes on regardless ends after 300 s, status 124;
# the wait for its second checkpoint allows for a slow start, as under
# the sanitizers on a loaded machine, and stops if the job ended)
timeout -k 10 300 mpirun $mpi_x -np 3 "$FEDRUN" -q "$p" --set output.dir=k --set rounds=100000 \
	--set eval.every=0 --set model.dim=20000 >k.out 2>&1 &
job=$!
await_checkpoint k 2 $job
[ "$(newest k)" -ge 2 ] || { kill $job; cat k.out; die "the job did not reach its second checkpoint"; }
victim=
for pid in $(pgrep -f "output.dir=k --set rounds=100000"); do
	grep -qz '^OMPI_COMM_WORLD_RANK=1$' /proc/"$pid"/environ 2>/dev/null && victim=$pid
done
[ -n "$victim" ] || { kill $job; die "no process of rank 1 found"; }
kill -9 "$victim"
st=0
wait $job || st=$?
[ $st -ne 0 ] || die "the job went on after rank 1 was killed"
grep -q "rank 1" k.out || { cat k.out; die "the message does not name rank 1"; }
at=$(newest k)
[ "$at" -ge 2 ] || die "no checkpoint left"
mpi 2 --resume "$p" --set output.dir=k --set rounds=$((at + 2)) --set eval.every=0 --set model.dim=20000
run_ok --threads 2 "$p" --set output.dir=k-ref --set rounds=$((at + 2)) --set eval.every=0 \
	--set model.dim=20000
cmp -s k/final.safetensors k-ref/final.safetensors || die "killed rank: the resumed model differs"
echo "rank 1 killed after round $at: the job stopped naming it; resumed, the same model"
