# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh disable=SC2154 # $prog and $top: set by the sourcing script
# repro/common.sh: what every repro/<paper>/run.sh shares; sourced (POSIX
# sh) after it sets $prog (its name in messages) and $top (the source tree).

die() {
	echo "$prog: $*" >&2
	exit 1
}

# results_arg DEFAULT "$@": check-results.sh's one argument, a results.md
# (DEFAULT when there is none): sets md to it, dir to its directory and tmp
# to a temporary directory, removed on exit; dies when md is missing.
results_arg() {
	_def=$1
	shift
	[ $# -le 1 ] || { echo "usage: $prog [RESULTS.md]" >&2; exit 2; }
	md=${1:-$_def}
	[ -e "$md" ] || die "$md: missing"
	dir=$(cd "$(dirname "$md")" && pwd)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
}

# same_files DIR NEW FILE...: every FILE (a path in DIR) is the same in NEW,
# where results.sh recomputed DIR's results (check-results.sh's test);
# on the first that differs (the diff shown) or that NEW lacks, says so
# and fails.
same_files() {
	_d=$1 _n=$2
	shift 2
	for _f; do
		if [ ! -e "$_n/$_f" ]; then
			echo "$prog: $_d/$_f: results.sh $_d gives no such file" >&2
			return 1
		fi
		if ! diff -u "$_d/$_f" "$_n/$_f"; then
			echo "$prog: $_d/$_f differs from what results.sh $_d gives" >&2
			return 1
		fi
	done
}

# parse_args SPEC "$@": a run.sh's command line. SPEC's words are
# --OPTION=VAR (the option takes a value, into $VAR) and --OPTION:VAR (a
# flag: VAR=1); -h or --help prints the script's opening comment (to
# "set -eu", without the licence and shellcheck lines). Any other
# argument goes to the script's own extra_arg ARG [NEXT ...] where it
# defines one, which returns 0 when it took ARG, 2 when it took ARG and
# the next argument, 1 when it does not know ARG; an argument nobody takes,
# or an option without its value, dies.
parse_args() {
	_spec=$1
	shift
	while [ $# -gt 0 ]; do
		_var='' _flag=''
		for _w in $_spec; do
			case $_w in
			"$1="*) _var=${_w#*=} ;;
			"$1:"*) _flag=${_w#*:} ;;
			esac
		done
		if [ -n "$_var" ]; then
			[ $# -ge 2 ] || die "$1 needs a value"
			eval "$_var=\$2"
			shift 2
			continue
		fi
		if [ -n "$_flag" ]; then
			eval "$_flag=1"
		else
			case $1 in
			-h | --help)
				sed -n '2,/^set -eu$/p' "$0" |
					sed -e '$d' -e '/SPDX-License-Identifier\|^# shellcheck /d' -e 's/^# \{0,1\}//'
				exit 0
				;;
			esac
			_rc=1
			if command -v extra_arg >/dev/null 2>&1; then
				_rc=0
				extra_arg "$@" || _rc=$?
			fi
			case $_rc in
			0) ;;
			2) shift ;;
			*) die "unknown argument $1 (see --help)" ;;
			esac
		fi
		shift
	done
}

# want STAGE: whether the comma-separated $only names STAGE.
want() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }

# check_only STAGES: every stage $only names is one of STAGES (words).
check_only() {
	for _s in $(echo "$only" | tr ',' ' '); do
		case " $1 " in *" $_s "*) ;; *) die "--only: unknown stage $_s (stages: $1)" ;; esac
	done
}

# times_section TIMES: results.md's "Time" section from a run.sh's
# times.tsv (run and seconds, a line each time a run ran; the last counts).
times_section() {
	echo "## Time"
	echo
	echo "Seconds per run (\`times.tsv\`; the last time of each run):"
	echo
	echo '```'
	awk -F'\t' 'NR > 1 && $1 != "total" { if (!($1 in t)) o[++n] = $1; t[$1] = $2 }
	END { print "run\tseconds"; for (i = 1; i <= n; i++) { print o[i] "\t" t[o[i]]; s += t[o[i]] }
	      print "all runs\t" s }' "$1"
	echo '```'
}

