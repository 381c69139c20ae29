#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/fedrun-plot on two tiny fake run directories (metrics.csv in the
# format fedrun writes) and two tables: the numbers in OUT.dat, PNGs that
# are PNGs, SVGs that are XML and hold the legend's labels, and one-line
# errors with a non-zero exit for what cannot be plotted. Skipped (77)
# without gnuplot.
set -u
top_srcdir=${top_srcdir:-${srcdir:-.}}
plot="$top_srcdir/tools/fedrun-plot"
command -v gnuplot >/dev/null 2>&1 || { echo "SKIP: gnuplot not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-plot.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() {
	passed=$((passed + 1))
	echo "ok - $1"
}
not_ok() {
	failed=$((failed + 1))
	echo "FAIL - $1"
}
check() { # description, then a command that must succeed
	desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
# is_png FILE: starts with the PNG signature
is_png() {
	[ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ]
}
# is_svg FILE LABEL...: an XML document with an <svg> element holding each
# LABEL (as XML text: & written &amp;)
is_svg() {
	f=$1
	shift
	head -n 1 "$f" | grep -q '^<?xml ' && grep -q '<svg' "$f" && grep -q '</svg>' "$f" || return 1
	if command -v xmllint >/dev/null 2>&1; then xmllint --noout "$f" || return 1; fi
	for l in "$@"; do grep -qF "<text>$l</text>" "$f" || { echo "# no label '$l' in $f"; return 1; }; done
}
# fails NAME PATTERN ARGS...: fedrun-plot ARGS exits non-zero with one line
# on stderr that matches PATTERN (grep -E)
fails() {
	name=$1 pat=$2
	shift 2
	sh "$plot" "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -eq 0 ]; then
		not_ok "$name: exit status 0"
	elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -Eq -- "$pat" "$tmp/err"; then
		not_ok "$name: message"
		sed 's/^/# /' "$tmp/err"
	else
		ok "$name (exit $st: $(cat "$tmp/err"))"
	fi
}
runs() { # runs the tool, showing its stderr on failure
	sh "$plot" "$@" 2>"$tmp/err" || { sed 's/^/# /' "$tmp/err"; return 1; }
}

# Run A: server evaluations every round, a client, training and fine-tuning
# events, an eval matrix (a model name with a comma is quoted).
header='round,client,split,metric,tensor,value,bytes_push,bytes_pull,wall,model'
mkdir "$tmp/runA" "$tmp/runB" "$tmp/empty"
cat >"$tmp/runA/metrics.csv" <<EOF
$header
0,,valid,loss,,6.5,0,0,0.250,
0,,valid,ppl,,665.14,0,0,0.250,
0,1,valid,loss,,6.75,0,0,0.250,
1,,train,train_loss,,6.25,1000,1000,1.500,
1,,,clients,,2,1000,1000,1.500,
1,,,global_step,,4,1000,1000,1.500,
1,,valid,loss,,5.5,1000,1000,1.500,
1,1,valid,loss,,5.875,1000,1000,1.500,
1,0,train,train_loss,,6.125,1000,1000,1.500,
1,0,,fedavg.weight,,0.5,1000,1000,1.500,
2,,train,train_loss,,5.25,1000,1000,2.750,
2,,,global_step,,8,1000,1000,2.750,
2,,valid,loss,,4.25,1000,1000,2.750,
2,1,valid,loss,,4.625,1000,1000,2.750,
2,0,train,finetune.train_loss,,4,1000,1000,3.000,"web, docs"
2,0,test,bleu,,12.5,1000,1000,3.000,server
2,0,test,bleu,,17.25,1000,1000,3.000,"web, docs"
EOF
cat >"$tmp/runA/pipeline.json" <<'EOF'
{
  "name": "fake",
  "data": {
    "src": "en",
    "clients": [
      { "name": "web", "train": "web/train", "extra": { "name": "not this" } },
      { "name": "doc\"s", "valid": "docs/dev" }
    ]
  },
  "clients": { "fraction": 1.0 }
}
EOF
# Run B: evaluated every other round, one round further.
cat >"$tmp/runB/metrics.csv" <<EOF
$header
0,,valid,loss,,6.5,0,0,0.300,
2,,valid,loss,,4.75,2000,2000,2.000,
4,,valid,loss,,3.125,2000,2000,4.000,
EOF

# ---- curve ----
if runs curve --metric loss --split valid --title "valid loss" -o "$tmp/c" \
	"method A=$tmp/runA" "B & co=$tmp/runB/"; then
	ok "curve runs"
	printf 'round\tmethod A\tB & co\n0\t6.5\t6.5\n1\t5.5\t-\n2\t4.25\t4.75\n4\t-\t3.125\n' >"$tmp/want"
	if cmp -s "$tmp/want" "$tmp/c.dat"; then ok "curve: .dat"; else
		not_ok "curve: .dat differs"
		diff "$tmp/want" "$tmp/c.dat" | sed 's/^/# /'
	fi
	check "curve: PNG" is_png "$tmp/c.png"
	check "curve: SVG with the legend" is_svg "$tmp/c.svg" "method A" "B &amp; co" "valid loss" round loss
else
	not_ok "curve runs"
fi

# a client by index and by name (data.clients in pipeline.json), the label
# from the directory's name
printf 'round\trunA\n0\t6.75\n1\t5.875\n2\t4.625\n' >"$tmp/want"
check "curve --client 1" runs curve --client 1 -o "$tmp/c1" "$tmp/runA"
check "curve --client 1: .dat" cmp -s "$tmp/want" "$tmp/c1.dat"
check "curve --client NAME" runs curve --client 'doc"s' -o "$tmp/c2" "$tmp/runA"
check "curve --client NAME: .dat" cmp -s "$tmp/want" "$tmp/c2.dat"

# another split and metric; a model with a comma; the x axis by step, wall
printf 'round\tA\n1\t6.25\n2\t5.25\n' >"$tmp/want"
check "curve train_loss" runs curve --split train --metric train_loss -o "$tmp/c3" "A=$tmp/runA/metrics.csv"
check "curve train_loss: .dat" cmp -s "$tmp/want" "$tmp/c3.dat"
printf 'round\tA\n2\t17.25\n' >"$tmp/want"
check "curve --model" runs curve --split test --metric bleu --client 0 --model 'web, docs' -o "$tmp/c4" "A=$tmp/runA"
check "curve --model: .dat" cmp -s "$tmp/want" "$tmp/c4.dat"
check "curve --model: PNG" is_png "$tmp/c4.png"
printf 'round\tA\tA:step\n0\t6.5\t0\n1\t5.5\t4\n2\t4.25\t8\n' >"$tmp/want"
check "curve --x step" runs curve --x step --logy -o "$tmp/c5" "A=$tmp/runA"
check "curve --x step: .dat" cmp -s "$tmp/want" "$tmp/c5.dat"
printf 'round\tB\tB:wall\n0\t6.5\t0.300\n2\t4.75\t2.000\n4\t3.125\t4.000\n' >"$tmp/want"
check "curve --x wall" runs curve --x wall -o "$tmp/c6" "B=$tmp/runB"
check "curve --x wall: .dat" cmp -s "$tmp/want" "$tmp/c6.dat"

fails "curve: missing run directory" "$tmp/nowhere: no such run directory" \
	curve -o "$tmp/e" "A=$tmp/runA" "B=$tmp/nowhere"
fails "curve: no metrics.csv" "$tmp/empty/metrics.csv: missing" curve -o "$tmp/e" "$tmp/empty"
fails "curve: no matching row" "$tmp/runB/metrics.csv: no row with metric ppl, split valid, client server \\(metrics there: loss\\)" \
	curve --metric ppl -o "$tmp/e" "$tmp/runA" "$tmp/runB"
fails "curve: no such client" "pipeline.json: no client named 'gnome'" curve --client gnome -o "$tmp/e" "$tmp/runA"
fails "curve: client name without pipeline.json" "runB/pipeline.json: missing" curve --client web -o "$tmp/e" "$tmp/runB"
printf 'a,b\n1,2\n' >"$tmp/bad.csv"
fails "curve: not a metrics.csv" "bad.csv: not a fedrun metrics.csv" curve -o "$tmp/e" "$tmp/bad.csv"
fails "curve: no -o" "-o OUT is required" curve "$tmp/runA"
fails "curve: bad --split" "--split: expected" curve --split dev -o "$tmp/e" "$tmp/runA"
fails "curve: output directory missing" "$tmp/nodir: no such directory" curve -o "$tmp/nodir/e" "$tmp/runA"
check "curve: no output left by the failures" [ ! -e "$tmp/e.png" ]

# ---- bars ----
printf 'model\tcli\tgit\tmean\nserver\t10.5\t-\t10.5\nweb & docs\t\t12\t12\nchained\t8\t9.25\t8.625\n' >"$tmp/table.tsv"
if runs bars --title "test BLEU" --ylabel BLEU -o "$tmp/b" "$tmp/table.tsv"; then
	ok "bars runs"
	check "bars: PNG" is_png "$tmp/b.png"
	check "bars: SVG with the legend and groups" is_svg "$tmp/b.svg" server "web &amp; docs" chained \
		cli git mean "test BLEU" BLEU
else
	not_ok "bars runs"
fi
check "bars --transpose --drop mean" runs bars --transpose --drop mean -o "$tmp/bt" "$tmp/table.tsv"
check "bars --transpose: SVG" is_svg "$tmp/bt.svg" cli git server chained
if grep -qF '<text>mean</text>' "$tmp/bt.svg"; then not_ok "bars --drop: mean dropped"; else ok "bars --drop: mean dropped"; fi
# an eval_matrix.tsv: several tables, one chosen by --table
printf '# loss on test\nmodel\tcli\tgit\tmean\nserver\t5.5\t5.25\t5.375\n\n# chrf on test\nmodel\tcli\tgit\tmean\nserver\t30.5\t-\t30.5\nweb\t33\t31\t32\n' >"$tmp/eval_matrix.tsv"
check "bars --table chrf" runs bars --table chrf -o "$tmp/bm" "$tmp/eval_matrix.tsv"
check "bars --table chrf: SVG" is_svg "$tmp/bm.svg" server web
fails "bars: no such table" "eval_matrix.tsv: no table headed \"# bleu on" bars --table bleu -o "$tmp/e" "$tmp/eval_matrix.tsv"
fails "bars: missing table" "$tmp/none.tsv: no such file" bars -o "$tmp/e" "$tmp/none.tsv"
printf 'model\tcli\nserver\tten\n' >"$tmp/nan.tsv"
fails "bars: a cell not a number" "nan.tsv:2: column \"cli\": not a number" bars -o "$tmp/e" "$tmp/nan.tsv"
fails "bars: an option of curve" "--metric: an option of curve" bars --metric loss -o "$tmp/e" "$tmp/table.tsv"

# ---- help ----
sh "$plot" --help >"$tmp/help" 2>&1
check "--help exits 0" [ $? -eq 0 ]
for o in --metric --split --client --model --tensor --x --xlabel --ylabel --logy --yrange \
	--table --transpose --drop --output --title --size --help; do
	grep -q -- "$o" "$tmp/help" || not_ok "--help documents $o"
done
fails "unknown subcommand" "unknown subcommand 'pie'" pie -o "$tmp/e"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
