#!/usr/bin/env bash
# Step program 2 of the residual CNN (issue 27 item 1: convolutions without im2col tensors, the kinds
# conv2d, conv2d_weight_grad and conv2d_input_grad) with the real programs: a program-1 and a program-2 run of the same
# recipe and seed (exact rounding) reach the same state (the state hashes of every step, hence the
# parameters, the optimiser state and the running statistics) and the same evaluation (each test
# image's predicted class; the certifier's bounds of a few examples), and each audits VERIFIED (the
# program-2 run in several orders); a log-rounded program-2 run audits VERIFIED; a tampered
# program-2 step is rejected at its step; --threads 1, 2 and 3 sign the same program-2 commitment. Step program 3
# (the residual CNN derived from its forward graph by the one builder, arch/vt_graph_builtin.c: program 2's
# operations, its backward pass in the graph's order) reaches the same states, evaluation, bounds and Merkle root,
# and audits VERIFIED in other orders and in log rounding.
# Usage: conv_v2.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin conv_v2 "${1:-}" key
CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=256 --set resnet_width=4 --set resnet_stages=2
     --set batch=16 --set steps=6 --set checkpoint_every=3 --set state_hash_every=1 --set decay_every=3)
"$AUDITOR" keygen "$T/akey" >/dev/null || bad "keygen"
for v in 1 2 3; do
  "$TRAINER" train "$T/v$v" --key "$T/key" "${CNN[@]}" --set program_version=$v --quiet >"$T/train$v.out" 2>&1 ||
    bad "train program $v: $(cat "$T/train$v.out")"
done
r2=$(grep "^merkle root" "$T/train2.out") && [ "$r2" = "$(grep "^merkle root" "$T/train3.out")" ] && ok ||
  bad "program 3's Merkle root is not program 2's"
"$TRAINER" recipe "${CNN[@]}" --set program_version=2 --program >"$T/p2.txt" || bad "recipe --program"
grep -q " conv2d " "$T/p2.txt" && grep -q " conv2d_weight_grad " "$T/p2.txt" && grep -q " conv2d_input_grad " "$T/p2.txt" &&
  ! grep -q " im2col " "$T/p2.txt" && ! grep -q " conv_grad_gather " "$T/p2.txt" && ok ||
  bad "program 2 does not use conv2d / conv2d_weight_grad / conv2d_input_grad without im2col and the gradient gather"
# the same state every step: the auditor's report lists the committed state hashes
for v in 1 2 3; do
  "$AUDITOR" verify "$T/v$v" --quiet --report "$T/r$v.json" >"$T/out" 2>&1 && ok || bad "audit program $v: $(cat "$T/out")"
done
python3 - "$T/v1" "$T/v2" "$T/v3" <<'PY' && ok || bad "the program-1 and program-2 runs' losses or state hashes differ, or a manifest misnames its program"
import sqlite3, sys
def hashes(d):
    c = sqlite3.connect(d + "/run.db")
    return list(c.execute("select step, loss_bits, state_hash from steps order by step"))
def manifest(d):
    c = sqlite3.connect(d + "/run.db")
    return bytes(next(v for k, v in c.execute("select key, value from meta") if k == "manifest"))
a, b, c = hashes(sys.argv[1]), hashes(sys.argv[2]), hashes(sys.argv[3])
assert len(a) == 7 and a == b == c, "differ"
assert b'"program_version":2' in manifest(sys.argv[2]) and b"program_version" not in manifest(sys.argv[1])
assert b'"program_version":3' in manifest(sys.argv[3])
PY
for o in pairwise reverse sorted; do expect 0 verified "" "$T/v2" --order "$o"; done
for o in reverse permuted; do expect 0 verified "" "$T/v3" --order "$o"; done
for v in 1 2 3; do
  "$TRAINER" eval "$T/v$v" --per-example "$T/e$v.txt" >/dev/null 2>&1 || bad "eval program $v"
done
cmp -s <(grep -v '^#' "$T/e1.txt") <(grep -v '^#' "$T/e2.txt") && ok || bad "the two programs' evaluations differ"
cmp -s <(grep -v '^#' "$T/e1.txt") <(grep -v '^#' "$T/e3.txt") && ok || bad "program 3's evaluation differs"
for v in 1 2 3; do
  "$AUDITOR" certify "$T/v$v" --eps 0.0002 --examples 3 --method crown --out "$T/c$v" --key "$T/akey" \
    --report "$T/cr$v.json" --pubkey "$T/key.pub" --quiet >"$T/out" 2>&1 || bad "certify program $v: $(cat "$T/out")"
done
python3 -c "import json,sys; a,b=(json.load(open(f))['examples'] for f in sys.argv[1:]); assert a==b and len(a)==3" \
  "$T/cr1.json" "$T/cr2.json" && ok || bad "the certifier's bounds of the two programs differ"
python3 -c "import json,sys; a,b=(json.load(open(f))['examples'] for f in sys.argv[1:]); assert a==b and len(a)==3" \
  "$T/cr1.json" "$T/cr3.json" && ok || bad "the certifier's bounds of program 3 differ"
# the ONNX export (where built) translates conv2d as it does im2col + matmul: as many Conv nodes
if "$TRAINER" export "$T/v1" --format onnx --out "$T/v1.onnx" >/dev/null 2>&1; then
  "$TRAINER" export "$T/v2" --format onnx --out "$T/v2.onnx" >"$T/out" 2>&1 && ok || bad "ONNX export of program 2: $(cat "$T/out")"
  "$TRAINER" export "$T/v3" --format onnx --out "$T/v3.onnx" >"$T/out" 2>&1 && ok || bad "ONNX export of program 3: $(cat "$T/out")"
  python3 -c "import sys; a,b,c=(open(f,'rb').read().count(b'\x22\x04Conv') for f in sys.argv[1:]); assert a==b==c>0" \
    "$T/v1.onnx" "$T/v2.onnx" "$T/v3.onnx" && ok || bad "the ONNX exports hold different numbers of Conv nodes"
fi
# log rounding
"$TRAINER" train "$T/log" --key "$T/key" "${CNN[@]}" --set program_version=2 --set rounding=log --quiet \
  >"$T/out" 2>&1 || bad "train program 2, log: $(cat "$T/out")"
for o in blas permuted; do expect 0 verified "" "$T/log" --order "$o"; done
"$TRAINER" train "$T/log3" --key "$T/key" "${CNN[@]}" --set program_version=3 --set rounding=log --quiet \
  >"$T/out" 2>&1 || bad "train program 3, log: $(cat "$T/out")"
expect 0 verified "" "$T/log3" --order pairwise
# a tampered program-2 step
"$TRAINER_TEST" train "$T/flip" --key "$T/key" "${CNN[@]}" --set program_version=2 --quiet --cheat flip-weight:4 \
  >/dev/null 2>&1 || bad "cheat"
expect 1 "state mismatch" 4 "$T/flip" --order pairwise
# threads
for t in 1 2 3; do
  "$TRAINER" train --threads $t "$T/t$t" --key "$T/key" "${CNN[@]}" --set program_version=2 --quiet >/dev/null 2>&1 ||
    bad "train --threads $t"
done
for t in 2 3; do cmp -s "$T/t1/commitment.vtc" "$T/t$t/commitment.vtc" && ok || bad "--threads $t's commitment differs"; done
cmp -s "$T/t1/commitment.vtc" "$T/v2/commitment.vtc" && ok || bad "--threads 1 differs from the default's commitment"
vt_end
