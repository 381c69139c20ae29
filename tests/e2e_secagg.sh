#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Secure aggregation in a run (the pipeline's "secagg" section):
#  - integer updates (meanest's quadratic problem, one SGD step of lr 0.5
#    lands on each client's integer mean) quantise exactly, and the final
#    model is plain FedAvg's bit for bit: complete and sparse graphs,
#    fedavg and fedopt, streaming over chunks (3 threads), central DP;
#  - float updates (the gaussian problem) give the model of plain FedAvg
#    within the quantisation bound the run reports, and with local DP noise;
#  - the protocol's costs are metrics; a pipeline it cannot serve is
#    refused with a message.
# Skipped (77) where fedrun was built without libsodium or GMP, after
# checking that the section is refused with a message saying so.
. "$top_srcdir/tests/lib.sh"

pipeline() { # FILE PROBLEM CLIENTS ROUNDS AGGREGATOR [EXTRA]
	cat >"$1" <<JSON
{"name": "sa", "seed": 3, "rounds": $4,
 "model": {"plugin": "meanest", "problem": "$2", "dim": 3072, "init": 0,
           "tensors": ["a", "b", "c"]},
 "data": {"groups": [{"clients": $(($3 / 2)), "mean": 1, "samples": 2, "valid_samples": 0},
                     {"clients": $(($3 - $3 / 2)), "mean": 3, "samples": 6, "valid_samples": 0}]},
 "clients": {"fraction": 1, "epochs": 0, "steps": 1, "batch": 2,
             "optimizer": {"name": "sgd", "lr": 0.5}},
 "aggregator": $5,
 "eval": {"every": 0, "final_test": false},
 "output": {"dir": "plain", "checkpoint_every": 0}${6:+, $6}}
JSON
}

# The refusal where secure aggregation is not built.
pipeline p.json quadratic 6 1 '{"plugin": "fedavg"}'
if ! "$FEDRUN" validate p.json --set 'secagg={}' >out 2>err; then
	grep -q "built without secure aggregation" err || { cat err; die "secagg refused for another reason"; }
	echo "secagg: not built here (refused with a message)"
	exit 77
fi

# Exact: the secure run is plain FedAvg bit for bit. Client k's update is
# its mean minus θ_t: 1 or 3 in round 1 (weighted means 2.5 by samples, 2
# uniformly), then -1.5 and 0.5 or -1 and 1: every value, every sum and
# every mean is exact in float and on the ring.
same() { # NAME AGGREGATOR SECAGG [ROUNDS] [EXTRA]
	pipeline p.json quadratic 6 "${4:-2}" "$2" "${5-}"
	run_ok p.json --set output.dir="$1.plain"
	run_ok p.json --set output.dir="$1.sa" --set "secagg=$3"
	cmp "$1.plain/final.safetensors" "$1.sa/final.safetensors" ||
		die "$1: the secure run's model is not plain FedAvg's"
	grep -q '"metric":"secagg.masked.bytes_sent"' "$1.sa/metrics.jsonl" ||
		die "$1: no secagg metrics (was it on?)"
}
same complete '{"plugin": "fedavg", "weights": "uniform"}' '{"graph": "complete", "clip": 4}'
same sparse '{"plugin": "fedavg"}' '{"graph": "sparse", "num_shares": 3, "threshold": 2, "clip": 4}'
same fedopt '{"plugin": "fedopt", "method": "adam", "weights": "uniform"}' '{"clip": 4, "bits": 48}'
# Central DP: the server's noise on the mean (one round: its noise makes
# the next round's mean a float that the aggregator's float update rounds
# once more than plain FedAvg's double sum, fedrun-pipeline(5)).
same central '{"plugin": "fedavg", "weights": "uniform"}' '{"clip": 4}' 1 \
	'"privacy": {"plugin": "gaussian", "mode": "central", "clip": 1000, "noise_multiplier": 0.01, "noise": "reproducible"}'
same nodp '{"plugin": "fedavg", "weights": "uniform"}' '{"clip": 4}' 1
cmp -s central.sa/final.safetensors nodp.sa/final.safetensors && die "central DP changed nothing"

# Streaming: 40 clients over 3 threads train in chunks; the masked inputs
# add up as they come, and the result is the same bits as one thread's.
pipeline p.json quadratic 40 1 '{"plugin": "fedavg"}'
run_ok --threads 1 p.json --set output.dir=s1 --set 'secagg={"clip": 4}'
run_ok --threads 3 p.json --set output.dir=s3 --set 'secagg={"clip": 4}'
cmp s1/final.safetensors s3/final.safetensors || die "streaming: 1 and 3 threads differ"
run_ok --threads 3 p.json --set output.dir=s3p
cmp s1/final.safetensors s3p/final.safetensors || die "streaming: not plain FedAvg's model"

# The protocol's metrics: per client and stage, and the server's.
m=s3/metrics.jsonl
for stage in advertise share masked unmask; do
	for what in bytes_sent bytes_received seconds; do
		n=$(grep -c "\"metric\":\"secagg.$stage.$what\"" "$m")
		[ "$n" -eq 41 ] || die "secagg.$stage.$what: $n events, expected 40 clients and the server"
	done
