#!/usr/bin/env bash
# The client's own models (issue 39 item 5): quality against PyTorch FP32 on the same recipe
# (docs/benchmarks.md, "The client's own models: quality against PyTorch FP32").
# Usage: bash bench/zoo_quality.sh BUILD_DIR [STEPS_SCALE]   (STEPS_SCALE multiplies every model's steps; default 1)
# Each model of the zoo (bench/zoo_quality.py: LeNet-5 on MNIST, the residual CNN and a ViT-tiny on the CIFAR-10
# subset, a character transformer LM on tiny-shakespeare, an MLP regressor on a user's .npy files, LeNet-5 fine-tuned
# with every layer but its head frozen) is written in PyTorch, exported to ONNX from a fixed seed, trained with
# `trainer train --model`, evaluated on held-out data with `trainer eval` (the regressor: its verified export
# evaluated in PyTorch), exported (`trainer export --format safetensors --layout torch`, loaded with strict=True)
# and evaluated in PyTorch FP32 as well, then trained from the same initial weights by PyTorch FP32 with the same
# optimiser, lr, batch, steps and data, in two batch orders of its own (their spread: what
# the order alone moves). The table goes to stdout and OUT/table.md
# (OUT: $ZOO_OUT, else a new directory under /tmp). Exit 1 when a model fails to train (the error printed).
set -u
B=$(cd "${1:?usage: zoo_quality.sh BUILD_DIR [STEPS_SCALE]}" && pwd)
SCALE=${2:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-/usr/bin/python3}
ZQ="$ROOT/bench/zoo_quality.py"
OUT=${ZOO_OUT:-$(mktemp -d /tmp/zoo_quality.XXXXXX)}
mkdir -p "$OUT"
TH=(--threads "${VT_THREADS:-2}")
"$B/trainer" keygen "$OUT/key" >/dev/null || exit 2
printf '%s\n' "| model, data | optimiser | steps | figure (held out) | project (trainer eval) | project's weights in PyTorch FP32 | PyTorch FP32 (order 1 / order 2) | project - PyTorch's mean | project's train (s) |" \
  "|---|---|---:|---|---:|---:|---:|---:|---:|" >"$OUT/table.md"
fail=0
for n in lenet resnet vit lm reg ft; do
  X=(); [ "$n" = ft ] && X=("$OUT/lenet.safetensors") # the fine-tuned backbone: the project's verified LeNet-5
  if [ "$n" = ft ] && [ ! -s "$OUT/lenet.safetensors" ]; then echo "ft: skipped (no LeNet-5 run)"; continue; fi
  "$PY" "$ZQ" export "$OUT" "$n" ${X[@]+"${X[@]}"} >"$OUT/$n.export.log" 2>&1 ||
    { echo "$n: the PyTorch export failed: $(tail -3 "$OUT/$n.export.log")"; fail=1; continue; }
  mapfile -t A < <("$PY" "$ZQ" args "$n" "$SCALE" "$OUT")
  TEST=${A[-1]}
  unset 'A[-1]'
  t0=$(date +%s.%N)
  if ! nice "$B/trainer" train "$OUT/run_$n" --key "$OUT/key" --model "$OUT/$n.onnx" "${A[@]}" "${TH[@]}" --quiet \
    >"$OUT/$n.train.log" 2>&1; then
    echo "$n: trainer train failed (exit $?): $(tail -3 "$OUT/$n.train.log")"
    fail=1
    continue
  fi
  secs=$(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.0f')
  FIG=-
  if [ "$TEST" != - ]; then
    nice "$B/trainer" eval "$OUT/run_$n" --dataset "$TEST" "${TH[@]}" >"$OUT/$n.eval.log" 2>&1 ||
      { echo "$n: trainer eval failed: $(tail -3 "$OUT/$n.eval.log")"; fail=1; continue; }
    FIG=$(sed -n -e 's/^correct .*(accuracy \([0-9.]*\)).*/\1/p' -e 's/^mean loss *\([0-9.]*\) nats.*/\1/p' "$OUT/$n.eval.log")
  fi
  "$B/trainer" export "$OUT/run_$n" --format safetensors --layout torch --out "$OUT/$n.safetensors" \
    --pubkey "$OUT/key.pub" >"$OUT/$n.exp.log" 2>&1 ||
    { echo "$n: trainer export failed: $(tail -3 "$OUT/$n.exp.log")"; fail=1; continue; }
  nice "$PY" "$ZQ" torch "$n" "$SCALE" "$OUT" "$OUT/$n.safetensors" "$FIG" "$secs" 2>"$OUT/$n.torch.log" ||
    { echo "$n: PyTorch FP32 failed: $(tail -3 "$OUT/$n.torch.log")"; fail=1; }
done
echo
cat "$OUT/table.md"
echo "(runs, logs and table under $OUT)"
exit $fail
