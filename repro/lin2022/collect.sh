#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copies what repro/lin2022/run.sh left in OUT into DEST, the form in which
# repro/lin2022/results is committed: settings, times.tsv, and of every
# complete run its metrics.csv, .complete, pipeline.json,
# partition.tsv and log.txt (no checkpoints); of the pretrained encoders
# their config.json, vocab.txt and tokenizer_config.json, and the SHA-256
# of their model.safetensors in encoders.sha256 (the weights themselves
# are not committed: run.sh --only pretrain remakes them, and on the CPU
# model that ran them gives the same bits). Then results.sh OUT DEST writes
# results.md, runs.tsv, the figures and baselines.tsv (the trivial
# baselines, from OUT/data, which is not copied) there;
# check-results.sh DEST/results.md recomputes them.
#
# Usage: repro/lin2022/collect.sh OUT DEST
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
[ -e "$out/settings" ] || die "$out/settings: missing (not a run.sh output directory)"
mkdir -p "$dest"
cp "$out/settings" "$out/times.tsv" "$dest/"
n=0
for c in "$out"/*/.complete; do
	[ -e "$c" ] || continue
	r=$(dirname "$c")
	s=$(basename "$r")
	case $s in encoder-*) continue ;; esac
	mkdir -p "$dest/$s"
	for f in .complete metrics.csv pipeline.json partition.tsv log.txt; do
		[ ! -e "$r/$f" ] || cp "$r/$f" "$dest/$s/"
	done
	n=$((n + 1))
done
: >"$dest/encoders.sha256.new"
for e in "$out"/encoder-*/; do
	e=${e%/}
	[ -e "$e/config.json" ] || continue
	s=$(basename "$e")
	mkdir -p "$dest/$s"
	for f in config.json vocab.txt tokenizer_config.json .complete; do
		[ ! -e "$e/$f" ] || cp "$e/$f" "$dest/$s/"
	done
	(cd "$out" && sha256sum "$s/model.safetensors") >>"$dest/encoders.sha256.new"
done
mv "$dest/encoders.sha256.new" "$dest/encoders.sha256"
"$here/results.sh" "$out" "$dest"
echo "collect.sh: $n runs into $dest"
