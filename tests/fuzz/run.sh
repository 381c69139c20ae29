#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs each libFuzzer target built by `make fuzz` for SECONDS (default 60),
# starting from its seeds (tests/fuzz/corpus/TARGET) and the inputs that
# once failed (tests/fuzz/regress/TARGET). Fails on any crash, leak,
# sanitizer report, timeout (10 s an input) or memory over 2 GB; the input
# is left in BUILDDIR/tests/fuzz/crash-* (copy it to tests/fuzz/regress/
# TARGET/ once fixed). FUZZ_JOBS targets run at a time (default: the
# number of CPUs).
# Usage: tests/fuzz/run.sh SRCDIR BUILDDIR [SECONDS]
set -eu
src=$1 build=$2 secs=${3:-60}
bin=$build/tests/fuzz/bin
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
# one TARGET: runs it; its verdict goes to $build/tests/fuzz/TARGET.result
one() {
	t=$1
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
		echo "fuzz_$t: $(sed -n 's/^stat::number_of_executed_units: *//p' "$build/tests/fuzz/$t.log") inputs in $(($(date +%s) - t0)) s, no failure" \
			>"$build/tests/fuzz/$t.result"
	else
		{
			echo "fuzz_$t: FAILED (see $build/tests/fuzz/$t.log):"
			grep -E 'ERROR|SUMMARY|Test unit written' "$build/tests/fuzz/$t.log" | head -n 5
		} >"$build/tests/fuzz/$t.result"
	fi
}
targets="safetensors pipeline text bleu translate"
for t in $targets; do
	[ -x "$bin/fuzz_$t" ] || { echo "run.sh: $bin/fuzz_$t: not built (make fuzz)" >&2; exit 1; }
	rm -f "$build/tests/fuzz/$t.result"
done
# FUZZ_JOBS targets at a time (default: the CPUs; each target is one
# process on one core).
running=0
for t in $targets; do
	one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait
		running=0
	fi
done
wait
status=0
for t in $targets; do
	cat "$build/tests/fuzz/$t.result" 2>/dev/null || echo "fuzz_$t: no result"
	grep -q "no failure" "$build/tests/fuzz/$t.result" 2>/dev/null || status=1
done
exit $status
