# SPDX-License-Identifier: Apache-2.0
# Deterministic dev/test splits for the gettext corpora, keyed on the
# English string, without randomness. POSIX awk; run with LC_ALL=C. Three
# steps, chosen with -v step=...:
#
#  hash    "EN<TAB>XX" lines in, "HASH<TAB>EN<TAB>XX" out. HASH is a
#          polynomial hash of the English bytes modulo the prime p = 2^31 - 1:
#          h = 20240601, then h = (1000003 h + byte) mod p for each byte and
#          h = (1000003 h + 1) mod p twice more, so that short strings do not
#          all get small numbers. Every product stays below 2^53, exact in
#          any awk's doubles: the same string gets the same number everywhere.
#  assign  reads the hashed lines of one domain, sorted by (HASH, EN, XX),
#          twice (give the file twice): the first pass counts the distinct
#          English strings n; the second prints "DOMAIN<TAB>SPLIT<TAB>EN<TAB>
#          XX", where the k = min(cap, floor(n * percent / 100)) distinct
#          English strings of lowest hash are test, the next k dev, the rest
#          train. All pairs with one English string share its split.
#          Variables: domain, cap (1000), percent (5).
#  leak    reads the assigned lines of all domains twice: an English string
#          that is test in any domain is dropped from dev and train of every
#          domain, one that is dev in any domain from train of every domain,
#          so nothing held out anywhere is trained on. Prints the lines kept;
#          appends "DOMAIN<TAB>leak<TAB>n" to -v counts=FILE.

BEGIN {
	FS = "\t"
	if (step == "hash")
		for (b = 1; b < 256; b++)
			ord[sprintf("%c", b)] = b
	if (cap == "")
		cap = 1000
	if (percent == "")
		percent = 5
	if (step != "hash" && step != "assign" && step != "leak") {
		print "split.awk: step must be hash, assign or leak" > "/dev/stderr"
		exit 2
	}
}

function hash(s,    h, i, n) {
	h = 20240601
	n = length(s)
	for (i = 1; i <= n; i++)
		h = (h * 1000003 + ord[substr(s, i, 1)]) % 2147483647
	h = (h * 1000003 + 1) % 2147483647
	return (h * 1000003 + 1) % 2147483647
}

step == "hash" {
	printf "%d\t%s\n", hash($1), $0
	next
}

step == "assign" && FNR == NR {
	if ($2 != prev_count)
		n++
	prev_count = $2
	next
}
step == "assign" {
	if (FNR == 1) {
		k = int(n * percent / 100)
		if (k > cap)
			k = cap
	}
	if ($2 != prev) {
		rank++
		prev = $2
	}
	split_name = rank <= k ? "test" : rank <= 2 * k ? "dev" : "train"
	print domain "\t" split_name "\t" $2 "\t" $3
	next
}

step == "leak" && FNR == NR {
	if ($2 == "test")
		in_test[$3] = 1
	else if ($2 == "dev")
		in_dev[$3] = 1
	next
}
step == "leak" {
	if (($2 != "test" && ($3 in in_test)) || ($2 == "train" && ($3 in in_dev))) {
		leaked[$1]++
		next
	}
	print
}

END {
	if (step == "leak" && counts != "")
		for (d in leaked)
			printf "%s\tleak\t%d\n", d, leaked[d] >> counts
}
