#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Reproduces the experiments of Wang, Huang, Kong, Li and Xiao (2021),
# "Modeling Without Sharing Privacy: Federated Neural Machine Translation"
# (FedNMT), Tables 1 and 2 and Figure 2, on the gettext corpora: two
# parties, desktop (gnome, graphics, mail, media, office) and developer
# (cli, git, packaging), English -> German and English -> Chinese
# (zh_CN, segmented into characters), and writes results.md and figures.
# See repro/wang2021/README.md.
#
# Usage: repro/wang2021/run.sh [OPTIONS]
#   --quick          every step on a small slice (300 training pairs a
#                    desktop domain, 100 a developer one, 15 dev and test),
#                    the tiny preset, 2 rounds: minutes, for CI; the
#                    numbers mean nothing
#   --out DIR        run directories, results.md and figures
#                    (default runs/wang2021, or runs/wang2021-quick)
#   --data-de DIR    the English-German corpus of data/gettext/build.sh
#                    (default data/gettext/out-en-de; built there when
#                    missing, which downloads 49 Debian packages)
#   --data-zh DIR    the English-Chinese one (default
#                    data/gettext/out-en-zh_CN; built when missing, for the
#                    eight domains of the two parties)
#   --pairs LIST     language pairs to run, comma-separated (default de,zh_CN)
#   --rounds R       federated rounds of one local epoch each (default 2:
#                    en-zh_CN took 1 h 9 min on 2 cores, en-de
#                    1 h 14 min, see README.md; 4 about doubles the
#                    training time); every baseline trains R epochs
#   --threads N      threads (default 2)
#   --vocab federated|plain
#                    how the first stage builds the shared words vocabulary:
#                    by the Paillier protocol of the paper's sec. 2.3
#                    (default), or from the union of the parties' text
#                    (the same words in the same order, without the
#                    encryption's cost)
#   --dev-bleu       decode and score the joint dev set too (by default
#                    only the test set, the paper's Table 1: decoding the
#                    dev set as well adds about 25 minutes a pair)
#   --force          rerun stages that are already complete
# A stage whose run directory holds a .complete file written with the same
# fedrun arguments is kept, so an interrupted reproduction continues where
# it stopped.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

# shellcheck disable=SC2034 # used by common.sh
prog=run.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"

dev_bleu=0 quick=0 out='' data_de='' data_zh='' threads=2 rounds='' force=0 pairs=de,zh_CN vocabmode=federated
parse_args "
	--quick:quick --force:force --dev-bleu:dev_bleu --out=out
	--data-de=data_de --data-zh=data_zh --threads=threads
	--rounds=rounds --pairs=pairs --vocab=vocabmode" "$@"
splits='test'
[ $dev_bleu = 0 ] || splits="dev test"
need_positive --threads "$threads"
if [ $quick = 1 ]; then
	: "${out:=runs/wang2021-quick}" "${rounds:=2}"
else
	: "${out:=runs/wang2021}" "${rounds:=2}"
fi
need_positive --rounds "$rounds"
: "${data_de:=$top/data/gettext/out-en-de}" "${data_zh:=$top/data/gettext/out-en-zh_CN}"
pairs=$(printf '%s' "$pairs" | tr ',' ' ')
case $vocabmode in
federated) fedvocab="--set model.tokenizer.federated=true" ;;
plain) fedvocab= ;;
*) die "--vocab: federated or plain, not '$vocabmode'" ;;
esac
for p in $pairs; do
	case $p in de | zh_CN) ;; *) die "--pairs: unknown pair '$p' (de, zh_CN)" ;; esac
done

find_fedrun

open_out

# ---- data ---------------------------------------------------------------
desktop="gnome graphics mail media office"
developer="cli git packaging"
# Training pairs taken from each domain of the desktop and the developer
# party (the first ones of its train split), and held-out pairs (the first
# of its dev and test splits): the parties hold about 25,000 and 6,000
# pairs, the paper's imbalance (En-De: 1.75M and 320K); 50 held-out pairs a
# domain (400 in each joint set) to keep the decoding of 12 models and
# experts a pair short (with the dev set as well, --dev-bleu, it was
# about half of a pair's time).
# topts: fedrun translate's options beyond the pipeline's decoding settings
# (with --quick, translations of at most 4 + the source's length in tokens:
# the barely trained models of a quick run write to the length limit).
if [ $quick = 1 ]; then
	ntrain_desktop=300 ntrain_developer=100 nheld=15 topts="--max-len-a 1 --max-len-b 4"
else
	ntrain_desktop=5000 ntrain_developer=2000 nheld=50 topts=
fi

