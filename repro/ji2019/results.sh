#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes DEST/results.md, DEST/*.tsv and DEST/fig-*.{png,svg,dat} from the
# run directories that repro/ji2019/run.sh left in OUT (it calls this at
# its end; run it again on its own to remake the tables and figures): the
# runs' metrics.csv, .complete and pipeline.json, OUT/settings, OUT/times.tsv
# and OUT/dp-calibration.tsv.
#
# A directory that keeps no run directory (the committed results/ and
# results-h100/, whose runs were not kept) is read from what it does keep:
# the tables as TSV, times.tsv (which runs completed), dp-calibration.tsv
# and the figures' .dat files (the first seed's curves); only results.md is
# written, and a cell or goal that needs the runs' metrics.csv says "not
# kept".
#
# Usage: repro/ji2019/results.sh OUT [DEST]
#   DEST: where to write (default OUT); check-results.sh writes into a
#   temporary directory and compares. JI2019_FIGURES=0 draws no figures
#   (results.md is the same either way).
# (the settings are read from OUT/settings, which run.sh writes)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PLOT=${FEDRUN_PLOT:-$top/tools/fedrun-plot}
# shellcheck disable=SC2034 # used by common.sh
prog=results.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
case $# in 1 | 2) ;; *) die "usage: results.sh OUT [DEST]" ;; esac
out=$(cd "$1" && pwd)
dest=${2:-$out}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
[ -e "$out/settings" ] || die "$out/settings: missing (run run.sh)"
quick=0 rounds=12 every=4 preset=small backend=cpu seeds=1 K=100 frac=0.1 files_frac=0.2
ngenres=15 betas="0.001 0.005 0.01 0.05" dp_eps="1 4 8" dp_delta=1e-5 dp_clip=1.0 machine=unknown
made='' fedrun_version=''
# shellcheck disable=SC1091
. "$out/settings"
nseeds=$(echo $seeds | wc -w)
first_seed=$(echo $seeds | awk '{ print $1 }')
# the words of the vocabulary: a model no better than a uniform guess over
# them (test perplexity at least this) did not learn, and no goal is judged
# on it
vocab=10000
[ "$quick" != 1 ] || vocab=2000

# The complete runs: the run directories with .complete, or, where OUT
# keeps none (derived=1), the runs times.tsv names (run.sh appends a run's
# line when it completes).
runs_list=''
for f in "$out"/*/.complete; do
	[ -e "$f" ] || continue
	d=${f%/.complete}
	runs_list="$runs_list ${d##*/}"
done
derived=''
if [ -z "$runs_list" ]; then
	derived=1
	[ ! -e "$out/times.tsv" ] ||
		runs_list=$(awk -F'\t' 'NR > 1 && $1 != "total" && !($1 in s) { s[$1] = 1; printf " %s", $1 }' "$out/times.tsv")
fi
# tab: where the TSV tables are read (written into DEST, or kept in OUT)
if [ -n "$derived" ]; then tab=$out; else tab=$dest; fi

done_() { case "$runs_list " in *" $1 "*) return 0 ;; esac; return 1; }

# value RUN METRIC SPLIT: the server's last METRIC on SPLIT ("" for none)
value() {
	awk -F, -v m="$2" -v s="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["client"]) == "" && $(c["split"]) == s && $(c["metric"]) == m && $(c["tensor"]) == "" { v = $(c["value"]) }
	END { if (v != "") print v }' "$out/$1/metrics.csv"
}
# bestvalid RUN: the lowest validation perplexity of the run, and its round
bestvalid() {
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["client"]) == "" && $(c["split"]) == "valid" && $(c["metric"]) == "ppl" && $(c["tensor"]) == "" {
		if (b == "" || $(c["value"]) + 0 < b) { b = $(c["value"]) + 0; r = $(c["round"]) }
	}
	END { if (b != "") print b }' "$out/$1/metrics.csv"
}
# over PREFIX CMD...: CMD run on PREFIX-sSEED for every complete seed, one
# value a line
over() {
	p=$1
	shift
	for s in $seeds; do
		done_ "$p-s$s" || continue
		"$@" "$p-s$s"
	done
}
test_ppl() { value "$1" ppl test; }
# steps_all RUN: every client's local steps (clients.updates), summed over
# the run; steps_depth RUN: the sum over rounds of the round's local steps
# weighted by themselves (sum tau^2 / sum tau): with one epoch a client's
# steps grow with its data n_k, so this is about the steps the n_k-weighted
# average reflects, the sequential depth of a round
steps() { # all|depth RUN
	awk -F, -v what="$1" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["metric"]) == "updates" && $(c["client"]) != "" {
		r = $(c["round"]); v = $(c["value"]); all += v; s[r] += v; q[r] += v * v
	}
	END {
		for (r in s) if (s[r] > 0) d += q[r] / s[r]
		print (what == "all") ? all + 0 : d + 0
	}' "$out/$2/metrics.csv"
}
steps_all() { steps all "$1"; }
steps_depth() { steps depth "$1"; }
final_eps() { value "$1" privacy.epsilon ""; }
# stat: "mean" (one value), "mean ± sd (n)" (several; sample sd), or
# "not run" from one number a line
stat() {
	awk -v fmt="${1:-%.1f}" '{ x[++n] = $1; s += $1 }
	END {
		if (n == 0) { print "not run"; exit }
		m = s / n
		if (n == 1) { printf fmt "\n", m; exit }
		for (i = 1; i <= n; i++) v += (x[i] - m) ^ 2
		f2 = fmt; sub(/\+/, "", f2)
		printf fmt " ± " f2 " (%d)\n", m, sqrt(v / (n - 1)), n
	}'
}
# mean: the mean of one number a line, or "-"
mean() { awk '{ s += $1; n++ } END { if (n) printf "%.6g\n", s / n; else print "-" }'; }
# gain_of A_RUN B_RUN: test ppl of A minus B, or "-" unless both are complete
gain_of() {
	if done_ "$1" && done_ "$2"; then
		awk -v a="$(test_ppl "$1")" -v b="$(test_ppl "$2")" 'BEGIN { print a - b }'
	else
		echo -
	fi
}
# ran NAME: a complete run NAME-sSEED for a seed of the settings (NAME may
# be a glob: 'ni-*' for any run of the stage). A
# stage with no complete run has no section, table row or goal in
# results.md, and the header names it (a directory of the sizes stage alone
# reads as one). A stage is known by the runs only it makes: table2 by
# FedSGD and the server-step controls (table3, alpha and compare make some
# of its FedAtt and FedAvg runs too), alpha by FedAtt spectral at ε = 1
# (table2 makes it as well; a Table II without it, cut short, still has
# the table of FedAtt frobenius at ε = 1), noniid by ni-, table3 by t3-,
# sizes by t4-.
ran() {
	for s in $seeds; do
		for r in $runs_list; do
			# shellcheck disable=SC2254 # $1 is a glob on purpose
			case $r in $1-s$s) return 0 ;; esac
		done
	done
	return 1
}
{ ran t2-fedsgd || ran 't2-fedavg-lr*'; } && has_t2=1 || has_t2=''
{ ran t2-fedatt-spectral-e1 || { [ -n "$has_t2" ] && ran t2-fedatt-frobenius-e1; }; } && has_alpha=1 || has_alpha=''
ran 'ni-*' && has_ni=1 || has_ni=''
ran 't3-*' && has_t3=1 || has_t3=''
# the iid runs of FedAvg and FedAtt (frobenius, ε = 1), whichever stage made them
ran t2-fedavg && has_iid_avg=1 || has_iid_avg=''
ran t2-fedatt-frobenius-e1 && has_iid_att=1 || has_iid_att=''
not_run=$([ -n "$has_t2" ] || echo table2; [ -n "$has_alpha" ] || echo alpha
	[ -n "$has_ni" ] || echo noniid; [ -n "$has_t3" ] || echo table3)
