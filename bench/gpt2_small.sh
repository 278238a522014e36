#!/usr/bin/env bash
# gpt2_small.sh - scale, measured (issue 39 item 6; docs/benchmarks.md "GPT-2-small-shaped client
# model"): a GPT-2-small-shaped language model written in PyTorch (bench/gpt2_small.py: 12 layers,
# width 768, 12 heads, context 256, vocabulary 65, about 85 M parameters besides the embeddings),
# exported to ONNX and trained by `trainer train --model` for a few verifiable steps on
# tiny-shakespeare, then `auditor verify` of the run; the wall time and peak RSS of each
# (/usr/bin/time -v), the trainer's memory plan and its refusal below the plan, PyTorch FP32's
# seconds per step (1 and 2 threads, same model, batch and SGD) and the project's plain FP64 and
# FP32 baselines (`trainer plain --model`, the same model).
#
#     bash bench/gpt2_small.sh [BUILD_DIR]        (default build/release; trainer and auditor built)
#
# Environment: BATCH (default 1), STEPS (3), THREADS (2), PY (/usr/bin/python3), WORK (a new
# /tmp/vt-gpt2-small.XXXXXX, kept), OPENBLAS_CORETYPE (SkylakeX: this machine's OpenBLAS 0.3.21
# does not recognise the CPU otherwise, docs/benchmarks.md). Not part of the test suite.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$ROOT/build/release}" && pwd) || exit 2
BATCH=${BATCH:-1} STEPS=${STEPS:-3} THREADS=${THREADS:-2} PY=${PY:-/usr/bin/python3}
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
W=${WORK:-$(mktemp -d /tmp/vt-gpt2-small.XXXXXX)}
mkdir -p "$W"
T0=$(date +%s)
say() { printf '%s\n' "$*"; }
# timed NAME CMD...: run CMD under /usr/bin/time -v; its output in $W/NAME.out, the figures in $W/NAME.time
timed() {
  local n=$1; shift
  /usr/bin/time -v -o "$W/$n.time" "$@" >"$W/$n.out" 2>&1
  local st=$?
  local wall rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$W/$n.time")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$W/$n.time")
  printf '%-16s exit %s  wall %s  peak RSS %s MiB\n' "$n" "$st" "$wall" "$(( ${rss:-0} / 1024 ))"
  return $st
}

say "== gpt2_small.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC')  commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
say "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) / $(nproc) CPUs / $(free -g | awk '/Mem:/{print $2}') GiB"
say "load at start: $(uptime)"
say "batch $BATCH, steps $STEPS, threads $THREADS, OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE, work dir $W"

# the data: tiny-shakespeare as one text file
zcat "$ROOT/data/tinyshakespeare/input.txt.gz" >"$W/input.txt" || exit 1
# the model
timed export "$PY" "$ROOT/bench/gpt2_small.py" export "$W/gpt2.onnx" || { cat "$W/export.out"; exit 1; }
say "model: $(tail -1 "$W/export.out"); ONNX $(( $(stat -c %s "$W/gpt2.onnx") / 1048576 )) MiB"
"$B/trainer" keygen "$W/k" >/dev/null || exit 1

R=(--model "$W/gpt2.onnx" --set loss=next_token --set "dataset=text:$W/input.txt" --set batch="$BATCH"
   --set steps="$STEPS" --set optimizer=sgd --set lr=0.01 --set checkpoint_every="$STEPS" --set state_hash_every=1)

# the memory plan: a budget below it is refused before anything is allocated (exit 64, no run directory)
timed refused "$B/trainer" train "$W/refused" --key "$W/k" "${R[@]}" --max-memory 1G
st=$?
say "  --max-memory 1G: exit $st, run directory $([ -e "$W/refused" ] && echo CREATED || echo 'not created'):"
say "  $(grep -v '^\s*$' "$W/refused.out" | tail -2 | tr '\n' ' ')"

# the verifiable run
timed train "$B/trainer" train --threads "$THREADS" "$W/run" --key "$W/k" "${R[@]}" ||
  { tail -20 "$W/train.out"; exit 1; }
grep -v '^\s*$' "$W/train.out" | tail -12 | sed 's/^/  | /'
timed verify "$B/auditor" verify --threads "$THREADS" "$W/run" --pubkey "$W/k.pub" ||
  { tail -20 "$W/verify.out"; exit 1; }
grep -v '^\s*$' "$W/verify.out" | tail -6 | sed 's/^/  | /'

# PyTorch FP32, the same model and batch, SGD: 1 warm-up step, then STEPS timed
for t in 1 2; do
  timed "torch$t" "$PY" "$ROOT/bench/gpt2_small.py" torch "$W/input.txt" --batch "$BATCH" --threads "$t" \
    --steps "$STEPS" --warmup 1 || { tail -5 "$W/torch$t.out"; exit 1; }
  say "  $(tail -1 "$W/torch$t.out")"
done

# the plain baselines: the same ONNX model, batch and SGD through `trainer plain --model`
P=("${R[@]}" --steps "$STEPS")
for p in fp64 fp32; do
  OPENBLAS_NUM_THREADS=$THREADS timed "plain_$p" "$B/trainer" plain --threads "$THREADS" --precision "$p" "${P[@]}" ||
    { tail -5 "$W/plain_$p.out"; }
  grep -v '^\s*$' "$W/plain_$p.out" | tail -2 | sed 's/^/  | /'
done

# the figures as seconds per step and ratios (one run, one machine)
sps_train=$(sed -n 's/^trained \([0-9]*\) steps in \([0-9.]*\) s.*/\2 \1/p' "$W/train.out" | awk '{print $1/$2}')
sps_verify=$(sed -n 's/.*steps 1\.\.[0-9]* replayed.*(\([0-9]*\) steps, [^,]*, \([0-9.]*\) s,.*/\2 \1/p' "$W/verify.out" |
  awk '{print $1/$2}')
sps_t1=$(sed -n 's/.*"s_per_step": \([0-9.e-]*\).*/\1/p' "$W/torch1.out")
sps_t2=$(sed -n 's/.*"s_per_step": \([0-9.e-]*\).*/\1/p' "$W/torch2.out")
plain() { sed -n 's/.*: \([0-9]*\) steps in \([0-9.]*\) s.*/\2 \1/p' "$W/plain_$1.out" | awk '{print $1/$2}'; }
sps_p64=$(plain fp64) sps_p32=$(plain fp32)
say "seconds per step (batch $BATCH): verifiable train ${sps_train:-?}, auditor replay ${sps_verify:-?}," \
    "PyTorch FP32 1 thread ${sps_t1:-?}, 2 threads ${sps_t2:-?}, plain FP64 ${sps_p64:-?}, plain FP32 ${sps_p32:-?}"
r() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "?"; else printf "%.2f", a / b }'; }
say "ratios: train/torch1 $(r "$sps_train" "$sps_t1"), train/torch2 $(r "$sps_train" "$sps_t2")," \
    "train/plain64 $(r "$sps_train" "$sps_p64"), plain64/torch1 $(r "$sps_p64" "$sps_t1"), verify/train $(r "$sps_verify" "$sps_train")"
say "load at end: $(uptime)"
say "whole script: $(( $(date +%s) - T0 )) s; outputs in $W"
