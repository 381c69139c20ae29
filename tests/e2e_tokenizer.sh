#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
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
#  - fedrun validate writes no tokenizer and creates no directory;
#  - training text of only Unicode white space, control and invisible
#    (Default_Ignorable_Code_Point) characters is refused with one line
#    naming the files (SentencePiece would abort), words among them train.
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
ws_only() { # TEXT-EN TEXT-DE [TOKENIZER]: fedrun validate's exit status in $st
	for s in train dev test; do
		printf "$1" >ws/$s.en
		printf "$2" >ws/$s.de
	done
	st=0
	"$FEDRUN" validate "$p" --set "model.tokenizer=${3:-$spm}" \
		--set 'data={"src": "en", "tgt": "de", "dir": "'"$work"'/ws", "clients": [{"name": "w", "train": "train", "valid": "dev", "test": "test"}]}' \
		>ws.out 2>ws.err || st=$?
}
ws_only '  \n\t\n\001\n' ' \n\002\n\n'
[ "$st" -eq 2 ] || { cat ws.err; die "whitespace-only training text: exit $st, expected 2"; }
blank_msg="has only white space, control and invisible characters (Unicode White_Space, Default_Ignorable_Code_Point)"
grep -qF "the training text ('$work/ws/train.en', '$work/ws/train.de') $blank_msg" ws.err ||
	{ cat ws.err; die "whitespace-only training text: unclear message"; }
# The same for text of any other Unicode White_Space or
# Default_Ignorable_Code_Point character (SentencePiece aborted on U+3000,
# U+200B, U+FEFF, ...), each alone (as octal UTF-8 for printf), and all
# mixed: exit 2 and one line naming the files, never an abort.
all=
for c in '\011' '\013' '\014' '\015' '\302\205' '\302\240' '\341\232\200' \
	'\342\200\200' '\342\200\201' '\342\200\202' '\342\200\203' '\342\200\204' \
	'\342\200\205' '\342\200\206' '\342\200\207' '\342\200\210' '\342\200\211' \
	'\342\200\212' '\342\200\250' '\342\200\251' '\342\200\257' '\342\201\237' \
	'\343\200\200' '\302\255' '\315\217' '\330\234' '\341\205\237' '\341\236\264' \
	'\341\240\213' '\341\240\216' '\342\200\213' '\342\200\214' '\342\200\215' \
	'\342\200\216' '\342\200\217' '\342\200\252' '\342\200\256' '\342\201\240' \
	'\342\201\244' '\342\201\246' '\342\201\257' '\343\205\244' '\357\270\200' \
	'\357\270\217' '\357\273\277' '\357\276\240' '\360\233\262\240' '\363\240\200\201' \
	'\363\240\204\200' '\342\226\201' '\357\277\275' '\001\037\177' '\302\237'; do
	ws_only "$c$c\n $c\n" "$c\n$c $c\n"
	[ "$st" -eq 2 ] && [ "$(wc -l <ws.err)" -eq 1 ] && grep -qF "$blank_msg" ws.err &&
		grep -qF "$work/ws/train.en" ws.err ||
		{ cat ws.err; die "training text of $(printf "$c" | od -An -tx1) only: exit $st, expected 2 and one line saying so"; }
	all="$all$c "
done
ws_only "$all\n$all$all\n" "$all\n$all\n"
[ "$st" -eq 2 ] && grep -qF "$blank_msg" ws.err || { cat ws.err; die "training text of them all: exit $st"; }
# Words among those characters: the tokenizer trains.
line="Qu\302\240ick\343\200\200brown\342\200\213fox\342\200\203jumps\357\273\277over\342\200\250the\302\255lazy\tdog"
ws_only "$line\n$line zwei drei vier\n\343\200\200\n$line fünf sechs\n" "$line\neins zwei\n\342\200\213\nauf Wiedersehen\n" \
	'{"type": "sentencepiece", "vocab_size": 40}'
[ "$st" -eq 0 ] || { cat ws.err; die "words among Unicode spaces: exit $st, expected 0"; }
echo "tokenizer: kept in the run directory; moved runs translate and resume; init copies it"
