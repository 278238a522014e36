#!/usr/bin/env bash
# cert.sh BUILD_DIR - `auditor certify` / `auditor check-certificate` end to end (docs/certify.md):
# a small MLP trained on the digits, certified with IBP, CROWN and alpha-CROWN (signed certificates),
# each re-checked byte for byte in other evaluation orders; every byte of a certificate altered is
# rejected, a truncated or extended one too, another signer is refused; the one-pass check (docs/certify.md
# "The certificate") rejects re-signed certificates whose slopes, bounds, answers or counterexamples
# were altered.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert "${1:-}"
cert_train_mlp "$T/run"
for m in ibp crown alpha-crown; do
  "$B/auditor" certify "$T/run" --eps 0.02 --examples 12 --method $m --out "$T/c.$m" --key "$T/a" \
    --report "$T/r.$m.json" --pubkey "$T/k.pub" --quiet >"$T/out.$m" || bad "certify $m"
  grep -q "verified" "$T/out.$m" || bad "certify $m: no summary"
  python3 -c "import json,sys; d=json.load(open('$T/r.$m.json')); assert len(d['examples'])==12
assert d['intermediate']==('ibp' if '$m'=='ibp' else 'crown') and d['settings']['attack_restarts']>0" || bad "report $m"
  for o in reverse forward permuted; do
    "$B/auditor" check-certificate "$T/c.$m" "$T/run" --order $o --signer "$T/a.pub" >/dev/null || bad "check $m $o"
  done
done
# a second certify in another order writes the same bytes
"$B/auditor" certify "$T/run" --eps 0.02 --examples 12 --method crown --out "$T/c2" --key "$T/a" --order sorted \
  --quiet >/dev/null || bad "certify sorted"
cmp -s "$T/c.crown" "$T/c2" || bad "certificates of two orders differ"
grep -q falsified "$T/out.crown" || echo "note: no falsified example at this eps"
# every byte altered: rejected (exit 2)
n=$(stat -c %s "$T/c.crown")
rejected=0
for ((i = 0; i < n; i++)); do
  cp "$T/c.crown" "$T/x"
  printf "$(printf '\\%03o' $(( ($(od -An -tu1 -j $i -N1 "$T/c.crown") ^ 1) )))" | dd of="$T/x" bs=1 seek=$i conv=notrunc status=none
  "$B/auditor" check-certificate "$T/x" "$T/run" >/dev/null 2>&1
  st=$?
  if [ $st -eq 2 ]; then rejected=$((rejected + 1)); else bad "byte $i altered: exit $st"; fi
done
echo "cert: $rejected of $n single-byte alterations rejected"
head -c $((n - 1)) "$T/c.crown" >"$T/x"
"$B/auditor" check-certificate "$T/x" "$T/run" >/dev/null 2>&1 && bad "truncated accepted"
{ cat "$T/c.crown"; printf 'x'; } >"$T/x"
"$B/auditor" check-certificate "$T/x" "$T/run" >/dev/null 2>&1 && bad "extended accepted"
"$B/auditor" check-certificate "$T/c.crown" "$T/run" --signer "$T/other.pub" >/dev/null 2>&1 && bad "another signer accepted"
# the one-pass check (alpha-CROWN's bounds from the recorded slopes, the recorded counterexample
# confirmed): altered certificates signed again by the auditor's key are rejected for their contents
"$B/auditor" certify "$T/run" --eps 0.02 --examples 12 --method alpha-crown --out "$T/c.one" --key "$T/a" \
  --write-vnnlib "$T" --quiet >/dev/null || bad "certify alpha-crown --write-vnnlib"
