#!/usr/bin/env bash
# cert_onnx_cnn.sh BUILD_DIR - VNN-LIB properties of a convolutional ONNX network (docs/certify.md
# "Convolutional networks from ONNX"): a tiny residual CNN trained on the digits (1 x 8 x 8) is
# exported with `trainer export --format onnx` (Conv, BatchNormalization, Relu, Add, MaxPool,
# GlobalAveragePool, Flatten, Gemm); `certify RUN_DIR --write-vnnlib` writes its examples' eps boxes;
# for IBP, CROWN and alpha-CROWN every property answered on the ONNX file is never stronger than the
# run's own verdict (the run verified: not sat; falsified: not unsat) and equal where both are
# decided; alpha-CROWN's answers no weaker than CROWN's (CROWN's unsat stays unsat); each sat's
# counterexample lies in its box; certificates (CROWN, alpha-CROWN with its slopes) re-check byte for
# byte, an altered one is rejected; --timeout gives timeout and no certificate; hostile files (group
# 2, dilation 2, a truncated file) are refused with the documented codes. The same properties on the
# run itself (`certify RUN_DIR --vnnlib`, the run's own semantics): never unsat against the export's sat
# or the reverse, version-3 certificates re-checked against RUN_DIR --vnnlib, an altered byte rejected.
# Skipped (77) in an auditor without ONNX support.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert_onnx_cnn "${1:-}"
inbox() { # inbox PROP CEX: the counterexample's inputs all inside the property's box
  python3 - "$1" "$2" <<'PY'
import re, sys
prop, cex = open(sys.argv[1]).read(), open(sys.argv[2]).read()
lo = {int(k): float(v) for k, v in re.findall(r"\(>= X_(\d+) (\S+)\)\)", prop)}
hi = {int(k): float(v) for k, v in re.findall(r"\(<= X_(\d+) (\S+)\)\)", prop)}
xs = {int(k): float(v) for k, v in re.findall(r"\(X_(\d+) (\S+)\)", cex)}
assert len(xs) == len(lo) == len(hi) and all(lo[k] <= xs[k] <= hi[k] for k in xs)
PY
}
cert_train_cnn "$T/run"
"$B/trainer" export "$T/run" --format onnx --out "$T/net.onnx" --pubkey "$T/k.pub" >"$T/exp" 2>&1 ||
  { grep -qi "onnx" "$T/exp" && { echo "cert_onnx_cnn: no ONNX export in this build: skipped"; exit 77; }; cat "$T/exp"; exit 1; }
mkdir -p "$T/p"
N=12 eps=0.002
"$A" certify "$T/run" --eps $eps --examples $N --method crown --write-vnnlib "$T/p" >"$T/run.crown" || bad "certify run crown"
cert_onnx_or_skip "$T/net.onnx" "$T/p/prop_0.vnnlib"
"$A" certify "$T/run" --eps $eps --examples $N --method ibp >"$T/run.ibp" || bad "certify run ibp"
"$A" certify "$T/run" --eps $eps --examples $N --method alpha-crown >"$T/run.alpha-crown" || bad "certify run alpha-crown"
for m in ibp crown alpha-crown; do
  same=0 unsat=0
  for ((i = 0; i < N; i++)); do
    want=$(sed -n "s/^example *$i  label [0-9]*  \([a-z]*\) .*/\1/p" "$T/run.$m")
    got=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_$i.vnnlib" --method $m --cex "$T/cex.$i" --quiet)
    echo "$got" >"$T/ans.$m.$i"
    [ $m = alpha-crown ] && [ "$(cat "$T/ans.crown.$i")" = unsat ] && [ "$got" != unsat ] &&
      bad "example $i: CROWN unsat, alpha-CROWN '$got'"
    case "$want:$got" in
      verified:unsat | falsified:sat | unknown:unknown) same=$((same + 1)) ;;
      verified:unknown | falsified:unknown | unknown:unsat | unknown:sat) ;;
      *) bad "$m example $i: the run says '$want', the ONNX file '$got'" ;;
    esac
    [ "$got" = unsat ] && unsat=$((unsat + 1))
    [ "$got" = sat ] && { inbox "$T/p/prop_$i.vnnlib" "$T/cex.$i" || bad "$m example $i: counterexample outside its box"; }
  done
  echo "cert_onnx_cnn: $m: $same of $N answers equal to the run's, $unsat unsat"
  [ $same -ge $((N / 2)) ] || bad "$m: only $same of $N answers equal the run's"
  [ $m != ibp ] && [ $unsat -lt 1 ] && bad "$m: nothing verified on the ONNX file"
