#!/usr/bin/env python3
"""torch_models.py - `trainer export --layout torch` checked from PyTorch (tests/e2e/torch_layout.sh;
docs/format.md "Export (safetensors, --layout torch)").

The three architectures are written here as torch.nn modules from the documentation alone
(docs/architecture.md, docs/cnn.md, docs/gpt.md, the export's metadata), built from the metadata the
export carries (vt.recipe, vt.vocab, ...), and the exported file is loaded with
load_state_dict(strict=True): every name, shape and dtype must be the module's, nothing missing, nothing
extra. Then:

    torch_models.py check FILE --project FILE0
        every tensor of FILE (torch layout) holds the values of FILE0 (the project's layout, the same
        step) bit for bit, moved as documented (a transpose or a permutation: no value changes);
        num_batches_tracked is the step; --optimizer tensors only under "optimizer."
    torch_models.py eval FILE --data-dir DIR --per-example PRED [--first N]
        the MLP or CNN in FP32 (eval mode: batch norm on the running statistics) on the data set
        trainer eval used: the predicted class of every example must be trainer eval's (PRED, from
        `trainer eval --per-example`) except near-ties (the two largest logits within 1e-4 of each
        other, printed), and the number correct over the first N (default 500) must be equal: exact
    torch_models.py loss FILE --data-dir DIR --windows K --loss L [--tol TOL]
        the GPT in FP32 on the first K consecutive windows of the validation text (the last 10% of
        the file, tokenised with vt.vocab): the mean of -ln p (p the FP32 softmax probability of the
        next character, the log and the mean in FP64) must be within TOL (default 1e-6 nats per
        character) of L, `trainer eval`'s mean over the same windows: a tolerance, since torch's FP32
        evaluation order differs from the project's correctly rounded operations in the last bits

Exit 0 when every check holds, 1 otherwise (the first failure printed).
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def fail(msg):
    print("torch_models: FAIL: " + msg)
    sys.exit(1)


DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8), "I64": (torch.int64, 8), "I32": (torch.int32, 4),
          "U8": (torch.uint8, 1)}


def read_st(path):
    """(metadata, {name: tensor}, [names in file order]) of a safetensors file (json and struct only)."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", {})
    out, order = {}, []
    for name, d in h.items():
        dt, size = DTYPES[d["dtype"]]
        lo, hi = d["data_offsets"]
        raw = bytearray(b[8 + n + lo:8 + n + hi])
        t = torch.frombuffer(raw, dtype=dt) if raw else torch.zeros(0, dtype=dt)
        out[name] = t.reshape(d["shape"])
        order.append(name)
    return meta, out, order


# ------------------------------------------------------------------ the modules, from the docs
class MLP(nn.Module):
    """layers [d0, d1, ..., dL]: fc1 .. fcL (nn.Linear), ReLU between them (docs/architecture.md)."""

    def __init__(self, layers):
        super().__init__()
        self.n = len(layers) - 1
        for i in range(1, self.n + 1):
            setattr(self, "fc%d" % i, nn.Linear(layers[i - 1], layers[i]))

    def forward(self, x):
        for i in range(1, self.n + 1):
            x = getattr(self, "fc%d" % i)(x)
            if i < self.n:
                x = F.relu(x)
        return x


class Unit(nn.Module):
    """A convolution (no bias, zero padding k // 2) and its batch norm: <unit>.conv, <unit>.bn."""

    def __init__(self, cin, cout, k, stride, eps, momentum):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=eps, momentum=momentum)

    def forward(self, x):
        return self.bn(self.conv(x))


