#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# repro/unigram.sh, the unigram baseline of the word language model tables
# (issue 38): its perplexity on hand-computed examples, maximum likelihood
# and add-one, gru-lm's targets (rows of the held-out stream, each row's
# first token not predicted), the vocabulary cap with fedrun's ties, the
# words <unk> and <eos> of a text, --lowercase; then against a gru-lm run:
# the vocabulary it writes (vocab.txt, counts included) is the run's, byte
# for byte, and its targets are the run's test tokens.
# shellcheck disable=SC2154 # top_srcdir: make check's; work: lib.sh's
# shellcheck source=tests/lib.sh
. "$top_srcdir/tests/lib.sh"
u=$top_srcdir/repro/unigram.sh
# train: a b a / (blank) / c a (CR) / b TAB d: a 3, b 2, c 1, d 1 and 3
# sentences, N = 10 tokens. test: a e / b / (empty) / c a b, the stream
# a e <eos> b <eos> c a b <eos> of n = 9 tokens.
printf 'a b a\n  \nc a\r\nb\td\n' >train.txt
printf 'a e\nb\n\nc a b\n' >test.txt
check() { # EXPECTED OPTIONS...
	want=$1
	shift
	got=$("$u" "$@" test.txt train.txt) || die "unigram.sh $*: exit $?"
	[ "$got" = "$want" ] || die "unigram.sh $*: '$got', expected '$want'"
}
T=$(printf '\t')
# --size 4: a and b; <unk> = c + d = 2. p: a 0.3, b 0.2, <unk> 0.2, <eos>
# 0.3. eval_batch 10: B = min(9 / 2, 10) = 4 rows of L = 2 (the last <eos>
# dropped): [a e] [<eos> b] [<eos> c] [a b]; targets e b c b, each 0.2:
# perplexity 5, 4 targets, 2 of them <unk>.
check "5${T}4${T}2${T}4${T}10" --size 4
# eval_batch 2: rows [a e <eos> b] [<eos> c a b]; targets e <eos> b c a b:
# (0.2^4 0.3^2)^(-1/6) = 4.367902324
check "4.367902324${T}6${T}2${T}4${T}10" --size 4 --eval-batch 2
# add-one: (c + 1) / (N + V) = 3/14 for e, b, c, b and 4/14 for <eos>, a:
# ((3/14)^4 (4/14)^2)^(-1/6) = 4.23994805
check "4.23994805${T}6${T}2${T}4${T}10" --size 4 --eval-batch 2 --add-one
# --size 5: c and d tie at 1, c first (bytes); d is <unk> (count 1). p: a
# 0.3, b 0.2, c 0.1, <unk> 0.1, <eos> 0.3; targets e <eos> b c a b:
# (0.1^2 0.3^2 0.2^2)^(-1/6) = 5.503212081
check "5.503212081${T}6${T}1${T}5${T}10" --size 5 --eval-batch 2
# no cap: no training token is <unk>, so the held-out e has probability 0
# by maximum likelihood (infinite perplexity), and 1/16 with add-one
check "inf${T}6${T}1${T}6${T}10" --eval-batch 2
# --min-count 2: c and d go to <unk> as with --size 4
check "4.367902324${T}6${T}2${T}4${T}10" --min-count 2 --eval-batch 2
# --lowercase: A B A is a b a; without it A and B are words of their own
printf 'A b A\nc a\r\nB\td\n' >train.txt
check "4.367902324${T}6${T}2${T}4${T}10" --size 4 --eval-batch 2 --lowercase
# the words <unk> and <eos> of a text are those tokens: "<eos>" ends no
# sentence but counts as one; "<unk>" counts for <unk>. train: a b a <eos>
# / a <unk> c: a 3, b 1, c 1, <unk> 1 (+ c and b dropped by --size 3: 3),
# <eos> 3 (two lines and the word), N = 9; p: a 3/9, <unk> 3/9, <eos> 3/9.
printf 'a b a <eos>\na <unk> c\n' >train.txt
printf '<unk> a <eos> b\n' >test.txt
# stream <unk> a <eos> b <eos>, n = 5: B = 2 rows of 2 ([<unk> a] [<eos>
# b]), targets a and b (<unk>): perplexity 3
check "3${T}2${T}1${T}3${T}9" --size 3

# Bad arguments.
for bad in "--size 1" "--size x" "--eval-batch 0" "--bogus" "--vocab-out"; do
	# shellcheck disable=SC2086 # the words are the arguments
	if "$u" $bad test.txt train.txt >/dev/null 2>err; then die "unigram.sh $bad: succeeded"; fi
done
if "$u" test.txt >/dev/null 2>err; then die "unigram.sh without a training file: succeeded"; fi
if "$u" test.txt missing.txt >/dev/null 2>err; then die "a missing file: succeeded"; fi
grep -q "missing.txt: cannot read" err || die "a missing file: $(cat err)"
# (a word and its <eos> give one target; blank lines no token)
[ "$(printf 'a\n' >one.txt && "$u" one.txt train.txt | cut -f 2)" = 1 ] || die "a one-word held-out text: not one target"
printf '  \n\n' >none.txt
if "$u" none.txt train.txt >/dev/null 2>err; then die "a held-out text without a token: succeeded"; fi
grep -q "0 tokens, too few to predict one" err || die "a held-out text without a token: $(cat err)"

# Against gru-lm: a run on the toy corpus with a capped vocabulary, a
# training file with the cases above (CR, tabs, blank lines, the words
# <unk> and <eos>), and a test split; its vocab.txt is the tool's, and its
# test tokens the tool's targets.
toy=$top_srcdir/examples/data/toy-english
{
	cat "$toy/train.txt"
	printf 'the\tcat <unk> sat\r\n   \nA <eos> dog\n'
} >train.txt
cat "$toy/test.txt" >test.txt
printf 'the zebra\t<unk>\n' >>test.txt
run_ok --threads 1 "$top_srcdir/tests/pipelines/gru_lm.json" --set rounds=1 \
	--set data.train="$work/train.txt" --set data.valid="$work/test.txt" \
	--set data.test="$work/test.txt" --set 'data.vocab={"size":40}' \
	--set eval.final_test=true --set output.dir=run --set output.checkpoint_every=0
got=$("$u" --size 40 --vocab-out vocab.txt test.txt train.txt) || die "unigram.sh on the run's data"
cmp vocab.txt run/vocab.txt || die "the vocabulary differs from the run's: $(diff vocab.txt run/vocab.txt | head -n 5)"
tokens=$(metric run/metrics.jsonl tokens test)
[ "$(echo "$got" | cut -f 2)" = "$tokens" ] || die "targets $(echo "$got" | cut -f 2), the run's test tokens $tokens"
echo "repro/unigram.sh: hand-computed perplexities, and gru-lm's vocabulary and targets"
