#!/usr/bin/env bash
# The tensor-core mode (recipe key gemm_arith; docs/tensorcore.md "The mode"): every GEMM by the CPU's
# emulation of the tensor cores (kernels/vt_tc.c), everything else exact rounding. An MLP in
# tc-bf16-sm90, in tc-fp16-sm80 and in tc-e4m3f16-sm90 (E4M3 through FP16), a residual CNN in tc-bf16-sm90 and a GPT in tc-fp16-sm90 are
# trained; each audits VERIFIED in another evaluation order (the emulator has no order: the same
# bits); the mode is in the manifest (and a run in the default mode has no gemm_arith key); the
# commitment differs from the fp64 run's; the MLP still learns (its loss falls). Refusals (exit 64):
# rounding=log, an unknown model. (--backend cuda runs the GPU kernel: scripts/gpu-check.sh step 2d.)
# Usage: tc_mode.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin tc_mode "${1:-}" key
MLP=(--set dataset=mnist-train --set subset=2000 --set "layers=[784,32,10]" --set batch=32 --set steps=40
     --set checkpoint_every=20 --set state_hash_every=1)
CNN=(--recipe "$RECIPES/resnet-cifar10.json" --set subset=256 --set resnet_width=4 --set resnet_stages=2
     --set batch=16 --set steps=4 --set checkpoint_every=2 --set state_hash_every=1)
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32 --set gpt_context=16
     --set batch=8 --set steps=4 --set warmup=1 --set checkpoint_every=2 --set state_hash_every=1)
run() { # NAME MODE RECIPE...
  local name=$1 mode=$2; shift 2
  "$TRAINER" train "$T/$name" --key "$T/key" "$@" --set gemm_arith=$mode --quiet >"$T/$name.out" 2>&1 ||
    { bad "train $name ($mode): $(cat "$T/$name.out")"; return 1; }
  "$AUDITOR" verify "$T/$name" --order reverse --quiet >"$T/$name.audit" 2>&1 && ok ||
    bad "audit $name: $(cat "$T/$name.audit")"
  sqlite3 "$T/$name/run.db" "select cast(value as text) from meta where key='manifest'" 2>/dev/null |
    grep -q "\"gemm_arith\":\"$mode\"" && ok || bad "$name: the manifest does not name gemm_arith $mode"
}
run mlp-bf16 tc-bf16-sm90 "${MLP[@]}"
run mlp-fp16 tc-fp16-sm80 "${MLP[@]}"
run mlp-e4m3f16 tc-e4m3f16-sm90 "${MLP[@]}"
run cnn-bf16 tc-bf16-sm90 "${CNN[@]}"
run gpt-fp16 tc-fp16-sm90 "${GPT[@]}"
"$TRAINER" train "$T/mlp" --key "$T/key" "${MLP[@]}" --quiet >/dev/null 2>&1 || bad "train mlp (fp64)"
sqlite3 "$T/mlp/run.db" "select cast(value as text) from meta where key='manifest'" 2>/dev/null | grep -q gemm_arith &&
  bad "a default run's manifest names gemm_arith" || ok
cmp -s "$T/mlp/commitment.vtc" "$T/mlp-bf16/commitment.vtc" && bad "the bf16 run's commitment is the fp64 run's" || ok
# E4M3 through FP16 is not wgmma's model: the same recipe in tc-e4m3-sm90 commits other bits
"$TRAINER" train "$T/mlp-e4m3" --key "$T/key" "${MLP[@]}" --set gemm_arith=tc-e4m3-sm90 --set steps=2 --quiet \
  >/dev/null 2>&1 || bad "train mlp-e4m3"
"$TRAINER" train "$T/mlp-e4m3f16-2" --key "$T/key" "${MLP[@]}" --set gemm_arith=tc-e4m3f16-sm90 --set steps=2 \
  --quiet >/dev/null 2>&1 || bad "train mlp-e4m3f16-2"
a=$(sqlite3 "$T/mlp-e4m3/run.db" "select hex(state_hash) from steps where step=2" 2>/dev/null)
b=$(sqlite3 "$T/mlp-e4m3f16-2/run.db" "select hex(state_hash) from steps where step=2" 2>/dev/null)
[ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && ok || bad "tc-e4m3-sm90 and tc-e4m3f16-sm90: state hashes '$a' '$b'"
# the MLP learns in the mode: the last step's loss below the first's (positive FP32 values order as
# their bit patterns)
first=$(sqlite3 "$T/mlp-bf16/run.db" "select loss_bits from steps where step=1" 2>/dev/null)
last=$(sqlite3 "$T/mlp-bf16/run.db" "select loss_bits from steps where step=40" 2>/dev/null)
if [ -n "$first" ] && [ -n "$last" ]; then
  [ "$last" -lt "$first" ] && ok || bad "the bf16 MLP's loss did not fall: bits $first -> $last"
else
  bad "the bf16 run's losses: '$first' '$last'"
fi
# refusals
"$TRAINER" train "$T/r1" --key "$T/key" "${MLP[@]}" --set gemm_arith=tc-bf16-sm90 --set rounding=log \
  --quiet >"$T/r.out" 2>&1; st=$?
[ $st = 64 ] && grep -q "use rounding=exact" "$T/r.out" && ok || bad "gemm_arith with rounding=log: exit $st: $(cat "$T/r.out")"
"$TRAINER" train "$T/r2" --key "$T/key" "${MLP[@]}" --set gemm_arith=tc-bf16-sm75 --quiet >"$T/r.out" 2>&1; st=$?
[ $st = 64 ] && ok || bad "an unknown model: exit $st: $(cat "$T/r.out")"
vt_end
