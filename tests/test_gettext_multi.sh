#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks data/gettext/build-multi.sh (--from-dir, no network) on catalogues
# written here: three languages (target is, helpers da and de) in two
# domains, with strings that only some languages translate, a pair in two
# domains, an English string with two Icelandic translations. Checks the
# one split of the English strings across languages (a target test
# string is in no language's train or dev data, and every language puts a
# string in the same split), a test string that is a near-duplicate of a
# helper's training string (case, punctuation, digits) purged from every
# language, the target's training set held to N pairs and chosen
# deterministically, the <2LANG> tags, the statistics, a second run
# byte-identical, check-multi.sh on the output and on copies with leaks
# planted (exact and near), and the error messages.
set -u
export LC_ALL=C
srcdir=${srcdir:-.}
multi="$srcdir/data/gettext/build-multi.sh"
checker="$srcdir/data/gettext/check-multi.sh"
for tool in msgfmt msgunfmt msgconv; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "SKIP: $tool is not installed (Debian: apt-get install gettext)"
		exit 77
	}
done
# shellcheck source=tests/checks.sh
. "$srcdir/tests/checks.sh"
tab=$(printf '\t')

has() { # file, exact line: occurs exactly once
	[ "$(grep -cxF -- "$2" "$1")" -eq 1 ]
}
empty() { # a command whose output must be empty
	[ -z "$("$@")" ]
}

# catalogue LANG DOMAIN FIRST LAST WORD: a .mo for LANG in DOMAIN with the
# strings "Open file number I" for I in FIRST..LAST, translated as "WORD I",
# I spelt in letters (tr 0-9 a-j: 12 is bc), since strings that differ in
# digits alone are near-duplicates, which build-multi.sh keeps out of the
# held-out sets.
catalogue() {
	dir="$tmp/tree/$1/$2/pkg-$2/usr/share/locale/$1/LC_MESSAGES"
	mkdir -p "$dir"
	{
		printf 'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
		i=$3
		while [ "$i" -le "$4" ]; do
			w=$(echo "$i" | tr 0-9 a-j)
			printf 'msgid "Open file number %s"\nmsgstr "%s %s"\n\n' "$w" "$5" "$w"
			i=$((i + 1))
		done
	} >"$dir/$2.po"
	[ "$1" != is ] || [ "$2" != alpha ] || cat >>"$dir/$2.po" <<'EOF'
msgctxt "menu"
msgid "Open file number d"
msgstr "Opna skjal d"
EOF
	# A near-duplicate (case, punctuation, digits) of "Open file number ed",
	# a test string of every language: a training string of da, so the
	# test string goes from all three test sets.
	[ "$1" != da ] || [ "$2" != beta ] || cat >>"$dir/$2.po" <<'EOF'
msgid "OPEN file number ED (2)."
msgstr "ÅBN fil nummer ED (2)."
EOF
	msgfmt -o "$dir/$2.mo" "$dir/$2.po" || {
		echo "msgfmt failed on $dir/$2.po"
		exit 99
	}
}
# is: 1..25 (alpha) and 20..45 (beta; 20..25 in both); da: 1..80; de: 30..90.
catalogue is alpha 1 25 "Opna skrá númer"
catalogue is beta 20 45 "Opna skrá númer"
catalogue da alpha 1 50 "Åbn fil nummer"
catalogue da beta 51 80 "Åbn fil nummer"
catalogue de alpha 30 60 "Öffne Datei Nummer"
catalogue de beta 61 90 "Öffne Datei Nummer"

sh "$multi" --from-dir "$tmp/tree" --train-size 10 is da,de "$tmp/out" >"$tmp/table" 2>"$tmp/err"
status=$?
check "build succeeds" [ $status -eq 0 ]
[ $status -eq 0 ] || cat "$tmp/err" >&2
out=$tmp/out
check "one directory per language" [ "$(ls "$out" | tr '\n' ' ')" = "SOURCE cleaning.tsv da de is neardup.tsv stats.tsv " ] ||
	ls "$out" >&2

