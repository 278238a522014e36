#!/usr/bin/env bash
# user_data.sh - the user's data and initial weights, end to end (issue 25 items 1 and 2; docs/data.md
# "Data sets from your files", docs/format.md "Initial state from a file"): an MLP trained on a
# safetensors data set (float32), on a NumPy .npy pair (uint8 images) and a GPT on a text file audit
# VERIFIED; the auditor given another file is told so (REJECTED "wrong dataset"), one without it cannot
# check; hostile files are refused before anything is written, naming the file and the offset; runs
# started with --init from another run's export and from a PyTorch-written file (tests/ref/user_files.py:
# PyTorch when installed, else the format by hand) audit VERIFIED, resume from the run's copy, and a
# different, missing or unfitting initial file is refused clearly. Usage: user_data.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin user_data "${1:-}" key
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
# the initial weights written by PyTorch where a python3 imports torch (python3-torch)
PY=$(find_python "import torch") || PY=python3
mkdir -p "$T/files" "$T/copy" && "$PY" "$REF/user_files.py" data "$T/files" && "$PY" "$REF/user_files.py" init "$T/files" ||
  { echo "FAIL: tests/ref/user_files.py"; exit 1; }
MLP=(--set layers=[16,32,4] --set batch=32 --set steps=20 --set checkpoint_every=10 --set state_hash_every=5 --quiet)
D=(--data-dir "$T/files")

# expect_fail STATUS TEXT... -- command: exits STATUS and its stderr holds every TEXT
expect_fail() {
  local want=$1; shift
  local texts=()
  while [ "$1" != "--" ]; do texts+=("$1"); shift; done
  shift
  "$@" >"$T/out" 2>&1
  local st=$?
  [ "$st" = "$want" ] || { bad "$* -> exit $st, expected $want: $(cat "$T/out")"; return; }
  for t in "${texts[@]}"; do grep -qF -- "$t" "$T/out" || { bad "$*: no \"$t\" in: $(cat "$T/out")"; return; }; done
  ok
}

# 1. a safetensors data set (float32 x, int64 y), a relative path under --data-dir
"$TRAINER" train "$T/st" --key "$T/key" "${D[@]}" --set dataset=safetensors:data.safetensors "${MLP[@]}" \
  >"$T/train.out" 2>&1 || bad "train on safetensors: $(cat "$T/train.out")"
expect 0 verified "" "$T/st" "${D[@]}"
expect 0 verified "" "$T/st" "${D[@]}" --order reverse
sqlite3 "$T/st/run.db" "select cast(value as text) from meta where key='manifest'" 2>/dev/null | grep -q '"dataset_shape":{"classes":4,"dtype":"F32","n":256,"shape":\[1,1,16\]}' &&
  ok || bad "the manifest lacks the data set's shape: $(sqlite3 "$T/st/run.db" "select cast(value as text) from meta where key='manifest'" 2>&1)"
"$TRAINER" eval "$T/st" "${D[@]}" >"$T/eval.out" 2>&1 && grep -q "^dataset         safetensors (256 examples)" "$T/eval.out" &&
  awk '/^accuracy/{exit !($2 > 0.5)}' "$T/eval.out" && ok || bad "eval: $(cat "$T/eval.out")"
# the same bytes elsewhere verify; another file under the same name does not; no file cannot check
cp "$T/files/data.safetensors" "$T/copy/" && expect 0 verified "" "$T/st" --data-dir "$T/copy"
cp "$T/files/other.safetensors" "$T/copy/data.safetensors" && expect 1 "wrong dataset" "" "$T/st" --data-dir "$T/copy"
grep -q "the run was trained on a dataset with hash" "$T/audit.out" && ok || bad "wrong dataset message: $(cat "$T/audit.out")"
rm "$T/copy/data.safetensors" && expect 2 "dataset unavailable" "" "$T/st" --data-dir "$T/copy"
grep -q "data.safetensors: cannot open" "$T/audit.out" && ok || bad "missing file message: $(cat "$T/audit.out")"

# 2. a NumPy .npy pair (uint8 [N, 4, 4] and int32 labels), file: by the names, an absolute path
"$TRAINER" train "$T/npy" --key "$T/key" --set "dataset=file:$T/files/x.npy,$T/files/y.npy" "${MLP[@]}" \
  >"$T/train.out" 2>&1 || bad "train on npy: $(cat "$T/train.out")"
expect 0 verified "" "$T/npy"
"$TRAINER" train "$T/npy2" --key "$T/key" "${D[@]}" --set dataset=npy:x.npy,y.npy --set subset=100 "${MLP[@]}" \
  >"$T/train.out" 2>&1 || bad "train on an npy subset: $(cat "$T/train.out")"
expect 0 verified "" "$T/npy2" "${D[@]}"

