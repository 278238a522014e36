#!/usr/bin/env bash
# cert_bab_input.sh BUILD_DIR - branch and bound by input splitting (docs/certify.md "Input splitting"):
# on a random 4-input MLP (bench/gen_mlp_onnx.py, 4-32-32-3) and 12 VNN-LIB properties, beta-crown
# never contradicts alpha-CROWN (unsat stays unsat, sat stays sat) and closes at least one property
# alpha-CROWN leaves open with a tree of input splits; its certificate (version 8) is the same bytes with
# --threads 1 and 2 and re-checked by both; a tampered input split (its point outside its box, moved
# inside it, its input out of range) or a dropped leaf, signed again, is rejected naming the node; the
# closed property's box sampled in FP64 outside the project (tests/ref/bab_input_sample.py) never reaches
# its unsafe region.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert_bab_input "${1:-}"
python3 "$SRC/bench/gen_mlp_onnx.py" "$T/net.onnx" 4-32-32-3 --seed 5 --props "$T" --eps 0.3 --count 12 || bad "gen"
cert_onnx_or_skip "$T/net.onnx" "$T/prop_0.vnnlib"
P="" gain=0
for ((i = 0; i < 12; i++)); do
  a=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/prop_$i.vnnlib" --method alpha-crown --quiet)
  b=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/prop_$i.vnnlib" --method beta-crown --report "$T/r.json" --quiet)
  [ "$a" = unsat ] && [ "$b" != unsat ] && bad "property $i: alpha-crown unsat, beta-crown $b"
  [ "$a" = sat ] && [ "$b" != sat ] && bad "property $i: alpha-crown sat, beta-crown $b"
  if [ "$a" != unsat ] && [ "$b" = unsat ]; then
    gain=$((gain + 1))
    [ -z "$P" ] && python3 -c "import json; assert json.load(open('$T/r.json'))['tree_nodes'] > 1" && P="$T/prop_$i.vnnlib"
  fi
done
echo "cert_bab_input: beta-crown (input splitting) closed $gain properties alpha-crown leaves open"
[ -n "$P" ] || bad "no property closed by input splitting"
P=${P:-$T/prop_0.vnnlib}
# outside: the network rebuilt from the generator's seed in FP64 (Python), the closed property's box
# sampled (3,000 points and its corners): no point reaches the unsafe region; a sat one's does
pi=$(basename "$P" .vnnlib) pi=${pi#prop_}
python3 "$REF/bab_input_sample.py" 4-32-32-3 5 "$P" "$pi" || bad "property $pi: a sampled point reaches the unsafe region"
python3 "$REF/bab_input_sample.py" 4-32-32-3 5 "$T/prop_0.vnnlib" 0 300 >/dev/null && bad "the sampler misses a sat property"
for n in 1 2; do
  "$A" certify --onnx "$T/net.onnx" --vnnlib "$P" --method beta-crown --threads $n --out "$T/v.$n" --key "$T/a" \
    --quiet >/dev/null || bad "certify --threads $n"
  "$A" check-certificate "$T/v.1" --onnx "$T/net.onnx" --vnnlib "$P" --threads $n --signer "$T/a.pub" >/dev/null ||
    bad "check --threads $n"
done
cmp -s "$T/v.1" "$T/v.2" || bad "--threads 1 and 2: the certificates differ"
E8="python3 $REF/cert_babi_edit.py"
[ "$($E8 "$T/v.1" info | head -1)" = 8 ] && [ "$($E8 "$T/v.1" info | grep -c ' input ')" -ge 1 ] ||
  bad "not a version-8 certificate with an input split"
for edit in "outside:split tree node [0-9]* splits input [0-9]* at 5, not inside its box" \
  "moved:split tree node [0-9]* (a leaf): \(row [0-9]*'s recorded bound\|slope [0-9]* is .*, not the .* certify writes\)" \
  "input:split tree node [0-9]* splits input 99" \
  "dropleaf:split tree node [0-9]* (input [0-9]*) lacks its upper child"; do
  what=${edit%%:*} msg=${edit#*:}
  cp "$T/v.1" "$T/x"
  $E8 "$T/x" "$what" >/dev/null && "$B/vt_cert_resign" "$T/x" "$T/a" || { bad "$what: edit"; continue; }
  "$A" check-certificate "$T/x" --onnx "$T/net.onnx" --vnnlib "$P" >/dev/null 2>"$T/x.err"
  st=$?
  if [ $st -eq 2 ] && grep -q -- "$msg" "$T/x.err"; then :; else bad "$what: exit $st, $(cat "$T/x.err")"; fi
done
cert_end
