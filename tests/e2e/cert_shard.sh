#!/usr/bin/env bash
# Certification sharded over ranks (issue 26 item 6, docs/certify.md "Sharded over ranks"):
# `mpirun -np N auditor certify --onnx NET --vnnlib PROP --shard tp|fsdp` writes the one-process
# certificate byte for byte. Random MLPs written by bench/gen_mlp_onnx.py (20-32-24-10, and 6-2-3
# whose 2-neuron layer leaves a rank of 3 without rows), properties of three kinds (robustness:
# sat or unknown after the attack; a far threshold: unsat; a near one), IBP, CROWN and alpha-CROWN,
# on 2 and 3 ranks (also --shard none; two of the five a case, every one for every method), and a committed digits MLP run; the counterexamples (--cex) are the one-process files;
# check-certificate --shard tp accepts the certificate and the one-process check accepts a sharded
# one. A rank that fails (rank 1 given a missing file) stops every rank with its error, exit 2,
# instead of a hang; --shard with --timeout and an unknown mode are usage errors (64).
# Oversubscribed, as root in CI. Usage: cert_shard.sh BUILD_DIR MPIEXEC (MPIEXEC empty: skipped, 77).
set -u
. "$(dirname "$0")/lib.sh"
vt_begin cert_shard "${1:-}"
mpi_begin "${2:-}" 300
GEN="$SRC/bench/gen_mlp_onnx.py"

"$AUDITOR" keygen "$T/key" >/dev/null && "$TRAINER" keygen "$T/tk" >/dev/null || bad "keygen"
python3 "$GEN" "$T/a.onnx" 20-32-24-10 --seed 3 --props "$T" --eps 0.05 --count 3 || bad "gen a"
mkdir -p "$T/b" && python3 "$GEN" "$T/b.onnx" 6-2-3 --seed 4 --props "$T/b" --eps 0.1 --count 1 || bad "gen b"
"$AUDITOR" certify --onnx "$T/a.onnx" --vnnlib "$T/prop_1.vnnlib" --quiet >"$T/out" 2>&1
if grep -q "without ONNX support" "$T/out"; then echo "cert_shard: this auditor has no ONNX support: skipped"; exit 77; fi

