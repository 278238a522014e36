#!/usr/bin/env bash
# The ONNX front-end of the client's own model (arch/vt_onnx_graph.c, docs/models.md "The client's
# own model"), from files torch 1.13 exports: tests/ref/onnx_models.py writes the zoo (MLP, LeNet-5,
# ViT-tiny, a causal character LM, each at opsets 13 and 17, training mode, no constant folding, and a
# model with torch.cumsum; and one of the other operators, misc), vt_og_dump (tests/tools/vt_og_dump.c) reads each with a batch of 4 and
# prints the folded compute graph. Checked: no shape arithmetic is left (no Shape, Constant,
# ConstantOfShape, Range, Unsqueeze, Squeeze, Cast, Not, Equal, Trilu, Greater, Less node; no Gather,
# Slice or Concat whose inputs are all int64); the ViT at opset 13 keeps its LayerNorm decomposition
# (ReduceMean, Sub, Pow, Sqrt, Div) and at opset 17 has LayerNormalization; the logits' shapes; the
# LM's causal mask folded to the strict upper triangle; the unsupported model refused (exit 64) naming
# its node and CumSum; folding's results to the bit against NumPy on small graphs
# (tests/ref/onnx_fold_cases.py: slices, gathers, reshapes, casts, integer division, float32
# arithmetic, Trilu, Range, ...; overflow, division by zero, an index out of range refused); the same file read twice gives the same canonical hash, two opsets of the same
# model two; a fixed batch other than the file's refused; truncated and garbage files refused as
# corrupt (exit 2), never a crash. Skipped (77) without torch and onnx, or without ONNX support.
# Usage: onnx_import.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
vt_begin onnx_import "${1:-}"

DUMP="$B/vt_og_dump"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$DUMP" ] || { echo "onnx_import: $DUMP is not built"; exit 1; }
# a build without ONNX support refuses clearly, and the rest is skipped
printf 'x' >"$T/probe.onnx"
if "$DUMP" "$T/probe.onnx" 4 2>&1 | grep -q "built without ONNX support"; then
  echo "onnx_import: this build has no ONNX support: skipped"
  exit 77
fi
PY=$(find_python "import torch, onnx") || { echo "onnx_import: torch or onnx absent: skipped"; exit 77; }
"$PY" "$SRC/tests/ref/onnx_models.py" "$T/zoo" >"$T/export.log" 2>&1 || { bad "export: $(tail -5 "$T/export.log")"; vt_end; }

# dump NAME: $T/NAME.txt, the folded graph at batch 4
dump() {
  "$DUMP" "$T/zoo/$1.onnx" 4 >"$T/$1.txt" 2>"$T/$1.err" || { bad "$1: refused: $(cat "$T/$1.err")"; return 1; }
}
# the compute nodes' count of operator OP in NAME
count() { awk -v op="$2" '$1 == "node" && $3 == op { n++ } END { print n + 0 }' "$T/$1.txt"; }