ok=1
for l in is da de; do
	for s in train dev test; do
		for f in en "$l" tsv src tgt; do
			[ -f "$out/$l/$s.$f" ] || ok=0
		done
		[ -f "$out/$l/$s.en" ] || continue
		n=$(wc -l <"$out/$l/$s.en")
		for f in "$l" tsv src tgt; do
			[ "$(wc -l <"$out/$l/$s.$f")" -eq "$n" ] || ok=0
		done
		sed "s/^/<2$l> /" "$out/$l/$s.en" | cmp -s - "$out/$l/$s.src" || ok=0
		cmp -s "$out/$l/$s.$l" "$out/$l/$s.tgt" || ok=0
		paste "$out/$l/$s.en" "$out/$l/$s.$l" | cmp -s - "$out/$l/$s.tsv" || ok=0
	done
done
check "aligned files; .src is <2LANG> and .en; .tgt is .LANG" [ "$ok" -eq 1 ]
check "the tag on the target's source" [ "$(head -n 1 "$out/is/test.src" | cut -c1-6)" = "<2is> " ]
check "the tag on a helper's source" [ "$(head -n 1 "$out/da/train.src" | cut -c1-6)" = "<2da> " ]

# is has 45 distinct English strings: k = floor(45 * 5%) = 2, less the
# test string purged as a near-duplicate of one of da's training strings.
check "target: 2 test strings, one purged" [ "$(sort -u "$out/is/test.en" | wc -l)" -eq 1 ]
check "target: 2 dev strings" [ "$(sort -u "$out/is/dev.en" | wc -l)" -eq 2 ]
check "target: training set held to 10 pairs" [ "$(wc -l <"$out/is/train.en")" -eq 10 ]
check "target: a pair in two domains once" [ "$(cat "$out"/is/*.tsv | grep -c "^Open file number cc$tab")" -le 1 ]
# One split for all languages: an English string's split is the same in
# every language, so held-out strings are trained on nowhere.
for s in train dev test; do
	cat "$out"/*/"$s".en | sort -u >"$tmp/all.$s"
done
check "no test string in any language's train" empty comm -12 "$tmp/all.test" "$tmp/all.train"
check "no test string in any language's dev" empty comm -12 "$tmp/all.test" "$tmp/all.dev"
check "no dev string in any language's train" empty comm -12 "$tmp/all.dev" "$tmp/all.train"
sort -u "$out/is/test.en" >"$tmp/is.test"
check "the target's test strings are test in the helpers that have them" \
	[ "$(sort -u "$out/da/test.en" | comm -12 - "$tmp/is.test" | wc -l)" -eq 1 ]

# The near-duplicate: "Open file number ed", test in every language, goes
# from all three for da's training string "OPEN file number ED (2).".
check "the purge: one string, a test pair of each language" [ "$(cut -f1-3 "$out/neardup.tsv")" = "language${tab}split${tab}en
is${tab}test${tab}Open file number ed
da${tab}test${tab}Open file number ed
de${tab}test${tab}Open file number ed" ]
check "neardup.tsv: the translation, Jaccard and training string" has "$out/neardup.tsv" \
	"is${tab}test${tab}Open file number ed${tab}Opna skrá númer ed${tab}1.000${tab}OPEN file number ED (2)."
check "the purged string in no file" empty grep -rlx "Open file number ed" "$out"/is "$out"/da "$out"/de
check "its near-duplicate trained on" grep -qx "OPEN file number ED (2)." "$out/da/train.en"
check "stats.tsv: purged per language and split" [ "$(cut -f1,13,14 "$out/stats.tsv" | tr '\n' ' ')" = "language${tab}neardup.dev${tab}neardup.test is${tab}0${tab}1 da${tab}0${tab}1 de${tab}0${tab}1 " ]
check "SOURCE: the purge counted" grep -q '^near-duplicates: .*: 1 strings, 3 pairs; see neardup.tsv$' "$out/SOURCE"
check "the purge reported" grep -q '^build-multi.sh: 3 held-out pairs purged as near-duplicates' "$tmp/err"
awk -F '\t' 'NR > 1 { print $3 }' "$out/neardup.tsv" | sort -u >"$tmp/purged"
sort -u "$out/is/train.en" >"$tmp/is.train"
check "the target's training strings are training strings of a helper" \
	empty sh -c "sort -u '$out/da/train.en' | comm -13 - '$tmp/is.train'"
check "helpers hold strings the target lacks in train" grep -qx "Open file number ia" "$out/da/train.en" "$out/da/dev.en" "$out/da/test.en"
check "helpers' held-out sets also hold strings the target lacks" \
	[ "$(cat "$out/da/test.en" "$out/de/test.en" | sort -u | comm -23 - "$tmp/is.test" | wc -l)" -gt 0 ]
total_da=$(cat "$out/da/train.en" "$out/da/dev.en" "$out/da/test.en" | wc -l)
check "a helper keeps all its 81 pairs but the purged one" [ "$total_da" -eq 80 ]

# The held-out strings are those of lowest hash (split.awk), up to the
# target's 2nd (test) and 4th (dev): the target's test strings (with the
# purged one) are its two of lowest hash, and every string of lower hash is
# test in all languages (or purged).
awk_hash() {
	LC_ALL=C awk -f "$srcdir/data/gettext/split.awk" -v step=hash
}
cat "$out"/*/train.en "$out"/*/dev.en "$out"/*/test.en "$tmp/purged" | sort -u | awk_hash |
	sort -t "$tab" -k1,1n -k2,2 | cut -f2 >"$tmp/ranked"
