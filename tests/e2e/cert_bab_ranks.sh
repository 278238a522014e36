#!/usr/bin/env bash
# cert_bab_ranks.sh BUILD_DIR MPIEXEC - branch and bound over MPI ranks (docs/certify.md "Parallel
# search"): `mpirun -np N auditor certify RUN_DIR --method beta-crown --shard none` (each round's
# subdomains split over the ranks, the outcomes gathered and merged in creation order on every rank)
# writes the one-process certificate byte for byte and prints the same answers: the digits run's 40
# examples on 2 ranks (one thread each) and 3 ranks (two threads each), a VNN-LIB property of its ONNX
# export closed by a tree of more than one node on 2 ranks; check-certificate under mpirun (its leaves
# split over 2 and 3 ranks) accepts it and rejects a leaf's changed bound naming the node;
# beta-crown with the network sharded (--shard tp) stays a usage error (64).
# Oversubscribed, as root in CI. MPIEXEC empty: skipped (77).
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
cert_begin cert_bab_ranks "${1:-}"
mpi_begin "${2:-}" 300
cert_train_mlp "$T/run"
E=0.06
"$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --threads 1 --out "$T/c.ref" --key "$T/a" \
  --quiet >"$T/out.ref" || bad "certify (one process)"
for run in 2:1 3:2; do
  np=${run%:*} th=${run#*:}
  mpi "$np" "$A" certify "$T/run" --eps $E --examples 40 --method beta-crown --shard none --threads "$th" \
    --out "$T/c.$np" --key "$T/a" --quiet >"$T/out.$np" 2>"$T/err.$np" || { bad "np $np: $(cat "$T/err.$np")"; continue; }
  cmp -s "$T/c.ref" "$T/c.$np" || bad "np $np --threads $th: not the one-process certificate"
  [ "$(sed 's/certificate .*//' "$T/out.ref")" = "$(sed 's/certificate .*//' "$T/out.$np")" ] ||
    bad "np $np --threads $th: other answers: $(cat "$T/out.$np")"
done
for np in 2 3; do
  mpi $np "$A" check-certificate "$T/c.2" "$T/run" --shard none --signer "$T/a.pub" >/dev/null 2>"$T/err.chk" ||
    bad "check-certificate on $np ranks: $(cat "$T/err.chk")"
done
# the replay split over the ranks: a leaf's changed bound (signed again) still rejected, naming the node
cp "$T/c.2" "$T/x"
python3 "$REF/cert_bab_edit.py" "$T/x" bound >/dev/null && "$B/vt_cert_resign" "$T/x" "$T/a" || bad "edit"
mpi 2 "$A" check-certificate "$T/x" "$T/run" --shard none >/dev/null 2>"$T/x.err"
st=$?
[ $st -ne 0 ] && grep -q "split tree node [0-9]* (a leaf): margin [0-9]*'s recorded bound" "$T/x.err" ||
  bad "a changed bound on 2 ranks: exit $st, $(cat "$T/x.err")"
"$A" certify "$T/run" --eps $E --examples 2 --method beta-crown --shard tp >/dev/null 2>&1
[ $? -eq 64 ] || bad "beta-crown --shard tp: not 64"
# a VNN-LIB property of the ONNX export: the first one beta-crown closes with a tree of more than one node
if cert_bab_onnx_prop "$T/run" $E; then
  "$A" certify --onnx "$T/net.onnx" --vnnlib "${P:-x}" --method beta-crown --out "$T/v6.ref" --key "$T/a" --quiet \
    >"$T/v6.ref.out" || bad "certify --onnx"
  mpi 2 "$A" certify --onnx "$T/net.onnx" --vnnlib "${P:-x}" --method beta-crown --shard none --out "$T/v6.2" --key "$T/a" \
    --quiet >"$T/v6.2.out" 2>"$T/v6.err" || bad "certify --onnx on 2 ranks: $(cat "$T/v6.err")"
  cmp -s "$T/v6.ref" "$T/v6.2" && cmp -s "$T/v6.ref.out" "$T/v6.2.out" || bad "--onnx on 2 ranks: not the one-process answer"
else
  echo "cert_bab_ranks: this auditor has no ONNX support: the VNN-LIB part skipped"
fi
cert_end
