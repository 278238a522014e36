#!/usr/bin/env bash
# The dispute game in the newest modes (red team of the tensor-core mode and step program 2): a
# trainer that tampers with one operation of one step loses at that step and operation, and an
# honest trainer beats an auditor that lies about one operation, where the arbiter's one-operation
# recomputation must be the mode's: the tensor-core GEMMs of a CNN (tc-bf16-sm90: program 1's
# convolutions as GEMMs of their gathers, and their input gradients; program 3's conv2d,
# conv2d_input_grad and conv2d_weight_grad in the mode) and step program 2's conv2d,
# conv2d_weight_grad and conv2d_input_grad kinds (exact and log rounding); a trainer that computes one
# step in another arithmetic than its manifest's loses at that step's first GEMM. Real processes on
# loopback, each game on fresh servers (dispute_game, tests/e2e/lib.sh, as tests/e2e/dispute.sh plays
# them); every verdict re-derived offline with `arbiter check`.
# Usage: dispute_modes.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin dispute_modes "${1:-}"
keys tk rk ak
"$B/auditor" --help >/dev/null || { echo "setup failed"; exit 1; }
# ASan/UBSan builds (VT_ASAN=1) run several times slower: the deadlines that honest parties must
# meet are scaled (dl: tests/e2e/lib.sh).
CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=512 --set resnet_width=4
     --set resnet_stages=2 --set batch=16 --set steps=8 --set checkpoint_every=4 --set state_hash_every=1
     --set decay_every=4 --quiet)
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32
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
  "$B/trainer" train "$T/$name-honest" --key "$T/tk" "${R[@]}" "$@" >/dev/null || bad "train $name-honest"
  "$B/trainer-test" train "$T/$name-cheat" --key "$T/tk" "${R[@]}" "$@" --cheat "shift-op:3:$op" >/dev/null ||
    bad "train $name-cheat"
  dispute_game "$name-cheat" "$name-cheat" trainer "wrong output" 3 "$op" --cheat "shift-op:3:$op"
  dispute_game "$name-lie" "$name-honest" auditor "wrong output" 6 "$op" -- --lie "6:$op:shift"
}
TC=(--set gemm_arith=tc-bf16-sm90 --set program_version=1)
TC3=(--set gemm_arith=tc-bf16-sm90)
P2=(--set program_version=2)
# the CNN in the tensor-core mode (program 1: im2col and gathers, every convolution a matmul; program 3,
# a new run's default: conv2d, conv2d_input_grad and conv2d_weight_grad, each program 1's GEMM in the
# mode) and as step program 2 (conv2d, conv2d_weight_grad, conv2d_input_grad; strided 3x3 and 1x1 input
# gradients)
R=("${CNN[@]}")
tc_fwd=$(opid "layer2.0.conv1 forward GEMM" "${TC[@]}")
tc_dgrad=$(opid "layer2.0.conv1 input-gradient GEMM" "${TC[@]}")
tc_wgrad=$(opid "layer2.0.conv2 weight-gradient GEMM" "${TC[@]}")
tc3_fwd=$(opid "layer2.0.conv1  " "${TC3[@]}")
tc3_dgrad=$(opid "layer2.0.conv1 input gradient" "${TC3[@]}")
tc3_wgrad=$(opid "layer2.0.conv2 weight gradient" "${TC3[@]}")
p2_fwd=$(opid "layer2.0.conv1 forward" "${P2[@]}")
p2_dgrad=$(opid "layer2.0.conv1 input gradient" "${P2[@]}")
p2_dgrad1=$(opid "layer2.0.shortcut.conv input gradient" "${P2[@]}")
p2_wgrad=$(opid "layer2.0.conv2 weight gradient" "${P2[@]}")
echo "operations: tc $tc_fwd $tc_dgrad $tc_wgrad, tc program 3 $tc3_fwd $tc3_dgrad $tc3_wgrad, program 2 $p2_fwd $p2_dgrad $p2_dgrad1 $p2_wgrad"
mode tc-fwd "$tc_fwd" "${TC[@]}"
mode tc-dgrad "$tc_dgrad" "${TC[@]}"
mode tc-wgrad "$tc_wgrad" "${TC[@]}"
mode tc3-fwd "$tc3_fwd" "${TC3[@]}"
mode tc3-dgrad "$tc3_dgrad" "${TC3[@]}"
mode tc3-wgrad "$tc3_wgrad" "${TC3[@]}"
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
"$B/trainer-test" train "$T/p2-omit" --key "$T/tk" "${R[@]}" "${P2L[@]}" --cheat omit-entry:3 >/dev/null ||
  bad "train p2-omit"
dispute_game p2-omit p2-omit trainer "missing log entry" 3 "" --cheat omit-entry:3
cp -r "$T/p2log-dgrad-honest" "$T/p2-forged"
"$B/vt_tamper" "$T/p2-forged" "$T/tk" flip-direction >/dev/null || bad "tamper p2-forged"
dispute_game p2-forged p2-forged trainer "wrong output" "" ""
cp -r "$T/p2log-dgrad-honest" "$T/p2-deleted"
"$B/vt_tamper" "$T/p2-deleted" "$T/tk" delete-entries >/dev/null || bad "tamper p2-deleted"
dispute_game p2-deleted p2-deleted trainer "missing log entry" "" ""
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
"$B/trainer-test" train "$T/mix1" --key "$T/tk" "${R[@]}" --set gemm_arith=tc-bf16-sm90 --cheat arith:4:0 >/dev/null ||
  bad "train mix1"
dispute_game mix-fp64-step mix1 trainer "wrong output" 4 3 --cheat arith:4:0
"$B/trainer-test" train "$T/mix2" --key "$T/tk" "${R[@]}" --cheat arith:4:1 >/dev/null || bad "train mix2"
dispute_game mix-tc-step mix2 trainer "wrong output" 4 3 --cheat arith:4:1
"$B/trainer-test" train "$T/mix3" --key "$T/tk" "${R[@]}" --set gemm_arith=tc-bf16-sm90 --cheat arith:4:3 >/dev/null ||
  bad "train mix3"
dispute_game mix-sm80-step mix3 trainer "wrong output" 4 3 --cheat arith:4:3

vt_end
