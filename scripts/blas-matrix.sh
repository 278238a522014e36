#!/usr/bin/env bash
# Portability proof, part of the test command (scripts/test.sh): runs the invariant, kernel and
# end-to-end tests under every CBLAS that Debian provides through the libblas.so.3 alternative
# (OpenBLAS pthread, BLIS pthread, BLIS OpenMP, the reference BLAS) and under OpenBLAS with
# OPENBLAS_CORETYPE forced to several kernel families. Each configuration is first checked to be
# the one asked for (tests/blas_info.c), then, across configurations:
#   - a run trained under it has the same commitment, byte for byte, as the run trained under
#     the system default (every stored value, hence the Merkle root, is bit-identical), and
#   - the default's run is verified by an auditor under it, in the blas and split orders.
# A kernel family this CPU cannot run (e.g. SkylakeX without AVX-512) is reported as skipped.
# Usage: bash scripts/blas-matrix.sh BUILD_DIR   (a configured and built tree)
set -uo pipefail
B=$(cd "${1:?usage: blas-matrix.sh BUILD_DIR}" && pwd)
cd "$(dirname "$0")/.."
L=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
jobs=$(nproc 2>/dev/null || echo 2)
T=$(mktemp -d /tmp/vt-blas.XXXXXX)
trap 'rm -rf "$T"' EXIT
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }

# NAME  LIBDIR  CORETYPE  CPU-FLAGS-NEEDED
CONFIGS=(
  "openblas-pthread openblas-pthread - -"
  "blis-pthread blis-pthread - -"
  "blis-openmp blis-openmp - -"
  "reference blas - -"
  "openblas/Prescott openblas-pthread Prescott pni"
  "openblas/Haswell openblas-pthread Haswell avx2,fma"
  "openblas/Zen openblas-pthread Zen avx2,fma"
  "openblas/SkylakeX openblas-pthread SkylakeX avx512f,avx512bw,avx512dq,avx512vl"
)
R=(--set dataset=mnist-train --set subset=2000 --set 'layers=[784,96,10]' --set steps=30 --set batch=64
   --set checkpoint_every=10 --set state_hash_every=1 --quiet)

"$B/trainer" keygen "$T/key" >/dev/null || { echo "blas-matrix: keygen failed"; exit 1; }
"$B/trainer" train --run "$T/ref" --key "$T/key" "${R[@]}" >/dev/null ||
  { echo "blas-matrix: the reference run (system default BLAS) failed"; exit 1; }
echo "blas-matrix: reference run under the system default: $("$B/blas_info" | tr -s ' ' | paste -sd' ')"

results=()
failed=0
for cfg in "${CONFIGS[@]}"; do
  read -r name dir core need <<<"$cfg"
  t0=$(date +%s)
  if [ ! -e "$L/$dir/libblas.so.3" ]; then
    results+=("$name: FAILED ($L/$dir/libblas.so.3 not installed: run scripts/install-deps.sh)"); failed=1; continue
  fi
  if [ "$need" != - ] && ! has ${need//,/ }; then
    results+=("$name: skipped (this CPU lacks ${need//,/ })"); continue
  fi
  env=(LD_LIBRARY_PATH="$L/$dir")
  [ "$core" != - ] && env+=(OPENBLAS_CORETYPE="$core")
  info=$(env "${env[@]}" "$B/blas_info") || { results+=("$name: FAILED (blas_info)"); failed=1; continue; }
  lib=$(awk '$1=="library"{print $2}' <<<"$info"); got=$(awk '$1=="core"{print $2}' <<<"$info")
  if [[ "$lib" != "$L/$dir/"* ]]; then
    results+=("$name: FAILED (resolved $lib, not $L/$dir)"); failed=1; continue
  fi
  if [ "$core" != - ] && [ "${got,,}" != "${core,,}" ]; then
    results+=("$name: FAILED (OpenBLAS runs core ${got:-?}, not $core)"); failed=1; continue
  fi
  problems=()
  # the same recipe trained under this BLAS commits to the same bits
  rm -rf "$T/run"
  if ! env "${env[@]}" "$B/trainer" train --run "$T/run" --key "$T/key" "${R[@]}" >"$T/train.out" 2>&1; then
    problems+=("train: $(tail -1 "$T/train.out")")
  elif ! cmp -s "$T/ref/commitment.vtc" "$T/run/commitment.vtc"; then
    problems+=("commitment differs from the default BLAS's")
  fi
  # the default's run verifies under this BLAS
  for order in blas split; do
    env "${env[@]}" "$B/auditor" verify "$T/ref" --order "$order" --quiet >"$T/audit.out" 2>&1 ||
      problems+=("audit --order $order: $(head -2 "$T/audit.out" | paste -sd' ')")
  done
  # the invariant, kernel and end-to-end tests
  if ! (cd "$B" && env "${env[@]}" ctest -j"$jobs" --output-on-failure \
          -R '^(test_invariant|test_invariant_probabilistic|test_kernels|e2e)$' >"$T/ctest.out" 2>&1); then
    cat "$T/ctest.out"
    problems+=("ctest: $(grep -E 'tests passed|Failed' "$T/ctest.out" | paste -sd' ')")
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    results+=("$name: ok, $lib${got:+ core $got}: same commitment, audits verified, 4 tests passed ($(( $(date +%s) - t0 )) s)")
  else
    results+=("$name: FAILED: ${problems[*]}"); failed=1
  fi
  echo "blas-matrix: ${results[-1]}"
done
printf '%s\n' "== BLAS matrix" "${results[@]}"
exit $failed
