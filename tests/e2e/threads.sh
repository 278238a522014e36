#!/usr/bin/env bash
# --threads N (docs/architecture.md "Threads"): exact rounding gives the same bits whatever the thread
# count. The MLP (784-256-10 on 2048 MNIST images, batch 192), the residual CNN (batch 24) and the GPT
# (batch 12) are trained with --threads 1, 2 and 3: 2 and 3 threads take the batch as 2 and 3
# in-process shares (run/vt_shares.h, summed across the shares by the ranks' exact rounding), and
# the three commitments are byte-identical; the 3-thread run audits VERIFIED with --threads 2. Where
# the batch does not split into shares of at least 4 examples (the GPT's 16 on 3 threads), the
# per-operation split runs instead, saying so, with the same commitment. Where the build has MPI,
# `mpirun -np 2` (with --threads 2 on each rank: the per-operation split within a rank) signs the same
# commitment, as where N models of a share pass --max-memory. A run stopped on 2 shares resumes on 3
# to the same commitment. --threads 0 and
# --threads x are usage errors (64).
# Usage: threads.sh BUILD_DIR [MPIEXEC]
set -u
. "$(dirname "$0")/lib.sh"
vt_begin threads "${1:-}" key
MPIEXEC=${2:-}
MLP=(--set subset=2048 --set 'layers=[784,256,10]' --set batch=192 --set steps=6 --set checkpoint_every=3 --set state_hash_every=1)
CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=256 --set resnet_width=4 --set resnet_stages=2
     --set batch=24 --set steps=4 --set checkpoint_every=2 --set state_hash_every=1)
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32 --set gpt_context=16
     --set batch=12 --set steps=4 --set dropout=0.1 --set checkpoint_every=2 --set state_hash_every=1)
for m in MLP CNN GPT; do
  declare -n R=$m
  for t in 1 2 3; do
    "$B/trainer" train --threads $t "$T/$m-$t" --key "$T/key" "${R[@]}" >"$T/out" 2>&1 ||
      bad "$m --threads $t: $(cat "$T/out")"
    if [ $t -gt 1 ]; then # the shares: said on stderr and in the summary, never in the run
      grep -q "^trainer: $t threads, each on a share of" "$T/out" && grep -q "^threads         $t shares of the batch" "$T/out" &&
        ok || bad "$m --threads $t: not run as $t shares: $(cat "$T/out")"
    fi
  done
  for t in 2 3; do
    cmp -s "$T/$m-1/commitment.vtc" "$T/$m-$t/commitment.vtc" && ok || bad "$m: --threads $t's commitment differs from 1's"
  done
  "$B/auditor" verify "$T/$m-3" --threads 2 --quiet >"$T/out" 2>&1 && ok || bad "$m: audit: $(cat "$T/out")"
done
# shares are asked for: the default count (no --threads, no VT_THREADS) splits each operation's loops
(unset VT_THREADS; "$B/trainer" train "$T/MLP-default" --key "$T/key" "${MLP[@]}" >"$T/out" 2>&1) &&
  ! grep -q "shares of the batch" "$T/out" && cmp -s "$T/MLP-1/commitment.vtc" "$T/MLP-default/commitment.vtc" && ok ||
  bad "MLP without --threads: shares taken, or another commitment: $(cat "$T/out")"
# stopped after step 3 on 2 shares (trainer-test --stop-after: no commitment), resumed on 3: the same run
"$B/trainer-test" train --threads 2 "$T/R" --key "$T/key" "${GPT[@]}" --stop-after 3 --quiet >"$T/out" 2>&1 &&
  [ ! -e "$T/R/commitment.vtc" ] || bad "GPT --threads 2 --stop-after 3: $(cat "$T/out")"
"$B/trainer" train --threads 3 "$T/R" --key "$T/key" "${GPT[@]}" --resume --quiet >"$T/out" 2>&1 ||
  bad "GPT --threads 3 --resume: $(cat "$T/out")"
cmp -s "$T/GPT-1/commitment.vtc" "$T/R/commitment.vtc" && ok || bad "GPT: resumed on 3 shares, another commitment"
# the fallback: 16 examples do not split into 3 shares; the per-operation split, the same bits
"$B/trainer" train --threads 1 "$T/G16-1" --key "$T/key" "${GPT[@]}" --set batch=16 --quiet >"$T/out" 2>&1 ||
  bad "GPT batch 16, --threads 1: $(cat "$T/out")"
