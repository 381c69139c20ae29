#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# data.format (fedrun-models(7)): the same corpus as text files, as tsv and
# as jsonl gives a byte-identical final.safetensors, for a tiny gru-lm run
# (iid, Dirichlet with a label column/field in place of the files, and
# quantity skew, which ignores the labels) and
# a tiny transformer run; malformed records exit 2 naming file:line; every
# run directory's partition.tsv holds the counts recomputed here from the
# data, and partition.svg beside it its figure (bars per client, stacked by
# category; ranked past 800 clients); fedrun-plot partition draws the table
# too (where gnuplot is installed).
. "$top_srcdir/tests/lib.sh"
corpus="$top_srcdir/examples/data/toy-english/train.txt"

# ---- the corpus in three formats ----
sed -n 1,180p "$corpus" >a.txt
sed -n 181,300p "$corpus" >b.txt
cat a.txt b.txt >all.txt
# tsv: text, label; the same with a header line
{ awk '{ print $0 "\tnews" }' a.txt; awk '{ print $0 "\tfiction" }' b.txt; } >all.tsv
{ printf 'sentence\tgenre\n'; cat all.tsv; } >head.tsv
# jsonl: the label first, other fields ignored; one text holds a \n and
# one a \t escape where the text file has a space (they become spaces)
awk -F'\t' '{
	t = $1
	if (NR == 3) sub(/ /, "\\n", t)
	if (NR == 4) sub(/ /, "\\t", t)
	printf "{\"genre\": \"%s\", \"id\": %d, \"text\": \"%s\"}\n", $2, NR, t
}' all.tsv >all.jsonl
grep -q '\\n' all.jsonl || die "setup: no \\n escape in all.jsonl"

cat >lm.json <<'JSON'
{ "name": "formats", "seed": 3, "rounds": 2,
  "model": { "plugin": "gru-lm", "embed": 8, "hidden": 8, "layers": 1, "bptt": 8 },
  "data": { "train": "all.txt", "partition": { "scheme": "iid", "clients": 3 } },
  "clients": { "fraction": 1.0, "epochs": 1, "batch": 4,
               "optimizer": { "name": "sgd", "lr": 0.5 } },
  "aggregator": { "plugin": "fedavg" },
  "eval": { "every": 0, "final_test": false },
  "output": { "dir": "lm-text" } }
JSON

# ---- gru-lm, iid ----
run_ok lm.json
run_ok lm.json --set output.dir=lm-tsv --set data.train=all.tsv --set data.format=tsv
run_ok lm.json --set output.dir=lm-head --set data.train=head.tsv --set data.format=tsv \
	--set data.header=true
run_ok lm.json --set output.dir=lm-jsonl --set data.train=all.jsonl --set data.format=jsonl
for d in lm-tsv lm-head lm-jsonl; do
	cmp lm-text/final.safetensors $d/final.safetensors || die "gru-lm: $d differs from text"
done
# iid shards: 300 sentences over 3 clients, 100 each; tokens: words + <eos>
[ "$(cut -f1,2 lm-tsv/partition.tsv | tr '\t\n' ' ')" = \
	"client train_sentences client0 100 client1 100 client2 100 " ] ||
	{ cat lm-tsv/partition.tsv; die "gru-lm iid: partition.tsv"; }
cmp lm-text/partition.tsv lm-jsonl/partition.tsv || die "partition.tsv differs text/jsonl"
tokens=$(awk '{ n += NF + 1 } END { print n }' all.txt)
[ "$(awk -F'\t' 'NR > 1 { n += $3 } END { print n }' lm-tsv/partition.tsv)" = "$tokens" ] ||
	die "gru-lm iid: the tokens of partition.tsv do not sum to the corpus's $tokens"

# ---- gru-lm, one client per file: the counts of each file ----
awk -F'\t' '$2 == "news" { print > "news.tsv" } $2 == "fiction" { print > "fict.tsv" }' all.tsv
run_ok lm.json --set output.dir=lm-files --set 'data.train=["news.tsv", "fict.tsv"]' \
	--set data.format=tsv --set 'data.partition={"scheme": "files"}'
