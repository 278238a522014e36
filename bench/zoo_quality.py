#!/usr/bin/env python3
"""zoo_quality.py - the client's own models (issue 39 item 5): quality against PyTorch FP32 on the same recipe.
Driven by bench/zoo_quality.sh (docs/benchmarks.md, "The client's own models: quality against PyTorch FP32").

  zoo_quality.py export DIR NAME [LENET.safetensors]
      writes DIR/NAME.onnx: the model NAME written here in PyTorch from a fixed seed, exported by torch.onnx.export
      (training mode, no constant folding), and the data it needs (the regressor's .npy files). NAME ft (LeNet-5
      fine-tuned) takes the backbone from LENET.safetensors (the project's verified LeNet-5 run) and draws a new head.
  zoo_quality.py args NAME SCALE DIR
      the recipe of NAME (steps scaled by SCALE) as `trainer train` options, one a line, then the held-out data set
      for `trainer eval` (or "-": the regressor's, evaluated here from the export).
  zoo_quality.py torch NAME SCALE DIR OURS.safetensors [EVAL_FIGURE] [SECONDS]
      PyTorch FP32: the module NAME from DIR/NAME.onnx's initializers (the run's step-0 state), trained with the same
      optimiser, lr, batch, steps and data, in two batch orders of its own, evaluated on the same held-out data; the
      project's exported weights (OURS) loaded into the module (strict) and evaluated here the same way; one line of
      the table (EVAL_FIGURE: `trainer eval`'s figure, when the project has one) appended to DIR/table.md."""
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
import onnx_model_ref as ref  # noqa: E402  (the tests' Block, TBlock and safetensors reader)

torch.set_num_threads(1)  # on busy shared cores one thread is several times faster than two (measured)
DATA = os.path.join(ROOT, "data")
LM_T, LM_V, LM_TEXT = 64, 65, os.path.join(DATA, "tinyshakespeare", "input.txt.gz")


class LeNet5(ref.LeNet):
    """LeNet-5 on MNIST's 1 x 28 x 28: the tests' onnx_model_ref.LeNet (Conv 6@5x5 pad 2, ReLU, MaxPool 2, Conv 16@5x5,
    ReLU, MaxPool 2, Linear 120, 84) with a head to 10 classes"""

    def __init__(self):
        super().__init__()
        self.fc3 = nn.Linear(84, 10)


class ResNet(nn.Module):
    """the default residual CNN's shape on CIFAR-10's 3 x 32 x 32: stem (conv, batch norm, ReLU), a basic block of
    width 16, a strided block of width 32 with a projection shortcut (the tests' Block), global average pooling, Linear"""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)
        self.layer1, self.layer2 = ref.Block(16, 16, 1), ref.Block(16, 32, 2)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        h = self.layer2(self.layer1(torch.relu(self.bn(self.conv(x)))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1))


class ViT(nn.Module):
    """ViT-tiny on CIFAR-10's 3 x 32 x 32: 4 x 4 patches (a strided Conv, 64 of them) of width 48, a learned position
    embedding, two pre-LN blocks of 3 heads (the tests' TBlock: the first with the exact GELU, the second its tanh
    form), a final LayerNorm, the mean over the patches, Linear"""

    def __init__(self, dim=48, heads=3):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, stride=4)
        self.pos = nn.Parameter(0.02 * torch.randn(1, 64, dim))
        self.blocks = nn.Sequential(ref.TBlock(dim, heads, False, "none"), ref.TBlock(dim, heads, False, "tanh"))
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, 10)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.ln(self.blocks(h)).mean(dim=1))


class CharLM(nn.Module):
    """a character transformer LM (nanoGPT's shape, not the built-in GPT): token and position nn.Embedding, two blocks
    of causal attention (the tests' TBlock), a final LayerNorm, a head without bias to the 65 characters"""

    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(LM_V, dim), nn.Embedding(LM_T, dim)
        self.blocks = nn.Sequential(*[ref.TBlock(dim, heads, causal=True) for _ in range(2)])
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, LM_V, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        return self.head(self.ln(self.blocks(x)))


