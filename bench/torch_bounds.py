#!/usr/bin/env python3
"""torch_bounds.py - an independent PyTorch implementation of IBP and CROWN (docs/benchmarks.md
"Certification (issue 26 item 8)"), to compare with `auditor certify`'s bounds on the same network
and the same boxes.

    torch_bounds.py --weights STATE.safetensors --props DIR --report-ibp R.json --report-crown R.json
                    [--examples N] [--threads T]

STATE.safetensors: `trainer export RUN --format safetensors` (fc<k>.weight [n_(k-1), n_k], fc<k>.bias;
z_k = W_k^T h_(k-1) + b_k, h_k = relu(z_k)). DIR: the properties `auditor certify RUN --write-vnnlib DIR`
wrote (prop_<i>.vnnlib: the box and the label). R.json: the tool's `--report` of `certify RUN --method
ibp` / `crown` at the same eps (per example the smallest lower bound of the margins a[y] - a[j]).

The bounds here are the textbook ones in FP64 with no soundness widening (no outward rounding, no
dot-product error term, the real network only): IBP layer by layer; CROWN with every pre-activation
bound of layers 2..L by a backward pass (intersected with the IBP of the previous layer's bounds, as
the tool does), the upper ReLU line through (l, 0) and (u, u), the lower slope 1 when u >= -l else 0,
and each margin's bound the larger of CROWN's and IBP's. The tool's bounds are sound under floating
point and also cover the deployed network's RN32 roundings (docs/certify.md "Soundness"), so they
must be <= these up to FP64 noise, and below them by about that widening only.

Prints one JSON object per method: examples, max |tool - torch| (absolute and relative to
max(1, |torch|)), for IBP the largest ratio of that gap to the first-order widening by the deployed
network's roundings (ibp_widening: each layer's interval widened by 2^-24 (max|z| + max|a|), carried
through |W|; about 1 means the gap is that widening), the number of examples where the tool's
bound is above torch's by more than 1e-9 x scale (should be 0), and the examples each verifies.
"""
import argparse
import json
import os
import re
import struct

import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit("torch_bounds.py: %s is %s, not F32" % (name, t["dtype"]))
        b, e = t["data_offsets"]
        v = torch.frombuffer(bytearray(raw[base + b:base + e]), dtype=torch.float32)
        out[name] = v.reshape(t["shape"]).to(torch.float64)  # FP32 values, exact in FP64
    return out


def read_prop(path):
    s = open(path).read()
    m = re.search(r"label (\d+)", s)
    lo = {int(k): float(v) for k, v in re.findall(r"\(>= X_(\d+) (\S+)\)\)", s)}
    hi = {int(k): float(v) for k, v in re.findall(r"\(<= X_(\d+) (\S+)\)\)", s)}
    d = len(lo)
    xl = torch.tensor([lo[i] for i in range(d)], dtype=torch.float64)
    xu = torch.tensor([hi[i] for i in range(d)], dtype=torch.float64)
    return xl, xu, int(m.group(1))


def relax(l, u):
    """ReLU relaxation of a in [l, u]: lower slope, upper slope, upper intercept."""
    low = torch.where(u >= -l, torch.ones_like(l), torch.zeros_like(l))
    den = torch.where(u > l, u - l, torch.ones_like(l))
    ups = u / den
    upi = -ups * l
    act = l >= 0
    dead = u <= 0
    low = torch.where(act, torch.ones_like(l), torch.where(dead, torch.zeros_like(l), low))
    ups = torch.where(act, torch.ones_like(l), torch.where(dead, torch.zeros_like(l), ups))
    upi = torch.where(act | dead, torch.zeros_like(l), upi)
    return low, ups, upi


def backward_lb(Ws, bs, bounds, k, C, xl, xu):
    """Lower bounds of C a_k (rows of C) over the box, CROWN with the ReLU relaxations of layers
    1..k-1 given by bounds[m] = (l, u) of a_m."""
    lam = C  # rows x n_k
    K = lam @ bs[k]
    for m in range(k, 0, -1):
        nu = lam @ Ws[m].T  # coefficients of h_(m-1): rows x n_(m-1)  (a_m = W_m^T h + b)
        if m == 1:
            return K + nu.clamp(min=0) @ xl + nu.clamp(max=0) @ xu
        low, ups, upi = relax(*bounds[m - 1])
        pos, neg = nu.clamp(min=0), nu.clamp(max=0)
        lam = pos * low + neg * ups
        K = K + neg @ upi + lam @ bs[m - 1]
    raise AssertionError