want=$(for f in a b; do awk -v c=$f '{ n++; t += NF + 1 } END { printf "%s %d %d\n", c, n, t }' $f.txt; done)
got=$(awk -F'\t' 'NR > 1 { print ($1 == "news" ? "a" : "b"), $2, $3 }' lm-files/partition.tsv)
[ "$got" = "$want" ] || { cat lm-files/partition.tsv; die "files: partition.tsv, expected $want"; }

# ---- gru-lm, Dirichlet: the label as category, as the files were ----
dir='data.partition={"scheme": "dirichlet", "clients": 3, "alpha": 0.5}'
run_ok lm.json --set output.dir=dl-text --set 'data.train=["a.txt", "b.txt"]' --set "$dir"
run_ok lm.json --set output.dir=dl-tsv --set data.train=all.tsv --set data.format=tsv \
	--set 'data.columns={"text": 0, "label": 1}' --set "$dir"
run_ok lm.json --set output.dir=dl-jsonl --set data.train=all.jsonl --set data.format=jsonl \
	--set 'data.fields={"label": "genre"}' --set "$dir"
cmp dl-text/final.safetensors dl-tsv/final.safetensors || die "dirichlet: tsv differs from text"
cmp dl-text/final.safetensors dl-jsonl/final.safetensors || die "dirichlet: jsonl differs from text"
[ "$(head -n 1 dl-tsv/partition.tsv)" = \
	"$(printf 'client\ttrain_sentences\ttrain_tokens\tcategory:news\tcategory:fiction')" ] ||
	{ head -n 1 dl-tsv/partition.tsv; die "dirichlet: partition.tsv header"; }
[ "$(head -n 1 dl-text/partition.tsv | cut -f4-)" = "$(printf 'category:a\tcategory:b')" ] ||
	die "dirichlet over files: the categories are not the files"
# each category column sums to its sentences, each row's to the client's
awk -F'\t' 'NR > 1 { a += $4; b += $5; if ($4 + $5 != $2) bad = 1 }
	END { exit !(a == 180 && b == 120 && !bad) }' dl-tsv/partition.tsv ||
	{ cat dl-tsv/partition.tsv; die "dirichlet: category counts do not add up"; }
[ "$(cut -f2- dl-tsv/partition.tsv | tail -n +2)" = "$(cut -f2- dl-text/partition.tsv | tail -n +2)" ] ||
	die "dirichlet: partition.tsv counts differ between labels and files"

# ---- gru-lm, quantity skew: Dirichlet client sizes, labels ignored ----
q='data.partition={"scheme": "quantity", "clients": 3, "alpha": 0.5}'
run_ok lm.json --set output.dir=q-text --set "$q"
run_ok lm.json --set output.dir=q-tsv --set data.train=all.tsv --set data.format=tsv \
	--set 'data.columns={"text": 0, "label": 1}' --set "$q"
cmp q-text/final.safetensors q-tsv/final.safetensors || die "quantity: the labels changed the partition"
[ "$(cut -f1,2 q-text/partition.tsv)" = "$(cut -f1,2 q-tsv/partition.tsv)" ] ||
	die "quantity: partition.tsv sizes differ with labels"
awk -F'\t' 'NR > 1 { n += $2; if ($2 != 100) skew = 1; if ($4 + $5 != $2) bad = 1 }
	END { exit !(n == 300 && skew && !bad) }' q-tsv/partition.tsv ||
	{ cat q-tsv/partition.tsv; die "quantity: partition.tsv sizes"; }

