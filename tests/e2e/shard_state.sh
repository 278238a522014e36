#!/usr/bin/env bash
# The sharded optimiser state (issue 24 item 5, docs/distributed.md "Sharded optimiser state"):
# `mpirun -np N trainer train --shard-state` - each rank holding and updating 1/N of the optimiser
# state and of the parameters, the parameters allgathered after each step - signs the one-process
# run's commitment, byte for byte: the MLP with Adam, the residual CNN (SGD with momentum, batch
# norm) and the GPT (AdamW, clipping, dropout) on 2 and 3 ranks. The planned optimiser-state bytes
# of rank 0 (the summary's "state memory" line) are 1/N of the whole (floor of the parameters'
# split), against all of it without --shard-state. A sharded run killed mid-run (trainer-test
# --kill-rank) resumes in one process, and an unsharded one resumes sharded, to the same
# commitment; the 3-rank run audits VERIFIED in one process; one rank with --shard-state is the
# unsharded run; --backend cuda is refused before anything is written. Oversubscribed, as root in CI.
# Usage: shard_state.sh BUILD_DIR MPIEXEC (MPIEXEC empty: a build without MPI, skipped: exit 77).
set -u
. "$(dirname "$0")/lib.sh"
vt_begin shard_state "${1:-}" key
mpi_begin "${2:-}"

dp_recipes # COMMON, MLP, CNN, GPT (tests/e2e/lib.sh)
MLP+=(--set optimizer=adam)

# "state memory    S of W bytes on rank 0, optimiser state O of OW (...)": O and OW
opt_bytes() { sed -n 's/^state memory .* optimiser state \([0-9]*\) of \([0-9]*\) .*/\1 \2/p' "$1"; }

# 1. the one-process commitment on 2 and 3 ranks; rank 0's optimiser state 1/N of the whole
for model in mlp cnn gpt; do
  case $model in mlp) R=("${MLP[@]}") ;; cnn) R=("${CNN[@]}") ;; gpt) R=("${GPT[@]}") ;; esac
  "$TRAINER" train "$T/$model" --key "$T/key" "${R[@]}" --quiet >"$T/out" 2>&1 ||
    bad "$model, one process: $(cat "$T/out")"
  for np in 2 3; do
    mpi $np "$TRAINER" train "$T/$model-$np" --key "$T/key" "${R[@]}" --shard-state --quiet >"$T/out" 2>&1
    st=$?
    if [ $st != 0 ]; then bad "$model on $np ranks, --shard-state: exit $st: $(cat "$T/out")"; continue; fi
    cmp -s "$T/$model/commitment.vtc" "$T/$model-$np/commitment.vtc" && ok ||
      bad "$model on $np ranks, --shard-state: another commitment than the one-process run's"
    read -r o w <<<"$(opt_bytes "$T/out")"
    # rank 0 holds floor(P / N) of each parameter value's optimiser values (one for SGD, two for Adam)
    [ -n "${o:-}" ] && [ "$w" -gt 0 ] && [ $((o * np)) -le "$w" ] && [ $((o * np)) -ge $((w - 8 * np)) ] &&
      grep -q "sharded over the ranks" "$T/out" && ok ||
      bad "$model on $np ranks: rank 0's optimiser state is not 1/$np of it: $(grep '^state memory' "$T/out")"
  done
done
# without --shard-state every rank holds it all
mpi 2 "$TRAINER" train "$T/mlp-u2" --key "$T/key" "${MLP[@]}" --quiet >"$T/out" 2>&1 || bad "mlp on 2 ranks"
read -r o w <<<"$(opt_bytes "$T/out")"
[ -n "${o:-}" ] && [ "$o" = "$w" ] && ok || bad "unsharded: $(grep '^state memory' "$T/out")"
# the sharded run audited in one process
"$AUDITOR" verify "$T/mlp-3" --order split --pubkey "$T/key.pub" --quiet >"$T/audit.out" 2>&1 &&
  grep -q VERIFIED "$T/audit.out" && ok || bad "auditor verify mlp-3: $(cat "$T/audit.out")"
# one rank: --shard-state is the unsharded run
mpi 1 "$TRAINER" train "$T/mlp-1" --key "$T/key" "${MLP[@]}" --shard-state --quiet >"$T/out" 2>&1 &&
  cmp -s "$T/mlp/commitment.vtc" "$T/mlp-1/commitment.vtc" && ok || bad "mlp on 1 rank, --shard-state: $(cat "$T/out")"

# 2. a killed sharded run resumed in one process; a killed unsharded run resumed sharded
killed() { # killed DIR NP -- options
  local dir=$1 np=$2; shift 3
  mpi "$np" "$TRAINER_TEST" train "$dir" --key "$T/key" "${MLP[@]}" --quiet "$@" >"$T/out" 2>&1
  local st=$?
  [ $st != 0 ] && [ $st != 124 ] && [ ! -e "$dir/commitment.vtc" ] &&
    [ "$(sqlite3 "$dir/run.db" 'PRAGMA integrity_check')" = ok ] && ok || bad "$* on $np ranks: exit $st: $(cat "$T/out")"
}
resumed() { # resumed DIR NP -- options: --resume ends with the one-process commitment
  local dir=$1 np=$2; shift 3
  if [ "$np" = 1 ]; then "$TRAINER" train "$dir" --key "$T/key" "${MLP[@]}" --resume --quiet "$@" >"$T/out" 2>&1
  else mpi "$np" "$TRAINER" train "$dir" --key "$T/key" "${MLP[@]}" --resume --quiet "$@" >"$T/out" 2>&1; fi
  local st=$?
  [ $st = 0 ] && cmp -s "$T/mlp/commitment.vtc" "$dir/commitment.vtc" && ok ||
    bad "--resume of $dir on $np ranks $*: exit $st, or another commitment: $(cat "$T/out")"
}
killed "$T/k1" 3 -- --shard-state --kill-rank 1:5 # after the checkpoint of step 4
resumed "$T/k1" 1 --
killed "$T/k2" 2 -- --kill-rank 1:5
resumed "$T/k2" 2 -- --shard-state

# 3. refused before anything is written
"$TRAINER" train "$T/cuda" --key "$T/key" "${MLP[@]}" --shard-state --backend cuda >"$T/out" 2>&1
st=$?
[ $st = 2 ] && grep -q -- "--shard-state" "$T/out" && [ ! -e "$T/cuda" ] && ok ||
  bad "--shard-state --backend cuda: exit $st: $(cat "$T/out")"

vt_end
