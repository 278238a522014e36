#!/usr/bin/env bash
# cert_bab.sh BUILD_DIR - `auditor certify --method beta-crown` (branch and bound, docs/certify.md
# "Branch and bound") end to end on a small MLP trained on the digits: it verifies examples that
# alpha-CROWN leaves unknown (the counts asserted), never one the attack falsifies, and falsifies
# only examples alpha-CROWN's attack falsifies or leaves unknown; its certificate
# (version 5, the split trees) is re-checked byte for byte in other evaluation orders and written again
# with the same bytes (another order; no layers saved for children, VT_CERT_BAB_REUSE=0); a tree whose split is moved, whose leaf is dropped, whose slope, multiplier
# (beta) or bound is changed (signed again by the auditor's key) is rejected naming the node. --timeout:
# an expired deadline answers timeout (no certificate), one never reached changes no byte. beta-crown on the
# examples' VNN-LIB properties, of the ONNX export (version 6) and of the run (version 7), likewise.
# --branching babsr writes another tree the check accepts; misused, it is a usage error (exit 64).
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert_bab "${1:-}"
cert_train_mlp "$T/run"
E=0.06
for m in alpha-crown beta-crown; do
  "$A" certify "$T/run" --eps $E --examples 40 --method $m --out "$T/c.$m" --key "$T/a" --report "$T/r.$m.json" \
    --quiet >"$T/out.$m" || bad "certify $m"
done
# beta-crown: every alpha-CROWN verified example verified, the same falsified ones (the same attack runs
# first), and more verified: some unknown of alpha-CROWN closed by branch and bound
python3 - "$T/r.alpha-crown.json" "$T/r.beta-crown.json" <<'PY' || bad "beta-crown against alpha-crown"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["method"] == "beta-crown", b["method"]
ans = lambda d: {e["index"]: e["answer"] for e in d["examples"]}
aa, bb = ans(a), ans(b)
assert all(bb[i] == "verified" for i in aa if aa[i] == "verified"), "alpha-crown verified, beta-crown not"
assert all(bb[i] == "falsified" for i in aa if aa[i] == "falsified"), "alpha-crown falsified, beta-crown not"
# the search's own candidates (each subdomain's smallest point, confirmed by the exact evaluation) may
# falsify what the attack missed; check-certificate below confirms every recorded counterexample again
assert all(aa[i] == "unknown" for i in aa if bb[i] == "falsified" and aa[i] != "falsified"), "an answer changed"
assert not any(aa[i] == "falsified" and bb[i] == "verified" for i in aa), "verified where the attack falsifies"
gained = sum(aa[i] == "unknown" and bb[i] == "verified" for i in aa)
print("cert_bab: alpha-crown %d verified %d falsified %d unknown; beta-crown %d verified %d falsified %d unknown "
      "(%d closed by branch and bound)" % (a["verified"], a["falsified"], a["unknown"], b["verified"], b["falsified"],
                                          b["unknown"], gained))
assert gained >= 2 and b["unknown"] < a["unknown"], "branch and bound closed %d" % gained
# the search's saved layers were used (below: they change no byte)
assert sum(e["subdomains_reused"] for e in b["examples"] if "subdomains_reused" in e) > 0, "no layers reused"
# the report: a tree of more than one node only for a verified example; an unknown one bounded more than once
assert all(e["tree_nodes"] == 1 or e["answer"] == "verified" for e in b["examples"]), "a tree for a non-verified example"
assert all(e["subdomains"] > 1 or e["answer"] == "falsified" for e in b["examples"] if aa[e["index"]] == "unknown"), \
  "no search on an unknown example"
PY
T5="python3 $REF/cert_bab_edit.py"
[ "$($T5 "$T/c.beta-crown" trees | awk '$3 > 1' | wc -l)" -ge 2 ] || bad "fewer than two split trees"
for o in reverse forward permuted; do
  "$A" check-certificate "$T/c.beta-crown" "$T/run" --order $o --signer "$T/a.pub" >/dev/null || bad "check $o"
done
"$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --out "$T/c2" --key "$T/a" --order sorted \
  --quiet >/dev/null || bad "certify sorted"
