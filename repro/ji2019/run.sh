#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Reproduces the experiments of Ji, Pan, Long, Li, Jiang and Huang (2019),
# "Learning Private Neural Language Modeling with Attentive Aggregation"
# (FedAtt), on the Brown corpus with the GRU language model, and writes
# results.md and figures. See repro/ji2019/README.md.
#
# Usage: repro/ji2019/run.sh [OPTIONS]
#   --quick          every stage on a small slice (100 training sentences a
#                    genre, 200 valid and test), a 2000-word vocabulary,
#                    32 units, 20 clients, 3 rounds: minutes, for CI; the
#                    numbers mean nothing
#   --out DIR        run directories, results.md and figures
#                    (default runs/ji2019, or runs/ji2019-quick)
#   --data DIR       the Brown corpus built by data/brown/build.sh (default
#                    data/brown/out; built there when missing, with npm)
#   --threads N      fedrun's worker threads (default 2)
#   --seeds LIST     seeds, each a run of every setting (default "1");
#                    results.md gives mean and spread when there are several
#   --preset P       gru-lm preset small, medium or large (default small)
#   --rounds R       communication rounds of every run (default 12; 3 with
#                    --quick; the paper's is 50)
#   --eval-every E   validation perplexity every E rounds (default 4; 1
#                    with --quick)
#   --backend NAME   fedrun --backend (default cpu; cuda on a GPU build)
#   --only LIST      only these stages, comma-separated: table2, noniid,
#                    table3, alpha (default: all four); compare: the
#                    runs of table2 and noniid that the goals compare
#                    (FedAvg and FedAtt frobenius eps 1 in every
#                    partition), to add seeds to them alone; sizes: FedAvg
#                    and FedAtt (frobenius, eps 1, iid) with the medium and
#                    large presets (Table IV's direction; not in the
#                    default, see the README for its time)
#   --size-rounds R  rounds of the sizes stage's runs (default --rounds)
#   --force          rerun runs that are already complete
# A run whose directory holds a .complete file written with the same fedrun
# arguments is kept, so an interrupted reproduction continues where it
# stopped.
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

# shellcheck disable=SC2034 # used by common.sh
prog=run.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"

quick=0 out='' data='' threads=2 seeds=1 preset=small rounds='' every='' size_rounds=''
# shellcheck disable=SC2034 # only: read by common.sh's want
backend=cpu only='table2,noniid,table3,alpha' force=0
parse_args "
	--quick:quick --force:force --out=out --data=data
	--threads=threads --seeds=seeds --preset=preset
	--rounds=rounds --eval-every=every --backend=backend
	--only=only --size-rounds=size_rounds" "$@"
if [ $quick = 1 ]; then
	: "${out:=runs/ji2019-quick}" "${rounds:=3}" "${every:=1}"
else
	: "${out:=runs/ji2019}" "${rounds:=12}" "${every:=4}"
fi
need_positive --threads "$threads"
need_positive --rounds "$rounds"
need_positive --eval-every "$every"
: "${size_rounds:=$rounds}"
need_positive --size-rounds "$size_rounds"
for s in $seeds; do need_positive --seeds "$s"; done
[ -n "$seeds" ] || die "--seeds needs at least one seed"
case $preset in small | medium | large) ;; *) die "--preset: small, medium or large" ;; esac
case $backend in '' | *[!A-Za-z0-9_-]*) die "--backend: a plugin name" ;; esac
check_only "table2 noniid table3 alpha compare sizes"
: "${data:=$top/data/brown/out}"

find_fedrun
export FEDRUN

mkdir -p "$out"
out=$(cd "$out" && pwd)
t_start=$(date +%s)
times=$out/times.tsv
[ -e "$times" ] || printf 'run\tseconds\n' >"$times"

# ---- data -----------------------------------------------------------------
if [ ! -e "$data/stats.tsv" ]; then
	echo "run.sh: building the Brown corpus in $data"
	"$top/data/brown/build.sh" "$data"
