#!/usr/bin/env bash
# cert_onnx.sh BUILD_DIR - `auditor certify --onnx --vnnlib` end to end (docs/certify.md "ONNX and
# VNN-LIB"): a digits MLP is trained and exported with `trainer export --format onnx`; `certify
# RUN_DIR --write-vnnlib` writes each example's eps box as a VNN-LIB property (VNN-COMP's mnist_fc
# form); for IBP, CROWN and alpha-CROWN every property answered on the ONNX file must agree with the
# run's own verdict (verified <-> unsat; falsified <-> sat), and `certify RUN_DIR --vnnlib` (the run's
# own network) must give the ONNX file's answer (its version-3 certificate re-checked, refused in
# the other forms); each sat's counterexample is re-checked
# (inside the property's box, and sat again on the point box it gives); certificates re-check byte
# for byte and an altered one, another VNN-LIB file and a committed run's certificate are refused;
# --timeout gives `timeout` and no certificate (a deadline never reached: the same bytes), --result the
# VNN-COMP result file; hostile ONNX (truncated, float64 weights, an
# unsupported operator) and VNN-LIB files give clear errors with the documented exit codes.
# Skipped (77) in an auditor built without ONNX support (its refusal, exit 2, checked first).
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert_onnx "${1:-}"
cert_train_mlp "$T/run"
mkdir -p "$T/p"
"$A" certify "$T/run" --eps 0.02 --examples 1 --write-vnnlib "$T/p" --quiet >/dev/null || { echo "write-vnnlib"; exit 1; }
"$B/trainer" export "$T/run" --format onnx --out "$T/net.onnx" --pubkey "$T/k.pub" >/dev/null 2>&1
cert_onnx_or_skip "$T/net.onnx" "$T/p/prop_0.vnnlib"

N=16
nsat=0
for m in ibp crown alpha-crown; do
  "$A" certify "$T/run" --eps 0.03 --examples $N --method $m --write-vnnlib "$T/p" >"$T/run.$m" || bad "certify run $m"
  for ((i = 0; i < N; i++)); do
    want=$(sed -n "s/^example *$i  label [0-9]*  \([a-z]*\) .*/\1/p" "$T/run.$m")
    got=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_$i.vnnlib" --method $m --cex "$T/cex.$m.$i" --quiet)
    case "$want:$got" in
      verified:unsat | falsified:sat | unknown:unknown) ;;
      *) bad "$m example $i: the run says $want, the ONNX file $got" ;;
    esac
    # the same property on the committed run itself (certify RUN_DIR --vnnlib): the same answer
    grun=$("$A" certify "$T/run" --vnnlib "$T/p/prop_$i.vnnlib" --method $m --quiet)
    [ "$grun" = "$got" ] || bad "$m example $i: RUN_DIR --vnnlib says $grun, the ONNX file $got"
    if [ "$got" = sat ]; then
      nsat=$((nsat + 1))
      # the counterexample: inside the property's box, and sat again on its own point
      python3 - "$T/p/prop_$i.vnnlib" "$T/cex.$m.$i" "$T/pt.vnnlib" <<'EOF' || bad "$m example $i: counterexample check"
import re, sys
prop, cex, out = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
lo = {int(k): float(v) for k, v in re.findall(r"\(>= X_(\d+) (\S+)\)\)", prop)}
hi = {int(k): float(v) for k, v in re.findall(r"\(<= X_(\d+) (\S+)\)\)", prop)}
xs = {int(k): v for k, v in re.findall(r"\(X_(\d+) (\S+)\)", cex)}
ys = re.findall(r"\(Y_(\d+) (\S+)\)", cex)
assert cex.startswith("((X_0 ") and cex.rstrip().endswith("))") and len(ys) == 10, "format"
assert sorted(xs) == sorted(lo) == sorted(hi), "every X once"
for k, v in xs.items():
    assert lo[k] <= float(v) <= hi[k], "X_%d = %s outside [%r, %r]" % (k, v, lo[k], hi[k])
