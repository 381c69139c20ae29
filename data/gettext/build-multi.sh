#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds a multilingual English->X corpus from Debian's gettext catalogues
# for low-resource translation with helper languages: one target language
# held to a small training set, helper languages with all their data, and
# one split of the English strings shared by every language.
#
# Usage: build-multi.sh [OPTIONS] TARGET HELPERS OUTDIR
#   TARGET              the low-resource language (is), as build.sh names it
#   HELPERS             helper languages, comma-separated (da,nb,sv,de,nl,fr)
#   --domains A,B,...   these domains for every language (default: all in
#                       domains.txt); a helper without pairs in one of them
#                       goes on without it
#   --train-size N      the target's training pairs (3000; 0: all of them)
#   --keep-tree DIR     keep each language's catalogues in DIR/LANG
#   --deb-cache DIR     keep the downloaded .deb files in DIR and reuse them
#                       (default: a temporary one shared by the languages)
#   --from-dir DIR      no download: DIR/LANG is each language's tree, as
#                       --keep-tree writes it (build.sh --from-dir)
#   --max-tokens N      drop pairs with a side longer than N tokens (200)
# Each language is cleaned by build.sh --no-split (same rules, same
# duplicates dropped), its domains merged (a pair in two domains once),
# then the distinct English strings of all languages are split once by
# build.sh's hash: test and dev are the strings up to the hash of the
# TARGET's k-th and 2k-th English string, k = min(1000, 5% of the target's
# distinct strings); the rest is train, for every language. A dev or test
# string that is a near-duplicate of a training string of any language
# (data/neardup.awk) goes from every language. The target's
# training set is its N training pairs of lowest (hash, English,
# translation). Sources carry the tag <2LANG>. Output: OUTDIR/LANG/
# {train,dev,test}.{en,LANG,tsv} (untagged, as build.sh) and .{src,tgt}
# (the tagged source and the translation, the suffixes a pipeline names),
# stats.tsv, cleaning.tsv, neardup.tsv, packages.tsv, SOURCE.
# See data/gettext/README.md, "Several languages: build-multi.sh".
set -eu
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
AWK=${AWK:-awk}
PERCENT=5
CAP=1000

die() {
	echo "build-multi.sh: $*" >&2
	exit 1
}
note() {
	echo "build-multi.sh: $*" >&2
}

domains=
tree=
keep=
debcache=
maxtok=200
size=3000
while [ $# -gt 0 ]; do
	case $1 in
	--domains | --keep-tree | --from-dir | --max-tokens | --deb-cache | --train-size)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--domains) domains=$2 ;;
		--keep-tree) keep=$2 ;;
		--from-dir) tree=$2 ;;
		--deb-cache) debcache=$2 ;;
		--max-tokens) maxtok=$2 ;;
		--train-size) size=$2 ;;
		esac
		shift
		;;
	-h | --help)
		sed -n '3,34p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 3 ] || die "usage: build-multi.sh [OPTIONS] TARGET HELPERS OUTDIR (see --help)"
target=$1
helpers=$(printf '%s' "$2" | tr ',' ' ')
outdir=$3
case $size in
'' | *[!0-9]*) die "--train-size needs a number (0: all)" ;;
esac
[ -n "$helpers" ] || die "no helper languages"
langs="$target $helpers"
for l in $langs; do
	case $l in
	en) die "en is the source of every pair, not a language to translate into" ;;
	src | tgt | tsv) die "$l: not a language code (a file suffix of the output)" ;;
	*[!A-Za-z0-9_@-]* | "") die "$l: not a language code" ;;
	esac
done
[ "$(printf '%s\n' $langs | sort | uniq -d)" = "" ] || die "a language is named twice: $(echo $langs)"
[ -z "$tree" ] || [ -z "$keep" ] || die "--keep-tree and --from-dir exclude each other"
[ -z "$tree" ] || [ -z "$debcache" ] || die "--deb-cache and --from-dir exclude each other"
if [ -n "$tree" ]; then
	for l in $langs; do
		[ -d "$tree/$l" ] || die "$tree/$l: no such directory (--from-dir wants DIR/LANG per language)"
	done