cmp -s "$T/c.beta-crown" "$T/c2" || bad "beta-crown certificates of two orders differ"
# the saved layers of split subdomains (docs/certify.md "What the search saves") give the bits computing them gives
VT_CERT_BAB_REUSE=0 "$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --out "$T/c3" --key "$T/a" \
  --quiet >/dev/null || bad "certify VT_CERT_BAB_REUSE=0"
cmp -s "$T/c.beta-crown" "$T/c3" || bad "the saved layers change the certificate"
# --branching babsr (the scores' choice alone, not fsb's estimates): other trees, the same verified and
# falsified examples here, a certificate the check accepts (the choice is not recorded)
"$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --branching babsr --out "$T/c4" --key "$T/a" \
  --report "$T/r.babsr.json" --quiet >/dev/null || bad "certify --branching babsr"
"$A" check-certificate "$T/c4" "$T/run" --signer "$T/a.pub" >/dev/null || bad "check the babsr certificate"
! cmp -s "$T/c.beta-crown" "$T/c4" || bad "--branching babsr wrote fsb's certificate"
python3 - "$T/r.beta-crown.json" "$T/r.babsr.json" <<'PY' || bad "fsb against babsr"
import json, sys
f, b = (json.load(open(p)) for p in sys.argv[1:3])
ans = lambda d: {e["index"]: e["answer"] for e in d["examples"]}
af, ab = ans(f), ans(b)
assert not any({af[i], ab[i]} == {"verified", "falsified"} for i in af), "fsb and babsr contradict"
sub = lambda d: sum(e["subdomains"] for e in d["examples"])
print("cert_bab: fsb %d verified in %d subdomains, babsr %d in %d" % (f["verified"], sub(f), b["verified"], sub(b)))
PY
for bad_args in "--method crown --branching fsb" "--method beta-crown --branching best"; do
  # shellcheck disable=SC2086 # the options, split
  "$A" certify "$T/run" --eps $E --examples 2 $bad_args --quiet >/dev/null 2>&1
  st=$?; [ $st -eq 64 ] || bad "certify $bad_args: exit $st, want 64"
done
"$A" check-certificate "$T/c4" "$T/run" --branching fsb >/dev/null 2>&1
st=$?; [ $st -eq 64 ] || bad "check-certificate --branching: exit $st, want 64"
# the tree tampered with, signed again: rejected, the node named (tamper_with CERT EDIT "CHECK-ARGS" WHAT MSG)
tamper_with() {
  local cert=$1 edit=$2 args=$3 what=$4 msg=$5
  cp "$cert" "$T/x"
  $edit "$T/x" "$what" >/dev/null || { bad "$what: edit"; return; }
  "$B/vt_cert_resign" "$T/x" "$T/a" || { bad "$what: re-sign"; return; }
  # shellcheck disable=SC2086 # the check's arguments, split
  "$A" check-certificate "$T/x" $args >/dev/null 2>"$T/x.err"
  local st=$?
  [ $st -eq 2 ] && grep -q -- "$msg" "$T/x.err" || bad "$cert $what: exit $st, $(cat "$T/x.err")"
}
tamper() { tamper_with "$T/c.beta-crown" "$T5" "$T/run" "$@"; }
tamper split "split tree node [0-9]"
tamper dropleaf "split tree node [0-9]* (layer [0-9]* neuron [0-9]*) lacks its inactive child"
tamper alpha "example [0-9]*: split tree node [0-9]* (a leaf"
tamper bound "split tree node [0-9]* (a leaf): margin [0-9]*'s recorded bound"
tamper beta "example [0-9]*: split tree node [0-9]* (a leaf"
tamper negbeta "split tree node [0-9]*: multiplier 0 is -0.25, not a finite beta >= 0"
tamper unknown "not verified but records a split tree"
# --timeout (an MLP run's examples): a deadline that has passed before the first bound gives timeout on
# every example but those whose own input the exact evaluation misclassifies (confirmed before any bound),
# never verified or unknown, and no certificate; a deadline never reached changes no byte
for m in crown beta-crown; do
  rm -f "$T/t.$m"
  "$A" certify "$T/run" --eps $E --examples 40 --method $m --timeout 1e-300 --out "$T/t.$m" --key "$T/a" \
    --report "$T/t.$m.json" --quiet >"$T/t.out" 2>"$T/t.err" || bad "certify $m --timeout: exit $?"
  [ ! -e "$T/t.$m" ] && grep -q "timed out: no certificate written" "$T/t.err" || bad "$m --timeout: a certificate written"
  python3 - "$T/t.$m.json" "$T/r.alpha-crown.json" <<'PY' || bad "$m --timeout answers"
