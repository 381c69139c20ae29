#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fedrun translate with the test-only model "wordrev" (reverses the words of
# each line): one output line per input line, empty lines kept, batches do
# not change the output, checkpoints of the run (fine-tuned ones too), and
# clear errors for a missing checkpoint, wrong shapes, a model without the
# translate op, and bad options.
. "$top_srcdir/tests/lib.sh"
plugins="$top_builddir/tests/plugins/.libs"
cat >p.json <<JSON
{"name": "wr", "seed": 1, "rounds": 2,
 "model": {"plugin": "wordrev", "path": "$plugins/wordrev.so", "dim": 3},
 "data": {"clients": 2},
 "clients": {"epochs": 2, "optimizer": {"name": "sgd", "lr": 0.1}},
 "finetune": {"steps": 3},
 "output": {"dir": "run"}}
JSON
run_ok --allow-plugin-paths p.json

printf 'a b c\n\none two  three\nx\n\n' >in.txt
"$FEDRUN" translate --allow-plugin-paths run <in.txt >out1.txt 2>err || { cat err; die "translate exited $?"; }
[ "$(wc -l <out1.txt)" -eq 5 ] || die "expected 5 output lines, got $(wc -l <out1.txt)"
[ "$(sed -n 1p out1.txt)" = "c b a" ] || die "line 1: '$(sed -n 1p out1.txt)', expected 'c b a'"
[ -z "$(sed -n 2p out1.txt)" ] || die "an empty input line gave '$(sed -n 2p out1.txt)'"
[ "$(sed -n 3p out1.txt)" = "three two one" ] || die "line 3: '$(sed -n 3p out1.txt)'"
[ -z "$(sed -n 5p out1.txt)" ] || die "the last empty line was not kept"
# Round trip: reversing twice gives the input (up to repeated spaces).
"$FEDRUN" translate --allow-plugin-paths run <out1.txt >back.txt || die "second translate failed"
sed 's/  */ /g' in.txt | cmp -s - back.txt || die "round trip differs: $(cat back.txt)"
# Batches of 1 and 2 give the same lines as the default.
for b in 1 2; do
	"$FEDRUN" translate --allow-plugin-paths --batch $b --beam 1 --len-penalty 0.6 --max-len-a 2 --max-len-b 5 \
		--threads 1 run <in.txt >outb.txt || die "--batch $b failed"
	cmp -s out1.txt outb.txt || die "--batch $b changed the output"
done
# A pipeline file instead of the run directory; a fine-tuned checkpoint.
"$FEDRUN" translate --allow-plugin-paths run/pipeline.json <in.txt | cmp -s - out1.txt || die "translate PIPELINE differs"
[ -s run/finetuned/client-1.safetensors ] || die "no run/finetuned/client-1.safetensors"
"$FEDRUN" translate --allow-plugin-paths -c run/finetuned/client-1.safetensors run <in.txt | cmp -s - out1.txt ||
	die "translate with a fine-tuned checkpoint failed"
# No input, no output.
[ -z "$("$FEDRUN" translate --allow-plugin-paths run </dev/null)" ] || die "output without input"

