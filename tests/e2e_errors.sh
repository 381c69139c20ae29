#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Failures during a run: a diverging run stops with one clear message
# naming the round, the client and the tensor, exit status 1, and keeps
# what it had written (metrics of the rounds done, the last checkpoint).
. "$top_srcdir/tests/lib.sh"
"$FEDRUN" -q "$top_srcdir/examples/toy-fedavg.json" --set output.dir=div \
	--set clients.optimizer.lr=1e6 --set output.checkpoint_every=1 2>err
st=$?
[ "$st" -eq 1 ] || { cat err; die "diverging run: exit $st, expected 1"; }
[ "$(wc -l < err)" -eq 1 ] || { cat err; die "expected one line of message"; }
grep -q "^fedrun: .*round [0-9]*, client [0-9]*: training produced non-finite values in tensor 'x'" err ||
	{ cat err; die "unclear message"; }
r=$(sed 's/.*round \([0-9]*\),.*/\1/' err)
last=$(ls div/checkpoints | tail -n 1)
[ "$last" = "round-$(printf %06d $((r - 1))).safetensors" ] || die "last checkpoint $last, failed in round $r"
n=$(grep -c '"client":null,"split":"train","metric":"train_loss"' div/metrics.jsonl)
[ "$n" -eq $((r - 1)) ] || die "metrics hold $n rounds, expected $((r - 1))"
[ ! -e div/final.safetensors ] || die "a failed run wrote a final model"
grep -q "^error: .*non-finite" div/log.txt || die "the log lacks the error"
# A missing pipeline file and an unreadable one.
"$FEDRUN" validate no-such.json 2>err; [ $? -eq 2 ] || die "missing file: wrong exit status"
grep -q "no-such.json: cannot open" err || die "missing file: unclear message"
# Usage errors. The options of run and validate may come before the
# subcommand; other mistakes get a line saying what is wrong, not bare
# usage.
"$FEDRUN" --threads 1 validate "$top_srcdir/examples/toy-fedavg.json" >out 2>err ||
	{ cat err; die "options before 'validate' refused"; }
grep -q ": valid$" out || die "options before 'validate' did not validate: $(cat out)"
"$FEDRUN" --threads 1 plugins 2>err; [ $? -eq 2 ] || die "options before 'plugins' accepted"
grep -q "^fedrun: the options of 'plugins' go after its name" err || { cat err; die "no message for options before 'plugins'"; }
"$FEDRUN" a.json b.json 2>err; [ $? -eq 2 ] || die "two pipeline files accepted"
grep -q "^fedrun: expected one pipeline file, got 2 arguments: a.json b.json" err || { cat err; die "no message for two files"; }
"$FEDRUN" validate "$top_srcdir/examples/toy-fedavg.json" --set clients.bogus=1 2>err
grep -q "clients.bogus: unknown key (known: .*optimizer" err || { cat err; die "the clients keys omit optimizer"; }
# "Did you mean" for a misspelt plugin name, key and choice; an error about
# a key a --set gave names that --set, not only the file.
t="$top_srcdir/examples/toy-fedavg.json"
"$FEDRUN" validate "$t" --set aggregator.plugin=fedvag 2>err; [ $? -eq 2 ] || die "plugin fedvag accepted"
grep -q "no aggregator plugin called 'fedvag' .*did you mean 'fedavg'?" err || { cat err; die "no suggestion for fedvag"; }
grep -q "toy-fedavg.json --set aggregator.plugin=fedvag: aggregator.plugin:" err ||
	{ cat err; die "the error is not blamed on --set aggregator.plugin=fedvag"; }
"$FEDRUN" validate "$t" --set clients.optimizer.nmae=sgd 2>err; [ $? -eq 2 ] || die "key nmae accepted"
grep -q "clients.optimizer.nmae: unknown key; did you mean 'name'? (known: name, " err ||
	{ cat err; die "no suggestion for the key nmae"; }
