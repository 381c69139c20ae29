#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks the processing part of data/gettext/build.sh (--from-dir) on
# handmade catalogues (tests/data/gettext/tree, compiled with msgfmt here):
# plural forms, msgctxt, multi-line strings, escapes, Latin-1, untranslated
# and format-only strings, accelerators, identical and duplicate pairs,
# length filters, other languages ignored, the pinned deterministic splits,
# held-out strings kept out of every domain's training data, the output
# layout and statistics, held-out pairs that are near-duplicates of a
# training string (case, punctuation, digits) purged, both directions,
# --no-split, and the error messages. Also
# po.awk alone on PO input that msgfmt would not pass (fuzzy, obsolete), and
# check-overlap.sh on the output and on copies with planted leaks, exact
# and near.
set -u
export LC_ALL=C
srcdir=${srcdir:-.}
build="$srcdir/data/gettext/build.sh"
fixtures="$srcdir/tests/data/gettext"
for tool in msgfmt msgunfmt msgconv; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "SKIP: $tool is not installed (Debian: apt-get install gettext)"
		exit 77
	}
done
# shellcheck source=tests/checks.sh
. "$srcdir/tests/checks.sh"
tab=$(printf '\t')

has() { # file, exact line: the line occurs exactly once
	[ "$(grep -cxF -- "$2" "$1")" -eq 1 ]
}

hasnt() { # file, fixed string: occurs nowhere
	! grep -qF -- "$2" "$1"
}

not() { # a command that must fail
	! "$@"
}

# The tree with .mo files next to the .po fixtures.
cp -R "$fixtures/tree" "$tmp/tree"
chmod -R u+w "$tmp/tree"
for po in $(cd "$tmp/tree" && find . -name '*.po'); do
	msgfmt -o "$tmp/tree/${po%.po}.mo" "$tmp/tree/$po" || {
		echo "msgfmt failed on $po"
		exit 99
	}
done

sh "$build" --from-dir "$tmp/tree" --max-tokens 30 en de "$tmp/out" >"$tmp/table" 2>"$tmp/err"
status=$?
check "build succeeds" [ $status -eq 0 ]
[ $status -eq 0 ] || cat "$tmp/err" >&2
out=$tmp/out
cat "$out/alpha/train.tsv" "$out/alpha/dev.tsv" "$out/alpha/test.tsv" >"$tmp/alpha"
cat "$out/beta/train.tsv" "$out/beta/dev.tsv" "$out/beta/test.tsv" >"$tmp/beta"

ok=1
for d in alpha beta all; do
	for s in train dev test; do
		for f in en de tsv; do
			[ -f "$out/$d/$s.$f" ] || ok=0
		done
		n=$(wc -l <"$out/$d/$s.tsv")
		[ "$(wc -l <"$out/$d/$s.en")" -eq "$n" ] && [ "$(wc -l <"$out/$d/$s.de")" -eq "$n" ] || ok=0
		cut -f1 "$out/$d/$s.tsv" | cmp -s - "$out/$d/$s.en" || ok=0
		cut -f2 "$out/$d/$s.tsv" | cmp -s - "$out/$d/$s.de" || ok=0
	done
done
check "aligned .en, .de and .tsv for every domain and split" [ "$ok" -eq 1 ]
for f in stats.tsv cleaning.tsv neardup.tsv SOURCE; do
	check "$f written" [ -s "$out/$f" ]
done
check "only the domains' directories" [ "$(ls "$out" | tr '\n' ' ')" = "SOURCE all alpha beta cleaning.tsv neardup.tsv stats.tsv " ]

check "plural: singular pair" has "$tmp/alpha" "%d file was deleted$tab%d Datei wurde gelöscht"
check "plural: plural pair" has "$tmp/alpha" "%d files were deleted$tab%d Dateien wurden gelöscht"
check "msgctxt: one translation of Open" has "$tmp/alpha" "Open${tab}Öffnen"
check "msgctxt: the other translation of Open" has "$tmp/alpha" "Open${tab}Offen"
check "multi-line string, newlines become spaces" has "$tmp/alpha" \
	"Usage: frob [OPTION]... FILE Copy FILE to the frobnication directory.${tab}Aufruf: frob [OPTION]... DATEI DATEI in das Frobnikations- verzeichnis kopieren."
