#!/usr/bin/env python3
"""bab_cex_check.py - an outside check of `sat` answers of bench/bab_mnist_fc.sh (plain Python, no
NumPy): the network read from `trainer export --format safetensors` (fcK.weight [in, out], fcK.bias,
ReLU between), the counterexample from the VNN-COMP result file (`sat` then `((X_i v) ... (Y_j v))`),
the box and the label from the VNN-LIB property (`certify --write-vnnlib`'s mnist_fc form). Checks
that the point lies in the box and evaluates the network at it in FP64 (FP32 weights): prints the
margin y_label - max_{j != label} y_j, which a real counterexample makes <= 0 (the project's own
deployed network rounds to FP32 after each layer: a margin within 1e-4 of 0 is reported as a tie).

  bab_cex_check.py NET.safetensors PROP.vnnlib RESULT [PROP.vnnlib RESULT ...]

Exit 0 when every point is in its box and has margin <= 1e-4; 1 otherwise. Not a test."""
import os
import re
import sys


def read_st(path):  # tests/ref/read_safetensors.py's checked reader: {name: (shape, values)}
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref"))
    import read_safetensors
    _, tensors = read_safetensors.parse(open(path, "rb").read())
    assert all(t["dtype"] == "F32" for t in tensors)
    return {t["name"]: (t["shape"], t["values"]) for t in tensors}


def layers(t):
    out, k = [], 1
    while "fc%d.weight" % k in t:
        (i, o), w = t["fc%d.weight" % k]
        _, bias = t["fc%d.bias" % k]
        out.append((i, o, w, bias))
        k += 1
    return out


def forward(net, x):
    h = list(x)
    for n, (i, o, w, b) in enumerate(net):
        y = list(b)
        for r in range(i):
            hr = h[r]
            if hr == 0.0:
                continue
            row = w[r * o:(r + 1) * o]
            for c in range(o):
                y[c] += hr * row[c]
        h = y if n == len(net) - 1 else [v if v > 0 else 0.0 for v in y]
    return h


NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"


def prop(path):
    s = open(path).read()
    lo, hi = {}, {}
    for m in re.finditer(r"\(assert\s+\(<=\s+X_(\d+)\s+" + NUM + r"\)\)", s):
        hi[int(m.group(1))] = float(m.group(2))
    for m in re.finditer(r"\(assert\s+\(>=\s+X_(\d+)\s+" + NUM + r"\)\)", s):
        lo[int(m.group(1))] = float(m.group(2))
    labels = {int(m.group(2)) for m in re.finditer(r"\(>=\s+Y_(\d+)\s+Y_(\d+)\)", s)}
    assert len(labels) == 1, "one label expected"
    return lo, hi, labels.pop()


def cex(path):
    s = open(path).read()
    assert s.split()[0] == "sat", "not a sat result"
    x = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"\(\s*X_(\d+)\s+" + NUM + r"\s*\)", s)}
    return [x[i] for i in range(len(x))]


def main(argv):
    if len(argv) < 4 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    net = layers(read_st(argv[1]))
    bad = 0
    for p, r in zip(argv[2::2], argv[3::2]):
        lo, hi, label = prop(p)
        x = cex(r)
        out = [i for i, v in enumerate(x) if not (lo[i] <= v <= hi[i])]
        y = forward(net, x)
        margin = y[label] - max(v for j, v in enumerate(y) if j != label)
        ok = not out and margin <= 1e-4
        bad += not ok
        print("%s: label %d, point %s the box, FP64 margin %.6g: %s" % (
            p, label, "outside (%d inputs)" % len(out) if out else "inside", margin,
            "counterexample confirmed" if ok and margin <= 0 else "a tie within 1e-4" if ok else "NOT CONFIRMED"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
