#!/usr/bin/env bash
# The dispute game in the newest modes (red team of the tensor-core mode and step program 2): a
# trainer that tampers with one operation of one step loses at that step and operation, and an
# honest trainer beats an auditor that lies about one operation, where the arbiter's one-operation
# recomputation must be the mode's: the tensor-core GEMMs of a CNN (tc-bf16-sm90: the convolutions
# as GEMMs of their gathers, and their input gradients) and step program 2's conv2d,
# conv2d_weight_grad and conv2d_input_grad kinds (exact and log rounding); a trainer that computes one
# step in another arithmetic than its manifest's loses at that step's first GEMM. Real processes on loopback, as tests/e2e/dispute.sh
# (whose game function this copies); every verdict re-derived offline with `arbiter check`.
# Usage: dispute_modes.sh BUILD_DIR
set -u
B=$(cd "$1" && pwd)
. "$(dirname "$0")/lib.sh" # the hang guards: vt_scale, wait_until
T=$(mktemp -d /tmp/vt-dispute-modes.XXXXXX)
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


CNN=(--recipe "$(dirname "$0")/../../recipes/resnet-cifar10.json" --set subset=512 --set resnet_width=4
     --set resnet_stages=2 --set batch=16 --set steps=8 --set checkpoint_every=4 --set state_hash_every=1
     --set decay_every=4 --quiet)
GPT=(--recipe "$(dirname "$0")/../../recipes/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32
     --set gpt_context=16 --set batch=8 --set steps=8 --set warmup=2 --set checkpoint_every=4 --set state_hash_every=1
     --quiet)
MLP=(--set subset=2000 --set 'layers=[784,32,10]' --set steps=8 --set batch=32 --set checkpoint_every=4
     --set state_hash_every=1 --quiet)
R=()
# opid NAME MODE-ARGS...: the id of the operation of the recipe R whose name is NAME (trainer recipe --program)
opid() {
  local n=$1; shift
  "$B/trainer" recipe "${R[@]}" "$@" --program |
    awk -v n="$n" '/^operations/{f=1} /^evaluation pass/{f=0} f && index($0, n) {print $1; exit}'
}
# mode NAME OP MODE-ARGS...: with the recipe R, an honest run and a run whose trainer shifts operation OP's
# output at step 3; the cheat loses at step 3 at that operation, the honest trainer beats an auditor
# that lies (the same shift) about it at step 6
mode() {
  local name=$1 op=$2; shift 2
  [ -n "$op" ] || { bad "$name: no operation id"; return; }
  "$B/trainer" train --run "$T/$name-honest" --key "$T/tk" "${R[@]}" "$@" >/dev/null || bad "train $name-honest"
  "$B/trainer-test" train --run "$T/$name-cheat" --key "$T/tk" "${R[@]}" "$@" --cheat "shift-op:3:$op" >/dev/null ||
    bad "train $name-cheat"
  game "$name-cheat" "$name-cheat" trainer "wrong output" 3 "$op" --cheat "shift-op:3:$op"
  game "$name-lie" "$name-honest" auditor "wrong output" 6 "$op" -- --lie "6:$op:shift"
}
TC=(--set gemm_arith=tc-bf16-sm90)
P2=(--set program_version=2)
# the CNN in the tensor-core mode (program 1: im2col and gathers, every convolution a matmul) and as
# step program 2 (conv2d, conv2d_weight_grad, conv2d_input_grad; strided 3x3 and 1x1 input gradients)
R=("${CNN[@]}")
tc_fwd=$(opid "layer2.0.conv1 forward GEMM" "${TC[@]}")
tc_dgrad=$(opid "layer2.0.conv1 input-gradient GEMM" "${TC[@]}")
tc_wgrad=$(opid "layer2.0.conv2 weight-gradient GEMM" "${TC[@]}")
p2_fwd=$(opid "layer2.0.conv1 forward" "${P2[@]}")
p2_dgrad=$(opid "layer2.0.conv1 input gradient" "${P2[@]}")
p2_dgrad1=$(opid "layer2.0.shortcut.conv input gradient" "${P2[@]}")
p2_wgrad=$(opid "layer2.0.conv2 weight gradient" "${P2[@]}")
echo "operations: tc $tc_fwd $tc_dgrad $tc_wgrad, program 2 $p2_fwd $p2_dgrad $p2_dgrad1 $p2_wgrad"
mode tc-fwd "$tc_fwd" "${TC[@]}"
mode tc-dgrad "$tc_dgrad" "${TC[@]}"
mode tc-wgrad "$tc_wgrad" "${TC[@]}"
mode p2-fwd "$p2_fwd" "${P2[@]}"
mode p2-dgrad "$p2_dgrad" "${P2[@]}"
mode p2-dgrad-1x1 "$p2_dgrad1" "${P2[@]}"
mode p2-wgrad "$p2_wgrad" "${P2[@]}"
# program 2 in log rounding: the arbiter judges the convolutions' log entries against the exact values
P2L=(--set program_version=2 --set rounding=log)
mode p2log-dgrad "$p2_dgrad" "${P2L[@]}"
mode p2log-wgrad "$p2_wgrad" "${P2L[@]}"
# program 2's log forgeries: a step's entries omitted (test cheat), a direction flipped and entries deleted
# after training (re-committed, tests/tools/vt_tamper.c): the trainer loses at the convolution's log
"$B/trainer-test" train --run "$T/p2-omit" --key "$T/tk" "${R[@]}" "${P2L[@]}" --cheat omit-entry:3 >/dev/null ||
  bad "train p2-omit"
