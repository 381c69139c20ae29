# SPDX-License-Identifier: Apache-2.0
"""FedNova as a fedrun aggregator in Python (fedrun-python(7)).

The twin of examples/plugins/fednova.c: both give the same model, bit for
bit. FedNova (Wang et al. 2020, "Tackling the Objective Inconsistency
Problem in Heterogeneous Federated Optimization", section 4) normalises each
client's update by the local work that made it before averaging. The
paper's general update rule with the FedNova weights is

    theta_{t+1} - theta_t = -tau_eff * sum_i p_i * eta * d_i,
    d_i = G_i a_i / ||a_i||_1,  tau_eff = sum_i p_i ||a_i||_1,  p_i = n_i / sum_j n_j.

With plain SGD (a_i = [1, ..., 1], ||a_i||_1 = tau_i, the client's local
steps) and Delta_i = theta_i - theta_t = -eta G_i a_i this is

    theta_{t+1} = theta_t + tau_eff * sum_i p_i * Delta_i / tau_i,  tau_eff = sum_i p_i tau_i,

which aggregate() computes. tau_i is update.steps, the optimizer updates
the client made this round as fedrun counts them. With momentum or Adam,
||a_i||_1 is not tau_i (the paper gives it for momentum): this rule then
normalises by the steps only. Per tensor, the sums run over the clients that
sent it (p_i renormalised over them); a tensor nobody sent keeps its value;
a client that made no step (Delta_i = 0) is left out. Sums are in float64,
clients in their order, each product rounded before it is added: the C
twin's arithmetic exactly.
"""
import numpy as np


class FedNova:
    def __init__(self, options):
        if options:
            raise ValueError("fednova takes no options, got %s" % ", ".join(sorted(options)))

    def aggregate(self, model, updates, round):
        if any(u.steps is None for u in updates):
            raise RuntimeError("fednova needs the clients' local steps (fedrun plugin ABI 1.5)")
        for name, x in model.items():
            senders = [u for u in updates if name in u.tensors and u.steps > 0]
            w = 0.0
            t = 0.0
            for u in senders:
                w += float(u.samples)
                t += float(u.samples) * float(u.steps)
            if not w > 0:
                continue  # nobody sent it: it keeps its value
            tau_eff = t / w
            acc = np.zeros(x.shape, dtype=np.float64)
            for u in senders:
                c = float(u.samples) / w / float(u.steps)
                acc += c * u.tensors[name].astype(np.float64)
            x[...] = x + tau_eff * acc  # in place: model holds theta_{t+1}
            round.metric("tau_eff", tau_eff, tensor=name)