# prepare LANG CORPUS: $out/data-LANG with desktop/ and developer/ (each
# party's training set, the concatenation of its domains', and its dev and
# test sets, the first $nheld held-out pairs of each of its domains) and
# joint/ (dev and test: the union of both parties'). Chinese
# is segmented into characters (data/gettext/segment-cjk.awk) on every
# side that is Chinese, references included.
prepare() {
	lang=$1 corpus=$2
	if [ ! -e "$corpus/stats.tsv" ]; then
		echo "run.sh: building the gettext corpus en-$lang in $corpus"
		doms=
		[ "$lang" = de ] || doms="--domains $(echo $desktop $developer | tr ' ' ',')"
		# shellcheck disable=SC2086
		"$top/data/gettext/build.sh" $doms en "$lang" "$corpus"
	fi
	for d in $desktop $developer; do
		[ -e "$corpus/$d/train.en" ] || die "$corpus/$d: missing; build it: data/gettext/build.sh en $lang $corpus"
	done
	dd=$out/data-$lang
	rm -rf "$dd"
	mkdir -p "$dd/desktop" "$dd/developer" "$dd/joint"
	seg() { # the Chinese side through segment-cjk.awk, others as they are
		if [ "$1" = zh_CN ]; then awk -f "$top/data/gettext/segment-cjk.awk"; else cat; fi
	}
	for l in en "$lang"; do
		for party in desktop developer; do
			eval "doms=\$$party"
			eval "n=\$ntrain_$party"
			for d in $doms; do head -n "$n" "$corpus/$d/train.$l"; done |
				seg "$l" >"$dd/$party/train.$l"
		done
		for s in dev test; do
			for party in desktop developer; do
				eval "doms=\$$party"
				for d in $doms; do head -n $nheld "$corpus/$d/$s.$l"; done |
					seg "$l" >"$dd/$party/$s.$l"
			done
			cat "$dd/desktop/$s.$l" "$dd/developer/$s.$l" >"$dd/joint/$s.$l"
		done
		mkdir -p "$dd/central"
		cat "$dd/desktop/train.$l" "$dd/developer/train.$l" >"$dd/central/train.$l"
		cp "$dd/joint/dev.$l" "$dd/joint/test.$l" "$dd/central/"
	done
	st=0
	"$top/data/gettext/check-overlap.sh" --src en --tgt "$lang" "$dd" >"$out/overlap-$lang.tsv" || st=$?
	case $st in
	0) ;;
	1) die "en-$lang: held-out sentences in a training set: see $out/overlap-$lang.tsv" ;;
	*) die "data/gettext/check-overlap.sh could not check $dd (exit $st)" ;;
	esac
	for f in "$dd"/*/*."$lang"; do
		printf '%s\t%s\n' "${f#"$dd"/}" "$(wc -l <"$f")"
	done >"$out/sizes-$lang.tsv"
}
for p in $pairs; do
	case $p in de) prepare de "$data_de" ;; zh_CN) prepare zh_CN "$data_zh" ;; esac
done
# (the date, fedrun's version and the cores are results.md's, read from here
# so that results.sh gives the same results.md again)
{
	printf 'rounds=%s\nquick=%s\npairs="%s"\nvocabmode=%s\nsplits="%s"\n' "$rounds" "$quick" "$pairs" "$vocabmode" "$splits"
	printf 'run_date=%s\n' "$(date -u +%Y-%m-%d)"
	printf 'fedrun_version="%s"\n' "$("$FEDRUN" --version 2>/dev/null | head -n 1 | awk '{ print $2 }' | tr -d '"$`\\')"
	printf 'cores=%s\n' "$(nproc)"
} >"$out/settings"

# ---- stages ---------------------------------------------------------------
ex=$top/examples
claims=$out/.claims # no other run.sh may use $out at the same time
rm -rf "$claims"
mkdir -p "$claims"
# The noise of Table 2 (clients' updates + Lap(sigma/epsilon) per entry,
# laplace's "clip": false as in the paper; see README.md for sigma).
sigma=0.001

# decode RUN LANG DIR WHERE [translate options]: RUN's translations of the
# joint test (and with --dev-bleu dev) sources into WHERE/hyp-SPLIT.txt (WHERE: RUN, or
# RUN/de-K for client K's domain expert), and their BLEU and chrF, uncased
# as the paper scores (and cased), into WHERE/scores.tsv.
decode() {
	run=$1 lang=$2 dd=$3 where=$4
	shift 4
	if [ -e "$where/scores.tsv" ] && [ -e "$run/.complete" ] && [ "$where/scores.tsv" -nt "$run/.complete" ]; then
		have=1 # scored after the run ended, every split asked for
		for s in $splits; do grep -q "^$s	" "$where/scores.tsv" || have=0; done
		[ $have = 0 ] || return 0
	fi
	mkdir -p "$where"
	for s in $splits; do
		# shellcheck disable=SC2086
		"$FEDRUN" translate -t "$threads" $topts "$@" "$run" <"$dd/joint/$s.en" >"$where/hyp-$s.tmp" ||
			die "$run: fedrun translate $* failed"
		mv "$where/hyp-$s.tmp" "$where/hyp-$s.txt"
	done
	run=$where
	{
		printf 'split\tcase\tbleu\tchrf\n'
		for s in $splits; do
			for c in uncased cased; do
				l=
				[ $c = uncased ] && l=-l
				# shellcheck disable=SC2086
				sc=$("$FEDRUN" bleu $l -b -w 2 "$dd/joint/$s.$lang" "$run/hyp-$s.txt") ||
					die "$run: fedrun bleu failed"
				printf '%s\t%s\t%s\n' "$s" "$c" "$(echo $sc | tr ' ' '\t')"
			done
		done
	} >"$run/scores.tmp"
	mv "$run/scores.tmp" "$run/scores.tsv"
}

# One language pair: every stage into $out/LANG-STAGE.
pair() {
	lang=$1
	dd=$out/data-$lang
	common="--set data.dir=$dd --set data.tgt=$lang --set output.overwrite=true --set eval.every=1 --set model.eval_bleu=none --set rounds=$rounds"
	if [ $quick = 1 ]; then
		common="$common --set model.preset=tiny --set model.decode.batch=20 --set model.warmup=10"
	fi
	# scored STAGE [experts]: the stage's model (and each party's domain
	# expert) decoded and scored right after the stage, so that an
	# interrupted reproduction has the numbers of every stage it finished.
	scored() {
		decode "$out/$lang-$1" "$lang" "$dd" "$out/$lang-$1"
		if [ "${2:-}" = experts ]; then
			for k in 0 1; do
				decode "$out/$lang-$1" "$lang" "$dd" "$out/$lang-$1/de-$k" --expert $k
			done
		fi
	}
	party() { # NAME: the data.clients entry of one party
		printf '{"name":"%s","train":"%s/train","valid":"joint/dev","test":"joint/test"}' "$1" "$1"
	}
	# The shared words vocabulary first (sec. 2.3): by the federated
	# protocol (or in the clear with --vocab plain), in a run of 0 rounds
	# of the FedNMT pipeline; every stage then reads its vocab.txt.
	stage "$lang-vocab" "$ex/wang2021.json" $fedvocab --set rounds=0 --set eval.final_test=false
	vocab="--set model.tokenizer.vocab=$out/$lang-vocab/vocab.txt"
	# The baselines: each party alone and the data centralised, R epochs
	# each (one client: the optimizer state kept, which is centralised
	# training).
	for p in desktop developer; do
		stage "$lang-local-$p" "$ex/wang2021.json" $vocab --set clients.optimizer_state=keep \
			--set "data.clients=[$(party $p)]"
		scored local-$p
	done
	stage "$lang-central" "$ex/wang2021.json" $vocab --set clients.optimizer_state=keep \
		--set 'data.clients=[{"name":"central","train":"central/train","valid":"joint/dev","test":"joint/test"}]'
	scored central
	# FedNMT (sec. 2.1, algorithm 1): both parties every round, one local
	# epoch each, the server's plain average, Adam's moments re-initialised
	# each round (momentum restart, sec. 2.2). After the last round each
	# party fits the gate of its domain expert (sec. 2.5) between the global
	# model and its private model: its local baseline (the same initial
	# parameters, R epochs of its own data), FedNMT+DE and FedNMT+WA+DE.
	ex_private="{\"desktop\":\"$out/$lang-local-desktop/final.safetensors\",\"developer\":\"$out/$lang-local-developer/final.safetensors\"}"
	experts="expert={\"clients\":\"all\",\"private\":$ex_private}"
	stage "$lang-fednmt" "$ex/wang2021.json" $vocab --set "$experts"
	scored fednmt experts
	# FedNMT+WA: the weighted average of eq. 3 (weights: the local steps).
	stage "$lang-wa" "$ex/wang2021.json" $vocab --set aggregator.weights=steps --set "$experts"
	scored wa experts
	# Table 2: FedNMT+WA with Lap(sigma/epsilon) noise on every update:
	# epsilon 1 and 2 as the formula reads (scale sigma, sigma/2), and the
	# text's reading (a larger epsilon more noise: scale 2 sigma for its
	# epsilon 2, that is epsilon 0.5 in the formula).
	for e in 1 2 0.5; do
		stage "$lang-wa-eps$e" "$ex/wang2021.json" $vocab --set aggregator.weights=steps \
			--set "privacy={\"plugin\":\"laplace\",\"sigma\":$sigma,\"epsilon\":$e,\"clip\":false,\"noise\":\"reproducible\"}"
		scored wa-eps$e
	done
}
for p in $pairs; do
	pair "$p"
done
rm -rf "$claims"

t_end=$(date +%s)
printf 'total\t%s\n' $((t_end - t_start)) >>"$times"
# (results.sh scores the copy baseline and the goals with the same fedrun)
FEDRUN=$FEDRUN "$here/results.sh" "$out"
echo "run.sh: $out/results.md ($((t_end - t_start)) s this call)"
