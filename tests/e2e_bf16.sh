#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# model.precision "bf16" end to end, on the CPU backend (oneDNN): (a) a
# short gru-lm pipeline (the quickstart, 6 rounds, 8 clients, one a round,
# 1 epoch) gives byte-identical final.safetensors and metrics (apart from
# the timings) for --threads 1 and 2; (b) interrupted by SIGTERM and resumed
# with --resume it ends byte-identical to the uninterrupted run; (c) the
# whole quickstart in bf16 ends within 1% of FP32's test loss (a model
# that differs from FP32's); (d) the transformer copy task
# (examples/transformer-copy.json, unchanged) reaches test BLEU above 90;
# (e) with oneDNN capped below AVX512-BF16 (DNNL_MAX_CPU_ISA) validate and
# run refuse, naming model.precision and the missing CPU features, and an
# existing run directory is left as it was; (f) "tf32" on the CPU and an
# unknown value are refused with the choices. Skips (77) where this
# machine cannot run bf16 (libfedrun without oneDNN, a CPU without
# avx512_bf16).
. "$top_srcdir/tests/lib.sh"
unset DNNL_MAX_CPU_ISA
q="$top_srcdir/examples/quickstart.json"
bf16="--set model.precision=\"bf16\""

"$FEDRUN" -q validate "$q" $bf16 >/dev/null 2>probe.err || {
	cat probe.err
	grep -q -e 'precision bf16: .*built without oneDNN' -e 'precision bf16: .*this CPU has neither' \
		probe.err ||
		die "validate of the quickstart in bf16 failed"
	echo "SKIP: this machine cannot run bf16 (see the line above)"
	exit 77
}

# strip FILE: the metrics without the timings (wall time, training speed).
strip() { grep -v '"metric":"gru_lm.tokens_per_s"' "$1" | sed 's/,"wall":[^}]*//'; }

# (a) --threads 1 and 2 agree, bit for bit. One client a round, so that
# with 2 threads its worker's products are spread over both.
short="--set rounds=6 --set data.partition.clients=8 --set clients.fraction=0.125 \
	--set clients.epochs=1 --set eval.every=2"
run_ok --threads 1 "$q" $short $bf16 --set output.dir=t1
run_ok --threads 2 "$q" $short $bf16 --set output.dir=t2
grep -q '"precision": *"bf16"' t1/pipeline.json || die "t1/pipeline.json does not record precision bf16"
cmp t1/final.safetensors t2/final.safetensors || die "(a) bf16: --threads 1 and 2 differ"
[ "$(strip t1/metrics.jsonl)" = "$(strip t2/metrics.jsonl)" ] || die "(a) bf16: metrics differ across threads"
echo "(a) bf16: --threads 1 and 2 give the same $(wc -c <t1/final.safetensors) bytes and metrics"

# (b) SIGTERM once a checkpoint of round 3 or later exists (older ones are
# pruned), then --resume with the original rounds.
"$FEDRUN" -q --threads 2 "$q" $short $bf16 --set output.dir=term --set rounds=400 >/dev/null 2>term.err &
pid=$!
await_checkpoint term 3 $pid
kill -s TERM $pid
st=0; wait $pid || st=$?
[ "$st" -eq 130 ] || { cat term.err; die "(b) SIGTERM: exit $st, expected 130"; }
done_round=$(newest term)
[ "$done_round" -lt 6 ] || die "(b) the run went past round 6 before the signal"
run_ok --threads 1 --resume "$q" $short $bf16 --set output.dir=term
cmp t1/final.safetensors term/final.safetensors || die "(b) bf16: SIGTERM after round $done_round + resume differs"
[ "$(strip t1/metrics.jsonl)" = "$(strip term/metrics.jsonl)" ] || die "(b) bf16: the resumed metrics differ"
echo "(b) bf16: stopped after round $done_round and resumed: the same model and metrics"

c="$top_srcdir/examples/transformer-copy.json"
if sanitized; then
	echo "(c), (d): not run under the sanitizers (training to convergence; see tests/lib.sh)"