# the same property on the point box of the counterexample
body = re.sub(r"\(assert \([<>]= X_\d+ \S+\)\)\n", "", prop)
pts = "".join("(assert (>= X_%d %s))\n(assert (<= X_%d %s))\n" % (k, v, k, v) for k, v in sorted(xs.items()))
open(out, "w").write(body.replace("(assert (or", pts + "(assert (or", 1))
EOF
      again=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/pt.vnnlib" --method $m --quiet)
      [ "$again" = sat ] || bad "$m example $i: the counterexample's point box gives $again"
    fi
  done
done
[ $nsat -gt 0 ] || echo "note: no property was sat at this eps"
echo "cert_onnx: verdicts agree for 3 methods x $N properties ($nsat sat, counterexamples re-checked)"

# VNN-COMP's instances file: the same answers, the verified count the run's
for ((i = 0; i < N; i++)); do echo "net.onnx,p/prop_$i.vnnlib,60"; done >"$T/instances.csv"
"$A" certify --instances "$T/instances.csv" --method crown >"$T/inst.out" || bad "certify --instances"
nv=$(grep -c "  verified " "$T/run.crown")
grep -q "^crown: $N instances: $nv unsat" "$T/inst.out" || bad "--instances: $(tail -1 "$T/inst.out") (the run: $nv verified)"
printf 'net.onnx,p/prop_0.vnnlib\n' >"$T/bad.csv"
"$A" certify --instances "$T/bad.csv" >"$T/o" 2>&1
[ $? -eq 2 ] && grep -q "line 1: expected ONNX,VNNLIB,TIMEOUT" "$T/o" || bad "a malformed instances line: $(cat "$T/o")"

# certificates: re-checked byte for byte; altered, another property, another signer, version 1 refused
P="$T/p/prop_3.vnnlib"
for m in ibp crown alpha-crown; do
  "$A" certify --onnx "$T/net.onnx" --vnnlib "$P" --method $m --out "$T/c.$m" --key "$T/a" --report "$T/r.$m.json" \
    --quiet >/dev/null || bad "certify --out $m"
  python3 -c "import json; d=json.load(open('$T/r.$m.json')); assert d['result'] in ('unsat','sat','unknown') and len(d['disjuncts'])==9 and d['intermediate']==('ibp' if '$m'=='ibp' else 'crown')" ||
    bad "report $m"
  "$A" check-certificate "$T/c.$m" --onnx "$T/net.onnx" --vnnlib "$P" --signer "$T/a.pub" >/dev/null || bad "check $m"
done
n=$(stat -c %s "$T/c.crown")
rejected=0
for ((i = 0; i < n; i += 3)); do
  cp "$T/c.crown" "$T/x"
  printf "$(printf '\\%03o' $(( ($(od -An -tu1 -j $i -N1 "$T/c.crown") ^ 1) )))" | dd of="$T/x" bs=1 seek=$i conv=notrunc status=none
  "$A" check-certificate "$T/x" --onnx "$T/net.onnx" --vnnlib "$P" >/dev/null 2>&1
  st=$?
  if [ $st -eq 2 ]; then rejected=$((rejected + 1)); else bad "byte $i altered: exit $st"; fi
done
echo "cert_onnx: $rejected single-byte alterations rejected"
"$A" check-certificate "$T/c.crown" --onnx "$T/net.onnx" --vnnlib "$T/p/prop_4.vnnlib" >"$T/o" 2>&1
[ $? -eq 2 ] && grep -q "another VNN-LIB file" "$T/o" || bad "another property: $(cat "$T/o")"
"$A" check-certificate "$T/c.crown" --onnx "$T/net.onnx" --vnnlib "$P" --signer "$T/other.pub" >/dev/null 2>&1 &&
  bad "another signer accepted"
"$A" certify "$T/run" --eps 0.02 --examples 2 --out "$T/c1" --key "$T/a" --quiet >/dev/null || bad "run certificate"
"$A" check-certificate "$T/c1" --onnx "$T/net.onnx" --vnnlib "$P" >"$T/o" 2>&1
[ $? -eq 2 ] && grep -q "committed run" "$T/o" || bad "a version-1 certificate with --onnx: $(cat "$T/o")"
"$A" check-certificate "$T/c.crown" "$T/run" >"$T/o" 2>&1
[ $? -eq 2 ] && grep -q "version 2" "$T/o" || bad "a version-2 certificate with RUN_DIR: $(cat "$T/o")"
"$A" check-certificate "$T/c1" "$T/run" >/dev/null || bad "the run's certificate"

