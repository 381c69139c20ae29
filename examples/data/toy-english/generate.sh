#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Generates "toy English", the corpus of examples/quickstart.json: sentences
# from a small probabilistic grammar with number agreement (the dog sleeps,
# the dogs sleep) and verbs that prefer some objects (people read books and
# eat bread), so that a language model has something to learn beyond word
# frequencies. Deterministic (the Park-Miller generator, exact in awk's doubles), so
# the shipped files are exactly what this script writes:
#
#   examples/data/toy-english/generate.sh examples/data/toy-english
#
# writes train.txt (4000 sentences), valid.txt and test.txt (400 each).
set -eu
export LC_ALL=C
out=${1:?usage: generate.sh OUTDIR}
mkdir -p "$out"
gen() { # gen SEED COUNT
	awk -v seed="$1" -v count="$2" '
	function rnd() { state = (state * 16807) % 2147483647; return state / 2147483647 }
	function pick(list,   a, n) { n = split(list, a, " "); return a[int(rnd() * n) + 1] }
	function np(kind, plural,   d, s) {
		# kind: "who" (people and animals), "thing", "place"
		s = ""
		if (plural) d = pick("the the some many two")
		else d = pick("the the the a this")
		s = d
		if (rnd() < 0.35) s = s " " pick(adj)
		if (kind == "who") s = s " " (plural ? pl[int(rnd() * nwho) + 1] : sg[int(rnd() * nwho) + 1])
		else if (kind == "place") s = s " " pick(places)
		return s
	}
	function clause(   plural, v, s, r, objs) {
		plural = rnd() < 0.4
		s = np("who", plural)
		r = rnd()
		if (r < 0.3) {             # intransitive
			v = int(rnd() * nvi) + 1
			s = s " " (plural ? vi_pl[v] : vi_sg[v])
			if (rnd() < 0.4) s = s " " pick(advs)
		} else if (r < 0.75) {     # verb with a typical object
			v = int(rnd() * nvt) + 1
			s = s " " (plural ? vt_pl[v] : vt_sg[v])
			s = s " " pick("the a the some his her") " " (rnd() < 0.25 ? pick(adj) " " : "") pick(vt_obj[v])
		} else {                   # verb of seeing or liking someone
			s = s " " (plural ? pick("see like follow help") : pick("sees likes follows helps"))
			s = s " " np("who", rnd() < 0.4)
		}
		if (rnd() < 0.35) s = s " " pick("in near behind at") " the " pick(places)
		return s
	}
	BEGIN {
		state = seed
		adj = "small big old young happy quiet clever tired hungry brave red green"
		places = "park river house garden market school kitchen forest village station"
		advs = "quickly slowly today again loudly outside"
		nwho = split("dog cat child teacher farmer bird doctor girl boy baker", sg, " ")
		split("dogs cats children teachers farmers birds doctors girls boys bakers", pl, " ")
		nvi = split("sleeps runs sings waits laughs walks", vi_sg, " ")
		split("sleep run sing wait laugh walk", vi_pl, " ")
		nvt = split("reads eats drinks writes carries opens", vt_sg, " ")
		split("read eat drink write carry open", vt_pl, " ")
		vt_obj[1] = "book letter newspaper story map"
		vt_obj[2] = "apple bread soup cake fish"
		vt_obj[3] = "water tea milk coffee juice"
		vt_obj[4] = "letter story song poem note"
		vt_obj[5] = "box bag basket chair book"
		vt_obj[6] = "door window box gate letter"
		for (i = 0; i < count; i++) {
			s = clause()
			r = rnd()
			if (r < 0.2) s = s " and " clause()
			else if (r < 0.3) s = s " because " clause()
			print s " " (rnd() < 0.9 ? "." : "!")
		}
	}'
}
gen 12345 4000 >"$out/train.txt"
gen 67890 400 >"$out/valid.txt"
gen 24680 400 >"$out/test.txt"
