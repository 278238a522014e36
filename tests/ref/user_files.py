#!/usr/bin/env python3
"""user_files.py - the files a user brings, for tests/e2e/user_data.sh (json and struct only; PyTorch
when it is installed).

    user_files.py data DIR        data sets: data.safetensors (x F32 [256, 16], y I64), other.safetensors
                                  (one feature changed), x.npy (|u1 [256, 4, 4]) + y.npy (<i4), text.txt,
                                  and hostile ones: trunc, nan, badlabel (labels 0..9), f64 (x F64)
    user_files.py init DIR        initial states for the MLP 16-32-4 (`trainer export`'s names and shapes:
                                  fc1.weight [16, 32] = [in, out]): torch.safetensors, written by PyTorch
                                  (safetensors.torch.save_file, or torch tensors and the format by hand
                                  when the safetensors package is missing; by hand from Python's random
                                  numbers without PyTorch: the line printed says which), and the hostile
                                  missing, extra, misshaped, f64 (same values otherwise)
"""
import json
import os
import random
import struct
import sys

N, D, C = 256, 16, 4


def st_write(path, tensors, meta=None):
    """tensors: [(name, dtype, shape, bytes)], laid out in this order (as safetensors writes them)."""
    hdr, off = {}, 0
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, dt, shape, b in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(t[3] for t in tensors))


def npy_write(path, descr, shape, payload):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, str(tuple(shape)))
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + payload)


def f32(v):
    return struct.pack("<%df" % len(v), *v)


def data(d):
    rnd = random.Random(25)
    xs, ys = [], []
    for i in range(N):
        c = i % C
        ys.append(c)
        xs += [rnd.gauss(1.0 if k % C == c else 0.0, 0.5) for k in range(D)]
    y64 = struct.pack("<%dq" % N, *ys)
    st_write(os.path.join(d, "data.safetensors"), [("x", "F32", [N, D], f32(xs)), ("y", "I64", [N], y64)],
             {"format": "pt"})
    other = list(xs)
    other[100] += 0.25
    st_write(os.path.join(d, "other.safetensors"), [("x", "F32", [N, D], f32(other)), ("y", "I64", [N], y64)],
             {"format": "pt"})
    good = open(os.path.join(d, "data.safetensors"), "rb").read()
    open(os.path.join(d, "trunc.safetensors"), "wb").write(good[:-5])
    nan = list(xs)
    nan[37] = float("nan")
    st_write(os.path.join(d, "nan.safetensors"), [("x", "F32", [N, D], f32(nan)), ("y", "I64", [N], y64)])
    st_write(os.path.join(d, "badlabel.safetensors"),
             [("x", "F32", [N, D], f32(xs)), ("y", "I64", [N], struct.pack("<%dq" % N, *[i % 10 for i in range(N)]))])
    st_write(os.path.join(d, "f64.safetensors"),
             [("x", "F64", [N, D], struct.pack("<%dd" % (N * D), *xs)), ("y", "I64", [N], y64)])
    # the npy pair: u8 images 4 x 4 whose brightest quarter is the class
    xu = bytearray()
    for i in range(N):
        c = i % C
        xu += bytes(min(255, max(0, int(rnd.gauss(160 if (k // 4) == c else 60, 40)))) for k in range(16))
    npy_write(os.path.join(d, "x.npy"), "|u1", [N, 4, 4], bytes(xu))
    npy_write(os.path.join(d, "y.npy"), "<i4", [N], struct.pack("<%di" % N, *ys))
    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "and", "runs", "away", "home"]
    text = " ".join(rnd.choice(words) for _ in range(1500)) + "\n"
    open(os.path.join(d, "text.txt"), "w").write(text)


def init(d):
    shapes = [("fc1.weight", [D, 32]), ("fc1.bias", [32]), ("fc2.weight", [32, C]), ("fc2.bias", [C])]
    writer = "python (no PyTorch here: the format by hand, Python's random numbers)"
    tensors = None
    try:
        import torch

        torch.manual_seed(0)
        l1, l2 = torch.nn.Linear(D, 32), torch.nn.Linear(32, C)
        # the project's layout: a linear layer's weight is [in, out] (torch's transposed)
        named = {"fc1.weight": l1.weight.detach().t().contiguous(), "fc1.bias": l1.bias.detach(),
                 "fc2.weight": l2.weight.detach().t().contiguous(), "fc2.bias": l2.bias.detach()}
        try:
            from safetensors.torch import save_file

            save_file(named, os.path.join(d, "torch.safetensors"), metadata={"format": "pt"})
            writer = "PyTorch %s + safetensors.torch.save_file" % torch.__version__
        except ImportError:
            tensors = [(k, "F32", list(v.shape), v.numpy().astype("<f4").tobytes()) for k, v in sorted(named.items())]
            writer = "PyTorch %s tensors, the safetensors format by hand (no safetensors package)" % torch.__version__
    except ImportError:
        rnd = random.Random(7)
        tensors = []
        for name, shape in sorted(shapes):
            n = shape[0] * (shape[1] if len(shape) > 1 else 1)
            bound = 1.0 / (D if name.startswith("fc1") else 32) ** 0.5
            tensors.append((name, "F32", shape, f32([rnd.uniform(-bound, bound) for _ in range(n)])))
    if tensors is not None:
        st_write(os.path.join(d, "torch.safetensors"), tensors, {"format": "pt"})
    print("init file written by " + writer)
    # the hostile variants, from Python's own numbers
    rnd = random.Random(8)
    base = {}
    for name, shape in shapes:
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        base[name] = (shape, [rnd.uniform(-0.1, 0.1) for _ in range(n)])

    def variant(fname, drop=None, extra=None, reshape=None, f64=None):
        out = []
        for name, (shape, v) in base.items():
            if name == drop:
                continue
            if name == reshape:
                shape, v = [shape[0] - 1], v[:-1]
            if name == f64:
                out.append((name, "F64", shape, struct.pack("<%dd" % len(v), *v)))
            else:
                out.append((name, "F32", shape, f32(v)))
        if extra:
            out.append((extra, "F32", [3], f32([0.0, 1.0, 2.0])))
        st_write(os.path.join(d, fname), out)

    variant("missing.safetensors", drop="fc2.bias")
    variant("extra.safetensors", extra="fc3.weight")
    variant("misshaped.safetensors", reshape="fc1.bias")
    variant("f64init.safetensors", f64="fc1.bias")
    variant("good.safetensors")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("data", "init"):
        sys.exit(__doc__)
    {"data": data, "init": init}[sys.argv[1]](sys.argv[2])
