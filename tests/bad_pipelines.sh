#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every malformed pipeline in tests/pipelines/bad/ is refused by
# `fedrun validate` and `fedrun run` with its specific message on stderr, the
# expected exit status, and no crash (a crash exits with 128 + signal).
# (`fedrun run` may say which phase it was in first: "creating model ...".)
set -u
dir="$top_srcdir/tests/pipelines/bad"
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT
fail=0 n=0
tab=$(printf '\t')
while IFS="$tab" read -r file status text; do
	case "$file" in '#'*|'') continue ;; esac
	n=$((n + 1))
	for cmd in validate run; do
		(cd "$work" && "$FEDRUN" $cmd "$dir/$file") >"$work/out" 2>"$work/err"
		got=$?
		if [ "$got" -ne "$status" ]; then
			echo "FAIL: $cmd $file: exit $got, expected $status"; cat "$work/err"; fail=1
		elif ! grep -qF -- "$text" "$work/err"; then
			echo "FAIL: $cmd $file: message lacks: $text"; cat "$work/err"; fail=1
		elif [ "$(grep -vc ' \.\.\.$' "$work/err")" -ne 1 ]; then
			echo "FAIL: $cmd $file: expected one line of message"; cat "$work/err"; fail=1
		fi
	done
	# Nothing was written for a refused pipeline.
	if [ -e "$work/runs" ]; then
		echo "FAIL: $file: a run directory was created"; fail=1; rm -rf "$work/runs"
	fi
done < "$dir/expected.tsv"
echo "checked $n malformed pipelines"
[ "$n" -ge 20 ] || { echo "FAIL: fewer than 20 cases"; fail=1; }
exit $fail
