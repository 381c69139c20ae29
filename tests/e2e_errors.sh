#!/bin/sh
# Failures during a run: a diverging run stops with one clear message
# naming the round, the client and the tensor, exit status 1, and keeps
# what it had written (metrics of the rounds done, the last checkpoint).
. "$top_srcdir/tests/lib.sh"
"$FEDRUN" -q "$top_srcdir/examples/toy-fedavg.json" --set output.dir=div \
	--set clients.optimizer.lr=1e6 --set output.checkpoint_every=1 2>err
st=$?
[ "$st" -eq 1 ] || { cat err; die "diverging run: exit $st, expected 1"; }
[ "$(wc -l < err)" -eq 1 ] || { cat err; die "expected one line of message"; }
grep -q "^fedrun: .*round [0-9]*, client [0-9]*: training produced non-finite values in tensor 'x'" err ||
	{ cat err; die "unclear message"; }
r=$(sed 's/.*round \([0-9]*\),.*/\1/' err)
last=$(ls div/checkpoints | tail -n 1)
[ "$last" = "round-$(printf %06d $((r - 1))).safetensors" ] || die "last checkpoint $last, failed in round $r"
n=$(grep -c '"client":null,"split":"train","metric":"train_loss"' div/metrics.jsonl)
[ "$n" -eq $((r - 1)) ] || die "metrics hold $n rounds, expected $((r - 1))"
[ ! -e div/final.safetensors ] || die "a failed run wrote a final model"
grep -q "^error: .*non-finite" div/log.txt || die "the log lacks the error"
# A missing pipeline file and an unreadable one.
"$FEDRUN" validate no-such.json 2>err; [ $? -eq 2 ] || die "missing file: wrong exit status"
grep -q "no-such.json: cannot open" err || die "missing file: unclear message"
# Usage errors.
"$FEDRUN" --threads 0 x.json 2>err; [ $? -eq 2 ] || die "--threads 0 accepted"
grep -q "threads: expected an integer in \[1, 1024\], got '0'" err || die "unclear --threads message"
"$FEDRUN" validate "$top_srcdir/examples/toy-fedavg.json" --set noequals 2>err; [ $? -eq 2 ] || die "bad --set accepted"
grep -q "expected PATH=VALUE" err || die "unclear --set message"
"$FEDRUN" --version | grep -q "plugin ABI 1.2" || die "--version"
"$FEDRUN" --help | grep -q "Exit status" || die "--help"
echo "a diverging run failed in round $r with a clear message and kept rounds 1..$((r - 1))"
