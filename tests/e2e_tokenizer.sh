#!/bin/sh
# A run keeps its tokenizer: the transformer on the copy task of
# examples/transformer-copy.json with a SentencePiece tokenizer (tiny, a few
# rounds of a few steps):
#  - RUN/spm.model is trained there and RUN/pipeline.json names it
#    relative to the run ("spm.model");
#  - the run directory can be moved: fedrun translate gives the same lines
#    from the new place (and from another working directory); a shorter run,
#    moved, resumes there to the same final model as an uninterrupted run,
#    and its spm.model is left as it was, also by a resume refused for
#    another vocab_size;
#  - a run that starts from another run's model (init) and tokenizer keeps
#    its own copy of the tokenizer: moved, it translates and resumes once
#    the other is gone;
#  - init with another tokenizer fails with a message that says so and
#    leaves no run behind (the corrected command needs no overwrite);
#  - fedrun validate writes no tokenizer and creates no directory.
# Skipped (77) when fedrun was built without SentencePiece.
. "$top_srcdir/tests/lib.sh"
grep -q '^#define HAVE_SENTENCEPIECE 1' "$top_builddir/config.h" || {
	echo "fedrun was built without SentencePiece"
	exit 77
}
p="$top_srcdir/examples/transformer-copy.json"
spm='{"type": "sentencepiece", "vocab_size": 27}'
short="--set clients.steps=10 --set eval.every=2"

run_ok "$p" --set "model.tokenizer=$spm" $short --set rounds=4 --set output.dir=run
[ -s run/spm.model ] || die "no run/spm.model"
grep -q '"model": "spm.model"' run/pipeline.json ||
	die "run/pipeline.json does not name spm.model relative to the run: $(grep -A7 '"tokenizer"' run/pipeline.json)"
printf 'w1 w2 w3\nw4 w5 w6 w7 w8\n' >in.txt
"$FEDRUN" translate run <in.txt >out1.txt 2>tr.err || { cat tr.err; die "translate run failed"; }
[ "$(wc -l <out1.txt)" -eq 2 ] || die "translate run: $(wc -l <out1.txt) lines, expected 2"

# Moved: the same translations, from here and from elsewhere.
mv run run2
"$FEDRUN" translate run2 <in.txt >out2.txt 2>tr.err || { cat tr.err; die "translate of the moved run failed"; }
cmp -s out1.txt out2.txt || die "the moved run translates differently"
mkdir elsewhere
(cd elsewhere && "$FEDRUN" translate ../run2 <../in.txt) >out3.txt 2>tr.err ||
	{ cat tr.err; die "translate ../run2 from another directory failed"; }
cmp -s out1.txt out3.txt || die "translate ../run2 from another directory differs"

# Resumed after a move: 2 rounds, moved, extended to the 4 of run2.
run_ok "$p" --set "model.tokenizer=$spm" $short --set rounds=2 --set output.dir=part
mv part part2
cp part2/spm.model spm.before
run_ok --resume "$p" --set "model.tokenizer=$spm" $short --set rounds=4 --set output.dir=part2
cmp -s spm.before part2/spm.model || die "--resume changed the run's spm.model"
cmp -s run2/final.safetensors part2/final.safetensors ||
	die "the moved and resumed run differs from the uninterrupted one"
grep -q '"dir": "part2"' part2/pipeline.json || die "part2/pipeline.json lacks the new output.dir"
# A resume the core refuses (another vocab_size) leaves the run's
# tokenizer as it was: it is reused on --resume, never trained again.
"$FEDRUN" -q --resume "$p" --set 'model.tokenizer={"type": "sentencepiece", "vocab_size": 30}' \
	$short --set rounds=5 --set output.dir=part2 >/dev/null 2>refused.err &&
	die "a resume with another vocab_size was accepted"
grep -q "cannot resume: the pipeline's 'model' differs" refused.err ||
	{ cat refused.err; die "the refused resume does not say why"; }
cmp -s spm.before part2/spm.model || die "a refused --resume replaced the run's spm.model"

# Starting from run2's model and tokenizer: a copy of the tokenizer.
from="--set init=$work/run2/final.safetensors --set model.tokenizer.model=$work/run2/spm.model"
"$FEDRUN" validate "$p" --set "model.tokenizer=$spm" $short $from --set output.dir=v >/dev/null 2>v.err ||
	{ cat v.err; die "validate with a given tokenizer failed"; }
