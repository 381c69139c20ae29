#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Does bf16 training (model.precision "bf16", fedrun-models(7) PRECISION)
# reach the quality of FP32? Issue 37's two quality checks, each in FP32
# and in bf16 with seeds 1 and 2:
#  - brown: the Brown gru-lm of examples/brown-fedavg.json for 5 rounds
#    (the small preset, 100 clients, 10 a round): test perplexity;
#  - passban: repro/passban2022/run.sh --quick (the tiny transformer on
#    1000 pairs a domain): the federated model's mean test NLL, chrF and
#    BLEU over the five domains (its Table 4 "server" row) and the generic
#    model's on its own test set. (BLEU is 0 at this size: the quick
#    models are too small to get a 4-gram right; NLL and chrF still
#    compare the precisions.)
# Writes OUT/raw.tsv (experiment, precision, seed, metric, value: the
# numbers results.sh tabulates), OUT/machine.txt (the CPU and the bf16
# kernels), OUT/times.tsv, and OUT/results.md through results.sh. A run
# whose directory holds a .complete file is kept (an interrupted run.sh
# continues).
#
# Usage: repro/bf16/run.sh [--out DIR] [--threads N] [--only brown|passban]
#   --out DIR      runs and tables (default runs/bf16)
#   --threads N    threads a run (default 2)
#   --only WHAT    one of the two experiments
# Needs data/brown/out (data/brown/build.sh data/brown/out) and, for
# passban, the gettext corpus (built by repro/passban2022/run.sh when
# missing).
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=run.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
out=runs/bf16 threads=2 only=''
parse_args "
	--out=out --threads=threads --only=only" "$@"
need_positive --threads "$threads"
case $only in '' | brown | passban) ;; *) die "--only $only: brown or passban" ;; esac
find_fedrun
open_out
[ -e "$out/raw.tsv" ] || printf 'experiment\tprecision\tseed\tmetric\tvalue\n' >"$out/raw.tsv"
{
	printf 'cpu\t%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	printf 'cores\t%s\n' "$(nproc)"
	printf 'bf16_flags\t%s\n' "$(grep -o 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ' | sed 's/ $//')"
} >"$out/machine.txt"
force=0
claims=$out/.claims
rm -rf "$claims"
mkdir -p "$claims"
# raw EXPERIMENT PRECISION SEED METRIC VALUE: one line of raw.tsv (an
# earlier line of the same key is replaced)
raw() {
	awk -F'\t' -v k="$1	$2	$3	$4" 'BEGIN { OFS = "\t" }
		($1 "\t" $2 "\t" $3 "\t" $4) != k' "$out/raw.tsv" >"$out/raw.tsv.new"
	printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$out/raw.tsv.new"
	mv "$out/raw.tsv.new" "$out/raw.tsv"
}
# test METRIC RUN: the last test value of METRIC for the server model
final_test() {
	awk -v m="\"metric\":\"$1\"" 'index($0, "\"client\":null") && index($0, "\"split\":\"test\"") &&
		index($0, m) { v = $0; sub(/.*"value":/, "", v); sub(/[,}].*/, "", v); last = v }
		END { if (last == "") exit 1; print last }' "$2/metrics.jsonl"
}
for p in fp32 bf16; do
	for s in 1 2; do
		if [ "$only" != passban ]; then
			common="--set seed=$s --set model.precision=\"$p\" --set output.overwrite=true"
			common="$common --set rounds=5"
			[ -e "$top/data/brown/out/train.txt" ] ||
				die "no Brown corpus: data/brown/build.sh $top/data/brown/out"
			stage brown-$p-s$s "$top/examples/brown-fedavg.json"
			grep -q 'precision '"$p" "$out/brown-$p-s$s/log.txt" ||
				die "brown-$p-s$s: its log does not say precision $p"
			for mt in ppl loss; do
				v=$(final_test $mt "$out/brown-$p-s$s") ||
					die "brown-$p-s$s: no test $mt in metrics.jsonl"
				raw brown $p $s test_$mt "$v"
			done
		fi
		if [ "$only" != brown ]; then
			d=$out/passban-$p-s$s
			echo "run.sh: passban-$p-s$s: repro/passban2022/run.sh --quick"
			t0=$(date +%s)
			"$top/repro/passban2022/run.sh" --quick --out "$d" --threads "$threads" \
				--set seed=$s --set "model.precision=\"$p\"" >"$d.log" 2>&1 ||
				{ tail -n 5 "$d.log" >&2; die "passban-$p-s$s failed: see $d.log"; }
			printf 'passban-%s-s%s\t%s\n' $p $s $(($(date +%s) - t0)) >>"$times"
			grep -q "precision $p" "$d/federated/log.txt" ||
				die "passban-$p-s$s: its log does not say precision $p"
			# the federated model (Table 4's server row): the mean over
			# the five domains of its eval_matrix.tsv; the generic model:
			# its own test set
			for mt in nll chrf bleu; do
				v=$(awk -F'\t' -v b="# $mt on test" '/^# / { blk = ($0 == b); next }
					blk && $1 == "model" { for (i = 2; i <= NF; i++) if ($i == "mean") c = i; next }
					blk && $1 == "server" && c { print $c; found = 1; exit }
					END { if (!found) exit 1 }' "$d/federated/eval_matrix.tsv") ||
					die "passban-$p-s$s: no server $mt mean in federated/eval_matrix.tsv"
				raw passban $p $s "federated_$mt" "$v"
				# the generic model's test sets are its seven domains
				# (clients): their mean at the last round
				v=$(awk -v m="\"metric\":\"$mt\"" 'index($0, "\"split\":\"test\"") &&
					index($0, m) && !index($0, "\"client\":null") {
					r = $0; sub(/.*"round":/, "", r); sub(/,.*/, "", r)
					v = $0; sub(/.*"value":/, "", v); sub(/[,}].*/, "", v)
					if (r + 0 > last) { last = r + 0; s = 0; n = 0 }
					if (r + 0 == last) { s += v; n++ } }
					END { if (!n) exit 1; printf "%.6f\n", s / n }' "$d/generic/metrics.jsonl") ||
					die "passban-$p-s$s: no test $mt in generic/metrics.jsonl"
				raw passban $p $s "generic_$mt" "$v"
			done
		fi
	done
done
"$here/results.sh" "$out"
echo "run.sh: $out/results.md"
