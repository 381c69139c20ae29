#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Resuming a run with large metrics: a round of 40,000 clients' lines (16 MB
# of metrics.jsonl, 7 MB of metrics.csv, the lines a real run writes) is cut
# back to the checkpoint's round to the right bytes, in time linear in the
# files' size: the resume runs under a CPU limit (ulimit -t) some 30 times
# its cost, where cutting in time quadratic in the size took minutes. And
# SIGTERM or SIGINT while a run starts or resumes (reading its init file,
# its checkpoint, its metrics) stops it with status 130, leaving the run
# directory as it was: the test raises the signal when the run opens that
# file (tests/signal_on_open.c, preloaded), not after a guessed time.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/repro.json"
shim="$top_builddir/tests/.libs/signal_on_open.so"
[ -e "$shim" ] || die "no $shim (make check builds it)"
# A preloaded library does not come before AddressSanitizer's runtime.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export ASAN_OPTIONS
cpu_limit=10 # seconds; the resumes below take about 0.3

# ref: 3 rounds of 40 clients, a checkpoint after each.
run_ok --threads 2 "$p" --set output.dir=ref --set rounds=3
# big0: ref as if killed after round 3's metrics were written but before
# its checkpoint, with each client line of round 1 repeated for 2,000
# clients (client ids id + 40 j), as a round of 40,000 clients writes.
cp -R ref big0
rm big0/final.safetensors big0/checkpoints/round-000003.safetensors
awk -v R=2000 '
/^\{"round":1,"client":[0-9]/ {
	pre = "{\"round\":1,\"client\":"
	rest = substr($0, length(pre) + 1)
	id = rest + 0
	sub(/^[0-9]+/, "", rest)
	for (j = 0; j < R; j++)
		print pre (id + 40 * j) rest
	next
}
{ print }' ref/metrics.jsonl >big0/metrics.jsonl
awk -F, -v OFS=, -v R=2000 '
NR > 1 && $1 == "1" && $2 != "" {
	id = $2
	for (j = 0; j < R; j++) {
		$2 = id + 40 * j
		print
	}
	next
}
{ print }' ref/metrics.csv >big0/metrics.csv
n=$(grep -c '^{"round":1,"client":[0-9]' big0/metrics.jsonl)
[ "$n" -eq 120000 ] || die "the inflated metrics.jsonl has $n client lines of round 1, expected 120000"
grep -q '^{"round":3,' big0/metrics.jsonl || die "big0 has no round 3 metrics to drop"
# What the resume keeps: the lines of rounds 0 to 2, byte for byte.
grep '^{"round":[012],' big0/metrics.jsonl >keep.jsonl
awk -F, 'NR == 1 || $1 <= 2' big0/metrics.csv >keep.csv

# limited ARGS...: fedrun under the CPU limit (killed past it: status 137).
limited() {
	(ulimit -t "$cpu_limit" && exec "$FEDRUN" -q --threads 2 "$@")
}

# listing DIR: every file of DIR with its checksum.
listing() {
	(cd "$1" && find . -type f | LC_ALL=C sort | xargs cksum)
}

# signalled DIR FILE SIG WORDS ARGS...: runs fedrun ARGS (output.dir DIR)
# with signal number SIG raised when it opens a file whose path ends with
# FILE; it must stop with status 130 and a message containing WORDS.
signalled() {
	d=$1 file=$2 sig=$3 words=$4
	shift 4
	st=0
	(SIGNAL_ON_OPEN=$file SIGNAL_ON_OPEN_SIG=$sig LD_PRELOAD=$shim && export SIGNAL_ON_OPEN \
		SIGNAL_ON_OPEN_SIG LD_PRELOAD && limited "$@" --set output.dir="$d") >/dev/null 2>"$d.err" ||
		st=$?
	[ "$st" -eq 130 ] || { cat "$d.err"; die "signal $sig when the run opened $file: exit $st, expected 130"; }
	grep -q "$words" "$d.err" || { cat "$d.err"; die "signal $sig when the run opened $file: no '$words'"; }
}

# SIGTERM while the resume reads its metrics, SIGINT while it reads its
# checkpoint: status 130, and every file of the run as it was (no file
# changed, none added, none gone).
for case in "metrics.jsonl 15" "checkpoints/round-000002.safetensors 2"; do
	set -- $case
	rm -rf sig
	cp -R big0 sig
	listing sig >before
	signalled sig "$1" "$2" "interrupted while resuming" --resume "$p" --set rounds=3
	grep -q "the run directory is as it was" sig.err || { cat sig.err; die "signal $2 at $1: no word on the run directory"; }
	listing sig >after
	cmp -s before after || { diff before after; die "signal $2 while the resume opened $1 changed the run directory"; }
	# It resumes afterwards as if never signalled.
	limited --resume "$p" --set rounds=3 --set output.dir=sig 2>err || { cat err; die "resume after the signal at $1 failed"; }
	cmp ref/final.safetensors sig/final.safetensors || die "resume after the signal at $1 differs"
done
# SIGTERM while a fresh run reads its init file: nothing is written.
signalled fresh ref/final.safetensors 15 "interrupted while starting" "$p" --set rounds=3 \
	--set init="$work/ref/final.safetensors"
[ ! -e fresh ] || { ls -lR fresh; die "a fresh run signalled while it read its init file left a directory"; }

# The resume: under the CPU limit, to the model of the uninterrupted run,
# with the lines of rounds 0 to 2 kept as they were and round 3's
# rewritten (as ref's, but for their wall time).
cp -R big0 big
st=0
limited --resume "$p" --set rounds=3 --set output.dir=big 2>err || st=$?
[ "$st" -eq 0 ] || { cat err; die "resume of 16 MB of metrics: exit $st (137: killed past $cpu_limit s of CPU)"; }
cmp ref/final.safetensors big/final.safetensors || die "the resumed model differs"
nowall() {
	sed 's/"wall":[0-9.]*//'
}
csv_nowall() {
	awk -F, -v OFS=, '{ $9 = ""; print }'
}
size=$(wc -c <keep.jsonl)
head -c "$size" big/metrics.jsonl | cmp -s - keep.jsonl || die "the kept lines of metrics.jsonl changed"
tail -c +$((size + 1)) big/metrics.jsonl | nowall >got3.jsonl
grep '^{"round":3,' ref/metrics.jsonl | nowall >want3.jsonl
[ -s want3.jsonl ] || die "ref has no round 3 metrics"
cmp -s got3.jsonl want3.jsonl || { diff got3.jsonl want3.jsonl | head; die "metrics.jsonl after the kept lines is not round 3's"; }
size=$(wc -c <keep.csv)
head -c "$size" big/metrics.csv | cmp -s - keep.csv || die "the kept lines of metrics.csv changed"
tail -c +$((size + 1)) big/metrics.csv | csv_nowall >got3.csv
awk -F, 'NR > 1 && $1 == 3' ref/metrics.csv | csv_nowall >want3.csv
cmp -s got3.csv want3.csv || { diff got3.csv want3.csv | head; die "metrics.csv after the kept lines is not round 3's"; }
# The resumed round's wall goes on from the last line kept (round 2's).
last=$(tail -n 1 keep.jsonl | sed 's/.*"wall":\([0-9.]*\)}$/\1/')
grep '^{"round":3,' big/metrics.jsonl | sed 's/.*"wall":\([0-9.]*\)}$/\1/' |
	awk -v w="$last" '$1 < w { bad = 1 } END { exit bad }' || die "round 3's wall is before round 2's ($last)"
echo "resume of big metrics: cut to the checkpoint's round within $cpu_limit s of CPU; SIGTERM and SIGINT while starting or resuming stop the run with the directory as it was"
