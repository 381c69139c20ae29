#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The manual pages are plain ASCII troff (a Greek letter is \(*h, not UTF-8:
# groff reads its input as Latin-1, so a raw θ prints as two wrong
# characters) and groff formats them without a warning. The groff check
# skips where groff is not installed; the ASCII check always runs.
set -u
export LC_ALL=C
srcdir=${srcdir:-.}
groff=groff
command -v groff >/dev/null 2>&1 || groff=''
fail=0 n=0
for page in "$srcdir"/man/*.[1-9]; do
	[ -e "$page" ] || break
	n=$((n + 1))
	bad=$(grep -n '[^ -~	]' "$page" | head -n 5)
	[ -z "$bad" ] || { printf 'FAIL: %s has bytes outside printable ASCII:\n%s\n' "$page" "$bad"; fail=1; }
	[ -n "$groff" ] || continue
	out=$(groff -man -ww -Tutf8 -z "$page" 2>&1 | head -n 5)
	[ -z "$out" ] || { printf 'FAIL: groff warns on %s:\n%s\n' "$page" "$out"; fail=1; }
done
[ $n -gt 0 ] || { echo "FAIL: no manual pages under $srcdir/man"; exit 1; }
# The alternating-font macros (.BR, .IR, ...) join their arguments without
# a space, so two plain words in a row print as one ("attentionas", found
# in fedrun-models.7, and "Localtraining" in fedrun-plugin.7). Words that
# are meant to touch (a variable part of a name, \(dq quotes) end or start
# otherwise and pass.
together=$(awk '
# Lines of the alternating-font macros (.BR, .IR, ...) join their
# arguments without a space: two unquoted words in a row print as one.
/^\.(BR|IR|RB|RI|BI|IB)[ \t]/ {
	s = substr($0, 5); n = 0
	while (length(s) > 0) {
		sub(/^[ \t]+/, "", s)
		if (s == "") break
		if (substr(s, 1, 1) == "\"") {
			m = match(substr(s, 2), /"/)
			tok[++n] = ""; q[n] = 1
			s = m ? substr(s, m + 2) : ""
		} else {
			m = match(s, /[ \t]/)
			tok[++n] = m ? substr(s, 1, m - 1) : s; q[n] = 0
			s = m ? substr(s, m) : ""
		}
	}
	for (i = 1; i < n; i++)
		if (!q[i] && !q[i + 1] && tok[i] ~ /[a-z][a-z]$/ && tok[i] !~ /\\\(..$/ &&
		    tok[i + 1] ~ /^[A-Za-z][a-z]/) {
			printf "%s:%d: \"%s\" and \"%s\" print as one word: %s\n", FILENAME, FNR, tok[i], tok[i + 1], $0
			break
		}
}
' "$srcdir"/man/*.[1-9])
[ -z "$together" ] || { printf 'FAIL: words run together:\n%s\n' "$together"; fail=1; }
# The plugin guide states the ABI version of the header (it said 1.1 for
# five minors).
h="$srcdir/core/include/fedrun/plugin.h"
abi=$(awk '/^#define FEDRUN_ABI_MAJOR/ { M = $3 } /^#define FEDRUN_ABI_MINOR/ { m = $3 } END { print M "." m }' "$h")
grep -q "^now $abi\. " "$srcdir/man/fedrun-plugin.7" ||
	{ echo "FAIL: fedrun-plugin.7 does not say 'now $abi.' (the ABI of $h)"; fail=1; }
[ $fail -eq 0 ] || exit 1
[ -n "$groff" ] || { echo "SKIP: $n pages are ASCII; groff is not installed"; exit 77; }
echo "$n manual pages: ASCII, and groff formats them without a warning"
