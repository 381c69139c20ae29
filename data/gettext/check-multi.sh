#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks a corpus written by build-multi.sh: the tags, the alignment of the
# files, and that no held-out English string of any language (the target's
# included) is in any language's training or dev data.
#
# Usage: check-multi.sh OUTDIR [LANG...]
#   LANG...   the languages to check (default: every subdirectory of
#             OUTDIR with train.src)
# For each language and split: .src, .tgt, .en, .LANG and .tsv have the same
# number of lines, every .src line is <2LANG>, a space and the .en line,
# and .tgt is .LANG. Prints the pairs and distinct English strings per
# language and split, then runs check-overlap.sh --tagged --src src --tgt
# tgt on the languages, which compares every test and dev line of every
# language with the training sets of all of them (test-en-in-train: a test
# sentence's English is trained on in some language; must be 0, and so
# must test-pair-in-train, dev-pair-in-train, dev-en-in-train, and the
# near-duplicate checks, test-en-near-in-train and the like: case, white
# space, punctuation and digits not counted, data/neardup.awk). Exits 0
# when everything holds, 1 otherwise (the first offending lines on
# stderr), 2 on a usage error or files of different lengths.
# See data/gettext/README.md, "Several languages: build-multi.sh".
set -eu
export LC_ALL=C
AWK=${AWK:-awk}
here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "check-multi.sh: $*" >&2
	exit 2
}

case ${1:-} in
-h | --help)
	sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
'' | -*) die "usage: check-multi.sh OUTDIR [LANG...] (see --help)" ;;
esac
outdir=$1
shift
[ -d "$outdir" ] || die "$outdir: no such directory"
if [ $# -eq 0 ]; then
	for path in "$outdir"/*/; do
		l=${path%/}
		l=${l##*/}
		[ -f "$outdir/$l/train.src" ] && set -- "$@" "$l"
	done
	[ $# -gt 0 ] || die "$outdir: no subdirectory has train.src"
fi

bad=0
misaligned=0
printf 'language\tpairs.train\tpairs.dev\tpairs.test\ten.train\ten.dev\ten.test\n'
for l in "$@"; do
	case $l in
	"" | */* | . | ..) die "$l: not a language" ;;
	esac
	row=$l
	for s in train dev test; do
		b=$outdir/$l/$s
		for f in src tgt en "$l" tsv; do
			[ -f "$b.$f" ] || die "$b.$f: missing"
		done
		# One pass: alignment, the tag, .tgt = .LANG, .tsv = .en TAB .LANG.
		n=$($AWK -v l="$l" -v b="$b" '
			function fail(what) {
				if (++errors <= 5)
					printf "check-multi.sh: %s line %d: %s\n", b, NR, what > "/dev/stderr"
			}
			{
				if ((getline t < (b ".tgt")) <= 0 || (getline e < (b ".en")) <= 0 ||
				    (getline x < (b "." l)) <= 0 || (getline p < (b ".tsv")) <= 0) {
					fail("the files have different numbers of lines")
					misaligned = 1
					exit
				}
				if ($0 != "<2" l "> " e)
					fail(".src is not <2" l "> and the .en line: " $0)
				if (t != x)
					fail(".tgt is not the ." l " line: " t)
				if (p != e "\t" x)
					fail(".tsv is not .en TAB ." l)
				if (!(e in seen)) {
					seen[e] = 1
					ne++
				}
			}
			END {
				if ((getline t < (b ".tgt")) > 0 || (getline e < (b ".en")) > 0 ||
				    (getline x < (b "." l)) > 0 || (getline p < (b ".tsv")) > 0) {
					fail("the files have different numbers of lines")
					misaligned = 1
				}
				printf "%d %d %d %d\n", NR, ne, errors, misaligned
			}' "$b.src")
		pairs=${n%% *}
		rest=${n#* }
		strings=${rest%% *}
		rest=${rest#* }
		errors=${rest%% *}
		[ "$errors" -eq 0 ] || bad=1
		[ "${rest#* }" -eq 0 ] || misaligned=1
		row="$row	$pairs"
		eval "str_$s=\$strings"
	done
	printf '%s\t%s\t%s\t%s\n' "$row" "$str_train" "$str_dev" "$str_test"
done

[ "$misaligned" -eq 0 ] || exit 2
status=0
sh "$here/check-overlap.sh" --tagged --src src --tgt tgt "$outdir" "$@" || status=$?
[ "$status" -le 1 ] || exit "$status"
[ "$bad" -eq 0 ] && [ "$status" -eq 0 ] && exit 0
exit 1
