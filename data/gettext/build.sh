#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds parallel corpora for machine translation from the gettext message
# catalogues that Debian packages ship: English source strings and their
# translations, one domain per package family (domains.txt), with
# deterministic dev and test splits per domain.
#
# Usage: build.sh [OPTIONS] SRC TGT OUTDIR
#   SRC TGT             language codes; one of them is en (the original
#                       strings), the other the catalogues' language as
#                       named under usr/share/locale (de, fr, is, eu, pt_BR)
#   --domains A,B,...   only these domains (default: all in domains.txt)
#   --keep-tree DIR     keep the fetched catalogues in DIR (for --from-dir)
#   --from-dir DIR      no download: process DIR/DOMAIN/PACKAGE/... trees
#                       holding .../LANG/LC_MESSAGES/*.mo files
#   --max-tokens N      drop pairs with a side longer than N tokens (200)
#   --deb-cache DIR     keep the downloaded .deb files in DIR, and take a
#                       package from there instead of downloading it when
#                       DIR holds one (builds of several languages share
#                       the packages that are not per language)
#   --no-split          write each domain's cleaned pairs, unsplit, to
#                       OUTDIR/DOMAIN/pairs.tsv (a domain without pairs is
#                       reported, not refused); what build-multi.sh reads
#   --list              print the domains and their packages, and exit
# See data/gettext/README.md for the rules and the output layout.
set -eu
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
AWK=${AWK:-awk}
# Held-out sets: 5% of a domain's distinct English strings each for dev and
# test, at most 1000 each.
PERCENT=5
CAP=1000

die() {
	echo "build.sh: $*" >&2
	exit 1
}
note() {
	echo "build.sh: $*" >&2
}

domains=
tree=
keep=
maxtok=200
debcache=
nosplit=
while [ $# -gt 0 ]; do
	case $1 in
	--domains | --keep-tree | --from-dir | --max-tokens | --deb-cache)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--domains) domains=$(printf '%s' "$2" | tr ',' ' ') ;;
		--deb-cache) debcache=$2 ;;
		--keep-tree) keep=$2 ;;
		--from-dir) tree=$2 ;;
		--max-tokens) maxtok=$2 ;;
		esac
		shift
		;;
	--no-split) nosplit=1 ;;
	--list)
		grep -v '^#' "$here/domains.txt" | grep .
		exit 0
		;;
	-h | --help)
		sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 3 ] || die "usage: build.sh [OPTIONS] SRC TGT OUTDIR (see --help)"
src=$1
tgt=$2
outdir=$3
case $src/$tgt in
en/en) die "SRC and TGT are both en" ;;
en/*) lang=$tgt ;;
*/en) lang=$src ;;
*) die "one of SRC and TGT must be en (the catalogues' original strings); got $src and $tgt" ;;
esac
case $lang in
*[!A-Za-z0-9_@-]* | "") die "$lang: not a language code" ;;
esac
case $maxtok in
'' | *[!0-9]* | 0) die "--max-tokens needs a positive number" ;;
esac
[ -z "$tree" ] || [ -z "$keep" ] || die "--keep-tree and --from-dir exclude each other"

for tool in msgunfmt msgconv sort "$AWK"; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "$tool is required but not installed (Debian: apt-get install gettext)"
done

work=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf "$work"' EXIT

# The domain list: "domain pkg pkg ..." per line.
grep -v '^#' "$here/domains.txt" | grep . >"$work/domains" ||
	die "$here/domains.txt: no domains"
$AWK '{ for (i = 2; i <= NF; i++) if (seen[$i]++) { print "package " $i " is in two domains"; exit 1 } }' \
	"$work/domains" >&2 || die "$here/domains.txt: broken"

