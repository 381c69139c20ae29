#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The error of the exact minimiser of the target's validation loss, by Monte
Carlo, for the example's protocol (one full-batch local step with lr 0.5:
client i's update lands on its sample mean m_i, so MeritFed's candidate is
x(w) = sum_i w_i m_i whatever the round).

Per trial: m_i = mu_g(i) + N(0, I/n) (n = 1000 training samples), the
validation mean v = N(0, I/n_val); MeritFed solved exactly gives
    x* = argmin_{x in conv(m_1..m_N)} ||x - v||^2
(the validation loss is ||x - v||^2 + const), found with Wolfe's
minimum-norm-point algorithm (Wolfe 1976) on the points m_i - v. The
ideal is the mean of the |G| same-distribution m_i. Also printed: the
back-of-the-envelope value for x* restricted to the affine hull of the G
points, without the simplex's bounds,
    (d - k)/(|G| n) + k/n_val,   k = |G| - 1,
and the ideal's d/(|G| n).

usage: mc_floor.py [TRIALS]   (default 400; pure Python, ~1 minute)"""
import math, random, sys

D, N_TRAIN = 10, 1000
EX_GROUPS = [(5, [0.0] * D), (95, [0.1] * D), (50, [1.0] + [0.0] * (D - 1))]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def solve(a, b):
    """Gaussian elimination with partial pivoting (small dense systems)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-300:
            raise ZeroDivisionError
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            for k in range(c, n + 1):
                m[r][k] -= f * m[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def affine_min(pts):
    """alpha with sum 1 minimising ||sum alpha_i p_i||."""
    k = len(pts)
    g = [[dot(p, q) for q in pts] + [1.0] for p in pts] + [[1.0] * k + [0.0]]
    return solve(g, [0.0] * k + [1.0])[:k]


def comb(pts, lam):
    return [sum(l * p[j] for l, p in zip(lam, pts)) for j in range(D)]


def min_norm_point(points, eps=1e-12):
    """Wolfe's algorithm: the point of conv(points) nearest the origin."""
    i0 = min(range(len(points)), key=lambda i: dot(points[i], points[i]))
    S, lam = [i0], [1.0]
    x = points[i0][:]
    for _ in range(1000):
        xx = dot(x, x)
        j = min(range(len(points)), key=lambda i: dot(x, points[i]))
        if dot(x, points[j]) > xx - eps * max(1.0, xx) or j in S:
            return x
        S.append(j)
        lam.append(0.0)
        while True:
            alpha = affine_min([points[i] for i in S])
            if min(alpha) > 1e-14:
                lam = alpha
                break
            theta = min(l / (l - a) for l, a in zip(lam, alpha) if a <= 1e-14)
            lam = [l + theta * (a - l) for l, a in zip(lam, alpha)]
            keep = [t for t, l in enumerate(lam) if l > 1e-14]
            S = [S[t] for t in keep]
            lam = [lam[t] for t in keep]
            s = sum(lam)
            lam = [l / s for l in lam]
        x = comb([points[i] for i in S], lam)
    return x


def trial(rng, groups, n_val):
    means = []
    for count, mu in groups:
        for _ in range(count):
            means.append([mu[j] + rng.gauss(0, 1 / math.sqrt(N_TRAIN)) for j in range(D)])
    v = [0.0 if n_val is None else rng.gauss(0, 1 / math.sqrt(n_val)) for _ in range(D)]
    rel = [[m[j] - v[j] for j in range(D)] for m in means]
    xs = [a + b for a, b in zip(min_norm_point(rel), v)]
    g = groups[0][0]
    ideal = [sum(m[j] for m in means[:g]) / g for j in range(D)]
    return dot(xs, xs), dot(ideal, ideal)


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    print("%-22s %8s %10s %10s %8s %10s" % ("clients", "n_val", "exact-MF", "ideal", "ratio",
                                           "formula"))
    for name, groups in (("5+95+50 (example)", EX_GROUPS), ("5 same-distribution", EX_GROUPS[:1])):
        for n_val in (100, 1000, 2000, 10000, 100000, None):
            rng = random.Random(12345)
            s = [trial(rng, groups, n_val) for _ in range(trials)]
            mf = sum(a for a, _ in s) / trials
            idl = sum(b for _, b in s) / trials
            sd = math.sqrt(sum((a - mf) ** 2 for a, _ in s) / (trials - 1) / trials)
            g = groups[0][0]
            k = g - 1
            f = (D - k) / (g * N_TRAIN) + (0 if n_val is None else k / n_val)
            print("%-22s %8s %10.5f %10.5f %8.2f %10.5f   (+- %.5f)" % (
                name, "inf" if n_val is None else n_val, mf, idl, mf / idl, f, sd))


main()
