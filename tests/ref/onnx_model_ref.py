#!/usr/bin/env python3
"""onnx_model_ref.py - the client's own model from outside the project (tests/e2e/onnx_model.sh).

  onnx_model_ref.py make DIR
      writes, from models written here in PyTorch (torch 1.13) and exported by torch.onnx.export
      (training mode, no constant folding, opset 13): DIR/mlp.onnx (Flatten, Linear, ReLU, a residual
      Add, Linear), DIR/matmul.onnx (x @ W + b with nn.Parameter weights: MatMul and Add), DIR/bad.onnx
      (a Softplus: not supported), DIR/reg.onnx (an MLP of 3 outputs for regression and multi-label),
      DIR/act.onnx (Linear, Tanh, Linear, LeakyRelu 0.2, Linear, Sigmoid added back to its input, Linear),
      DIR/lenet.onnx (LeNet-5 on 28 x 28: Conv, Relu, MaxPool, Flatten, Gemm), DIR/gapnet.onnx (convolutions
      with and without bias, stride 2, a residual Add, GlobalAveragePool, Gemm), DIR/reshconv.onnx (Gemm,
      Relu, a Reshape to [N, 2, 6, 6], Conv, Relu, MaxPool, Flatten, Gemm), DIR/badconv.onnx (a dilated
      convolution: not supported), and the data DIR/x.npy (float32 [32, 1, 12, 12]), DIR/x28.npy (float32
      [32, 1, 28, 28]: LeNet's), DIR/logsm.onnx (an MLP ending in log_softmax), DIR/y.npy (uint8 labels 0..4), DIR/yreg.npy (float32 targets [32, 3]),
      DIR/ybin.npy (float32 0/1 targets [32, 3]), DIR/bncnn.onnx (Conv, BatchNorm2d, ReLU, MaxPool, Linear,
      BatchNorm1d of eps 1e-3 and momentum 0.2, ReLU, Linear), DIR/resnet.onnx (the residual CNN's shape: a
      stem of conv, batch norm and ReLU; a basic block; a strided block with a projection shortcut; global
      average pooling; Linear), DIR/vit.onnx (3 x 16 x 16 images, DIR/x3.npy: 4 x 4 patches by a strided Conv,
      two pre-LN blocks of nanoGPT-style multi-head attention and a tanh-GELU MLP, LayerNorm, the mean over the
      patches, Linear; opset 13, so the layer norms are decomposed), DIR/causal.onnx (one block of causal
      attention, masked_fill of the future with -inf; opset 17: LayerNormalization).
  onnx_model_ref.py check DIR NAME EXPORT.safetensors STEPS LR MOMENTUM [LOSS [FROZEN]]
      the model NAME rebuilt from the same seed in float64, trained STEPS full-batch steps of SGD (lr,
      momentum; torch.optim.SGD; or, MOMENTUM "adamw,BETA1,BETA2,EPS,WEIGHT_DECAY,CLIP", torch.optim.AdamW
      decaying every parameter, the gradients' global norm clipped to CLIP by clip_grad_norm_ unless 0; LOSS cross_entropy (the default: labels y), mse or l1 (targets yreg),
      bce_with_logits (targets ybin), each the mean over the batch; FROZEN: a comma-separated list of
      parameters with requires_grad False) on DIR's data, its parameters
      compared with the project's after STEPS steps (EXPORT, `trainer export`: the names are the
      module's own: it must load into the module with load_state_dict(strict=True)): the largest
      difference must be below 2e-5 relative to the parameter's scale
      (each operation rounds to float32: the differences are float32 rounding accumulated over a few
      operations and steps), and the same comparison with the initial parameters must fail (the
      check can fail).
  onnx_model_ref.py roundtrip DIR NAME EXPORT.safetensors EXPORT.onnx [EVAL.txt]
      what comes out is what went in: the module NAME loads EXPORT.safetensors (`trainer export
      --format safetensors`) with load_state_dict(strict=True); EXPORT.onnx (`trainer export --format
      onnx`) passes onnx.checker (full check), holds the same weights under the same names (a matrix the module
      multiplies from the right may be stored transposed, for a Gemm with transB; a convolution's weight is the
      module's [Co, C, k, k]; the other float initializers must be scalars: a decomposition's constants), and a
      NumPy evaluation of its graph (Gemm, MatMul of any rank, Add, Sub, Mul, Div, Sqrt, Relu, Sigmoid, Tanh,
      LeakyRelu, Softmax over its axis, Flatten, Reshape, Transpose, Gather, Where of a bool condition, ReduceSum
      and ReduceMean with axes, Identity, Conv of group 1 and dilation 1, MaxPool without padding,
      GlobalAveragePool, BatchNormalization in inference form; the module evaluated in eval mode: any other operator or attribute fails the check), fed DIR's data in the graph's input
      shape ([N, d] or [N, C, H, W]; the language models lm and lmtied: 4 windows of token ids, int64
      [4, T]), gives the module's logits (within float32 rounding) and the same predicted classes (at
      every position); with EVAL.txt (`trainer eval --per-example`), trainer eval's predicted class for
      every example."""