# 1. every method, property kind and rank count: the one-process certificate, byte for byte. Each
# MLP case runs two of the five rank counts and modes, rotated (rot) so that each method's four cases
# cover all five (mpirun's start-up dominates this test's wall time on a loaded machine)
all5=(2:tp 2:fsdp 3:tp 3:fsdp 2:none) rot=0 ATK=()
check_case() { # NET PROP METHOD [graph: 3 tp and 2 fsdp]
  local net=$1 prop=$2 m=$3 ref="$T/ref.cert" runs="${all5[$((2 * rot % 5))]} ${all5[$(((2 * rot + 1) % 5))]}"
  rot=$((rot + 1))
  [ "${4:-}" = graph ] && runs="3:tp 2:fsdp"
  rm -f "$T/ref.cex" "$T/s.cex"
  "$AUDITOR" certify --onnx "$net" --vnnlib "$prop" --method $m --out "$ref" --key "$T/key" --cex "$T/ref.cex" \
    "${ATK[@]}" --quiet >"$T/ref.out" 2>&1 || { bad "$m $prop: one process: $(cat "$T/ref.out")"; return; }
  for run in $runs; do
    set -- ${run%:*} ${run#*:}
    rm -f "$T/s.cert" "$T/s.cex"
    mpi $1 "$AUDITOR" certify --onnx "$net" --vnnlib "$prop" --method $m --out "$T/s.cert" --key "$T/key" \
      --cex "$T/s.cex" "${ATK[@]}" --quiet --shard $2 >"$T/s.out" 2>&1 || { bad "$m $prop np $1 $2: $(cat "$T/s.out")"; continue; }
    if cmp -s "$ref" "$T/s.cert" && cmp -s "$T/ref.out" "$T/s.out" &&
       { [ ! -e "$T/ref.cex" ] && [ ! -e "$T/s.cex" ] || cmp -s "$T/ref.cex" "$T/s.cex"; }; then ok
    else bad "$m $(basename "$prop") np $1 --shard $2: not the one-process certificate / answer / cex"; fi
  done
}
for m in ibp crown alpha-crown; do
  for i in 0 1 2; do check_case "$T/a.onnx" "$T/prop_$i.vnnlib" $m; done
  check_case "$T/b.onnx" "$T/b/prop_0.vnnlib" $m
done
answers=$(for i in 0 1 2; do "$AUDITOR" certify --onnx "$T/a.onnx" --vnnlib "$T/prop_$i.vnnlib" --quiet; done | tr '\n' ' ')
echo "cert_shard: CROWN's answers to the three properties: $answers"

# 2. a committed MLP run (certify RUN_DIR: examples verified and falsified, the attack confirmed by
# the project's evaluation on every rank): the one-process certificate
"$TRAINER" train "$T/run" --key "$T/tk" --set dataset=digits --set 'layers=[64,24,24,10]' --set steps=60 \
  --set batch=32 --quiet >/dev/null 2>&1 || bad "training the digits MLP"
"$AUDITOR" certify "$T/run" --eps 0.03 --examples 6 --method crown --out "$T/run1.cert" --key "$T/key" --quiet \
  >/dev/null 2>&1 || bad "certify RUN_DIR"
for run in "2 tp" "3 fsdp"; do
  set -- $run
  mpi $1 "$AUDITOR" certify "$T/run" --eps 0.03 --examples 6 --method crown --out "$T/runs.cert" --key "$T/key" \
    --quiet --shard $2 >"$T/out" 2>&1 && cmp -s "$T/run1.cert" "$T/runs.cert" && ok ||
    bad "certify RUN_DIR np $1 --shard $2: not the one-process certificate: $(cat "$T/out")"
done

# 3. check-certificate under --shard, and a sharded certificate checked in one process
"$AUDITOR" certify --onnx "$T/a.onnx" --vnnlib "$T/prop_2.vnnlib" --method alpha-crown --out "$T/one.cert" \
  --key "$T/key" --quiet >/dev/null 2>&1 || bad "alpha-crown certificate"
mpi 3 "$AUDITOR" check-certificate "$T/one.cert" --onnx "$T/a.onnx" --vnnlib "$T/prop_2.vnnlib" --shard fsdp \
  >"$T/out" 2>&1 && grep -q "the same bytes" "$T/out" && ok || bad "check-certificate --shard fsdp: $(cat "$T/out")"
mpi 2 "$AUDITOR" certify --onnx "$T/a.onnx" --vnnlib "$T/prop_2.vnnlib" --method alpha-crown --out "$T/tp.cert" \
  --key "$T/key" --quiet --shard tp >/dev/null 2>&1 || bad "alpha-crown --shard tp"
"$AUDITOR" check-certificate "$T/tp.cert" --onnx "$T/a.onnx" --vnnlib "$T/prop_2.vnnlib" >"$T/out" 2>&1 && ok ||
  bad "a sharded certificate checked in one process: $(cat "$T/out")"

# 6. the layer graph (docs/certify.md "Sharded over ranks"): a committed tiny resnet (digits, 1 x 8 x 8)
# and its convolutional ONNX export, IBP, CROWN and alpha-CROWN (both with CROWN's intermediate bounds,
# their passes dense on every rank), on 1, 2 and 3 ranks --shard tp, 2 and 3 fsdp:
# the one-process certificate, answer and counterexample, byte for byte; check-certificate --shard;
# rank 1 failing (a missing run) stops both ranks with its error (exit 2)
# The attack's passes are a collective per linear node each (every rank runs the same attack): 3
# oversubscribed ranks beside a busy machine's load ran IBP's attack of 6 examples past the hang
# guard, so the CNN's attacks start from the example alone and take 10 steps (25x fewer passes)
ATK=(--attack-restarts 1 --attack-iters 10)
R="$RECIPES/resnet-cifar10.json"
"$TRAINER" train "$T/cnn" --key "$T/tk" --recipe "$R" --set dataset=digits --set 'layers=[64,10]' \
  --set image_channels=1 --set image_height=8 --set image_width=8 --set resnet_width=4 --set resnet_stages=2 \
  --set batch=32 --set steps=40 --set decay_every=1000 --set augment_pad=0 --set augment_flip=0 --quiet >/dev/null 2>&1 ||
  bad "training the tiny resnet"
"$TRAINER" export "$T/cnn" --format onnx --out "$T/cnn.onnx" --pubkey "$T/tk.pub" >/dev/null 2>&1 || bad "export cnn"
mkdir -p "$T/cp" && "$AUDITOR" certify "$T/cnn" --eps 0.0005 --examples 2 --method crown --write-vnnlib "$T/cp" \
  --quiet >/dev/null 2>&1 || bad "cnn --write-vnnlib"
"$AUDITOR" certify "$T/cnn" --eps 0.004 --examples 3 --method crown --write-vnnlib "$T/cp" --quiet >/dev/null 2>&1 # prop_2 (sat)
for m in ibp crown alpha-crown; do
  # alpha-CROWN: 3 examples (verified, verified, falsified); its ~40 passes a margin are each a
  # collective per node, which oversubscribed ranks on a loaded machine make slow; IBP: 3 (verified,
  # falsified, unknown at 0.0005), each unknown one attacked
  n=6
  [ $m != crown ] && n=3
  for e in 0.0005 0.002; do
    "$AUDITOR" certify "$T/cnn" --eps $e --examples $n --method $m --out "$T/cr.cert" --key "$T/key" "${ATK[@]}" --quiet \
      >"$T/cr.out" 2>&1 || bad "cnn $m: one process"
    runs="1:tp 2:tp 3:fsdp"
    [ $e = 0.002 ] && runs="3:tp 2:fsdp"
    for run in $runs; do
      np=${run%:*} sh=${run#*:}
      mpi $np "$AUDITOR" certify "$T/cnn" --eps $e --examples $n --method $m --out "$T/cs.cert" --key "$T/key" \
        "${ATK[@]}" --quiet --shard $sh >"$T/cs.out" 2>&1 && cmp -s "$T/cr.cert" "$T/cs.cert" &&
        [ "$(sed 's/; certificate .*//' "$T/cr.out")" = "$(sed 's/; certificate .*//' "$T/cs.out")" ] && ok ||
        bad "cnn run $m eps $e np $np --shard $sh: not the one-process certificate: $(cat "$T/cs.out")"
    done
  done
  for i in 1 2; do
    check_case "$T/cnn.onnx" "$T/cp/prop_$i.vnnlib" $m graph
  done
done
for sh in tp fsdp; do
  mpi 2 "$AUDITOR" check-certificate "$T/cr.cert" "$T/cnn" --shard $sh >"$T/out" 2>&1 && ok ||
    bad "cnn check-certificate --shard $sh: $(cat "$T/out")"
done
cat >"$T/wrapc.sh" <<EOW
#!/bin/sh
run="$T/cnn"
[ "\${OMPI_COMM_WORLD_RANK:-0}" = 1 ] && run="$T/missing"
exec "$AUDITOR" certify "\$run" --eps 0.001 --examples 2 --shard fsdp --quiet
EOW
chmod +x "$T/wrapc.sh"
mpi 2 "$T/wrapc.sh" >"$T/out" 2>&1
st=$?
[ $st = 2 ] && grep -q "rank 1 of 2: .*missing" "$T/out" && ok || bad "cnn: rank 1 failing: exit $st: $(cat "$T/out")"

# 4. a rank that fails stops every rank with its error (no hang): rank 1 reads a missing file
cat >"$T/wrap.sh" <<EOW
#!/bin/sh
net="$T/a.onnx"
[ "\${OMPI_COMM_WORLD_RANK:-0}" = 1 ] && net="$T/missing.onnx"
exec "$AUDITOR" certify --onnx "\$net" --vnnlib "$T/prop_0.vnnlib" --shard tp --quiet
EOW
chmod +x "$T/wrap.sh"
mpi 2 "$T/wrap.sh" >"$T/out" 2>&1
st=$?
[ $st = 2 ] && grep -q "rank 1 of 2: .*missing.onnx" "$T/out" && ok || bad "rank 1 failing: exit $st: $(cat "$T/out")"

# 5. usage errors
mpi 2 "$AUDITOR" certify --onnx "$T/a.onnx" --vnnlib "$T/prop_0.vnnlib" --shard tp --timeout 5 >"$T/out" 2>&1
st=$?
[ $st = 64 ] && grep -q "not with --timeout" "$T/out" && ok || bad "--shard --timeout: exit $st"
"$AUDITOR" certify --onnx "$T/a.onnx" --vnnlib "$T/prop_0.vnnlib" --shard rows >"$T/out" 2>&1
st=$?
[ $st = 64 ] && grep -q "expected tp, fsdp or none" "$T/out" && ok || bad "--shard rows: exit $st"

vt_end
