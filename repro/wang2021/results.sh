#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes results.md, table{1,2}.tsv, vocab-LANG.tsv and the figures
# (fig-*.{png,svg}, fig2-*.{png,svg,dat}) from what repro/wang2021/run.sh
# left in OUT, the raw files only: each stage's .complete, metrics.csv and
# scores.tsv (and its domain experts' de-K/scores.tsv), the vocabulary
# LANG-vocab/vocab.txt and the joint test set data-LANG/joint/test.*,
# settings, times.tsv, sizes-LANG.tsv and overlap-LANG.tsv, and, for the
# baseline of copying the source and the goals' paired bootstrap, each
# model's translations (RUN/hyp-SPLIT.txt, RUN/de-K/hyp-SPLIT.txt) with
# the joint sets' sources and references (data-LANG/joint/SPLIT.en and
# SPLIT.LANG), scored with fedrun bleu. OUT may also be a directory of
# collect.sh (repro/wang2021/results/en-LANG): there a run's metrics.csv
# is metrics/RUN.csv.gz, a scores.tsv scores/RUN.tsv or scores/RUN-de-K.tsv,
# its translations scores/RUN[-de-K]-hyp-SPLIT.txt.gz, and the vocabulary
# and held-out sets are gzipped (LANG-vocab/vocab.txt.gz,
# data-LANG/joint/*.gz) or, where they were not collected, vocab-LANG.tsv
# holds the vocabulary's table and the copy baseline and the intervals are
# left out (the goals say "no references committed"). run.sh calls this
# at its end; run it again on its own to remake the tables and figures.
#
# Usage: repro/wang2021/results.sh OUT [DEST]
#   DEST: where to write (default OUT); check-results.sh writes into a
#   temporary directory and compares. WANG2021_FIGURES=0 draws no figures
#   (results.md is the same either way).
# (the rounds, the pairs, --quick, the date, fedrun's version and the
# machine's cores are read from OUT/settings.)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PLOT=${FEDRUN_PLOT:-$top/tools/fedrun-plot}
# shellcheck disable=SC2034 # used by common.sh
prog=results.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: results.sh OUT [DEST]"
out=$(cd "$1" && pwd)
dest=${2:-$out}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
quick=0 rounds=4 pairs="de zh_CN" splits="dev test" vocabmode=federated run_date='' fedrun_version='' cores=''
[ -e "$out/settings" ] || die "$out/settings: missing (run run.sh)"
# shellcheck disable=SC1091
. "$out/settings"
work=$(mktemp -d "${TMPDIR:-/tmp}/wang2021-results.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The goals: paired bootstrap resampling of the test set (common.sh's
# paired_bs and judge); margin: the equivalence margin of a "competitive
# with" claim, in BLEU points.
margin=1.0

# raw PATH: OUT/PATH, or collect.sh's OUT/PATH.gz unpacked into $work;
# nothing when there is neither.
raw() {
	if [ -e "$out/$1" ]; then
		echo "$out/$1"
	elif [ -e "$out/$1.gz" ]; then
		_w=$work/$(echo "$1" | tr / _)
		[ -e "$_w" ] || gzip -dc "$out/$1.gz" >"$_w"
		echo "$_w"
	fi
	return 0
}
# metrics_of RUN: RUN's metrics.csv when the run is complete, else nothing
# (collect.sh took only complete runs).
metrics_of() {
	if [ -e "$out/$1/.complete" ]; then
		[ ! -e "$out/$1/metrics.csv" ] || echo "$out/$1/metrics.csv"
	else
		raw "metrics/$1.csv"
	fi
	return 0
}
# scores_of STAGE: the scores.tsv of STAGE, a run (de-wa) or a domain
# expert of one (de-wa/de-0), when the run is complete and the
# translations scored; else nothing.
scores_of() {
	if [ -e "$out/${1%%/*}/.complete" ]; then
		[ ! -e "$out/$1/scores.tsv" ] || echo "$out/$1/scores.tsv"
	elif [ -e "$out/metrics/${1%%/*}.csv.gz" ]; then
		_s=$out/scores/$(echo "$1" | tr / -).tsv
		[ ! -e "$_s" ] || echo "$_s"
	fi
	return 0
}
done_() { [ -n "$(scores_of "$1")" ]; }
missing=""

# score RUN SPLIT CASE METRIC: from RUN/scores.tsv, or "-"
score() {
	_f=$(scores_of "$1")
	if [ -z "$_f" ]; then
		echo -
		return 0
	fi
	awk -F'\t' -v s="$2" -v c="$3" -v m="$4" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == s && $2 == c { print $(col[m]); found = 1 }
		END { if (!found) print "-" }' "$_f"
}
# hyp_of STAGE SPLIT: the file of STAGE's translations of the joint SPLIT
# set (STAGE a run, de-wa, or an expert, de-wa/de-0), in run.sh's layout
# or collect.sh's (unpacked); nothing when there is none.
hyp_of() {
	if [ -e "$out/${1%%/*}/.complete" ]; then
		[ ! -e "$out/$1/hyp-$2.txt" ] || echo "$out/$1/hyp-$2.txt"
	elif [ -e "$out/metrics/${1%%/*}.csv.gz" ]; then
		raw "scores/$(echo "$1" | tr / -)-hyp-$2.txt"
	fi
	return 0
}
# copy_baseline LANG SPLIT: $work/copy-LANG-SPLIT, "BLEU CHRF" (uncased, as
# the tables) of the joint SPLIT set's English sources scored as their
# own translations against the references: what a system that learnt
# nothing but to copy its input scores (gettext strings hold names,
# options and placeholders that the translations keep). Not written when
# the sources or references are not at hand.
copy_baseline() {
	_src=$(raw "data-$1/joint/$2.en") _ref=$(raw "data-$1/joint/$2.$1")
	[ -n "$_src" ] && [ -n "$_ref" ] || return 0
	find_fedrun
	"$FEDRUN" bleu -l -b -w 2 "$_ref" "$_src" >"$work/copy.tmp" || die "fedrun bleu $_ref $_src failed"
	paste -s -d ' ' "$work/copy.tmp" >"$work/copy-$1-$2"
}
for p in $pairs; do
	for s in $splits; do copy_baseline "$p" "$s"; done
done
# copy_cell LANG SPLIT: the copy baseline's "BLEU (chrF)", or why there is none
copy_cell() {
	if [ -e "$work/copy-$1-$2" ]; then
		awk '{ printf "%s (%s)", $1, $2 }' "$work/copy-$1-$2"
	elif [ -z "$(raw "data-$1/joint/$2.$1")" ]; then
		printf 'no references'
	else
		printf 'no sources'
	fi
}
# paired LANG A B: fedrun bleu --paired-bs of stages A's and B's test
# translations (uncased, as the tables) into $work/bs, its -b lines
# ("bleu|chrf A B DIFF LO HI MEAN A_LO A_HI B_LO B_HI BETTER"); false when
# the references or a translation file are not at hand.
paired() {
	_ref=$(raw "data-$1/joint/test.$1") _ha=$(hyp_of "$1-$2" test) _hb=$(hyp_of "$1-$3" test)
	[ -n "$_ref" ] && [ -n "$_ha" ] && [ -n "$_hb" ] || return 1
	paired_bs "$work/bs" "$_ref" "$_ha" "$_hb" -l
}

# row LABEL STAGE: "| LABEL | [dev BLEU (chrF) |] test BLEU (chrF) |" for
# every pair, uncased as the paper scores (the dev set where run.sh decoded
# it: --dev-bleu; settings written before that option mean both).
row() {
	printf '| %s |' "$1"
	for p in $pairs; do
		for s in $splits; do
			b=$(score "$p-$2" "$s" uncased bleu) c=$(score "$p-$2" "$s" uncased chrf)
			if [ "$b" = - ]; then printf ' not run |'; else printf ' %s (%s) |' "$b" "$c"; fi
		done
	done
	printf '\n'
}
# copy_row: the row of the copy baseline, "copy the source", for every pair
copy_row() {
	printf '| copy the source |'
	for p in $pairs; do
		for s in $splits; do printf ' %s |' "$(copy_cell "$p" "$s")"; done
	done
	printf '\n'
}
header() {
	printf '| %s |' "$1"
	for p in $pairs; do
		for s in $splits; do printf ' en-%s %s |' "$p" "$s"; done
	done
	printf '\n|---|'
	for p in $pairs; do
		for s in $splits; do printf -- '---:|'; done
	done
	printf '\n'
}
# tsv LABEL STAGE...: test BLEU (uncased) per pair, for the bar charts
tsv_rows() {
	while [ $# -ge 2 ]; do
		printf '%s' "$1"
		for p in $pairs; do printf '\t%s' "$(score "$p-$2" test uncased bleu)"; done
		printf '\n'
		shift 2
	done
}
tsv_header() {
	printf 'system'
	for p in $pairs; do printf '\ten-%s' "$p"; done
	printf '\n'
}
t1="Transformer, party desktop alone|local-desktop|Transformer, party developer alone|local-developer|+ data-centralised training|central|FedNMT|fednmt|FedNMT+WA|wa|FedNMT+DE, desktop|fednmt/de-0|FedNMT+DE, developer|fednmt/de-1|FedNMT+WA+DE, desktop|wa/de-0|FedNMT+WA+DE, developer|wa/de-1"
t2="F.WA, no noise (epsilon = 0 in the paper's table)|wa|F.WA, Lap(sigma/1): epsilon = 1, both readings|wa-eps1|F.WA, Lap(sigma/2): epsilon = 2 as the formula reads|wa-eps2|F.WA, Lap(2 sigma): epsilon = 2 as the text reads (formula epsilon = 0.5)|wa-eps0.5"
table() { # SPEC: LABEL|STAGE|LABEL|STAGE...
	echo "$1" | tr '|' '\n' | while IFS= read -r label && IFS= read -r stage; do row "$label" "$stage"; done
}
tsv() { # SPEC: the copy baseline first, where a pair has it
	tsv_header
	_have=0
	for p in $pairs; do [ ! -e "$work/copy-$p-test" ] || _have=1; done
	if [ $_have = 1 ]; then
		printf 'copy the source'
		for p in $pairs; do
			if [ -e "$work/copy-$p-test" ]; then printf '\t%s' "$(awk '{ print $1 }' "$work/copy-$p-test")"; else printf '\t-'; fi
		done
		printf '\n'
	fi
	echo "$1" | tr '|' '\n' | while IFS= read -r label && IFS= read -r stage; do tsv_rows "$label" "$stage"; done
}
tsv "$t1" >"$dest/table1.tsv"
tsv "$t2" >"$dest/table2.tsv"
# the stages not run (row() runs in the pipelines of table(), a subshell)
for p in $pairs; do
	for s in local-desktop local-developer central fednmt wa wa-eps1 wa-eps2 wa-eps0.5 \
		fednmt/de-0 fednmt/de-1 wa/de-0 wa/de-1; do
		done_ "$p-$s" || missing="$missing $p-$s"
	done
done

# ---- figures (tools/fedrun-plot, on gnuplot) ---------------------------------
# curves OUTNAME OPTIONS... -- STAGE:LABEL...: fedrun-plot curve over the
# complete ones of the stages.
curves() {
	o=$1
	shift
	n=0
	for a in "$@"; do
		shift
		if [ $n = 1 ]; then
			m=$(metrics_of "${a%%:*}")
			[ -z "$m" ] || set -- "$@" "${a#*:}=$m"
		elif [ "$a" = -- ]; then
			n=1
		else
			set -- "$@" "$a"
		fi
	done
	case "$*" in *=*) "$PLOT" curve -o "$dest/$o" "$@" >/dev/null ;; esac
}
if [ "${WANG2021_FIGURES:-1}" != 0 ] && [ -x "$PLOT" ] && command -v gnuplot >/dev/null 2>&1; then
	# (a table without a number yet, from an interrupted run, has no chart)
	"$PLOT" bars --title "Table 1: test BLEU (uncased), joint test set" --ylabel BLEU \
		-o "$dest/fig-table1" "$dest/table1.tsv" || echo "results.sh: no chart of Table 1" >&2
	"$PLOT" bars --title "Table 2: FedNMT+WA test BLEU by noise" --ylabel BLEU \
		-o "$dest/fig-table2" "$dest/table2.tsv" || echo "results.sh: no chart of Table 2" >&2
	for p in $pairs; do
		set -- "$p-local-desktop:desktop alone" "$p-local-developer:developer alone" \
			"$p-central:centralised" "$p-fednmt:FedNMT" "$p-wa:FedNMT+WA"
		curves "fig2-$p-train" --metric train_loss --split train --title "Figure 2: en-$p training loss per epoch" \
			--xlabel "epoch (round)" -- "$@"
		curves "fig2-$p-dev" --metric loss --split valid --title "en-$p loss on the joint dev set" \
			--xlabel "epoch (round)" -- "$@"
		curves "fig2-$p-noise" --metric train_loss --split train \
			--title "Figure 2: en-$p FedNMT+WA training loss by noise" --xlabel "epoch (round)" -- \
			"$p-wa:no noise" "$p-wa-eps2:Lap(sigma/2)" "$p-wa-eps1:Lap(sigma)" "$p-wa-eps0.5:Lap(2 sigma)"
	done
fi

# oov VOCAB FILE: the share of FILE's tokens, split as the words tokenizer
# with "split": "punctuation" splits them (a glued token spelled with the
# joiner U+FFED in front), that VOCAB lacks, in percent.
oov() {
	awk 'BEGIN { J = "\357\277\255" }
		NR == FNR { sub(/\t.*/, ""); v[$0] = 1; next }
		{
			for (i = 1; i <= NF; i++) {
				w = $i
				first = 1
				while (w != "") {
					if (match(w, /^[]!"#$%&\047()*+,.\/:;<=>?@[\\^`{|}~-]/) == 0)
						match(w, /^[^]!"#$%&\047()*+,.\/:;<=>?@[\\^`{|}~-]+/)
					t = substr(w, 1, RLENGTH)
					w = substr(w, RLENGTH + 1)
					if (!first)
						t = J t
					first = 0
					n++
					if (!(t in v))
						u++
				}
			}
		}
		END { printf "%.1f", n ? 100 * u / n : 0 }' "$1" "$2"
}

# vocab_table LANG: DEST/vocab-LANG.tsv (pair, entries, the unknown shares
# of the joint test set's English and target tokens, in percent), from the
# vocabulary and the test set where they are at hand, else OUT's
# vocab-LANG.tsv as an earlier call wrote it (its # lines say whence);
# nothing when neither is there.
vocab_table() {
	v=$(raw "$1-vocab/vocab.txt") ten=$(raw "data-$1/joint/test.en") tt=$(raw "data-$1/joint/test.$1")
	if [ -n "$v" ] && [ -n "$ten" ] && [ -n "$tt" ]; then
		{
			printf 'pair\tentries\tunknown_en\tunknown_target\n'
			printf 'en-%s\t%s\t%s\t%s\n' "$1" "$(wc -l <"$v" | tr -d ' ')" "$(oov "$v" "$ten")" "$(oov "$v" "$tt")"
		} >"$dest/vocab-$1.tsv"
	elif [ -e "$out/vocab-$1.tsv" ]; then
		[ "$out" = "$dest" ] || cp "$out/vocab-$1.tsv" "$dest/"
	else
		rm -f "$dest/vocab-$1.tsv"
	fi
}
for p in $pairs; do
	vocab_table "$p"
done

# devloss RUN: "R0 L0 R L", the server model's loss on the joint dev set
# at its first evaluation (round 0, before training) and at its last, from
# RUN's metrics.csv; nothing when the run is not complete.
devloss() {
	_m=$(metrics_of "$1")
	[ -n "$_m" ] || return 0
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["split"]) == "valid" && $(c["metric"]) == "loss" && $(c["client"]) == "" && $(c["tensor"]) == "" && $(c["model"]) == "" {
		r = $(c["round"]) + 0
		if (!n++ || r < r0) { r0 = r; l0 = $(c["value"]) }
		if (r >= rl) { rl = r; ll = $(c["value"]) }
	}
	END { if (n) print r0, l0, rl, ll }' "$_m"
}
# unconverged RUN: why RUN did not converge (its last dev loss not a
# number, or not below its round-0 loss, or no loss after round 0), or
# nothing when it did.
unconverged() {
	devloss "$1" | awk -v run="$1" '
	function num(x) { return x ~ /^[+-]?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?$/ }
	{ got = 1 }
	!num($2) || !num($4) { printf "%s did not converge: dev loss %s at round %s, %s at round %s\n", run, $2, $1, $4, $3; next }
	$3 <= $1 { printf "%s did not converge: no dev loss after round %s\n", run, $1; next }
	$4 + 0 >= $2 + 0 { printf "%s did not converge: dev loss %.3f at round %s, not below %.3f at round %s\n", run, $4, $3, $2, $1 }
	END { if (!got) printf "%s: no dev loss\n", run }'
}
# goal LANG TEXT KIND A B: a line of the Goals section, the paper's claim
# TEXT on stages A and B, judged by the paired bootstrap of their test
# translations (uncased BLEU decides; chrF's interval is given beside):
# KIND higher (A above B: reproduced when the 95% interval of A - B is
# above 0, contradicted when below, inconclusive when it holds 0) or close
# (A competitive with B: reproduced when the interval's lower end is above
# -$margin, contradicted when its upper end is below -$margin, inconclusive
# otherwise). Inconclusive without an interval where the references or
# translations are not at hand. Not judged where the figures mean nothing:
# a --quick run, BLEU 0.00 for both, a run that did not converge, both
# systems below copying the source.
goal() {
	_p=$1 _text=$2 _kind=$3 _a=$1-$4 _b=$1-$5
	_miss=""
	for _s in "$_a" "$_b"; do done_ "$_s" || _miss="$_miss $_s"; done
	if [ -n "$_miss" ]; then
		echo "- en-$_p: $_text: **not measured** (not run:$_miss)"
		return 0
	fi
	_ba=$(score "$_a" test uncased bleu) _bb=$(score "$_b" test uncased bleu)
	_why=""
	for _r in "${_a%%/*}" "${_b%%/*}"; do
		_u=$(unconverged "$_r")
		[ -z "$_u" ] || case "$_why" in *"$_u"*) ;; *) _why="$_why; $_u" ;; esac
	done
	if awk -v a="$_ba" -v b="$_bb" 'BEGIN { exit !(a + 0 == 0 && b + 0 == 0) }'; then
		_why="$_why; BLEU 0.00 for both"
	fi
	[ "$quick" = 0 ] || _why="$_why; a --quick run, whose numbers mean nothing"
	_cb=
	[ ! -e "$work/copy-$_p-test" ] || _cb=$(awk '{ print $1 }' "$work/copy-$_p-test")
	if paired "$_p" "$4" "$5"; then
		_bs=$work/bs
	else
		_bs=/dev/null
	fi
	judge "- en-$_p: $_text" "$_kind" "$margin" "$_ba" "$_bb" "$_why" "$_cb" "$_bs" \
		"no references committed"
}

{
	echo "# Wang et al. 2021 (FedNMT) on the gettext corpora: results"
	echo
	if [ "$quick" = 1 ]; then
		echo "**This is a --quick run: a few hundred training pairs a party, 15 held-out pairs a"
		echo "domain, the tiny preset, $rounds rounds. It checks that every step works; its numbers"
		echo "mean nothing.**"
		echo
	fi
	echo "Made by \`repro/wang2021/run.sh\` (${run_date:-date unknown}, fedrun ${fedrun_version:-unknown})."
	echo "Two parties: *desktop* (gettext domains gnome, graphics, mail, media, office) and"
	echo "*developer* (cli, git, packaging); English -> German, and English -> Chinese (zh_CN,"
	echo "every Chinese side segmented into characters) for the paper's English-Chinese."
	echo "BLEU (chrF) as sacreBLEU computes them, uncased as in the paper (\`fedrun bleu -l\`;"
	case $splits in
	dev*) sets="joint dev and test sets" ;;
	*) sets="joint test set" ;;
	esac
	echo "\`*/scores.tsv\` also has the cased scores), beam 4, on the $sets"
	echo "(the union of both parties' held-out pairs). $rounds rounds of one local epoch; one run each (seed 1)."
	echo
	echo "## Vocabulary"
	echo
	echo "One words vocabulary per pair, shared by source and target and by every stage:"
	echo "words split at white space and ASCII punctuation (\`model.tokenizer.split\`"
	echo "\`punctuation\`), the most frequent ones of both parties' training text, built by"
	case ${vocabmode:-federated} in
	federated) echo "FedNMT's federated protocol (sec. 2.3: Paillier encryption, 2048-bit keys) in the" ;;
	*) echo "counting in the clear (\`--vocab plain\`: the protocol's order, without its cost) in the" ;;
	esac
	echo "stage \`LANG-vocab\`. Tokens of the joint test set it lacks (they become <unk>):"
	echo
	echo "| pair | entries | unknown, en | unknown, target |"
	echo "|---|---:|---:|---:|"
	for p in $pairs; do
		[ ! -e "$dest/vocab-$p.tsv" ] ||
			awk -F'\t' '/^#/ || $1 == "pair" { next } { printf "| %s | %s | %s%% | %s%% |\n", $1, $2, $3, $4 }' "$dest/vocab-$p.tsv"
	done
	echo
	echo "## Data"
	echo
	for p in $pairs; do
		echo "en-$p, pairs per file, and the overlap check (\`data/gettext/check-overlap.sh\`:"
		echo "no held-out sentence in any training set):"
		echo
		echo '```'
		cat "$out/sizes-$p.tsv"
		echo
		cat "$out/overlap-$p.tsv"
		echo '```'
		echo
	done
	echo "## Table 1"
	echo
	echo "The row \"copy the source\" is no model: the English sources themselves scored as the"
	echo "translations. gettext strings keep names, commands, options and placeholders that a"
	echo "translation keeps too, so copying scores; a system below it has not learnt to translate."
	_nocopy=
	for p in $pairs; do
		for s in $splits; do [ -e "$work/copy-$p-$s" ] || _nocopy="$_nocopy en-$p $s,"; done
	done
	[ -z "$_nocopy" ] || echo "Not computed (the joint set's sources or references were not committed):${_nocopy%,}."
	echo
	header system
	copy_row
	table "$t1"
	echo
	echo "## Table 2: FedNMT+WA and the noise Lap(sigma/epsilon)"
	echo
	echo "The paper's formula, Lap(sigma/epsilon) on each entry of every update, gives *less*"
	echo "noise for a larger epsilon; its text and Table 2 treat a larger epsilon as more noise."
	echo "fedrun follows the formula (the \`laplace\` plugin, sigma = 0.001, \`clip\` false as in"
	echo "the paper, which clips nothing). Both readings' rows are here: epsilon = 1 is the same"
	echo "run under both; the text's epsilon = 2 is the formula's epsilon = 0.5."
	echo
	echo "**Privacy cost, honestly:** without clipping the sensitivity of an update is"
	echo "unbounded, so none of these rows carries a differential-privacy guarantee; the"
	echo "noise is the paper's randomisation only. With \`clip\` true the update would be"
	echo "clipped to L1 norm sigma, and each round would cost each party epsilon (basic"
	echo "composition: $rounds rounds cost $rounds epsilon), but for a model of millions of"
	echo "parameters the noise's L1 norm (parameters x sigma/epsilon) would exceed the clipped"
	echo "update's (sigma) by that factor: the model would not learn."
	echo
	header system
	copy_row
	table "$t2"
	echo
	echo "## The domain experts"
	echo
	echo "Each party's expert mixes the federated model M_G with its private model M_P (its"
	echo "local baseline of Table 1: R epochs of its own data from the same initial"
	echo "parameters, taken with \`expert.private\`), token by token, with"
	echo "the gate lambda(x) = (1 + tanh(theta . x))/2 (the paper's tanh(theta . x) rescaled"
	echo "into (0, 1)), x the mean source embedding of the sentence and a bias, theta fitted"
	echo "on the party's training data with both models frozen. On the joint test set:"
	echo "the mean lambda (the weight of M_G) and the loss (nats a token) of M_G, M_P and"
	echo "the mixture."
	echo
	echo "| pair | run | party | mean lambda | loss M_G | loss M_P | loss mixture |"
	echo "|---|---|---|---:|---:|---:|---:|"
	for p in $pairs; do
		for r in fednmt:FedNMT wa:FedNMT+WA; do
			m=$(metrics_of "$p-${r%%:*}")
			[ -n "$m" ] || continue
			# each party's last test events of its expert (the model column: the party)
			awk -F, -v p="en-$p" -v r="${r#*:}" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
				$(c["split"]) == "test" && $(c["metric"]) ~ /^expert\./ { v[$(c["model"]) SUBSEP $(c["metric"])] = $(c["value"]) }
				END {
					for (k = 1; k <= 2; k++) {
						q = (k == 1) ? "desktop" : "developer"
						printf "| %s | %s | %s | %.3f | %.3f | %.3f | %.3f |\n", p, r, q, v[q, "expert.lambda"],
							v[q, "expert.nll_global"], v[q, "expert.nll_private"], v[q, "expert.nll"]
					}
				}' "$m"
		done
	done
	echo
	echo "## Dev loss"
	echo
	echo "The server model's loss (nats a token) on the joint dev set before training"
	echo "(round 0) and after the last round (each run's \`metrics.csv\`). A run whose last"
	echo "loss is not below its round-0 loss did not converge: the goals on it are not judged."
	echo
	printf '| system |'
	for p in $pairs; do printf ' en-%s round 0 | en-%s last round |' "$p" "$p"; done
	printf '\n|---|'
	for p in $pairs; do printf -- '---:|---:|'; done
	printf '\n'
	# every run once (Table 2's first row is FedNMT+WA again)
	seen=' '
	echo "$t1|$t2" | tr '|' '\n' | while IFS= read -r label && IFS= read -r stage; do
		case $stage in */*) continue ;; esac
		case $seen in *" $stage "*) continue ;; esac
		seen="$seen$stage "
		printf '| %s |' "$label"
		for p in $pairs; do
			l=$(devloss "$p-$stage")
			if [ -z "$l" ]; then printf ' not run | not run |'; else echo "$l" | awk '{ printf " %.3f | %.3f (round %d) |", $2, $4, $3 }'; fi
		done
		printf '\n'
	done
	echo
	if [ -n "$missing" ]; then
		echo "Stages not run (their rows say so):$missing."
		echo
	fi
	echo "## Goals"
	echo
	echo "The paper's claims on Tables 1 and 2, judged on the test BLEU (uncased) by paired"
	echo "bootstrap resampling, sacreBLEU's method (\`fedrun bleu --paired-bs\`: $bs_n resamples of the"
	echo "test sentences, seed $bs_seed, the same resample for both systems): the 95% interval of"
	echo "the difference A - B decides. \"A above B\": **reproduced** when the interval is"
	echo "entirely above 0, **contradicted** when entirely below, **inconclusive** when it holds 0."
	echo "\"A competitive with B\": an equivalence margin of $margin BLEU, **reproduced** when the"
	echo "interval's lower end is above -$margin, **contradicted** when its upper end is below"
	echo "-$margin, inconclusive otherwise. chrF's difference and interval are given beside; BLEU,"
	echo "the paper's metric, decides. There is one run of each system (seed 1): the interval"
	echo "covers the sampling of the test sentences, not the variation between training seeds,"
	echo "which one run cannot measure. Where the test set's references were not committed"
	echo "there is no interval: inconclusive. **Not judged** where the figures mean nothing: a"
	echo "--quick run, BLEU 0.00 for both systems, a run that did not converge (see Dev loss),"
	echo "or both systems below the row \"copy the source\" of Table 1 (the English sources"
	echo "scored as translations): the systems did not learn to translate."
	echo
	for p in $pairs; do
		goal "$p" "FedNMT above party desktop alone (each party benefits)" higher fednmt local-desktop
		goal "$p" "FedNMT above party developer alone" higher fednmt local-developer
		goal "$p" "FedNMT+WA above FedNMT" higher wa fednmt
		goal "$p" "FedNMT+WA competitive with data-centralised training" close wa central
		goal "$p" "FedNMT+WA+DE above FedNMT+WA, desktop" higher wa/de-0 wa
		goal "$p" "FedNMT+WA+DE above FedNMT+WA, developer" higher wa/de-1 wa
		goal "$p" "noise costs BLEU: F.WA without noise above Lap(sigma/1)" higher wa wa-eps1
		goal "$p" "more noise costs more: F.WA Lap(sigma/1) above Lap(2 sigma), the text's epsilon = 2" higher wa-eps1 wa-eps0.5
	done
	echo
	echo "## Figures"
	echo
	echo "Drawn by tools/fedrun-plot where gnuplot is installed; PNG files of the same names"
	echo "are next to the SVGs, \`.dat\` files hold the curves' numbers."
	echo
	echo "![Table 1](fig-table1.svg) ![Table 2](fig-table2.svg)"
	for p in $pairs; do
		echo "![en-$p training loss](fig2-$p-train.svg) ![en-$p dev loss](fig2-$p-dev.svg) ![en-$p noise](fig2-$p-noise.svg)"
	done
	echo
	echo "## Time"
	echo
	echo "Seconds per stage on this machine (${cores:-unknown} cores; \`times.tsv\`):"
	echo
	echo '```'
	times_table "$out/times.tsv"
	echo '```'
} >"$dest/results.md.tmp"
mv "$dest/results.md.tmp" "$dest/results.md"
echo "results.sh: $dest/results.md"