for m in mlp lenet vit charlm; do
  for op in 13 17; do
    f=${m}_op$op
    dump "$f" || continue
    left=$(awk '$1 == "node" && $3 ~ /^(Shape|Constant|ConstantOfShape|Range|Unsqueeze|Squeeze|Cast|Not|Equal|Trilu|Greater|Less|Identity)$/ { print $2 " " $3 }' "$T/$f.txt")
    [ -z "$left" ] && ok "$f: no shape arithmetic left" || bad "$f: left: $left"
    # Gather, Slice or Concat whose every input is int64 computes on shapes
    shp=$(awk '$1 == "node" && $3 ~ /^(Gather|Slice|Concat)$/ { s = $0; sub(/ out=.*/, "", s); n = split(s, a, " "); f = 0; t = 0;
           for (i = 4; i <= n; i++) if (a[i] ~ /\[/) { t++; if (a[i] ~ /^i64\[/) f++ } if (t > 0 && f == t) print $2 }' "$T/$f.txt")
    [ -z "$shp" ] && ok "$f: no Gather/Slice/Concat on shapes" || bad "$f: on shapes: $shp"
    grep -q "^ops " "$T/$f.txt" && echo "$f: $(grep '^ops ' "$T/$f.txt")"
  done
done

# the logits
want_out() { grep -q "^outputs .*:logits f32\[$2\]" "$T/$1.txt" && ok "$1: logits [$2]" || bad "$1: $(grep '^outputs' "$T/$1.txt"), want [$2]"; }
for op in 13 17; do
  want_out mlp_op$op 4,10
  want_out lenet_op$op 4,10
  want_out vit_op$op 4,10
  want_out charlm_op$op 4,16,64
done
grep -q "^inputs 0:input f32\[4,3,32,32\]" "$T/vit_op13.txt" && ok "vit: input [4,3,32,32]" || bad "vit input: $(grep '^inputs' "$T/vit_op13.txt")"
grep -q "^inputs 0:input i64\[4,16\]" "$T/charlm_op17.txt" && ok "charlm: input [4,16] int64" || bad "charlm input"

# LayerNorm: decomposed at opset 13, one operator at 17
for op in ReduceMean Sub Pow Sqrt Div; do
  [ "$(count vit_op13 $op)" -ge 2 ] && ok "vit_op13: $op kept" || bad "vit_op13: $(count vit_op13 $op) $op"
done
[ "$(count vit_op13 LayerNormalization)" = 0 ] && ok "vit_op13: no LayerNormalization" || bad "vit_op13 LayerNormalization"
[ "$(count vit_op17 LayerNormalization)" = 5 ] && ok "vit_op17: 5 LayerNormalization" || bad "vit_op17: $(count vit_op17 LayerNormalization)"
[ "$(count vit_op17 ReduceMean)" = 0 ] && ok "vit_op17: no ReduceMean" || bad "vit_op17 ReduceMean"
for op in 13 17; do
  dump misc_op$op || continue
  for k in Conv BatchNormalization LeakyRelu AveragePool Dropout GlobalAveragePool Flatten Gemm Tanh Sigmoid LogSoftmax; do
    [ "$(count misc_op$op $k)" = 1 ] || bad "misc_op$op: $(count misc_op$op $k) $k"
  done
  grep -q "^node [^ ]* BatchNormalization .* out=\[ [0-9]*:[^ ]* f32\[4,4,8,8\] [0-9]*:[^ ]* f32\[4\] [0-9]*:[^ ]* f32\[4\] " "$T/misc_op$op.txt" &&
    ok "misc_op$op: BatchNormalization's Y and running statistics" || bad "misc_op$op: $(grep BatchNormalization "$T/misc_op$op.txt")"
  want_out misc_op$op 4,5
done
[ "$(count lenet_op13 Conv)" = 2 ] && [ "$(count lenet_op13 MaxPool)" = 2 ] && [ "$(count lenet_op13 Gemm)" = 3 ] &&
  ok "lenet: 2 Conv, 2 MaxPool, 3 Gemm" || bad "lenet: $(grep '^ops' "$T/lenet_op13.txt")"
grep -q "^node [^ ]* MaxPool in=\[ [0-9]*:[^ ]* f32\[4,6,28,28\] \] out=\[ [0-9]*:[^ ]* f32\[4,6,14,14\]" "$T/lenet_op13.txt" &&
  ok "lenet: the first pool 28 -> 14" || bad "lenet: first MaxPool shapes"

# the causal mask: a constant boolean [16,16], true strictly above the diagonal (masked), in both opsets
want=$(awk 'BEGIN { for (i = 0; i < 16; i++) for (j = 0; j < 16; j++) printf " %d", (j > i) }')
for op in 13 17; do
  f=charlm_op$op
  [ "$(count $f Where)" = 2 ] && ok "$f: 2 Where" || bad "$f: $(count $f Where) Where"
  mask=$(awk '$1 == "node" && $3 == "Where" { split($0, a, " "); print a[5] " " a[6]; exit }' "$T/$f.txt")
  case "$mask" in *bool\[16,16\]const) ok "$f: the mask is a constant [16,16]" ;; *) bad "$f: the mask is $mask" ;; esac
  got=$("$DUMP" "$T/zoo/$f.onnx" 4 "${mask%%:*}" 2>&1 | cut -d' ' -f3-)
  [ " $got" = "$want" ] && ok "$f: the mask is the strict upper triangle" || bad "$f: mask values $got"
