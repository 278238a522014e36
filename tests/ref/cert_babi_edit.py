#!/usr/bin/env python3
"""cert_babi_edit.py - alters the split tree of a version-8 certificate (docs/format.md "Certificate":
beta-crown on a VNN-LIB property of an ONNX file whose tree splits inputs, docs/certify.md "Input
splitting"), for tests/e2e/cert_bab_input.sh; the altered file is then signed again (vt_cert_resign) so
that check-certificate must reject it for its contents. Not part of the product.

  cert_babi_edit.py CERT info      the version, then one line a node: index, kind (leaf, relu, input), fields
  cert_babi_edit.py CERT outside   the first input split's point moved outside its box (5.0)
  cert_babi_edit.py CERT moved     the first input split's point moved inside its box (a 1/8 of its width)
  cert_babi_edit.py CERT input     the first input split's input set to 99
  cert_babi_edit.py CERT dropleaf  the last leaf removed (the count one lower)
The edits print the edited node's index."""
import struct
import sys


def parse(b):
    u32 = lambda o: struct.unpack_from("<I", b, o)[0]
    ver, d, m, na, ans = u32(8), u32(16), u32(28), u32(32), u32(136)
    assert b[:8] == b"VTCERT01" and ver in (8, 9), "not a version-8 or 9 certificate"
    off = 140 + 8 * m + (4 + 4 * d if ans == 1 else 0)
    n = u32(off)
    o, stack, nodes = off + 4, [], []  # stack: the ReLU depth of the children still to read
    for q in range(n):
        rdep = stack.pop() if q else 0
        kind = u32(o)
        if kind == 2:
            nodes.append((q, "input", o, rdep, u32(o + 4), struct.unpack_from("<d", b, o + 8)[0]))
            o += 16
            stack += [rdep, rdep]
        elif kind == 1:
            nodes.append((q, "relu", o, rdep, u32(o + 4), u32(o + 8)))
            o += 12
            stack += [rdep + 1, rdep + 1]
        else:
            size = 4 + 8 * (na * m + m * rdep + m)
            nodes.append((q, "leaf", o, rdep, size, None))
            o += size
    return ver, off, n, nodes


def main():
    path, what = sys.argv[1:3]
    b = bytearray(open(path, "rb").read())
    ver, off, n, nodes = parse(b)
    if what == "info":
        print(ver)
        for q, kind, _, rdep, f1, f2 in nodes:
            print(q, kind, rdep, f1, f2)
        return
    q, _, o, _, _, at = [x for x in nodes if x[1] == "input"][0]
    if what == "outside":
        struct.pack_into("<d", b, o + 8, 5.0)
    elif what == "moved":
        # the box's width at this node is unknown here; the root's split moves by 1/8 of its distance to 0
        struct.pack_into("<d", b, o + 8, at * 0.875 if at != 0 else 0.01)
    elif what == "input":
        struct.pack_into("<I", b, o + 4, 99)
    elif what == "dropleaf":
        q, _, lo, _, size, _ = [x for x in nodes if x[1] == "leaf"][-1]
        del b[lo:lo + size]
        struct.pack_into("<I", b, off, n - 1)
    else:
        sys.exit("unknown edit " + what)
    open(path, "wb").write(bytes(b))
    print(q)


main()
