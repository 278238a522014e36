#!/usr/bin/env bash
# The dispute game with real processes on loopback: each case starts its own arbiter and
# trainer server on free ports, plays the game from `auditor challenge`, checks the verdict
# (who lost, why, at which step and operation) and re-derives it offline with
# `arbiter check`. Usage: dispute.sh BUILD_DIR
set -u
B=$(cd "$1" && pwd)
. "$(dirname "$0")/lib.sh" # the hang guards: vt_scale, wait_until
T=$(mktemp -d /tmp/vt-dispute.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

"$B/trainer" keygen "$T/tk" >/dev/null && "$B/auditor" --help >/dev/null && "$B/arbiter" keygen "$T/rk" >/dev/null &&
  "$B/trainer" keygen "$T/ak" >/dev/null || { echo "setup failed"; exit 1; }
# 4000 MNIST images, 784-128-10, 20 steps, every state committed; exact rounding (the default)
# and, for the log's own cases, log rounding (a few dozen log entries)
R=(--set subset=4000 --set 'layers=[784,128,10]' --set steps=20 --set batch=64 --set checkpoint_every=5
   --set state_hash_every=1 --quiet)
RLOG=(--set rounding=log)

# ASan/UBSan builds (VT_ASAN=1) run several times slower: deadlines that honest parties must
# meet are scaled by this factor, and by VT_TEST_TIMEOUT_SCALE (tests/e2e/lib.sh).
SLOW=1; [ "${VT_ASAN:-0}" = 1 ] && SLOW=4
dl() { vt_scale $(($1 * SLOW)); } # dl MS: a deadline an honest party must meet (a hang guard)

# wait_file FILE PID LOG: waits for a server's port file (written atomically: once it exists it
# is complete). `trainer serve` loads and hashes the data set before it listens, which can take
# long under a sanitizer on a loaded machine: the ceiling is generous (120 s, scaled), and the wait
# ends at once, showing the log, if the server has exited.
wait_file() {
  wait_until 120 file_or_exit "$1" "$2"
  [ -s "$1" ] && return 0
  echo "server (pid $2): no $1: $(tail -5 "$3" 2>/dev/null)" >&2
  return 1
}

# game NAME RUN EXPECT_LOSER(trainer|auditor) REASON STEP OP [serve args...] [-- challenge args...]
# (environment: DEADLINE the arbiter's --deadline-ms; WHY a text the verdict must contain;
# ARUN the auditor's run; GARBAGE=1 junk to the trainer's port first)
game() {
  local name=$1 run=$2 loser=$3 reason=$4 step=$5 op=$6; shift 6
  local sargs=() cargs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do sargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  cargs=("$@")
  local d="$T/g-$name"; mkdir -p "$d"
  "$B/arbiter" serve --listen 127.0.0.1:0 --key "$T/rk" --games 1 --port-file "$d/ap" --transcripts "$d" \
    --deadline-ms "${DEADLINE:-$(dl 20000)}" --order "${ARB_ORDER:-reverse}" >"$d/arbiter.log" 2>&1 &
  local apid=$!
  "$B/trainer-test" serve "$T/$run" --listen 127.0.0.1:0 --key "$T/tk" --arbiter-key "$T/rk.pub" --connections 3 \
    --port-file "$d/tp" --service-file "$d/service.vtsr" --idle-ms 20000 \
    "${sargs[@]}" --quiet >"$d/trainer.log" 2>&1 &
  local tpid=$!
  PIDS+=("$apid" "$tpid")
  if ! wait_file "$d/ap" "$apid" "$d/arbiter.log" || ! wait_file "$d/tp" "$tpid" "$d/trainer.log"; then
    bad "$name: servers did not start"; return; fi
  [ -n "${GARBAGE:-}" ] && { head -c 4000 /dev/urandom >/dev/tcp/127.0.0.1/"$(cat "$d/tp")"; } 2>/dev/null
  timeout "$(vt_scale 300)" "$B/auditor-test" challenge "$T/${ARUN:-$run}" --service "$d/service.vtsr" --arbiter 127.0.0.1:"$(cat "$d/ap")" \
    --key "$T/ak" --arbiter-key "$T/rk.pub" --quiet "${cargs[@]}" >"$d/challenge.out" 2>&1
  local st=$?
  # the arbiter (--games 1) exits by itself once the verdict and the transcript are out: give it
  # time (it returns as soon as it is done) rather than killing it mid-write on a slow machine
  wait_until 60 exited "$apid"
  kill "$apid" 2>/dev/null; wait "$apid" 2>/dev/null
  kill "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null
  local want=0; [ "$loser" = auditor ] && want=1
  local out; out=$(cat "$d/challenge.out")
  if [ "$st" != "$want" ]; then bad "$name: auditor challenge exit $st, expected $want: $out $(tail -3 "$d/arbiter.log")"; return; fi
  echo "$out" | grep -q "against the $loser ($reason)" || { bad "$name: verdict: $out"; return; }
  [ -z "$step" ] || echo "$out" | grep -q "at step $step," || { bad "$name: wrong step: $out"; return; }
  [ -z "$op" ] || echo "$out" | grep -q "operation $op\$" || { bad "$name: wrong operation: $out"; return; }
  [ -z "${WHY:-}" ] || echo "$out" | grep -q "$WHY" || { bad "$name: not decided by \"$WHY\": $out"; return; }
  ok
  echo "$name: $(echo "$out" | head -1)"
  local tr; tr=$(ls "$d"/game-*.vttr 2>/dev/null | head -1)
  if [ -z "$tr" ]; then bad "$name: no transcript"; return; fi
  if "$B/arbiter" check "$tr" >"$d/check.out" 2>&1 && grep -q "^RE-DERIVED" "$d/check.out"; then ok; else
    bad "$name: arbiter check: $(cat "$d/check.out")"; fi
}

train() { "$B/trainer-test" train --run "$T/$1" --key "$T/tk" "${R[@]}" "${@:2}" >/dev/null || bad "train $1"; }

train honest
train honest-log "${RLOG[@]}"
# the cheating trainer deviates at step 7 and commits consistently; its server answers consistently.
# Operation ids of the 784-128-10 SGD program (trainer recipe --program): 1 load batch, 2 the
# learning-rate schedule (a wrong learning rate is caught where it is produced), 15 the fc1
# weight-gradient GEMM, 18 the SGD update of fc1.weight
for c in "lr:7:0.5 2" "poison:7:0.001 15" "flip-weight:7 18" "reorder:7 1"; do
  set -- $c
  train "cheat-${1%%:*}" --cheat "$1"
  game "cheat-${1%%:*}" "cheat-${1%%:*}" trainer "wrong output" 7 "$2" --cheat "$1"
done
# arch_games NAME "CHEAT OPERATION NAME"...: with the recipe options in ARCH, a trainer cheating at
# step 4 as CHEAT loses at the operation of that name (its id from `trainer recipe --program`)
arch_games() {
  local name=$1 c cheat op; shift
  "$B/trainer" recipe "${ARCH[@]}" --program >"$T/$name-program.txt" || bad "$name program"
  for c in "$@"; do
    cheat=${c%% *}
    op=$(awk -v n="${c#* }" '/^operations/{f=1} /^evaluation pass/{f=0} f && index($0, n) {print $1; exit}' \
      "$T/$name-program.txt")
    "$B/trainer-test" train --run "$T/$name-${cheat%%:*}" --key "$T/tk" "${ARCH[@]}" --quiet --cheat "$cheat" \
      >/dev/null || bad "train $name $cheat"
    game "$name-${cheat%%:*}" "$name-${cheat%%:*}" trainer "wrong output" 4 "$op" --cheat "$cheat"
  done
}
# the residual CNN (arch=resnet, the README's recipe made small): a flipped weight bit, a changed
# running statistic of batch norm, another augmentation seed
ARCH=(--recipe "$(dirname "$0")/../../recipes/resnet-cifar10.json" --set subset=512 --set resnet_width=4
      --set resnet_stages=2 --set batch=16 --set steps=8 --set checkpoint_every=4 --set state_hash_every=1
      --set decay_every=4)
arch_games cnn "flip-weight:4 SGD update stem.conv.weight" "flip-buffer:4 stem.bn running statistics" \
  "augment-seed:4 augment batch"
# the character-level GPT (arch=gpt, the README's recipe made small): a flipped weight bit, another
# dropout seed, a swapped batch window
ARCH=(--recipe "$(dirname "$0")/../../recipes/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32
      --set gpt_context=16 --set batch=8 --set steps=8 --set warmup=2 --set dropout=0.1 --set checkpoint_every=4
      --set state_hash_every=1)
arch_games gpt "flip-weight:4 AdamW update wte.weight" "dropout-seed:4 embedding dropout" \
  "swap-window:4 load windows"
train cheat-lr-log --cheat lr:7:0.5 "${RLOG[@]}"
game cheat-lr-log cheat-lr-log trainer "wrong output" 7 2 --cheat lr:7:0.5
# log forgeries, re-committed with the trainer's key (tests/tools/vt_tamper.c)
cp -r "$T/honest-log" "$T/forged"; "$B/vt_tamper" "$T/forged" "$T/tk" flip-direction >/dev/null || bad "tamper"
game forged-direction forged trainer "wrong output" "" ""
cp -r "$T/honest-log" "$T/omitted"; "$B/vt_tamper" "$T/omitted" "$T/tk" delete-entries >/dev/null || bad "tamper"
game omitted-entry omitted trainer "missing log entry" "" ""
cp -r "$T/honest-log" "$T/swapped"; "$B/vt_tamper" "$T/swapped" "$T/tk" swap-logs 12 13 >/dev/null || bad "tamper"
game swapped-logs swapped trainer "log mismatch" 12 ""
# a log smuggled into an exact run
cp -r "$T/honest" "$T/smuggled"; "$B/vt_tamper" "$T/smuggled" "$T/tk" add-entry 6 >/dev/null || bad "tamper"
game smuggled-log smuggled trainer "log mismatch" 6 ""
# a lying auditor disputes an honest step, in both modes and with the arbiter and the auditor on
# other orders than each other (and than the trainer): the honest trainer never loses (operation 3:
# the fc1 forward GEMM)
game lying-auditor honest auditor "wrong output" 9 3 -- --lie 9:3
game lying-auditor-log honest-log auditor "wrong output" 9 3 -- --lie 9:3
ARB_ORDER=forward game lying-auditor-orders honest auditor "wrong output" 9 3 -- --lie 9:3 --order permuted
ARB_ORDER=permuted game lying-auditor-log-orders honest-log auditor "wrong output" 9 3 -- --lie 9:3 --order forward
ARB_ORDER=split game omitted-entry-orders omitted trainer "missing log entry" "" "" -- --order reverse
# trainers that misbehave in the game itself
game bad-proof cheat-lr trainer "bad proof" "" "" --cheat lr:7:0.5 --misbehave bad-proof
game inconsistent cheat-lr trainer "inconsistent answer" "" "" --cheat lr:7:0.5 --misbehave inconsistent
# The arbiter's deadline is what decides here: the trainer reads every question and never
# answers (and, with --idle-ms 600000, keeps the connection open far longer than the deadline),
# so its first question (the commitment) runs out. The deadline is shorter than the default to
# keep the case quick, yet long enough that the honest side cannot plausibly miss it on a loaded
# machine: all it must do in time is the auditor's CHALLENGE right after its TLS handshake and
# the arbiter's TLS connection to the trainer.
DEADLINE=$(dl 10000) WHY="deadline exceeded" game silent cheat-lr trainer "no valid answer" "" "" --cheat lr:7:0.5 --misbehave silent \
  --idle-ms 600000
# a trainer that signed two different roots for one run: it serves another commitment than the
# one the auditor holds (the same run re-committed after an edit, signed by the same key)
cp -r "$T/honest-log" "$T/second"; "$B/vt_tamper" "$T/second" "$T/tk" flip-direction >/dev/null || bad "tamper"
ARUN=honest-log game two-roots second trainer "equivocation" "" "" -- --step 10
# a run started from a file (trainer train --init: the honest run's export at step 10): the auditor
# builds its own version from the same file (the run's copy), finds the cheat at step 7 and wins
"$B/trainer" export "$T/honest" --step 10 --format safetensors --out "$T/init10.safetensors" --pubkey "$T/tk.pub" \
  >/dev/null || bad "export for --init"
train cheat-init --init "$T/init10.safetensors" --cheat lr:7:0.5
game cheat-init cheat-init trainer "wrong output" 7 2 --cheat lr:7:0.5
# the tensor-core mode (gemm_arith; docs/tensorcore.md): a trainer that poisons the fc1 weight-gradient
# GEMM (operation 15) loses; the arbiter recomputes that GEMM with the CPU's emulation of the tensor cores
train cheat-tc --set gemm_arith=tc-bf16-sm90 --cheat poison:7:0.001
game cheat-tc cheat-tc trainer "wrong output" 7 15 --cheat poison:7:0.001
# an honest trainer in the mode against an auditor that lies about the fc1 weight-gradient GEMM
# (operation 15: its output reaches the state): the trainer wins only if the arbiter's recomputation
# of that GEMM has the emulator's bits (the fp64 mode's would match neither party)
train honest-tc --set gemm_arith=tc-bf16-sm90
game lying-auditor-tc honest-tc auditor "wrong output" 9 15 -- --lie 9:15
# a connection dropped mid-game: the arbiter reconnects and the game goes on to the same verdict
game dropped cheat-lr trainer "wrong output" 7 2 --cheat lr:7:0.5 --misbehave drop-once
# garbage sent to the trainer's port first: that client is dropped (and logged), the game still works
GARBAGE=1 game garbage cheat-lr trainer "wrong output" 7 2 --cheat lr:7:0.5

echo "dispute: $pass passed, $fail failed"
[ "$fail" = 0 ]