# diff A_PREFIX B_PREFIX: per seed, test ppl of A minus B (seeds with both)
diff_() {
	for s in $seeds; do gain_of "$1-s$s" "$2-s$s"; done | grep -v '^-$' || :
}

fedatt_label() { # NORM EPS
	echo "FedAtt $1, ε $2"
}
t2_specs="t2-fedsgd:FedSGD t2-fedavg:FedAvg"
for n in frobenius spectral; do
	for e in 0.5 1 1.2; do t2_specs="$t2_specs t2-fedatt-$n-e$e:$n/$e"; done
done
t2_specs="$t2_specs t2-fedavg-lr0.5:lr0.5 t2-fedavg-lr1.2:lr1.2"
# the run FedAtt with server step EPS is compared with besides FedAvg
step_control() { case $1 in 1) echo t2-fedavg ;; *) echo "t2-fedavg-lr$1" ;; esac; }
label_of() {
	case $1 in
	lr*) echo "FedAvg, server step ${1#lr}" ;;
	*/*) fedatt_label "${1%/*}" "${1#*/}" ;;
	*) echo "$1" ;;
	esac
}

# ---- the unigram baseline ----------------------------------------------------
# unigram.tsv: repro/unigram.sh's maximum-likelihood unigram of the pooled
# training text over the runs' vocabulary, on the test and validation
# targets gru-lm scores (split, perplexity, targets, <unk> targets,
# vocabulary, training tokens). Computed from OUT/data (run.sh's copy of
# the splits) or, where OUT has none, from JI2019_CORPUS (a
# data/brown/build.sh directory: check-results.sh gives the corpus of the
# committed full-size results when it is built), into DEST; else read
# from OUT/unigram.tsv where it is kept (ug_file: the file, or empty).
ug_src=''
if [ -e "$out/data/train.txt" ] && [ -e "$out/data/test.txt" ] && [ -e "$out/data/valid.txt" ]; then
	ug_src=$out/data
elif [ -n "${JI2019_CORPUS:-}" ]; then
	ug_src=$JI2019_CORPUS
fi
ug_file=''
if [ -n "$ug_src" ]; then
	{
		printf 'split\tppl\ttargets\tunk\tvocab\ttrain_tokens\n'
		for sp in test valid; do
			printf '%s\t%s\n' $sp "$("$top/repro/unigram.sh" --size "$vocab" "$ug_src/$sp.txt" "$ug_src/train.txt")"
		done
	} >"$dest/unigram.tsv.new"
	mv "$dest/unigram.tsv.new" "$dest/unigram.tsv"
	ug_file=$dest/unigram.tsv
elif [ -e "$out/unigram.tsv" ]; then
	ug_file=$out/unigram.tsv
fi
# ug SPLIT COLUMN: a column of unigram.tsv ("" where there is none)
ug() { [ -z "$ug_file" ] || awk -F'\t' -v s="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } $1 == s { print $(h[c]) }' "$ug_file"; }
# ug_cell SPLIT: the unigram's perplexity on SPLIT, or "not kept"
ug_cell() { _u=$(ug "$1" ppl); case $_u in '') echo "not kept" ;; inf) echo inf ;; *) printf '%.1f\n' "$_u" ;; esac; }

# ---- tables as TSV (for the figures and for reading) ------------------------
# keep FILE COND: FILE (written just before) stays only when COND is
# non-empty: a stage that did not run leaves no table
keep() { [ -n "$2" ] || rm -f "$dest/$1"; }
# (none is written where OUT keeps no run: there the tables are read)
[ -n "$derived" ] || {
	printf 'method\ttest ppl\n'
	for sp in $t2_specs; do
		m=$(over "${sp%%:*}" test_ppl | mean)
		printf '%s\t%s\n' "$(label_of "${sp#*:}")" "$m"
	done
} >"$dest/table2.tsv"
[ -n "$derived" ] || keep table2.tsv "$has_t2"
parts="files dir0.1 dir1 dir10"
part_label() {
	case $1 in
	files) echo "one client per genre" ;;
	dir*) echo "Dirichlet α ${1#dir}" ;;
	esac
}
[ -n "$derived" ] || {
	printf 'partition\tFedAvg\tFedAtt\n'
	for p in $parts; do
		printf '%s\t%s\t%s\n' "$(part_label $p)" "$(over ni-$p-fedavg test_ppl | mean)" "$(over ni-$p-fedatt test_ppl | mean)"
	done
} >"$dest/noniid.tsv"
[ -n "$derived" ] || keep noniid.tsv "$has_ni"
# gain.tsv: FedAvg's test perplexity minus FedAtt's (frobenius, eps 1) per
# seed and partition, the spread the goals' verdicts rest on (one row a seed;
# "-" where either run is missing)
[ -n "$derived" ] || {
	printf 'seed\tiid'
	for p in $parts; do printf '\t%s' "$(part_label $p)"; done
	printf '\n'
	for s in $seeds; do
		printf 'seed %s\t%s' "$s" "$(gain_of t2-fedavg-s$s t2-fedatt-frobenius-e1-s$s)"
		for p in $parts; do printf '\t%s' "$(gain_of ni-$p-fedavg-s$s ni-$p-fedatt-s$s)"; done
		printf '\n'
	done
} >"$dest/gain.tsv"
[ -n "$derived" ] || keep gain.tsv "$has_t2$has_ni"
[ -n "$derived" ] || {
	printf 'method'
	printf '\tβ = 0'
	for b in $betas; do printf '\tβ = %s' "$b"; done
	printf '\n'
	printf 'FedAvg (noise on each update)\t%s' "$(over t2-fedavg test_ppl | mean)"
	for b in $betas; do printf '\t%s' "$(over t3-fedavg-b$b test_ppl | mean)"; done
	printf '\n'
	printf 'FedAtt (noise on the aggregate)\t%s' "$(over t2-fedatt-frobenius-e1 test_ppl | mean)"
	for b in $betas; do printf '\t%s' "$(over t3-fedatt-b$b test_ppl | mean)"; done
	printf '\n'
} >"$dest/table3-beta.tsv"
[ -n "$derived" ] || keep table3-beta.tsv "$has_t3"

# The sizes stage (Table IV's direction): its runs are t4-{fedavg,fedatt}-
# PRESET; small is Table II's (its row only when Table II ran). The table is
# written when one of them is complete.
ran 't4-*' && sizes=1 || sizes=''
[ -n "$sizes" ] || not_run="$not_run sizes"
size_presets="medium large"
[ -z "$has_t2" ] || size_presets="small $size_presets"
size_prefix() { # METHOD PRESET -> the run prefix
	if [ "$2" = small ]; then
		if [ "$1" = fedavg ]; then echo t2-fedavg; else echo t2-fedatt-frobenius-e1; fi
	else
		echo "t4-$1-$2"
	fi
}
# has_values TSV: TSV exists and a cell below the header and right of the
# labels is not "-"
has_values() {
	[ -e "$1" ] || return 1
	awk -F'\t' 'NR > 1 { for (i = 2; i <= NF; i++) if ($i != "-") ok = 1 } END { exit !ok }' "$1"
}
# last_round RUN: the last round in its metrics
last_round() {
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["round"]) + 0 > r { r = $(c["round"]) + 0 } END { print r + 0 }' "$out/$1/metrics.csv"
}
if [ -n "$derived" ]; then
	:
