#!/usr/bin/env bash
# cert_cnn.sh BUILD_DIR - `auditor certify` of a committed residual CNN run (docs/certify.md "The
# residual CNN"): a tiny resnet trained on the digits (1 x 8 x 8) and one on the CIFAR-10 subset,
# certified with IBP and CROWN (the digits run also with alpha-CROWN and with CROWN-IBP, --intermediate
# ibp; signed certificates, version 4, the method word's bit 8 set for CROWN's intermediate bounds),
# each re-checked byte for byte in other evaluation orders and re-certified in another; CROWN verifies
# at least as many examples as IBP and some, and as CROWN-IBP with every example's bound no weaker;
# alpha-CROWN's every example's bound is no weaker than CROWN's; an altered certificate (a bound, the
# header, a slope, the intermediate bounds' bit) is rejected. The JSON report names the intermediate
# bounds used and, for alpha-CROWN, the search settings. --timeout: an expired deadline answers timeout and
# writes no certificate, one never reached changes no byte.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert_cnn "${1:-}"
R="$RECIPES/resnet-cifar10.json"
cert_train_cnn "$T/digits"
margs() { if [ "$1" = crown-ibp ]; then echo "--method crown --intermediate ibp"; else echo "--method $1"; fi; }
"$B/trainer" train "$T/cifar" --key "$T/k" --recipe "$R" --set subset=256 --set resnet_width=4 \
  --set resnet_stages=2 --set batch=16 --set steps=20 --quiet >/dev/null || { echo "training (cifar10) failed"; exit 1; }
for run in digits cifar; do
  eps=0.002 n=20
  [ $run = cifar ] && eps=0.0002 n=4
  ms="ibp crown"
  [ $run = digits ] && ms="ibp crown crown-ibp alpha-crown"
  for m in $ms; do
    # shellcheck disable=SC2046
    "$B/auditor" certify "$T/$run" --eps $eps --examples $n $(margs $m) --out "$T/c.$run.$m" --key "$T/a" \
      --report "$T/r.$run.$m.json" --pubkey "$T/k.pub" --quiet >"$T/out.$run.$m" || bad "certify $run $m"
    w=$(od -An -tu4 -j12 -N4 "$T/c.$run.$m" | tr -d ' ')
    case $m in ibp) ww=0 ;; crown) ww=257 ;; crown-ibp) ww=1 ;; *) ww=258 ;; esac
    [ "$w" = $ww ] || bad "$run $m: method word $w, expected $ww"
    case $m in crown|alpha-crown) wi=crown ;; *) wi=ibp ;; esac
    python3 -c "import json; d=json.load(open('$T/r.$run.$m.json')); assert len(d['examples'])==$n
assert d['intermediate']=='$wi' and ('alpha_iters' in d['settings'])==('$m'=='alpha-crown')" || bad "report $run $m"
    [ "$(od -An -tu4 -j8 -N4 "$T/c.$run.$m" | tr -d ' ')" = 4 ] || bad "$run $m: not a version-4 certificate"
    for o in reverse permuted; do
      "$B/auditor" check-certificate "$T/c.$run.$m" "$T/$run" --order $o --signer "$T/a.pub" >/dev/null ||
        bad "check $run $m $o"
    done
  done
  for m in $ms; do
    [ $m = ibp ] && continue
    # shellcheck disable=SC2046
    "$B/auditor" certify "$T/$run" --eps $eps --examples $n $(margs $m) --out "$T/c2" --key "$T/a" --order sorted \
      --quiet >/dev/null || bad "certify $run $m sorted"
    cmp -s "$T/c.$run.$m" "$T/c2" || bad "$run $m: certificates of two orders differ"
  done
