#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The encoder model end to end, on the tiny Hugging Face fixtures of
# tests/data/hf and data this script writes (a word decides the label):
#  - classify from a pretrained BertForSequenceClassification directory,
#    2 clients: learns the task (test accuracy above 0.9), the same bits
#    for --threads 1 and 2, partition.tsv and RUN/hf written, export-hf
#    gives a directory the encoder loads again;
#  - freezing (model.freeze) and LoRA (model.lora): fewer bytes travel,
#    final.safetensors holds only what trains, and the export has every
#    tensor (LoRA merged, no adapter tensors);
#  - tag from DistilBertForTokenClassification: first-subword labels, the
#    f1 metric;
#  - mlm from scratch with a vocabulary learned from the text
#    (model.vocab_size), written to RUN/vocab.txt;
#  - partitions quantity and dirichlet;
#  - refusals, each with its message.
. "$top_srcdir/tests/lib.sh"
hf="$top_srcdir/tests/data/hf"

# NAME N SEED: N lines "words<TAB>label"; the label is m when "he" is in
# the text, f when "she" is.
gen_classify() {
	awk -v n="$2" -v seed="$3" 'BEGIN {
		split("the of and to in a is was for it with as on be at by this had not are " \
		      "but from or have an they which one you were all there would their we him " \
		      "been has when who will more no if out so said what up its about into", w, " ")
		nw = 0; for (k in w) nw++
		s = seed
		for (i = 0; i < n; i++) {
			s = (s * 1103515245 + 12345) % 2147483648; lab = int(s / 65536) % 2
			s = (s * 1103515245 + 12345) % 2147483648; len = 4 + int(s / 65536) % 8
			s = (s * 1103515245 + 12345) % 2147483648; at = int(s / 65536) % len
			line = ""
			for (j = 0; j < len; j++) {
				if (j == at) word = lab ? "she" : "he"
				else { s = (s * 1103515245 + 12345) % 2147483648; word = w[1 + int(s / 65536) % nw] }
				line = line (j ? " " : "") word
			}
			print line "\t" (lab ? "f" : "m")
		}
	}' >"$1"
}

# NAME N SEED: "words<TAB>tags": DET for the, ADP for of/in/to, else X.
gen_tag() {
	awk -v n="$2" -v seed="$3" 'BEGIN {
		split("the of and to in a is was he she it with as on be at by this had not", w, " ")
		s = seed
		for (i = 0; i < n; i++) {
			s = (s * 1103515245 + 12345) % 2147483648; len = 3 + int(s / 65536) % 9
			t = ""; line = ""
			for (j = 0; j < len; j++) {
				s = (s * 1103515245 + 12345) % 2147483648; word = w[1 + int(s / 65536) % 20]
				tag = word == "the" ? "DET" : (word == "of" || word == "in" || word == "to") ? "ADP" : "X"
				line = line (j ? " " : "") word; t = t (j ? " " : "") tag
			}
			print line "\t" t
		}
	}' >"$1"
}

gen_classify train.tsv 400 1
gen_classify valid.tsv 100 2
gen_classify test.tsv 100 3
cat >cls.json <<JSON
{"name": "cls", "seed": 1, "rounds": 3,
 "model": {"plugin": "encoder", "task": "classify", "pretrained": "$hf/bert-classify",
	   "dropout": 0, "max_len": 32},
 "data": {"train": "train.tsv", "valid": "valid.tsv", "test": "test.tsv", "format": "tsv",
	  "partition": {"scheme": "iid", "clients": 2}},
 "clients": {"fraction": 1.0, "epochs": 2, "batch": 16, "optimizer": {"name": "adam", "lr": 0.003}},
 "aggregator": {"plugin": "fedavg"},
 "eval": {"every": 1},
 "output": {"dir": "cls"}}
JSON
run_ok --threads 2 cls.json
acc=$(metric cls/metrics.jsonl accuracy test)
f1=$(metric cls/metrics.jsonl macro_f1 test)
awk -v a="$acc" -v f="$f1" 'BEGIN { exit !(a > 0.9 && f > 0.9) }' ||
	die "classify: test accuracy $acc, macro_f1 $f1 (expected above 0.9)"