# ---- transformer: both sides in one file ----
mkdir -p d/x d/y
sed -n 1,60p "$corpus" >d/x/train.en
sed -n 61,100p "$corpus" >d/y/train.en
for c in x y; do
	awk '{ for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? " " : "\n") }' d/$c/train.en >d/$c/train.de
	paste d/$c/train.en d/$c/train.de >d/$c/train.tsv
	paste d/$c/train.de d/$c/train.en |
		awk -F'\t' '{ printf "{\"de\": \"%s\", \"en\": \"%s\"}\n", $1, $2 }' >d/$c/train.jsonl
done
cat >mt.json <<'JSON'
{"name": "formats-mt", "seed": 1, "rounds": 2,
 "model": {"plugin": "transformer", "preset": "tiny", "tokenizer": {"type": "words"},
           "decode": {"beam": 1, "batch": 10}},
 "data": {"src": "en", "tgt": "de", "dir": "d",
          "clients": [{"name": "x", "train": "x/train"}, {"name": "y", "train": "y/train"}]},
 "clients": {"fraction": 1.0, "epochs": 0, "steps": 2, "batch": 8,
             "optimizer": {"name": "sgd", "lr": 0.1}},
 "aggregator": {"plugin": "fedavg"},
 "eval": {"every": 0, "final_test": false},
 "output": {"dir": "mt-text"}}
JSON
run_ok mt.json
run_ok mt.json --set output.dir=mt-tsv --set data.format=tsv \
	--set data.clients.0.train=x/train.tsv --set data.clients.1.train=y/train.tsv
run_ok mt.json --set output.dir=mt-jsonl --set data.format=jsonl \
	--set data.clients.0.train=x/train.jsonl --set data.clients.1.train=y/train.jsonl
cmp mt-text/final.safetensors mt-tsv/final.safetensors || die "transformer: tsv differs from text"
cmp mt-text/final.safetensors mt-jsonl/final.safetensors || die "transformer: jsonl differs from text"
[ "$(cut -f1,2 mt-tsv/partition.tsv | tail -n +2 | tr '\t\n' ' ')" = "x 60 y 40 " ] ||
	{ cat mt-tsv/partition.tsv; die "transformer: partition.tsv"; }
cmp mt-text/partition.tsv mt-jsonl/partition.tsv || die "transformer: partition.tsv differs"

# ---- malformed records: exit 2, the message names file:line ----
# bad MODEL FORMAT FILE CONTENT PATTERN: fedrun validate refuses it
bad() {
	printf "$4" >"$3"
	st=0
	if [ "$1" = lm ]; then
		"$FEDRUN" validate lm.json --set data.format=$2 --set data.train="$3" \
			--set 'data.columns={"text": 0, "label": 1}' >out 2>err || st=$?
	else
		"$FEDRUN" validate mt.json --set data.format=$2 --set data.clients.0.train="../$3" \
			>out 2>err || st=$?
	fi
	[ "$st" -eq 2 ] || { cat err; die "$3: exit $st, expected 2"; }
	grep -q "$5" err || { cat err; die "$3: the message does not say '$5'"; }
}
bad lm tsv cols.tsv 'a b\tnews\nc d\n' "cols.tsv:2: 1 column, but line 1 has 2"
bad lm tsv utf8.tsv 'a b\tnews\nc \377 d\tnews\n' "utf8.tsv:2: invalid UTF-8 at byte 3"
bad mt tsv short.tsv 'a b c\n' "short.tsv:1: 1 column: no column 1 (tgt"
bad mt jsonl json.jsonl '{"en": "a", "de": "b"}\n{"en": "a" "de": "b"}\n' "json.jsonl:2:[0-9]*: not a JSON object"
bad mt jsonl field.jsonl '{"en": "a", "de": "b"}\n\n{"en": "a"}\n' 'field.jsonl:3: no field "de" (tgt)'
bad mt jsonl num.jsonl '{"en": 7, "de": "b"}\n' 'num.jsonl:1: field "en" (src) is 7, expected a string'
bad mt jsonl utf8.jsonl '{"en": "a\377", "de": "b"}\n' "utf8.jsonl:1: invalid UTF-8 at byte 10"
# and in the pipeline: exit 2 naming the key
st=0
"$FEDRUN" validate lm.json --set data.format=csv >out 2>err || st=$?
[ "$st" -eq 2 ] && grep -q 'data.format: expected "text", "tsv" or "jsonl", got "csv"' err ||
	{ cat err; die "format csv: exit $st"; }
