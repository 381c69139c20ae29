#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fedrun new (core/cli/cmd_new.c, fedrun-new(1)): the aggregator it writes
# builds with its own Makefile against the build tree's headers and
# library, its test pipeline runs, and its weighted mean gives fedavg's
# final model bit for bit (same sums in double, same order); a non-empty
# directory, an existing file and bad names are refused with status 2 and
# nothing written; the experiment it writes validates once its data files
# exist.
. "$top_srcdir/tests/lib.sh"
command -v cc >/dev/null || { echo "no C compiler"; exit 77; }

# refused STATUS-WANTED MESSAGE-PART ARGS...: fedrun new ARGS fails so.
refused() { refused_by new "$@"; }

# The aggregator: four files in a new directory.
"$FEDRUN" new aggregator myavg "$work/myavg" >out 2>err || { cat err; die "fedrun new aggregator failed"; }
for f in myavg.c Makefile myavg-test.json README.txt; do
	[ -s "myavg/$f" ] || die "fedrun new aggregator did not write $f"
done
grep -q 'TODO' myavg/myavg.c || die "myavg.c has no TODO for the user's rule"
grep -q 'pkg-config\|PKG_CONFIG' myavg/Makefile || die "the Makefile does not use pkg-config"
if grep -q 'SPDX\|@NAME@' myavg/*; then die "a template's SPDX line or @NAME@ was left in"; fi
n=$(wc -l <myavg/README.txt)
[ "$n" -ge 10 ] && [ "$n" -le 20 ] || die "README.txt has $n lines"

# Built by its Makefile, pointed at this build tree instead of pkg-config,
# with the project's warnings as errors.
jcflags=$(pkg-config --cflags jansson 2>/dev/null || true)
(cd myavg && ${MAKE:-make} \
	CFLAGS="-O1 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror" \
	FEDRUN_CFLAGS="-I$top_srcdir/core/include $jcflags" \
	FEDRUN_LIBS="-L$top_builddir/core/.libs -lfedrun") >build.log 2>&1 ||
	{ cat build.log; die "the generated plugin does not build against the build tree"; }
[ -f myavg/myavg.so ] || die "make did not build myavg.so"

# Its test pipeline, then the same pipeline with fedavg: the same bits.
# (The random selector leaves tensors out, so the weights are renormalised
# over each tensor's senders, as fedavg does.)
cd myavg || die "no myavg"
run_ok --allow-plugin-paths myavg-test.json
[ -f runs/myavg-test/final.safetensors ] || die "the test pipeline wrote no final model"
grep -q '"metric":"myavg.weight"' runs/myavg-test/metrics.jsonl || die "no myavg.weight metric"
grep -q '"metric":"myavg.step_norm"' runs/myavg-test/metrics.jsonl || die "no myavg.step_norm metric"
grep -q '"plugin": "myavg", "path": "myavg.so"' myavg-test.json || die "unexpected aggregator section"
sed -e 's/"plugin": "myavg", "path": "myavg.so"/"plugin": "fedavg"/' \
	-e 's|runs/myavg-test|runs/fedavg-test|' myavg-test.json >fedavg-test.json
run_ok fedavg-test.json
cmp runs/myavg-test/final.safetensors runs/fedavg-test/final.safetensors ||
	die "the generated weighted mean does not give fedavg's final model"
# ... and "weights": "uniform" is fedavg's uniform too (and differs).
run_ok --allow-plugin-paths --set aggregator.weights=uniform --set output.dir=runs/u1 myavg-test.json
run_ok --set aggregator.weights=uniform --set output.dir=runs/u2 fedavg-test.json
cmp runs/u1/final.safetensors runs/u2/final.safetensors || die "uniform weights differ from fedavg's"
if cmp -s runs/u1/final.safetensors runs/myavg-test/final.safetensors; then
	die "uniform and sample weights give the same model: the test pipeline tests nothing"
fi
# The generated plugin keeps the properties fedrun check-aggregator checks.
"$FEDRUN" check-aggregator --allow-plugin-paths ./myavg.so >check.log 2>&1 ||
	{ cat check.log; die "fedrun check-aggregator refuses the generated plugin"; }
grep -q '^FAIL' check.log && { cat check.log; die "check-aggregator printed a FAIL"; }
echo "check-aggregator accepts the generated plugin"
cd "$work" || exit 99

# Never over anything: a non-empty directory (left as it was), a file,
# a missing parent, bad names (no directory made).
sum=$(cat myavg/myavg.c myavg/Makefile | cksum)
refused 2 "not empty" aggregator myavg "$work/myavg"
[ "$(cat myavg/myavg.c myavg/Makefile | cksum)" = "$sum" ] || die "a refused new changed myavg/"
: >afile
refused 2 "not a directory" aggregator other afile
refused 2 "No such file" aggregator other "$work/no/such/dir"
for bad in MyAvg 2avg my-avg _avg "a b" "" "$(printf 'a%064d' 0)"; do # the last: 65 characters
	refused 2 "invalid name" aggregator "$bad" "$work/bad"
	[ ! -e "$work/bad" ] || die "fedrun new aggregator '$bad' made a directory"
done
refused 2 "expected NAME" aggregator
refused 2 "unknown kind" model foo
# An existing empty directory is used.
mkdir empty
"$FEDRUN" new aggregator other empty >out 2>err || { cat err; die "an empty DIR was refused"; }
[ -f empty/other.c ] || die "nothing written into the empty DIR"

# The experiment (gru-lm): refused by validate until its data exists, valid
# with tiny files in the places its notes name.
mkdir exp
"$FEDRUN" new experiment exp/lm.json >out 2>err || { cat err; die "fedrun new experiment failed"; }
[ -s exp/lm.json ] && [ -s exp/lm.notes.txt ] || die "new experiment did not write lm.json and lm.notes.txt"
st=0
"$FEDRUN" validate exp/lm.json >out 2>err || st=$?
[ "$st" = 2 ] && grep -q 'client0.txt' err || { cat err; die "lm.json without data: status $st"; }
text="$top_srcdir/examples/data/toy-english/valid.txt"
mkdir exp/data
for f in $(grep -o 'data/[a-z0-9]*\.txt' exp/lm.notes.txt | sort -u); do
	head -n 40 "$text" >"exp/$f"
done
"$FEDRUN" validate exp/lm.json >out 2>err || { cat err; die "the new gru-lm experiment does not validate"; }
grep -q '"name": "lm"' exp/lm.json || die "the pipeline is not named lm"
sum=$(cksum <exp/lm.json)
refused 2 "exists" experiment exp/lm.json
refused 2 "exists" experiment exp/lm
[ "$(cksum <exp/lm.json)" = "$sum" ] || die "a refused new experiment changed lm.json"
refused 2 "expected gru-lm or transformer" experiment --model lstm exp/x.json
refused 2 "invalid name" experiment 'exp/a b.json'
refused 2 "No such file" experiment no/such/x.json
[ ! -e exp/x.json ] || die "a refused experiment wrote x.json"

# The transformer experiment, where this build has the plugin.
if "$FEDRUN" plugins 2>/dev/null | grep -q '^transformer '; then
	"$FEDRUN" new experiment --model transformer exp/mt.json >out 2>err ||
		{ cat err; die "fedrun new experiment --model transformer failed"; }
	grep -q 'data/client0/train.en' exp/mt.notes.txt || die "mt.notes.txt does not name the files"
	# data.dir is data/; the prefixes are those of data.clients
	for pre in $(grep -o '"\(train\|valid\|test\)": "[^"]*"' exp/mt.json | sed 's/.*: "\(.*\)"/\1/'); do
		mkdir -p "exp/data/$(dirname "$pre")"
		head -n 40 "$text" >"exp/data/$pre.en"
		head -n 40 "$text" >"exp/data/$pre.de"
	done
	"$FEDRUN" validate exp/mt.json >out 2>err ||
		{ cat err; die "the new transformer experiment does not validate"; }
else
	echo "SKIP the transformer experiment: no transformer plugin in this build"
fi
echo "fedrun new: the aggregator builds and equals fedavg bit for bit; experiments validate"
