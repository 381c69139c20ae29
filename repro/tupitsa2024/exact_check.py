#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""exact_check.py MEANS_FILE [RUN_DIR...]: with the exact sample means of a
run's data (sample_means.c), the error of the ideal (the mean of the first
|G| = 5 clients' means), of the exact minimiser x* of the target's
validation loss over the simplex (Wolfe's algorithm, mc_floor.py), and
for each fedrun run: its final x (final.safetensors), the error, the
distance to sum_i w_i m_i with its last round's weights (0 when each
client's update lands on its sample mean), and the excess validation loss
||x - v||^2 - ||x* - v||^2."""
import json, os, struct, sys

here = os.path.dirname(os.path.abspath(__file__))
src = open(os.path.join(here, "mc_floor.py")).read().replace("\nmain()\n", "\n")
exec(src)


def final_x(run):
    b = open(os.path.join(run, "final.safetensors"), "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    t = h["x"]
    a, e = t["data_offsets"]
    raw = b[8 + n + a:8 + n + e]
    return list(struct.unpack("<%df" % (len(raw) // 4), raw))


def last_weights(run):
    w, last = {}, 0
    for line in open(os.path.join(run, "metrics.jsonl")):
        e = json.loads(line)
        if e["metric"] == "meritfed.weight":
            if e["round"] != last:
                w, last = {}, e["round"]
            w[e["client"]] = e["value"]
    return w


means, v = [], None
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "c":
        means.append([float(x) for x in f[1:]])
    else:
        v = [float(x) for x in f[1:]]
d = len(v)
ideal = [sum(m[j] for m in means[:5]) / 5 for j in range(d)]
rel = [[m[j] - v[j] for j in range(d)] for m in means]
xr = min_norm_point(rel)
xs = [a + b for a, b in zip(xr, v)]
print("ideal err %.5f  exact validation minimiser err %.5f (its validation excess 0)  "
      "validation mean err %.5f" % (dot(ideal, ideal), dot(xs, xs), dot(v, v)))
for run in sys.argv[2:]:
    x = final_x(run)[:d]
    w = last_weights(run)
    wx = [sum(w.get(i, 0) * means[i][j] for i in range(len(means))) for j in range(d)]
    dx = sum((a - b) ** 2 for a, b in zip(x, wx)) ** 0.5
    excess = sum((a - b) ** 2 for a, b in zip(x, v)) - dot(xr, xr)
    print("%s: err %.5f  |x - sum w m| %.2e  validation excess %.2e" % (
        run, dot(x, x), dx, excess))