"$B/trainer" train --threads 3 "$T/G16-3" --key "$T/key" "${GPT[@]}" --set batch=16 >"$T/out" 2>&1 ||
  bad "GPT batch 16, --threads 3: $(cat "$T/out")"
grep -q "^trainer: --threads 3: the batch of 16 examples does not split into 3 equal shares of at least 4: each operation's loops split over the threads instead" "$T/out" &&
  ok || bad "GPT batch 16, --threads 3: no fallback said: $(cat "$T/out")"
cmp -s "$T/G16-1/commitment.vtc" "$T/G16-3/commitment.vtc" && ok || bad "GPT batch 16: --threads 3's commitment differs"
# two models of a share past --max-memory while one model of the whole batch fits: the per-operation split,
# saying so. The budget counts what the process holds already (its libraries, its data), so it is set from the
# refusal of a budget of 1 KiB: what that says the process holds, plus 1.5 models of the whole batch (two
# models of a share need about 2)
M=(--set dataset=digits --set 'layers=[64,2048,2048,10]' --set batch=64 --set steps=2 --set checkpoint_every=2
   --set state_hash_every=1)
"$B/trainer" train --threads 1 "$T/memp" --key "$T/key" "${M[@]}" --max-memory 1K >"$T/out" 2>&1
budget=$(python3 - "$T/out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
u = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
n = re.search(r"needs ([0-9.]+) (B|KiB|MiB|GiB)", t)
h = re.search(r"besides the ([0-9.]+) (B|KiB|MiB|GiB)", t)
print(int(float(h[1]) * u[h[2]] + 1.5 * float(n[1]) * u[n[2]]) if n and h else "")
PY
)
if [ -n "$budget" ] &&
   "$B/trainer" train --threads 2 "$T/mem" --key "$T/key" "${M[@]}" --max-memory "$budget" >"$T/out" 2>&1 &&
   grep -q "^trainer: --threads 2: 2 models of a share (.* together) pass the memory budget of .*: each operation's loops split" "$T/out"
then ok; else bad "--threads 2 --max-memory ${budget:-?} (one model of the batch and a half): $(cat "$T/out")"; fi
# an error every share meets is said as one process says it (no share named), with its exit status
"$B/trainer" train --threads 1 "$T/e1" --key "$T/key" --data-dir "$T/none" >"$T/e1.out" 2>&1; st1=$?
"$B/trainer" train --threads 2 "$T/e2" --key "$T/key" --data-dir "$T/none" --quiet >"$T/e2.out" 2>&1; st2=$?
# (the first line: a debug build adds the error's site, which differs)
[ $st1 = $st2 ] && [ $st1 != 0 ] && [ "$(head -1 "$T/e1.out")" = "$(head -1 "$T/e2.out")" ] && ok ||
  bad "a missing data directory: exit $st1 and $st2, \"$(cat "$T/e1.out")\" and \"$(cat "$T/e2.out")\""
# the same commitment as two MPI ranks (each with two threads of the per-operation split)
if [ -n "$MPIEXEC" ]; then
  mpi_begin "$MPIEXEC"
  for m in MLP CNN GPT; do
    declare -n R=$m
    # (Open MPI's start-up allocations are not leaks of ours, in a sanitizer build: as tests/cmake/dp.cmake)
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 mpi 2 "$B/trainer" train --threads 2 "$T/$m-np2" --key "$T/key" "${R[@]}" --quiet >"$T/out" 2>&1 ||
      bad "$m, mpirun -np 2: $(cat "$T/out")"
    cmp -s "$T/$m-1/commitment.vtc" "$T/$m-np2/commitment.vtc" && ok || bad "$m: mpirun -np 2's commitment differs"
  done
fi
"$B/trainer" train --threads 0 "$T/x" --key "$T/key" --quiet >/dev/null 2>&1; st=$?
[ $st = 64 ] && ok || bad "--threads 0: exit $st"
"$B/auditor" --threads x verify "$T/MLP-1" >/dev/null 2>&1; st=$?
[ $st = 64 ] && ok || bad "--threads x: exit $st"
vt_end
