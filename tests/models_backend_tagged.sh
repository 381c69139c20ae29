#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# gru-lm and transformer on the "tagged" backend (tests/backend_tagged.c:
# the CPU backend behind non-canonical device pointers, so that host code
# that touches device memory crashes and an op given host memory where
# backend.h asks for device memory fails): training (SGD with momentum and
# clipping, Adam with its state kept across rounds, dropout, FedProx),
# evaluation (perplexity, BLEU and chrF by greedy and beam decoding, on 2
# threads), loss gradients (meritfed) and `fedrun translate` give exactly
# what the CPU backend gives: the same final.safetensors, checkpoints,
# metrics (wall time and the backend.* byte counts aside) and
# translations. The tagged runs report backend.h2d_bytes and
# backend.d2h_bytes; the CPU runs do not.
. "$top_srcdir/tests/lib.sh"
FEDRUN_PLUGIN_PATH="$FEDRUN_PLUGIN_PATH:$top_builddir/tests/.libs"
export FEDRUN_PLUGIN_PATH

strip() {
	grep -v -e '"metric":"gru_lm.tokens_per_s"' -e '"metric":"backend\.' "$1" |
		sed 's/,"wall":[^}]*//'
}

# same NAME PIPELINE ARGS...: the run on "cpu" and on "tagged", compared.
same() {
	name=$1
	shift
	run_ok --threads 2 "$@" --set output.dir="$name.cpu"
	run_ok --threads 2 "$@" --set model.backend=tagged --set output.dir="$name.tagged"
	cmp "$name.cpu/final.safetensors" "$name.tagged/final.safetensors" ||
		die "$name: the final models differ"
	# (a checkpoint's directory of the clients' stored state, file by file)
	for c in "$name.cpu"/checkpoints/* "$name.cpu"/checkpoints/*.clients/*; do
		[ -f "$c" ] || continue
		tagged_c="$name.tagged/checkpoints/${c#"$name.cpu/checkpoints/"}"
		cmp "$c" "$tagged_c" || die "$name: checkpoint ${c#"$name.cpu/checkpoints/"} differs"
	done
	[ "$(strip "$name.cpu/metrics.jsonl")" = "$(strip "$name.tagged/metrics.jsonl")" ] || {
		strip "$name.cpu/metrics.jsonl" >a.txt
		strip "$name.tagged/metrics.jsonl" >b.txt
		diff a.txt b.txt | head -n 5
		die "$name: the metrics differ"
	}
	grep -q '"client":0,"split":null,"metric":"backend.h2d_bytes"' "$name.tagged/metrics.jsonl" ||
		die "$name: no backend.h2d_bytes of client 0"
	grep -q '"metric":"backend.d2h_bytes"' "$name.tagged/metrics.jsonl" ||
		die "$name: no backend.d2h_bytes"
	! grep -q '"metric":"backend\.' "$name.cpu/metrics.jsonl" ||
		die "$name: byte metrics in a CPU run"
	grep -q '"backend": "tagged"' "$name.tagged/pipeline.json" ||
		die "$name: the resolved pipeline lacks the backend"
	grep -q '"backend": "cpu"' "$name.cpu/pipeline.json" ||
		die "$name: the resolved pipeline lacks the default backend"
}

g="$top_srcdir/tests/pipelines/gru_lm.json"
same gru "$g" --set rounds=3
same gru-prox "$g" --set rounds=2 --set aggregator.plugin=fedprox --set aggregator.mu=0.1
same gru-merit "$g" --set rounds=2 --set aggregator.plugin=meritfed --set aggregator.target=0 \
	--set aggregator.split=train
same gru-adam "$g" --set rounds=3 --set clients.optimizer_state=keep \
	--set 'clients.optimizer={"name": "adam", "lr": 0.01, "clip_norm": 1.0}' \
	--set model.tied=true --set model.embed=24 --set model.layers=1

# The transformer's example keeps Adam's state across rounds
# (clients.optimizer_state "keep").
t="$top_srcdir/examples/transformer-copy.json"
short="--set rounds=2 --set clients.steps=6 --set eval.every=1"
# shellcheck disable=SC2086
{
	same tfm "$t" $short --set model.dropout=0.1 --set model.decode.beam=2 \
		--set model.eval_bleu=all
	same tfm-pre "$t" $short --set model.norm=pre --set model.activation=gelu \
		--set model.tie_embeddings=none --set model.attention_dropout=0.1 \
		--set model.relu_dropout=0.1 --set aggregator.plugin=fedprox --set aggregator.mu=0.01
	# dim 20: D*D but not D a multiple of 16, so the q, k, v weights are one
	# fused matrix and their biases apart (the projections' other path)
	same tfm-odd "$t" $short --set model.dim=20 --set model.heads=4 --set model.ffn=40 \
		--set model.tie_embeddings=decoder --set model.dropout=0.1
	same tfm-merit "$t" $short --set aggregator.plugin=meritfed --set aggregator.target=0
}
grep -q '"split":"test","metric":"bleu"' tfm.tagged/metrics.jsonl || die "no test BLEU"

# fedrun translate, greedy and beam search, with the tagged backend that
# the run directory's pipeline names, against the CPU run's.
printf 'w1 w2 w3 w4\nw5 w6 w7 w8 w9 w10\n\nw3 w3 w1\n' >in.txt
for run in tfm tfm-pre tfm-odd; do
	for beam in 1 3; do
		"$FEDRUN" translate --beam $beam --batch 2 "$run.cpu" <in.txt >"$run.cpu.$beam" 2>err ||
			{ cat err; die "translate $run.cpu --beam $beam failed"; }
		"$FEDRUN" translate --beam $beam --batch 2 --threads 2 "$run.tagged" <in.txt \
			>"$run.tagged.$beam" 2>err ||
			{ cat err; die "translate $run.tagged --beam $beam failed"; }
		cmp "$run.cpu.$beam" "$run.tagged.$beam" || die "translate $run --beam $beam differs"
	done
done
# --resume on another backend: a cpu run of 2 rounds resumed to 3 on
# tagged gives the uninterrupted cpu run's model (the same arithmetic); a
# run recorded before model.backend existed (the key taken out of its
# pipeline.json) resumes too.
g="$top_srcdir/tests/pipelines/gru_lm.json"
run_ok --threads 2 "$g" --set rounds=3 --set output.dir=full
run_ok --threads 2 "$g" --set rounds=2 --set output.dir=part --set output.checkpoint_every=1
run_ok --threads 2 --resume --backend tagged "$g" --set rounds=3 --set output.dir=part \
	--set output.checkpoint_every=1
cmp full/final.safetensors part/final.safetensors || die "resumed on tagged: another model"
run_ok --threads 2 "$g" --set rounds=2 --set output.dir=old --set output.checkpoint_every=1
sed '/"backend": "cpu",/d; /"device": 0,/d; /"deterministic": true,/d' old/pipeline.json >old/p &&
	mv old/p old/pipeline.json
grep -q '"backend"' old/pipeline.json && die "the old run still names a backend"
run_ok --threads 2 --resume "$g" --set rounds=3 --set output.dir=old --set output.checkpoint_every=1
cmp full/final.safetensors old/final.safetensors || die "a run without model.backend: another model"

# --backend overrides the run's: the CPU run translated on tagged, and back.
"$FEDRUN" translate --backend tagged --beam 3 --batch 2 tfm.cpu <in.txt >x.tagged 2>err ||
	{ cat err; die "translate --backend tagged failed"; }
cmp tfm.cpu.3 x.tagged || die "translate --backend tagged differs from the run's cpu"
"$FEDRUN" translate --backend cpu --beam 3 --batch 2 tfm.tagged <in.txt >x.cpu 2>err ||
	{ cat err; die "translate --backend cpu failed"; }
cmp tfm.cpu.3 x.cpu || die "translate --backend cpu of the tagged run differs"
"$FEDRUN" translate --backend nosuch tfm.cpu <in.txt >/dev/null 2>err && die "translate --backend nosuch succeeded"
grep -q 'no backend "nosuch"' err || { cat err; die "translate --backend nosuch: unclear message"; }
echo "models on the tagged backend: the same models, metrics and translations as on cpu"
