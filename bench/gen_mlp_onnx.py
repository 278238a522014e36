#!/usr/bin/env python3
"""gen_mlp_onnx.py - writes a feed-forward ReLU MLP as an ONNX file, and VNN-LIB properties for it,
for `auditor certify --onnx` (tests/e2e/cert_shard.sh, bench/bench_cert_shard.sh). No training: the
weights are random FP32 values (Python's random.Random(seed), reproducible), each layer's magnitudes
in [2^-s, 2^(1-s)) with s = ceil(log2(sqrt(fan-in))) + 1, random signs; biases likewise, smaller.

The ONNX bytes are written here by a plain protobuf *encoder* (varints and length-delimited
fields of onnx.proto's ModelProto / GraphProto / NodeProto / TensorProto / ValueInfoProto; the
project's reader decodes them with protobuf-c): X [1, d] -> MatMul(W1 [d, n1]) -> Add(b1) -> Relu
-> ... -> MatMul(WL) -> Add(bL) = Y [1, nL].

usage: gen_mlp_onnx.py OUT.onnx WIDTHS [--seed S] [--props DIR --eps E --count K]
  WIDTHS: d-n1-...-nL (e.g. 784-65536-10). --props writes DIR/prop_<i>.vnnlib for i < K: the box of
  radius E (clipped to [0, 1]) around a random point, and i % 3 == 0: the robustness property of
  label i % nL (some other output >= it: sat or unknown), 1: a far threshold (some output >= 1e4:
  unsat), 2: a near one (output i % nL >= 0: whatever the bounds say)."""
import math
import random
import struct
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wt):
    return varint((field << 3) | wt)


def f_varint(field, v):
    return key(field, 0) + varint(v)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, 2) + varint(len(b)) + b


def rand_floats(rng, n, shift):
    """n FP32 values, |v| in [2^-shift, 2^(1-shift)), random sign and mantissa, little-endian bytes."""
    out = []
    for off in range(0, n, 1 << 22):  # in pieces (randbytes' limit, and the big integers' memory)
        m = min(n - off, 1 << 22)
        raw = int.from_bytes(rng.randbytes(4 * m), "little")
        # keep the sign bit and the 23 mantissa bits of each word; set the exponent to 127 - shift
        mask = int.from_bytes(struct.pack("<I", 0x807FFFFF) * m, "little")
        expo = int.from_bytes(struct.pack("<I", (127 - shift) << 23) * m, "little")
        out.append(((raw & mask) | expo).to_bytes(4 * m, "little"))
    return b"".join(out)


def tensor(name, dims, raw):
    b = b"".join(f_varint(1, d) for d in dims) + f_varint(2, 1) + f_bytes(8, name) + f_bytes(9, raw)
    return b


def value_info(name, dims):
    shape = b"".join(f_bytes(1, f_varint(1, d)) for d in dims)
    tt = f_varint(1, 1) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tt))


def node(op, ins, outs, name):
    return b"".join(f_bytes(1, i) for i in ins) + b"".join(f_bytes(2, o) for o in outs) + f_bytes(3, name) + f_bytes(4, op)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, widths = argv[1], [int(w) for w in argv[2].split("-")]
    seed, props, eps, count = 1, None, 0.01, 0
    a = argv[3:]
    while a:
        if a[0] == "--seed":
            seed = int(a[1])
        elif a[0] == "--props":
            props = a[1]
        elif a[0] == "--eps":
            eps = float(a[1])
        elif a[0] == "--count":
            count = int(a[1])
        else:
            sys.exit("gen_mlp_onnx.py: unknown option " + a[0])
        a = a[2:]
    rng = random.Random(seed)
    L = len(widths) - 1
    nodes, inits, prev = [], [], "X"
    for k in range(1, L + 1):
        n_in, n_out = widths[k - 1], widths[k]
        s = math.ceil(math.log2(math.sqrt(n_in))) + 1
        inits.append(tensor("W%d" % k, [n_in, n_out], rand_floats(rng, n_in * n_out, s)))
        inits.append(tensor("b%d" % k, [n_out], rand_floats(rng, n_out, s + 2)))
        z, y = "z%d" % k, ("Y" if k == L else "a%d" % k)
        nodes.append(node("MatMul", [prev, "W%d" % k], [z], "mm%d" % k))
        nodes.append(node("Add", [z, "b%d" % k], [y], "add%d" % k))
        if k < L:
            nodes.append(node("Relu", [y], ["h%d" % k], "relu%d" % k))
            prev = "h%d" % k
    graph = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "mlp")
    graph += b"".join(f_bytes(5, t) for t in inits)
    graph += f_bytes(11, value_info("X", [1, widths[0]])) + f_bytes(12, value_info("Y", [1, widths[-1]]))
    model = f_varint(1, 7) + f_bytes(2, "gen_mlp_onnx") + f_bytes(7, graph) + f_bytes(8, f_bytes(1, "") + f_varint(2, 13))
    with open(out, "wb") as f:
        f.write(model)
    d, no = widths[0], widths[-1]
    for i in range(count):
        x = [rng.random() for _ in range(d)]
        lab = i % no
        lines = ["; gen_mlp_onnx.py property %d (seed %d)" % (i, seed)]
        lines += ["(declare-const X_%d Real)" % j for j in range(d)]
        lines += ["(declare-const Y_%d Real)" % j for j in range(no)]
        for j in range(d):
            lines.append("(assert (>= X_%d %.17g))" % (j, max(0.0, x[j] - eps)))
            lines.append("(assert (<= X_%d %.17g))" % (j, min(1.0, x[j] + eps)))
        if i % 3 == 0:
            lines.append("(assert (or")
            lines += ["    (and (>= Y_%d Y_%d))" % (j, lab) for j in range(no) if j != lab]
            lines.append("))")
        elif i % 3 == 1:
            lines.append("(assert (or")
            lines += ["    (and (>= Y_%d 10000))" % j for j in range(no)]
            lines.append("))")
        else:
            lines.append("(assert (>= Y_%d 0))" % lab)
        with open("%s/prop_%d.vnnlib" % (props, i), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv)
