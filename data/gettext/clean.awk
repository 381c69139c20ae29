# SPDX-License-Identifier: Apache-2.0
# Cleans the pairs of one domain, as po.awk prints them ("ENGLISH<TAB>
# TRANSLATION", one per line), and prints the pairs it keeps in the same
# form, first occurrences in input order. POSIX awk; run with LC_ALL=C.
#
# In this order, for each pair:
#  1. translator credits ("translator-credits", KDE's "Your names") dropped;
#  2. accelerator markers (_ & ~) removed, see strip();
#  3. dropped unless the English holds a word of two letters or more and
#     the translation a letter, once format directives, placeholders and
#     markup tags are taken out ("%s: %s", "%d%%", "<b>%s</b>", "--" and
#     single-letter labels such as "A" or "X:" go);
#  4. identical pairs kept only when the English has at most 2 tokens
#     ("Name", "Status", "GNU Emacs"); longer identical pairs are almost all
#     strings left untranslated (usage synopses, internal compiler errors);
#  5. dropped when either side has more than maxtok tokens, or one side has
#     more than 9 times the tokens of the other;
#  6. dropped when the same pair was kept before (duplicates in the domain).
# Tokens are runs of non-spaces.
#
# Variables: -v maxtok=N (default 200); -v counts=FILE, to which the number
# of pairs read, dropped per reason and kept are appended as
# "reason<TAB>n" lines.

BEGIN {
	FS = "\t"
	if (maxtok == "")
		maxtok = 200
	# Word characters: ASCII letters and digits, and every byte of a
	# multibyte UTF-8 character (letters of other scripts).
	for (i = 48; i <= 57; i++)
		word[sprintf("%c", i)] = 1
	for (i = 65; i <= 90; i++)
		word[sprintf("%c", i)] = word[sprintf("%c", i + 32)] = 1
	for (i = 128; i < 256; i++)
		word[sprintf("%c", i)] = 1
	markers = "_&~"
}

function isword(c) {
	return c != "" && (c in word)
}

# Position of the accelerator candidates of marker m in s: m followed by a
# word character, not doubled (&& and __ are literal), and for & not an
# entity such as &amp;. Returns how many there are; the first is in pos1.
function candidates(s, m,    i, n, c, next_c) {
	n = 0
	pos1 = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c != m)
			continue
		next_c = substr(s, i + 1, 1)
		if (next_c == m) {
			i++
			continue
		}
		if (!isword(next_c))
			continue
		if (m == "&" && substr(s, i + 1) ~ /^(#[0-9]+|#x[0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);/)
			continue
		if (++n == 1)
			pos1 = i
	}
	return n
}

# The word around position p of s (word characters and m).
function word_at(s, p, m,    a, b) {
	a = p
	while (a > 1 && (isword(substr(s, a - 1, 1)) || substr(s, a - 1, 1) == m))
		a--
	b = p
	while (b < length(s) && (isword(substr(s, b + 1, 1)) || substr(s, b + 1, 1) == m))
		b++
	return substr(s, a, b - a + 1)
}

# Whether w occurs in s as a whole word (not inside a longer one).
function has_word(s, w, m,    i, off, before, after) {
	off = 0
	while ((i = index(substr(s, off + 1), w)) > 0) {
		i += off
		before = i > 1 ? substr(s, i - 1, 1) : ""
		after = substr(s, i + length(w), 1)
		if (!isword(before) && before != m && !isword(after) && after != m)
			return 1
		off = i
	}
	return 0
}

# Removes the character at position p of s.
function cut(s, p) {
	return substr(s, 1, p - 1) substr(s, p + 1)
}

# In a translation identical to the English, copied names and labels with
# their accelerator look alike: "R_adius" and "Co&dec" are labels, "VAR_SAMP",
# "k_min" and "X_1" are not. A label has lower and upper case letters and
# no digit around its inner marker.
function copied_label(w, m, inside,    bare) {
	if (!inside)
		return 0
	bare = w
	gsub("[" m "]", "", bare)
	return bare ~ /[a-z]/ && bare ~ /[A-Z]/ && bare !~ /[0-9]/
}

