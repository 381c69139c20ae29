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
