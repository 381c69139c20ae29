#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# gru-lm outside training: the run keeps its vocabulary (RUN/vocab.txt, a
# different file there refused unless output.overwrite); fedrun score gives
# the run's own test loss on the test file, counts tokens and OOV words, and
# scores lines one by one with --per-line; fedrun sample is deterministic for
# a seed and greedy as the temperature goes to 0; data.tokenizer 13a cuts
# punctuation off words, in training and in scoring; clear errors (exit 2)
# for a run without final.safetensors or vocab.txt, a model that is not a
# language model, and bad input.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/gru_lm.json"
toy="$top_srcdir/examples/data/toy-english"
run_ok --threads 1 "$p" --set output.dir=lm --set rounds=2 --set eval.final_test=true \
	--set data.test="$toy/test.txt"

# The vocabulary is in the run directory, one entry per id.
[ -s lm/vocab.txt ] || die "no lm/vocab.txt"
V=$(sed -n 's/.*gru-lm: vocabulary \([0-9]*\),.*/\1/p' lm/log.txt)
[ "$(wc -l <lm/vocab.txt)" -eq "$V" ] || die "vocab.txt has $(wc -l <lm/vocab.txt) lines, V = $V"
[ "$(sed -n 2p lm/vocab.txt | cut -f1)" = "<eos>" ] || die "vocab.txt: <eos> is not id 1"

# score on the test file: the run's test loss and token count.
sum_run() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs cksum); }
before=$(sum_run lm)
"$FEDRUN" score lm <"$toy/test.txt" >s.txt 2>err || { cat err; die "score exited $?"; }
"$FEDRUN" sample --tokens 5 lm >/dev/null 2>err || { cat err; die "sample exited $?"; }
# score and sample read the run directory and write nothing there (a
# model made there without data once rewrote partition.tsv, and crashed)
[ "$(sum_run lm)" = "$before" ] || die "score or sample changed the run directory"
ce=$(awk -F'\t' '$1 == "cross_entropy" { print $2 }' s.txt)
ppl=$(awk -F'\t' '$1 == "perplexity" { print $2 }' s.txt)
tok=$(awk -F'\t' '$1 == "tokens" { print $2 }' s.txt)
oov=$(awk -F'\t' '$1 == "oov" { print $2 }' s.txt)
loss=$(metric lm/metrics.jsonl loss test)
[ -n "$ce" ] && [ -n "$loss" ] || die "no cross_entropy ($ce) or test loss ($loss): $(cat s.txt)"
awk -v a="$ce" -v b="$loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * b) }' ||
	die "score's cross-entropy $ce, the run's test loss $loss"
awk -v p="$ppl" -v c="$ce" 'BEGIN { d = p - exp(c); if (d < 0) d = -d; exit !(d <= 1e-9 * p) }' ||
	die "perplexity $ppl is not exp($ce)"
[ "$tok" = "$(metric lm/metrics.jsonl tokens test)" ] || die "score counted $tok tokens"
[ "$oov" = 0 ] || die "the test file has $oov OOV tokens by score"
# Words the vocabulary lacks are counted; blank lines are no sentence.
printf 'the zzqx dog\n\n  \nqqqz sleeps .\n' >oov.txt
"$FEDRUN" score lm <oov.txt >s2.txt || die "score of oov.txt failed"
grep -q '^oov	2$' s2.txt || die "expected oov 2: $(cat s2.txt)"
grep -q '^tokens	' s2.txt || die "no tokens line"

