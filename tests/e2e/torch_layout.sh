#!/usr/bin/env bash
# `trainer export --layout torch` checked from PyTorch (issue 25 item 5; docs/format.md "Export
# (safetensors, --layout torch)"): small MLP (MNIST), residual CNN (CIFAR-10) and GPT
# (tiny-shakespeare; tied and untied head) runs are trained, evaluated and exported in both layouts;
# tests/ref/torch_models.py builds each model as torch.nn modules written from the docs, from the export's
# metadata alone, and loads it with load_state_dict(strict=True). Checked:
#   exact: every tensor holds the project layout's values bit for bit (moved: transposed or
#     permuted), num_batches_tracked (int64) is the step, the optimiser's tensors only under
#     "optimizer."; the MLP's and the CNN's predicted classes are trainer eval --per-example's on
#     every test example (near-ties printed) and the numbers correct over the first 500 are equal;
#   tolerance: the GPT's mean loss over 100 windows of the validation text within 1e-6 nats per
#     character of trainer eval's (torch's FP32 evaluation order differs in the last bits).
# Then the refusals (no torch needed): --layout with ONNX, an unknown layout, a GPT whose data set
# (its vocabulary) is missing; nothing written. Skipped (77) only when no python3 imports torch
# (python3-torch: scripts/install-deps.sh). Usage: torch_layout.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin torch_layout "${1:-}" key
PY=$(find_python "import torch")

export_recipes # MLP, CNN, and the run $T/mlp (tests/e2e/lib.sh)
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set gpt_layers=2 --set gpt_width=32 --set gpt_context=16
     --set batch=8 --set steps=30 --set warmup=3 --set checkpoint_every=10)
"$TRAINER" train "$T/gpt" --key "$T/key" "${GPT[@]}" --quiet >/dev/null || bad "train gpt"

# refusals: exit status and message, nothing written
REFUSED=$T/refused.st # refuse: tests/e2e/lib.sh
refuse 64 "the ONNX export has ONNX's own layout" -- "$T/mlp" --format onnx --layout torch
refuse 64 "the layouts are project (the default) and torch" -- "$T/mlp" --layout keras
mkdir -p "$T/empty"
refuse 2 "the GPT's vocabulary comes from its data set" -- "$T/gpt" --layout torch --data-dir "$T/empty"

if [ -z "$PY" ]; then
  echo "torch_layout: no python3 imports torch (python3-torch: scripts/install-deps.sh): skipped"
  exit 77
fi
"$TRAINER" train "$T/cnn" --key "$T/key" "${CNN[@]}" --quiet >/dev/null || bad "train cnn"
"$TRAINER" train "$T/gptu" --key "$T/key" "${GPT[@]}" --set gpt_tie=0 --set gpt_layers=1 --quiet >/dev/null ||
  bad "train gpt (untied)"

# export NAME RUN [args]: both layouts (with the optimiser's state), the torch one checked against the other
export_both() {
  local name=$1 run=$2; shift 2
  "$TRAINER" export "$run" --layout torch --optimizer --out "$T/$name.st" --pubkey "$T/key.pub" "$@" >"$T/$name.out" 2>&1 &&
    "$TRAINER" export "$run" --optimizer --out "$T/$name.project.st" --pubkey "$T/key.pub" "$@" >>"$T/$name.out" 2>&1 ||
    { bad "export $name: $(cat "$T/$name.out")"; return 1; }
  "$PY" "$REF/torch_models.py" check "$T/$name.st" --project "$T/$name.project.st" && ok || bad "check $name"
}

for a in mlp cnn; do
  "$TRAINER" eval "$T/$a" --per-example "$T/$a.pred" >"$T/$a.eval" 2>&1 || bad "eval $a: $(cat "$T/$a.eval")"
  grep -Eq "^correct         [0-9]+ of [0-9]+ \(accuracy 0\.[0-9]+\)$" "$T/$a.eval" && ok ||
    bad "eval $a: no full-precision line: $(cat "$T/$a.eval")"
  export_both "$a" "$T/$a" &&
    { "$PY" "$REF/torch_models.py" eval "$T/$a.st" --data-dir "$DATA" --per-example "$T/$a.pred" --first 500 && ok ||
      bad "torch eval $a"; }
