#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes OUT/results.md, OUT/*.tsv and OUT/fig-*.{png,svg} from the run
# directories that repro/ji2019/run.sh left in OUT (it calls this at its
# end; run it again on its own to remake the tables and figures).
#
# Usage: repro/ji2019/results.sh OUT
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
[ $# -eq 1 ] || die "usage: results.sh OUT"
out=$(cd "$1" && pwd)
[ -e "$out/settings" ] || die "$out/settings: missing (run run.sh)"
quick=0 rounds=12 every=4 preset=small backend=cpu seeds=1 K=100 frac=0.1 files_frac=0.2
ngenres=15 betas="0.001 0.005 0.01 0.05" dp_eps="1 4 8" dp_delta=1e-5 dp_clip=1.0 machine=unknown
. "$out/settings"
nseeds=$(echo $seeds | wc -w)
first_seed=$(echo $seeds | awk '{ print $1 }')

done_() { [ -e "$out/$1/.complete" ]; }

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
# (table2 makes it as well), noniid by ni-, table3 by t3-, sizes by t4-.
ran() {
	for s in $seeds; do
		# shellcheck disable=SC2231 # $1 is a glob on purpose
		for f in "$out"/$1-s"$s"/.complete; do [ -e "$f" ] && return 0; done
	done
	return 1
}
{ ran t2-fedsgd || ran 't2-fedavg-lr*'; } && has_t2=1 || has_t2=''
ran t2-fedatt-spectral-e1 && has_alpha=1 || has_alpha=''
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

# ---- tables as TSV (for the figures and for reading) ------------------------
# keep FILE COND: FILE (written just before) stays only when COND is
# non-empty: a stage that did not run leaves no table
keep() { [ -n "$2" ] || rm -f "$out/$1"; }
{
	printf 'method\ttest ppl\n'
	for sp in $t2_specs; do
		m=$(over "${sp%%:*}" test_ppl | mean)
		printf '%s\t%s\n' "$(label_of "${sp#*:}")" "$m"
	done
} >"$out/table2.tsv"
keep table2.tsv "$has_t2"
parts="files dir0.1 dir1 dir10"
part_label() {
	case $1 in
	files) echo "one client per genre" ;;
	dir*) echo "Dirichlet α ${1#dir}" ;;
	esac
}
{
	printf 'partition\tFedAvg\tFedAtt\n'
	for p in $parts; do
		printf '%s\t%s\t%s\n' "$(part_label $p)" "$(over ni-$p-fedavg test_ppl | mean)" "$(over ni-$p-fedatt test_ppl | mean)"
	done
} >"$out/noniid.tsv"
keep noniid.tsv "$has_ni"
# gain.tsv: FedAvg's test perplexity minus FedAtt's (frobenius, eps 1) per
# seed and partition, the spread the goals' verdicts rest on (one row a seed;
# "-" where either run is missing)
{
	printf 'seed\tiid'
	for p in $parts; do printf '\t%s' "$(part_label $p)"; done
	printf '\n'
	for s in $seeds; do
		printf 'seed %s\t%s' "$s" "$(gain_of t2-fedavg-s$s t2-fedatt-frobenius-e1-s$s)"
		for p in $parts; do printf '\t%s' "$(gain_of ni-$p-fedavg-s$s ni-$p-fedatt-s$s)"; done
		printf '\n'
	done
} >"$out/gain.tsv"
keep gain.tsv "$has_t2$has_ni"
{
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
} >"$out/table3-beta.tsv"
keep table3-beta.tsv "$has_t3"

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
if [ -n "$sizes" ]; then
	{
		printf 'preset	FedAvg	FedAtt
'
		for p in $size_presets; do
			printf '%s	%s	%s
' "$p" "$(over "$(size_prefix fedavg $p)" test_ppl | mean)" \
				"$(over "$(size_prefix fedatt $p)" test_ppl | mean)"
		done
	} >"$out/table4.tsv"
else
	rm -f "$out/table4.tsv"
