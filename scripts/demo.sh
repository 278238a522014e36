#!/usr/bin/env bash
# The main job on the embedded default: install, build, train the default MLP on MNIST in both
# rounding modes - exact (the default: every value RN32 of the exact result, no log) and log (the
# published method's shape) - audit each run on another evaluation order, and print the verdicts
# and the figures.
# Usage: bash scripts/demo.sh [extra trainer options, e.g. --set steps=500]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p build
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >build/release.configure.log 2>&1 ||
  { cat build/release.configure.log; exit 1; }
cmake --build build/release -j"$jobs" --target trainer auditor >/dev/null
B=build/release
mkdir -p runs
[ -f runs/demo.key ] || "$B/trainer" keygen runs/demo.key
final=0
for mode in exact log; do
  run=runs/demo-$mode
  rm -rf "$run"
  echo "== training, rounding=$mode (trainer order: blas)"
  "$B/trainer" train "$run" --key runs/demo.key --set rounding=$mode "$@" | tee "$run.train.txt"
  "$B/trainer" eval "$run" 2>/dev/null || true
  echo "== auditing $run (auditor order: split, 2 parallel segments)"
  set +e
  "$B/auditor" verify "$run" --order split --jobs 2 --pubkey runs/demo.key.pub --report "$run.audit.json"
  status=$?
  set -e
  case $status in
    0) verdict="verified" ;;
    1) verdict="REJECTED" ;;
    *) verdict="cannot check" ;;
  esac
  [ "$status" -gt "$final" ] && final=$status
  echo "$mode: $verdict" >>runs/demo.verdicts.tmp
done
echo "== figures"
for mode in exact log; do
  run=runs/demo-$mode
  rate=$(sed -n 's/.*(\([0-9.]*\) steps\/s).*/\1/p' "$run.train.txt" | head -1)
  echo "-- rounding=$mode: ${rate:-?} steps/s; audit report $run.audit.json"
  grep -E "^(rounding|log size|log entries|final loss)" "$run.train.txt" || true
done
echo "== verdicts"
cat runs/demo.verdicts.tmp; rm -f runs/demo.verdicts.tmp
exit $final
