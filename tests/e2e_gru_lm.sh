#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# gru-lm end to end: a small federated run (2 GRU layers, dropout, 8
# clients) gives a byte-identical final.safetensors across runs, across
# --threads 1 and 2, and after SIGTERM + --resume (its vocab.txt too); its
# validation perplexity falls.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/gru_lm.json"
run_ok --threads 1 "$p" --set output.dir=a
run_ok --threads 1 "$p" --set output.dir=b
run_ok --threads 2 "$p" --set output.dir=c
cmp a/final.safetensors b/final.safetensors || die "two runs differ"
cmp a/final.safetensors c/final.safetensors || die "--threads 1 and 2 differ"
# Metrics agree too, apart from wall time and the training speed.
strip() { grep -v '"metric":"gru_lm.tokens_per_s"' "$1" | sed 's/,"wall":[^}]*//'; }
[ "$(strip a/metrics.jsonl)" = "$(strip c/metrics.jsonl)" ] || die "metrics differ across threads"
grep -q '"metric":"gru_lm.tokens_per_s"' a/metrics.jsonl || die "no tokens_per_s metric"
first=$(grep '"round":0,"client":null,"split":"valid","metric":"ppl"' a/metrics.jsonl |
	sed 's/.*"value":\([^,]*\),.*/\1/')
last=$(metric a/metrics.jsonl ppl valid)
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < 0.8 * f) }' ||
	die "validation perplexity went from $first to $last"
# The tensors are named as documented.
for t in embedding.weight gru.0.w_ih gru.1.b_hh decoder.weight decoder.bias; do
	grep -q "\"$t\"" a/final.safetensors || die "no tensor $t in final.safetensors"
done

# SIGTERM after the third checkpoint, then --resume with the original
# rounds: the same model as the uninterrupted run.
"$FEDRUN" -q --threads 2 "$p" --set output.dir=term --set rounds=400 >/dev/null 2>term.err &
pid=$!
await_checkpoint term 3 $pid
kill -s TERM $pid
wait $pid
st=$?
[ "$st" -eq 130 ] || { cat term.err; die "SIGTERM: exit $st, expected 130"; }
done_round=$(ls term/checkpoints | tail -n 1 | sed 's/round-0*\([0-9]*\).*/\1/')
[ "$done_round" -lt 6 ] || die "run went past round 6 before the signal"
run_ok --threads 1 --resume "$p" --set output.dir=term
cmp a/final.safetensors term/final.safetensors || die "SIGTERM + resume differs"
# The vocabulary is kept with the model, the same after the resume.
cmp a/vocab.txt term/vocab.txt || die "the resumed run's vocab.txt differs"
echo "gru-lm: identical models across runs, threads and a resumed run; valid ppl $first -> $last"
