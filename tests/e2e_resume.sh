#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Interrupted runs: SIGTERM (checkpoint at the round's end, exit 130) and
# SIGKILL (dies anywhere) are both resumed with --resume to the same
# final.safetensors as an uninterrupted run, also without periodic
# checkpoints and when killed before the first; a complete run is left as
# it is. Damaged checkpoints (data, header, checksum entry, a renamed file)
# are refused with a clear message.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/repro.json"
run_ok --threads 2 "$p" --set output.dir=ref

# interrupt SIGNAL DIR: starts a run and signals it once it has a
# checkpoint of round 3 or later (older ones are pruned, so any will do);
# prints the exit status.
interrupt() {
	"$FEDRUN" -q --threads 2 "$p" --set output.dir="$2" --set rounds=400 >/dev/null 2>"$2.err" &
	pid=$!
	await_checkpoint "$2" 3 $pid
	kill -s "$1" $pid
	wait $pid
	echo $?
}
# The interrupted runs had rounds=400; resuming with the original 24 rounds
# is allowed ("rounds" may change on resume) as long as fewer are done.
st=$(interrupt TERM term)
[ "$st" -eq 130 ] || { cat term.err; die "SIGTERM: exit $st, expected 130"; }
grep -q "continue with --resume and the same arguments (its --set options, output.dir among them)" term.err ||
	die "SIGTERM: no resume hint naming the --set options"
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

# at_round DIR N: waits (up to 30 s) until DIR's metrics reach round N.
at_round() {
	i=0
	while ! grep -q "^{\"round\":$2," "$1/metrics.jsonl" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.05; i=$((i + 1))
	done
}

# SIGTERM without periodic checkpoints (checkpoint_every 0): the signal's
# checkpoint is kept, and the run resumes from it.
"$FEDRUN" -q --threads 2 "$p" --set output.dir=term0 --set rounds=400 \
	--set output.checkpoint_every=0 >/dev/null 2>term0.err &
pid=$!
at_round term0 3
kill -s TERM $pid
st=0; wait $pid || st=$?
[ "$st" -eq 130 ] || { cat term0.err; die "SIGTERM, checkpoint_every 0: exit $st, expected 130"; }
[ "$(newest term0)" -ge 3 ] || die "SIGTERM, checkpoint_every 0: the signal's checkpoint is gone"
run_ok --threads 2 --resume "$p" --set output.dir=term0 --set output.checkpoint_every=0
cmp ref/final.safetensors term0/final.safetensors || die "SIGTERM (checkpoint_every 0) + resume differs"

# Killed before its first checkpoint: --resume starts it again from round
# 0, with a notice, to the same model and metrics with each round once.
# (400 rounds: the 24 of the pipeline, without checkpoints, could all end
# before a loaded machine's poll sees round 2.)
"$FEDRUN" -q --threads 2 "$p" --set output.dir=early --set output.checkpoint_every=1000 \
	--set rounds=400 >/dev/null 2>&1 &
pid=$!
at_round early 2
kill -s KILL $pid
wait $pid || true
[ "$(newest early)" -eq 0 ] || die "the early run wrote a checkpoint"
"$FEDRUN" -q --threads 2 --resume "$p" --set output.dir=early --set output.checkpoint_every=1000 \
	>/dev/null 2>early.err || { cat early.err; die "resume of a run killed before its first checkpoint failed"; }
grep -q "has no checkpoint (the run stopped before its first): starting it again from round 0" early.err ||
	{ cat early.err; die "no notice that the run starts again"; }
cmp ref/final.safetensors early/final.safetensors || die "the restarted run differs"
n=$(grep -c '"client":null,"split":"train","metric":"train_loss"' early/metrics.jsonl)
[ "$n" -eq 24 ] || die "the restarted run's metrics hold $n round summaries, expected 24"

# A complete run: --resume says so and changes nothing; fewer rounds than
# it has are refused; more extend it.
cp ref/metrics.jsonl ref.metrics
cp ref/pipeline.json ref.pipeline
"$FEDRUN" -q --resume "$p" --set output.dir=ref >/dev/null 2>done.err ||
	{ cat done.err; die "--resume of a complete run failed"; }