# 3. a text file for the GPT: the vocabulary from the file, evaluated on its last 10%
GPT=(--recipe "$RECIPES/gpt-shakespeare.json" --set dataset=text:text.txt --set gpt_vocab=30 --set gpt_layers=1
     --set gpt_width=16 --set gpt_heads=2 --set gpt_context=8 --set batch=4 --set steps=6 --set warmup=2
     --set checkpoint_every=3 --set state_hash_every=1 --quiet)
"$TRAINER" train "$T/gpt" --key "$T/key" "${D[@]}" "${GPT[@]}" >"$T/train.out" 2>&1 || bad "train on text: $(cat "$T/train.out")"
expect 0 verified "" "$T/gpt" "${D[@]}"
"$TRAINER" eval "$T/gpt" "${D[@]}" >"$T/eval.out" 2>&1 && grep -q "^dataset         text-val" "$T/eval.out" && ok ||
  bad "eval of a text: $(cat "$T/eval.out")"
expect_fail 64 "gpt_vocab" -- "$TRAINER" train "$T/gptv" --key "$T/key" "${D[@]}" "${GPT[@]}" --set gpt_vocab=5

# 4. hostile data files: refused before anything is written, the file and the offset named
expect_fail 2 "trunc.safetensors" "offset" -- "$TRAINER" train "$T/h1" --key "$T/key" "${D[@]}" \
  --set dataset=safetensors:trunc.safetensors "${MLP[@]}"
expect_fail 2 "nan.safetensors" "NaN" "offset" -- "$TRAINER" train "$T/h2" --key "$T/key" "${D[@]}" \
  --set dataset=safetensors:nan.safetensors "${MLP[@]}"
expect_fail 2 "f64.safetensors" "dtype F64" -- "$TRAINER" train "$T/h3" --key "$T/key" "${D[@]}" \
  --set dataset=safetensors:f64.safetensors "${MLP[@]}"
expect_fail 64 "badlabel.safetensors" "label 4 of example 4 (offset" "not a class of the model (0..3)" -- \
  "$TRAINER" train "$T/h4" --key "$T/key" "${D[@]}" --set dataset=safetensors:badlabel.safetensors "${MLP[@]}"
expect_fail 64 "16 values per example" -- "$TRAINER" train "$T/h5" --key "$T/key" "${D[@]}" \
  --set dataset=safetensors:data.safetensors --set layers=[15,4] --quiet
for r in h1 h2 h3 h4 h5; do [ -e "$T/$r" ] && bad "a refused data set left $r" || ok; done

# 5. --init from another run's export
"$TRAINER" export "$T/st" --format safetensors --out "$T/st.safetensors" --pubkey "$T/key.pub" >/dev/null || bad "export"
"$TRAINER" train "$T/ft" --key "$T/key" "${D[@]}" --set dataset=safetensors:data.safetensors "${MLP[@]}" \
  --init "$T/st.safetensors" >"$T/train.out" 2>&1 || bad "fine-tune from an export: $(cat "$T/train.out")"
cmp -s "$T/st.safetensors" "$T/ft/init.safetensors" && ok || bad "the run keeps no copy of its initial file"
sqlite3 "$T/ft/run.db" "select cast(value as text) from meta where key='manifest'" 2>/dev/null | grep -q "\"init_sha256\":\"$(sha256sum <"$T/st.safetensors" | cut -c1-64)\"" &&
  ok || bad "the manifest lacks the initial file's hash"
expect 0 verified "" "$T/ft" "${D[@]}"
expect 0 verified "" "$T/ft" "${D[@]}" --init "$T/st.safetensors"
"$TRAINER" export "$T/ft" --step 0 --format safetensors --out "$T/ft0.safetensors" --pubkey "$T/key.pub" >/dev/null &&
  python3 -c "import sys,json,struct
a,b=(open(f,'rb').read() for f in sys.argv[1:3])
def t(x):
  n=struct.unpack('<Q',x[:8])[0]; h=json.loads(x[8:8+n]); return {k:x[8+n+v['data_offsets'][0]:8+n+v['data_offsets'][1]] for k,v in h.items() if k!='__metadata__'}
sys.exit(t(a)!=t(b))" "$T/st.safetensors" "$T/ft0.safetensors" && ok || bad "step 0 of the fine-tuned run is not the file's state"
expect 1 "wrong init" 0 "$T/ft" "${D[@]}" --init "$T/files/torch.safetensors"
grep -q "another initial state" "$T/audit.out" && ok || bad "wrong init message: $(cat "$T/audit.out")"
expect 1 "wrong init" 0 "$T/st" "${D[@]}" --init "$T/st.safetensors" # a run from its recipe's initialisation
mv "$T/ft/init.safetensors" "$T/ft-init" && expect 2 "init unavailable" "" "$T/ft" "${D[@]}"
grep -q "pass the file with --init FILE" "$T/audit.out" && ok || bad "init unavailable message: $(cat "$T/audit.out")"
expect 0 verified "" "$T/ft" "${D[@]}" --init "$T/ft-init"
cp "$T/files/torch.safetensors" "$T/ft/init.safetensors" && expect 1 "wrong init" 0 "$T/ft" "${D[@]}"