# ---- The network part: fetch the packages of the chosen domains and keep
# the target language's catalogues in a tree DOMAIN/PACKAGE/<paths>.
fetch() { # tree
	command -v apt-get >/dev/null 2>&1 || die "apt-get is required to download packages (or use --from-dir)"
	command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb is required (or use --from-dir)"
	debpkg=$(printf '%s' "$lang" | tr 'A-Z_' 'a-z-' | sed 's/@.*//')
	debs=${debcache:-$work/debs}
	mkdir -p "$1" "$debs" "$work/x" || die "cannot create $debs"
	debs=$(cd "$debs" && pwd)
	: >"$work/wanted"
	for d in $domains; do
		for p in $($AWK -v d="$d" '$1 == d { for (i = 2; i <= NF; i++) print $i }' "$work/domains"); do
			p=$(printf '%s' "$p" | sed "s/@LANG@/$debpkg/g")
			if apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
				printf '%s %s\n' "$d" "$p" >>"$work/wanted"
			else
				note "$d: package $p is not in the apt lists (none for $lang, or run apt-get update as root): skipped"
			fi
		done
	done
	[ -s "$work/wanted" ] ||
		die "no package of the chosen domains is in the apt lists; run apt-get update (as root) first"
	: >"$work/missing"
	for p in $(cut -d' ' -f2 "$work/wanted"); do
		ls "$debs/${p}_"*.deb >/dev/null 2>&1 || echo "$p" >>"$work/missing"
	done
	[ -z "$debcache" ] ||
		note "$(($(wc -l <"$work/wanted") - $(wc -l <"$work/missing"))) packages already in $debcache"
	echo "build.sh: downloading $(wc -l <"$work/missing" | tr -d ' ') packages with apt-get download ..." >&2
	if [ -s "$work/missing" ] &&
		! (cd "$debs" && apt-get download $(cat "$work/missing")) >"$work/apt.log" 2>&1; then
		cat "$work/apt.log" >&2
		die "apt-get download failed (is the Debian archive reachable? if it reports 404 Not Found, the package lists are stale: run apt-get update as root)"
	fi
	printf 'domain\tpackage\tversion\tsha256\tcatalogues\n' >"$1/packages.tsv"
	while read -r d p; do
		deb=$(ls "$debs/${p}_"*.deb 2>/dev/null | head -n 1)
		[ -n "$deb" ] || die "apt-get download did not leave a .deb for $p"
		version=$(dpkg-deb -f "$deb" Version)
		sum=$(sha256sum <"$deb" | cut -d' ' -f1)
		rm -rf "$work/x/$p"
		dpkg-deb -x "$deb" "$work/x/$p" || die "$deb: cannot unpack"
		n=0
		for mo in $(cd "$work/x/$p" && find . -path "*/$lang/LC_MESSAGES/*.mo" -type f | sort); do
			mkdir -p "$1/$d/$p/$(dirname "$mo")"
			cp "$work/x/$p/$mo" "$1/$d/$p/$mo"
			n=$((n + 1))
		done
		rm -rf "$work/x/$p"
		[ -n "$debcache" ] || rm -f "$deb"
		[ "$n" -gt 0 ] || note "$d: $p $version has no catalogue for $lang: skipped"
		printf '%s\t%s\t%s\t%s\t%d\n' "$d" "$p" "$version" "$sum" "$n" >>"$1/packages.tsv"
	done <"$work/wanted"
}

if [ -n "$tree" ]; then
	[ -d "$tree" ] || die "$tree: no such directory"
	all=$(cd "$tree" && for d in *; do [ -d "$d" ] && echo "$d"; done | sort)
	[ -n "$all" ] || die "$tree: no domain directories"
	printf "%s\n" "$all" | grep -qx all && die "$tree: a domain may not be called all (the union)"
else
	all=$(cut -d' ' -f1 "$work/domains" | sort)
fi
if [ -n "$domains" ]; then
	for d in $domains; do
		printf '%s\n' "$all" | grep -qx "$d" ||
			die "unknown domain $d (known: $(echo $all | tr ' ' ','))"
	done
	domains=$(printf '%s\n' $domains | sort -u)
else
	domains=$all
fi

if [ -z "$tree" ]; then
	tree=${keep:-$work/tree}
	fetch "$tree"
fi

