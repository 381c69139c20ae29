#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Domain experts (FedNMT sec. 2.5; the pipeline's expert section) on the
# synthetic copy task of examples/transformer-copy.json, a few steps:
#  - the expert's nll_global equals the model's own evaluation of the
#    global model on the client's test split (to 1e-9);
#  - the mixture's nll is at most max(nll_global, nll_private);
#  - --threads 1 and 2 give the same metrics and expert files;
#  - gate_steps 0 gives λ = 1/2 everywhere;
#  - expert.private: a private model given (run a's) is not trained again,
#    and gives run a's expert file byte for byte;
#  - fedrun translate --expert works, and refuses what is not an expert;
#  - bad expert sections give clear errors (tests/pipelines/bad too).
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/examples/transformer-copy.json"
small="--set rounds=2 --set clients.steps=20 --set data.synthetic.train=200
	--set data.synthetic.valid=30 --set data.synthetic.test=30 --set eval.every=2
	--set eval.clients=true"
ex='expert={"clients":"all","steps":30,"gate_steps":40,"gate_lr":0.05}'

# expert_metric FILE METRIC SPLIT CLIENT
expert_metric() {
	grep "\"client\":$4,\"split\":\"$3\",\"metric\":\"$2\",\"model\"" "$1" | tail -n 1 |
		sed 's/.*"value":\([^,]*\),.*/\1/'
}
client_metric() {
	grep "\"client\":$4,\"split\":\"$3\",\"metric\":\"$2\",\"value\"" "$1" | tail -n 1 |
		sed 's/.*"value":\([^,]*\),.*/\1/'
}

run_ok --threads 1 "$p" $small --set "$ex" --set output.dir=a
run_ok --threads 2 "$p" $small --set "$ex" --set output.dir=b
for k in 0 1; do
	[ -f a/experts/client-$k.safetensors ] || die "no a/experts/client-$k.safetensors"
	grep -q '"__expert.gate"' a/experts/client-$k.safetensors || die "client $k: no gate tensor"
	cmp a/experts/client-$k.safetensors b/experts/client-$k.safetensors ||
		die "client $k: the expert differs between --threads 1 and 2"
	g=$(expert_metric a/metrics.jsonl expert.nll_global test $k)
	own=$(client_metric a/metrics.jsonl nll test $k)
	[ -n "$g" ] && [ -n "$own" ] || die "client $k: no expert.nll_global ($g) or own nll ($own)"
	awk -v a="$g" -v b="$own" 'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }' ||
		die "client $k: expert.nll_global $g differs from the model's own test nll $own"
	m=$(expert_metric a/metrics.jsonl expert.nll test $k)
	pr=$(expert_metric a/metrics.jsonl expert.nll_private test $k)
	awk -v m="$m" -v g="$g" -v p="$pr" 'BEGIN { exit !(m <= (g > p ? g : p) + 1e-12) }' ||
		die "client $k: mixture nll $m above both models' ($g, $pr)"
	for name in expert.ppl expert.lambda expert.bleu expert.chrf; do
		[ -n "$(expert_metric a/metrics.jsonl $name test $k)" ] || die "client $k: no $name"
	done
	s=$(expert_metric a/metrics.jsonl expert.gate_nll_start train $k)
	e=$(expert_metric a/metrics.jsonl expert.gate_nll_end train $k)
	awk -v s="$s" -v e="$e" 'BEGIN { exit !(e <= s) }' || die "client $k: gate NLL rose: $s -> $e"
done
grep '"metric":"expert\.' a/metrics.jsonl | sed 's/"wall":[^,}]*//' >ma
grep '"metric":"expert\.' b/metrics.jsonl | sed 's/"wall":[^,}]*//' >mb
cmp ma mb || die "expert metrics differ between --threads 1 and 2"

