#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copies what repro/lin2022/run.sh left in OUT into DEST, the form in which
# repro/lin2022/results is committed: settings, times.tsv, and of every
# complete run its metrics.csv, .complete, pipeline.json,
# partition.tsv and log.txt (no checkpoints); of the pretrained encoders
# their config.json, vocab.txt and tokenizer_config.json, and in
# encoders.tsv the seeds whose runs started from them and the SHA-256 of
# their model.safetensors (the weights themselves are not committed:
# run.sh --only pretrain remakes them, and on the CPU model that ran them
# gives the same bits). Then results.sh OUT DEST writes results.md,
# runs.tsv, the figures and baselines.tsv (the trivial baselines, from
# OUT/data, which is not copied) there; check-results.sh DEST/results.md
# recomputes them.
#
# With --add, OUT holds runs of other seeds than DEST's (run.sh --seeds on
# another machine, whose encoders came out with other bits): its runs are
# added to DEST's, its pretraining runs as pretrain-SIZE-sS1sS2... (the
# seeds added), its times appended and its encoders' hashes added to
# encoders.tsv for those seeds; every setting but the seeds must be
# DEST's, and no run may be in both. results.sh DEST DEST then rewrites
# results.md from all of them (baselines.tsv kept: the data are the same).
#
# Usage: repro/lin2022/collect.sh [--add] OUT DEST
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=collect.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
add=0
[ "${1:-}" != --add ] || { add=1; shift; }
[ $# -eq 2 ] || die "usage: collect.sh [--add] OUT DEST"
out=$1 dest=$2
[ -e "$out/settings" ] || die "$out/settings: missing (not a run.sh output directory)"

# seeds_of DIR: the seeds of DIR's complete fine-tuning runs, sorted
seeds_of() {
	for c in "$1"/*-s[0-9]*/.complete; do
		[ -e "$c" ] || continue
		r=$(basename "$(dirname "$c")")
		case $r in pretrain-*) continue ;; esac
		echo "${r##*-s}"
	done | sort -n -u | tr '\n' ' ' | sed 's/ $//'
}
# settings_but_seeds FILE: FILE's lines other than seeds=
settings_but_seeds() {
	grep -v '^seeds=' "$1"
}

new_seeds=$(seeds_of "$out")
[ -n "$new_seeds" ] || die "$out: no complete fine-tuning run"
suffix=''
if [ $add = 1 ]; then
	[ -e "$dest/settings" ] || die "$dest/settings: missing (--add adds to a collected directory)"
	[ -e "$dest/encoders.tsv" ] || die "$dest/encoders.tsv: missing"
	settings_but_seeds "$out/settings" >"$dest/settings.out"
	settings_but_seeds "$dest/settings" >"$dest/settings.dest"
	if ! diff "$dest/settings.dest" "$dest/settings.out" >&2; then
		rm -f "$dest/settings.out" "$dest/settings.dest"
		die "$out/settings and $dest/settings differ (above): runs of other settings cannot be added"
	fi
	rm -f "$dest/settings.out" "$dest/settings.dest"
	for s in $new_seeds; do
		case " $(seeds_of "$dest") " in
		*" $s "*) die "seed $s: runs in both $out and $dest" ;;
		esac
		suffix="${suffix}s$s"
	done
	suffix="-$suffix"
	all=$(printf '%s\n' $(seeds_of "$dest") $new_seeds | sort -n -u | tr '\n' ' ' | sed 's/ $//')
	{
		settings_but_seeds "$dest/settings"
		printf 'seeds="%s"\n' "$all"
	} >"$dest/settings.new"
	mv "$dest/settings.new" "$dest/settings"
	awk -F'\t' -v OFS='\t' -v sfx="$suffix" 'NR > 1 && $1 != "total" {
		if ($1 ~ /^pretrain-/) $1 = $1 sfx
		print }' "$out/times.tsv" >>"$dest/times.tsv"
else
	mkdir -p "$dest"
	cp "$out/settings" "$out/times.tsv" "$dest/"
	printf 'seeds\tencoder\tsha256\n' >"$dest/encoders.tsv"
fi
n=0
for c in "$out"/*/.complete; do
	[ -e "$c" ] || continue
	r=$(dirname "$c")
	s=$(basename "$r")
	case $s in encoder-*) continue ;; pretrain-*) s=$s$suffix ;; esac
	[ ! -e "$dest/$s" ] || [ $add = 0 ] || die "$dest/$s: there already"
	mkdir -p "$dest/$s"
	for f in .complete metrics.csv pipeline.json partition.tsv log.txt; do
		[ ! -e "$r/$f" ] || cp "$r/$f" "$dest/$s/"
	done
	n=$((n + 1))
done
for e in "$out"/encoder-*/; do
	e=${e%/}
	[ -e "$e/config.json" ] || continue
	s=$(basename "$e")
	# the same configuration and vocabulary as DEST's encoder of that
	# name, or, added, kept beside it
	d=$s
	for f in config.json vocab.txt tokenizer_config.json; do
		[ ! -e "$e/$f" ] || [ $add = 0 ] || cmp -s "$e/$f" "$dest/$s/$f" || d=$s$suffix
	done
	if [ $add = 0 ] || [ "$d" != "$s" ]; then
		mkdir -p "$dest/$d"
		for f in config.json vocab.txt tokenizer_config.json .complete; do
			[ ! -e "$e/$f" ] || cp "$e/$f" "$dest/$d/"
		done
	fi
	printf '%s\t%s\t%s\n' "$new_seeds" "$s" "$(sha256sum <"$e/model.safetensors" | cut -d' ' -f1)" \
		>>"$dest/encoders.tsv"
done
if [ $add = 1 ]; then
	"$here/results.sh" "$dest" "$dest"
else
	"$here/results.sh" "$out" "$dest"
fi
echo "collect.sh: $n runs into $dest"
