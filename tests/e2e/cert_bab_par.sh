#!/usr/bin/env bash
# cert_bab_par.sh BUILD_DIR - branch and bound over threads (docs/certify.md "Branch and bound",
# "Parallel search"): `certify --method beta-crown` with --threads 1, 2 and 3 gives the same answers and
# the same certificate bytes (a committed run's 40 examples, version 5; a VNN-LIB property of its ONNX
# export whose tree has more than one node, version 6); check-certificate's leaf replay over 1 and 2
# threads accepts it, and a tampered tree (a leaf's bound, a dropped leaf, a moved split) is rejected with
# the same message (the same node) whatever the threads. --timeout: a deadline passed at once answers
# alike on 1 and 2 threads; one never reached changes no byte on 2.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert_bab_par "${1:-}"
cert_train_mlp "$T/run"
E=0.06
for n in 1 2 3; do
  "$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --threads $n --out "$T/c.$n" --key "$T/a" \
    --report "$T/r.$n.json" --quiet >"$T/out.$n" || bad "certify --threads $n"
done
for n in 2 3; do
  cmp -s "$T/c.1" "$T/c.$n" || bad "--threads 1 and $n: the certificates differ"
  [ "$(sed 's/certificate .*//' "$T/out.1")" = "$(sed 's/certificate .*//' "$T/out.$n")" ] ||
    bad "--threads 1 and $n: the answers differ"
  python3 -c "import json,sys; a,b=(json.load(open(p))['examples'] for p in sys.argv[1:]); assert a==b" \
    "$T/r.1.json" "$T/r.$n.json" || bad "--threads 1 and $n: the reports differ"
done
# --timeout: a deadline passed before the first bound answers the same (timeout, or falsified by the
# example's own input) for every N; one never reached changes no byte
for n in 1 2; do
  "$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --threads $n --timeout 1e-300 --report "$T/t.$n.json" \
    --quiet >/dev/null 2>&1 || bad "--timeout 1e-300 --threads $n"
done
python3 -c "import json,sys; a,b=(json.load(open(p))['examples'] for p in sys.argv[1:]); assert a==b" \
  "$T/t.1.json" "$T/t.2.json" || bad "--timeout 1e-300: --threads 1 and 2 answer differently"
"$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --threads 2 --timeout 1e6 --out "$T/c.t" --key "$T/a" \
  --quiet >/dev/null || bad "--timeout 1e6 --threads 2"
cmp -s "$T/c.1" "$T/c.t" || bad "--threads 2: a deadline never reached changed the certificate"
T5="python3 $REF/cert_bab_edit.py"
[ "$($T5 "$T/c.1" trees | awk '$3 > 1' | wc -l)" -ge 2 ] || bad "fewer than two split trees"
for n in 1 2; do
  "$A" check-certificate "$T/c.2" "$T/run" --threads $n --signer "$T/a.pub" >"$T/chk.$n" || bad "check --threads $n"
done
cmp -s "$T/chk.1" "$T/chk.2" || bad "check-certificate: --threads 1 and 2 print different lines"
for what in bound dropleaf split; do
  for n in 1 2; do
    cp "$T/c.1" "$T/x.$what"
    $T5 "$T/x.$what" $what >/dev/null && "$B/vt_cert_resign" "$T/x.$what" "$T/a" || bad "$what: edit"
    "$A" check-certificate "$T/x.$what" "$T/run" --threads $n >/dev/null 2>"$T/x.$what.$n"
    st=$?
    [ $st -eq 2 ] && grep -q "split tree node [0-9]" "$T/x.$what.$n" || bad "$what --threads $n: exit $st, $(cat "$T/x.$what.$n")"
  done
  cmp -s "$T/x.$what.1" "$T/x.$what.2" || bad "$what: --threads 1 and 2 reject it differently"
done
# a VNN-LIB property of the ONNX export: the first one beta-crown closes with a tree of more than one node
if cert_bab_onnx_prop "$T/run" $E; then
  for n in 1 2; do
    "$A" certify --onnx "$T/net.onnx" --vnnlib "${P:-x}" --method beta-crown --threads $n --out "$T/v6.$n" --key "$T/a" \
      --quiet >"$T/v6.$n.out" || bad "certify --onnx --threads $n"
    "$A" check-certificate "$T/v6.1" --onnx "$T/net.onnx" --vnnlib "${P:-x}" --threads $n >/dev/null || bad "check v6 --threads $n"
  done
  cmp -s "$T/v6.1" "$T/v6.2" && cmp -s "$T/v6.1.out" "$T/v6.2.out" || bad "--onnx: --threads 1 and 2 differ"
else
  echo "cert_bab_par: this auditor has no ONNX support: the VNN-LIB part skipped"
fi
cert_end
