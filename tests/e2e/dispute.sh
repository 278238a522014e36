#!/usr/bin/env bash
# The dispute game with real processes on loopback: each case starts its own arbiter and
# trainer server on free ports, plays the game from `auditor challenge`, checks the verdict
# (who lost, why, at which step and operation) and re-derives it offline with
# `arbiter check`. Usage: dispute.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin dispute "${1:-}"
keys tk rk ak
"$B/auditor" --help >/dev/null || { echo "setup failed"; exit 1; }
# 4000 MNIST images, 784-128-10, 20 steps, every state committed; exact rounding (the default)
# and, for the log's own cases, log rounding (a few dozen log entries)
R=(--set subset=4000 --set 'layers=[784,128,10]' --set steps=20 --set batch=64 --set checkpoint_every=5
   --set state_hash_every=1 --quiet)
RLOG=(--set rounding=log)

# ASan/UBSan builds (VT_ASAN=1) run several times slower: deadlines that honest parties must
# meet are scaled by SLOW, and by VT_TEST_TIMEOUT_SCALE (dl: tests/e2e/lib.sh). Each game
# (dispute_game: tests/e2e/lib.sh) starts its own arbiter and trainer server on free ports.

train honest "${R[@]}"
train honest-log "${R[@]}" "${RLOG[@]}"
# the cheating trainer deviates at step 7 and commits consistently; its server answers consistently.
# Operation ids of the 784-128-10 SGD program (trainer recipe --program): 1 load batch, 2 the
# learning-rate schedule (a wrong learning rate is caught where it is produced), 15 the fc1
# weight-gradient GEMM, 18 the SGD update of fc1.weight
for c in "lr:7:0.5 2" "poison:7:0.001 15" "flip-weight:7 18" "reorder:7 1"; do
  set -- $c
  train "cheat-${1%%:*}" "${R[@]}" --cheat "$1"
  dispute_game "cheat-${1%%:*}" "cheat-${1%%:*}" trainer "wrong output" 7 "$2" --cheat "$1"
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
    "$B/trainer-test" train "$T/$name-${cheat%%:*}" --key "$T/tk" "${ARCH[@]}" --quiet --cheat "$cheat" \
      >/dev/null || bad "train $name $cheat"
    dispute_game "$name-${cheat%%:*}" "$name-${cheat%%:*}" trainer "wrong output" 4 "$op" --cheat "$cheat"
  done
}
# the residual CNN (arch=resnet, the README's recipe made small): a flipped weight bit, a changed
# running statistic of batch norm, another augmentation seed
ARCH=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=512 --set resnet_width=4
      --set resnet_stages=2 --set batch=16 --set steps=8 --set checkpoint_every=4 --set state_hash_every=1
      --set decay_every=4)
arch_games cnn "flip-weight:4 SGD update stem.conv.weight" "flip-buffer:4 stem.bn running statistics" \
  "augment-seed:4 augment batch"
# the character-level GPT (arch=gpt, the README's recipe made small): a flipped weight bit, another
# dropout seed, a swapped batch window
ARCH=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32
      --set gpt_context=16 --set batch=8 --set steps=8 --set warmup=2 --set dropout=0.1 --set checkpoint_every=4
      --set state_hash_every=1)
arch_games gpt "flip-weight:4 AdamW update wte.weight" "dropout-seed:4 embedding dropout" \
  "swap-window:4 load windows"