def bounds_of(Ws, bs, L, xl, xu, crown):
    """Per layer (l, u) of a_k: IBP, or CROWN intersected with IBP (k >= 2)."""
    bounds = {}
    hl, hu = xl, xu
    for k in range(1, L + 1):
        W = Ws[k]  # n_(k-1) x n_k
        c, r = (hu + hl) / 2, (hu - hl) / 2
        mid = c @ W + bs[k]
        rad = r @ W.abs()
        l, u = mid - rad, mid + rad
        if crown and k > 1:
            n = W.shape[1]
            eye = torch.eye(n, dtype=torch.float64)
            lo = backward_lb(Ws, bs, bounds, k, eye, xl, xu)
            hi = -backward_lb(Ws, bs, bounds, k, -eye, xl, xu)
            l, u = torch.maximum(l, lo), torch.minimum(u, hi)
        bounds[k] = (l, u)
        hl, hu = l.clamp(min=0), u.clamp(min=0)
    return bounds


def ibp_widening(Ws, bounds, L, y):
    """First order, the widening of IBP's margins by the deployed network's roundings as the tool
    bounds them (docs/certify.md "Soundness" item 4): each layer's interval widened by
    delta = 2^-24 max|z| + 2^-24 max|a| (+ 2^-149), carried through |W| and the ReLUs."""
    w = None
    for k in range(1, L + 1):
        l, u = bounds[k]
        m = torch.maximum(l.abs(), u.abs())
        delta = 2.0 ** -24 * 2 * m + 2.0 ** -149
        w = delta if w is None else w @ Ws[k].abs() + delta
    return torch.stack([w[y] + w[j] for j in range(w.shape[0]) if j != y])


def margins(Ws, bs, L, xl, xu, y, crown):
    """(the margins' lower bounds, IBP's first-order widening of each or None)"""
    bounds = bounds_of(Ws, bs, L, xl, xu, crown)
    l, u = bounds[L]
    n = l.shape[0]
    others = [j for j in range(n) if j != y]
    ibp = torch.stack([l[y] - u[j] for j in others])
    if not crown:
        return ibp, ibp_widening(Ws, bounds, L, y)
    C = torch.zeros(len(others), n, dtype=torch.float64)
    for r, j in enumerate(others):
        C[r, y], C[r, j] = 1, -1
    return torch.maximum(backward_lb(Ws, bs, bounds, L, C, xl, xu), ibp), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--props", required=True)
    ap.add_argument("--report-ibp")
    ap.add_argument("--report-crown")
    ap.add_argument("--examples", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    st = read_safetensors(a.weights)
    Ws, bs, L = {}, {}, 0
    while "fc%d.weight" % (L + 1) in st:
        L += 1
        Ws[L], bs[L] = st["fc%d.weight" % L], st["fc%d.bias" % L]
    if L == 0:
        raise SystemExit("torch_bounds.py: no fc1.weight in %s" % a.weights)
    for meth, rep in (("ibp", a.report_ibp), ("crown", a.report_crown)):
        if not rep:
            continue
        tool = json.load(open(rep))["examples"]
        n = a.examples or len(tool)
        worst_abs = worst_rel = worst_wid = 0.0
        above = verified_torch = verified_tool = 0
        for ex in tool[:n]:
            i = ex["index"]
            xl, xu, y = read_prop(os.path.join(a.props, "prop_%d.vnnlib" % i))
            if y != ex["label"]:
                raise SystemExit("torch_bounds.py: example %d: label %d in the property, %d in the report" % (i, y, ex["label"]))
            mg, wid = margins(Ws, bs, L, xl, xu, y, meth == "crown")
            t = float(mg.min())
            g = ex["margin_lower_bound"]
            g = float("-inf") if g is None else float(g)
            verified_torch += t > 0
            verified_tool += g > 0
            scale = max(1.0, abs(t))
            if g == float("-inf"):
                diff = float("inf")
            else:
                diff = abs(g - t)
                if g > t + 1e-9 * scale:
                    above += 1
            if wid is not None:  # the gap against the widening of the smallest margin
                worst_wid = max(worst_wid, diff / float(wid[int(mg.argmin())]))
            worst_abs = max(worst_abs, diff)
            worst_rel = max(worst_rel, diff / scale)
        print(json.dumps({"method": meth, "examples": n, "max_abs_diff": worst_abs, "max_rel_diff": worst_rel,
                          "max_diff_over_widening": worst_wid if meth == "ibp" else None,
                          "tool_above_torch": above, "verified_tool": verified_tool,
                          "verified_torch": verified_torch}))


if __name__ == "__main__":
    main()
