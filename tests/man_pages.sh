#!/bin/sh
# The manual pages are plain ASCII troff (a Greek letter is \(*h, not UTF-8:
# groff reads its input as Latin-1, so a raw θ prints as two wrong
# characters) and groff formats them without a warning. The groff check
# skips where groff is not installed; the ASCII check always runs.
set -u
export LC_ALL=C
srcdir=${srcdir:-.}
fail=0 n=0
for page in "$srcdir"/man/*.[1-9]; do
	n=$((n + 1))
	if grep -n '[^ -~	]' "$page" >/dev/null; then
		echo "FAIL: $page has bytes outside printable ASCII:"
		grep -n '[^ -~	]' "$page" | head -5
		fail=1
	fi
done
[ $n -gt 0 ] || { echo "FAIL: no manual pages under $srcdir/man"; exit 1; }
[ $fail -eq 0 ] || exit 1
command -v groff >/dev/null 2>&1 || { echo "SKIP: $n pages are ASCII; groff is not installed"; exit 77; }
for page in "$srcdir"/man/*.[1-9]; do
	out=$(groff -man -ww -Tutf8 -z "$page" 2>&1)
	if [ -n "$out" ]; then
		echo "FAIL: groff warns on $page:"
		printf '%s\n' "$out" | head -5
		fail=1
	fi
done
[ $fail -eq 0 ] || exit 1
echo "$n manual pages: ASCII, and groff formats them without a warning"
