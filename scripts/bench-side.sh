#!/usr/bin/env bash
# bench-side.sh [--quick] [--build-dir DIR]: issue 27's side-by-side table in one run on one
# machine: for the MLP (recipes/mlp-mnist.json), the residual CNN and the character GPT, with 1 and
# 2 threads, the time per step of plain FP32, plain FP64, the verifiable step (rounding=exact and
# log) and PyTorch FP32 with the same thread count, and the FP64 GEMM rate the verifiable and the
# plain FP64 step reach as a fraction of the machine's DGEMM with that many threads (bench_cnn
# --threads T; with 2 threads every figure is wall time). Prints each bench_cnn report, then the
# table (markdown). Run on an otherwise idle machine: with 2 threads on 2 cores, any other load
# inflates the figures. PyTorch: /usr/bin/python3 with python3-torch (scripts/bench.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-bench
quick=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick); shift ;;
    --build-dir) build=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "bench-side.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
fi
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target bench_cnn >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "== machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
for r in recipes/mlp-mnist.json recipes/resnet-cifar10.json recipes/gpt-shakespeare.json; do
  for t in 1 2; do
    echo "== bench_cnn ${quick[*]:-} --recipe $r --threads $t"
    "$build/bench_cnn" "${quick[@]}" --recipe "$r" --threads "$t" | tee -a "$out"
  done
done
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| model | threads | plain FP32 s/step | plain FP64 | verifiable exact | verifiable log | PyTorch FP32 | exact / FP64 | log / FP64 | exact / PyTorch | DGEMM peak reached: exact, plain FP64 |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk '$1 == "SIDE" { # SIDE model threads fp32 fp64 exact log torch(-1: none) exact/peak fp64/peak
  pt = ($8 > 0) ? sprintf("%.4f", $8) : "–"; rt = ($8 > 0) ? sprintf("%.2f", $6 / $8) : "–"
  printf "| %s | %d | %.4f | %.4f | %.4f | %.4f | %s | %.2f | %.2f | %s | %.1f%%, %.1f%% |\n", $2, $3, $4, $5, $6, $7, pt,
         $6 / $5, $7 / $5, rt, 100 * $9, 100 * $10 }' "$out"
