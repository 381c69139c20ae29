#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of bench/transformer: the same encoder-decoder
Transformer (torch.nn.Transformer, batch_first, post-norm; embeddings scaled
by sqrt(dim) plus sinusoidal positions; one embedding matrix shared by
source, target and the output projection, no output bias), on the same
random data, with the same protocol (see bench/transformer.c and
bench/README.md).

The model is nn.Transformer given its encoder and decoder stacks
(nn.TransformerEncoder / nn.TransformerDecoder of nn.TransformerEncoderLayer /
nn.TransformerDecoderLayer) built with norm=None: nn.Transformer's defaults
add a final layer norm after each stack, which the post-norm model of
Vaswani et al. (and fedrun's) does not have. PyTorch's layers apply the one
`dropout` to sublayer outputs, attention weights and feed-forward hidden
units alike; bench/transformer sets its three dropouts to that value too.

--mode train: target tokens per second of training steps: forward,
  CrossEntropyLoss(label_smoothing, ignore_index=pad), backward,
  Adam(lr 5e-4, betas 0.9/0.98, eps 1e-9) step, zero_grad. Each step is
  timed; the figure is B * Tt over the median step time (after --warmup
  untimed steps).
--mode greedy / beam: sentences per second of decoding --batch random
  source sentences with the model in eval mode under torch.inference_mode.
  nn.Transformer has no incremental decoder state, so, as a PyTorch user of
  nn.Transformer does, every step runs the decoder over the whole prefix
  (tgt_mask causal) and takes the last position's log-softmax. Every
  sentence decodes exactly --max-len steps: eos is forbidden (-inf) before
  the last step and forced at the last one. Greedy takes the argmax; beam K
  keeps the K best prefixes per sentence by cumulative log-probability
  (topk over K x vocab candidates per sentence; at step 0 only slot 0 is
  live), reorders the prefixes by their parent, and returns the best one.
  --sentences random sentences are decoded in batches of --batch, each
  batch --steps times after one untimed batch; the figure is --batch over
  the median time of a batch (encoder included). --warmup is not used.
--autocast (--mode train): the forward pass and the loss under
  torch.autocast("cpu", dtype=torch.bfloat16), the backward pass outside
  it, as PyTorch's documentation shows: the ops on autocast's
  lower-precision list (linear, matmul, bmm, ...) take bf16 operands, the
  rest (softmax, layer norm, the loss) FP32; parameters, gradients and Adam
  stay FP32. The output lines are the same.

Usage: transformer_torch.py [--mode train|greedy|beam] [--threads 1,2]
          [--steps N] [--warmup N] [--vocab V] [--dim D] [--layers L]
          [--heads H] [--ffn F] [--batch B] [--len T] [--dropout P]
          [--label-smoothing E] [--beam K] [--max-len N] [--sentences S]
          [--autocast]
Run with the system python that Debian's python3-torch serves."""
import argparse
import math
import statistics
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, UNK, BOS, EOS = 0, 1, 2, 3  # fedrun's SentencePiece ids (spm.h)

# nn.TransformerEncoder in eval mode warns that its nested tensors are a prototype.
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")


class Model(nn.Module):
    def __init__(self, a):
        super().__init__()
        D = a.dim
        self.dim = D
        self.embed = nn.Embedding(a.vocab, D, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, 0.0, D ** -0.5)  # fairseq's Embedding
        with torch.no_grad():
            self.embed.weight[PAD].zero_()
        enc = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(D, a.heads, a.ffn, a.dropout, batch_first=True),
            a.layers, norm=None)
        dec = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(D, a.heads, a.ffn, a.dropout, batch_first=True),
            a.layers, norm=None)
        self.tf = nn.Transformer(D, a.heads, custom_encoder=enc, custom_decoder=dec,
                                 dropout=a.dropout, batch_first=True)
        self.drop = nn.Dropout(a.dropout)
        # Sinusoidal positions (Vaswani et al. 2017, sec. 3.5).
        pos = torch.arange(512, dtype=torch.float32)[:, None]
        inv = torch.exp(torch.arange(0, D, 2, dtype=torch.float32) * (-math.log(10000.0) / D))
        pe = torch.zeros(512, D)
        pe[:, 0::2] = torch.sin(pos * inv)
        pe[:, 1::2] = torch.cos(pos * inv)
        self.register_buffer("pe", pe)

    def embed_pos(self, x):
        return self.drop(self.embed(x) * math.sqrt(self.dim) + self.pe[: x.shape[1]])

    def encode(self, src):
        mask = src == PAD
        return self.tf.encoder(self.embed_pos(src), src_key_padding_mask=mask), mask

    def decode(self, tgt_in, memory, src_mask):
        T = tgt_in.shape[1]
        causal = self.tf.generate_square_subsequent_mask(T)
        h = self.tf.decoder(self.embed_pos(tgt_in), memory, tgt_mask=causal,
                            tgt_key_padding_mask=tgt_in == PAD,
                            memory_key_padding_mask=src_mask)
        return h

    def forward(self, src, tgt_in):
        memory, src_mask = self.encode(src)
        return F.linear(self.decode(tgt_in, memory, src_mask), self.embed.weight)


