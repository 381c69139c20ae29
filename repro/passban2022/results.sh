#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Writes results.md, table*.tsv and fig-*.{png,svg,dat} of
# repro/passban2022 from the run directories that run.sh left in OUT (it
# calls this at its end; run it again on its own to remake the tables and
# figures), or from a collected results directory such as
# repro/passban2022/results: its metrics/RUN.csv.gz (a run's metrics.csv)
# and matrices/RUN.tsv (its eval_matrix.tsv). Either way it reads only the
# runs' metrics and eval matrices (and .complete, and log.txt where there
# is one), OUT/settings, OUT/times.tsv and OUT/overlap.tsv, and, for the
# row "copy the source" and the goals' paired bootstrap, the test sets
# (OUT/data/DOMAIN/test.{en,de}; collected: test/DOMAIN.{en,de}.gz) and
# the translations run.sh kept (RUN/hyps/MODEL/DOMAIN.txt.gz; collected:
# hyps/RUN/MODEL/DOMAIN.txt.gz), scored with fedrun bleu. Where those were
# not kept (runs made before run.sh kept them) the row and the intervals
# say "not kept".
#
# Usage: repro/passban2022/results.sh OUT [DEST]
#   DEST: where to write (default OUT); check-results.sh writes into a
#   temporary directory and compares. PASSBAN2022_FIGURES=0 draws no
#   figures (results.md is the same either way); a collected directory
#   gets none either (fedrun-plot reads run directories).
# (T, --quick, --optim, the date, the fedrun version and the cores are
# read from OUT/settings, which run.sh writes.)
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PLOT=${FEDRUN_PLOT:-$top/tools/fedrun-plot}
# shellcheck disable=SC2034 # used by common.sh
prog=results.sh
# shellcheck source=../common.sh
. "$top/repro/common.sh"
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: results.sh OUT [DEST]"
out=$(cd "$1" && pwd)
dest=${2:-$out}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
quick=0 steps=200 optim=1 matched=0 seeds=1 date='' fedrun_version='' cores=''
# shellcheck disable=SC1091
[ -e "$out/settings" ] && . "$out/settings"
# A collected results directory: no run directories, the runs' files
# under metrics/ and matrices/ by run name; a run is there (complete) when
# its metrics are.
collected=0
[ -d "$out/metrics" ] && [ ! -d "$out/generic" ] && collected=1
domains="cli git packaging gnome office"
# A stage that is not complete (an interrupted run.sh) shows as "not run"
# rows and its figures' lines are left out; the generic model is needed.
done_() {
	if [ $collected = 1 ]; then [ -e "$out/metrics/$1.csv.gz" ]; else [ -e "$out/$1/.complete" ]; fi
}
# metrics_of RUN: the run's metrics.csv on stdout
metrics_of() {
	if [ $collected = 1 ]; then gzip -dc "$out/metrics/$1.csv.gz"; else cat "$out/$1/metrics.csv"; fi
}
# matrix_of RUN: the run's eval_matrix.tsv (a file name)
matrix_of() {
	if [ $collected = 1 ]; then echo "$out/matrices/$1.tsv"; else echo "$out/$1/eval_matrix.tsv"; fi
}
done_ generic || die "$out/generic: not complete (run run.sh)"
work=$(mktemp -d "${TMPDIR:-/tmp}/passban2022-results.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The test sets and the kept translations. DOMAIN may be "pooled": the five
# domains' files concatenated in the order of $domains (nothing unless all
# five are there).
# unpack FILE.gz: FILE.gz unpacked into $work (once), its path
unpack() {
	local w
	w=$work/$(echo "${1#"$out"/}" | tr / _)
	w=${w%.gz}
	[ -e "$w" ] || gzip -dc "$1" >"$w" || die "$1: cannot unpack"
	echo "$w"
}
# pooled NAME FILE-COMMAND ARGS...: $work/NAME, the five domains' files
# (FILE-COMMAND ARGS... DOMAIN gives each) concatenated; nothing when one
# is missing
pooled() {
	local name=$1 d f
	shift
	if [ ! -e "$work/$name" ]; then
		: >"$work/$name.tmp"
		for d in $domains; do
			f=$("$@" "$d")
			[ -n "$f" ] || { rm -f "$work/$name.tmp"; return 0; }
			cat "$f" >>"$work/$name.tmp"
		done
		mv "$work/$name.tmp" "$work/$name"
	fi
	echo "$work/$name"
}
# test_of LANG DOMAIN: the domain's test sources (en) or references (de)
test_of() {
	if [ "$2" = pooled ]; then
		pooled "test-pooled.$1" test_of "$1"
	elif [ $collected = 1 ]; then
		[ ! -e "$out/test/$2.$1.gz" ] || unpack "$out/test/$2.$1.gz"
	else
		[ ! -e "$out/data/$2/test.$1" ] || echo "$out/data/$2/test.$1"
	fi
	return 0
}
# hyp_of RUN MODEL DOMAIN: the translations of the domain's test set by
# MODEL (a row of RUN's eval matrix: server or a client's name)
hyp_of() {
	local h
	if [ "$3" = pooled ]; then
		pooled "hyp-$1-$2-pooled" hyp_of "$1" "$2"
		return 0
	fi
	if [ $collected = 1 ]; then
		h=$out/hyps/$1/$2/$3.txt.gz
	else
		[ -e "$out/$1/hyps/.complete" ] || return 0
		h=$out/$1/hyps/$2/$3.txt.gz
	fi
	[ ! -e "$h" ] || unpack "$h"
	return 0
}
# copy_of DOMAIN: "BLEU CHRF" of the English sources scored as their own
# translations, as the eval matrix scores (cased): what a model that
# copies its input gets (gettext strings keep names, options and
# placeholders); nothing when the test set is not at hand.
copy_of() {
	local src ref
	if [ ! -e "$work/copy-$1" ]; then
		src=$(test_of en "$1") ref=$(test_of de "$1")
		[ -n "$src" ] && [ -n "$ref" ] || return 0
		find_fedrun
		"$FEDRUN" bleu -b -w 2 "$ref" "$src" | paste -s -d ' ' >"$work/copy-$1" ||
			die "fedrun bleu $ref $src failed"
	fi
	cat "$work/copy-$1"
}
# The optimizer table's stages run only with run.sh --optim (settings
# optim=1; runs made before the option had them in the default).
missing="" optim_skipped=""
# run.sh --matched's stages (settings matched=1) are rows of Table 6.
matched_stages=""
[ "$matched" = 0 ] || matched_stages="dp-greater-matched dp-less-matched"
for r in alone combined chained-5 federated rounds10 rounds50 dp-greater dp-less random \
	$matched_stages reset continue client-clock; do
	done_ $r && continue
	case $optim:$r in
	0:reset | 0:continue | 0:client-clock) optim_skipped="$optim_skipped $r" ;;
	*) missing="$missing $r" ;;
	esac