import json
import struct
import sys

import numpy as np
import torch
import torch.nn as nn

N, C, H, W, K = 32, 1, 12, 12, 5


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(C * H * W, 24)
        self.fc2 = nn.Linear(24, 24)
        self.head = nn.Linear(24, K)

    def forward(self, x):
        h = torch.relu(self.fc1(torch.flatten(x, 1)))
        h = torch.relu(self.fc2(h)) + h
        return self.head(h)


class MatMulNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(C * H * W, 16) * 0.1)
        self.b1 = nn.Parameter(torch.zeros(16))
        self.w2 = nn.Parameter(torch.randn(16, K) * 0.1)
        self.b2 = nn.Parameter(torch.zeros(K))

    def forward(self, x):
        return torch.relu(x.reshape(x.shape[0], -1) @ self.w1 + self.b1) @ self.w2 + self.b2


class Bad(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(C * H * W, K)

    def forward(self, x):
        return nn.functional.softplus(self.fc(torch.flatten(x, 1)))


class Act(nn.Module):
    """the activations of client models: Tanh, LeakyRelu (alpha 0.2) and a Sigmoid inside the network (its
    output added back: a residual), the logits for the cross-entropy"""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(C * H * W, 20)
        self.fc2 = nn.Linear(20, 20)
        self.gate = nn.Linear(20, 20)
        self.head = nn.Linear(20, K)

    def forward(self, x):
        h = torch.tanh(self.fc1(torch.flatten(x, 1)))
        h = nn.functional.leaky_relu(self.fc2(h), 0.2)
        h = torch.sigmoid(self.gate(h)) + h
        return self.head(h)


class Reg(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(C * H * W, 16)
        self.out = nn.Linear(16, 3)

    def forward(self, x):
        return self.out(torch.relu(self.fc1(torch.flatten(x, 1))))


class LeNet(nn.Module):
    """LeNet-5 on 28 x 28 images: Conv2d 6@5x5 pad 2, ReLU, MaxPool2d(2), Conv2d 16@5x5, ReLU,
    MaxPool2d(2), Flatten, Linear 120, ReLU, Linear 84, ReLU, Linear (K classes)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, K)

    def forward(self, x):
        h = self.pool(torch.relu(self.conv1(x)))
        h = self.pool(torch.relu(self.conv2(h)))
        h = torch.relu(self.fc1(torch.flatten(h, 1)))
        return self.fc3(torch.relu(self.fc2(h)))


class GapNet(nn.Module):
    """A small convolutional net on 12 x 12 images: a 3x3 convolution without bias, a strided one,
    a residual Add of two convolutions' outputs, global average pooling, Linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(C, 4, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(4, 8, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(8, 8, 3, padding=1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, K)

    def forward(self, x):
        h = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        h = torch.relu(self.conv3(h)) + h
        return self.head(torch.flatten(self.gap(h), 1))


class BnCnn(nn.Module):
    """batch normalisation in training mode: Conv, BatchNorm2d, ReLU, MaxPool, Flatten, Linear, BatchNorm1d,
    ReLU, Linear"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(C, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.fc1 = nn.Linear(4 * 6 * 6, 16)
        self.bn1 = nn.BatchNorm1d(16, eps=1e-3, momentum=0.2)
        self.fc2 = nn.Linear(16, K)

    def forward(self, x):
        h = torch.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc2(torch.relu(self.bn1(self.fc1(torch.flatten(h, 1)))))


class Block(nn.Module):
    """the residual CNN's basic block: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))"""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + self.shortcut(x))


class ResNet(nn.Module):
    """the default residual CNN's shape, written as a PyTorch user would: a stem (conv, bn, relu), a block
    of width 8, a strided block of width 16 with a projection shortcut, global average pooling, Linear"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(C, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.layer1 = Block(8, 8, 1)
        self.layer2 = Block(8, 16, 2)
        self.fc = nn.Linear(16, K)

    def forward(self, x):
        h = self.layer2(self.layer1(torch.relu(self.bn(self.conv(x)))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1))


class ReshConv(nn.Module):
    """A Linear's output reshaped to an image and convolved (a channels-first activation the convolution
    reads channels-last: a to_channels_last layer), ReLU, MaxPool, Flatten, Linear."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(C * H * W, 2 * 6 * 6)
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(4 * 3 * 3, K)

    def forward(self, x):
        h = torch.relu(self.fc(torch.flatten(x, 1))).reshape(-1, 2, 6, 6)
        return self.head(torch.flatten(self.pool(torch.relu(self.conv(h))), 1))


class Attention(nn.Module):
    """multi-head self-attention as nanoGPT writes it: one Linear for q|k|v split three ways, heads by view and
    transpose, scores scaled by 1/sqrt(D), masked_fill of the future with -inf when causal, softmax, the heads
    merged back, a projection"""

    def __init__(self, dim, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, Cd = x.shape
        q, k, v = self.qkv(x).split(Cd, dim=2)
        q, k, v = (t.view(B, T, self.heads, Cd // self.heads).transpose(1, 2) for t in (q, k, v))
        a = (q @ k.transpose(-2, -1)) * (1.0 / (Cd // self.heads) ** 0.5)
        if self.causal:
            a = a.masked_fill(torch.ones(T, T).tril() == 0, float("-inf"))
        y = (a.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, Cd)
        return self.proj(y)


class TBlock(nn.Module):
    """a pre-LN transformer block: x + attn(ln1(x)), then x + fc2(gelu(fc1(ln2(x))))"""

    def __init__(self, dim, heads, causal=False, approximate="tanh"):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, causal)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.act = nn.GELU(approximate=approximate)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    """ViT-tiny's shape on 3 x 16 x 16 images: 4 x 4 patches (a strided Conv) of width 16 plus a learned position
    embedding, two pre-LN blocks of 2 heads (the first with PyTorch's exact GELU, the second its tanh form), a final
    LayerNorm, the mean over the patches, a Linear classifier"""

    def __init__(self, causal=False, blocks=2):
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.pos = nn.Parameter(0.02 * torch.randn(1, 16, 16))
        self.blocks = nn.Sequential(*[TBlock(16, 2, causal, "none" if b == 0 else "tanh") for b in range(blocks)])
        self.ln = nn.LayerNorm(16)
        self.head = nn.Linear(16, K)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.ln(self.blocks(h)).mean(dim=1))


class Causal(ViT):
    """one block of causal attention (masked_fill with -inf) over the patches, at opset 17 (LayerNormalization)"""

    def __init__(self):
        super().__init__(causal=True, blocks=1)


TEXT = "abcdefghijjihgfedcba"  # DIR/t20.txt: 20 bytes, so its training split (the first 18) holds one window of 17
LM_T, LM_V = 17, 12  # the language model's context and vocabulary (the text's 10 distinct bytes fit)


class CharLM(nn.Module):
    """a character language model written as nanoGPT's: token and position embeddings (nn.Embedding of the input
    and of torch.arange(T)), a block of causal attention, a final LayerNorm, a Linear head without bias to the
    vocabulary's logits at every position; trained with next-token cross-entropy"""

    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(LM_V, 16), nn.Embedding(LM_T, 16)
        self.block = TBlock(16, 2, causal=True)
        self.ln = nn.LayerNorm(16)
        self.head = nn.Linear(16, LM_V, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        return self.head(self.ln(self.block(x)))


class CharLMTied(CharLM):
    """the language model with nanoGPT's weight tying: the head's weight is the token embedding (one initializer in
    the ONNX file, read by the embedding's Gather and the head's MatMul: its gradient the sum of both)"""

    def __init__(self):
        super().__init__()
        self.head.weight = self.wte.weight


class Drop(nn.Module):
    """an MLP with dropout (nn.Dropout(0.25)) between its layers: the project's masks, not PyTorch's"""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(C * H * W, 32), nn.Linear(32, K)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(torch.flatten(x, 1)))))


class BadConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(C, 4, 3, dilation=2)
        self.fc = nn.Linear(4 * 8 * 8, K)

    def forward(self, x):
        return self.fc(torch.flatten(self.conv(x), 1))


class LogSm(nn.Module):
    """PyTorch's MNIST example's ending: log_softmax of the logits (trained with nll_loss)"""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(C * H * W, 16)
        self.fc2 = nn.Linear(16, K)

    def forward(self, x):
        return nn.functional.log_softmax(self.fc2(torch.relu(self.fc1(torch.flatten(x, 1)))), dim=1)


MODELS = {"mlp": Mlp, "matmul": MatMulNet, "bad": Bad, "reg": Reg, "act": Act, "lenet": LeNet, "gapnet": GapNet,
          "reshconv": ReshConv, "badconv": BadConv, "logsm": LogSm, "bncnn": BnCnn, "resnet": ResNet,
          "vit": ViT, "causal": Causal, "lm": CharLM,
          "lmtied": CharLMTied, "drop": Drop}
IMAGE = {"lenet": (1, 28), "vit": (3, 16), "causal": (3, 16)}  # the models on other images (their data DIR/x28.npy,
# DIR/x3.npy): channels and side; the others 1 x 12 x 12
OPSET = {"causal": 17, "lm": 14, "lmtied": 14}  # lm: torch.tril is Trilu from opset 14  # LayerNormalization as one node; the others opset 13 (its decomposition)


def build(name):
    torch.manual_seed({"mlp": 1, "matmul": 2, "bad": 3, "reg": 4, "act": 5, "lenet": 6, "gapnet": 7, "badconv": 8,
                       "logsm": 9, "reshconv": 10, "bncnn": 11, "resnet": 12, "vit": 13,
                       "causal": 14, "lm": 15, "lmtied": 16, "drop": 17}[name])
    return MODELS[name]()


def data(name=None):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    y = rng.integers(0, K, N).astype(np.uint8)
    yreg = rng.standard_normal((N, 3)).astype(np.float32)
    ybin = (rng.random((N, 3)) < 0.4).astype(np.float32)
    if name in IMAGE:
        c, s = IMAGE[name]
        x = np.random.default_rng(8 if c == 1 else 9).standard_normal((N, c, s, s)).astype(np.float32)
    return x, y, yreg, ybin


def make(d):
    x, y, yreg, ybin = data()
    np.save(d + "/x.npy", x)
    np.save(d + "/y.npy", y)
    np.save(d + "/yreg.npy", yreg)
    np.save(d + "/ybin.npy", ybin)
    np.save(d + "/x28.npy", data("lenet")[0])
    np.save(d + "/x3.npy", data("vit")[0])
    open(d + "/t20.txt", "w").write(TEXT)
    for name in MODELS:
        m = build(name)
        c, s = IMAGE.get(name, (C, H))
        dummy = torch.zeros(N, LM_T, dtype=torch.long) if name.startswith("lm") else torch.zeros(N, c, s, s)
        torch.onnx.export(m, dummy, "%s/%s.onnx" % (d, name), opset_version=OPSET.get(name, 13),
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x"], output_names=["logits"], dynamic_axes={"x": {0: "N"}})


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        dt = {"F32": np.float32, "I64": np.int64}[v["dtype"]]  # I64: batch norm's num_batches_tracked
        out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt).reshape(v["shape"])
    return out


def check(d, name, export, steps, lr, momentum, lossname="cross_entropy", frozen=""):
    x, y, yreg, ybin = data(name)
    m = build(name).double()
    # the file's initializers are the step-0 state: torch.onnx.export ran the module once in training
    # mode, which moved batch norm's running statistics
    from onnx import numpy_helper
    import onnx
    st = m.state_dict()
    for t in onnx.load("%s/%s.onnx" % (d, name)).graph.initializer:
        if t.name in st:
            st[t.name].copy_(torch.from_numpy(numpy_helper.to_array(t).astype(np.float64)))
    init = {k: v.detach().clone() for k, v in m.state_dict().items()}
    for k, p in m.named_parameters():
        p.requires_grad_(k not in frozen.split(","))
    params = [p for p in m.parameters() if p.requires_grad]
    clip = 0.0
    if isinstance(momentum, str):  # "adamw,BETA1,BETA2,EPS,WEIGHT_DECAY,CLIP": torch.optim.AdamW (every parameter decays),
        b1, b2, eps, wd, clip = (float(v) for v in momentum.split(",")[1:])  # the global norm clipped to CLIP (0: not)
        opt = torch.optim.AdamW(params, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=momentum)
    xt = torch.from_numpy(x.astype(np.float64))
    if lossname == "next_token":  # the text's one training window: its tokens (ranks of its distinct bytes), and each
        ids = {ch: i for i, ch in enumerate(sorted(set(TEXT)))}  # next token as the target (every batch row alike)
        tok = torch.tensor([[ids[ch] for ch in TEXT[:LM_T + 1]]])
        xt, y = tok[:, :LM_T], tok[0, 1:].numpy()
    yt = {"next_token": torch.from_numpy(y.astype(np.int64)), "cross_entropy": torch.from_numpy(y.astype(np.int64)), "mse": torch.from_numpy(yreg.astype(np.float64)),
          "l1": torch.from_numpy(yreg.astype(np.float64)), "bce_with_logits": torch.from_numpy(ybin.astype(np.float64))}[lossname]
    lossf = {"next_token": lambda z, t: nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]), t),
             "cross_entropy": nn.functional.cross_entropy, "mse": nn.functional.mse_loss, "l1": nn.functional.l1_loss,
             "bce_with_logits": nn.functional.binary_cross_entropy_with_logits}[lossname]
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = lossf(m(xt), yt)
        losses.append(loss.item())
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
    ours = read_safetensors(export)
    if name == "lmtied":  # a tied weight is one tensor of the file, under its first name: the head shares it
        ours["head.weight"] = ours["wte.weight"]
    # the export is the module's own state_dict: names and shapes (load_state_dict strict)
    try:
        build(name).double().load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in ours.items()},
                                             strict=True)
    except RuntimeError as e:
        print("onnx_model_ref: FAIL: %s does not load into the module (strict): %s" % (export, e))
        return 1
    worst, worst_init = 0.0, 0.0
    for k, v in m.state_dict().items():
        if k not in ours:
            print("onnx_model_ref: FAIL: %s is not in %s (it has %s)" % (k, export, sorted(ours)))
            return 1
        ref = v.numpy()
        if not np.issubdtype(ref.dtype, np.floating):  # num_batches_tracked: the steps taken
            if not np.array_equal(ours[k], ref):
                print("onnx_model_ref: FAIL: %s is %s, PyTorch's %s" % (k, ours[k], ref))
                return 1
            continue
        scale = max(np.abs(ref).max(), 1e-3)
        worst = max(worst, np.abs(ours[k].astype(np.float64) - ref).max() / scale)
        moved = np.abs(ours[k].astype(np.float64) - init[k].numpy()).max() / scale
        if k in frozen.split(",") and moved != 0:
            print("onnx_model_ref: FAIL: the frozen parameter %s changed" % k)
            return 1
        worst_init = max(worst_init, moved)
    print("onnx_model_ref: %s after %d steps: largest difference from PyTorch FP64 %.3g of the parameter's scale "
          "(from the initial parameters: %.3g); PyTorch FP64 losses %s" % (name, steps, worst, worst_init,
                                                                            " ".join("%.6f" % l for l in losses)))
    if worst > 2e-5:
        print("onnx_model_ref: FAIL: the project's parameters differ from PyTorch FP64's")
        return 1
    if worst_init <= 2e-5:
        print("onnx_model_ref: FAIL: the training did not move the parameters (the check would pass anything)")
        return 1
    return 0