E="python3 $REF/cert_edit.py"
onepass() { cert_onepass "$T/c.one" "$T/a" "$1" "$2" "$T/run" "${@:3}"; }
"$B/auditor" check-certificate "$T/c.one" "$T/run" >/dev/null || bad "one-pass: the honest certificate"
frac=$($E "$T/c.one" records | awk '$4 > 0 { print $1; exit }')
[ -n "$frac" ] || bad "one-pass: no example with a slope strictly inside [0, 1]"
cert_slopes_tampered "$T/c.one" "$T/a" "$T/run" "${frac:-0}"
onepass "a bound raised" "differs from byte" bound 0 1e-3
# eps outside [0, 1] (a negative one would be an inverted box, an empty ball): refused as certify refuses it
for v in -0.5 1.5 nan; do onepass "eps $v" "eps must be in \[0, 1\]" eps "$v"; done
fals=$($E "$T/c.one" records | awk '$2 == 1 { print $1 }')
[ -n "$fals" ] || bad "one-pass: no falsified example at eps 0.02"
for i in $fals; do
  onepass "example $i claimed verified" "recorded verified; the one-pass check gives unknown" verified "$i"
  cp "$T/c.one" "$T/x"
  if [ "$($E "$T/x" cexclean "$i" "$T/prop_$i.vnnlib")" != same ]; then # the example itself as counterexample
    onepass "example $i's counterexample replaced by its input" "does not violate" cexclean "$i" "$T/prop_$i.vnnlib"
  fi
done
# usage errors
"$B/auditor" certify "$T/run" --examples 2 >/dev/null 2>&1; [ $? -eq 64 ] || bad "no --eps: not 64"
"$B/auditor" certify "$T/run" --eps 0.1 --examples 2 --method beta >/dev/null 2>&1; [ $? -eq 64 ] || bad "bad method: not 64"
# --intermediate ibp is the layer graph's (an MLP's CROWN always has CROWN's intermediate bounds)
"$B/auditor" certify "$T/run" --eps 0.01 --examples 2 --intermediate ibp >"$T/ii" 2>&1
[ $? -eq 64 ] && grep -q "intermediate ibp is for the layer graph" "$T/ii" || bad "MLP --intermediate ibp: not refused (64)"
"$B/auditor" certify "$T/run" --eps 0.01 --examples 2 --intermediate none >/dev/null 2>&1; [ $? -eq 64 ] || bad "--intermediate none: not 64"
# the lanes' implementations (docs/certify.md, VT_CERT_IMPL): every one this CPU runs writes the same
# certificate, for CROWN, alpha-CROWN and beta-crown (the default's, the avx2 lanes where the CPU has AVX2)
for m in crown alpha-crown beta-crown; do
  "$B/auditor" certify "$T/run" --eps 0.06 --examples 10 --method $m --out "$T/l.ref" --key "$T/a" --quiet >/dev/null 2>&1 ||
    bad "lanes: certify $m"
  for impl in scalar vector avx2; do
    VT_CERT_IMPL=$impl "$B/auditor" certify "$T/run" --eps 0.06 --examples 10 --method $m --out "$T/l.$impl" --key "$T/a" \
      --quiet >/dev/null 2>&1 && cmp -s "$T/l.ref" "$T/l.$impl" && ok || bad "lanes: $m with VT_CERT_IMPL=$impl: another certificate"
  done
done
# the attack's settings: recorded in the certificate (and its report), which the check reads; not the
# check's options; 0 refused
"$B/auditor" certify "$T/run" --eps 0.05 --examples 4 --attack-restarts 2 --attack-iters 7 --out "$T/atk" --key "$T/a" \
  --report "$T/atk.json" --quiet >/dev/null 2>&1 || bad "certify --attack-restarts 2 --attack-iters 7"
grep -q '"attack_restarts": 2, "attack_iters": 7' "$T/atk.json" || bad "--attack-restarts/--attack-iters: not in the report"
"$B/auditor" check-certificate "$T/atk" "$T/run" >/dev/null 2>&1 || bad "check-certificate of a --attack-iters 7 certificate"
"$B/auditor" check-certificate "$T/atk" "$T/run" --attack-iters 7 >/dev/null 2>&1; [ $? -eq 64 ] || bad "check --attack-iters: not 64"
"$B/auditor" certify "$T/run" --eps 0.05 --examples 2 --attack-restarts 0 >/dev/null 2>&1; [ $? -eq 64 ] || bad "--attack-restarts 0: not 64"
cert_end
