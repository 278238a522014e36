#!/usr/bin/env bash
# Data-parallel training end to end (issue 24, docs/distributed.md "Training on N ranks"): the MLP,
# the residual CNN (batch normalisation over the global batch; step programs 1 and 2) and the GPT (dropout) trained under
# `mpirun -np N` for N = 1, 2, 3, 4 sign the one-process run's commitment, byte for byte; the 4-rank
# runs audit VERIFIED in one process, in two evaluation orders; the refusals (a batch that does not
# split, rounding=log, --backend cuda where it cannot run, ranks given another recipe, a rank that cannot load its data)
# come before anything is written, naming the rank; a rank whose state is altered (trainer-test
# --flip-state) stops every rank with an error naming it; a rank killed with SIGKILL mid-run
# (trainer-test --kill-rank, and rank 0 at a write point with --kill-at) stops the run, the run store
# passes SQLite's integrity check, and --resume on 1 and on 2 ranks finishes with the uninterrupted
# run's commitment. Oversubscribed (2 cores run 4 ranks), as root in CI.
# Usage: dp.sh BUILD_DIR MPIEXEC (MPIEXEC empty: a build without MPI, skipped: exit 77).
set -u
. "$(dirname "$0")/lib.sh"
vt_begin dp "${1:-}" key
mpi_begin "${2:-}"

# small recipes, batch 12 (a multiple of 1, 2, 3 and 4), every other state committed
dp_recipes # COMMON, MLP, CNN, GPT (tests/e2e/lib.sh)
CNN2=("${CNN[@]}" --set program_version=2) # step program 2 (docs/cnn.md): its conv2d kinds split like program 1's

# 1. one commitment whatever the number of ranks
for model in mlp cnn cnn2 gpt; do
  case $model in mlp) R=("${MLP[@]}") ;; cnn) R=("${CNN[@]}") ;; cnn2) R=("${CNN2[@]}") ;; gpt) R=("${GPT[@]}") ;; esac
  "$TRAINER" train "$T/$model" --key "$T/key" "${R[@]}" --quiet >"$T/out" 2>&1 ||
    bad "$model, one process: $(cat "$T/out")"
  nps="1 2 3 4"
  [ $model = cnn2 ] && nps="2 4"
  for np in $nps; do
    mpi $np "$TRAINER" train "$T/$model-$np" --key "$T/key" "${R[@]}" >"$T/out" 2>&1
    st=$?
    if [ $st != 0 ]; then bad "$model on $np ranks: exit $st: $(cat "$T/out")"; continue; fi
    cmp -s "$T/$model/commitment.vtc" "$T/$model-$np/commitment.vtc" && ok ||
      bad "$model on $np ranks: another commitment than the one-process run's"
    if [ $np -gt 1 ]; then # the rank count: printed by rank 0 alone, outside the manifest
      [ "$(grep -c "^trainer: data-parallel on $np ranks" "$T/out")" = 1 ] && [ "$(grep -c "^merkle root" "$T/out")" = 1 ] &&
        grep -q "^ranks           $np " "$T/out" && ok || bad "$model on $np ranks: output: $(cat "$T/out")"
    fi
  done
  # the 4-rank run audited in one process, in two orders
  for order in blas split; do
    "$AUDITOR" verify "$T/$model-4" --order "$order" --pubkey "$T/key.pub" --quiet >"$T/audit.out" 2>&1 &&
      grep -q VERIFIED "$T/audit.out" && ok || bad "auditor verify $model-4 --order $order: $(cat "$T/audit.out")"
  done
done

# 2. refusals before anything is written, naming the rank
refused() { # refused WANT_STATUS PATTERN DIR -- command: the exit status, the message, no DIR
  local want=$1 pat=$2 dir=$3; shift 4
  "$@" >"$T/out" 2>&1
  local st=$?
  [ "$st" = "$want" ] && grep -q -- "$pat" "$T/out" && [ ! -e "$dir" ] && ok ||
    bad "$* -> exit $st (expected $want, \"$pat\", nothing written): $(cat "$T/out")"
}
refused 64 "rank 0 of 3: a batch of 16 examples does not split into 3 equal shares" "$T/r1" -- \
  mpi 3 "$TRAINER" train "$T/r1" --key "$T/key" "${MLP[@]}" --set batch=16
