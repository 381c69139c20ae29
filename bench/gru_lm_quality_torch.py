#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch side of bench/gru_lm_quality.sh: trains the small gru-lm
configuration centrally on a corpus for a fixed number of truncated-BPTT
windows, with the vocabulary, batching, window order and hyperparameters
that fedrun's gru-lm uses, and prints the validation perplexity.

Vocabulary as fedrun_vocab_build: <unk> = 0, <eos> = 1, then words by
count, ties by byte order, capped. Batching as fedrun_bptt (PyTorch's
word_language_model batchify/get_batch): the stream in B rows, windows of
T steps in order, the state carried (detached) and reset at each epoch.

Usage: gru_lm_quality_torch.py TRAIN VALID [--steps N] [--threads N] ..."""
import argparse
import collections
import math
import time

import torch
import torch.nn as nn


def read_tokens(path):
    with open(path, "rb") as f:
        for line in f:
            words = line.split()
            if words:
                yield from words
                yield None  # end of sentence


def build_vocab(path, size):
    counts = collections.Counter(w for w in read_tokens(path) if w is not None)
    words = sorted(counts, key=lambda w: (-counts[w], w))[: size - 2]
    return {w: i + 2 for i, w in enumerate(words)}


def ids(path, vocab):
    return torch.tensor([1 if w is None else vocab.get(w, 0) for w in read_tokens(path)],
                        dtype=torch.long)


def batchify(data, rows):
    n = data.size(0) // rows
    return data[: n * rows].view(rows, n).t().contiguous()  # (L, B)


class GruLm(nn.Module):
    def __init__(self, vocab, hidden, dropout):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden)
        self.decoder = nn.Linear(hidden, vocab)
        self.decoder.weight = self.embedding.weight
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, x, h):
        y, h = self.gru(self.drop(self.embedding(x)), h)
        return self.decoder(self.drop(y)).view(-1, self.decoder.out_features), h


def windows(data, bptt):
    L = data.size(0)
    for t0 in range(0, L - 1, bptt):
        T = min(bptt, L - 1 - t0)
        yield data[t0 : t0 + T], data[t0 + 1 : t0 + 1 + T]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("train")
    p.add_argument("valid")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--vocab", type=int, default=10000)
    p.add_argument("--hidden", type=int, default=300)
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--eval_batch", type=int, default=10)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--lr", type=float, default=20.0)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    vocab = build_vocab(a.train, a.vocab)
    V = len(vocab) + 2
    train = batchify(ids(a.train, vocab), a.batch)
    valid = batchify(ids(a.valid, vocab), a.eval_batch)
    model = GruLm(V, a.hidden, a.dropout)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    step = 0
    while step < a.steps:
        model.train()
        h = torch.zeros(1, a.batch, a.hidden)  # each epoch starts from zero
        for x, y in windows(train, a.bptt):
            if step == a.steps:
                break
            h = h.detach()
            opt.zero_grad()
            out, h = model(x, h)
            loss_fn(out, y.reshape(-1)).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
            opt.step()
            step += 1
    train_secs = time.perf_counter() - t0
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        h = torch.zeros(1, a.eval_batch, a.hidden)
        for x, y in windows(valid, a.bptt):
            out, h = model(x, h)
            total += nn.functional.cross_entropy(out, y.reshape(-1), reduction="sum").item()
            count += y.numel()
    print(f"torch_vocab {V}")
    print(f"torch_valid_tokens {count}")
    print(f"torch_valid_ppl {math.exp(total / count):.4f}")
    print(f"torch_train_secs {train_secs:.1f}")


if __name__ == "__main__":
    main()
