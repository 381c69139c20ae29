#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The committed FedAtt reproduction (repro/ji2019) recomputes: results/ and
# results-h100/, whose runs were not kept, from their TSV tables, times.tsv
# and figure data; results-sizes/ from its runs' metrics.csv. And
# check-results.sh fails when one number changes, in a results.md, in a
# table or in a run's metrics.csv, in the unigram baseline (its row,
# unigram.tsv, its targets against the runs' test tokens) or in a goal's
# verdict or interval; a goal on a run that did not learn says "not judged".
# shellcheck source=tests/checks.sh
. "${srcdir:-.}/tests/checks.sh"
# (no figures are drawn: results.md is the same without)
JI2019_FIGURES=0
export JI2019_FIGURES
r=${srcdir:-.}/repro/ji2019
check=$r/check-results.sh
for d in results results-h100 results-sizes; do
	cp -R "$r/$d" "$tmp/$d"
	chmod -R u+w "$tmp/$d"
	check "the committed $d/ recomputes" "$check" "$tmp/$d/results.md"
done
recompute_only repro_ji2019_results

# results/: a cell and a verdict of results.md, a mean of table2.tsv, a
# seed's gain in gain.tsv, an attention summary, a point of a curve
cp -R "$tmp/results" "$tmp/a"
check "a Table II cell of results.md changed" \
	perturb "$tmp/a/results.md" 's/^| FedSGD | 1449\.2 | 1427\.2 |$/| FedSGD | 1449.3 | 1427.2 |/'
check "... fails check-results.sh" fails "$check" "$tmp/a/results.md"

cp -R "$tmp/results" "$tmp/b"
check "a verdict of results.md changed" \
	perturb "$tmp/b/results.md" '/^- Dirichlet α 10, FedAtt against FedAvg:/s/\*\*reproduced\*\*/**inconclusive**/'
check "... fails check-results.sh" fails "$check" "$tmp/b/results.md"

cp -R "$tmp/results" "$tmp/b2"
check "a bound of a goal's t interval changed" \
	perturb "$tmp/b2/results.md" '/^- Dirichlet α 10, FedAtt against FedAvg:/s/\[-10\.9, -0\.7\]/[-10.9, -0.6]/'
check "... fails check-results.sh" fails "$check" "$tmp/b2/results.md"

cp -R "$tmp/results" "$tmp/b3"
check "a one-seed goal's difference changed" \
	perturb "$tmp/b3/results.md" '/^- noise β = 0\.001, FedAtt against FedAvg:/s/difference -7\.0)/difference -7.1)/'
check "... fails check-results.sh" fails "$check" "$tmp/b3/results.md"

# the unigram baseline: its row in results.md, its perplexity in unigram.tsv
# (and, where data/brown/out is built, a change below results.md's
# rounding, which only the corpus's recomputation sees)
cp -R "$tmp/results" "$tmp/u1"
check "the unigram baseline's Table II row changed" \
	perturb "$tmp/u1/results.md" 's/^| unigram baseline | 409\.7 | 401\.9 |$/| unigram baseline | 409.8 | 401.9 |/'
check "... fails check-results.sh" fails "$check" "$tmp/u1/results.md"
cp -R "$tmp/results" "$tmp/u2"
check "the unigram's test perplexity in unigram.tsv changed" \
	perturb "$tmp/u2/unigram.tsv" 's/^test	409\.748857	/test	419.748857	/'
check "... fails check-results.sh" fails "$check" "$tmp/u2/results.md"
if [ -e "${srcdir:-.}/data/brown/out/stats.tsv" ]; then
	cp -R "$tmp/results" "$tmp/u3"
	check "the unigram's test perplexity in unigram.tsv changed in the 7th digit" \
		perturb "$tmp/u3/unigram.tsv" 's/^test	409\.748857	/test	409.748858	/'
	check "... fails check-results.sh (recomputed from data/brown/out)" fails "$check" "$tmp/u3/results.md"
else
	echo "repro_ji2019_results: data/brown/out is not built: unigram.tsv is taken as kept"
fi

cp -R "$tmp/results" "$tmp/c"
check "a mean of table2.tsv changed" \
	perturb "$tmp/c/table2.tsv" 's/^FedSGD	1449\.24$/FedSGD	1459.24/'
check "... fails check-results.sh" fails "$check" "$tmp/c/results.md"