done
# the committed run itself with --vnnlib (docs/certify.md "The residual CNN", VNN-LIB properties): the
# same properties on the run's evaluation-pass graph with the run's two semantics (exact-rounding
# evaluation, real network). The ONNX file's bounds hold for the real network and any FP32 evaluation
# (a wider widening), so the two may differ only where one of them is unknown, never unsat against
# sat; neither contradicts the run's own --eps verdict.
for m in ibp crown alpha-crown; do
  same=0
  for ((i = 0; i < N; i++)); do
    want=$(sed -n "s/^example *$i  label [0-9]*  \([a-z]*\) .*/\1/p" "$T/run.$m")
    got=$("$A" certify "$T/run" --vnnlib "$T/p/prop_$i.vnnlib" --method $m --cex "$T/rcex.$i" --quiet) ||
      bad "certify RUN_DIR --vnnlib $m example $i: exit $?"
    onnx=$(cat "$T/ans.$m.$i")
    [ "$got" = "$onnx" ] && same=$((same + 1))
    case "$got:$onnx" in
      unsat:sat | sat:unsat) bad "$m example $i: the run says '$got', its ONNX export '$onnx'" ;;
    esac
    case "$got:$want" in
      unsat:falsified | sat:verified) bad "$m example $i: --vnnlib '$got', --eps '$want'" ;;
    esac
    [ "$got" = sat ] && { inbox "$T/p/prop_$i.vnnlib" "$T/rcex.$i" || bad "run $m example $i: counterexample outside its box"; }
    [ "$got" = sat ] && [ -z "${SATP:-}" ] && SATP=$i
  done
  echo "cert_onnx_cnn: run --vnnlib $m: $same of $N answers equal to the ONNX file's"
  [ $same -ge $((N / 2)) ] || bad "run --vnnlib $m: only $same of $N answers equal the ONNX file's"
