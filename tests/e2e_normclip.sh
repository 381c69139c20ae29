#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The example aggregator examples/plugins/normclip.c (built as a test
# module) in a run whose selector sends part of each update ("random"):
# with a bound no update reaches it, normclip is federated averaging, each
# tensor's mean over the clients that sent it, so the run ends where
# fedavg's ends. (normclip once divided by the samples of every client of
# the round, and moved a tensor few clients sent by a fraction of its mean.)
. "$top_srcdir/tests/lib.sh"
cat >p.json <<'JSON'
{"name": "normclip-partial", "seed": 3, "rounds": 4,
 "model": {"plugin": "meanest", "problem": "gaussian", "dim": 64,
           "tensors": ["a", "b", "c", "d"]},
 "data": {"groups": [{"clients": 2, "mean": 0.0, "samples": 40},
                     {"clients": 2, "mean": 1.0, "samples": 80},
                     {"clients": 1, "mean": 3.0, "samples": 160}]},
 "clients": {"fraction": 1.0, "epochs": 1, "batch": 8, "optimizer": {"name": "sgd", "lr": 0.1}},
 "selector": {"plugin": "random", "count": "median"},
 "aggregator": {"plugin": "fedavg"},
 "output": {"dir": "fedavg"}}
JSON
run_ok p.json
run_ok --allow-plugin-paths --set aggregator.plugin=normclip \
	--set "aggregator.path=$top_builddir/tests/aggregators/.libs/normclip.so" \
	--set aggregator.max_norm=1e30 --set output.dir=normclip p.json
# the selector did cut the updates: less was pulled than pushed
pull=$(sed -n 's/.*"bytes_pull":\([0-9]*\).*/\1/p' fedavg/metrics.jsonl | tail -n 1)
push=$(sed -n 's/.*"bytes_push":\([0-9]*\).*/\1/p' fedavg/metrics.jsonl | tail -n 1)
[ "$pull" -lt "$push" ] || die "the updates were whole: pulled $pull bytes of $push"
for m in loss x0; do
	want=$(metric fedavg/metrics.jsonl $m valid)
	got=$(metric normclip/metrics.jsonl $m valid)
	[ -n "$want" ] && [ -n "$got" ] || die "metric $m missing"
	awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; a = w < 0 ? -w : w
		exit !(d <= 1e-6 * a + 1e-12) }' ||
		die "valid $m: normclip $got, fedavg $want (not renormalised over the senders?)"
done
grep -q '"metric":"normclip.step_norm"' normclip/metrics.jsonl || die "normclip.step_norm missing"
echo "normclip under the random selector ends where fedavg does (valid x0 $got)"
