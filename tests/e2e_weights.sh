#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# aggregator.weights "steps": FedNMT's weighted average (Wang et al. 2021,
# eq. 3). With clients.epochs the clients make different numbers of local
# steps; fedavg's weight for client k in a round must be its logged
# "updates" over the round's sum, the final model must differ from the
# samples-weighted one, and streaming (chunks of 8 clients with 1 thread,
# 12 with 3) must not change the bits.
. "$top_srcdir/tests/lib.sh"
cat >p.json <<'JSON'
{"name": "weights", "seed": 3, "rounds": 3,
 "model": {"plugin": "meanest", "problem": "gaussian", "dim": 4},
 "data": {"groups": [{"clients": 15, "mean": 1, "samples": 3, "valid_samples": 0},
		     {"clients": 15, "mean": -1, "samples": 10, "valid_samples": 0}]},
 "clients": {"fraction": 0.7, "epochs": 1, "batch": 4, "optimizer": {"name": "sgd", "lr": 0.1}},
 "aggregator": {"plugin": "fedavg", "weights": "steps"},
 "eval": {"every": 0, "final_test": false},
 "output": {"dir": "out", "checkpoint_every": 0}}
JSON
run_ok --threads 1 p.json --set output.dir=t1
run_ok --threads 3 p.json --set output.dir=t3
cmp t1/final.safetensors t3/final.safetensors || die "steps weights: --threads 1 and 3 differ"
# Per round: weight_k == updates_k / sum(updates), and clients of 3 and 10
# samples made 1 and 3 updates (so the weights are not n_k / n).
sed -n 's/^{"round":\([0-9]*\),"client":\([0-9]*\),"split":[^,]*,"metric":"\(updates\|fedavg.weight\)","value":\([^,]*\),.*/\1 \2 \3 \4/p' \
	t1/metrics.jsonl >w.txt
awk '
	$3 == "updates" { u[$1 " " $2] = $4; s[$1] += $4; n[$4]++ }
	$3 == "fedavg.weight" { w[$1 " " $2] = $4 }
	END {
		for (k in w) {
			split(k, rc, " ")
			want = u[k] / s[rc[1]]
			d = w[k] - want
			if (d > 1e-12 || d < -1e-12) { printf "round %s client %s: weight %s, want %.17g\n", rc[1], rc[2], w[k], want; bad = 1 }
			checked++
		}
		if (checked < 60 || !n[1] || !n[3]) { printf "checked %d weights; clients with 1 update: %d, 3: %d\n", checked, n[1], n[3]; bad = 1 }
		exit bad
	}' w.txt || die "fedavg.weight is not updates / sum of updates"
run_ok --threads 1 p.json --set output.dir=samples --set aggregator.weights=samples
cmp -s t1/final.safetensors samples/final.safetensors && die "steps and samples weights gave the same model"
# fedopt and fedprox take the same option.
run_ok p.json --set output.dir=fo --set 'aggregator={"plugin": "fedopt", "method": "adam", "weights": "steps"}'
run_ok p.json --set output.dir=fp --set 'aggregator={"plugin": "fedprox", "mu": 0.1, "weights": "steps"}'
"$FEDRUN" -q p.json --set output.dir=bad --set aggregator.weights=step 2>"$work/stderr" &&
	die "aggregator.weights \"step\" was accepted"
grep -q 'aggregator.weights: expected one of {samples,uniform,steps}, got "step"' "$work/stderr" ||
	die "a bad weights value: $(cat "$work/stderr")"
echo "weights steps: fedavg.weight = updates / sum, thread-independent, differs from samples"
