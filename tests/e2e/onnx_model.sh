#!/usr/bin/env bash
# The client's own model end to end (docs/models.md): networks written in PyTorch inside the test
# (tests/ref/onnx_model_ref.py: an MLP with a residual Add, a MatMul+Add network of nn.Parameters, a
# network of the activations Tanh, LeakyRelu and Sigmoid, LeNet-5 on 28 x 28 images, a small
# convolutional net with a residual Add and global average pooling, a Linear's output reshaped to an image and
# convolved, a network with BatchNorm2d and BatchNorm1d, the residual CNN's shape (stem, basic blocks, a projection
# shortcut, batch norms), a ViT (patches, two pre-LN blocks of multi-head attention and a tanh-GELU MLP, mean
# pooling; opset 13: the layer norms decomposed), a block of causal attention (opset 17), a character language
# model (embeddings, causal attention, next-token cross-entropy on a text), a regressor trained with MSE, L1
# and BCE-with-logits on float targets, the MLP fine-tuned with every layer but its head frozen, a model
# with a Softplus, a dilated convolution) exported by torch.onnx.export, trained with `trainer train
# --model NET.onnx` on a user's .npy data: the parameters after 3 steps against PyTorch FP64 from the
# same initial weights on the same (full) batches, the export loaded into the PyTorch module with
# load_state_dict(strict=True); VERIFIED by the auditor in two other orders, and with `mpirun -np 2`
# the one-process commitment (the MLP, LeNet-5, the residual CNN, the ViT, the regressor, fine-tuning, AdamW with
# clipping, the language model, dropout); what comes out is what went in (the exported ONNX, the
# convolutional and transformer models' included, computes the module's logits and trainer eval's predicted classes, its
# weights the module's own, evaluated outside the project by onnx_model_ref.py's NumPy evaluator); interrupted and resumed, the same commitment; a trainer that poisons one operation of the
# imported graph (the MLP's, LeNet-5's convolution weight gradient, a batch norm's backward, the ViT's attention
# softmax backward) loses the dispute game at that step
# and operation (also a ViT's attention softmax backward); AdamW with the global gradient norm clipped matches
# torch.optim.AdamW with clip_grad_norm_ (and clip_norm with SGD is refused); the language models' ONNX out
# gives the module's logits at every position of token windows; an unsupported operator and a dilated convolution refused (64) naming the node and its
# operator; a truncated file refused (2).
# Skipped (77) without torch, or in a build without ONNX support. Usage: onnx_model.sh BUILD_DIR [MPIEXEC]
set -u
. "$(dirname "$0")/lib.sh"
vt_begin onnx_model "${1:-}" tk rk ak
MPIEXEC=${2:-}
PY=$(find_python "import torch, numpy") || { echo "onnx_model: no python3 with torch and numpy: skipped"; exit 77; }
"$TRAINER" recipe --model /nonexistent.onnx >/dev/null 2>"$T/probe.err"
if grep -q "without ONNX support" "$T/probe.err"; then echo "onnx_model: built without ONNX: skipped"; exit 77; fi
"$PY" "$REF/onnx_model_ref.py" make "$T" || { bad "the PyTorch models could not be exported"; vt_end; }
D=(--set "dataset=npy:$T/x.npy,$T/y.npy" --set batch=32 --set steps=3 --set lr=0.05 --set momentum=0.9
   --set checkpoint_every=2 --set state_hash_every=1 --quiet)
