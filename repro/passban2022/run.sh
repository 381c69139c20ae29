#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Reproduces the experiments of Passban, Roosta, Gupta, Chadha and Chung
# (2022), "Training Mixed-Domain Translation Models via Federated Learning",
# on the gettext corpora (English -> German, five domain clients), and writes
# results.md and figures. See repro/passban2022/README.md.
#
# Usage: repro/passban2022/run.sh [OPTIONS]
#   --quick          every step on a small slice (1000 training pairs a
#                    domain, 30 dev and test), the tiny preset and 50 steps
#                    of fine-tuning: minutes, for CI; the numbers mean nothing
#   --out DIR        run directories, results.md and figures
#                    (default runs/passban2022, or runs/passban2022-quick)
#   --data DIR       the corpus built by data/gettext/build.sh for all its
#                    domains (default data/gettext/out-en-de; built there when
#                    missing, which downloads 49 Debian packages)
#   --threads N      threads in all (default 2)
#   --jobs J         after the generic model, J stages at a time, each
#                    with N/J threads (default 1; for machines with more
#                    cores than a stage keeps busy: the stages are
#                    independent apart from the chain)
#   --optim          also the table of optimizer-state and schedule-clock
#                    choices (stages reset, continue, client-clock: about 45
#                    minutes more at the default size; always with --quick)
#   --steps T        the fine-tuning budget in steps (default 200; 50 with
#                    --quick): data combination trains T steps, every
#                    federated client T steps in all (T/R a round), each
#                    domain alone T steps, the chain T/5 a domain
#   --matched        also Table 6's dp_greater and dp_less at matched
#                    parameter fractions (stages dp-greater-matched and
#                    dp-less-matched: selector.fraction_by "parameters", so
#                    each pulls about half the parameters, as in the paper,
#                    with selector.measure "mean", the change's norm over
#                    the square root of the tensor's size); "federated" is
#                    their "all"
#   --seeds N        every stage after the generic model but the chain
#                    also for seeds 2..N (default 1): stage NAME-sK runs
#                    with --set seed=K (the clients' sampling, shuffling
#                    and dropout; the generic model is seed 1's for all)
#   --only LIST      only these stages after the generic model,
#                    comma-separated: alone, combined, chained, federated,
#                    rounds10, rounds50, dp-greater, dp-less, random,
#                    dp-greater-matched, dp-less-matched, reset, continue,
#                    client-clock. The issue's runs: the headline,
#                    --steps 2000 --seeds 3 --only combined,federated
#                    (with its own --out); the matched fractions,
#                    --matched --seeds 3 --only
#                    federated,dp-greater-matched,dp-less-matched
#   --force          rerun stages that are already complete
#   --set KEY=VALUE  a pipeline setting for every stage, as fedrun --set
#                    (repeatable; VALUE without spaces), e.g. --set seed=2
#                    or --set model.precision='"bf16"'
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

quick=0 out='' data='' threads=2 jobs=1 steps='' force=0 optim=0 sets='' matched=0 seeds=1
# shellcheck disable=SC2034 # only: read by common.sh's want
only=''
# --set KEY=VALUE (repeatable): fedrun --set options of every run
extra_arg() {
	[ "$1" = --set ] || return 1
	[ $# -ge 2 ] || die "$1 needs a value"
	case $2 in *' '* | *'	'*) die "--set $2: the value has a space" ;; esac
	sets="$sets --set $2"
	return 2
}
parse_args "
	--quick:quick --force:force --optim:optim --out=out --matched:matched
	--data=data --threads=threads --jobs=jobs --steps=steps --seeds=seeds --only=only" "$@"
need_positive --threads "$threads"
need_positive --jobs "$jobs"
need_positive --seeds "$seeds"
check_only "alone combined chained federated rounds10 rounds50 dp-greater dp-less random dp-greater-matched dp-less-matched reset continue client-clock"
if [ $quick = 1 ]; then
	: "${out:=runs/passban2022-quick}" "${steps:=50}"
	optim=1 matched=1
else
	: "${out:=runs/passban2022}" "${steps:=200}"
fi
need_positive --steps "$steps"
[ $((steps % 50)) -eq 0 ] || die "--steps must be a multiple of 50 (T/50 steps a round at 50 rounds)"
: "${data:=$top/data/gettext/out-en-de}"

find_fedrun

open_out

# ---- data ---------------------------------------------------------------
client_domains="cli git packaging gnome office"
generic_domains="finance gnupg graphics mail media system toolchain"
if [ ! -e "$data/stats.tsv" ]; then
	echo "run.sh: building the gettext corpus in $data (all domains)"
	"$top/data/gettext/build.sh" en de "$data"
fi
for d in $client_domains $generic_domains; do
	[ -e "$data/$d/train.en" ] || die "$data/$d: missing; build the corpus with all domains: data/gettext/build.sh en de $data"
