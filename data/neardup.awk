# SPDX-License-Identifier: Apache-2.0
# Removes from a file the lines that are near-duplicates of a line of a
# reference file. data/brown/tasks.sh removes from the training text what
# is near a held-out text (data/brown/README.md, "Near-duplicates");
# data/gettext/build.sh and build-multi.sh remove from the held-out sets
# what is near a training string, and check-overlap.sh counts what is
# (data/gettext/README.md, "Near-duplicates").
#
# Usage: awk -f neardup.awk [-v field=N] [-v dropped=FILE] [-v all=1] REF LINES >KEPT
#   REF      the reference texts, one a line (Brown: the held-out sentences
#            and passages; gettext: the distinct training strings)
#   LINES    the lines to filter; the text is the whole line, or with
#            field=N its N-th tab-separated field (the rest is carried)
#   KEPT     the lines that are not near-duplicates of a reference, unchanged
#   dropped  receives each removed line as "REF-LINE<TAB>JACCARD<TAB>line",
#            REF-LINE the number of the closest reference line (from 1)
#   all=1    dropped receives one such line for every reference line the
#            line is a near-duplicate of, in no particular order, not only
#            for the closest
#
# A text is normalised by lowercasing and replacing every run of bytes that
# are not ASCII letters (punctuation, digits, spaces, other scripts) by one
# space; its shingles are the distinct runs of 5 consecutive normalised
# words, or, for a text of 1 to 4 words, the whole normalised text. A
# line is a near-duplicate of a reference text when the Jaccard index of
# their shingle sets, |A and B| / |A or B|, exceeds `threshold` (0.8); for
# a text of 1 to 4 words that is equality after normalisation. A text
# without ASCII letters has no shingle and matches nothing. Exact in any
# POSIX awk (mawk and gawk give the same output).
BEGIN {
	FS = "\t"
	if (field == "")
		field = 0
	if (threshold == "")
		threshold = 0.8
	K = 5
	if (all && dropped == "") {
		print "neardup.awk: all=1 needs dropped=FILE" >"/dev/stderr"
		exit 2
	}
}

# shingles(text, set): fills set with text's shingles, returns their number.
function shingles(text, set,    w, n, i, j, s, count) {
	split("", set)
	text = tolower(text)
	gsub(/[^a-z]+/, " ", text)
	n = split(text, w, " ")
	if (n == 0)
		return 0
	if (n < K) {
		s = w[1]
		for (i = 2; i <= n; i++)
			s = s " " w[i]
		set[s] = 1
		return 1
	}
	count = 0
	for (i = 1; i + K - 1 <= n; i++) {
		s = w[i]
		for (j = 1; j < K; j++)
			s = s " " w[i + j]
		if (!(s in set)) {
			set[s] = 1
			count++
		}
	}
	return count
}

# The reference texts: an inverted index from shingle to the texts holding
# it (by name, not NR == FNR, so that an empty REF is no reference).
FILENAME == ARGV[1] {
	size[FNR] = shingles($0, sh)
	for (s in sh)
		index_of[s] = (s in index_of) ? index_of[s] " " FNR : FNR
	next
}

{
	n = shingles(field ? $field : $0, sh)
	split("", common)
	for (s in sh) {
		if (!(s in index_of))
			continue
		m = split(index_of[s], units, " ")
		for (i = 1; i <= m; i++)
			common[units[i]]++
	}
	best = 0
	bestunit = 0
	for (u in common) {
		j = common[u] / (n + size[u] - common[u])
		if (all && j > threshold)
			printf "%d\t%.3f\t%s\n", u, j, $0 >dropped
		# Ties go to the first reference line, whatever order "in" visits.
		if (j > best || (j == best && u + 0 < bestunit + 0)) {
			best = j
			bestunit = u
		}
	}
	if (best > threshold) {
		if (dropped != "" && !all)
			printf "%d\t%.3f\t%s\n", bestunit, best, $0 >dropped
		next
	}
	print
}