elif [ -n "$sizes" ]; then
	{
		printf 'preset	FedAvg	FedAtt
'
		for p in $size_presets; do
			printf '%s	%s	%s
' "$p" "$(over "$(size_prefix fedavg $p)" test_ppl | mean)" \
				"$(over "$(size_prefix fedatt $p)" test_ppl | mean)"
		done
	} >"$dest/table4.tsv"
else
	rm -f "$dest/table4.tsv"
fi

# ---- attention weights --------------------------------------------------------
# Per FedAtt run of Table II (ε = 1, both norms, first seed): for every round
# and tensor, over the m clients of the round, the entropy of α normalised
# by log m (1: uniform weights), m⋅max α and m⋅min α (1: uniform).
# alpha/RUN/TENSOR.csv are metrics.csv-shaped files of these, per round.
alpha_sum() { # RUN -> DEST/alpha/RUN/*.csv and lines "tensor<TAB>H<TAB>max<TAB>min" (means over rounds)
	d=$dest/alpha/$1
	rm -rf "$d"
	mkdir -p "$d"
	awk -F, -v d="$d" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["metric"]) == "fedatt.alpha" {
		r = $(c["round"]); t = $(c["tensor"]); a = $(c["value"]) + 0
		k = r SUBSEP t
		if (!(k in n)) { key[++nk] = k; if (!(t in seen)) { seen[t] = 1; tens[++nt] = t } }
		n[k]++; h[k] -= (a > 0 ? a * log(a) : 0)
		if (!(k in mx) || a > mx[k]) mx[k] = a
		if (!(k in mn) || a < mn[k]) mn[k] = a
	}
	END {
		for (j = 1; j <= nt; j++) {
			f = d "/" tens[j] ".csv"
			print "round,client,split,metric,tensor,value,bytes_push,bytes_pull,wall,model" > f
		}
		for (i = 1; i <= nk; i++) {
			split(key[i], p, SUBSEP); r = p[1]; t = p[2]; m = n[key[i]]
			H = (m > 1) ? h[key[i]] / log(m) : 1
			f = d "/" t ".csv"
			printf "%d,,,alpha.entropy,,%.6f,0,0,0,\n", r, H > f
			printf "%d,,,alpha.max,,%.6f,0,0,0,\n", r, m * mx[key[i]] > f
			printf "%d,,,alpha.min,,%.6f,0,0,0,\n", r, m * mn[key[i]] > f
			sH[t] += H; sX[t] += m * mx[key[i]]; sN[t] += m * mn[key[i]]; cnt[t]++
		}
		for (j = 1; j <= nt; j++) {
			t = tens[j]; close(d "/" t ".csv")
			printf "%s\t%.4f\t%.3f\t%.3f\n", t, sH[t] / cnt[t], sX[t] / cnt[t], sN[t] / cnt[t]
		}
	}' "$out/$1/metrics.csv"
}
[ -n "$derived" ] || {
	printf 'norm\ttensor\tentropy/log m\tm max α\tm min α\n'
	for n in frobenius spectral; do
		r=t2-fedatt-$n-e1-s$first_seed
		done_ $r || continue
		alpha_sum $r | sed "s/^/$n\t/"
	done
} >"$dest/alpha.tsv"
[ -n "$derived" ] || keep alpha.tsv "$has_alpha"
[ -n "$derived" ] || [ -n "$has_alpha" ] || rm -rf "$dest/alpha"

# steps_alpha RUN -> "hits<TAB>pairs<TAB>chance": over every round and
# tensor of a FedAtt run, how often the largest α went to a client with the
# most local steps of the round (clients.updates), and the rate a uniformly
# random pick would have (the mean share of the round's clients that tie
# for the most steps), and the depth of the embedding under α: the sum over
# rounds of Σ αₖ τₖ (steps_depth's counterpart for FedAtt's weights)
steps_alpha() {
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["metric"]) == "updates" && $(c["client"]) != "" { u[$(c["round"]), $(c["client"])] = $(c["value"]) + 0 }
	$(c["metric"]) == "fedatt.alpha" {
		r = $(c["round"]); t = $(c["tensor"]); k = $(c["client"]); a = $(c["value"]) + 0
		if (!((r, t) in best) || a > best[r, t]) { best[r, t] = a; who[r, t] = k }
		if (!((r, k) in inr)) { inr[r, k] = 1; cl[r] = cl[r] " " k }
		if (t == "embedding.weight") ea[r, k] = a
	}
	END {
		for (rk in ea) dep += ea[rk] * u[rk]
		for (rt in who) {
			split(rt, p, SUBSEP); r = p[1]
			n = split(cl[r], ks, " "); mx = -1; tie = 0
			for (i = 1; i <= n; i++) { v = u[r, ks[i]]; if (v > mx) { mx = v; tie = 1 } else if (v == mx) tie++ }
			pairs++; ch += tie / n
			if (u[r, who[rt]] == mx) hits++
		}
		if (pairs) printf "%d\t%d\t%.3f\t%.1f\n", hits, pairs, ch / pairs, dep
	}' "$out/$1/metrics.csv"
}
[ -n "$derived" ] || {
	printf 'partition\truns\thits\tpairs\tchance\tdepth_alpha\tdepth_fedavg\n'
	for p in iid $parts; do
		if [ $p = iid ]; then pre=t2-fedatt-frobenius-e1 avg=t2-fedavg; else pre=ni-$p-fedatt avg=ni-$p-fedavg; fi
		over $pre steps_alpha | awk -F'\t' -v p="$p" -v da="$(over $avg steps_depth | mean)" \
			'{ h += $1; n += $2; c += $3 * $2; d += $4; k++ }
			END { if (n) printf "%s\t%d\t%d\t%d\t%.3f\t%.0f\t%s\n", p, k, h, n, c / n, d / k, da }'
	done
} >"$dest/alpha-steps.tsv"
[ -n "$derived" ] || keep alpha-steps.tsv "$has_iid_att$has_ni"

# ---- figures (gnuplot through tools/fedrun-plot) --------------------------------
# figs: the figures the runs give, which results.md lists whether or not
# they are drawn here; draw: whether they are (not with JI2019_FIGURES=0,
# without fedrun-plot or gnuplot, or where OUT keeps no run: there the
# committed figures are listed)
figs=''
draw=''
if [ -z "$derived" ] && [ "${JI2019_FIGURES:-1}" != 0 ] && [ -x "$PLOT" ] &&
	command -v gnuplot >/dev/null 2>&1; then
	draw=1
fi
has_fig() { case "$figs " in *" $1 "*) return 0 ;; esac; return 1; }
fig_order="fig-gain-seeds fig-table2-ppl fig-noniid-ppl fig-sizes-ppl fig-table3-beta fig-dp-epsilon fig-dp-ppl
	fig-alpha-entropy-frobenius fig-alpha-max-frobenius fig-alpha-min-frobenius
	fig-alpha-entropy-spectral fig-alpha-max-spectral fig-alpha-min-spectral"
