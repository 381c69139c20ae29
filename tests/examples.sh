#!/bin/sh
# Every example pipeline validates. Examples that read corpora built by
# data/*/build.sh ("../data/..." paths, e.g. the Brown examples reading
# data/brown/out) validate against the real files when they have been built;
# otherwise against stand-ins: the pipeline is copied into a scratch tree
# where each missing data file is a small shipped corpus, so that every key,
# type, range and plugin option is still checked, just not the corpus.
. "$top_srcdir/tests/lib.sh"
standin="$top_srcdir/examples/data/toy-english/valid.txt" # 400 sentences
n=0
stood=0
for f in "$top_srcdir"/examples/*.json; do
	name=$(basename "$f")
	missing=
	for rel in $(grep -o '"\.\./data/[^"]*"' "$f" | tr -d '"'); do
		[ -e "$top_srcdir/examples/$rel" ] || missing="$missing $rel"
	done
	target=$f
	extra=
	if [ -z "$missing" ] && grep -q '"src": *"' "$f"; then
		# A built corpus without one of the pipeline's files (a union
		# that repro/passban2022/run.sh makes, say): stand-ins too.
		src=$(sed -n 's/.*"src": *"\([^"]*\)".*/\1/p' "$f" | head -n 1)
		for rel in $(grep -o '"\.\./data/[^"]*"' "$f" | tr -d '"'); do
			for pre in $(grep -o '"\(train\|valid\|test\)": *"[^"]*"' "$f" | sed 's/.*: *"\(.*\)"/\1/'); do
				[ -e "$top_srcdir/examples/$rel/$pre.$src" ] || missing=$rel
			done
		done
	fi
	if [ -n "$missing" ] && grep -q '"src": *"' "$f"; then
		# A translation pipeline whose corpus directory (data.dir) is not
		# built: a stand-in tree with PREFIX.SRC and PREFIX.TGT for every
		# prefix of data.clients. Validation trains the SentencePiece
		# tokenizer, and the stand-in text is too small for the example's
		# vocabulary size, so this validation lowers that one key.
		mirror="$work/mirror-$n"
		mkdir -p "$mirror/examples"
		cp "$f" "$mirror/examples/$name"
		src=$(sed -n 's/.*"src": *"\([^"]*\)".*/\1/p' "$f" | head -n 1)
		tgt=$(sed -n 's/.*"tgt": *"\([^"]*\)".*/\1/p' "$f" | head -n 1)
		for rel in $missing; do
			for pre in $(grep -o '"\(train\|valid\|test\)": *"[^"]*"' "$f" | sed 's/.*: *"\(.*\)"/\1/'); do
				mkdir -p "$(dirname "$mirror/examples/$rel/$pre")"
				cp "$standin" "$mirror/examples/$rel/$pre.$src"
				cp "$standin" "$mirror/examples/$rel/$pre.$tgt"
			done
		done
		target="$mirror/examples/$name"
		extra="--set model.tokenizer.vocab_size=64"
		stood=$((stood + 1))
		missing=
	fi
	if [ -n "$missing" ]; then
		mirror="$work/mirror-$n"
		mkdir -p "$mirror/examples"
		ln -s "$top_srcdir/examples/data" "$mirror/examples/data"
		cp "$f" "$mirror/examples/$name"
		for rel in $missing; do
			mkdir -p "$(dirname "$mirror/examples/$rel")"
			cp "$standin" "$mirror/examples/$rel"
		done
		target="$mirror/examples/$name"
		stood=$((stood + 1))
	fi
	"$FEDRUN" validate $extra "$target" >/dev/null 2>err || { cat err; die "$name does not validate"; }
	n=$((n + 1))
done
[ $n -gt 0 ] || die "no examples found"
echo "$n example pipelines validate ($stood with stand-ins for corpora not built here)"