grep -q "is complete (24 rounds): nothing to do" done.err || { cat done.err; die "no 'complete' message"; }
cmp -s ref.metrics ref/metrics.jsonl || die "--resume of a complete run changed its metrics"
cmp -s ref.pipeline ref/pipeline.json || die "--resume of a complete run changed its pipeline.json"
"$FEDRUN" -q --resume "$p" --set output.dir=ref --set rounds=20 >/dev/null 2>fewer.err &&
	die "--resume with fewer rounds than done was accepted"
grep -q "is at round 24 already, past rounds 20" fewer.err || { cat fewer.err; die "unclear message for fewer rounds"; }
cmp -s ref.metrics ref/metrics.jsonl || die "a refused --resume changed the metrics"

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
# The checksum covers the header: a checkpoint whose round was edited in
# place is refused; one whose checksum entry was damaged (its key) is not
# resumed, and as init it is read with a warning that nothing verifies it;
# a round that disagrees with the file's name is refused.
cp good.safetensors "$last"
perl -0777 -pi -e 's/"fedrun.round":"3"/"fedrun.round":"9"/' "$last"
cmp -s good.safetensors "$last" && die "the round edit did not apply"
"$FEDRUN" -q --resume "$p" --set output.dir=dmg --set rounds=12 2>err && die "resumed from an edited round"
grep -q "checksum mismatch" err || { cat err; die "unclear message for an edited round"; }
cp good.safetensors "$last"
perl -0777 -pi -e 's/"fedrun.checksum"/"fedrun.checksuM"/' "$last"
"$FEDRUN" -q --resume "$p" --set output.dir=dmg --set rounds=6 2>err && die "resumed without a checksum"
grep -q "no checksum over its header and data" err || { cat err; die "unclear message for a damaged checksum key"; }
"$FEDRUN" -q "$p" --set output.dir=init3 --set init="$work/$last" --set rounds=1 2>err ||
	{ cat err; die "init without a checksum failed"; }
grep -q "has no fedrun checksum.*nothing verifies its contents" err || { cat err; die "init without a checksum: no warning"; }
cp good.safetensors "$last"
mv "$last" dmg/checkpoints/round-000004.safetensors
"$FEDRUN" -q --resume "$p" --set output.dir=dmg --set rounds=6 2>err && die "resumed a renamed checkpoint"
grep -q "fedrun.round is 3, the file's name says 4" err || { cat err; die "unclear message for a renamed checkpoint"; }
mv dmg/checkpoints/round-000004.safetensors "$last"
# A good checkpoint works as init.
run_ok "$p" --set output.dir=init2 --set init="$work/good.safetensors" --set rounds=1
# Resuming where nothing was run is refused.
"$FEDRUN" -q --resume "$p" --set output.dir=nothing 2>err && die "resumed a missing run"
grep -q "holds no run" err || die "unclear message for a missing run"
# A resumed run's "wall" goes on from the last round it keeps, so that the
# column counts the time the run ran and never goes back: with round 3's
# wall set to 1000 s, the resumed rounds are recorded at 1000 s or later.
run_ok "$p" --set output.dir=wall --set rounds=3
perl -pi -e 's/"wall":[0-9.]+/"wall":1000.000/ if /^\{"round":3,/' wall/metrics.jsonl
grep -q '^{"round":3,.*"wall":1000.000}$' wall/metrics.jsonl || die "the wall edit did not apply"
run_ok --resume "$p" --set output.dir=wall --set rounds=6
sed -n 's/^{"round":[4-6],.*"wall":\([0-9.]*\)}$/\1/p' wall/metrics.jsonl >walls
[ -s walls ] || die "the resumed run recorded no wall time"
awk '$1 < 1000 { bad = 1 } END { exit bad }' walls || die "a resumed round's wall in metrics.jsonl is before the checkpoint's"
awk -F, 'NR > 1 && $1 > 3 { n++; if ($9 < 1000) bad = 1 } END { exit bad || !n }' wall/metrics.csv ||
	die "a resumed round's wall in metrics.csv is before the checkpoint's"
echo "resume: SIGTERM and SIGKILL runs resumed to identical models; damaged checkpoints refused; wall time goes on"