refused 64 "rank 0 of 2: rounding=log runs in one process only" "$T/r2" -- \
  mpi 2 "$TRAINER" train "$T/r2" --key "$T/key" "${MLP[@]}" --set rounding=log
# --backend cuda on 2 ranks: refused where it cannot run (a build without NCCL, no GPU, fewer GPUs
# than ranks: docs/distributed.md "GPU ranks"), naming the reason; where it can, tests/e2e/nccl_train.sh
mpi 2 "$TRAINER" train "$T/r3" --key "$T/key" "${MLP[@]}" --backend cuda >"$T/out" 2>&1
st=$?
if [ $st != 0 ]; then
  [ $st = 2 ] && grep -q "rank 0 of 2: .*\(this build has no NCCL\|no CUDA\|NCCL needs a GPU for each rank\)" "$T/out" &&
    [ ! -e "$T/r3" ] && ok || bad "--backend cuda on 2 ranks -> exit $st (expected 0, or 2 saying why): $(cat "$T/out")"
fi
# ranks given different recipes (MPMD: rank 1 another learning rate), a rank that cannot load its data
refused 64 "rank 1 of 2: its manifest (recipe, dataset or --init file) differs from rank 0's" "$T/r4" -- \
  timeout -k 10 "$(vt_scale 600)" "$MPIRUN" --oversubscribe --allow-run-as-root \
  -np 1 "$TRAINER" train "$T/r4" --key "$T/key" "${MLP[@]}" : \
  -np 1 "$TRAINER" train "$T/r4" --key "$T/key" "${MLP[@]}" --set lr=0.01
mkdir -p "$T/nodata"
refused 2 "rank 1 of 2: " "$T/r5" -- \
  timeout -k 10 "$(vt_scale 600)" "$MPIRUN" --oversubscribe --allow-run-as-root \
  -np 1 "$TRAINER" train "$T/r5" --key "$T/key" "${MLP[@]}" : \
  -np 1 "$TRAINER" train "$T/r5" --key "$T/key" "${MLP[@]}" --data-dir "$T/nodata"