fi

# ---- attention weights --------------------------------------------------------
# Per FedAtt run of Table II (ε = 1, both norms, first seed): for every round
# and tensor, over the m clients of the round, the entropy of α normalised
# by log m (1: uniform weights), m⋅max α and m⋅min α (1: uniform).
# alpha/RUN/TENSOR.csv are metrics.csv-shaped files of these, per round.
alpha_sum() { # RUN -> OUT/alpha/RUN/*.csv and lines "tensor<TAB>H<TAB>max<TAB>min" (means over rounds)
	d=$out/alpha/$1
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
{
	printf 'norm\ttensor\tentropy/log m\tm max α\tm min α\n'
	for n in frobenius spectral; do
		r=t2-fedatt-$n-e1-s$first_seed
		done_ $r || continue
		alpha_sum $r | sed "s/^/$n\t/"
	done
} >"$out/alpha.tsv"
keep alpha.tsv "$has_alpha"
[ -n "$has_alpha" ] || rm -rf "$out/alpha"

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
{
	printf 'partition\truns\thits\tpairs\tchance\tdepth_alpha\tdepth_fedavg\n'
	for p in iid $parts; do
		if [ $p = iid ]; then pre=t2-fedatt-frobenius-e1 avg=t2-fedavg; else pre=ni-$p-fedatt avg=ni-$p-fedavg; fi
		over $pre steps_alpha | awk -F'\t' -v p="$p" -v da="$(over $avg steps_depth | mean)" \
			'{ h += $1; n += $2; c += $3 * $2; d += $4; k++ }
			END { if (n) printf "%s\t%d\t%d\t%d\t%.3f\t%.0f\t%s\n", p, k, h, n, c / n, d / k, da }'
	done
} >"$out/alpha-steps.tsv"
keep alpha-steps.tsv "$has_iid_att$has_ni"

# ---- figures (gnuplot through tools/fedrun-plot) --------------------------------
figs=""
# curve OPTIONS... LABEL=RUN...: fedrun-plot curve over the complete runs
curve() {
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
	"$PLOT" curve "$@"
}
if [ -x "$PLOT" ] && command -v gnuplot >/dev/null 2>&1; then
	# every figure is drawn again below from the runs there are, so none is
	# left from a stage whose runs are gone
	rm -f "$out"/fig-*.svg "$out"/fig-*.png "$out"/fig-*.dat
	S=s$first_seed
	set --
	for sp in $t2_specs; do set -- "$@" "$(label_of "${sp#*:}")=$out/${sp%%:*}-$S"; done
	curve --metric ppl --split valid --logy --ylabel "validation perplexity" \
		--title "Table II setting (iid, $K clients, C = $frac), seed $first_seed" -o "$out/fig-table2-ppl" "$@"
	set --
	for p in $parts; do
		set -- "$@" "FedAvg, $(part_label $p)=$out/ni-$p-fedavg-$S" "FedAtt, $(part_label $p)=$out/ni-$p-fedatt-$S"
	done
	curve --metric ppl --split valid --logy --ylabel "validation perplexity" \
		--title "Non-iid partitions of the genres, seed $first_seed" -o "$out/fig-noniid-ppl" "$@"
	if has_values "$out/gain.tsv"; then
		"$PLOT" bars --title "FedAvg's minus FedAtt's test perplexity per seed (above 0: FedAtt lower)" \
			--ylabel "perplexity difference" -o "$out/fig-gain-seeds" "$out/gain.tsv"
	fi
	if has_values "$out/table3-beta.tsv"; then
		"$PLOT" bars --title "Table III: test perplexity vs noise magnitude β (mean over seeds)" \
			--ylabel "test perplexity" -o "$out/fig-table3-beta" "$out/table3-beta.tsv"
	fi
	if [ -n "$sizes" ]; then
		set --
		for p in $size_presets; do
			set -- "$@" "FedAvg, $p=$out/$(size_prefix fedavg $p)-$S" "FedAtt, $p=$out/$(size_prefix fedatt $p)-$S"
		done
		curve --metric ppl --split valid --logy --ylabel "validation perplexity" \
			--title "Model size (iid, $K clients, C = $frac), seed $first_seed" -o "$out/fig-sizes-ppl" "$@"
	fi
	set --
	for e in $dp_eps; do set -- "$@" "DP-FedAvg, target ε $e=$out/t3-dp-eps$e-$S"; done
	curve --metric privacy.epsilon --split none --ylabel "accountant's ε (δ = $dp_delta)" \
		--title "DP-FedAvg: privacy spent per round, seed $first_seed" -o "$out/fig-dp-epsilon" "$@"
	curve --metric ppl --split valid --logy --ylabel "validation perplexity" \
		--title "DP-FedAvg against FedAvg, seed $first_seed" -o "$out/fig-dp-ppl" \
		"FedAvg (no noise)=$out/t2-fedavg-$S" "$@"
	for n in frobenius spectral; do
		r=t2-fedatt-$n-e1-$S
		[ -d "$out/alpha/$r" ] || continue
		for what in entropy max min; do
			set --
			for f in "$out/alpha/$r"/*.csv; do set -- "$@" "$(basename "$f" .csv)=$f"; done
			case $what in
			entropy) yl="entropy of α / log m (1: uniform)" ;;
			max) yl="m × max α (1: uniform)" ;;
			min) yl="m × min α (1: uniform)" ;;
			esac
			"$PLOT" curve --metric alpha.$what --split none --ylabel "$yl" \
				--title "FedAtt ($n, ε = 1) attention per tensor, seed $first_seed" \
				-o "$out/fig-alpha-$what-$n" "$@"
		done
	done
	figs=1
fi

# ---- goals, from the numbers ------------------------------------------------------
# lower A_PREFIX B_PREFIX: "mean difference (A − B) over seeds, seeds where
# A is lower / seeds" or "not measured"
lower() {
	diff_ "$1" "$2" | awk '{ s += $1; n++; if ($1 < 0) k++ }
	END { if (!n) print "not measured"; else printf "%+.1f\t%d/%d\n", s / n, k, n }'
}
verdict() { # "mean<TAB>k/n" -> a phrase
	case $1 in
	"not measured") echo "**not measured**" ;;
	*)
		d=${1%%	*} kn=${1#*	}
		k=${kn%/*} n=${kn#*/}
		if [ "$k" -eq "$n" ] && awk -v d="$d" 'BEGIN { exit !(d < 0) }'; then
			w=lower
		elif [ "$k" -eq 0 ]; then
			w="not lower"
		else
			w=mixed
		fi
		echo "**$w** (test perplexity difference $d; lower in $kn seeds)"
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
	echo "Made by \`repro/ji2019/run.sh\` ($(date -u +%Y-%m-%d), fedrun $("${FEDRUN:-$top/fedrun}" --version 2>/dev/null | head -n 1 | awk '{ print $2 }'))"
	# the backends the complete runs recorded (pipeline.json's model.backend)
	used=$(for f in "$out"/*/.complete; do
		[ -e "$f" ] && sed -n 's/^ *"backend": *"\([^"]*\)".*/\1/p' "$(dirname "$f")/pipeline.json" | head -n 1
	done | sort -u | tr '\n' ' ' | sed 's/ $//; s/ /, /g')
	echo "with backend **$backend** on $machine (the runs' pipeline.json: ${used:-none})."
	echo "gru-lm preset $preset (tied), vocabulary $([ "$quick" = 1 ] && echo 2000 || echo 10000), $rounds rounds, validation every $every rounds,"
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
	echo
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
		printf '| %s | %s | %s |\n' "$(label_of "${sp#*:}")" "$(over "${sp%%:*}" test_ppl | stat)" "$(over "${sp%%:*}" bestvalid | stat)"
	done
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
		echo "$(over t2-fedavg steps_all | stat %.0f) steps, depth $(over t2-fedavg steps_depth | stat %.0f)."
	else
		echo "nₖ-weighted average reflects)."
	fi
	echo
	echo "| partition | FedAvg | FedAtt | gain | steps | depth |"
	echo "|---|---:|---:|---:|---:|---:|"
	for p in $parts; do
		printf '| %s | %s | %s | %s | %s | %s |\n' "$(part_label $p)" "$(over ni-$p-fedavg test_ppl | stat)" \
			"$(over ni-$p-fedatt test_ppl | stat)" "$(diff_ ni-$p-fedavg ni-$p-fedatt | stat %+.1f)" \
			"$(over ni-$p-fedavg steps_all | stat %.0f)" "$(over ni-$p-fedavg steps_depth | stat %.0f)"
	done
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
			r="not run"
			done_ "$a-s$first_seed" && r=$(last_round "$a-s$first_seed")
			printf '| %s | %s | %s | %s | %s |\n' "$p" "$r" "$(over $a test_ppl | stat)" \
				"$(over $b test_ppl | stat)" "$(diff_ $a $b | stat %+.1f)"
		done
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
	printf '| 0 | %s | %s |\n' "$(over t2-fedavg test_ppl | stat)" "$(over t2-fedatt-frobenius-e1 test_ppl | stat)"
	for b in $betas; do
		printf '| %s | %s | %s |\n' "$b" "$(over t3-fedavg-b$b test_ppl | stat)" "$(over t3-fedatt-b$b test_ppl | stat)"
	done
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
		printf '| %s | %s | %s | %s |\n' "$e" "${z:-not run}" "$(over t3-dp-eps$e final_eps | stat %.3f)" "$(over t3-dp-eps$e test_ppl | stat)"
	done
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
	tail -n +2 "$out/alpha.tsv" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }'
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
		l=$(awk -F'\t' -v p="$p" '$1 == p' "$out/alpha-steps.tsv")
		if [ $p = iid ]; then lab="iid"; else lab=$(part_label $p); fi
		if [ -n "$l" ]; then
			echo "$l" | awk -F'\t' -v lab="$lab" '{ printf "| %s | %d of %d | %.3f | %.3f | %s | %s |\n", lab, $3, $4, $3 / $4, $5, $6, ($7 == "-" ? "not run" : sprintf("%.0f", $7)) }'
		else
			echo "| $lab | not run | not run | not run | not run | not run |"
		fi
	done
	echo
	fi
	echo "## Goals"
	echo
	echo "Does FedAtt lower the test perplexity? Measured differences (FedAtt − baseline;"
	echo "negative is lower), the mean over seeds; **lower** when FedAtt is lower in every"
	echo "seed, **not lower** when in none, **mixed** otherwise."
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
			END { printf "**lower** in %d, **mixed** in %d, **not lower** in %d, not measured in %d",
				c["lower"], c["mixed"], c["not lower"], c["not measured"] }'
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
		[ ! -e "$out/fig-gain-seeds.svg" ] || { printf 'fig-gain-seeds: every seed (`gain.tsv`); '; the=the; }
		[ ! -e "$out/fig-table3-beta.svg" ] || { printf 'fig-table3-beta: the mean over seeds; '; the=the; }
		echo "$the"
		echo "curves: seed $first_seed's runs. PNG files of the same names are next to the SVGs;"
		echo "\`.dat\` files hold the numbers plotted."
		echo
		for f in fig-gain-seeds fig-table2-ppl fig-noniid-ppl fig-sizes-ppl fig-table3-beta fig-dp-epsilon fig-dp-ppl \
			fig-alpha-entropy-frobenius fig-alpha-max-frobenius fig-alpha-min-frobenius \
			fig-alpha-entropy-spectral fig-alpha-max-spectral fig-alpha-min-spectral; do
			[ -e "$out/$f.svg" ] && echo "![$f]($f.svg)"
		done
		echo
	fi
	times_section "$out/times.tsv"
} >"$out/results.md"
echo "results.sh: wrote $out/results.md"