done
# $out/data: the domains (sliced with --quick) and two unions made by
# concatenation in the order above: generic (the 7 pre-training domains)
# and five (the 5 client domains, data combination's training set).
dd=$out/data
rm -rf "$dd"
mkdir -p "$dd"
for d in $client_domains $generic_domains; do
	mkdir -p "$dd/$d"
	for s in train dev test; do
		for l in en de; do
			if [ $quick = 1 ]; then
				case $s in train) n=1000 ;; *) n=30 ;; esac
				head -n $n "$data/$d/$s.$l" >"$dd/$d/$s.$l"
			else
				ln -s "$data/$d/$s.$l" "$dd/$d/$s.$l"
			fi
		done
	done
done
union() { # NAME DOMAINS...
	u=$1
	shift
	mkdir -p "$dd/$u"
	for s in train dev test; do
		for l in en de; do
			for d in "$@"; do cat "$dd/$d/$s.$l"; done >"$dd/$u/$s.$l"
		done
	done
}
union generic $generic_domains
union five $client_domains
# No held-out sentence of any domain (or union) in any training set.
st=0
"$top/data/gettext/check-overlap.sh" "$dd" >"$out/overlap.tsv" || st=$?
case $st in
0) ;;
1) die "the corpus leaks held-out sentences into training sets: see $out/overlap.tsv" ;;
*) die "data/gettext/check-overlap.sh could not check $dd (exit $st)" ;;
esac
# What results.sh needs to label the tables, and for the lines of
# results.md that would otherwise differ from call to call of results.sh:
# the day of this run.sh call, the fedrun version and the cores.
{
	printf 'steps=%s\nquick=%s\noptim=%s\nmatched=%s\nseeds=%s\n' "$steps" "$quick" "$optim" "$matched" "$seeds"
	printf 'date="%s"\n' "$(date -u +%Y-%m-%d)"
	printf 'fedrun_version="%s"\n' "$("$FEDRUN" --version 2>/dev/null | head -n 1 | awk '{ print $2 }' | tr -d '"$`\\')"
	printf 'cores=%s\n' "$(nproc)"
} >"$out/settings"

# ---- stages ---------------------------------------------------------------
common="--set data.dir=$dd --set output.overwrite=true$sets"
if [ $quick = 1 ]; then
	common="$common --set model.preset=tiny --set model.decode.batch=20"
fi
ex=$top/examples

claims=$out/.claims # no other run.sh may use $out at the same time
rm -rf "$claims"
mkdir -p "$claims"
T=$steps
# The generic model: trained centrally on the 7 other domains (the
# pipeline's 6 epochs; 1 with --quick), with its own SentencePiece model.
if [ $quick = 1 ]; then
	stage generic "$ex/passban2022-generic.json" --set rounds=1 \
		--set model.tokenizer.vocab_size=400
else
	stage generic "$ex/passban2022-generic.json"
fi
init="--set init=$out/generic/final.safetensors --set model.tokenizer.model=$out/generic/spm.model"

# Chained fine-tuning (Table 2): the domains in sequence, each stage from
# the one before; one job runs the whole chain.
chain() {
	claim chained || return 0
	prev=$out/generic/final.safetensors
	k=0
	for d in $client_domains; do
		k=$((k + 1))
		last=false
		[ $k -eq 5 ] && last=true
		stage chained-$k "$ex/passban2022-chained.json" \
			--set init="$prev" --set model.tokenizer.model="$out/generic/spm.model" \
			--set clients.steps=$((T / 5)) --set eval.matrix=$last \
			--set "data.clients=[{\"name\":\"stage\",\"train\":\"$d/train\",\"valid\":\"$d/dev\"},$(
				for e in $client_domains; do printf '{"name":"%s","valid":"%s/dev","test":"%s/test"},' "$e" "$e" "$e"; done |
					sed 's/,$//')]"
		prev=$out/chained-$k/final.safetensors
	done
}

# hyps NAME: the test translations of every model that NAME's
# eval_matrix.tsv scores (the server's final.safetensors and each
# fine-tuned client's finetuned/client-K.safetensors, K the client's place
# in $client_domains) on each client domain, into
# NAME/hyps/MODEL/DOMAIN.txt.gz, for results.sh's copy baseline check and
# paired bootstrap. fedrun translate --long keep decodes with the run's
# decode settings and, like the evaluation, every source whole, so the
# translations are those the matrix's BLEU was computed on (results.sh
# scores them again and says where they are not). One thread: the same
# translations as on more (fedrun-translate(1)), and on the loaded 2-core
# machine translate -t 2 took ten times as long as -t 1 (6.2 s against 0.7
# for a --quick domain). Kept once made after the run completed; its
# seconds go to times.tsv as "NAME hyps".
hyps() {
	r=$out/$1
	[ -e "$r/.complete" ] || return 0
	if [ $force = 0 ] && [ -e "$r/hyps/.complete" ] && cmp -s "$r/hyps/.complete" "$r/.complete"; then
		return 0
	fi
	claim "hyps-$1" || return 0
	rm -rf "$r/hyps"
	t0=$(date +%s)
	models=$(awk -F'\t' '/^# / { b = ($0 == "# bleu on test"); next } b && $1 != "model" && NF > 1 { print $1 }' \
		"$r/eval_matrix.tsv")
	[ -n "$models" ] || die "$r/eval_matrix.tsv: no BLEU rows"
	for m in $models; do
		if [ "$m" = server ]; then
			ck=$r/final.safetensors
		else
			k=0 ck=
			for d in $client_domains; do
				[ "$d" != "$m" ] || ck=$r/finetuned/client-$k.safetensors
				k=$((k + 1))
			done
		fi
		[ -n "$ck" ] && [ -e "$ck" ] || die "$r: no parameters for model $m of eval_matrix.tsv"
		mkdir -p "$r/hyps/$m"
		for d in $client_domains; do
			"$FEDRUN" translate -t 1 --long keep -c "$ck" "$r" <"$dd/$d/test.en" \
				>"$r/hyps/$m/$d.txt" 2>"$r/hyps/translate.err" ||
				die "$1: fedrun translate of $d with model $m failed: $(cat "$r/hyps/translate.err")"
			[ ! -s "$r/hyps/translate.err" ] || die "$1: fedrun translate: $(cat "$r/hyps/translate.err")"
			gzip -n "$r/hyps/$m/$d.txt"
		done
	done
	rm -f "$r/hyps/translate.err"
	cp "$r/.complete" "$r/hyps/.complete"
	printf '%s hyps\t%s\n' "$1" $(($(date +%s) - t0)) >>"$times"
}

# run NAME PIPELINE [fedrun options]: stage NAME and its translations
# (hyps), then for each seed K of 2..--seeds stage NAME-sK with --set
# seed=K; nothing when --only does not name NAME.
run() {
	[ -z "$only" ] || want "$1" || return 0
	_rn=$1
	shift
	stage "$_rn" "$@"
	hyps "$_rn"
	_sk=2
	while [ $_sk -le "$seeds" ]; do
		stage "$_rn-s$_sk" "$@" --set seed=$_sk
		hyps "$_rn-s$_sk"
		_sk=$((_sk + 1))
	done
}

# The stages after the generic model, in the order of the tables; every
# job (--jobs) walks this list and runs the stages it claims.
stages() {
	# Table 2: each domain fine-tuned alone (rounds 0: the generic model,
	# fine-tuned on each client), data combination, chained fine-tuning.
	run alone "$ex/passban2022-alone.json" $init --set finetune.steps=$T
	run combined "$ex/passban2022-combined.json" $init --set clients.steps=$((T / 5))
	if [ -z "$only" ] || want chained; then
		chain
		hyps chained-5
	fi

	# Table 4 (and Table 5's 5 rounds, Table 6's "all"): the five clients from
	# the generic model, T steps each in 5 rounds, then each fine-tuned.
	r5=$((T / 5)) r10=$((T / 10)) r50=$((T / 50))
	run federated "$ex/passban2022-federated.json" $init --set clients.steps=$r5 \
		--set finetune.steps=$r5
	# Table 5: 10 and 50 rounds at the same steps.
	run rounds10 "$ex/passban2022-rounds10.json" $init --set clients.steps=$r10
	run rounds50 "$ex/passban2022-rounds50.json" $init --set clients.steps=$r50
	# Table 6: what travels in the pull.
	for s in dp-greater dp-less random; do
		run $s "$ex/passban2022-$s.json" $init --set clients.steps=$r5
	done
	# --matched: dp_greater and dp_less with θ at the median of each
	# group's parameters, not of its tensors (fedrun-selectors(7)).
	if [ $matched = 1 ]; then
		for s in dp-greater dp-less; do
			run $s-matched "$ex/passban2022-$s.json" $init --set clients.steps=$r5 \
				--set selector.fraction_by=parameters --set selector.measure=mean
		done
	fi

	# --optim: optimizer state and schedule clock (clients.optimizer_state,
	# clients.lr_clock), the federated setting of Table 4 with Adam's state
	# reset each round, reset with its bias correction continued, and reset on
	# each client's own schedule clock (fedrun's defaults before the global
	# clock: every round starts the warm-up again); "federated" itself keeps
	# the state on the global clock. Not one of the paper's tables, so not
	# in the 3 hours of the default run.
	[ $optim = 1 ] || return 0
	for s in reset continue; do
		run $s "$ex/passban2022-$s.json" $init --set clients.steps=$r5
	done
	run client-clock "$ex/passban2022-client-clock.json" $init --set clients.steps=$r5
}

if [ "$jobs" -eq 1 ]; then
	stages
else
	# Each job: its own fedrun thread count, its own exit status.
	threads=$((threads / jobs))
	[ "$threads" -ge 1 ] || threads=1
	pids=
	j=0
	while [ $j -lt "$jobs" ]; do
		stages &
		pids="$pids $!"
		j=$((j + 1))
	done
	st=0
	for p in $pids; do wait "$p" || st=1; done
	[ $st -eq 0 ] || die "a stage failed (its message is above)"
fi
rm -rf "$claims"

t_end=$(date +%s)
printf 'total\t%s\n' $((t_end - t_start)) >>"$times"
"$here/results.sh" "$out"
echo "run.sh: $out/results.md ($((t_end - t_start)) s this call)"