done
vi=$(sed -n 's/.*: \([0-9]*\) verified.*/\1/p' "$T/out.digits.ibp")
vc=$(sed -n 's/.*: \([0-9]*\) verified.*/\1/p' "$T/out.digits.crown")
[ -n "$vc" ] && [ "$vc" -ge "${vi:-0}" ] && [ "$vc" -ge 1 ] || bad "CROWN verified $vc, IBP $vi"
vb=$(sed -n 's/.*: \([0-9]*\) verified.*/\1/p' "$T/out.digits.crown-ibp")
[ -n "$vb" ] && [ "$vc" -ge "$vb" ] || bad "CROWN verified $vc, CROWN-IBP $vb"
va=$(sed -n 's/.*: \([0-9]*\) verified.*/\1/p' "$T/out.digits.alpha-crown")
[ -n "$va" ] && [ "$va" -ge "$vc" ] || bad "alpha-CROWN verified $va, CROWN $vc"
# every example's bound no weaker: alpha-CROWN's than CROWN's, CROWN's than CROWN-IBP's (the reports'
# smallest margin bounds); the number of examples where it is larger
no_weaker() {
  python3 - "$1" "$2" <<'PY'
import json, sys
c, a = (json.load(open(f))["examples"] for f in sys.argv[1:3])
lo = lambda v: float("-inf") if v is None else v
assert len(c) == len(a)
for x, y in zip(c, a):
    assert lo(y["margin_lower_bound"]) >= lo(x["margin_lower_bound"]), (x, y)
print(sum(lo(y["margin_lower_bound"]) > lo(x["margin_lower_bound"]) for x, y in zip(c, a)))
PY
}
better=$(no_weaker "$T/r.digits.crown.json" "$T/r.digits.alpha-crown.json") || bad "alpha-CROWN weaker than CROWN on an example"
fuller=$(no_weaker "$T/r.digits.crown-ibp.json" "$T/r.digits.crown.json") || bad "CROWN weaker than CROWN-IBP on an example"
echo "cert_cnn: digits eps 0.002: IBP verified $vi of 20, CROWN-IBP $vb, CROWN $vc (a larger bound than CROWN-IBP's on" \
  "$fuller examples), alpha-CROWN $va (a larger bound than CROWN's on $better examples)"
# the intermediate bounds' bit: cleared (CROWN-IBP's bounds recomputed: they differ), or another bit,
# or set with IBP: rejected
cert_onepass "$T/c.digits.crown" "$T/a" "crown: bit 8 cleared" "differs from byte\|recorded" "$T/digits" method 1
cert_onepass "$T/c.digits.crown" "$T/a" "crown: bit 9" "method word" "$T/digits" method 0x201
cert_onepass "$T/c.digits.ibp" "$T/a" "ibp: bit 8 set" "method word" "$T/digits" method 0x100
# --intermediate: not with IBP, nor with check-certificate (the certificate records it)
"$B/auditor" certify "$T/digits" --eps $eps --examples 1 --method ibp --intermediate crown >/dev/null 2>&1
[ $? -eq 64 ] || bad "--method ibp --intermediate crown: not a usage error"
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
ex=$(python3 "$REF/cert_edit.py" "$T/c.digits.alpha-crown" records | awk '$4 > 0 { print $1; exit }')
[ -n "$ex" ] || bad "alpha-crown: no example with a slope strictly inside [0, 1]"
cert_slopes_tampered "$T/c.digits.alpha-crown" "$T/a" "$T/digits" "${ex:-0}"
# a certificate of one run does not check against another
"$B/auditor" check-certificate "$T/c.digits.crown" "$T/cifar" >/dev/null 2>&1 && bad "another run accepted"
# --timeout: a deadline passed before the first bound answers timeout (an example whose every bound or the
# attack finishes before a check keeps the answer it has without one), writes no certificate; a deadline
# never reached changes no byte
for m in crown alpha-crown; do
  rm -f "$T/t.$m"
  "$B/auditor" certify "$T/digits" --eps 0.002 --examples 20 --method $m --timeout 1e-300 --out "$T/t.$m" --key "$T/a" \
    --report "$T/t.$m.json" --quiet >/dev/null 2>"$T/t.err" || bad "certify $m --timeout: exit $?"
  [ ! -e "$T/t.$m" ] && grep -q "timed out: no certificate written" "$T/t.err" || bad "$m --timeout: a certificate written"
  python3 - "$T/t.$m.json" "$T/r.digits.$m.json" <<'PY' || bad "$m --timeout answers"
import json, sys
t, a = (json.load(open(p)) for p in sys.argv[1:3])
aa = {e["index"]: e["answer"] for e in a["examples"]}
assert t["timeout"] > 0, t
assert all(e["answer"] in ("timeout", aa[e["index"]]) for e in t["examples"]), "an answer that is not the run's"
PY
done
"$B/auditor" certify "$T/digits" --eps 0.002 --examples 20 --method alpha-crown --timeout 1e6 --out "$T/t6" --key "$T/a" \
  --pubkey "$T/k.pub" --quiet >/dev/null || bad "certify --timeout 1e6"
cmp -s "$T/c.digits.alpha-crown" "$T/t6" || bad "a deadline never reached changed the certificate"
cert_end
