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