import json, sys
t, a = (json.load(open(p)) for p in sys.argv[1:3])
aa = {e["index"]: e["answer"] for e in a["examples"]}
assert t["verified"] == 0 and t["unknown"] == 0 and t["timeout"] + t["falsified"] == 40, t
assert t["timeout"] > 0, t
assert all(aa[e["index"]] == "falsified" for e in t["examples"] if e["answer"] == "falsified"), "falsified only here"
assert all(e["answer"] in ("timeout", "falsified") for e in t["examples"]), "another answer"
PY
done
"$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --timeout 1e6 --out "$T/c3" --key "$T/a" \
  --quiet >/dev/null || bad "certify --timeout 1e6"
cmp -s "$T/c.beta-crown" "$T/c3" || bad "a deadline never reached changed the certificate"
"$A" certify "$T/run" --eps $E --examples 2 --timeout 0 >/dev/null 2>&1; [ $? -eq 64 ] || bad "--timeout 0: not 64"
"$A" check-certificate "$T/c3" "$T/run" --timeout 5 >/dev/null 2>&1; [ $? -eq 64 ] || bad "check --timeout: not 64"
# beta-crown on VNN-LIB properties (issue 40 item 3): the same examples as properties of the run's ONNX
# export and of the run itself; never an answer contradicting the run's beta-crown verdict, and more unsat
# than alpha-CROWN's on the file; the version-6 / 7 certificates re-checked (every order), the same bytes
# in two orders, a tampered tree rejected naming the node
mkdir -p "$T/p"
"$A" certify "$T/run" --eps $E --examples 40 --write-vnnlib "$T/p" --quiet >/dev/null || bad "write-vnnlib"
"$B/trainer" export "$T/run" --format onnx --out "$T/net.onnx" --pubkey "$T/k.pub" >/dev/null 2>&1
if "$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_0.vnnlib" --quiet >/dev/null 2>&1; then
  gain=0 closed=""
  for ((i = 0; i < 40; i++)); do
    want=$(python3 -c "import json,sys; print({e['index']: e['answer'] for e in json.load(open('$T/r.beta-crown.json'))['examples']}[$i])")
    a=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_$i.vnnlib" --method alpha-crown --quiet)
    b=$("$A" certify --onnx "$T/net.onnx" --vnnlib "$T/p/prop_$i.vnnlib" --method beta-crown --report "$T/pr.json" --quiet)
    case "$want:$b" in
      verified:unsat | verified:unknown | falsified:sat | unknown:unknown | unknown:sat) ;;
      *) bad "property $i: the run's beta-crown says $want, the ONNX file's $b" ;;
    esac
    [ "$a" = unsat ] && [ "$b" != unsat ] && bad "property $i: alpha-crown unsat, beta-crown $b"
    [ "$a" = sat ] && [ "$b" != sat ] && bad "property $i: alpha-crown sat, beta-crown $b"
    if [ "$a" != unsat ] && [ "$b" = unsat ]; then
      gain=$((gain + 1))
      [ -z "$closed" ] && python3 -c "import json; assert json.load(open('$T/pr.json'))['tree_nodes'] > 1" && closed=$i
    fi
    g=$("$A" certify "$T/run" --vnnlib "$T/p/prop_$i.vnnlib" --method beta-crown --quiet)
    case "$want:$g" in
      verified:unsat | falsified:sat | unknown:unknown | unknown:sat) ;;
      *) bad "property $i: the run's beta-crown says $want, RUN_DIR --vnnlib beta-crown $g" ;;
    esac
  done
  echo "cert_bab: beta-crown on the ONNX file: $gain properties unsat that alpha-crown leaves open"
  [ $gain -ge 2 ] && [ -n "$closed" ] || bad "beta-crown on the ONNX file closed $gain"
  P="$T/p/prop_${closed:-0}.vnnlib"
  "$A" certify --onnx "$T/net.onnx" --vnnlib "$P" --method beta-crown --out "$T/v6" --key "$T/a" --quiet >/dev/null ||
    bad "certify --onnx beta-crown --out"
  "$A" check-certificate "$T/v6" --onnx "$T/net.onnx" --vnnlib "$P" --signer "$T/a.pub" >/dev/null || bad "check v6"
  for o in split sorted; do
    "$A" certify "$T/run" --vnnlib "$P" --method beta-crown --order $o --out "$T/v7.$o" --key "$T/a" --quiet >/dev/null ||
      bad "certify RUN_DIR --vnnlib beta-crown --order $o"
  done
  cmp -s "$T/v7.split" "$T/v7.sorted" || bad "RUN_DIR --vnnlib beta-crown: two orders, two certificates"
  for o in reverse forward permuted; do
    "$A" check-certificate "$T/v7.split" "$T/run" --vnnlib "$P" --order $o >/dev/null || bad "check v7 --order $o"
  done
  "$A" check-certificate "$T/v6" "$T/run" --vnnlib "$P" 2>&1 | grep -q "version 6" || bad "v6 with RUN_DIR not refused"
  # the tree tampered with (v6edit.py: a leaf's bound, a multiplier, a split's neuron, the last leaf dropped)
  cat >"$T/v6edit.py" <<'PY'