class BasicBlock(nn.Module):
    """out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)) (docs/cnn.md)."""

    def __init__(self, cin, cout, stride, eps, momentum):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout, eps=eps, momentum=momentum)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout, eps=eps, momentum=momentum)
        self.shortcut = Unit(cin, cout, 1, stride, eps, momentum) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet(nn.Module):
    """stem (3x3 conv, bn), ReLU, optional 2x2 max pool; resnet_stages stages (layer1, layer2, ...)
    of resnet_blocks basic blocks, stage s of width resnet_width * 2^(s-1), the first block of every
    later stage strided with a 1x1 projection shortcut; global average pool; fc (docs/cnn.md)."""

    def __init__(self, r):
        super().__init__()
        w, eps, mom = r["resnet_width"], r["bn_eps"], r["bn_momentum"]
        self.stem = Unit(r["image_channels"], w, 3, 1, eps, mom)
        self.pool = r["resnet_pool"]
        self.stages = r["resnet_stages"]
        cin = w
        for s in range(self.stages):
            blocks = []
            for j in range(r["resnet_blocks"]):
                blocks.append(BasicBlock(cin, w << s, 2 if s > 0 and j == 0 else 1, eps, mom))
                cin = w << s
            setattr(self, "layer%d" % (s + 1), nn.Sequential(*blocks))
        self.fc = nn.Linear(cin, r["layers"][-1])

    def forward(self, x):
        h = F.relu(self.stem(x))
        if self.pool:
            h = F.max_pool2d(h, 2)
        for s in range(self.stages):
            h = getattr(self, "layer%d" % (s + 1))(h)
        return self.fc(h.mean(dim=(2, 3)))


class Attention(nn.Module):
    """qkv = c_attn(h): features [0, C) q, [C, 2C) k, [2C, 3C) v; head j features [jD, (j+1)D);
    causal softmax of q k^T / sqrt(D); heads concatenated; c_proj (docs/gpt.md, vt.qkv_layout)."""

    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        D = C // self.H
        q, k, v = [t.reshape(B, T, self.H, D).transpose(1, 2) for t in self.c_attn(x).split(C, dim=2)]
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v
        return self.c_proj(a.transpose(1, 2).reshape(B, T, C))