# need_positive OPTION VALUE: VALUE must be a positive integer.
need_positive() {
	case $2 in '' | *[!0-9]* | 0) die "$1 needs a positive number" ;; esac
	return 0
}

# find_fedrun: sets FEDRUN to $FEDRUN, else the build tree's fedrun (and
# FEDRUN_PLUGIN_PATH to its plugins), else the installed one; dies when
# there is none.
find_fedrun() {
	if [ -z "${FEDRUN:-}" ]; then
		if [ -x "$top/fedrun" ]; then
			FEDRUN=$top/fedrun
			: "${FEDRUN_PLUGIN_PATH:=$top/plugins/.libs}"
			export FEDRUN_PLUGIN_PATH
		else
			FEDRUN=fedrun
		fi
	fi
	command -v "$FEDRUN" >/dev/null 2>&1 || die "no fedrun: build it (make) or set FEDRUN"
}

# claim NAME: true for the job that takes NAME first (run.sh --jobs: the
# jobs walk the same list of stages and each runs those it claims).
claim() {
	mkdir "$claims/$1" 2>/dev/null
}

# stage NAME PIPELINE [fedrun options]: runs PIPELINE into $out/NAME unless
# that is complete with the same arguments (RUN/.complete holds them); its
# output goes to $out/NAME.log. Reads $out, $common (fedrun options of every
# stage), $force, $threads, $claims and $times (stage and seconds, appended).
stage() {
	name=$1 pipe=$2
	shift 2
	args="$(basename "$pipe") $common $*"
	if [ $force = 0 ] && [ -e "$out/$name/.complete" ] &&
		[ "$(cat "$out/$name/.complete")" = "$args" ]; then
		# (said once: not again by a job that finds another's stage done)
		! claim "$name" || echo "run.sh: $name: complete, kept"
		return 0
	fi
	claim "$name" || return 0
	rm -f "$out/$name/.complete"
	echo "run.sh: $name: $(basename "$pipe") $*"
	t0=$(date +%s)
	# shellcheck disable=SC2086
	if ! "$FEDRUN" --threads "$threads" "$pipe" $common --set output.dir="$out/$name" "$@" \
		>"$out/$name.log" 2>&1; then
		tail -n 5 "$out/$name.log" >&2
		die "$name failed: see $out/$name.log"
	fi
	t1=$(date +%s)
	printf '%s\t%s\n' "$name" $((t1 - t0)) >>"$times"
	echo "run.sh: $name: $((t1 - t0)) s"
	printf '%s\n' "$args" >"$out/$name/.complete"
}

# open_out: makes $out (a directory) absolute, creating it, and starts the
# clock: $t_start, and $times (OUT/times.tsv, "stage<TAB>seconds" lines
# that stage() appends).
open_out() {
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	t_start=$(date +%s)
	times=$out/times.tsv
	[ -e "$times" ] || printf 'stage\tseconds\n' >"$times"
}

# times_table TIMES.tsv: the last time of each stage (a stage run again
# replaces its time) and their sum, as a tab-separated table.
times_table() {
	awk -F'\t' 'NR > 1 && $1 != "total" { if (!($1 in t)) o[++n] = $1; t[$1] = $2 }
	END { print "stage\tseconds"; for (i = 1; i <= n; i++) { print o[i] "\t" t[o[i]]; s += t[o[i]] }
	      print "all stages\t" s }' "$1"
}

# t_interval: from one number a line (the paired differences over seeds),
# "mean lo hi n": the mean and the two-sided 95% Student t interval
# mean ± t(0.975, n − 1)·s/√n (s the sample standard deviation), lo and hi
# "-" for one number; nothing for none. t from the table for 1 to 30
# degrees of freedom, 1.96 beyond.
t_interval() {
	awk '{ d[++n] = $1 + 0; m += $1 }
	END {
		split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", tq, " ")
		if (!n) exit
		m /= n
		if (n == 1) { printf "%.6f - - 1\n", m; exit }
		for (i = 1; i <= n; i++) v += (d[i] - m) ^ 2
		t = (n - 1 <= 30) ? tq[n - 1] : 1.96
		h = t * sqrt(v / (n - 1) / n)
		printf "%.6f %.6f %.6f %d\n", m, m - h, m + h, n
	}'
}

