#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The direct computation for the five seeds of experiments.sh: the exact
# sample means of each run's data (sample_means.c), the exact minimiser of
# the target's validation loss, and fedrun's runs set against it
# (exact_check.py). Needs the runs of experiments.sh under
# ${OUT:-/tmp/tupitsa2024} and a C compiler.
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${OUT:-/tmp/tupitsa2024}
bin=$out/sample_means
${CC:-cc} -O2 -I"$top" -I"$top/core/include" "$here/sample_means.c" "$top/core/util/rng.c" \
	-lm -o "$bin"
for s in 1 2 3 4 5; do
	for v in 1000 10000; do
		"$bin" $((s + 4)) 10 $v 5:1000:0 95:1000:0.1 50:1000:1,0,0,0,0,0,0,0,0,0 \
			>"$out/means_s${s}_valid$v.txt"
	done
	echo "== s$s (data.seed $((s + 4))), 1000 validation samples"
	python3 "$here/exact_check.py" "$out/means_s${s}_valid1000.txt" "$out/merit/s$s" \
		"$out/md_steps100_lr10/s$s"
	echo "== s$s (data.seed $((s + 4))), 10000 validation samples"
	python3 "$here/exact_check.py" "$out/means_s${s}_valid10000.txt" "$out/valid10000/s$s"
done
