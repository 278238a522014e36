#!/usr/bin/env bash
# `mpirun -np M auditor verify`: the run's segments split over M ranks (docs/distributed.md "Audit
# on several ranks") give the verdict and the report of one process: an honest run VERIFIED and a
# cheating trainer's run REJECTED at the same step and operation, on 2 and 3 ranks (--jobs 2 each:
# 4 and 6 segments), mpirun returning rank 0's status (the verdict's). Usage: audit_ranks.sh BUILD_DIR
# (exit 77 when the build has no MPI or mpirun is missing).
set -u
. "$(dirname "$0")/lib.sh"
vt_begin audit_ranks "${1:-}"
MPIRUN=${MPIEXEC:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
"$B/test_dist" --ranks 2 >/dev/null 2>&1; [ $? = 77 ] && { echo "SKIP: this build has no MPI"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

"$B/trainer" keygen "$T/k" >/dev/null || { echo "keygen failed"; exit 1; }
R=(--key "$T/k" --set dataset=digits --set 'layers=[64,16,10]' --set steps=24 --set batch=12
   --set checkpoint_every=4 --set state_hash_every=1 --quiet)
"$B/trainer-test" train "$T/honest" "${R[@]}" >/dev/null || bad "train honest"
"$B/trainer-test" train "$T/cheat" "${R[@]}" --cheat lr:13:0.5 >/dev/null || bad "train cheat"

# the report without what depends on the moment (its timing, the memory then available)
strip() { grep -v '"seconds"\|"memory_budget_bytes"' "$1"; }
for run in honest cheat; do
  want=0; [ $run = cheat ] && want=1
  for np in 2 3; do # one process with the same segments (--jobs 2 np) against np ranks of --jobs 2
    "$B/auditor" verify "$T/$run" --jobs $((2 * np)) --order reverse --quiet --report "$T/$run-1-$np.json" \
      >"$T/$run-1.out" 2>&1
    st=$?
    [ $st = $want ] && ok || bad "$run on one process: exit $st: $(cat "$T/$run-1.out")"
    "$MPIRUN" --oversubscribe --allow-run-as-root -np $np "$B/auditor" verify "$T/$run" --jobs 2 --order reverse \
      --report "$T/$run-$np.json" >"$T/$run-$np.out" 2>&1
    st=$?
    [ $st = $want ] && ok || bad "$run on $np ranks: exit $st: $(cat "$T/$run-$np.out")"
    if diff <(strip "$T/$run-1-$np.json") <(strip "$T/$run-$np.json") >/dev/null; then
      ok
    else
      bad "$run on $np ranks: the report differs: $(diff <(strip "$T/$run-1-$np.json") <(strip "$T/$run-$np.json"))"
    fi
    n=$(grep -c "^VERIFIED\|^REJECTED" "$T/$run-$np.out")
    [ "$n" = 1 ] && ok || bad "$run on $np ranks: $n verdict lines (rank 0 alone prints): $(cat "$T/$run-$np.out")"
  done
done
grep -q '"step": 13' "$T/cheat-3.json" && ok || bad "the cheat is found at step 13: $(cat "$T/cheat-3.json")"
vt_end
