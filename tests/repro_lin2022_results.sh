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
recompute_only repro_lin2022_results

cp -R "$tmp/r" "$tmp/a"
check "a table cell of results.md changed" \
	perturb "$tmp/a/results.md" 's/^| FedAvg | 3 | 0\.236 ± 0\.015 \[0\.222, 0\.251\]/| FedAvg | 3 | 0.246 ± 0.015 [0.222, 0.251]/'
check "... fails check-results.sh" fails "$check" "$tmp/a/results.md"

cp -R "$tmp/r" "$tmp/b"
check "a verdict of results.md changed" \
	perturb "$tmp/b/results.md" '/^- Q1 genre: FedOpt ahead of FedAvg:/s/\*\*inconclusive (interval includes 0)\*\*/**reproduced**/'
check "... fails check-results.sh" fails "$check" "$tmp/b/results.md"

cp -R "$tmp/r" "$tmp/c"
check "a test accuracy in a run's metrics.csv changed" \
	perturb "$tmp/c/genre-dir1-fedavg-mini-s1/metrics.csv" 's/^8,,test,accuracy,,0\.222,/8,,test,accuracy,,0.223,/'
check "... fails check-results.sh" fails "$check" "$tmp/c/results.md"

cp -R "$tmp/r" "$tmp/d"
check "a run's metrics.csv removed" rm "$tmp/d/pos-qty1-fedavg-mini-s1/metrics.csv"
check "... fails check-results.sh" fails "$check" "$tmp/d/results.md"

# collect.sh --add: the runs of other seeds, from another machine (here
# seed 1's, renamed seed 4, and encoders of other bits), join DEST's
collect=${srcdir:-.}/repro/lin2022/collect.sh
o=$tmp/out2
mkdir -p "$o"
for r in "$tmp/r"/*-s1 "$tmp/r"/pretrain-mini "$tmp/r"/pretrain-tiny; do
	b=$(basename "$r")
	case $b in *-s1) b=${b%-s1}-s4 ;; esac
	cp -R "$r" "$o/$b"
done
sed 's/^seeds=.*/seeds="4"/' "$tmp/r/settings" >"$o/settings"
cp "$tmp/r/times.tsv" "$o/times.tsv"
for e in encoder-mini encoder-tiny; do
	cp -R "$tmp/r/$e" "$o/$e"
	echo "weights of $e, seed 4" >"$o/$e/model.safetensors"
done
cp -R "$tmp/r" "$tmp/m"
check "collect.sh --add adds seed 4" "$collect" --add "$o" "$tmp/m"
check "... the settings say seeds 1 2 3 4" grep -qx 'seeds="1 2 3 4"' "$tmp/m/settings"
check "... results.md has both seeds" grep -q '^examples a task. Seeds: 1 2 3 4 (' "$tmp/m/results.md"
check "... encoders.tsv has seed 4's weights" \
	test "$(grep -c '^4	encoder-\(mini\|tiny\)	[0-9a-f]\{64\}$' "$tmp/m/encoders.tsv")" -eq 2
check "... the pretraining runs kept apart" test -e "$tmp/m/pretrain-mini-s4/metrics.csv"
check "... and the merged results recompute" "$check" "$tmp/m/results.md"
check "adding seed 4 again is refused" fails "$collect" --add "$o" "$tmp/m"
cp -R "$tmp/r" "$tmp/n"
sed -i 's/^rounds=.*/rounds=9/' "$o/settings"
check "adding runs of other settings is refused" fails "$collect" --add "$o" "$tmp/n"
check "... and DEST is unchanged" diff -r "$tmp/r" "$tmp/n"
checks_done repro_lin2022_results
