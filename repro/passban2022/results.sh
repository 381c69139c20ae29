#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Writes results.md, table*.tsv and fig-*.{png,svg,dat} of
# repro/passban2022 from the run directories that run.sh left in OUT (it
# calls this at its end; run it again on its own to remake the tables and
# figures), or from a collected results directory such as
# repro/passban2022/results: its metrics/RUN.csv.gz (a run's metrics.csv)
# and matrices/RUN.tsv (its eval_matrix.tsv). Either way it reads only the
# runs' metrics and eval matrices (and .complete, and log.txt where there
# is one), OUT/settings, OUT/times.tsv and OUT/overlap.tsv.
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
quick=0 steps=200 optim=1 date='' fedrun_version='' cores=''
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
# The optimizer table's stages run only with run.sh --optim (settings
# optim=1; runs made before the option had them in the default).
missing="" optim_skipped=""
for r in alone combined chained-5 federated rounds10 rounds50 dp-greater dp-less random \
	reset continue client-clock; do
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
			line = line (b[i] == "-" ? " | not run" : sprintf(" | %.1f (%.1f)", b[i], $i))
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
ta_specs="federated:server:keep, global clock (Table 4) reset:server:reset, global clock continue:server:continue, global clock client-clock:server:reset, each client's own clock (the old defaults)"