done
# A client's masked input: 16 bytes of header, 4 bytes an element (32
# bits) of the 3072 parameters and the 3 tensors' weights.
grep '"client":0,.*"metric":"secagg.masked.bytes_sent"' "$m" | grep -q '"value":12316,' ||
	die "client 0's masked input is not 12316 bytes"
# The bytes of the round count the protocol's messages.
pull_sa=$(grep '"metric":"clients"' "$m" | sed 's/.*"bytes_pull":\([0-9]*\).*/\1/')
pull=$(grep '"metric":"clients"' s3p/metrics.jsonl | sed 's/.*"bytes_pull":\([0-9]*\).*/\1/')
[ "$pull_sa" -gt "$pull" ] || die "bytes_pull $pull_sa with secagg, $pull without"

# Floats: within the bound the run reports (16 bits make it visible).
if command -v python3 >/dev/null 2>&1; then
	maxdiff() { # A B: the largest |a - b| over the two models' floats
		python3 - "$1" "$2" <<'PY'
import json, struct, sys
def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = struct.unpack("<%df" % ((b - a) // 4), data[a:b])
    return out
x, y = load(sys.argv[1]), load(sys.argv[2])
assert x.keys() == y.keys()
print(max(abs(p - q) for k in x for p, q in zip(x[k], y[k])))
PY
	}
	within() { # NAME EXTRA SECAGG: one round, plain against secure
		pipeline p.json gaussian 8 1 '{"plugin": "fedavg"}' "$2"
		run_ok p.json --set output.dir="$1.plain"
		run_ok p.json --set output.dir="$1.sa" --set "secagg=$3"
		bound=$(grep '"metric":"secagg.quant_bound"' "$1.sa/metrics.jsonl" |
			sed 's/.*"value":\([^,]*\),.*/\1/')
		d=$(maxdiff "$1.plain/final.safetensors" "$1.sa/final.safetensors")
		# the bound, and a float's rounding of values near 3
		python3 -c "import sys; d, b = $d, $bound; sys.exit(0 if 0 < d <= b + 5e-7 else 1)" ||
			die "$1: the models differ by $d, the bound is $bound (and must differ at all)"
		echo "$1: models within $d of each other (bound $bound)"
	}
	within floats '' '{"bits": 16, "clip": 8}'
	within localdp '"privacy": {"plugin": "gaussian", "mode": "local", "clip": 100, "noise_multiplier": 0.001, "noise": "reproducible"}' \
		'{"bits": 20, "clip": 8, "graph": "complete"}'
fi

# Refusals, each with its message.
refused() { # WHAT MESSAGE ARGS...
	what=$1 msg=$2
	shift 2
	"$FEDRUN" validate p.json "$@" >out 2>err && die "$what: accepted"
	grep -q "$msg" err || { cat err; die "$what: not the message '$msg'"; }
}
pipeline p.json quadratic 6 1 '{"plugin": "fedavg"}' '"selector": {"plugin": "random", "fraction": 0.5}'
# a tensor only one client uploads would be revealed by its sum
refused "random selector" "selector 'random' picks per client" --set 'secagg={}'
refused "random, both" "upload must be every tensor" --set 'secagg={}' --set selector.direction=both
pipeline p.json quadratic 6 1 '{"plugin": "median"}'
refused median "reveals only their weighted sum" --set 'secagg={}'
pipeline p.json quadratic 6 1 '{"plugin": "fedavg", "weights": "steps"}'
refused steps "samples or uniform" --set 'secagg={}'
pipeline p.json quadratic 6 1 '{"plugin": "fedavg"}'
refused type "secagg: expected an object or null" --set 'secagg=3'
refused key "secagg" --set 'secagg={"bitz": 8}'
refused bits "secagg.bits" --set 'secagg={"bits": 4}'
refused threshold "more than half" --set 'secagg={"graph": "complete", "threshold": 3}'
refused shares "leave num_shares out" --set 'secagg={"graph": "complete", "num_shares": 5}'
refused even "odd" --set 'secagg={"num_shares": 4}'
refused alie "hides" --set 'secagg={}' --set 'attack={"type": "alie", "fraction": 0.2}'
refused one "at least 2 clients" --set 'secagg={}' --set clients.fraction=0.1
# Two clients a round: the default graph is then the complete one (a
# sparse graph needs 3); "sparse" given explicitly is refused.
refused two "secagg.graph \"sparse\" needs at least 3 clients a round, and a round has 2" \
	--set 'secagg={"graph": "sparse"}' --set clients.fraction=0.34
pipeline p.json quadratic 2 2 '{"plugin": "fedavg"}'
run_ok p.json --set output.dir=two.plain
run_ok p.json --set output.dir=two.sa --set 'secagg={"clip": 4}'
cmp two.plain/final.safetensors two.sa/final.safetensors ||
	die "two clients: the secure run's model is not plain FedAvg's"
echo "secagg: the same model as plain FedAvg (bit for bit with integer updates), its costs as metrics, its refusals"