st=0
"$FEDRUN" validate lm.json --set data.format=jsonl --set 'data.columns={"text": 1}' >out 2>err || st=$?
[ "$st" -eq 2 ] && grep -q 'data.columns: only with "format": "tsv"' err ||
	{ cat err; die "columns with jsonl: exit $st"; }

# ---- partition.svg, the figure every run directory gets beside the table ----
for d in lm-text lm-tsv lm-files dl-tsv; do
	[ "$(head -c 5 $d/partition.svg)" = "<?xml" ] && [ "$(tail -n 1 $d/partition.svg)" = "</svg>" ] ||
		die "$d: no partition.svg, or not a whole SVG file"
done
# one bar per client, their heights as the clients' sentences (180 and 120)
awk -F'"' '/<rect x=/ { for (i = 1; i < NF; i++) if ($i ~ /height=$/) print $(i + 1) }' \
	lm-files/partition.svg >h.txt
[ "$(wc -l <h.txt)" -eq 2 ] || { cat h.txt; die "files: partition.svg has $(wc -l <h.txt) bars, not 2"; }
awk 'NR == 1 { a = $1 } NR == 2 { b = $1 } END { r = a / b; exit !(r > 1.499 && r < 1.501) }' h.txt ||
	{ cat h.txt; die "files: the bars are not 180:120"; }
grep -q '>news</text>' dl-tsv/partition.svg && grep -q '>fiction</text>' dl-tsv/partition.svg ||
	die "dirichlet: partition.svg has no legend of the categories"
# past 800 clients: the clients ranked by size
run_ok lm.json --set output.dir=lm-many --set data.train="$corpus" --set rounds=0 \
	--set 'data.partition={"scheme": "iid", "clients": 1000}'
grep -q "1000 clients, ranked by size" lm-many/partition.svg || die "1000 clients: not ranked"
[ "$(grep -c '<rect x=' lm-many/partition.svg)" -eq 800 ] || die "1000 clients: not 800 bars"

# A partition.tsv of the user's in the output directory is kept, the run
# refused, unless output.overwrite; a resume rewrites the run's own.
mkdir mine && echo "my table" >mine/partition.tsv
"$FEDRUN" -q lm.json --set output.dir=mine >out 2>err && die "the user's partition.tsv was replaced"
grep -q "partition.tsv exists and is not this run's: set output.overwrite" err || { cat err; die "unclear refusal"; }
[ "$(cat mine/partition.tsv)" = "my table" ] || die "the refused run changed the user's partition.tsv"
run_ok lm.json --set output.dir=mine --set output.overwrite=true
grep -q '^client0	100	' mine/partition.tsv || die "output.overwrite: the run's partition.tsv was not written"

# ---- the figure ----
if command -v gnuplot >/dev/null 2>&1; then
	"$top_srcdir/tools/fedrun-plot" partition -o fig dl-tsv >out 2>err ||
		{ cat err; die "fedrun-plot partition failed"; }
	[ -s fig.png ] && [ -s fig.svg ] || die "fedrun-plot partition: no figure"
	grep -q fiction fig.svg || die "fedrun-plot partition: no category in the legend"
	st=0
	"$top_srcdir/tools/fedrun-plot" partition -o fig2 lm.json >out 2>err || st=$?
	[ "$st" -eq 1 ] && grep -q "no train_sentences column" err ||
		{ cat err; die "fedrun-plot partition on a pipeline: exit $st"; }
else
	echo "gnuplot not installed: fedrun-plot partition not tested"
fi
echo "data formats: text, tsv and jsonl give the same models; partition.tsv adds up"