sort -u "$out"/is/*.en "$tmp/purged" >"$tmp/is.strings"
grep -xFf "$tmp/is.strings" "$tmp/ranked" | head -n 2 | sort >"$tmp/is.lowest"
check "the target's test strings and the purged one are its two of lowest hash" \
	cmp -s "$tmp/is.lowest" - <<EOF
$(sort -u "$tmp/is.test" "$tmp/purged")
EOF
last=$(grep -xFf "$tmp/is.strings" "$tmp/ranked" | sed -n 2p)
sed "/^$last\$/q" "$tmp/ranked" | sort >"$tmp/below"
check "every string up to the target's 2nd is test, or purged" cmp -s "$tmp/below" - <<EOF
$(sort -u "$tmp/all.test" "$tmp/purged")
EOF

# The target's training set: its first 10 training pairs in hash order.
sh "$multi" --from-dir "$tmp/tree" --train-size 0 is da,de "$tmp/full" >/dev/null 2>&1
check "--train-size 0: all the target's training pairs" [ "$(wc -l <"$tmp/full/is/train.en")" -eq 42 ]
check "--train-size 10: the first 10 of them" cmp -s "$out/is/train.tsv" - <<EOF
$(head -n 10 "$tmp/full/is/train.tsv")
EOF
check "target: both translations of one string in the same split" \
	[ "$(grep -l "^Open file number d$tab" "$tmp"/full/is/*.tsv | wc -l)" -eq 1 ] &&
	[ "$(cat "$tmp"/full/is/*.tsv | grep -c "^Open file number d$tab")" -eq 2 ]
check "--train-size 0: same held-out sets" diff -r -x 'train.*' -x stats.tsv -x SOURCE "$out" "$tmp/full"
check "the helpers do not depend on the target's training size" diff -r "$out/da" "$tmp/full/da"

sh "$multi" --from-dir "$tmp/tree" --train-size 10 is da "$tmp/one_helper" >/dev/null 2>&1
check "the split does not depend on the helpers: the target" diff -r "$out/is" "$tmp/one_helper/is"
check "the split does not depend on the helpers: a helper" diff -r "$out/da" "$tmp/one_helper/da"
# The purge does: without da, nothing is near "Open file number ed".
sh "$multi" --from-dir "$tmp/tree" --train-size 10 is de "$tmp/no_da" >/dev/null 2>&1
check "without da's near-duplicate the target keeps its test string" grep -qx "Open file number ed" "$tmp/no_da/is/test.en"
check "without da, the target's training set is the same" diff "$out/is/train.tsv" "$tmp/no_da/is/train.tsv"

check "stats.tsv: the target" has "$out/stats.tsv" "is${tab}10${tab}2${tab}1${tab}42${tab}40${tab}39${tab}13${tab}14${tab}10${tab}2${tab}1${tab}0${tab}1"
check "stats.tsv: a helper's pairs" grep -q "^da${tab}$(wc -l <"$out/da/train.en")${tab}$(wc -l <"$out/da/dev.en")${tab}$(wc -l <"$out/da/test.en")${tab}" "$out/stats.tsv"
check "cleaning.tsv: per language and domain" has "$out/cleaning.tsv" "de${tab}beta${tab}1${tab}30${tab}0${tab}0${tab}0${tab}0${tab}0${tab}0${tab}0${tab}0${tab}30"
check "SOURCE: the tag" grep -q '^tag: .*<2X>' "$out/SOURCE"
check "SOURCE: the split" grep -q "^split: .* is's 2th and 4th of 45 distinct" "$out/SOURCE"
check "the table printed" grep -q "^is  *10  *2  *1  *42$" "$tmp/table"

sh "$multi" --from-dir "$tmp/tree" --train-size 10 is da,de "$tmp/again" >/dev/null 2>&1
check "a second run gives identical files" diff -r "$out" "$tmp/again"

# check-multi.sh on the output, then on copies with leaks planted.
sh "$checker" "$out" >"$tmp/ov" 2>"$tmp/err"
check "check-multi: the corpus passes" [ $? -eq 0 ]
check "check-multi: quiet" [ ! -s "$tmp/err" ]
check "check-multi: counts per language" has "$tmp/ov" "is${tab}10${tab}2${tab}1${tab}10${tab}2${tab}1"
check "check-multi: languages compared" grep -q "^# src-tgt, 3 domains: da de is;" "$tmp/ov"
check "check-multi: test-en-in-train 0" grep -q "^test-en-in-train$tab[0-9]*$tab[0-9]*${tab}0${tab}0${tab}0$" "$tmp/ov"
check "check-multi: the target's test strings are in the helpers' test sets" \
	grep -q "^test-en-in-other-test$tab[0-9]*$tab[0-9]*$tab[1-9]" "$tmp/ov"

plant() { # a fresh copy of the output in $tmp/leak
	rm -rf "$tmp/leak"
	cp -R "$out" "$tmp/leak"
}
plant
e=$(head -n 1 "$out/is/test.en")
printf '%s\n' "$e" >>"$tmp/leak/da/train.en"
printf 'Åbn\n' >>"$tmp/leak/da/train.da"
printf '%s\tÅbn\n' "$e" >>"$tmp/leak/da/train.tsv"
printf '<2da> %s\n' "$e" >>"$tmp/leak/da/train.src"
printf 'Åbn\n' >>"$tmp/leak/da/train.tgt"
sh "$checker" "$tmp/leak" >"$tmp/ov" 2>"$tmp/err"
check "check-multi: a target test string in a helper's train fails" [ $? -eq 1 ]
check "check-multi: the string and the language named" grep -q "test-en-in-train: is/test line [0-9]* is in train of da: $e" "$tmp/err"

# The purged pairs put back, as a build without the purge had them: the
# tagged English found near da's training string, in every language.
plant
awk -F '\t' 'NR > 1 { print $1 "\t" $2 "\t" $3 "\t" $4 }' "$out/neardup.tsv" |
	while IFS="$tab" read -r l s e x; do
		printf '%s\n' "$e" >>"$tmp/leak/$l/$s.en"
		printf '%s\n' "$x" >>"$tmp/leak/$l/$s.$l"
		printf '%s\t%s\n' "$e" "$x" >>"$tmp/leak/$l/$s.tsv"
		printf '<2%s> %s\n' "$l" "$e" >>"$tmp/leak/$l/$s.src"
		printf '%s\n' "$x" >>"$tmp/leak/$l/$s.tgt"
	done
sh "$checker" "$tmp/leak" >"$tmp/ov" 2>"$tmp/err"
check "check-multi: the purged pairs put back fail" [ $? -eq 1 ]
check "check-multi: found near, in three languages" grep -q "^test-en-near-in-train$tab[0-9]*$tab[0-9]*${tab}3${tab}1${tab}0$" "$tmp/ov"
check "check-multi: no exact leak" grep -q "^test-en-in-train$tab[0-9]*$tab[0-9]*${tab}0${tab}0${tab}0$" "$tmp/ov"
check "check-multi: the near-duplicate named" grep -qF "test-en-near-in-train: is/test line 2 is near train of da: Open file number ed (near: OPEN file number ED (2).)" "$tmp/err"

plant
sed '1s/^<2is> /<2da> /' "$out/is/dev.src" >"$tmp/leak/is/dev.src"
sh "$checker" "$tmp/leak" >/dev/null 2>"$tmp/err"
check "check-multi: a wrong tag fails" [ $? -eq 1 ]
check "check-multi: the wrong tag named" grep -q "is/dev line 1: .src is not <2is>" "$tmp/err"

plant
echo extra >>"$tmp/leak/de/test.tgt"
sh "$checker" "$tmp/leak" >/dev/null 2>"$tmp/err"
check "check-multi: misaligned files fail" [ $? -eq 2 ]
check "check-multi: misaligned files named" grep -q "de/test line .*different numbers of lines" "$tmp/err"

# Errors.
sh "$multi" --from-dir "$tmp/tree" is da,fr "$tmp/bad" >/dev/null 2>"$tmp/err"
check "a language without a tree refused" grep -q "$tmp/tree/fr: no such directory" "$tmp/err"
check "nothing written after a failure" [ ! -e "$tmp/bad" ]
sh "$multi" --from-dir "$tmp/tree" is da,is "$tmp/bad" >/dev/null 2>"$tmp/err"
check "a language twice refused" grep -q "a language is named twice" "$tmp/err"
sh "$multi" --from-dir "$tmp/tree" is en "$tmp/bad" >/dev/null 2>"$tmp/err"
check "en as a language refused" grep -q "en is the source" "$tmp/err"
sh "$multi" --from-dir "$tmp/tree" --domains alpha --train-size 5 is da "$tmp/small" >/dev/null 2>"$tmp/err"
check "--domains alpha: 26 distinct strings, one test string" [ "$(sort -u "$tmp/small/is/test.en" | wc -l)" -eq 1 ]
check "--domains alpha: no beta string" [ -z "$(grep -h 'number \(f[b-j]\|[gh][a-j]\|ia\)$' "$tmp"/small/da/*.en)" ]
# A kept tree lacks the directory of a domain without catalogues of its
# language: that language goes on without it; a domain in no tree is refused.
mkdir -p "$tmp/tree3"
cp -R "$tmp/tree/is" "$tmp/tree/da" "$tmp/tree3/"
rm -rf "$tmp/tree3/da/beta"
sh "$multi" --from-dir "$tmp/tree3" --domains alpha,beta is da "$tmp/nobeta" >/dev/null 2>"$tmp/err"
check "a helper without a domain goes on" [ $? -eq 0 ]
check "the missing domain reported" grep -q "da: no beta in $tmp/tree3/da: goes on without it" "$tmp/err"
check "the helper without beta: alpha's pairs only" [ "$(cat "$tmp"/nobeta/da/*.en | wc -l)" -eq 50 ]
sh "$multi" --from-dir "$tmp/tree3" --domains alpha,gamma is da "$tmp/bad" >/dev/null 2>"$tmp/err"
check "a domain in no tree refused" grep -q "unknown domain gamma" "$tmp/err"
mkdir -p "$tmp/tree2"
cp -R "$tmp/tree/da" "$tmp/tree/de" "$tmp/tree2/"
mkdir -p "$tmp/tree2/is"
cp -R "$tmp/tree/is/beta" "$tmp/tree2/is/"
sed -i '/number \(c[g-j]\|d[a-j]\|e[a-f]\)"/,+1d' "$tmp/tree2/is/beta/pkg-beta/usr/share/locale/is/LC_MESSAGES/beta.po"
msgfmt -o "$tmp/tree2/is/beta/pkg-beta/usr/share/locale/is/LC_MESSAGES/beta.mo" \
	"$tmp/tree2/is/beta/pkg-beta/usr/share/locale/is/LC_MESSAGES/beta.po"
sh "$multi" --from-dir "$tmp/tree2" --domains beta is da "$tmp/bad" >/dev/null 2>"$tmp/err"
check "a target too small for dev and test refused" grep -q "is has 6 distinct English strings: too few" "$tmp/err"

checks_done gettext-multi