# ---- The processing part: catalogues -> pairs -> cleaned pairs per domain.
mkdir -p "$work/d"
for d in $domains; do
	: >"$work/d/$d.raw"
	: >"$work/d/$d.po-counts"
	: >"$work/d/$d.clean-counts"
	ncat=0
	for mo in $(cd "$tree" && find "$d" -path "*/$lang/LC_MESSAGES/*.mo" -type f 2>/dev/null | sort); do
		# msgunfmt writes the catalogue's own charset; a few are Latin-1.
		if ! msgunfmt "$tree/$mo" >"$work/po" 2>"$work/err" ||
			! msgconv -t UTF-8 "$work/po" >"$work/po8" 2>>"$work/err"; then
			cat "$work/err" >&2
			note "$mo: cannot read: skipped"
			continue
		fi
		$AWK -f "$here/po.awk" -v file="$mo" -v counts="$work/d/$d.po-counts" \
			"$work/po8" >>"$work/d/$d.raw" || die "$mo: cannot parse the output of msgunfmt"
		ncat=$((ncat + 1))
	done
	echo "$ncat" >"$work/d/$d.catalogues"
	$AWK -f "$here/clean.awk" -v maxtok="$maxtok" -v counts="$work/d/$d.clean-counts" \
		"$work/d/$d.raw" >"$work/d/$d.clean" || die "$d: cleaning failed"
done

empty=
full=
for d in $domains; do
	if [ -s "$work/d/$d.clean" ]; then full="$full $d"; else empty="$empty $d"; fi
done
if [ -n "$nosplit" ] && [ -n "$full" ]; then
	[ -z "$empty" ] || note "no pairs for $lang in domain(s):$empty (written empty)"
elif [ -n "$empty" ]; then
	msg="no pairs for $lang in domain(s):$empty"
	[ -n "$full" ] && msg="$msg; these have some: --domains $(echo $full | tr ' ' ',')"
	die "$msg"
fi

# Prints cleaning.tsv from the counts, $work/near (the held-out pairs
# purged as near-duplicates, as neardup.awk's dropped lines) and
# $work/final (the pairs kept, as DOMAIN<TAB>SPLIT<TAB>EN<TAB>XX lines).
cleaning_table() {
	printf 'domain\tcatalogues\tpairs\tcredits\tno-text\tidentical\tlength\tratio\tduplicate\tleak\tneardup\tkept\n'
	for d in $domains; do
		$AWK -F '\t' -v d="$d" -v ncat="$(cat "$work/d/$d.catalogues")" '
			FILENAME ~ /po-counts$/ && $1 == "read" { c["pairs"] += $2; next }
			FILENAME ~ /clean-counts$/ { if ($1 != "read" && $1 != "kept") c[$1] += $2; next }
			FILENAME ~ /leak-counts$/ { if ($1 == d) c["leak"] += $3; next }
			FILENAME ~ /near$/ { if ($3 == d) c["neardup"]++; next }
			FILENAME ~ /final$/ && $1 == d { kept++ }
			END {
				printf "%s\t%d\t%d", d, ncat, c["pairs"]
				n = split("credits no-text identical length ratio duplicate leak neardup", r, " ")
				for (i = 1; i <= n; i++) printf "\t%d", c[r[i]]
				printf "\t%d\n", kept
			}' "$work/d/$d.po-counts" "$work/d/$d.clean-counts" "$work/leak-counts" "$work/near" "$work/final"
	done
}

# Writes DIR/packages.tsv: the tree's, for the domains built.
packages_table() { # DIR
	[ -f "$tree/packages.tsv" ] || return 0
	$AWK -F '\t' -v list=" $(echo $domains) " 'NR == 1 || index(list, " " $1 " ")' \
		"$tree/packages.tsv" >"$1/packages.tsv"
}

# ---- --no-split: the cleaned pairs of each domain (EN<TAB>XX, in the
# order clean.awk kept them), for build-multi.sh to split across languages.
if [ -n "$nosplit" ]; then
	out=$work/out
	: >"$work/final"
	: >"$work/leak-counts"
	: >"$work/near"
	for d in $domains; do
		mkdir -p "$out/$d"
		cp "$work/d/$d.clean" "$out/$d/pairs.tsv"
		$AWK -v d="$d" '{ print d "\tnone\t" $0 }' "$work/d/$d.clean" >>"$work/final"
	done
	cleaning_table >"$out/cleaning.tsv"
	packages_table "$out"
	{
		echo "languages: en-$lang (catalogues: $lang), cleaned pairs, not split"
		echo "domains: $(echo $domains)"
		echo "cleaning: max $maxtok tokens a side; see cleaning.tsv"
	} >"$out/SOURCE"
	mkdir -p "$outdir" || die "cannot create $outdir"
	for d in $domains; do
		rm -rf "${outdir:?}/$d"
	done
	cp -R "$out/." "$outdir/" || die "cannot copy the pairs into $outdir"
	echo "build.sh: cleaned en-$lang pairs written to $outdir" >&2
	exit 0