run_ok --threads 1 cls.json --set output.dir=cls1
cmp cls/final.safetensors cls1/final.safetensors || die "classify: --threads 1 and 2 differ"
grep -q 'category:m' cls/partition.tsv || die "partition.tsv has no label columns"
for f in config.json vocab.txt tokenizer_config.json fedrun.json; do
	[ -s "cls/hf/$f" ] || die "classify: no cls/hf/$f"
done
"$FEDRUN" export-hf cls exp >/dev/null 2>err || { cat err; die "export-hf"; }
grep -q '"BertForSequenceClassification"' exp/config.json || die "export: architectures"
grep -q '"f"' exp/config.json || die "export: no label names"
# the exported directory is a pretrained model again: round 0 evaluates
# it, and its test loss is the trained run's
run_ok cls.json --set output.dir=again --set rounds=0 --set model.pretrained=exp
a=$(metric cls/metrics.jsonl loss test) b=$(metric again/metrics.jsonl loss test)
[ "$a" = "$b" ] || die "export-hf: reloaded test loss $b, trained $a"

# freezing and LoRA: what trains is what travels
run_ok cls.json --set output.dir=frz --set model.freeze=2
run_ok cls.json --set output.dir=lora --set model.lora.r=2
push() { awk -F, '$4 == "train_loss" && $2 == "" { b = $7 } END { print b + 0 }' "$1/metrics.csv"; }
full=$(push cls) frz=$(push frz) lora=$(push lora)
[ "$full" -gt 0 ] || die "no bytes_push in cls/metrics.csv"
[ "$frz" -lt "$full" ] && [ "$lora" -lt "$full" ] ||
	die "bytes_push: full $full, freeze 2 $frz, lora $lora"
grep -q 'encoder.layer' frz/final.safetensors && die "freeze 2: frozen layers in final.safetensors"
grep -q 'lora_A' lora/final.safetensors || die "lora: no adapters in final.safetensors"
"$FEDRUN" export-hf frz frz-exp >/dev/null 2>err || { cat err; die "export-hf (freeze)"; }
grep -q 'encoder.layer.1.output.dense.weight' frz-exp/model.safetensors ||
	die "export-hf (freeze): the frozen tensors are missing"
"$FEDRUN" export-hf lora lora-exp >/dev/null 2>err || { cat err; die "export-hf (lora)"; }
grep -q 'lora_A' lora-exp/model.safetensors && die "export-hf (lora): adapters not merged"

# tagging
gen_tag ttrain.tsv 300 4
gen_tag ttest.tsv 60 5
cat >tag.json <<JSON
{"name": "tag", "seed": 2, "rounds": 3,
 "model": {"plugin": "encoder", "task": "tag", "pretrained": "$hf/distilbert-tag",
	   "dropout": 0, "max_len": 24},
 "data": {"train": "ttrain.tsv", "test": "ttest.tsv", "format": "tsv",
	  "columns": {"text": 0, "tags": 1}, "partition": {"scheme": "quantity", "alpha": 1, "clients": 3}},
 "clients": {"fraction": 1.0, "epochs": 2, "batch": 16, "optimizer": {"name": "adam", "lr": 0.005}},
 "eval": {"every": 0},
 "output": {"dir": "tag"}}
JSON
run_ok tag.json
acc=$(metric tag/metrics.jsonl accuracy test)
awk -v a="$acc" 'BEGIN { exit !(a > 0.9) }' || die "tag: test accuracy $acc"
grep -q '"metric":"f1"' tag/metrics.jsonl || die "tag: no f1 metric"
awk -F'\t' 'NR > 1 { n[$2]++ } END { exit !(length(n) == 3) }' tag/partition.tsv ||
	die "quantity: the three clients have equal sizes"