def _fail(msg):
    raise SystemExit("onnx_model_ref: FAIL: " + msg)


def _windows(x, k, s):
    """the k[0] x k[1] windows of images x [N, C, H, W] at strides s: (ky, kx, x[:, :, ky::s, kx::s]) each"""
    ho, wo = (x.shape[2] - k[0]) // s[0] + 1, (x.shape[3] - k[1]) // s[1] + 1
    for ky in range(k[0]):
        for kx in range(k[1]):
            yield ky, kx, x[:, :, ky:ky + s[0] * (ho - 1) + 1:s[0], kx:kx + s[1] * (wo - 1) + 1:s[1]]


def _conv(i, a):
    """ONNX Conv of group 1 and dilation 1 (the export's): x [N, C, H, W], w [Co, C, k, k], an optional b [Co]"""
    x, w = i[0], i[1]
    if a.get("group", 1) != 1 or list(a.get("dilations", [1, 1])) != [1, 1] or a.get("auto_pad", b"NOTSET") != b"NOTSET":
        _fail("a Conv with attributes %s, which this check does not know" % a)
    p, s = list(a.get("pads", [0, 0, 0, 0])), list(a.get("strides", [1, 1]))
    if list(a.get("kernel_shape", w.shape[2:])) != list(w.shape[2:]):
        _fail("a Conv whose kernel_shape is not its weight's")
    x = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    r = 0
    for ky, kx, v in _windows(x, w.shape[2:], s):
        r = r + np.einsum("nchw,oc->nohw", v, w[:, :, ky, kx])
    return r + (i[2][None, :, None, None] if len(i) > 2 else 0)


