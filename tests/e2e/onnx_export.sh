#!/usr/bin/env bash
# The ONNX export (`trainer export --format onnx`, run/vt_onnx.c) checked from outside the project:
# tiny MLP (MNIST), residual CNN (CIFAR-10) and GPT (tiny-shakespeare, with dropout) runs are
# trained, evaluated with `trainer eval --per-example` and exported; tests/ref/onnx_check.py loads
# each model with python3-onnx, runs onnx.checker.check_model, checks its metadata (the run's
# commitment hash, state hash, recipe) and evaluates the graph with its own NumPy evaluator on the
# data set trainer eval used, read from the data files: the predicted classes (the GPT: the next
# token of every position of the validation text's windows) must agree one by one (ties within
# float rounding excepted, and printed) and the accuracies to trainer eval's printed 4 decimals (the
# GPT: the mean loss to 1e-6 relative). A second GPT (two layers, untied head, no dropout) is
# checked likewise. Then the refusals: --optimizer (64), an unknown format (64), a run whose
# commitment or checkpoint was altered (exit 1 or 2, nothing written). Skipped (77) without python3-onnx and
# numpy, or in a build without ONNX support (whose refusal, exit 2, is checked first).
# Usage: onnx_export.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin onnx_export "${1:-}" key

PY=$(find_python "import onnx, numpy")

export_recipes # MLP, CNN, and the run $T/mlp (tests/e2e/lib.sh)

# a build without ONNX support refuses clearly (exit 2) and the rest is skipped
"$TRAINER" export "$T/mlp" --format onnx --out "$T/probe.onnx" --pubkey "$T/key.pub" >"$T/probe.out" 2>&1
st=$?
if [ $st -eq 2 ] && grep -q "built without ONNX support" "$T/probe.out"; then
  echo "onnx_export: this build has no ONNX support (its refusal checked): skipped"
  exit 77
fi
[ $st -eq 0 ] && ok || bad "export mlp probe: exit $st: $(cat "$T/probe.out")"
if [ -z "$PY" ]; then
  echo "onnx_export: python3-onnx or numpy absent (scripts/install-deps.sh installs them): skipped"
  exit 77
fi

"$TRAINER" train "$T/cnn" --key "$T/key" "${CNN[@]}" --quiet >/dev/null || bad "train cnn"

# check ARCH RUN: eval per example, export, check from outside
check() {
  local arch=$1 run=$2
  "$TRAINER" eval "$run" --per-example "$T/$arch.pred" >"$T/$arch.eval" 2>&1 || { bad "eval $arch: $(cat "$T/$arch.eval")"; return; }
  local ds acc sh score
  ds=$(sed -n 's/^dataset *\([^ ]*\) .*/\1/p' "$T/$arch.eval")
  acc=$(sed -n 's/^accuracy *//p' "$T/$arch.eval")
  score=(--accuracy "$acc")
  if [ "${arch%%[0-9]*}" = gpt ]; then # a text model: its FP64 mean loss
    acc=$(sed -n 's/^mean loss *\([^ ]*\) .*/\1/p' "$T/$arch.eval")
    score=(--loss "$acc")
  fi
  "$TRAINER" export "$run" --format onnx --out "$T/$arch.onnx" --pubkey "$T/key.pub" >"$T/$arch.export" 2>&1 ||
    { bad "export $arch: $(cat "$T/$arch.export")"; return; }
  sh=$(sed -n 's/.*state hash \([0-9a-f]\{64\}\) .*/\1/p' "$T/$arch.export")
  [ -n "$ds" ] && [ -n "$acc" ] && [ -n "$sh" ] || { bad "$arch: eval or export output: $(cat "$T/$arch.eval" "$T/$arch.export")"; return; }
  "$PY" "$REF/onnx_check.py" "$T/$arch.onnx" --data-dir "$DATA" --dataset "$ds" --per-example "$T/$arch.pred" \
    "${score[@]}" --commitment "$run/commitment.vtc" --state-hash "$sh" --arch "${arch%%[0-9]*}" && ok ||
    bad "onnx_check $arch"
}
check mlp "$T/mlp"
check resnet "$T/cnn"

# the GPT: one layer with dropout (the evaluation pass is its own, without it) and the tied head;
# then two layers of two heads, the head untied (lm_head), no dropout
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=1 --set gpt_width=32 --set gpt_context=16
     --set batch=8 --set steps=300 --set warmup=10 --set dropout=0.1 --set checkpoint_every=150)
"$TRAINER" train "$T/gpt" --key "$T/key" "${GPT[@]}" --quiet >/dev/null || bad "train gpt"
check gpt "$T/gpt"
"$TRAINER" train "$T/gpt2" --key "$T/key" "${GPT[@]}" --set gpt_layers=2 --set gpt_heads=2 --set gpt_tie=0 \
  --set dropout=0 --set gpt_context=8 --set steps=100 --set checkpoint_every=100 --quiet >/dev/null || bad "train gpt2"
check gpt2 "$T/gpt2"

# an earlier checkpointed step exports too (the state verified against its own state hash)
"$TRAINER" export "$T/cnn" --format onnx --step 30 --out "$T/cnn30.onnx" --pubkey "$T/key.pub" >/dev/null 2>&1 &&
  "$PY" -c "import onnx, sys; m = onnx.load(sys.argv[1]); onnx.checker.check_model(m, full_check=True); \
assert {p.key: p.value for p in m.metadata_props}['vt.step'] == '30'" "$T/cnn30.onnx" && ok || bad "export --step 30"

# refusals: each with its exit status and message, nothing written
REFUSED=$T/refused.onnx # refuse: tests/e2e/lib.sh
refuse 64 "the ONNX export is the inference graph" -- "$T/mlp" --format onnx --optimizer
refuse 64 "the formats are safetensors and onnx" -- "$T/mlp" --format tflite
refuse 64 "no checkpoint at that step" -- "$T/mlp" --format onnx --step 7
cp -r "$T/mlp" "$T/sig"
"$B/vt_tamper" "$T/sig" "$T/key" flip-signature >/dev/null || bad "tamper signature"
refuse 1 "signature does not verify" -- "$T/sig" --format onnx
cp -r "$T/cnn" "$T/ck"
"$B/vt_tamper" "$T/ck" "$T/key" flip-checkpoint 60 >/dev/null || bad "tamper checkpoint"
"$TRAINER" export "$T/ck" --format onnx --out "$T/ck.onnx" >"$T/ck.out" 2>&1
st=$?
{ [ $st -eq 1 ] || [ $st -eq 2 ]; } && [ ! -e "$T/ck.onnx" ] && ok || bad "altered checkpoint: exit $st: $(cat "$T/ck.out")"

vt_end
