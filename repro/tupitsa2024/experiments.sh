#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every experiment of mean-estimation-analysis.md, in its order; each line
# "LABEL MEAN ..." is the mean over seeds 1..5 (run5.sh). About 1.5 hours
# on one core. Runs go under ${OUT:-/tmp/tupitsa2024}.
set -e
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
E=../../examples/meanest-meritfed.json
P=meanest-paper.json
R="./run5.sh"
AVG='aggregator={"plugin": "fedavg"}'
G='{"clients": 5, "mean": 0, "samples": 1000, "valid_samples": 1000}'
D2='{"clients": 95, "mean": 0.1, "samples": 1000}'
D3='{"clients": 50, "mean": [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], "samples": 1000}'

echo "# 1. reproduction (the example: 150 clients, full-batch local step)"
$R merit $E --set eval.every=1
$R fedavg_all $E --set eval.every=1 --set "$AVG"
$R ideal $E --set eval.every=1 --set "$AVG" --set "data.groups=[$G]"

echo "# 2a. the target's validation sample"
for v in 100 2000 10000 100000; do
	$R valid$v $E --set eval.every=1 --set data.groups.0.valid_samples=$v
done
$R split_train $E --set eval.every=1 --set aggregator.split=train

echo "# 2b. mirror descent: step size x steps per round (warm start), and cold start"
for st in 1 10 100; do
	for lr in 0.1 1 10; do
		$R md_steps${st}_lr$lr $E --set aggregator.md_steps=$st --set aggregator.md_lr=$lr
	done
done
$R cold_steps10_lr1 $E --set aggregator.warm_start=false
$R cold_steps10_lr10 $E --set aggregator.warm_start=false --set aggregator.md_lr=10
$R cold_steps100_lr10 $E --set aggregator.warm_start=false --set aggregator.md_steps=100 \
	--set aggregator.md_lr=10

echo "# 2c. where the weight goes: the same-distribution clients alone, without D2"
$R merit_G_only $E --set eval.every=1 --set "data.groups=[$G]"
$R merit_G_only_valid10000 $E --set eval.every=1 --set "data.groups=[$G]" \
	--set data.groups.0.valid_samples=10000
$R merit_no_D2 $E --set eval.every=1 --set "data.groups=[$G, $D3]"

echo "# 2d. the authors' protocol (meanest-paper.json): 50 rounds, then 3000"
$R paper50_merit $P
$R paper50_fedavg_all $P --set "$AVG"
$R paper50_ideal $P --set "$AVG" --set "data.groups=[$G]"
$R paper3000_merit $P --set rounds=3000
$R paper3000_fedavg_all $P --set rounds=3000 --set "$AVG"
$R paper3000_ideal $P --set rounds=3000 --set "$AVG" --set "data.groups=[$G]"
$R paper3000_merit_valid10000 $P --set rounds=3000 --set data.groups.0.valid_samples=10000
echo "# 2d. MeritFed's error still falls at round 3000: 8000 rounds"
$R paper8000_merit $P --set rounds=8000
$R paper8000_ideal $P --set rounds=8000 --set "$AVG" --set "data.groups=[$G]"
$R paper8000_merit_valid10000 $P --set rounds=8000 --set data.groups.0.valid_samples=10000
echo "# 2d'. the example's protocol on the authors' distributions (|mu_2| = 0.1)"
$R merit_paper_groups $E --set eval.every=1 \
	--set "data.groups=$(python3 -c 'import json; print(json.dumps(json.load(open("'$P'"))["data"]["groups"]))')"

echo "# 2e. the direct computation for the five seeds"
./exact_seeds.sh