# masked LM from scratch, vocabulary learned from the text
cut -f1 train.tsv >mlm.txt
cat >mlm.json <<JSON
{"name": "mlm", "seed": 3, "rounds": 2,
 "model": {"plugin": "encoder", "task": "mlm", "preset": "tiny", "dim": 32, "heads": 2,
	   "layers": 1, "vocab_size": 120, "max_pos": 32, "max_len": 32},
 "data": {"train": "mlm.txt", "valid": "mlm.txt", "format": "text", "partition": {"clients": 1}},
 "clients": {"fraction": 1.0, "epochs": 1, "batch": 32, "optimizer": {"name": "adam", "lr": 0.003}},
 "eval": {"every": 1},
 "output": {"dir": "mlm"}}
JSON
run_ok mlm.json
head -n 5 mlm/vocab.txt | tr '\n' ' ' | grep -q '^\[PAD\] \[UNK\] \[CLS\] \[SEP\] \[MASK\]' ||
	die "mlm: RUN/vocab.txt does not start with the special tokens"
[ "$(wc -l <mlm/vocab.txt)" -le 120 ] || die "mlm: vocab_size 120 exceeded"
grep -qx 'she' mlm/vocab.txt || die "mlm: a frequent word is not in the learned vocabulary"
first=$(grep '"round":0,"client":null,"split":"valid","metric":"loss"' mlm/metrics.jsonl |
	sed 's/.*"value":\([^,]*\),.*/\1/')
last=$(metric mlm/metrics.jsonl loss valid)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || die "mlm: valid loss $first -> $last"

# dirichlet label skew
run_ok cls.json --set output.dir=dir --set rounds=1 --set 'data.partition={"scheme": "dirichlet", "alpha": 0.1, "clients": 4}'
awk -F'\t' 'NR > 1 && ($4 == 0 || $5 == 0) { skew = 1 } END { exit !skew }' dir/partition.tsv ||
	die "dirichlet alpha 0.1: every client has both labels"

# bf16 products (where this machine has them): the task is learnt, and
# --threads 1 and 2 give the same bits
if "$FEDRUN" -q validate cls.json --set model.precision=bf16 >/dev/null 2>err; then
	run_ok --threads 2 cls.json --set output.dir=b2 --set model.precision=bf16
	run_ok --threads 1 cls.json --set output.dir=b1 --set model.precision=bf16
	cmp b1/final.safetensors b2/final.safetensors || die "bf16: --threads 1 and 2 differ"
	acc=$(metric b2/metrics.jsonl accuracy test)
	awk -v a="$acc" 'BEGIN { exit !(a > 0.9) }' || die "bf16: test accuracy $acc"
	cmp -s b2/final.safetensors cls/final.safetensors && die "bf16 gave the FP32 bits"
else
	grep -q 'precision' err || { cat err; die "validate in bf16"; }
	echo "note: no bf16 here, its case not run: $(cat err)"
fi

# refusals
nref=0
refuse() {
	want=$1
	shift
	nref=$((nref + 1))
	"$FEDRUN" -q "$@" --set output.dir=refused$nref >/dev/null 2>err && die "accepted: $*"
	grep -qF "$want" err || { cat err; die "expected \"$want\""; }
}
refuse 'model.dim: not with model.pretrained' cls.json --set model.dim=8
refuse 'model_type "roberta"' cls.json --set model.pretrained="$hf/bad-model-type"
refuse 'model.freeze: 3 layers, but the model has 2' cls.json --set model.freeze=3
refuse 'not with model.lora' cls.json --set model.freeze=1 --set model.lora.r=2
refuse 'label skew needs one label' tag.json --set 'data.partition={"scheme": "dirichlet", "alpha": 1, "clients": 2}'
printf 'the of\tDET\n' >bad.tsv
refuse 'bad.tsv:1: 1 tags for 2 words' tag.json --set data.train=bad.tsv
printf 'he said\tneutral\n' >odd.tsv
refuse 'odd.tsv:1: label "neutral" does not occur in the training data' cls.json --set data.test=odd.tsv
refuse 'model.vocab: required without model.pretrained' mlm.json --unset model.vocab_size
refuse '"tsv" or "jsonl" for task "classify"' cls.json --set data.format=text
for d in refused*; do
	[ ! -e "$d/final.safetensors" ] || die "$d: a refused run wrote a model"
done
echo "encoder: classify, freeze, LoRA, tag, mlm, partitions, export and refusals checked"