# gate_steps 0: θ = 0, λ = 1/2.
run_ok "$p" $small --set 'expert={"clients":[1],"steps":5,"gate_steps":0}' --set output.dir=z
[ ! -e z/experts/client-0.safetensors ] || die "expert.clients [1] made client 0's expert"
lam=$(expert_metric z/metrics.jsonl expert.lambda test 1)
[ "$lam" = "0.5" ] || die "gate_steps 0: lambda $lam, expected 0.5"

# expert.private: client 0's private model read from run a's expert file
# (its gate tensor is not a parameter): the same global model, private model
# and gate fit, so the same expert file; client 1 trains its own as in a.
priv="{\"client0\":\"$PWD/a/experts/client-0.safetensors\"}"
run_ok --threads 2 "$p" $small --set "$ex" --set "expert.private=$priv" --set output.dir=g
cmp a/experts/client-0.safetensors g/experts/client-0.safetensors ||
	die "expert.private: client 0's expert differs from the run it was taken from"
cmp a/experts/client-1.safetensors g/experts/client-1.safetensors ||
	die "expert.private: client 1's (trained) expert differs"
[ -z "$(expert_metric g/metrics.jsonl expert.train_loss train 0)" ] ||
	die "expert.private: client 0's private model was trained"
[ -n "$(expert_metric g/metrics.jsonl expert.train_loss train 1)" ] ||
	die "expert.private: client 1's private model has no training loss"
grep -q "private model from $PWD/a/experts/client-0.safetensors" g/log.txt ||
	die "expert.private: the log does not say where client 0's private model came from"

# fedrun translate --expert
printf 'w1 w2 w3\nw4 w5 w6 w7\n' >in.txt
"$FEDRUN" translate --expert 0 a <in.txt >out.txt 2>tr.err || { cat tr.err; die "translate --expert 0 failed"; }
[ "$(wc -l <out.txt)" -eq 2 ] || die "translate --expert: not one line per input"
"$FEDRUN" translate --expert a/experts/client-1.safetensors a <in.txt >out1.txt 2>tr.err ||
	{ cat tr.err; die "translate --expert FILE failed"; }
"$FEDRUN" translate --expert 5 a <in.txt >/dev/null 2>tr.err && die "translate --expert 5 succeeded"
grep -q "client-5.safetensors" tr.err || { cat tr.err; die "translate --expert 5: unclear error"; }
"$FEDRUN" translate --expert a/final.safetensors a <in.txt >/dev/null 2>tr.err &&
	die "translate --expert with a model that is not an expert succeeded"
grep -q "__expert.gate" tr.err || { cat tr.err; die "translate --expert final: unclear error"; }

# Bad expert sections.
bad() {
	"$FEDRUN" validate $small --set "$1" "$p" >/dev/null 2>err && die "accepted: $1"
	grep -qF -- "$2" err || { cat err; die "$1: message lacks: $2"; }
}
bad 'expert={"gate_steps":-1}' "expert.gate_steps"
bad 'expert={"gate_lr":0}' "expert.gate_lr"
bad 'expert={"steps":0}' "expert.steps"
bad 'expert={"clients":"some"}' 'expert.clients: expected "all"'
bad 'expert={"clients":[9]}' "expert.clients[0]: no client 9"
bad 'expert={"typo":1}' "typo"
bad 'expert=3' "expert: expected an object or null"
bad 'expert={"private":[]}' "expert.private: expected an object"
bad 'expert={"private":{"client0":3}}' "expert.private.client0: expected a file name"
bad 'expert={"private":{"client0":"/nonexistent.safetensors"}}' "/nonexistent.safetensors"
bad "expert={\"private\":{\"nobody\":\"$PWD/a/final.safetensors\"}}" \
	"expert.private.nobody: no client of that name"
bad "expert={\"clients\":[1],\"private\":{\"client0\":\"$PWD/a/final.safetensors\"}}" \
	"expert.private.client0: that client has no domain expert"
echo "expert: nll_global = the model's own, mixture <= both, threads 1 = 2, lambda 1/2 at 0 steps, expert.private, translate --expert"
