#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs each libFuzzer target built by `make fuzz` for SECONDS (default 60),
# starting from its seeds (tests/fuzz/corpus/TARGET) and the inputs that
# once failed (tests/fuzz/regress/TARGET). Fails on any crash, leak,
# sanitizer report, timeout (10 s an input) or memory over 2 GB; the input
# is left in BUILDDIR/tests/fuzz/crash-* (copy it to tests/fuzz/regress/
# TARGET/ once fixed).
# Usage: tests/fuzz/run.sh SRCDIR BUILDDIR [SECONDS]
set -eu
src=$1 build=$2 secs=${3:-60}
bin=$build/tests/fuzz/bin
status=0
for t in safetensors pipeline text bleu translate; do
	[ -x "$bin/fuzz_$t" ] || { echo "run.sh: $bin/fuzz_$t: not built (make fuzz)" >&2; exit 1; }
	work=$build/tests/fuzz/work-$t
	mkdir -p "$work"
	dirs="$work $src/tests/fuzz/corpus/$t"
	[ -d "$src/tests/fuzz/regress/$t" ] && dirs="$dirs $src/tests/fuzz/regress/$t"
	t0=$(date +%s)
	# shellcheck disable=SC2086
	if ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 "$bin/fuzz_$t" \
		-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 \
		-print_final_stats=1 -artifact_prefix="$build/tests/fuzz/crash-$t-" $dirs \
		>"$build/tests/fuzz/$t.log" 2>&1; then
		echo "fuzz_$t: $(sed -n 's/^stat::number_of_executed_units: *//p' "$build/tests/fuzz/$t.log") inputs in $(($(date +%s) - t0)) s, no failure"
	else
		echo "fuzz_$t: FAILED (see $build/tests/fuzz/$t.log):"
		grep -E 'ERROR|SUMMARY|Test unit written' "$build/tests/fuzz/$t.log" | head -n 5
		status=1
	fi
done
exit $status
