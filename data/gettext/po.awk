# SPDX-License-Identifier: Apache-2.0
# Reads a PO file (as msgunfmt | msgconv -t UTF-8 writes it) and prints one
# translated message per line: "ENGLISH<TAB>TRANSLATION".
# POSIX awk; run with LC_ALL=C so strings are handled as bytes.
#
# - Strings may continue over several "..." lines; C escapes (\n \t \" \\,
#   octal, hex) are decoded; tabs, newlines and other control characters
#   become spaces, runs of spaces one space, and ends are trimmed, so that
#   every pair is one line.
# - msgctxt is read and dropped: the output is text only.
# - Plural entries give two pairs: (msgid, msgstr[0]) and
#   (msgid_plural, msgstr[1]); a language with one form only (no msgstr[1])
#   pairs msgid_plural with msgstr[0].
# - Skipped: the header (empty msgid), untranslated entries (empty msgstr),
#   fuzzy and obsolete (#~) entries. .mo files hold none of these but the
#   header; a .po given directly may.
#
# Variables: -v file=NAME for messages. Counts go to the file named by
# -v counts=FILE as "reason<TAB>n" lines (appended).

BEGIN {
	for (i = 1; i < 256; i++)
		chr[sprintf("%o", i)] = sprintf("%c", i)
	reset()
}

function reset() {
	ctx = ""
	id = ""
	plural = ""
	split("", str)
	field = ""
	fuzzy = 0
	have_id = 0
}

# The text between the first and the last double quote of a PO line.
function quoted(s,    a, b) {
	a = index(s, "\"")
	if (a == 0)
		return bad("expected a quoted string")
	b = length(s)
	while (b > a && substr(s, b, 1) != "\"")
		b--
	if (b == a)
		return bad("unterminated string")
	return substr(s, a + 1, b - a - 1)
}

function bad(what) {
	printf "%s:%d: %s\n", file, FNR, what > "/dev/stderr"
	errors++
	return ""
}

# Decodes the C escapes that PO strings use.
function unescape(s,    out, i, c, n, oct, v, hexd) {
	if (index(s, "\\") == 0)
		return s
	out = ""
	while ((i = index(s, "\\")) > 0) {
		out = out substr(s, 1, i - 1)
		c = substr(s, i + 1, 1)
		s = substr(s, i + 2)
		if (c == "n") out = out "\n"
		else if (c == "t") out = out "\t"
		else if (c == "r") out = out "\r"
		else if (c == "\"") out = out "\""
		else if (c == "\\") out = out "\\"
		else if (c == "a" || c == "b" || c == "f" || c == "v") out = out " "
		else if (c ~ /[0-7]/) {
			oct = c
			while (length(oct) < 3 && substr(s, 1, 1) ~ /[0-7]/) {
				oct = oct substr(s, 1, 1)
				s = substr(s, 2)
			}
			v = 0
			for (n = 1; n <= length(oct); n++)
				v = v * 8 + substr(oct, n, 1)
			out = out (v > 0 && v < 256 ? chr[sprintf("%o", v)] : " ")
		} else if (c == "x") {
			v = 0
			n = 0
			while (s != "" && (hexd = index("0123456789abcdef", tolower(substr(s, 1, 1)))) > 0) {
				v = v * 16 + hexd - 1
				s = substr(s, 2)
				n++
			}
			out = out (n > 0 && v > 0 && v < 256 ? chr[sprintf("%o", v)] : " ")
		} else
			out = out "\\" c
	}
	return out s
}

function norm(s) {
	gsub(/[[:cntrl:]]/, " ", s)
	gsub(/  +/, " ", s)
	sub(/^ /, "", s)
	sub(/ $/, "", s)
	return s
}

function append(s) {
	if (field == "ctx") ctx = ctx s
	else if (field == "id") id = id s
	else if (field == "plural") plural = plural s
	else if (field ~ /^str/) str[substr(field, 4) + 0] = str[substr(field, 4) + 0] s
}

function emit(en, xx) {
	en = norm(unescape(en))
	xx = norm(unescape(xx))
	if (xx == "") {
		count["untranslated"]++
		return
	}
	print en "\t" xx
	count["read"]++
}

function flush() {
	if (!have_id) {
		reset()
		return
	}
	# The header (empty msgid, no context) holds no message.
	if (id == "" && ctx == "") {
		reset()
		return
	}
	if (fuzzy)
		count["fuzzy"]++
	else if (plural != "") {
		emit(id, str[0])
		emit(plural, (1 in str) ? str[1] : str[0])
	} else
		emit(id, str[0])
	reset()
}

# Obsolete entries and comments. A comment after a msgstr starts the next
# entry; "#, fuzzy" flags it.
/^#~/ {
	if (field ~ /^str/) flush()
	field = ""
	next
}
/^#/ {
	if (field ~ /^str/) flush()
	field = ""
	if ($0 ~ /^#,.*fuzzy/) fuzzy = 1
	next
}
/^[ \t]*$/ { flush(); next }
/^msgctxt[ \t]/ {
	if (field ~ /^str/) flush()
	field = "ctx"
	ctx = quoted($0)
	next
}
/^msgid[ \t]/ {
	if (field ~ /^str/) flush()
	field = "id"
	have_id = 1
	id = quoted($0)
	next
}
/^msgid_plural[ \t]/ { field = "plural"; plural = quoted($0); next }
/^msgstr[ \t]/ { field = "str0"; str[0] = quoted($0); next }
/^msgstr\[[0-9]+\][ \t]/ {
	n = substr($0, 8) + 0
	field = "str" n
	str[n] = quoted($0)
	next
}
/^[ \t]*"/ {
	if (field == "")
		bad("string outside an entry")
	else
		append(quoted($0))
	next
}
{ bad("cannot parse: " $0) }

END {
	flush()
	if (counts != "")
		for (r in count)
			printf "%s\t%d\n", r, count[r] >> counts
	exit errors > 0
}
