#!/usr/bin/env python3
"""cert_bab_edit.py - reads and alters the split trees of a version-5 certificate (docs/format.md
"Certificate": a committed MLP run certified by branch and bound, `certify --method beta-crown`), for
tests/e2e/cert_bab.sh; the altered file is then signed again (vt_cert_resign) so that check-certificate
must reject it for its contents. Not part of the product.

  cert_bab_edit.py CERT trees       one line per example: index, answer, tree nodes
  cert_bab_edit.py CERT split       the first multi-node tree's root split moved to the next neuron
  cert_bab_edit.py CERT dropleaf    the first multi-node tree's last leaf removed (the count one lower)
  cert_bab_edit.py CERT alpha       the first multi-node tree's first leaf with a slope inside (0, 1): those set to 0
  cert_bab_edit.py CERT bound       the first multi-node tree's first leaf: a margin's bound raised
  cert_bab_edit.py CERT beta        the first multi-node tree's first leaf: its multipliers raised by 0.5
  cert_bab_edit.py CERT negbeta     the first multi-node tree's first leaf: its first multiplier -0.25
  cert_bab_edit.py CERT unknown     the first multi-node tree's example recorded unknown
The edits print the edited example's index."""
import struct
import sys


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def parse(b):
    assert b[:8] == b"VTCERT01" and u32(b, 8) == 5, "not a version-5 certificate"
    n_ex, c, d, a = u32(b, 16), u32(b, 20), u32(b, 24), u32(b, 28)
    off, recs = 244, []
    for _ in range(n_ex):
        ans = u32(b, off + 8)
        t = off + 12 + c * 8 + (d * 4 if ans == 1 else 0)
        p, nodes, pending = t + 4, [], []  # pending: the children still to come at each open depth
        for _ in range(u32(b, t)):
            kind, depth = u32(b, p), len(pending)
            nodes.append((p, kind))
            if kind:
                p += 12
                pending.append(2)
            else:  # slopes, (C - 1) x depth multipliers, bounds
                p += 4 + (a + (c - 1) * depth + c) * 8
                while pending:
                    pending[-1] -= 1
                    if pending[-1]:
                        break
                    pending.pop()
        recs.append({"off": off, "index": u32(b, off), "ans": ans, "tree": t, "nodes": nodes, "end": p})
        off = p
    assert off == len(b) - 96, "trailing bytes"
    return c, a, recs


def main():
    path, cmd = sys.argv[1], sys.argv[2]
    b = bytearray(open(path, "rb").read())
    c, a, recs = parse(b)
    if cmd == "trees":
        for r in recs:
            print(r["index"], r["ans"], len(r["nodes"]))
        return
    r = next(r for r in recs if len(r["nodes"]) > 1)
    nodes = r["nodes"]
    leaf = next(p for p, k in nodes if k == 0)
    if cmd == "split":
        p = nodes[0][0]
        struct.pack_into("<I", b, p + 8, u32(b, p + 8) + 1)
    elif cmd == "dropleaf":
        p, k = nodes[-1]
        assert k == 0
        del b[p:r["end"]]
        struct.pack_into("<I", b, r["tree"], len(nodes) - 1)
    elif cmd == "alpha":  # a leaf whose slopes the bound reads: every one strictly inside (0, 1) set to 0
        leaves = [p for p, k in nodes if k == 0]
        for p in leaves:
            vals = struct.unpack_from("<%dd" % a, b, p + 4)
            if any(0 < v < 1 for v in vals):
                struct.pack_into("<%dd" % a, b, p + 4, *[0.0 if 0 < v < 1 else v for v in vals])
                break
        else:
            sys.exit("no leaf with a slope strictly inside (0, 1)")
    elif cmd == "bound":  # the first leaf's bounds follow its slopes and multipliers
        depth = 0
        for p, k in nodes:
            if p == leaf:
                break
            depth += 1 if k else 0  # preorder: the first leaf's ancestors are the splits before it
        q = leaf + 4 + a * 8 + (c - 1) * depth * 8
        j = 0 if struct.unpack_from("<d", b, q)[0] != 0 else 1  # the label's own bound is 0
        v = struct.unpack_from("<d", b, q + 8 * j)[0]
        struct.pack_into("<d", b, q + 8 * j, v + 1e-3)
    elif cmd == "beta":  # the first leaf with a split above it: its multipliers all raised by 0.5
        depth = sum(1 for p, k in nodes if k and p < leaf)
        q = leaf + 4 + a * 8
        vals = struct.unpack_from("<%dd" % ((c - 1) * depth), b, q)
        struct.pack_into("<%dd" % ((c - 1) * depth), b, q, *[v + 0.5 for v in vals])
    elif cmd == "negbeta":  # a multiplier below 0
        q = leaf + 4 + a * 8
        struct.pack_into("<d", b, q, -0.25)
    elif cmd == "unknown":
        struct.pack_into("<I", b, r["off"] + 8, 2)
    else:
        sys.exit("unknown edit " + cmd)
    open(path, "wb").write(b)
    print(r["index"])


main()
