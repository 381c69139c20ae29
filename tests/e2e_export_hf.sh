#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fedrun export-hf on a fake encoder run (tests/test_encoder_hf make-run:
# the DistilBERT classifier fixture as the encoder plugin and the engine
# leave it, the embeddings frozen into hf/frozen.safetensors): the exported
# directory reloads to the fixture's bits; --round and --checkpoint; and
# each error with its message and exit status 2, nothing written.
. "$top_srcdir/tests/lib.sh"
helper="$top_builddir/tests/test_encoder_hf"
fx="$top_srcdir/tests/data/hf/distilbert-classify"
[ -x "$helper" ] || { echo "SKIP: no $helper (built with check)"; exit 77; }
"$helper" make-run "$fx" run || die "make-run failed"

# expect STATUS MESSAGE ARGS...: fedrun export-hf ARGS exits STATUS and
# says MESSAGE on stderr.
expect() {
	want=$1 msg=$2
	shift 2
	"$FEDRUN" export-hf "$@" >stdout.txt 2>err.txt
	got=$?
	[ "$got" -eq "$want" ] || { cat err.txt; die "export-hf $*: exit $got, expected $want"; }
	grep -qF -- "$msg" err.txt || { cat err.txt; die "export-hf $*: no '$msg'"; }
}

"$FEDRUN" export-hf run out 2>err.txt || { cat err.txt; die "export-hf exited $?"; }
for f in config.json model.safetensors vocab.txt tokenizer_config.json special_tokens_map.json; do
	[ -s "out/$f" ] || die "out/$f missing"
done
[ "$(ls out | wc -l)" -eq 5 ] || die "out has $(ls out | tr '\n' ' ')"
grep -q '"DistilBertForSequenceClassification"' out/config.json || die "architectures"
grep -q '"format":"pt"' out/model.safetensors || die "no format pt metadata"
"$helper" compare "$fx" out || die "the exported model does not reload to the fixture's bits"
cmp -s "$fx/vocab.txt" out/vocab.txt || die "vocab.txt differs"

# a checkpoint of a round, by --round and by --checkpoint
mkdir run/checkpoints
cp run/final.safetensors run/checkpoints/round-000004.safetensors
"$FEDRUN" export-hf --round 4 run r4 2>err.txt || { cat err.txt; die "--round 4"; }
"$helper" compare "$fx" r4 || die "--round 4: other bits"
"$FEDRUN" export-hf -c run/checkpoints/round-000004.safetensors run c4 2>err.txt ||
	{ cat err.txt; die "--checkpoint"; }

# errors
expect 2 "out exists and is not empty: not overwritten" run out
expect 2 "not a run directory (no pipeline.json)" . x1
mkdir notenc && echo '{}' >notenc/pipeline.json
expect 2 "no hf/fedrun.json: the run's model is not an encoder" notenc x1
mv run/final.safetensors final.keep
expect 2 "the run has not finished; its last checkpoint is round 4 (--round 4 exports it)" run x1
head -c 2000 final.keep >run/final.safetensors
expect 2 "truncated" run x1
expect 2 "no checksum over its header and data: not a checkpoint this fedrun wrote" \
	-c "$fx/model.safetensors" run x1
expect 2 "round-000009.safetensors" --round 9 run x1
expect 2 "--checkpoint and --round: give one" -c final.keep --round 4 run x1
expect 2 "expected RUN_DIR and DIR" run
[ ! -e x1 ] || die "x1 was written"
[ -z "$(ls -d x1.* out.* 2>/dev/null)" ] || die "left behind: $(ls -d x1.* out.*)"
echo "export-hf: reloads to the same bits; each error has its message and status 2"
