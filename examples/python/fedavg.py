# SPDX-License-Identifier: Apache-2.0
"""Federated averaging as a fedrun aggregator in Python (fedrun-python(7)).

theta_{t+1} = theta_t + sum_k n_k Delta_k / sum_k n_k per tensor, the sums
over the clients that sent it, in float64 and in client order: the same
bits as the built-in fedavg (weights "samples"). With {"uniform": true}
every client weighs 1.
"""
import numpy as np


class FedAvg:
    def __init__(self, options):
        unknown = set(options) - {"uniform"}
        if unknown:
            raise ValueError("unknown option(s): %s (known: uniform)" % ", ".join(sorted(unknown)))
        self.uniform = bool(options.get("uniform", False))

    def aggregate(self, model, updates, round):
        weights = [1.0 if self.uniform else u.weight for u in updates]
        for name, x in model.items():
            acc = np.zeros(x.shape, dtype=np.float64)
            total = 0.0
            for u, w in zip(updates, weights):
                d = u.tensors.get(name)
                if d is not None:
                    acc += w * d.astype(np.float64)
                    total += w
            if total != 0:
                x[...] = x + acc / total
        return {"clients": len(updates)}
