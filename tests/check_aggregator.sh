#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fedrun check-aggregator: fedavg and the two example plugins of
# examples/plugins/ (normclip, streamavg) pass every property; two test
# aggregators with one fault each (tests/plugins/agg_broken.c) fail exactly
# that property; robust rules are reported as they are, not as means; and
# the exit statuses of fedrun-check-aggregator(1).
. "$top_srcdir/tests/lib.sh"
plugins="$top_builddir/tests/aggregators/.libs"

# check ARGS...: runs the command, output in out.txt, status in $rc.
check() {
	rc=0
	"$FEDRUN" check-aggregator "$@" >out.txt 2>err.txt || rc=$?
}
# lines STATUS: the names of the properties reported with STATUS.
lines() {
	sed -n "s/^$1  \([a-z_]*\):.*/\1/p" out.txt | tr '\n' ' '
}
expect() { # expect RC FAILS SKIPS WHAT
	[ "$rc" -eq "$1" ] || { cat out.txt err.txt; die "$4: exit $rc, expected $1"; }
	[ "$(lines FAIL)" = "$2" ] || { cat out.txt; die "$4: failed '$(lines FAIL)', expected '$2'"; }
	[ "$(lines SKIP)" = "$3" ] || { cat out.txt; die "$4: skipped '$(lines SKIP)', expected '$3'"; }
	# every line: the header, a property, or the summary
	if grep -v -E '^(PASS|FAIL|SKIP|INFO)  [a-z_]+: .|^aggregator |^[a-z0-9_-]+: [0-9]+ passed, ' out.txt; then
		die "$4: a line of an unexpected form"
	fi
}

all="single identical partial unsent nonfinite stream threads "
check fedavg
expect 0 "" "" fedavg
[ "$(lines PASS)" = "$all" ] || die "fedavg passed '$(lines PASS)', expected '$all'"
grep -q '^INFO  weighted: .*weighted by samples' out.txt || die "fedavg: not reported as samples-weighted"
grep -q '^fedavg: 7 passed, 0 failed, 0 skipped$' out.txt || die "fedavg: summary: $(tail -n 1 out.txt)"
# Options as in the pipeline's aggregator section; one thread: nothing to compare.
check fedavg --set weights=uniform --threads 1
expect 0 "" "threads " "fedavg, uniform weights"
grep -q '^INFO  weighted: .*uniform weights' out.txt || die "fedavg uniform: not reported as uniform"

# The examples, built from examples/plugins/ as test modules.
check --allow-plugin-paths "$plugins/normclip.so" --set max_norm=1000
expect 0 "" "stream " normclip
check --allow-plugin-paths "$plugins/streamavg.so"
expect 0 "" "" streamavg
grep -q '^INFO  metrics: streamavg.step_norm$' out.txt || die "streamavg: metrics: $(grep metrics out.txt)"

# One fault each: only that property fails.
check --allow-plugin-paths "$plugins/agg_norenorm.so"
expect 1 "partial " "stream " agg_norenorm
check --allow-plugin-paths "$plugins/agg_nan.so"
expect 1 "nonfinite " "stream " agg_nan
grep -q '^FAIL  nonfinite: a NaN .*was accepted' out.txt || die "agg_nan: $(grep nonfinite out.txt)"

# Robust rules: what holds is reported, and no weighting is claimed.
check median
expect 0 "" "stream " median
grep -q '^INFO  weighted: .*not a mean' out.txt || die "median reported as a mean"
check krum
expect 1 "single partial " "stream " krum
grep -q '^FAIL  single: .*2f + 3' out.txt || die "krum: single: $(grep single out.txt)"

# Exit statuses: 3 the plugin cannot be loaded, 2 usage or a bad option.
check "$plugins/agg_nan.so"
[ "$rc" -eq 3 ] && grep -q -- '--allow-plugin-paths' err.txt || die "a file without the option: exit $rc: $(cat err.txt)"
[ ! -s out.txt ] || die "a refused file printed: $(cat out.txt)"
check nosuch
[ "$rc" -eq 3 ] && grep -q "nosuch" err.txt || die "an unknown plugin: exit $rc: $(cat err.txt)"
check meanest
[ "$rc" -eq 3 ] || die "a model named as the aggregator: exit $rc"
check --allow-plugin-paths "$top_srcdir/tests/check_aggregator.sh"
[ "$rc" -eq 3 ] || die "a file that is no plugin: exit $rc"
check
[ "$rc" -eq 2 ] || die "no plugin: exit $rc"
check fedavg median
[ "$rc" -eq 2 ] || die "two plugins: exit $rc"
check --threads 0 fedavg
[ "$rc" -eq 2 ] && grep -q -- '--threads' err.txt || die "--threads 0: exit $rc"
check fedavg --set weights=bogus
[ "$rc" -eq 2 ] && grep -q 'aggregator.weights' err.txt || die "a bad option value: exit $rc: $(cat err.txt)"
check fedavg --set nosuchkey=1
[ "$rc" -eq 2 ] && grep -q 'nosuchkey' err.txt || die "an unknown option: exit $rc: $(cat err.txt)"
check fedprox
[ "$rc" -eq 2 ] && grep -q 'mu' err.txt || die "fedprox without mu: exit $rc: $(cat err.txt)"
check fedprox --set mu=0.01
expect 0 "" "" "fedprox, mu 0.01"
check --help
[ "$rc" -eq 0 ] && grep -q '^Usage: fedrun check-aggregator' out.txt || die "--help: exit $rc"
echo "check-aggregator: fedavg, normclip, streamavg pass; the faulty plugins fail their property"