# --per-line: one log-probability per input line, each line on its own.
"$FEDRUN" score --per-line lm <oov.txt >pl.txt 2>pl.err || { cat pl.err; die "--per-line failed"; }
[ "$(wc -l <pl.txt)" -eq 4 ] || die "--per-line: $(wc -l <pl.txt) lines for 4"
[ "$(sed -n 2p pl.txt)" = "0	0" ] || die "--per-line: a blank line gave '$(sed -n 2p pl.txt)'"
[ "$(sed -n 1p pl.txt | cut -f2)" = 4 ] || die "--per-line: 'the zzqx dog' is not 4 tokens"
sed -n 4p oov.txt | "$FEDRUN" score --per-line lm >one.txt || die "score of one line failed"
[ "$(cat one.txt)" = "$(sed -n 4p pl.txt)" ] || die "a line's log-probability depends on the others"
awk -F'\t' 'NR == 1 { exit !($1 < 0) }' pl.txt || die "log-probability not negative: $(cat pl.txt)"

# sample: the same seed gives the same text, another seed other text;
# --tokens counts words and newlines; T -> 0 is the greedy choice.
"$FEDRUN" sample lm --seed 5 --tokens 60 >a.txt || die "sample failed"
"$FEDRUN" sample lm --seed 5 --tokens 60 >b.txt || die "sample failed"
"$FEDRUN" sample lm --seed 6 --tokens 60 >c.txt || die "sample failed"
cmp -s a.txt b.txt || die "sample --seed 5 twice differs"
cmp -s a.txt c.txt && die "--seed 5 and 6 gave the same text"
n=$(awk '{ n += NF + 1 } END { print n }' a.txt)
[ "$n" -eq 60 ] || [ "$n" -eq 61 ] || die "--tokens 60 gave $n tokens"
"$FEDRUN" sample lm -T 0 --tokens 40 >g0.txt || die "sample -T 0 failed"
"$FEDRUN" sample lm -T 1e-6 --seed 9 --tokens 40 >g1.txt || die "sample -T 1e-6 failed"
cmp -s g0.txt g1.txt || die "temperature 1e-6 differs from greedy: $(cat g0.txt) / $(cat g1.txt)"
"$FEDRUN" sample lm -T 0 --tokens 10 --prompt "the brave" >pr.txt || die "--prompt failed"
[ -s pr.txt ] || die "--prompt gave nothing"

# data.tokenizer 13a with lowercase: punctuation is cut off words (Unicode
# case folded) in training, recorded in the run's pipeline.json, and score
# reads text the same way.
printf 'Hello, World! The DOG sleeps.\nÉté, the dog runs.\n' >u.txt
run_ok --threads 1 "$p" --set output.dir=tok --set rounds=1 --set data.train="$PWD/u.txt" \
	--set data.valid="$PWD/u.txt" --set data.partition.clients=1 --set clients.fraction=1 \
	--set data.tokenizer=13a --set data.lowercase=true
for w in hello , world ! dog sleeps . été; do
	cut -f1 tok/vocab.txt | grep -qxF -- "$w" || die "13a: no '$w' in vocab.txt: $(cut -f1 tok/vocab.txt)"
done
grep -q '"tokenizer": *"13a"' tok/pipeline.json || die "pipeline.json does not record the tokenizer"
"$FEDRUN" score tok <u.txt >s3.txt || die "score of the 13a run failed"
grep -q '^oov	0$' s3.txt || die "13a: score read the training text with OOV words: $(cat s3.txt)"
# intl: every Unicode punctuation character, guillemets and the hyphen too.
printf '\302\253Bonjour\302\273, dit-il.\n' >fr.txt
run_ok --threads 1 "$p" --set output.dir=intl --set rounds=1 --set data.train="$PWD/fr.txt" \
	--set data.valid="$PWD/fr.txt" --set data.partition.clients=1 --set clients.fraction=1 \
	--set data.tokenizer=intl
for w in "$(printf '\302\253')" Bonjour "$(printf '\302\273')" , dit - il .; do
	cut -f1 intl/vocab.txt | grep -qxF -- "$w" || die "intl: no '$w' in vocab.txt: $(cut -f1 intl/vocab.txt)"
done
"$FEDRUN" validate "$p" --set data.tokenizer=bpe >/dev/null 2>err && die "tokenizer bpe accepted"
grep -q "whitespace|13a|intl\|whitespace, 13a\|13a" err || die "bad tokenizer: $(cat err)"

