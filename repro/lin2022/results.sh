#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes results.md, runs.tsv, baselines.tsv and figures (fig-*.{png,svg,dat})
# from the run directories that repro/lin2022/run.sh left in OUT: only the
# runs' metrics.csv and .complete, OUT/settings, OUT/times.tsv and, for the
# trivial baselines, the task data run.sh sampled into OUT/data (or, where
# that is gone, OUT/baselines.tsv as an earlier call wrote it).
#
# Usage: repro/lin2022/results.sh OUT [DEST]
#   DEST: where to write (default OUT); check-results.sh writes into a
#   temporary directory and compares. LIN2022_FIGURES=0 draws no figures
#   (results.md is the same either way).
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
[ -e "$out/settings" ] || die "$out/settings: missing (run run.sh)"
quick=0 rounds=8 main=mini seeds=1 K=10 frac=1.0 epochs=1 batch=16 lr=0.0001 max_len=128
prox_mu=0.01 server_lr=0.001 method=fedopt n_train_genre=0 n_train_pos=0 n_valid=0 n_test=0
prounds=2 psteps=0 vocab_size=8192 pretrained='' encoders='' fedrun_version='' machine=unknown
# shellcheck disable=SC1091
. "$out/settings"
margin=0.02 # the equivalence margin of the "comparable" and "close" findings

