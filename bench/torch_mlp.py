#!/usr/bin/env python3
"""torch_mlp.py - the outside reference for the MLP (docs/benchmarks.md "Side by side"): PyTorch
(python3-torch), FP32, training the recipe's arch=mlp network (fc1 .. fcL, nn.Linear, ReLU between)
on the project's vendored MNIST files, scaled to [0, 1] like data/vt_data.c, with the recipe's SGD
(momentum, weight decay: PyTorch's form equals the project's) and batch. Random initial weights and
torch's own shuffle: the time per step is what is compared, not the trajectory.

    torch_mlp.py --recipe RECIPE.json --random-init [--data-dir DIR] [--threads T] [--seed S]
                 [--time-only N]
prints one JSON object: steps, seconds, final loss, parameters, threads.
"""
import argparse
import gzip
import json
import os
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def load_mnist(d):
    with gzip.open(os.path.join(d, "mnist", "train-images-idx3-ubyte.gz"), "rb") as f:
        raw = f.read()
    magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
    if magic != 2051:
        raise SystemExit("torch_mlp.py: not an MNIST image file")
    x = torch.frombuffer(bytearray(raw[16:16 + n * rows * cols]), dtype=torch.uint8).float().div_(255.0)
    with gzip.open(os.path.join(d, "mnist", "train-labels-idx1-ubyte.gz"), "rb") as f:
        raw = f.read()
    y = torch.frombuffer(bytearray(raw[8:8 + n]), dtype=torch.uint8).long()
    return x.reshape(n, rows * cols), y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", required=True)
    ap.add_argument("--random-init", action="store_true")
    ap.add_argument("--data-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time-only", type=int, default=100)
    a = ap.parse_args()
    if not a.random_init:
        ap.error("--random-init is required (only the time per step is measured)")
    torch.set_num_threads(a.threads)
    # one thread: its CPU time, as bench_cnn times the project (a busy machine flatters neither); more: wall
    clock = time.thread_time if a.threads == 1 else time.perf_counter
    torch.manual_seed(a.seed)
    r = {"batch": 64, "lr": 0.05, "momentum": 0.9, "weight_decay": 0.0, "layers": [784, 128, 10]}
    with open(a.recipe) as f:
        r.update(json.load(f))
    if r.get("arch", "mlp") != "mlp" or r.get("optimizer", "sgd") != "sgd":
        raise SystemExit("torch_mlp.py: an arch=mlp recipe with optimizer sgd is expected")
    L = r["layers"]
    net = nn.Sequential(*[m for i in range(1, len(L)) for m in
                          ([nn.Linear(L[i - 1], L[i])] + ([nn.ReLU()] if i < len(L) - 1 else []))])
    opt = torch.optim.SGD(net.parameters(), lr=r["lr"], momentum=r["momentum"], weight_decay=r["weight_decay"])
    x, y = load_mnist(a.data_dir)
    B, g = r["batch"], torch.Generator().manual_seed(a.seed)
    t0 = clock()
    for s in range(a.time_only):
        idx = torch.randint(0, x.shape[0], (B,), generator=g)
        loss = F.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    dt = clock() - t0
    print(json.dumps({"steps": a.time_only, "seconds": round(dt, 4), "final_loss": loss.item(),
                      "parameters": sum(p.numel() for p in net.parameters()), "threads": a.threads,
                      "clock": "thread CPU time" if a.threads == 1 else "wall time"}))


if __name__ == "__main__":
    main()
