#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# data/gettext/segment-cjk.awk: every CJK character (Han, kana, bopomofo,
# CJK punctuation, full-width forms) becomes a space-separated token; other
# text keeps its bytes, runs of spaces become one; mawk and gawk (whichever
# are installed) give the same bytes.
set -u
export LC_ALL=C
srcdir=${srcdir:-.}
seg="$srcdir/data/gettext/segment-cjk.awk"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' '打开文件(O)…' 'Save 文件 as “x”。' 'plain  text ' '全角，标点！' \
	'カタカナ and ㄅ' '⺀ 豈' 'Ünïcödé ß без CJK' '' >"$tmp/in"
printf '%s\n' '打 开 文 件 (O)…' 'Save 文 件 as “x” 。' 'plain text' '全 角 ， 标 点 ！' \
	'カ タ カ ナ and ㄅ' '⺀ 豈' 'Ünïcödé ß без CJK' '' >"$tmp/want"
ran=0
for a in mawk gawk original-awk awk; do
	command -v "$a" >/dev/null 2>&1 || continue
	"$a" -f "$seg" <"$tmp/in" >"$tmp/got.$a" || { echo "FAIL: $a exited $?"; exit 1; }
	cmp "$tmp/got.$a" "$tmp/want" >/dev/null || {
		echo "FAIL: $a:"
		diff "$tmp/want" "$tmp/got.$a"
		exit 1
	}
	ran=$((ran + 1))
done
[ $ran -gt 0 ] || { echo "SKIP: no awk"; exit 77; }
echo "segment-cjk.awk: $ran awk(s) give the expected segmentation"