class Regressor(nn.Module):
    """an MLP regressor: 8 features, two hidden layers of 64 (ReLU), one output; trained with MSE"""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(8, 64), nn.Linear(64, 64), nn.Linear(64, 1)

    def forward(self, x):
        return self.out(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


MODELS = {"lenet": LeNet5, "resnet": ResNet, "vit": ViT, "lm": CharLM, "reg": Regressor, "ft": LeNet5}
FROZEN = ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
# the recipes: data (the project's spec), held-out data, batch, steps (before the scale), optimiser and its settings
RECIPES = {
    "lenet": dict(data="mnist-train", subset=10000, test="mnist-test", batch=32, steps=300,
                  opt=dict(optimizer="sgd", lr=0.05, momentum=0.9)),
    "resnet": dict(data="cifar10-train", subset=4000, test="cifar10-test", batch=32, steps=250,
                   opt=dict(optimizer="sgd", lr=0.05, momentum=0.9)),
    "vit": dict(data="cifar10-train", subset=4000, test="cifar10-test", batch=32, steps=250,
                opt=dict(optimizer="adam", lr=0.001, beta1=0.9, beta2=0.999, eps=1e-8)),
    "lm": dict(data="text:" + LM_TEXT, test="text-val:" + LM_TEXT, batch=16, steps=300, loss="next_token",
               opt=dict(optimizer="adamw", lr=0.003, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1, clip_norm=1.0)),
    "reg": dict(data="npy", test="-", batch=32, steps=400, loss="mse",
                opt=dict(optimizer="adam", lr=0.003, beta1=0.9, beta2=0.999, eps=1e-8)),
    "ft": dict(data="mnist-train", subset=10000, test="mnist-test", batch=32, steps=150, frozen=FROZEN,
               opt=dict(optimizer="sgd", lr=0.05, momentum=0.9)),
}
SEEDS = {"lenet": 1, "resnet": 2, "vit": 3, "lm": 4, "reg": 5, "ft": 6}


def steps(name, scale):
    return max(1, int(round(RECIPES[name]["steps"] * float(scale))))


def args(name, scale, d):
    r = RECIPES[name]
    data = "npy:%s/reg_x.npy,%s/reg_y.npy" % (d, d) if name == "reg" else r["data"]
    out = ["dataset=" + data, "batch=%d" % r["batch"], "steps=%d" % steps(name, scale), "schedule=constant",
           "seed=1", "checkpoint_every=1000000", "state_hash_every=1000000"]
    if "subset" in r:
        out.append("subset=%d" % r["subset"])
    if "loss" in r:
        out.append("loss=" + r["loss"])
    if "frozen" in r:
        out.append("frozen=" + json.dumps(r["frozen"]))
    out += ["%s=%s" % kv for kv in r["opt"].items()]
    for o in out:
        print("--set\n" + o)
    print(r["test"])


# ---- data, read here from the vendored files (data/README.md), the project's preprocessing (x / 255, no more) ----
def mnist(split, n):
    pre = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(DATA, "mnist", pre + "-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
    with gzip.open(os.path.join(DATA, "mnist", pre + "-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return torch.from_numpy(x.copy()).float() / 255, torch.from_numpy(y.astype(np.int64))


def cifar(split, n):
    f = {"train": "cifar10_train_4000.bin.gz", "test": "cifar10_test_1000.bin.gz"}[split]
    with gzip.open(os.path.join(DATA, "cifar10", f)) as fh:
        r = np.frombuffer(fh.read(), np.uint8).reshape(-1, 3073)[:n]
    return torch.from_numpy(r[:, 1:].reshape(-1, 3, 32, 32).copy()).float() / 255, torch.from_numpy(r[:, 0].astype(np.int64))


def text():
    """the text's tokens (ranks of its sorted distinct bytes), its first 90% for training, the rest held out"""
    with gzip.open(LM_TEXT) as f:
        b = np.frombuffer(f.read(), np.uint8)
    lut = np.zeros(256, np.int64)
    lut[np.unique(b)] = np.arange(len(np.unique(b)))
    t = torch.from_numpy(lut[b])
    n = len(t) * 9 // 10
    return t[:n], t[n:]


def reg_data(d):
    """a user's regression data (written by `export reg`): y = sin(x0) + x1 x2 + 0.5 x3^2 - 0.3 x4 + noise 0.1"""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5000, 8)).astype(np.float32)
    y = (np.sin(x[:, 0]) + x[:, 1] * x[:, 2] + 0.5 * x[:, 3] ** 2 - 0.3 * x[:, 4]
         + 0.1 * rng.standard_normal(5000)).astype(np.float32)[:, None]
    np.save(d + "/reg_x.npy", x[:4000])
    np.save(d + "/reg_y.npy", y[:4000])
    np.save(d + "/reg_xtest.npy", x[4000:])
    np.save(d + "/reg_ytest.npy", y[4000:])


def train_test(name, d):
    r = RECIPES[name]
    if name in ("lenet", "ft"):
        return mnist("train", r["subset"]), mnist("test", 10000)
    if name in ("resnet", "vit"):
        return cifar("train", r["subset"]), cifar("test", 1000)
    if name == "reg":
        ld = lambda f: torch.from_numpy(np.load("%s/%s.npy" % (d, f)))  # noqa: E731
        return (ld("reg_x"), ld("reg_y")), (ld("reg_xtest"), ld("reg_ytest"))
    tr, va = text()
    return (tr, None), (va, None)


# ---- export ----
def export(d, name, lenet=None):
    torch.manual_seed(SEEDS[name])
    m = MODELS[name]()
    if name == "ft":  # the backbone the project trained (its verified export), a new head from the seed
        head = m.fc3.state_dict()
        st = {k: torch.from_numpy(v.copy()) for k, v in ref.read_safetensors(lenet).items()}
        st.update({"fc3." + k: v for k, v in head.items()})
        m.load_state_dict(st, strict=True)
    if name == "reg":
        reg_data(d)
    dummy = {"lenet": torch.zeros(32, 1, 28, 28), "ft": torch.zeros(32, 1, 28, 28), "resnet": torch.zeros(32, 3, 32, 32),
             "vit": torch.zeros(32, 3, 32, 32), "lm": torch.zeros(16, LM_T, dtype=torch.long),
             "reg": torch.zeros(32, 8)}[name]
    torch.onnx.export(m, dummy, "%s/%s.onnx" % (d, name), opset_version=17 if name == "lm" else 13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["x"], output_names=["logits"], dynamic_axes={"x": {0: "N"}})


def from_onnx(d, name):
    """the module with DIR/NAME.onnx's initializers: the run's step-0 state (the export moved batch norm's running
    statistics once)"""
    import onnx
    from onnx import numpy_helper
    torch.manual_seed(SEEDS[name])
    m = MODELS[name]()
    st = m.state_dict()
    for t in onnx.load("%s/%s.onnx" % (d, name)).graph.initializer:
        if t.name in st:
            st[t.name].copy_(torch.from_numpy(numpy_helper.to_array(t).copy()))
    return m


# ---- PyTorch FP32 training and evaluation ----
def evaluate(m, name, test):
    """held-out figure: accuracy (classifiers), MSE (the regressor), validation loss in nats/char (the LM, the
    windows `trainer eval` scores: consecutive, non-overlapping windows of T, each scored on the next characters)"""
    m.eval()
    x, y = test
    with torch.no_grad():
        if name == "lm":
            w = (len(x) - 1) // LM_T
            inp = x[:w * LM_T].reshape(w, LM_T)
            tgt = x[1:w * LM_T + 1].reshape(w, LM_T)
            tot = 0.0
            for i in range(0, w, 256):
                z = m(inp[i:i + 256])
                tot += nn.functional.cross_entropy(z.reshape(-1, LM_V), tgt[i:i + 256].reshape(-1),
                                                   reduction="sum").double().item()
            return tot / (w * LM_T)
        z = torch.cat([m(x[i:i + 500]) for i in range(0, len(x), 500)])
        if name == "reg":
            return nn.functional.mse_loss(z, y).item()
        return (z.argmax(1) == y).float().mean().item()


def train_torch(m, name, scale, d, order=1):
    r = RECIPES[name]
    o = r["opt"]
    (x, y), test = train_test(name, d)
    for k, p in m.named_parameters():
        p.requires_grad_(k not in r.get("frozen", []))
    ps = [p for p in m.parameters() if p.requires_grad]
    if o["optimizer"] == "sgd":
        opt = torch.optim.SGD(ps, lr=o["lr"], momentum=o["momentum"])
    elif o["optimizer"] == "adam":
        opt = torch.optim.Adam(ps, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    else:
        opt = torch.optim.AdamW(ps, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                                weight_decay=o["weight_decay"])
    g = torch.Generator().manual_seed(order)  # the batch order
    B, n, perm = r["batch"], len(x), None
    spe = n // B
    m.train()
    t0 = time.time()
    for s in range(steps(name, scale)):
        if name == "lm":  # windows drawn afresh each step, as the project's (other draws)
            st = torch.randint(0, n - LM_T, (B,), generator=g)
            idx = st[:, None] + torch.arange(LM_T + 1)
            xb, yb = x[idx[:, :-1]], x[idx[:, 1:]]
        else:  # epochs of a permutation, the last n mod B of each unused, as the project's (another permutation)
            if s % spe == 0:
                perm = torch.randperm(n, generator=g)
            b = perm[(s % spe) * B:(s % spe + 1) * B]
            xb, yb = x[b], y[b]
        z = m(xb)
        if name == "lm":
            loss = nn.functional.cross_entropy(z.reshape(-1, LM_V), yb.reshape(-1))
        elif name == "reg":
            loss = nn.functional.mse_loss(z, yb)
        else:
            loss = nn.functional.cross_entropy(z, yb)
        opt.zero_grad()
        loss.backward()
        if o.get("clip_norm"):
            torch.nn.utils.clip_grad_norm_(ps, o["clip_norm"])
        opt.step()
    return evaluate(m, name, test), time.time() - t0, test


def torch_run(name, scale, d, ours, eval_figure=None, seconds=None):
    """PyTorch FP32 in two batch orders (their spread: what the order alone moves the figure), and the project's
    verified weights evaluated here"""
    figs = []
    for order in (1, 2):
        fig, _, test = train_torch(from_onnx(d, name), name, scale, d, order)
        figs.append(fig)
    m = MODELS[name]()
    m.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in ref.read_safetensors(ours).items()}, strict=True)
    here = evaluate(m, name, test)  # the project's verified weights, evaluated here in FP32
    proj = float(eval_figure) if eval_figure not in (None, "", "-") else here
    what = {"reg": "MSE", "lm": "nats/char"}.get(name, "accuracy")
    r = RECIPES[name]
    if name in ("reg", "lm"):
        fmt, dif = (lambda v: "%.4f" % v), "%+.4f" % (proj - np.mean(figs))
    else:
        fmt, dif = (lambda v: "%.2f%%" % (100 * v)), "%+.2f pt" % (100 * (proj - np.mean(figs)))
    row = "| %s | %s | %d | %s | %s | %s | %s | %s | %s |" % (
        {"lenet": "LeNet-5, MNIST", "resnet": "residual CNN, CIFAR-10", "vit": "ViT-tiny, CIFAR-10",
         "lm": "char transformer LM, tiny-shakespeare", "reg": "MLP regressor (MSE), user's .npy",
         "ft": "LeNet-5 fine-tuned (all but fc3 frozen), MNIST"}[name],
        "%s lr %g" % (r["opt"]["optimizer"], r["opt"]["lr"]), steps(name, scale), what,
        fmt(proj) if eval_figure not in (None, "", "-") else "- (float targets)", fmt(here),
        " / ".join(fmt(f) for f in figs), dif, seconds or "-")
    print(row)
    with open(d + "/table.md", "a") as f:
        f.write(row + "\n")
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "export":
        export(a[1], a[2], *a[3:4])
    elif a[0] == "args":
        args(a[1], a[2], a[3])
    elif a[0] == "torch":
        sys.exit(torch_run(a[1], a[2], a[3], a[4], *a[5:7]))
    else:
        sys.exit("usage: zoo_quality.py export|args|torch ...")