# A vocab.txt that is not the run's: refused, kept; replaced with overwrite.
mkdir fresh
echo "mine" >fresh/vocab.txt
"$FEDRUN" -q "$p" --set output.dir=fresh --set rounds=1 >/dev/null 2>err && die "foreign vocab.txt replaced"
grep -q "output.overwrite" err || die "no output.overwrite advice: $(cat err)"
[ "$(cat fresh/vocab.txt)" = mine ] || die "the user's vocab.txt was changed"
[ "$(ls -A fresh)" = vocab.txt ] || die "the refused run left files: $(ls -A fresh)"
run_ok "$p" --set output.dir=fresh --set rounds=1 --set output.overwrite=true
cmp -s fresh/vocab.txt lm/vocab.txt || die "overwrite did not write the run's vocabulary"

# Errors: exit 2 with a message naming what is wrong.
expect2() {
	what=$1
	pat=$2
	shift 2
	"$@" >/dev/null 2>err </dev/null
	st=$?
	[ "$st" -eq 2 ] || { cat err; die "$what: exit $st, expected 2"; }
	grep -q -- "$pat" err || die "$what: $(cat err)"
}
mkdir nofinal
cp lm/pipeline.json lm/vocab.txt nofinal/
expect2 "no final.safetensors" "final.safetensors" "$FEDRUN" score nofinal
expect2 "sample without final.safetensors" "final.safetensors" "$FEDRUN" sample nofinal
mkdir novocab
cp lm/pipeline.json lm/final.safetensors novocab/
expect2 "no vocab.txt" "vocab.txt" "$FEDRUN" score novocab
plugins="$top_builddir/tests/plugins/.libs"
cat >wr.json <<JSON
{"name": "wr", "seed": 1, "rounds": 1,
 "model": {"plugin": "wordrev", "path": "$plugins/wordrev.so", "dim": 3},
 "data": {"clients": 2},
 "clients": {"epochs": 1, "optimizer": {"name": "sgd", "lr": 0.1}},
 "output": {"dir": "wr"}}
JSON
run_ok --allow-plugin-paths wr.json
expect2 "score of a translation model" "not a language model" \
	"$FEDRUN" score --allow-plugin-paths wr
expect2 "sample of a translation model" "not a language model" \
	"$FEDRUN" sample --allow-plugin-paths wr
# An ABI 1.0 plugin (its ops table ends long before score) loads and is
# refused the same way.
sed 's/wordrev\.so/wordrev10.so/; s/"wordrev"/"wordrev10"/' wr.json >wr10.json
run_ok --allow-plugin-paths wr10.json --set output.dir=wr10
expect2 "score of an ABI 1.0 model" "ABI 1.0) is not a language model" \
	"$FEDRUN" score --allow-plugin-paths wr10
printf 'the dog\n\377 x\n' >bad.txt
"$FEDRUN" score lm <bad.txt >/dev/null 2>err
[ $? -eq 2 ] && grep -q "line 2: invalid UTF-8" err || die "invalid UTF-8: $(cat err)"
printf 'the\000dog\n' >nul.txt
"$FEDRUN" score lm <nul.txt >/dev/null 2>err
[ $? -eq 2 ] && grep -q "NUL" err || die "NUL byte: $(cat err)"
printf 'the dog sleeps\n' | "$FEDRUN" score --max-line-bytes 5 lm >/dev/null 2>err
[ $? -eq 2 ] && grep -q "max-line-bytes" err || die "--max-line-bytes: $(cat err)"
: | "$FEDRUN" score lm >/dev/null 2>err
[ $? -eq 2 ] && grep -q "too few" err || die "empty input: $(cat err)"
expect2 "sample --temperature -1" "temperature" "$FEDRUN" sample lm --temperature -1
expect2 "score --tokens" "usage" "$FEDRUN" score --tokens 3 lm
echo "lm tools: score = exp(test loss) $ppl ($tok tokens), sample deterministic and greedy at T -> 0"
