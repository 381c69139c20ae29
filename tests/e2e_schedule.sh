#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Federated learning-rate schedules (clients.lr_clock, clients.optimizer_state)
# on a small transformer with two clients of different sizes (so that they
# make different numbers of updates a round):
#  - the rate of each client's first update of round r, logged as "lr",
#    equals the inverse_sqrt schedule at the server's global step after
#    round r - 1, plus one; the global step advances each round by the most
#    updates a client made ("updates");
#  - with lr_clock "client" and a reset optimizer, every round starts the
#    warm-up again (the behaviour before global clocks);
#  - one client with a kept optimizer gives the same final model, byte for
#    byte, under either clock: centralized training is unchanged;
#  - optimizer_state "continue" trains and differs from "reset";
#  - fine-tuning continues from the final global step (finetune.lr);
#  - a run stopped after round 2 and resumed to round 3 gives the final
#    model of an uninterrupted 3-round run (the global step is checkpointed).
. "$top_srcdir/tests/lib.sh"
toy="$top_srcdir/examples/data/toy-english"
mkdir -p data/big data/small data/both
sed -n '1,240p' "$toy/train.txt" >data/big/train.src
sed -n '241,300p' "$toy/train.txt" >data/small/train.src
sed -n '1,40p' "$toy/valid.txt" >data/big/valid.src
sed -n '41,80p' "$toy/valid.txt" >data/small/valid.src
cat data/big/train.src data/small/train.src >data/both/train.src
cat data/big/valid.src data/small/valid.src >data/both/valid.src
for f in data/*/*.src; do cp "$f" "${f%.src}.tgt"; done

cat >p.json <<'EOF'
{
  "name": "schedule", "seed": 3, "rounds": 3,
  "model": { "plugin": "transformer", "preset": "tiny", "dropout": 0.0,
             "tokenizer": { "type": "words" }, "max_len": 40,
             "lr_schedule": "inverse_sqrt", "warmup": 20, "warmup_init_lr": 0.0001,
             "decode": { "beam": 1 } },
  "data": { "src": "src", "tgt": "tgt", "dir": "data",
            "clients": [ { "name": "big", "train": "big/train", "valid": "big/valid" },
                         { "name": "small", "train": "small/train", "valid": "small/valid" } ] },
  "clients": { "fraction": 1.0, "epochs": 1, "batch": 300, "optimizer_state": "reset",
               "optimizer": { "name": "adam", "lr": 0.003, "beta2": 0.98 } },
  "aggregator": { "plugin": "fedavg" },
  "eval": { "every": 3 },
  "output": { "dir": "run" }
}
EOF
pipe="$work/p.json"

# check RUN CLOCK: every client's first rate of each round against the
# schedule (warm-up 20, peak 0.003, init 0.0001) at the expected step.
check() {
	awk -F, -v clock="$2" '
	function sched(step,   u) {
		u = step - 1
		if (u < 20) return 0.0001 + u * ((0.003 - 0.0001) / 20)
		return 0.003 * sqrt(20) * u ^ -0.5
	}
	function close_to(a, b) { d = a - b; if (d < 0) d = -d; return d <= 1e-12 * (b < 0 ? -b : b) + 1e-15 }
	NR > 1 && $4 == "global_step" { G[$1] = $6; if ($1 > last) last = $1 }
	NR > 1 && $4 == "updates" { U[$1, $2] = $6; if ($6 > M[$1]) M[$1] = $6; nu++ }
	NR > 1 && $4 == "lr" { L[$1, $2] = $6; nl++ }
	END {
		if (last != 3) { print "rounds logged: " last; exit 1 }
		if (nl != 6 || nu != 6) { print "lr events " nl ", updates events " nu ", expected 6 each"; exit 1 }
		if (U[1, 0] <= U[1, 1]) { print "the big client made " U[1, 0] " updates, the small " U[1, 1]; exit 1 }
		G[0] = 0
		for (r = 1; r <= 3; r++) {
			if (G[r] != G[r - 1] + M[r]) { print "round " r ": global step " G[r] ", expected " G[r - 1] " + " M[r]; exit 1 }
			for (c = 0; c < 2; c++) {
				want = clock == "global" ? sched(G[r - 1] + 1) : sched(1)
				if (!close_to(L[r, c], want)) {
					printf "round %d client %d: lr %.17g, the schedule gives %.17g\n", r, c, L[r, c], want
					exit 1
				}
			}
		}
	}' "$1/metrics.csv"
}

run_ok "$pipe" --set output.dir=global
msg=$(check global global) || die "lr_clock global: $msg"
run_ok "$pipe" --set output.dir=client --set clients.lr_clock=client
msg=$(check client client) || die "lr_clock client: $msg"
cmp -s global/final.safetensors client/final.safetensors && die "the two clocks gave the same model"

# One client, optimizer kept: the global clock is the client's own.
one='--set data.clients=[{"name":"both","train":"both/train","valid":"both/valid"}] --set clients.optimizer_state=keep'
run_ok "$pipe" $one --set output.dir=one-global
run_ok "$pipe" $one --set output.dir=one-client --set clients.lr_clock=client
cmp one-global/final.safetensors one-client/final.safetensors ||
	die "one client: the global clock changed centralized training"

run_ok "$pipe" --set output.dir=continue --set clients.optimizer_state=continue
msg=$(check continue global) || die "optimizer_state continue: $msg"
cmp -s global/final.safetensors continue/final.safetensors && die "continue gave the same model as reset"

# Fine-tuning after the last round continues the schedule from the final
# global step; its rates are finetune.lr, not the last round's lr.
run_ok "$pipe" --set output.dir=ft --set 'finetune={"steps":3}'
msg=$(check ft global) || die "with finetune: $msg"
awk -F, 'NR > 1 && $4 == "global_step" { g = $6 } NR > 1 && $4 == "finetune.lr" { n++; v[$2] = $6 }
END {
	want = 0.003 * sqrt(20) * g ^ -0.5 # the schedule at step g + 1
	if (n != 2) { print n " finetune.lr rows, expected 2"; exit 1 }
	for (c = 0; c < 2; c++) {
		d = v[c] - want; if (d < 0) d = -d
		if (d > 1e-12 * want) { printf "client %d: finetune.lr %.17g, the schedule gives %.17g\n", c, v[c], want; exit 1 }
	}
}' ft/metrics.csv >msg || die "finetune: $(cat msg)"

# Stopped after round 2, resumed to round 3.
run_ok "$pipe" --set output.dir=part --set rounds=2 --set output.checkpoint_every=1
run_ok --resume "$pipe" --set output.dir=part --set rounds=3 --set output.checkpoint_every=1
cmp global/final.safetensors part/final.safetensors || die "resumed run differs"
echo "schedules: first rates at the global step, one client unchanged, continue, resume"