"$FEDRUN" validate "$t" --set aggregator.weights=unifrom 2>err; [ $? -eq 2 ] || die "weights unifrom accepted"
grep -q 'got "unifrom"; did you mean "uniform"?' err || { cat err; die "no suggestion for unifrom"; }
"$FEDRUN" validate "$t" --set aggregator.plugin=zzzzzz 2>err
grep -q "did you mean" err && { cat err; die "a suggestion for zzzzzz"; }
# --set inside a section the file has: the message about the value names
# the --set.
"$FEDRUN" validate "$t" --set 'clients.optimizer={"name": "sgd", "lr": -1}' 2>err; [ $? -eq 2 ] || die "lr -1 accepted"
grep -q -- '--set clients.optimizer={"name": "sgd", "lr": -1}: clients.optimizer.lr: ' err ||
	{ cat err; die "the lr error is not blamed on its --set"; }
# --unset removes a key, so its default applies; a path the pipeline does
# not have is an error, not ignored; the order with --set is kept.
run_ok "$t" --set rounds=1 --unset aggregator.weights --set output.dir=unset
grep -q '"weights": "samples"' unset/pipeline.json || die "--unset aggregator.weights: not the default"
run_ok "$t" --set rounds=1 --unset aggregator.weights --set aggregator.weights=uniform --set output.dir=unset2
grep -q '"weights": "uniform"' unset2/pipeline.json || die "--unset then --set: the --set is lost"
"$FEDRUN" validate "$t" --unset clients.bogus 2>err; [ $? -eq 2 ] || die "--unset of a missing key accepted"
grep -q -- "--unset clients.bogus: the pipeline has no key 'bogus'" err || { cat err; die "unclear --unset message"; }
"$FEDRUN" validate "$t" --unset data.groups.0 2>err; [ $? -eq 2 ] || die "--unset of an array element accepted"
grep -q "is an element of an array" err || { cat err; die "unclear --unset message for an array element"; }
"$FEDRUN" --threads 0 x.json 2>err; [ $? -eq 2 ] || die "--threads 0 accepted"
grep -q "threads: expected an integer in \[1, 1024\], got '0'" err || die "unclear --threads message"
for v in -1 5s 604801 ''; do
	"$FEDRUN" --peer-timeout "$v" x.json 2>err; [ $? -eq 2 ] || die "--peer-timeout '$v' accepted"
	grep -q "peer-timeout: expected seconds, an integer in \[0, 604800\], got '$v'" err ||
		die "unclear --peer-timeout message"
done
"$FEDRUN" validate "$top_srcdir/examples/toy-fedavg.json" --set noequals 2>err; [ $? -eq 2 ] || die "bad --set accepted"
grep -q "expected PATH=VALUE" err || die "unclear --set message"
for a in '..=1' 'a..b=1' 'clients.=1'; do # not silently ignored
	"$FEDRUN" validate "$top_srcdir/examples/toy-fedavg.json" --set "$a" 2>err; [ $? -eq 2 ] || die "--set $a accepted"
	grep -qF -- "--set $a: empty path component" err || { cat err; die "unclear message for --set $a"; }
done
# Keys and values that are not UTF-8 (JSON holds UTF-8 only): refused, not
# a use-after-free (found by tests/fuzz).
"$FEDRUN" validate "$top_srcdir/examples/toy-fedavg.json" --set "$(printf 'clients.x\321.lr=1')" 2>err
[ $? -eq 2 ] || die "--set with a key that is not UTF-8 accepted"
grep -q "is not a valid key (not UTF-8)" err || { cat err; die "unclear message for a key that is not UTF-8"; }
"$FEDRUN" validate "$top_srcdir/examples/toy-fedavg.json" --set "$(printf 'name=\321')" 2>err
[ $? -eq 2 ] || die "--set with a value that is not UTF-8 accepted"
grep -q "the value is not valid UTF-8" err || { cat err; die "unclear message for a value that is not UTF-8"; }
# Malformed input files are invalid input: exit 2 from validate and from the
# run, which writes nothing (a data file that is not UTF-8 or holds no
# sentence; an init file that is not a safetensors file, or is empty).
q="$top_srcdir/examples/quickstart.json"
d="$top_srcdir/examples/data/toy-english"
printf '\377\376 not UTF-8\n' >bad.txt
: >empty.txt
head -c 100 /dev/zero | tr '\0' 'x' >junk.safetensors
for c in "data.train=$PWD/bad.txt:building the vocabulary" "data.train=$PWD/empty.txt:empty file" \
	"init=$PWD/junk.safetensors:not a safetensors file" "init=$PWD/empty.txt:truncated"; do
	set="${c%%:*}" text="${c#*:}"
	for cmd in validate -q; do # validate, and a run
		"$FEDRUN" $cmd "$q" --set "data.train=$d/train.txt" --set "$set" \
			--set output.dir=malformed --set rounds=1 2>err
		st=$?
		[ "$st" -eq 2 ] || { cat err; die "$cmd with $set: exit $st, expected 2"; }
		grep -qF "$text" err || { cat err; die "$cmd with $set: message lacks '$text'"; }
		[ ! -e malformed ] || die "$cmd with $set left a run directory"
	done
