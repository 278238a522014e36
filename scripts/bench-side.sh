#!/usr/bin/env bash
# bench-side.sh [--quick] [--build-dir DIR]: issue 27's side-by-side table in one run on one
# machine: for the MLP (recipes/mlp-mnist.json), the residual CNN (step program 3, a new run's default, and the
# earlier programs 1 and 2) and the character GPT, with 1 and
# 2 threads, the time per step of plain FP32, plain FP64, the verifiable step (rounding=exact and
# log) and PyTorch FP32 with the same thread count, and the FP64 GEMM rate the verifiable and the
# plain FP64 step reach as a fraction of the machine's DGEMM with that many threads (bench_cnn
# --threads T; with 2 threads every figure is wall time). Prints each bench_cnn report, then the
# table (markdown; its clock column says how each side was timed: thread-CPU, the thread's CPU time,
# with 1 thread, on both sides; wall with 2). Run on an otherwise idle machine: with 2 threads on 2 cores, any other load
# inflates the figures. PyTorch: /usr/bin/python3 with python3-torch (scripts/bench.sh installs it).
# Then the audit speed (replay steps/s over training steps/s) of the real binaries for each model
# and thread count: `trainer train` of A and B steps and `auditor verify` of each run (the
# auditor's default order, split, and the trainer's, blas); the per-step time is the difference
# between the B-step and the A-step run over B - A steps (so that set-up, data loading and the
# final commitment cancel), the thread CPU time (user + system) with 1 thread, wall time with 2.
# --no-audit skips it, --audit-only runs only it; AUDIT_REPS=R (default 1) takes the median of R repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-bench
quick=()
audit=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick); shift ;;
    --build-dir) build=$2; shift 2 ;;
    --no-audit) audit=0; shift ;;
    --audit-only) audit=2; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench-side.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
fi
targets=(--target bench_cnn)
[ "$audit" != 0 ] && targets+=(--target trainer --target auditor)
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" "${targets[@]}" >/dev/null
out=$(mktemp)
v2=$(mktemp --suffix=.json)   # the default CNN recipe as step program 2 (docs/cnn.md "Step program 2")
v3=$(mktemp --suffix=.json)   # as step program 3, a new run's default (the trainer's choice where the recipe names none)
v1=$(mktemp --suffix=.json)   # and as step program 1 (what bench_cnn runs where the recipe names none)
trap 'rm -f "$out" "$v1" "$v2" "$v3"' EXIT
sed 's/^{/{ "program_version": 2,/' recipes/resnet-cifar10.json >"$v2"
sed 's/^{/{ "program_version": 3,/' recipes/resnet-cifar10.json >"$v3"
sed 's/^{/{ "program_version": 1,/' recipes/resnet-cifar10.json >"$v1"
echo "== machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
for r in recipes/mlp-mnist.json "$v3" "$v1" "$v2" recipes/gpt-shakespeare.json; do
  [ "$audit" = 2 ] && break
  for t in 1 2; do
    echo "== bench_cnn ${quick[*]:-} --recipe $r --threads $t"
    "$build/bench_cnn" "${quick[@]}" --recipe "$r" --threads "$t" | tee -a "$out"
  done
done
if [ "$audit" != 2 ]; then
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| model | threads | clock: ours, PyTorch | plain FP32 s/step | plain FP64 | verifiable exact | verifiable log | PyTorch FP32 | exact / FP64 | log / FP64 | exact / PyTorch | DGEMM peak reached: exact, plain FP64 |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk '$1 == "SIDE" { # SIDE model threads fp32 fp64 exact log torch(-1: none) exact/peak fp64/peak clock torch-clock
  pt = ($8 > 0) ? sprintf("%.4f", $8) : "–"; rt = ($8 > 0) ? sprintf("%.2f", $6 / $8) : "–"
  if ($8 > 0 && $11 != $12) rt = rt " (clocks differ)"
  printf "| %s | %d | %s, %s | %.4f | %.4f | %.4f | %.4f | %s | %.2f | %.2f | %s | %.1f%%, %.1f%% |\n", $2, $3, $11, $12,
         $4, $5, $6, $7, pt, $6 / $5, $7 / $5, rt, 100 * $9, 100 * $10 }' "$out"
fi

[ "$audit" = 0 ] && exit 0
# audit_time CMD...: "wall cpu" of one run of CMD (its output discarded; failure aborts)
audit_time() {
  local t TIMEFORMAT='%R %U %S'
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 ) || { echo "bench-side.sh: failed: $*" >&2; exit 1; }
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$t"
}
work=$(mktemp -d)
trap 'rm -f "$out" "$v1" "$v2" "$v3"; rm -rf "$work"' EXIT
"$build/trainer" keygen "$work/k" >/dev/null
reps=${AUDIT_REPS:-1}
echo
echo "== audit speed: load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| model | threads | steps A, B | training s/step | replay s/step, split (auditor default) | replay s/step, blas | audit speed, split | audit speed, blas |"
echo "|---|---:|---|---:|---:|---:|---:|---:|"
for spec in "recipes/mlp-mnist.json MLP 100 400" "$v3 CNN-program-3 10 40" "$v1 CNN-program-1 10 40" \
            "$v2 CNN-program-2 10 40" \
            "recipes/gpt-shakespeare.json GPT 10 40"; do
  read -r r name a b <<<"$spec"
  for t in 1 2; do
    col=$((t == 1 ? 2 : 1))   # CPU time with 1 thread, wall with 2
    tr=(); sp=(); bl=()
    for ((i = 0; i < reps; i++)); do
      declare -A T=()
      for n in "$a" "$b"; do
        rm -rf "$work/run$n"
        T[train$n]=$(audit_time "$build/trainer" train "$work/run$n" --key "$work/k" --recipe "$r" \
          --set steps="$n" --set checkpoint_every="$n" --threads "$t" --quiet | cut -d' ' -f$col)
        T[split$n]=$(audit_time "$build/auditor" verify "$work/run$n" --threads "$t" --quiet | cut -d' ' -f$col)
        T[blas$n]=$(audit_time "$build/auditor" verify "$work/run$n" --threads "$t" --order blas --quiet | cut -d' ' -f$col)
      done
      tr+=("$(awk -v x="${T[train$a]}" -v y="${T[train$b]}" -v d=$((b - a)) 'BEGIN { printf "%.5f", (y - x) / d }')")
      sp+=("$(awk -v x="${T[split$a]}" -v y="${T[split$b]}" -v d=$((b - a)) 'BEGIN { printf "%.5f", (y - x) / d }')")
      bl+=("$(awk -v x="${T[blas$a]}" -v y="${T[blas$b]}" -v d=$((b - a)) 'BEGIN { printf "%.5f", (y - x) / d }')")
      unset T
    done
    med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    mt=$(med "${tr[@]}"); ms=$(med "${sp[@]}"); mb=$(med "${bl[@]}")
    awk -v n="$name" -v t="$t" -v a="$a" -v b="$b" -v mt="$mt" -v ms="$ms" -v mb="$mb" \
      'BEGIN { printf "| %s | %d | %d, %d | %.4f | %.4f | %.4f | %.2f | %.2f |\n", n, t, a, b, mt, ms, mb, mt / ms, mt / mb }'
  done
done
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
