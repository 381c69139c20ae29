#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Writes OUT/results.md and OUT/fig-*.{png,svg} from the run directories
# that repro/passban2022/run.sh left in OUT (it calls this at its end; run it
# again on its own to remake the tables and figures).
#
# Usage: repro/passban2022/results.sh OUT
# (T and --quick are read from OUT/settings, which run.sh writes.)
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
out=$1
quick=0 steps=200 optim=1
[ -e "$out/settings" ] && . "$out/settings"
domains="cli git packaging gnome office"
# A stage that is not complete (an interrupted run.sh) shows as "not run"
# rows and its figures' lines are left out; the generic model is needed.
[ -e "$out/generic/.complete" ] || die "$out/generic: not complete (run run.sh)"
# The optimizer table's stages run only with run.sh --optim (settings
# optim=1; runs made before the option had them in the default).
missing="" optim_skipped=""
for r in alone combined chained-5 federated rounds10 rounds50 dp-greater dp-less random \
	reset continue client-clock; do
	[ -e "$out/$r/.complete" ] && continue
	case $optim:$r in
	0:reset | 0:continue | 0:client-clock) optim_skipped="$optim_skipped $r" ;;
	*) missing="$missing $r" ;;
	esac
done
done_() { [ -e "$out/$1/.complete" ]; }

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
	END { if (!found) { print "no " metric " row " model > "/dev/stderr"; exit 1 } }' "$out/$2/eval_matrix.tsv"
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

tsv_of "$out/table2.tsv" "$t2_specs"
tsv_of "$out/table4.tsv" "$t4_specs"
tsv_of "$out/table5.tsv" "$t5_specs"
tsv_of "$out/table6.tsv" "$t6_specs"
tsv_of "$out/table-optim.tsv" "$ta_specs"

# Traffic of the pull per run: tensors, parameters and bytes over all rounds
# and clients (all: every tensor; the selectors log selector.sent and
# selector.params_sent per client and round).
traffic() { # RUN -> "tensors<TAB>params<TAB>bytes"
	awk -F, -v logf="$out/$1/log.txt" '
	BEGIN {
		while ((getline l < logf) > 0)
			if (match(l, /[0-9]+ parameters in [0-9]+ tensors/)) {
				split(substr(l, RSTART, RLENGTH), w, " "); P = w[1]; NT = w[4]
			}
	}
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$(c["metric"]) == "updates" { k[$(c["round"])]++ }
	$(c["metric"]) == "selector.sent" { sent += $(c["value"]); sel = 1 }
	$(c["metric"]) == "selector.params_sent" { ps += $(c["value"]) }
	$(c["round"]) > 0 && !($(c["round"]) in B) { B[$(c["round"])] = $(c["bytes_pull"]); bytes += $(c["bytes_pull"]) }
	END {
		for (r in k) pulls += k[r]
		if (!sel) { sent = pulls * NT; ps = pulls * P }
		printf "%d\t%d\t%d\n", sent, ps, bytes
	}' "$out/$1/metrics.csv"
}

