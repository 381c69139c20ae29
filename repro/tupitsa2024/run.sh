#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Reproduces the mean-estimation experiments of Tupitsa, Horvath, Takac and
# Gorbunov (2024), "Federated Learning Can Find Friends That Are
# Advantageous" (MeritFed), as on Gorbunov's slides: the 150-client problem
# and the Byzantine variants, with MeritFed, FedAvg over all clients, the
# ideal (FedAvg over the target's distribution only), the coordinate-wise
# median, the trimmed mean and Krum, over several seeds; writes results.md
# and figures. See repro/tupitsa2024/README.md.
#
# Usage: repro/tupitsa2024/run.sh [OPTIONS]
#   --quick          every stage with 2 seeds and 10 rounds (about a
#                    minute, for CI; the numbers mean little); lowres, when
#                    named, with a tiny transformer for 3 rounds of 2 steps
#                    (for the fixture corpus of tests/lowres_fixture.sh)
#   --out DIR        run directories, results.md and figures
#                    (default runs/tupitsa2024, or runs/tupitsa2024-quick)
#   --seeds LIST     seeds, e.g. "1 2 3" (default "1 2 3 4 5"; "1 2" with
#                    --quick); seed s runs with data.seed s + 4, so that
#                    seed 1 is examples/meanest-meritfed.json as shipped
#   --rounds R       rounds of every run (default 50; 10 with --quick)
#   --only LIST      only these stages, comma-separated: meanest, valid,
#                    byzantine, lowres (default: meanest,valid,byzantine;
#                    lowres, which trains transformers, only when named)
#   --threads N      threads of each run (default 1)
#   --backend NAME   the lowres runs' backend (default cpu; cuda on a GPU)
#   --lowres-data DIR  the corpus of data/gettext/build-multi.sh with target
#                    is (default data/gettext/out-multi-is)
#   --lowres-rounds R, --lowres-steps S  rounds of the lowres runs and
#                    steps a client makes a round (default: the examples',
#                    30 and 20)
#   --lowres-seeds LIST  seeds of the lowres runs, each a run of the three
#                    methods and of the vocabulary control (the target alone
#                    with the federated runs' vocabulary) (default "1", the
#                    examples' seed; "1 2" with --quick); results.md gives
#                    mean and spread over them
#   --force          rerun runs that are already complete
# A run whose directory holds a .complete file written with the same fedrun
# arguments is kept, so an interrupted reproduction continues where it
# stopped. results.sh alone remakes results.md from the run directories.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

# shellcheck disable=SC2034 # used by common.sh
prog=run.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"

# shellcheck disable=SC2034 # only: read by common.sh's want
quick=0 out='' seeds='' rounds='' only='meanest,valid,byzantine' threads=1 force=0
backend=cpu lr_data='' lr_rounds='' lr_steps='' lr_seeds=''
parse_args "
	--quick:quick --force:force --out=out --seeds=seeds
	--rounds=rounds --only=only --threads=threads
	--backend=backend --lowres-data=lr_data
	--lowres-rounds=lr_rounds --lowres-steps=lr_steps
	--lowres-seeds=lr_seeds" "$@"
if [ $quick = 1 ]; then
	: "${out:=runs/tupitsa2024-quick}" "${seeds:=1 2}" "${rounds:=10}" "${lr_seeds:=1 2}"
else
	: "${out:=runs/tupitsa2024}" "${seeds:=1 2 3 4 5}" "${rounds:=50}" "${lr_seeds:=1}"
fi
need_positive --threads "$threads"
need_positive --rounds "$rounds"
[ -n "$seeds" ] || die "--seeds needs at least one seed"
[ -n "$lr_seeds" ] || die "--lowres-seeds needs at least one seed"
for s in $seeds; do
	case $s in *[!0-9]* | 0) die "--seeds: '$s' is not a positive number" ;; esac
done
for s in $lr_seeds; do
	case $s in *[!0-9]* | 0) die "--lowres-seeds: '$s' is not a positive number" ;; esac
done
check_only "meanest valid byzantine lowres"
[ -z "$lr_rounds" ] || need_positive --lowres-rounds "$lr_rounds"
[ -z "$lr_steps" ] || need_positive --lowres-steps "$lr_steps"
: "${lr_data:=$top/data/gettext/out-multi-is}"

find_fedrun
export FEDRUN

mkdir -p "$out"
out=$(cd "$out" && pwd)
times=$out/times.tsv
[ -e "$times" ] || printf 'stage\tseconds\n' >"$times"
# What results.sh needs to label the tables, and the date and fedrun of
# the run (results.md's first line, the same whenever results.sh remakes it).
printf 'seeds=%s\nrounds=%s\nquick=%s\nmade=%s\nfedrun=%s\n' "$seeds" "$rounds" "$quick" \
	"$(date -u +%Y-%m-%d)" "$("$FEDRUN" --version 2>/dev/null | head -n 1)" >"$out/settings"

ex=$top/examples