fi

work=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf "$work"' EXIT
tab=$(printf '\t')

# A kept tree has no directory for a domain without catalogues of its
# language (git in Danish): such a language goes on without the domain, as
# it would after a download. A domain in no language's tree is a mistake.
if [ -n "$tree" ] && [ -n "$domains" ]; then
	for d in $(printf '%s' "$domains" | tr ',' ' '); do
		found=
		for l in $langs; do
			[ -d "$tree/$l/$d" ] && found=1
		done
		[ -n "$found" ] || die "unknown domain $d (in none of $(for l in $langs; do printf '%s/%s ' "$tree" "$l"; done| sed 's/ $//'))"
	done
fi

# ---- Each language's cleaned pairs per domain, by build.sh.
for l in $langs; do
	set -- --no-split --max-tokens "$maxtok"
	if [ -n "$tree" ] && [ -n "$domains" ]; then
		mine=
		for d in $(printf '%s' "$domains" | tr ',' ' '); do
			if [ -d "$tree/$l/$d" ]; then
				mine="$mine,$d"
			else
				note "$l: no $d in $tree/$l: goes on without it"
			fi
		done
		[ -n "$mine" ] || die "$l: none of the domains in $tree/$l"
		set -- "$@" --domains "${mine#,}"
	elif [ -n "$domains" ]; then
		set -- "$@" --domains "$domains"
	fi
	if [ -n "$tree" ]; then
		set -- "$@" --from-dir "$tree/$l"
	else
		set -- "$@" --deb-cache "${debcache:-$work/debs}"
		[ -z "$keep" ] || set -- "$@" --keep-tree "$keep/$l"
	fi
	note "$l: cleaning its catalogues (build.sh --no-split)"
	sh "$here/build.sh" "$@" en "$l" "$work/pairs/$l" ||
		die "$l: build.sh failed"
done

# ---- Per language, the domains merged in name order: a pair (English,
# translation) that two domains share is kept once.
for l in $langs; do
	doms=$(cd "$work/pairs/$l" && for d in *; do [ -f "$d/pairs.tsv" ] && echo "$d"; done | sort)
	for d in $doms; do
		cat "$work/pairs/$l/$d/pairs.tsv"
	done | $AWK '!seen[$0]++' >"$work/$l.pairs"
	[ -s "$work/$l.pairs" ] || die "$l: no pairs in the domains chosen"
done

# ---- One split of the English strings: hashes by split.awk, as build.sh.
for l in $langs; do
	cut -f1 "$work/$l.pairs"
done | sort -u | $AWK -f "$here/split.awk" -v step=hash |
	sort -t "$tab" -k1,1n -k2,2 >"$work/english"
cut -f1 "$work/$target.pairs" | sort -u >"$work/target-english"
# Walks the strings in (hash, English) order: test up to and including
# the target's k-th string, dev up to its 2k-th, the rest train.
$AWK -v cap="$CAP" -v percent="$PERCENT" -v counts="$work/split-counts" '
	BEGIN { FS = "\t" }
	FNR == NR { tgt[$0] = 1; n++; next }
	FNR == 1 {
		k = int(n * percent / 100)
		if (k > cap)
			k = cap
		s = k > 0 ? "test" : "train"
	}
	{
		print $1 "\t" $2 "\t" s
		if ($2 in tgt) {
			c++
			if (c == k)
				s = "dev"
			if (c == 2 * k)
				s = "train"
		}
	}
	END { printf "%d\t%d\n", n, k > counts }' "$work/target-english" "$work/english" >"$work/split"
read -r ntarget k <"$work/split-counts"
[ "$k" -gt 0 ] || die "$target has $ntarget distinct English strings: too few for dev and test (20 at least)"

