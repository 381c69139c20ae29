#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# results.sh OUT: results.md, tables (TSV) and figures of a
# repro/tupitsa2024/run.sh output directory, from its run directories' metrics
# (the sections, tables and goals of the stages that ran; results.md names
# those that did not). Figures are drawn by fedrun-plot (gnuplot).
set -eu
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || {
	echo "usage: results.sh OUT" >&2
	exit 2
}
out=$(cd "$1" && pwd)
[ -e "$out/settings" ] || {
	echo "results.sh: $out/settings: missing (not a run.sh output directory)" >&2
	exit 1
}
seeds=$(sed -n 's/^seeds=//p' "$out/settings")
rounds=$(sed -n 's/^rounds=//p' "$out/settings")
quick=$(sed -n 's/^quick=//p' "$out/settings")
plot=$top/tools/fedrun-plot
[ -x "$plot" ] || plot="fedrun-plot"
if [ -x "$top/fedrun" ]; then fedrun=$top/fedrun; else fedrun=fedrun; fi
version=$("$fedrun" --version 2>/dev/null | head -n 1 || echo "fedrun")
nseeds=$(echo $seeds | wc -w)
cd "$out"
mkdir -p curves

# groups DIR: the cumulative client counts of DIR/s*/pipeline.json's
# data.groups (the only "clients": <number> keys of a meanest pipeline).
groups() {
	p=$(ls "$1"/s*/pipeline.json | head -n 1)
	grep -o '"clients": *[0-9][0-9]*' "$p" | sed 's/.*: *//' |
		awk '{ s += $1; printf "%s%d", (NR > 1 ? "," : ""), s } END { print "" }'
}

# summary DIR NAMES: seeds.awk's line for the runs under DIR (empty when
# DIR has no complete run); writes curves/<DIR with / as ->.csv. The
# groups are the pipelines' data.groups, or with NAMES "honest,attackers"
# the Byzantine setting's clients 0..4 and 5..54 (attack.clients).
# The tables ask for the same summary several times: each is computed once
# per results.sh call and kept in $cache.
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
summary() {
	[ -d "$1" ] || return 0
	k=$cache/$(echo "$1.$2" | tr / -)
	if [ ! -e "$k" ]; then
		set -- "$1" "$2" "$(ls "$1"/s*/.complete 2>/dev/null | sed 's/\.complete$/metrics.csv/')"
		case $2 in
		honest,attackers) b=5,55 ;;
		*) b=$(groups "$1") ;;
		esac
		# shellcheck disable=SC2086
		[ -z "$3" ] || awk -v bounds="$b" -v names="$2" \
			-v curve="curves/$(echo "$1" | tr / -).csv" -f "$here/seeds.awk" $3 >"$k"
		touch "$k"
	fi
	cat "$k"
}

field() { # LINE WORD: the value after WORD in a seeds.awk line
	echo "$1" | awk -v w="$2" '{ for (i = 1; i < NF; i++) if ($i == w) { print $(i + 1); exit } }'
}
fmt() { # LINE: "mean (sd)" of its error
	if [ -z "$1" ]; then echo "not run"; else
		echo "$1" | awk '{ printf "%.3g (%.2g)", $2, $3 }'
	fi
}
ratio() { # LINE IDEAL_LINE
	if [ -z "$1" ] || [ -z "$2" ]; then echo "-"; else
		awk -v a="$(field "$1" err)" -v b="$(field "$2" err)" 'BEGIN { printf "%.2f", a / b }'
	fi
}

# ---- tables ---------------------------------------------------------------
methods="meritfed fedavg ideal median trimmed_mean krum"
label() {
	case $1 in
	meritfed) echo "MeritFed" ;;
	fedavg) echo "FedAvg, all clients" ;;
	ideal) echo "ideal: FedAvg over the target's distribution" ;;
	median) echo "coordinate-wise median" ;;
	trimmed_mean) echo "trimmed mean (0.45)" ;;
	krum) echo "Krum (largest f)" ;;
	v*) echo "MeritFed, ${1#v} validation samples" ;;
	esac
}