# certify RUN_DIR --vnnlib: a version-3 certificate (the run in place of the file), re-checked; refused
# with --onnx, with RUN_DIR alone, with another property
"$A" certify "$T/run" --vnnlib "$P" --method alpha-crown --out "$T/c3" --key "$T/a" --report "$T/r3.json" --quiet \
  >/dev/null || bad "certify RUN_DIR --vnnlib --out"
python3 -c "import json; d=json.load(open('$T/r3.json')); assert len(d['state_hash'])==64 and len(d['disjuncts'])==9" ||
  bad "report of RUN_DIR --vnnlib"
"$A" check-certificate "$T/c3" "$T/run" --vnnlib "$P" --signer "$T/a.pub" >/dev/null || bad "check RUN_DIR --vnnlib"
cert_slopes_tampered "$T/c3" "$T/a" "$T/run --vnnlib $P" -
"$A" check-certificate "$T/c3" --onnx "$T/net.onnx" --vnnlib "$P" >"$T/o" 2>&1
[ $? -eq 2 ] && grep -q "version 3" "$T/o" || bad "a version-3 certificate with --onnx: $(cat "$T/o")"
"$A" check-certificate "$T/c3" "$T/run" >"$T/o" 2>&1
[ $? -eq 2 ] && grep -q "version 3" "$T/o" || bad "a version-3 certificate with RUN_DIR alone: $(cat "$T/o")"
"$A" check-certificate "$T/c3" "$T/run" --vnnlib "$T/p/prop_4.vnnlib" >"$T/o" 2>&1
[ $? -eq 2 ] && grep -q "another VNN-LIB file" "$T/o" || bad "RUN_DIR --vnnlib, another property: $(cat "$T/o")"
"$A" check-certificate "$T/c.crown" "$T/run" --vnnlib "$P" >"$T/o" 2>&1
[ $? -eq 2 ] && grep -q "version 2" "$T/o" || bad "a version-2 certificate with RUN_DIR --vnnlib: $(cat "$T/o")"
"$A" certify "$T/run" --vnnlib "$P" --eps 0.1 >"$T/o" 2>&1
[ $? -eq 64 ] && grep -q "the property gives the box" "$T/o" || bad "RUN_DIR --vnnlib --eps: $(cat "$T/o")"

# --timeout: an expired deadline answers timeout and writes no certificate
got=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$P" --method alpha-crown --timeout 1e-9 --out "$T/ct" --key "$T/a" \
  --quiet 2>/dev/null)
[ "$got" = timeout ] || bad "--timeout 1e-9: $got"
[ -e "$T/ct" ] && bad "a certificate written on a timeout"
# --result FILE: VNN-COMP's result file, the answer line (timeout too) and for sat the assignment (the --cex
# file's); a deadline never reached changes no byte
"$A" certify --onnx "$T/net.onnx" --vnnlib "$P" --method crown --timeout 1e-300 --result "$T/res" --quiet >/dev/null ||
  bad "--result with --timeout"
[ "$(head -1 "$T/res")" = timeout ] && [ "$(wc -l <"$T/res")" -eq 1 ] || bad "--result on a timeout: $(cat "$T/res")"
nres=0
for ((i = 0; i < N; i++)); do
  got=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_$i.vnnlib" --method crown --cex "$T/rc" --result "$T/res" --quiet)
  [ "$(head -1 "$T/res")" = "$got" ] || bad "--result $i: $(head -1 "$T/res"), the line $got"
  if [ "$got" = sat ]; then
    nres=$((nres + 1))
    tail -n +2 "$T/res" | cmp -s - "$T/rc" || bad "--result $i: not the counterexample"
  else
    [ "$(wc -l <"$T/res")" -eq 1 ] || bad "--result $i: more than its line"
  fi
done
[ $nres -gt 0 ] || bad "--result: no sat property to check the assignment on"
"$A" certify --onnx "$T/net.onnx" --vnnlib "$P" --method alpha-crown --timeout 1e6 --out "$T/ct6" --key "$T/a" \
  --quiet >/dev/null || bad "--timeout 1e6"
cmp -s "$T/c.alpha-crown" "$T/ct6" || bad "a deadline never reached changed the certificate"