for n in mlp matmul act lenet gapnet reshconv bncnn resnet vit causal; do
  X=(); [ "$n" = lenet ] && X=(--set "dataset=npy:$T/x28.npy,$T/y.npy") # LeNet-5's 28 x 28 images
  case $n in vit | causal) X=(--set "dataset=npy:$T/x3.npy,$T/y.npy") ;; esac # 3 x 16 x 16 images
  if "$TRAINER" train "$T/$n" --key "$T/tk" --model "$T/$n.onnx" "${D[@]}" ${X[@]+"${X[@]}"} >"$T/$n.out" 2>&1; then
    ok "$n trained"
  else bad "$n: trainer train: $(tail -2 "$T/$n.out")"; continue; fi
  for order in reverse pairwise; do
    if "$AUDITOR" verify "$T/$n" --pubkey "$T/tk.pub" --order "$order" >"$T/$n.$order" 2>&1 &&
      grep -q "^VERIFIED" "$T/$n.$order"; then ok "$n verified ($order)"
    else bad "$n: auditor verify --order $order: $(tail -3 "$T/$n.$order")"; fi
  done
  L=(); case $n in bncnn | resnet) L=(--layout torch) ;; esac # batch norm's num_batches_tracked: the torch layout's
  if "$TRAINER" export "$T/$n" --format safetensors ${L[@]+"${L[@]}"} --out "$T/$n.safetensors" --pubkey "$T/tk.pub" \
    >/dev/null 2>&1 &&
    "$PY" "$REF/onnx_model_ref.py" check "$T" "$n" "$T/$n.safetensors" 3 0.05 0.9 >"$T/$n.ref" 2>&1; then
    ok "$n: $(tail -1 "$T/$n.ref")"
  else bad "$n: against PyTorch FP64: $(tail -3 "$T/$n.ref" 2>/dev/null)"; fi
  # ONNX out, the convolutional and transformer models included: the module's logits, and trainer eval's
  # predicted classes on the run's own data
  if "$TRAINER" export "$T/$n" --format onnx --out "$T/$n.out.onnx" --pubkey "$T/tk.pub" >"$T/$n.ox" 2>&1 &&
    "$TRAINER" eval "$T/$n" --per-example "$T/$n.pe" >"$T/$n.ev" 2>&1 &&
    "$PY" "$REF/onnx_model_ref.py" roundtrip "$T" "$n" "$T/$n.safetensors" "$T/$n.out.onnx" "$T/$n.pe" >"$T/$n.rt" 2>&1; then
    ok "$n: $(tail -1 "$T/$n.rt")"
  else bad "$n: ONNX and torch out: $(tail -3 "$T/$n.ox" "$T/$n.ev" "$T/$n.rt" 2>/dev/null | tr '\n' ' ')"; fi
done
# regression and multi-label losses on float targets, and fine-tuning with every layer but the head frozen
FT='["fc1.weight","fc1.bias","fc2.weight","fc2.bias"]'
for c in "reg mse yreg" "reg l1 yreg" "reg bce_with_logits ybin" "mlp cross_entropy y frozen" \
  "mlp cross_entropy y trainable" "logsm cross_entropy y"; do
  read -r n loss y fr <<<"$c"
  name=$n-$loss${fr:+-$fr}
  args=(--set "dataset=npy:$T/x.npy,$T/$y.npy" --set batch=32 --set steps=3 --set "loss=$loss" --quiet)
  [ "$fr" = frozen ] && args+=(--set "frozen=$FT")
  [ "$fr" = trainable ] && args+=(--set 'trainable=["head.weight","head.bias"]') # the same parameters trained
  if "$TRAINER" train "$T/$name" --key "$T/tk" --model "$T/$n.onnx" "${args[@]}" >"$T/$name.out" 2>&1 &&
    "$AUDITOR" verify "$T/$name" --pubkey "$T/tk.pub" --order reverse >"$T/$name.v" 2>&1 &&
    "$TRAINER" export "$T/$name" --format safetensors --out "$T/$name.safetensors" --pubkey "$T/tk.pub" >/dev/null 2>&1 &&
    "$PY" "$REF/onnx_model_ref.py" check "$T" "$n" "$T/$name.safetensors" 3 0.05 0.9 "$loss" \
      "$([ -n "$fr" ] && echo fc1.weight,fc1.bias,fc2.weight,fc2.bias)" >"$T/$name.ref" 2>&1; then
    ok "$name: VERIFIED; $(tail -1 "$T/$name.ref")"
  else bad "$name: $(tail -2 "$T/$name.out" "$T/$name.v" "$T/$name.ref" 2>/dev/null | tr '\n' ' ')"; fi