# ran STAGE: whether OUT holds STAGE's runs (its directory: a stage that
# was not run has no section, table or goal)
ran() { [ -d "$1" ]; }
not_run=$(for st in meanest valid byzantine lowres; do ran $st || printf '%s ' $st; done)

me_ideal=$(summary meanest/ideal G)
ran meanest && {
	printf 'method\terror\tsd\tratio\tbest\tshare G/D2/D3\n'
	for m in $methods; do
		l=$(summary meanest/$m G,D2,D3)
		[ -n "$l" ] || continue
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$(field "$l" err)" \
			"$(echo "$l" | awk '{ print $3 }')" "$(ratio "$l" "$me_ideal")" \
			"$(field "$l" best)" "$(field "$l" share)"
	done
} >table-meanest.tsv

{ ran meanest || ran valid; } && {
	printf 'validation samples\terror\tsd\tratio\tbest\tshare G/D2/D3\n'
	for v in 1000 3000 10000; do
		if [ $v = 1000 ]; then d=meanest/meritfed; else d=valid/meritfed-v$v; fi
		l=$(summary $d G,D2,D3)
		[ -n "$l" ] || continue
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' $v "$(field "$l" err)" \
			"$(echo "$l" | awk '{ print $3 }')" "$(ratio "$l" "$me_ideal")" \
			"$(field "$l" best)" "$(field "$l" share)"
	done
} >table-valid.tsv

attacks="bitflip noise alie ipm"
bz_ideal=$(summary byzantine/ideal honest)
ran byzantine && {
	printf 'method'
	for a in $attacks; do printf '\t%s' $a; done
	printf '\n'
	for m in meritfed fedavg median trimmed_mean krum; do
		printf '%s' $m
		for a in $attacks; do
			l=$(summary byzantine/$a/$m honest,attackers)
			printf '\t%s' "$([ -n "$l" ] && field "$l" err || echo -)"
		done
		printf '\n'
	done
} >table-byzantine.tsv

