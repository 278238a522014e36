#!/usr/bin/env python3
"""onnx_fold_cases.py - the ONNX front-end's folding (arch/vt_onnx_graph.c) against NumPy, case by case:
each case is a small graph written with onnx.helper whose output y is computed from constants (and the
shape of an input x [batch, 3]), so that the front-end folds it; `vt_og_dump FILE 4 @0` prints y's
elements, which must equal NumPy's to the bit (float32 through NumPy's float32 arithmetic: correctly
rounded, as the front-end's folding promises for Add/Sub/Mul/Div/Sqrt). A few cases must be refused
(exit 2: an integer overflow, a division by zero, an index out of range). Run by
tests/e2e/onnx_import.sh. Prints "ok: NAME" or "FAIL: NAME ..." per case; exit 1 on any failure.
Usage: onnx_fold_cases.py VT_OG_DUMP OUT_DIR"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as H, numpy_helper as NH

I64_MAX = np.iinfo(np.int64).max


def const(name, arr):
    return H.make_node("Constant", [], [name], value=NH.from_array(np.asarray(arr), name), name="c_" + name)


def model(nodes, opset=17):
    x = H.make_tensor_value_info("x", TP.FLOAT, ["batch", 3])
    y = H.make_tensor_value_info("y", TP.UNDEFINED, None)
    g = H.make_graph(nodes, "case", [x], [y])
    return H.make_model(g, opset_imports=[H.make_opsetid("", opset)], producer_name="fold-cases")


f32, i64 = np.float32, np.int64
a10 = np.arange(10, dtype=i64)
m34 = np.arange(12, dtype=f32).reshape(3, 4)
CASES = [
    ("slice_negative_step", [const("a", a10), const("s", [-2]), const("e", [-11]), const("ax", [0]), const("st", [-3]),
                             H.make_node("Slice", ["a", "s", "e", "ax", "st"], ["y"])], a10[-2:-11:-3]),
    ("slice_big_end", [const("a", m34), const("s", [1]), const("e", [I64_MAX]), const("ax", [1]), const("st", [2]),
                       H.make_node("Slice", ["a", "s", "e", "ax", "st"], ["y"])], m34[:, 1::2]),
    ("gather_negative", [const("a", m34), const("i", np.array([[-1, 0]], dtype=i64)),
                         H.make_node("Gather", ["a", "i"], ["y"], axis=1)], np.take(m34, [[3, 0]], axis=1)),
    ("reshape_0_minus1", [const("a", np.arange(24, dtype=f32).reshape(2, 3, 4)), const("s", [0, -1]),
                          H.make_node("Reshape", ["a", "s"], ["y"])], np.arange(24, dtype=f32).reshape(2, 12)),
    ("squeeze_all", [const("a", np.ones((1, 3, 1), f32)), H.make_node("Squeeze", ["a"], ["y"])], np.ones(3, f32)),
    ("unsqueeze", [const("a", np.arange(3, dtype=f32)), const("ax", [-1, 0]), H.make_node("Unsqueeze", ["a", "ax"], ["y"])],
     np.arange(3, dtype=f32).reshape(1, 3, 1)),
    ("expand", [const("a", np.arange(3, dtype=f32).reshape(3, 1)), const("s", [2, 1, 4]),
                H.make_node("Expand", ["a", "s"], ["y"])], np.broadcast_to(np.arange(3, dtype=f32).reshape(3, 1), (2, 3, 4))),
    ("where_broadcast", [const("c", np.array([[True], [False]])), const("a", np.arange(3, dtype=f32).reshape(1, 3)),
                         const("b", f32(-1)), H.make_node("Where", ["c", "a", "b"], ["y"])],
     np.where(np.array([[True], [False]]), np.arange(3, dtype=f32).reshape(1, 3), f32(-1))),
    ("cast_float_to_int", [const("a", np.array([-2.7, 2.7, 1e3], f32)), H.make_node("Cast", ["a"], ["y"], to=TP.INT64)],
     np.array([-2, 2, 1000], i64)),
    ("div_int_truncates", [const("a", np.array([-7, 7], i64)), const("b", np.array([2, -2], i64)),
                           H.make_node("Div", ["a", "b"], ["y"])], np.array([-3, -3], i64)),
    ("sqrt_f32", [const("a", np.array([2, 3, 1e-30, 7e30], f32)), H.make_node("Sqrt", ["a"], ["y"])],
     np.sqrt(np.array([2, 3, 1e-30, 7e30], f32))),
    ("arith_f32", [const("a", np.array([0.1, 1e-40, 3.3], f32)), const("b", np.array([3, 7, 0.7], f32)),
                   H.make_node("Mul", ["a", "b"], ["p"]), H.make_node("Div", ["p", "b"], ["q"]),
                   H.make_node("Sub", ["q", "a"], ["r"]), H.make_node("Add", ["r", "p"], ["y"])],
     (((np.array([0.1, 1e-40, 3.3], f32) * np.array([3, 7, 0.7], f32)) / np.array([3, 7, 0.7], f32)
       - np.array([0.1, 1e-40, 3.3], f32)) + np.array([0.1, 1e-40, 3.3], f32) * np.array([3, 7, 0.7], f32))),
    ("trilu_lower_k1", [const("a", np.ones((3, 4), f32)), const("k", i64(1)),
                        H.make_node("Trilu", ["a", "k"], ["y"], upper=0)], np.tril(np.ones((3, 4), f32), 1)),
    ("concat_transpose", [const("a", np.arange(4, dtype=f32).reshape(2, 2)), const("b", np.array([[9], [8]], f32)),
                          H.make_node("Concat", ["a", "b"], ["c"], axis=1), H.make_node("Transpose", ["c"], ["y"], perm=[1, 0])],
     np.concatenate([np.arange(4, dtype=f32).reshape(2, 2), np.array([[9], [8]], f32)], axis=1).T),
    ("range_float", [const("a", f32(0.5)), const("b", f32(2.0)), const("d", f32(0.4)),
                     H.make_node("Range", ["a", "b", "d"], ["y"])],  # start + i * delta in double, rounded once
     (np.float64(f32(0.5)) + np.arange(4) * np.float64(f32(0.4))).astype(f32)),
    ("range_int_down", [const("a", i64(10)), const("b", i64(2)), const("d", i64(-3)), H.make_node("Range", ["a", "b", "d"], ["y"])],
     np.array([10, 7, 4], i64)),
    ("not_equal", [const("a", np.array([1, 2, 3], i64)), const("b", np.array([1, 0, 3], i64)),
                   H.make_node("Equal", ["a", "b"], ["e"]), H.make_node("Not", ["e"], ["y"])], np.array([0, 1, 0], np.uint8)),
    ("greater_less", [const("a", np.arange(4, dtype=i64).reshape(1, 4)), const("b", np.arange(4, dtype=i64).reshape(4, 1)),
                      H.make_node("Greater", ["a", "b"], ["g"]), H.make_node("Less", ["a", "b"], ["l"]),
                      H.make_node("Equal", ["g", "l"], ["y"])], np.equal.outer(np.arange(4), np.arange(4)).astype(np.uint8)),
    ("constant_of_shape", [const("s", [2, 2]), H.make_node("ConstantOfShape", ["s"], ["y"], value=NH.from_array(np.array([7], i64)))],
     np.full((2, 2), 7, i64)),
    ("shape_with_batch", [H.make_node("Shape", ["x"], ["y"])], np.array([4, 3], i64)),
    ("shape_start", [H.make_node("Shape", ["x"], ["y"], start=-1)], np.array([3], i64)),
    ("split_and_identity", [const("a", np.arange(6, dtype=f32)), const("s", [1, 5]),
                            H.make_node("Split", ["a", "s"], ["p", "q"]), H.make_node("Identity", ["q"], ["y"])], np.arange(1, 6, dtype=f32)),
    ("pow_f32", [const("a", np.array([2, 10], f32)), const("b", f32(0.5)), H.make_node("Pow", ["a", "b"], ["y"])],
     np.array([2 ** 0.5, 10 ** 0.5], np.float64).astype(f32)),
    ("flatten", [const("a", np.zeros((2, 3, 4), f32)), H.make_node("Flatten", ["a"], ["y"], axis=2)], np.zeros((6, 4), f32)),
]
REFUSED = [
    ("overflow_mul", [const("a", np.array([1 << 62], i64)), const("b", np.array([4], i64)), H.make_node("Mul", ["a", "b"], ["y"])]),
    ("div_by_zero", [const("a", np.array([1], i64)), const("b", np.array([0], i64)), H.make_node("Div", ["a", "b"], ["y"])]),
    ("gather_out_of_range", [const("a", a10), const("i", np.array([10], i64)), H.make_node("Gather", ["a", "i"], ["y"])]),
    ("reshape_mismatch", [const("a", a10), const("s", [3, -1]), H.make_node("Reshape", ["a", "s"], ["y"])]),
]


def main():
    dump, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    fails = 0
    for name, nodes, want in CASES:
        path = os.path.join(out, name + ".onnx")
        onnx.save(model(nodes), path)
        r = subprocess.run([dump, path, "4", "@0"], capture_output=True, text=True)
        want = np.asarray(want)
        got = r.stdout.split()[2:] if r.returncode == 0 else None
        if got is not None and want.dtype.kind == "f":
            ok = len(got) == want.size and np.array_equal(np.array(got, dtype=np.float64).astype(want.dtype).view(np.uint32),
                                                           want.reshape(-1).view(np.uint32))
        elif got is not None:
            ok = len(got) == want.size and [int(v) for v in got] == [int(v) for v in want.reshape(-1)]
        else:
            ok = False
        print(("ok: %s" % name) if ok else ("FAIL: %s: got %s (exit %d: %s), want %s" %
                                             (name, got, r.returncode, r.stderr.strip(), want.reshape(-1).tolist())))
        fails += not ok
    for name, nodes in REFUSED:
        path = os.path.join(out, name + ".onnx")
        onnx.save(model(nodes), path)
        r = subprocess.run([dump, path, "4"], capture_output=True, text=True)
        ok = r.returncode == 2 and "ONNX node" in r.stderr
        print(("ok: %s refused" % name) if ok else ("FAIL: %s: exit %d: %s" % (name, r.returncode, r.stderr.strip())))
        fails += not ok
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
