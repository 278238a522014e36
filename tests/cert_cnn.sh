#!/usr/bin/env bash
# cert_cnn.sh BUILD_DIR - `auditor certify` of a committed residual CNN run (docs/certify.md "The
# residual CNN"): a tiny resnet trained on the digits (1 x 8 x 8) and one on the CIFAR-10 subset,
# certified with IBP and CROWN (the digits run also with alpha-CROWN; signed certificates, version 4),
# each re-checked byte for byte in other evaluation orders and re-certified in another; CROWN verifies
# at least as many examples as IBP and some; alpha-CROWN's every example's bound is no weaker than
# CROWN's; an altered certificate (a bound, the header, a slope) is rejected.
# shellcheck source=tests/cert_lib.sh
. "$(dirname "$0")/cert_lib.sh"
cert_begin cert_cnn "${1:-}"
R="$HERE/../recipes/resnet-cifar10.json"
cert_train_cnn "$T/digits"
"$B/trainer" train --run "$T/cifar" --key "$T/k" --recipe "$R" --set subset=256 --set resnet_width=4 \
  --set resnet_stages=2 --set batch=16 --set steps=20 --quiet >/dev/null || { echo "training (cifar10) failed"; exit 1; }
for run in digits cifar; do
  eps=0.002 n=20
  [ $run = cifar ] && eps=0.0002 n=4
  ms="ibp crown"
  [ $run = digits ] && ms="ibp crown alpha-crown"
  for m in $ms; do
    "$B/auditor" certify "$T/$run" --eps $eps --examples $n --method $m --out "$T/c.$run.$m" --key "$T/a" \
      --report "$T/r.$run.$m.json" --pubkey "$T/k.pub" --quiet >"$T/out.$run.$m" || bad "certify $run $m"
    python3 -c "import json; d=json.load(open('$T/r.$run.$m.json')); assert len(d['examples'])==$n" || bad "report $run $m"
    [ "$(od -An -tu4 -j8 -N4 "$T/c.$run.$m" | tr -d ' ')" = 4 ] || bad "$run $m: not a version-4 certificate"
    for o in reverse permuted; do
      "$B/auditor" check-certificate "$T/c.$run.$m" "$T/$run" --order $o --signer "$T/a.pub" >/dev/null ||
        bad "check $run $m $o"
    done
  done
  for m in $ms; do
    [ $m = ibp ] && continue
    "$B/auditor" certify "$T/$run" --eps $eps --examples $n --method $m --out "$T/c2" --key "$T/a" --order sorted \
      --quiet >/dev/null || bad "certify $run $m sorted"
    cmp -s "$T/c.$run.$m" "$T/c2" || bad "$run $m: certificates of two orders differ"
  done
done
vi=$(sed -n 's/.*: \([0-9]*\) verified.*/\1/p' "$T/out.digits.ibp")
vc=$(sed -n 's/.*: \([0-9]*\) verified.*/\1/p' "$T/out.digits.crown")
[ -n "$vc" ] && [ "$vc" -ge "${vi:-0}" ] && [ "$vc" -ge 1 ] || bad "CROWN verified $vc, IBP $vi"
va=$(sed -n 's/.*: \([0-9]*\) verified.*/\1/p' "$T/out.digits.alpha-crown")
[ -n "$va" ] && [ "$va" -ge "$vc" ] || bad "alpha-CROWN verified $va, CROWN $vc"
# alpha-CROWN's bound of every example no weaker than CROWN's (the reports' smallest margin bounds)
better=$(python3 - "$T/r.digits.crown.json" "$T/r.digits.alpha-crown.json" <<'PY'
import json, sys
c, a = (json.load(open(f))["examples"] for f in sys.argv[1:3])
lo = lambda v: float("-inf") if v is None else v
assert len(c) == len(a)
for x, y in zip(c, a):
    assert lo(y["margin_lower_bound"]) >= lo(x["margin_lower_bound"]), (x, y)
print(sum(lo(y["margin_lower_bound"]) > lo(x["margin_lower_bound"]) for x, y in zip(c, a)))
PY
) || bad "alpha-CROWN weaker than CROWN on an example"
echo "cert_cnn: digits eps 0.002: IBP verified $vi of 20, CROWN $vc, alpha-CROWN $va (a larger bound on $better examples)"
# a flipped byte in the bounds, one in the header, one among alpha-CROWN's slopes: rejected
sz=$(stat -c %s "$T/c.digits.alpha-crown")
for w in crown:300 crown:20 alpha-crown:$((sz - 200)); do
  m=${w%%:*} at=${w#*:}
  cp "$T/c.digits.$m" "$T/x"
  printf '\x55' | dd of="$T/x" bs=1 seek=$at conv=notrunc status=none
  cmp -s "$T/x" "$T/c.digits.$m" && printf '\x56' | dd of="$T/x" bs=1 seek=$at conv=notrunc status=none
  "$B/auditor" check-certificate "$T/x" "$T/digits" >/dev/null 2>&1
  [ $? -eq 2 ] || bad "$m: byte $at altered: not rejected"
done
# the one-pass check: alpha-CROWN's recorded slopes, moved inside [0, 1] or out of it, re-signed: rejected
ex=$(python3 "$(dirname "$0")/cert_edit.py" "$T/c.digits.alpha-crown" records | awk '$4 > 0 { print $1; exit }')
[ -n "$ex" ] || bad "alpha-crown: no example with a slope strictly inside [0, 1]"
cert_slopes_tampered "$T/c.digits.alpha-crown" "$T/a" "$T/digits" "${ex:-0}"
# a certificate of one run does not check against another
"$B/auditor" check-certificate "$T/c.digits.crown" "$T/cifar" >/dev/null 2>&1 && bad "another run accepted"
cert_end
