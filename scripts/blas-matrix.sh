#!/usr/bin/env bash
# Portability proof, part of the test command (scripts/test.sh): runs the invariant, kernel and
# end-to-end tests under every CBLAS that Debian provides through the libblas.so.3 alternative
# (OpenBLAS pthread, BLIS pthread, BLIS OpenMP, the reference BLAS) and under OpenBLAS with
# OPENBLAS_CORETYPE forced to several kernel families. Each configuration is first checked to be
# the one asked for (tests/blas_info.c), then, across configurations:
#   - a run trained under it stores the same values, bit for bit, as the run trained under the
#     system default: every step's loss and state hash are identical (sqlite3 over run.db);
#   - that run is verified by an auditor under the system default (orders blas and pairwise),
#     and the default's run by an auditor under this configuration (orders blas and split).
# The commitments themselves are compared but not required to match: the log holds the elements
# that lay near a rounding boundary *for the trainer's own FP64 value*, so two trainers on two
# BLAS libraries may log different (each complete and honest) sets of entries and so commit to
# different log hashes, while every stored value is the same (docs/rounding.md).
# A kernel family this CPU cannot run (e.g. SkylakeX without AVX-512) is reported as skipped.
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

# every step's loss bits, whether a state is committed, and the state hash, from the run store
steps() { sqlite3 "$1/run.db" "SELECT step, loss_bits, has_state, hex(state_hash) FROM steps ORDER BY step"; }
command -v sqlite3 >/dev/null || { echo "blas-matrix: sqlite3 is missing (scripts/install-deps.sh)"; exit 1; }

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
  # the same recipe trained under this BLAS stores the same values
  rm -rf "$T/run"
  commit="commitment differs (another honest log)"
  if ! env "${env[@]}" "$B/trainer" train --run "$T/run" --key "$T/key" "${R[@]}" >"$T/train.out" 2>&1; then
    problems+=("train: $(tail -1 "$T/train.out")")
  else
    [ "$(steps "$T/ref")" = "$(steps "$T/run")" ] || problems+=("stored values (loss or state hash) differ")
    cmp -s "$T/ref/commitment.vtc" "$T/run/commitment.vtc" && commit="same commitment"
    # ... and its run verifies under the system default
    for order in blas pairwise; do
      "$B/auditor" verify "$T/run" --order "$order" --quiet >"$T/audit.out" 2>&1 ||
        problems+=("its run under the default, --order $order: $(head -2 "$T/audit.out" | paste -sd' ')")
    done
  fi
  # the default's run verifies under this BLAS
  for order in blas split; do
    env "${env[@]}" "$B/auditor" verify "$T/ref" --order "$order" --quiet >"$T/audit.out" 2>&1 ||
      problems+=("default's run, --order $order: $(head -2 "$T/audit.out" | paste -sd' ')")
  done
  # the invariant, kernel and end-to-end tests
  if ! (cd "$B" && env "${env[@]}" VT_QUICK=1 ctest -j"$jobs" --output-on-failure \
          -R '^(test_invariant|test_invariant_probabilistic|test_invariant_exact|test_kernels|e2e)$' >"$T/ctest.out" 2>&1); then
    cat "$T/ctest.out"
    problems+=("ctest: $(grep -E 'tests passed|Failed' "$T/ctest.out" | paste -sd' ')")
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    results+=("$name: ok, $lib${got:+ core $got}: same stored values ($commit), 4 audits verified, 5 tests passed ($(( $(date +%s) - t0 )) s)")
  else
    results+=("$name: FAILED: ${problems[*]}"); failed=1
  fi
  echo "blas-matrix: ${results[-1]}"
done
printf '%s\n' "== BLAS matrix" "${results[@]}"
exit $failed
