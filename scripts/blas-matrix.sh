#!/usr/bin/env bash
# Portability proof, part of the test command (scripts/test.sh): runs the invariant, kernel and
# end-to-end tests under every CBLAS that Debian provides through the libblas.so.3 alternative
# (OpenBLAS pthread, BLIS pthread, BLIS OpenMP, the reference BLAS) and under OpenBLAS with
# OPENBLAS_CORETYPE forced to several kernel families. Each configuration is first checked to be
# the one asked for (tests/tools/blas_info.c), then, across configurations, in both rounding modes:
#   - exact rounding (the default): a run trained under it has the same commitment, byte for
#     byte, as the run trained under the system default - every stored value is RN32 of an exact
#     value, and there is no log;
#   - log rounding: the run stores the same values (every step's loss and state hash, compared
#     with sqlite3) as the default's - every stored value is RN32 of the exact value here too, the
#     trainer evaluating the elements it logs exactly. Its commitment is compared but not required
#     to match: *which* elements are logged depends on the trainer's own FP64 values, so trainers on
#     two BLAS libraries may log different (each complete and honest) entries (docs/rounding.md);
#   - each run verifies under the other's BLAS (orders blas, split and pairwise).
# The invariant tests run with VT_QUICK=1 (the sanitizer build's smaller budget) to keep the
# matrix within a few minutes; the full budget runs once, in the release suite.
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
RL=("${R[@]}" --set rounding=log)

# every step's loss bits, whether a state is committed, and the state hash, from the run store
steps() { sqlite3 "$1/run.db" "SELECT step, loss_bits, has_state, hex(state_hash) FROM steps ORDER BY step"; }
command -v sqlite3 >/dev/null || { echo "blas-matrix: sqlite3 is missing (scripts/install-deps.sh)"; exit 1; }

"$B/trainer" keygen "$T/key" >/dev/null || { echo "blas-matrix: keygen failed"; exit 1; }
"$B/trainer" train "$T/ref" --key "$T/key" "${R[@]}" >/dev/null &&
  "$B/trainer" train "$T/refl" --key "$T/key" "${RL[@]}" >/dev/null ||
  { echo "blas-matrix: the reference runs (system default BLAS) failed"; exit 1; }
echo "blas-matrix: reference runs under the system default: $("$B/blas_info" | tr -s ' ' | paste -sd' ')"
default_lib=$("$B/blas_info" | awk '$1=="library"{print $2}')

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
  # exact rounding: the same recipe trained under this BLAS commits to the same bytes
  rm -rf "$T/run" "$T/runl"
  if ! env "${env[@]}" "$B/trainer" train "$T/run" --key "$T/key" "${R[@]}" >"$T/train.out" 2>&1; then
    problems+=("exact train: $(tail -1 "$T/train.out")")
  elif ! cmp -s "$T/ref/commitment.vtc" "$T/run/commitment.vtc"; then
    problems+=("exact rounding: the commitment differs from the default BLAS's")
  fi
  # log rounding: the same stored values
  commit="log commitment differs (another honest log)"
  if ! env "${env[@]}" "$B/trainer" train "$T/runl" --key "$T/key" "${RL[@]}" >"$T/train.out" 2>&1; then
    problems+=("log train: $(tail -1 "$T/train.out")")
  else
    [ "$(steps "$T/refl")" = "$(steps "$T/runl")" ] || problems+=("log rounding: stored values (loss or state hash) differ")
    cmp -s "$T/refl/commitment.vtc" "$T/runl/commitment.vtc" && commit="log commitment the same too"
  fi
  # each run verifies under the other's BLAS
  for run in run runl; do
    [ -f "$T/$run/commitment.vtc" ] || continue
    for order in blas pairwise; do
      "$B/auditor" verify "$T/$run" --order "$order" --quiet >"$T/audit.out" 2>&1 ||
        problems+=("its $run under the default, --order $order: $(head -2 "$T/audit.out" | paste -sd' ')")
    done
  done
  for run in ref refl; do
    for order in blas split; do
      env "${env[@]}" "$B/auditor" verify "$T/$run" --order "$order" --quiet >"$T/audit.out" 2>&1 ||
        problems+=("default's $run, --order $order: $(head -2 "$T/audit.out" | paste -sd' ')")
    done
  done
  # the invariant, kernel and end-to-end tests (already run in full by the release suite under the
  # system default: not again for the configuration that is the system default)
  tests="9 tests passed"
  if [ "$core" = - ] && [ "$lib" = "$default_lib" ]; then
    tests="tests: the release suite's run"
  elif ! (cd "$B" && env "${env[@]}" VT_QUICK=1 ctest -j"$jobs" --output-on-failure \
          -R '^(test_invariant|test_invariant_probabilistic|test_invariant_exact|test_kernels|test_kat|test_gradcheck|e2e|e2e_cnn|e2e_gpt)$' >"$T/ctest.out" 2>&1); then
    cat "$T/ctest.out"
    problems+=("ctest: $(grep -E 'tests passed|Failed' "$T/ctest.out" | paste -sd' ')")
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    results+=("$name: ok, $lib${got:+ core $got}: exact commitment identical, log run's stored values identical ($commit), 8 audits verified, $tests ($(( $(date +%s) - t0 )) s)")
  else
    results+=("$name: FAILED: ${problems[*]}"); failed=1
  fi
  echo "blas-matrix: ${results[-1]}"
done
printf '%s\n' "== BLAS matrix" "${results[@]}"
exit $failed