# ---- Near-duplicates (data/neardup.awk: case, white space, punctuation
# and digits do not count): a dev or test string that is a near-duplicate
# of a training string of any language (of all its training pairs, before
# --train-size) goes from every language's held-out sets. They shrink;
# training is unchanged. near.strings: English, Jaccard, the training
# string it is near.
cut -f2,3 "$work/split" | $AWK -F '\t' '$2 == "train" { print $1 }' >"$work/train.en"
: >"$work/near"
$AWK -F '\t' '$3 != "train"' "$work/split" |
	$AWK -f "$here/../neardup.awk" -v field=2 -v dropped="$work/near" "$work/train.en" - >/dev/null ||
	die "near-duplicate check failed"
$AWK -F '\t' 'FILENAME == ARGV[1] { en[FNR] = $0; next } { print $4 "\t" $2 "\t" en[$1] }' \
	"$work/train.en" "$work/near" >"$work/near.strings"

# ---- Each language's pairs with their split, in (hash, English,
# translation) order, the purged ones apart in LANG.near (split, English,
# translation, Jaccard, training string); the target's training pairs
# held to the first N.
for l in $langs; do
	: >"$work/$l.near"
	$AWK -v near="$work/$l.near" '
		BEGIN { FS = "\t" }
		FILENAME == ARGV[1] { nd[$1] = $2 "\t" $3; next }
		FILENAME == ARGV[2] { h[$2] = $1; s[$2] = $3; next }
		$1 in nd { print s[$1] "\t" $0 "\t" nd[$1] > near; next }
		{ print h[$1] "\t" s[$1] "\t" $0 }' "$work/near.strings" "$work/split" "$work/$l.pairs" |
		sort -t "$tab" -k1,1n -k3,3 -k4,4 >"$work/$l.all"
	mkdir -p "$work/out/$l"
	tagged="<2$l> "
	$AWK -v out="$work/out/$l" -v l="$l" -v tag="$tagged" \
		-v lim="$([ "$l" = "$target" ] && echo "$size" || echo 0)" '
		BEGIN {
			FS = "\t"
			split("train dev test", S, " ")
			for (i = 1; i <= 3; i++)
				for (j = 1; j <= 5; j++) {
					f = out "/" S[i] "." (j == 1 ? "en" : j == 2 ? l : j == 3 ? "tsv" : j == 4 ? "src" : "tgt")
					printf "" > f
				}
		}
		{
			if ($2 == "train") {
				avail++
				if (lim > 0 && ntrain >= lim)
					next
				ntrain++
			}
			b = out "/" $2
			print $3 > (b ".en")
			print $4 > (b "." l)
			print $3 "\t" $4 > (b ".tsv")
			print tag $3 > (b ".src")
			print $4 > (b ".tgt")
		}
		END { print avail + 0 > (out "/.available") }' "$work/$l.all"
done

