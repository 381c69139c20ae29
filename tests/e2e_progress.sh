#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What a run says while it runs: off a terminal one flushed line per round
# ("round r/R ... elapsed ... ETA ...") on stderr and in RUN/log.txt, a
# line as each setup and final phase starts, none of them on stderr with
# -q while the results still print on stdout; the first SIGINT is
# acknowledged at once and the run stops with a checkpoint (exit 130); a
# resumed run's summary starts from the loss before round 1 of the whole
# run. On a terminal (script(1)), the line is rewritten in place.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/repro.json"

# rounds 6, eval every 4: rounds 4 and 6 have a valid loss, the others not.
"$FEDRUN" --threads 2 "$p" --set output.dir=a --set rounds=6 >out 2>err ||
	{ cat err; die "run failed"; }
n=$(grep -c '^round [0-9]*/6 ' err)
[ "$n" -eq 6 ] || { cat err; die "stderr holds $n round lines, expected 6"; }
for r in 1 2 3 4 5 6; do
	[ "$(grep -c "^round $r/6  train loss [0-9.]*  .*elapsed [0-9]*m[0-9][0-9]s  ETA [0-9]*m[0-9][0-9]s$" err)" -eq 1 ] ||
		{ cat err; die "no single round $r/6 line with elapsed and ETA on stderr"; }
done
grep -q "^round 4/6  train loss [0-9.]*  valid loss [0-9.]*  " err ||
	{ cat err; die "round 4's line lacks its valid loss"; }
grep -q "^round 1/6 .* samples/s  elapsed" err || { cat err; die "no samples/s on round 1's line"; }
# a text model names its unit (samples_unit): gru-lm counts tokens
"$FEDRUN" --threads 1 "$top_srcdir/tests/pipelines/gru_lm.json" --set rounds=1 \
	--set output.dir=lm >/dev/null 2>lm.err || { cat lm.err; die "gru-lm run failed"; }
grep -q "^round 1/1 .* [0-9]* tokens/s  elapsed" lm.err || { cat lm.err; die "gru-lm: no tokens/s"; }
tr -d '\n' <err | grep -q "$(printf '\r')" && die "a \\r on stderr off a terminal"
n=$(grep -c '] info: round [0-9]*/6 .*elapsed .*ETA ' a/log.txt)
[ "$n" -eq 6 ] || { cat a/log.txt; die "log.txt holds $n round lines, expected 6"; }
# The phases, each as it starts, on stderr and in log.txt.
for phase in "creating model 'meanest': loading its data" "starting 2 worker threads for 40 clients (20 a round)" \
	"evaluating the initial model on valid (round 0)" "final evaluation on test" "writing a/final.safetensors"; do
	grep -qF "$phase ..." err || { cat err; die "stderr lacks \"$phase ...\""; }
	grep -qF "] info: $phase ..." a/log.txt || { cat a/log.txt; die "log.txt lacks \"$phase ...\""; }
done
grep -q "^repro: 6 rounds, valid loss 525 -> " out || { cat out; die "no summary on stdout"; }

# -q: nothing of that on stderr (the warning stays), all of it in log.txt,
# the summary on stdout.
"$FEDRUN" -q --threads 2 "$p" --set output.dir=q --set rounds=6 >out 2>err ||
	{ cat err; die "-q: run failed"; }
grep -v '^fedrun: warning: ' err && die "-q: progress or status lines on stderr"
[ "$(grep -c '] info: round [0-9]*/6 ' q/log.txt)" -eq 6 ] || die "-q: log.txt lacks the round lines"
grep -q "] info: final evaluation on test ..." q/log.txt || die "-q: log.txt lacks the phases"
grep -q "^repro: 6 rounds, valid loss 525 -> " out || { cat out; die "-q: no summary on stdout"; }
cmp a/final.safetensors q/final.safetensors || die "-q changed the model"

# -q with fine-tuning and the model-by-domain table: the table prints.
cat >ft.json <<'JSON'
{"name": "ft", "seed": 3, "rounds": 2,
 "model": {"plugin": "meanest", "problem": "gaussian", "dim": 4},
 "data": {"seed": 5, "groups": [
   {"clients": 1, "name": "a", "mean": 0, "samples": 40, "valid_samples": 30},
   {"clients": 1, "name": "b", "mean": 2, "samples": 40, "valid_samples": 30}]},
 "clients": {"epochs": 1, "batch": 10, "optimizer": {"name": "sgd", "lr": 0.05}},
 "eval": {"clients": true, "matrix": true},
 "finetune": {"epochs": 1, "optimizer": {"name": "sgd", "lr": 0.2}},
 "output": {"dir": "ft"}}