# ---- one line a complete run: runs.tsv ------------------------------------------
# name task part method model variant seed, the final test accuracy,
# macro_f1 (genre), f1 (pos) and loss, the mean bytes pushed and pulled a
# round, the primary validation metric's mean absolute change from round to
# round over the last half of the rounds, and the last round
runs=$dest/runs.tsv
{
	printf 'run\ttask\tpartition\tmethod\tmodel\tvariant\tseed\taccuracy\tmacro_f1\tf1\tloss\tbytes_push\tbytes_pull\tvalid_change\tlast_round\n'
	for f in "$out"/*/.complete; do
		[ -e "$f" ] || continue
		d=$(dirname "$f")
		n=$(basename "$d")
		case $n in genre-* | pos-*) ;; *) continue ;; esac
		[ -e "$d/metrics.csv" ] || die "$d: complete, but no metrics.csv"
		awk -F, -v name="$n" 'BEGIN { OFS = "\t"
			k = split(name, w, "-"); task = w[1]; part = w[2]; meth = w[3]; model = w[4]
			seed = substr(w[k], 2); var = "none"
			if (k > 5) { var = w[5]; for (i = 6; i < k; i++) var = var "-" w[i] }
			prim = (task == "pos") ? "f1" : "accuracy" }
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{
			r = $(c["round"]) + 0
			if (r > last) last = r
			if (r >= 1) { bp[r] = $(c["bytes_push"]); bl[r] = $(c["bytes_pull"]) }
			if ($(c["client"]) != "" || $(c["tensor"]) != "" || $(c["model"]) != "") next
			if ($(c["split"]) == "test") t[$(c["metric"])] = $(c["value"])
			if ($(c["split"]) == "valid" && $(c["metric"]) == prim) v[r] = $(c["value"]) + 0
		}
		END {
			for (r = 1; r <= last; r++) if (r in bp) { sp += bp[r]; sl += bl[r]; nb++ }
			# the last half of the rounds: changes into rounds > last/2
			for (r = int(last / 2) + 1; r <= last; r++)
				if ((r in v) && ((r - 1) in v)) { d = v[r] - v[r - 1]; ch += (d < 0 ? -d : d); nc++ }
			m["accuracy"]; m["macro_f1"]; m["f1"]; m["loss"]
			for (x in m) if (!(x in t)) t[x] = "-"
			print name, task, part, meth, model, var, seed, t["accuracy"], t["macro_f1"], t["f1"], t["loss"],
				(nb ? sprintf("%.0f", sp / nb) : "-"), (nb ? sprintf("%.0f", sl / nb) : "-"),
				(nc ? sprintf("%.6f", ch / nc) : "-"), last
		}' "$d/metrics.csv"
	done
} >"$runs.new"
mv "$runs.new" "$runs"

# ---- the trivial baselines, from the data ------------------------------------------
# genre: the training set's most frequent genre for every test passage;
# pos: each word's most frequent tag in the training set (lowercased, as the
# tokenizer reads it), the overall most frequent tag for an unseen word.
# Accuracy and macro-F1 (the mean over the labels in the gold labels or the
# predictions of 2TP / (2TP + FP + FN), as the plugin's metrics).
base=$dest/baselines.tsv
if [ -e "$out/data/genre/train.tsv" ] && [ -e "$out/data/pos/test.tsv" ]; then
	{
		printf 'task\tbaseline\taccuracy\tmacro_f1\n'
		awk -F'\t' 'NR == FNR { n[$2]++; if (n[$2] > best || (n[$2] == best && $2 < maj)) { best = n[$2]; maj = $2 }; next }
			{ tot++; g[$2]++; if ($2 == maj) tp++ }
			END {
				fp = tot - tp; fn = 0
				for (l in g) { k++; if (l == maj) f += 2 * tp / (2 * tp + fp) }
				if (!(maj in g)) { k++ }
				printf "genre\tmajority class (%s)\t%.6f\t%.6f\n", maj, tp / tot, f / k
			}' "$out/data/genre/train.tsv" "$out/data/genre/test.tsv"
		awk -F'\t' 'NR == FNR { nw = split(tolower($1), w, / +/); split($2, t, / +/)
				for (i = 1; i <= nw; i++) { c[w[i], t[i]]++; tc[t[i]]++; if (!(w[i] in seen)) { seen[w[i]] = 1 }
					if (c[w[i], t[i]] > bc[w[i]] || (c[w[i], t[i]] == bc[w[i]] && t[i] < bt[w[i]])) { bc[w[i]] = c[w[i], t[i]]; bt[w[i]] = t[i] } }
				next }
			FNR == 1 { for (x in tc) if (tc[x] > top || (tc[x] == top && x < topt)) { top = tc[x]; topt = x } }
			{ nw = split(tolower($1), w, / +/); split($2, t, / +/)
				for (i = 1; i <= nw; i++) {
					p = (w[i] in bt) ? bt[w[i]] : topt; tot++; lab[t[i]] = 1; lab[p] = 1
					if (p == t[i]) { ok++; tp[p]++ } else { fp[p]++; fn[t[i]]++ }
				} }
			END {
				for (l in lab) { k++; f += 2 * tp[l] / (2 * tp[l] + fp[l] + fn[l]) }
				printf "pos\tmost frequent tag of the word (unseen: %s)\t%.6f\t%.6f\n", topt, ok / tot, f / k
			}' "$out/data/pos/train.tsv" "$out/data/pos/test.tsv"
	} >"$base.new"
	mv "$base.new" "$base"
elif [ -e "$out/baselines.tsv" ]; then
	echo "results.sh: $out/data: not there; the baselines of $out/baselines.tsv" >&2
	[ "$out" = "$dest" ] || cp "$out/baselines.tsv" "$base"
else
	die "$out/data: no task data (run.sh samples it there) and no baselines.tsv"
fi

# ---- statistics ---------------------------------------------------------------------
# vals KEY COLUMN: the COLUMN of the runs KEY-sSEED, for the settings' seeds
vals() {
	awk -F'\t' -v key="$1" -v col="$2" -v seeds=" $seeds " 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ k = $1; sub(/-s[0-9]+$/, "", k) }
		k == key && index(seeds, " " $(c["seed"]) " ") && $(c[col]) != "-" { print $(c[col]) }' "$runs"
}
# stat: "mean ± sd [min, max]" of one number a line ("-" for none; the sd
# is the sample's, "-" for one value)
stat() {
	awk -v fmt="${1:-%.3f}" '{ x[++n] = $1 + 0; s += $1 }
	END {
		if (n == 0) { print "not run"; exit }
		m = s / n; lo = x[1]; hi = x[1]
		for (i = 1; i <= n; i++) { v += (x[i] - m) ^ 2; if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
		sd = (n > 1) ? sprintf(fmt, sqrt(v / (n - 1))) : "-"
		printf fmt " ± %s [" fmt ", " fmt "]\n", m, sd, lo, hi
	}'
}
count() { wc -l | tr -d ' '; }
# pdiff KEY_A KEY_B COLUMN: per seed with both runs, A − B; prints
# "mean lo hi n" (lo, hi: the 95% t interval over the seeds' differences;
# "-" with one seed) or nothing
pdiff() {
	awk -F'\t' -v a="$1" -v b="$2" -v col="$3" -v seeds=" $seeds " 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ k = $1; sub(/-s[0-9]+$/, "", k); s = $(c["seed"]) }
		!index(seeds, " " s " ") || $(c[col]) == "-" { next }
		k == a { va[s] = $(c[col]) + 0 } k == b { vb[s] = $(c[col]) + 0 }
		END { for (s in va) if (s in vb) printf "%.17g\n", va[s] - vb[s] }' "$runs" | t_interval
}
# verdict KIND "mean lo hi n": KIND "higher" (the finding says A > B),
# "lower" (A < B) or "close" (|A − B| within the margin)
verdict() {
	set -- "$1" $2
	[ $# -eq 5 ] || { echo "**not measured**"; return 0; }
	awk -v kind="$1" -v m="$2" -v lo="$3" -v hi="$4" -v n="$5" -v mg="$margin" 'BEGIN {
		if (lo == "-") { printf "**inconclusive (one seed)** (difference %+.3f)\n", m; exit }
		iv = sprintf("%+.3f, 95%% interval over %d seeds [%+.3f, %+.3f]", m, n, lo, hi)
		if (kind == "close") {
			if (lo >= -mg && hi <= mg) w = "reproduced"
			else if (hi < -mg || lo > mg) w = "contradicted"
			else w = "inconclusive (interval crosses the margin ±" mg ")"
		} else {
			if (lo > 0) w = (kind == "higher") ? "reproduced" : "contradicted"
			else if (hi < 0) w = (kind == "lower") ? "reproduced" : "contradicted"
			else w = "inconclusive (interval includes 0)"
		}
		printf "**%s** (difference %s)\n", w, iv
	}'
}
# finding TEXT KIND KEY_A KEY_B COLUMN: a verdict line
finding() {
	echo "- $1: $(verdict "$2" "$(pdiff "$3" "$4" "$5")")"
}
has() { [ -n "$(vals "$1" seed)" ]; }
prim_of() { case $1 in genre) echo accuracy ;; pos) echo f1 ;; esac; }
f1_of() { case $1 in genre) echo macro_f1 ;; pos) echo f1 ;; esac; }
part_of() { case $1 in genre) echo dir1 ;; pos) echo qty1 ;; esac; }
part_label() {
	case $1 in
	iid) echo "uniform (iid)" ;;
	dir*) echo "label skew, Dirichlet α ${1#dir}" ;;
	qty*) echo "quantity skew, Dirichlet α ${1#qty}" ;;
	esac
}
meth_label() {
	case $1 in
	fedavg) echo FedAvg ;; fedprox) echo "FedProx (μ $prox_mu)" ;;
	fedopt) echo "FedOpt (server Adam, lr $server_lr)" ;; fednova) echo FedNova ;;
	esac
}
model_label() {
	case $1 in
	hf) echo "the --pretrained model" ;; scratch) echo "random weights ($main's architecture)" ;;
	*) echo "$1, pretrained here" ;;
	esac
}
var_label() {
	case $1 in
	none) echo "none (all trains)" ;; freeze-*) echo "embeddings + ${1#freeze-} layers frozen" ;;
	lora8) echo "LoRA r 8 on query, value" ;;
	esac
}
# row LABEL KEY TASK: a table row of the test metrics of KEY's runs
row() {
	printf '| %s | %s | %s | %s |\n' "$1" "$(vals "$2" seed | count)" \
		"$(vals "$2" accuracy | stat)" "$(vals "$2" "$(f1_of "$3")" | stat)"
}
thead() {
	echo "| $1 | seeds | test accuracy | test $(case $2 in genre) echo macro-F1 ;; pos) echo F1 ;; esac) |"
	echo "|---|---:|---:|---:|"
}
key() { # TASK PART METHOD MODEL [VARIANT]
	k=$1-$2-$3-$4
	[ -z "${5:-}" ] || [ "$5" = none ] || k=$k-$5
	echo "$k"
}
ran_q1=$(has "$(key genre dir1 fedavg "$main")" || has "$(key pos qty1 fedavg "$main")" && echo 1 || :)
ran_q2=$(has "$(key genre iid "$method" "$main")" || has "$(key pos iid "$method" "$main")" && echo 1 || :)
L=$(awk -F'\t' '$6 ~ /^freeze-/ { sub(/^freeze-/, "", $6); if ($6 + 0 > l) l = $6 + 0 } END { print l + 0 }' "$runs")
q3_vars="freeze-$((L / 2)) freeze-$L lora8"
ran_q3=$(has "$(key genre dir1 "$method" "$main" lora8)" && echo 1 || :)
ran_q4=$(has "$(key genre dir1 "$method" tiny)" && echo 1 || :)
ran_sc=$(has "$(key genre dir1 "$method" scratch)" || has "$(key pos qty1 "$method" scratch)" && echo 1 || :)
not_run=$([ -n "$ran_q1" ] || echo q1; [ -n "$ran_q2" ] || echo q2; [ -n "$ran_q3" ] || echo q3
	[ -n "$ran_q4" ] || echo q4; [ -n "$ran_sc" ] || echo scratch)
first_seed=$(echo "$seeds" | awk '{ print $1 }')
# shellcheck disable=SC2034 # read through eval
genre_parts='dir0.1 dir1 dir10 iid qty1'
# shellcheck disable=SC2034 # read through eval
pos_parts='iid qty0.1 qty1 qty10'

# ---- figures -------------------------------------------------------------------------
figs=''
# curve OUTNAME TITLE YLABEL METRIC LABEL=KEY...: seed first_seed's runs
curve() {
	o=$1 ti=$2 yl=$3 me=$4
	shift 4
	for a in "$@"; do
		shift
		r=$out/${a#*=}-s$first_seed
		[ -e "$r/.complete" ] && set -- "$@" "${a%%=*}=$r"
	done
	[ $# -gt 0 ] || return 0
	figs="$figs $o"
	[ "${LIN2022_FIGURES:-1}" != 0 ] && [ -x "$PLOT" ] && command -v gnuplot >/dev/null 2>&1 || return 0
	"$PLOT" curve --metric "$me" --split valid --ylabel "$yl" --title "$ti" -o "$dest/$o" "$@" >/dev/null
}
[ "${LIN2022_FIGURES:-1}" = 0 ] || rm -f "$dest"/fig-*.svg "$dest"/fig-*.png "$dest"/fig-*.dat
for task in genre pos; do
	p=$(part_of $task)
	set --
	for m in fedavg fedprox fedopt fednova; do set -- "$@" "$(meth_label $m)=$(key $task "$p" $m "$main")"; done
	curve fig-q1-$task "Q1: FL methods, $task, $(part_label "$p"), seed $first_seed" \
		"validation $(prim_of $task)" "$(prim_of $task)" "$@"
	set --
	# shellcheck disable=SC2086
	for q in $(eval echo \$${task}_parts); do set -- "$@" "$(part_label "$q")=$(key $task "$q" "$method" "$main")"; done
	curve fig-q2-$task "Q2: partitions, $task, $(meth_label "$method"), seed $first_seed" \
		"validation $(prim_of $task)" "$(prim_of $task)" "$@"
done

# ---- results.md ----------------------------------------------------------------------
{
	echo "# Lin, He et al. 2022 (FedNLP) on the Brown corpus: results"
	echo
	if [ "$quick" = 1 ]; then
		echo "**This is a --quick run: $n_train_genre training examples a task, encoders pretrained"
		echo "for $psteps steps, $K clients, $rounds rounds. It checks that every stage works; its"
		echo "numbers mean nothing.**"
		echo
	fi
	echo "Made by \`repro/lin2022/run.sh\` (fedrun ${fedrun_version:-unknown}) on $machine."
	if [ -n "$pretrained" ]; then
		echo "Encoder: \`--pretrained\` $(basename "$pretrained") (no pretrain stage, no Q4)."
	else
		echo "Encoders: BERT tiny (2 layers, 128 wide) and mini (4 layers, 256 wide), pretrained by"
		echo "MLM on the Brown and gettext English text ($prounds epochs$([ "$quick" = 0 ] || echo ", $psteps steps"), vocabulary $vocab_size)$([ -z "$encoders" ] || echo ", from --encoders")."
	fi
	# which encoder weights each seed's runs started from (collect.sh)
	[ ! -e "$out/encoders.tsv" ] || awk -F'\t' 'NR > 1 { if (!($1 in g)) o[++n] = $1
		g[$1] = g[$1] (g[$1] == "" ? "" : ", ") $2 " " substr($3, 1, 12) }
		END { printf "Encoder weights (SHA-256 of model.safetensors, `encoders.tsv`):"
		      for (i = 1; i <= n; i++) printf " seed(s) %s: %s%s", o[i], g[o[i]], i < n ? ";" : ".\n" }' "$out/encoders.tsv"
	echo "Fine-tuning: $K clients, a fraction $frac of them a round, $rounds rounds, $epochs local epoch(s),"
	echo "batch $batch, AdamW lr $lr (weight decay 0.01), max_len $max_len; training samples of"
	echo "$n_train_genre (genre) and $n_train_pos (pos) examples, $n_valid validation and $n_test test"
	ran_seeds=$(awk -F'\t' 'NR > 1 { print $7 }' "$runs" | sort -n -u | tr '\n' ' ' | sed 's/ $//')
	seeds_text=$seeds
	[ "$ran_seeds" = "$seeds" ] || seeds_text="$seeds planned, runs complete for seed(s) ${ran_seeds:-none}"
	echo "examples a task. Seeds: $seeds_text (the pipeline seed and the partition seed: runs of one"
	echo "seed share their partition and initialisation, and differences are paired by seed)."
	echo "Cells: the final model's test metric, mean ± sample sd [min, max] over the seeds."
	echo "genre: accuracy and macro-F1 over the 15 genres; pos: token accuracy and macro-F1 over"
	echo "the universal tags (the plugin scores the first wordpiece of every word within max_len)."
	[ -z "$not_run" ] || echo "Stages not run (no section here): $(echo $not_run | sed 's/ /, /g')."
	echo
	echo "## Trivial baselines"
	echo
	echo "From the sampled training and test files (\`baselines.tsv\`); they score every test"
	echo "word, the models only the words whose first wordpiece is within max_len (all but a few)."
	echo
	echo "| task | baseline | test accuracy | test macro-F1 |"
	echo "|---|---|---:|---:|"
	awk -F'\t' 'NR > 1 { printf "| %s | %s | %.3f | %.3f |\n", $1, $2, $3, $4 }' "$base"
	echo
	if [ -n "$ran_q1" ]; then
		echo "## Q1: FL methods"
		echo
		echo "From $(model_label "$main"); genre with $(part_label dir1), pos with $(part_label qty1)."
		echo "FedProx: μ $prox_mu (FedNLP's and Li et al.'s choice among {0.001, 0.01, 0.1, 1})."
		echo "FedOpt: server Adam, lr $server_lr, β₁ 0.9, β₂ 0.99, τ 1e-3. FedNova: the SGD normaliser"
		echo "τₖ (the clients' steps; their optimizer is AdamW, see fedrun-aggregators(7))."
		for task in genre pos; do
			echo
			thead "method ($task)" $task
			for m in fedavg fedprox fedopt fednova; do
				row "$(meth_label $m)" "$(key $task "$(part_of $task)" $m "$main")" $task
			done
		done
		echo
	fi
	if [ -n "$ran_q2" ]; then
		echo "## Q2: partitions"
		echo
		echo "$(meth_label "$method") (as FedNLP's Figure 5), from $(model_label "$main"). Label skew"
		echo "needs one label an example: the tagging task has only uniform and quantity skew (the"
		echo "plugin refuses dirichlet with task tag). Stability: the seeds' spread of the test"
		echo "metric (sd), and the validation metric's mean absolute change from one round to the"
		echo "next over the last half of the rounds (mean over seeds)."
		for task in genre pos; do
			echo
			echo "| partition ($task) | seeds | test accuracy | test $(case $task in genre) echo macro-F1 ;; pos) echo F1 ;; esac) | round-to-round change of valid $(prim_of $task) |"
			echo "|---|---:|---:|---:|---:|"
			for q in $(eval echo \$${task}_parts); do
				k=$(key $task "$q" "$method" "$main")
				printf '| %s | %s | %s | %s | %s |\n' "$(part_label "$q")" "$(vals "$k" seed | count)" \
					"$(vals "$k" accuracy | stat)" "$(vals "$k" "$(f1_of $task)" | stat)" \
					"$(vals "$k" valid_change | stat %.4f)"
			done
		done
		echo
	fi
	if [ -n "$ran_q3" ]; then
		echo "## Q3: freezing and LoRA"
		echo
		echo "genre, $(part_label dir1), $(meth_label "$method"), from $(model_label "$main"). Bytes: what"
		echo "the clients pushed to the server a round (\`bytes_pull\` is what the server sent them:"
		echo "the same trainable tensors), mean over rounds and seeds; only the tensors that train travel."
		echo
		echo "| frozen | seeds | test accuracy | test macro-F1 | bytes pushed a round | of none |"
		echo "|---|---:|---:|---:|---:|---:|"
		b0=$(vals "$(key genre dir1 "$method" "$main")" bytes_pull | awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n }')
		for v in none $q3_vars; do
			k=$(key genre dir1 "$method" "$main" "$v")
			b=$(vals "$k" bytes_pull | awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n }')
			printf '| %s | %s | %s | %s | %s | %s |\n' "$(var_label "$v")" "$(vals "$k" seed | count)" \
				"$(vals "$k" accuracy | stat)" "$(vals "$k" macro_f1 | stat)" "${b:-not run}" \
				"$(awk -v b="$b" -v z="$b0" 'BEGIN { if (b != "" && z > 0) printf "%.3f", b / z; else print "-" }')"
		done
		echo
	fi
	if [ -n "$ran_q4" ]; then
		echo "## Q4: encoder size"
		echo
		echo "$(meth_label "$method"), each task's partition of Q1: tiny (FedNLP's compact DistilBERT's"
		echo "role) against mini (BERT-base's role)."
		for task in genre pos; do
			echo
			thead "encoder ($task)" $task
			for z in tiny mini; do row "$z" "$(key $task "$(part_of $task)" "$method" $z)" $task; done
		done
		echo
	fi
	if [ -n "$ran_sc" ]; then
		echo "## Pretrained against random weights"
		echo
		echo "$(meth_label "$method"), each task's partition of Q1, the same steps: $(model_label "$main")"
		echo "against the same architecture and vocabulary from random weights (the run's seed)."
		for task in genre pos; do
			echo
			thead "initialisation ($task)" $task
			for z in "$main" scratch; do row "$(model_label $z)" "$(key $task "$(part_of $task)" "$method" $z)" $task; done
		done
		echo
	fi
	echo "## Findings"
	echo
	echo "Computed from the paired differences over seeds (A − B of the runs with the same seed)"
	echo "of the final test metric (genre: accuracy; pos: F1), with a 95% t interval over the seeds"
	echo "(not over test examples: the metrics hold no per-example predictions). A directional"
	echo "finding is **reproduced** when the interval lies on its side of 0, **contradicted** when"
	echo "on the other, inconclusive when it includes 0; \"comparable\" and \"close\" findings are"
	echo "reproduced when the interval lies within ±$margin, contradicted when wholly outside."
	echo
	for task in genre pos; do
		p=$(part_of $task) pm=$(prim_of $task)
		if [ -n "$ran_q1" ]; then
			finding "Q1 $task: FedOpt ahead of FedAvg" higher "$(key $task "$p" fedopt "$main")" "$(key $task "$p" fedavg "$main")" "$pm"
			finding "Q1 $task: FedOpt ahead of FedProx" higher "$(key $task "$p" fedopt "$main")" "$(key $task "$p" fedprox "$main")" "$pm"
			finding "Q1 $task: FedProx comparable to FedAvg" close "$(key $task "$p" fedprox "$main")" "$(key $task "$p" fedavg "$main")" "$pm"
		fi
	done
	if [ -n "$ran_q2" ]; then
		for a in 0.1 1 10; do
			finding "Q2 genre: label skew α $a harder than uniform" lower "$(key genre dir$a "$method" "$main")" "$(key genre iid "$method" "$main")" accuracy
		done
		finding "Q2 genre: α 0.1 harder than α 10" lower "$(key genre dir0.1 "$method" "$main")" "$(key genre dir10 "$method" "$main")" accuracy
		finding "Q2 genre: α 0.1 less stable than uniform (round-to-round change of valid accuracy)" higher \
			"$(key genre dir0.1 "$method" "$main")" "$(key genre iid "$method" "$main")" valid_change
		finding "Q2 genre: quantity skew (α 1) less challenging than label skew α 0.1" higher \
			"$(key genre qty1 "$method" "$main")" "$(key genre dir0.1 "$method" "$main")" accuracy
		finding "Q2 genre: quantity skew (α 1) close to uniform" close "$(key genre qty1 "$method" "$main")" "$(key genre iid "$method" "$main")" accuracy
		for a in 0.1 1 10; do
			finding "Q2 pos: quantity skew α $a close to uniform" close "$(key pos qty$a "$method" "$main")" "$(key pos iid "$method" "$main")" f1
		done
	fi
	if [ -n "$ran_q3" ]; then
		for v in $q3_vars; do
			finding "Q3 genre: $(var_label "$v") costs accuracy against none" lower \
				"$(key genre dir1 "$method" "$main" "$v")" "$(key genre dir1 "$method" "$main")" accuracy
		done
	fi
	for task in genre pos; do
		p=$(part_of $task) pm=$(prim_of $task)
		[ -z "$ran_q4" ] || finding "Q4 $task: tiny close to mini" close "$(key $task "$p" "$method" tiny)" "$(key $task "$p" "$method" mini)" "$pm"
		[ -z "$ran_sc" ] || finding "goal, $task: pretrained beats random weights at the same steps" higher \
			"$(key $task "$p" "$method" "$main")" "$(key $task "$p" "$method" scratch)" "$pm"
	done
	echo
	if [ -n "$figs" ]; then
		echo "## Figures"
		echo
		echo "Validation metric per round, seed $first_seed (drawn by tools/fedrun-plot where gnuplot"
		echo "is installed; PNG files of the same names, \`.dat\` files with the numbers)."
		echo
		for f in $figs; do echo "![$f]($f.svg)"; done
		echo
	fi
	times_section "$out/times.tsv"
} >"$dest/results.md"
echo "results.sh: wrote $dest/results.md"