# ---- Statistics per language: pairs per split (and the training pairs
# there were before the target's cap), tokens and distinct tokens of the
# training sets; the per-domain cleaning and packages of each language.
{
	printf 'language\tpairs.train\tpairs.dev\tpairs.test\tpairs.train.available\ten.tokens.train\ttgt.tokens.train\ten.types.train\ttgt.types.train\ten.strings.train\ten.strings.dev\ten.strings.test\tneardup.dev\tneardup.test\n'
	for l in $langs; do
		printf '%s' "$l"
		$AWK -F '\t' -v avail="$(cat "$work/out/$l/.available")" '
			FILENAME ~ /\.near$/ { near[$1]++; next }
			# By name: a held-out set emptied by the purge has no line 1.
			FNR == 1 { f = FILENAME ~ /\/train\.tsv$/ ? 1 : FILENAME ~ /\/dev\.tsv$/ ? 2 : 3 }
			{
				pairs[f]++
				if (!((f, $1) in es)) { es[f, $1] = 1; ne[f]++ }
				if (f > 1) next
				n = split($1, w, " ")
				for (i = 1; i <= n; i++) { st++; if (!(w[i] in sv)) { sv[w[i]] = 1; ns++ } }
				n = split($2, w, " ")
				for (i = 1; i <= n; i++) { tt++; if (!(w[i] in tv)) { tv[w[i]] = 1; nt++ } }
			}
			END {
				printf "\t%d\t%d\t%d\t%d", pairs[1], pairs[2], pairs[3], avail
				printf "\t%d\t%d\t%d\t%d", st, tt, ns, nt
				printf "\t%d\t%d\t%d", ne[1], ne[2], ne[3]
				printf "\t%d\t%d\n", near["dev"], near["test"]
			}' "$work/$l.near" "$work/out/$l/train.tsv" "$work/out/$l/dev.tsv" "$work/out/$l/test.tsv"
		rm -f "$work/out/$l/.available"
	done
} >"$work/out/stats.tsv"
# neardup.tsv: each purged pair, with the training string it is near.
{
	printf 'language\tsplit\ten\ttranslation\tjaccard\ttrain.en\n'
	for l in $langs; do
		sed "s/^/$l$tab/" "$work/$l.near"
	done
} >"$work/out/neardup.tsv"
{
	printf 'language\t'
	head -n 1 "$work/pairs/$target/cleaning.tsv"
	for l in $langs; do
		sed 1d "$work/pairs/$l/cleaning.tsv" | sed "s/^/$l$tab/"
	done
} >"$work/out/cleaning.tsv"
if [ -f "$work/pairs/$target/packages.tsv" ]; then
	{
		printf 'language\t'
		head -n 1 "$work/pairs/$target/packages.tsv"
		for l in $langs; do
			[ -f "$work/pairs/$l/packages.tsv" ] &&
				sed 1d "$work/pairs/$l/packages.tsv" | sed "s/^/$l$tab/"
		done
	} >"$work/out/packages.tsv"
fi
{
	echo "languages: en-X, X in $(echo $langs) (catalogues: usr/share/locale/X)"
	echo "target: $target; helpers: $(echo $helpers)"
	echo "domains: $(sed -n 's/^domains: //p' "$work/pairs/$target/SOURCE") (each helper: those it has pairs in)"
	echo "cleaning: build.sh --no-split, max $maxtok tokens a side; a pair in two domains of a language once; see cleaning.tsv"
	echo "split: one for all languages, by build.sh's hash of the English string (split.awk): test and dev up to the hash of $target's ${k}th and $((2 * k))th of $ntarget distinct English strings (k = min($CAP, $PERCENT%)), the rest train"
	echo "near-duplicates: dev and test English strings near a training string of any language (data/neardup.awk) removed from every language: $(wc -l <"$work/near.strings" | tr -d ' ') strings, $(($(wc -l <"$work/out/neardup.tsv") - 1)) pairs; see neardup.tsv"
	echo "target training set: $([ "$size" -gt 0 ] && echo "the first $size" || echo "all") training pairs of $target in (hash, English, translation) order"
	echo "tag: the source side (.src) is <2X> and a space before the English (.en); .tgt is the translation (.X)"
} >"$work/out/SOURCE"

mkdir -p "$outdir" || die "cannot create $outdir"
for l in $langs; do
	rm -rf "${outdir:?}/$l"
done
cp -R "$work/out/." "$outdir/" || die "cannot copy the corpora into $outdir"

printf '%-8s %7s %5s %5s %9s\n' language train dev test available
$AWK -F '\t' 'NR > 1 { printf "%-8s %7d %5d %5d %9d\n", $1, $2, $3, $4, $5 }' "$outdir/stats.tsv"
note "$(($(wc -l <"$outdir/neardup.tsv") - 1)) held-out pairs purged as near-duplicates of training strings (neardup.tsv)"
echo "build-multi.sh: en-{$(echo $langs | tr ' ' ',')} corpora written to $outdir" >&2