# The specs hold spaces in labels: split on the RUN:MODEL: prefixes.
specs() { echo "$1" | sed 's/ \([a-z0-9-]*:[a-z]*:\)/\n\1/g'; }
rows_of() { specs "$1" | while IFS= read -r s; do rows "$s"; done; }
tsv_of() {
	f=$1
	{
		printf 'model'
		for d in $domains; do printf '\t%s' "$d"; done
		printf '\tmean\n'
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
	for s in federated:all dp-greater:dp_greater dp-less:dp_less random:random; do
		done_ ${s%%:*} || continue
		tr=$(traffic ${s%%:*})
		traffic_rows=$traffic_rows$(printf '%s\t%s\t%s' "${s#*:}" "$tr" "$ta")$'\n'
	done
fi

# Goals of the issue, checked on the numbers.
mean_of() { awk -F'\t' -v l="$2" '$1 == l { print $NF }' "$1"; }
cell_of() { # FILE LABEL DOMAIN
	awk -F'\t' -v l="$2" -v d="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $1 == l { print $(c[d]) }' "$1"
}
fed_mean=$(mean_of "$dest/table4.tsv" "server (= each client after the last push)")
comb_mean=$(mean_of "$dest/table2.tsv" "data combination")
gap=$(awk -v a="$fed_mean" -v b="$comb_mean" 'BEGIN { printf "%.2f", b - a }')
goal1=$(awk -v g="$gap" 'BEGIN { print (g <= 1.5) ? "met" : "missed" }')
# beats FILE_A LABEL_A FILE_B LABEL_B: "COUNT<TAB>DOMAINS WHERE NOT" over the
# five domains, where row A's BLEU is above row B's; LABEL_A may hold @ for
# the domain.
beats() {
	n=0 not=""
	for d in $domains; do
		a=$(cell_of "$1" "$(echo "$2" | sed "s/@/$d/")" $d)
		b=$(cell_of "$3" "$4" $d)
		if awk -v a="$a" -v b="$b" 'BEGIN { exit !(a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && a + 0 > b + 0) }'; then n=$((n + 1)); else not="$not $d ($a vs $b)"; fi
	done
	printf '%s\t%s\n' $n "$not"
}
server="server (= each client after the last push)"
r=$(beats "$dest/table4.tsv" "$server" "$dest/table2.tsv" generic)
above=${r%%	*} below=${r#*	}
r=$(beats "$dest/table4.tsv" "client @ fine-tuned after the last round" "$dest/table4.tsv" "$server")
ftwins=${r%%	*} ftloses=${r#*	}
all_m=$(mean_of "$dest/table6.tsv" all)
dpg_m=$(mean_of "$dest/table6.tsv" dp_greater)
dpl_m=$(mean_of "$dest/table6.tsv" dp_less)
dp_goal=$(awk -v a="$all_m" -v g="$dpg_m" -v l="$dpl_m" 'BEGIN { print (a - l < a - g) ? "met" : "missed" }')
# The goals as lines of results.md; "not measured" where a stage is missing.
nm() { # STAGE...: the ones not complete, or nothing
	local m="" x
	for x in "$@"; do done_ "$x" || m="$m $x"; done
	[ -z "$m" ] || echo "**not measured** (not run:$m)"
}
# A goal is judged only on figures that mean something.
# zero_of NAME FILE LABEL: ", NAME" when row LABEL of table FILE has BLEU 0
# on every domain (a model that translates nothing, such as --quick's tiny
# one, where a gap of 0.00 would read as "met").
# unlearned RUN: ", RUN [...]" when the server's validation loss after the
# run's last round is not below the one at round 0, or not a number (a
# run that did not learn).
# judged ZEROS UNLEARNED: "**not judged** (why)" when either list has a
# name, else nothing (and the goal is judged on its numbers).
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
judged() {
	local why=""
	[ -z "$1" ] || why="BLEU 0.00 on every domain for ${1#, }: the figures mean nothing"
	[ -z "$2" ] || why="${why:+$why; }did not learn: ${2#, }"
	[ -z "$why" ] || echo "**not judged** ($why)"
}
g1=$(nm federated combined)
[ -n "$g1" ] || g1=$(judged "$(zero_of server "$dest/table4.tsv" "$server"
	zero_of "data combination" "$dest/table2.tsv" "data combination")" "$(unlearned federated; unlearned combined)")
: "${g1:=**$goal1** (server $fed_mean, data combination $comb_mean, gap $gap)}"
g2=$(nm federated alone)
[ -n "$g2" ] || g2=$(judged "$(zero_of server "$dest/table4.tsv" "$server"
	zero_of generic "$dest/table2.tsv" generic)" "$(unlearned federated; unlearned generic)")
: "${g2:=**$([ "$above" -eq 5 ] && echo met || echo missed)** ($above of 5$([ -n "$below" ] && echo "; not on:$below"))}"
g3=$(nm federated)
[ -n "$g3" ] || g3=$(judged "$(zero_of server "$dest/table4.tsv" "$server"
	for d in $domains; do zero_of "client $d fine-tuned" "$dest/table4.tsv" "client $d fine-tuned after the last round"; done)" \
	"$(unlearned federated)")
: "${g3:=**$([ "$ftwins" -eq 5 ] && echo met || echo missed)** ($ftwins of 5$([ -n "$ftloses" ] && echo "; not:$ftloses"))}"
g4=$(nm federated dp-greater dp-less)
[ -n "$g4" ] || g4=$(judged "$(for l in all dp_greater dp_less; do zero_of $l "$dest/table6.tsv" $l; done)" \
	"$(unlearned federated; unlearned dp-greater; unlearned dp-less)")
: "${g4:=**$dp_goal** (mean BLEU: all $all_m, dp_greater $dpg_m, dp_less $dpl_m)}"

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
	echo "domain in turn (cli, git, packaging, gnome, office)."
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
		# The paper counts tensors (dp_less pulls half of them): say what
		# that is in bytes here, where the tensors differ in size.
		if ($1 ~ /^dp_/)
			dp = dp sprintf("%s%s pulled %.1f%% of the tensors and %.1f%% of the bytes", dp == "" ? "" : "; ", $1, 100 * $2 / $5, 100 * $4 / $7)
	}
	END { if (dp != "") printf "\nTensors are not bytes: %s. The paper reports the share of tensors (50%% for dp_less); the tensors of a transformer differ in size, so the share of bytes can be far from it.\n", dp }'
	echo
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
	echo "- Federated server within 1.5 BLEU of data combination (mean over the five domains):"
	echo "  $g1."
	echo "- Federated server above the generic model on every domain: $g2."
	echo "- Clients fine-tuned after the last round beat the server on their own domain: $g3."
	echo "- dp_less loses less BLEU against all than dp_greater: $g4."
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
