#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks a corpus written by build.sh (or domains and unions laid out the
# same way) for held-out sentences that occur in a training set.
#
# Usage: check-overlap.sh [--src SRC --tgt TGT] [--tagged] OUTDIR [DOMAIN...]
#   --src SRC --tgt TGT  the languages of the files (en de): each domain has
#                        {train,dev,test}.{SRC,TGT}, one sentence a line
#   --tagged             SRC lines begin with a target-language tag, <2X>
#                        and a space (build-multi.sh's .src), taken off
#                        before comparing, so that one English sentence
#                        tagged for two languages is found in both
#   OUTDIR               the corpus directory
#   DOMAIN...            its subdirectories to check (default: every one
#                        that has train.SRC, unions such as all/ included)
# Every test and dev pair of every domain is looked up in the training sets
# of all the domains. Must be 0 (build.sh's cross-domain rule):
#   test-pair-in-train  a test pair (SRC and TGT) is a training pair
#   test-en-in-train    a test sentence's English side (SRC when neither
#                       side is en) is the English of a training pair
#   dev-pair-in-train, dev-en-in-train   the same for dev
# and, as near-duplicates (data/neardup.awk: case, white space,
# punctuation and digits do not count; exact repeats included), must be 0
# too (build.sh's purge):
#   test-pair-near-in-train  both sides of a test pair are near-duplicates
#                       of the two sides of one training pair
#   test-en-near-in-train  its English side is a near-duplicate of a
#                       training pair's English
#   dev-pair-near-in-train, dev-en-near-in-train   the same for dev
# Counted only:
#   test-en-in-dev      a test sentence's English is in a dev set
#   test-en-in-other-test, dev-en-in-other-dev   a test (dev) sentence's
#                       English is in the test (dev) set of another domain,
#                       one that neither contains nor is contained in its
#                       own (a union and its members are not compared)
# Prints a table (one line per check: held-out lines compared, lines
# compared against, held-out lines found, distinct sentences found) and
# exits 0 when every must-be-0 count is 0, 1 otherwise, naming the first
# offending sentences and their domains on stderr; 2 on a usage error.
# See data/gettext/README.md, "Checking for leaks".
set -eu
export LC_ALL=C
AWK=${AWK:-awk}

die() {
	echo "check-overlap.sh: $*" >&2
	exit 2
}

src=en
tgt=de
tagged=0
while [ $# -gt 0 ]; do
	case $1 in
	--src | --tgt)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--src) src=$2 ;;
		--tgt) tgt=$2 ;;
		esac
		shift
		;;
	--tagged) tagged=1 ;;
	-h | --help)
		sed -n '3,42p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 1 ] || die "usage: check-overlap.sh [--src SRC --tgt TGT] [--tagged] OUTDIR [DOMAIN...] (see --help)"
for l in "$src" "$tgt"; do
	case $l in
	*[!A-Za-z0-9_@-]* | "") die "$l: not a language code" ;;
	esac
done
[ "$src" != "$tgt" ] || die "SRC and TGT are both $src"
outdir=$1
shift
[ -d "$outdir" ] || die "$outdir: no such directory"