done

# matrix METRIC RUN MODEL [LABEL]: a table row "LABEL<TAB>v1...<TAB>mean"
# of METRIC (bleu, chrf) for MODEL (a row of RUN/eval_matrix.tsv: "server"
# or a client's name) over the five domains.
matrix() {
	if ! done_ "$2"; then
		printf '%s' "${4:-$3}"
		for d in $domains; do printf '\t-'; done
		printf '\t-\n'
		return 0
	fi
	awk -F'\t' -v metric="$1" -v model="$3" -v label="${4:-$3}" -v doms="$domains" '
	/^# / { inblock = ($0 == "# " metric " on test"); hdr = 0; next }
	inblock && $1 == "model" { for (i = 2; i <= NF; i++) col[$i] = i; hdr = 1; next }
	inblock && hdr && $1 == model {
		n = split(doms, d, " "); s = 0; line = label
		for (i = 1; i <= n; i++) { v = $(col[d[i]]); line = line "\t" v; s += v }
		printf "%s\t%.2f\n", line, s / n; found = 1; exit
	}
	END { if (!found) { print "no " metric " row " model > "/dev/stderr"; exit 1 } }' "$(matrix_of "$2")"
}

# md TSV...: the rows as a markdown table body with "BLEU (chrF)" cells:
# reads pairs of lines (bleu row, chrf row) from stdin.
md_rows() {
	awk -F'\t' 'NR % 2 == 1 { for (i = 1; i <= NF; i++) b[i] = $i; n = NF; next }
	{
		line = "| " b[1]
		for (i = 2; i <= n; i++)
			line = line (b[i] == "-" ? " | not run" : b[i] == "x" ? " | not kept" : sprintf(" | %.1f (%.1f)", b[i], $i))
		print line " |"
	}'
}
header() {
	printf '| %s |' "$1"
	for d in $domains; do printf ' %s |' "$d"; done
	printf ' mean |\n|---|'
	for d in $domains; do printf -- '---:|'; done
	printf -- '---:|\n'
}
# copy_rows: the bleu and chrf lines of the row "copy the source" ("x",
# not kept, where the test set is not at hand)
copy_rows() {
	local k d c
	for k in 1 2; do
		printf 'copy the source'
		for d in $domains; do
			c=$(copy_of "$d")
			if [ -z "$c" ]; then printf '\tx'; else echo "$c" | awk -v k=$k '{ printf "\t%s", $k }'; fi
		done
		printf '\n'
	done | awk -F'\t' -v OFS='\t' '{ s = 0; for (i = 2; i <= NF; i++) { if ($i == "x") s = "x"; else if (s != "x") s += $i }
		print $0, (s == "x") ? "x" : sprintf("%.2f", s / (NF - 1)) }'
}
# rows SPEC...: SPEC is RUN:MODEL:LABEL; prints bleu and chrf lines
rows() {
	for spec in "$@"; do
		run=${spec%%:*} rest=${spec#*:}
		model=${rest%%:*} label=${rest#*:}
		matrix bleu "$run" "$model" "$label"
		matrix chrf "$run" "$model" "$label"
	done
}
t2_specs="alone:server:generic"
for d in $domains; do t2_specs="$t2_specs alone:$d:$d alone"; done
t2_specs="$t2_specs combined:server:data combination chained-5:server:chained fine-tuning"
t4_specs="federated:server:server (= each client after the last push)"
for d in $domains; do t4_specs="$t4_specs federated:$d:client $d fine-tuned after the last round"; done
t5_specs="federated:server:5 rounds rounds10:server:10 rounds rounds50:server:50 rounds"
t6_specs="federated:server:all dp-greater:server:dp_greater dp-less:server:dp_less random:server:random"
[ "$matched" = 0 ] || t6_specs="$t6_specs dp-greater-matched:server:dp_greater, half the parameters dp-less-matched:server:dp_less, half the parameters"
ta_specs="federated:server:keep, global clock (Table 4) reset:server:reset, global clock continue:server:continue, global clock client-clock:server:reset, each client's own clock (the old defaults)"

# The specs hold spaces in labels: split on the RUN:MODEL: prefixes.
specs() { echo "$1" | sed 's/ \([a-z0-9-]*:[a-z]*:\)/\n\1/g'; }
rows_of() {
	copy_rows
	specs "$1" | while IFS= read -r s; do rows "$s"; done
}
tsv_of() {
	f=$1
	{
		printf 'model'
		for d in $domains; do printf '\t%s' "$d"; done
		printf '\tmean\n'
		# the copy baseline first, where the test sets are at hand
		copy_rows | sed -n 1p | grep -v '	x' || :
		specs "$2" | while IFS= read -r s; do
			run=${s%%:*} rest=${s#*:}
			matrix bleu "$run" "${rest%%:*}" "${rest#*:}"
		done
	} >"$f"
}

tsv_of "$dest/table2.tsv" "$t2_specs"
tsv_of "$dest/table4.tsv" "$t4_specs"
tsv_of "$dest/table5.tsv" "$t5_specs"
tsv_of "$dest/table6.tsv" "$t6_specs"
tsv_of "$dest/table-optim.tsv" "$ta_specs"

# Traffic of the pull per run: tensors, parameters and bytes over all rounds
# and clients (all: every tensor; the selectors log selector.sent and
# selector.params_sent per client and round).
# The model's size, "PARAMETERS<TAB>TENSORS", for the runs that pull every
# tensor: the "P parameters in N tensors" line of RUN/log.txt, or, where
# there is no log (a collected directory keeps none), what each client
# pulled in the first round of dp_greater or dp_less, which pull every
# tensor then (there is no previous round to compare with).
model_size() { # RUN
	if [ -e "$out/$1/log.txt" ]; then
		awk 'match($0, /[0-9]+ parameters in [0-9]+ tensors/) {
			split(substr($0, RSTART, RLENGTH), w, " "); p = w[1]; n = w[4] }
		END { if (n == "") exit 1; printf "%s\t%s\n", p, n }' "$out/$1/log.txt" && return 0
	fi
	for s in dp-greater dp-less; do
		done_ $s || continue
		metrics_of $s | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$(c["round"]) == 1 && $(c["client"]) != "" && $(c["metric"]) == "selector.sent" { n[$(c["client"])] = $(c["value"]) }
		$(c["round"]) == 1 && $(c["client"]) != "" && $(c["metric"]) == "selector.params_sent" { p[$(c["client"])] = $(c["value"]) }
		END {
			for (k in n) { if (N == "") { N = n[k]; P = p[k] } else if (n[k] != N || p[k] != P) bad = 1 }
			if (N == "" || P == "" || bad) exit 1
			printf "%s\t%s\n", P, N
		}' && return 0
	done
	die "$out/$1: no log.txt, and no dp_greater or dp_less run to take the model's size from"
}
traffic() { # RUN -> "tensors<TAB>params<TAB>bytes"
	local size
	size=$(model_size "$1") || return 1
	metrics_of "$1" | awk -F, -v size="$size" '
	BEGIN { split(size, w, "\t"); P = w[1]; NT = w[2] }
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["metric"]) == "updates" { k[$(c["round"])]++ }
	$(c["metric"]) == "selector.sent" { sent += $(c["value"]); sel = 1 }
	$(c["metric"]) == "selector.params_sent" { ps += $(c["value"]) }
	$(c["round"]) > 0 && !($(c["round"]) in B) { B[$(c["round"])] = $(c["bytes_pull"]); bytes += $(c["bytes_pull"]) }
	END {
		for (r in k) pulls += k[r]
		if (!sel) { sent = pulls * NT; ps = pulls * P }
		printf "%d\t%d\t%d\n", sent, ps, bytes
	}'
}

# The traffic table's rows: "SELECTOR<TAB>its traffic<TAB>all's traffic".
traffic_rows=""
if done_ federated; then
	ta=$(traffic federated)
	for s in federated:all dp-greater:dp_greater dp-less:dp_less random:random \
		"dp-greater-matched:dp_greater, half the parameters" "dp-less-matched:dp_less, half the parameters"; do
		done_ "${s%%:*}" || continue
		tr=$(traffic "${s%%:*}")
		traffic_rows=$traffic_rows$(printf '%s\t%s\t%s' "${s#*:}" "$tr" "$ta")$'\n'
	done
fi

# Goals of the issue, checked on the numbers.
mean_of() { awk -F'\t' -v l="$2" '$1 == l { print $NF }' "$1"; }
cell_of() { # FILE LABEL DOMAIN
	awk -F'\t' -v l="$2" -v d="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $1 == l { print $(c[d]) }' "$1"
}
server="server (= each client after the last push)"
# The goals: the issue's claims, each judged by paired bootstrap resampling
# of the test translations (common.sh's paired_bs and judge), cased BLEU
# as the tables. A claim on the mean over the domains is judged on the
# five test sets pooled (corpus BLEU of their union); a claim on every
# domain on each domain's test set.
# A goal is judged only on figures that mean something.
# zero_of NAME FILE LABEL: ", NAME" when row LABEL of table FILE has BLEU 0
# on every domain (a model that translates nothing, such as --quick's tiny
# one, where a gap of 0.00 would read as "met").
# unlearned RUN: ", RUN [...]" when the server's validation loss after the
# run's last round is not below the one at round 0, or not a number (a
# run that did not learn).
# why_not ZEROS UNLEARNED: the reasons not to judge, "" when both lists
# are empty.
zero_of() {
	awk -F'\t' -v l="$3" 'NR > 1 && $1 == l { z = 1; for (i = 2; i <= NF; i++) if ($i + 0 != 0) z = 0; found = 1 }
	END { exit !(found && z) }' "$2" && printf ', %s' "$1"
	return 0
}
unlearned() {
	metrics_of "$1" | awk -F, -v run="$1" '
	function col(n) { return (n in c) ? $(c[n]) : "" }
	function f(x) { return x ~ /^[0-9]/ ? sprintf("%.4f", x) : x }
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	col("client") == "" && col("model") == "" && col("tensor") == "" && col("split") == "valid" && col("metric") == "loss" {
		r = col("round") + 0; v[r] = col("value"); if (r > last) last = r
	}
	END {
		if (last > 0 && (0 in v) && (v[last] !~ /^[0-9]/ || v[last] + 0 >= v[0] + 0))
			printf ", %s [server validation loss %s at round 0, %s after round %d]", run, f(v[0]), f(v[last]), last
	}'
}
why_not() {
	local why=""
	[ -z "$1" ] || why="BLEU 0.00 on every domain for ${1#, }: the figures mean nothing"
	[ -z "$2" ] || why="${why:+$why; }did not learn: ${2#, }"
	echo "$why"
}
# nm STAGE...: "**not measured** (not run: ...)" for the stages not complete
nm() {
	local m="" x
	for x in "$@"; do done_ "$x" || m="$m $x"; done
	[ -z "$m" ] || echo "**not measured** (not run:$m)"
}
# bs_of RUN_A MODEL_A RUN_B MODEL_B DOMAIN: paired_bs of the two models'
# kept translations of DOMAIN (or pooled) into $work; its file, or
# /dev/null when the translations or the references were not kept
bs_of() {
	local f=$work/bs-$1-$2-$3-$4-$5 ref ha hb
	if [ ! -e "$f" ]; then
		ref=$(test_of de "$5") ha=$(hyp_of "$1" "$2" "$5") hb=$(hyp_of "$3" "$4" "$5")
		if [ -z "$ref" ] || [ -z "$ha" ] || [ -z "$hb" ]; then
			echo /dev/null
			return 0
		fi
		paired_bs "$f" "$ref" "$ha" "$hb"
	fi
	echo "$f"
}
# compare TEXT KIND MARGIN WHY RUN_A MODEL_A RUN_B MODEL_B DOMAIN A B: the
# judge line of A against B on DOMAIN's test set (or pooled); A and B, the
# tables' BLEU, are shown where there is no interval (the bootstrap's
# corpus scores otherwise)
compare() {
	local bs a=${10} b=${11} c
	bs=$(bs_of "$5" "$6" "$7" "$8" "$9")
	if [ "$bs" != /dev/null ]; then
		a=$(awk -F'\t' '$1 == "bleu" { print $2 }' "$bs")
		b=$(awk -F'\t' '$1 == "bleu" { print $3 }' "$bs")
	fi
	c=$(copy_of "$9" | awk '{ print $1 }')
	judge "$1" "$2" "$3" "$a" "$b" "$4" "$c" "$bs" "translations not kept"
}
f2() { awk -v x="$1" 'BEGIN { printf "%.2f", x }'; }
# pooled_goal TEXT KIND MARGIN WHY RUN_A MODEL_A LABEL_A FILE_A RUN_B MODEL_B LABEL_B FILE_B
pooled_goal() {
	compare "- $1" "$2" "$3" "$4" "$5" "$6" "$9" "${10}" pooled \
		"$(f2 "$(mean_of "$8" "$7")")" "$(f2 "$(mean_of "${12}" "${11}")")"
}
# domain_goal TEXT WHY RUN_A MODEL_A LABEL_A FILE_A RUN_B MODEL_B LABEL_B
# FILE_B: A above B on every domain, a line per domain under the goal's;
# @ in MODEL_A and LABEL_A stands for the domain. The goal is reproduced
# when every domain's is, contradicted when one is, else inconclusive
# (not judged for WHY).
domain_goal() {
	local d ma la lines="" v n=0 con="" inc=""
	for d in $domains; do
		ma=$(echo "$4" | sed "s/@/$d/g") la=$(echo "$5" | sed "s/@/$d/g")
		lines="$lines$(compare "  - $d" higher 0 "$2" "$3" "$ma" "$7" "$8" "$d" \
			"$(f2 "$(cell_of "$6" "$la" "$d")")" "$(f2 "$(cell_of "${10}" "$9" "$d")")")
"
	done
	for d in $domains; do
		v=$(printf '%s' "$lines" | grep "^  - $d: " | sed 's/^[^*]*\*\*\([a-z ]*\)\*\*.*/\1/')
		case $v in
		reproduced) n=$((n + 1)) ;;
		contradicted) con="$con $d" ;;
		*) inc="$inc $d" ;;
		esac
	done
	if [ -n "$2" ]; then
		v="**not judged** ($2)"
	elif [ -n "$con" ]; then
		v="**contradicted** (reproduced on $n of 5; contradicted on:$con${inc:+; inconclusive on:$inc})"
	elif [ $n -eq 5 ]; then
		v="**reproduced** (on 5 of 5)"
	else
		v="**inconclusive** (reproduced on $n of 5; inconclusive on:$inc)"
	fi
	echo "- $1: $v"
	printf '%s' "$lines"
}
t2=$dest/table2.tsv t4=$dest/table4.tsv t6=$dest/table6.tsv
goal1=$(nm federated combined)
if [ -z "$goal1" ]; then
	goal1=$(pooled_goal "Federated server within 1.5 BLEU of data combination (the issue's margin; the paper's server was 1.83 above it), pooled" \
		close 1.5 "$(why_not "$(zero_of server "$t4" "$server"
			zero_of "data combination" "$t2" "data combination")" "$(unlearned federated; unlearned combined)")" \
		federated server "$server" "$t4" combined server "data combination" "$t2")