done
# A file size limit: the write fails with a message naming the file, no
# SIGXFSZ (which would kill the process without a word).
st=0
(ulimit -f 2 && exec "$FEDRUN" -q "$top_srcdir/examples/toy-fedavg.json" --set output.dir=fsz) >/dev/null 2>err || st=$?
[ "$st" -eq 1 ] || { cat err; die "a run past the file size limit: exit $st, expected 1"; }
grep -q "fsz/.*File too large" err || { cat err; die "the file size limit: unclear message"; }
# A limit met in the middle of the metrics (as a full disk would be): both
# files keep whole records only, up to the same round (the write was
# all-or-nothing per round; a cut record was left before).
st=0
(ulimit -f 40 && exec "$FEDRUN" -q "$top_srcdir/examples/toy-fedavg.json" --set output.dir=fsz2) >/dev/null 2>err || st=$?
[ "$st" -eq 1 ] || { cat err; die "a run past the file size limit (40): exit $st, expected 1"; }
grep -q "fsz2/metrics.jsonl: cannot write metrics: File too large" err || { cat err; die "the metrics limit: unclear message"; }
for f in metrics.jsonl metrics.csv; do
	[ "$(tail -c 1 fsz2/$f | od -An -c | tr -d ' ')" = '\n' ] || die "fsz2/$f ends inside a record"
done
tail -n 1 fsz2/metrics.jsonl | grep -q '"wall":[0-9.]*}$' || die "the last metrics.jsonl line is cut: $(tail -n 1 fsz2/metrics.jsonl)"
jr=$(tail -n 1 fsz2/metrics.jsonl | sed 's/^{"round":\([0-9]*\),.*/\1/')
cr=$(tail -n 1 fsz2/metrics.csv | cut -d, -f1)
[ "$jr" = "$cr" ] || die "metrics.jsonl ends at round $jr, metrics.csv at round $cr"
"$FEDRUN" --version | grep -q "plugin ABI 1.11" || die "--version"
"$FEDRUN" --help | grep -q "Exit status" || die "--help"
# Output paths: a directory that holds a run's outputs without its
# pipeline.json is not overwritten unasked (nor changed); an output.dir
# that cannot be created fails validate, not only the run.
toy="$top_srcdir/examples/toy-fedavg.json"
mkdir orphan
echo '{"round":1}' >orphan/metrics.jsonl
"$FEDRUN" -q "$toy" --set output.dir=orphan --set rounds=1 2>err && die "a directory with a run's metrics was overwritten"
grep -q "orphan holds a run's metrics.jsonl but no pipeline.json" err || { cat err; die "unclear message for an orphaned run"; }
[ "$(cat orphan/metrics.jsonl)" = '{"round":1}' ] || die "the refused run changed orphan/metrics.jsonl"
run_ok "$toy" --set output.dir=orphan --set rounds=1 --set output.overwrite=true
echo file >plain
"$FEDRUN" validate "$toy" --set output.dir=plain/run 2>err && die "validate accepted an output.dir under a file"
grep -q "output.dir: plain/run: plain is not a directory" err || { cat err; die "unclear message for output.dir under a file"; }
if [ "$(id -u)" != 0 ]; then # root writes anywhere
	mkdir ro && chmod 500 ro
	"$FEDRUN" validate "$toy" --set output.dir=ro/run 2>err && die "validate accepted an unwritable output.dir"
	grep -q "output.dir: ro/run: ro is not writable" err || { cat err; die "unclear message for an unwritable output.dir"; }
	chmod 700 ro
