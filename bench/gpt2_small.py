#!/usr/bin/env python3
"""gpt2_small.py - the GPT-2-small-shaped client model of bench/gpt2_small.sh (docs/benchmarks.md,
"GPT-2-small-shaped client model"): nanoGPT's shape written in PyTorch, exported to ONNX for
`trainer train --model`, and PyTorch FP32's own seconds per step on the same model and batch.

    gpt2_small.py export OUT.onnx            write the model (seed 0) as ONNX, print its parameter counts
    gpt2_small.py torch TEXT --batch B --threads N [--steps S] [--warmup W]
                                             FP32 SGD steps on random windows of TEXT (bytes mapped to
                                             the sorted distinct bytes); prints one JSON object

The shape: 12 pre-LN blocks of width 768 and 12 heads, context 256, vocabulary 65 (tiny-shakespeare's
characters); token and position nn.Embedding (torch.arange(T)), one qkv Linear split three ways,
causal masked_fill(-inf) attention, GELU approximate='tanh' MLP, a final LayerNorm, an untied
Linear head without bias (what docs/models.md supports). No dropout.
"""
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref"))
from onnx_model_ref import TBlock  # noqa: E402  the test's pre-LN block (nanoGPT's attention, tanh-GELU MLP)

LAYERS, WIDTH, HEADS, CONTEXT, VOCAB = 12, 768, 12, 256, 65


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, WIDTH), nn.Embedding(CONTEXT, WIDTH)
        self.h = nn.Sequential(*[TBlock(WIDTH, HEADS, causal=True) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        return self.lm_head(self.ln_f(self.h(x)))


def counts(m):
    total = sum(p.numel() for p in m.parameters())
    emb = m.wte.weight.numel() + m.wpe.weight.numel()
    return total, emb


def export(path):
    torch.manual_seed(0)
    m = GPT()
    total, emb = counts(m)
    torch.onnx.export(m, torch.zeros(1, CONTEXT, dtype=torch.long), path, opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["idx"], output_names=["logits"], dynamic_axes={"idx": {0: "N"}})
    print(json.dumps({"parameters": total, "embeddings": emb, "besides_embeddings": total - emb,
                      "layers": LAYERS, "width": WIDTH, "heads": HEADS, "context": CONTEXT, "vocab": VOCAB}))


def torch_steps(text, batch, threads, steps, warmup):
    torch.set_num_threads(threads)
    raw = open(text, "rb").read()
    vocab = sorted(set(raw))
    table = bytes([vocab.index(c) if c in vocab else 0 for c in range(256)])
    ids = torch.tensor(list(raw.translate(table)), dtype=torch.long)
    torch.manual_seed(0)
    m = GPT()
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(1)
    times, losses = [], []
    for s in range(warmup + steps):
        start = torch.randint(0, len(ids) - CONTEXT - 1, (batch,), generator=g)
        x = torch.stack([ids[i:i + CONTEXT] for i in start.tolist()])
        y = torch.stack([ids[i + 1:i + CONTEXT + 1] for i in start.tolist()])
        t0 = time.perf_counter()
        loss = F.cross_entropy(m(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if s >= warmup:
            times.append(dt)
        losses.append(loss.item())
    print(json.dumps({"threads": threads, "batch": batch, "steps": steps, "warmup": warmup,
                      "s_per_step": sum(times) / len(times), "min_s": min(times), "max_s": max(times),
                      "losses": [round(v, 4) for v in losses], "torch": torch.__version__}))


def main(argv):
    if len(argv) == 2 and argv[0] == "export":
        export(argv[1])
    elif len(argv) >= 2 and argv[0] == "torch":
        opts = {"--batch": 1, "--threads": 1, "--steps": 3, "--warmup": 1}
        rest = argv[2:]
        for i in range(0, len(rest), 2):
            if rest[i] not in opts or i + 1 >= len(rest):
                sys.exit(__doc__)
            opts[rest[i]] = int(rest[i + 1])
        torch_steps(argv[1], opts["--batch"], opts["--threads"], opts["--steps"], opts["--warmup"])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
