#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `fedrun bleu` end to end through tests/bleu_cli_driver: sacreBLEU's text
# output on small files (scores checked against sacreBLEU's rules in
# Python), and clear errors with exit status 1 (input) or 2 (usage).
set -u

. "${top_srcdir:-${srcdir:-.}}/tests/bleu_cli_lib.sh"

# expect NAME STATUS EXPECTED_STDOUT_FILE ARGS... : runs the driver and
# compares its exit status and standard output.
expect() {
	name=$1 status=$2 want=$3
	shift 3
	"$driver" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$status" ]; then
		not_ok "$name: exit status $got, expected $status"
		sed 's/^/# /' "$tmp/err"
	elif [ -n "$want" ] && ! cmp -s "$tmp/out" "$want"; then
		not_ok "$name: output differs"
		diff "$want" "$tmp/out" | sed 's/^/# /'
	else
		ok "$name"
	fi
}

printf 'Der Job %%d ist gestoppt.\nIndex wurde nicht aus dem Stash zurückgeladen.\n»%%s«: Ist keine gültige Prozess-ID.\n' >"$tmp/ref1"
printf 'Der Job ist gestoppt.\nIndex wurde aus Stash nicht zurückgeladen.\n\n' >"$tmp/ref2"
# CRLF and trailing blanks are stripped as Python's rstrip() does
printf 'Job %%d ist gestoppt.\r\nIndex wurde nicht zurückgeladen.  \n»%%s«: keine gültige Prozess-ID.' >"$tmp/hyp"

cat >"$tmp/want_corpus" <<'EOF'
  BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = 57.0 100.0/87.5/69.2/50.0 (BP = 0.769 ratio = 0.792 hyp_len = 19 ref_len = 24)
chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0 = 76.4
EOF
expect "corpus BLEU and chrF" 0 "$tmp/want_corpus" "$tmp/ref1" "$tmp/hyp"

cat >"$tmp/want_two_refs" <<'EOF'
  BLEU|nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = 69.7 100.0/93.8/76.9/50.0 (BP = 0.900 ratio = 0.905 hyp_len = 19 ref_len = 21)
chrF2|nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0 = 78.8
EOF
expect "two references (-r), one line empty" 0 "$tmp/want_two_refs" \
	-r "$tmp/ref2" "$tmp/ref1" "$tmp/hyp"
expect "--ref spelled long" 0 "$tmp/want_two_refs" --ref "$tmp/ref2" "$tmp/ref1" "$tmp/hyp"

cat >"$tmp/want_intl" <<'EOF'
BLEU|#:1|c:lc|e:no|tok:intl|s:exp|v:2.6.0 = 63.87 100.0/89.5/75.0/61.5 (BP = 0.797 ratio = 0.815 hyp_len = 22 ref_len = 27)
EOF
expect "intl, lowercase, short signature, width 2" 0 "$tmp/want_intl" \
	-t intl -l --short -m bleu -w 2 "$tmp/ref1" "$tmp/hyp"

cat >"$tmp/want_sentence" <<'EOF'
BLEU|nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0 = 84.6 100.0/100.0/100.0/100.0 (BP = 0.846 ratio = 0.857 hyp_len = 6 ref_len = 7)
BLEU|nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0 = 27.4 100.0/75.0/33.3/25.0 (BP = 0.549 ratio = 0.625 hyp_len = 5 ref_len = 8)
BLEU|nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0 = 61.0 100.0/85.7/66.7/40.0 (BP = 0.882 ratio = 0.889 hyp_len = 8 ref_len = 9)
EOF
expect "sentence BLEU uses effective order" 0 "$tmp/want_sentence" \
	--sentence --metric bleu "$tmp/ref1" "$tmp/hyp"

printf '85.656\n67.681\n81.995\n' >"$tmp/want_chrf_scores"
expect "sentence chrF, scores only" 0 "$tmp/want_chrf_scores" \
	-s -b -m chrf -w 3 "$tmp/ref1" "$tmp/hyp"

printf '57.0\n76.4\n' >"$tmp/want_scores"
expect "hypothesis from standard input" 0 "$tmp/want_scores" -b "$tmp/ref1" - <"$tmp/hyp"
expect "metric list bleu,chrf" 0 "$tmp/want_scores" -b -m bleu,chrf "$tmp/ref1" "$tmp/hyp"

printf 'BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:floor[0.20]|version:2.6.0 = 57.0 100.0/87.5/69.2/50.0 (BP = 0.769 ratio = 0.792 hyp_len = 19 ref_len = 24)\n' >"$tmp/want_floor"
expect "floor smoothing with a value" 0 "$tmp/want_floor" \
	-m bleu --smooth floor --smooth-value 0.2 "$tmp/ref1" "$tmp/hyp"

# an exact copy scores 100 under every tokenizer
for tok in 13a intl none; do
	printf '100.0\n100.0\n' >"$tmp/want_100"
	expect "exact copy, $tok" 0 "$tmp/want_100" -b -t "$tok" "$tmp/ref1" "$tmp/ref1"
done

expect "--help" 0 "" --help
grep -q -- "--tokenize" "$tmp/out" && ok "--help lists --tokenize" || not_ok "--help lists --tokenize"

# input errors: status 1, the file named
head -n 2 "$tmp/hyp" >"$tmp/short"
expect_err "line counts differ" 1 "has 3" "$tmp/ref1" "$tmp/short"
expect_err "missing file" 1 "cannot open '$tmp/nope'" "$tmp/ref1" "$tmp/nope"
expect_err "missing reference" 1 "cannot open '$tmp/nope'" -r "$tmp/nope" "$tmp/ref1" "$tmp/hyp"
printf 'ok\n\377\nok\n' >"$tmp/bad"
expect_err "invalid UTF-8" 1 "$tmp/bad:2: invalid UTF-8" "$tmp/ref1" "$tmp/bad"
: >"$tmp/empty"
expect_err "empty hypothesis file" 1 "no lines to score" "$tmp/empty" "$tmp/empty"

# usage errors: status 2
expect_err "unknown option" 2 "unknown option '--bogus'" --bogus "$tmp/ref1" "$tmp/hyp"
expect_err "one file only" 2 "expected REF and HYP" "$tmp/ref1"
expect_err "unknown tokenizer" 2 "unknown tokenizer 'zh'" -t zh "$tmp/ref1" "$tmp/hyp"
expect_err "unknown metric" 2 "unknown metric 'ter'" -m ter "$tmp/ref1" "$tmp/hyp"
expect_err "option without value" 2 "needs a value" "$tmp/ref1" "$tmp/hyp" -t
expect_err "bad width" 2 "--width" -w x "$tmp/ref1" "$tmp/hyp"
expect_err "stdin twice" 2 "only once" - -
# text on stdin stops at its first NUL byte (it read 4 GiB of /dev/zero)
expect_err "NUL byte on stdin" 1 "'standard input', line 1: a NUL byte" "$tmp/ref1" - </dev/zero
printf 'a\nb\0\n' >"$tmp/nul"
expect_err "NUL byte on stdin, line 2" 1 "line 2: a NUL byte" "$tmp/ref1" - <"$tmp/nul"

# like sacreBLEU, warn (but score) when 100 hypotheses look tokenized
i=0
while [ $i -lt 100 ]; do echo "a b c d ." ; i=$((i + 1)); done >"$tmp/tok"
"$driver" -b -m bleu "$tmp/tok" "$tmp/tok" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && grep -q "tokenized period" "$tmp/err" && grep -q '^100.0$' "$tmp/out"; then
	ok "tokenized-period warning"
else
	not_ok "tokenized-period warning"
fi

bleu_done
