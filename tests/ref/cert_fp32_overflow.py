#!/usr/bin/env python3
"""cert_fp32_overflow.py DIR - writes the ONNX networks and VNN-LIB properties of tests/e2e/cert_fp32_overflow.sh:
each NAME.onnx with NAME.vnnlib, the answer expected in NAME.want. Every network is one whose
real-arithmetic outputs stay far inside FP32's range while an FP32 evaluation of it (the left-to-right
sum onnxruntime's plain loops compute, or the normalisation, or batch norm's (x - m) / sqrt(v + eps)
before its gamma) passes FLT_MAX and gives an infinity that reaches the property's unsafe region: the
answer must not be unsat (the bounds hold for the real network and for every FP32 evaluation,
docs/certify.md "What is claimed"). Each has a twin scaled down by 10 that stays in range and is
unsat (the check does not simply give up). The bytes come from bench/gen_mlp_onnx.py's encoder."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from gen_mlp_onnx import f_bytes, f_varint, key, node, tensor, value_info  # noqa: E402


def f32(vals):
    return b"".join(struct.pack("<f", v) for v in vals)


def attr_f(name, v):  # AttributeProto: name (1), f (2, fixed32), type (20) FLOAT = 1
    return f_bytes(1, name) + key(2, 5) + struct.pack("<f", v) + f_varint(20, 1)


def node_a(op, ins, outs, name, attrs):
    return node(op, ins, outs, name) + b"".join(f_bytes(5, a) for a in attrs)


def model(path, nodes, inits, xdims, ydims):
    graph = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "g")
    graph += b"".join(f_bytes(5, t) for t in inits)
    graph += f_bytes(11, value_info("X", xdims)) + f_bytes(12, value_info("Y", ydims))
    m = f_varint(1, 7) + f_bytes(2, "cert_fp32_overflow") + f_bytes(7, graph) + f_bytes(8, f_bytes(1, "") + f_varint(2, 13))
    with open(path, "wb") as f:
        f.write(m)


def prop(path, box, ny, atom):
    lines = ["(declare-const X_%d Real)" % i for i in range(len(box))]
    lines += ["(declare-const Y_%d Real)" % j for j in range(ny)]
    for i, (lo, hi) in enumerate(box):
        lines += ["(assert (>= X_%d %s))" % (i, lo), "(assert (<= X_%d %s))" % (i, hi)]
    lines.append("(assert %s)" % atom)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(d):
    for s, sfx, want in ((1.0, "", "unknown"), (0.1, "_ok", "unsat")):
        # an MLP: z = 2e38 x0 + 2e38 x1 - 3e38 x2 at x = (1, 1, 1) (real 1e38; FP32 left to right: inf), y0 = -relu(z)
        n = "mlp_sum" + sfx
        model(os.path.join(d, n + ".onnx"),
              [node("MatMul", ["X", "W1"], ["h"], "mm1"), node("Relu", ["h"], ["r"], "relu"),
               node("MatMul", ["r", "W2"], ["Y"], "mm2")],
              [tensor("W1", [3, 1], f32([2e38 * s, 2e38 * s, -3e38 * s])), tensor("W2", [1, 2], f32([-1, 0]))], [1, 3], [1, 2])
        prop(os.path.join(d, n + ".vnnlib"), [("1", "1")] * 3, 2, "(<= Y_0 %r)" % (-2e38 * s))
        # an MLP whose normalisation overflows: x / 2e-38 at x = 10 (real 5e38; FP32: inf), then 1e-10 of it
        n = "mlp_norm" + sfx
        model(os.path.join(d, n + ".onnx"),
              [node("Div", ["X", "sd"], ["xn"], "norm"), node("MatMul", ["xn", "W1"], ["Y"], "mm1")],
              [tensor("sd", [1], f32([2e-38])), tensor("W1", [1, 2], f32([1e-10, 0]))], [1, 1], [1, 2])
        prop(os.path.join(d, n + ".vnnlib"), [(repr(10 * s), repr(10 * s))], 2, "(>= Y_0 %r)" % (1e30 * s))
        # the layer graph (an Add of two values): its dense node's sum as mlp_sum's
        n = "graph_sum" + sfx
        model(os.path.join(d, n + ".onnx"),
              [node("MatMul", ["X", "W1"], ["h"], "mm1"), node("Relu", ["h"], ["r"], "relu"),
               node("Add", ["r", "r"], ["a"], "res"), node("MatMul", ["a", "W2"], ["Y"], "mm2")],
              [tensor("W1", [3, 1], f32([2e38 * s, 2e38 * s, -3e38 * s])), tensor("W2", [1, 2], f32([-1, 0]))], [1, 3], [1, 2])
        prop(os.path.join(d, n + ".vnnlib"), [("1", "1")] * 3, 2, "(<= Y_0 %r)" % (-5e38 * s))
        # the residual add itself: r + r = 4e38 (real; FP32: inf), then 1e-10 of it
        n = "graph_add" + sfx
        model(os.path.join(d, n + ".onnx"),
              [node("MatMul", ["X", "W1"], ["h"], "mm1"), node("Relu", ["h"], ["r"], "relu"),
               node("Add", ["r", "r"], ["a"], "res"), node("MatMul", ["a", "W2"], ["Y"], "mm2")],
              [tensor("W1", [1, 1], f32([2e38 * s])), tensor("W2", [1, 2], f32([-1e-10, 0]))], [1, 1], [1, 2])
        prop(os.path.join(d, n + ".vnnlib"), [("1", "1")], 2, "(<= Y_0 %r)" % (-1e30 * s))
        # batch norm: gamma 1e-30, var 1e-30, eps 0 at x = 1e24: real y = 1e9; FP32 x / sqrt(var) = 1e39: inf
        n = "graph_bn" + sfx
        model(os.path.join(d, n + ".onnx"),
              [node_a("BatchNormalization", ["X", "g", "b", "m", "v"], ["y"], "bn", [attr_f("epsilon", 0.0)]),
               node("MatMul", ["y", "W1"], ["Y"], "mm1")],
              [tensor("g", [1], f32([1e-30])), tensor("b", [1], f32([0])), tensor("m", [1], f32([0])),
               tensor("v", [1], f32([1e-30])), tensor("W1", [1, 2], f32([1, 0]))], [1, 1], [1, 2])
        x = "1e24" if s == 1 else "1e22"
        prop(os.path.join(d, n + ".vnnlib"), [(x, x)], 2, "(>= Y_0 %r)" % (1e10 * s * s))
        for n in ("mlp_sum", "mlp_norm", "graph_sum", "graph_add", "graph_bn"):
            with open(os.path.join(d, n + sfx + ".want"), "w") as f:
                f.write(want + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
