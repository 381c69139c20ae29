#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of bench/gru_lm: the same GRU language model (embedding,
GRU, dropout, decoder tied to the embedding), trained by truncated BPTT with
the hidden state carried and detached between windows, SGD with momentum 0.5
and gradient clipping at 0.25, on random words; prints training tokens per
second (from the median time of a window) for each thread count asked
for, and the best.

--autocast: the forward pass and the loss under
torch.autocast("cpu", dtype=torch.bfloat16) (the backward pass outside it,
as usual): the ops on autocast's lower-precision list (the decoder's linear)
take bf16 operands, the rest stay FP32 (in PyTorch 1.13 that includes
nn.GRU's own fused op, which is not on the list). Parameters, gradients and
the optimizer stay FP32. The output lines are the same.

Usage: gru_lm_torch.py [--threads 1,2] [--windows N] [--vocab V] [--hidden H]
                       [--layers L] [--batch B] [--bptt T] [--dropout P]
                       [--autocast]
Run with the system python that Debian's python3-torch serves."""
import argparse
import statistics
import time

import torch
import torch.nn as nn


class GruLm(nn.Module):
    def __init__(self, vocab, hidden, layers, dropout):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, layers, dropout=dropout if layers > 1 else 0.0)
        self.decoder = nn.Linear(hidden, vocab)
        self.decoder.weight = self.embedding.weight  # tied
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, x, h):
        y, h = self.gru(self.drop(self.embedding(x)), h)
        return self.decoder(self.drop(y)).view(-1, self.decoder.out_features), h


def tokens_per_s(args, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = GruLm(args.vocab, args.hidden, args.layers, args.dropout)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.5)
    loss_fn = nn.CrossEntropyLoss()
    T, B = args.bptt, args.batch
    data = torch.randint(2, args.vocab, ((args.windows + 3) * T + 1, B))
    h = torch.zeros(args.layers, B, args.hidden)

    def step(w):
        nonlocal h
        x, y = data[w * T:(w + 1) * T], data[w * T + 1:(w + 1) * T + 1]
        h = h.detach()
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast):
            out, h = model(x, h)
            loss = loss_fn(out, y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()

    for w in range(2):  # warm-up
        step(w)
    # One timed window at a time; the median is robust to other processes
    # taking the core for a while (as bench/gru_lm does).
    times = []
    for w in range(2, args.windows + 2):
        t0 = time.perf_counter()
        step(w)
        times.append(time.perf_counter() - t0)
    return T * B / statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", default="1,2")
    p.add_argument("--windows", type=int, default=40)
    p.add_argument("--vocab", type=int, default=10000)
    p.add_argument("--hidden", type=int, default=300)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--autocast", action="store_true",
                   help='forward and loss under torch.autocast("cpu", dtype=torch.bfloat16)')
    args = p.parse_args()
    best = 0.0
    for t in [int(s) for s in args.threads.split(",")]:
        tps = tokens_per_s(args, t)
        print(f"torch_threads_{t}_tokens_per_s {tps:.1f}")
        best = max(best, tps)
    print(f"torch_best_tokens_per_s {best:.1f}")
    print(f"torch_version {torch.__version__}")


if __name__ == "__main__":
    main()