fi

# ---- Splits: per domain by the hash of the English string, then across
# domains nothing held out anywhere stays in training, and no held-out
# pair is a near-duplicate of a training string.
tab=$(printf '\t')
: >"$work/assigned"
for d in $domains; do
	$AWK -f "$here/split.awk" -v step=hash "$work/d/$d.clean" |
		sort -t "$tab" -k1,1n -k2,2 -k3,3 >"$work/d/$d.hashed"
	$AWK -f "$here/split.awk" -v step=assign -v domain="$d" -v cap="$CAP" -v percent="$PERCENT" \
		"$work/d/$d.hashed" "$work/d/$d.hashed" >>"$work/assigned"
done
: >"$work/leak-counts"
$AWK -f "$here/split.awk" -v step=leak -v counts="$work/leak-counts" \
	"$work/assigned" "$work/assigned" >"$work/unpurged"
# Near-duplicates (data/neardup.awk: case, white space, punctuation and
# digits do not count): a dev or test pair whose English is a
# near-duplicate of the English of a training pair of any domain goes.
# The held-out sets shrink; training is unchanged.
$AWK -F '\t' '$2 == "train" { print $3 }' "$work/unpurged" | sort -u >"$work/train.en"
: >"$work/near"
$AWK -F '\t' '$2 != "train"' "$work/unpurged" |
	$AWK -f "$here/../neardup.awk" -v field=3 -v dropped="$work/near" "$work/train.en" - >/dev/null ||
	die "near-duplicate check failed"
# The lines of near (REF<TAB>JACCARD<TAB>DOMAIN<TAB>SPLIT<TAB>EN<TAB>XX)
# out of the pairs; a domain holds a pair once (clean.awk), so matching
# the whole line removes exactly the purged pair.
$AWK -F '\t' 'FILENAME == ARGV[1] { drop[$3 FS $4 FS $5 FS $6] = 1; next }
	!($0 in drop)' "$work/near" "$work/unpurged" >"$work/final"

# ---- Output: per domain and split, two aligned files and a TSV, in the
# direction asked for; the union in all/.
out=$work/out
for d in $domains all; do
	mkdir -p "$out/$d"
	for s in train dev test; do
		: >"$out/$d/$s.$src"
		: >"$out/$d/$s.$tgt"
		: >"$out/$d/$s.tsv"
	done
done
$AWK -v out="$out" -v src="$src" -v tgt="$tgt" '
	BEGIN { FS = "\t"; swap = src != "en" }
	$1 != domain {
		for (s in opened)
			close(opened[s])
		split("", opened)
		domain = $1
	}
	{
		a = swap ? $4 : $3
		b = swap ? $3 : $4
		base = out "/" $1 "/" $2
		print a > (base "." src)
		print b > (base "." tgt)
		print a "\t" b > (base ".tsv")
		opened[base "." src] = base "." src
		opened[base "." tgt] = base "." tgt
		opened[base ".tsv"] = base ".tsv"
	}' "$work/final"
for s in train dev test; do
	for d in $domains; do
		cat "$out/$d/$s.$src" >>"$out/all/$s.$src"
		cat "$out/$d/$s.$tgt" >>"$out/all/$s.$tgt"
		cat "$out/$d/$s.tsv" >>"$out/all/$s.tsv"
	done
done

