#!/usr/bin/env python3
"""torch_gpt.py - the outside reference for the character-level GPT (docs/benchmarks.md): PyTorch
(python3-torch), FP32, training the same architecture and recipe on the same data.

The model is arch=gpt of arch/vt_arch_gpt.c written with explicit tensors of the project's names
and shapes (a linear layer is x @ W + b with W [in, out]): token and position embeddings, pre-LN
blocks (causal multi-head self-attention, GELU tanh MLP, residuals, dropout), a final layer norm and
the head tied to wte (or lm_head.weight). Initial values come from a `trainer export --step 0
--optimizer` file, so both runs start from the same weights. AdamW with the project's decoupled
weight decay on the matrices only, the gradient clipped to the global norm clip_norm, linear
warm-up then cosine to final_lr_factor * lr. Batches are random windows drawn by torch's generator
(the same distribution as the project's Philox windows, not the same windows). Validation: the mean
cross-entropy over consecutive windows of the last 10% of the text, as `trainer eval` computes it.

    torch_gpt.py --recipe RECIPE.json (--init INIT.safetensors | --random-init) [--data-dir DIR]
                 [--steps N] [--threads T] [--seed S] [--time-only N] [--profile-kinds N]
prints one JSON object: validation loss (nats/char), tokens/s, parameters, and "clock": the clock the
steps were timed by (one thread: the thread's CPU time, as bench_cnn times the project; more: wall).

--profile-kinds N (with --time-only): after the timed steps, N more steps of the same loop under
torch.autograd.profiler (record_shapes); "kinds" in the JSON gives, per operation kind of bench_cnn's
GPT table, ms per step: the kind's share of the profiled operations' self CPU time times the timed
steps' mean on the script's clock. The forward pass labels its parts (record_function); a backward
operation takes the label of the forward operation its autograd node belongs to (sequence number),
except that a backward matrix product whose rows are not the batch's tokens (the product giving a
weight's gradient, the tied head's too) and a projection's backward sum (its bias gradient) go to
"weight gradients"; the softmax, GELU, embeddings, head, loss and optimiser are "other", as in
bench_cnn.
"""
import contextlib
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref"))
import read_safetensors  # noqa: E402


def load_text(data_dir):
    with gzip.open(os.path.join(data_dir, "tinyshakespeare", "input.txt.gz"), "rb") as f:
        raw = f.read()
    vocab = sorted(set(raw))  # the project's vocabulary: the sorted distinct bytes of the whole file
    table = bytes([vocab.index(c) if c in vocab else 0 for c in range(256)])
    ids = torch.tensor(list(raw.translate(table)), dtype=torch.long)
    cut = len(raw) // 10 * 9 + len(raw) % 10 * 9 // 10
    return ids[:cut], ids[cut:], len(vocab)


def shapes(r):
    C, V, T = r["gpt_width"], r["gpt_vocab"], r["gpt_context"]
    s = [("wte.weight", [V, C], 1), ("wpe.weight", [T, C], 1)]
    for l in range(r["gpt_layers"]):
        p = "h%d." % l
        s += [(p + "ln_1.weight", [C], 0), (p + "ln_1.bias", [C], 0),
              (p + "attn.c_attn.weight", [C, 3 * C], 1), (p + "attn.c_attn.bias", [3 * C], 0),
              (p + "attn.c_proj.weight", [C, C], 1), (p + "attn.c_proj.bias", [C], 0),
              (p + "ln_2.weight", [C], 0), (p + "ln_2.bias", [C], 0),
              (p + "mlp.c_fc.weight", [C, 4 * C], 1), (p + "mlp.c_fc.bias", [4 * C], 0),
              (p + "mlp.c_proj.weight", [4 * C, C], 1), (p + "mlp.c_proj.bias", [C], 0)]
    s += [("ln_f.weight", [C], 0), ("ln_f.bias", [C], 0)]
    if not r["gpt_tie"]:
        s += [("lm_head.weight", [C, V], 1)]
    return s


GPT_KINDS = ("QKV projection", "attention scores", "attention-weighted sum", "output projection", "FFN",
             "weight gradients", "layer norm", "other")


