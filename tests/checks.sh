# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
# Sourced by the test scripts that count their checks (test_brown_*.sh,
# test_gettext_*.sh): a temporary directory $tmp, removed on exit;
# check DESCRIPTION COMMAND..., counted, the description on stderr when
# the command fails; and checks_done NAME, the summary line and the
# script's status (its last command).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fedrun-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

check() {
	desc=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL: $desc" >&2
	fi
}

checks_done() {
	echo "$1: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# recompute_only NAME: with FEDRUN_RESULTS_TESTS=recompute, ends a
# results test after its first checks (the committed results recompute),
# counted, with its summary line. CI's distcheck runs the results tests so:
# what it adds is the tarball's VPATH tree, and the checks that perturb a
# number test check-results.sh's logic, which make check ran in full.
recompute_only() {
	[ "${FEDRUN_RESULTS_TESTS:-all}" = recompute ] || return 0
	echo "$1: FEDRUN_RESULTS_TESTS=recompute: the perturbation checks are not run"
	checks_done "$1"
	exit
}

# fails COMMAND...: true when COMMAND fails (its output dropped), for
# checks that a broken input is refused.
fails() {
	! "$@" >/dev/null 2>&1
}

# perturb FILE SED-SCRIPT: edits FILE in place with sed (through gzip when
# FILE ends in .gz); fails, saying so, when the script changed nothing, so
# that a check of a perturbed file cannot pass on an unperturbed one.
perturb() {
	cp "$1" "$tmp/perturb.orig"
	case $1 in
	*.gz) gzip -dc "$tmp/perturb.orig" | sed "$2" | gzip -n > "$1" ;;
	*) sed "$2" "$tmp/perturb.orig" > "$1" ;;
	esac
	case $1 in
	*.gz) gzip -dc "$1" | cmp -s - "$(gzip -dc "$tmp/perturb.orig" > "$tmp/perturb.txt"; echo "$tmp/perturb.txt")" ;;
	*) cmp -s "$1" "$tmp/perturb.orig" ;;
	esac && { echo "perturb: $2 changed nothing in $1" >&2; return 1; }
	return 0
}
