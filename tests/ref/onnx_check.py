#!/usr/bin/env python3
"""onnx_check.py - checks a `trainer export --format onnx` model from outside the project.

  onnx_check.py MODEL.onnx --data-dir DIR --dataset NAME --per-example FILE --accuracy A
                (NAME: a built-in data set, or safetensors:FILE, a user's file under DIR)
                --commitment RUN/commitment.vtc --state-hash HEX --arch mlp|resnet
  onnx_check.py MODEL.onnx --data-dir DIR --dataset shakespeare-val --per-example FILE --loss L
                --commitment RUN/commitment.vtc --state-hash HEX --arch gpt

1. onnx.checker.check_model (full check: strict shape inference) accepts the model; opset, IR
   version, producer and the metadata (the run's commitment hash = SHA-256 of commitment.vtc, the
   state hash that `trainer export` printed, the recipe) are what docs/format.md says.
2. A small NumPy evaluator of the operators the export emits (and only those: any other operator,
   or an attribute it does not implement, fails the check) runs the graph on the data set that
   `trainer eval` used, read here from the data files themselves, with the input convention of the
   model's metadata (value = (float)((double)v / x_max); images channels-first).
3. Its predicted classes (first index of the largest probability, trainer eval's rule) are compared
   with trainer eval's, example by example (--per-example FILE), twice: evaluating every node in
   FP64 from FP32 values and rounding its result to FP32 (as the project does), and in plain FP32.
   A disagreement is allowed only on a tie within float rounding (the two classes' probabilities
   within 1e-6 relative in the evaluator); the accuracies must then be equal to trainer eval's
   printed 4 decimals, or the difference must be those ties (each is printed).

For the GPT (--arch gpt) the data are the text's consecutive windows of T = gpt_context tokens
that `trainer eval` scores (the text read here from data/tinyshakespeare, its vocabulary, the sorted
bytes of the whole text, checked against the metadata's vt.vocab); the predicted next token of every
position is compared (--per-example: index w*T + k, next token, predicted token), ties excepted as
above, and the mean loss -log p(next token) with trainer eval's printed FP64 mean (--loss) to 1e-6
relative. The control feeds each window reversed in time: its mean loss must differ visibly.

Only onnx (Debian python3-onnx 1.12, which has no onnx.reference) and numpy are needed."""
import argparse
import gzip
import hashlib
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def fail(msg):
    print("onnx_check: FAIL: " + msg)
    sys.exit(1)


def read_maybe_gz(path):
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    with gzip.open(path + ".gz", "rb") as f:
        return f.read()


def load_dataset(root, name):
    """(raw uint8 features [n, d], labels [n], x_max) of a built-in data set, from its files."""
    if name in ("mnist-test", "mnist-train"):
        pre = "t10k" if name == "mnist-test" else "train"
        img = read_maybe_gz(os.path.join(root, "mnist", pre + "-images-idx3-ubyte"))
        lab = read_maybe_gz(os.path.join(root, "mnist", pre + "-labels-idx1-ubyte"))
        n, r, c = (int.from_bytes(img[4 * k:4 * k + 4], "big") for k in (1, 2, 3))
        x = np.frombuffer(img, np.uint8, n * r * c, 16).reshape(n, r * c)
        y = np.frombuffer(lab, np.uint8, n, 8)
        return x, y, 255
    if name in ("cifar10-test", "cifar10-train"):
        f = "cifar10_test_1000.bin" if name == "cifar10-test" else "cifar10_train_4000.bin"
        b = np.frombuffer(read_maybe_gz(os.path.join(root, "cifar10", f)), np.uint8).reshape(-1, 3073)
        return b[:, 1:], b[:, 0], 255  # R, G, B planes of 32 x 32, row-major
    if name == "digits":
        rows = [list(map(int, ln.split(","))) for ln in read_maybe_gz(os.path.join(root, "digits", "digits.csv"))
                .decode().split("\n") if ln.strip()]
        a = np.array(rows, dtype=np.uint8)
        return a[:, :64], a[:, 64], 16
    if name.startswith("safetensors:"):  # a user's file (docs/data.md): x F32 or U8 [N, ...], y [N]
        with open(os.path.join(root, name.split(":", 1)[1]), "rb") as f:
            b = f.read()
        n = int.from_bytes(b[:8], "little")
        hdr = json.loads(b[8:8 + n])
        dt = {"F32": np.float32, "U8": np.uint8, "I32": np.int32, "I64": np.int64}

        def tensor(k):
            t = hdr[k]
            lo, hi = t["data_offsets"]
            return np.frombuffer(b[8 + n + lo:8 + n + hi], dt[t["dtype"]]).reshape(t["shape"])
        x, y = tensor("x"), tensor("y")
        x = x.reshape(x.shape[0], -1)
        return x, y, (255 if x.dtype == np.uint8 else None)  # F32 features: used as they are
    fail("no reader here for data set " + name)


