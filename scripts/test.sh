#!/usr/bin/env bash
# The test command: installs dependencies (Debian 12, as root), builds the project twice
# (a normal -Werror build and an ASan+UBSan build) and runs the ctest suite in both.
# Usage: bash scripts/test.sh [--no-asan] [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
asan=1
if [ "${1:-}" = "--no-asan" ]; then asan=0; shift; fi
bash scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)

build() { # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVT_WERROR=ON "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs"
}

mkdir -p build
build build/release
echo "== tests: release build"
(cd build/release && ctest --output-on-failure -j"$jobs" "$@")
if [ "$asan" = 1 ]; then
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
echo "== all tests passed"
