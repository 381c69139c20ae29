#!/bin/sh
# Interrupted runs: SIGTERM (checkpoint at the round's end, exit 130) and
# SIGKILL (dies anywhere) are both resumed with --resume to the same
# final.safetensors as an uninterrupted run. Damaged checkpoints are
# refused with a clear message.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/repro.json"
run_ok --threads 2 "$p" --set output.dir=ref

# newest DIR: the round of the newest checkpoint in DIR (0 if none).
newest() {
	ls "$1/checkpoints" 2>/dev/null | sed -n 's/^round-0*\([0-9][0-9]*\)\.safetensors$/\1/p' |
		sort -n | tail -n 1 | grep . || echo 0
}

# interrupt SIGNAL DIR: starts a run and signals it once it has a
# checkpoint of round 3 or later (older ones are pruned, so any will do);
# prints the exit status.
interrupt() {
	"$FEDRUN" -q --threads 2 "$p" --set output.dir="$2" --set rounds=400 >/dev/null 2>"$2.err" &
	pid=$!
	i=0
	while [ "$(newest "$2")" -lt 3 ] && [ $i -lt 600 ]; do
		sleep 0.05; i=$((i + 1))
	done
	kill -s "$1" $pid
	wait $pid
	echo $?
}
# The interrupted runs had rounds=400; resuming with the original 24 rounds
# is allowed ("rounds" may change on resume) as long as fewer are done.
st=$(interrupt TERM term)
[ "$st" -eq 130 ] || { cat term.err; die "SIGTERM: exit $st, expected 130"; }
grep -q "continue with --resume" term.err || die "SIGTERM: no resume hint"
done_round=$(newest term)
[ "$done_round" -lt 24 ] || die "run went past round 24 before the signal"
run_ok --threads 1 --resume "$p" --set output.dir=term
cmp ref/final.safetensors term/final.safetensors || die "SIGTERM + resume differs"

st=$(interrupt KILL kill)
[ "$st" -eq 137 ] || die "SIGKILL: exit $st"
run_ok --threads 2 --resume "$p" --set output.dir=kill
cmp ref/final.safetensors kill/final.safetensors || die "SIGKILL + resume differs"
# The resumed metrics hold each round once.
n=$(grep -c '"client":null,"split":"train","metric":"train_loss"' kill/metrics.jsonl)
[ "$n" -eq 24 ] || die "resumed metrics hold $n round summaries, expected 24"

# A truncated checkpoint is refused, by --resume and as "init".
run_ok --threads 2 "$p" --set output.dir=dmg --set rounds=3
last=dmg/checkpoints/round-000003.safetensors
cp "$last" good.safetensors
head -c 1000 good.safetensors > "$last"
"$FEDRUN" -q --resume "$p" --set output.dir=dmg --set rounds=6 2>err && die "resumed from a truncated checkpoint"
grep -q "round-000003.safetensors" err && grep -q "truncated" err || { cat err; die "unclear message for truncation"; }
cp good.safetensors "$last"
printf 'X' | dd of="$last" bs=1 seek=$(($(wc -c < good.safetensors) - 10)) conv=notrunc 2>/dev/null
"$FEDRUN" -q --resume "$p" --set output.dir=dmg --set rounds=6 2>err && die "resumed from a corrupted checkpoint"
grep -q "checksum mismatch" err || { cat err; die "unclear message for corruption"; }
"$FEDRUN" -q "$p" --set output.dir=init --set init="$work/$last" 2>err && die "started from a corrupted init"
grep -q "^fedrun: .*init: .*checksum mismatch" err || { cat err; die "unclear message for a corrupted init"; }
[ ! -e init/final.safetensors ] || die "a run with a bad init wrote a model"
# A good checkpoint works as init.
run_ok "$p" --set output.dir=init2 --set init="$work/good.safetensors" --set rounds=1
# Resuming where nothing was run is refused.
"$FEDRUN" -q --resume "$p" --set output.dir=nothing 2>err && die "resumed a missing run"
grep -q "holds no run" err || die "unclear message for a missing run"
echo "resume: SIGTERM and SIGKILL runs resumed to identical models; damaged checkpoints refused"