else
	goal1="- Federated server within 1.5 BLEU of data combination: $goal1"
fi
goal2=$(nm federated alone)
if [ -z "$goal2" ]; then
	goal2=$(domain_goal "Federated server above the generic model on every domain" \
		"$(why_not "$(zero_of server "$t4" "$server"; zero_of generic "$t2" generic)" \
			"$(unlearned federated; unlearned generic)")" \
		federated server "$server" "$t4" alone server generic "$t2")
else
	goal2="- Federated server above the generic model on every domain: $goal2"
fi
goal3=$(nm federated)
if [ -z "$goal3" ]; then
	goal3=$(domain_goal "Each client fine-tuned after the last round above the server on its own domain" \
		"$(why_not "$(zero_of server "$t4" "$server"
			for d in $domains; do zero_of "client $d fine-tuned" "$t4" "client $d fine-tuned after the last round"; done)" \
			"$(unlearned federated)")" \
		federated @ "client @ fine-tuned after the last round" "$t4" federated server "$server" "$t4")
else
	goal3="- Each client fine-tuned after the last round above the server on its own domain: $goal3"
fi
goal4=$(nm federated dp-greater dp-less)
if [ -z "$goal4" ]; then
	goal4=$(pooled_goal "dp_less above dp_greater (it loses less BLEU against all, the paper's Table 6), pooled" \
		higher 0 "$(why_not "$(for l in all dp_greater dp_less; do zero_of $l "$t6" $l; done)" \
			"$(unlearned federated; unlearned dp-greater; unlearned dp-less)")" \
		dp-less server dp_less "$t6" dp-greater server dp_greater "$t6")
