#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes OUT/results.md, OUT/table{1,2}.tsv and OUT/fig-*.{png,svg} from the
# run directories that repro/wang2021/run.sh left in OUT (it calls this at
# its end; run it again on its own to remake the tables and figures).
#
# Usage: repro/wang2021/results.sh OUT
# (the rounds, the pairs and --quick are read from OUT/settings.)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PLOT=${FEDRUN_PLOT:-$top/tools/fedrun-plot}
# shellcheck disable=SC2034 # used by common.sh
prog=results.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
[ $# -eq 1 ] || die "usage: results.sh OUT"
out=$1
quick=0 rounds=4 pairs="de zh_CN" splits="dev test"
[ -e "$out/settings" ] || die "$out/settings: missing (run run.sh)"
. "$out/settings"
# STAGE is a run (de-wa) or a domain expert of one (de-wa/de-0): the run
# must be complete and the translations scored.
done_() { [ -e "$out/${1%%/*}/.complete" ] && [ -e "$out/$1/scores.tsv" ]; }
missing=""

# score RUN SPLIT CASE METRIC: from RUN/scores.tsv, or "-"
score() {
	if ! done_ "$1"; then
		echo -
		return 0
	fi
	awk -F'\t' -v s="$2" -v c="$3" -v m="$4" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == s && $2 == c { print $(col[m]); found = 1 }
		END { if (!found) print "-" }' "$out/$1/scores.tsv"
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
tsv() { # SPEC
	tsv_header
	echo "$1" | tr '|' '\n' | while IFS= read -r label && IFS= read -r stage; do tsv_rows "$label" "$stage"; done
}
tsv "$t1" >"$out/table1.tsv"
tsv "$t2" >"$out/table2.tsv"
# the stages not run (row() runs in the pipelines of table(), a subshell)
for p in $pairs; do
	for s in local-desktop local-developer central fednmt wa wa-eps1 wa-eps2 wa-eps0.5 \
		fednmt/de-0 fednmt/de-1 wa/de-0 wa/de-1; do
		done_ "$p-$s" || missing="$missing $p-$s"
	done
done

figs=""
if [ -x "$PLOT" ] && command -v gnuplot >/dev/null 2>&1; then
	# (a table without a number yet, from an interrupted run, has no chart)
	"$PLOT" bars --title "Table 1: test BLEU (uncased), joint test set" --ylabel BLEU \
		-o "$out/fig-table1" "$out/table1.tsv" || echo "results.sh: no chart of Table 1" >&2
	"$PLOT" bars --title "Table 2: FedNMT+WA test BLEU by noise" --ylabel BLEU \
		-o "$out/fig-table2" "$out/table2.tsv" || echo "results.sh: no chart of Table 2" >&2
	for p in $pairs; do
		set --
		for s in local-desktop:"desktop alone" local-developer:"developer alone" central:centralised \
			fednmt:FedNMT wa:FedNMT+WA; do
			done_ "$p-${s%%:*}" && set -- "$@" "${s#*:}=$out/$p-${s%%:*}"
		done
		if [ $# -gt 0 ]; then
			"$PLOT" curve --metric train_loss --split train --title "Figure 2: en-$p training loss per epoch" \
				--xlabel "epoch (round)" -o "$out/fig2-$p-train" "$@"
			"$PLOT" curve --metric loss --split valid --title "en-$p loss on the joint dev set" \
				--xlabel "epoch (round)" -o "$out/fig2-$p-dev" "$@"
		fi
		set --
		for s in wa:"no noise" wa-eps2:"Lap(sigma/2)" wa-eps1:"Lap(sigma)" wa-eps0.5:"Lap(2 sigma)"; do
			done_ "$p-${s%%:*}" && set -- "$@" "${s#*:}=$out/$p-${s%%:*}"
		done
		if [ $# -gt 0 ]; then
			"$PLOT" curve --metric train_loss --split train \
				--title "Figure 2: en-$p FedNMT+WA training loss by noise" --xlabel "epoch (round)" \
				-o "$out/fig2-$p-noise" "$@"
		fi
	done
	figs=1
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

{
	echo "# Wang et al. 2021 (FedNMT) on the gettext corpora: results"
	echo
	if [ "$quick" = 1 ]; then
		echo "**This is a --quick run: a few hundred training pairs a party, 15 held-out pairs a"
		echo "domain, the tiny preset, $rounds rounds. It checks that every step works; its numbers"
		echo "mean nothing.**"
		echo
	fi
	echo "Made by \`repro/wang2021/run.sh\` ($(date -u +%Y-%m-%d), fedrun $("${FEDRUN:-$top/fedrun}" --version 2>/dev/null | head -n 1 | awk '{ print $2 }'))."
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
		v=$out/$p-vocab/vocab.txt
		[ -e "$v" ] || continue
		printf '| en-%s | %s | %s%% | %s%% |\n' "$p" "$(wc -l <"$v")" \
			"$(oov "$v" "$out/data-$p/joint/test.en")" "$(oov "$v" "$out/data-$p/joint/test.$p")"
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
	header system
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
			m=$out/$p-${r%%:*}/metrics.jsonl
			[ -e "$out/$p-${r%%:*}/.complete" ] || continue
			for party in desktop developer; do
				ev() { grep "\"split\":\"test\",\"metric\":\"expert.$1\",\"model\":\"$party\"" "$m" |
					tail -n 1 | sed 's/.*"value":\([^,]*\),.*/\1/'; }
				printf '| en-%s | %s | %s | %.3f | %.3f | %.3f | %.3f |\n' "$p" "${r#*:}" "$party" \
					"$(ev lambda)" "$(ev nll_global)" "$(ev nll_private)" "$(ev nll)"
			done
		done
	done
	echo
	if [ -n "$missing" ]; then
		echo "Stages not run (their rows say so):$missing."
		echo
	fi
	if [ -n "$figs" ]; then
		echo "## Figures"
		echo
		echo "![Table 1](fig-table1.svg) ![Table 2](fig-table2.svg)"
		for p in $pairs; do
			echo "![en-$p training loss](fig2-$p-train.svg) ![en-$p dev loss](fig2-$p-dev.svg) ![en-$p noise](fig2-$p-noise.svg)"
		done
		echo
		echo "PNG files of the same names are next to the SVGs; \`.dat\` files hold the curves' numbers."
		echo
	fi
	echo "## Time"
	echo
	echo "Seconds per stage on this machine ($(nproc) cores; \`times.tsv\`):"
	echo
	echo '```'
	times_table "$out/times.tsv"
	echo '```'
} >"$out/results.md.tmp"
mv "$out/results.md.tmp" "$out/results.md"
echo "results.sh: $out/results.md"