# curve NAME OPTIONS... LABEL=RUN...: fedrun-plot curve over the complete
# runs, into DEST/NAME
curve() {
	name=$1
	shift
	n=0
	for a in "$@"; do # (the list is expanded once: rebuilt without missing runs)
		shift
		case $a in *=$out/*)
			done_ "${a##*/}" || continue
			n=$((n + 1))
			;;
		esac
		set -- "$@" "$a"
	done
	[ $n -gt 0 ] || return 0
	figs="$figs $name"
	[ -z "$draw" ] || "$PLOT" curve -o "$dest/$name" "$@"
}
# bars NAME TSV OPTIONS...: fedrun-plot bars of TSV (in DEST) when it has values
bars() {
	name=$1 t=$2
	shift 2
	has_values "$dest/$t" || return 0
	figs="$figs $name"
	[ -z "$draw" ] || "$PLOT" bars "$@" -o "$dest/$name" "$dest/$t"
}
if [ -n "$derived" ]; then
	for f in $fig_order; do [ ! -e "$out/$f.svg" ] || figs="$figs $f"; done
else
	# every figure is drawn again below from the runs there are, so none is
	# left from a stage whose runs are gone
	[ -z "$draw" ] || rm -f "$dest"/fig-*.svg "$dest"/fig-*.png "$dest"/fig-*.dat
	S=s$first_seed
	set --
	for sp in $t2_specs; do set -- "$@" "$(label_of "${sp#*:}")=$out/${sp%%:*}-$S"; done
	curve fig-table2-ppl --metric ppl --split valid --logy --ylabel "validation perplexity" \
		--title "Table II setting (iid, $K clients, C = $frac), seed $first_seed" "$@"
	set --
	for p in $parts; do
		set -- "$@" "FedAvg, $(part_label $p)=$out/ni-$p-fedavg-$S" "FedAtt, $(part_label $p)=$out/ni-$p-fedatt-$S"
	done
	curve fig-noniid-ppl --metric ppl --split valid --logy --ylabel "validation perplexity" \
		--title "Non-iid partitions of the genres, seed $first_seed" "$@"
	bars fig-gain-seeds gain.tsv --title "FedAvg's minus FedAtt's test perplexity per seed (above 0: FedAtt lower)" \
		--ylabel "perplexity difference"
	bars fig-table3-beta table3-beta.tsv --title "Table III: test perplexity vs noise magnitude β (mean over seeds)" \
		--ylabel "test perplexity"
	if [ -n "$sizes" ]; then
		set --
		for p in $size_presets; do
			set -- "$@" "FedAvg, $p=$out/$(size_prefix fedavg $p)-$S" "FedAtt, $p=$out/$(size_prefix fedatt $p)-$S"
		done
		curve fig-sizes-ppl --metric ppl --split valid --logy --ylabel "validation perplexity" \
			--title "Model size (iid, $K clients, C = $frac), seed $first_seed" "$@"
	fi
	set --
	for e in $dp_eps; do set -- "$@" "DP-FedAvg, target ε $e=$out/t3-dp-eps$e-$S"; done
	curve fig-dp-epsilon --metric privacy.epsilon --split none --ylabel "accountant's ε (δ = $dp_delta)" \
		--title "DP-FedAvg: privacy spent per round, seed $first_seed" "$@"
	curve fig-dp-ppl --metric ppl --split valid --logy --ylabel "validation perplexity" \
		--title "DP-FedAvg against FedAvg, seed $first_seed" \
		"FedAvg (no noise)=$out/t2-fedavg-$S" "$@"
	for n in frobenius spectral; do
		r=t2-fedatt-$n-e1-$S
		[ -d "$dest/alpha/$r" ] || continue
		for what in entropy max min; do
			figs="$figs fig-alpha-$what-$n"
			[ -n "$draw" ] || continue
			set --
			for f in "$dest/alpha/$r"/*.csv; do set -- "$@" "$(basename "$f" .csv)=$f"; done
			case $what in
			entropy) yl="entropy of α / log m (1: uniform)" ;;
			max) yl="m × max α (1: uniform)" ;;
			min) yl="m × min α (1: uniform)" ;;
			esac
			"$PLOT" curve --metric alpha.$what --split none --ylabel "$yl" \
				--title "FedAtt ($n, ε = 1) attention per tensor, seed $first_seed" \
				-o "$dest/fig-alpha-$what-$n" "$@"
		done
	done
fi

# ---- cells of results.md ---------------------------------------------------------
# Each from the runs' metrics.csv; where OUT keeps no run, from the tables
# OUT keeps (means over seeds), times.tsv (which runs completed) and the
# figures' data (the first seed's curves), and "not kept" where those do
# not give it. (Function variables start with _: the callers' loops use
# the plain names.)

# seeds_of PREFIX: the seeds of the settings with PREFIX-sSEED complete, a line each
seeds_of() { for _s in $seeds; do if done_ "$1-s$_s"; then echo "$_s"; fi; done; }
nseeds_of() { seeds_of "$1" | awk 'END { print NR }'; }
# ncommon A B: the number of seeds with both A-sSEED and B-sSEED complete
ncommon() { for _s in $seeds; do if done_ "$1-s$_s" && done_ "$2-s$_s"; then echo "$_s"; fi; done | awk 'END { print NR }'; }
# tsv_cell TABLE ROW COLUMN: the cell of OUT's TABLE ("" where there is none)
tsv_cell() {
	[ -e "$tab/$1" ] || return 0
	awk -F'\t' -v r="$2" -v h="$3" 'NR == 1 { for (i = 2; i <= NF; i++) if ($i == h) c = i; next }
	c && $1 == r { print $c; exit }' "$tab/$1"
}
meth_col() { case $1 in fedavg) echo FedAvg ;; fedatt) echo FedAtt ;; esac; }
# tsv_mean PREFIX: the mean test perplexity of PREFIX's runs that the
# tables give ("" where none does, "-" where it says none ran)
tsv_mean() {
	case $1 in
	t2-*) for _sp in $t2_specs; do
		[ "${_sp%%:*}" != "$1" ] || tsv_cell table2.tsv "$(label_of "${_sp#*:}")" "test ppl"
	done ;;
	ni-*) _q=${1#ni-}; tsv_cell noniid.tsv "$(part_label "${_q%-*}")" "$(meth_col "${_q##*-}")" ;;
	t3-fedavg-b*) tsv_cell table3-beta.tsv "FedAvg (noise on each update)" "β = ${1#t3-fedavg-b}" ;;
	t3-fedatt-b*) tsv_cell table3-beta.tsv "FedAtt (noise on the aggregate)" "β = ${1#t3-fedatt-b}" ;;
	t4-*) _q=${1#t4-}; tsv_cell table4.tsv "${_q#*-}" "$(meth_col "${_q%%-*}")" ;;
	esac
}
# dat_col FIGURE LABEL: the values of curve LABEL in OUT/FIGURE.dat, a line each
dat_col() {
	[ -e "$out/$1.dat" ] || return 0
	awk -F'\t' -v h="$2" 'NR == 1 { for (i = 2; i <= NF; i++) if ($i == h) c = i; next }
	c && $c != "-" { print $c }' "$out/$1.dat"
}
# dcell N MEAN [FMT]: a cell of a mean over N seeds: "not run" (N = 0 or
# the table's "-"), "not kept" (no table gives it), the mean (one seed), or
# "mean (mean of N)" (the spread over seeds needs the runs)
dcell() {
	if [ "$1" -eq 0 ] || [ "$2" = - ]; then
		echo "not run"
	elif [ -z "$2" ]; then
		echo "not kept"
	elif [ "$1" -eq 1 ]; then
		echo "$2" | stat "${3:-%.1f}"
	else
		echo "$(echo "$2" | stat "${3:-%.1f}") (mean of $1)"
	fi
}
# first_only PREFIX: true when PREFIX ran for the first seed alone (whose
# curves the figures' data hold)
first_only() { [ "$(seeds_of "$1" | tr '\n' ' ')" = "$first_seed " ]; }
# cell_ppl PREFIX: the test perplexity
cell_ppl() {
	if [ -z "$derived" ]; then over "$1" test_ppl | stat; else dcell "$(nseeds_of "$1")" "$(tsv_mean "$1")"; fi
}
# cell_best PREFIX: the best validation perplexity (Table II)
cell_best() {
	if [ -z "$derived" ]; then
		over "$1" bestvalid | stat
	elif [ "$(nseeds_of "$1")" -eq 0 ]; then
		echo "not run"
	elif first_only "$1"; then
		for _sp in $t2_specs; do
			[ "${_sp%%:*}" != "$1" ] || dat_col fig-table2-ppl "$(label_of "${_sp#*:}")"
		done | awk '{ v = $1 + 0; if (b == "" || v < b) b = v } END { if (b != "") print b; else print "not kept" }' | stat_or_word
	else
		echo "not kept"
	fi
}
# stat_or_word [FMT]: stat of a number, or the word as it is
stat_or_word() { read -r _v; case $_v in "not "*) echo "$_v" ;; *) echo "$_v" | stat "$@" ;; esac; }
# cell_final_eps E: the DP-FedAvg run's final ε
cell_final_eps() {
	if [ -z "$derived" ]; then
		over "t3-dp-eps$1" final_eps | stat %.3f
	elif [ "$(nseeds_of "t3-dp-eps$1")" -eq 0 ]; then
		echo "not run"
	elif first_only "t3-dp-eps$1"; then
		dat_col fig-dp-epsilon "DP-FedAvg, target ε $1" | awk '{ v = $1 } END { print (NR ? v : "not kept") }' | stat_or_word %.3f
	else
		echo "not kept"
	fi
}
# cell_rounds PRESET: the last round of the first seed's FedAvg run of the preset
cell_rounds() {
	_a=$(size_prefix fedavg "$1")
	if ! done_ "$_a-s$first_seed"; then
		echo "not run"
	elif [ -z "$derived" ]; then
		last_round "$_a-s$first_seed"
	elif [ "$1" = small ]; then
		echo "$rounds"
	elif [ -e "$out/fig-sizes-ppl.dat" ]; then
		# the last round of its curve (the first seed's)
		awk -F'\t' -v h="FedAvg, $1" 'NR == 1 { for (i = 2; i <= NF; i++) if ($i == h) c = i; next }
		c && $c != "-" { r = $1 } END { print (r != "" ? r : "not kept") }' "$out/fig-sizes-ppl.dat"
	else
		echo "not kept"
	fi
}
# cell_steps PREFIX / cell_depth PREFIX: a FedAvg run's local steps and
# their depth (the non-iid table); where OUT keeps no run, the depth is
# alpha-steps.tsv's (the mean over the seeds, of the partitions FedAtt ran)
cell_steps() {
	if [ -z "$derived" ]; then over "$1" steps_all | stat %.0f
	elif [ "$(nseeds_of "$1")" -eq 0 ]; then echo "not run"
	else echo "not kept"; fi
}
cell_depth() {
	if [ -z "$derived" ]; then over "$1" steps_depth | stat %.0f; return; fi
	case $1 in t2-fedavg) _p=iid ;; *) _p=${1#ni-}; _p=${_p%-fedavg} ;; esac
	_d=''
	[ ! -e "$tab/alpha-steps.tsv" ] ||
		_d=$(awk -F'\t' -v p="$_p" 'NR > 1 && $1 == p && $7 != "-" { print $7 }' "$tab/alpha-steps.tsv")
	dcell "$(nseeds_of "$1")" "$_d" %.0f
}
# gain_col A B: the column of gain.tsv that holds A's test perplexity minus
# B's per seed (FedAvg's minus FedAtt's, frobenius ε = 1), or nothing
gain_col() {
	case "$1:$2" in
	t2-fedavg:t2-fedatt-frobenius-e1) echo iid ;;
	ni-*-fedavg:ni-*-fedatt) _q=${1#ni-}; [ "ni-${_q%-fedavg}-fedatt" != "$2" ] || part_label "${_q%-fedavg}" ;;
	esac
}
# gains COLUMN: its per-seed values in OUT/gain.tsv, a line each
gains() {
	awk -F'\t' -v h="$1" 'NR == 1 { for (i = 2; i <= NF; i++) if ($i == h) c = i; next }
	c && $c != "-" { print $c }' "$tab/gain.tsv"
}
# cell_gain A B: A's test perplexity minus B's, per seed
cell_gain() {
	if [ -z "$derived" ]; then diff_ "$1" "$2" | stat %+.1f; return; fi
	_g=$(gain_col "$1" "$2")
	_sa=$(seeds_of "$1") _sb=$(seeds_of "$2")
	if [ -n "$_g" ] && [ -e "$tab/gain.tsv" ]; then
		gains "$_g" | stat %+.1f
	elif [ "$(ncommon "$1" "$2")" -eq 0 ]; then
		echo "not run"
	elif [ "$_sa" = "$_sb" ] && [ "$(nseeds_of "$1")" -eq 1 ]; then
		# one seed, the same: the difference of the tables' values
		awk -v a="$(tsv_mean "$1")" -v b="$(tsv_mean "$2")" \
			'BEGIN { if (a == "" || b == "" || a == "-" || b == "-") print "not kept"; else print a - b }' | stat_or_word %+.1f
	else
		echo "not kept"
	fi
}

# ---- goals, from the numbers ------------------------------------------------------
# lower A_PREFIX B_PREFIX: "diffs<TAB>D...", the differences A − B of the
# test perplexities, one a seed with both runs (space-separated); "not measured"
# (no seed has both); "not judged<TAB>WHY" when a run did not learn (its
# test perplexity not a finite number below the vocabulary size: the
# difference means nothing); "not kept<TAB>WHY" where OUT keeps neither the
# runs nor the per-seed numbers.
lower() {
	if [ -z "$derived" ]; then
		for s in $seeds; do
			if done_ "$1-s$s" && done_ "$2-s$s"; then
				printf '%s\t%s\t%s\t%s\n' "$1-s$s" "$(test_ppl "$1-s$s")" "$2-s$s" "$(test_ppl "$2-s$s")"
			fi
		done | judge
		return
	fi
	# OUT keeps no run: the tables' means (a mean below the vocabulary size
	# may hide a seed that is not, which the runs would show)
	_c=$(ncommon "$1" "$2")
	[ "$_c" -gt 0 ] || { echo "not measured"; return; }
	_ma=$(tsv_mean "$1") _mb=$(tsv_mean "$2")
	for _x in "$1:$_ma" "$2:$_mb"; do
		case ${_x#*:} in '' | -) printf 'not kept\tno table here gives the test perplexity of %s\n' "${_x%%:*}"; return ;; esac
	done
	_j=$(printf '%s (mean)\t%s\t%s (mean)\t%s\n' "$1" "$_ma" "$2" "$_mb" | judge)
	case $_j in "not judged	"*) echo "$_j"; return ;; esac
	_g=$(gain_col "$2" "$1")
	if [ -n "$_g" ] && [ -e "$tab/gain.tsv" ]; then
		# gain.tsv: B minus A
		gains "$_g" | awk '{ l = l sprintf("%s%.17g", n++ ? " " : "", -$1) }
		END { if (!n) print "not measured"; else printf "diffs\t%s\n", l }'
	elif [ "$(seeds_of "$1")" = "$(seeds_of "$2")" ] && [ "$_c" -eq 1 ]; then
		echo "$_j"
	else
		printf 'not kept\tthe per-seed test perplexities of %s and %s are not kept here\n' "$1" "$2"
	fi
}
# judge: from lines "A_RUN<TAB>A_PPL<TAB>B_RUN<TAB>B_PPL", what lower says
judge() {
	awk -F'\t' -v V="$vocab" '
	function bad(r, v) {
		if (v == "") return r " has no test perplexity"
		if (v !~ /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/)
			return "the test perplexity of " r " is " v ": the run did not converge"
		if (v + 0 >= V)
			return sprintf("the test perplexity of %s, %.1f, is no better than a uniform guess over the %d words: the run did not converge", r, v, V)
		return ""
	}
	why == "" {
		why = bad($1, $2)
		if (why == "") why = bad($3, $4)
		if (why != "") next
		l = l sprintf("%s%.6g", n++ ? " " : "", $2 - $4)
	}
	END {
		if (why != "") printf "not judged\t%s\n", why
		else if (!n) print "not measured"
		else printf "diffs\t%s\n", l
	}'
}
# verdict: what lower says -> a phrase. The paper's claim, FedAtt's test
# perplexity lower than the baseline's, judged on the 95% t interval of the
# paired differences over seeds (repro/common.sh t_interval): reproduced
# when it lies below 0, contradicted when above, inconclusive when it holds
# 0; with one seed there is no interval ("inconclusive (one seed)").
verdict() {
	case $1 in
	"not measured") echo "**not measured**" ;;
	"not judged	"* | "not kept	"*) echo "**${1%%	*}** (${1#*	})" ;;
	diffs"	"*)
		# shellcheck disable=SC2086 # one difference a word
		printf '%s\n' ${1#diffs	} | t_interval | awk -v l="${1#diffs	}" '{
			k = 0; n = split(l, d, " "); for (i = 1; i <= n; i++) if (d[i] + 0 < 0) k++
			if ($2 == "-") { printf "**inconclusive (one seed)** (test perplexity difference %+.1f)\n", $1; exit }
			w = ($3 < 0) ? "reproduced" : ($2 > 0) ? "contradicted" : "inconclusive"
			printf "**%s** (test perplexity difference %+.1f, 95%% t interval over %d seeds [%+.1f, %+.1f]; lower in %d/%d seeds)\n", w, $1, $4, $2, $3, k, n
		}'
		;;
	esac
}

{
	echo "# Ji et al. 2019 (FedAtt) on the Brown corpus: results"
	echo
	if [ "$quick" = 1 ]; then
		echo "**This is a --quick run: 100 training sentences a genre, 200 validation and test"
		echo "sentences, a 2000-word vocabulary, 32 units, $K clients, $rounds rounds. It checks that"
		echo "every stage works; its numbers mean nothing.**"
		echo
	fi
	# the date and version run.sh recorded in the settings (today's and the
	# build tree's for a directory of an older run.sh)
	[ -n "$made" ] || made=$(date -u +%Y-%m-%d)
	[ -n "$fedrun_version" ] ||
		fedrun_version=$("${FEDRUN:-$top/fedrun}" --version 2>/dev/null | head -n 1 | awk '{ print $2 }')
	echo "Made by \`repro/ji2019/run.sh\` ($made, fedrun $fedrun_version)"
	# the backends the complete runs recorded (pipeline.json's model.backend)
	used=$(for f in "$out"/*/.complete; do
		[ -e "$f" ] && sed -n 's/^ *"backend": *"\([^"]*\)".*/\1/p' "$(dirname "$f")/pipeline.json" | head -n 1
	done | sort -u | tr '\n' ' ' | sed 's/ $//; s/ /, /g')
	[ -z "$derived" ] || used="not kept"
	echo "with backend **$backend** on $machine (the runs' pipeline.json: ${used:-none})."
	echo "gru-lm preset $preset (tied), vocabulary $vocab, $rounds rounds, validation every $every rounds,"
	echo "SGD lr 5, momentum 0.5, gradient clipping 0.5, batch 20, bptt 35, 1 local epoch."
	echo "Seeds: $seeds. Cells are the test perplexity of the model after the last round"
	if [ "$nseeds" -gt 1 ]; then
		echo "(mean ± sample standard deviation over the seeds that ran, their number in parentheses)."
	else
		echo "(one seed)."
	fi
	echo "The paper tests the round with the best validation perplexity; the best validation"
	echo "perplexity is given too."
	[ -z "$not_run" ] || echo "Stages not run (no section here): $(echo $not_run | sed 's/ /, /g')."
	if [ -n "$derived" ]; then
		echo "This directory keeps no run directory: the tables are recomputed from the TSV tables"
		echo "it keeps ($(for f in table2.tsv noniid.tsv gain.tsv table3-beta.tsv table4.tsv \
			alpha.tsv alpha-steps.tsv dp-calibration.tsv unigram.tsv; do [ ! -e "$out/$f" ] || printf "\`%s\` " "$f"; done |
			sed 's/ $//; s/ /, /g')),"
		echo "\`times.tsv\` (the runs that completed) and the figures' \`.dat\` files (seed $first_seed's"
		echo "curves). A cell or goal that needs the runs' metrics.csv reads \"not kept\", and"
		echo "\"m (mean of n)\" is a mean over n seeds whose spread is not kept."
	fi
} >"$dest/.results.md.head"
{
	# the unigram baseline, and whether its targets are the runs' (every
	# complete run's test tokens, where the runs are here)
	if [ -n "$ug_file" ]; then
		_t=$(ug test targets)
		if [ -n "$derived" ]; then
			_same="(the runs' test tokens are not kept to compare)"
		else
			_tok=$(for r in $runs_list; do value "$r" tokens test; done | sort -u | tr '\n' ' ' | sed 's/ $//')
			if [ "$_tok" = "$_t" ]; then
				_same="(every run's test tokens)"
			else
				_same="(**not comparable**: the runs' test tokens are ${_tok:-none})"
			fi
		fi
		echo "The row **unigram baseline** of each perplexity table is no federated model: the"
		echo "maximum-likelihood unigram of the pooled training text ($(ug test train_tokens) tokens, a sentence's"
		echo "\`<eos>\` included) over the runs' vocabulary of $(ug test vocab) words, the training tokens"
		echo "outside it counting for \`<unk>\`, scored on the targets gru-lm scores"
		echo "(\`repro/unigram.sh\`, \`unigram.tsv\`): test perplexity $(ug_cell test) on $_t targets"
		echo "$_same, $(ug test unk) of them \`<unk>\`; validation perplexity $(ug_cell valid)."
		echo "A model above it has learnt less than the words' frequencies."
	else
		echo "The row **unigram baseline** of each perplexity table (the maximum-likelihood unigram"
		echo "of the training text, \`repro/unigram.sh\`) reads \"not kept\": this directory keeps no"
		echo "\`unigram.tsv\` and no copy of the corpus was given (JI2019_CORPUS)."
	fi
} >"$dest/.results.md.ug"
{
	if [ -n "$has_t2" ]; then
	echo "## Table II: iid"
	echo
	echo "$K clients (iid shards of the training sentences), fraction C = $frac a round, except"
	echo "FedSGD: every client, one local step (one bptt window of 20 rows; \`clients.steps\` 1)."
	echo "FedAvg with server step η: the server moves η times the way to the weighted mean of"
	echo "the clients' models (fedopt avgm, momentum 0), the control for FedAtt's ε, which"
	echo "scales the server's step the same way (eqs. 3 and 4)."
	echo
	echo "| method | test ppl | best valid ppl |"
	echo "|---|---:|---:|"
	for sp in $t2_specs; do
		printf '| %s | %s | %s |\n' "$(label_of "${sp#*:}")" "$(cell_ppl "${sp%%:*}")" "$(cell_best "${sp%%:*}")"
	done
	printf '| unigram baseline | %s | %s |\n' "$(ug_cell test)" "$(ug_cell valid)"
	echo
	fi
	if [ -n "$has_ni" ]; then
	echo "## Non-iid"
	echo
	echo "The genres of the Brown corpus as categories: one client per genre ($ngenres clients,"
	echo "fraction $files_frac a round), and Dirichlet partitions of each genre's sentences over $K"
	echo "clients (fraction $frac). FedAtt: frobenius, ε = 1. Gain: FedAvg's test perplexity"
	echo "minus FedAtt's, per seed (positive: FedAtt lower). Steps: FedAvg's runs (FedAtt's"
	echo "draw the same clients), all clients' local steps over the run, and their depth: the"
	echo "sum over rounds of the step-weighted mean of the round's local steps (Σ τ²/Σ τ; with"
	echo "one epoch τₖ grows with nₖ, so this is about the number of sequential steps the"
	if [ -n "$has_iid_avg" ]; then
		echo "nₖ-weighted average reflects). The iid setting (Table II's FedAvg):"
		if [ -z "$derived" ]; then
			echo "$(cell_steps t2-fedavg) steps, depth $(cell_depth t2-fedavg)."
		else
			echo "steps not kept, depth $(cell_depth t2-fedavg)."
		fi
	else
		echo "nₖ-weighted average reflects)."
	fi
	echo
	echo "| partition | FedAvg | FedAtt | gain | steps | depth |"
	echo "|---|---:|---:|---:|---:|---:|"
	for p in $parts; do
		printf '| %s | %s | %s | %s | %s | %s |\n' "$(part_label $p)" "$(cell_ppl ni-$p-fedavg)" \
			"$(cell_ppl ni-$p-fedatt)" "$(cell_gain ni-$p-fedavg ni-$p-fedatt)" \
			"$(cell_steps ni-$p-fedavg)" "$(cell_depth ni-$p-fedavg)"
	done
	printf '| unigram baseline | %s | %s | - | - | - |\n' "$(ug_cell test)" "$(ug_cell test)"
	echo
	fi
	if [ -n "$sizes" ]; then
		echo "## Model size (Table IV)"
		echo
		echo "iid, $K clients, C = $frac; FedAtt: frobenius, ε = 1. The presets of fedrun-models(7):"
		echo "embed = hidden = 300, 650, 1500, tied (the paper's tied rows). small is Table II's runs$([ -n "$has_t2" ] || echo ' (not run here)');"
		echo "the larger presets may run fewer rounds (\`--size-rounds\`): the rounds column is the"
		echo "last round of the first seed's FedAvg run. Gain: FedAvg's test perplexity minus"
		echo "FedAtt's, per seed (positive: FedAtt lower)."
		echo
		echo "| preset | rounds | FedAvg | FedAtt | gain |"
		echo "|---|---:|---:|---:|---:|"
		for p in $size_presets; do
			a=$(size_prefix fedavg $p) b=$(size_prefix fedatt $p)
			printf '| %s | %s | %s | %s | %s |\n' "$p" "$(cell_rounds $p)" "$(cell_ppl $a)" \
				"$(cell_ppl $b)" "$(cell_gain $a $b)"
		done
		printf '| unigram baseline | - | %s | %s | - |\n' "$(ug_cell test)" "$(ug_cell test)"
		echo
	fi
	if [ -n "$has_t3" ]; then
	echo "## Table III: randomisation β⋅N(0, σ²), σ = 1"
	echo
	echo "FedAtt (frobenius, ε = 1): fedatt's beta, noise added once to the aggregated"
	echo "tensors (as the authors' code implements eq. 6). FedAvg: the gaussian privacy"
	echo "plugin in mode fedatt, noise added to each client's update before averaging (FedAvg"
	echo "has no server noise in fedrun), so on the average of m = $(awk -v k=$K -v f=$frac 'BEGIN { m = int(k * f); print (m < 1 ? 1 : m) }') updates its standard"
	echo "deviation is about β/√m, smaller than FedAtt's β. Neither is differential privacy."
	echo
	echo "| β | FedAvg | FedAtt |"
	echo "|---|---:|---:|"
	# β = 0 is Table II's FedAvg and FedAtt (the table3 stage makes them)
	printf '| 0 | %s | %s |\n' "$(cell_ppl t2-fedavg)" "$(cell_ppl t2-fedatt-frobenius-e1)"
	for b in $betas; do
		printf '| %s | %s | %s |\n' "$b" "$(cell_ppl t3-fedavg-b$b)" "$(cell_ppl t3-fedatt-b$b)"
	done
	printf '| unigram baseline | %s | %s |\n' "$(ug_cell test)" "$(ug_cell test)"
	echo
	echo "## Table III: DP-FedAvg"
	echo
	echo "The gaussian privacy plugin, mode central (McMahan et al. 2018): updates clipped to"
	echo "L2 norm $dp_clip, the unweighted mean (fedavg, weights uniform), Gaussian noise of"
	echo "standard deviation zC/m on it; δ = $dp_delta. The plugin takes the noise multiplier z,"
	echo "so run.sh found, by bisection on the plugin's own accountant (runs of the meanest"
	echo "model with the same $K clients, q = $frac and $rounds rounds), the smallest z whose ε"
	echo "after the last round is at most the target (\`dp-calibration.tsv\`). Final ε is what the"
	echo "training run's accountant reported after its last round. Client-level (ε, δ) under"
	echo "Poisson sampling: see fedrun-privacy(7) for the sampling gap. The noise source is"
	echo "\"reproducible\" (for experiments; it protects nothing)."
	echo
	echo "| target ε | noise multiplier | final ε | test ppl |"
	echo "|---|---:|---:|---:|"
	for e in $dp_eps; do
		z=$(awk -F'\t' -v e="$e" -v r="$rounds" '$1 == e && $2 == r { z = $5 } END { print z }' "$out/dp-calibration.tsv" 2>/dev/null || true)
		printf '| %s | %s | %s | %s |\n' "$e" "${z:-not run}" "$(cell_final_eps $e)" "$(cell_ppl t3-dp-eps$e)"
	done
	printf '| unigram baseline | - | - | %s |\n' "$(ug_cell test)"
	echo
	fi
	if [ -n "$has_alpha" ]; then
	echo "## Attention weights"
	echo
	echo "fedatt.alpha of the Table II runs with ε = 1 (seed $first_seed), per tensor, averaged over"
	echo "the rounds: the entropy of α over the round's m clients divided by log m (1 when"
	echo "all clients get 1/m), and m times the largest and the smallest α (1 when uniform)."
	echo
	echo "| norm | tensor | entropy/log m | m max α | m min α |"
	echo "|---|---|---:|---:|---:|"
	tail -n +2 "$tab/alpha.tsv" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }'
	echo
	fi
	if [ -n "$has_iid_att$has_ni" ]; then
	echo "## Attention and local steps"
	echo
	echo "FedAtt (frobenius, ε = 1): over every round and tensor of the runs (all seeds), how"
	echo "often the largest α went to a client with the most local steps of its round"
	echo "(\`updates\` in the metrics: a client's steps grow with its data), against how often a"
	echo "uniformly random choice would (the share of the round's clients tied for the most)."
	echo "The softmax of eq. 2 runs over the distances ‖w − wₖ‖ themselves, so the client that"
	echo "moved farthest gets the most weight; a client with more data takes more steps and"
	echo "may move farther. iid shards differ by at most a sentence, but their token counts, and"
	echo "so their steps, still differ a little; chance is lower where fewer clients tie."
	echo "Depth (as in the non-iid table): the sum over rounds of the clients' local steps"
	echo "weighted by FedAtt's α of the embedding (Σ αₖ τₖ), and by FedAvg's nₖ in the FedAvg run"
	echo "of the same partition (Σ τ²/Σ τ); means over seeds."
	echo
	echo "| partition | largest α to most steps | rate | chance | depth under α | depth under nₖ |"
	echo "|---|---:|---:|---:|---:|---:|"
	for p in $([ -z "$has_iid_att" ] || echo iid) $([ -z "$has_ni" ] || echo $parts); do
		l=''
		[ ! -e "$tab/alpha-steps.tsv" ] || l=$(awk -F'\t' -v p="$p" '$1 == p' "$tab/alpha-steps.tsv")
		if [ $p = iid ]; then lab="iid" pre=t2-fedatt-frobenius-e1; else lab=$(part_label $p) pre=ni-$p-fedatt; fi
		if [ -z "$l" ] && [ -n "$derived" ] && [ "$(nseeds_of "$pre")" -gt 0 ]; then
			echo "| $lab | not kept | not kept | not kept | not kept | not kept |"
		elif [ -n "$l" ]; then
			echo "$l" | awk -F'\t' -v lab="$lab" '{ printf "| %s | %d of %d | %.3f | %.3f | %s | %s |\n", lab, $3, $4, $3 / $4, $5, $6, ($7 == "-" ? "not run" : sprintf("%.0f", $7)) }'
		else
			echo "| $lab | not run | not run | not run | not run | not run |"
		fi
	done
	echo
	fi
	echo "## Goals"
	echo
	echo "The paper's claim: FedAtt lowers the test perplexity. Measured differences (FedAtt −"
	echo "baseline; negative is lower) of the runs of the same seed, their mean over the seeds,"
	echo "and the 95% Student t interval of that mean (mean ± t(0.975, n − 1)·s/√n over the n"
	echo "seeds' differences): **reproduced** when the interval lies below 0, **contradicted**"
	echo "when above, **inconclusive** when it holds 0; one seed gives no interval"
	echo "(**inconclusive (one seed)**, its difference shown). A goal whose run did not learn"
	echo "(test perplexity not a number, or no better than a uniform guess over the vocabulary)"
	echo "is **not judged**."
	echo
	# the settings where FedAtt (frobenius or spectral, ε = 1) is lower than
	# FedAvg, of the stages that ran
	pairs='' what=''
	if [ -n "$has_t2" ]; then
		pairs="t2-fedatt-frobenius-e1:t2-fedavg t2-fedatt-spectral-e1:t2-fedavg"
		what="iid with both norms"
	fi
	if [ -n "$has_ni" ]; then
		pairs="$pairs ni-files-fedatt:ni-files-fedavg ni-dir0.1-fedatt:ni-dir0.1-fedavg"
		pairs="$pairs ni-dir1-fedatt:ni-dir1-fedavg ni-dir10-fedatt:ni-dir10-fedavg"
		what="$what${what:+, }the four non-iid partitions"
	fi
	if [ -n "$has_t3" ]; then
		pairs="$pairs $(for b in $betas; do printf 't3-fedatt-b%s:t3-fedavg-b%s ' $b $b; done)"
		what="$what${what:+, }the noise levels β > 0"
	fi
	if [ -n "$pairs" ]; then
		sum=$(
			for ab in $pairs; do
				verdict "$(lower ${ab%%:*} ${ab#*:})" | sed 's/^\*\*\([^*]*\)\*\*.*/\1/'
			done | awk '{ c[$0]++ }
			END { printf "**reproduced** in %d, **contradicted** in %d, **inconclusive** in %d (one seed: %d), not measured in %d",
				c["reproduced"], c["contradicted"], c["inconclusive"] + c["inconclusive (one seed)"],
				c["inconclusive (one seed)"], c["not measured"]
				if (c["not judged"]) printf ", not judged in %d", c["not judged"]
				if (c["not kept"]) printf ", not kept in %d", c["not kept"] }'
		)
		echo "Summary over the $(echo $pairs | wc -w) comparisons of FedAtt at ε = 1 with FedAvg in the same"
		echo "setting ($what):"
		echo "$sum."
		echo
	fi
	[ -z "$has_t2" ] || for n in frobenius spectral; do
		for e in 0.5 1 1.2; do
			echo "- iid, FedAtt $n ε = $e against FedAvg: $(verdict "$(lower t2-fedatt-$n-e$e t2-fedavg)");"
			[ "$e" = 1 ] || echo "  against FedAvg with server step $e: $(verdict "$(lower t2-fedatt-$n-e$e "$(step_control $e)")");"
			echo "  against FedSGD: $(verdict "$(lower t2-fedatt-$n-e$e t2-fedsgd)")."
		done
	done
	[ -z "$has_ni" ] || for p in $parts; do
		echo "- $(part_label $p), FedAtt against FedAvg: $(verdict "$(lower ni-$p-fedatt ni-$p-fedavg)")."
	done
	[ -z "$has_t3" ] || for b in $betas; do
		echo "- noise β = $b, FedAtt against FedAvg: $(verdict "$(lower t3-fedatt-b$b t3-fedavg-b$b)")."
	done
	if [ -n "$sizes" ]; then
		for p in medium large; do
			echo "- preset $p, FedAtt against FedAvg: $(verdict "$(lower t4-fedatt-$p t4-fedavg-$p)")."
		done
	fi
	echo
	if [ -n "$figs" ]; then
		echo "## Figures"
		echo
		the=The
		! has_fig fig-gain-seeds || { printf 'fig-gain-seeds: every seed (`gain.tsv`); '; the=the; }
		! has_fig fig-table3-beta || { printf 'fig-table3-beta: the mean over seeds; '; the=the; }
		echo "$the"
		echo "curves: seed $first_seed's runs. PNG files of the same names are next to the SVGs;"
		echo "\`.dat\` files hold the numbers plotted."
		echo
		for f in $fig_order; do
			! has_fig "$f" || echo "![$f]($f.svg)"
		done
		echo
	fi
	times_section "$out/times.tsv"
} >"$dest/.results.md.body"
# the header, a line on the runs missing from the stages that ran when there
# are any, the sections
{
	cat "$dest/.results.md.head"
	if grep -q '| not run |\|\*\*not measured\*\*' "$dest/.results.md.body"; then
		echo "Runs missing from the stages that ran read \"not run\" (their goals \"not measured\")."
	fi
	echo
	cat "$dest/.results.md.ug"
	echo
	cat "$dest/.results.md.body"
} >"$dest/results.md"
rm -f "$dest/.results.md.head" "$dest/.results.md.ug" "$dest/.results.md.body"
echo "results.sh: wrote $dest/results.md"