else
	goal4="- dp_less above dp_greater: $goal4"
fi
# --matched: the same claim at matched parameter fractions
goal5=""
if [ "$matched" != 0 ]; then
	goal5=$(nm federated dp-greater-matched dp-less-matched)
	if [ -z "$goal5" ]; then
		goal5=$(pooled_goal "dp_less above dp_greater at matched parameter fractions (half the parameters each), pooled" \
			higher 0 "$(why_not "$(for l in all "dp_greater, half the parameters" "dp_less, half the parameters"; do
				zero_of "$l" "$t6" "$l"; done)" \
				"$(unlearned federated; unlearned dp-greater-matched; unlearned dp-less-matched)")" \
			dp-less-matched server "dp_less, half the parameters" "$t6" \
			dp-greater-matched server "dp_greater, half the parameters" "$t6")
	else
		goal5="- dp_less above dp_greater at matched parameter fractions: $goal5"
	fi
fi

# The kept translations scored again: each model's BLEU on each domain
# against its eval matrix's, which they should give (fedrun translate
# --long keep decodes as the evaluation does). "N<TAB>DIFFERENT..."
kept_check() {
	local spec run model d h ref got want n=0 bad=""
	for spec in $(specs "$t2_specs
$t4_specs
$t5_specs
$t6_specs
$ta_specs" | cut -d: -f1,2 | sort -u); do
		run=${spec%%:*} model=${spec#*:}
		done_ "$run" || continue
		for d in $domains; do
			h=$(hyp_of "$run" "$model" "$d") ref=$(test_of de "$d")
			[ -n "$h" ] && [ -n "$ref" ] || continue
			find_fedrun
			got=$("$FEDRUN" bleu -m bleu -b -w 6 "$ref" "$h") || die "fedrun bleu $ref $h failed"
			want=$(awk -F'\t' -v m="$model" -v d="$d" '/^# / { b = ($0 == "# bleu on test"); h = 0; next }
				b && $1 == "model" { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
				b && h && $1 == m { print $(c[d]) }' "$(matrix_of "$run")")
			n=$((n + 1))
			awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 5e-6 * (w < 1 ? 1 : w)) }' ||
				bad="$bad $run/$model on $d ($got, the matrix $want);"
		done
	done
	printf '%s\t%s\n' "$n" "$bad"
}
kept=$(kept_check)
kept_n=${kept%%	*} kept_bad=${kept#*	}

# Figures (gnuplot through tools/fedrun-plot), from the run directories:
# not with PASSBAN2022_FIGURES=0, nor from a collected directory. results.md
# names them either way, so that it does not depend on whether they were
# drawn.
# curve OPTIONS... LABEL=RUN...: fedrun-plot curve over the complete runs.
curve() {
	local args=() a n=0
	for a in "$@"; do
		if [[ $a == *=$out/* ]]; then
			done_ "${a##*/}" || continue
			n=$((n + 1))
		fi
		args+=("$a")
	done
	[ $n -gt 0 ] || return 0
	"$PLOT" curve "${args[@]}"
}
if [ "${PASSBAN2022_FIGURES:-1}" != 0 ] && [ $collected = 0 ] && [ -x "$PLOT" ] &&
	command -v gnuplot >/dev/null 2>&1; then
	"$PLOT" bars --title "Table 2: test BLEU, centralized baselines" --ylabel BLEU -o "$dest/fig-table2" "$dest/table2.tsv"
	"$PLOT" bars --title "Table 4: test BLEU, federated server and fine-tuned clients" --ylabel BLEU -o "$dest/fig-table4" "$dest/table4.tsv"
	"$PLOT" bars --title "Table 5: test BLEU by number of rounds (same steps)" --ylabel BLEU -o "$dest/fig-table5" "$dest/table5.tsv"
	"$PLOT" bars --title "Table 6: test BLEU by what is pulled" --ylabel BLEU -o "$dest/fig-table6" "$dest/table6.tsv"
	curve --metric loss --split valid --title "Server validation loss per round (5 rounds)" \
		-o "$dest/fig-curves" "data combination=$out/combined" "federated (all)=$out/federated" \
		"dp_greater=$out/dp-greater" "dp_less=$out/dp-less" "random=$out/random"
	curve --metric loss --split valid --client packaging \
		--title "Figure 3: packaging (smallest domain) validation loss per round" \
		-o "$dest/fig3-rounds" "5 rounds=$out/federated" "10 rounds=$out/rounds10" "50 rounds=$out/rounds50"
	curve --metric loss --split valid --client packaging --x step \
		--xlabel "global step (each client's updates so far)" \
		--title "Figure 3 against steps: packaging validation loss" \
		-o "$dest/fig3-steps" "5 rounds=$out/federated" "10 rounds=$out/rounds10" "50 rounds=$out/rounds50"
fi

{
	echo "# Passban et al. 2022 on the gettext corpora: results"
	echo
	if [ $quick = 1 ]; then
		echo "**This is a --quick run: 1000 training pairs a domain, 30 test sentences, the tiny"
		echo "preset, $steps steps. It checks that every step works; its numbers mean nothing.**"
		echo
	fi
	echo "Made by \`repro/passban2022/run.sh\` (${date:-date unknown}, fedrun ${fedrun_version:-unknown})."
	echo "English -> German, five client domains (cli, git, packaging, gnome, office), a"
	echo "generic model trained centrally on the seven other gettext domains (finance,"
	echo "gnupg, graphics, mail, media, system, toolchain), fine-tuning budget T = $steps steps"
	echo "of 2048 tokens. Test BLEU (chrF) as sacreBLEU computes them, beam 4. One run each (seed 1)."
	echo
	echo "## Data"
	echo
	echo "No held-out sentence of any domain (or of the unions) is in any training set"
	echo "(\`data/gettext/check-overlap.sh\`):"
	echo
	echo '```'
	cat "$out/overlap.tsv"
	echo '```'
	echo
	echo "## Table 2: centralized baselines"
	echo
	echo "Every model on every domain's test set. *generic*: the pre-trained model; *D alone*:"
	echo "the generic model fine-tuned on domain D for T steps; *data combination*: fine-tuned"
	echo "T steps on the union of the five domains; *chained*: fine-tuned T/5 steps on each"
	echo "domain in turn (cli, git, packaging, gnome, office). *copy the source*, in every table, is"
	echo "no model: the English test sources scored as their own translations, what a model that"
	echo "copies its input scores (gettext strings keep names, options and placeholders); \"not"
	echo "kept\" where the test sets were not kept with the runs."
	echo
	header model
	rows_of "$t2_specs" | md_rows
	echo
	echo "## Table 4: federated"
	echo
	echo "Five clients, all in every round, start from the generic model; each makes T/5 steps"
	echo "a round for 5 rounds (T in all, as in the paper, where every client trains as many"
	echo "steps as data combination); FedAvg weighted by client size. After the last push every"
	echo "client holds the server model (its row is the server's); *client D fine-tuned* is client D"
	echo "fine-tuned T/5 more steps on its own data."
	echo
	header model
	rows_of "$t4_specs" | md_rows
	echo
	echo "## Table 5: rounds"
	echo
	echo "The server after 5, 10 and 50 rounds of T/5, T/10 and T/50 steps a client."
	echo
	header rounds
	rows_of "$t5_specs" | md_rows
	echo
	echo "## Table 6: what is pulled"
	echo
	echo "Five rounds as in Table 4, with the selectors of the paper's sec. 3.2 on the pull:"
	echo "all tensors, dynamic pulling of the tensors that changed at least (dp_greater) or"
	echo "less than (dp_less) the median of their group (encoder, decoder), and a random half."
	if [ "$matched" != 0 ]; then
		echo "*half the parameters* (\`run.sh --matched\`): dp_greater and dp_less with θ at the median"
		echo "of the group's parameters rather than of its tensors (\`fraction_by\` \"parameters\"), the"
		echo "change measured per parameter (\`measure\` \"mean\": the norm over the square root of the"
		echo "tensor's size), so that each pulls about half the parameters, the paper's operating point."
	fi
	echo
	header selector
	rows_of "$t6_specs" | md_rows
	echo
	echo "Pulled traffic, all clients and rounds (the first round of dp_greater and dp_less"
	echo "sends everything: there is no previous round to compare with):"
	echo
	echo "| selector | tensors | share of all | parameters | share of all | bytes | share of all |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	printf '%s' "$traffic_rows" | awk -F'\t' '{
		printf "| %s | %d | %.1f%% | %d | %.1f%% | %d | %.1f%% |\n", $1, $2, 100 * $2 / $5, $3, 100 * $3 / $6, $4, 100 * $4 / $7
		# The median of the paper halves the tensors, and the parameters
		# it reports pulled are half of them: say what the tensors are
		# in bytes here, where they differ in size.
		if ($1 ~ /^dp_/)
			dp = dp sprintf("%s%s pulled %.1f%% of the tensors and %.1f%% of the bytes", dp == "" ? "" : "; ", $1, 100 * $2 / $5, 100 * $4 / $7)
	}
	END { if (dp != "") printf "\nTensors are not bytes: %s. The paper sets θ at the median, \"half (50%%) of the tensors\" (sec. 5.1), and reports half the parameters pulled by DP_l (22,863,104 of 45,724,160, sec. 5.4): its tensors are of similar sizes. Here they are not, so the median of the tensors is far from half the bytes; the rows *half the parameters* (run.sh --matched) are at the operating point of the paper.\n", dp }'
	echo
	# run.sh --seeds N: the other seeds' stages, as rows of their own
	if [ "${seeds:-1}" -gt 1 ]; then
		echo "## Seeds 2 to $seeds"
		echo
		echo "The stages run again with \`--set seed=K\` (\`run.sh --seeds $seeds\`), the server's test BLEU"
		echo "(chrF), stages that ran only; the tables and goals above are seed 1's."
		echo
		header "stage, seed"
		for r in alone combined federated rounds10 rounds50 dp-greater dp-less random \
			dp-greater-matched dp-less-matched reset continue client-clock; do
			k=2
			while [ $k -le "$seeds" ]; do
				! done_ "$r-s$k" || rows "$r-s$k:server:$r, seed $k"
				k=$((k + 1))
			done
		done | md_rows
		echo
	fi
	echo "## Optimizer state and schedule clock"
	echo
	echo "The federated setting of Table 4 (server after 5 rounds, no fine-tuning) with each"
	echo "choice of \`clients.optimizer_state\` on the global schedule clock, and with the"
	echo "clock of each client's own steps with the state reset (\`clients.lr_clock\` \"client\","
	echo "\"reset\": fedrun's defaults before the global clock, where every round starts the"
	echo "warm-up again). With the state kept, each client's own clock is the global clock here,"
	echo "since every client makes the same T/5 steps a round."
	if [ -n "$optim_skipped" ]; then
		echo "Stages$optim_skipped are not in this run: \`run.sh --optim\` adds them (not one of the"
		echo "paper's tables, they are left out of the default run's 3 hours)."
	fi
	echo
	header "optimizer state, clock"
	rows_of "$ta_specs" | md_rows
	echo
	echo "## Goals"
	echo
	echo "Each claim judged on the test translations by paired bootstrap resampling, sacreBLEU's"
	echo "method (\`fedrun bleu --paired-bs\`: $bs_n resamples of the test sentences, seed $bs_seed,"
	echo "the same resample for both systems), cased BLEU as in the tables: the 95% interval of"
	echo "the difference A - B decides. \"A above B\": **reproduced** when the interval is entirely"
	echo "above 0, **contradicted** when entirely below, **inconclusive** when it holds 0. \"A within"
	echo "M of B\": **reproduced** when its lower end is above -M, **contradicted** when its upper"
	echo "end is below -M, inconclusive otherwise. chrF's interval is given beside; BLEU decides."
	echo "A claim on the mean over the domains is judged on the five test sets pooled (*pooled*:"
	echo "the corpus BLEU of their union, which weighs the domains by their size, unlike the"
	echo "tables' mean); a claim on every domain on each domain's test set. One run each (seed"
	echo "1): the interval covers the sampling of the test sentences, not the variation between"
	echo "training seeds. Where the translations were not kept (runs made before run.sh kept"
	echo "them) there is no interval, and the goal is inconclusive, with the tables' BLEU (means"
	echo "for a pooled claim). **Not judged** where the figures mean nothing: BLEU 0 on every"
	echo "domain (as in every --quick run), a run that did not learn (the server's validation loss"
	echo "after the last round not below round 0's), or both systems below the row \"copy the"
	echo "source\"."
	echo
	echo "$goal1"
	echo "$goal2"
	echo "$goal3"
	echo "$goal4"
	[ -z "$goal5" ] || echo "$goal5"
	echo
	if [ "$kept_n" -eq 0 ]; then
		echo "Translations: not kept (runs made before run.sh kept them): no copy baseline and no intervals."
	elif [ -z "$kept_bad" ]; then
		echo "Translations: the kept translations of $kept_n model-domain cells, scored again with \`fedrun bleu\`,"
		echo "give the BLEU of the eval matrices on every one."
	else
		echo "Translations: of the kept translations of $kept_n model-domain cells, scored again with"
		echo "\`fedrun bleu\`, these do not give the BLEU of their eval matrix:$kept_bad the intervals"
		echo "are those of the kept translations."
	fi
	echo
	if [ -n "$missing" ]; then
		echo "Stages not run (their rows say so):$missing."
		echo
	fi
	echo "## Figures"
	echo
	echo "![Table 2](fig-table2.svg) ![Table 4](fig-table4.svg) ![Table 5](fig-table5.svg)"
	echo "![Table 6](fig-table6.svg) ![curves](fig-curves.svg) ![Figure 3](fig3-rounds.svg)"
	echo "![Figure 3 against steps](fig3-steps.svg)"
	echo
	echo "PNG files of the same names are next to the SVGs; \`.dat\` files hold the curves' numbers."
	echo
	echo "## Time"
	echo
	echo "Seconds per stage on this machine (${cores:-?} cores; \`times.tsv\`):"
	echo
	echo '```'
	times_table "$out/times.tsv"
	echo '```'
	echo
	# With --jobs J the stages overlap: the wall clock of each run.sh call
	# that reached its end ("total" lines; a call cut short writes none).
	awk -F'\t' '$1 == "total" && $2 > 0 { printf "%s%s s", (n++ ? ", " : ""), $2 }
	END { if (n) print ""; else print "none" }' "$out/times.tsv" |
		sed 's/^/Wall clock of the run.sh calls that ran stages to the end (`--jobs` runs stages side by side): /'
} >"$dest/results.md"
echo "results.sh: wrote $dest/results.md"
