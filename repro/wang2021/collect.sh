#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copies what a full run of repro/wang2021/run.sh left in OUT for one
# language pair into DEST, the form in which repro/wang2021/results/en-LANG
# is committed: results.md, settings, times.tsv, the tables, the data sizes
# and overlap check, the vocabulary's table, the figures (fig-*,
# fig2-LANG-*), metrics/ (each stage's metrics.csv, gzipped), scores/ (each
# model's and expert's scores.tsv, and its translations, gzipped), and,
# gzipped under their names in OUT, the vocabulary (LANG-vocab/vocab.txt)
# and the joint held-out sets (data-LANG/joint/): what results.sh and
# check-results.sh recompute results.md and the scores from.
#
# results.md, table*.tsv and fig-table* hold every pair OUT ran: run one
# pair per OUT (run.sh --pairs LANG) for a directory of that pair alone.
# Files already in DEST that the run lacks are left there.
#
# Usage: repro/wang2021/collect.sh OUT LANG DEST
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=collect.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
[ $# -eq 3 ] || die "usage: collect.sh OUT LANG DEST"
out=$1 lang=$2 dest=$3
[ -e "$out/results.md" ] || die "$out/results.md: missing (run run.sh, or results.sh $out)"
[ -e "$out/$lang-vocab/.complete" ] || die "$out: no complete run of the pair en-$lang"
mkdir -p "$dest/metrics" "$dest/scores"
for f in results.md settings times.tsv table1.tsv table2.tsv sizes-"$lang".tsv overlap-"$lang".tsv vocab-"$lang".tsv; do
	[ ! -e "$out/$f" ] || cp "$out/$f" "$dest/"
done
mkdir -p "$dest/$lang-vocab" "$dest/data-$lang/joint"
gzip -9nc "$out/$lang-vocab/vocab.txt" >"$dest/$lang-vocab/vocab.txt.gz"
for f in "$out/data-$lang/joint/"*; do
	gzip -9nc "$f" >"$dest/data-$lang/joint/${f##*/}.gz"
done
for f in "$out"/fig-* "$out/fig2-$lang-"*; do
	[ -e "$f" ] && cp "$f" "$dest/"
done
for r in "$out/$lang"-*/; do
	r=${r%/}
	s=${r##*/}
	[ -e "$r/.complete" ] || continue
	[ -e "$r/metrics.csv" ] && gzip -9nc "$r/metrics.csv" >"$dest/metrics/$s.csv.gz"
	for w in "$r" "$r"/de-*; do
		[ -e "$w/scores.tsv" ] || continue
		name=$s
		[ "$w" = "$r" ] || name=$s-${w##*/}
		cp "$w/scores.tsv" "$dest/scores/$name.tsv"
		for sp in dev test; do
			[ ! -e "$w/hyp-$sp.txt" ] || gzip -9nc "$w/hyp-$sp.txt" >"$dest/scores/$name-hyp-$sp.txt.gz"
		done
	done
done
echo "collect.sh: en-$lang of $out in $dest"
