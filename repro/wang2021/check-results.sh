#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputes a results.md of repro/wang2021 from the raw files next to it
# (a run directory of run.sh, or a directory of collect.sh such as
# results/en-de: the runs' metrics.csv, the scores.tsv of every model and
# expert, settings, times.tsv, sizes-LANG.tsv, overlap-LANG.tsv and the
# vocabulary and test set, or vocab-LANG.tsv where they were not
# collected; and the translations with the joint sets' sources and
# references, for the copy baseline and the goals' paired bootstrap) with
# results.sh into a temporary directory, and fails, showing the diff, when
# results.md, table1.tsv, table2.tsv or vocab-LANG.tsv differs. Every
# scores.tsv whose translations and references are both there is scored
# again with fedrun bleu (as run.sh scored it) and must give the same BLEU
# and chrF; where the references are not there the translations must have
# the test set's number of lines, and the scores are taken as they are;
# the sources there must have their references' lines. Then checks that
# Table 1 and Table 2 have their rows, the copy baseline first, with
# "BLEU (chrF)" in every cell (the copy baseline's may say "no
# references" or "no sources"), and that every goal has a verdict ("not
# judged" in a --quick run), a reproduced or contradicted one with its
# interval. CI runs it on the --quick reproduction.
# Usage: repro/wang2021/check-results.sh [RESULTS.md...]
#   (default: repro/wang2021/results/en-*/results.md)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=check-results.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
[ $# -gt 0 ] || set -- "$here"/results/en-*/results.md
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wang2021-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# text FILE: FILE's text (FILE or FILE.gz), into $tmp/text; false when
# there is neither.
text() {
	if [ -e "$1" ]; then
		cp "$1" "$tmp/text"
	elif [ -e "$1.gz" ]; then
		gzip -dc "$1.gz" >"$tmp/text"
	else
		return 1
	fi
}

# rescore DIR SCORES NAME HYP: SCORES (of the model or expert NAME, LANG-...)
# scored again from HYP-SPLIT.txt[.gz] against DIR/data-LANG/joint/SPLIT.LANG[.gz];
# prints "scored" or "unscored" (no references) a split, and fails on a difference.
rescore() {
	d=$1 sc=$2 name=$3 hyp=$4
	lang=${name%%-*}
	tail -n +2 "$sc" | while IFS='	' read -r s c b f; do
		text "$hyp-$s.txt" || die "$sc: no translations $hyp-$s.txt[.gz]"
		mv "$tmp/text" "$tmp/hyp"
		if text "$d/data-$lang/joint/$s.$lang"; then
			find_fedrun
			l=
			[ "$c" = uncased ] && l=-l
			# shellcheck disable=SC2086
			got=$("$FEDRUN" bleu $l -b -w 2 "$tmp/text" "$tmp/hyp") || die "$sc: fedrun bleu failed"
			got=$(echo "$got" | tr -s ' \n' '  ' | sed 's/ $//')
			[ "$got" = "$b $f" ] || die "$sc: $s $c: BLEU and chrF $b $f, but fedrun bleu gives $got"
			echo scored
		else
			n=$(awk -F'\t' -v f="joint/$s.$lang" '$1 == f { print $2 }' "$d/sizes-$lang.tsv")
			[ "$(wc -l <"$tmp/hyp" | tr -d ' ')" = "$n" ] ||
				die "$hyp-$s.txt: $(wc -l <"$tmp/hyp" | tr -d ' ') lines, joint/$s.$lang has ${n:-none}"
			echo unscored
		fi
	done
}

check() {
	md=$1
	[ -e "$md" ] || die "$md: missing"
	dir=$(cd "$(dirname "$md")" && pwd)
	rm -rf "$tmp/out"
	# (the fedrun found here, if any, for the copy baseline and the goals)
	FEDRUN=${FEDRUN:-} WANG2021_FIGURES=0 "$here/results.sh" "$dir" "$tmp/out" >/dev/null
	for f in results.md table1.tsv table2.tsv $(cd "$tmp/out" && ls vocab-*.tsv 2>/dev/null); do
		if ! diff -u "$dir/$f" "$tmp/out/$f"; then
			echo "check-results.sh: $dir/$f differs from what the runs give (results.sh $dir)" >&2
			return 1
		fi
	done
	# every scores.tsv, in run.sh's layout (RUN/scores.tsv, RUN/de-K/scores.tsv)
	# or collect.sh's (scores/NAME.tsv)
	for c in "$dir"/*/.complete; do
		[ -e "$c" ] || continue
		r=${c%/.complete}
		for w in "$r" "$r"/de-*; do
			[ ! -e "$w/scores.tsv" ] || rescore "$dir" "$w/scores.tsv" "${r##*/}" "$w/hyp"
		done
	done >"$tmp/rescored"
	for sc in "$dir"/scores/*.tsv; do
		[ ! -e "$sc" ] || rescore "$dir" "$sc" "$(basename "$sc" .tsv)" "${sc%.tsv}-hyp"
	done >>"$tmp/rescored"
	# the sources: as many lines as their references (sizes-LANG.tsv)
	for f in "$dir"/data-*/joint/*.en "$dir"/data-*/joint/*.en.gz; do
		[ -e "$f" ] || continue
		lang=${f%/joint/*}
		lang=${lang##*/data-}
		sp=${f##*/}
		sp=${sp%%.*}
		text "${f%.gz}" || die "$f: cannot read"
		n=$(awk -F'\t' -v f="joint/$sp.$lang" '$1 == f { print $2 }' "$dir/sizes-$lang.tsv")
		[ "$(wc -l <"$tmp/text" | tr -d ' ')" = "$n" ] ||
			die "$f: $(wc -l <"$tmp/text" | tr -d ' ') lines, joint/$sp.$lang has ${n:-none}"
	done
	scored=$(grep -c '^scored$' "$tmp/rescored" || :)
	unscored=$(grep -c '^unscored$' "$tmp/rescored" || :)
	awk '
	/^## / { section = substr($0, 4); sub(/:.*/, "", section) }
	/^\*\*This is a --quick run/ { quick = 1 }
	section == "Goals" && /^- / {
		goals++
		if ($0 !~ /: \*\*(reproduced|contradicted|inconclusive|not judged)\*\* \(/) {
			print "Goals: no verdict: " $0; bad = 1
		} else if (quick && $0 !~ /\*\*not judged\*\* \(/) {
			print "Goals: judged in a --quick run: " $0; bad = 1
		} else if ($0 ~ /\*\*(reproduced|contradicted)\*\* \(/ && $0 !~ /95% interval \[[-0-9.]+, [-0-9.]+\]; .*paired bootstrap/) {
			print "Goals: judged without its interval: " $0; bad = 1
		} else if ($0 ~ /\*\*inconclusive\*\* \(/ && $0 !~ /95% interval \[|\(no references committed: no interval;/) {
			print "Goals: inconclusive without an interval or its reason: " $0; bad = 1
		}
	}
	section != "Table 1" && section != "Table 2" { next }
	/^\| / && !/^\|---/ {
		n = split($0, c, "|")
		if (c[2] == " system ") {
			cols[section] = n
			for (i = 3; i < n; i++) { split(c[i], w, " "); pair[w[1]] = 1 }
			next
		}
		if (!(section in cols)) next
		rows[section]++
		copy = (c[2] == " copy the source ")
		if (copy != (rows[section] == 1)) { printf "%s: row %d is \"%s\": the copy baseline is the first row, once\n", section, rows[section], c[2]; bad = 1 }
		if (n != cols[section]) { printf "%s: row \"%s\" has %d cells, the header %d\n", section, c[2], n, cols[section]; bad = 1 }
		for (i = 3; i < n; i++)
			if (c[i] !~ /^ [0-9]+\.[0-9]+ \([0-9]+\.[0-9]+\) $/ && !(copy && c[i] ~ /^ no (references|sources) $/)) {
				printf "%s: row \"%s\": cell %d is \"%s\", not \"BLEU (chrF)\"\n", section, c[2], i - 2, c[i]
				bad = 1
			}
	}
	END {
		if (rows["Table 1"] != ROWS1) { printf "Table 1: %d rows, expected %d\n", rows["Table 1"], ROWS1; bad = 1 }
		if (rows["Table 2"] != 5) { printf "Table 2: %d rows, expected 5\n", rows["Table 2"]; bad = 1 }
		if (cols["Table 1"] < 4) { print "Table 1: no column of numbers"; bad = 1 }
		for (p in pair) npairs++
		if (goals != 8 * npairs) { printf "Goals: %d, expected %d (8 a pair)\n", goals, 8 * npairs; bad = 1 }
		exit bad
	}' ROWS1="${ROWS1:-10}" "$md" || return 1
	if [ "$unscored" -gt 0 ]; then
		how="$scored scores (a split and case each) scored again with fedrun bleu, $unscored taken as they are (no references; the translations have the test set's lines)"
	else
		how="$scored scores (a split and case each) scored again with fedrun bleu"
	fi
	echo "check-results.sh: $md recomputes from the runs; Tables 1 and 2 have their rows, the goals their verdicts; $how"
}

for md in "$@"; do
	check "$md"
done