def _maxpool(x, a):
    """ONNX MaxPool without padding, floor (the export's)"""
    if any(a.get("pads", [0])) or a.get("ceil_mode", 0) or a.get("auto_pad", b"NOTSET") != b"NOTSET" or \
            any(d != 1 for d in a.get("dilations", [1])) or a.get("storage_order", 0):
        _fail("a MaxPool with attributes %s, which this check does not know" % a)
    k = list(a["kernel_shape"])
    r = -np.inf
    for _, _, v in _windows(x, k, list(a.get("strides", [1, 1]))):
        r = np.maximum(r, v)
    return r


def _reshape(x, shape):
    """ONNX Reshape (allowzero 0): 0 copies the input's dimension, -1 is inferred"""
    shape = [x.shape[k] if d == 0 else int(d) for k, d in enumerate(shape.astype(np.int64))]
    return x.reshape(shape)


def run_onnx(path, x):
    """the graph of the ONNX file evaluated in NumPy (FP64, each node's output rounded to FP32) on x, reshaped to
    the graph's input shape (its symbolic first dimension the batch)"""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    env = {}
    for t in m.graph.initializer:
        v = numpy_helper.to_array(t)
        env[t.name] = v.astype(np.float64) if v.dtype.kind == "f" else v
    gi = m.graph.input[0]
    env[gi.name] = x.reshape([x.shape[0]] + [d.dim_value for d in gi.type.tensor_type.shape.dim[1:]]).astype(np.float64)
    for n in m.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in n.attribute}
        i = [env[v] for v in n.input if v]
        if n.op_type == "Gemm":
            w = i[1].T if a.get("transB", 0) else i[1]
            r = i[0] @ w + (i[2] if len(i) > 2 else 0)
        elif n.op_type == "MatMul":
            r = i[0] @ i[1]
        elif n.op_type == "Add":
            r = i[0] + i[1]
        elif n.op_type == "Sub":
            r = i[0] - i[1]
        elif n.op_type == "Mul":
            r = i[0] * i[1]
        elif n.op_type == "Div":
            r = i[0] / i[1]
        elif n.op_type == "Sqrt":
            r = np.sqrt(i[0])
        elif n.op_type == "ReduceSum":  # opset 13: the axes an input
            if len(i) < 2 or a.get("noop_with_empty_axes", 0):
                _fail("a ReduceSum without axes, which this check does not know")
            r = i[0].sum(axis=tuple(int(k) for k in i[1]), keepdims=bool(a.get("keepdims", 1)))
        elif n.op_type == "ReduceMean":  # opset 13: the axes an attribute
            if "axes" not in a:
                _fail("a ReduceMean without axes, which this check does not know")
            r = i[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1)))
        elif n.op_type == "Transpose":
            if "perm" not in a:
                _fail("a Transpose without perm")
            r = i[0].transpose(a["perm"])
        elif n.op_type == "Gather":
            r = np.take(i[0], i[1].astype(np.int64), axis=a.get("axis", 0))
        elif n.op_type == "Where":
            if i[0].dtype != np.bool_:
                _fail("a Where whose condition is not bool")
            r = np.where(i[0], i[1], i[2])
        elif n.op_type == "Relu":
            r = np.maximum(i[0], 0)
        elif n.op_type == "Sigmoid":
            r = 1 / (1 + np.exp(-i[0]))
        elif n.op_type == "Erf":
            import math
            r = np.vectorize(math.erf)(i[0])
        elif n.op_type == "Tanh":
            r = np.tanh(i[0])
        elif n.op_type == "LeakyRelu":
            r = np.where(i[0] >= 0, i[0], a.get("alpha", 0.01) * i[0])
        elif n.op_type == "Softmax":  # opset 13: over one axis, -1 by default
            ax = a.get("axis", -1)
            e = np.exp(i[0] - i[0].max(axis=ax, keepdims=True))
            r = e / e.sum(axis=ax, keepdims=True)
        elif n.op_type == "Flatten":
            ax = a.get("axis", 1)
            r = i[0].reshape(int(np.prod(i[0].shape[:ax])), -1)
        elif n.op_type == "Reshape":
            r = _reshape(i[0], i[1])
        elif n.op_type == "Identity":
            r = i[0]
        elif n.op_type == "Conv":
            r = _conv(i, a)
        elif n.op_type == "MaxPool":
            r = _maxpool(i[0], a)
        elif n.op_type == "GlobalAveragePool":
            r = i[0].mean(axis=(2, 3), keepdims=True)
        elif n.op_type == "BatchNormalization":  # inference form: the running statistics
            if len(n.output) != 1 or a.get("training_mode", 0):
                _fail("BatchNormalization %s is not in inference form" % n.name)
            sh = (1, -1) + (1,) * (i[0].ndim - 2)
            r = (i[1].reshape(sh) * (i[0] - i[3].reshape(sh)) / np.sqrt(i[4].reshape(sh) + a.get("epsilon", 1e-5))
                 + i[2].reshape(sh))
        else:
            _fail("the export holds operator %s, which this check does not know" % n.op_type)
        env[n.output[0]] = r.astype(np.float32).astype(np.float64)
    return env, m


