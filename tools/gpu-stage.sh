#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu-stage.sh DIR [PROGRAM...]: copies a built tree's binaries into
# DIR so that they run on a GPU machine that has the NVIDIA driver and CUDA
# but none of fedrun's build dependencies (no jansson, OpenBLAS, check):
#   DIR/bin      fedrun and the PROGRAMs named (tests, benchmarks), the real
#                binaries behind libtool's wrapper scripts;
#   DIR/plugins  every plugin (the CUDA backend included);
#   DIR/lib      libfedrun and each shared library they load that is not
#                glibc's, the C++ runtime's or CUDA's;
#   DIR/env      to source in DIR (cd DIR && . ./env): sets LD_LIBRARY_PATH,
#                FEDRUN_PLUGIN_PATH and PATH to DIR's folders.
# Run it from the top of a tree built with configure --with-cuda. Used for
# the GPU checks of the CUDA backend (README, "The GPU backend").
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [PROGRAM...]" >&2; exit 2; }
dir=$1
shift
[ -f plugins/.libs/backend_cuda.so ] ||
	{ echo "$0: plugins/.libs/backend_cuda.so missing: configure --with-cuda && make" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/plugins" "$dir/lib"
real() { # libtool keeps the real binary of a wrapper in .libs/
	d=$(dirname "$1") b=$(basename "$1")
	if [ -x "$d/.libs/$b" ]; then echo "$d/.libs/$b"; else echo "$1"; fi
}
for p in fedrun "$@"; do
	cp "$(real "$p")" "$dir/bin/$(basename "$p")"
done
cp plugins/.libs/*.so "$dir/plugins/"
cp core/.libs/libfedrun.so.0 "$dir/lib/"
for f in "$dir"/bin/* "$dir"/plugins/*.so; do
	LD_LIBRARY_PATH=core/.libs ldd "$f" 2>/dev/null | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
	case $(basename "$lib") in
	libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | \
		libstdc++.so* | libgcc_s.so* | libcu* | libnv* | libfedrun.so*) ;;
	*) cp -L "$lib" "$dir/lib/" ;;
	esac
done
strip --strip-unneeded "$dir"/bin/* "$dir"/plugins/*.so "$dir"/lib/* 2>/dev/null || true
cat >"$dir/env" <<'ENV'
here=$PWD
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FEDRUN_PLUGIN_PATH="$here/plugins"
export PATH="$here/bin:$PATH"
ENV
du -sh "$dir"