game p2-omit p2-omit trainer "missing log entry" 3 "" --cheat omit-entry:3
cp -r "$T/p2log-dgrad-honest" "$T/p2-forged"
"$B/vt_tamper" "$T/p2-forged" "$T/tk" flip-direction >/dev/null || bad "tamper p2-forged"
game p2-forged p2-forged trainer "wrong output" "" ""
cp -r "$T/p2log-dgrad-honest" "$T/p2-deleted"
"$B/vt_tamper" "$T/p2-deleted" "$T/tk" delete-entries >/dev/null || bad "tamper p2-deleted"
game p2-deleted p2-deleted trainer "missing log entry" "" ""
# the GPT's attention (bmm; the scores are not used: a shift of every score is absorbed by the softmax) in
# tc-fp16-sm90
R=("${GPT[@]}")
mode gpt-wsum "$(opid "h0.attn weighted sum" --set gemm_arith=tc-fp16-sm90)" --set gemm_arith=tc-fp16-sm90
mode gpt-kgrad "$(opid "h0.attn k gradient" --set gemm_arith=tc-fp16-sm90)" --set gemm_arith=tc-fp16-sm90
# the other models: Ampere's groups of 8, FP8 (the MLP's fc1 weight-gradient GEMM, transposed A)
R=("${MLP[@]}")
mode mlp-sm80 "$(opid "fc1 weight-gradient GEMM")" --set gemm_arith=tc-fp16-sm80
mode mlp-e4m3 "$(opid "fc1 weight-gradient GEMM")" --set gemm_arith=tc-e4m3-sm90
# a trainer that mixes arithmetics: one step (4) of a tc-bf16-sm90 run computed in fp64, or in tc-bf16-sm80,
# and one step of an fp64 run in tc-bf16-sm90 (test cheat arith:STEP:V): it loses at that step's first
# GEMM (operation 3, fc1 forward), the arbiter recomputing it in the manifest's arithmetic
"$B/trainer-test" train --run "$T/mix1" --key "$T/tk" "${R[@]}" --set gemm_arith=tc-bf16-sm90 --cheat arith:4:0 >/dev/null ||
  bad "train mix1"
game mix-fp64-step mix1 trainer "wrong output" 4 3 --cheat arith:4:0
"$B/trainer-test" train --run "$T/mix2" --key "$T/tk" "${R[@]}" --cheat arith:4:1 >/dev/null || bad "train mix2"
game mix-tc-step mix2 trainer "wrong output" 4 3 --cheat arith:4:1
"$B/trainer-test" train --run "$T/mix3" --key "$T/tk" "${R[@]}" --set gemm_arith=tc-bf16-sm90 --cheat arith:4:3 >/dev/null ||
  bad "train mix3"
game mix-sm80-step mix3 trainer "wrong output" 4 3 --cheat arith:4:3

echo "dispute_modes: $pass passed, $fail failed"
[ "$fail" = 0 ]