done
# its certificates (version 3): CROWN on an unsat property, alpha-CROWN (slopes), a sat one (the
# counterexample) re-checked byte for byte against RUN_DIR --vnnlib; an altered byte rejected; --timeout
for c in crown:0 alpha-crown:0 crown:${SATP:-0}; do
  m=${c%%:*} i=${c#*:}
  "$A" certify "$T/run" --vnnlib "$T/p/prop_$i.vnnlib" --method $m --out "$T/rc" --key "$T/a" --quiet >/dev/null ||
    bad "certify RUN_DIR --vnnlib $m --out"
  [ "$(od -An -tu4 -j8 -N4 "$T/rc" | tr -d ' ')" = 3 ] || bad "run $m: not a version-3 certificate"
  "$A" check-certificate "$T/rc" "$T/run" --vnnlib "$T/p/prop_$i.vnnlib" --signer "$T/a.pub" >"$T/h" 2>&1 ||
    bad "check-certificate RUN_DIR --vnnlib $m prop $i: $(cat "$T/h")"
  "$A" check-certificate "$T/rc" --onnx "$T/net.onnx" --vnnlib "$T/p/prop_$i.vnnlib" >/dev/null 2>&1 &&
    bad "run $m: a version-3 certificate accepted against the ONNX file"
  at=$(($(stat -c %s "$T/rc") - 110)) # the body's tail (the trainer's key)
  [ $m = alpha-crown ] && at=$(($(stat -c %s "$T/rc") - 96 - 104 - 8)) # the last slope
  cp "$T/rc" "$T/x"
  printf '\x55' | dd of="$T/x" bs=1 seek=$at conv=notrunc status=none
  cmp -s "$T/x" "$T/rc" && printf '\x56' | dd of="$T/x" bs=1 seek=$at conv=notrunc status=none
  "$A" check-certificate "$T/x" "$T/run" --vnnlib "$T/p/prop_$i.vnnlib" >/dev/null 2>&1
  [ $? -eq 2 ] || bad "run $m: an altered certificate: not rejected"
done
[ -n "${SATP:-}" ] || echo "cert_onnx_cnn: no sat property on the run (the counterexample certificate used prop 0)"
got=$("$A" certify "$T/run" --vnnlib "$T/p/prop_0.vnnlib" --method crown --timeout 0.000001 --out "$T/rct" --key "$T/a" --quiet)
[ "$got" = timeout ] || bad "run --timeout: '$got'"
[ -e "$T/rct" ] && bad "run: a certificate written on a timeout"
# the certificates: re-checked byte for byte; an altered byte (a bound; for alpha-CROWN a slope) rejected,
# alpha-CROWN's slopes moved inside [0, 1] or out of it and re-signed too (the one-pass check)
for m in crown alpha-crown; do
  "$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_0.vnnlib" --method $m --out "$T/c" --key "$T/a" --quiet \
    >/dev/null || bad "certify $m --out"
  "$A" check-certificate "$T/c" --onnx "$T/net.onnx" --vnnlib "$T/p/prop_0.vnnlib" --signer "$T/a.pub" >/dev/null ||
    bad "check-certificate $m"
  at=150
  if [ $m = alpha-crown ]; then # the slopes end the body, before the 96 bytes of key and signature
    [ "$(od -An -tu4 -j32 -N4 "$T/c" | tr -d ' ')" -gt 0 ] || bad "alpha-crown: no slopes in the certificate"
    at=$(($(stat -c %s "$T/c") - 150))
  fi
  [ $m = alpha-crown ] && cert_slopes_tampered "$T/c" "$T/a" "--onnx $T/net.onnx --vnnlib $T/p/prop_0.vnnlib" -
  cp "$T/c" "$T/x"
  printf '\x55' | dd of="$T/x" bs=1 seek=$at conv=notrunc status=none
  cmp -s "$T/x" "$T/c" && printf '\x56' | dd of="$T/x" bs=1 seek=$at conv=notrunc status=none
  "$A" check-certificate "$T/x" --onnx "$T/net.onnx" --vnnlib "$T/p/prop_0.vnnlib" >/dev/null 2>&1
  [ $? -eq 2 ] || bad "$m: an altered certificate: not rejected"
done
# --timeout: a deadline already passed gives timeout and no certificate
got=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_0.vnnlib" --method crown --timeout 0.000001 --out "$T/ct" \
  --key "$T/a" --quiet)
[ "$got" = timeout ] || bad "--timeout: '$got'"
[ -e "$T/ct" ] && bad "a certificate written on a timeout"
# hostile files: a Conv's group 2 and dilation 2 (the attributes' protobuf bytes patched), truncated
python3 - "$T/net.onnx" "$T" <<'PY' || bad "patching the ONNX file"
import sys
b, d = open(sys.argv[1], "rb").read(), sys.argv[2]
g = b"\x0a\x05group\x18\x01"
assert g in b
open(d + "/group2.onnx", "wb").write(b.replace(g, b"\x0a\x05group\x18\x02", 1))
dl = b"\x0a\x09dilations\x40\x01"
assert dl in b
open(d + "/dil2.onnx", "wb").write(b.replace(dl, b"\x0a\x09dilations\x40\x02", 1))
open(d + "/trunc.onnx", "wb").write(b[: len(b) // 2])
PY
for h in group2:64:group dil2:64:dilations trunc:2:; do
  f=${h%%:*} r=${h#*:} want=${r%%:*} word=${r#*:}
  "$A" certify --onnx "$T/$f.onnx" --vnnlib "$T/p/prop_0.vnnlib" >"$T/h" 2>&1
  st=$?
  [ $st -eq "$want" ] || bad "$f: exit $st, not $want: $(cat "$T/h")"
  [ -z "$word" ] || grep -q "$word" "$T/h" || bad "$f: the message does not name $word: $(cat "$T/h")"
done
cert_end
