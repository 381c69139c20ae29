# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
# Sourced by the tests of `fedrun bleu` (test_bleu_cli.sh,
# test_bleu_bootstrap.sh): $driver, the program that runs the command
# (tests/bleu_cli_driver); a temporary directory $tmp, removed on exit;
# ok NAME and not_ok NAME, counted; expect_err NAME STATUS PATTERN ARGS...;
# and bleu_done, the summary line and the script's status (its last
# command).
driver=${BLEU_CLI_DRIVER:-./tests/bleu_cli_driver}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bleu-cli.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0
failed=0

ok() {
	passed=$((passed + 1))
	echo "ok - $1"
}

not_ok() {
	failed=$((failed + 1))
	echo "FAIL - $1"
}

# expect_err NAME STATUS PATTERN ARGS... : the run fails with STATUS and
# its standard error matches PATTERN (a fixed string).
expect_err() {
	name=$1 status=$2 pattern=$3
	shift 3
	"$driver" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$status" ]; then
		not_ok "$name: exit status $got, expected $status"
		sed 's/^/# /' "$tmp/err"
	elif ! grep -F -q -- "$pattern" "$tmp/err"; then
		not_ok "$name: stderr lacks '$pattern'"
		sed 's/^/# /' "$tmp/err"
	elif [ -s "$tmp/out" ]; then
		not_ok "$name: wrote to stdout on error"
	else
		ok "$name"
	fi
}

bleu_done() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
