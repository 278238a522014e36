#!/usr/bin/env bash
# Builds the whole project (libraries, programs, tests, benchmarks) in every standard CMake build
# type with gcc and with clang, warnings as errors, so that the first command a user types works
# whatever the compiler and optimisation level. Part of the test command (scripts/test.sh).
# Usage: bash scripts/build-matrix.sh [BUILD_ROOT]   (default build/matrix)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-build/matrix}
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$root"
results=()
failed=0
for cc in gcc clang; do
  if ! command -v "$cc" >/dev/null 2>&1; then
    echo "build-matrix: $cc not installed" >&2; exit 1
  fi
  for type in Debug Release RelWithDebInfo MinSizeRel; do
    dir="$root/$cc-$type"
    t0=$(date +%s)
    if CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DVT_WERROR=ON >"$dir.log" 2>&1 &&
       cmake --build "$dir" -j"$jobs" >>"$dir.log" 2>&1; then
      results+=("$cc $type: ok ($(( $(date +%s) - t0 )) s)")
    else
      results+=("$cc $type: FAILED (log: $dir.log)")
      grep -E "error:|warning:" "$dir.log" | head -20 >&2 || true
      failed=1
    fi
    echo "build-matrix: ${results[-1]}"
  done
done
printf '%s\n' "== build matrix" "${results[@]}"
exit $failed