def random_pairs(a, gen, n):
    """n batches of B pairs; source: T-1 random words then eos; target the
    same shape: tgt_in = bos y1 .. y(T-1), tgt_out = y1 .. y(T-1) eos."""
    out = []
    for _ in range(n):
        src = torch.randint(4, a.vocab, (a.batch, a.len), generator=gen)
        src[:, -1] = EOS
        y = torch.randint(4, a.vocab, (a.batch, a.len), generator=gen)
        y[:, -1] = EOS
        tin = torch.cat([torch.full((a.batch, 1), BOS), y[:, :-1]], 1)
        out.append((src, tin, y))
    return out


def train_rate(a, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = Model(a)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=a.label_smoothing, ignore_index=PAD)
    gen = torch.Generator().manual_seed(1)
    data = random_pairs(a, gen, 8)
    times = []
    for s in range(a.warmup + a.steps):
        src, tin, tout = data[s % len(data)]
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast):
            logits = model(src, tin)
            loss = loss_fn(logits.reshape(-1, a.vocab), tout.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        dt = time.perf_counter() - t0
        if s >= a.warmup:
            times.append(dt)
    ntok = int((data[0][2] != PAD).sum())
    return ntok / statistics.median(times), float(loss)


def next_logprobs(model, ys, memory, src_mask, t, N):
    h = model.decode(ys, memory, src_mask)[:, -1]
    lp = F.log_softmax(F.linear(h, model.embed.weight), dim=-1)
    if t < N - 1:
        lp[:, EOS] = -math.inf  # every sentence runs N steps
    else:
        keep = lp[:, EOS].clone()
        lp.fill_(-math.inf)
        lp[:, EOS] = keep  # the last step can only end the sentence
    return lp


def greedy(model, src, N):
    memory, src_mask = model.encode(src)
    ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    for t in range(N):
        lp = next_logprobs(model, ys, memory, src_mask, t, N)
        ys = torch.cat([ys, lp.argmax(-1, keepdim=True)], 1)
    return ys[:, 1:]


def beam_search(model, src, N, K):
    B = src.shape[0]
    memory, src_mask = model.encode(src)
    memory = memory.repeat_interleave(K, 0)
    src_mask = src_mask.repeat_interleave(K, 0)
    ys = torch.full((B * K, 1), BOS, dtype=torch.long)
    score = torch.full((B, K), -math.inf)
    score[:, 0] = 0.0  # at step 0 only slot 0 is live
    V = model.embed.weight.shape[0]
    base = (torch.arange(B) * K)[:, None]
    for t in range(N):
        lp = next_logprobs(model, ys, memory, src_mask, t, N)
        cand = (score[:, :, None] + lp.view(B, K, V)).view(B, K * V)
        score, idx = cand.topk(K, dim=1)
        parent = (base + torch.div(idx, V, rounding_mode="floor")).view(-1)
        ys = torch.cat([ys[parent], (idx % V).view(-1, 1)], 1)
    # All hypotheses have N tokens (eos last): the length penalty does not
    # change the order, slot 0 holds the best.
    return ys.view(B, K, -1)[:, 0, 1:]


def decode_rate(a, threads, beam):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = Model(a)
    model.eval()
    gen = torch.Generator().manual_seed(2)
    nb = (a.sentences + a.batch - 1) // a.batch
    srcs = []
    for _ in range(nb):
        src = torch.randint(4, a.vocab, (a.batch, a.len), generator=gen)
        src[:, -1] = EOS
        srcs.append(src)
    times = []
    with torch.inference_mode():
        # one untimed batch, then every batch --steps times
        for s in range(1 + nb * a.steps):
            src = srcs[(s - 1) % nb if s else 0]
            t0 = time.perf_counter()
            out = greedy(model, src, a.max_len) if beam == 1 else \
                beam_search(model, src, a.max_len, beam)
            dt = time.perf_counter() - t0
            if s:
                times.append(dt)
            assert out.shape == (a.batch, a.max_len) and bool((out[:, -1] == EOS).all())
    return a.batch / statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["train", "greedy", "beam"], default="train")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--len", type=int, default=20)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--max-len", type=int, default=30)
    p.add_argument("--sentences", type=int, default=256)
    p.add_argument("--autocast", action="store_true",
                   help='train: forward and loss under torch.autocast("cpu", dtype=torch.bfloat16)')
    a = p.parse_args()
    best = 0.0
    for t in [int(s) for s in a.threads.split(",")]:
        if a.mode == "train":
            r, loss = train_rate(a, t)
            print(f"torch_threads_{t}_tokens_per_s {r:.1f}")
            print(f"torch_threads_{t}_last_loss {loss:.3f}")
        else:
            r = decode_rate(a, t, 1 if a.mode == "greedy" else a.beam)
            print(f"torch_threads_{t}_sentences_per_s {r:.2f}")
        best = max(best, r)
    print(f"torch_best {best:.2f}")
    print(f"torch_version {torch.__version__}")


if __name__ == "__main__":
    main()
