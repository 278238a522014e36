#!/usr/bin/env python3
"""cert_edit.py - alters a certificate's body for the one-pass check's tests (tests/cert*.sh; re-sign it
with vt_cert_resign afterwards). A committed run's certificate (version 1 or 4, docs/format.md):
  cert_edit.py CERT records                 one line per example: index answer n_slopes n_fractional
  cert_edit.py CERT slope EX K VALUE        slope K of example EX := VALUE (a float: 0.5, 1.5, nan)
  cert_edit.py CERT fracslopes EX VALUE     every slope of EX strictly inside (0, 1) := VALUE (none: all := 0.5)
  cert_edit.py CERT method WORD             the method word (offset 12) := WORD (an integer, 0x.. too)
  cert_edit.py CERT eps VALUE               a committed run's eps (offset 40) := VALUE (a float)
  cert_edit.py CERT bound EX DELTA          every non-zero margin bound of EX += DELTA
  cert_edit.py CERT verified EX             EX claims verified, every bound 1.0 (a counterexample dropped)
  cert_edit.py CERT cexclean EX PROP        EX's counterexample := the example's own input, read back from
                                            its property (certify --write-vnnlib; pixels k/16, eps < 1/16);
                                            prints 'same' when the recorded one is that input
A VNN-LIB certificate (version 2 or 3): EX is ignored ('-'), the property's slopes and answer.
Not part of the product."""
import struct
import sys


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def records(b):
    """[(start, answer_off, bounds_off, C, cex_off or None, slopes_off, n_slopes, end)]"""
    ver = u32(b, 8)
    if ver in (2, 3):
        d, m, na, ans = u32(b, 16), u32(b, 28), u32(b, 32), u32(b, 136)
        cex = 140 + 8 * m + 4 if ans == 1 else None
        so = 140 + 8 * m + (4 + 4 * d if ans == 1 else 0)
        return [(136, 136, 140, m, cex, so, na * m, so + 8 * na * m)]
    meth, N, C, d, A = u32(b, 12) & 0xFF, u32(b, 16), u32(b, 20), u32(b, 24), u32(b, 28)
    galpha = ver == 4 and meth == 2
    out, off = [], 244
    for _ in range(N):
        ans = u32(b, off + 8)
        h = off + 12 + 8 * C + (4 * d if ans == 1 else 0)
        if galpha:
            U = u32(b, h)
            so, ns = h + 4, (C - 1) * U
        else:
            so, ns = h, A
        out.append((off, off + 8, off + 12, C, off + 12 + 8 * C if ans == 1 else None, so, ns, so + 8 * ns))
        off = so + 8 * ns
    return out


def main():
    path, op = sys.argv[1], sys.argv[2]
    b = bytearray(open(path, "rb").read())
    recs = records(b)
    ex = 0 if len(sys.argv) < 4 or sys.argv[3] == "-" or op in ("method", "eps") else int(sys.argv[3])
    r = recs[ex] if op != "records" else None
    if op == "records":
        for i, (s, ao, bo, C, cx, so, ns, e) in enumerate(recs):
            sl = struct.unpack_from("<%dd" % ns, b, so)
            print(i, u32(b, ao), ns, sum(1 for v in sl if 0 < v < 1))
        return
    if op == "method":
        struct.pack_into("<I", b, 12, int(sys.argv[3], 0))
        open(path, "wb").write(b)
        return
    if op == "eps":
        struct.pack_into("<d", b, 40, float(sys.argv[3]))
        open(path, "wb").write(b)
        return
    if op == "slope":
        struct.pack_into("<d", b, r[5] + 8 * int(sys.argv[4]), float(sys.argv[5]))
    elif op == "fracslopes":
        n = 0
        for k in range(r[6]):
            v = struct.unpack_from("<d", b, r[5] + 8 * k)[0]
            if 0 < v < 1:
                struct.pack_into("<d", b, r[5] + 8 * k, float(sys.argv[4]))
                n += 1
        if n == 0:  # the search kept CROWN's 0 / 1 everywhere: every slope := 0.5
            for k in range(r[6]):
                struct.pack_into("<d", b, r[5] + 8 * k, 0.5)
            n = r[6]
        print(n)
        if n == 0:
            sys.exit("cert_edit.py: no slope")
    elif op == "bound":
        for j in range(r[3]):
            v = struct.unpack_from("<d", b, r[2] + 8 * j)[0]
            if v != 0:
                struct.pack_into("<d", b, r[2] + 8 * j, v + float(sys.argv[4]))
    elif op == "verified":
        for j in range(r[3]):
            if struct.unpack_from("<d", b, r[2] + 8 * j)[0] != 0:
                struct.pack_into("<d", b, r[2] + 8 * j, 1.0)
        if r[4] is not None:  # drop the counterexample (a VNN-LIB one: its disjunct index too)
            lo = r[4] - (4 if u32(b, 8) in (2, 3) else 0)
            del b[lo:r[5]]
        struct.pack_into("<I", b, r[1], 0)
    elif op == "cexclean":
        lo, hi = {}, {}
        for line in open(sys.argv[4]):
            t = line.replace("(", " ").replace(")", " ").split()
            if len(t) == 4 and t[0] == "assert" and t[2].startswith("X_"):
                (lo if t[1] == ">=" else hi)[int(t[2][2:])] = float(t[3])
        x = [0.0 if lo[i] == 0 else 1.0 if hi[i] == 1 else 0.5 * (lo[i] + hi[i]) for i in range(len(lo))]
        x = list(struct.unpack("<%df" % len(x), struct.pack("<%df" % len(x), *x)))
        if list(struct.unpack_from("<%df" % len(x), b, r[4])) == x:
            print("same")
        struct.pack_into("<%df" % len(x), b, r[4], *x)
    else:
        sys.exit("cert_edit.py: unknown operation " + op)
    open(path, "wb").write(bytes(b))


main()
