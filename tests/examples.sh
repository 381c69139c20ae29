#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every example pipeline validates. Examples that read corpora built by
# data/*/build.sh ("../data/..." paths, e.g. the Brown examples reading
# data/brown/out) validate against the real files when they have been built;
# otherwise against stand-ins: the pipeline is copied into a scratch tree
# where each missing data file is a small shipped corpus, so that every key,
# type, range and plugin option is still checked, just not the corpus.
. "$top_srcdir/tests/lib.sh"
n=0
nstood=0
for f in "$top_srcdir"/examples/*.json; do
	name=$(basename "$f")
	example_target "$f" $n
	nstood=$((nstood + stood))
	"$FEDRUN" validate $extra "$target" >/dev/null 2>err || { cat err; die "$name does not validate"; }
	n=$((n + 1))
done
[ $n -gt 0 ] || die "no examples found"
echo "$n example pipelines validate ($nstood with stand-ins for corpora not built here)"
