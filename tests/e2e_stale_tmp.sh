#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A run killed while it wrote a file (SIGKILL, or a second signal during a
# checkpoint's write) leaves the temporary file of that write beside it,
# NAME.tmp.PID, as big as a checkpoint; the next run or resume in that
# directory removes those of a PID no process has, with one line of log,
# and goes on as without them. A file of a live process, and files that
# only look like fedrun's (another name, folder or spelling of the PID),
# stay.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/repro.json"
run_ok --threads 2 "$p" --set output.dir=ref --set rounds=3

# A PID that no process has: a child's that has exited.
sh -c 'exit 0' &
dead=$!
wait $dead
kill -0 $dead 2>/dev/null && die "PID $dead of an exited child is alive"

# t: ref killed while it wrote round 3's checkpoint, after round 3's
# metrics; the writes it died in left their temporary files.
cp -R ref t
rm t/final.safetensors
mv t/checkpoints/round-000003.safetensors "t/checkpoints/round-000003.safetensors.tmp.$dead"
stale="checkpoints/round-000003.safetensors.tmp.$dead pipeline.json.tmp.$dead
metrics.jsonl.tmp.$dead final.safetensors.tmp.$dead"
for f in $stale; do
	[ -e "t/$f" ] || echo partial >"t/$f"
done
# Not fedrun's temporaries, or not stale: these stay.
keep="checkpoints/round-000003.safetensors.tmp.$dead.bak checkpoints/round-3.safetensors.tmp.$dead
checkpoints/round-000003.safetensors.tmp.0$dead checkpoints/round-000003.safetensors.tmp.
checkpoints/metrics.jsonl.tmp.$dead notes.txt.tmp.$dead metrics.jsonl.tmp.x$dead
pipeline.json.tmp.$dead.1 checkpoints/round-000002.safetensors.tmp.$$"
for f in $keep; do
	echo mine >"t/$f"
done
mkdir "t/eval_matrix.tsv.tmp.$dead"

run_ok --threads 2 --resume "$p" --set output.dir=t --set rounds=3
cmp ref/final.safetensors t/final.safetensors || die "the resumed run differs"
for f in $stale; do
	[ ! -e "t/$f" ] || die "the stale temporary file $f is still there"
done
for f in $keep; do
	[ "$(cat "t/$f")" = mine ] || die "the resume removed or changed $f, not a stale temporary file of fedrun's"
done
[ -d "t/eval_matrix.tsv.tmp.$dead" ] || die "the resume removed a directory"
n=$(grep -c "removed 4 temporary files that a killed fedrun left" "$work/stderr")
[ "$n" -eq 1 ] || { cat "$work/stderr"; die "$n lines, not one, say what was removed"; }
grep -q "removed 4 temporary files" t/log.txt || die "log.txt does not say what was removed"

# A fresh run in a directory where a run was killed while it wrote its
# pipeline.json: that file goes too.
mkdir f
echo partial >"f/pipeline.json.tmp.$dead"
run_ok --threads 2 "$p" --set output.dir=f --set rounds=1
[ ! -e "f/pipeline.json.tmp.$dead" ] || die "a fresh run left the stale pipeline.json.tmp.$dead"
grep -q "removed 1 temporary file that a killed fedrun left: pipeline.json.tmp.$dead$" "$work/stderr" ||
	{ cat "$work/stderr"; die "no line for the removed pipeline.json.tmp.$dead"; }
echo "stale temporary files: removed at start and resume, others' files kept"