done
# AdamW (every parameter decays, as torch.optim.AdamW) with the global gradient norm clipped, as
# torch.nn.utils.clip_grad_norm_: against PyTorch FP64, and against a reference of another clipping (the
# check can fail); clip_norm with another optimizer would go unused: refused
AW=(--set "dataset=npy:$T/x.npy,$T/y.npy" --set batch=32 --set steps=3 --set lr=0.01 --set optimizer=adamw
    --set beta1=0.9 --set beta2=0.99 --set eps=1e-8 --set weight_decay=0.1 --set clip_norm=0.5 --quiet)
if "$TRAINER" train "$T/adamw" --key "$T/tk" --model "$T/mlp.onnx" "${AW[@]}" >"$T/adamw.out" 2>&1 &&
  "$AUDITOR" verify "$T/adamw" --pubkey "$T/tk.pub" --order reverse >"$T/adamw.v" 2>&1 &&
  "$TRAINER" export "$T/adamw" --format safetensors --out "$T/adamw.safetensors" --pubkey "$T/tk.pub" >/dev/null 2>&1 &&
  "$PY" "$REF/onnx_model_ref.py" check "$T" mlp "$T/adamw.safetensors" 3 0.01 adamw,0.9,0.99,1e-8,0.1,0.5 \
    >"$T/adamw.ref" 2>&1; then
  ok "mlp, AdamW and clipping: VERIFIED; $(tail -1 "$T/adamw.ref")"
else bad "mlp, AdamW and clipping: $(tail -2 "$T/adamw.out" "$T/adamw.v" "$T/adamw.ref" 2>/dev/null | tr '\n' ' ')"; fi
if "$PY" "$REF/onnx_model_ref.py" check "$T" mlp "$T/adamw.safetensors" 3 0.01 adamw,0.9,0.99,1e-8,0.1,0 \
  >"$T/adamw.ref0" 2>&1; then bad "AdamW: the reference without clipping matches as well (the check cannot fail)"
else ok "AdamW: the reference without clipping differs"; fi
"$TRAINER" train "$T/clipsgd" --key "$T/tk" --model "$T/mlp.onnx" "${D[@]}" --set clip_norm=0.5 >"$T/clipsgd.out" 2>&1
st=$?
[ "$st" = 64 ] && grep -q "clip_norm" "$T/clipsgd.out" && [ ! -e "$T/clipsgd/run.db" ] && ok "clip_norm with SGD refused (64)" ||
  bad "clip_norm with SGD: exit $st: $(tail -2 "$T/clipsgd.out")"
# accuracy is a classifier's figure: a regression run's eval says so instead of a number
"$TRAINER" eval "$T/reg-mse" >"$T/ev.out" 2>&1
st=$?
[ "$st" != 0 ] && grep -q "float targets" "$T/ev.out" && ok "eval of a regression run: no accuracy" ||
  bad "eval of a regression run: exit $st: $(cat "$T/ev.out")"
# a network ending in LogSoftmax takes the cross-entropy only (NLL of its output): another loss refused
"$TRAINER" train "$T/logsm-mse" --key "$T/tk" --model "$T/logsm.onnx" --set "dataset=npy:$T/x.npy,$T/yreg.npy" \
  --set batch=32 --set steps=3 --set loss=mse --quiet >"$T/lsm.out" 2>&1
st=$?
[ "$st" = 64 ] && grep -q "ends in LogSoftmax" "$T/lsm.out" && ok "LogSoftmax with mse refused" || bad "logsm mse: $st $(cat "$T/lsm.out")"
"$TRAINER" train "$T/nofreeze" --key "$T/tk" --model "$T/mlp.onnx" "${D[@]}" --set 'frozen=["nope"]' >"$T/nf.out" 2>&1
st=$?
[ "$st" = 64 ] && grep -q "no parameter named nope" "$T/nf.out" && ok "unknown frozen name refused" || bad "frozen nope: $st $(cat "$T/nf.out")"
# `export --layout torch` of a client's graph: the module's own layout (copied), loads with strict=True
if "$TRAINER" export "$T/mlp" --format safetensors --layout torch --out "$T/mlp.torch.safetensors" >/dev/null 2>&1 &&
  cmp -s <("$PY" -c "import sys; sys.path.insert(0, '$REF'); import onnx_model_ref as r; print(sorted((k, v.shape) for k, v in r.read_safetensors('$T/mlp.torch.safetensors').items()))") \
         <("$PY" -c "import sys; sys.path.insert(0, '$REF'); import onnx_model_ref as r; print(sorted((k, v.shape) for k, v in r.read_safetensors('$T/mlp.safetensors').items()))"); then
  ok "export --layout torch: the module's names and shapes"
