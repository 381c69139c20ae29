#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `fedrun bleu --paired-bs` end to end through tests/bleu_cli_driver, on
# the fixture of tests/data/bleu_bootstrap (A, B much worse than A, C close
# to A): (a) the corpus scores it reports are those of `fedrun bleu` (the
# identity resample), (b) every number agrees with a direct computation in
# Python (tests/bleu_bootstrap_check.py: its own statistics, Philox
# resamples, BLEU, chrF and interval; skipped without python3), (c) a system
# against itself differs by 0 in [0, 0], (d) files of different lengths and
# bad options are clear errors; and the output is the same bits every run.
set -u
export LC_ALL=C

src=${top_srcdir:-${srcdir:-.}}
data="$src/tests/data/bleu_bootstrap"
. "$src/tests/bleu_cli_lib.sh"

# run OUT ARGS...: the driver's stdout into OUT, stderr into $tmp/err;
# a non-zero exit status is a failure of its own.
run() {
	out=$1
	shift
	if ! "$driver" "$@" >"$out" 2>"$tmp/err"; then
		not_ok "fedrun bleu $*: exit status not 0"
		sed 's/^/# /' "$tmp/err"
		return 1
	fi
}

# field FILE METRIC N: field N of the metric's tab-separated line.
field() {
	awk -F'\t' -v m="$2" -v n="$3" '$1 == m { print $n }' "$1"
}

ref="$data/ref.txt" a="$data/a.txt" b="$data/b.txt" c="$data/c.txt"

# (a) The identity resample: the A and B columns are the corpus scores
# `fedrun bleu` prints, to 10 decimals, also with two references, intl,
# lowercase and one metric.
identity() {
	name=$1
	shift
	run "$tmp/pair" --paired-bs -b -w 10 "$@" "$a" "$b" || return
	run "$tmp/sa" -b -w 10 "$@" "$a" || return
	run "$tmp/sb" -b -w 10 "$@" "$b" || return
	awk -F'\t' '{ print $2 }' "$tmp/pair" >"$tmp/pa"
	awk -F'\t' '{ print $3 }' "$tmp/pair" >"$tmp/pb"
	if cmp -s "$tmp/pa" "$tmp/sa" && cmp -s "$tmp/pb" "$tmp/sb" && [ -s "$tmp/sa" ]; then
		ok "(a) identity resample is the corpus score: $name"
	else
		not_ok "(a) identity resample is the corpus score: $name"
		paste "$tmp/pa" "$tmp/sa" "$tmp/pb" "$tmp/sb" | sed 's/^/# /'
	fi
}
identity "defaults" "$ref"
identity "two references, intl, lowercase" -r "$c" -t intl -l "$ref"
identity "BLEU only, floor smoothing" -m bleu --smooth floor "$ref"

# (b) A direct computation of every number, on three pairs (A much
# better, close, much worse) and on 39 resamples of seed 0 (the interval
# is then the minimum and the maximum).
if command -v python3 >/dev/null 2>&1; then
	for spec in "a b 1000 12345" "a c 1000 12345" "b a 1000 12345" "a c 39 0"; do
		# shellcheck disable=SC2086 # the spec's four words
		set -- $spec
		x="$data/$1.txt" y="$data/$2.txt"
		run "$tmp/out" --paired-bs -b -w 10 --paired-bs-n "$3" --bs-seed "$4" "$ref" "$x" "$y" ||
			continue
		if python3 "$src/tests/bleu_bootstrap_check.py" "$ref" "$x" "$y" "$3" "$4" \
			"$tmp/out" >"$tmp/check" 2>&1; then
			ok "(b) direct computation: $1 against $2, $3 resamples, seed $4"
		else
			not_ok "(b) direct computation: $1 against $2, $3 resamples, seed $4"
		fi
		sed 's/^/# /' "$tmp/check"
	done
else
	echo "# SKIP (b): no python3 for the direct computation"
fi

# judge STATUS NAME [FILE]: ok when STATUS is 0, else a failure that shows
# FILE.
judge() {
	if [ "$1" -eq 0 ]; then
		ok "$2"
	else
		not_ok "$2"
		[ -z "${3-}" ] || sed 's/^/# /' "$3"
	fi
}

# The fixture's verdicts: B is much worse than A, C as good as A.
run "$tmp/ab" --paired-bs -b "$ref" "$a" "$b" &&
	[ "$(field "$tmp/ab" bleu 12)$(field "$tmp/ab" chrf 12)" = AA ]
judge $? "A better than B" "$tmp/ab"
run "$tmp/ba" --paired-bs -b "$ref" "$b" "$a" &&
	[ "$(field "$tmp/ba" bleu 12)$(field "$tmp/ba" chrf 12)" = BB ]
judge $? "B better when swapped" "$tmp/ba"
run "$tmp/ac" --paired-bs -b "$ref" "$a" "$c" &&
	[ "$(field "$tmp/ac" bleu 12)$(field "$tmp/ac" chrf 12)" = neitherneither ]