check "escapes: quotes, tab, backslash" has "$tmp/alpha" "Say \"hello\" to C:\\temp${tab}Sag „hallo“ zu C:\\temp"
check "Latin-1 catalogue converted to UTF-8" has "$tmp/alpha" "Close${tab}Schließen"
check "untranslated entry absent" hasnt "$tmp/alpha" "Nobody translated"
check "format-only strings dropped" not grep -qE "^(%s: %s|%d%%|<b>%s</b>|X:)$tab" "$tmp/alpha"
check "short identical pair kept" has "$tmp/alpha" "Status${tab}Status"
check "long identical pair dropped" hasnt "$tmp/alpha" "frob_tree"
check "translator credits dropped" hasnt "$tmp/alpha" "Mustermann"
check "accelerator _ (moved in the translation)" has "$tmp/alpha" "Save As…${tab}Speichern unter …"
check "accelerator &" has "$tmp/alpha" "Quit${tab}Beenden"
check "accelerator ~" has "$tmp/alpha" "Help${tab}Hilfe"
check "accelerator in a label copied whole" has "$tmp/alpha" "Radius:${tab}Radius:"
check "accelerator before one character" has "$tmp/alpha" "Page N of M${tab}Seite N von M"
check "accelerator only in the translation" has "$tmp/alpha" "Mark as ham${tab}Als Nicht-Spam markieren"
check "accelerator inside a capitalised word" has "$tmp/alpha" "Description${tab}Beschreibung"
check "variable name copied: underscore kept" has "$tmp/alpha" "GIT_DIR is not set${tab}GIT_DIR ist nicht gesetzt"
check "entity &amp; kept" has "$tmp/alpha" "Drag &amp; Drop${tab}Ziehen &amp; Ablegen"
check "identifier renamed: underscore kept" has "$tmp/alpha" "Set PROGRAM_NAME first${tab}Zuerst PROGRAMMNAME setzen"
check "over --max-tokens dropped" hasnt "$tmp/alpha" "thirty-one"
check "length ratio over 9 dropped" not grep -q "^Done$tab" "$tmp/alpha"
check "duplicate in a domain once (msgctxt, two catalogues)" has "$tmp/alpha" "Zoom in${tab}Vergrößern"
check "same pair in two domains kept in both" has "$tmp/beta" "Zoom in${tab}Vergrößern"
check "other languages ignored (fr)" hasnt "$out/all/train.tsv" "Fermer"
check "other languages ignored (de_CH)" hasnt "$tmp/beta" "schliessen"
check "cleaning counts, alpha" has "$out/cleaning.tsv" "alpha	2	41	1	4	1	1	1	2	0	0	31"
check "cleaning counts, beta (one held-out string of alpha, two near-duplicates of alpha's)" has "$out/cleaning.tsv" "beta	1	50	0	0	0	0	0	0	1	2	47"

# The splits are pinned: they depend on the hash of the English only.
check "alpha test" [ "$(cat "$out/alpha/test.tsv")" = "Print the document${tab}Dokument drucken" ]
check "alpha dev" [ "$(cat "$out/alpha/dev.tsv")" = "%d files were deleted${tab}%d Dateien wurden gelöscht" ]
check "beta test" [ "$(cat "$out/beta/test.tsv")" = "Outgoing mail server${tab}Postausgangsserver" ]
check "beta dev: empty, its string a near-duplicate" [ -f "$out/beta/dev.tsv" ] && [ ! -s "$out/beta/dev.tsv" ]
cat "$out"/alpha/test.en "$out"/beta/test.en | sort -u >"$tmp/held_test"
cat "$out"/alpha/dev.en "$out"/beta/dev.en | sort -u >"$tmp/held_dev"
cat "$out"/alpha/train.en "$out"/beta/train.en | sort -u >"$tmp/trained"
check "alpha's test string is not trained on in beta" hasnt "$tmp/beta" "Print the document"
check "no test string in any train or dev set" [ -z "$(cat "$out"/*/dev.en "$tmp/trained" | sort -u | comm -12 - "$tmp/held_test")" ]
check "no dev string in any train set" [ -z "$(comm -12 "$tmp/trained" "$tmp/held_dev")" ]
check "union is the domains in order" [ "$(cat "$out/alpha/train.tsv" "$out/beta/train.tsv" | cksum)" = "$(cksum <"$out/all/train.tsv")" ]

