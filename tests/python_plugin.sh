#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The python aggregator (fedrun-python(7)), skipped where configure did not
# build it: FedNova in Python (examples/python/fednova.py) and in C
# (examples/plugins/fednova.c) give the same final model bit for bit (both
# sum in double in client order, each product rounded before it is added),
# with a selector that sends some tensors only; a Python fedavg gives the
# built-in fedavg's bits; the class sees numpy views (no copy), read-only
# for the updates, with only the tensors a client sent; its exception stops
# the run with status 1 naming file:line and the message; the "file" key is
# refused without --allow-plugin-paths as a "path" key is (status 3); a
# class the file does not define, a file that does not parse and arrays
# kept after the call are clear errors; print() does not reach stdout.
. "$top_srcdir/tests/lib.sh"
py="$top_builddir/plugins/.libs/python.so"
[ -f "$py" ] || { echo "SKIP: the python plugin is not built (configure --with-python)"; exit 77; }
cnova="$top_builddir/examples/plugins/.libs/fednova.so"
[ -f "$cnova" ] || die "$cnova is not built"
ex="$top_srcdir/examples/python"
# Under AddressSanitizer: the interpreter's memory at exit is not a leak.
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top_srcdir/tests/python_plugin.supp:print_suppressions=0"
export LSAN_OPTIONS

# Clients of 4 and 24 samples make 1 and 6 local steps (batch 4); the
# random selector sends half of the three tensors.
cat >p.json <<JSON
{"name": "pyagg", "seed": 5, "rounds": 4,
 "model": {"plugin": "meanest", "problem": "gaussian", "dim": 48, "tensors": ["a", "b", "c"]},
 "data": {"groups": [{"clients": 5, "mean": 1, "samples": 4, "valid_samples": 0},
		     {"clients": 5, "mean": -1, "samples": 24, "valid_samples": 0}]},
 "clients": {"fraction": 0.8, "epochs": 1, "batch": 4, "optimizer": {"name": "sgd", "lr": 0.05}},
 "selector": {"plugin": "random", "fraction": 0.5},
 "aggregator": {"plugin": "python", "file": "$ex/fednova.py", "class": "FedNova"},
 "eval": {"every": 0, "final_test": false},
 "output": {"dir": "out", "checkpoint_every": 0}}
JSON
run_ok --allow-plugin-paths p.json --set output.dir=nova_py
run_ok --allow-plugin-paths p.json --set output.dir=nova_c \
	--set "aggregator={\"plugin\": \"fednova\", \"path\": \"$cnova\"}"
cmp nova_py/final.safetensors nova_c/final.safetensors ||
	die "FedNova in Python and in C give different models"
norms() { sed -n "s/.*\"metric\":\"$2.step_norm\",\"value\":\([^,]*\),.*/\1/p" "$1/metrics.jsonl"; }
[ "$(norms nova_py python | wc -l)" -eq 4 ] || die "python.step_norm is not reported each round"
[ "$(norms nova_py python)" = "$(norms nova_c fednova)" ] ||
	die "python.step_norm differs from fednova.step_norm: $(norms nova_py python) vs $(norms nova_c fednova)"
grep -q '"metric":"python.tau_eff","tensor":"a"' nova_py/metrics.jsonl ||
	die "the class's round.metric(...) is not in metrics.jsonl"
run_ok p.json --set output.dir=avg --set 'aggregator={"plugin": "fedavg"}'
cmp -s avg/final.safetensors nova_py/final.safetensors && die "FedNova gave FedAvg's model"

# A Python fedavg is the built-in one; its returned dict is a metric.
run_ok --allow-plugin-paths p.json --set output.dir=avg_py \
	--set "aggregator={\"plugin\": \"python\", \"file\": \"$ex/fedavg.py\", \"class\": \"FedAvg\"}"
cmp avg/final.safetensors avg_py/final.safetensors || die "the Python fedavg differs from fedavg"
grep -q '"metric":"python.clients","value":8,' avg_py/metrics.jsonl ||
	die "the dict aggregate() returned is not reported as python.clients"

# Views, not copies; options as a dict; print() to stderr.
cat >views.py <<'EOF'
import numpy as np

class Views:
    def __init__(self, options):
        assert options == {"alpha": 0.5, "nested": {"k": [1, 2]}}, options

    def aggregate(self, model, updates, round):
        partial = 0
        for u in updates:
            assert isinstance(u.client, int) and u.steps in (1, 6), u
            partial += len(u.tensors) < len(model)
            for name, a in u.tensors.items():
                assert a.dtype == np.float32 and a.shape == model[name].shape
                assert not a.flags.owndata and isinstance(a.base, memoryview), a.flags
                assert not a.flags.writeable, "an update is writable"
                try:
                    a.flags.writeable = True
                except ValueError:
                    pass
                else:
                    raise AssertionError("an update could be made writable")
        for name, x in model.items():
            assert not x.flags.owndata and x.flags.writeable and isinstance(x.base, memoryview)
            x += 1.0  # in place: the run's model moves by 1 a round
        print("print from the class")
        return {"partial": partial}