def load_text(root, name):
    """(token ids of the split, the vocabulary as bytes) of tiny-shakespeare, as data/vt_data.c cuts
    it: the first floor(0.9 len) bytes train, the rest validation; ids index the sorted bytes of the
    whole text."""
    if name not in ("shakespeare-val", "shakespeare-train"):
        fail("no reader here for text data set " + name)
    buf = read_maybe_gz(os.path.join(root, "tinyshakespeare", "input.txt"))
    n = len(buf)
    cut = n // 10 * 9 + n % 10 * 9 // 10
    vocab = bytes(sorted(set(buf)))
    ids = np.zeros(256, np.int64)
    ids[np.frombuffer(vocab, np.uint8)] = np.arange(len(vocab))
    part = buf[cut:] if name == "shakespeare-val" else buf[:cut]
    return ids[np.frombuffer(part, np.uint8)], vocab


# ------------------------------------------------------------------ the evaluator
class Evaluator:
    """Runs a graph node by node. fp64: each node computes in float64 from float32 values and its
    result is rounded to float32; otherwise every node computes in float32."""

    def __init__(self, model, fp64):
        self.g = model.graph
        self.fp64 = fp64
        # float tensors as float32; int64 (shapes, axes, indices) and bool (masks) as they are
        self.init = {}
        for t in self.g.initializer:
            a = numpy_helper.to_array(t)
            self.init[t.name] = a.astype(np.float32) if a.dtype.kind == "f" else a

    def run(self, x):
        v = dict(self.init)
        v[self.g.input[0].name] = x if x.dtype == np.int64 else x.astype(np.float32)
        for n in self.g.node:
            ins = [v[i] for i in n.input]
            if self.fp64:
                ins = [a.astype(np.float64) if a.dtype == np.float32 else a for a in ins]
            att = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            fn = getattr(self, "op_" + n.op_type, None)
            if fn is None:
                fail("the evaluator has no operator %s (the export emits only those docs/format.md lists)" % n.op_type)
            out = fn(ins, att)
            if len(n.output) != 1:
                fail("node %s has %d outputs" % (n.name, len(n.output)))
            out = np.asarray(out)
            v[n.output[0]] = out.astype(np.float32) if out.dtype.kind == "f" else out
        return [v[o.name] for o in self.g.output]

    @staticmethod
    def only(att, allowed, name):
        extra = set(att) - set(allowed)
        if extra:
            fail("%s with attributes %s the evaluator does not implement" % (name, sorted(extra)))

    def op_Gemm(self, i, att):
        self.only(att, {"alpha", "beta", "transA", "transB"}, "Gemm")
        a = i[0].T if att.get("transA", 0) else i[0]
        b = i[1].T if att.get("transB", 0) else i[1]
        y = att.get("alpha", 1.0) * (a @ b)
        return y + att.get("beta", 1.0) * i[2] if len(i) > 2 else y

    def op_MatMul(self, i, att):
        self.only(att, set(), "MatMul")
        return i[0] @ i[1]

    def op_Add(self, i, att):
        self.only(att, set(), "Add")
        return i[0] + i[1]

    def op_Sub(self, i, att):
        self.only(att, set(), "Sub")
        return i[0] - i[1]

    def op_Mul(self, i, att):
        self.only(att, set(), "Mul")
        return i[0] * i[1]

    def op_Div(self, i, att):
        self.only(att, set(), "Div")
        return i[0] / i[1]

    def op_Sqrt(self, i, att):
        self.only(att, set(), "Sqrt")
        return np.sqrt(i[0])

    def op_Tanh(self, i, att):
        self.only(att, set(), "Tanh")
        return np.tanh(i[0])

    def op_ReduceSum(self, i, att):  # opset 13: the axes an input
        self.only(att, {"keepdims"}, "ReduceSum")
        if len(i) != 2 or i[1].dtype != np.int64:
            fail("ReduceSum without its int64 axes input")
        return i[0].sum(axis=tuple(int(a) for a in i[1]), keepdims=bool(att.get("keepdims", 1)))

    def op_Gather(self, i, att):
        self.only(att, {"axis"}, "Gather")
        if i[1].dtype != np.int64:
            fail("Gather with indices of type %s" % i[1].dtype)
        ax = att.get("axis", 0)
        if np.any(i[1] < 0) or np.any(i[1] >= i[0].shape[ax]):
            fail("Gather index out of range")
        return np.take(i[0], i[1], axis=ax)

    def op_Reshape(self, i, att):
        self.only(att, set(), "Reshape")
        if i[1].dtype != np.int64 or np.any(i[1] == 0):
            fail("Reshape with a shape the evaluator does not implement (0 entries)")
        return i[0].reshape([int(d) for d in i[1]])

    def op_Transpose(self, i, att):
        self.only(att, {"perm"}, "Transpose")
        return i[0].transpose(list(att["perm"]))

    def op_Where(self, i, att):
        self.only(att, set(), "Where")
        if i[0].dtype != np.bool_:
            fail("Where with a condition of type %s" % i[0].dtype)
        return np.where(i[0], i[1], i[2])

    def op_Relu(self, i, att):
        self.only(att, set(), "Relu")
        return np.maximum(i[0], 0)

    def op_Conv(self, i, att):
        self.only(att, {"kernel_shape", "strides", "pads", "dilations", "group"}, "Conv")
        x, w = i[0], i[1]
        if att.get("group", 1) != 1 or list(att.get("dilations", [1, 1])) != [1, 1]:
            fail("Conv with groups or dilations")
        M, C, kh, kw = w.shape
        if list(att.get("kernel_shape", [kh, kw])) != [kh, kw]:
            fail("Conv kernel_shape does not match its weight")
        sh, sw = att.get("strides", [1, 1])
        pt, pl, pb, pr = att.get("pads", [0, 0, 0, 0])
        N, _, H, W = x.shape
        xp = np.zeros((N, C, H + pt + pb, W + pl + pr), dtype=x.dtype)
        xp[:, :, pt:pt + H, pl:pl + W] = x
        Ho = (H + pt + pb - kh) // sh + 1
        Wo = (W + pl + pr - kw) // sw + 1
        y = np.zeros((N, Ho, Wo, M), dtype=x.dtype)
        for ky in range(kh):
            for kx in range(kw):
                xs = xp[:, :, ky:ky + sh * (Ho - 1) + 1:sh, kx:kx + sw * (Wo - 1) + 1:sw]  # [N, C, Ho, Wo]
                y += np.tensordot(xs, w[:, :, ky, kx], axes=([1], [1]))  # [N, Ho, Wo, M]
        y = y.transpose(0, 3, 1, 2)
        return y + i[2].reshape(1, -1, 1, 1) if len(i) > 2 else y

    def op_BatchNormalization(self, i, att):
        self.only(att, {"epsilon", "momentum"}, "BatchNormalization")
        x, s, b, mean, var = i
        shp = (1, -1) + (1,) * (x.ndim - 2)
        eps = np.float32(att.get("epsilon", 1e-5)).astype(x.dtype)
        return s.reshape(shp) * ((x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps)) + b.reshape(shp)

    def op_MaxPool(self, i, att):
        self.only(att, {"kernel_shape", "strides"}, "MaxPool")
        kh, kw = att["kernel_shape"]
        if list(att.get("strides", [1, 1])) != [kh, kw]:
            fail("MaxPool with strides other than its window")
        x = i[0]
        N, C, H, W = x.shape
        Ho, Wo = H // kh, W // kw
        return x[:, :, :Ho * kh, :Wo * kw].reshape(N, C, Ho, kh, Wo, kw).max(axis=(3, 5))

    def op_GlobalAveragePool(self, i, att):
        self.only(att, set(), "GlobalAveragePool")
        return i[0].mean(axis=(2, 3), keepdims=True)

    def op_Flatten(self, i, att):
        self.only(att, {"axis"}, "Flatten")
        ax = att.get("axis", 1)
        return i[0].reshape(int(np.prod(i[0].shape[:ax])), -1)

    def op_Softmax(self, i, att):
        self.only(att, {"axis"}, "Softmax")
        ax = att.get("axis", -1)
        z = i[0] - i[0].max(axis=ax, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=ax, keepdims=True)


