#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A model's "backend" that does not exist, or whose context cannot be made
# (a GPU backend without its GPU; the tagged test backend with
# FEDRUN_TAGGED_NO_DEVICE), fails `fedrun validate`, a run and `fedrun
# translate` with a message that names model.backend and the backend, and
# a non-zero exit; no run directory is left behind by validate.
. "$top_srcdir/tests/lib.sh"
FEDRUN_PLUGIN_PATH="$FEDRUN_PLUGIN_PATH:$top_builddir/tests/.libs"
export FEDRUN_PLUGIN_PATH
g="$top_srcdir/tests/pipelines/gru_lm.json"
t="$top_srcdir/examples/transformer-copy.json"

# fails WANT TEXT ARGS...: fedrun ARGS exits WANT with TEXT on stderr.
fails() {
	want=$1 text=$2
	shift 2
	st=0
	"$FEDRUN" "$@" >out 2>err || st=$?
	[ "$st" -eq "$want" ] || { cat err; die "fedrun $*: exit $st, expected $want"; }
	grep -qF -- "$text" err || { cat err; die "fedrun $*: message lacks '$text'"; }
}

for p in "$g" "$t"; do
	fails 2 'model.backend: no backend "nope": no backend plugin called '"'nope'" \
		validate "$p" --set model.backend=nope --set output.dir=v
	[ -e v ] && die "validate created the run directory"
	fails 2 'model.backend: no backend "nope"' -q "$p" --set model.backend=nope --set output.dir=r
	fails 2 'model.backend: expected a string' validate "$p" --set model.backend=3
	fails 2 'model.device' validate "$p" --set model.device=-1
	fails 2 'model.deterministic' validate "$p" --set model.deterministic=3
	# fedrun --backend is model.backend
	fails 2 'model.backend: no backend "nope"' validate --backend nope "$p"
	# a backend whose context cannot be made: the backend's own message
	FEDRUN_TAGGED_NO_DEVICE=1
	export FEDRUN_TAGGED_NO_DEVICE
	fails 1 'model.backend "tagged": tagged backend: no device (FEDRUN_TAGGED_NO_DEVICE is set)' \
		validate "$p" --set model.backend=tagged
	fails 1 'model.backend "tagged": tagged backend: no device' \
		-q "$p" --set model.backend=tagged --set output.dir=r
	unset FEDRUN_TAGGED_NO_DEVICE
done

# translate: the backend the run directory's pipeline names
run_ok "$t" --set rounds=1 --set clients.steps=1 --set eval.every=1 --set output.dir=run
sed 's/"backend": "cpu"/"backend": "nope"/' run/pipeline.json >p.json
grep -q '"backend": "nope"' p.json || die "no backend key in the resolved pipeline"
printf 'w1 w2\n' >in.txt
st=0
"$FEDRUN" translate -c run/final.safetensors p.json <in.txt >out 2>err || st=$?
[ "$st" -ne 0 ] || die "translate with an unknown backend succeeded"
grep -qF 'model.backend: no backend "nope"' err || { cat err; die "translate: no clear message"; }
echo "unknown or unusable backends: clear messages, non-zero exits"