# lowres_clients PIPELINE KEY: the string KEY of each entry of data.clients
# (the only "clients" array of a translation pipeline) that has it, in order.
lowres_clients() {
	awk -v k="$2" '/"clients": *\[/ { on = 1; next } on && /^ *\]/ { exit }
		on && $0 ~ "\"" k "\":" { sub(".*\"" k "\": *\"", ""); sub(/".*/, ""); print }' "$1"
}
# lowres_names PIPELINE: the clients' names.
lowres_names() { lowres_clients "$1" name; }

# pget PIPELINE KEY: the value of KEY (dotted: model.tokenizer.vocab_size)
# in a run's pipeline.json as fedrun writes it (two spaces an indent
# level; keys inside arrays are not reached); quotes removed.
pget() {
	awk -v want="$2" '{
		match($0, /^ */); l = RLENGTH / 2
		if ($0 ~ /^ *"[^"]*":/) {
			k = $0; sub(/^ *"/, "", k); sub(/".*/, "", k); key[l] = k
			p = ""; for (i = 1; i < l; i++) p = p key[i] "."
			if (p k == want) {
				v = $0; sub(/^ *"[^"]*": */, "", v); sub(/,$/, "", v); gsub(/^"|"$/, "", v)
				print v; exit
			}
		} else if ($0 ~ /^ *[{[]/) key[l] = "[]"
	}' "$1"
}
# lines FILE: its number of lines, or ? when it is not there
lines() { if [ -e "$1" ]; then wc -l <"$1" | tr -d ' '; else echo '?'; fi; }

# The lowres stage's runs: lowres/<method>/s<seed>; lr_seeds are the seeds
# with a run of any method, lr_first a run directory whose pipeline names
# the clients and settings (FedAvg's of the first seed, or any).
lr_seeds='' lr_first=''
if [ -d lowres ]; then
	lr_seeds=$(ls -d lowres/*/s*/ 2>/dev/null | sed 's|.*/s\([0-9]*\)/$|\1|' | sort -n -u | tr '\n' ' ' | sed 's/ $//')
	for d in lowres/fedavg/s*/ lowres/*/s*/; do
		[ -e "${d}pipeline.json" ] && lr_first=$d && break
	done
fi
lr_n=$(echo $lr_seeds | wc -w)
# the methods: the three of the goal, and the vocabulary control when it ran
lr_methods='alone fedavg meritfed'
[ ! -d lowres/alone-shared ] || lr_methods="$lr_methods alone-shared"
# lowres_test METHOD: "SEED BLEU CHRF" per run of METHOD that reached its
# final test (the run's end), seed by seed
lowres_test() {
	for s in $lr_seeds; do
		d=lowres/$1/s$s
		[ -e "$d/metrics.csv" ] || continue
		awk -F, -v s="$s" '$3 == "test" && $4 == "bleu" { b = $6 } $3 == "test" && $4 == "chrf" { c = $6 }
			END { if (b != "" && c != "") print s, b, c }' "$d/metrics.csv"
	done
}
# lowres_weights: MeritFed's weight per round and client, the mean over the
# seeds whose run has it: lines "ROUND CLIENT WEIGHT"
lowres_weights() {
	ls lowres/meritfed/s*/metrics.csv >/dev/null 2>&1 || return 0
	awk -F, '$4 == "meritfed.weight" { w[$1, $2] += $6; n[$1, $2]++ }
		END { for (k in w) { split(k, rc, SUBSEP); print rc[1], rc[2], w[k] / n[k] } }' \
		lowres/meritfed/s*/metrics.csv | sort -k1,1n -k2,2n
}
# meansd: "mean (sd)" of the numbers on stdin (sd: the sample standard
# deviation; "-" when there is none, "(-)" with one)
meansd() {
	awk -v f="$1" '{ x[++n] = $1; s += $1 }
		END {
			if (!n) { print "-"; exit }
			m = s / n; for (i = 1; i <= n; i++) q += (x[i] - m) ^ 2
			printf f " (%s)\n", m, (n > 1 ? sprintf(f, sqrt(q / (n - 1))) : "-")
		}'
}

# lowres_md: the low-resource translation section, from lowres/<method>/s<seed>
# (complete runs, and runs cut short, without a final test: their last
# evaluated round).
lowres_md() {
	be=$(for d in lowres/*/s*/; do pget "$d/pipeline.json" model.backend 2>/dev/null; done | sort -u | tr '\n' ' ' | sed 's/ $//')
	q=${lr_first}pipeline.json
	dd=$(pget "$q" data.dir)
	hl=$(lowres_names "$q" | tail -n +2 | tr '\n' ' ' | sed 's/ $//; s/ /, /g')
	ta=$(ls lowres/alone/s*/pipeline.json 2>/dev/null | head -n 1)
	echo "Moskvoretskii et al. 2024 (\`examples/lowres-is-*.json\`, corpus of"
	echo "\`data/gettext/build-multi.sh\` in \`$dd\`): English to Icelandic as the target client"
	echo "($(lines "$dd/is/train.src") training pairs; dev and test $(lines "$dd/is/dev.src") and $(lines "$dd/is/test.src")), helper clients English to"
	# (only the alone run there: its pipeline has no helpers to name)
	echo "${hl:-other languages (none in these runs: only the target alone ran)}, one transformer (preset $(pget "$q" model.preset)) with the target"
	echo "language's tag \`<2xx>\` on the source side. Backend of these runs: ${be:-unknown}$([ -e lowres/MACHINE ] && echo " on $(cat lowres/MACHINE)")."
	echo "*alone*: the Icelandic client alone (its own $([ -n "$ta" ] && pget "$ta" model.tokenizer.vocab_size || echo '?')-piece SentencePiece model, so its"
	echo "losses are per piece of another vocabulary and not comparable with the others);"
	echo "*FedAvg*: all clients weighted by size; *MeritFed*: target the Icelandic client,"
	echo "its validation split the Icelandic dev set; both with one SentencePiece model of $(pget "$q" model.tokenizer.vocab_size) pieces$([ -d lowres/alone-shared ] && echo ';' || echo '.')"
	[ ! -d lowres/alone-shared ] || {
		echo "*alone, shared vocabulary (control)*: the Icelandic client alone with that same model (FedAvg's"
		echo "spm.model), so that it differs from MeritFed only in the aggregation."
	}
	echo "$(pget "$q" rounds) rounds of $(pget "$q" clients.steps) steps (batches of $(pget "$q" clients.batch) tokens) a client; seeds $lr_seeds. Icelandic dev loss per evaluated round,"
	echo "test BLEU and chrF (sacreBLEU's, beam $(pget "$q" model.decode.beam)) after the last round, per run:"
	echo
	printf '| method | seed | rounds run |'
	rs=$(awk -F, '$3 == "valid" && $4 == "loss" && $1 > 0 { print $1 }' lowres/*/s*/metrics.csv | sort -n -u | tr '\n' ' ')
	for r in $rs; do printf ' loss r%s |' "$r"; done
	printf ' test BLEU | test chrF |\n|---|---:|---:|'
	for r in $rs; do printf -- '---:|'; done
	printf -- '---:|---:|\n'
	for m in $lr_methods; do
		l=$(lowres_label $m)
		for s in $lr_seeds; do
			c=lowres/$m/s$s/metrics.csv
			if [ ! -e "$c" ]; then
				# (the control's seeds that did not run are left out)
				[ $m = alone-shared ] || printf '| %s | %s | not run |\n' "$l" "$s"
				continue
			fi
			awk -F, -v l="$l" -v s="$s" -v rs="$rs" '
				BEGIN { last = 0 }
				$3 == "valid" && $4 == "loss" { loss[$1] = $6; if ($1 > last) last = $1 }
				$3 == "test" { done = 1 }
				$3 == "test" && $4 == "bleu" { bleu = sprintf("%.1f", $6) }
				$3 == "test" && $4 == "chrf" { chrf = sprintf("%.1f", $6) }
				END {
					printf "| %s | %s | %s |", l, s, last (done ? "" : " (cut short)")
					n = split(rs, r, " ")
					for (i = 1; i <= n; i++) printf " %s |", (r[i] in loss) ? sprintf("%.2f", loss[r[i]]) : "-"
					printf " %s | %s |\n", bleu == "" ? "-" : bleu, chrf == "" ? "-" : chrf
				}' "$c"
		done
	done
	if [ "$lr_n" -gt 1 ]; then
		echo
		echo "Test BLEU and chrF, mean (sample standard deviation) over the runs that ended:"
		echo
		echo "| mean over seeds | runs | test BLEU | test chrF |"
		echo "|---|---:|---:|---:|"
		for m in $lr_methods; do
			t=$(lowres_test $m)
			# (the control without an ended run is left out)
			[ $m != alone-shared ] || [ -n "$t" ] || continue
			printf '| %s | %s | %s | %s |\n' "$(lowres_label $m)" "$(printf '%s' "$t" | grep -c .)" \
				"$(printf '%s\n' "$t" | awk 'NF { print $2 }' | meansd %.2f)" \
				"$(printf '%s\n' "$t" | awk 'NF { print $3 }' | meansd %.2f)"
		done
	fi
	# (the target's dev set: the only client with a valid split)
	lowres_bpc "$dd/$(lowres_clients "$q" valid | head -n 1).$(pget "$q" data.tgt)" "$rs"
	w=$(lowres_weights)
	[ -n "$w" ] || return 0
	names=$(lowres_names "$(ls lowres/meritfed/s*/pipeline.json | head -n 1)" | tr '\n' ' ')
	echo
	if [ "$lr_n" -gt 1 ]; then
		echo "MeritFed's weight per client (language) by round, the mean over seeds:"
	else
		echo "MeritFed's weight per client (language) by round:"
	fi
	echo
	echo "$w" | awk -v names="$names" '
		{ w[$1, $2] = $3; if ($1 > last) last = $1; if ($2 + 1 > n) n = $2 + 1 }
		END {
			split(names, nm, " ")
			printf "| round |"; for (c = 0; c < n; c++) printf " %s |", nm[c + 1]; printf "\n|---|"
			for (c = 0; c < n; c++) printf "---:|"; printf "\n"
			for (r = 1; r <= last; r++) {
				if (r != 1 && r % 5 && r != last) continue
				printf "| %d |", r; for (c = 0; c < n; c++) printf " %.3f |", w[r, c]; printf "\n"
			}
		}'
}
lowres_label() {
	case $1 in
	alone) echo "Icelandic alone" ;;
	fedavg) echo "FedAvg, all" ;;
	meritfed) echo "MeritFed" ;;
	alone-shared) echo "Icelandic alone, shared vocabulary (control)" ;;
	esac
}
# lowres_bpc DEV_TARGETS ROUNDS: the table of the Icelandic dev set's
# negative log-likelihood in bits per character, nll x tokens / ln 2 /
# characters (the dev references' characters, newlines not counted; the
# tokens' <eos> counted in the nll), the mean over seeds per method and
# evaluated round. Unlike the loss per piece it does not depend on the
# vocabulary, so it compares the target alone with the others.
lowres_bpc() {
	bf=$1 brs=$2
	[ -e "$bf" ] || {
		echo
		echo "(No bits per character: the dev references $bf are not there.)"
		return 0
	}
	# code points: the bytes that do not continue a UTF-8 sequence (no
	# locale needed)
	ch=$(LC_ALL=C tr -d '\n\200-\277' <"$bf" | wc -c | tr -d ' ')
	[ "$ch" -gt 0 ] || {
		echo
		echo "(No bits per character: the dev references $bf are empty.)"
		return 0
	}
	echo
	echo "The Icelandic dev set's negative log-likelihood in bits per character (nll x tokens"
	echo "/ ln 2 / its $ch characters), which does not depend on the vocabulary, so that it"
	echo "compares all methods; the mean over the seeds that evaluated the round (runs: those"
	echo "that evaluated the last):"
	echo
	printf '| bits per character | runs |'
	for r in $brs; do printf ' r%s |' "$r"; done
	printf '\n|---|---:|'
	for r in $brs; do printf -- '---:|'; done
	printf '\n'
	for m in $lr_methods; do
		set --
		for s in $lr_seeds; do [ ! -e lowres/$m/s$s/metrics.csv ] || set -- "$@" lowres/$m/s$s/metrics.csv; done
		[ $# -gt 0 ] || continue
		awk -F, -v l="$(lowres_label $m)" -v rs="$brs" -v ch="$ch" '
			$2 == "" && $3 == "valid" && $4 == "nll" { nll[FILENAME, $1] = $6 }
			$2 == "" && $3 == "valid" && $4 == "tokens" { tok[FILENAME, $1] = $6 }
			END {
				for (k in nll) if (k in tok) { split(k, fr, SUBSEP); b[fr[2]] += nll[k] * tok[k] / log(2) / ch; n[fr[2]]++ }
				# runs: those that evaluated the last round
				k = split(rs, r, " ")
				printf "| %s | %d |", l, n[r[k]]
				for (i = 1; i <= k; i++) printf " %s |", (r[i] in n) ? sprintf("%.3f", b[r[i]] / n[r[i]]) : "-"
				printf "\n"
			}' "$@"
	done
}

# ---- results.md -----------------------------------------------------------
fig() { # "FILE..." ALT NAME: a figure's link when a run it plots exists
	for f in $1; do
		[ -e "$f" ] || continue
		printf '![%s](%s.svg) ' "$2" "$3"
		return 0
	done
}
row_me() { # METHOD-DIR KEY
	l=$(summary "$1" G,D2,D3)
	if [ -z "$l" ]; then
		printf '| %s | not run | | | |\n' "$(label "$2")"
	else
		printf '| %s | %s | %s | %s | %s |\n' "$(label "$2")" "$(fmt "$l")" "$(ratio "$l" "$me_ideal")" \
			"$(field "$l" best | awk '{ printf "%.5f", $1 }')" "$(field "$l" share)"
	fi
}

{
	echo "# Tupitsa et al. 2024 (MeritFed): results"
	echo
	echo "Made by \`repro/tupitsa2024/run.sh\` ($(date -u +%Y-%m-%d), $version)$([ "$quick" = 1 ] && echo ', **--quick**: 2 seeds, 10 rounds; the numbers mean little')."
	[ -z "$not_run" ] || echo "Stages not run (no section here): $(echo $not_run | sed 's/ /, /g')."
	if ran meanest || ran valid || ran byzantine; then
		echo "Seeds: $seeds (seed s with data.seed s + 4); $rounds rounds; every client in every round,"
		echo "one full-batch local step of SGD at lr 0.5, which lands each client on its sample mean."
		echo "*error*: $(printf '\302\240')||x - mu_target||^2 after the last round (meanest's \`err_group0\`),"
		echo "mean over the $nseeds seeds with the sample standard deviation in brackets; *ratio*: to the"
		echo "ideal's mean; *best*: the lowest error of any round (an oracle that knew when to stop),"
		echo "mean over seeds; *share*: MeritFed's weights summed per group in the last round."
	fi
	echo
	if ran meanest; then
		echo "## The 150-client problem"
		echo
		echo "As on the slides (\"Mean Estimation\"; \`examples/meanest-meritfed.json\`): d = 10;"
		echo "the target (client 0) and 4 more clients draw from D1 = N(0, I) (group G), 95 from"
		echo "D2 = N(0.1·1, I), 50 from D3 = N(e1, I); 1000 samples each, and the target 1000"
		echo "more for validation. Krum with f = 73 (the largest n > 2f + 2 allows)."
		echo
		echo "| method | error | ratio | best | share G/D2/D3 |"
		echo "|---|---:|---:|---:|---|"
		for m in $methods; do row_me meanest/$m $m; done
		echo
	fi
	if ran meanest || ran valid; then
		echo "## The target's validation sample"
		echo
		echo "MeritFed fits its weights to the target's validation loss; with more validation"
		echo "samples (the rest unchanged) its error falls (see \`mean-estimation-analysis.md\`):"
		echo
		echo "| method | error | ratio | best | share G/D2/D3 |"
		echo "|---|---:|---:|---:|---|"
		row_me meanest/meritfed v1000
		row_me valid/meritfed-v3000 v3000
		row_me valid/meritfed-v10000 v10000
		echo
	fi
	if ran byzantine; then
		echo "## Byzantine clients"
		echo
		echo "As on the slides (\"Byzantine-Robustness for Free\"; \`examples/byzantine-meritfed.json\`):"
		echo "55 clients of N(1·1, I), the target is client 0; clients 5 to 54 (50 of 55) know the"
		echo "distribution and attack with the attacks of fedrun-pipeline(5) at their defaults:"
		echo "bit flipping (-Δ), random noise (Δ + N(0, 1)), ALIE (mean - z·sd, z from n and f) and"
		echo "IPM (-0.1 × the honest mean). Krum with f = 26 (the largest that 55 clients allow,"
		echo "fewer than the 50 attackers: no Byzantine-robust aggregator is built for a"
		echo "majority of attackers). The ideal, FedAvg over the 5 honest clients without"
		echo "attackers: $(fmt "$bz_ideal"). Error, mean (sd) over seeds:"
		echo
		printf '| method |'
		for a in $attacks; do printf ' %s |' $a; done
		printf '\n|---|'
		for a in $attacks; do printf -- '---:|'; done
		printf '\n'
		for m in meritfed fedavg median trimmed_mean krum; do
			printf '| %s |' "$(label $m)"
			for a in $attacks; do printf ' %s |' "$(fmt "$(summary byzantine/$a/$m honest,attackers)")"; done
			printf '\n'
		done
		printf '| MeritFed, ratio to the ideal |'
		for a in $attacks; do printf ' %s |' "$(ratio "$(summary byzantine/$a/meritfed honest,attackers)" "$bz_ideal")"; done
		printf '\n| MeritFed, share honest/attackers |'
		for a in $attacks; do
			l=$(summary byzantine/$a/meritfed honest,attackers)
			printf ' %s |' "$([ -n "$l" ] && field "$l" share || echo -)"
		done
		printf '\n'
		echo
	fi
	if ran lowres; then
		echo "## Low-resource translation with helper languages"
		echo
		lowres_md
		echo
	fi
	echo "## Goals"
	echo
	l=$(summary meanest/meritfed G,D2,D3)
	if [ -n "$l" ] && [ -n "$me_ideal" ]; then
		r=$(ratio "$l" "$me_ideal")
		verdict=$(awk -v r="$r" 'BEGIN { print (r <= 1.25) ? "**met**" : "**missed**" }')
		echo "- MeritFed within 1.25x the ideal's error on the 150-client problem: $verdict"
		echo "  (ratio $r). The validation table above is the experiment that shows why: the"
		echo "  weights fit the noise of the target's validation sample, and the error falls with"
		echo "  its size (mean-estimation-analysis.md computes the exact minimiser: about 2x at"
		echo "  1000 samples is what the method gives on this problem)."
	elif ran meanest; then
		echo "- MeritFed within 1.25x the ideal's error: not measured (no complete MeritFed and ideal runs)."
	fi
	if ran lowres; then
		# the goal on the means over seeds (the seeds with all three runs
		# ended), and each seed's numbers
		{
			for m in alone fedavg meritfed; do lowres_test $m | sed "s/^/$m /"; done
		} | awk '{ c[$1, $2] = $4; if (!($2 in seen)) { seen[$2] = 1; order[++ns] = $2 } }
			END {
				printf "- Low-resource translation, MeritFed at least as good as the best of the target alone\n"
				printf "  and FedAvg on the target'"'"'s test chrF: "
				for (i = 1; i <= ns; i++) if (((s = order[i]) != "") && (("alone", s) in c) && (("fedavg", s) in c) && (("meritfed", s) in c)) {
					n++; a += c["alone", s]; f += c["fedavg", s]; m += c["meritfed", s]
					if (c["meritfed", s] >= c["alone", s] && c["meritfed", s] >= c["fedavg", s]) k++
					list = list sprintf("%s seed %s: MeritFed %.2f, alone %.2f, FedAvg %.2f", list == "" ? "" : ";", s, c["meritfed", s], c["alone", s], c["fedavg", s])
				}
				if (!n) { print "**not measured** (no seed has all three runs ended)."; exit }
				a /= n; f /= n; m /= n
				if (n == 1) printf "%s (MeritFed %.2f, alone %.2f, FedAvg %.2f).\n", (m >= a && m >= f) ? "**met**" : "**missed**", m, a, f
				else printf "%s on the mean over %d seeds (MeritFed %.2f, alone %.2f, FedAvg %.2f; met in %d of %d seeds:%s).\n", (m >= a && m >= f) ? "**met**" : "**missed**", n, m, a, f, k, n, list
			}'
	fi
	if ran byzantine; then
		echo "- Byzantine clients: MeritFed's error against the ideal's, per attack (ratio row"
		echo "  above), and the best robust aggregator's:"
		for a in $attacks; do
			l=$(summary byzantine/$a/meritfed honest,attackers)
			[ -n "$l" ] || { echo "  - $a: not run"; continue; }
			bestr=$(for m in median trimmed_mean krum; do
				x=$(summary byzantine/$a/$m honest,attackers)
				[ -z "$x" ] || echo "$(field "$x" err) $m"
			done | sort -g | head -n 1)
			echo "  - $a: MeritFed $(field "$l" err | awk '{ printf "%.3g", $1 }'), best robust aggregator ${bestr#* } $(echo "$bestr" | awk '{ printf "%.3g", $1 }')"
		done
	fi
	echo
	echo "## Figures"
	echo
	# only the figures whose runs exist (a stage run alone makes its own)
	fig curves/meanest-meritfed.csv "150 clients" fig-meanest
	fig curves/meanest-meritfed.csv shares fig-shares
	fig "curves/meanest-meritfed.csv curves/valid-meritfed-v3000.csv" validation fig-valid
	for a in $attacks; do
		fig "curves/byzantine-$a-meritfed.csv" "$a" "fig-byzantine-$a"
		fig "curves/byzantine-$a-meritfed.csv" "$a: shares" "fig-shares-$a"
	done
	fig "$(ls lowres/meritfed/s*/metrics.csv 2>/dev/null | head -n 1)" "lowres weights" fig-lowres-weights
	echo
	echo
	echo "Each curve is the mean over the seeds; \`curves/\` holds the numbers plotted (as"
	echo "metrics.csv files), PNG files of the same names are next to the SVGs."
	if [ -e times.tsv ]; then
		echo
		echo "## Time"
		echo
		echo '```'
		cat times.tsv
		echo '```'
	fi
} >results.md

# ---- figures --------------------------------------------------------------
curve() { # OUT TITLE [fedrun-plot options] LABEL=CSV...: skips absent runs
	o=$1 t=$2
	shift 2
	set -- "$o" "$t" "$@"
	args=''
	for a in "$@"; do
		case $a in
		*=curves/*) [ -e "${a#*=}" ] || continue ;;
		esac
		args="$args$a
"
	done
	printf '%s' "$args" | tail -n +3 | grep -q '=curves/' || return 0
	printf '%s' "$args" | tail -n +3 | {
		set --
		while IFS= read -r a; do set -- "$@" "$a"; done
		"$plot" curve -o "$o" --title "$t" "$@" >/dev/null
	}
}
curve fig-meanest "150 clients: error per round (mean over seeds)" --metric err_group0 --logy \
	--ylabel "||x - mu_target||^2" \
	MeritFed=curves/meanest-meritfed.csv "FedAvg, all"=curves/meanest-fedavg.csv \
	ideal=curves/meanest-ideal.csv median=curves/meanest-median.csv \
	"trimmed mean"=curves/meanest-trimmed_mean.csv Krum=curves/meanest-krum.csv
curve fig-valid "MeritFed against the target's validation samples" --metric err_group0 --logy \
	--ylabel "||x - mu_target||^2" \
	"1000 samples"=curves/meanest-meritfed.csv "3000 samples"=curves/valid-meritfed-v3000.csv \
	"10000 samples"=curves/valid-meritfed-v10000.csv ideal=curves/meanest-ideal.csv
# MeritFed's weight share per group and round: one file per group, its
# share_<group> rows as the metric "share".
shares() { # CSV OUT TITLE GROUP...
	c=$1 o=$2 t=$3
	shift 3
	[ -e "$c" ] || return 0
	for g in "$@"; do
		awk -F, -v g="share_$g" 'NR == 1 || $4 == g { if (NR > 1) $4 = "share"; print }' OFS=, "$c" \
			>"curves/share-$g.csv"
	done
	set -- $(for g in "$@"; do echo "$g=curves/share-$g.csv"; done)
	"$plot" curve -o "$o" --title "$t" --metric share --split none \
		--ylabel "MeritFed's weight (sum over the group)" --yrange 0:1 "$@" >/dev/null
	rm -f curves/share-*.csv
}
shares curves/meanest-meritfed.csv fig-shares "150 clients: MeritFed's weights per group (mean over seeds)" G D2 D3
for a in $attacks; do
	shares "curves/byzantine-$a-meritfed.csv" "fig-shares-$a" \
		"Byzantine ($a): MeritFed's weights (mean over seeds)" honest attackers
done
for a in $attacks; do
	curve "fig-byzantine-$a" "Byzantine ($a, 50 of 55 clients): error per round" --metric err_group0 --logy \
		--ylabel "||x - mu_target||^2" \
		MeritFed=curves/byzantine-$a-meritfed.csv "FedAvg, all"=curves/byzantine-$a-fedavg.csv \
		ideal=curves/byzantine-ideal.csv median=curves/byzantine-$a-median.csv \
		"trimmed mean"=curves/byzantine-$a-trimmed_mean.csv Krum=curves/byzantine-$a-krum.csv
done

# MeritFed's weight per language and round (lowres; the mean over seeds).
w=$(lowres_weights)
if [ -n "$w" ]; then
	set --
	for l in $(lowres_names "$(ls lowres/meritfed/s*/pipeline.json | head -n 1)"); do
		set -- "$@" "$l"
	done
	i=0
	for l in "$@"; do
		echo "$w" | awk -v c=$i 'BEGIN { print "round,client,split,metric,value,wall" }
			$2 == c { print $1 ",,,weight," $3 ",0" }' >"curves/lowres-weight-$l.csv"
		i=$((i + 1))
	done
	set -- $(for l in "$@"; do echo "$l=curves/lowres-weight-$l.csv"; done)
	"$plot" curve -o fig-lowres-weights --title "MeritFed's weights per language (target: is$([ "$lr_n" -gt 1 ] && echo ", mean over $lr_n seeds"))" \
		--metric weight --split none --ylabel "MeritFed's weight" --yrange 0:1 "$@" >/dev/null
fi
