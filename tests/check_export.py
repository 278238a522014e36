#!/usr/bin/env python3
"""check_export.py - checks a `trainer export --optimizer` file independently of the C code
(tests/e2e.sh): reads it with tests/read_safetensors.py (json and struct only), checks the tensor
names and shapes of an MLP with the given layer widths, recomputes the state hash from the values
(SHA-256("VTST" || u32le 2 || u64le step || u32le n || the n tensor SHA-256s), docs/format.md) and
compares it with the committed state hash of that step read from the run store with Python's
sqlite3.

    check_export.py FILE RUN_DIR STEP WIDTHS   (WIDTHS: 784,128,10)   exit 0 ok, 1 mismatch
"""
import hashlib
import os
import sqlite3
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_safetensors  # noqa: E402


def main(argv):
    path, run_dir, step, widths = argv[1], argv[2], int(argv[3]), [int(w) for w in argv[4].split(",")]
    with open(path, "rb") as f:
        meta, tensors = read_safetensors.parse(f.read())
    tensors.sort(key=lambda t: t["begin"])  # the state's order: parameters, then the optimiser's
    want = []
    for l in range(1, len(widths)):
        want += [("fc%d.weight" % l, [widths[l - 1], widths[l]]), ("fc%d.bias" % l, [widths[l]])]
    params = list(want)
    want += [(n + ".velocity", s) for n, s in params]
    got = [(t["name"], t["shape"]) for t in tensors]
    if got != want:
        print("tensors %r, expected %r" % (got, want))
        return 1
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
