#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Evaluation-only clients, the fine-tuning phase and the model-by-domain
# table with meanest (gaussian mean estimation): three domains "a", "b", "c"
# with training data and one evaluation-only domain "held" (samples 0).
. "$top_srcdir/tests/lib.sh"
cat >p.json <<'JSON'
{"name": "ft", "seed": 3, "rounds": 4,
 "model": {"plugin": "meanest", "problem": "gaussian", "dim": 4},
 "data": {"seed": 5, "groups": [
   {"clients": 1, "name": "a", "mean": 0, "samples": 40, "valid_samples": 30},
   {"clients": 1, "name": "b", "mean": 2, "samples": 40, "valid_samples": 30},
   {"clients": 1, "name": "c", "mean": 4, "samples": 40, "valid_samples": 30},
   {"clients": 1, "name": "held", "mean": 6, "samples": 0, "valid_samples": 30}]},
 "clients": {"fraction": 0.67, "epochs": 1, "batch": 10,
             "optimizer": {"name": "sgd", "lr": 0.05}},
 "eval": {"clients": true, "matrix": true},
 "finetune": {"epochs": 3, "optimizer": {"name": "sgd", "lr": 0.2}},
 "output": {"dir": "run"}}
JSON
"$FEDRUN" p.json >stdout 2>stderr || { cat stderr; die "run failed"; }

# The evaluation-only client is never sampled, but it is evaluated.
grep -q '"client":3,"split":"train","metric":"train_loss"' run/metrics.jsonl &&
	die "the evaluation-only client 3 trained"
grep -q '"client":0,"split":"train","metric":"train_loss"' run/metrics.jsonl ||
	die "client 0 never trained"
grep -q '"client":3,"split":"valid","metric":"loss"' run/metrics.jsonl ||
	die "the evaluation-only client 3 was not evaluated"
# fraction 0.67 of the 3 clients with data: 2 a round.
[ "$(grep -c '"client":null,"split":null,"metric":"clients","value":2,' run/metrics.jsonl)" -eq 4 ] ||
	die "expected 2 clients sampled in each of 4 rounds"

# Fine-tuned models: one file per client with data, named client-K.
for k in 0 1 2; do
	[ -s run/finetuned/client-$k.safetensors ] || die "no run/finetuned/client-$k.safetensors"
	cmp -s run/final.safetensors run/finetuned/client-$k.safetensors &&
		die "client $k's fine-tuned model equals the server's"
done
[ -e run/finetuned/client-3.safetensors ] && die "the evaluation-only client was fine-tuned"
grep -q '"client":1,"split":"train","metric":"finetune.train_loss","model":"b"' run/metrics.jsonl ||
	die "no finetune.train_loss of client b"

# The table: printed (main metric, the loss), written, and in the metrics.
grep -q "^loss on test" stdout || die "the table was not printed: $(cat stdout)"
[ -s run/eval_matrix.tsv ] || die "no run/eval_matrix.tsv"
head -n 2 run/eval_matrix.tsv | tail -n 1 | grep -q "^model	a	b	c	held	mean$" ||
	die "bad header: $(head -n 2 run/eval_matrix.tsv)"
# tsv METRIC ROW COL: a cell of eval_matrix.tsv.
tsv() {
	awk -F '\t' -v m="# $1 on test" -v row="$2" -v col="$3" '
		$0 == m { on = 1; next } /^#/ { on = 0 }
		on && $1 == "model" { for (i = 1; i <= NF; i++) c[$i] = i; next }
		on && $1 == row { print $(c[col]); exit }' run/eval_matrix.tsv
}
# Each fine-tuned model does better than the server on its own domain.
for d in a b c; do
	s=$(tsv loss server $d) f=$(tsv loss $d $d)
	[ -n "$s" ] && [ -n "$f" ] || die "missing cells for $d"
	awk -v s="$s" -v f="$f" 'BEGIN { exit !(f < s) }' ||
		die "client $d: fine-tuned loss $f is not below the server's $s"