import struct, sys
path, what = sys.argv[1:3]
b = bytearray(open(path, "rb").read())
u32 = lambda o: struct.unpack_from("<I", b, o)[0]
d, m, na, ans = u32(16), u32(28), u32(32), u32(136)
off = 140 + 8 * m + (4 + 4 * d if ans == 1 else 0)
n = u32(off)
o, stack, leaves, splits = off + 4, [], [], []  # stack: depth of the children still to read
depth = 0
for q in range(n):
    depth = stack.pop() if q else 0
    kind = u32(o)
    if kind:
        splits.append((q, o))
        o += 12
        stack += [depth + 1, depth + 1]
    else:
        leaves.append((q, o, depth))
        o += 4 + 8 * (na * m + m * depth + m)
q, lo, dep = leaves[-1]
if what == "bound":
    struct.pack_into("<d", b, lo + 4 + 8 * (na * m + m * dep), 0.25)
elif what == "beta":
    q, lo, dep = [l for l in leaves if l[2] > 0][0]
    struct.pack_into("<d", b, lo + 4 + 8 * na * m, 3.5)
elif what == "split":
    q, so = splits[-1]
    struct.pack_into("<I", b, so + 8, (u32(so + 8) + 1) % 24)
elif what == "dropleaf":
    end = lo + 4 + 8 * (na * m + m * dep + m)
    del b[lo:end]
    struct.pack_into("<I", b, off, n - 1)
open(path, "wb").write(bytes(b))
PY
  vtamper() { tamper_with "$T/v6" "python3 $T/v6edit.py" "--onnx $T/net.onnx --vnnlib $P" "$@"; }
  vtamper bound "the property: split tree node [0-9]* (a leaf): row [0-9]*'s recorded bound"
  vtamper beta "the property: split tree node [0-9]* (a leaf"
  vtamper split "split tree node [0-9]*"
  vtamper dropleaf "split tree node [0-9]* (layer [0-9]* neuron [0-9]*) lacks its inactive child"
else
  echo "cert_bab: this auditor has no ONNX support: the VNN-LIB part skipped"
fi
# usage: beta-crown is for a committed run's examples; --domains only with it
"$A" certify "$T/run" --eps $E --examples 2 --domains 5 >/dev/null 2>&1; [ $? -eq 64 ] || bad "--domains without beta-crown: not 64"
"$A" certify "$T/run" --eps $E --examples 2 --method beta-crown --shard tp >/dev/null 2>&1; [ $? -eq 64 ] || bad "beta-crown --shard: not 64"
cert_end
