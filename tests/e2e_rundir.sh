#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The run directory and the files a run reads, as fedrun(1) promises:
#  - an output.dir that is not a directory (/dev/null, a FIFO, a regular
#    file, a path under a file) is an invalid pipeline: exit 2 from
#    validate and from the run, which does not wait on the FIFO;
#  - a data file that cannot be read is a missing input: exit 2;
#  - a file of the user's named like the run's tokenizer (vocab.txt,
#    spm.model) in output.dir is refused unless output.overwrite, and left
#    as it was; with it, replaced with a warning;
#  - --resume refuses a log.txt that is a symbolic link,
#    and writes nothing through it.
. "$top_srcdir/tests/lib.sh"
toy="$top_srcdir/examples/toy-fedavg.json"
copy="$top_srcdir/examples/transformer-copy.json"

# expect_exit STATUS TEXT ARGS...: fedrun ARGS exits STATUS with TEXT.
expect_exit() {
	want=$1 text=$2
	shift 2
	st=0
	timeout 60 "$FEDRUN" "$@" >out 2>err || st=$?
	[ "$st" -eq "$want" ] || { cat err; die "fedrun $*: exit $st, expected $want"; }
	grep -qF -- "$text" err || { cat err; die "fedrun $*: message lacks '$text'"; }
}

mkfifo fifo
echo file >plain
for d in /dev/null fifo plain plain/run; do
	base=${d%%/*}
	[ "$d" = /dev/null ] && base=/dev/null
	expect_exit 2 "output.dir: $d: $base is not a directory" validate "$toy" --set "output.dir=$d"
	expect_exit 2 "output.dir: $d: $base is not a directory" -q "$toy" --set "output.dir=$d" --set rounds=1
done
[ "$(cat plain)" = file ] || die "a refused output.dir changed the file"

# An unreadable data file (as another user: root reads every file).
mkdir -p pairs
for s in train dev test; do
	printf 'w1 w2 w3\nw4 w5\n' >pairs/$s.en
	printf 'w1 w2 w3\nw4 w5\n' >pairs/$s.de
done
chmod 000 pairs/dev.de
data='data={"src": "en", "tgt": "de", "dir": "'"$work"'/pairs", "clients": [{"name": "a", "train": "train", "valid": "dev", "test": "test"}]}'
as_other=
why="root without setpriv"
if [ "$(id -u)" = 0 ]; then
	command -v setpriv >/dev/null 2>&1 && as_other="setpriv --reuid=65534 --regid=65534 --clear-groups"
	chmod 755 "$work"
	# The other user must reach fedrun itself: a build tree under a
	# directory of mode 700 (mktemp -d, as .ci/run's sanitizer build once
	# was) it cannot enter.
	if [ -n "$as_other" ] && ! $as_other "$FEDRUN" --version >/dev/null 2>&1; then
		as_other= why="user 65534 cannot run $FEDRUN (a directory above it is closed)"
	fi
fi
if [ "$(id -u)" != 0 ] || [ -n "$as_other" ]; then
	st=0
	$as_other "$FEDRUN" validate "$copy" --set "$data" >out 2>err || st=$?
	[ "$st" -eq 2 ] || { cat err; die "an unreadable data file: exit $st, expected 2"; }
	grep -q "dev.de.*Permission denied" err || { cat err; die "an unreadable data file: the message does not name it"; }
	unreadable="an unreadable data file exits 2"
else
	unreadable="(unreadable data file not checked: $why)"
fi
chmod 644 pairs/dev.de

# The user's own vocab.txt in output.dir: refused, kept; replaced only with
# output.overwrite.
mkdir mine
echo "my notes, not a vocabulary" >mine/vocab.txt
expect_exit 1 "mine/vocab.txt exists and is not this run's tokenizer: set output.overwrite to true" \
	-q "$copy" --set output.dir=mine --set rounds=1
[ "$(cat mine/vocab.txt)" = "my notes, not a vocabulary" ] || die "the refused run changed mine/vocab.txt"
[ ! -e mine/pipeline.json ] || die "the refused run wrote mine/pipeline.json"
"$FEDRUN" -q "$copy" --set output.dir=mine --set rounds=1 --set output.overwrite=true 2>err ||
	{ cat err; die "output.overwrite did not replace mine/vocab.txt"; }
grep -q "held another tokenizer; replacing it (output.overwrite)" err || { cat err; die "no warning for the replaced vocab.txt"; }
grep -q "^<unk>" mine/vocab.txt || die "mine/vocab.txt is not the run's vocabulary"

# --resume through a symbolic link out of the run directory: refused.
run_ok "$toy" --set output.dir=r --set rounds=2 --set output.checkpoint_every=1
rm r/final.safetensors
echo "outside" >outside.txt
for f in log.txt; do
	mv r/$f r/$f.keep
	ln -s "$work/outside.txt" r/$f
	expect_exit 1 "r/$f is a symbolic link" -q --resume "$toy" --set output.dir=r --set rounds=3 \
		--set output.checkpoint_every=1
	[ "$(cat outside.txt)" = outside ] || die "--resume wrote through the link r/$f"
	rm r/$f
	mv r/$f.keep r/$f
done
run_ok --resume "$toy" --set output.dir=r --set rounds=3 --set output.checkpoint_every=1
[ -s r/final.safetensors ] || die "the resumed run wrote no final model"
echo "run directory: output.dir not a directory exits 2; $unreadable; a user's vocab.txt kept; no writes through links"