else
	# (c) The quickstart, FP32 and bf16.
	run_ok --threads 2 "$q" --set output.dir=q32
	run_ok --threads 2 "$q" $bf16 --set output.dir=q16
	l32=$(metric q32/metrics.jsonl loss test)
	l16=$(metric q16/metrics.jsonl loss test)
	[ -n "$l32" ] && [ -n "$l16" ] || die "(c) no test loss in the metrics"
	cmp -s q32/final.safetensors q16/final.safetensors && die "(c) the bf16 model is FP32's, bit for bit"
	awk -v a="$l32" -v b="$l16" 'BEGIN { d = b - a; if (d < 0) d = -d; exit !(d < 0.01 * a) }' ||
		die "(c) quickstart test loss: bf16 $l16, fp32 $l32: more than 1% apart"
	echo "(c) quickstart test loss: bf16 $l16, fp32 $l32"

	# (d) The copy task in bf16.
	run_ok --threads 2 "$c" $bf16 --set output.dir=copy
	bleu=$(metric copy/metrics.jsonl bleu test)
	awk -v b="$bleu" 'BEGIN { exit !(b > 90) }' || die "(d) copy task in bf16: test BLEU '$bleu', expected above 90"
	echo "(d) copy task in bf16: test BLEU $bleu"
fi

# (d2) A worker's context that ran its products on one thread and then
# on two: three clients on two threads train two at a time on one thread
# each, then the third on both. oneDNN made such a primitive with two
# threads from a descriptor made for one and threw
# std::bad_array_new_length (a segmentation fault or heap corruption
# before the fix, in the Passban quick reproduction's fine-tuning).
run_ok --threads 2 "$c" $bf16 --set data.synthetic.clients=3 --set rounds=1 \
	--set clients.steps=20 --set eval.every=1 --set output.dir=copy3
echo "(d2) three clients on two threads in bf16: ran"

# (e) No bf16 kernels: refused before anything is written, also into an
# existing run directory the pipeline may overwrite (the quickstart has
# output.overwrite true).
cap=AVX512_CORE_VNNI
want="model.precision \"bf16\": cpu backend: .*neither amx_bf16 nor avx512_bf16"
DNNL_MAX_CPU_ISA=$cap "$FEDRUN" -q validate "$q" $bf16 >/dev/null 2>err &&
	die "(e) validate in bf16 passed with DNNL_MAX_CPU_ISA=$cap"
grep -q "$want" err || { cat err; die "(e) validate: no message naming model.precision and the CPU features"; }
[ "$(wc -l <err)" -eq 1 ] || { cat err; die "(e) validate: more than one message"; }
(cd t1 && find . -type f | sort | xargs cksum) >before
DNNL_MAX_CPU_ISA=$cap "$FEDRUN" -q "$q" $short $bf16 --set output.dir=t1 >/dev/null 2>err &&
	die "(e) a bf16 run passed with DNNL_MAX_CPU_ISA=$cap"
grep -q "$want" err || { cat err; die "(e) run: no message naming model.precision and the CPU features"; }
[ "$(wc -l <err)" -eq 1 ] || { cat err; die "(e) run: more than one message"; }
(cd t1 && find . -type f | sort | xargs cksum) >after
cmp -s before after || die "(e) the refused run changed the existing run directory t1"
echo "(e) refused: $(cat err)"

# (f) tf32 is not a CPU precision; an unknown value gets the choices.
for f in "$q" "$c"; do
	"$FEDRUN" -q validate "$f" --set model.precision='"tf32"' >/dev/null 2>err &&
		die "(f) precision tf32 on the cpu backend accepted ($f)"
	grep -q 'model.precision "tf32": cpu backend: .*fp32 or bf16' err ||
		{ cat err; die "(f) tf32: no message naming model.precision and the CPU's choices"; }
done
echo "(f) $(cat err)"
"$FEDRUN" -q validate "$q" --set model.precision='"fp16"' >/dev/null 2>err &&
	die "(f) precision fp16 accepted"
grep -q 'model.precision: expected one of {fp32,bf16,tf32}, got "fp16"' err ||
	{ cat err; die "(f) fp16: no message with the choices"; }
echo "(f) $(cat err)"
