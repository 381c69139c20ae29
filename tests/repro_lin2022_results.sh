#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The committed FedNLP reproduction (repro/lin2022/results) recomputes:
# results.md is what results.sh makes of the runs' metrics.csv, settings,
# times.tsv and baselines.tsv there; and check-results.sh fails when one
# number changes, in results.md or in a run's metrics.csv.
. "${srcdir:-.}/tests/checks.sh"
check=${srcdir:-.}/repro/lin2022/check-results.sh
cp -R "${srcdir:-.}/repro/lin2022/results" "$tmp/r"
chmod -R u+w "$tmp/r"
check "the committed results recompute" "$check" "$tmp/r/results.md"

cp -R "$tmp/r" "$tmp/a"
check "a table cell of results.md changed" \
	perturb "$tmp/a/results.md" 's/^| FedAvg | 1 | 0\.222 ± - \[0\.222, 0\.222\]/| FedAvg | 1 | 0.232 ± - [0.232, 0.232]/'
check "... fails check-results.sh" fails "$check" "$tmp/a/results.md"

cp -R "$tmp/r" "$tmp/b"
check "a verdict of results.md changed" \
	perturb "$tmp/b/results.md" '/^- Q1 genre: FedOpt ahead of FedAvg:/s/\*\*inconclusive (one seed)\*\*/**reproduced**/'
check "... fails check-results.sh" fails "$check" "$tmp/b/results.md"

cp -R "$tmp/r" "$tmp/c"
check "a test accuracy in a run's metrics.csv changed" \
	perturb "$tmp/c/genre-dir1-fedavg-mini-s1/metrics.csv" 's/^8,,test,accuracy,,0\.222,/8,,test,accuracy,,0.223,/'
check "... fails check-results.sh" fails "$check" "$tmp/c/results.md"

cp -R "$tmp/r" "$tmp/d"
check "a run's metrics.csv removed" rm "$tmp/d/pos-qty1-fedavg-mini-s1/metrics.csv"
check "... fails check-results.sh" fails "$check" "$tmp/d/results.md"
checks_done repro_lin2022_results
