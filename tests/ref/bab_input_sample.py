#!/usr/bin/env python3
"""bab_input_sample.py - an outside check of an unsat answer on a bench/gen_mlp_onnx.py network (tests/
e2e/cert_bab_input.sh): the network rebuilt from the generator's seed (the same random.Random calls),
evaluated in FP64 at N random points of the property's box and at its corners; exits 1 when a point
reaches the property's unsafe region (it was answered unsat: no point may). Prints the smallest margin.
Not part of the product.

  bab_input_sample.py WIDTHS SEED PROP.vnnlib INDEX [N]"""
import os
import random
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import gen_mlp_onnx as g  # noqa: E402


def main(argv):
    widths = [int(w) for w in argv[1].split("-")]
    seed, path, index = int(argv[2]), argv[3], int(argv[4])
    n = int(argv[5]) if len(argv) > 5 else 3000
    rng = random.Random(seed)
    layers = []
    for k in range(1, len(widths)):
        n_in, n_out = widths[k - 1], widths[k]
        s = g.math.ceil(g.math.log2(g.math.sqrt(n_in))) + 1
        W = struct.unpack("<%df" % (n_in * n_out), g.rand_floats(rng, n_in * n_out, s))
        b = struct.unpack("<%df" % n_out, g.rand_floats(rng, n_out, s + 2))
        layers.append((n_in, n_out, W, b))
    text = open(path).read()
    lo = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"\(>= X_(\d+) ([-0-9.eE+]+)\)", text)}
    hi = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"\(<= X_(\d+) ([-0-9.eE+]+)\)", text)}
    d, no, lab = widths[0], widths[-1], index % widths[-1]

    def forward(x):
        h = x
        for k, (n_in, n_out, W, b) in enumerate(layers):
            a = [b[j] + sum(W[i * n_out + j] * h[i] for i in range(n_in)) for j in range(n_out)]
            h = a if k == len(layers) - 1 else [max(0.0, v) for v in a]
        return h

    def margin(y):  # > 0: outside the unsafe region
        if index % 3 == 0:
            return min(y[lab] - y[j] for j in range(no) if j != lab)
        if index % 3 == 1:
            return min(10000 - v for v in y)
        return -y[lab]

    pts = [[lo[i] if (c >> i) & 1 else hi[i] for i in range(d)] for c in range(1 << d)]
    r = random.Random(1)
    pts += [[lo[i] + r.random() * (hi[i] - lo[i]) for i in range(d)] for _ in range(n)]
    worst = min(margin(forward(x)) for x in pts)
    print("bab_input_sample: %d points, smallest margin %.6g" % (len(pts), worst))
    return 0 if worst > 0 else 1


sys.exit(main(sys.argv))