# hostile ONNX: exit 2 for bytes that are not a model, 64 for what is not supported
expect_certify() { # STATUS GREP ARGS...
  local want=$1 pat=$2
  shift 2
  "$A" certify "$@" >"$T/o" 2>&1
  local st=$?
  [ $st -eq "$want" ] && grep -q -- "$pat" "$T/o" || bad "$* : exit $st (wanted $want, '$pat'): $(head -c 300 "$T/o")"
}
head -c 3000 "$T/net.onnx" >"$T/trunc.onnx"
expect_certify 2 "not an ONNX model" --onnx "$T/trunc.onnx" --vnnlib "$P"
printf 'hello' >"$T/junk.onnx"
expect_certify 2 "not an ONNX model" --onnx "$T/junk.onnx" --vnnlib "$P"
if command -v protoc >/dev/null && [ -r /usr/include/onnx/onnx.proto ]; then
  # the network's text form, edited: a float64 weight; an unsupported operator
  protoc --proto_path=/usr/include/onnx --decode=onnx.ModelProto onnx.proto <"$T/net.onnx" >"$T/net.txt" || bad "protoc decode"
  sed '0,/data_type: 1/s//data_type: 11/' "$T/net.txt" | protoc --proto_path=/usr/include/onnx --encode=onnx.ModelProto onnx.proto >"$T/f64.onnx"
  expect_certify 64 "data type 11" --onnx "$T/f64.onnx" --vnnlib "$P"
  sed '0,/op_type: "Relu"/s//op_type: "Sigmoid"/' "$T/net.txt" | protoc --proto_path=/usr/include/onnx --encode=onnx.ModelProto onnx.proto >"$T/sig.onnx"
  expect_certify 64 "operator Sigmoid is not supported" --onnx "$T/sig.onnx" --vnnlib "$P"
else
  # without protoc: the same edits on the bytes, lengths kept: initializer fc1.weight's data_type
  # (TensorProto field 2, serialised before its name, field 8: 0x10 0x01 -> 0x10 0x0b, DOUBLE); the
  # op_type "Relu" -> "Relx"
  python3 - "$T/net.onnx" "$T" <<'EOF' || bad "byte edits"
import sys
b = open(sys.argv[1], "rb").read()
i = b.index(b"\x42\x0afc1.weight")
j = b.rindex(b"\x10\x01", max(0, i - 40), i)
open(sys.argv[2] + "/f64.onnx", "wb").write(b[:j] + b"\x10\x0b" + b[j + 2:])
i = b.index(b"Relu")
open(sys.argv[2] + "/sig.onnx", "wb").write(b[:i] + b"Relx" + b[i + 4:])
EOF
  expect_certify 64 "data type 11" --onnx "$T/f64.onnx" --vnnlib "$P"
  expect_certify 64 "operator Relx is not supported" --onnx "$T/sig.onnx" --vnnlib "$P"
fi
# hostile VNN-LIB: exit 2 malformed (naming the line), 64 unsupported or not fitting the network
printf '(declare-const X_0 Real)\n(assert (<= X_0 1)\n' >"$T/v1"
expect_certify 2 "line 2" --onnx "$T/net.onnx" --vnnlib "$T/v1"
printf '(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 0))\n(assert (<= X_0 1))\n(check-sat)\n' >"$T/v2"
expect_certify 64 "line 5: only declare-const and assert" --onnx "$T/net.onnx" --vnnlib "$T/v2"
sed 's/(assert (<= X_5 [^)]*))//' "$P" >"$T/v3"
expect_certify 64 "X_5 has no upper bound" --onnx "$T/net.onnx" --vnnlib "$T/v3"
printf '(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 0))\n(assert (<= X_0 1))\n' >"$T/v4"
expect_certify 64 "declares 1 inputs and 1 outputs" --onnx "$T/net.onnx" --vnnlib "$T/v4"
expect_certify 2 "cannot open" --onnx "$T/net.onnx" --vnnlib "$T/none.vnnlib"
# usage
expect_certify 64 "go together" --onnx "$T/net.onnx"
expect_certify 64 "committed runs" --onnx "$T/net.onnx" --vnnlib "$P" --eps 0.1
cert_end