class MLPBlock(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    """pre-LN: x += attn(ln_1(x)); x += mlp(ln_2(x)) (dropout: none in evaluation)."""

    def __init__(self, C, H, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=eps)
        self.attn = Attention(C, H)
        self.ln_2 = nn.LayerNorm(C, eps=eps)
        self.mlp = MLPBlock(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """wte, wpe (nn.Embedding); h (nn.ModuleList of blocks); ln_f; logits = ln_f(x) wte^T when tied
    (no lm_head tensor), else lm_head (nn.Linear, no bias) (docs/gpt.md)."""

    def __init__(self, r):
        super().__init__()
        C, V, T, eps = r["gpt_width"], r["gpt_vocab"], r["gpt_context"], r["ln_eps"]
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList([Block(C, r["gpt_heads"], eps) for _ in range(r["gpt_layers"])])
        self.ln_f = nn.LayerNorm(C, eps=eps)
        self.tie = r["gpt_tie"]
        if not self.tie:
            self.lm_head = nn.Linear(C, V, bias=False)

    def forward(self, tok):
        x = self.wte(tok) + self.wpe(torch.arange(tok.shape[1]))
        for b in self.h:
            x = b(x)
        x = self.ln_f(x)
        return x @ self.wte.weight.t() if self.tie else self.lm_head(x)


def build(meta):
    r = json.loads(meta["vt.recipe"])
    arch = meta["vt.arch"]
    if arch != r["arch"]:
        fail("vt.arch %s, the recipe's %s" % (arch, r["arch"]))
    if arch == "mlp":
        return MLP(r["layers"]), r
    if arch == "resnet":
        for k in ("bn_eps", "bn_momentum"):  # the metadata's own keys say what the recipe says
            if float(meta["vt." + k]) != r[k]:
                fail("vt.%s %s, the recipe's %r" % (k, meta["vt." + k], r[k]))
        return ResNet(r), r
    for k in ("gpt_layers", "gpt_heads", "gpt_width", "gpt_context", "gpt_vocab", "gpt_tie"):
        if int(meta["vt." + k]) != r[k]:
            fail("vt.%s %s, the recipe's %r" % (k, meta["vt." + k], r[k]))
    if float(meta["vt.ln_eps"]) != r["ln_eps"]:
        fail("vt.ln_eps %s, the recipe's %r" % (meta["vt.ln_eps"], r["ln_eps"]))
    return GPT(r), r


def load(path):
    meta, t, order = read_st(path)
    if meta.get("vt.layout") != "torch" or meta.get("format") != "pt":
        fail("%s: not a --layout torch export (metadata %s)" % (path, sorted(meta)))
    model, r = build(meta)
    params = {k: v for k, v in t.items() if not k.startswith("optimizer.")}
    try:
        model.load_state_dict(params, strict=True)
    except RuntimeError as e:
        fail("load_state_dict(strict=True): %s" % e)
    sd = model.state_dict()
    for k, v in params.items():  # load_state_dict casts dtypes silently: require the module's own
        if sd[k].dtype != v.dtype:
            fail("%s is %s in the file, %s in the module" % (k, v.dtype, sd[k].dtype))
    model.eval()
    return meta, t, order, model, r


def bits(x):
    return x.contiguous().view(torch.int32) if x.dtype == torch.float32 else x


# ------------------------------------------------------------------ check: the layout against the project's
def check(a):
    meta, t, order, model, r = load(a.file)
    meta0, t0, _ = read_st(a.project)
    step = int(meta["vt.step"])
    if meta["vt.state_hash"] != meta0.get("state_hash") or str(step) != meta0.get("step"):
        fail("the two files are not the same step: %s %s / %s %s" % (meta["vt.step"], meta["vt.state_hash"],
                                                                      meta0.get("step"), meta0.get("state_hash")))
    gpt = r["arch"] == "gpt"
    seen = set()
    for name, x in t.items():
        if name.endswith(".num_batches_tracked"):
            if x.dtype != torch.int64 or x.shape != () or int(x) != step:
                fail("%s: %s %s = %s, expected int64 [] = the step %d" % (name, x.dtype, list(x.shape), x, step))
            continue
        opt = name.startswith("optimizer.")
        pname = name[len("optimizer."):] if opt else name
        if opt:  # optimizer.<torch name>.<what>
            pname, what = pname.rsplit(".", 1)
            what = {"momentum_buffer": "velocity"}.get(what, what)
        src = pname
        if gpt and src.startswith("h."):  # h.L. -> hL.
            l, rest = src[2:].split(".", 1)
            src = "h%s.%s" % (l, rest)
        if opt:
            src += "." + what
        if src not in t0:
            fail("%s: no project tensor %s" % (name, src))
        y = t0[src]
        if y.dim() == 4:
            y = y.permute(3, 2, 0, 1)  # [k, k, C_in, C_out] -> [C_out, C_in, k, k]
        elif y.dim() == 2 and not (gpt and pname in ("wte.weight", "wpe.weight")):
            y = y.t()  # [in, out] -> [out, in]
        if list(x.shape) != list(y.shape) or x.dtype != y.dtype or not torch.equal(bits(x), bits(y)):
            fail("%s is not %s moved as documented (shape %s vs %s, or another bit)" % (name, src, list(x.shape),
                                                                                     list(y.shape)))
        seen.add(src)
    if seen != set(t0):
        fail("project tensors not in the torch file: %s" % sorted(set(t0) - seen))
    opt_names = [k for k in t0 if k.endswith((".velocity", ".exp_avg", ".exp_avg_sq"))]
    if opt_names and not any(k.startswith("optimizer.") for k in t):
        fail("the optimiser's tensors are missing")
    for k in ("vt.recipe", "vt.input", "vt.modules", "vt.commitment_hash", "vt.merkle_root", "vt.manifest"):
        if not meta.get(k):
            fail("metadata %s missing" % k)
    if gpt:
        v = bytes.fromhex(meta["vt.vocab"])
        if not 1 <= len(v) <= r["gpt_vocab"] or list(v) != sorted(set(v)):
            fail("vt.vocab is not a sorted set of at most gpt_vocab bytes: %s" % meta["vt.vocab"])
        if any(k.startswith("lm_head") for k in order) and r["gpt_tie"]:
            fail("a tied head has an lm_head tensor")
    elif not meta.get("vt.input_divisor"):
        fail("metadata vt.input_divisor missing")
    n = sum(1 for k in t if not k.startswith("optimizer."))
    print("torch_models: %s: %d state_dict tensors (%d optimiser), strict load into the %s module, values bit for bit "
          "those of the project's layout" % (os.path.basename(a.file), n, len(t) - n, r["arch"]))


# ------------------------------------------------------------------ eval: accuracy, exactly
def read_maybe_gz(path):
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    with gzip.open(path + ".gz", "rb") as f:
        return f.read()


def dataset(root, name):
    """(raw uint8 features [n, d], labels [n]) of the built-in test sets, from their files."""
    if name in ("mnist-test", "mnist-train"):
        pre = "t10k" if name == "mnist-test" else "train"
        img = read_maybe_gz(os.path.join(root, "mnist", pre + "-images-idx3-ubyte"))
        lab = read_maybe_gz(os.path.join(root, "mnist", pre + "-labels-idx1-ubyte"))
        n, rr, c = (int.from_bytes(img[4 * k:4 * k + 4], "big") for k in (1, 2, 3))
        x = torch.frombuffer(bytearray(img[16:16 + n * rr * c]), dtype=torch.uint8).reshape(n, rr * c)
        return x, torch.frombuffer(bytearray(lab[8:8 + n]), dtype=torch.uint8)
    if name in ("cifar10-test", "cifar10-train"):
        f = "cifar10_test_1000.bin" if name == "cifar10-test" else "cifar10_train_4000.bin"
        b = torch.frombuffer(bytearray(read_maybe_gz(os.path.join(root, "cifar10", f))), dtype=torch.uint8)
        b = b.reshape(-1, 3073)
        return b[:, 1:], b[:, 0]
    fail("no reader here for data set " + name)


def evaluate(a):
    meta, t, order, model, r = load(a.file)
    lines = [ln.split() for ln in open(a.per_example) if not ln.startswith("#")]
    head = open(a.per_example).readline().split()
    name = head[4].rstrip(",")  # "# trainer eval --per-example: NAME, N examples, ..."
    x, y = dataset(a.data_dir, name)
    n = len(lines)
    if n != len(y):
        fail("%s: %d lines, the data set %d examples" % (a.per_example, n, len(y)))
    div = float(meta["vt.input_divisor"])
    # the input as docs/format.md says: value = (float)((double)v / divisor), no other normalisation
    xf = (x.double() / div).float()
    if r["arch"] == "resnet":
        xf = xf.reshape(-1, r["image_channels"], r["image_height"], r["image_width"])
    with torch.no_grad():
        logits = torch.cat([model(xf[i:i + 500]) for i in range(0, n, 500)])
    pred = logits.argmax(1)
    top2 = logits.topk(2, dim=1).values
    near = (top2[:, 0] - top2[:, 1]).abs() <= 1e-4
    theirs = torch.tensor([int(ln[2]) for ln in lines])
    if not torch.equal(torch.tensor([int(ln[1]) for ln in lines]), y.long()):
        fail("the labels of %s are not the data set's" % a.per_example)
    diff = (pred != theirs).nonzero().flatten().tolist()
    for i in diff:
        if not near[i]:
            fail("example %d: torch predicts %d, trainer eval %d (logits %s)" % (i, pred[i], theirs[i],
                                                                                 logits[i].tolist()))
        print("torch_models: example %d: a near-tie (%s), torch %d, trainer eval %d" % (i, top2[i].tolist(), pred[i],
                                                                                       theirs[i]))
    k = min(a.first, n)
    ct, ce = int((pred[:k] == y[:k].long()).sum()), int((theirs[:k] == y[:k].long()).sum())
    if ct != ce:
        fail("first %d examples: torch %d correct, trainer eval %d" % (k, ct, ce))
    print("torch_models: %s on %s: the predictions agree on %d of %d examples (%d near-ties), %d of the first %d "
          "correct in both (exact), accuracy %.4f over all" % (r["arch"], name, n - len(diff), n, len(diff), ct, k,
                                                               float((pred == y.long()).float().mean())))


# ------------------------------------------------------------------ loss: the GPT, within a tolerance
def loss(a):
    meta, t, order, model, r = load(a.file)
    vocab = bytes.fromhex(meta["vt.vocab"])
    raw = read_maybe_gz(os.path.join(a.data_dir, "tinyshakespeare", "input.txt"))
    if sorted(set(raw)) != list(vocab):
        fail("vt.vocab is not the sorted set of the text's bytes")
    ids = torch.tensor(list(raw.translate(bytes(vocab.index(c) if c in vocab else 0 for c in range(256)))))
    val = ids[len(raw) * 9 // 10:]  # the last 10% (docs/gpt.md)
    T = r["gpt_context"]
    K = a.windows
    if len(val) < K * T + 1:
        fail("the validation text is too short for %d windows" % K)
    x = torch.stack([val[w * T:(w + 1) * T] for w in range(K)])
    yt = torch.stack([val[w * T + 1:(w + 1) * T + 1] for w in range(K)])
    with torch.no_grad():
        p = torch.softmax(model(x), dim=-1)  # FP32
    q = p.gather(2, yt.unsqueeze(2)).double().clamp(min=2.0 ** -149)
    mean = float(-q.log().mean())
    d = abs(mean - a.loss)
    if not d <= a.tol:
        fail("GPT: torch's mean loss %.9f over %d windows, trainer eval's %.9f: |diff| %.3g > %.3g" % (mean, K, a.loss,
                                                                                                  d, a.tol))
    print("torch_models: gpt: mean loss over %d windows of %d characters: torch %.9f, trainer eval %.9f, |diff| "
          "%.3g <= %.3g" % (K, T, mean, a.loss, d, a.tol))


# ------------------------------------------------------------------ statedict: a PyTorch user's file
def statedict(a):
    """The module built from the docs (loaded from a --layout torch export) saves its own state_dict to
    a.out as safetensors.torch.save_file does: its tensors in sorted order, metadata {"format": "pt"}
    only (no vt.* key) - what `trainer train --init FILE --init-layout torch` must take."""
    _, _, _, model, _ = load(a.file)
    sd = model.state_dict()
    names = sorted(sd)
    hdr, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for k in names:
        t = sd[k].contiguous()
        raw = t.numpy().tobytes() if t.numel() else b""
        code = [c for c, (dt, _) in DTYPES.items() if dt == t.dtype][0]
        hdr[k] = {"dtype": code, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(a.out, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ------------------------------------------------------------------ same: two project-layout files hold the same tensors
def same(a):
    _, t0, _ = read_st(a.file)
    _, t1, _ = read_st(a.project)
    if sorted(t0) != sorted(t1):
        fail("tensor names differ: %s / %s" % (sorted(t0), sorted(t1)))
    for k in t0:
        if not torch.equal(bits(t0[k]), bits(t1[k])):
            fail("%s differs" % k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=("check", "eval", "loss", "statedict", "same"))
    ap.add_argument("--out")
    ap.add_argument("file")
    ap.add_argument("--project")
    ap.add_argument("--data-dir")
    ap.add_argument("--per-example")
    ap.add_argument("--first", type=int, default=500)
    ap.add_argument("--windows", type=int)
    ap.add_argument("--loss", type=float)
    ap.add_argument("--tol", type=float, default=1e-6)
    a = ap.parse_args()
    torch.set_num_threads(1)
    {"check": check, "eval": evaluate, "loss": loss, "statedict": statedict, "same": same}[a.cmd](a)


if __name__ == "__main__":
    main()