check "stats.tsv header" [ "$(head -n 1 "$out/stats.tsv" | cut -f1-4)" = "domain${tab}pairs.train${tab}pairs.dev${tab}pairs.test" ]
check "stats.tsv alpha: pairs and tokens" [ "$(grep '^alpha' "$out/stats.tsv" | cut -f2-5)" = "29${tab}1${tab}1${tab}82" ]
check "stats.tsv all: sums" [ "$(grep '^all' "$out/stats.tsv" | cut -f2-4)" = "75${tab}1${tab}2" ]
check "stats.tsv beta: an empty dev set, the test set counted as test" [ "$(grep '^beta' "$out/stats.tsv" | cut -f2-7)" = "46${tab}0${tab}1${tab}152${tab}0${tab}3" ]
check "table printed with totals" grep -q "^all  *75  *1  *2  *234 " "$tmp/table"

# Near-duplicates: two of beta's held-out strings differ from training
# strings of alpha only in case, punctuation and digits (one.po); they are
# purged from beta's test and dev sets, training unchanged.
check "near-duplicate test string purged" hasnt "$out/all/test.en" "The message could not be sent"
check "near-duplicate dev string purged" hasnt "$out/all/dev.en" "Rename the folder"
check "its near-duplicate trained on" has "$out/alpha/train.en" "THE MESSAGE COULD NOT BE SENT: 42"
check "neardup.tsv: header and the two purged pairs" [ "$(cat "$out/neardup.tsv")" = "domain${tab}split${tab}en${tab}de${tab}jaccard${tab}train.en
beta${tab}test${tab}The message could not be sent${tab}Die Nachricht konnte nicht gesendet werden${tab}1.000${tab}THE MESSAGE COULD NOT BE SENT: 42
beta${tab}dev${tab}Rename the folder${tab}Ordner umbenennen${tab}1.000${tab}Rename the Folder 2" ]
check "stats.tsv: purged per split" [ "$(cut -f1,17,18 "$out/stats.tsv" | tr '\n' ' ')" = "domain${tab}neardup.dev${tab}neardup.test alpha${tab}0${tab}0 beta${tab}1${tab}1 all${tab}1${tab}1 " ]
check "SOURCE: the purge counted" grep -q '^near-duplicates: 2 dev and test pairs' "$out/SOURCE"
check "the purge reported" grep -q '^build.sh: 2 held-out pairs purged as near-duplicates' "$tmp/err"

sh "$build" --from-dir "$tmp/tree" --max-tokens 30 en de "$tmp/again" >/dev/null 2>&1
check "a second run gives identical files" diff -r "$out" "$tmp/again"

sh "$build" --from-dir "$tmp/tree" en de "$tmp/long" >/dev/null 2>&1
check "default --max-tokens 200 keeps the 31-token pair" grep -q "thirty-one" "$tmp/long/all/train.tsv"

sh "$build" --from-dir "$tmp/tree" --max-tokens 30 de en "$tmp/rev" >/dev/null 2>&1
check "de-en: files named by language" [ -f "$tmp/rev/alpha/train.de" ]
check "de-en: same split, columns swapped" [ "$(cat "$tmp/rev/alpha/test.tsv")" = "Dokument drucken${tab}Print the document" ]
check "de-en: same files" cmp -s "$tmp/rev/all/train.en" "$out/all/train.en"
check "de-en: the same purge" cmp -s "$tmp/rev/all/test.en" "$out/all/test.en"
check "de-en: neardup.tsv in the direction built" grep -q "^beta${tab}test${tab}Die Nachricht konnte nicht gesendet werden${tab}The message could not be sent${tab}" "$tmp/rev/neardup.tsv"

# --no-split: the cleaned pairs per domain, before the splits and the
# cross-domain rule (what build-multi.sh reads).
sh "$build" --from-dir "$tmp/tree" --max-tokens 30 --no-split en de "$tmp/nosplit" >/dev/null 2>&1
check "--no-split: pairs.tsv per domain, no splits" [ "$(cd "$tmp/nosplit" && find . -type f | sort | tr '\n' ' ')" = "./SOURCE ./alpha/pairs.tsv ./beta/pairs.tsv ./cleaning.tsv " ]
check "--no-split: alpha's pairs are those of its splits" [ "$(sort "$tmp/nosplit/alpha/pairs.tsv" | cksum)" = "$(sort "$tmp/alpha" | cksum)" ]
check "--no-split: beta keeps alpha's test string" has "$tmp/nosplit/beta/pairs.tsv" "Print the document${tab}Dokument drucken"
check "--no-split: cleaning counts without leaks or near-duplicates" has "$tmp/nosplit/cleaning.tsv" "beta	1	50	0	0	0	0	0	0	0	0	50"

# check-overlap.sh on the fixture corpus, then on copies with leaks planted.
overlap="$srcdir/data/gettext/check-overlap.sh"
sh "$overlap" "$out" >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: the built corpus passes" [ $? -eq 0 ]
check "check-overlap: quiet when nothing leaks" [ ! -s "$tmp/err" ]
check "check-overlap: all domains and the union" has "$tmp/ov" "# en-de, 3 domains: all alpha beta; pairs: 150 train, 2 dev, 4 test"
check "check-overlap: the union found" has "$tmp/ov" "# all contains alpha beta"
for c in test-pair test-en dev-pair dev-en test-pair-near test-en-near dev-pair-near dev-en-near; do
	check "check-overlap: $c-in-train 0" grep -qx "$c-in-train$tab[0-9]*${tab}150${tab}0${tab}0${tab}0" "$tmp/ov"
done
check "check-overlap: no test string shared between domains" has "$tmp/ov" "test-en-in-other-test${tab}4${tab}4${tab}0${tab}0${tab}any"
check "check-overlap: result ok" has "$tmp/ov" "result${tab}ok"
sh "$overlap" "$out" beta >"$tmp/ov" 2>&1
check "check-overlap: one domain named" has "$tmp/ov" "# en-de, 1 domains: beta; pairs: 46 train, 0 dev, 1 test"

plant() { # NAME: a fresh copy of the corpus in $tmp/NAME
	rm -rf "${tmp:?}/$1"
	cp -R "$out" "$tmp/$1"
}
plant leak
printf 'Outgoing mail server\n' >>"$tmp/leak/alpha/train.en"
printf 'Postausgangsserver\n' >>"$tmp/leak/alpha/train.de"
sh "$overlap" "$tmp/leak" >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: a test pair in another domain's train set fails" [ $? -eq 1 ]
check "check-overlap: the pair counted in beta and all" has "$tmp/ov" "test-pair-in-train${tab}4${tab}151${tab}2${tab}1${tab}0"
check "check-overlap: and its English" has "$tmp/ov" "test-en-in-train${tab}4${tab}151${tab}2${tab}1${tab}0"
check "check-overlap: result LEAK" has "$tmp/ov" "result${tab}LEAK"
check "check-overlap: the pair and its domains named" has "$tmp/err" \
	"check-overlap.sh: test-pair-in-train: beta/test line 1 is in train of alpha: Outgoing mail server${tab}Postausgangsserver"

plant leak
printf 'Outgoing mail server\n' >>"$tmp/leak/alpha/train.en"
printf 'Ausgangsserver\n' >>"$tmp/leak/alpha/train.de"
sh "$overlap" "$tmp/leak" >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: a test sentence's English alone in a train set fails" [ $? -eq 1 ]
check "check-overlap: English only, no pair" has "$tmp/ov" "test-pair-in-train${tab}4${tab}151${tab}0${tab}0${tab}0"
check "check-overlap: English only counted" has "$tmp/ov" "test-en-in-train${tab}4${tab}151${tab}2${tab}1${tab}0"
check "check-overlap: the English sentence named" has "$tmp/err" \
	"check-overlap.sh: test-en-in-train: beta/test line 1 is in train of alpha: Outgoing mail server"

plant leak
cat "$out/alpha/dev.en" >>"$tmp/leak/beta/train.en"
cat "$out/alpha/dev.de" >>"$tmp/leak/beta/train.de"
cat "$out/alpha/dev.en" >>"$tmp/leak/all/train.en"
cat "$out/alpha/dev.de" >>"$tmp/leak/all/train.de"
sh "$overlap" "$tmp/leak" >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: a dev pair in a train set fails" [ $? -eq 1 ]
check "check-overlap: dev pair counted" has "$tmp/ov" "dev-pair-in-train${tab}2${tab}152${tab}2${tab}1${tab}0"
check "check-overlap: dev pair named with both train sets" has "$tmp/err" \
	"check-overlap.sh: dev-pair-in-train: alpha/dev line 1 is in train of all,beta: %d files were deleted${tab}%d Dateien wurden gelöscht"

# Quotes, a backslash and a tab turned space on the held-out side.
plant leak
grep '^Say "hello"' "$out/alpha/train.tsv" | cut -f1 >>"$tmp/leak/beta/test.en"
grep '^Say "hello"' "$out/alpha/train.tsv" | cut -f2 >>"$tmp/leak/beta/test.de"
sh "$overlap" "$tmp/leak" alpha beta >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: a train pair of alpha in beta's test set fails" [ $? -eq 1 ]
check "check-overlap: backslash and quotes kept in the message" has "$tmp/err" \
	"check-overlap.sh: test-en-in-train: beta/test line 2 is in train of alpha: Say \"hello\" to C:\\temp"

# Near-duplicates. The two pairs build.sh purged (neardup.tsv) put back
# into beta and the union, as a build without the purge had them: caught,
# and the exact checks still find nothing.
plant leak
for s in test dev; do
	awk -F '\t' -v s="$s" '$2 == s { print $3 }' "$out/neardup.tsv" >"$tmp/back.en"
	awk -F '\t' -v s="$s" '$2 == s { print $4 }' "$out/neardup.tsv" >"$tmp/back.de"
	for d in beta all; do
		cat "$tmp/back.en" >>"$tmp/leak/$d/$s.en"
		cat "$tmp/back.de" >>"$tmp/leak/$d/$s.de"
	done
done
sh "$overlap" "$tmp/leak" >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: the purged pairs put back fail" [ $? -eq 1 ]
check "check-overlap: put back, no exact leak" [ "$(grep -c "^[a-z]*-\(pair\|en\)-in-train${tab}[0-9]*${tab}[0-9]*${tab}0${tab}" "$tmp/ov")" -eq 4 ]
check "check-overlap: the test string's English found, in beta and all" has "$tmp/ov" "test-en-near-in-train${tab}6${tab}150${tab}2${tab}1${tab}0"
check "check-overlap: not its pair (another translation)" has "$tmp/ov" "test-pair-near-in-train${tab}6${tab}150${tab}0${tab}0${tab}0"
check "check-overlap: the dev pair found" has "$tmp/ov" "dev-pair-near-in-train${tab}4${tab}150${tab}2${tab}1${tab}0"
check "check-overlap: and its English" has "$tmp/ov" "dev-en-near-in-train${tab}4${tab}150${tab}2${tab}1${tab}0"
check "check-overlap: the near-duplicate named with its training string" has "$tmp/err" \
	"check-overlap.sh: test-en-near-in-train: beta/test line 2 is near train of all,alpha: The message could not be sent (near: THE MESSAGE COULD NOT BE SENT: 42)"
check "check-overlap: the near pair named with its training pair" has "$tmp/err" \
	"check-overlap.sh: dev-pair-near-in-train: beta/dev line 1 is near train of all,alpha: Rename the folder${tab}Ordner umbenennen (near: Rename the Folder 2${tab}Ordner umbenennen (2))"

# Case, punctuation, digits and white space on the training side, and a
# held-out sentence of 10 words with one more than a training sentence
# (Jaccard 6/7 over 5-word shingles). What differs by a word in a short
# string is no near-duplicate: the fixture's "%d files were deleted" (dev)
# and "%d file was deleted" (train) pass above.
plant leak
printf '%s\n' "print the DOCUMENT." "Outgoing  mail	server 2" >>"$tmp/leak/alpha/train.en"
printf '%s\n' "Das Dokument drucken" "POSTAUSGANGSSERVER." >>"$tmp/leak/alpha/train.de"
usage=$(grep '^Usage: frob' "$out/alpha/train.en")
printf '%s now.\n' "${usage%.}" >>"$tmp/leak/beta/test.en"
printf 'z\n' >>"$tmp/leak/beta/test.de"
sh "$overlap" "$tmp/leak" alpha beta >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: near-duplicates in a training set fail" [ $? -eq 1 ]
check "check-overlap: no exact leak there" has "$tmp/ov" "test-en-in-train${tab}3${tab}77${tab}0${tab}0${tab}0"
check "check-overlap: three test strings near" has "$tmp/ov" "test-en-near-in-train${tab}3${tab}77${tab}3${tab}3${tab}0"
check "check-overlap: one pair near on both sides" has "$tmp/ov" "test-pair-near-in-train${tab}3${tab}77${tab}1${tab}1${tab}0"
check "check-overlap: the pair named with the training pair" has "$tmp/err" \
	"check-overlap.sh: test-pair-near-in-train: beta/test line 1 is near train of alpha: Outgoing mail server${tab}Postausgangsserver (near: Outgoing  mail${tab}server 2${tab}POSTAUSGANGSSERVER.)"
check "check-overlap: the long sentence near its training sentence" has "$tmp/err" \
	"check-overlap.sh: test-en-near-in-train: beta/test line 2 is near train of alpha: ${usage%.} now. (near: $usage)"

# Test sets may share sentences: counted, not a failure.
plant leak
cat "$out/alpha/test.en" >>"$tmp/leak/beta/test.en"
cat "$out/alpha/test.de" >>"$tmp/leak/beta/test.de"
sh "$overlap" "$tmp/leak" alpha beta >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: a test sentence in two domains passes" [ $? -eq 0 ]
check "check-overlap: and is counted" has "$tmp/ov" "test-en-in-other-test${tab}3${tab}3${tab}2${tab}1${tab}any"

# The other direction: the English side is TGT.
sh "$overlap" --src de --tgt en "$tmp/rev" >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: de-en passes" [ $? -eq 0 ]
rm -rf "$tmp/leak"
cp -R "$tmp/rev" "$tmp/leak"
printf 'Postausgang\n' >>"$tmp/leak/alpha/train.de"
printf 'Outgoing mail server\n' >>"$tmp/leak/alpha/train.en"
sh "$overlap" --src de --tgt en "$tmp/leak" alpha beta >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: de-en, the English side found" has "$tmp/ov" "test-en-in-train${tab}2${tab}76${tab}1${tab}1${tab}0"
check "check-overlap: de-en, no German-keyed pair" has "$tmp/ov" "test-pair-in-train${tab}2${tab}76${tab}0${tab}0${tab}0"
rm -rf "$tmp/leak"
cp -R "$tmp/rev" "$tmp/leak"
printf 'Postausgangsserver\n' >>"$tmp/leak/alpha/train.de"
printf 'OUTGOING MAIL SERVER!\n' >>"$tmp/leak/alpha/train.en"
sh "$overlap" --src de --tgt en "$tmp/leak" alpha beta >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: de-en, a near-duplicate of the English side fails" [ $? -eq 1 ]
check "check-overlap: de-en, the English side near" has "$tmp/ov" "test-en-near-in-train${tab}2${tab}76${tab}1${tab}1${tab}0"
check "check-overlap: de-en, and the pair" has "$tmp/ov" "test-pair-near-in-train${tab}2${tab}76${tab}1${tab}1${tab}0"
check "check-overlap: de-en, the pair named SRC first" grep -qF \
	"test-pair-near-in-train: beta/test line 1 is near train of alpha: Postausgangsserver${tab}Outgoing mail server (near: Postausgangsserver${tab}OUTGOING MAIL SERVER!)" "$tmp/err"

# A tab inside a sentence does not join two different pairs.
mkdir -p "$tmp/tabs/x"
printf 'a\tb\n' >"$tmp/tabs/x/train.en"
printf 'c\n' >"$tmp/tabs/x/train.de"
printf 'a\n' >"$tmp/tabs/x/test.en"
printf 'b\tc\n' >"$tmp/tabs/x/test.de"
: >"$tmp/tabs/x/dev.en"
: >"$tmp/tabs/x/dev.de"
sh "$overlap" "$tmp/tabs" >"$tmp/ov" 2>"$tmp/err"
check "check-overlap: a b TAB c is not a TAB b c" [ $? -eq 0 ]

# Errors: misaligned files, a missing domain.
plant leak
echo extra >>"$tmp/leak/alpha/dev.de"
sh "$overlap" "$tmp/leak" >/dev/null 2>"$tmp/err"
check "check-overlap: misaligned files fail" [ $? -eq 2 ]
check "check-overlap: misaligned files named" grep -q 'alpha/dev.de: more lines than .*alpha/dev.en' "$tmp/err"
sh "$overlap" "$out" gamma >/dev/null 2>"$tmp/err"
check "check-overlap: unknown domain fails" [ $? -eq 2 ]
check "check-overlap: unknown domain named" grep -q 'gamma/train.en: missing' "$tmp/err"

sh "$build" --from-dir "$tmp/tree" --domains beta en de "$tmp/beta_only" >/dev/null 2>&1
check "--domains: no alpha" [ ! -d "$tmp/beta_only/alpha" ]
check "--domains: beta" [ -s "$tmp/beta_only/beta/train.tsv" ]
check "--domains: without alpha its test string stays in beta" grep -q "^Print the document$tab" "$tmp/beta_only/beta/dev.tsv"

# Errors: an empty domain, an unknown one, no English side.
mkdir -p "$tmp/tree/gamma/pkg-four/usr/share/locale/fr/LC_MESSAGES"
cp "$tmp/tree/alpha/pkg-one/usr/share/locale/fr/LC_MESSAGES/one.mo" "$tmp/tree/gamma/pkg-four/usr/share/locale/fr/LC_MESSAGES/"
sh "$build" --from-dir "$tmp/tree" en de "$tmp/bad" >/dev/null 2>"$tmp/err"
check "empty domain fails" [ $? -ne 0 ]
check "nothing written after a failure" [ ! -e "$tmp/bad" ]
check "empty domain named, others offered" grep -q 'no pairs for de in domain(s): gamma; these have some: --domains alpha,beta' "$tmp/err"
sh "$build" --from-dir "$tmp/tree" --no-split en de "$tmp/nosplit2" >/dev/null 2>"$tmp/err"
check "--no-split: an empty domain is no error" [ $? -eq 0 ]
check "--no-split: the empty domain reported" grep -q 'no pairs for de in domain(s): gamma (written empty)' "$tmp/err"
check "--no-split: the empty domain written empty" [ -f "$tmp/nosplit2/gamma/pairs.tsv" ] && [ ! -s "$tmp/nosplit2/gamma/pairs.tsv" ]
sh "$build" --from-dir "$tmp/tree" --domains alpha,gamma en fr "$tmp/fr" >/dev/null 2>&1
check "the same tree in French: alpha has a pair" has "$tmp/fr/alpha/train.tsv" "Close the window${tab}Fermer la fenêtre"
check "the same tree in French: gamma has a pair" has "$tmp/fr/gamma/train.tsv" "Close the window${tab}Fermer la fenêtre"
sh "$build" --from-dir "$tmp/tree" --domains alpha,delta en de "$tmp/bad" >/dev/null 2>"$tmp/err"
check "unknown domain refused" grep -q 'unknown domain delta' "$tmp/err"
sh "$build" --from-dir "$tmp/tree" de fr "$tmp/bad" >/dev/null 2>"$tmp/err"
check "no English side refused" grep -q 'one of SRC and TGT must be en' "$tmp/err"

# po.awk alone.
po_awk="$srcdir/data/gettext/po.awk"
LC_ALL=C awk -f "$po_awk" -v file=raw.po -v counts="$tmp/counts" "$fixtures/raw.po" >"$tmp/raw" 2>"$tmp/err"
check "po.awk reads raw.po" [ $? -eq 0 ]
check "po.awk: entries without blank lines, comments, msgctxt" [ "$(head -n 3 "$tmp/raw")" = "First${tab}Erste
Second${tab}Zweite
Third${tab}Dritte" ]
check "po.awk: one plural form serves both" [ "$(sed -n '4,5p' "$tmp/raw")" = "One apple${tab}%d Äpfel
%d apples${tab}%d Äpfel" ]
check "po.awk: octal, hex and control escapes" has "$tmp/raw" "OctalA and hexB and bell${tab}OktalA und hexB und Glocke"
check "po.awk: whitespace normalised" has "$tmp/raw" "Spaces around${tab}Leerraum ringsum"
check "po.awk: fuzzy, untranslated and obsolete skipped" [ "$(wc -l <"$tmp/raw")" -eq 7 ]
check "po.awk: fuzzy counted" has "$tmp/counts" "fuzzy${tab}1"
check "po.awk: untranslated counted" has "$tmp/counts" "untranslated${tab}1"
printf 'msgid "a"\nmsgstr "b"\nbogus line\n' >"$tmp/broken.po"
LC_ALL=C awk -f "$po_awk" -v file=broken.po "$tmp/broken.po" >/dev/null 2>"$tmp/err"
check "po.awk: a broken line fails" [ $? -ne 0 ]
check "po.awk: the error names file and line" grep -q '^broken.po:3: cannot parse' "$tmp/err"

checks_done gettext-build