else bad "export --layout torch of a client's graph"; fi
# certify reads only the built-in MLP's layers: a client's graph is refused (never read as fc1..fcL)
"$AUDITOR" certify "$T/mlp" --eps 0.01 --examples 2 >"$T/cert.out" 2>&1
st=$?
[ "$st" != 0 ] && grep -q "client's own graph" "$T/cert.out" && ok "certify refuses a client's graph (exit $st)" ||
  bad "certify of a client's graph: exit $st: $(cat "$T/cert.out")"
# --layout torch: a client's parameters are already the module's own (copied, not permuted)
if "$TRAINER" export "$T/lenet" --format safetensors --layout torch --out "$T/lenet.t.safetensors" \
  --pubkey "$T/tk.pub" >/dev/null 2>&1 &&
  "$PY" "$REF/onnx_model_ref.py" check "$T" lenet "$T/lenet.t.safetensors" 3 0.05 0.9 >"$T/lenet.t.ref" 2>&1; then
  ok "lenet: --layout torch loads into the module"
else bad "lenet --layout torch: $(tail -3 "$T/lenet.t.ref" 2>/dev/null)"; fi
# the same program from every party: the recipe's program names the module's own parameters
"$TRAINER" recipe --program --model "$T/mlp.onnx" --set batch=32 >"$T/prog" 2>&1 &&
  grep -q " fc1.weight " "$T/prog" && grep -q "head.bias.grad" "$T/prog" && ok "program" || bad "program: $(head -3 "$T/prog")"
# the client checks that the run trains its own graph from its own weights (auditor verify --model): a
# trainer that trains another file, or the client's graph from other weights, is rejected
if "$AUDITOR" verify "$T/mlp" --pubkey "$T/tk.pub" --model "$T/mlp.onnx" >"$T/vm.out" 2>&1 && grep -q "^VERIFIED" "$T/vm.out"
then ok "verify --model: the client's graph and weights"; else bad "verify --model: $(tail -3 "$T/vm.out")"; fi
"$AUDITOR" verify "$T/matmul" --pubkey "$T/tk.pub" --model "$T/mlp.onnx" >"$T/vm2.out" 2>&1
st=$?
[ "$st" = 1 ] && grep -q "another model" "$T/vm2.out" && ok "verify --model: another model rejected" ||
  bad "verify --model of another model: exit $st: $(tail -3 "$T/vm2.out")"
cp "$T/mlp.safetensors" "$T/mlp.init2.safetensors" # the MLP's trained weights: other initial weights, the same shapes
if "$TRAINER" train "$T/mlp-otherinit" --key "$T/tk" --model "$T/mlp.onnx" --init "$T/mlp.init2.safetensors" "${D[@]}" \
  >"$T/oi.out" 2>&1; then
  "$AUDITOR" verify "$T/mlp-otherinit" --pubkey "$T/tk.pub" --model "$T/mlp.onnx" >"$T/vm3.out" 2>&1
  st=$?
  [ "$st" = 1 ] && grep -q "another initial state" "$T/vm3.out" && ok "verify --model: other initial weights rejected" ||
    bad "verify --model, other weights: exit $st: $(tail -3 "$T/vm3.out")"
  "$AUDITOR" verify "$T/mlp-otherinit" --pubkey "$T/tk.pub" --model "$T/mlp.onnx" --init "$T/mlp.init2.safetensors" \
    >"$T/vm4.out" 2>&1 && ok "verify --model --init: the client's own initial state" ||
    bad "verify --model --init: $(tail -3 "$T/vm4.out")"
