#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A new --prefix in a tree built for another one: configure, make and make
# install must just work (libtool refused to install plugins linked for the
# old prefix, "cannot install ... to a directory not ending in ...", until
# make clean), and the installed fedrun must find its plugins in the new
# prefix. Run by .ci/run in the build tree, which it reconfigures with the
# new prefix and then back with the options it was given.
# Usage: tests/prefix_change.sh CONFIGURE-OPTION...
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in one two; do
	./configure "$@" --prefix="$tmp/$p" >"$tmp/configure.log" 2>&1 || { tail -n 20 "$tmp/configure.log"; exit 1; }
	make -j2 >"$tmp/make.log" 2>&1 || { tail -n 20 "$tmp/make.log"; exit 1; }
	make install >"$tmp/install.log" 2>&1 || { echo "prefix $p: make install failed:"; tail -n 5 "$tmp/install.log"; exit 1; }
	# (its status is not the point: a plugin refused here, such as a CUDA
	# backend without a driver, is listed as refused)
	"$tmp/$p/bin/fedrun" plugins >"$tmp/plugins.txt" 2>&1 || true
	grep -q " $tmp/$p/lib/fedrun/fedavg.so$" "$tmp/plugins.txt" ||
		{ echo "prefix $p: fedrun does not load its plugins from $tmp/$p/lib/fedrun:"; head -n 5 "$tmp/plugins.txt"; exit 1; }
done
./configure "$@" >"$tmp/configure.log" 2>&1 || { tail -n 20 "$tmp/configure.log"; exit 1; }
make -j2 >"$tmp/make.log" 2>&1 || { tail -n 20 "$tmp/make.log"; exit 1; }
echo "prefix change: built and installed for two prefixes in one tree, plugins found in each"
