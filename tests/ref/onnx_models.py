#!/usr/bin/env python3
"""onnx_models.py - the zoo of the ONNX front-end's test (tests/e2e/onnx_import.sh, arch/vt_onnx_graph.c):
small models written here, exported by torch.onnx.export (torch 1.13) as forward graphs in training
mode without constant folding, the way a client exports their own model (docs/models.md "The client's
own model"). Writes, into OUT_DIR, for opsets 13 and 17:
  mlp_opN.onnx     784-128-10 MLP, Flatten first, input [B, 1, 28, 28]
  lenet_opN.onnx   LeNet-5 (Conv 6@5x5 pad 2, ReLU, MaxPool 2, Conv 16@5x5, ReLU, MaxPool 2, Flatten,
                   120, 84, 10), input [B, 1, 28, 28]
  vit_opN.onnx     ViT-tiny for 32x32x3: 4x4 patches (Conv stride 4), class token, learned positions,
                   2 pre-LN blocks (hand-written multi-head attention, GELU MLP), head of 10; input [B, 3, 32, 32]
  charlm_opN.onnx  causal character LM: embedding of 64 tokens, positions, 2 blocks whose causal mask
                   comes from torch.triu of ones (opset 17: Trilu; opset 13, which has no Trilu: from two
                   torch.arange compared), final LayerNorm, head; input int64 [B, 16]
  misc_opN.onnx    the other operators: Conv, BatchNormalization (training: running statistics as
                   outputs), LeakyRelu, AveragePool, Dropout, GlobalAveragePool, Flatten, Linear,
                   Tanh, Sigmoid, LogSoftmax; input [B, 3, 8, 8]
and unsupported_op13.onnx (a torch.cumsum: CumSum is not a supported operator).
The batch dimension is dynamic (dynamic_axes) in every file.
With --seeds, tiny versions instead (widths of a few units: the fuzzer's seeds, tests/corpus/onnx_graph):
ok-mlp-op13, ok-lm-op13, ok-lm-op17, ok-misc-op17, ok-conv-op13, bad-cumsum-op13, bad-truncated-lm; and graphs written
with onnx.helper: bad-cycle, bad-missing-input, bad-huge-constant, bad-opset-12, bad-short-raw-data,
bad-reshape-computed-shape.
Usage: onnx_models.py [--seeds] OUT_DIR"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d=784, h=128):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1 = nn.Linear(16 * 5 * 5, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = torch.flatten(x, 1)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))


class TinyConv(nn.Module):
    """The fuzzer's convolutional seed: Conv (pad 1), Relu, MaxPool 2, Conv without bias, Flatten, Gemm."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 2, 3, padding=1)
        self.c2 = nn.Conv2d(2, 2, 1, bias=False)
        self.f = nn.Linear(2 * 2 * 2, 3)

    def forward(self, x):
        return self.f(torch.flatten(self.c2(F.max_pool2d(F.relu(self.c1(x)), 2)), 1))