# ---- Statistics: pairs, tokens and distinct tokens per split, as in
# Table 1 of Passban et al. (2022); cleaning counts per domain.
{
	printf 'domain'
	for f in pairs $src.tokens $tgt.tokens $src.types $tgt.types; do
		printf '\t%s.train\t%s.dev\t%s.test' "$f" "$f" "$f"
	done
	printf '\tneardup.dev\tneardup.test\n'
	for d in $domains all; do
		printf '%s' "$d"
		$AWK -F '\t' -v d="$d" '
			FILENAME ~ /near$/ { if (d == "all" || $3 == d) near[$4]++; next }
			# By name: a held-out set emptied by the purge has no line 1.
			FNR == 1 { f = FILENAME ~ /\/train\.tsv$/ ? 1 : FILENAME ~ /\/dev\.tsv$/ ? 2 : 3 }
			{
				pairs[f]++
				n = split($1, w, " ")
				for (i = 1; i <= n; i++) { st[f] ++; sv[f, w[i]] = 1 }
				n = split($2, w, " ")
				for (i = 1; i <= n; i++) { tt[f] ++; tv[f, w[i]] = 1 }
			}
			END {
				for (k in sv) { split(k, p, SUBSEP); ns[p[1]]++ }
				for (k in tv) { split(k, p, SUBSEP); nt[p[1]]++ }
				for (i = 1; i <= 3; i++) printf "\t%d", pairs[i]
				for (i = 1; i <= 3; i++) printf "\t%d", st[i]
				for (i = 1; i <= 3; i++) printf "\t%d", tt[i]
				for (i = 1; i <= 3; i++) printf "\t%d", ns[i]
				for (i = 1; i <= 3; i++) printf "\t%d", nt[i]
				printf "\t%d\t%d\n", near["dev"], near["test"]
			}' "$work/near" "$out/$d/train.tsv" "$out/$d/dev.tsv" "$out/$d/test.tsv"
	done
} >"$out/stats.tsv"

cleaning_table >"$out/cleaning.tsv"
# neardup.tsv: each purged pair, in the direction asked for, with the
# training English it is a near-duplicate of.
{
	printf 'domain\tsplit\t%s\t%s\tjaccard\ttrain.en\n' "$src" "$tgt"
	$AWK -F '\t' -v swap="$([ "$src" = en ] && echo 0 || echo 1)" '
		FILENAME == ARGV[1] { en[FNR] = $0; next }
		{ print $3 "\t" $4 "\t" (swap ? $6 "\t" $5 : $5 "\t" $6) "\t" $2 "\t" en[$1] }' \
		"$work/train.en" "$work/near"
} >"$out/neardup.tsv"

packages_table "$out"
{
	echo "languages: $src-$tgt (catalogues: $lang)"
	echo "domains: $(echo $domains)"
	echo "cleaning: max $maxtok tokens a side; see cleaning.tsv"
	echo "split: per domain, by a hash of the English string: $PERCENT% of the distinct strings each for test and dev, at most $CAP"
	echo "near-duplicates: $(($(wc -l <"$out/neardup.tsv") - 1)) dev and test pairs whose English is a near-duplicate of a training string (data/neardup.awk) removed; see neardup.tsv"
} >"$out/SOURCE"

mkdir -p "$outdir" || die "cannot create $outdir"
for d in $domains all; do
	rm -rf "${outdir:?}/$d"
done
cp -R "$out/." "$outdir/" || die "cannot copy the corpora into $outdir"

# The table (training sets, as Table 1 of the paper; held-out pair counts).
$AWK -F '\t' -v src="$src" -v tgt="$tgt" '
	NR == 1 { next }
	{
		printf "%-10s %7d %5d %5d  %9d %7d %5.1f  %9d %7d %5.1f\n", $1, $2, $3, $4,
			$5, $11, $2 ? $5 / $2 : 0, $8, $14, $2 ? $8 / $2 : 0
	}' "$out/stats.tsv" >"$work/table"
printf '%-10s %-19s  %-23s  %s\n' "" "pairs" "$src (train)" "$tgt (train)"
printf '%-10s %7s %5s %5s  %9s %7s %5s  %9s %7s %5s\n' domain train dev test tokens types avg tokens types avg
cat "$work/table"
note "$(($(wc -l <"$out/neardup.tsv") - 1)) held-out pairs purged as near-duplicates of training strings (neardup.tsv)"
echo "build.sh: $src-$tgt corpora written to $outdir" >&2