# 6. --init from a PyTorch-written file (tests/ref/user_files.py says which writer), and resume from the copy
"$TRAINER" train "$T/pt" --key "$T/key" "${D[@]}" --set dataset=safetensors:data.safetensors "${MLP[@]}" \
  --init "$T/files/torch.safetensors" >"$T/train.out" 2>&1 || bad "fine-tune from a PyTorch file: $(cat "$T/train.out")"
expect 0 verified "" "$T/pt" "${D[@]}"
# ... and its ONNX export reproduces its accuracy outside the project (issue 25's chain: the user's data,
# PyTorch-written initial weights, VERIFIED, ONNX): tests/ref/onnx_check.py with python3-onnx and NumPy
PYONNX=$(find_python "import onnx, numpy")
if [ -n "$PYONNX" ] && "$TRAINER" export "$T/pt" --format onnx --out "$T/pt.onnx" --pubkey "$T/key.pub" >"$T/export.out" 2>&1
then
  "$TRAINER" eval "$T/pt" "${D[@]}" --per-example "$T/pt.pred" >"$T/eval.out" 2>&1 || bad "eval: $(cat "$T/eval.out")"
  acc=$(sed -n 's/^accuracy *//p' "$T/eval.out")
  sh=$(sed -n 's/.*state hash \([0-9a-f]\{64\}\) .*/\1/p' "$T/export.out")
  "$PYONNX" "$REF/onnx_check.py" "$T/pt.onnx" --data-dir "$T/files" --dataset safetensors:data.safetensors \
    --per-example "$T/pt.pred" --accuracy "$acc" --commitment "$T/pt/commitment.vtc" --state-hash "$sh" --arch mlp &&
    ok || bad "the ONNX export of the run from the user's data and the PyTorch file"
elif grep -q "built without ONNX support" "$T/export.out" 2>/dev/null || [ -z "$PYONNX" ]; then
  echo "user_data: the ONNX check skipped (no ONNX support or no python3-onnx)"
else
  bad "ONNX export: $(cat "$T/export.out")"
fi
"$TRAINER_TEST" train "$T/res" --key "$T/key" "${D[@]}" --set dataset=safetensors:data.safetensors "${MLP[@]}" \
  --init "$T/files/good.safetensors" --stop-after 12 >/dev/null 2>&1 || bad "stop-after"
"$TRAINER" train "$T/res" --key "$T/key" "${D[@]}" --set dataset=safetensors:data.safetensors "${MLP[@]}" \
  --resume >"$T/train.out" 2>&1 || bad "resume of an --init run: $(cat "$T/train.out")"
expect 0 verified "" "$T/res" "${D[@]}"
"$TRAINER" train "$T/res2" --key "$T/key" "${D[@]}" --set dataset=safetensors:data.safetensors "${MLP[@]}" \
  --init "$T/files/good.safetensors" >/dev/null 2>&1 && cmp -s "$T/res/commitment.vtc" "$T/res2/commitment.vtc" && ok ||
  bad "the resumed --init run differs from one trained at once"

# 7. initial files that do not fit: every missing, extra or mis-shaped tensor named; nothing trained
I=("$TRAINER" train --key "$T/key" "${D[@]}" --set dataset=safetensors:data.safetensors "${MLP[@]}")
expect_fail 64 "missing.safetensors" "fc2.bias missing" -- "${I[@]}" "$T/i1" --init "$T/files/missing.safetensors"
expect_fail 64 "fc3.weight is not a state tensor" -- "${I[@]}" "$T/i2" --init "$T/files/extra.safetensors"
expect_fail 64 "fc1.bias is F32 [31], the program's F32 [32]" -- "${I[@]}" "$T/i3" --init "$T/files/misshaped.safetensors"
expect_fail 64 "fc1.bias is F64 [32]" -- "${I[@]}" "$T/i4" --init "$T/files/f64init.safetensors"
expect_fail 2 "trunc.safetensors" "offset" -- "${I[@]}" "$T/i5" --init "$T/files/trunc.safetensors"
expect_fail 2 "nothing.safetensors" -- "${I[@]}" "$T/i6" --init "$T/files/nothing.safetensors"
for r in i1 i2 i3 i4 i5 i6; do [ -e "$T/$r" ] && bad "a refused --init left $r" || ok; done

vt_end
