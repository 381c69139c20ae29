#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# repro/unigram.sh: the perplexity of a unigram model on a held-out text,
# scored as gru-lm scores a split, so that it sits in a word language
# model's table as the baseline any model must beat.
#
# Usage: repro/unigram.sh [--size N] [--min-count N] [--lowercase]
#                         [--eval-batch B] [--add-one] [--vocab-out FILE]
#                         HELDOUT TRAIN...
#
# The vocabulary is fedrun's (core/text/vocab.c) for data.vocab.size N
# (0: no cap; default 0) and min_count (default 1) over the TRAIN files,
# whitespace tokenizer: a line is cut at ASCII space, tab, CR, VT and FF;
# a line with a token ends with <eos>; --lowercase folds A-Z as
# data.lowercase does. Words are ranked by count, then by their bytes (a
# proper prefix first), and the first N - 2 kept beside <unk> and <eos>. A
# word outside it is <unk>; the words "<unk>" and "<eos>" of a text are
# those tokens.
#
# The model: maximum likelihood over the training tokens as the
# vocabulary maps them (<unk> holds every training token outside the
# vocabulary, <eos> one per sentence), p(w) = c(w) / N; with --add-one,
# (c(w) + 1) / (N + V), V the vocabulary's size with <unk> and <eos>.
#
# The targets are gru-lm's (plugins/models/gru_lm/train.c, core/text/bptt.c):
# HELDOUT's tokens, each sentence's <eos> included, as one stream of n
# tokens laid out in B = min(floor(n / 2), eval_batch) rows of
# L = floor(n / B) tokens (the last n - B L dropped); each row's tokens
# after its first are predicted. --eval-batch is the model's eval_batch
# (default 10, gru-lm's).
#
# Prints one line, tab-separated: the perplexity exp(-(1/T) sum log p) over
# the T targets ("inf" when a target has probability 0: maximum likelihood
# and a held-out <unk> where no training token was), T (the run's
# metrics.csv reports it as the split's "tokens"), the targets that are
# <unk>, V, and N. --vocab-out FILE writes the vocabulary with its counts
# as a gru-lm run keeps it (RUN/vocab.txt: <unk>, <eos>, then the words by
# rank, "word<TAB>count" lines), so that a test can compare the two.
set -eu
export LC_ALL=C
size=0 min_count=1 lowercase=0 eval_batch=10 add_one=0 vocab_out=/dev/null
usage() {
	echo "usage: unigram.sh [--size N] [--min-count N] [--lowercase] [--eval-batch B] [--add-one] [--vocab-out FILE] HELDOUT TRAIN..." >&2
	exit 2
}
num() { # OPTION VALUE MIN
	case $2 in '' | *[!0-9]*) echo "unigram.sh: $1 needs a number" >&2; exit 2 ;; esac
	[ "$2" -ge "$3" ] || { echo "unigram.sh: $1 must be at least $3" >&2; exit 2; }
}
while [ $# -gt 0 ]; do
	case $1 in
	--size | --min-count | --eval-batch)
		[ $# -ge 2 ] || usage
		case $1 in
		--size) num "$1" "$2" 0; size=$2 ;;
		--min-count) num "$1" "$2" 1; min_count=$2 ;;
		--eval-batch) num "$1" "$2" 1; eval_batch=$2 ;;
		esac
		shift 2
		;;
	--vocab-out)
		[ $# -ge 2 ] || usage
		vocab_out=$2
		shift 2
		;;
	--lowercase) lowercase=1 && shift ;;
	--add-one) add_one=1 && shift ;;
	--) shift && break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || usage
[ "$size" != 1 ] || { echo "unigram.sh: --size 1 is too small: <unk> and <eos> take 2" >&2; exit 2; }
for f; do [ -r "$f" ] || { echo "unigram.sh: $f: cannot read" >&2; exit 1; }; done
heldout=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# tokens: the lines' tokens, one a line, and "\n" (an empty line) for the
# <eos> that ends a line with a token
tokens() {
	awk -v lc="$lowercase" '{
		gsub(/[\t\r\v\f]/, " ")
		if (lc) $0 = tolower($0)
		if (NF == 0) next
		for (i = 1; i <= NF; i++) print $i
		print ""
	}' "$@"
}
# the training counts of the words that may enter the vocabulary, ranked
tokens "$@" | awk -v out="$tmp/special" '
	$0 == "" || $0 == "<eos>" { eos++; next }
	$0 == "<unk>" { unk++; next }
	{ c[$0]++ }
	END {
		for (w in c) printf "%s\t%d\n", w, c[w]
		printf "%d\t%d\n", unk, eos > out
	}' | sort -t "$(printf '\t')" -k2,2nr -k1,1 >"$tmp/ranked"
tokens "$heldout" >"$tmp/heldout"
awk -F'\t' -v size="$size" -v minc="$min_count" -v add1="$add_one" -v B0="$eval_batch" -v vo="$vocab_out" '
	FILENAME == ARGV[1] { unk = $1; eos = $2; N = $1 + $2; next }
	FILENAME == ARGV[2] {
		N += $2
		if ($2 >= minc && (size == 0 || kept < size - 2)) { c[$1] = $2; word[++kept] = $1 } else unk += $2
		next
	}
	# the held-out stream, each token as the probability of its id
	{ id[++n] = ($0 == "" || $0 == "<eos>") ? "<eos>" : (($0 in c) ? $0 : "<unk>") }
	END {
		V = kept + 2
		c["<unk>"] = unk; c["<eos>"] = eos
		printf "<unk>\t%d\n<eos>\t%d\n", unk, eos > vo
		for (i = 1; i <= kept; i++) printf "%s\t%d\n", word[i], c[word[i]] > vo
		close(vo)
		B = int(n / 2); if (B > B0) B = B0
		if (B == 0) { print "unigram.sh: the held-out text has " n + 0 " tokens, too few to predict one" > "/dev/stderr"; exit 1 }
		L = int(n / B)
		for (b = 0; b < B; b++)
			for (t = 2; t <= L; t++) {
				w = id[b * L + t]
				p = add1 ? (c[w] + 1) / (N + V) : c[w] / N
				if (p == 0) inf = 1; else s -= log(p)
				T++
				if (w == "<unk>") u++
			}
		if (inf) printf "inf"; else printf "%.10g", exp(s / T)
		printf "\t%d\t%d\t%d\t%d\n", T, u, V, N
	}' "$tmp/special" "$tmp/ranked" "$tmp/heldout"