fi
data=$(cd "$data" && pwd) # (the links below need an absolute path)
genres=$(cd "$data/train" && ls *.txt | sed 's/\.txt$//')
[ -n "$genres" ] || die "$data/train: no genre files"
# $out/data: the pooled splits and the genre files (sliced with --quick).
dd=$out/data
rm -rf "$dd"
mkdir -p "$dd/train"
for g in $genres; do
	if [ $quick = 1 ]; then
		head -n 100 "$data/train/$g.txt" >"$dd/train/$g.txt"
	else
		ln -s "$data/train/$g.txt" "$dd/train/$g.txt"
	fi
done
# The pooled training text is the genres' in file order (= build.sh's
# train.txt); valid and test are the corpus's.
for g in $genres; do cat "$dd/train/$g.txt"; done >"$dd/train.txt"
for s in valid test; do
	if [ $quick = 1 ]; then
		head -n 200 "$data/$s.txt" >"$dd/$s.txt"
	else
		ln -s "$data/$s.txt" "$dd/$s.txt"
	fi
done
genre_files=$(for g in $genres; do printf '"%s/train/%s.txt",' "$dd" "$g"; done | sed 's/,$//')
ngenres=$(echo $genres | wc -w)

# ---- settings ---------------------------------------------------------------
if [ $quick = 1 ]; then
	K=20 frac=0.2 files_frac=0.2
else
	K=100 frac=0.1 files_frac=0.2
fi
betas="0.001 0.005 0.01 0.05"
dp_eps="1 4 8"
dp_delta=1e-5
dp_clip=1.0
machine="$(uname -m), $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
if [ "$backend" != cpu ] && command -v nvidia-smi >/dev/null 2>&1; then
	machine="$machine; GPU $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
fi
# What results.sh needs to label the tables. The seeds are those of every
# call into OUT with the same rounds, preset and backend (a call that adds
# seeds to some runs, or runs one stage with one seed, keeps the others').
all_seeds=$seeds
if [ -e "$out/settings" ] && [ "$(grep -E '^(quick|rounds|preset|backend)=' "$out/settings")" = "$(printf 'quick=%s\nrounds=%s\npreset=%s\nbackend=%s' "$quick" "$rounds" "$preset" "$backend")" ]; then
	all_seeds=$(sed -n 's/^seeds="\(.*\)"$/\1/p' "$out/settings")
	all_seeds=$(printf '%s\n' $all_seeds $seeds | sort -n -u | tr '\n' ' ' | sed 's/ $//')
