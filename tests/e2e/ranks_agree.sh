#!/usr/bin/env bash
# The ranks of a data-parallel run agree before anything is written (issue 37 item 7,
# docs/distributed.md "Ranks agree before anything is written"), launched with mpirun's MPMD syntax
# so that the ranks are given different options or builds: --shard-state on some ranks only, and
# --stop-after (test build) on one rank, are refused on every rank with exit 64 naming the rank; a
# rank whose build computes other bits (trainer-test --cheat skew-kind:KIND: one bit of every output
# of that kind flipped) is caught by the known-answer probe on every rank with exit 2 naming the
# rank and the kind - before anything is written: no run directory is created, and an empty one
# given stays empty (no run.db, no checkpoint, no lock file). The honest case still trains (with
# --shard-state on every rank: the one-process commitment). Every rank's own exit status is
# checked (each rank runs through a wrapper that records it and exits 0, so that mpirun ends no rank
# early). Oversubscribed (2 cores), as root in CI; no timing is asserted (`timeout` guards a hang).
# Usage: ranks_agree.sh BUILD_DIR MPIEXEC (MPIEXEC empty: a build without MPI, skipped: exit 77).
set -u
. "$(dirname "$0")/lib.sh"
vt_begin ranks_agree "${1:-}" key
mpi_begin "${2:-}"

MLP=(--set batch=12 --set steps=4 --set subset=240 --set state_hash_every=2 --set checkpoint_every=2 --quiet)
# rank.sh STATUS_FILE COMMAND...: runs the command, writes its exit status, exits 0
printf '%s\n' '#!/usr/bin/env bash' 'out=$1; shift' '"$@"; echo $? >"$out"' 'exit 0' >"$T/rank.sh"

# ranks DIR -- PROGRAM0 ARGS0 -- PROGRAM1 ARGS1 [-- ...]: one mpirun, rank r running `PROGRAMr train
# DIR --key KEY MLP... ARGSr`; the ranks' statuses in $T/st.r (NR ranks), the output in $T/out
ranks() {
  local dir=$1 cmd=() group=() r=0 a
  shift 2
  rm -f "$T"/st.*
  for a in "$@" --; do
    if [ "$a" != -- ]; then group+=("$a"); continue; fi
    [ $r -gt 0 ] && cmd+=(:)
    cmd+=(-np 1 bash "$T/rank.sh" "$T/st.$r" "${group[0]}" train "$dir" --key "$T/key" "${MLP[@]}"
          "${group[@]:1}")
    r=$((r + 1))
    group=()
  done
  NR=$r
  timeout -k 10 600 "$MPIRUN" --oversubscribe --allow-run-as-root "${cmd[@]}" >"$T/out" 2>&1 || bad "mpirun: exit $?"
}
# statuses WANT: every rank exited WANT
statuses() {
  local r s
  for ((r = 0; r < NR; r++)); do
    s=$(cat "$T/st.$r" 2>/dev/null)
    [ "$s" = "$1" ] || { bad "rank $r of $NR: exit ${s:-none}, expected $1: $(cat "$T/out")"; return; }
  done
  ok
}
# refused WANT PATTERN DIR: every rank exited WANT, the message printed once, nothing in DIR
refused() {
  statuses "$1"
  [ "$(grep -c -- "$2" "$T/out")" = 1 ] && ok || bad "expected once: \"$2\": $(cat "$T/out")"
  if [ -d "$3" ]; then [ -z "$(ls -A "$3")" ] && ok || bad "$3 holds $(ls -A "$3")"
  else [ ! -e "$3" ] && ok || bad "$3 was created"; fi
}

# (a) --shard-state on some ranks only: 64 on every rank, the rank named, nothing written
ranks "$T/a1" -- "$TRAINER" --shard-state -- "$TRAINER"
refused 64 "rank 1 of 2 does not have --shard-state, rank 0 has it" "$T/a1"
mkdir "$T/a2" # an empty run directory given: it stays empty (no run.db, no checkpoints, no run.lock)
ranks "$T/a2" -- "$TRAINER" -- "$TRAINER" --shard-state
refused 64 "rank 1 of 2 has --shard-state, rank 0 does not" "$T/a2"
ranks "$T/a3" -- "$TRAINER" -- "$TRAINER" --shard-state -- "$TRAINER" --shard-state
refused 64 "rank 1 of 3 has --shard-state, rank 0 does not (rank 2 of 3 differs from rank 0 too)" "$T/a3"
# another option that changes the collectives: rank 1 would stop after step 1 (test build)
ranks "$T/a4" -- "$TRAINER_TEST" -- "$TRAINER_TEST" --stop-after 1
refused 64 "rank 1 of 2 has --stop-after 1, rank 0 --stop-after 0" "$T/a4"

# (b) a rank whose build computes other bits: the known-answer probe names the rank and the kind (a
# kind this MLP does not use, and one it does), exit 2 on every rank, nothing written
ranks "$T/b1" -- "$TRAINER_TEST" -- "$TRAINER_TEST" --cheat skew-kind:gelu
refused 2 "rank 1 of 2: its known-answer probe of kind gelu differs from rank 0's" "$T/b1"
mkdir "$T/b2"
ranks "$T/b2" -- "$TRAINER_TEST" -- "$TRAINER_TEST" -- "$TRAINER_TEST" --cheat skew-kind:matmul
refused 2 "rank 2 of 3: its known-answer probe of kind matmul differs from rank 0's" "$T/b2"
# rank 0 the odd one: every other rank differs from it
ranks "$T/b3" -- "$TRAINER_TEST" --cheat skew-kind:sub -- "$TRAINER_TEST" -- "$TRAINER_TEST"
refused 2 "rank 1 of 3: its known-answer probe of kind sub differs from rank 0's (.*) (rank 2 of 3 differs from rank 0 too)" "$T/b3"
"$TRAINER" train "$T/x" --key "$T/key" "${MLP[@]}" --cheat skew-kind:gelu >/dev/null 2>&1
[ $? = 64 ] && [ ! -e "$T/x" ] && ok || bad "the production trainer must refuse --cheat (64)"

# (c) the honest case trains: the test build and the production build, --shard-state on every rank
"$TRAINER" train "$T/one" --key "$T/key" "${MLP[@]}" >"$T/out" 2>&1 || bad "one process: $(cat "$T/out")"
ranks "$T/c1" -- "$TRAINER" --shard-state -- "$TRAINER" --shard-state
statuses 0
cmp -s "$T/one/commitment.vtc" "$T/c1/commitment.vtc" && ok || bad "2 ranks: another commitment than one process's"
ranks "$T/c2" -- "$TRAINER_TEST" -- "$TRAINER_TEST" -- "$TRAINER_TEST"
statuses 0
cmp -s "$T/one/commitment.vtc" "$T/c2/commitment.vtc" && ok || bad "3 ranks: another commitment than one process's"

vt_end