EOF
run_ok --allow-plugin-paths p.json --set output.dir=views --set aggregator.file=views.py \
	--set aggregator.class=Views --set aggregator.alpha=0.5 --set 'aggregator.nested={"k": [1, 2]}'
grep -q 'print from the class' "$work/stdout" && die "print() reached fedrun's standard output"
grep -q 'print from the class' "$work/stderr" || die "print() did not reach standard error"
awk '/"metric":"python.partial"/ { sub(/.*"value":/, ""); s += $0 + 0 } END { exit !(s > 0) }' \
	views/metrics.jsonl || die "no client sent only some tensors: the test checks nothing"
# θ moved by exactly 1 a round: step norm sqrt(48) each round.
norms views python | awk '{ d = $1 - sqrt(48); if (d > 1e-9 || d < -1e-9) bad = 1 } END { exit bad }' ||
	die "the model was not written in place: step norms $(norms views python)"

# Errors: status and message.
fails() { # STATUS PATTERN ARGS...: fedrun exits STATUS with PATTERN on stderr
	want=$1 pat=$2
	shift 2
	"$FEDRUN" "$@" >"$work/stdout" 2>"$work/stderr"
	got=$?
	[ "$got" -eq "$want" ] || { cat "$work/stderr"; die "fedrun $*: status $got, want $want"; }
	grep -q -- "$pat" "$work/stderr" || { cat "$work/stderr"; die "fedrun $*: no '$pat' in the message"; }
}
cat >bad.py <<'EOF'
class Boom:
    def __init__(self, options):
        pass

    def aggregate(self, model, updates, round):
        if round.round == 2:
            raise ValueError("boom in round %d" % round.round)

class Keep:
    def __init__(self, options):
        pass

    def aggregate(self, model, updates, round):
        self.kept = updates[0].tensors[sorted(updates[0].tensors)[0]][:3]

class Picky:
    def __init__(self, options):
        raise KeyError("unknown option 'x'")
EOF
fails 1 "round 2: aggregator 'python': Boom.aggregate: .*/bad.py:7 in aggregate: ValueError: boom in round 2" \
	-q --allow-plugin-paths p.json --set output.dir=boom --set aggregator.file=bad.py --set aggregator.class=Boom
grep -q 'Traceback (most recent call last)' boom/log.txt || die "the traceback is not in log.txt"
fails 3 'aggregator.file: .*bad.py: a file of code named by the pipeline is run only with --allow-plugin-paths' \
	-q p.json --set output.dir=noflag --set aggregator.file=bad.py --set aggregator.class=Boom
[ -e noflag ] && die "a refused pipeline left a run directory"
fails 3 'aggregator.file: .*fednova.py: a file of code named by the pipeline is run only with --allow-plugin-paths' \
	validate p.json
fails 2 "aggregator.class: .*bad.py defines no class 'Nova' (its classes: Boom, Keep, Picky)" \
	-q --allow-plugin-paths p.json --set output.dir=nocls --set aggregator.file=bad.py --set aggregator.class=Nova
fails 2 "aggregator.class: required key is missing" \
	-q --allow-plugin-paths p.json --set output.dir=nocls2 --set 'aggregator={"plugin": "python", "file": "bad.py"}'
fails 2 "Picky(options): .*/bad.py:18 in __init__: KeyError: \"unknown option 'x'\"" \
	-q --allow-plugin-paths p.json --set output.dir=picky --set aggregator.file=bad.py --set aggregator.class=Picky
echo 'def f(:' >syntax.py
fails 2 "aggregator.file: .*syntax.py:1: SyntaxError: " \
	-q --allow-plugin-paths p.json --set output.dir=syn --set aggregator.file=syntax.py
fails 2 "aggregator.file: cannot read file '.*missing.py'" \
	-q --allow-plugin-paths p.json --set output.dir=missing --set aggregator.file=missing.py
fails 1 "Keep.aggregate kept the tensor '[abc]' of client [0-9]* (or a view of it) after returning" \
	-q --allow-plugin-paths p.json --set output.dir=keep --set aggregator.file=bad.py --set aggregator.class=Keep
# The shipped example pipelines run as they are (the C one with the module
# built here in place of the examples/plugins/fednova.so it names).
run_ok --allow-plugin-paths "$ex/fednova.json" --set rounds=2 --set output.dir=ex_py
run_ok --allow-plugin-paths "$ex/fednova-c.json" --set rounds=2 --set output.dir=ex_c \
	--set aggregator.path="$cnova"
cmp ex_py/final.safetensors ex_c/final.safetensors || die "examples/python/fednova*.json differ"
echo "python plugin: FedNova Python = C, Python fedavg = fedavg (bit for bit); views, errors, trust rule"