# Goals of the issue, checked on the numbers.
mean_of() { awk -F'\t' -v l="$2" '$1 == l { print $NF }' "$1"; }
cell_of() { # FILE LABEL DOMAIN
	awk -F'\t' -v l="$2" -v d="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $1 == l { print $(c[d]) }' "$1"
}
fed_mean=$(mean_of "$out/table4.tsv" "server (= each client after the last push)")
comb_mean=$(mean_of "$out/table2.tsv" "data combination")
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
r=$(beats "$out/table4.tsv" "$server" "$out/table2.tsv" generic)
above=${r%%	*} below=${r#*	}
r=$(beats "$out/table4.tsv" "client @ fine-tuned after the last round" "$out/table4.tsv" "$server")
ftwins=${r%%	*} ftloses=${r#*	}
all_m=$(mean_of "$out/table6.tsv" all)
dpg_m=$(mean_of "$out/table6.tsv" dp_greater)
dpl_m=$(mean_of "$out/table6.tsv" dp_less)
dp_goal=$(awk -v a="$all_m" -v g="$dpg_m" -v l="$dpl_m" 'BEGIN { print (a - l < a - g) ? "met" : "missed" }')
# The goals as lines of results.md; "not measured" where a stage is missing.
nm() { # STAGE...: the ones not complete, or nothing
	local m="" x
	for x in "$@"; do done_ "$x" || m="$m $x"; done
	[ -z "$m" ] || echo "**not measured** (not run:$m)"
}
g1=$(nm federated combined)
: "${g1:=**$goal1** (server $fed_mean, data combination $comb_mean, gap $gap)}"
g2=$(nm federated alone)
: "${g2:=**$([ "$above" -eq 5 ] && echo met || echo missed)** ($above of 5$([ -n "$below" ] && echo "; not on:$below"))}"
g3=$(nm federated)
: "${g3:=**$([ "$ftwins" -eq 5 ] && echo met || echo missed)** ($ftwins of 5$([ -n "$ftloses" ] && echo "; not:$ftloses"))}"
g4=$(nm federated dp-greater dp-less)
: "${g4:=**$dp_goal** (mean BLEU: all $all_m, dp_greater $dpg_m, dp_less $dpl_m)}"

# Figures (gnuplot through tools/fedrun-plot).
figs=""
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
if [ -x "$PLOT" ] && command -v gnuplot >/dev/null 2>&1; then
	"$PLOT" bars --title "Table 2: test BLEU, centralized baselines" --ylabel BLEU -o "$out/fig-table2" "$out/table2.tsv"
	"$PLOT" bars --title "Table 4: test BLEU, federated server and fine-tuned clients" --ylabel BLEU -o "$out/fig-table4" "$out/table4.tsv"
	"$PLOT" bars --title "Table 5: test BLEU by number of rounds (same steps)" --ylabel BLEU -o "$out/fig-table5" "$out/table5.tsv"
	"$PLOT" bars --title "Table 6: test BLEU by what is pulled" --ylabel BLEU -o "$out/fig-table6" "$out/table6.tsv"
	curve --metric loss --split valid --title "Server validation loss per round (5 rounds)" \
		-o "$out/fig-curves" "data combination=$out/combined" "federated (all)=$out/federated" \
		"dp_greater=$out/dp-greater" "dp_less=$out/dp-less" "random=$out/random"
	curve --metric loss --split valid --client packaging \
		--title "Figure 3: packaging (smallest domain) validation loss per round" \
		-o "$out/fig3-rounds" "5 rounds=$out/federated" "10 rounds=$out/rounds10" "50 rounds=$out/rounds50"
	curve --metric loss --split valid --client packaging --x step \
		--xlabel "global step (each client's updates so far)" \
		--title "Figure 3 against steps: packaging validation loss" \
		-o "$out/fig3-steps" "5 rounds=$out/federated" "10 rounds=$out/rounds10" "50 rounds=$out/rounds50"
	figs=1
fi

{
	echo "# Passban et al. 2022 on the gettext corpora: results"
	echo
	if [ $quick = 1 ]; then
		echo "**This is a --quick run: 1000 training pairs a domain, 30 test sentences, the tiny"
		echo "preset, $steps steps. It checks that every step works; its numbers mean nothing.**"
		echo
	fi
	echo "Made by \`repro/passban2022/run.sh\` ($(date -u +%Y-%m-%d), fedrun $("${FEDRUN:-$top/fedrun}" --version 2>/dev/null | head -n 1 | awk '{ print $2 }'))."
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
	ta=$(done_ federated && traffic federated || true)
	for s in federated:all dp-greater:dp_greater dp-less:dp_less random:random; do
		done_ federated && done_ ${s%%:*} || continue
		tr=$(traffic ${s%%:*})
		printf '%s\t%s\t%s\n' "${s#*:}" "$tr" "$ta"
	done | awk -F'\t' '{
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
	if [ -n "$figs" ]; then
		echo "## Figures"
		echo
		echo "![Table 2](fig-table2.svg) ![Table 4](fig-table4.svg) ![Table 5](fig-table5.svg)"
		echo "![Table 6](fig-table6.svg) ![curves](fig-curves.svg) ![Figure 3](fig3-rounds.svg)"
		echo "![Figure 3 against steps](fig3-steps.svg)"
		echo
		echo "PNG files of the same names are next to the SVGs; \`.dat\` files hold the curves' numbers."
		echo
	fi
	echo "## Time"
	echo
	echo "Seconds per stage on this machine ($(nproc) cores; \`times.tsv\`):"
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
} >"$out/results.md"
echo "results.sh: wrote $out/results.md"
