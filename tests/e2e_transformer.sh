#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# transformer end to end, on the synthetic copy task of
# examples/transformer-copy.json (2 clients, fedavg, tiny preset):
#  - the server model learns the task: test BLEU above 90 (the issue asks
#    for it within a minute on 2 cores; the time taken is printed);
#  - a short run gives the same final.safetensors for --threads 1 and 2,
#    and after SIGTERM + --resume; so do a one-client run of the small
#    preset, whose model computes on both threads, and a three-client one,
#    whose third client does;
#  - with `fedrun translate` (ABI 1.1) the trained model copies its input,
#    and the small model translates the same on 1 and 2 threads.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/examples/transformer-copy.json"
t0=$(date +%s)
run_ok --threads 2 "$p" --set output.dir=copy
t1=$(date +%s)
bleu=$(metric copy/metrics.jsonl bleu test)
chrf=$(metric copy/metrics.jsonl chrf test)
[ -n "$bleu" ] || die "no test BLEU in the metrics"
awk -v b="$bleu" 'BEGIN { exit !(b > 90) }' || die "copy task: test BLEU $bleu, not above 90"
for t in decoder.embed.weight encoder.layers.0.self_attn.q_proj.weight \
	decoder.layers.1.cross_attn.out_proj.bias; do
	grep -q "\"$t\"" copy/final.safetensors || die "no tensor $t in final.safetensors"
done

# Reproducibility of a short run (dropout on, so its stream counts too).
short="--set rounds=6 --set clients.steps=8 --set model.dropout=0.1 --set eval.every=3"
run_ok --threads 1 "$p" $short --set output.dir=a
run_ok --threads 2 "$p" $short --set output.dir=b
cmp a/final.safetensors b/final.safetensors || die "--threads 1 and 2 differ"
# The server's decoding runs on the run's threads: the same BLEU for both.
[ "$(metric a/metrics.jsonl bleu test)" = "$(metric b/metrics.jsonl bleu test)" ] ||
	die "test BLEU differs between --threads 1 and 2"

# One client, as in centralized training, computes on every thread (its
# kernels, and its matrix products in blocks that do not depend on the
# threads): the small preset's products are large enough to be cut.
one="--set data.synthetic.clients=1 --set model.preset=small --set rounds=2 --set clients.steps=4"
one="$one --set model.dropout=0.1 --set eval.every=0"
run_ok --threads 1 "$p" $one --set output.dir=one1
run_ok --threads 2 "$p" $one --set output.dir=one2
cmp one1/final.safetensors one2/final.safetensors || die "one client: --threads 1 and 2 differ"
# Three clients on 2 threads: two train side by side, then the third on
# both threads (run_parallel_for's second phase); the same model as on 1.
run_ok --threads 1 "$p" $one --set data.synthetic.clients=3 --set output.dir=three1
run_ok --threads 2 "$p" $one --set data.synthetic.clients=3 --set output.dir=three2
cmp three1/final.safetensors three2/final.safetensors || die "three clients: --threads 1 and 2 differ"

# SIGTERM once a checkpoint of round 2 exists, then --resume with the
# short run's 6 rounds: the same model as the uninterrupted run.
"$FEDRUN" -q --threads 2 "$p" $short --set output.dir=term --set rounds=400 \
	--set output.checkpoint_every=1 >/dev/null 2>term.err &
pid=$!
await_checkpoint term 2 $pid
kill -s TERM $pid
wait $pid
st=$?
[ "$st" -eq 130 ] || { cat term.err; die "SIGTERM: exit $st, expected 130"; }
done_round=$(ls term/checkpoints | tail -n 1 | sed 's/round-0*\([0-9]*\).*/\1/')
if [ "$done_round" -lt 6 ]; then
	run_ok --threads 1 --resume "$p" $short --set output.dir=term --set output.checkpoint_every=1
	cmp a/final.safetensors term/final.safetensors || die "SIGTERM + resume differs"
	resumed="and after SIGTERM + --resume"
else
	resumed="(the SIGTERM run reached round $done_round before the signal: resume not compared)"
fi

# fedrun translate, when the engine has it.
translated=
if "$FEDRUN" --help 2>&1 | grep -q "translate"; then
	printf 'w1 w2 w3 w4\nw5 w6 w7 w8 w9 w10\n' >in.txt
	"$FEDRUN" translate copy <in.txt >out.txt 2>tr.err || { cat tr.err; die "fedrun translate failed"; }
	cmp in.txt out.txt || { cat out.txt; die "the copy model does not copy"; }
	# The small model's translations are the same bits on 1 and 2 threads.
	"$FEDRUN" translate --threads 1 one2 <in.txt >one-t1.txt 2>tr.err || { cat tr.err; die "translate -t 1 failed"; }
	"$FEDRUN" translate --threads 2 one2 <in.txt >one-t2.txt 2>tr.err || { cat tr.err; die "translate -t 2 failed"; }
	cmp one-t1.txt one-t2.txt || die "fedrun translate: --threads 1 and 2 translate differently"
	# A source past the model's max_len (256) is cut to it with a warning
	# naming the line (memory grew with the square of the line), or, with
	# --long refuse, stops translate naming the line.
	awk 'BEGIN { for (i = 0; i < 300; i++) printf "w%d ", i % 9 + 1; print ""; print "w1 w2" }' >long.txt
	"$FEDRUN" translate copy <long.txt >long.out 2>tr.err || { cat tr.err; die "translate of a long line failed"; }
	[ "$(wc -l <long.out)" -eq 2 ] || die "a long line: $(wc -l <long.out) output lines, expected 2"
	grep -q "line 1: 300 source tokens, cut to the model's 256" tr.err || { cat tr.err; die "no warning for the cut line"; }
	[ "$(sed -n 2p long.out)" = "w1 w2" ] || die "the line after a cut one: '$(sed -n 2p long.out)'"
	st=0
	"$FEDRUN" translate --long refuse copy <long.txt >long.out 2>tr.err || st=$?
	[ "$st" -eq 2 ] || { cat tr.err; die "--long refuse: exit $st, expected 2"; }
	grep -q "line 1: transformer: a source of 300 tokens, more than the model's max_len (256)" tr.err ||
		{ cat tr.err; die "--long refuse: no message naming the line"; }
	# --long keep translates it whole, as evaluation does: no warning (a
	# model that cut it would report its limit, and translate would warn).
	# (That the translations are the evaluation's, to the bit, is checked
	# by repro/passban2022's results.sh on every --quick run.)
	"$FEDRUN" translate --long keep copy <long.txt >long.out 2>tr.err || { cat tr.err; die "--long keep failed"; }
	[ ! -s tr.err ] || { cat tr.err; die "--long keep: a message"; }
	[ "$(wc -l <long.out)" -eq 2 ] && [ "$(sed -n 2p long.out)" = "w1 w2" ] ||
		die "--long keep: $(wc -l <long.out) lines, the second '$(sed -n 2p long.out)'"
	translated=", fedrun translate copies"
fi
echo "transformer: copy task test BLEU $bleu chrF $chrf in $((t1 - t0)) s (wall, --threads 2);" \
	"identical models for --threads 1 and 2 $resumed$translated"