# run NAME PIPELINE [fedrun options]: PIPELINE once per seed, into
# $out/NAME/s<seed>, unless that run is complete with the same arguments
# (its .complete file holds them); each run's output goes to its log.txt
# (fedrun's) and $out/NAME/s<seed>.log.
run() {
	name=$1 pipe=$2
	shift 2
	mkdir -p "$out/$name"
	for s in $seeds; do
		d=$out/$name/s$s
		args="$(basename "$pipe") rounds=$rounds seed=$s $*"
		if [ $force = 0 ] && [ -e "$d/.complete" ] && [ "$(cat "$d/.complete")" = "$args" ]; then
			continue
		fi
		rm -rf "$d"
		if ! "$FEDRUN" -q --threads "$threads" "$pipe" --set output.dir="$d" \
			--set rounds="$rounds" --set seed="$s" --set data.seed=$((s + 4)) \
			--set output.checkpoint_every=0 --set eval.every=1 "$@" \
			>"$out/$name/s$s.log" 2>&1; then
			tail -n 5 "$out/$name/s$s.log" >&2
			die "$name, seed $s failed: see $out/$name/s$s.log"
		fi
		printf '%s\n' "$args" >"$d/.complete"
	done
}

# stage NAME [WHAT]: times the runs that follow until the next stage call;
# WHAT (default: the seeds and rounds) says what the stage runs.
stage_name='' stage_t0=0
stage() {
	now=$(date +%s)
	if [ -n "$stage_name" ]; then
		printf '%s\t%s\n' "$stage_name" $((now - stage_t0)) >>"$times"
		echo "run.sh: $stage_name: $((now - stage_t0)) s"
	fi
	stage_name=$1 stage_t0=$now
	[ -z "$1" ] || echo "run.sh: $1 (${2:-seeds $seeds, $rounds rounds})"
}

# The aggregators every setting compares; the robust ones take the most
# Byzantine clients that their conditions allow (Krum: n > 2f + 2; the
# trimmed mean: b = floor(0.45 n) values dropped at each end).
FEDAVG='aggregator={"plugin": "fedavg"}'
MEDIAN='aggregator={"plugin": "median"}'
TRIMMED='aggregator={"plugin": "trimmed_mean", "trim": 0.45}'
krum() { # N: Krum with the largest f for N clients
	echo "aggregator={\"plugin\": \"krum\", \"f\": $((($1 - 3) / 2))}"
}

# ---- the 150-client problem (slides, "Mean Estimation") -----------------
# examples/meanest-meritfed.json: 5 clients of the target's distribution
# D1 = N(0, I) (the target, client 0, holds 1000 validation samples), 95
# of D2 = N(0.1 * 1, I), 50 of D3 = N(e1, I); one full-batch local step.
ME=$ex/meanest-meritfed.json
G='{"clients": 5, "mean": 0, "samples": 1000, "valid_samples": 1000}'
if want meanest; then
	stage meanest
	run meanest/meritfed "$ME"
	run meanest/fedavg "$ME" --set "$FEDAVG"
	run meanest/ideal "$ME" --set "$FEDAVG" --set "data.groups=[$G]"
	run meanest/median "$ME" --set "$MEDIAN"
	run meanest/trimmed_mean "$ME" --set "$TRIMMED"
	run meanest/krum "$ME" --set "$(krum 150)"
fi

# ---- the target's validation sample (mean-estimation-analysis.md) --------
# MeritFed fits its weights to the target's validation loss: with the
# paper's 1000 samples that noise costs about 2x the ideal's error.
if want valid; then
	stage valid
	for v in 3000 10000; do
		run valid/meritfed-v$v "$ME" --set data.groups.0.valid_samples=$v
	done
fi

# ---- Byzantine clients (slides, "Byzantine-Robustness for Free") ---------
# 55 clients of one distribution N(1, I); 50 of them (clients 5..54) know
# it and attack: bit flipping, random noise, ALIE and IPM (attack.* in
# fedrun-pipeline(5), defaults). The ideal is FedAvg over the 5 honest.
BZ=$ex/byzantine-meritfed.json
if want byzantine; then
	stage byzantine
	run byzantine/ideal "$BZ" --set "$FEDAVG" --set attack=null \
		--set 'data.groups=[{"clients": 5, "mean": 1, "samples": 1000, "valid_samples": 1000}]'
	for a in bitflip noise alie ipm; do
		A="--set attack.type=$a"
		# shellcheck disable=SC2086
		{
			run byzantine/$a/meritfed "$BZ" $A
			run byzantine/$a/fedavg "$BZ" $A --set "$FEDAVG"
			run byzantine/$a/median "$BZ" $A --set "$MEDIAN"
			run byzantine/$a/trimmed_mean "$BZ" $A --set "$TRIMMED"
			run byzantine/$a/krum "$BZ" $A --set "$(krum 55)"
		}
	done
