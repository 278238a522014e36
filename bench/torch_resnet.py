#!/usr/bin/env python3
"""torch_resnet.py - the outside reference for the residual CNN (docs/benchmarks.md): PyTorch
(python3-torch), FP32, training the same architecture and recipe on the same data.

The network is arch=resnet of arch/vt_arch_resnet.c built with torch.nn: a 3x3 stem convolution
(no bias), batch norm, ReLU and an optional 2x2 max pool; resnet_stages stages of resnet_blocks
basic blocks (the first block of every later stage strided, with a 1x1 projection shortcut and its
batch norm); global average pooling; a linear layer. Initial weights are read from a
`trainer export --step 0` file (the verified run's own initial state: convolution weights
[k, k, C_in, C_out] become [C_out, C_in, k, k], fc.weight [C, classes] its transpose). The data are
the project's vendored CIFAR-10 files, scaled to [0, 1] like data/vt_data.c; augmentation (random
crop from a zero-padded image, horizontal flip) and the epoch shuffle are torch's own draws, so the
two runs see the same distribution, not the same batches. SGD with momentum and weight decay
(PyTorch's form equals the project's: v = mu v + (g + wd w), w -= lr v) and the step schedule.

    torch_resnet.py --recipe RECIPE.json (--init INIT.safetensors | --random-init) [--data-dir DIR]
                    [--steps N] [--threads T] [--seed S] [--time-only N] [--profile-kinds N]
prints one JSON object: test accuracy, steps/s, parameters, and "clock": the clock the steps were
timed by (one thread: the thread's CPU time, as bench_cnn times the project; more: wall time).

--profile-kinds N (with --time-only): after the timed steps, N more steps of the same loop under
torch.autograd.profiler; "kinds" in the JSON gives, per operation kind of bench_cnn's CNN table
(conv forward, conv input + weight gradient, batch norm, pooling, fc, other), ms per step: the
kind's share of the profiled operations' self CPU time (the profiler's own clock, wall) times the
timed steps' mean on the script's clock (the profiler's overhead left out). PyTorch 1.13 computes
a convolution's input and weight gradients in one operation (aten::convolution_backward), so they
are one kind there; "conv input gradient" and "conv weight gradient" split that kind's time in the
ratio of the two gradients' thread CPU times when each is asked of aten::convolution_backward alone
(its output mask), per convolution on random operands of its shapes, best of 5 (the stem's input
gradient is not computed in training, so it has none).
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref"))
import read_safetensors  # noqa: E402


def load_cifar(path):
    with gzip.open(path, "rb") as f:
        raw = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).reshape(-1, 3073)
    y = raw[:, 0].long()
    x = (raw[:, 1:].float() / 255.0).reshape(-1, 3, 32, 32)
    return x, y


class Unit(nn.Module):
    def __init__(self, cin, cout, k, s, eps, mom):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=eps, momentum=mom)

    def forward(self, x):
        return self.bn(self.conv(x))


class Block(nn.Module):
    def __init__(self, cin, cout, s, eps, mom):
        super().__init__()
        self.u1 = Unit(cin, cout, 3, s, eps, mom)
        self.u2 = Unit(cout, cout, 3, 1, eps, mom)
        self.sc = Unit(cin, cout, 1, s, eps, mom) if s != 1 or cin != cout else None

    def forward(self, x):
        y = self.u2(F.relu(self.u1(x)))
        return F.relu(y + (self.sc(x) if self.sc is not None else x))


class Net(nn.Module):
    def __init__(self, r):
        super().__init__()
        w, eps, mom = r["resnet_width"], r["bn_eps"], r["bn_momentum"]
        self.stem = Unit(r["image_channels"], w, 3, 1, eps, mom)
        self.pool = r["resnet_pool"]
        blocks, cin = [], w
        for s in range(r["resnet_stages"]):
            for j in range(r["resnet_blocks"]):
                blocks.append(Block(cin, w << s, 2 if s > 0 and j == 0 else 1, eps, mom))
                cin = w << s
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, r["layers"][-1])

    def forward(self, x):
        h = F.relu(self.stem(x))
        if self.pool:
            h = F.max_pool2d(h, 2)
        h = self.blocks(h)
        return self.fc(h.mean(dim=(2, 3)))

    def load_project_state(self, tensors, r):
        t = {d["name"]: d for d in tensors}

        def arr(name):
            d = t[name]
            return torch.tensor(struct.unpack("<%df" % len(d["bits"]), struct.pack("<%dI" % len(d["bits"]), *d["bits"])),
                                dtype=torch.float32).reshape(d["shape"])

        def unit(u, conv, bn):
            u.conv.weight.data.copy_(arr(conv + ".weight").permute(3, 2, 0, 1))
            u.bn.weight.data.copy_(arr(bn + ".weight"))
            u.bn.bias.data.copy_(arr(bn + ".bias"))
            u.bn.running_mean.copy_(arr(bn + ".running_mean"))
            u.bn.running_var.copy_(arr(bn + ".running_var"))

        unit(self.stem, "stem.conv", "stem.bn")
        i = 0
        for s in range(r["resnet_stages"]):
            for j in range(r["resnet_blocks"]):
                b, p = self.blocks[i], "layer%d.%d." % (s + 1, j)
                unit(b.u1, p + "conv1", p + "bn1")
                unit(b.u2, p + "conv2", p + "bn2")
                if b.sc is not None:
                    unit(b.sc, p + "shortcut.conv", p + "shortcut.bn")
                i += 1
        self.fc.weight.data.copy_(arr("fc.weight").t())
        self.fc.bias.data.copy_(arr("fc.bias"))


def augment(x, pad, flip, g):
    B, C, H, W = x.shape
    if pad:
        xp = F.pad(x, (pad, pad, pad, pad))
        oy = torch.randint(0, 2 * pad + 1, (B,), generator=g)
        ox = torch.randint(0, 2 * pad + 1, (B,), generator=g)
        x = torch.stack([xp[b, :, oy[b]:oy[b] + H, ox[b]:ox[b] + W] for b in range(B)])
    if flip:
        m = torch.rand(B, generator=g) < 0.5
        x = torch.where(m[:, None, None, None], x.flip(3), x)
    return x


KINDS = ("conv forward", "conv input + weight gradient", "batch norm", "pooling", "fc", "other")


def kind_of(name):
    """bench_cnn's CNN kind of a profiled operation (its name as the profiler prints it)"""
    n = name.lower()
    if "conv" in n:
        return KINDS[1] if "backward" in n else KINDS[0]
    if "batch_norm" in n or "batchnorm" in n:
        return KINDS[2]
    if "pool" in n:
        return KINDS[3]
    if "addmm" in n or n in ("aten::mm", "aten::t", "aten::linear") or n.startswith("tbackward") or "mmbackward" in n:
        return KINDS[4]
    return KINDS[5]


