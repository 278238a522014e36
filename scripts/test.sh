#!/usr/bin/env bash
# The test command: installs dependencies (Debian 12, as root), then
#   1. builds with -Werror and runs the ctest suite under foreign load: as many busy loops as cores
#      (`sh -c 'while :; do :; done'`, at the script's own nice level, 0 in CI) run beside it, started
#      right before the ctest and killed right after it (and by a trap on exit, so that none outlives
#      the script); it must pass all the same (no test measures wall time; every hang guard is at
#      least 5x a test's quiet time, times VT_TEST_TIMEOUT_SCALE: tests/tests.cmake, tests/e2e/lib.sh);
#   2. runs the invariant, kernel and end-to-end tests under every CBLAS of Debian's
#      libblas.so.3 alternative and several OpenBLAS kernel families (scripts/blas-matrix.sh);
#   3. builds with ASan+UBSan and runs the suite again;
#   4. builds the libFuzzer targets (clang) and runs short smoke runs;
#   5. builds every CMake build type with gcc and clang, -Werror (scripts/build-matrix.sh).
# Usage: bash scripts/test.sh [--quick] [ctest args...]   (--quick: skips steps 2 and 5; the old
# spelling --no-asan skips steps 2, 3 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
asan=1 full=1
if [ "${1:-}" = "--no-asan" ]; then asan=0 full=0; shift; fi
if [ "${1:-}" = "--quick" ]; then full=0; shift; fi
t_start=$(date +%s)
bash scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)

# busy loops beside the release ctest (step 1): started by busy_start, killed by busy_stop, which the
# EXIT trap runs too, so that they never outlive the script, whichever way it ends
BUSY=()
busy_start() {
  local i
  for ((i = 0; i < jobs; i++)); do sh -c 'while :; do :; done' & BUSY+=("$!"); done
  echo "(foreign load: ${#BUSY[@]} busy loops beside the tests)"
}
busy_stop() {
  local p
  for p in "${BUSY[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${BUSY[@]}"; do wait "$p" 2>/dev/null || true; done
  BUSY=()
}
trap busy_stop EXIT

build() { # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVT_WERROR=ON "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs"
}

mkdir -p build
build build/release
echo "== tests: release build, under foreign load"
t0=$(date +%s)
busy_start
(cd build/release && ctest --output-on-failure -j"$jobs" "$@")
busy_stop
echo "(release ctest under load: $(( $(date +%s) - t0 )) s)"
if [ "$full" = 1 ]; then
  echo "== invariant, kernel and end-to-end tests under every BLAS"
  t0=$(date +%s)
  bash scripts/blas-matrix.sh build/release
  echo "(BLAS matrix: $(( $(date +%s) - t0 )) s)"
fi
if [ "$asan" = 1 ]; then
  # the CPU-only build (no CUDA, as where nvcc is absent) under the sanitizers
  build build/asan -DVT_SANITIZE=ON -DVT_CUDA=OFF
  echo "== tests: ASan+UBSan build"
  (cd build/asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
     VT_ASAN=1 ctest --output-on-failure -j"$jobs" "$@")
fi
if command -v clang >/dev/null 2>&1; then
  # libFuzzer targets (clang only): build them and run short smoke runs from the committed corpora
  CC=clang build build/fuzz -DVT_FUZZ=ON -DVT_CUDA=OFF
  echo "== fuzz smoke runs (clang, libFuzzer)"
  (cd build/fuzz && ctest --output-on-failure -R fuzz)
fi
if [ "$full" = 1 ]; then
  echo "== every build type with gcc and clang (-Werror)"
  t0=$(date +%s)
  bash scripts/build-matrix.sh build/matrix
  echo "(build matrix: $(( $(date +%s) - t0 )) s)"
fi
echo "== all tests passed ($(( $(date +%s) - t_start )) s)"