fi
# ---- low-resource translation with helper languages ---------------------
# Moskvoretskii et al. 2024: English -> Icelandic (3000 training pairs) as
# the target client, nine helper languages (examples/lowres-is-*.json):
# the target alone, FedAvg over all, MeritFed for the target, and the
# control alone-shared (the target alone with FedAvg's vocabulary, so that
# it differs from MeritFed only in the aggregation), into
# lowres/<method>/s<seed>, seed by seed; BLEU and chrF on the target's test
# set after the last round.
if want lowres; then
	[ -e "$lr_data/is/train.src" ] || die "$lr_data: no corpus; build it with data/gettext/build-multi.sh (data/gettext/README.md, \"Several languages\") or give --lowres-data"
	lr_dir=$(cd "$lr_data" && pwd)
	# No held-out English string of any language in any training set, nor
	# a near-duplicate of one (a corpus built before build-multi.sh purged
	# them fails); the table goes into results.md.
	mkdir -p "$out/lowres"
	st=0
	"$top/data/gettext/check-multi.sh" "$lr_dir" >"$out/lowres/overlap.tsv" 2>"$out/lowres/overlap.err" || st=$?
	case $st in
	0) rm -f "$out/lowres/overlap.err" ;;
	1) die "$lr_dir: held-out sentences or near-duplicates of them in a training set: see $out/lowres/overlap.tsv and overlap.err (rebuild the corpus with data/gettext/build-multi.sh)" ;;
	*) die "data/gettext/check-multi.sh could not check $lr_dir (exit $st): see $out/lowres/overlap.err" ;;
	esac
	[ $quick = 0 ] || : "${lr_rounds:=3}" "${lr_steps:=2}"
	stage lowres "seeds $lr_seeds, rounds ${lr_rounds:-of examples/lowres-is-*.json}, local steps ${lr_steps:-of the same}"
	for s in $lr_seeds; do
		for m in alone fedavg meritfed alone-shared; do
			d=$out/lowres/$m/s$s
			set -- --backend "$backend" --set data.dir="$lr_dir" --set eval.every=5 --set seed="$s"
			if [ $quick = 1 ]; then
				# a tiny transformer, vocabulary and batch, greedy decoding:
				# for the fixture corpus of tests/lowres_fixture.sh (CI)
				set -- "$@" --set eval.every=1 --set model.preset=tiny \
					--set model.tokenizer.vocab_size=100 --set model.decode.beam=1 \
					--set model.warmup=4 --set clients.batch=256
			fi
			[ -z "$lr_rounds" ] || set -- "$@" --set rounds="$lr_rounds"
			[ -z "$lr_steps" ] || set -- "$@" --set clients.steps="$lr_steps"
			ex_m=$m
			if [ $m = alone-shared ]; then
				# the control: the target alone with the federated runs'
				# vocabulary (FedAvg's spm.model, trained on every
				# language) instead of its own
				ex_m=alone
				v=$out/lowres/fedavg/s$s
				set -- "$@" --set model.tokenizer.model="$v/spm.model" \
					--set model.tokenizer.vocab_size="$(sed -n 's/^ *"vocab_size": \([0-9]*\),\{0,1\}$/\1/p' "$v/pipeline.json" | head -n 1)"
			fi
			args="lowres-is-$m.json $*"
			if [ $force = 0 ] && [ -e "$d/.complete" ] && [ "$(cat "$d/.complete")" = "$args" ]; then
				continue
			fi
			rm -rf "$d"
			mkdir -p "$out/lowres/$m"
			if ! "$FEDRUN" -q --threads "$threads" "$ex/lowres-is-$ex_m.json" --set output.dir="$d" "$@" \
				>"$out/lowres/$m/s$s.log" 2>&1; then
				tail -n 5 "$out/lowres/$m/s$s.log" >&2
				die "lowres $m, seed $s failed: see $out/lowres/$m/s$s.log"
			fi
			printf '%s\n' "$args" >"$d/.complete"
		done
	done
	# What results.sh's copy-source baseline and paired bootstrap need: the
	# target's test sources (English, without the tag) and references, and
	# every run's test translations (decoded as the run's final test was:
	# the pipeline's model.decode), gzipped; a run whose translations are
	# already there is not decoded again (a run made again starts from an
	# empty directory).
	gzip -9nc "$lr_dir/is/test.en" >"$out/lowres/test.en.gz"
	gzip -9nc "$lr_dir/is/test.tgt" >"$out/lowres/test.tgt.gz"
	for s in $lr_seeds; do
		for m in alone fedavg meritfed alone-shared; do
			d=$out/lowres/$m/s$s
			[ ! -e "$d/hyp-test.txt.gz" ] || continue
			"$FEDRUN" translate -t "$threads" --backend "$backend" "$d" <"$lr_dir/is/test.src" >"$d/hyp-test.tmp" ||
				die "lowres $m, seed $s: fedrun translate failed"
			gzip -9nc "$d/hyp-test.tmp" >"$d/hyp-test.txt.gz"
			rm -f "$d/hyp-test.tmp"
		done
	done
fi
stage ''

"$here/results.sh" "$out"
echo "run.sh: $out/results.md"