def profile_kinds(step, n, per_step):
    """ms per step of each kind: its share of the profiled self CPU time of n calls of step(), times
    per_step (the unprofiled step's seconds on the script's clock)"""
    with torch.autograd.profiler.profile() as prof:
        for _ in range(n):
            step()
    self_us = {k: 0.0 for k in KINDS}
    for e in prof.key_averages():
        self_us[kind_of(e.key)] += e.self_cpu_time_total
    total = sum(self_us.values()) or 1.0
    return {k: round(1e3 * per_step * v / total, 3) for k, v in self_us.items()}


def conv_grad_split(net, x):
    """the input gradient's share of the convolutions' backward time: each Conv2d's two gradients
    timed alone (aten::convolution_backward with one output each, thread CPU time, best of 5)"""
    shapes = []
    hooks = [m.register_forward_hook(lambda m, i, o: shapes.append((m, i[0].shape, o.shape)))
             for m in net.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        net(x)
    for h in hooks:
        h.remove()
    t_in = t_w = 0.0
    for m, si, so in shapes:
        xi, go, w = torch.rand(si) - 0.5, torch.rand(so) - 0.5, m.weight.detach()
        for mask in ([True, False, False], [False, True, False]):
            if mask[0] and m is net.stem.conv:
                continue  # the stem's input gradient: not computed in training
            best = 1e30
            for _ in range(5):
                t0 = time.thread_time()
                torch.ops.aten.convolution_backward(go, xi, w, None, m.stride, m.padding, m.dilation, False,
                                                    [0, 0], m.groups, mask)
                best = min(best, time.thread_time() - t0)
            if mask[0]:
                t_in += best
            else:
                t_w += best
    return t_in / (t_in + t_w)


def lr_at(r, s):
    lr = r["lr"]
    if r["schedule"] == "step":
        lr *= r["decay_factor"] ** ((s - 1) // r["decay_every"])
    return lr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", required=True)
    ap.add_argument("--init", help="the run's step-0 export (trainer export --step 0 --optimizer)")
    ap.add_argument("--random-init", action="store_true", help="torch's own initialisation (timing only)")
    ap.add_argument("--data-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
    ap.add_argument("--steps", type=int)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1, help="torch's data order and augmentation draws")
    ap.add_argument("--time-only", type=int, default=0, help="time this many steps, no evaluation")
    ap.add_argument("--profile-kinds", type=int, default=0, help="then profile this many steps per operation kind")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    # one thread: its CPU time, as bench_cnn times the project (a busy machine flatters neither); more: wall
    clock = time.thread_time if a.threads == 1 else time.perf_counter
    torch.manual_seed(a.seed)
    r = {"resnet_width": 16, "resnet_stages": 3, "resnet_blocks": 1, "resnet_pool": 1, "bn_eps": 1e-5,
         "bn_momentum": 0.1, "augment_pad": 0, "augment_flip": 0, "weight_decay": 0.0, "momentum": 0.9,
         "schedule": "constant", "image_channels": 3}
    with open(a.recipe) as f:
        r.update(json.load(f))
    steps = a.time_only or a.steps or r["steps"]
    if a.profile_kinds and not a.time_only:
        ap.error("--profile-kinds goes with --time-only (its steps and probes would change the evaluated model)")
    net = Net(r)
    if not a.random_init:
        if not a.init:
            ap.error("--init FILE or --random-init")
        with open(a.init, "rb") as f:
            _, tensors = read_safetensors.parse(f.read())
        net.load_project_state(tensors, r)
    xtr, ytr = load_cifar(os.path.join(a.data_dir, "cifar10", "cifar10_train_4000.bin.gz"))
    xte, yte = load_cifar(os.path.join(a.data_dir, "cifar10", "cifar10_test_1000.bin.gz"))
    opt = torch.optim.SGD(net.parameters(), lr=r["lr"], momentum=r["momentum"], weight_decay=r["weight_decay"])
    B, g = r["batch"], torch.Generator().manual_seed(a.seed)
    spe, perm, s = len(xtr) // B, None, 0
    net.train()

    def train_step():
        nonlocal perm, s, loss
        s += 1
        q = (s - 1) % spe
        if q == 0:
            perm = torch.randperm(len(xtr), generator=g)
        idx = perm[q * B:(q + 1) * B]
        x = augment(xtr[idx], r["augment_pad"], r["augment_flip"], g)
        for pg in opt.param_groups:
            pg["lr"] = lr_at(r, s)
        loss = F.cross_entropy(net(x), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()

    loss, t0 = None, clock()
    for _ in range(steps):
        train_step()
    dt = clock() - t0
    out = {"steps": steps, "seconds": round(dt, 3), "steps_per_s": round(steps / dt, 3), "final_loss": loss.item(),
           "parameters": sum(p.numel() for p in net.parameters()), "threads": a.threads, "clock": "thread CPU time" if a.threads == 1 else "wall time", "seed": a.seed}
    if a.profile_kinds > 0:
        out["kinds"] = profile_kinds(train_step, a.profile_kinds, dt / steps)
        f = conv_grad_split(net, xtr[:B])
        both = out["kinds"][KINDS[1]]
        out["kinds"]["conv input gradient"] = round(both * f, 3)
        out["kinds"]["conv weight gradient"] = round(both * (1 - f), 3)
    if not a.time_only:
        net.eval()
        with torch.no_grad():
            out["test_accuracy"] = (net(xte).argmax(1) == yte).float().mean().item()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
