#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (`make fuzz`): each target with the library's
# sources, all compiled by clang with -fsanitize=fuzzer,address,undefined.
# Usage: tests/fuzz/build.sh SRCDIR BUILDDIR [CC [EXTRA_LIBS]]
# EXTRA_LIBS: the optional libraries configure found (-lgmp for the
# federated vocabulary's Paillier code, -ldnnl for the bf16 products).
set -eu
src=$1 build=$2 cc=${3:-clang} extra_libs=${4:-}
command -v "$cc" >/dev/null 2>&1 || {
	echo "build.sh: no $cc: install clang (Debian: apt-get install clang)" >&2
	exit 1
}
out=$build/tests/fuzz/bin
obj=$out/obj
mkdir -p "$obj"
flags="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
inc="-I$build -I$src -I$src/core -I$src/core/include $(pkg-config --cflags jansson)"
libs="$(pkg-config --libs jansson) $extra_libs -lopenblas -lm -lpthread"
# The library's C sources (core/*/*.c but the command line's), instrumented
# for coverage; and the `fedrun bleu` and `fedrun translate` readers.
objs=
for f in "$src"/core/*/*.c "$src/tests/fuzz/common.c"; do
	case $f in
	*/nn/ref_*) continue ;; # the tests' references
	*/core/cli/cmd_bleu.c | */core/cli/cmd_translate.c | */core/cli/run_model.c) ;;
	*/core/cli/*) continue ;;
	esac
	rel=${f#"$src"/}
	o=$obj/$(echo "${rel%.c}" | tr / _).o
	# shellcheck disable=SC2086
	"$cc" $flags -fsanitize=fuzzer-no-link $inc -c "$f" -o "$o"
	objs="$objs $o"
done
for t in safetensors pipeline text bleu translate; do
	# shellcheck disable=SC2086
	"$cc" $flags -fsanitize=fuzzer $inc "$src/tests/fuzz/fuzz_$t.c" $objs $libs -o "$out/fuzz_$t"
	echo "built $out/fuzz_$t"
done