train cheat-lr-log "${R[@]}" --cheat lr:7:0.5 "${RLOG[@]}"
dispute_game cheat-lr-log cheat-lr-log trainer "wrong output" 7 2 --cheat lr:7:0.5
# log forgeries, re-committed with the trainer's key (tests/tools/vt_tamper.c)
cp -r "$T/honest-log" "$T/forged"; "$B/vt_tamper" "$T/forged" "$T/tk" flip-direction >/dev/null || bad "tamper"
dispute_game forged-direction forged trainer "wrong output" "" ""
cp -r "$T/honest-log" "$T/omitted"; "$B/vt_tamper" "$T/omitted" "$T/tk" delete-entries >/dev/null || bad "tamper"
dispute_game omitted-entry omitted trainer "missing log entry" "" ""
cp -r "$T/honest-log" "$T/swapped"; "$B/vt_tamper" "$T/swapped" "$T/tk" swap-logs 12 13 >/dev/null || bad "tamper"
dispute_game swapped-logs swapped trainer "log mismatch" 12 ""
# a log smuggled into an exact run
cp -r "$T/honest" "$T/smuggled"; "$B/vt_tamper" "$T/smuggled" "$T/tk" add-entry 6 >/dev/null || bad "tamper"
dispute_game smuggled-log smuggled trainer "log mismatch" 6 ""
# a lying auditor disputes an honest step, in both modes and with the arbiter and the auditor on
# other orders than each other (and than the trainer): the honest trainer never loses (operation 3:
# the fc1 forward GEMM)
dispute_game lying-auditor honest auditor "wrong output" 9 3 -- --lie 9:3
dispute_game lying-auditor-log honest-log auditor "wrong output" 9 3 -- --lie 9:3
ARB_ORDER=forward dispute_game lying-auditor-orders honest auditor "wrong output" 9 3 -- --lie 9:3 --order permuted
ARB_ORDER=permuted dispute_game lying-auditor-log-orders honest-log auditor "wrong output" 9 3 -- --lie 9:3 --order forward
ARB_ORDER=split dispute_game omitted-entry-orders omitted trainer "missing log entry" "" "" -- --order reverse
# trainers that misbehave in the game itself
dispute_game bad-proof cheat-lr trainer "bad proof" "" "" --cheat lr:7:0.5 --misbehave bad-proof
dispute_game inconsistent cheat-lr trainer "inconsistent answer" "" "" --cheat lr:7:0.5 --misbehave inconsistent
# The arbiter's deadline is what decides here: the trainer reads every question and never
# answers (and, with --idle-ms 600000, keeps the connection open far longer than the deadline),
# so its first question (the commitment) runs out. The deadline is shorter than the default to
# keep the case quick, yet long enough that the honest side cannot plausibly miss it on a loaded
# machine: all it must do in time is the auditor's CHALLENGE right after its TLS handshake and
# the arbiter's TLS connection to the trainer.
DEADLINE=$(dl 10000) WHY="deadline exceeded" dispute_game silent cheat-lr trainer "no valid answer" "" "" --cheat lr:7:0.5 --misbehave silent \
  --idle-ms 600000
# a trainer that signed two different roots for one run: it serves another commitment than the
# one the auditor holds (the same run re-committed after an edit, signed by the same key)
cp -r "$T/honest-log" "$T/second"; "$B/vt_tamper" "$T/second" "$T/tk" flip-direction >/dev/null || bad "tamper"
ARUN=honest-log dispute_game two-roots second trainer "equivocation" "" "" -- --step 10
# a run started from a file (trainer train --init: the honest run's export at step 10): the auditor
# builds its own version from the same file (the run's copy), finds the cheat at step 7 and wins
"$B/trainer" export "$T/honest" --step 10 --format safetensors --out "$T/init10.safetensors" --pubkey "$T/tk.pub" \
  >/dev/null || bad "export for --init"
train cheat-init "${R[@]}" --init "$T/init10.safetensors" --cheat lr:7:0.5
dispute_game cheat-init cheat-init trainer "wrong output" 7 2 --cheat lr:7:0.5
# the tensor-core mode (gemm_arith; docs/tensorcore.md): a trainer that poisons the fc1 weight-gradient
# GEMM (operation 15) loses; the arbiter recomputes that GEMM with the CPU's emulation of the tensor cores
train cheat-tc "${R[@]}" --set gemm_arith=tc-bf16-sm90 --cheat poison:7:0.001
dispute_game cheat-tc cheat-tc trainer "wrong output" 7 15 --cheat poison:7:0.001
# an honest trainer in the mode against an auditor that lies about the fc1 weight-gradient GEMM
# (operation 15: its output reaches the state): the trainer wins only if the arbiter's recomputation
# of that GEMM has the emulator's bits (the fp64 mode's would match neither party)
train honest-tc "${R[@]}" --set gemm_arith=tc-bf16-sm90
dispute_game lying-auditor-tc honest-tc auditor "wrong output" 9 15 -- --lie 9:15
# a connection dropped mid-game: the arbiter reconnects and the game goes on to the same verdict
dispute_game dropped cheat-lr trainer "wrong output" 7 2 --cheat lr:7:0.5 --misbehave drop-once
# garbage sent to the trainer's port first: that client is dropped (and logged), the game still works
GARBAGE=1 dispute_game garbage cheat-lr trainer "wrong output" 7 2 --cheat lr:7:0.5

vt_end