done

# the GPT: trainer eval's mean loss over the first 100 windows of 16 characters (1601 characters)
for g in gpt gptu; do
  "$TRAINER" eval "$T/$g" --dataset shakespeare-val:1601 >"$T/$g.eval" 2>&1 || bad "eval $g: $(cat "$T/$g.eval")"
  loss=$(sed -n 's/^mean loss *\([0-9.e+-]*\) nats\/char.*/\1/p' "$T/$g.eval")
  [ -n "$loss" ] && ok || { bad "eval $g: no mean loss line: $(cat "$T/$g.eval")"; continue; }
  export_both "$g" "$T/$g" &&
    { "$PY" "$REF/torch_models.py" loss "$T/$g.st" --data-dir "$DATA" --windows 100 --loss "$loss" && ok ||
      bad "torch loss $g"; }
done

# without --optimizer: no optimizer.* tensor; an earlier step's num_batches_tracked is that step
"$TRAINER" export "$T/cnn" --layout torch --step 30 --out "$T/cnn30.st" --pubkey "$T/key.pub" >/dev/null 2>&1 &&
  "$PY" -c "
import sys; sys.path.insert(0, sys.argv[2])
import torch_models as tm
meta, t, order = tm.read_st(sys.argv[1])
assert meta['vt.step'] == '30' and not any(k.startswith('optimizer.') for k in t), sorted(t)
nbt = [int(v) for k, v in t.items() if k.endswith('num_batches_tracked')]
assert nbt and set(nbt) == {30}, nbt
" "$T/cnn30.st" "$REF" && ok || bad "cnn step 30: optimizer tensors or num_batches_tracked"

# --init in PyTorch's layout (trainer train --init-layout torch; auto when the file's metadata says
# vt.layout torch): a state_dict saved from the module built from the docs (no vt.* metadata, with the
# CNN's num_batches_tracked) and the --layout torch export itself; step 0 of the new run is the original
# run's final state bit for bit (compared in the project's layout), the new run audits VERIFIED, and the
# project's layout refuses the state_dict, naming a tensor
for a in mlp cnn; do
  if [ $a = mlp ]; then R=("${MLP[@]}"); else R=("${CNN[@]}"); fi
  "$TRAINER" export "$T/$a" --out "$T/$a.noopt.st" --pubkey "$T/key.pub" >/dev/null 2>&1 || bad "export $a"
  "$PY" "$REF/torch_models.py" statedict "$T/$a.st" --out "$T/$a.sd.st" || { bad "statedict $a"; continue; }
  for v in sd auto; do
    if [ $v = sd ]; then init=(--init "$T/$a.sd.st" --init-layout torch); want="$T/$a.noopt.st"; opt=()
    else init=(--init "$T/$a.st"); want="$T/$a.project.st"; opt=(--optimizer); fi
    "$TRAINER" train "$T/$a-$v" --key "$T/key" "${R[@]}" --set steps=4 --set checkpoint_every=2 --set state_hash_every=1 "${init[@]}" \
      --quiet >"$T/init.out" 2>&1 || { bad "train $a from its $v file: $(cat "$T/init.out")"; continue; }
    "$TRAINER" export "$T/$a-$v" --step 0 "${opt[@]}" --out "$T/$a-$v.0.st" --pubkey "$T/key.pub" >/dev/null 2>&1 &&
      "$PY" "$REF/torch_models.py" same "$T/$a-$v.0.st" --project "$want" && ok ||
      bad "$a: step 0 of the run from its $v file is not the original's final state"
    "$AUDITOR" verify "$T/$a-$v" --quiet >"$T/audit.out" 2>&1 && ok || bad "audit $a-$v: $(cat "$T/audit.out")"
  done
  "$TRAINER" train "$T/$a-proj" --key "$T/key" "${R[@]}" --init "$T/$a.sd.st" --init-layout project --quiet \
    >"$T/init.out" 2>&1
  st=$?
  [ $st = 64 ] && grep -q "does not fit the recipe's state" "$T/init.out" && [ ! -e "$T/$a-proj" ] && ok ||
    bad "$a: a state_dict read in the project's layout: exit $st: $(cat "$T/init.out")"
done

vt_end