class Attention(nn.Module):
    """multi-head self-attention written out: the shapes come from x.shape (Shape/Gather in the graph)"""

    def __init__(self, d, heads, causal):
        super().__init__()
        self.h, self.causal, self.triu = heads, causal, True
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.reshape(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.reshape(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.reshape(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.h)
        if self.causal:
            if self.triu:  # Trilu, opset 14 on
                mask = torch.triu(torch.ones(T, T), diagonal=1).bool()
            else:  # opset 13 has no Trilu: the same mask from two ranges
                mask = torch.arange(T).unsqueeze(0) > torch.arange(T).unsqueeze(1)
            att = att.masked_fill(mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d, heads, causal):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.att = Attention(d, heads, causal)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.att(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    def __init__(self, d=32, heads=2):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 65, d) * 0.02)
        self.blocks = nn.Sequential(Block(d, heads, False), Block(d, heads, False))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.ln(self.blocks(x))
        return self.head(x[:, 0])


class CharLM(nn.Module):
    def __init__(self, vocab=64, T=16, d=32, heads=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(T, d)
        self.blocks = nn.Sequential(Block(d, heads, True), Block(d, heads, True))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def set_triu(self, on):
        for b in self.blocks:
            b.att.triu = on

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        return self.head(self.ln(self.blocks(x)))


class Misc(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(c, 5)

    def forward(self, x):
        x = F.avg_pool2d(F.leaky_relu(self.bn(self.conv(x)), 0.1), 2, count_include_pad=False)
        x = torch.flatten(F.adaptive_avg_pool2d(self.drop(x), 1), 1)
        y = self.fc(x)
        return F.log_softmax(torch.tanh(y) + torch.sigmoid(y), dim=1)


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.cumsum(x, dim=1))


def export(model, x, path, opset):
    model.train()
    torch.onnx.export(model, (x,), path, opset_version=opset, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})


def seeds(out):
    lm = CharLM(vocab=5, T=4, d=4, heads=1)
    zoo = [("ok-mlp-op13", 13, MLP(d=4, h=3), torch.randn(2, 1, 2, 2)),
           ("ok-lm-op13", 13, lm, torch.randint(0, 5, (2, 4))), ("ok-lm-op17", 17, lm, torch.randint(0, 5, (2, 4))),
           ("ok-misc-op17", 17, Misc(c=2), torch.randn(2, 3, 4, 4)),
           ("ok-conv-op13", 13, TinyConv(), torch.randn(2, 1, 4, 4)),
           ("bad-cumsum-op13", 13, Unsupported(), torch.randn(2, 8))]
    for name, opset, model, x in zoo:
        if isinstance(model, CharLM):
            model.set_triu(opset >= 14)
        export(model, x, os.path.join(out, name + ".onnx"), opset)
    with open(os.path.join(out, "ok-lm-op17.onnx"), "rb") as f:
        b = f.read()
    with open(os.path.join(out, "bad-truncated-lm.onnx"), "wb") as f:
        f.write(b[: len(b) * 2 // 3])
    import onnx
    from onnx import TensorProto as TP, helper as H

    def save(name, nodes, inits=(), opset=13, inputs=None):
        x = H.make_tensor_value_info("x", TP.FLOAT, ["batch", 4])
        y = H.make_tensor_value_info("y", TP.FLOAT, None)
        g = H.make_graph(nodes, name, inputs or [x], [y], initializer=list(inits))
        m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)], producer_name="seeds")
        onnx.save(m, os.path.join(out, name + ".onnx"))

    save("bad-cycle", [H.make_node("Relu", ["z"], ["y"], name="a"), H.make_node("Relu", ["y"], ["z"], name="b")])
    save("bad-missing-input", [H.make_node("Add", ["x", "nowhere"], ["y"], name="add")])
    save("bad-huge-constant", [H.make_node("ConstantOfShape", ["s"], ["c"], name="cos"),
                               H.make_node("Add", ["x", "c"], ["y"], name="add")],
         [H.make_tensor("s", TP.INT64, [2], [1 << 20, 1 << 20])])
    save("bad-opset-12", [H.make_node("Relu", ["x"], ["y"], name="r")], opset=12)
    bad = H.make_tensor("w", TP.FLOAT, [4, 4], [0.0] * 16)
    bad.raw_data = b"\0" * 60
    del bad.float_data[:]
    save("bad-short-raw-data", [H.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [bad])
    save("bad-reshape-computed-shape", [H.make_node("Cast", ["x"], ["s"], to=TP.INT64, name="cast"),
                                        H.make_node("Reshape", ["x", "s"], ["y"], name="reshape")])


def main():
    args = sys.argv[1:]
    tiny = args[:1] == ["--seeds"]
    if tiny:
        args = args[1:]
    if len(args) != 1:
        sys.exit("usage: onnx_models.py [--seeds] OUT_DIR")
    out = args[0]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    if tiny:
        seeds(out)
        return
    zoo = [("mlp", MLP(), torch.randn(2, 1, 28, 28)), ("lenet", LeNet(), torch.randn(2, 1, 28, 28)),
           ("vit", ViT(), torch.randn(2, 3, 32, 32)), ("charlm", CharLM(), torch.randint(0, 64, (2, 16))),
           ("misc", Misc(), torch.randn(2, 3, 8, 8))]
    for name, model, x in zoo:
        for opset in (13, 17):
            if name == "charlm":
                model.set_triu(opset >= 14)
            export(model, x, os.path.join(out, "%s_op%d.onnx" % (name, opset)), opset)
    export(Unsupported(), torch.randn(2, 8), os.path.join(out, "unsupported_op13.onnx"), 13)


if __name__ == "__main__":
    main()