done

# folding against NumPy, case by case (tests/ref/onnx_fold_cases.py), to the bit
if "$PY" -c "import numpy" 2>/dev/null; then
  "$PY" "$SRC/tests/ref/onnx_fold_cases.py" "$DUMP" "$T/cases" >"$T/cases.log" 2>&1
  st=$?
  ok_n=$(grep -c "^ok" "$T/cases.log")
  [ $st = 0 ] && ok "folding: $ok_n cases as NumPy" || bad "folding: $(grep -v '^ok' "$T/cases.log")"
fi

# refusals
"$DUMP" "$T/zoo/unsupported_op13.onnx" 4 >"$T/u.out" 2>&1
st=$?
[ $st = 64 ] && grep -q "node /CumSum (CumSum): operator CumSum is not supported (supported: Gemm" "$T/u.out" &&
  ok "unsupported: refused naming the node and CumSum" || bad "unsupported: exit $st: $(cat "$T/u.out")"

# the canonical hash: the same twice, another opset another
h() { "$DUMP" "$T/zoo/$1.onnx" "${2:-4}" | awk '$1 == "canonical" { print $2 }'; }
for m in mlp lenet vit charlm; do
  a=$(h ${m}_op13) b=$(h ${m}_op13) c=$(h ${m}_op17)
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "$m: the same file, the same canonical hash" || bad "$m: $a / $b"
  [ "$a" != "$c" ] && ok "$m: opsets 13 and 17 differ" || bad "$m: opsets 13 and 17 hash alike"
done
[ "$(h mlp_op13 4)" != "$(h mlp_op13 8)" ] && ok "mlp: batches 4 and 8 differ" || bad "mlp: the batch is not in the hash"

# a fixed batch: refused when another is asked for
"$PY" - "$T/zoo/mlp_op13.onnx" "$T/fixed.onnx" <<'EOF' >"$T/fix.log" 2>&1 || bad "fixed batch file: $(cat "$T/fix.log")"
import sys, onnx
m = onnx.load(sys.argv[1])
d = m.graph.input[0].type.tensor_type.shape.dim[0]
d.ClearField("dim_param")
d.dim_value = 2
onnx.save(m, sys.argv[2])
EOF
"$DUMP" "$T/fixed.onnx" 2 >/dev/null 2>&1 && ok "fixed batch 2: read at 2" || bad "fixed batch 2 at 2"
"$DUMP" "$T/fixed.onnx" 4 >"$T/fix.out" 2>&1
st=$?
[ $st = 64 ] && grep -q "input input: dimension 0 is 2, the batch 4" "$T/fix.out" && ok "fixed batch 2: 4 refused" ||
  bad "fixed batch: exit $st: $(cat "$T/fix.out")"

# hostile bytes: truncated, garbage, empty: refused as corrupt (2), never a crash
n=$(stat -c %s "$T/zoo/vit_op13.onnx")
for cut in 7 100 $((n / 2)) $((n - 3)); do
  head -c $cut "$T/zoo/vit_op13.onnx" >"$T/cut.onnx"
  "$DUMP" "$T/cut.onnx" 4 >"$T/cut.out" 2>&1
  st=$?
  [ $st = 2 ] && ok "truncated at $cut: refused (2)" || bad "truncated at $cut: exit $st: $(head -c 300 "$T/cut.out")"
done
head -c 5000 /dev/urandom >"$T/rand.onnx"
"$DUMP" "$T/rand.onnx" 4 >"$T/rand.out" 2>&1
st=$?
[ $st = 2 ] || [ $st = 64 ] && ok "random bytes: refused ($st)" || bad "random bytes: exit $st"
: >"$T/empty.onnx"
"$DUMP" "$T/empty.onnx" 4 >"$T/empty.out" 2>&1
st=$?
[ $st = 64 ] && grep -q "opset" "$T/empty.out" && ok "empty file: refused (no opset)" || bad "empty: exit $st: $(cat "$T/empty.out")"

vt_end