fi
{
	printf 'quick=%s\nrounds=%s\nevery=%s\npreset=%s\nbackend=%s\n' "$quick" "$rounds" "$every" "$preset" "$backend"
	printf 'seeds="%s"\nK=%s\nfrac=%s\nfiles_frac=%s\nngenres=%s\n' "$all_seeds" "$K" "$frac" "$files_frac" "$ngenres"
	printf 'betas="%s"\ndp_eps="%s"\ndp_delta=%s\ndp_clip=%s\n' "$betas" "$dp_eps" "$dp_delta" "$dp_clip"
	printf 'machine="%s"\n' "$(echo "$machine" | tr -d '"$`\\')"
	# the date and build results.md names (so that it recomputes the same)
	printf 'made=%s\nfedrun_version=%s\n' "$(date -u +%Y-%m-%d)" \
		"$("$FEDRUN" --version 2>/dev/null | head -n 1 | awk '{ print $2 }' | tr -cd 'A-Za-z0-9._+-')"
} >"$out/settings"

common="--set data.train=$dd/train.txt --set data.valid=$dd/valid.txt --set data.test=$dd/test.txt"
common="$common --set data.partition.clients=$K --set clients.fraction=$frac"
common="$common --set rounds=$rounds --set eval.every=$every --set model.preset=$preset"
if [ $quick = 1 ]; then
	common="$common --set data.vocab.size=2000 --set model.embed=32 --set model.hidden=32"
fi
pipe=$top/examples/ji2019.json

# run NAME [fedrun --set options]: runs the base pipeline into $out/NAME
# unless that is complete with the same arguments (NAME/.complete holds
# them); its output goes to $out/NAME.log.
run() {
	name=$1
	shift
	args="$(basename "$pipe") --backend $backend $common $*"
	if [ $force = 0 ] && [ -e "$out/$name/.complete" ] &&
		[ "$(cat "$out/$name/.complete")" = "$args" ]; then
		echo "run.sh: $name: complete, kept"
		return 0
	fi
	rm -f "$out/$name/.complete"
	echo "run.sh: $name: $(echo "$*" | sed "s/\[\"[^]]*\]/[the genre files]/")"
	t0=$(date +%s)
	# shellcheck disable=SC2086
	if ! "$FEDRUN" --threads "$threads" --backend "$backend" "$pipe" $common \
		--set output.dir="$out/$name" "$@" >"$out/$name.log" 2>&1; then
		tail -n 5 "$out/$name.log" >&2
		die "$name failed: see $out/$name.log"
	fi
	t1=$(date +%s)
	printf '%s\t%s\n' "$name" $((t1 - t0)) >>"$times"
	echo "run.sh: $name: $((t1 - t0)) s"
	printf '%s\n' "$args" >"$out/$name/.complete"
}

fedavg='aggregator={"plugin":"fedavg"}'
fedavg_step() { # ETA: w + ETA (mean of the updates - w), weights n_k
	printf 'aggregator={"plugin":"fedopt","method":"avgm","momentum":0,"lr":%s}' "$1"
}
fedatt() { # NORM EPS [BETA]
	printf 'aggregator={"plugin":"fedatt","norm":"%s","epsilon":%s,"beta":%s,"sigma":1.0}' "$1" "$2" "${3:-0}"
}

# DP-FedAvg noise multipliers: the gaussian plugin takes a noise multiplier
# z, not a target epsilon, so z is found by bisection on the plugin's own
# accountant: a run of the meanest model (instant) with the same clients,
# sampling rate, rounds and delta reports privacy.epsilon after the last
# round; z is the smallest (to 1e-4 relative) that gives at most the target.
eps_of() { # Z -> the accountant's epsilon after $rounds rounds
	"$FEDRUN" -q --threads 1 "$top/examples/dp-fedavg.json" \
		--set "data.groups=[{\"clients\":$K,\"mean\":0,\"samples\":2}]" \
		--set model.dim=1 --set clients.fraction=$frac --set rounds=$rounds \
		--set eval.every=$rounds --set privacy.noise_multiplier="$1" \
		--set privacy.delta=$dp_delta --set privacy.noise=reproducible \
		--set output.dir="$out/calibrate" --set output.overwrite=true >/dev/null 2>&1 ||
		die "the accountant run failed (z = $1)"
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["metric"]) == "privacy.epsilon" { e = $(c["value"]) } END { print e }' "$out/calibrate/metrics.csv"
}
calibrate() { # TARGET_EPS -> z
	lo=0.05 hi=200
	i=0
	while [ $i -lt 40 ]; do
		mid=$(awk -v a=$lo -v b=$hi 'BEGIN { printf "%.6g", sqrt(a * b) }')
		e=$(eps_of "$mid")
		if awk -v e="$e" -v t="$1" 'BEGIN { exit !(e <= t) }'; then hi=$mid; else lo=$mid; fi
		awk -v a=$lo -v b=$hi 'BEGIN { exit !(b / a < 1.0001) }' && break
		i=$((i + 1))
	done
	echo "$hi"
}

# ---- stages -----------------------------------------------------------------
for seed in $seeds; do
	S="--set seed=$seed"
	# Table II (iid): FedSGD (every client, one local step: one bptt window
	# of clients.batch rows), FedAvg, FedAtt with both norms and three
	# server step sizes.
	if want table2; then
		run t2-fedsgd-s$seed $S --set "$fedavg" --set clients.fraction=1 --set clients.epochs=0 --set clients.steps=1
		run t2-fedavg-s$seed $S --set "$fedavg"
		for n in frobenius spectral; do
			for e in 0.5 1 1.2; do
				run t2-fedatt-$n-e$e-s$seed $S --set "$(fedatt $n $e)"
			done
		done
		# The control for FedAtt's epsilon, a server step size: FedAvg
		# with the server step 0.5 and 1.2 (FedAvgM without momentum).
		for e in 0.5 1.2; do
			run t2-fedavg-lr$e-s$seed $S --set "$(fedavg_step $e)"
		done
	else
		# the attention weights come from these two runs of Table II
		if want alpha; then
			for n in frobenius spectral; do
				run t2-fedatt-$n-e1-s$seed $S --set "$(fedatt $n 1)"
			done
		fi
		if want compare; then
			run t2-fedavg-s$seed $S --set "$fedavg"
			run t2-fedatt-frobenius-e1-s$seed $S --set "$(fedatt frobenius 1)"
		fi
	fi
	# Non-iid: one client per genre (a fraction of them a round), and
	# Dirichlet partitions of the genres over K clients.
	if want noniid || want compare; then
		for m in fedavg fedatt; do
			if [ $m = fedavg ]; then a=$fedavg; else a=$(fedatt frobenius 1); fi
			run ni-files-$m-s$seed $S --set "data.train=[$genre_files]" \
				--set 'data.partition={"scheme":"files"}' --set clients.fraction=$files_frac \
				--set "$a"
			for al in 0.1 1 10; do
				run ni-dir$al-$m-s$seed $S --set "data.train=[$genre_files]" \
					--set "data.partition={\"scheme\":\"dirichlet\",\"clients\":$K,\"alpha\":$al}" \
					--set "$a"
			done
		done
	fi
	# Table IV's direction: the medium and large presets (embed = hidden =
	# 650 and 1500, tied), iid, FedAvg and FedAtt; small is Table II's. With
	# --quick the presets' sizes are replaced by 48 and 64 units.
	if want sizes; then
		se=$every
		[ "$se" -le "$size_rounds" ] || se=$size_rounds
		for p in medium large; do
			Z="--set model.preset=$p --set rounds=$size_rounds --set eval.every=$se"
			if [ $quick = 1 ]; then
				u=48
				[ $p = medium ] || u=64
				Z="$Z --set model.embed=$u --set model.hidden=$u"
			fi
			# shellcheck disable=SC2086
			run t4-fedavg-$p-s$seed $S $Z --set "$fedavg"
			# shellcheck disable=SC2086
			run t4-fedatt-$p-s$seed $S $Z --set "$(fedatt frobenius 1)"
		done
	fi
	# Table III: the randomisation of eq. 6 (beta > 0; beta 0 is Table II's
	# FedAvg and FedAtt frobenius eps 1), and DP-FedAvg.
	if want table3; then
		run t2-fedavg-s$seed $S --set "$fedavg"
		run t2-fedatt-frobenius-e1-s$seed $S --set "$(fedatt frobenius 1)"
		for b in $betas; do
			run t3-fedatt-b$b-s$seed $S --set "$(fedatt frobenius 1 "$b")"
			run t3-fedavg-b$b-s$seed $S --set "$fedavg" \
				--set "privacy={\"plugin\":\"gaussian\",\"mode\":\"fedatt\",\"beta\":$b,\"sigma\":1.0,\"noise\":\"reproducible\"}"
		done
		for e in $dp_eps; do
			cal=$out/dp-calibration.tsv
			z=$(awk -F'\t' -v e="$e" -v r="$rounds" -v k="$K" -v q="$frac" \
				'$1 == e && $2 == r && $3 == k && $4 == q { print $5 }' "$cal" 2>/dev/null | tail -n 1)
			if [ -z "$z" ]; then
				z=$(calibrate "$e")
				[ -e "$cal" ] || printf 'target_epsilon\trounds\tclients\tq\tnoise_multiplier\taccountant_epsilon\n' >"$cal"
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$e" "$rounds" "$K" "$frac" "$z" "$(eps_of "$z")" >>"$cal"
				echo "run.sh: DP-FedAvg target epsilon $e: noise multiplier $z"
			fi
			run t3-dp-eps$e-s$seed $S --set 'aggregator={"plugin":"fedavg","weights":"uniform"}' \
				--set "privacy={\"plugin\":\"gaussian\",\"mode\":\"central\",\"clip\":$dp_clip,\"noise_multiplier\":$z,\"delta\":$dp_delta,\"noise\":\"reproducible\"}"
		done
	fi
done
rm -rf "$out/calibrate"

t_end=$(date +%s)
printf 'total\t%s\n' $((t_end - t_start)) >>"$times"
"$here/results.sh" "$out"
echo "run.sh: $out/results.md ($((t_end - t_start)) s this call)"
