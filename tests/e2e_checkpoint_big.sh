#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checkpoints of many clients: a round of 30,000 meanest clients that keep
# their step, optimizer state and parameters (90,000 client entries in the
# checkpoint) is written, resumed and written again in time linear in the
# entries. Each run has a CPU limit (ulimit -t) some six times its cost,
# where writing looked every name up in the list of those before it and
# resuming looked up each client's entries the same way, in time quadratic
# in the entries (14 s of CPU for the round at 20,000 clients, 17 s to
# resume it). The resumed run ends at the uninterrupted run's model.
. "$top_srcdir/tests/lib.sh"
cpu_limit=10 # seconds; the runs below take up to 1.6
# Under the sanitizers the test checks the code's memory, not its time:
# 3,000 clients (the same code), and the CPU limit only stops a hang. An
# ASan and UBSan fedrun took 90 to 106 s of CPU for 30,000 clients on a
# 2-core AMD EPYC of family 26 (Zen 5), half of it system time (the
# sanitizer allocator returning memory to the system), against 2.1 s
# without.
clients=30000
if sanitized; then
	clients=3000
	cpu_limit=900
fi
entries=$((3 * clients))
cat >p.json <<EOF
{
  "name": "checkpoint-big",
  "seed": 1,
  "rounds": 1,
  "model": { "plugin": "meanest", "problem": "gaussian", "dim": 2 },
  "data": { "groups": [ { "clients": $clients, "mean": 0, "samples": 2, "valid_samples": 2 } ] },
  "clients": { "fraction": 1.0, "epochs": 1, "batch": 2,
               "optimizer": { "name": "sgd", "lr": 0.5, "momentum": 0.5 } },
  "selector": { "plugin": "all", "direction": "both" },
  "aggregator": { "plugin": "fedavg" },
  "output": { "dir": "runs/big", "checkpoint_every": 1 }
}
EOF
# limited ARGS...: fedrun under the CPU limit (killed past it: status 137).
limited() {
	(ulimit -t "$cpu_limit" && exec "$FEDRUN" -q --threads 2 "$@")
}
st=0
limited p.json --set output.dir=ck 2>err || st=$?
[ "$st" -eq 0 ] || { cat err; die "a round of $clients clients with a checkpoint: exit $st (137: killed past $cpu_limit s of CPU)"; }
n=$(grep -ao '"__client__\.[0-9]*\.[a-z]*"' ck/checkpoints/round-000001.safetensors | sort -u | wc -l)
[ "$n" -eq $entries ] || die "the checkpoint holds $n client entries, expected $entries"
rm ck/final.safetensors
limited --resume p.json --set output.dir=ck --set rounds=2 2>err || st=$?
[ "$st" -eq 0 ] || { cat err; die "resuming $clients clients' checkpoint: exit $st (137: killed past $cpu_limit s of CPU)"; }
[ -e ck/checkpoints/round-000002.safetensors ] || die "the resumed run wrote no checkpoint of round 2"
limited p.json --set output.dir=ref --set rounds=2 --set output.checkpoint_every=0 2>err ||
	{ cat err; die "the reference run failed"; }
cmp ref/final.safetensors ck/final.safetensors || die "the resumed run differs from the uninterrupted one"
echo "checkpoints of $clients clients ($entries entries) written and resumed within $cpu_limit s of CPU each"