def compare(probs, ref, fp64, what):
    """The predictions of probs (the first maximum of each row, trainer eval's rule) against ref:
    (predictions, indices that differ, the ties within rounding printed); a difference that is no
    tie (the two probabilities more than 1e-6 relative apart) fails."""
    pred = probs.argmax(axis=1)
    diff = np.nonzero(pred != ref)[0]
    ties = []
    for k in diff:
        pa, pb = probs[k, pred[k]], probs[k, ref[k]]
        if abs(pa - pb) > 1e-6 * max(pa, pb):
            fail("%s evaluator: %s %d predicted %d, trainer eval %d: probabilities %.9g and %.9g are no tie"
                 % ("FP64" if fp64 else "FP32", what, k, pred[k], ref[k], pa, pb))
        ties.append("%s %d (%d vs %d, p %.9g / %.9g)" % (what, k, pred[k], ref[k], pa, pb))
    return pred, diff, ties


def check_gpt(m, meta, recipe, a, ops):
    """The GPT: next-token predictions per position and the mean loss on the text's windows."""
    T, V = int(recipe["gpt_context"]), int(recipe["gpt_vocab"])
    x, vocab = load_text(a.data_dir, a.dataset)
    if meta.get("vt.vocab") != vocab.hex():
        fail("metadata vt.vocab %r is not the text's vocabulary %r" % (meta.get("vt.vocab"), vocab.hex()))
    if "int64 token ids [N, %d]" % T not in meta["vt.input"] or "[N*T, %d]" % V not in meta["vt.outputs"]:
        fail("metadata vt.input / vt.outputs: %s / %s" % (meta["vt.input"], meta["vt.outputs"]))
    it = m.graph.input[0].type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in it.shape.dim]
    if it.elem_type != onnx.TensorProto.INT64 or dims != ["N", T]:
        fail("input of type %d, shape %s: expected int64 [N, %d]" % (it.elem_type, dims, T))
    nw = (len(x) - 1) // T
    win = x[:nw * T].reshape(nw, T)
    nxt = x[1:nw * T + 1]
    with open(a.per_example) as f:
        rows = [ln.split() for ln in f if not ln.startswith("#")]
    ref = np.array([int(r[2]) for r in rows])
    if len(rows) != nw * T or any(int(r[0]) != k or int(r[1]) != nxt[k] for k, r in enumerate(rows)):
        fail("trainer eval's positions (%d) are not the text's %d windows of %d in order" % (len(rows), nw, T))
    loss_ref = float(a.loss)

    def evaluate(ev, w):
        return np.concatenate([ev.run(w[k:k + 500])[1] for k in range(0, len(w), 500)])

    def mean_loss(probs):
        q = probs[np.arange(len(nxt)), nxt].astype(np.float64)
        return float(np.mean(-np.log(np.maximum(q, 2.0 ** -149))))

    report = []
    for fp64 in (True, False):
        probs = evaluate(Evaluator(m, fp64), win)
        if probs.shape != (nw * T, V) or np.any(np.abs(probs.sum(axis=1) - 1) > 1e-5):
            fail("probabilities of shape %s, or rows that do not sum to one" % (probs.shape,))
        pred, diff, ties = compare(probs, ref, fp64, "position")
        loss = mean_loss(probs)
        if abs(loss - loss_ref) > 1e-6 * loss_ref:
            fail("%s evaluator: mean loss %.17g, trainer eval %.17g" % ("FP64" if fp64 else "FP32", loss, loss_ref))
        report.append("%s evaluator: %d/%d predictions agree, %d correct, mean loss %.9f (trainer eval %.9f, "
                      "difference %.3g)%s" % (
                          "FP64->FP32" if fp64 else "FP32", len(ref) - len(diff), len(ref), int(np.sum(pred == nxt)),
                          loss, loss_ref, loss - loss_ref, (" (ties within rounding: " + "; ".join(ties) + ")")
                          if ties else ""))
    # the control: each window read backwards in time must score visibly otherwise (its loss at least
    # 100 times the tolerance away; a briefly trained model may still predict the same frequent
    # characters, so its predictions alone cannot tell)
    pw = evaluate(Evaluator(m, False), np.ascontiguousarray(win[:, ::-1]))
    agree_w, loss_w = int(np.sum(pw.argmax(axis=1) == ref)), mean_loss(pw)
    if abs(loss_w - loss_ref) < 1e-4 * loss_ref:
        fail("control: with the windows reversed the mean loss is %.9f, trainer eval's %.9f: the comparison cannot "
             "tell the input's order" % (loss_w, loss_ref))
    report.append("control (the windows reversed): %d/%d agree, mean loss %.6f" % (agree_w, len(ref), loss_w))
    print("onnx_check: gpt on %s (%d windows of %d, %d positions), %d nodes, operators %s; %s"
          % (a.dataset, nw, T, len(ref), len(m.graph.node), ",".join(ops), "; ".join(report)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--per-example", required=True)
    ap.add_argument("--accuracy", help="trainer eval's printed accuracy (mlp, resnet)")
    ap.add_argument("--loss", help="trainer eval's FP64 mean loss (gpt)")
    ap.add_argument("--commitment", required=True)
    ap.add_argument("--state-hash", required=True)
    ap.add_argument("--arch", required=True, choices=["mlp", "resnet", "gpt"])
    a = ap.parse_args()
    if (a.arch == "gpt") != (a.loss is not None) or (a.arch == "gpt") == (a.accuracy is not None):
        fail("--loss goes with --arch gpt, --accuracy with the others")

    m = onnx.load(a.model)
    onnx.checker.check_model(m, full_check=True)
    if m.ir_version != 7 or [(o.domain, o.version) for o in m.opset_import] != [("", 13)]:
        fail("IR %d, opsets %s: expected IR 7, opset 13" % (m.ir_version, m.opset_import))
    if m.producer_name != "verifiable-training trainer" or not m.producer_version:
        fail("producer %r %r" % (m.producer_name, m.producer_version))
    meta = {p.key: p.value for p in m.metadata_props}
    with open(a.commitment, "rb") as f:
        ch = hashlib.sha256(f.read()).hexdigest()
    want = {"vt.format": "vt-onnx-1", "vt.commitment_hash": ch, "vt.state_hash": a.state_hash}
    for k, v in want.items():
        if meta.get(k) != v:
            fail("metadata %s = %r, expected %r" % (k, meta.get(k), v))
    for k in ("vt.step", "vt.merkle_root", "vt.manifest_hash", "vt.public_key", "vt.input", "vt.outputs",
              "vt.manifest"):
        if not meta.get(k):
            fail("metadata %s missing" % k)
    recipe = json.loads(meta["vt.recipe"])
    if recipe.get("arch") != a.arch or json.loads(meta["vt.manifest"])["recipe"] != recipe:
        fail("metadata vt.recipe: arch %r, or not the manifest's recipe" % recipe.get("arch"))
    if hashlib.sha256(meta["vt.manifest"].encode()).hexdigest() != meta["vt.manifest_hash"]:
        fail("metadata vt.manifest does not hash to vt.manifest_hash")
    outs = [o.name for o in m.graph.output]
    if outs != ["logits", "probs"] or [i.name for i in m.graph.input] != ["input"]:
        fail("graph inputs %s, outputs %s" % ([i.name for i in m.graph.input], outs))
    ops = sorted({n.op_type for n in m.graph.node})
    if a.arch == "gpt":
        check_gpt(m, meta, recipe, a, ops)
        return

    raw, labels, xmax = load_dataset(a.data_dir, a.dataset)
    if xmax is None:
        if "float32 features as they are" not in meta["vt.input"]:
            fail("metadata vt.input does not say that float32 features are used as they are: %s" % meta["vt.input"])
        x = raw.astype(np.float32)
    else:
        if ("/ %d)" % xmax) not in meta["vt.input"]:
            fail("metadata vt.input does not state the scaling by %d: %s" % (xmax, meta["vt.input"]))
        x = (raw.astype(np.float64) / xmax).astype(np.float32)
    dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in
            m.graph.input[0].type.tensor_type.shape.dim]
    if dims[0] != "N" or int(np.prod(dims[1:])) != x.shape[1]:
        fail("input shape %s for %d features" % (dims, x.shape[1]))
    x = x.reshape([x.shape[0]] + dims[1:])  # images: channels-first, as the data set stores them

    with open(a.per_example) as f:
        rows = [ln.split() for ln in f if not ln.startswith("#")]
    ref = np.array([int(r[2]) for r in rows])
    if len(ref) != len(labels) or any(int(r[1]) != int(labels[k]) for k, r in enumerate(rows)):
        fail("trainer eval's examples (%d) are not the data set's (%d) in order" % (len(ref), len(labels)))

    acc_ref = float(a.accuracy)
    if abs(acc_ref - round(np.mean(ref == labels), 4)) > 1e-9:
        fail("trainer eval's per-example predictions give accuracy %.4f, it printed %.4f"
             % (np.mean(ref == labels), acc_ref))
    report = []
    for fp64 in (True, False):
        ev = Evaluator(m, fp64)
        logits, probs = [], []
        for k in range(0, len(x), 250):
            lo, pr = ev.run(x[k:k + 250])
            logits.append(lo)
            probs.append(pr)
        logits, probs = np.concatenate(logits), np.concatenate(probs)
        pred, diff, ties = compare(probs, ref, fp64, "example")
        acc = float(np.mean(pred == labels))
        if ("%.4f" % acc) != ("%.4f" % acc_ref) and not ties:
            fail("accuracy %.4f, trainer eval %.4f" % (acc, acc_ref))
        if np.any(np.abs(probs.sum(axis=1) - 1) > 1e-5) or not np.all(np.isfinite(logits)):
            fail("probabilities that do not sum to one, or non-finite logits")
        report.append("%s evaluator: %d/%d predictions agree, accuracy %.4f%s" % (
            "FP64->FP32" if fp64 else "FP32", len(ref) - len(diff), len(ref), acc,
            (" (ties within rounding: " + "; ".join(ties) + ")") if ties else ""))
    # a control: the same comparison under a wrong input convention (the layout errors an exporter
    # or a user could make: CIFAR read channels-last, an MNIST image transposed) must disagree
    # visibly, or the agreement above would prove nothing
    if a.arch == "resnet":
        n, c, h, w = x.shape
        xw = x.reshape(n, h, w, c).transpose(0, 3, 1, 2)
        what = "the image read channels-last"
    else:
        side = int(round(np.sqrt(x.shape[1])))
        xw = x.reshape(-1, side, side).transpose(0, 2, 1).reshape(x.shape[0], -1)
        what = "the image transposed"
    pw = np.concatenate([Evaluator(m, False).run(xw[k:k + 250])[1] for k in range(0, len(xw), 250)]).argmax(axis=1)
    agree_w = int(np.sum(pw == ref))
    if agree_w > 0.95 * len(ref):
        fail("control: with %s, %d of %d predictions still agree: the comparison cannot tell layouts apart"
             % (what, agree_w, len(ref)))
    report.append("control (%s): %d/%d agree" % (what, agree_w, len(ref)))
    print("onnx_check: %s on %s (%d examples), operators %s; trainer eval accuracy %.4f; %s"
          % (a.arch, a.dataset, len(ref), ",".join(ops), acc_ref, "; ".join(report)))


if __name__ == "__main__":
    main()