if [ $# -eq 0 ]; then
	for path in "$outdir"/*/; do
		d=${path%/}
		d=${d##*/}
		[ -f "$outdir/$d/train.$src" ] && set -- "$@" "$d"
	done
	[ $# -gt 0 ] || die "$outdir: no subdirectory has train.$src"
fi
for d in "$@"; do
	case $d in
	"" | */* | . | ..) die "$d: not a domain name" ;;
	esac
	for s in train dev test; do
		for l in "$src" "$tgt"; do
			[ -f "$outdir/$d/$s.$l" ] && [ -r "$outdir/$d/$s.$l" ] ||
				die "$outdir/$d/$s.$l: missing"
		done
	done
done

# One awk: every file is read once, in BEGIN; ARGV holds OUTDIR and the
# domains (not -v, which would expand backslashes in the names). The
# near-duplicates are found by data/neardup.awk, run from that awk on the
# distinct strings it writes to a temporary directory; the environment
# names the directory, neardup.awk and the awk to run it with.
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT
CHECK_OVERLAP_TMP=$tmp
CHECK_OVERLAP_NEARDUP=$here/../neardup.awk
CHECK_OVERLAP_AWK=$AWK
export CHECK_OVERLAP_TMP CHECK_OVERLAP_NEARDUP CHECK_OVERLAP_AWK
[ -f "$CHECK_OVERLAP_NEARDUP" ] || die "$CHECK_OVERLAP_NEARDUP: missing"
st=0
$AWK -v src="$src" -v tgt="$tgt" -v tagged="$tagged" '
function ends(list, d) { # list (domains joined by SEP) ends with d
	return list == d || substr(list, length(list) - length(d)) == SEP d
}
function add(arr, k, d) { # d into the domain list arr[k]; 1 if new there
	if (!(k in arr)) {
		arr[k] = d
		return 1
	}
	if (ends(arr[k], d))
		return 0
	arr[k] = arr[k] SEP d
	return 1
}
function names(list) {
	gsub(SEP, ",", list)
	return list
}
function fail(msg) {
	print "check-overlap.sh: " msg > "/dev/stderr"
	exit 2
}
# Reads DIR/D/S.{src,tgt} line by line, pairwise.
function readset(d, s,    fs, ft, a, b, rs, rt, n, en, pk, ot, e, o) {
	fs = dir "/" d "/" s "." src
	ft = dir "/" d "/" s "." tgt
	n = 0
	while ((rs = (getline a < fs)) > 0) {
		if ((rt = (getline b < ft)) <= 0)
			fail(ft ": " (rt < 0 ? "cannot read" : "fewer lines than " fs))
		n++
		if (tagged)
			sub(/^<2[^ ]*> /, "", a)
		en = enside == 2 ? b : a
		# The pair key: the length of the SRC side first, so that no two
		# pairs share a key even if a sentence held a tab.
		pk = length(a) ":" a "\t" b
		if (add(member, s SEP pk, d))
			ndist[d]++
		ot = enside == 2 ? a : b
		if (s == "train") {
			add(trainP, pk, d)
			add(trainE, en, d)
			# Distinct English and other sides, numbered, and the pairs
			# of them: po[e] lists the other sides paired with English e.
			if (!(en in tEid)) {
				tEid[en] = ++ntE
				tEtext[ntE] = en
				print en > (tmpd "/train.en")
			}
			if (!(ot in tOid)) {
				tOid[ot] = ++ntO
				tOtext[ntO] = ot
			}
			e = tEid[en]
			o = tOid[ot]
			if (!((e, o) in tpair)) {
				tpair[e, o] = 1
				po[e] = po[e] " " o
			}
			continue
		}
		if (!(en in hEid)) {
			hEid[en] = ++nhE
			print en > (tmpd "/held.en")
		}
		if (s == "dev")
			add(devE, en, d)
		else
			add(testE, en, d)
		nh++
		hd[nh] = d
		hs[nh] = s
		hn[nh] = n
		he[nh] = en
		ho[nh] = ot
		hp[nh] = pk
		hpair[nh] = a "\t" b
	}
	if (rs < 0)
		fail(fs ": cannot read")
	if ((rt = (getline b < ft)) != 0)
		fail(ft ": " (rt < 0 ? "cannot read" : "more lines than " fs))
	close(fs)
	close(ft)
	lines[s] += n
}
# x and y are nested: the lines of one (every split) are all in the other.
function nested(x, y) {
	return shared[x, y] + 0 == ndist[x] || shared[y, x] + 0 == ndist[y]
}
# Whether the domain list holds one that is neither d nor nested with d.
function other(list, d,    n, l, i) {
	n = split(list, l, SEP)
	for (i = 1; i <= n; i++)
		if (l[i] != d && !nested(d, l[i]))
			return 1
	return 0
}
# neardup.awk (all=1) on the reference texts train.X and the lines held.X
# of the temporary directory: near.X gets a line for every (line,
# reference) pair of near-duplicates.
function near(x,    cmd) {
	close(tmpd "/train." x)
	close(tmpd "/held." x)
	printf "" > (tmpd "/near." x)
	close(tmpd "/near." x)
	cmd = "$CHECK_OVERLAP_AWK -f \"$CHECK_OVERLAP_NEARDUP\" -v all=1" \
		" -v dropped=\"$CHECK_OVERLAP_TMP/near." x "\"" \
		" \"$CHECK_OVERLAP_TMP/train." x "\" \"$CHECK_OVERLAP_TMP/held." x "\" >/dev/null"
	if (system(cmd) != 0)
		fail("data/neardup.awk failed")
}
# Reads near.X: calls matched(reference line number, line) for each.
function readnear(x,    f, r, l, t, ref, h) {
	f = tmpd "/near." x
	while ((r = (getline l < f)) > 0) {
		t = index(l, "\t")
		ref = substr(l, 1, t - 1) + 0
		l = substr(l, t + 1)
		l = substr(l, index(l, "\t") + 1)
		if (x == "en") {
			h = hEid[l]
			nearE[h] = nearE[h] " " ref
			if (!(h in firstE) || ref < firstE[h])
				firstE[h] = ref
		} else
			nearO[hOid[l], rowO[ref]] = 1
	}
	if (r < 0)
		fail(f ": cannot read")
	close(f)
}
# Whether held-out line i is a near-duplicate of a training pair: of one
# whose English is near its English (nearE) and whose other side is near
# its other side (nearO); pairE and pairO receive the first found.
function pairnear(i,    h, o, n, j, m, k, es, os) {
	h = hEid[he[i]]
	o = hOid[ho[i]]
	n = split(nearE[h], es, " ")
	for (j = 1; j <= n; j++) {
		m = split(po[es[j]], os, " ")
		for (k = 1; k <= m; k++)
			if ((o, os[k]) in nearO) {
				pairE = es[j]
				pairO = os[k]
				return 1
			}
	}
	return 0
}
# Training pair (English e, other side o) as SRC<TAB>TGT, and its key
# (see readset).
function pairtext(e, o) {
	return enside == 2 ? tOtext[o] "\t" tEtext[e] : tEtext[e] "\t" tOtext[o]
}
function pairkey(e, o) {
	return length(enside == 2 ? tOtext[o] : tEtext[e]) ":" pairtext(e, o)
}
# Held-out line i is found by check c (key: the pair or the English, text:
# the same as printed) in the sets of the domains in list where.
function hit(c, i, key, text, where) {
	found[c]++
	if (!((c, key) in seenkey)) {
		seenkey[c, key] = 1
		distinct[c]++
	}
	if (must[c] && found[c] <= 5)
		print "check-overlap.sh: " c ": " hd[i] "/" hs[i] " line " hn[i] \
			" is " (c ~ /-near-/ ? "near" : "in") " train of " names(where) ": " text > "/dev/stderr"
}
BEGIN {
	SEP = SUBSEP
	enside = src != "en" && tgt == "en" ? 2 : 1
	dir = ARGV[1]
	nd = ARGC - 2
	for (i = 1; i <= nd; i++)
		dom[i] = ARGV[i + 1]
	ARGC = 1
	tmpd = ENVIRON["CHECK_OVERLAP_TMP"]
	split("train.en held.en train.ot held.ot", tf, " ")
	for (i = 1; i <= 4; i++)
		printf "" > (tmpd "/" tf[i])
	for (i = 1; i <= nd; i++) {
		readset(dom[i], "train")
		readset(dom[i], "dev")
		readset(dom[i], "test")
	}

	# Containment between domains, over the distinct (split, pair) lines.
	for (k in member) {
		n = split(member[k], l, SEP)
		for (a = 1; a <= n; a++)
			for (b = 1; b <= n; b++)
				if (a != b)
					shared[l[a], l[b]]++
	}

	# Near-duplicates: the held-out English near a training English, then,
	# for those, the other sides near the other sides of the training
	# pairs of those English strings (the only candidates for a pair).
	near("en")
	readnear("en")
	for (i = 1; i <= nh; i++) {
		h = hEid[he[i]]
		if (!(h in nearE))
			continue
		if (!(ho[i] in hOid)) {
			hOid[ho[i]] = ++nhO
			print ho[i] > (tmpd "/held.ot")
		}
		if (h in listed)
			continue
		listed[h] = 1
		n = split(nearE[h], es, " ")
		for (j = 1; j <= n; j++) {
			m = split(po[es[j]], os, " ")
			for (k = 1; k <= m; k++)
				if (!(os[k] in oRow)) {
					oRow[os[k]] = ++nrow
					rowO[nrow] = os[k]
					print tOtext[os[k]] > (tmpd "/train.ot")
				}
		}
	}
	near("ot")
	readnear("ot")

	nc = split("test-pair-in-train test-en-in-train dev-pair-in-train dev-en-in-train test-pair-near-in-train test-en-near-in-train dev-pair-near-in-train dev-en-near-in-train test-en-in-dev test-en-in-other-test dev-en-in-other-dev", check, " ")
	for (c = 1; c <= 8; c++)
		must[check[c]] = 1
	for (i = 1; i <= nh; i++) {
		d = hd[i]
		if (hs[i] == "test") {
			if (hp[i] in trainP)
				hit("test-pair-in-train", i, hp[i], hpair[i], trainP[hp[i]])
			if (he[i] in trainE)
				hit("test-en-in-train", i, he[i], he[i], trainE[he[i]])
			if (he[i] in devE)
				hit("test-en-in-dev", i, he[i], he[i], devE[he[i]])
			if (other(testE[he[i]], d))
				hit("test-en-in-other-test", i, he[i], he[i], testE[he[i]])
		} else {
			if (hp[i] in trainP)
				hit("dev-pair-in-train", i, hp[i], hpair[i], trainP[hp[i]])
			if (he[i] in trainE)
				hit("dev-en-in-train", i, he[i], he[i], trainE[he[i]])
			if (other(devE[he[i]], d))
				hit("dev-en-in-other-dev", i, he[i], he[i], devE[he[i]])
		}
		h = hEid[he[i]]
		if (h in nearE) {
			t = tEtext[firstE[h]]
			hit(hs[i] "-en-near-in-train", i, he[i], he[i] " (near: " t ")", trainE[t])
			if (pairnear(i))
				hit(hs[i] "-pair-near-in-train", i, hp[i], hpair[i] " (near: " \
					pairtext(pairE, pairO) ")", trainP[pairkey(pairE, pairO)])
		}
	}

	list = ""
	for (i = 1; i <= nd; i++)
		list = list " " dom[i]
	printf "# %s-%s, %d domains:%s; pairs: %d train, %d dev, %d test\n", \
		src, tgt, nd, list, lines["train"], lines["dev"], lines["test"]
	for (y = 1; y <= nd; y++) {
		list = ""
		for (x = 1; x <= nd; x++)
			if (x != y && ndist[dom[x]] > 0 && shared[dom[x], dom[y]] + 0 == ndist[dom[x]])
				list = list " " dom[x]
		if (list != "")
			printf "# %s contains%s\n", dom[y], list
	}
	printf "check\theld-out\tagainst\tfound\tdistinct\texpected\n"
	for (c = 1; c <= nc; c++) {
		name = check[c]
		held = name ~ /^test-/ ? lines["test"] : lines["dev"]
		against = name ~ /-in-train$/ ? lines["train"] : name ~ /-in-dev$|-other-dev$/ ? lines["dev"] : lines["test"]
		printf "%s\t%d\t%d\t%d\t%d\t%s\n", name, held, against, found[name], \
			distinct[name], must[name] ? "0" : "any"
		if (must[name] && found[name] > 0) {
			leak = 1
			if (found[name] > 5)
				printf "check-overlap.sh: %s: ... and %d more\n", name, found[name] - 5 > "/dev/stderr"
		}
	}
	printf "result\t%s\n", leak ? "LEAK" : "ok"
	exit leak ? 1 : 0
}' "$outdir" "$@" || st=$?
exit "$st"