# Removes accelerator markers (GNOME and LibreOffice "_", KDE "&",
# LibreOffice "~") from both sides. The English's marker is the one
# candidate it holds; the translation's is its first candidate. These are
# not markers but names or directives:
#  - a candidate inside a word (GIT_DIR, TAR_OPTIONS), or a ~ followed by
#    one character only (Scheme's ~a), when the translation holds the
#    same word, unless the pair is a label copied whole (see copied_label);
#  - an underscore inside an English word when the translation has no
#    candidate at all (PROGRAM_NAME -> PROGRAMMNAME, yes_key -> j), since
#    underscores join identifiers, unless the word is a capitalised word
#    broken by it (D_escription -> Beschreibung).
# A translation may mark an accelerator that the English lacks ("Mark as
# ham" -> "Als N_icht-Spam markieren"): its only candidate goes unless the
# English holds the same word. East Asian "(_F)" suffixes go as well.
function strip(    k, m, ns, ps, nt, pt, w, inside) {
	for (k = 1; k <= length(markers); k++) {
		m = substr(markers, k, 1)
		if (index(en, m) == 0 && index(xx, m) == 0)
			continue
		ns = candidates(en, m)
		ps = pos1
		nt = candidates(xx, m)
		pt = pos1
		if (ns == 1) {
			w = word_at(en, ps, m)
			inside = ps > 1 && isword(substr(en, ps - 1, 1))
			if ((inside || (m == "~" && length(w) == 2)) && has_word(xx, w, m) &&
			    !(en == xx && copied_label(w, m, inside)))
				continue
			if (m == "_" && inside && nt == 0 && w !~ /^[A-Z][a-z]*_[a-z]+$/)
				continue
			en = cut(en, ps)
			if (nt > 0)
				xx = cut(xx, pt)
			gsub("\\([" m "][A-Za-z0-9]\\)", "", xx)
		} else if (ns == 0 && nt == 1) {
			if (has_word(en, word_at(xx, pt, m), m))
				continue
			xx = cut(xx, pt)
		} else
			continue
		gsub(/  +/, " ", xx)
		sub(/^ /, "", xx)
		sub(/ $/, "", xx)
	}
}

# s without format directives, placeholders and markup: what is left must
# hold a letter for the string to be text.
function text_of(s) {
	gsub(/<[^<>]*>/, " ", s)
	gsub(/%[-+ #0'I]*([0-9]+\$)?[0-9*]*(\.[0-9*]+)?(hh|ll|[hlLqjzZt])?[A-Za-z%<>]/, " ", s)
	gsub(/%[A-Z][A-Z0-9_]*/, " ", s)
	gsub(/\$\(?[A-Za-z_][A-Za-z0-9_]*\)?/, " ", s)
	gsub(/\{[A-Za-z0-9_]*\}/, " ", s)
	return s
}

function drop(reason) {
	count[reason]++
}

{
	count["read"]++
	if (NF != 2) {
		printf "clean.awk: line %d: expected two tab-separated fields\n", NR > "/dev/stderr"
		exit 1
	}
	en = $1
	xx = $2
	if (en ~ /^(translator-credits|translators-credits|translator_credits|Your names|Your emails)$/) {
		drop("credits")
		next
	}
	strip()
	if (text_of(en) !~ /[A-Za-z][A-Za-z]/ || !has_letter(text_of(xx))) {
		drop("no-text")
		next
	}
	ns = split(en, tmp, " ")
	nt = split(xx, tmp, " ")
	if (en == xx && ns > 2) {
		drop("identical")
		next
	}
	if (ns > maxtok || nt > maxtok) {
		drop("length")
		next
	}
	if (ns > 9 * nt || nt > 9 * ns) {
		drop("ratio")
		next
	}
	if ((en "\t" xx) in seen) {
		drop("duplicate")
		next
	}
	seen[en "\t" xx] = 1
	count["kept"]++
	print en "\t" xx
}

# An ASCII letter, or any non-ASCII character (the letters of other
# scripts; punctuation such as "…" alone does not survive the English check).
function has_letter(s,    i) {
	if (s ~ /[A-Za-z]/)
		return 1
	for (i = 1; i <= length(s); i++)
		if (substr(s, i, 1) in word && substr(s, i, 1) !~ /[0-9]/)
			return 1
	return 0
}

END {
	if (counts != "")
		for (r in count)
			printf "%s\t%d\n", r, count[r] >> counts
}
