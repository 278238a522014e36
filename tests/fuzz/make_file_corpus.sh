#!/usr/bin/env bash
# make_file_corpus.sh BUILD_DIR [OUT]: writes the seed corpora of the file decoders' fuzzers
# (tests/cmake/fuzz.cmake; docs/format.md "Fuzzing the file decoders") into OUT (default
# tests/corpus): small valid files made by the project itself from tiny runs on the digits (an MLP
# 64-3-10 with SGD and with Adam, a residual CNN of width 2: the models of tests/fuzz/fuzz_st_body.h),
# named ok-*: OUT/safetensors (exports in both layouts, with the optimiser's state, and a data set),
# OUT/onnx (the MLP's and the CNN's ONNX export), OUT/cert (certificates of versions 1 to 5) and
# OUT/manifest (the runs' manifests). The
# hostile files (bad-*) and the fuzzers' finds are committed beside them by hand. The runs are
# deterministic, but the keys are fresh: the certificates' signatures differ from run to run.
set -euo pipefail
B=$(cd "${1:?usage: make_file_corpus.sh BUILD_DIR [OUT]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE/../corpus}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$OUT/safetensors" "$OUT/onnx" "$OUT/cert"
"$B/trainer" keygen "$T/k" >/dev/null
"$B/auditor" keygen "$T/a" >/dev/null
mlp=(--set dataset=digits --set 'layers=[64,3,10]' --set batch=8 --set steps=20)
cnn=(--set arch=resnet --set dataset=digits --set 'layers=[64,10]' --set image_channels=1 --set image_height=8
     --set image_width=8 --set resnet_width=2 --set resnet_stages=2 --set resnet_blocks=1 --set resnet_pool=0
     --set batch=8 --set steps=10)
"$B/trainer" train --run "$T/sgd" --key "$T/k" "${mlp[@]}" --quiet >/dev/null
"$B/trainer" train --run "$T/adam" --key "$T/k" "${mlp[@]}" --set optimizer=adam --quiet >/dev/null
"$B/trainer" train --run "$T/cnn" --key "$T/k" "${cnn[@]}" --quiet >/dev/null
ex() { "$B/trainer" export "$T/$1" --pubkey "$T/k.pub" --out "$2" "${@:3}" >/dev/null; }
S=$OUT/safetensors
ex sgd "$S/ok-mlp-sgd.safetensors" --format safetensors --optimizer
ex adam "$S/ok-mlp-adam-torch.safetensors" --format safetensors --optimizer --layout torch
ex cnn "$S/ok-cnn.safetensors" --format safetensors
ex cnn "$S/ok-cnn-torch.safetensors" --format safetensors --layout torch
ex sgd "$OUT/onnx/ok-mlp.onnx" --format onnx
ex cnn "$OUT/onnx/ok-cnn.onnx" --format onnx
# a data set (x: U8 [4, 2, 3], y: I64 [4]) as vt_safetensors_write lays a file out
python3 - "$S/ok-dataset.safetensors" <<'PY'
import json, struct, sys
x, y = bytes(range(24)), struct.pack("<4q", 0, 1, 2, 1)
h = json.dumps({"x": {"dtype": "U8", "shape": [4, 2, 3], "data_offsets": [0, 24]},
                "y": {"dtype": "I64", "shape": [4], "data_offsets": [24, 56]}}, separators=(",", ":")).encode()
h += b" " * (-(8 + len(h)) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + x + y)
PY
C=$OUT/cert
A=("$B/auditor" certify --key "$T/a" --quiet)
"${A[@]}" "$T/sgd" --eps 0.02 --examples 2 --method ibp --out "$C/ok-v1-ibp" >/dev/null
"${A[@]}" "$T/sgd" --eps 0.05 --examples 2 --method alpha-crown --out "$C/ok-v1-alpha" >/dev/null
"${A[@]}" "$T/cnn" --eps 0.02 --examples 2 --method alpha-crown --out "$C/ok-v4-alpha" >/dev/null
# version 5 (branch and bound; the committed ok-v5-beta, with split trees, is the digits MLP of tests/e2e/cert_bab.sh)
"${A[@]}" "$T/sgd" --eps 0.05 --examples 2 --method beta-crown --out "$C/ok-v5-beta-sgd" >/dev/null
mkdir -p "$T/p"
"$B/auditor" certify "$T/sgd" --eps 0.02 --examples 1 --write-vnnlib "$T/p" --quiet >/dev/null
if "${A[@]}" --onnx "$OUT/onnx/ok-mlp.onnx" --vnnlib "$T/p/prop_0.vnnlib" --method alpha-crown --out "$C/ok-v2-alpha" \
  >/dev/null 2>&1; then :; else echo "make_file_corpus: no ONNX support: no version-2 certificate"; fi
"${A[@]}" "$T/sgd" --vnnlib "$T/p/prop_0.vnnlib" --method crown --out "$C/ok-v3-crown" >/dev/null
# the runs' manifests (run.db's meta 'manifest'), one also as format 4
mkdir -p "$OUT/manifest"
python3 - "$T" "$OUT/manifest" <<'PY'
import sqlite3, sys
t, out = sys.argv[1], sys.argv[2]
for run in ("sgd", "adam", "cnn"):
    m = sqlite3.connect("%s/%s/run.db" % (t, run)).execute("select value from meta where key = 'manifest'").fetchone()[0]
    open("%s/ok-%s" % (out, run), "wb").write(m)
    if run == "sgd":
        open("%s/ok-sgd-format-4" % out, "wb").write(m.replace(b"vt-manifest-5", b"vt-manifest-4"))
PY
du -sh "$OUT/safetensors" "$OUT/onnx" "$OUT/cert" "$OUT/manifest"