JSON
"$FEDRUN" -q ft.json >out 2>err || { cat err; die "-q, finetune: run failed"; }
[ -s err ] && { cat err; die "-q, finetune: stderr not empty"; }
grep -q "^loss on test (rows: models, columns: domains)" out || { cat out; die "-q hid the table"; }
grep -q "^ft: 2 rounds" out || { cat out; die "-q, finetune: no summary"; }
grep -q "] info: fine-tuning 2 clients from the final model ..." ft/log.txt ||
	die "log.txt lacks the fine-tuning phase"
grep -q "] info: model-by-domain table: 3 models on 2 clients' test ..." ft/log.txt ||
	die "log.txt lacks the table's phase"

# at_round DIR N: waits (up to 30 s) until DIR's metrics reach round N.
at_round() {
	i=0
	while ! grep -q "^{\"round\":$2," "$1/metrics.jsonl" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.05; i=$((i + 1))
	done
}

# SIGINT off a terminal: acknowledged once, exit 130, a checkpoint.
"$FEDRUN" --threads 2 "$p" --set output.dir=int --set rounds=400 >/dev/null 2>int.err &
pid=$!
at_round int 3
kill -s INT $pid
st=0; wait $pid || st=$?
[ "$st" -eq 130 ] || { cat int.err; die "SIGINT: exit $st, expected 130"; }
[ "$(grep -c '^fedrun: stopping after this round (a checkpoint is written); Ctrl-C again to abort$' int.err)" -eq 1 ] ||
	{ cat int.err; die "SIGINT: no single acknowledgement line"; }
ls int/checkpoints/round-*.safetensors >/dev/null 2>&1 || die "SIGINT: no checkpoint"

# Resumed with the 24 rounds of the pipeline: the summary starts from the
# loss before round 1, as the uninterrupted run's does.
"$FEDRUN" -q --threads 2 "$p" --set output.dir=ref >ref.out 2>/dev/null || die "reference run failed"
"$FEDRUN" -q --threads 2 --resume "$p" --set output.dir=int >res.out 2>res.err ||
	{ cat res.err; die "resume failed"; }
cmp ref/final.safetensors int/final.safetensors || die "SIGINT + resume differs"
start() { sed -n 's/.*valid loss \([^ ]*\) -> .*/\1/p' "$1"; }
[ -n "$(start ref.out)" ] && [ "$(start res.out)" = "$(start ref.out)" ] ||
	{ cat ref.out res.out; die "the resumed summary's start loss differs from the run's"; }
grep -q "] info: resuming from round [0-9]* (checkpoints/round-[0-9]*.safetensors) ..." int/log.txt ||
	die "log.txt lacks the resume phase"

# On a terminal: the line rewritten in place (\r ... ESC[K); a SIGINT's
# acknowledgement on a line of its own.
if ! script -qec true /dev/null >/dev/null 2>&1; then
	echo "SKIP (part): no script(1) to give fedrun a terminal"
	exit 0
fi
script -qec "'$FEDRUN' --threads 2 '$p' --set output.dir=tty --set rounds=6 2>&1 >/dev/null" /dev/null >tty.out ||
	{ cat tty.out; die "terminal: run failed"; }
cr=$(printf '\r')
esc=$(printf '\033')
[ "$(grep -o "${cr}round [0-9]*/6 [^$cr]*elapsed [0-9]*m[0-9][0-9]s  ETA [0-9]*m[0-9][0-9]s${esc}\[K" tty.out | wc -l)" -eq 6 ] ||
	{ od -c tty.out | head -40; die "terminal: not 6 rewritten round lines"; }
cat >tty.sh <<EOF
'$FEDRUN' --threads 2 '$p' --set output.dir=ttyint --set rounds=400 >/dev/null &
pid=\$!
i=0
while ! grep -q '^{"round":3,' ttyint/metrics.jsonl 2>/dev/null && [ \$i -lt 600 ]; do
	sleep 0.05; i=\$((i + 1))
done
kill -s INT \$pid
wait \$pid
echo "status \$?"
EOF
script -qec "sh tty.sh" /dev/null >ttyint.out
grep -q "status 130" ttyint.out || { cat ttyint.out; die "terminal SIGINT: not exit 130"; }
grep -q "^fedrun: stopping after this round (a checkpoint is written); Ctrl-C again to abort" ttyint.out ||
	{ od -c ttyint.out | tail -20; die "terminal SIGINT: no acknowledgement on a line of its own"; }
echo "progress: 6 round lines on stderr and in log.txt, -q keeps the results, SIGINT acknowledged"
