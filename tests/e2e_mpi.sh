#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs over several processes (mpirun, the "mpi" transport): every example
# pipeline that trains, shrunk to a few rounds and steps, gives under
# mpirun -np 2 the bytes of the one-process run: final model, fine-tuned
# models, the model-by-domain table, and the metrics apart from wall time
# and throughput; the examples of $quick (one or more of each kind of
# plugin and model) also under -np 3 (and -np 1 and 4 for the small
# problems). FEDRUN_MPI_SWEEP: "all" (the default), "quick" (only the
# examples of $quick), or a list of example names (.ci/run's sanitizer
# build runs a few). Skipped
# (77) without mpirun or without the transport plugin (configure
# --with-mpi).
. "$top_srcdir/tests/lib.sh"
mpi_env
mpi() {
	np=$1
	shift
	mpirun $mpi_x -np "$np" "$FEDRUN" -q "$@"
}

# same DIR1 DIR2 WHAT: the run directories hold the same results.
same() {
	for f in final.safetensors eval_matrix.tsv; do
		[ -e "$1/$f" ] || continue
		cmp -s "$1/$f" "$2/$f" || die "$3: $f differs from the one-process run"
	done
	for f in "$1"/finetuned/*.safetensors; do
		[ -e "$f" ] || continue
		cmp -s "$f" "$2/finetuned/$(basename "$f")" ||
			die "$3: finetuned/$(basename "$f") differs"
	done
	# Wall time and throughput (tokens per second) are clock readings.
	grep -v 'per_s"' "$1/metrics.jsonl" | sed 's/"wall":[^,}]*//' >"$work/m1"
	grep -v 'per_s"' "$2/metrics.jsonl" | sed 's/"wall":[^,}]*//' >"$work/m2"
	cmp -s "$work/m1" "$work/m2" || {
		diff "$work/m1" "$work/m2" | head -n 5
		die "$3: metrics.jsonl differs from the one-process run"
	}
	[ -s "$1/final.safetensors" ] || [ -s "$1/metrics.jsonl" ] || die "$3: no output"
}

# The shipped stand-in corpora even where the real ones are built: what
# is tested is the distribution, and the real corpora take many minutes.
standins_always=1
# 24 sentences for translation (train, valid and test alike): what is
# compared is the bytes, and decoding the model-by-domain tables of the
# passban2022 examples was most of the test's time (80 sentences: 476 s
# alone on 2 cores, over 1,000 s in a make -j2 check).
standin_pairs=$work/standin.txt
head -n 24 "$top_srcdir/examples/data/toy-english/valid.txt" >"$standin_pairs"
i=0
ran=0
quick="toy-fedavg dp-greater dp-less random-selector dp-fedavg laplace byzantine-meritfed
	fedatt brown-fedavg transformer-copy passban2022-federated passban2022-dp-less"
for f in "$top_srcdir"/examples/*.json; do
	ex=$(basename "$f" .json)
	inquick=0
	case " $(echo $quick) " in *" $ex "*) inquick=1 ;; esac
	case ${FEDRUN_MPI_SWEEP:-all} in
	all) ;;
	quick) [ $inquick = 1 ] || continue ;;
	*) case " $FEDRUN_MPI_SWEEP " in *" $ex "*) ;; *) continue ;; esac ;;
	esac
	example_target "$f" $i
	i=$((i + 1))
	model=$(sed -n 's/.*"plugin": *"\([a-z_-]*\)".*/\1/p' "$f" | head -n 1)
	# A few rounds of a few steps: the distribution is what is tested.
	shrink="--set rounds=3 --set output.checkpoint_every=0"
	nps="1 2 3 4"
	# Secure noise differs from run to run by design: the counter-based
	# stream makes it comparable.
	grep -q '"privacy"' "$f" && shrink="$shrink --set privacy.noise=reproducible"
	case $model in
	transformer)
		grep -q '"rounds": *0' "$f" && shrink="--set output.checkpoint_every=0"
		shrink="$shrink --set model.preset=tiny --set clients.steps=2 --set clients.epochs=0"
		# Fine-tuning by steps is cut to 2 (by epochs: one epoch of the
		# stand-ins is short).
		grep -A2 '"finetune"' "$f" | grep -q '"steps"' && shrink="$shrink --set finetune.steps=2"
		nps="2 3"
		;;
	gru-lm)
		shrink="$shrink --set clients.steps=2 --set clients.epochs=0"
		nps="2 3"
		;;
	encoder)
		shrink="$shrink --set clients.steps=2 --set clients.epochs=0"
		nps="2 3"
		;;
	esac
	# The others once, over 2 processes: the transport's code is the
	# same, what each adds is its pipeline's sections.
	[ $inquick = 1 ] || nps=2
	t0=$(date +%s)
	run_ok $extra $shrink "$target" --set output.dir="$work/$ex-1p" -t 2
	for np in $nps; do
		mpi "$np" $extra $shrink "$target" --set output.dir="$work/$ex-$np" -t 1 \
			>"$work/out" 2>&1 || { cat "$work/out"; die "$ex: mpirun -np $np failed"; }
		same "$work/$ex-1p" "$work/$ex-$np" "$ex, -np $np"
	done
	echo "$ex: the same under mpirun -np $(echo $nps | tr ' ' ',') ($(($(date +%s) - t0)) s)"
	ran=$((ran + 1))
done
[ $ran -gt 0 ] || die "no examples ran"
echo "$ran example pipelines give the same bytes over several processes"
