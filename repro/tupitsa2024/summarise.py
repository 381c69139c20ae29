#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarise fedrun meanest runs: final error ||x - mu_target||^2 (meanest's
err_group0 on the test split), the lowest error of any evaluated round
("best": an oracle that knew when to stop), meritfed's weight share per group
in the last round, and the squared bias ||sum_g share_g (mu_g - mu_0)||^2
those shares would give if each group sat at its true mean ("bias2").

usage: summarise.py LABEL RUN_DIR...   (prints one line per run and the mean)
Group boundaries and means are read from each run's pipeline.json."""
import json, math, os, sys


def groups_of(run):
    p = json.load(open(os.path.join(run, "pipeline.json")))
    d = p["model"].get("dim", 1)
    out, first = [], 0
    for g in p["data"]["groups"]:
        m = g["mean"]
        m = [float(m)] * d if not isinstance(m, list) else [float(v) for v in m]
        out.append((first, first + g["clients"], m))
        first += g["clients"]
    return out


def summarise(run):
    err, best, w, last = None, None, {}, 0
    for line in open(os.path.join(run, "metrics.jsonl")):
        if '"err_group0"' not in line and '"meritfed.weight"' not in line:
            continue
        e = json.loads(line)
        if e["metric"] == "err_group0" and e["split"] == "test":
            err = e["value"]
        elif e["metric"] == "err_group0" and e["round"] > 0:
            best = e["value"] if best is None else min(best, e["value"])
        elif e["metric"] == "meritfed.weight":
            if e["round"] != last:
                w, last = {}, e["round"]
            w[e["client"]] = e["value"]
    gs = groups_of(run)
    share = [sum(v for c, v in w.items() if a <= c < b) for a, b, _ in gs] if w else None
    bias2 = None
    if share:
        mu0 = gs[0][2]
        b = [sum(s * (m[i] - mu0[i]) for s, (_, _, m) in zip(share, gs)) for i in range(len(mu0))]
        bias2 = sum(v * v for v in b)
    return err, share, bias2, best


def fmt(v):
    return "-" if v is None else "%.5f" % v


label, runs = sys.argv[1], sys.argv[2:]
errs, shares, biases, bests = [], [], [], []
for r in runs:
    err, share, b2, best = summarise(r)
    errs.append(err)
    bests.append(best)
    if share:
        shares.append(share)
        biases.append(b2)
    print("%s %s err %s best %s share %s bias2 %s" % (label, os.path.basename(r), fmt(err),
          fmt(best), "-" if not share else "/".join("%.3f" % s for s in share), fmt(b2)))
n = len(errs)
mean = sum(errs) / n
sd = math.sqrt(sum((e - mean) ** 2 for e in errs) / (n - 1)) if n > 1 else 0
line = "%s MEAN err %.5f sd %.5f min %.5f max %.5f best %.5f" % (
    label, mean, sd, min(errs), max(errs), sum(bests) / n)
if shares:
    k = len(shares[0])
    line += " share " + "/".join("%.3f" % (sum(s[i] for s in shares) / len(shares)) for i in range(k))
    line += " bias2 %.5f" % (sum(biases) / len(biases))
print(line)
