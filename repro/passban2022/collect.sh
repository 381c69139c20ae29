#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copies what repro/passban2022/run.sh left in OUT into DEST, the form in
# which repro/passban2022/results is committed: results.md, settings,
# times.tsv, overlap.tsv, the tables and figures; metrics/RUN.csv.gz (each
# complete stage's metrics.csv), matrices/RUN.tsv (its eval_matrix.tsv);
# hyps/RUN/MODEL/DOMAIN.txt.gz (the test translations run.sh kept); and
# test/DOMAIN.{en,de}.gz (the client domains' test sets): what results.sh
# and check-results.sh recompute results.md, the copy baseline and the
# intervals from. Files already in DEST that OUT lacks are left there.
#
# Usage: repro/passban2022/collect.sh OUT DEST
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=collect.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
[ $# -eq 2 ] || die "usage: collect.sh OUT DEST"
out=$1 dest=$2
[ -e "$out/results.md" ] || die "$out/results.md: missing (run run.sh, or results.sh $out)"
[ -e "$out/generic/.complete" ] || die "$out: no complete generic model: not a run.sh directory"
mkdir -p "$dest/metrics" "$dest/matrices" "$dest/hyps" "$dest/test"
for f in "$out"/results.md "$out"/settings "$out"/times.tsv "$out"/overlap.tsv "$out"/table*.tsv \
	"$out"/fig-* "$out"/fig3-*; do
	[ ! -e "$f" ] || cp "$f" "$dest/"
done
for r in "$out"/*/; do
	r=${r%/}
	s=${r##*/}
	[ -e "$r/.complete" ] && [ -e "$r/metrics.csv" ] || continue
	gzip -9nc "$r/metrics.csv" >"$dest/metrics/$s.csv.gz"
	[ ! -e "$r/eval_matrix.tsv" ] || cp "$r/eval_matrix.tsv" "$dest/matrices/$s.tsv"
	[ -e "$r/hyps/.complete" ] || continue
	rm -rf "$dest/hyps/$s"
	for m in "$r"/hyps/*/; do
		m=${m%/}
		mkdir -p "$dest/hyps/$s/${m##*/}"
		cp "$m"/*.txt.gz "$dest/hyps/$s/${m##*/}/"
	done
done
for d in cli git packaging gnome office; do
	for l in en de; do
		[ ! -e "$out/data/$d/test.$l" ] || gzip -9nc "$out/data/$d/test.$l" >"$dest/test/$d.$l.gz"
	done
done
echo "collect.sh: $out in $dest"