# Paired bootstrap resampling of a test set (sacreBLEU's --paired-bs, as
# fedrun bleu computes it): bs_n resamples from seed bs_seed (sacreBLEU's
# defaults); the 95% interval of the difference A - B decides a goal.
bs_n=1000 bs_seed=12345

# paired_bs OUT REF HYP_A HYP_B [fedrun bleu options]: fedrun bleu
# --paired-bs of system A against B into OUT, its -b lines ("bleu|chrf A B
# DIFF LO HI MEAN A_LO A_HI B_LO B_HI BETTER", two decimals); dies when
# fedrun bleu fails.
paired_bs() {
	_o=$1 _r=$2 _a=$3 _b=$4
	shift 4
	find_fedrun
	"$FEDRUN" bleu --paired-bs --paired-bs-n "$bs_n" --bs-seed "$bs_seed" "$@" -b -w 2 \
		"$_r" "$_a" "$_b" >"$_o" || die "fedrun bleu --paired-bs $_r $_a $_b failed"
}

# judge TEXT KIND MARGIN A B WHY COPY BS NOBS: a goal's line, "TEXT:
# **VERDICT** (the numbers)", for the claim that system A (test BLEU A)
# is above system B (BLEU B): KIND higher (reproduced when the 95%
# interval of A - B in BS, paired_bs's output, is above 0, contradicted
# when below, inconclusive when it holds 0) or close (A competitive with
# B: reproduced when the interval's lower end is above -MARGIN,
# contradicted when its upper end is below -MARGIN, inconclusive
# otherwise). chrF's interval is given beside; BLEU decides. BS empty
# (/dev/null): inconclusive, "NOBS: no interval". WHY ("" or reasons, each
# after "; "): **not judged** for those reasons, the numbers still given;
# COPY, copying the source's BLEU on the same test set (or ""), adds one:
# both systems below it did not learn to translate.
judge() {
	_why=$6
	if [ -n "$7" ] && awk -v a="$4" -v b="$5" -v c="$7" 'BEGIN { exit !(a + 0 < c + 0 && b + 0 < c + 0) }'; then
		_why="$_why; below copying the source: the systems did not learn to translate; copying the source scores test BLEU $7"
	fi
	awk -F'\t' -v t="$1" -v k="$2" -v mg="$3" -v a="$4" -v b="$5" -v why="${_why#; }" \
		-v nobs="$9" -v n="$bs_n" '
	function signed(x) { return (x ~ /^-/) ? x : "+" x }
	$1 == "bleu" { bl = $5; bh = $6; bd = $4; better = $12; got = 1 }
	$1 == "chrf" { cf = sprintf("; chrF %s against %s, difference %s, 95%% interval [%s, %s]", $2, $3, signed($4), $5, $6) }
	END {
		if (!got) {
			# (no interval: the difference of the two scores, which have two decimals)
			d = sprintf("test BLEU %s against %s, difference %+.2f", a, b, sprintf("%.2f", a - b) + 0)
			if (why != "")
				printf "%s: **not judged** (%s; %s)\n", t, why, d
			else
				printf "%s: **inconclusive** (%s: no interval; %s)\n", t, nobs, d
			exit 0
		}
		m = sprintf("test BLEU %s against %s, difference %s, 95%% interval [%s, %s]%s; paired bootstrap, %d resamples", a, b, signed(bd), bl, bh, cf, n)
		if (why != "") {
			printf "%s: **not judged** (%s; %s)\n", t, why, m
			exit 0
		}
		if (k == "close")
			w = (bl + 0 > -mg) ? "reproduced" : (bh + 0 < -mg) ? "contradicted" : "inconclusive"
		else
			w = (better == "A") ? "reproduced" : (better == "B") ? "contradicted" : "inconclusive"
		printf "%s: **%s** (%s)\n", t, w, m
	}' "$8"
}
