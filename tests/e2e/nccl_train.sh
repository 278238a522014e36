#!/usr/bin/env bash
# GPU ranks end to end (issue 24 item 8, docs/distributed.md "GPU ranks"): `mpirun -np 2 trainer
# train --backend cuda` - each rank's kernels on its GPU, the operations that read the split batch on
# the CPU, the collectives over NCCL - trains the MLP, the residual CNN (batch norm over the global
# batch) and the GPT (dropout) to the one-process CPU run's steps: the same Merkle root of the step
# records (the manifest, and so commitment.vtc, names the backend: cpu or cuda), and the one-process
# --backend cuda run's commitment.vtc byte for byte; the 2-rank GPU run audits VERIFIED in one CPU
# process. Then the same with VT_DIST_ENGINE=mpi (the GPU step, the collectives over MPI), which
# also runs where the ranks share one GPU.
# Skipped (exit 77) without MPI, without a GPU (one process's --backend cuda refused), and, for the
# NCCL part, in a build without NCCL or with fewer GPUs than ranks on the machine; the MPI part then
# still runs when a GPU is there.
# Usage: nccl_train.sh BUILD_DIR MPIEXEC (MPIEXEC empty: a build without MPI, skipped); run by ctest.
set -u
. "$(dirname "$0")/lib.sh"
vt_begin nccl_train "${1:-}" key
MPIRUN=${2:-}
if [ -z "$MPIRUN" ]; then echo "nccl_train: this build has no MPI (VT_MPI): skipped"; exit 77; fi
# as root in CI: ctest's environment (tests/cmake/dist.cmake's VT_MPI_TEST_ENV); mpi: tests/e2e/lib.sh
root_of() { grep "^merkle root" "$1" | awk '{print $3}'; }

dp_recipes # COMMON, MLP, CNN, GPT (tests/e2e/lib.sh)
"$TRAINER" train "$T/probe" --key "$T/key" "${MLP[@]}" --set steps=1 --backend cuda >"$T/out" 2>&1
st=$?
if [ $st != 0 ]; then echo "nccl_train: no usable GPU (exit $st: $(tail -1 "$T/out")): skipped"; exit 77; fi

nccl_ok=1
for model in mlp cnn gpt; do
  case $model in mlp) R=("${MLP[@]}") ;; cnn) R=("${CNN[@]}") ;; gpt) R=("${GPT[@]}") ;; esac
  "$TRAINER" train "$T/$model-cpu" --key "$T/key" "${R[@]}" >"$T/cpu.out" 2>&1 || bad "$model, CPU: $(cat "$T/cpu.out")"
  "$TRAINER" train "$T/$model-gpu" --key "$T/key" "${R[@]}" --backend cuda --quiet >"$T/gpu.out" 2>&1 ||
    bad "$model, one GPU process: $(cat "$T/gpu.out")"
  for engine in nccl mpi; do
    [ $engine = nccl ] && [ $nccl_ok = 0 ] && continue
    D="$T/$model-2-$engine"
    if [ $engine = mpi ]; then
      VT_DIST_ENGINE=mpi mpi 2 "$TRAINER" train "$D" --key "$T/key" "${R[@]}" --backend cuda >"$T/out" 2>&1
    else
      mpi 2 "$TRAINER" train "$D" --key "$T/key" "${R[@]}" --backend cuda >"$T/out" 2>&1
    fi
    st=$?
    if [ $engine = nccl ] && [ $st != 0 ] && grep -q "this build has no NCCL\|NCCL needs a GPU for each rank" "$T/out"; then
      echo "nccl_train: the NCCL engine cannot run here: $(grep -m1 "NCCL" "$T/out")"
      nccl_ok=0
      continue
    fi
    if [ $st != 0 ]; then bad "$model on 2 GPU ranks ($engine): exit $st: $(cat "$T/out")"; continue; fi
    [ -n "$(root_of "$T/cpu.out")" ] && [ "$(root_of "$T/out")" = "$(root_of "$T/cpu.out")" ] && ok ||
      bad "$model on 2 GPU ranks ($engine): merkle root $(root_of "$T/out"), the CPU run's $(root_of "$T/cpu.out")"
    cmp -s "$T/$model-gpu/commitment.vtc" "$D/commitment.vtc" && ok ||
      bad "$model on 2 GPU ranks ($engine): another commitment than the one-process GPU run's"
    "$AUDITOR" verify "$D" --pubkey "$T/key.pub" --quiet >"$T/audit.out" 2>&1 && grep -q VERIFIED "$T/audit.out" && ok ||
      bad "auditor verify $model on 2 GPU ranks ($engine): $(cat "$T/audit.out")"
    echo "nccl_train: $model on 2 GPU ranks, collectives over $engine: the CPU run's steps"
  done
done
echo "nccl_train: $pass passed, $fail failed$([ $nccl_ok = 0 ] && echo " (the NCCL engine skipped)")"
[ $fail = 0 ]
