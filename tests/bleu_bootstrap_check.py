#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Recomputes `fedrun bleu --paired-bs -b` directly, for
tests/test_bleu_bootstrap.sh: usage

  bleu_bootstrap_check.py REF HYP_A HYP_B SAMPLES SEED FEDRUN_OUTPUT

FEDRUN_OUTPUT is what `fedrun bleu --paired-bs -b -w 10 --paired-bs-n
SAMPLES --bs-seed SEED REF HYP_A HYP_B` printed. Nothing of fedrun's code is
used: the segments' BLEU and chrF statistics come from the text itself (the
fixture is lowercase ASCII words separated by single spaces, which every
tokenizer leaves as they are, one reference), the resamples from a Python
Philox4x32-10 (Salmon et al. 2011) keyed as fedrun_rng_init keys it and
drawn as fedrun_rng_below draws, the scores from sacreBLEU's formulas
(BLEU.compute_bleu with exp smoothing, CHRF._compute_f_score), and the
interval from sacreBLEU's estimate_ci (sorted, indices m // 40 and
m - 1 - m // 40). Exits 1, saying what differs, if any number does."""

import math
import re
import sys
from collections import Counter

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
RNG_BOOTSTRAP = 10  # fedrun_rng_purpose FEDRUN_RNG_BOOTSTRAP
TOL = 2e-10  # fedrun prints 10 decimals


def philox4x32(key, ctr):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return [c0, c1, c2, c3]


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Stream:
    """A Philox stream: key from (seed, purpose), counter (block, round, client)."""

    def __init__(self, seed, purpose, rnd, client):
        k = splitmix64(seed ^ splitmix64(purpose))
        self.key = (k & M32, k >> 32)
        self.block = 0
        self.rnd, self.client = rnd, client
        self.buf = []

    def u32(self):
        if not self.buf:
            self.buf = philox4x32(
                self.key, (self.block & M32, self.block >> 32, self.rnd, self.client))
            self.block += 1
        return self.buf.pop(0)

    def u64(self):
        hi = self.u32()
        return hi << 32 | self.u32()

    def below(self, n):
        limit = M64 - M64 % n
        while True:
            x = self.u64()
            if x < limit:
                return x % n


def resample(seed, k, n):
    s = Stream(seed, RNG_BOOTSTRAP, k, 0)
    return [s.below(n) for _ in range(n)]


def ngrams(seq, n):
    return Counter(tuple(seq[i:i + n]) for i in range(len(seq) - n + 1))


def bleu_stats(hyp, ref):
    """[hyp_len, ref_len, correct_1..4, total_1..4] of one segment."""
    h, r = hyp.split(), ref.split()
    correct, total = [], []
    for n in range(1, 5):
        hc, rc = ngrams(h, n), ngrams(r, n)
        correct.append(sum(min(c, rc[g]) for g, c in hc.items()))
        total.append(sum(hc.values()))
    return [len(h), len(r)] + correct + total


def bleu_score(st):
    """sacreBLEU's BLEU.compute_bleu, smooth exp, no effective order."""
    sys_len, ref_len, correct, total = st[0], st[1], st[2:6], st[6:10]
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    else:
        bp = 1.0
    if not any(correct):
        return 0.0
    precisions = [0.0] * 4
    smooth_mteval = 1.0
    for n in range(4):
        if total[n] == 0:
            break
        if correct[n] == 0:
            smooth_mteval *= 2
            precisions[n] = 100.0 / (smooth_mteval * total[n])
        else:
            precisions[n] = 100.0 * correct[n] / total[n]
    logs = sum(math.log(p) if p > 0 else -9999999999.0 for p in precisions)
    return bp * math.exp(logs / 4)