def forward(P, r, tok, train, label=None):
    """the logits; label(kind): a context naming the kind of the operations inside (the profile)"""
    if label is None:
        def label(kind):
            return contextlib.nullcontext()
    B, T = tok.shape
    C, H, eps, pd = r["gpt_width"], r["gpt_heads"], r["ln_eps"], r["dropout"]
    D = C // H
    drop = (lambda x: F.dropout(x, pd, True)) if train and pd > 0 else (lambda x: x)
    x = drop(P["wte.weight"][tok] + P["wpe.weight"][:T])
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(r["gpt_layers"]):
        p = "h%d." % l
        with label(GPT_KINDS[6]):
            h = F.layer_norm(x, (C,), P[p + "ln_1.weight"], P[p + "ln_1.bias"], eps)
        with label(GPT_KINDS[0]):
            qkv = h @ P[p + "attn.c_attn.weight"] + P[p + "attn.c_attn.bias"]
        q, k, v = [t.reshape(B, T, H, D).transpose(1, 2) for t in qkv.split(C, dim=2)]
        with label(GPT_KINDS[1]):
            s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        pr = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
        with label(GPT_KINDS[2]):
            a = pr @ v
        with label(GPT_KINDS[3]):
            a = a.transpose(1, 2).reshape(B, T, C) @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"]
        x = x + drop(a)
        with label(GPT_KINDS[6]):
            h = F.layer_norm(x, (C,), P[p + "ln_2.weight"], P[p + "ln_2.bias"], eps)
        with label(GPT_KINDS[4]):
            m = h @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"]
        m = F.gelu(m, approximate="tanh")
        with label(GPT_KINDS[4]):
            m = m @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"]
        x = x + drop(m)
    with label(GPT_KINDS[6]):
        x = F.layer_norm(x, (C,), P["ln_f.weight"], P["ln_f.bias"], eps)
    return x @ (P["wte.weight"].t() if r["gpt_tie"] else P["lm_head.weight"])


def profile_kinds(step, n, per_step, tokens):
    """ms per step of each GPT kind: its share of the profiled self CPU time of n calls of step(), times
    per_step (the unprofiled step's seconds on the script's clock); tokens: the batch's rows B T"""
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        for _ in range(n):
            step(lambda kind: torch.autograd.profiler.record_function(kind))
    ev = prof.function_events

    def up(e, test):  # e or its nearest ancestor passing test
        while e is not None and not test(e):
            e = e.cpu_parent
        return e

    def backward_node(e):
        return e.name.rstrip("0123456789").endswith("Backward") and e.sequence_nr >= 0

    seq = {}
    for e in ev:  # the forward operations under a label
        lab = up(e, lambda x: x.name in GPT_KINDS)
        if lab is not None and e.sequence_nr >= 0 and not backward_node(e):
            seq.setdefault(e.sequence_nr, lab.name)
    self_us = {k: 0.0 for k in GPT_KINDS}
    for e in ev:
        lab, node = up(e, lambda x: x.name in GPT_KINDS), up(e, backward_node)
        kind = lab.name if lab is not None else seq.get(node.sequence_nr, GPT_KINDS[7]) if node else GPT_KINDS[7]
        if node is not None and (  # a weight's gradient (the head's too) or a projection's bias gradient
                (e.name == "aten::mm" and e.input_shapes and e.input_shapes[0] and e.input_shapes[0][0] != tokens) or
                (e.name == "aten::sum" and kind in (GPT_KINDS[0], GPT_KINDS[3], GPT_KINDS[4]))):
            kind = GPT_KINDS[5]
        self_us[kind] += e.self_cpu_time_total
    total = sum(self_us.values()) or 1.0
    return {k: round(1e3 * per_step * v / total, 3) for k, v in self_us.items()}