# 3. a rank whose state no longer is the others': every rank stops, the rank named; the steps before
# it are stored and the run resumes (one process) to the honest commitment
mpi 4 "$TRAINER_TEST" train "$T/flip" --key "$T/key" "${MLP[@]}" --flip-state 2:3 >"$T/out" 2>&1
st=$?
[ $st = 2 ] && grep -q "rank 2 of 4: its state after step 4 differs from rank 0's" "$T/out" &&
  [ "$(grep -c "differs from rank 0's" "$T/out")" = 1 ] && [ ! -e "$T/flip/commitment.vtc" ] && ok ||
  bad "--flip-state 2:3 on 4 ranks: exit $st: $(cat "$T/out")"
[ "$(sqlite3 "$T/flip/run.db" 'SELECT max(step) FROM steps')" = 3 ] && ok || bad "--flip-state: steps stored"
"$TRAINER" train "$T/flip" --key "$T/key" "${MLP[@]}" --resume --quiet >/dev/null 2>&1 &&
  cmp -s "$T/mlp/commitment.vtc" "$T/flip/commitment.vtc" && ok || bad "--flip-state: resumed to another commitment"

# 4. a rank killed mid-run: the run stops, the store is intact, --resume on 1 and on 2 ranks finishes
# with the uninterrupted run's commitment
killed() { # killed DIR NP -- trainer-test options: the run dies by a signal, run.db intact
  local dir=$1 np=$2; shift 3
  mpi "$np" "$TRAINER_TEST" train "$dir" --key "$T/key" "${CNN[@]}" --quiet "$@" >"$T/out" 2>&1
  local st=$?
  [ $st != 0 ] && [ $st != 124 ] && ok || bad "$* on $np ranks: exit $st: $(cat "$T/out")"
  grep -Eqi "signal 9|killed" "$T/out" && ok || bad "$* on $np ranks: no word of the killed rank: $(cat "$T/out")"
  [ ! -e "$dir/commitment.vtc" ] && [ "$(sqlite3 "$dir/run.db" 'PRAGMA integrity_check')" = ok ] && ok ||
    bad "$* on $np ranks: the run store after the kill"
}
resumed() { # resumed DIR NP: --resume on NP ranks (1: one process, no mpirun) ends with the CNN's commitment
  local dir=$1 np=$2
  if [ "$np" = 1 ]; then "$TRAINER" train "$dir" --key "$T/key" "${CNN[@]}" --resume --quiet >"$T/out" 2>&1
  else mpi "$np" "$TRAINER" train "$dir" --key "$T/key" "${CNN[@]}" --resume --quiet >"$T/out" 2>&1; fi
  local st=$?
  [ $st = 0 ] && cmp -s "$T/cnn/commitment.vtc" "$dir/commitment.vtc" && ok ||
    bad "--resume of $dir on $np ranks: exit $st, or another commitment: $(cat "$T/out")"
}
killed "$T/k1" 3 -- --kill-rank 1:5 # after the checkpoint of step 4
resumed "$T/k1" 1
killed "$T/k2" 2 -- --kill-rank 1:3 # before any checkpoint but step 0's
resumed "$T/k2" 2
killed "$T/k3" 4 -- --kill-at ckpt.tmp-half:2 # rank 0, while writing the checkpoint of step 4
resumed "$T/k3" 3

# kill -9 from outside: rank 1 of a longer MLP run on 2 ranks, once rank 0 has stored 5 steps (polled:
# no timing asserted), wherever the ranks then are; resumed by one process to the one-process run's
# commitment
rank_pid() { # rank_pid R DIR: the PID of rank R of the trainer training into DIR
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- " $2 " || continue
    tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "${p#/proc/}"; return; }
  done
}
LONG=("${MLP[@]}" --set steps=1000 --set state_hash_every=10 --set checkpoint_every=100)
"$TRAINER" train "$T/long" --key "$T/key" "${LONG[@]}" --quiet >/dev/null 2>&1 || bad "the long MLP run"
mpi 2 "$TRAINER" train "$T/ext" --key "$T/key" "${LONG[@]}" --quiet >"$T/ext.out" 2>&1 &
bg=$!
victim=
five_steps_or_exit() { [ "$(sqlite3 "$T/ext/run.db" 'SELECT count(*) FROM steps' 2>/dev/null)" -ge 5 ] 2>/dev/null || ! kill -0 $bg 2>/dev/null; }
wait_until 150 five_steps_or_exit
[ "$(sqlite3 "$T/ext/run.db" 'SELECT count(*) FROM steps' 2>/dev/null)" -ge 5 ] 2>/dev/null && victim=$(rank_pid 1 "$T/ext")
[ -n "$victim" ] && kill -9 "$victim"
wait $bg
st=$?
[ -n "$victim" ] && [ $st != 0 ] && [ $st != 124 ] && [ ! -e "$T/ext/commitment.vtc" ] &&
  [ "$(sqlite3 "$T/ext/run.db" 'PRAGMA integrity_check')" = ok ] && ok ||
  bad "kill -9 of rank 1 (pid ${victim:-not found}): exit $st: $(cat "$T/ext.out")"
"$TRAINER" train "$T/ext" --key "$T/key" "${LONG[@]}" --resume --quiet >"$T/out" 2>&1 &&
  cmp -s "$T/long/commitment.vtc" "$T/ext/commitment.vtc" && ok || bad "resume after kill -9 of rank 1: $(cat "$T/out")"

# the production trainer has none of the test build's rank faults
"$TRAINER" --help 2>&1 | grep -Eq -- "--(flip-state|kill-rank)\b" && bad "trainer --help shows a testing option" || ok
for opt in --flip-state --kill-rank; do
  "$TRAINER" train "$T/x" --key "$T/key" "$opt" 1:2 >/dev/null 2>&1; [ $? = 64 ] && [ ! -e "$T/x" ] && ok ||
    bad "production $opt must be a usage error"
done

vt_end
