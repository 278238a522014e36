#!/usr/bin/env bash
# cert_fp32_overflow.sh BUILD_DIR - ONNX networks whose real outputs are in FP32's range but an FP32
# evaluation overflows to an infinity that reaches the unsafe region (a sum's partial sums, the input's
# normalisation, a residual add, batch norm's (x - m) / sqrt(v + eps)): the bounds claim every FP32
# evaluation too (docs/certify.md "What is claimed"), so no method may answer unsat; the same networks
# scaled into range must still be unsat; every certificate re-checks. Networks and properties:
# tests/ref/cert_fp32_overflow.py.
# Skipped (77) in an auditor built without ONNX support.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert_fp32_overflow "${1:-}"
python3 "$REF/cert_fp32_overflow.py" "$T" || { echo "cert_fp32_overflow.py"; exit 1; }
cert_onnx_or_skip "$T/mlp_sum.onnx" "$T/mlp_sum.vnnlib"
n=0
for f in "$T"/*.onnx; do
  b=${f%.onnx}
  want=$(cat "$b.want")
  for m in ibp crown alpha-crown; do
    got=$("$A" certify --onnx "$f" --vnnlib "$b.vnnlib" --method $m --out "$T/c" --key "$T/a" --quiet 2>"$T/err") ||
      bad "$(basename "$b") $m: exit $? $(cat "$T/err")"
    [ "$got" = "$want" ] || bad "$(basename "$b") $m: $got (expected $want)"
    # its certificate re-checks (alpha-CROWN of graph_bn*: a graph without a ReLU, no slopes)
    "$A" check-certificate "$T/c" --onnx "$f" --vnnlib "$b.vnnlib" >/dev/null 2>"$T/err" ||
      bad "$(basename "$b") $m: check-certificate: $(cat "$T/err")"
    n=$((n + 1))
  done
done
[ $n = 30 ] || bad "$n answers (expected 30)"
cert_end