def roundtrip(d, name, st, onnx_path, per_example=None):
    lm = name in ("lm", "lmtied")  # a language model: windows of token ids in (int64), a row of logits per position out
    x = np.random.default_rng(3).integers(0, LM_V, (4, LM_T)).astype(np.int64) if lm else data(name)[0]
    m = build(name)
    ours = read_safetensors(st)
    full = dict(ours)
    if name == "lmtied":  # the tied weight is one tensor of the file, under its first name
        full["head.weight"] = full["wte.weight"]
    m.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in full.items()}, strict=True)
    m.eval()  # inference: batch norm on its running statistics, as the export and trainer eval
    with torch.no_grad():
        ref = m(torch.from_numpy(x)).numpy().astype(np.float64)
    env, om = run_onnx(onnx_path, x)
    if lm:
        ref, env["logits"] = ref.reshape(-1, LM_V), env["logits"].reshape(-1, LM_V)
    from onnx import numpy_helper
    for t in om.graph.initializer:
        v = numpy_helper.to_array(t)  # a weight the module multiplies from the right may be stored transposed (Gemm transB)
        if v.dtype.kind != "f":  # a shape (Reshape's), an index (Gather's) or the causal mask, not a weight
            continue
        if t.name not in ours:  # a scalar of a decomposition (layer norm's eps, GELU's constants, the scale)
            if v.ndim != 0:
                print("onnx_model_ref: FAIL: the ONNX initializer %s %s is no weight of the module" % (t.name, v.shape))
                return 1
            continue
        if not np.array_equal(v, ours[t.name]) and not (v.ndim == 2 and np.array_equal(v.T, ours[t.name])):
            print("onnx_model_ref: FAIL: the ONNX initializer %s is not the exported weight" % t.name)
            return 1
    got = env["logits"]
    diff = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-6)
    same = int((got.argmax(axis=1) == ref.argmax(axis=1)).sum())
    msg = "onnx_model_ref: %s: strict load ok; ONNX logits within %.3g of the module's, %d of %d predictions equal" % (
        name, diff, same, len(ref))
    agree = None
    if per_example:  # `trainer eval --per-example`: index, label, predicted class a line each
        ev = np.loadtxt(per_example, dtype=np.int64, comments="#").reshape(-1, 3)
        pred = env["probs"].argmax(axis=1)  # the first index of the largest probability, as trainer eval's
        agree = int((pred[ev[:, 0]] == ev[:, 2]).sum()) if len(ev) == len(ref) else -1
        msg += "; trainer eval's class for %d of %d" % (agree, len(ev))
    print(msg)
    if diff > 1e-5 or same != len(ref):
        print("onnx_model_ref: FAIL: the ONNX graph does not compute the module")
        return 1
    if agree is not None and agree != len(ref):
        print("onnx_model_ref: FAIL: the ONNX graph's predictions are not trainer eval's")
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "roundtrip":
        sys.exit(roundtrip(*sys.argv[2:7]))
    if sys.argv[1] == "make":
        make(sys.argv[2])
        sys.exit(0)
    mom = sys.argv[7] if sys.argv[7].startswith("adamw,") else float(sys.argv[7])
    sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]), mom, *sys.argv[8:10]))