def chrf_stats(hyp, ref, order=6):
    """Per character order: hypothesis n-grams, reference n-grams, matches."""
    h, r = hyp.replace(" ", ""), ref.replace(" ", "")
    st = []
    for n in range(1, order + 1):
        hc, rc = ngrams(h, n), ngrams(r, n)
        n_ref = sum(rc.values())
        # sacreBLEU's _get_match_statistics counts no hypothesis n-gram for
        # an order the reference has none of
        st += [sum(hc.values()) if n_ref else 0, n_ref,
               sum(min(c, rc[g]) for g, c in hc.items())]
    return st


def chrf_score(st, beta=2):
    """sacreBLEU's CHRF._compute_f_score, effective-order averaging."""
    factor = beta ** 2
    avg_prec = avg_rec = 0.0
    eff = 0
    for i in range(0, len(st), 3):
        n_hyp, n_ref, n_match = st[i:i + 3]
        if n_hyp > 0 and n_ref > 0:
            avg_prec += n_match / n_hyp
            avg_rec += n_match / n_ref
            eff += 1
    if eff:
        avg_prec /= eff
        avg_rec /= eff
    if avg_prec + avg_rec == 0:
        return 0.0
    return 100 * ((1 + factor) * avg_prec * avg_rec) / (factor * avg_prec + avg_rec)


def summed(stats, idx):
    acc = [0] * len(stats[0])
    for i in idx:
        for j, v in enumerate(stats[i]):
            acc[j] += v
    return acc


def interval(values):
    """sacreBLEU's estimate_ci bounds and the mean (summed in order)."""
    m = len(values)
    mean = sum(values) / m  # left to right, as fedrun sums
    s = sorted(values)
    return mean, s[m // 40], s[m - 1 - m // 40]


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines):
        if not re.fullmatch(r"[a-z]+( [a-z]+)*", line):
            sys.exit(f"{path}:{i + 1}: not lowercase words and single spaces: "
                     "the checker's statistics would not be sacreBLEU's")
    return lines


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    ref, hyp_a, hyp_b = (read_lines(p) for p in sys.argv[1:4])
    samples, seed = int(sys.argv[4]), int(sys.argv[5])
    got = {}
    with open(sys.argv[6], encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 12:
                sys.exit(f"fedrun's line has {len(cols)} columns, expected 12: {line!r}")
            got[cols[0]] = cols
    n = len(ref)
    assert len(hyp_a) == n and len(hyp_b) == n
    idxs = [resample(seed, k, n) for k in range(samples)]
    metrics = {"bleu": (bleu_stats, bleu_score), "chrf": (chrf_stats, chrf_score)}
    bad = 0
    for name, (stats_of, score_of) in metrics.items():
        if name not in got:
            sys.exit(f"fedrun printed no {name} line")
        sa = [stats_of(h, r) for h, r in zip(hyp_a, ref)]
        sb = [stats_of(h, r) for h, r in zip(hyp_b, ref)]
        a = score_of(summed(sa, range(n)))
        b = score_of(summed(sb, range(n)))
        ra = [score_of(summed(sa, idx)) for idx in idxs]
        rb = [score_of(summed(sb, idx)) for idx in idxs]
        diffs = [x - y for x, y in zip(ra, rb)]
        mean, lo, hi = interval(diffs)
        _, a_lo, a_hi = interval(ra)
        _, b_lo, b_hi = interval(rb)
        want = [a, b, a - b, lo, hi, mean, a_lo, a_hi, b_lo, b_hi]
        labels = ["A", "B", "diff", "lo", "hi", "mean", "A_lo", "A_hi", "B_lo", "B_hi"]
        for label, w, g in zip(labels, want, got[name][1:11]):
            if abs(float(g) - w) > TOL:
                print(f"FAIL - {name} {label}: fedrun {g}, direct computation {w:.10f}")
                bad += 1
        better = "A" if lo > 0 else "B" if hi < 0 else "neither"
        if got[name][11] != better:
            print(f"FAIL - {name} better: fedrun {got[name][11]}, direct computation {better}")
            bad += 1
        print(f"{name}: A {a:.4f} B {b:.4f} A-B {a - b:.4f} [{lo:.4f}, {hi:.4f}] "
              f"mean {mean:.4f}: {better}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
