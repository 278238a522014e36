#!/usr/bin/env python3
"""check_export.py - checks a `trainer export --optimizer` file independently of the C code
(tests/e2e/e2e.sh): reads it with tests/ref/read_safetensors.py (json and struct only), checks the tensor
names and shapes of an MLP with the given layer widths, recomputes the state hash from the values
(SHA-256("VTST" || u32le 2 || u64le step || u32le n || the n tensor SHA-256s), docs/format.md) and
compares it with the committed state hash of that step read from the run store with Python's
sqlite3.

    check_export.py FILE RUN_DIR STEP WIDTHS   (WIDTHS: 784,128,10)   exit 0 ok, 1 mismatch

WIDTHS "any" checks only that names are unique, then the state hash (any architecture).
WIDTHS "resnet" instead checks a residual CNN's export (arch=resnet): every batch norm's weight
and bias come with its running_mean and running_var (buffers, after the optimiser's velocities),
shapes agree, every parameter has its velocity; then the state hash as above.
"""
import hashlib
import os
import sqlite3
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_safetensors  # noqa: E402


def resnet_names(tensors):
    """the expected (name, shape) list of a resnet export, derived from its parameters"""
    params = [(t["name"], t["shape"]) for t in tensors
              if not t["name"].endswith((".velocity", ".running_mean", ".running_var"))]
    bns = [n[: -len(".weight")] for n, s in params if ".bn" in n and n.endswith(".weight")]
    convs = [n for n, s in params if n.endswith("conv.weight") or ".conv" in n and n.endswith(".weight")]
    if not bns or len(convs) != len(bns) or ("fc.weight" not in [n for n, s in params]):
        return None
    shape = dict(params)
    want = list(params) + [(n + ".velocity", s) for n, s in params]
    for b in bns:
        c = shape[b + ".weight"]
        if shape.get(b + ".bias") != c:
            return None
        want += [(b + ".running_mean", c), (b + ".running_var", c)]
    return want


def main(argv):
    path, run_dir, step = argv[1], argv[2], int(argv[3])
    with open(path, "rb") as f:
        meta, tensors = read_safetensors.parse(f.read())
    tensors.sort(key=lambda t: t["begin"])  # the state's order: parameters, then the optimiser's
    if argv[4] == "any":  # any architecture: names unique, then the state hash
        if len({t["name"] for t in tensors}) != len(tensors):
            print("duplicate tensor names")
            return 1
        return check_hash(path, run_dir, step, meta, tensors)
    if argv[4] == "resnet":
        want = resnet_names(tensors)
        got = [(t["name"], t["shape"]) for t in tensors]
        if want is None or got != want:
            print("tensors %r, expected %r" % (got, want))
            return 1
        return check_hash(path, run_dir, step, meta, tensors)
    widths = [int(w) for w in argv[4].split(",")]
    want = []
    for l in range(1, len(widths)):
        want += [("fc%d.weight" % l, [widths[l - 1], widths[l]]), ("fc%d.bias" % l, [widths[l]])]
    params = list(want)
    want += [(n + ".velocity", s) for n, s in params]
    got = [(t["name"], t["shape"]) for t in tensors]
    if got != want:
        print("tensors %r, expected %r" % (got, want))
        return 1
    return check_hash(path, run_dir, step, meta, tensors)


def check_hash(path, run_dir, step, meta, tensors):
    if any(t["dtype"] != "F32" for t in tensors):
        print("a state tensor is not F32")
        return 1
    hashes = b"".join(hashlib.sha256(struct.pack("<%dI" % len(t["bits"]), *t["bits"])).digest() for t in tensors)
    state = hashlib.sha256(b"VTST" + struct.pack("<IQI", 2, step, len(tensors)) + hashes).digest()
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(run_dir, "run.db"), uri=True)
    row = db.execute("SELECT has_state, state_hash FROM steps WHERE step = ?", (step,)).fetchone()
    if not row or not row[0] or bytes(row[1]) != state:
        print("the exported values give state hash %s; the run committed %s" % (state.hex(), row and bytes(row[1]).hex()))
        return 1
    if meta.get("state_hash") != state.hex() or meta.get("step") != str(step):
        print("metadata %r does not name step %d and state hash %s" % (meta, step, state.hex()))
        return 1
    print("%s: %d tensors; their values give the committed state hash of step %d" % (path, len(tensors), step))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