"$FEDRUN" validate "$p" --set "model.tokenizer=$spm" --set output.dir=v >/dev/null 2>v.err ||
	{ cat v.err; die "validate with a tokenizer to train failed"; }
[ -e v ] && die "validate created the run directory"
run_ok "$p" --set "model.tokenizer=$spm" $short --set rounds=2 $from --set output.dir=ft
cmp -s run2/spm.model ft/spm.model || die "ft/spm.model is not a copy of run2/spm.model"
grep -q '"model": "spm.model"' ft/pipeline.json || die "ft/pipeline.json does not name its own spm.model"
run_ok "$p" --set "model.tokenizer=$spm" $short --set rounds=3 $from --set output.dir=ft3
rm -rf run2
mv ft ftm
"$FEDRUN" translate ftm <in.txt >out4.txt 2>tr.err || { cat tr.err; die "translate of the moved ftm without run2 failed"; }
[ "$(wc -l <out4.txt)" -eq 2 ] || die "translate ftm: $(wc -l <out4.txt) lines, expected 2"
# ... and resumes without it (its own copy is the tokenizer), to the
# model an uninterrupted run of 3 rounds gives.
run_ok --resume "$p" --set "model.tokenizer=$spm" $short --set rounds=3 $from --set output.dir=ftm
cmp -s ftm/final.safetensors ft3/final.safetensors ||
	die "ftm (ft moved), resumed without run2, differs from the uninterrupted ft3"
# A resume that names another tokenizer file than the run's is refused.
cp ftm/spm.model ft.before
head -c 100 ftm/spm.model >other.model
"$FEDRUN" -q --resume "$p" --set "model.tokenizer=$spm" $short --set rounds=4 \
	--set init="$work/run2/final.safetensors" --set model.tokenizer.model="$work/other.model" \
	--set output.dir=ftm >/dev/null 2>other.err && die "a resume with another tokenizer file was accepted"
grep -qF "model.tokenizer.model $work/other.model is another tokenizer than the run's" other.err ||
	{ cat other.err; die "the resume with another tokenizer: the message does not say so"; }
cmp -s ft.before ftm/spm.model || die "a refused --resume replaced ftm/spm.model"

# Another tokenizer (a words vocabulary: 24 entries, not 27) than init's.
"$FEDRUN" -q "$p" $short --set rounds=1 --set init="$work/ftm/final.safetensors" \
	--set output.dir=bad >/dev/null 2>bad.err && die "init with another tokenizer was accepted"
grep -qF "tensor 'decoder.embed.weight' is 27x64 in $work/ftm/final.safetensors, the model has 24x64" bad.err ||
	{ cat bad.err; die "init mismatch: the message does not name the tensor and shapes"; }
grep -qF "init run's tokenizer? set model.tokenizer.model to $work/ftm/spm.model" bad.err ||
	{ cat bad.err; die "init mismatch: the message does not name the tokenizer to use"; }
# The refused init left no run behind: the corrected command runs as is.
[ -e bad/pipeline.json ] && die "a refused init left bad/pipeline.json"
run_ok "$p" --set "model.tokenizer=$spm" $short --set rounds=1 --set init="$work/ftm/final.safetensors" \
	--set model.tokenizer.model="$work/ftm/spm.model" --set output.dir=bad
# Text SentencePiece cannot learn from (whitespace and control characters
# only) is refused with a message; SentencePiece would abort the process.
mkdir ws
for s in train dev test; do
	printf '  \n\t\n\001\n' >ws/$s.en
	printf ' \n\002\n\n' >ws/$s.de
done
st=0
"$FEDRUN" validate "$p" --set "model.tokenizer=$spm" \
	--set 'data={"src": "en", "tgt": "de", "dir": "'"$work"'/ws", "clients": [{"name": "w", "train": "train", "valid": "dev", "test": "test"}]}' \
	2>ws.err || st=$?
[ "$st" -eq 2 ] || { cat ws.err; die "whitespace-only training text: exit $st, expected 2"; }
grep -q "the training text has only whitespace and control characters" ws.err ||
	{ cat ws.err; die "whitespace-only training text: unclear message"; }
echo "tokenizer: kept in the run directory; moved runs translate and resume; init copies it"