cp -R "$tmp/results" "$tmp/d"
check "a seed's gain in gain.tsv changed" \
	perturb "$tmp/d/gain.tsv" 's/	4\.01245$/	-4.01245/'
check "... fails check-results.sh" fails "$check" "$tmp/d/results.md"

cp -R "$tmp/results" "$tmp/e"
check "an attention summary in alpha.tsv changed" \
	perturb "$tmp/e/alpha.tsv" 's/^frobenius	gru\.0\.w_hh	0\.9854	1\.523/frobenius	gru.0.w_hh	0.9854	1.623/'
check "... fails check-results.sh" fails "$check" "$tmp/e/results.md"

cp -R "$tmp/results" "$tmp/f"
check "FedSGD's last validation perplexity in fig-table2-ppl.dat changed" \
	perturb "$tmp/f/fig-table2-ppl.dat" 's/^12	1427\.1456315363705	/12	1437.1456315363705	/'
check "... fails check-results.sh" fails "$check" "$tmp/f/results.md"

# results-h100/: a mean of table2.tsv
cp -R "$tmp/results-h100" "$tmp/g"
check "a mean of results-h100/table2.tsv changed" \
	perturb "$tmp/g/table2.tsv" 's/^FedAvg	141\.364$/FedAvg	142.364/'
check "... fails check-results.sh" fails "$check" "$tmp/g/results.md"

# results-sizes/: a run's test perplexity, a run removed
cp -R "$tmp/results-sizes" "$tmp/h"
check "a test perplexity in a run's metrics.csv changed" \
	perturb "$tmp/h/t4-fedatt-medium-s3/metrics.csv" 's/^6,,test,ppl,,317\.8057478467278,/6,,test,ppl,,318.8057478467278,/'
check "... fails check-results.sh" fails "$check" "$tmp/h/results.md"

cp -R "$tmp/results-sizes" "$tmp/i"
check "a run's metrics.csv removed" rm "$tmp/i/t4-fedavg-large-s2/metrics.csv" "$tmp/i/t4-fedavg-large-s2/.complete"
check "... fails check-results.sh" fails "$check" "$tmp/i/results.md"

cp -R "$tmp/results-sizes" "$tmp/i2"
check "a run's test tokens, no longer the unigram's targets" \
	perturb "$tmp/i2/t4-fedatt-medium-s3/metrics.csv" 's/^6,,test,tokens,,125180,/6,,test,tokens,,125181,/'
check "... fails check-results.sh" fails "$check" "$tmp/i2/results.md"
"$r/results.sh" "$tmp/i2" "$tmp/i2-out" >/dev/null
check "... and results.md says the unigram is not comparable" grep -q \
	"(\*\*not comparable\*\*: the runs' test tokens are 125180 125181)" "$tmp/i2-out/results.md"

# a run that did not learn (test perplexity no better than the vocabulary's
# 10000 words, or not a number): its goal is not judged, and says why
cp -R "$tmp/results-sizes" "$tmp/j"
check "a run's test perplexity set to 12000" \
	perturb "$tmp/j/t4-fedatt-medium-s3/metrics.csv" 's/^6,,test,ppl,,317\.8057478467278,/6,,test,ppl,,12000,/'
check "... results.sh remakes results.md" "$r/results.sh" "$tmp/j" "$tmp/j-out" >/dev/null
check "... its goal is not judged, saying why" grep -q \
	'^- preset medium, FedAtt against FedAvg: \*\*not judged\*\* (the test perplexity of t4-fedatt-medium-s3, 12000\.0, is no better than a uniform guess over the 10000 words: the run did not converge)\.$' \
	"$tmp/j-out/results.md"
cp -R "$tmp/results-sizes" "$tmp/k"
check "a run's test perplexity set to nan" \
	perturb "$tmp/k/t4-fedavg-large-s2/metrics.csv" 's/^\(6,,test,ppl,,\)[0-9.]*,/\1nan,/'
"$r/results.sh" "$tmp/k" >/dev/null
check "... its goal is not judged, saying why" grep -q \
	'^- preset large, FedAtt against FedAvg: \*\*not judged\*\* (the test perplexity of t4-fedavg-large-s2 is nan: the run did not converge)\.$' \
	"$tmp/k/results.md"
check "... and check-results.sh takes that results.md" "$check" "$tmp/k/results.md"
checks_done repro_ji2019_results