def lr_at(r, s):
    lr = r["lr"]
    if r["warmup"] and s <= r["warmup"]:
        lr = lr * s / r["warmup"]
    if r["schedule"] == "cosine" and s > r["warmup"] and r["steps"] > r["warmup"]:
        t, f = (s - r["warmup"]) / (r["steps"] - r["warmup"]), r["final_lr_factor"]
        return lr * (f + (1 - f) * 0.5 * (1 + math.cos(math.pi * t)))
    return lr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", required=True)
    ap.add_argument("--init")
    ap.add_argument("--random-init", action="store_true")
    ap.add_argument("--data-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
    ap.add_argument("--steps", type=int)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time-only", type=int, default=0)
    ap.add_argument("--profile-kinds", type=int, default=0, help="then profile this many steps per operation kind")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    # one thread: its CPU time, as bench_cnn times the project (a busy machine flatters neither); more: wall
    clock = time.thread_time if a.threads == 1 else time.perf_counter
    torch.manual_seed(a.seed)
    r = {"gpt_layers": 2, "gpt_heads": 4, "gpt_width": 128, "gpt_context": 64, "gpt_vocab": 65, "gpt_tie": 1,
         "dropout": 0.0, "clip_norm": 1.0, "ln_eps": 1e-5, "warmup": 0, "schedule": "constant",
         "final_lr_factor": 0.1, "weight_decay": 0.0, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    with open(a.recipe) as f:
        r.update(json.load(f))
    if a.steps:
        r["steps"] = a.steps
    steps = a.time_only or r["steps"]
    if a.profile_kinds and not a.time_only:
        ap.error("--profile-kinds goes with --time-only (its steps would change the evaluated model)")
    P, decay = {}, []
    if a.random_init or not a.init:
        if not a.random_init:
            ap.error("--init FILE or --random-init")
        for n, s, d in shapes(r):
            P[n] = (torch.randn(s) * 0.02 if d else (torch.ones(s) if n.endswith("ln_1.weight") or
                    n.endswith("ln_2.weight") or n == "ln_f.weight" else torch.zeros(s))).requires_grad_()
    else:
        with open(a.init, "rb") as f:
            _, tensors = read_safetensors.parse(f.read())
        t = {d["name"]: d for d in tensors}
        for n, s, d in shapes(r):
            bits = t[n]["bits"]
            P[n] = torch.tensor(struct.unpack("<%df" % len(bits), struct.pack("<%dI" % len(bits), *bits)),
                                dtype=torch.float32).reshape(s).requires_grad_()
    decay = [P[n] for n, s, d in shapes(r) if d]
    rest = [P[n] for n, s, d in shapes(r) if not d]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": r["weight_decay"]}, {"params": rest, "weight_decay": 0.0}],
                            lr=r["lr"], betas=(r["beta1"], r["beta2"]), eps=r["eps"])
    train, val, V = load_text(a.data_dir)
    B, T, g = r["batch"], r["gpt_context"], torch.Generator().manual_seed(a.seed)
    s, loss = 0, None

    def train_step(label=None):
        nonlocal s, loss
        s += 1
        st = torch.randint(0, len(train) - T, (B,), generator=g)
        idx = st[:, None] + torch.arange(T + 1)[None, :]
        w = train[idx]
        for pg in opt.param_groups:
            pg["lr"] = lr_at(r, s)
        logits = forward(P, r, w[:, :T], True, label)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        if r["clip_norm"] > 0:
            torch.nn.utils.clip_grad_norm_(list(P.values()), r["clip_norm"])
        opt.step()

    t0 = clock()
    for _ in range(steps):
        train_step()
    dt = clock() - t0
    out = {"steps": steps, "seconds": round(dt, 3), "tokens_per_s": round(steps * B * T / dt, 1),
           "final_loss": loss.item(), "parameters": sum(p.numel() for p in P.values()), "threads": a.threads, "clock": "thread CPU time" if a.threads == 1 else "wall time",
           "seed": a.seed}
    if a.profile_kinds > 0:
        out["kinds"] = profile_kinds(train_step, a.profile_kinds, dt / steps, B * T)
    if not a.time_only:
        with torch.no_grad():
            nw = (len(val) - 1) // T
            tot, cnt = 0.0, 0
            for w0 in range(0, nw, 64):
                ws = torch.arange(w0, min(nw, w0 + 64))
                idx = ws[:, None] * T + torch.arange(T + 1)[None, :]
                w = val[idx]
                lg = forward(P, r, w[:, :T], False)
                tot += F.cross_entropy(lg.reshape(-1, lg.shape[-1]), w[:, 1:].reshape(-1), reduction="sum").item()
                cnt += w[:, 1:].numel()
            out["val_loss"] = tot / cnt
    print(json.dumps(out))


if __name__ == "__main__":
    main()
