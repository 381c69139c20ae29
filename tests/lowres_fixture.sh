#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes a small ten-language corpus for the low-resource translation stage
# of repro/tupitsa2024 (run.sh --quick --only lowres), through
# data/gettext/build-multi.sh --from-dir, so that CI runs that stage end to
# end without the 111 MB download: English to is (the target) and to the
# nine helper languages of examples/lowres-is-*.json, gettext catalogues
# made here with msgfmt. The English strings come from templates
# ("Open the file number h", the number spelt in letters, 0-9 as a-j:
# strings that differ in digits alone are near-duplicates, which
# build-multi.sh keeps out of the held-out sets); each language translates
# them word for word from its own small dictionary. Needs msgfmt (Debian:
# gettext).
#
# Usage: tests/lowres_fixture.sh OUTDIR
set -eu
export LC_ALL=C
[ $# -eq 1 ] || { echo "usage: lowres_fixture.sh OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
out=$1
command -v msgfmt >/dev/null 2>&1 || { echo "lowres_fixture.sh: msgfmt is not installed (Debian: gettext)" >&2; exit 77; }
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT

# catalogue LANG FIRST LAST VERB1 VERB2 VERB3 NOUN1 NOUN2 NOUN3 NUMBER:
# LANG's catalogue of the strings "VERB the NOUN number I" for I in
# FIRST..LAST (three verbs and three nouns of English, in LANG's words).
catalogue() {
	l=$1
	# (DIR/LANG/DOMAIN/PACKAGE/...: the tree build-multi.sh --from-dir reads)
	dir=$tree/$l/fixture/pkg-fixture/usr/share/locale/$l/LC_MESSAGES
	mkdir -p "$dir"
	awk -v first="$2" -v last="$3" -v v="$4 $5 $6" -v n="$7 $8 $9" -v num="${10}" '
	function letters(i,    s, k, w) {
		s = i ""
		w = ""
		for (k = 1; k <= length(s); k++)
			w = w substr("abcdefghij", substr(s, k, 1) + 1, 1)
		return w
	}
	BEGIN {
		split("Open Save Close", ev, " "); split("file window folder", en, " ")
		split(v, tv, " "); split(n, tn, " ")
		printf "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n"
		for (i = first; i <= last; i++) {
			a = i % 3 + 1; b = int(i / 3) % 3 + 1
			w = letters(i)
			printf "msgid \"%s the %s number %s\"\nmsgstr \"%s %s %s %s\"\n\n", ev[a], en[b], w, tv[a], tn[b], num, w
		}
	}' >"$dir/fixture.po"
	msgfmt -o "$dir/fixture.mo" "$dir/fixture.po"
	rm -f "$dir/fixture.po"
}
# The target has fewer strings than the helpers; the helpers' ranges
# overlap its own, so its held-out English strings occur in their data
# too (build-multi.sh must keep those out of every training set).
catalogue is 1 400 Opna Vista Loka skrána gluggann möppuna númer
catalogue da 1 700 Åbn Gem Luk filen vinduet mappen nummer
catalogue nb 100 800 Åpne Lagre Lukk fila vinduet mappa nummer
catalogue sv 1 700 Öppna Spara Stäng filen fönstret mappen nummer
catalogue de 50 750 Öffne Speichere Schließe Datei Fenster Ordner Nummer
catalogue nl 1 600 Open Bewaar Sluit bestand venster map nummer
catalogue fr 1 700 Ouvrir Enregistrer Fermer fichier fenêtre dossier numéro
catalogue fi 200 900 Avaa Tallenna Sulje tiedosto ikkuna kansio numero
catalogue hu 1 600 Nyisd Mentsd Zárd fájlt ablakot mappát szám
catalogue eu 1 500 Ireki Gorde Itxi fitxategia leihoa karpeta zenbakia
sh "$here/../data/gettext/build-multi.sh" --from-dir "$tree" --train-size 200 \
	is da,nb,sv,de,nl,fr,fi,hu,eu "$out" >/dev/null
