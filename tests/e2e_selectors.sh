#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Dynamic Pulling end to end: dp_greater on a multi-tensor meanest model
# pulls fewer bytes than "all" once clients have a previous round, random
# with count "median" sends as many tensors per group, and a run interrupted
# by SIGTERM (or stopped early) and resumed gives the same final model as an
# uninterrupted one, which needs the selector's per-client state.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/dp_greater.json"

# pull ROUND FILE: bytes pulled in a round.
pull() {
	grep "\"round\":$1,\"client\":null,\"split\":\"train\",\"metric\":\"train_loss\"" "$2" |
		sed 's/.*"bytes_pull":\([0-9]*\).*/\1/'
}
# sent FILE: the distinct values of selector.sent, one per line.
sent() {
	grep '"metric":"selector.sent"' "$1" | sed 's/.*"value":\([0-9]*\),.*/\1/' | sort -u
}

# Every client every round: round 1 sends everything (no w_{r-1} yet), then
# 2 of 3 encoder, 2 of 4 decoder tensors and the lone "head": 5 of 8.
run_ok "$p" --set output.dir=all --set clients.fraction=1 --set rounds=4 \
	--set selector='{"plugin": "all"}'
run_ok "$p" --set output.dir=dp --set clients.fraction=1 --set rounds=4
[ "$(pull 1 dp/metrics.jsonl)" -eq "$(pull 1 all/metrics.jsonl)" ] ||
	die "round 1: dp_greater pulled $(pull 1 dp/metrics.jsonl) bytes, all $(pull 1 all/metrics.jsonl)"
for r in 2 3 4; do
	a=$(pull $r all/metrics.jsonl) d=$(pull $r dp/metrics.jsonl)
	[ -n "$d" ] && [ "$d" -lt "$a" ] || die "round $r: dp_greater pulled $d bytes, all $a"
done
[ "$(grep '"round":1,.*"selector.sent"' dp/metrics.jsonl | sed 's/.*"value":\([0-9]*\),.*/\1/' | sort -u)" = 8 ] ||
	die "round 1: not every tensor sent"
[ "$(grep -v '"round":1,' dp/metrics.jsonl | grep '"selector.sent"' | sed 's/.*"value":\([0-9]*\),.*/\1/' | sort -u)" = 5 ] ||
	die "rounds 2-4: dp_greater did not send 5 of 8 tensors"
grep -q '"round":2,"client":0,"split":null,"metric":"selector.saving","value":0\.[0-9]' dp/metrics.jsonl ||
	die "no selector.saving for client 0 in round 2"
cmp -s all/final.safetensors dp/final.safetensors && die "dp_greater gave the model of all"

# random with count "median": 5 of 8 in every round, the first one too.
run_ok "$p" --set output.dir=rnd --set rounds=3 \
	--set selector='{"plugin": "random", "count": "median"}'
[ "$(sent rnd/metrics.jsonl)" = 5 ] || die "random median sent $(sent rnd/metrics.jsonl | tr '\n' ' ')tensors"

# Resume: a reference run, then one stopped after 4 of 12 rounds and resumed.
run_ok --threads 2 "$p" --set output.dir=ref
grep -q '__selector__\.ref\.11' ref/checkpoints/round-000012.safetensors ||
	die "the checkpoint holds no selector state"
run_ok --threads 2 "$p" --set output.dir=early --set rounds=4
run_ok --threads 1 --resume "$p" --set output.dir=early
cmp ref/final.safetensors early/final.safetensors || die "stop after round 4 + resume differs"

# SIGTERM: the run checkpoints at the end of the round and exits 130. It
# was started with far more rounds than it can finish before the signal (400
# could: a round takes well under a millisecond); the reference for it is run
# afterwards with as many rounds as it did plus 5, so no timing matters.
"$FEDRUN" -q --threads 2 "$p" --set output.dir=term --set rounds=1000000 >/dev/null 2>term.err &
pid=$!
await_checkpoint term 3 $pid
kill -s TERM $pid
wait $pid
st=$?
[ "$st" -eq 130 ] || { cat term.err; die "SIGTERM: exit $st, expected 130"; }
done_round=$(ls term/checkpoints | tail -n 1 | sed 's/round-0*\([0-9]*\).*/\1/')
[ "$done_round" -lt 1000000 ] || die "the run ended before the signal"
n=$((done_round + 5))
run_ok --threads 1 --resume "$p" --set output.dir=term --set rounds=$n
run_ok --threads 2 "$p" --set output.dir=ref2 --set rounds=$n
cmp ref2/final.safetensors term/final.safetensors ||
	die "SIGTERM after round $done_round + resume differs from an uninterrupted run of $n rounds"
echo "selectors: dp_greater pulls less than all after round 1; random median sends 5 of 8;" \
	"resumed runs (stopped at 4 and SIGTERM at $done_round) match uninterrupted ones"