done
# The server row equals the separate final test evaluation of each client
# (eval.clients with final_test), to the printed precision.
for k in 0 1 2 3; do
	d=$(echo "a b c held" | cut -d' ' -f$((k + 1)))
	sep=$(grep "\"client\":$k,\"split\":\"test\",\"metric\":\"loss\",\"value\"" run/metrics.jsonl |
		tail -n 1 | sed 's/.*"value":\([^,]*\),.*/\1/')
	mat=$(grep "\"client\":$k,\"split\":\"test\",\"metric\":\"loss\",\"model\":\"server\"" run/metrics.jsonl |
		sed 's/.*"value":\([^,]*\),.*/\1/')
	[ -n "$sep" ] && [ "$sep" = "$mat" ] || die "client $k: matrix $mat, separate evaluation $sep"
	awk -v a="$mat" -v b="$(tsv loss server $d)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * (a < 0 ? -a : a)) }' ||
		die "client $k: eval_matrix.tsv disagrees with metrics.jsonl"
done
# Mean column: the mean of the row.
awk -v a="$(tsv loss c a)" -v b="$(tsv loss c b)" -v c="$(tsv loss c c)" -v h="$(tsv loss c held)" \
	-v m="$(tsv loss c mean)" 'BEGIN { d = (a + b + c + h) / 4 - m; if (d < 0) d = -d; exit !(d < 1e-4 * m) }' ||
	die "bad mean column"
# The CSV view has the model column.
head -n 1 run/metrics.csv | grep -q ',model$' || die "metrics.csv lacks the model column"
grep -q ',test,loss,,[^,]*,[^,]*,[^,]*,[^,]*,c$' run/metrics.csv || die "metrics.csv lacks model c's rows"

# Resume after the end: fine-tuning is redone from the final model, with the
# same results.
cp -r run/finetuned saved
cp run/eval_matrix.tsv saved/
rm run/finetuned/client-1.safetensors run/eval_matrix.tsv
run_ok --resume p.json
for k in 0 1 2; do
	cmp -s saved/client-$k.safetensors run/finetuned/client-$k.safetensors ||
		die "resume: client-$k.safetensors differs"
done
cmp -s saved/eval_matrix.tsv run/eval_matrix.tsv || die "resume: eval_matrix.tsv differs"
# -q hides stderr's lines only: the redone table prints.
grep -q "^loss on test" "$work/stdout" || die "-q hid the table: $(cat "$work/stdout")"

# finetune.clients by name and index; without eval.matrix no table.
run_ok p.json --set output.dir=run2 --set 'finetune.clients=["c", 0]' --set eval.matrix=false
ls run2/finetuned >list
[ "$(cat list | tr '\n' ' ')" = "client-0.safetensors client-2.safetensors " ] ||
	die "finetune.clients [\"c\", 0]: got $(cat list)"
[ -e run2/eval_matrix.tsv ] && die "eval_matrix.tsv without eval.matrix"
cmp -s run/finetuned/client-2.safetensors run2/finetuned/client-2.safetensors ||
	die "client 2's fine-tuned model depends on which other clients are fine-tuned"
# rounds 0 from init: no training rounds; the init model is the server's
# row of the table (the same numbers as in the run it came from) and every
# client is fine-tuned from it.
run_ok p.json --set rounds=0 --set init=run/final.safetensors --set output.dir=zero
grep -q '"split":"train","metric":"train_loss"' zero/metrics.jsonl && die "rounds 0 trained"
[ "$(ls zero/finetuned | wc -l)" -eq 3 ] || die "rounds 0: not three fine-tuned models"
[ "$(grep '^server' zero/eval_matrix.tsv)" = "$(grep '^server' run/eval_matrix.tsv)" ] ||
	die "rounds 0: the server row is not the init model's"
echo "finetune: ok"