else bad "train from other weights: $(tail -2 "$T/oi.out")"; fi
# interrupted after step 2 and resumed: the uninterrupted run's commitment
if "$B/trainer-test" train "$T/mlp-stop" --key "$T/tk" --model "$T/mlp.onnx" "${D[@]}" --stop-after 2 >/dev/null 2>&1 &&
  "$TRAINER" train "$T/mlp-stop" --key "$T/tk" --model "$T/mlp.onnx" "${D[@]}" --resume >/dev/null 2>&1 &&
  cmp -s "$T/mlp/commitment.vtc" "$T/mlp-stop/commitment.vtc"; then ok "resumed: the same commitment"
else bad "the interrupted and resumed run"; fi
# the activations' derived backward: sigmoid's and tanh's from their outputs, leaky ReLU's from its input
"$TRAINER" recipe --program --model "$T/act.onnx" --set batch=32 >"$T/actprog" 2>&1
ids=$(awk '$2 == "Sigmoid.out" {s = $1} $2 == "Tanh.out" {t = $1}
  {x = ""; for (i = 1; i < NF; i++) if ($i == "in") { x = $(i + 1); break }}
  / sigmoid_backward / && x == s {a = 1} / tanh_backward / && x == t {b = 1}
  / leaky_relu_backward / && $NF == "0.20000000298023224" {c = 1} END {print a + b + c}' "$T/actprog")
[ "$ids" = 3 ] && ok "act program: sigmoid_backward and tanh_backward read the outputs, leaky_relu_backward alpha 0.2f" ||
  bad "act program: $(grep -E "sigmoid|tanh|leaky" "$T/actprog" | head -8)"
# data parallel: two ranks, the same commitment
if [ -n "$MPIEXEC" ]; then
  mpi_begin "$MPIEXEC"
  for n in mlp lenet resnet vit; do
    X=(); [ "$n" = lenet ] && X=(--set "dataset=npy:$T/x28.npy,$T/y.npy")
    [ "$n" = vit ] && X=(--set "dataset=npy:$T/x3.npy,$T/y.npy")
    if mpi 2 "$TRAINER" train "$T/${n}2" --key "$T/tk" --model "$T/$n.onnx" "${D[@]}" ${X[@]+"${X[@]}"} >"$T/${n}2.out" 2>&1 &&
      cmp -s "$T/$n/commitment.vtc" "$T/${n}2/commitment.vtc"; then ok "$n: mpirun -np 2: the one-process commitment"
    else bad "$n: mpirun -np 2: $(tail -3 "$T/${n}2.out")"; fi
  done
  # the regressor (MSE on float targets), fine-tuning with all but the head frozen, AdamW with clipping
  for c in "reg-mse reg --set dataset=npy:$T/x.npy,$T/yreg.npy --set loss=mse" \
    "mlp-cross_entropy-frozen mlp --set dataset=npy:$T/x.npy,$T/y.npy --set frozen=$FT" "adamw mlp ${AW[*]}"; do
    read -r -a w <<<"$c"
    run=${w[0]} n=${w[1]} more=("${w[@]:2}")
    [ "$run" = adamw ] || more+=(--set batch=32 --set steps=3 --quiet)
    if mpi 2 "$TRAINER" train "$T/${run}2" --key "$T/tk" --model "$T/$n.onnx" "${more[@]}" >"$T/${run}2.out" 2>&1 &&
      cmp -s "$T/$run/commitment.vtc" "$T/${run}2/commitment.vtc"; then ok "$run: mpirun -np 2: the one-process commitment"
    else bad "$run: mpirun -np 2: $(tail -3 "$T/${run}2.out")"; fi
  done
fi
# the convolution's layouts in the program: the module's own weight [Co, C, k, k], moved exactly each step
"$TRAINER" recipe --program --model "$T/lenet.onnx" --set batch=32 >"$T/lprog" 2>&1 &&
  grep -q " conv1.weight  *param  F32 \[6, 1, 5, 5\]" "$T/lprog" && grep -q "to_channels_first" "$T/lprog" &&
  grep -q "conv2d_weight_grad" "$T/lprog" && grep -q "maxpool_backward" "$T/lprog" && ok "lenet program" ||
  bad "lenet program: $(head -3 "$T/lprog")"
# a dilated convolution: refused by name (64), nothing written
"$TRAINER" train "$T/badconv" --key "$T/tk" --model "$T/badconv.onnx" "${D[@]}" >"$T/badconv.out" 2>&1
st=$?
[ "$st" = 64 ] && grep -q "(Conv): dilation other than 1" "$T/badconv.out" && [ ! -e "$T/badconv" ] &&
  ok "dilated convolution refused" || bad "dilated convolution: exit $st: $(cat "$T/badconv.out")"
# an unsupported operator: refused by name, nothing written
"$TRAINER" train "$T/bad" --key "$T/tk" --model "$T/bad.onnx" "${D[@]}" >"$T/bad.out" 2>&1
st=$?
[ "$st" = 64 ] && grep -q "Softplus (Softplus)" "$T/bad.out" && grep -q "not supported" "$T/bad.out" && [ ! -e "$T/bad" ] &&
  ok "Softplus refused: $(grep -o 'node [^ ]* (Softplus)' "$T/bad.out" | head -1)" || bad "Softplus: exit $st: $(cat "$T/bad.out")"
# a truncated file: unreadable input (2), no crash
head -c 3000 "$T/mlp.onnx" >"$T/trunc.onnx"
"$TRAINER" train "$T/trunc" --key "$T/tk" --model "$T/trunc.onnx" "${D[@]}" >"$T/trunc.out" 2>&1
st=$?
[ "$st" = 2 ] && ok "truncated file refused" || bad "truncated: exit $st: $(cat "$T/trunc.out")"
# a trainer that poisons one operation of the imported graph at step 2 loses there:
# poisoned RUN MODEL "OPERATION" [--set options]
poisoned() {
  local run=$1 model=$2 what=$3 op
  shift 3
  op=$("$TRAINER" recipe --program --model "$T/$model.onnx" --set batch=32 "$@" |
    awk -v w="$what" '/^operations/{f=1} f && index($0, w) {print $1; exit}')
  if [ -n "$op" ] && "$B/trainer-test" train "$T/$run" --key "$T/tk" --model "$T/$model.onnx" "${D[@]}" "$@" \
    --cheat "shift-op:2:$op" >/dev/null 2>&1; then
    dispute_game "$run" "$run" trainer "wrong output" 2 "$op" --cheat "shift-op:2:$op"
  else bad "the cheating $model run ($what: operation ${op:-not found})"; fi
}
poisoned cheat mlp "fc2.Gemm weight-gradient GEMM"
poisoned lcheat lenet "conv2.Conv weight gradient" --set "dataset=npy:$T/x28.npy,$T/y.npy" # LeNet-5's convolution
poisoned rcheat resnet "layer1.bn1.BatchNormalization backward" # a batch norm's backward in the residual CNN
poisoned vcheat vit "blocks.blocks.1.attn.Split softmax backward" --set "dataset=npy:$T/x3.npy,$T/y.npy" # attention's
# a character language model (token and position embeddings, causal attention, next-token cross-entropy) on
# a text whose training split holds one window: PyTorch FP64 on that window, audits, two ranks, a dispute
LM=(--set "dataset=text:$T/t20.txt" --set loss=next_token --set batch=4 --set steps=3 --set lr=0.05 --set momentum=0.9
    --set checkpoint_every=2 --set state_hash_every=1)
if "$TRAINER" train "$T/lm" --key "$T/tk" --model "$T/lm.onnx" "${LM[@]}" --quiet >"$T/lm.out" 2>&1 &&
  "$AUDITOR" verify "$T/lm" --pubkey "$T/tk.pub" --order reverse 2>&1 | grep -q "^VERIFIED" &&
  "$TRAINER" export "$T/lm" --format safetensors --out "$T/lm.safetensors" --pubkey "$T/tk.pub" >/dev/null 2>&1 &&
  "$PY" "$REF/onnx_model_ref.py" check "$T" lm "$T/lm.safetensors" 3 0.05 0.9 next_token >"$T/lm.ref" 2>&1; then
  ok "lm: verified; $(tail -1 "$T/lm.ref")"
else bad "lm: $(tail -3 "$T/lm.out" "$T/lm.ref" 2>/dev/null | tr '\n' ' ')"; fi
# sampling a client's language model: deterministic, the prompt kept, tokens beyond the text's 10 characters (the
# module's vocabulary is 12) printed as U+FFFD
if "$TRAINER" sample "$T/lm" --tokens 40 --seed 5 --prompt abc >"$T/s1" 2>&1 &&
  "$TRAINER" sample "$T/lm" --tokens 40 --seed 5 --prompt abc | cmp -s - "$T/s1" &&
  "$PY" -c "import sys; t=open(sys.argv[1], encoding='utf-8').read().rstrip('\n'); assert t.startswith('abc') and len(t) == 43 and set(t) <= set('abcdefghij\ufffd')" "$T/s1"
then ok "lm: sampled deterministically"; else bad "lm: sample: $(head -c 300 "$T/s1")"; fi
"$TRAINER" sample "$T/reg-mse" --tokens 3 >"$T/s2" 2>&1
st=$?
[ "$st" = 64 ] && grep -q "not a text model" "$T/s2" && ok "sample of a regression run refused" ||
  bad "sample of a regression run: exit $st: $(cat "$T/s2")"
# ONNX out of the language models: token windows in, the module's logits at every position
for n in lm lmtied; do
  [ "$n" = lmtied ] && { "$TRAINER" train "$T/lmtied" --key "$T/tk" --model "$T/lmtied.onnx" "${LM[@]}" --quiet \
    >"$T/lmt.out" 2>&1 || bad "lmtied: $(tail -2 "$T/lmt.out")"; }
  if "$TRAINER" export "$T/$n" --format onnx --out "$T/$n.out.onnx" --pubkey "$T/tk.pub" >"$T/$n.ox" 2>&1 &&
    "$TRAINER" export "$T/$n" --format safetensors --out "$T/$n.safetensors" --pubkey "$T/tk.pub" >/dev/null 2>&1 &&
    "$PY" "$REF/onnx_model_ref.py" roundtrip "$T" "$n" "$T/$n.safetensors" "$T/$n.out.onnx" >"$T/$n.rt" 2>&1; then
    ok "$n: $(tail -1 "$T/$n.rt")"
  else bad "$n: ONNX out: $(tail -3 "$T/$n.ox" "$T/$n.rt" 2>/dev/null | tr '\n' ' ')"; fi
done
"$TRAINER" train "$T/lm-mse" --key "$T/tk" --model "$T/lm.onnx" --set "dataset=text:$T/t20.txt" --set loss=mse \
  --set batch=4 >"$T/lmm.out" 2>&1
st=$?
[ "$st" = 64 ] && grep -q "next_token" "$T/lmm.out" && ok "a language model under another loss: refused" ||
  bad "lm under mse: exit $st: $(cat "$T/lmm.out")"
if [ -n "$MPIEXEC" ]; then
  if mpi 2 "$TRAINER" train "$T/lm2" --key "$T/tk" --model "$T/lm.onnx" "${LM[@]}" --quiet >"$T/lm2.out" 2>&1 &&
    cmp -s "$T/lm/commitment.vtc" "$T/lm2/commitment.vtc"; then ok "lm: mpirun -np 2: the one-process commitment"
  else bad "lm: mpirun -np 2: $(tail -3 "$T/lm2.out")"; fi
fi
poisoned lmcheat lm "wte.Gather token embedding weight-gradient GEMM" "${LM[@]}"
# nanoGPT's weight tying: the token embedding is also the head's weight; its gradient the two readers' summed
if "$AUDITOR" verify "$T/lmtied" --pubkey "$T/tk.pub" --order pairwise 2>&1 | grep -q "^VERIFIED" &&
  "$TRAINER" export "$T/lmtied" --format safetensors --out "$T/lmtied.safetensors" --pubkey "$T/tk.pub" >/dev/null 2>&1 &&
  "$PY" "$REF/onnx_model_ref.py" check "$T" lmtied "$T/lmtied.safetensors" 3 0.05 0.9 next_token >"$T/lmt.ref" 2>&1 &&
  "$TRAINER" recipe --program --model "$T/lmtied.onnx" --set loss=next_token --set batch=4 | grep -q "wte.weight gradient sum 2"
then ok "lmtied: verified; $(tail -1 "$T/lmt.ref")"
else bad "lmtied: $(tail -3 "$T/lmt.out" "$T/lmt.ref" 2>/dev/null | tr '\n' ' ')"; fi
# dropout in training mode: the project's masks (so no PyTorch comparison of the steps), the same commitment on
# two ranks and in other orders, the evaluation without it (ONNX out against the module in eval mode)
"$TRAINER" recipe --program --model "$T/drop.onnx" --set batch=32 >"$T/dprog" 2>&1
if [ "$(grep -c " dropout  .* farg 0.25$" "$T/dprog")" = 2 ] &&
  "$TRAINER" train "$T/drop" --key "$T/tk" --model "$T/drop.onnx" "${D[@]}" >"$T/drop.out" 2>&1 &&
  "$AUDITOR" verify "$T/drop" --pubkey "$T/tk.pub" --order reverse 2>&1 | grep -q "^VERIFIED" &&
  "$TRAINER" export "$T/drop" --format safetensors --out "$T/drop.safetensors" --pubkey "$T/tk.pub" >/dev/null 2>&1 &&
  "$TRAINER" export "$T/drop" --format onnx --out "$T/drop.out.onnx" --pubkey "$T/tk.pub" >/dev/null 2>&1 &&
  "$TRAINER" eval "$T/drop" --per-example "$T/drop.pe" >/dev/null 2>&1 &&
  "$PY" "$REF/onnx_model_ref.py" roundtrip "$T" drop "$T/drop.safetensors" "$T/drop.out.onnx" "$T/drop.pe" >"$T/drop.rt" 2>&1
then ok "drop: dropout and its backward with one mask, verified, evaluated without it: $(tail -1 "$T/drop.rt")"
else bad "drop: $(grep -i dropout "$T/dprog" | head -3) $(tail -2 "$T/drop.out" "$T/drop.rt" 2>/dev/null | tr '\n' ' ')"; fi
if [ -n "$MPIEXEC" ]; then
  if mpi 2 "$TRAINER" train "$T/drop2" --key "$T/tk" --model "$T/drop.onnx" "${D[@]}" >"$T/drop2.out" 2>&1 &&
    cmp -s "$T/drop/commitment.vtc" "$T/drop2/commitment.vtc"; then ok "drop: mpirun -np 2: the one-process commitment"
  else bad "drop: mpirun -np 2: $(tail -3 "$T/drop2.out")"; fi
fi
# batch norm: the step's statistics of the batch, the evaluation pass's running statistics, PyTorch's
# hyper-parameters recovered from the exporter's floats (eps 1e-3, momentum 0.2 from ONNX's 0.8)
"$TRAINER" recipe --program --model "$T/bncnn.onnx" --set batch=32 >"$T/bnprog" 2>&1 &&
  grep -q "bn1.BatchNormalization running statistics batchnorm_running_stats .* farg 0.20000000000000001$" "$T/bnprog" &&
  grep -q "bn1.BatchNormalization apply .* farg 0.001$" "$T/bnprog" && grep -q "bn.running_var  *buffer" "$T/bnprog" &&
  grep -q "batchnorm_eval" "$T/bnprog" && grep -q "batchnorm_backward" "$T/bnprog" && ok "bncnn program" ||
  bad "bncnn program: $(grep -i batchnorm "$T/bnprog" | head -5)"
# running statistics are never trained: naming one frozen is refused
"$TRAINER" train "$T/bnfrozen" --key "$T/tk" --model "$T/bncnn.onnx" "${D[@]}" --set 'frozen=["bn.running_mean"]' \
  >"$T/bnf.out" 2>&1
st=$?
[ "$st" = 64 ] && grep -q "never trained" "$T/bnf.out" && ok "a running statistic named frozen: refused" ||
  bad "frozen running statistic: exit $st: $(cat "$T/bnf.out")"
vt_end
