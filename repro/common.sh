# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh disable=SC2154 # $prog and $top: set by the sourcing script
# repro/common.sh: what every repro/<paper>/run.sh shares; sourced (POSIX
# sh) after it sets $prog (its name in messages) and $top (the source tree).

die() {
	echo "$prog: $*" >&2
	exit 1
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