judge $? "A and C: neither" "$tmp/ac"
# swapping the systems negates the difference and its interval
run "$tmp/ab4" --paired-bs -b -w 4 "$ref" "$a" "$b" &&
	run "$tmp/ba4" --paired-bs -b -w 4 "$ref" "$b" "$a" &&
	awk -F'\t' 'NR == FNR { d[$1] = $4; lo[$1] = $5; hi[$1] = $6; next }
	    { bad += ($4 + d[$1] != 0) || ($5 + hi[$1] != 0) || ($6 + lo[$1] != 0) }
	    END { exit bad != 0 }' "$tmp/ab4" "$tmp/ba4"
judge $? "swapping A and B negates A - B and its interval"

# (c) A system against itself: 0 in [0, 0], mean 0, the same own interval.
run "$tmp/aa" --paired-bs -b -w 10 "$ref" "$a" "$a" &&
	awk -F'\t' '{ bad += !($4 == 0 && $5 == 0 && $6 == 0 && $7 == 0 && $2 == $3 &&
			      $8 == $10 && $9 == $11 && $8 < $9 && $12 == "neither") }
		    END { exit bad != 0 || NR != 2 }' "$tmp/aa"
judge $? "(c) identical systems: diff 0, interval [0, 0]" "$tmp/aa"
run "$tmp/aa_text" --paired-bs -m bleu "$ref" "$a" "$a" &&
	grep -q 'A-B 0\.0 \[0\.0, 0\.0\], mean 0\.0: no significant difference$' "$tmp/aa_text"
judge $? "(c) identical systems, text line" "$tmp/aa_text"

# The text lines: sacreBLEU's signature fields, one line per metric.
run "$tmp/text" --paired-bs "$ref" "$a" "$b" &&
	grep -q '^  BLEU|nrefs:1|bs:1000|seed:12345|case:mixed|eff:no|tok:13a|smooth:exp|version:2\.6\.0 = A 88\.3 \[82\.9, 93\.2\], B 29\.5 \[24\.5, 33\.9\], A-B 58\.8 \[52\.1, 65\.2\], mean 58\.7: A is better$' "$tmp/text" &&
	grep -q '^chrF2|nrefs:1|bs:1000|seed:12345|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2\.6\.0 = A ' "$tmp/text" &&
	[ "$(wc -l <"$tmp/text")" -eq 2 ]
judge $? "text lines and signatures" "$tmp/text"
run "$tmp/short" --paired-bs --short --paired-bs-n 200 --bs-seed 7 -m chrf "$ref" "$a" "$b" &&
	grep -q '^chrF2|#:1|bs:200|rs:7|c:mixed|e:yes|nc:6|nw:0|s:no|v:2\.6\.0 = ' "$tmp/short"
judge $? "short signature, --paired-bs-n, --bs-seed" "$tmp/short"

# The same bits every run; another seed, other resamples; B from stdin.
run "$tmp/r1" --paired-bs -b -w 17 "$ref" "$a" "$c" &&
	run "$tmp/r2" --paired-bs -b -w 17 "$ref" "$a" - <"$c" &&
	cmp -s "$tmp/r1" "$tmp/r2"
judge $? "reproducible, B on standard input"
run "$tmp/r3" --paired-bs -b -w 17 --bs-seed 12346 "$ref" "$a" "$c" &&
	! cmp -s "$tmp/r1" "$tmp/r3" &&
	[ "$(cut -f 1-4 "$tmp/r1")" = "$(cut -f 1-4 "$tmp/r3")" ]
judge $? "another seed changes the intervals only"

# (d) Errors.
head -n 29 "$b" >"$tmp/short_b"
expect_err "(d) B shorter than A" 1 \
	"--paired-bs: $a (A) has 30 lines but $tmp/short_b (B) has 29" "$ref" "$a" "$tmp/short_b" --paired-bs
head -n 29 "$a" >"$tmp/short_a"
expect_err "(d) A shorter than the reference" 1 "$tmp/short_a has 29 lines but $ref has 30" \
	--paired-bs "$ref" "$tmp/short_a" "$b"
expect_err "(d) both shorter than the reference" 1 "$tmp/short_b has 29 lines but $ref has 30" \
	--paired-bs "$ref" "$tmp/short_b" "$tmp/short_b"
expect_err "two files with --paired-bs" 2 "expected REF, HYP_A and HYP_B files, got 2" \
	--paired-bs "$ref" "$a"
expect_err "three files without --paired-bs" 2 "expected REF and HYP files, got 3" "$ref" "$a" "$b"
expect_err "--paired-bs-n alone" 2 "--paired-bs-n needs --paired-bs" --paired-bs-n 10 "$ref" "$a"
expect_err "--bs-seed alone" 2 "--bs-seed needs --paired-bs" --bs-seed 1 "$ref" "$a"
expect_err "--paired-bs-n 0" 2 "--paired-bs-n: expected an integer in [1, 4294967295], got '0'" \
	--paired-bs --paired-bs-n 0 "$ref" "$a" "$b"
expect_err "--bs-seed -1" 2 "--bs-seed: expected an integer" --paired-bs --bs-seed -1 "$ref" "$a" "$b"
expect_err "--paired-bs with --sentence" 2 "cannot go with --sentence" --paired-bs -s "$ref" "$a" "$b"
expect_err "stdin twice" 2 "only once" --paired-bs "$ref" - -

bleu_done