# expect STATUS TEXT ARGS...: fails unless translate exits STATUS with TEXT.
expect() {
	want=$1 text=$2
	shift 2
	"$FEDRUN" translate --allow-plugin-paths "$@" <in.txt >out 2>err
	got=$?
	[ "$got" -eq "$want" ] || { cat err; die "translate $*: exit $got, expected $want"; }
	grep -qF -- "$text" err || { cat err; die "translate $*: message lacks '$text'"; }
	[ ! -s out ] || die "translate $*: wrote output despite the error"
}
expect 2 "nope.safetensors" -c nope.safetensors run
expect 2 "nowhere: cannot open" nowhere
expect 2 "--beam: expected" --beam 0 run
expect 2 "usage" --bogus run
expect 2 "--batch: expected" --batch x run
run_ok --allow-plugin-paths p.json --set model.dim=5 --set output.dir=run5
expect 2 "tensor 'w': the model has F32 3, the file F32 5" -c run5/final.safetensors run
# Input is read line by line and checked as it comes: a NUL byte stops
# translate at once (from /dev/zero it used to grow to gigabytes), invalid
# UTF-8 and a line over --max-line-bytes are refused with the line number,
# and nothing is translated after the bad line's batch.
# expect_in STATUS TEXT ARGS... < INPUT: like expect, on the given input
expect_in() {
	want=$1 text=$2
	shift 2
	timeout 60 "$FEDRUN" translate --allow-plugin-paths "$@" >out 2>err
	got=$?
	[ "$got" -eq "$want" ] || { cat err; die "translate $*: exit $got, expected $want"; }
	[ -z "$text" ] || grep -qF -- "$text" err || { cat err; die "translate $*: message lacks '$text'"; }
}
expect_in 2 "standard input, line 1: a NUL byte at byte 1" run </dev/zero
printf 'a b\nc\0d\n' >bad.txt
expect_in 2 "standard input, line 2: a NUL byte at byte 2" --batch 1 run <bad.txt
[ "$(cat out)" = "b a" ] || die "the line before the NUL byte was not translated: '$(cat out)'"
printf 'a b\n\n\303\251 ok\nx \377 y\n' >bad.txt
expect_in 2 "standard input, line 4: invalid UTF-8 at byte 3" run <bad.txt
printf 'a b c\nabcdefghijk\n' >bad.txt
expect_in 2 "--max-line-bytes: standard input, line 2: longer than 10 bytes" --max-line-bytes 10 run <bad.txt
printf 'a b c\r\nabcdefghij\n' >ok.txt
expect_in 0 "" --max-line-bytes 10 run <ok.txt
[ "$(cat out)" = "$(printf 'c b a\nabcdefghij')" ] || die "CRLF or a line of exactly --max-line-bytes: '$(cat out)'"
expect 2 "--max-line-bytes: expected" --max-line-bytes 0 run
expect 2 "--long: expected cut, refuse or keep" --long maybe run
# An ABI 1.0 plugin (shorter ops table, garbage after it) runs, but cannot translate.
sed "s#wordrev.so#wordrev10.so#; s#\"wordrev\"#\"wordrev10\"#" p.json >p10.json
run_ok --allow-plugin-paths p10.json --set output.dir=r10
expect 1 "model 'wordrev10'" r10
grep -q "cannot translate: it has no translate op" err || die "no 'cannot translate' message"
# host->run_dir: a plugin writes a file into the run directory during
# create and records its (absolute) path in pipeline.json; validate gives no
# directory; translate, from another directory, finds the file.
"$FEDRUN" validate --allow-plugin-paths p.json --set model.marker=true --set output.dir=runm >/dev/null || die "validate failed"
[ -e runm ] && die "validate created the run directory"
run_ok --allow-plugin-paths p.json --set model.marker=true --set output.dir=runm
[ -s runm/marker.txt ] || die "the plugin's file is not in the run directory"
grep -q "\"marker_file\": \"/.*/runm/marker.txt\"" runm/pipeline.json ||
	die "pipeline.json lacks the absolute marker_file: $(grep marker runm/pipeline.json)"
mkdir elsewhere
(cd elsewhere && "$FEDRUN" translate --allow-plugin-paths ../runm <../in.txt) >outm.txt || die "translate from another directory failed"
cmp -s out1.txt outm.txt || die "translate with marker differs"
rm runm/marker.txt
expect 2 "marker.txt" runm
# Trust: a pipeline's "path" loads code, so without --allow-plugin-paths
# neither run, validate nor translate loads it (the dynamic linker's log
# shows no wordrev.so), and the message says how to allow it.
for cmd in "validate p.json" "run p.json --set output.dir=nopath" "translate run"; do
	st=0
	# shellcheck disable=SC2086
	LD_DEBUG=files "$FEDRUN" $cmd <in.txt >/dev/null 2>err || st=$?
	[ "$st" -eq 3 ] || { cat err; die "$cmd without --allow-plugin-paths: exit $st, expected 3"; }
	grep -q "loaded only with --allow-plugin-paths" err || { cat err; die "$cmd: no message about --allow-plugin-paths"; }
	! grep -q "file=.*wordrev.so" err || die "$cmd without --allow-plugin-paths loaded wordrev.so"
done
[ ! -e nopath ] || die "a refused run created its directory"
# Relative FEDRUN_PLUGIN_PATH entries are ignored, with a warning.
FEDRUN_PLUGIN_PATH=".:$FEDRUN_PLUGIN_PATH" "$FEDRUN" validate "$top_srcdir/examples/toy-fedavg.json" >/dev/null 2>err ||
	{ cat err; die "validate with a relative FEDRUN_PLUGIN_PATH entry failed"; }
grep -q "FEDRUN_PLUGIN_PATH entry '.' is relative: ignored" err || { cat err; die "no warning for a relative entry"; }
echo "translate: ok"
