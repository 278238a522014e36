#!/usr/bin/env bash
# Builds (when needed) and runs the benchmarks: one executable per bench/bench_*.c source
# (bench/bench.cmake builds each of them; a new bench_<name>.c is picked up automatically).
# Every benchmark prints a markdown report on stdout; this script tees each into
# BUILD_DIR/bench-results/<name>.md.
#
# Usage: bash scripts/bench.sh [--quick] [--build-dir DIR] [--only NAME] [-- ARGS...]
#   --quick          pass --quick to every benchmark (bench_rounding: ~1.5 min on 2 cores, the K
#                    sweeps up to K = 65536 included, the full run ~2 min; bench_step: ~10 s)
#   --build-dir DIR  build directory (default: build-bench, RelWithDebInfo)
#   --only NAME      run only bench_NAME (e.g. --only rounding)
#   -- ARGS...       further arguments passed to every benchmark
#
# Timing: BLAS single-threaded (OPENBLAS_NUM_THREADS=1) unless the caller sets it; run on an
# otherwise idle machine (the single-threaded figures are timed by the thread's CPU time, which
# other processes do not inflate, but they still share caches and memory bandwidth).
# OPENBLAS_CORETYPE is passed through: OpenBLAS 0.3.21 does not recognise some newer CPUs and falls
# back to generic kernels (e.g. "Prescott" on a Xeon of family 6, model 207 under KVM: a 4-5x slower
# dgemm, which flatters every ratio over the bare GEMM); there, set e.g. OPENBLAS_CORETYPE=SkylakeX.
# The variable is echoed below; the kernel in use is printed in every report. Benchmarks are not
# tests: CI does not run them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=build-bench
only=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) args+=(--quick); shift ;;
    --build-dir) build=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --) shift; args+=("$@"); break ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
  esac
done

# The benchmarks: bench/bench_*.c (the list bench/bench.cmake builds).
names=()
for src in bench/bench_*.c; do
  [ -e "$src" ] || continue
  n=$(basename "$src" .c)
  if [ -n "$only" ] && [ "$n" != "bench_$only" ] && [ "$n" != "$only" ]; then continue; fi
  names+=("$n")
done
if [ ${#names[@]} -eq 0 ]; then
  echo "bench.sh: no benchmark matches${only:+ '$only'}" >&2
  exit 64
fi

jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
fi
cmake --build "$build" -j"$jobs" --target "${names[@]}"

# bench_cnn compares with PyTorch (python3-torch, Debian's build, run by /usr/bin/python3): install
# it when missing (root, apt); without it that comparison is reported as skipped
if [[ " ${names[*]} " == *" bench_cnn "* ]] && ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch) >/dev/null 2>&1 ||
      echo "bench.sh: could not install python3-torch: bench_cnn skips the PyTorch comparison" >&2
  fi
fi

export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
mkdir -p "$build/bench-results"
echo "== machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
dirty=""
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -1)" ]; then
  dirty=" (plus uncommitted changes)"
fi
echo "== OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$dirty"
status=0
for n in "${names[@]}"; do
  echo "== $n ${args[*]:-}"
  set +e
  "$build/$n" "${args[@]}" | tee "$build/bench-results/${n#bench_}.md"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    echo "== $n exited with status $rc" >&2
    status=1
  fi
done
exit $status