fi

refused() { # STATUS TEXT COMMAND...: COMMAND exits STATUS saying TEXT
	want=$1 text=$2
	shift 2
	st=0
	timeout 60 "$@" >/dev/null 2>err || st=$?
	[ "$st" -ne 124 ] || die "hangs: $*"
	[ "$st" -eq "$want" ] || { cat err; die "exit $st, expected $want: $*"; }
	grep -qF "$text" err || { cat err; die "no '$text' from: $*"; }
}
# A loss that becomes infinite while the weights stay finite stops the run
# with a message and exit 1 (the test model "wordrev" reports one on demand).
wr() { # OPTION: a wordrev pipeline reporting an infinite loss
	printf '{"name": "inf", "seed": 1, "rounds": 3, "model": {"plugin": "wordrev", "path": "%s", "%s": true}, "data": {"clients": 2}, "clients": {"epochs": 1, "optimizer": {"name": "sgd", "lr": 0.1}}, "output": {"dir": "%s"}}\n' \
		"$top_builddir/tests/plugins/.libs/wordrev.so" "$1" "$1"
}
wr inf_train_loss >inft.json
refused 1 "round 1: the clients' training loss is inf: training diverged" "$FEDRUN" -q --allow-plugin-paths inft.json
[ ! -e inf_train_loss/final.safetensors ] || die "a diverged run wrote a final model"
wr inf_eval_loss >infe.json
refused 1 "round 0: the model's valid loss is inf: training diverged" "$FEDRUN" -q --allow-plugin-paths infe.json

# Only regular files are read: a FIFO or a device as the pipeline, a
# plugin, a data file or fedrun bleu's input is refused at once (timeout:
# a hang fails the test).
mkfifo fifo
refused 2 "'fifo' is not a regular file (a FIFO)" "$FEDRUN" validate fifo
# (fedrun bleu: exit 1 for any input it cannot read; fedrun-bleu(1))
refused 1 "'/dev/zero' is not a regular file (a character device)" "$FEDRUN" bleu /dev/zero /dev/zero
refused 1 "'fifo' is not a regular file (a FIFO)" "$FEDRUN" bleu fifo fifo
refused 3 "is not a regular file (a FIFO)" "$FEDRUN" validate --allow-plugin-paths "$toy" --set "aggregator.path=\"$work/fifo\""
mkdir -p par
printf 'a b\n' >par/train.en
ln -s ../fifo par/train.de
refused 2 "is not a regular file (a FIFO)" "$FEDRUN" validate "$toy" \
	--set 'model={"plugin": "transformer", "preset": "tiny", "tokenizer": {"type": "words"}}' \
	--set 'data={"src": "en", "tgt": "de", "dir": "'"$work"'/par", "clients": [{"name": "p", "train": "train"}]}'
# A NUL byte or invalid UTF-8 in parallel text: the line and the byte.
mkdir -p nul
printf 'x y\nab\000c\n' >nul/train.en
printf 'x y\n\303\050\n' >nul/train.de
tfm='{"plugin": "transformer", "preset": "tiny", "tokenizer": {"type": "words"}}'
refused 2 "nul/train.en:2: a NUL byte at byte 3" "$FEDRUN" validate "$toy" --set "model=$tfm" \
	--set 'data={"src": "en", "tgt": "de", "dir": "'"$work"'/nul", "clients": [{"name": "p", "train": "train"}]}'
printf 'x y\nab c\n' >nul/train.en
refused 2 "nul/train.de:2: invalid UTF-8 at byte 1" "$FEDRUN" validate "$toy" --set "model=$tfm" \
	--set 'data={"src": "en", "tgt": "de", "dir": "'"$work"'/nul", "clients": [{"name": "p", "train": "train"}]}'
echo "a diverging run failed in round $r with a clear message and kept rounds 1..$((r - 1))"
