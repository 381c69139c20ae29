#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The toy problem of the MeritFed talk: f_1 = x², f_2..f_10 = (x − 0.001)²,
# f_11..f_100 = (x − 10)². FedAvg with uniform weights and every client each
# round converges to the mean of the minimisers, 9.00009.
. "$top_srcdir/tests/lib.sh"
run_ok "$top_srcdir/examples/toy-fedavg.json" --set output.dir=toy
x=$(metric toy/metrics.jsonl x0 test)
[ -n "$x" ] || die "no final x0 in metrics"
awk -v x="$x" 'BEGIN { d = x - 9.00009; if (d < 0) d = -d; exit !(d < 1e-4) }' ||
	die "x = $x, expected 9.00009 within 1e-4"
echo "toy: x = $x (expected 9.00009)"
[ -s toy/final.safetensors ] || die "no final.safetensors"
[ -s toy/metrics.csv ] || die "no metrics.csv"
grep -q '"rounds": 100' toy/pipeline.json || die "resolved pipeline lacks rounds"
grep -q '"weights": "uniform"' toy/pipeline.json || die "resolved pipeline lacks aggregator settings"
grep -q '"momentum": 0' toy/pipeline.json || die "resolved pipeline lacks filled-in defaults"
